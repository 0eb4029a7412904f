//! What a program says it waits for: `{"type":"waiting","for":"GRANT","from":[3]}` in
//! an answer is no output of the node interface but its [`Node::waiting_for`], taken
//! out of the answer and kept; a malformed one is dropped with a note on stderr.

use serde_json::Value;

#[cfg(doc)]
use crate::algorithm::Node;

use super::program::{quote, Program};
use super::QUOTE;

/// The longest statement of what a program waits for that is kept whole.
const MAX_WAITING: usize = 200;
/// How many malformed statements of a program are noted on stderr.
const NOTED: u32 = 3;

impl Program {
    /// Take the statements of what the program waits for out of its answer (they are
    /// no outputs of the node interface) and keep the last good one:
    /// `{"type":"waiting","for":"GRANT","from":[3]}` is "waiting for GRANT from w3",
    /// as a Rust node's [`Node::waiting_for`] would put it; `{"type":"waiting"}` says
    /// it waits for nothing. A malformed one is dropped with a note on stderr (the
    /// first few), never a failure: it is a diagnosis, not the algorithm.
    pub(super) fn take_waiting(&mut self, mut got: Value) -> Value {
        let Value::Array(items) = &mut got else { return got };
        let is_waiting = |v: &Value| v.get("type").and_then(Value::as_str) == Some("waiting");
        if !items.iter().any(is_waiting) {
            return got;
        }
        let mut statements = Vec::new();
        items.retain(|v| {
            if is_waiting(v) {
                statements.push(v.clone());
            }
            !is_waiting(v)
        });
        for st in statements {
            match waiting_text(&st, self.n) {
                Ok(text) => self.waiting = text,
                Err(why) => {
                    self.dropped += 1;
                    if self.dropped <= NOTED {
                        let more =
                            if self.dropped == NOTED { " (further ones are dropped unnoted)" } else { "" };
                        eprintln!(
                            "{}: external node `{}`: dropped the statement {}: {why}{more}",
                            self.name,
                            crate::text::clip_to(&self.command, QUOTE),
                            quote(&st.to_string())
                        );
                    }
                }
            }
        }
        got
    }
}

/// The diagnosis a statement `{"type":"waiting","for":WHAT,"from":[IDS]}` makes, or why
/// it is malformed: `for` a string, `from` (optional) a list of node ids.
fn waiting_text(st: &Value, n: u32) -> Result<String, String> {
    let Some(obj) = st.as_object() else { return Err("not an object".into()) };
    if let Some(key) = obj.keys().find(|k| !["type", "for", "from"].contains(&k.as_str())) {
        return Err(format!("`{}` is not one of its fields (for, from)", crate::text::clip_to(key, 40)));
    }
    let what = match obj.get("for") {
        None | Some(Value::Null) => {
            return match obj.get("from") {
                None => Ok(String::new()),
                Some(_) => Err("`from` without `for`".into()),
            }
        }
        Some(Value::String(w)) => w.trim(),
        Some(_) => return Err("`for` must be a string".into()),
    };
    if what.is_empty() {
        return Ok(String::new());
    }
    let mut text = format!("waiting for {}", crate::text::clip_to(what, MAX_WAITING));
    if what.len() > MAX_WAITING {
        text.push('…');
    }
    match obj.get("from") {
        None => {}
        Some(Value::Array(ids)) => {
            let ids: Option<Vec<String>> = ids
                .iter()
                .map(|id| id.as_u64().filter(|&i| i < u64::from(n)).map(|i| format!("w{i}")))
                .collect();
            let Some(ids) = ids.filter(|ids| !ids.is_empty() && ids.len() <= n as usize) else {
                return Err(format!("`from` must be a list of node ids, 0 to {}", n.saturating_sub(1)));
            };
            text += &format!(" from {}", ids.join(", "));
        }
        Some(_) => return Err(format!("`from` must be a list of node ids, 0 to {}", n.saturating_sub(1))),
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    #[test]
    fn a_statement_of_what_a_program_waits_for_reads_as_a_rust_nodes() {
        let ok = |v: Value| waiting_text(&v, 4).unwrap();
        assert_eq!(ok(json!({"type": "waiting", "for": "GRANT", "from": [3]})), "waiting for GRANT from w3");
        assert_eq!(
            ok(json!({"type": "waiting", "for": "REPLY", "from": [1, 2]})),
            "waiting for REPLY from w1, w2"
        );
        assert_eq!(ok(json!({"type": "waiting", "for": "the token"})), "waiting for the token");
        assert_eq!(ok(json!({"type": "waiting"})), "");
        assert_eq!(ok(json!({"type": "waiting", "for": ""})), "");
        let long = ok(json!({"type": "waiting", "for": "x".repeat(100_000)}));
        assert!(long.len() < 300, "cut: {}", long.len());
        for bad in [
            json!({"type": "waiting", "for": 3}),
            json!({"type": "waiting", "for": "GRANT", "from": [4]}),
            json!({"type": "waiting", "for": "GRANT", "from": 3}),
            json!({"type": "waiting", "for": "GRANT", "from": [-1]}),
            json!({"type": "waiting", "for": "GRANT", "from": []}),
            json!({"type": "waiting", "from": [1]}),
            json!({"type": "waiting", "for": "GRANT", "who": [1]}),
        ] {
            assert!(waiting_text(&bad, 4).is_err(), "{bad}");
        }
    }
}
