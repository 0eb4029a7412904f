//! Text quoted from what a worker, a program or a file said: cut to a bound in bytes,
//! never inside a character, so a quote never grows with its source; and plain text
//! tables, laid out by `comfy-table` (widths by what a terminal shows, not by bytes).

use std::borrow::Cow;

/// A number as a person typed it: `0`, `172800`, `1.5`; `1e300` stays short where `{}`
/// would print every digit, and `NaN` and `inf` are themselves.
pub fn short_float(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:?}")
    }
}

/// At most `max` bytes of `text`, never splitting a character; an ellipsis if cut.
pub fn clip_to(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return text.into();
    }
    let mut n = max;
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    format!("{}…", &text[..n]).into()
}

/// Rows as columns two spaces apart, each padded to its widest cell, every line
/// indented by `indent` and with no trailing blanks; under `head`, if given, a rule of
/// dashes per column.
pub fn columns<R, C>(head: Option<&[&str]>, rows: R, indent: &str) -> String
where
    R: IntoIterator<Item = Vec<C>>,
    C: Into<comfy_table::Cell>,
{
    use comfy_table::{presets, ContentArrangement, Table, TableComponent};
    let mut t = Table::new();
    t.load_preset(presets::NOTHING);
    // Never wrapped to a terminal's width: the output goes to files and pipes too.
    t.set_content_arrangement(ContentArrangement::Disabled);
    t.set_style(TableComponent::VerticalLines, ' ');
    if let Some(head) = head {
        t.set_style(TableComponent::HeaderLines, '-');
        t.set_style(TableComponent::MiddleHeaderIntersections, ' ');
        t.set_header(head.to_vec());
    }
    for row in rows {
        t.add_row(row);
    }
    for c in t.column_iter_mut() {
        c.set_padding((0, 1));
    }
    let mut s = String::new();
    for line in t.lines() {
        s.push_str(indent);
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_number_is_shown_as_typed() {
        for (x, shown) in [(0.0, "0"), (172_800.0, "172800"), (1.5, "1.5"), (1e300, "1e300"), (-2.0, "-2")] {
            assert_eq!(super::short_float(x), shown);
        }
        assert_eq!(super::short_float(f64::NAN), "NaN");
    }
    use super::*;

    #[test]
    fn columns_line_up_by_what_is_shown_not_by_bytes() {
        let rows = vec![vec!["centralized", "3.00 [2.50–4.00]", "∞"], vec!["ra", "2", "1"]];
        let text = columns(Some(&["algorithm", "msgs", "delay"]), rows, "  ");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "  algorithm    msgs              delay");
        assert!(lines[1].starts_with("  ------------ "), "{text}");
        // The en dash and ∞ are one column each, though more than one byte.
        assert_eq!(lines[2], "  centralized  3.00 [2.50–4.00]  ∞");
        assert_eq!(lines[3], "  ra           2                 1");
        let plain = columns(None, vec![vec!["a", "b"], vec!["ccc", "d"]], "");
        assert_eq!(plain, "a    b\nccc  d\n");
    }

    #[test]
    fn a_cut_keeps_whole_characters_and_says_so() {
        assert_eq!(clip_to("short", 10), "short");
        assert_eq!(clip_to("abcdef", 3), "abc…");
        // 'é' is two bytes: a cut after its first byte backs off before it.
        assert_eq!(clip_to("aé", 2), "a…");
    }
}
