//! Text quoted from what a worker, a program or a file said: cut to a bound in bytes,
//! never inside a character, so a quote never grows with its source.

use std::borrow::Cow;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_keeps_whole_characters_and_says_so() {
        assert_eq!(clip_to("short", 10), "short");
        assert_eq!(clip_to("abcdef", 3), "abc…");
        // 'é' is two bytes: a cut after its first byte backs off before it.
        assert_eq!(clip_to("aé", 2), "a…");
    }
}
