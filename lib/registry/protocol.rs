//! The generated parts of `labs/PROTOCOL.md` (`make protocol-doc`): the messages' table,
//! from the algorithms' message types, and every algorithm's rules, from its module's doc
//! comment (the one place they are written); and the check that the document holds what
//! the code has.

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

/// The marker lines around the generated rules in `labs/PROTOCOL.md`.
const RULES_BEGIN: &str =
    "<!-- rules: generated from each algorithm's module doc by `make protocol-doc`; edit the doc comments, not this text -->";
/// The line after the generated rules.
const RULES_END: &str = "<!-- end of rules -->";

/// Every algorithm's rules as a worker's author needs them: for each module of `algos`
/// that sends messages, its doc comment as Markdown, folded under the algorithms it
/// runs. `source` gives a module's source file by its name (`suzuki_kasami`).
pub fn rules_markdown<'a>(
    algos: impl IntoIterator<Item = &'a AlgoInfo>,
    source: impl Fn(&str) -> Result<String, String>,
) -> Result<String, String> {
    // Module name -> the algorithms it runs, in the registry's order.
    let mut modules: Vec<(String, Vec<&str>)> = Vec::new();
    for a in algos.into_iter().filter(|a| a.mixed.is_some()) {
        let m = module_of((a.node_type)()).ok_or_else(|| format!("{}: no module in its type", a.name))?;
        match modules.iter_mut().find(|(have, _)| *have == m) {
            Some((_, names)) => names.push(a.name),
            None => modules.push((m.to_string(), vec![a.name])),
        }
    }
    let mut out = String::new();
    for (m, names) in modules {
        let doc = module_doc(&source(&m)?);
        if doc.trim().is_empty() {
            return Err(format!("lib/algos/{m}.rs has no module doc"));
        }
        let names: Vec<String> = names.iter().map(|n| format!("<code>{n}</code>")).collect();
        // The first paragraph is the summary a reader unfolds; HTML, where Markdown is not read.
        let (first, rest) = doc.split_once("\n\n").unwrap_or((&doc, ""));
        let first: Vec<&str> = first.lines().map(str::trim).collect();
        out.push_str(&format!(
            "<details>\n<summary>{} (<code>lib/algos/{m}.rs</code>): {}</summary>\n\n{}\n\n</details>\n\n",
            names.join(", "),
            code_html(&first.join(" ")),
            rest.trim_matches('\n'),
        ));
    }
    Ok(out)
}

/// `a `b` c` -> `a <code>b</code> c`, and `<`, `>`, `&` escaped.
fn code_html(line: &str) -> String {
    let escaped = line.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut out = String::new();
    for (i, part) in escaped.split('`').enumerate() {
        if i > 0 {
            out.push_str(if i % 2 == 1 { "<code>" } else { "</code>" });
        }
        out.push_str(part);
    }
    out
}

/// The module a node type is defined in: `suzuki_kasami` of
/// `mutexlab_algos::suzuki_kasami::SuzukiKasami` (generic arguments left out).
fn module_of(type_path: &str) -> Option<&str> {
    let path = type_path.split('<').next()?;
    let mut parts = path.rsplit("::").skip(1);
    parts.next()
}

/// A source file's module doc (its leading `//!` lines) as Markdown: headings moved
/// below the document's own, rustdoc's links as plain code.
fn module_doc(source: &str) -> String {
    let mut out = String::new();
    for line in source.lines().map_while(|l| l.strip_prefix("//!")) {
        let line = line.strip_prefix(' ').unwrap_or(line);
        if line.starts_with('#') {
            out.push_str("###");
        }
        out.push_str(&plain_links(line));
        out.push('\n');
    }
    out
}

/// "[`Config::incarnation`]" -> "`Config::incarnation`": rustdoc's intra-doc links mean
/// nothing outside rustdoc. Brackets that are not such a link (`rn[j]`) stay.
fn plain_links(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("[`") {
        let after = &rest[at + 1..];
        match after.find("`]") {
            Some(end) if !after[..end + 1].contains(']') && !after[end + 2..].starts_with('(') => {
                out.push_str(&rest[..at]);
                out.push_str(&after[..end + 1]);
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str(&rest[..at + 2]);
                rest = &rest[at + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `doc` with the text between its `begin` and `end` lines replaced by `text`; `Err` if
/// the markers are missing.
fn splice(doc: &str, begin: &str, end: &str, text: &str) -> Result<String, String> {
    let at = doc.find(begin).ok_or_else(|| format!("the line {begin:?} is missing"))?;
    let from = at + begin.len();
    let to =
        doc[from..].find(end).ok_or_else(|| format!("the line {end:?} is missing after {begin:?}"))? + from;
    Ok(format!("{}\n{text}{}", &doc[..from], &doc[to..]))
}

/// `doc` with its table of messages replaced by `table`.
pub fn splice_messages(doc: &str, table: &str) -> Result<String, String> {
    splice(doc, DOC_BEGIN, DOC_END, table)
}

/// `doc` with its rules replaced by `rules`.
pub fn splice_rules(doc: &str, rules: &str) -> Result<String, String> {
    splice(doc, RULES_BEGIN, RULES_END, rules)
}

/// Whether `doc` is `want` (the doc with its generated parts made afresh): `Err` names the
/// first line that differs, as the doc has it and as the code does.
pub fn doc_agrees(doc: &str, want: &str) -> Result<(), String> {
    match doc.lines().zip(want.lines()).enumerate().find(|(_, (a, b))| a != b) {
        Some((i, (has, code))) => {
            Err(format!("line {}: the doc has\n  {has}\nwhere the code gives\n  {code}", i + 1))
        }
        None if doc.lines().count() != want.lines().count() => {
            Err("the doc's generated text has a different number of lines than the code's".into())
        }
        None => Ok(()),
    }
}

/// Whether `doc`'s table of messages is `table`.
pub fn doc_messages_agree(doc: &str, table: &str) -> Result<(), String> {
    doc_agrees(doc, &splice_messages(doc, table)?)
}
