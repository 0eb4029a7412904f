//! A node's state as readable data, for the stepping page and the explorer: its fields
//! by the algorithm's own names, read from the `Debug` text every node has.
//!
//! Every [`crate::algorithm::Node`] is `Debug`, a student's included, and a derived
//! `Debug` is regular: `Name { field: value, .. }`, `Name(value, ..)`, `[..]`, `{..}`
//! (sets and maps), strings, numbers and bare names. [`from_debug`] parses that into a
//! JSON tree: a struct is an object of its fields (its type name dropped), a unit
//! variant its name, `Some(x)` is `x` and `None` is null, a peer id (`PeerId(3)`) is
//! `"w3"`, a tuple or newtype variant `{"Name": value}`. Text it cannot parse (a
//! hand-written `Debug`) stays a string: shown, never lost. The text read is bounded.

use serde_json::{Map, Value};

/// The most `Debug` text read for one value: far above a node's at the sizes `check`
/// takes; past it the state is shown as text, cut.
pub const MAX_TEXT: usize = 64 * 1024;

/// `value`'s fields as JSON (see the module doc).
pub fn from_debug<T: std::fmt::Debug + ?Sized>(value: &T) -> Value {
    let text = format!("{value:?}");
    if text.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        return Value::String(format!("{}… (cut at {MAX_TEXT} bytes)", &text[..cut]));
    }
    parse(&text).unwrap_or(Value::String(text))
}

/// The whole of `text` as one value, or `None` where it is not derived `Debug`.
pub fn parse(text: &str) -> Option<Value> {
    let mut p = Parser { s: text.as_bytes(), at: 0 };
    let v = p.value(0)?;
    p.blank();
    (p.at == p.s.len()).then_some(v)
}

/// Nesting deeper than this is not a node's state: the text stays text.
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn blank(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.blank();
        let yes = self.peek() == Some(c);
        self.at += usize::from(yes);
        yes
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.blank();
        match self.peek()? {
            b'"' => self.string().map(Value::String),
            b'\'' => self.char_lit().map(Value::String),
            b'[' => {
                self.at += 1;
                Some(Value::Array(self.items(b']', depth)?))
            }
            b'(' => {
                self.at += 1;
                let items = self.items(b')', depth)?;
                Some(Value::Array(items))
            }
            b'{' => {
                self.at += 1;
                self.set_or_map(depth)
            }
            c if c == b'-' || c.is_ascii_digit() => self.number(),
            c if c.is_ascii_alphabetic() || c == b'_' => self.named(depth),
            _ => None,
        }
    }

    /// A name, then maybe `{ fields }` or `( items )`.
    fn named(&mut self, depth: usize) -> Option<Value> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':') {
            self.at += 1;
        }
        let name = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        // `a::B` paths: the last part names it.
        let name = name.rsplit("::").next().unwrap_or(name);
        let save = self.at;
        self.blank();
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut fields = Map::new();
                if !self.eat(b'}') {
                    loop {
                        self.blank();
                        let key = self.ident()?;
                        if !self.eat(b':') {
                            return None;
                        }
                        let v = self.value(depth + 1)?;
                        fields.insert(key, v);
                        if self.closed_after_item(b'}')? {
                            break;
                        }
                    }
                }
                // The top level's and a field's own type are known; a variant's name is
                // not, so an enum's struct variant keeps it.
                if depth == 0 {
                    Some(Value::Object(fields))
                } else {
                    Some(Value::Object(Map::from_iter([(name.to_string(), Value::Object(fields))])))
                }
            }
            Some(b'(') => {
                self.at += 1;
                let mut items = self.items(b')', depth)?;
                match (name, items.len()) {
                    ("Some", 1) => items.pop(),
                    ("PeerId", 1) => match &items[0] {
                        Value::Number(k) => Some(Value::String(format!("w{k}"))),
                        _ => items.pop(),
                    },
                    (_, 1) => Some(Value::Object(Map::from_iter([(name.to_string(), items.remove(0))]))),
                    _ => Some(Value::Object(Map::from_iter([(name.to_string(), Value::Array(items))]))),
                }
            }
            _ => {
                self.at = save;
                Some(match name {
                    "None" => Value::Null,
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => Value::String(name.to_string()),
                })
            }
        }
    }

    fn ident(&mut self) -> Option<String> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.at += 1;
        }
        (self.at > start).then(|| String::from_utf8_lossy(&self.s[start..self.at]).into_owned())
    }

    /// Items up to `close`, separated by commas.
    fn items(&mut self, close: u8, depth: usize) -> Option<Vec<Value>> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Some(items);
        }
        loop {
            items.push(self.value(depth + 1)?);
            if self.closed_after_item(close)? {
                return Some(items);
            }
        }
    }

    /// After an item: a comma (then maybe `..` of a non-exhaustive `Debug`, or the
    /// close of a trailing comma) or the close. `Some(true)` closed, `Some(false)`
    /// another item follows, `None` neither.
    fn closed_after_item(&mut self, close: u8) -> Option<bool> {
        if self.eat(b',') {
            self.blank();
            if self.s[self.at..].starts_with(b"..") {
                self.at += 2;
            }
            return Some(self.eat(close));
        }
        self.eat(close).then_some(true)
    }

    /// `{a, b}` (a set: an array) or `{k: v, ..}` (a map: an object when every key is
    /// text or a number, else an array of pairs).
    fn set_or_map(&mut self, depth: usize) -> Option<Value> {
        let mut keys = Vec::new();
        let mut vals = Vec::new();
        if self.eat(b'}') {
            return Some(Value::Array(Vec::new()));
        }
        loop {
            let k = self.value(depth + 1)?;
            if self.eat(b':') {
                vals.push(self.value(depth + 1)?);
            }
            keys.push(k);
            if self.closed_after_item(b'}')? {
                break;
            }
        }
        if vals.is_empty() {
            return Some(Value::Array(keys));
        }
        if vals.len() != keys.len() {
            return None;
        }
        let text_keys = keys.iter().all(|k| matches!(k, Value::String(_) | Value::Number(_)));
        if text_keys {
            let pairs = keys.into_iter().zip(vals).map(|(k, v)| {
                let k = match k {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, v)
            });
            Some(Value::Object(pairs.collect()))
        } else {
            Some(Value::Array(keys.into_iter().zip(vals).map(|(k, v)| Value::Array(vec![k, v])).collect()))
        }
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.at;
        self.at += usize::from(self.peek() == Some(b'-'));
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_') {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        if let Ok(i) = text.parse::<i64>() {
            return Some(Value::from(i));
        }
        if let Ok(u) = text.parse::<u64>() {
            return Some(Value::from(u));
        }
        // A float, a duration (`1.5ms`) or anything else number-like: kept as written.
        Some(
            text.parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
                .unwrap_or_else(|| Value::String(text.to_string())),
        )
    }

    /// A `"…"` string with Rust's escapes.
    fn string(&mut self) -> Option<String> {
        self.at += 1;
        let mut out = String::new();
        let rest = std::str::from_utf8(&self.s[self.at..]).ok()?;
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += i + 1;
                    return Some(out);
                }
                '\\' => match chars.next()?.1 {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    'u' => {
                        // \u{XXXX}
                        if chars.next()?.1 != '{' {
                            return None;
                        }
                        let mut hex = String::new();
                        for (_, h) in chars.by_ref() {
                            if h == '}' {
                                break;
                            }
                            hex.push(h);
                        }
                        out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    other => out.push(other),
                },
                c => out.push(c),
            }
        }
        None
    }

    fn char_lit(&mut self) -> Option<String> {
        let rest = std::str::from_utf8(&self.s[self.at + 1..]).ok()?;
        let end = rest.find('\'')?;
        let end = if end == 1 && rest.starts_with('\\') { 1 + rest[2..].find('\'')? + 1 } else { end };
        let lit = rest[..end].to_string();
        self.at += end + 2;
        Some(lit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::PeerId;
    use serde_json::json;
    use std::collections::{BTreeMap, BTreeSet};

    #[derive(Debug)]
    #[allow(dead_code)]
    enum Phase {
        Idle,
        Wanting { stamp: u64 },
        Held(u32),
    }

    #[derive(Debug)]
    #[allow(dead_code)]
    struct Toy {
        me: PeerId,
        clock: u64,
        deferred: BTreeSet<PeerId>,
        phase: Phase,
        other: Phase,
        held: Phase,
        queue: Vec<(u64, PeerId)>,
        votes: BTreeMap<u32, bool>,
        leader: Option<PeerId>,
        nobody: Option<u8>,
        note: String,
        ratio: f64,
    }

    #[test]
    fn a_derived_debug_reads_as_the_algorithm_s_own_fields() {
        let toy = Toy {
            me: PeerId(1),
            clock: 3,
            deferred: [PeerId(0), PeerId(2)].into(),
            phase: Phase::Wanting { stamp: 7 },
            other: Phase::Idle,
            held: Phase::Held(2),
            queue: vec![(1, PeerId(0))],
            votes: [(4, true)].into(),
            leader: Some(PeerId(2)),
            nobody: None,
            note: "say \"hi\"\n<b>".into(),
            ratio: 0.5,
        };
        assert_eq!(
            from_debug(&toy),
            json!({
                "me": "w1", "clock": 3, "deferred": ["w0", "w2"],
                "phase": {"Wanting": {"stamp": 7}}, "other": "Idle", "held": {"Held": 2},
                "queue": [[1, "w0"]], "votes": {"4": true}, "leader": "w2", "nobody": null,
                "note": "say \"hi\"\n<b>", "ratio": 0.5
            })
        );
    }

    #[test]
    fn text_that_is_not_derived_debug_stays_text() {
        struct Odd;
        impl std::fmt::Debug for Odd {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("odd <thing> {")
            }
        }
        assert_eq!(from_debug(&Odd), json!("odd <thing> {"));
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(parse(&deep), None, "nesting past the bound is refused, not recursed into");
    }

    #[test]
    fn a_huge_state_is_cut_not_copied_whole() {
        let big = vec![7u8; MAX_TEXT];
        match from_debug(&big) {
            Value::String(s) => assert!(s.len() < MAX_TEXT + 64 && s.ends_with("bytes)"), "{}", s.len()),
            other => panic!("not cut: {}", other.to_string().len()),
        }
    }
}
