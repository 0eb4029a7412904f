//! The trace's lines: events and STATE lines as text ([`Event`], [`State`]: shown and
//! parsed), and [`push_line`], the one function that makes every line, for the trace
//! file's writer and for the flight recorder's rings written out alike. Numbers are
//! written by hand: this runs on every message a traced run sends.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use crate::algorithm::Message;

/// One traced event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The worker that recorded it.
    pub w: u32,
    /// Its incarnation.
    pub inc: u32,
    /// Monotonic nanoseconds.
    pub t: u64,
    /// Its Lamport clock (see the module documentation for which).
    pub lc: u64,
    /// What happened.
    pub kind: EventKind,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// SEND: a message sent; the event's `lc` is the envelope's clock.
    Send {
        /// The receiver.
        to: u32,
        /// The message's type.
        msg: String,
    },
    /// RECV: a message received.
    Recv {
        /// The sender.
        from: u32,
        /// The sender's incarnation.
        from_inc: u32,
        /// The clock stamped on the envelope.
        sent_lc: u64,
        /// The message's type.
        msg: String,
    },
    /// DROP: the message sent with the event's `lc` will never arrive.
    Drop {
        /// Its receiver.
        to: u32,
        /// Its type.
        msg: String,
        /// Why: one of [`DROP_REASONS`].
        why: String,
    },
    /// APP: something the application did.
    App {
        /// `want`, `enter`, `leave` or `leader`.
        ev: String,
        /// With `leader`: the leader accepted.
        leader: Option<u32>,
        /// With `leader`: its term.
        term: Option<u64>,
    },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Event { w, inc, t, lc, kind } = self;
        match kind {
            EventKind::Send { to, msg } => write!(f, "SEND w={w} inc={inc} t={t} lc={lc} to={to} type={msg}"),
            EventKind::Recv { from, from_inc, sent_lc, msg } => write!(
                f,
                "RECV w={w} inc={inc} t={t} lc={lc} from={from} from_inc={from_inc} sent_lc={sent_lc} type={msg}"
            ),
            EventKind::Drop { to, msg, why } => {
                write!(f, "DROP w={w} inc={inc} t={t} to={to} type={msg} lc={lc} why={why}")
            }
            EventKind::App { ev, leader, term } => {
                write!(f, "APP w={w} inc={inc} t={t} lc={lc} ev={ev}")?;
                if let Some(l) = leader {
                    write!(f, " leader={l}")?;
                }
                if let Some(term) = term {
                    write!(f, " term={term}")?;
                }
                Ok(())
            }
        }
    }
}

impl FromStr for Event {
    type Err = String;

    /// Parse one line (without its newline). The documented fields must come first, in
    /// their order; fields after them are ignored.
    fn from_str(line: &str) -> Result<Event, String> {
        let mut parts = line.split(' ');
        let tag = parts.next().unwrap_or_default();
        let names: &[&str] = match tag {
            "SEND" => &["w", "inc", "t", "lc", "to", "type"],
            "RECV" => &["w", "inc", "t", "lc", "from", "from_inc", "sent_lc", "type"],
            "DROP" => &["w", "inc", "t", "to", "type", "lc", "why"],
            "APP" => &["w", "inc", "t", "lc", "ev"],
            _ => return Err(format!("unknown event {tag:?}")),
        };
        let mut vals = HashMap::with_capacity(names.len());
        for name in names {
            let part = parts.next().ok_or_else(|| format!("{tag} line lacks {name}="))?;
            let v = field(part, name).ok_or_else(|| format!("expected {name}=…, found {part:?}"))?;
            if v.is_empty() {
                return Err(format!("{name}= is empty"));
            }
            vals.insert(*name, v);
        }
        let num = |name: &str| -> Result<u64, String> {
            vals[name].parse().map_err(|_| format!("{name}={} is not a number", vals[name]))
        };
        let id = |name: &str| -> Result<u32, String> {
            u32::try_from(num(name)?).map_err(|_| format!("{name}={} is out of range", vals[name]))
        };
        let text = |name: &str| vals[name].to_string();
        let kind = match tag {
            "SEND" => EventKind::Send { to: id("to")?, msg: text("type") },
            "RECV" => EventKind::Recv {
                from: id("from")?,
                from_inc: id("from_inc")?,
                sent_lc: num("sent_lc")?,
                msg: text("type"),
            },
            "DROP" => {
                let why = text("why");
                if !DROP_REASONS.contains(&why.as_str()) {
                    return Err(format!("why={why} is not one of {}", DROP_REASONS.join(", ")));
                }
                EventKind::Drop { to: id("to")?, msg: text("type"), why }
            }
            _ => {
                let ev = text("ev");
                let (mut leader, mut term) = (None, None);
                if ev == "leader" {
                    let mut next = |name: &str| -> Result<u64, String> {
                        let part = parts.next().ok_or_else(|| format!("ev=leader lacks {name}="))?;
                        let v =
                            field(part, name).ok_or_else(|| format!("expected {name}=…, found {part:?}"))?;
                        v.parse().map_err(|_| format!("{name}={v} is not a number"))
                    };
                    let l = next("leader")?;
                    leader = Some(u32::try_from(l).map_err(|_| format!("leader={l} is out of range"))?);
                    term = Some(next("term")?);
                } else if !["want", "enter", "leave"].contains(&ev.as_str()) {
                    return Err(format!("ev={ev} is not want, enter, leave or leader"));
                }
                EventKind::App { ev, leader, term }
            }
        };
        Ok(Event { w: id("w")?, inc: id("inc")?, t: num("t")?, lc: num("lc")?, kind })
    }
}

/// Why a message never left its sender, as a DROP line says (see the module
/// documentation).
pub const DROP_REASONS: &[&str] = &["drop", "down", "partition", "peer-down", "exit"];

/// The most bytes of a node's state a STATE line carries (a line may not be longer
/// than [`MAX_LINE`]); a longer state is cut and ends in `…`.
///
/// [`MAX_LINE`]: crate::lines::MAX_LINE
pub const STATE_MAX: usize = 3 * 1024;

/// A STATE line: worker `w`'s node's state after a step of its life `inc`, as JSON
/// text (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// The worker.
    pub w: u32,
    /// Its incarnation.
    pub inc: u32,
    /// Monotonic nanoseconds.
    pub t: u64,
    /// The worker's Lamport clock when it was recorded.
    pub lc: u64,
    /// The state's JSON text, compact; cut to [`STATE_MAX`] bytes ending in `…`.
    pub json: String,
}

impl State {
    /// Whether the state was cut to [`STATE_MAX`] bytes (its JSON is then not whole).
    pub fn cut(&self) -> bool {
        self.json.ends_with('…')
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = String::new();
        push_line(&mut line, self.w, self.inc, self.t, &Rec::State { lc: self.lc }, ("", &self.json));
        f.write_str(line.trim_end_matches('\n'))
    }
}

impl FromStr for State {
    type Err = String;

    /// Parse one STATE line (without its newline).
    fn from_str(line: &str) -> Result<State, String> {
        let rest = line.strip_prefix("STATE ").ok_or("not a STATE line")?;
        let (head, json) = rest.split_once(" json=").ok_or("STATE line lacks json=")?;
        let mut parts = head.split(' ');
        let mut num = |name: &str| -> Result<u64, String> {
            let part = parts.next().ok_or_else(|| format!("STATE line lacks {name}="))?;
            let v = field(part, name).ok_or_else(|| format!("expected {name}=…, found {part:?}"))?;
            v.parse().map_err(|_| format!("{name}={v} is not a number"))
        };
        let id = |v: u64, name: &str| u32::try_from(v).map_err(|_| format!("{name}={v} is out of range"));
        let (w, inc) = (id(num("w")?, "w")?, id(num("inc")?, "inc")?);
        let (t, lc) = (num("t")?, num("lc")?);
        if json.is_empty() {
            return Err("json= is empty".into());
        }
        Ok(State { w, inc, t, lc, json: json.to_string() })
    }
}

/// Append ` json=` and a state's JSON text cut to [`STATE_MAX`] bytes; the line's last
/// field.
fn push_state_text(buf: &mut String, json: &str) {
    buf.push_str(" json=");
    buf.push_str(cut_state(json));
    if json.len() > STATE_MAX {
        buf.push('…');
    }
}

/// A state's JSON text cut to at most [`STATE_MAX`] bytes, on a character's boundary (the
/// caller marks a cut one).
pub(super) fn cut_state(json: &str) -> &str {
    let mut cut = json.len().min(STATE_MAX);
    while !json.is_char_boundary(cut) {
        cut -= 1;
    }
    &json[..cut]
}

/// The value of `name=value`, if `part` is that field.
pub(super) fn field<'a>(part: &'a str, name: &str) -> Option<&'a str> {
    part.strip_prefix(name)?.strip_prefix('=')
}

/// Append a message type as a trace line can hold it: one word. A kind from outside
/// Rust could hold anything.
pub(super) fn push_word(buf: &mut String, kind: &str) {
    let ok = |c: char| c.is_ascii_graphic() && c != '=';
    if kind.is_empty() {
        buf.push('_');
    } else if kind.chars().all(ok) {
        buf.push_str(kind);
    } else {
        buf.extend(kind.chars().map(|c| if ok(c) { c } else { '_' }));
    }
}

/// The most bytes of a message's contents a line carries (a line may not be longer than
/// [`MAX_LINE`]); longer ones are cut and end in `…`.
///
/// [`MAX_LINE`]: crate::lines::MAX_LINE
pub const BODY_MAX: usize = 1024;

/// Append ` body=` and the message's contents, as the JSON-lines protocol writes them
/// ([`Message::json_text`], compact: one line), cut to [`BODY_MAX`] bytes. Always the line's
/// last field: the rest of the line, spaces in its strings included.
pub fn push_body<M: Message>(buf: &mut String, msg: &M) {
    push_body_text(buf, &msg.json_text());
}

/// [`push_body`] of a message's JSON text.
fn push_body_text(buf: &mut String, json: &str) {
    buf.push_str(" body=");
    let from = buf.len();
    buf.push_str(json);
    if buf.len() - from > BODY_MAX {
        let mut cut = from + BODY_MAX;
        while !buf.is_char_boundary(cut) {
            cut -= 1;
        }
        buf.truncate(cut);
        buf.push('…');
    }
}

/// The contents of a SEND, RECV or DROP line's message (`body=`, the rest of the line),
/// if it has them.
pub fn body(line: &str) -> Option<&str> {
    line.split_once(" body=").map(|(_, b)| b)
}

/// Append ` name=v`. By hand: the writer runs on every message, and `fmt` costs a few
/// hundred nanoseconds a line, enough to show in a saturated run's throughput.
fn push_num(buf: &mut String, name: &str, v: u64) {
    buf.push(' ');
    buf.push_str(name);
    buf.push('=');
    buf.push_str(itoa::Buffer::new().format(v));
}

/// Append ` name=word`.
fn push_text(buf: &mut String, name: &str, value: &str) {
    buf.push(' ');
    buf.push_str(name);
    buf.push('=');
    push_word(buf, value);
}

/// What the application's events are called on an APP line (`ev=`).
pub const APP_EVENTS: &[&str] = &["want", "enter", "leave", "leader"];

/// One event as a line says it, but for who recorded it, when, and its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rec<'a> {
    Send { lc: u64, to: u32 },
    Recv { lc: u64, from: u32, from_inc: u32, sent_lc: u64 },
    Drop { lc: u64, to: u32, why: &'a str },
    App { lc: u64, ev: &'a str, leader: Option<(u32, u64)> },
    State { lc: u64 },
}

/// Append one whole line (its newline included): `w`'s life `inc` recorded `rec` at
/// `t`, with `msg` (type, JSON) for a SEND, RECV or DROP. Both the trace file's writer
/// and the flight recorder's reader make their lines here, so they are the same. A
/// STATE line's JSON text comes as `msg.1`.
pub(super) fn push_line(buf: &mut String, w: u32, inc: u32, t: u64, rec: &Rec, msg: (&str, &str)) {
    let tag = match rec {
        Rec::Send { .. } => "SEND",
        Rec::Recv { .. } => "RECV",
        Rec::Drop { .. } => "DROP",
        Rec::App { .. } => "APP",
        Rec::State { .. } => "STATE",
    };
    buf.push_str(tag);
    push_num(buf, "w", w.into());
    push_num(buf, "inc", inc.into());
    push_num(buf, "t", t);
    match *rec {
        Rec::Send { lc, to } => {
            push_num(buf, "lc", lc);
            push_num(buf, "to", to.into());
        }
        Rec::Recv { lc, from, from_inc, sent_lc } => {
            push_num(buf, "lc", lc);
            push_num(buf, "from", from.into());
            push_num(buf, "from_inc", from_inc.into());
            push_num(buf, "sent_lc", sent_lc);
        }
        Rec::Drop { lc, to, why } => {
            push_num(buf, "to", to.into());
            push_text(buf, "type", msg.0);
            push_num(buf, "lc", lc);
            push_text(buf, "why", why);
            push_body_text(buf, msg.1);
        }
        Rec::App { lc, ev, leader } => {
            push_num(buf, "lc", lc);
            push_text(buf, "ev", ev);
            if let Some((l, term)) = leader {
                push_num(buf, "leader", l.into());
                push_num(buf, "term", term);
            }
        }
        Rec::State { lc } => {
            push_num(buf, "lc", lc);
            push_state_text(buf, msg.1);
        }
    }
    if let Rec::Send { .. } | Rec::Recv { .. } = rec {
        push_text(buf, "type", msg.0);
        push_body_text(buf, msg.1);
    }
    buf.push('\n');
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::lines::MAX_LINE;

    #[test]
    fn a_message_s_json_text_is_its_json_value() {
        let all = [
            Msg::Request { ticket: 4, note: "a \"b\" {c} body=}".into() },
            Msg::Reply,
            Msg::Vote(3),
            Msg::Pair(1, "x".into()),
            Msg::Empty {},
            Msg::TokenPass(vec![1, 2]),
        ];
        for m in all {
            let text = m.json_text();
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(value, m.json(), "{text}");
            assert!(text.starts_with("{\"type\":"), "{text}");
        }
        assert_eq!(Msg::Vote(3).json_text(), r#"{"type":"VOTE","value":3}"#);
        assert_eq!(Msg::TokenPass(vec![]).json_text(), r#"{"type":"TokenPass","value":[]}"#);
    }

    #[test]
    fn every_kind_of_line_round_trips() {
        let lines = [
            "SEND w=0 inc=0 t=10 lc=1 to=3 type=REQUEST",
            "RECV w=3 inc=2 t=20 lc=5 from=0 from_inc=1 sent_lc=1 type=REQUEST",
            "DROP w=0 inc=0 t=30 to=3 type=REQUEST lc=2 why=partition",
            "APP w=0 inc=0 t=40 lc=3 ev=enter",
            "APP w=1 inc=4 t=50 lc=9 ev=leader leader=4 term=9",
        ];
        for line in lines {
            let e: Event = line.parse().unwrap_or_else(|m| panic!("{line}: {m}"));
            assert_eq!(e.to_string(), line);
        }
        let e: Event = lines[1].parse().unwrap();
        assert_eq!(
            e,
            Event {
                w: 3,
                inc: 2,
                t: 20,
                lc: 5,
                kind: EventKind::Recv { from: 0, from_inc: 1, sent_lc: 1, msg: "REQUEST".into() }
            }
        );
        // Fields added later at the end of a line are ignored.
        let more: Event = format!("{} extra=1", lines[0]).parse().unwrap();
        assert_eq!(more.to_string(), lines[0]);
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let err = |l: &str| l.parse::<Event>().unwrap_err();
        assert!(err("HELLO w=0").contains("unknown event"));
        assert!(err("SEND w=0 inc=0 t=1 lc=1 to=3").contains("lacks type="));
        assert!(err("SEND w=0 inc=0 t=x lc=1 to=3 type=A").contains("t=x"));
        assert!(err("SEND w=0 inc=0 lc=1 t=1 to=3 type=A").contains("expected t="));
        assert!(err("DROP w=0 inc=0 t=1 to=3 type=A lc=1 why=gone").contains("why=gone"));
        assert!(err("APP w=0 inc=0 t=1 lc=1 ev=dance").contains("ev=dance"));
        assert!(err("APP w=0 inc=0 t=1 lc=1 ev=leader leader=2").contains("lacks term="));
        assert!(err("SEND w=99999999999 inc=0 t=1 lc=1 to=3 type=A").contains("out of range"));
    }

    #[test]
    fn a_state_line_round_trips_and_is_cut_to_its_bound() {
        let line = r#"STATE w=2 inc=1 t=40 lc=7 json={"a":"x y","b":[1,2],"c":" json= w=3"}"#;
        let st: State = line.parse().unwrap();
        assert_eq!((st.w, st.inc, st.t, st.lc), (2, 1, 40, 7));
        assert_eq!(st.json, r#"{"a":"x y","b":[1,2],"c":" json= w=3"}"#);
        assert!(!st.cut());
        assert_eq!(st.to_string(), line);
        for bad in
            ["STATE w=0 inc=0 t=1 lc=1", "STATE w=0 inc=0 t=x lc=1 json={}", "STATE w=0 t=1 lc=1 json={}"]
        {
            assert!(bad.parse::<State>().is_err(), "{bad}");
        }
        // Longer than the bound: cut on a character's boundary, marked, and short enough
        // for any reader's line.
        let long = format!(r#"{{"s":"{}"}}"#, "é".repeat(STATE_MAX));
        let st = State { w: 0, inc: 0, t: 1, lc: 1, json: long };
        let line = st.to_string();
        assert!(line.len() < MAX_LINE, "{}", line.len());
        let back: State = line.parse().unwrap();
        assert!(back.cut() && back.json.len() <= STATE_MAX + '…'.len_utf8());
        assert_eq!(back.to_string(), line, "a cut state stays as it is");
    }

    #[test]
    fn a_message_s_contents_are_its_protocol_json_cut_to_a_bound() {
        let mut s = String::new();
        push_body(&mut s, &Msg::Reply);
        assert_eq!(s, r#" body={"type":"REPLY"}"#);
        let mut s = String::new();
        push_body(&mut s, &Msg::Request { ticket: 4, note: "é".repeat(BODY_MAX) });
        assert!(s.ends_with('…') && s.len() <= " body=".len() + BODY_MAX + '…'.len_utf8(), "{}", s.len());
        assert_eq!(body("SEND w=0 type=X"), None);
    }

    #[test]
    fn odd_message_kinds_stay_one_word() {
        let word = |k: &str| {
            let mut s = String::new();
            push_word(&mut s, k);
            s
        };
        assert_eq!(word("REQUEST"), "REQUEST");
        assert_eq!(word("two words=x"), "two_words_x");
        assert_eq!(word(""), "_");
    }

    #[test]
    fn the_writer_s_numbers_are_written_in_full() {
        let mut s = String::new();
        for v in [0, 7, 10, 1234567890, u64::MAX] {
            push_num(&mut s, "x", v);
        }
        assert_eq!(s, format!(" x=0 x=7 x=10 x=1234567890 x={}", u64::MAX));
    }
}
