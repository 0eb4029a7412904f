//! The messages' table of `labs/PROTOCOL.md`, generated from the algorithms' message
//! types (`make protocol-doc`), and the check that the document holds what the code sends.

use super::*;

/// The marker lines around the generated table in `labs/PROTOCOL.md`.
pub const DOC_BEGIN: &str =
    "<!-- messages: generated from the code by `make protocol-doc`; edit the message types, not this table -->";
/// The line after the generated table.
pub const DOC_END: &str = "<!-- end of messages -->";

/// Every message of `algos` as one Markdown table (algorithm, `type`, shape), the one
/// `labs/PROTOCOL.md` holds between [`DOC_BEGIN`] and [`DOC_END`]. Algorithms that send
/// nothing are left out.
pub fn messages_markdown<'a>(algos: impl IntoIterator<Item = &'a AlgoInfo>) -> Result<String, String> {
    let mut t = String::from("| algorithm | message | as JSON |\n| --- | --- | --- |\n");
    for a in algos {
        let shapes = (a.messages)().map_err(|e| format!("{}: {e}", a.name))?;
        for (i, m) in shapes.iter().enumerate() {
            let name = if i == 0 { format!("`{}`", a.name) } else { String::new() };
            // A `|` inside a cell, even in code, ends the cell unless escaped.
            let shape = m.shape().replace('|', "\\|");
            t.push_str(&format!("| {name} | {} | `{shape}` |\n", m.tag));
        }
    }
    Ok(t)
}

/// `doc` with the text between its [`DOC_BEGIN`] and [`DOC_END`] lines replaced by
/// `table`; `Err` if the markers are missing.
pub fn splice_messages(doc: &str, table: &str) -> Result<String, String> {
    let begin = doc.find(DOC_BEGIN).ok_or("the line DOC_BEGIN is missing")?;
    let from = begin + DOC_BEGIN.len();
    let end = doc[from..].find(DOC_END).ok_or("the line DOC_END is missing after DOC_BEGIN")? + from;
    Ok(format!("{}\n{table}{}", &doc[..from], &doc[end..]))
}

/// Whether `doc`'s table of messages is `table`: `Err` names the first line that
/// differs, as the doc has it and as the code does.
pub fn doc_messages_agree(doc: &str, table: &str) -> Result<(), String> {
    let want = splice_messages(doc, table)?;
    match doc.lines().zip(want.lines()).enumerate().find(|(_, (a, b))| a != b) {
        Some((i, (has, code))) => {
            Err(format!("line {}: the doc has\n  {has}\nwhere the code gives\n  {code}", i + 1))
        }
        None if doc.lines().count() != want.lines().count() => {
            Err("the doc's table of messages has a different number of lines than the code's".into())
        }
        None => Ok(()),
    }
}
