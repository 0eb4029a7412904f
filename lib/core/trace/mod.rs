//! The message trace: what every worker sent, received and lost, and what its
//! application did, one file per worker in the run directory (`trace-w{ID}.log`).
//!
//! Each file starts with a header line and then holds one human-readable line per
//! event, in the order the worker did them, appended by every incarnation of that
//! worker (`O_APPEND`; a new life starts only after the old one is gone):
//!
//! ```text
//! # mutexlab trace v1 w=0 workers=5 algo=centralized
//! SEND w=0 inc=0 t=8812345001 lc=4 to=3 type=REQUEST body={"type":"REQUEST","stamp":4}
//! RECV w=0 inc=0 t=8812391002 lc=9 from=3 from_inc=0 sent_lc=8 type=GRANT body={"type":"GRANT"}
//! DROP w=0 inc=0 t=8812391502 to=2 type=REQUEST lc=10 why=drop body={"type":"REQUEST","stamp":10}
//! APP w=0 inc=0 t=8812402003 lc=11 ev=enter
//! APP w=3 inc=1 t=8812502003 lc=12 ev=leader leader=4 term=9
//! ```
//!
//! `w` and `inc` are the worker and its incarnation, `t` the machine's monotonic clock
//! in nanoseconds ([`resource::monotonic_ns`], so it lines up with `resource.log` and
//! `faults.log`), `lc` the worker's Lamport clock: on a SEND the clock stamped on the
//! envelope, on a RECV the receiver's clock after taking the message in (`sent_lc` is
//! the envelope's). A DROP follows the SEND of a message that never left its sender: the
//! network lost it (`why=drop`, `--drop`), it was sent to a peer known to be down
//! (`why=down`), a partition held it back until its receiver was lost or its sender
//! left (`why=partition`), it was still queued (delayed by `--latency`, or waiting for room in
//! the socket) when the channel to its receiver closed (`why=peer-down`) or when its
//! sender left at the end of the run (`why=exit`). It carries the SEND's `lc`. A message
//! that did leave and died with a killed receiver before it was read has no DROP: no
//! process knows which those were.
//! `ev` is one of `want`, `enter`, `leave` and `leader` (with `leader` and `term`).
//! A run with `--states` also records the node's state ([`crate::algorithm::Node::state`])
//! after each step that changed it, before the step's SENDs, on a STATE line:
//! `STATE w=0 inc=0 t=8812402100 lc=11 json={"state":"Wanted",...}`, `lc` the worker's
//! clock then, `json=` the rest of the line, cut to [`STATE_MAX`] bytes (a cut one ends
//! in `…`). A STATE line is no event: the readers keep it aside ([`State`],
//! [`Reader::state`]), `mutexlab trace` does not list it, and the exports leave it out.
//! Readers must accept fields added after these at the end of a line. SEND, RECV and
//! DROP lines end with `body=`, the message's contents: compact JSON as the JSON-lines
//! protocol has it ([`crate::algorithm::Message::json_text`]), cut to [`BODY_MAX`]
//! bytes, always the last field and the rest of the line (its strings may hold spaces);
//! [`body`] takes it from a line.
//!
//! A message is named by `(from, from_inc, to, sent_lc)`: every send ticks the sender's
//! Lamport clock, broadcasts included (one envelope and one tick per receiver), so no two
//! messages of one incarnation share a clock. Heartbeats are not traced: they carry no
//! tick of their own and would drown the messages.
//!
//! Workers write the whole trace to these files only when asked (`--trace`) or when the
//! run directory is kept (`--keep`). Otherwise they record the same events in the
//! flight recorder ([`crate::flight`]): a ring of the last MiB of records per life in a
//! file mapped into memory, which the supervisor writes out as these files
//! ([`from_rings`]) when the run fails, and deletes unread when it does not. A record
//! is no line: a fixed head of numbers (tag, time, clocks, peer) and the message as
//! MessagePack, the wire's own encoding ([`RECORD_HEAD`]), so a clean run makes no text
//! at all. The lines are made when a ring is written out, by the same function as the
//! file's writer uses, the message read back through the run's [`Decode`] (the
//! registry's [`decode_body`] of its message type, a program's JSON included): a ring's
//! lines are the lines `--trace` would have written. A life whose ring wrapped has a
//! [`WRAPPED`] comment line before its first kept line; readers skip it with a note.
//! `--no-flight-recorder` records nothing. What recording costs a saturated run (no
//! think time, empty sections) is measured in the README (Message trace) and by
//! `mutexlab bench` (Recording): the full trace a third or more CPU per entry (making
//! the lines: clock, numbers by hand, the message's JSON), the flight recorder a few per
//! cent. Runs that think or hold the section for a millisecond do not notice either.
//!
//! The worker writes its lines to memory and hands them to the kernel with one `write`
//! at the end of a turn of its event loop once the oldest is [`FLUSH_EVERY`] (5 ms) old
//! or they fill [`FLUSH_BYTES`], and always before it tells the supervisor its final
//! statistics and before it exits. A saturated turn handles a message or two, so this
//! turns thousands of `write`s per run into a few hundred; what cost remains is the
//! lines themselves. A worker killed outright (SIGKILL) therefore loses at most its
//! last 5 ms of lines, and may leave its last line torn (a write cut short, as a full
//! disk also does): the next life of that worker starts on a fresh line, and readers
//! skip a torn line with a note (a bad line is torn when it is its file's last, or the
//! next record begins a new life; a record glued to a torn line by an older writer is
//! split off and kept).
//!
//! # Reading, bounded
//!
//! [`Reader`] merges the workers' files in time order (a receive after the other events
//! of its nanosecond), a line of at most [`MAX_LINE`] bytes per worker at a time: a
//! longer line is skipped unread, quotes of bad ones are clipped, and a header's worker
//! count above [`MAX_WORKERS`] is refused before anything is sized by it. Readers go
//! through the files twice, first to [`check`] them whole (so bad input prints nothing
//! but its one-line error), then to write or pick: memory is a line per worker and the
//! messages open at once (at most [`MAX_PENDING`]), never a record per event.
//! [`Trace`] and [`load`] hold a whole trace in memory, for tests.
//!
//! # Vector clocks
//!
//! Nothing beyond the Lamport clock travels on the wire. The happens-before relation is
//! rebuilt from the trace instead: each worker's events in file order (its incarnations
//! one after the other), plus an edge from every SEND to the RECV that names it. That is
//! exactly the relation a vector clock piggybacked on every message would have
//! computed, without making envelopes N counters larger on every run, traced or not.
//! What it cannot see is a message whose SEND was lost with a killed worker's last
//! batch: its RECV is then an ordinary local event. The clocks are computed as the
//! events stream by, keeping each worker's current clock and, for each message not yet
//! received, its send's clock (shared by a worker's sends between two receipts, at most
//! [`MAX_OPEN_CLOCKS`] entries in all).
//!
//! [`Clocks`] is that computation, for the exports in [`crate::export`] (ShiViz's log).

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::algorithm::{Message, MAX_WORKERS};
use crate::flight;
use crate::lines::{clip, Lines, MAX_LINE};
use crate::resource;

/// First words of every trace file's header line.
pub const HEADER: &str = "# mutexlab trace v1";

/// The trace file of worker `w`, inside the run directory.
pub fn file_name(w: u32) -> String {
    format!("trace-w{w}.log")
}

/// The worker whose trace file is called `name`, if it is one.
pub fn worker_of(name: &str) -> Option<u32> {
    let id = name.strip_prefix("trace-w")?.strip_suffix(".log")?;
    // Only the canonical spelling: "trace-w01.log" is not ours.
    id.parse().ok().filter(|w: &u32| w.to_string() == id)
}

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
fn cut_state(json: &str) -> &str {
    let mut cut = json.len().min(STATE_MAX);
    while !json.is_char_boundary(cut) {
        cut -= 1;
    }
    &json[..cut]
}

/// The value of `name=value`, if `part` is that field.
fn field<'a>(part: &'a str, name: &str) -> Option<&'a str> {
    part.strip_prefix(name)?.strip_prefix('=')
}

/// Append a message type as a trace line can hold it: one word. A kind from outside
/// Rust could hold anything.
fn push_word(buf: &mut String, kind: &str) {
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
fn push_num(buf: &mut String, name: &str, mut v: u64) {
    buf.push(' ');
    buf.push_str(name);
    buf.push('=');
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend(digits[i..].iter().map(|&d| d as char));
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
enum Rec<'a> {
    Send { lc: u64, to: u32 },
    Recv { lc: u64, from: u32, from_inc: u32, sent_lc: u64 },
    Drop { lc: u64, to: u32, why: &'a str },
    App { lc: u64, ev: &'a str, leader: Option<(u32, u64)> },
    State { lc: u64 },
}

/// A message as a line shows it: its type and its protocol JSON ([`Message::kind`],
/// [`Message::json_text`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// The message's type.
    pub kind: String,
    /// Its JSON, compact.
    pub json: String,
}

/// Turns a message's bytes, as the flight recorder keeps them (MessagePack, the wire's
/// encoding), into its [`Body`], or says why it cannot: [`decode_body`] for the message
/// type of the run. The registry gives each node type's.
pub type Decode = fn(&[u8]) -> Result<Body, String>;

/// [`Decode`] for messages of type `M`.
pub fn decode_body<M: Message>(bytes: &[u8]) -> Result<Body, String> {
    let msg: M = rmp_serde::from_slice(bytes).map_err(|e| e.to_string())?;
    Ok(Body { kind: msg.kind().to_string(), json: msg.json_text() })
}

/// Append one whole line (its newline included): `w`'s life `inc` recorded `rec` at
/// `t`, with `msg` (type, JSON) for a SEND, RECV or DROP. Both the trace file's writer
/// and the flight recorder's reader make their lines here, so they are the same. A
/// STATE line's JSON text comes as `msg.1`.
fn push_line(buf: &mut String, w: u32, inc: u32, t: u64, rec: &Rec, msg: (&str, &str)) {
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

/// A flight recorder's record (see [`crate::flight`] for how a ring keeps them): a
/// fixed head of [`RECORD_HEAD`] bytes, little-endian, then the message's MessagePack
/// bytes for a SEND, RECV or DROP, the state's JSON text (UTF-8, at most [`STATE_MAX`]
/// bytes) for a STATE. The head is the tag (1 SEND, 2 RECV, 3 DROP, 4 APP, 5 STATE),
/// a small number (DROP: the index of `why` in [`DROP_REASONS`]; APP: of `ev` in
/// [`APP_EVENTS`], with 1 added to its high bit's place when a leader follows), two
/// bytes of zeros, then `t`, `lc`, and two numbers: SEND and DROP the receiver; RECV the
/// sender and its incarnation (in the high half), then `sent_lc`; APP the leader and
/// its term; STATE nothing more.
const RECORD_HEAD: usize = 40;

const TAG_SEND: u8 = 1;
const TAG_RECV: u8 = 2;
const TAG_DROP: u8 = 3;
const TAG_APP: u8 = 4;
const TAG_STATE: u8 = 5;
/// A STATE record whose state was cut to [`STATE_MAX`] bytes has this small number.
const STATE_CUT: u8 = 1;
/// The APP record's small number has this bit when a leader and term follow.
const WITH_LEADER: u8 = 0x80;

/// The head of a record for `rec` at `t`.
fn record_head(t: u64, rec: &Rec) -> [u8; RECORD_HEAD] {
    let index = |list: &[&str], s: &str| list.iter().position(|x| *x == s).unwrap_or(0) as u8;
    let (tag, small, lc, a, b) = match *rec {
        Rec::Send { lc, to } => (TAG_SEND, 0, lc, u64::from(to), 0),
        Rec::Recv { lc, from, from_inc, sent_lc } => {
            (TAG_RECV, 0, lc, u64::from(from) | u64::from(from_inc) << 32, sent_lc)
        }
        Rec::Drop { lc, to, why } => (TAG_DROP, index(DROP_REASONS, why), lc, u64::from(to), 0),
        Rec::App { lc, ev, leader } => {
            let (l, term) = leader.unwrap_or_default();
            let with = if leader.is_some() { WITH_LEADER } else { 0 };
            (TAG_APP, index(APP_EVENTS, ev) | with, lc, u64::from(l), term)
        }
        Rec::State { lc } => (TAG_STATE, 0, lc, 0, 0),
    };
    let mut head = [0u8; RECORD_HEAD];
    head[0] = tag;
    head[1] = small;
    for (i, v) in [t, lc, a, b].into_iter().enumerate() {
        head[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
    }
    head
}

/// A record's time, event and message bytes, or why it is none.
fn parse_record(record: &[u8]) -> Result<(u64, Rec<'static>, &[u8]), String> {
    if record.len() < RECORD_HEAD {
        return Err(format!("a record of {} bytes, shorter than its head", record.len()));
    }
    let num = |i: usize| u64::from_le_bytes(record[8 + 8 * i..16 + 8 * i].try_into().expect("8 bytes"));
    let (t, lc, a, b) = (num(0), num(1), num(2), num(3));
    let id = |v: u64| u32::try_from(v).map_err(|_| format!("a worker id {v} out of range"));
    let (tag, small) = (record[0], record[1]);
    let pick = |list: &[&'static str], i: u8| {
        list.get(usize::from(i))
            .copied()
            .ok_or_else(|| format!("record tag {tag} with an unknown number {i}"))
    };
    let rec = match tag {
        TAG_SEND => Rec::Send { lc, to: id(a)? },
        TAG_RECV => Rec::Recv { lc, from: (a & 0xffff_ffff) as u32, from_inc: (a >> 32) as u32, sent_lc: b },
        TAG_DROP => Rec::Drop { lc, to: id(a)?, why: pick(DROP_REASONS, small)? },
        TAG_APP => Rec::App {
            lc,
            ev: pick(APP_EVENTS, small & !WITH_LEADER)?,
            leader: if small & WITH_LEADER != 0 { Some((id(a)?, b)) } else { None },
        },
        TAG_STATE => Rec::State { lc },
        _ => return Err(format!("an unknown record tag {tag}")),
    };
    Ok((t, rec, &record[RECORD_HEAD..]))
}

/// A worker's trace file, open for appending, with the lines not yet written; or its
/// flight recorder's ring.
///
/// Methods: `open` and `ring`; recording, `send`, `recv`, `drop`, `app` (each adds one
/// line to the buffer, or one record to the ring); `flush`, the one `write` of
/// everything buffered (also done on drop).
#[derive(Debug)]
pub struct Writer {
    /// `None` when tracing is off or goes to the ring.
    file: Option<File>,
    /// The flight recorder's ring ([`crate::flight`]): each event goes there as a
    /// record at once, never as text (see [`RECORD_HEAD`]).
    ring: Option<flight::Ring>,
    path: PathBuf,
    w: u32,
    inc: u32,
    buf: String,
    /// A message's bytes on their way into the ring, kept to save an allocation each.
    scratch: Vec<u8>,
    /// A write failed: nothing more is recorded (the run goes on; see `flush`).
    broken: bool,
    /// When the oldest line in `buf` was recorded.
    since: Option<Instant>,
}

/// The most a worker keeps unwritten: this long since its oldest line…
pub const FLUSH_EVERY: Duration = Duration::from_millis(5);
/// …or this many bytes.
pub const FLUSH_BYTES: usize = 16 * 1024;

impl Writer {
    /// Open (or create) worker `w`'s trace file in `run_dir` for incarnation `inc`. The
    /// first life to open it writes the header line.
    pub fn open(run_dir: &Path, w: u32, inc: u32, workers: u32, algo: &str) -> io::Result<Writer> {
        let path = run_dir.join(file_name(w));
        let file = OpenOptions::new().read(true).append(true).create(true).open(&path)?;
        let len = file.metadata()?.len();
        let mut writer = Writer {
            file: Some(file),
            ring: None,
            path,
            w,
            inc,
            buf: String::with_capacity(2 * FLUSH_BYTES),
            scratch: Vec::new(),
            broken: false,
            since: None,
        };
        if len == 0 {
            let _ = write!(writer.buf, "{HEADER} w={w} workers={workers} algo=");
            push_word(&mut writer.buf, algo);
            writer.buf.push('\n');
            writer.flush()?;
        } else {
            // A life killed mid-write leaves a torn last line: start on a fresh one, so
            // this life's first line is not glued to it. No other life writes now.
            let mut last = [0u8];
            std::os::unix::fs::FileExt::read_exact_at(
                writer.file.as_ref().expect("open"),
                &mut last,
                len - 1,
            )?;
            if last[0] != b'\n' {
                writer.buf.push('\n');
                writer.flush()?;
            }
        }
        Ok(writer)
    }

    /// A writer that records worker `w`'s life `inc` in the flight recorder's ring, a new
    /// file in `run_dir` ([`flight::ring_name`]) of `cap` bytes ([`flight::RING_BYTES`]
    /// for a run): what the run keeps only if it fails (see the module documentation).
    pub fn ring(run_dir: &Path, w: u32, inc: u32, cap: u64) -> io::Result<Writer> {
        let path = run_dir.join(flight::ring_name(w, inc));
        let ring = flight::Ring::create(&path, cap)?;
        Ok(Writer {
            file: None,
            ring: Some(ring),
            path,
            w,
            inc,
            buf: String::new(),
            scratch: Vec::with_capacity(256),
            broken: false,
            since: None,
        })
    }

    /// A writer that records nothing: tracing is off.
    pub fn off() -> Writer {
        Writer {
            file: None,
            ring: None,
            path: PathBuf::new(),
            w: 0,
            inc: 0,
            buf: String::new(),
            scratch: Vec::new(),
            broken: true,
            since: None,
        }
    }

    /// Whether lines are still recorded (off, or stopped by a failed write, they are not).
    pub fn recording(&self) -> bool {
        !self.broken
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record `rec` at `t`, with its message if it has one: into the ring as a record
    /// (the message as its MessagePack bytes: no text is made), or as a line into the
    /// buffer for the next flush.
    fn record<M: Message>(&mut self, t: u64, rec: Rec, msg: Option<&M>) {
        if self.broken {
            return;
        }
        if let Some(ring) = &mut self.ring {
            self.scratch.clear();
            if let Some(msg) = msg {
                // Our messages always serialise (they travel so); one that did not would
                // be recorded with no bytes, and written out as undecodable.
                let _ = rmp_serde::encode::write(&mut self.scratch, msg);
            }
            ring.push(&[&record_head(t, &rec), &self.scratch]);
            return;
        }
        if self.buf.is_empty() {
            self.since = Some(Instant::now());
        }
        match msg {
            Some(msg) => push_line(&mut self.buf, self.w, self.inc, t, &rec, (msg.kind(), &msg.json_text())),
            None => push_line(&mut self.buf, self.w, self.inc, t, &rec, ("", "")),
        }
    }

    /// This worker sent `msg` to `to`, stamped `lc`.
    pub fn send<M: Message>(&mut self, lc: u64, to: u32, msg: &M) {
        if self.recording() {
            self.record(resource::monotonic_ns(), Rec::Send { lc, to }, Some(msg));
        }
    }

    /// This worker took in `msg`; `lc` is its clock after.
    pub fn recv<M: Message>(&mut self, lc: u64, from: u32, from_inc: u32, sent_lc: u64, msg: &M) {
        if self.recording() {
            self.record(resource::monotonic_ns(), Rec::Recv { lc, from, from_inc, sent_lc }, Some(msg));
        }
    }

    /// `msg`, sent to `to` stamped `lc`, will never arrive, because of `why` (one of
    /// [`DROP_REASONS`]).
    pub fn drop<M: Message>(&mut self, lc: u64, to: u32, msg: &M, why: &str) {
        debug_assert!(DROP_REASONS.contains(&why), "{why}");
        if self.recording() {
            self.record(resource::monotonic_ns(), Rec::Drop { lc, to, why }, Some(msg));
        }
    }

    /// The application's event `ev` (one of [`APP_EVENTS`]: `want`, `enter`, `leave`, or
    /// `leader` with `leader`).
    pub fn app(&mut self, lc: u64, ev: &str, leader: Option<(u32, u64)>) {
        debug_assert!(APP_EVENTS.contains(&ev), "{ev}");
        if self.recording() {
            self.record::<NoMessage>(resource::monotonic_ns(), Rec::App { lc, ev, leader }, None);
        }
    }

    /// The node's state after a step, as JSON text (`--states`): a STATE record, cut to
    /// [`STATE_MAX`] bytes.
    pub fn state(&mut self, lc: u64, json: &str) {
        if self.recording() {
            self.record_state(resource::monotonic_ns(), lc, json);
        }
    }

    /// [`Writer::state`] at `t`.
    fn record_state(&mut self, t: u64, lc: u64, json: &str) {
        if self.broken {
            return;
        }
        let rec = Rec::State { lc };
        if let Some(ring) = &mut self.ring {
            let mut head = record_head(t, &rec);
            if json.len() > STATE_MAX {
                head[1] = STATE_CUT;
            }
            ring.push(&[&head, cut_state(json).as_bytes()]);
            return;
        }
        if self.buf.is_empty() {
            self.since = Some(Instant::now());
        }
        push_line(&mut self.buf, self.w, self.inc, t, &rec, ("", json));
    }

    /// Write everything buffered with one `write`, so that a file only ever gains whole
    /// batches of whole lines. On failure (a full disk, most likely) tracing stops for
    /// this life: the error is returned once, for the caller to report; the run's
    /// evidence is the resource file, and it goes on.
    pub fn flush(&mut self) -> io::Result<()> {
        self.since = None;
        if self.buf.is_empty() || self.broken {
            return Ok(());
        }
        let Some(file) = &self.file else { return Ok(()) };
        let result = nix::unistd::write(file, self.buf.as_bytes()).map_err(io::Error::from);
        let len = self.buf.len();
        self.buf.clear();
        self.since = None;
        match result {
            Ok(n) if n == len => Ok(()),
            Ok(n) => {
                self.broken = true;
                Err(io::Error::other(format!("short write ({n} of {len} bytes)")))
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }
}

/// The message type of an APP event, which has none.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum NoMessage {}

impl Message for NoMessage {
    fn kind(&self) -> &str {
        match *self {}
    }
}

impl Writer {
    /// When the buffered lines must be written at the latest (`None`: nothing waits).
    pub fn due(&self) -> Option<Instant> {
        self.since.map(|t| t + FLUSH_EVERY)
    }

    /// [`flush`](Self::flush) if the oldest buffered line is [`FLUSH_EVERY`] old or the
    /// buffer holds [`FLUSH_BYTES`]: a `write` per turn of a busy loop would cost more
    /// than all the formatting (see the module documentation).
    pub fn flush_if_due(&mut self) -> io::Result<()> {
        let due = self.due().is_some_and(|d| Instant::now() >= d);
        if due || self.buf.len() >= FLUSH_BYTES {
            self.flush()
        } else {
            Ok(())
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Why a trace cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A trace file or the directory could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The directory holds no trace file.
    #[error("{dir} holds no trace files (trace-w<ID>.log): runs record them with --trace or --keep")]
    NoTrace {
        /// The run directory.
        dir: PathBuf,
    },
    /// A line that is no trace line, or a header that does not fit.
    #[error("{path}:{line}: {msg}")]
    Bad {
        /// The trace file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it, quoting it clipped.
        msg: String,
    },
    /// The files disagree with each other (a receive before its send).
    #[error("{0}")]
    Inconsistent(String),
    /// The output could not be written.
    #[error("cannot write: {0}")]
    Write(io::Error),
}

/// A whole run's trace, every worker's events merged, in memory: for tests and small
/// traces. The commands stream instead ([`Reader`], [`write_text`], [`Clocks`],
/// [`pick_arrows`]), so that they need memory by what they show, not by the trace's size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Workers in the run, from the headers.
    pub workers: u32,
    /// The algorithm, from the headers.
    pub algo: String,
    /// In [`Reader`]'s order: by `t`; one worker's events stay in the order it recorded them.
    pub events: Vec<Event>,
}

/// One message: from whom to whom, its type, when it was sent and when (if ever) it was
/// received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrow {
    /// The sender.
    pub from: u32,
    /// The receiver.
    pub to: u32,
    /// The message's type.
    pub msg: String,
    /// `t` of its SEND.
    pub sent: u64,
    /// `t` of its RECV; `None` if it never arrived (dropped, or lost with a process).
    pub received: Option<u64>,
    /// Why it never arrived, when its sender wrote a DROP line for it (`why=`).
    pub dropped: Option<String>,
}

/// The first words of the comment line that marks, in a trace file made from the flight
/// recorder's rings, where a life's ring had wrapped: that life's events before it are
/// lost. Readers skip it with a note.
pub const WRAPPED: &str = "# flight recorder:";

/// Turn the flight recorder's rings in `run_dir` ([`crate::flight`]) into the ordinary
/// trace files of a run of `workers` workers of `algo`, each life's lines after the
/// last one's (a [`WRAPPED`] line first where its ring had wrapped), and delete the
/// rings. The records become the very lines the trace file's writer makes, messages
/// through `decode` (the run's message type's [`decode_body`]). A worker that already
/// has a trace file (`--trace`) keeps it. Memory: one ring at a time. Returns a line
/// for each ring that could not be read or written, and for records left out (a torn
/// last one, or one whose message does not decode).
pub fn from_rings(run_dir: &Path, workers: u32, algo: &str, decode: Decode) -> Vec<String> {
    let rings = rings_in(run_dir);
    let notes = write_traces(&rings, run_dir, workers, algo, decode);
    for (_, _, ring) in &rings {
        let _ = std::fs::remove_file(ring);
    }
    notes
}

/// The flight recorder's rings in `run_dir`: worker, life and path, in that order.
fn rings_in(run_dir: &Path) -> Vec<(u32, u32, PathBuf)> {
    let mut rings: Vec<(u32, u32, PathBuf)> = std::fs::read_dir(run_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let (w, inc) = e.file_name().to_str().and_then(flight::ring_of)?;
            Some((w, inc, e.path()))
        })
        .collect();
    rings.sort();
    rings
}

/// Write each worker's trace file into `out` from its `rings` (as [`rings_in`] gives
/// them), unless it has one there already. Returns [`from_rings`]'s notes.
fn write_traces(
    rings: &[(u32, u32, PathBuf)],
    out: &Path,
    workers: u32,
    algo: &str,
    decode: Decode,
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut at = 0;
    while at < rings.len() {
        let w = rings[at].0;
        let lives = rings[at..].iter().take_while(|r| r.0 == w).count();
        let path = out.join(file_name(w));
        if w < workers && !path.exists() {
            let header = Header { w, workers, algo };
            if let Err(e) = write_rings(&path, &header, &rings[at..at + lives], decode, &mut notes) {
                notes.push(format!("cannot write {}: {e}", path.display()));
            }
        }
        at += lives;
    }
    notes
}

/// The most of a run file's first line read for its header.
const HEADER_MAX: u64 = 4096;

/// For a reader of a run directory that holds the flight recorder's rings and no trace
/// file (its supervisor was killed before it wrote them out): the rings written out as
/// trace files into a private temporary directory, left as they are in `run_dir`, and
/// the notes of what could not be read. The run's algorithm and worker count come from
/// its resource or leader file's header, the message decoder from `decoder` (the
/// registry's, which sits above this module). `Ok(None)`: there is a trace file, or no ring.
pub fn traces_from_rings(
    run_dir: &Path,
    decoder: impl Fn(&str) -> Option<Decode>,
) -> Result<Option<(tempfile::TempDir, Vec<String>)>, TraceError> {
    let io_err = |source| TraceError::Io { path: run_dir.to_path_buf(), source };
    let mut any_trace = false;
    for entry in std::fs::read_dir(run_dir).map_err(io_err)? {
        any_trace |= entry.map_err(io_err)?.file_name().to_str().and_then(worker_of).is_some();
    }
    let rings = rings_in(run_dir);
    if any_trace || rings.is_empty() {
        return Ok(None);
    }
    let inconsistent = |why: String| {
        TraceError::Inconsistent(format!(
            "{} holds the flight recorder's rings but no trace files, and {why}",
            run_dir.display()
        ))
    };
    let (algo, workers) = run_header(run_dir).map_err(inconsistent)?;
    let body = decoder(&algo).ok_or_else(|| {
        inconsistent(format!("its run's algorithm {} is not one this mutexlab knows", clip(&algo)))
    })?;
    let out = tempfile::Builder::new()
        .prefix("mutexlab-rings-")
        .tempdir()
        .map_err(|e| inconsistent(format!("no directory to write them out in: {e}")))?;
    let notes = write_traces(&rings, out.path(), workers, &algo, body);
    Ok(Some((out, notes)))
}

/// The algorithm and worker count a run directory's resource or leader file says in
/// its header line, or why neither does.
fn run_header(run_dir: &Path) -> Result<(String, u32), String> {
    use std::io::Read as _;
    let files = [
        (crate::control::RESOURCE_FILE, crate::resource::HEADER),
        (crate::control::LEADERS_FILE, crate::leaders::LEADERS_HEADER),
    ];
    for (name, header) in files {
        let Ok(f) = crate::files::open_regular(&run_dir.join(name)) else { continue };
        let mut head = Vec::new();
        if f.take(HEADER_MAX).read_to_end(&mut head).is_err() {
            continue;
        }
        let first =
            String::from_utf8_lossy(head.split(|&b| b == b'\n').next().unwrap_or_default()).into_owned();
        let Some(rest) = first.strip_prefix(header) else { continue };
        let word = |name: &str| rest.split(' ').find_map(|p| field(p, name)).map(str::to_string);
        let algo = word("algo");
        let workers =
            word("workers").and_then(|n| n.parse::<u32>().ok()).filter(|&n| (1..=MAX_WORKERS).contains(&n));
        if let (Some(algo), Some(workers)) = (algo, workers) {
            return Ok((algo, workers));
        }
    }
    Err(format!("neither its {} nor its {} names the run's algorithm and workers", files[0].0, files[1].0))
}

/// What a trace file's header line says.
struct Header<'a> {
    w: u32,
    workers: u32,
    algo: &'a str,
}

/// Write worker `w`'s trace file from its `lives`' rings.
fn write_rings(
    path: &Path,
    header: &Header,
    lives: &[(u32, u32, PathBuf)],
    decode: Decode,
    notes: &mut Vec<String>,
) -> io::Result<()> {
    use std::io::Write as _;
    let Header { w, workers, algo } = *header;
    let mut out = io::BufWriter::new(OpenOptions::new().write(true).create_new(true).open(path)?);
    let mut line = format!("{HEADER} w={w} workers={workers} algo=");
    push_word(&mut line, algo);
    line.push('\n');
    out.write_all(line.as_bytes())?;
    for (_, inc, ring) in lives {
        let c = match flight::read(ring) {
            Ok(c) => c,
            Err(e) => {
                notes.push(format!("skipped {}: {e}", ring.display()));
                continue;
            }
        };
        if c.lost > 0 {
            writeln!(
                out,
                "{WRAPPED} w={w} inc={inc} kept the last {} events of this life; the {} bytes of records before them are lost",
                c.records().count(),
                c.lost
            )?;
        }
        let (mut bad, mut first) = (0u64, None);
        for record in c.records() {
            line.clear();
            match record_line(&mut line, (w, *inc), record, decode) {
                Ok(()) => out.write_all(line.as_bytes())?,
                Err(e) => {
                    bad += 1;
                    first.get_or_insert(e);
                }
            }
        }
        if bad > 0 {
            let e = first.unwrap_or_default();
            notes.push(format!(
                "{}: left out {bad} records that do not read (the first: {})",
                ring.display(),
                clip(&e)
            ));
        }
        if c.torn() > 0 {
            notes.push(format!("{}: left out its last record, torn ({} bytes)", ring.display(), c.torn()));
        }
    }
    out.flush()
}

/// Append the line of one flight recorder's `record` of worker `w`'s life `inc`.
fn record_line(buf: &mut String, (w, inc): (u32, u32), record: &[u8], decode: Decode) -> Result<(), String> {
    let (t, rec, bytes) = parse_record(record)?;
    if let Rec::App { .. } = rec {
        push_line(buf, w, inc, t, &rec, ("", ""));
        return Ok(());
    }
    if let Rec::State { .. } = rec {
        let json = std::str::from_utf8(bytes).map_err(|_| "a state that is not UTF-8 text".to_string())?;
        let mut text = json.to_string();
        if record[1] == STATE_CUT {
            text.push('…');
        }
        push_line(buf, w, inc, t, &rec, ("", &text));
        return Ok(());
    }
    let body = decode(bytes)?;
    push_line(buf, w, inc, t, &rec, (&body.kind, &body.json));
    Ok(())
}

/// Delete the flight recorder's rings in `run_dir` unread: a clean run keeps nothing.
pub fn remove_rings(run_dir: &Path) {
    for entry in std::fs::read_dir(run_dir).into_iter().flatten().flatten() {
        if entry.file_name().to_str().and_then(flight::ring_of).is_some() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Read every trace file in `run_dir`, check it, and merge the events in time order,
/// all in memory (see [`Trace`]).
pub fn load(run_dir: &Path) -> Result<Trace, TraceError> {
    check(run_dir)?;
    let mut r = Reader::open(run_dir)?;
    let mut events = Vec::new();
    while let Some(e) = r.next_event()? {
        events.push(e);
    }
    Ok(Trace { workers: r.workers, algo: r.algo.clone(), events })
}

/// What a reader skipped (torn and overlong lines), or could not pair within its bounds:
/// the first few, and how many in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notes {
    /// The first few notes, one line each.
    pub shown: Vec<String>,
    /// Notes beyond those shown.
    pub more: u64,
}

/// How many notes are kept word for word.
const NOTES_SHOWN: usize = 5;

impl Notes {
    /// Add a note: kept word for word among the first few, else counted.
    pub fn add(&mut self, note: String) {
        if self.shown.len() < NOTES_SHOWN {
            self.shown.push(note);
        } else {
            self.more += 1;
        }
    }

    /// One line each, the count of the rest last.
    pub fn lines(&self) -> Vec<String> {
        let mut v = self.shown.clone();
        if self.more > 0 {
            v.push(format!("and {} more such notes", self.more));
        }
        v
    }
}

/// Whether the line at hand is a record, torn, or to be skipped.
enum Line {
    /// A record, and where it starts on its line.
    Event(Event, usize),
    /// A STATE line.
    State(State),
    Bad(String),
}

/// One worker's file, read a bounded line at a time ([`Lines`]), checked as it goes.
struct WorkerFile {
    w: u32,
    workers: u32,
    path: PathBuf,
    lines: Lines<File>,
    lineno: usize,
    /// The life and time of the last event kept.
    last: Option<(u32, u64)>,
    /// The clock of the last SEND of that life.
    last_send: Option<u64>,
    /// Bad lines waiting for the next record: torn if it begins a new life (or the file
    /// ends), else the first of them is the file's error.
    held: Vec<(usize, String)>,
    /// Keep each record's `body=` (what [`Reader::body`] gives), in `body`.
    bodies: bool,
    body: Option<String>,
    /// Keep STATE lines: the last one of the current life in `state`, and in
    /// `event_state` the one that was last when the event read ahead was read (what
    /// [`Reader::state`] gives).
    states: bool,
    state: Option<std::rc::Rc<State>>,
    event_state: Option<std::rc::Rc<State>>,
    /// STATE lines read, kept or not.
    state_lines: u64,
}

/// Consecutive bad lines that can still be torn ones (a life, and the ones after it,
/// killed mid-write before they wrote a whole line).
const MAX_TORN_RUN: usize = 4;

/// The tags a record starts with: a line holding one further in was glued to a torn one.
const TAGS: [&str; 5] = ["SEND", "RECV", "DROP", "APP", "STATE"];

impl WorkerFile {
    /// Open worker `w`'s file and read its header: its worker count and algorithm.
    fn open(path: PathBuf, w: u32) -> Result<(WorkerFile, String), TraceError> {
        let file = crate::files::open_regular(&path)
            .map_err(|source| TraceError::Io { path: path.clone(), source })?;
        let mut lines = Lines::new(file, Vec::new());
        let bad = |msg: String| TraceError::Bad { path: path.clone(), line: 1, msg };
        let got = lines.next().map_err(|source| TraceError::Io { path: path.clone(), source })?;
        if got.is_none() {
            return Err(bad("empty: no header line".into()));
        }
        let head = std::str::from_utf8(&lines.kept).unwrap_or_default();
        let rest = head
            .strip_prefix(HEADER)
            .and_then(|r| r.strip_prefix(' '))
            .filter(|_| lines.len <= MAX_LINE as u64 && got == Some(true))
            .ok_or_else(|| bad(format!("not a mutexlab trace: the first line must start with {HEADER:?}")))?;
        let mut fields = rest.split(' ');
        let mut next = |name: &str| {
            let part = fields.next().unwrap_or_default();
            field(part, name)
                .map(str::to_string)
                .ok_or_else(|| bad(format!("header: expected {name}=…, found {:?}", clip(part))))
        };
        let (hw, workers, algo) = (next("w")?, next("workers")?, next("algo")?);
        if hw != w.to_string() {
            return Err(bad(format!("header says w={}, but the file is worker {w}'s", clip(&hw))));
        }
        // Checked before anything is sized by it.
        let workers: u32 = workers.parse().ok().filter(|&n| n > w && n <= MAX_WORKERS).ok_or_else(|| {
            bad(format!(
                "header: workers={} is not a worker count above {w} and at most {MAX_WORKERS}",
                clip(&workers)
            ))
        })?;
        let f = WorkerFile {
            w,
            workers,
            path,
            lines,
            lineno: 1,
            last: None,
            last_send: None,
            held: Vec::new(),
            bodies: false,
            body: None,
            states: false,
            state: None,
            event_state: None,
            state_lines: 0,
        };
        Ok((f, algo))
    }

    fn bad(&self, line: usize, msg: &str) -> TraceError {
        TraceError::Bad { path: self.path.clone(), line, msg: clip(msg).into_owned() }
    }

    /// The next event of this file, skipping torn and overlong lines with a note.
    fn next_event(&mut self, notes: &mut Notes) -> Result<Option<Event>, TraceError> {
        loop {
            let ended =
                self.lines.next().map_err(|source| TraceError::Io { path: self.path.clone(), source })?;
            let Some(ended) = ended else {
                // The last life may have been killed mid-write: what it left is torn.
                for (n, msg) in std::mem::take(&mut self.held) {
                    notes.add(self.torn_note(n, &msg));
                }
                return Ok(None);
            };
            self.lineno += 1;
            let n = self.lineno;
            if self.lines.len > MAX_LINE as u64 {
                let note = format!(
                    "{}:{n}: skipped a line of {} bytes, longer than any record",
                    self.path.display(),
                    self.lines.len
                );
                notes.add(note);
                continue;
            }
            if ended && self.lines.kept.starts_with(WRAPPED.as_bytes()) {
                let text = String::from_utf8_lossy(&self.lines.kept);
                notes.add(format!("{}:{n}: {}", self.path.display(), clip(&text[2..])));
                continue;
            }
            if !ended {
                // Every batch ends with a newline: this one was cut short.
                self.held.push((n, "the last line is cut short (no newline at its end)".into()));
                continue;
            }
            let (ev, start) = match self.parse_line(notes) {
                Line::Event(ev, start) => (ev, start),
                Line::State(st) => {
                    self.take_state(st, notes)?;
                    continue;
                }
                Line::Bad(msg) => {
                    if self.held.len() == MAX_TORN_RUN {
                        let (n, msg) = &self.held[0];
                        return Err(self.bad(*n, msg));
                    }
                    self.held.push((n, msg));
                    continue;
                }
            };
            if !self.held.is_empty() {
                // Torn lines end a life: the next record starts a new one.
                let new_life = ev.inc > self.last.map_or(0, |(inc, _)| inc);
                if !new_life {
                    let (n, msg) = &self.held[0];
                    return Err(self.bad(*n, msg));
                }
                for (n, msg) in std::mem::take(&mut self.held) {
                    notes.add(self.torn_note(n, &msg));
                }
            }
            self.accept(&ev).map_err(|msg| self.bad(n, &msg))?;
            if self.states {
                // A state of an earlier life is not this one's.
                self.state = self.state.take().filter(|s| s.inc == ev.inc);
                self.event_state = self.state.clone();
            }
            if self.bodies {
                // The rest of the record's line after ` body=` (spaces in its strings too).
                let record = std::str::from_utf8(&self.lines.kept[start..]).unwrap_or_default();
                self.body = body(record).map(str::to_string);
            }
            return Ok(Some(ev));
        }
    }

    /// A STATE line read: checked like a record (its worker, life and time), then kept
    /// if asked. Torn lines before it end a life as before a record.
    fn take_state(&mut self, st: State, notes: &mut Notes) -> Result<(), TraceError> {
        let n = self.lineno;
        if !self.held.is_empty() {
            if st.inc <= self.last.map_or(0, |(inc, _)| inc) {
                let (n, msg) = &self.held[0];
                return Err(self.bad(*n, msg));
            }
            for (n, msg) in std::mem::take(&mut self.held) {
                notes.add(self.torn_note(n, &msg));
            }
        }
        if st.w != self.w {
            return Err(self.bad(n, &format!("w={} in worker {}'s file", st.w, self.w)));
        }
        if let Some((inc, t)) = self.last {
            if st.inc < inc {
                return Err(self.bad(n, &format!("inc={} after inc={inc}: lives go forward", st.inc)));
            }
            if st.t < t {
                return Err(self.bad(n, &format!("t={} before the previous line's t={t}", st.t)));
            }
            if st.inc > inc {
                self.last_send = None;
            }
        }
        self.last = Some((st.inc, st.t));
        self.state_lines += 1;
        if self.states {
            self.state = Some(std::rc::Rc::new(st));
        }
        Ok(())
    }

    fn torn_note(&self, n: usize, msg: &str) -> String {
        format!("{}:{n}: skipped a torn line (its life ended mid-write): {}", self.path.display(), clip(msg))
    }

    /// The current line as a record; a record glued to a torn line (by a writer that
    /// did not start its life on a fresh line) is taken, and the torn part noted.
    fn parse_line(&self, notes: &mut Notes) -> Line {
        let Ok(text) = std::str::from_utf8(&self.lines.kept) else {
            return Line::Bad("not UTF-8 text".into());
        };
        // A record has one " w=": a second one may start a glued record.
        let mut marks = text.match_indices(" w=").map(|(i, _)| i).skip(1).collect::<Vec<_>>();
        while let Some(i) = marks.pop() {
            let Some(tag) = TAGS.iter().find(|t| text[..i].ends_with(*t)) else { continue };
            let start = i - tag.len();
            if *tag == "STATE" {
                if let Ok(st) = text[start..].parse::<State>() {
                    if st.w == self.w {
                        let note = self.torn_note(
                            self.lineno,
                            &format!("{:?} (a record followed it on its line)", &text[..start]),
                        );
                        notes.add(note);
                        return Line::State(st);
                    }
                }
                continue;
            }
            if let Ok(ev) = text[start..].parse::<Event>() {
                if ev.w == self.w {
                    let note = self.torn_note(
                        self.lineno,
                        &format!("{:?} (a record followed it on its line)", &text[..start]),
                    );
                    notes.add(note);
                    return Line::Event(ev, start);
                }
            }
        }
        if text.starts_with("STATE ") {
            return match text.parse::<State>() {
                Ok(st) => Line::State(st),
                Err(m) => Line::Bad(m),
            };
        }
        match text.parse::<Event>() {
            Ok(ev) => Line::Event(ev, 0),
            Err(m) => Line::Bad(m),
        }
    }

    /// Check a parsed record against its file and what came before in it.
    fn accept(&mut self, ev: &Event) -> Result<(), String> {
        let w = self.w;
        if ev.w != w {
            return Err(format!("w={} in worker {w}'s file", ev.w));
        }
        if ev.w >= self.workers || peer_of(ev).is_some_and(|p| p >= self.workers) {
            return Err(format!("{ev}: names a worker beyond workers={}", self.workers));
        }
        if let Some((inc, t)) = self.last {
            if ev.inc < inc {
                return Err(format!("inc={} after inc={inc}: lives go forward", ev.inc));
            }
            if ev.t < t {
                return Err(format!("t={} before the previous line's t={t}", ev.t));
            }
            if ev.inc > inc {
                self.last_send = None;
            }
        }
        if let EventKind::Send { .. } = ev.kind {
            // Every send ticks the clock, so one life never names two messages alike.
            if let Some(prev) = self.last_send.filter(|&p| ev.lc <= p) {
                return Err(format!(
                    "lc={} after a SEND with lc={prev} in the same life: two messages would share one name (from, inc, to, lc)",
                    ev.lc
                ));
            }
            self.last_send = Some(ev.lc);
        }
        self.last = Some((ev.inc, ev.t));
        Ok(())
    }
}

/// Where an event goes in the merge: its time, whether it is a receive, its worker.
type MergeKey = (u64, bool, u32);

/// Every worker's events, merged in time order as they are read: a file's next line is
/// read only when its last was handed out, so memory is a line per worker.
///
/// Order: by `t`; at one time, a receive after the other events (its send may be among
/// them), then by worker; one worker's events always in its file's order.
pub struct Reader {
    /// Workers in the run, from the headers.
    pub workers: u32,
    /// The algorithm, from the headers.
    pub algo: String,
    files: Vec<WorkerFile>,
    /// Each file's next event, by the merge key.
    heads: std::collections::BinaryHeap<std::cmp::Reverse<(MergeKey, usize)>>,
    next: Vec<Option<Event>>,
    /// Lines skipped, said once each.
    pub notes: Notes,
    /// The `body=` of the event last returned, if kept.
    body: Option<String>,
    /// The state kept for the event last returned ([`Reader::state`]).
    state: Option<std::rc::Rc<State>>,
}

impl Reader {
    /// Open every trace file in `run_dir` and check their headers agree.
    pub fn open(run_dir: &Path) -> Result<Reader, TraceError> {
        Reader::open_with(run_dir, false, false)
    }

    /// [`Reader::open`], keeping each event's `body=` for [`Reader::body`].
    pub fn open_keeping_bodies(run_dir: &Path) -> Result<Reader, TraceError> {
        Reader::open_with(run_dir, true, false)
    }

    /// [`Reader::open_keeping_bodies`], also keeping each event's worker's last STATE
    /// line before it, for [`Reader::state`].
    pub fn open_keeping_bodies_and_states(run_dir: &Path) -> Result<Reader, TraceError> {
        Reader::open_with(run_dir, true, true)
    }

    fn open_with(run_dir: &Path, bodies: bool, states: bool) -> Result<Reader, TraceError> {
        let io_err = |source| TraceError::Io { path: run_dir.to_path_buf(), source };
        let mut found: Vec<(u32, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(run_dir).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            if let Some(w) = entry.file_name().to_str().and_then(worker_of) {
                // No run has more workers: such a file is no file of a run's.
                if w >= MAX_WORKERS {
                    return Err(TraceError::Bad {
                        path: entry.path(),
                        line: 1,
                        msg: format!("worker {w} is beyond the most a run has ({MAX_WORKERS})"),
                    });
                }
                found.push((w, entry.path()));
            }
        }
        if found.is_empty() {
            return Err(TraceError::NoTrace { dir: run_dir.to_path_buf() });
        }
        found.sort();
        let mut files: Vec<WorkerFile> = Vec::with_capacity(found.len());
        let mut algo = String::new();
        for (w, path) in found {
            let (mut f, a) = WorkerFile::open(path, w)?;
            f.bodies = bodies;
            f.states = states;
            if let Some(first) = files.first() {
                if (f.workers, a.as_str()) != (first.workers, algo.as_str()) {
                    return Err(TraceError::Bad {
                        path: f.path.clone(),
                        line: 1,
                        msg: format!(
                            "workers={} algo={}, but {} says workers={} algo={}",
                            f.workers,
                            clip(&a),
                            first.path.display(),
                            first.workers,
                            clip(&algo)
                        ),
                    });
                }
            } else {
                algo = a;
            }
            files.push(f);
        }
        let workers = files[0].workers;
        let mut r = Reader {
            workers,
            algo,
            next: vec![None; files.len()],
            files,
            heads: Default::default(),
            notes: Notes::default(),
            body: None,
            state: None,
        };
        for i in 0..r.files.len() {
            r.refill(i)?;
        }
        Ok(r)
    }

    fn refill(&mut self, i: usize) -> Result<(), TraceError> {
        if let Some(e) = self.files[i].next_event(&mut self.notes)? {
            let key = (e.t, matches!(e.kind, EventKind::Recv { .. }), e.w);
            self.heads.push(std::cmp::Reverse((key, i)));
            self.next[i] = Some(e);
        }
        Ok(())
    }

    /// The next event of the run, `None` after the last.
    pub fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        let Some(std::cmp::Reverse((_, i))) = self.heads.pop() else { return Ok(None) };
        let e = self.next[i].take().expect("a head has its event");
        // A file reads one event ahead: its body is the one of the event handed out.
        self.body = self.files[i].body.take();
        self.state = self.files[i].event_state.take();
        self.refill(i)?;
        Ok(Some(e))
    }

    /// The message contents (`body=`, the rest of its line) of the event last returned,
    /// if it has them and the reader was opened keeping them.
    pub fn body(&self) -> Option<&str> {
        self.body.as_deref()
    }

    /// The last STATE line its worker recorded in the same life before the event last
    /// returned (the node's state when it was recorded: a SEND follows its step's
    /// state, a RECV precedes its own), if the reader was opened keeping them.
    pub fn state(&self) -> Option<&std::rc::Rc<State>> {
        self.state.as_ref()
    }

    /// STATE lines read so far in all files, kept or not.
    pub fn state_lines(&self) -> u64 {
        self.files.iter().map(|f| f.state_lines).sum()
    }
}

/// The other worker an event names, if any.
fn peer_of(e: &Event) -> Option<u32> {
    match &e.kind {
        EventKind::Send { to, .. } | EventKind::Drop { to, .. } => Some(*to),
        EventKind::Recv { from, .. } => Some(*from),
        EventKind::App { leader, .. } => *leader,
    }
}

/// A message's name: sender, its incarnation, receiver, the sender's clock.
pub type MsgId = (u32, u32, u32, u64);

/// The message an event sends, receives or drops (see the module doc: a SEND and its
/// RECV name the same one).
pub fn msg_id(e: &Event) -> Option<MsgId> {
    match &e.kind {
        EventKind::Send { to, .. } | EventKind::Drop { to, .. } => Some((e.w, e.inc, *to, e.lc)),
        EventKind::Recv { from, from_inc, sent_lc, .. } => Some((*from, *from_inc, e.w, *sent_lc)),
        EventKind::App { .. } => None,
    }
}

/// The most messages a reader holds open at once: sent and not yet received (or
/// received with no send yet). Past it, the oldest half is let go: their receipts,
/// if they come, are not paired (a note says how many).
pub const MAX_PENDING: usize = 1 << 18;

/// Message types by number; past [`MAX_TYPES`], one number for all the others.
#[derive(Default)]
struct Types {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

/// The most message types told apart (algorithms have a handful).
pub const MAX_TYPES: usize = 64;
/// The name the types past [`MAX_TYPES`] are counted under.
pub const OTHER_TYPES: &str = "(other types)";
const OTHER: u32 = u32::MAX;

impl Types {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        if self.names.len() == MAX_TYPES {
            return OTHER;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        id
    }

    fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or(OTHER_TYPES, String::as_str)
    }
}

/// Messages open between their send and receipt, at most [`MAX_PENDING`].
struct Pending<V> {
    open: HashMap<MsgId, (u64, V)>,
    seq: u64,
    /// Let go to stay within the bound.
    dropped: u64,
}

impl<V> Default for Pending<V> {
    fn default() -> Self {
        Pending { open: HashMap::new(), seq: 0, dropped: 0 }
    }
}

impl<V> Pending<V> {
    fn insert(&mut self, id: MsgId, v: V) {
        if self.open.len() >= MAX_PENDING {
            self.shed();
        }
        self.seq += 1;
        self.open.insert(id, (self.seq, v));
    }

    /// Let the older half go: amortised over the inserts that filled it, a constant
    /// per message.
    fn shed(&mut self) {
        let keep = self.seq.saturating_sub(self.open.len() as u64 / 2);
        let before = self.open.len();
        self.open.retain(|_, (s, _)| *s >= keep);
        self.dropped += (before - self.open.len()) as u64;
    }

    fn remove(&mut self, id: &MsgId) -> Option<V> {
        self.open.remove(id).map(|(_, v)| v)
    }

    fn note(&self, what: &str, notes: &mut Notes) {
        if self.dropped > 0 {
            notes.add(format!(
                "{} messages were let go unpaired, more than {MAX_PENDING} being open at once: {what}",
                self.dropped
            ));
        }
    }
}

/// What a whole trace holds, as [`check`] finds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Workers in the run, from the headers.
    pub workers: u32,
    /// The algorithm, from the headers.
    pub algo: String,
    /// Events read, of every kind.
    pub events: u64,
    /// Messages sent, by type (at most [`MAX_TYPES`], the rest under [`OTHER_TYPES`]).
    pub by_type: std::collections::BTreeMap<String, u64>,
    /// Messages sent, of every type.
    pub messages: u64,
    /// What the reader skipped or could not pair.
    pub notes: Notes,
    /// STATE lines (`--states`): read and checked, but no events.
    pub states: u64,
}

/// Checks the messages of a trace as it streams by: no receive before its send.
#[derive(Default)]
struct Checker {
    types: Types,
    sent: Vec<u64>,
    /// Sends not yet received: their type.
    open: Pending<u32>,
    /// Receives whose send was not seen (lost with a killed sender's last lines, or
    /// coming later, which is wrong): the receive.
    early: Pending<(u32, u64)>,
    events: u64,
}

impl Checker {
    fn push(&mut self, e: &Event) -> Result<(), TraceError> {
        self.events += 1;
        let Some(id) = msg_id(e) else { return Ok(()) };
        match &e.kind {
            EventKind::Send { msg, .. } => {
                let ty = self.types.id(msg);
                let slot = ty.min(MAX_TYPES as u32) as usize;
                if self.sent.len() <= slot {
                    self.sent.resize(slot + 1, 0);
                }
                self.sent[slot] += 1;
                if let Some((rty, rt)) = self.early.remove(&id) {
                    if rty == ty {
                        return Err(TraceError::Inconsistent(format!(
                            "a receive precedes its send (in time, or at one time in causal order): w{} received it at t={rt}, before {}",
                            id.2, e
                        )));
                    }
                }
                self.open.insert(id, ty);
            }
            EventKind::Recv { msg, .. } => {
                let ty = self.types.id(msg);
                if self.open.remove(&id).is_none() {
                    self.early.insert(id, (ty, e.t));
                }
            }
            EventKind::Drop { .. } => {
                self.open.remove(&id);
            }
            EventKind::App { .. } => {}
        }
        Ok(())
    }

    fn summary(self, workers: u32, algo: String, mut notes: Notes) -> Summary {
        self.open.note("their receipts count as local events", &mut notes);
        self.early.note("a send after its receive may have gone unseen", &mut notes);
        let mut by_type = std::collections::BTreeMap::new();
        for (slot, &n) in self.sent.iter().enumerate().filter(|(_, &n)| n > 0) {
            let slot = if slot == MAX_TYPES { OTHER } else { slot as u32 };
            by_type.insert(self.types.name(slot).to_string(), n);
        }
        Summary {
            workers,
            algo,
            events: self.events,
            messages: self.sent.iter().sum(),
            by_type,
            notes,
            states: 0,
        }
    }
}

/// Read the whole trace in `run_dir` once and check it: every file, every line, and
/// that no receive comes before its send. Memory: a line per worker and the messages
/// open at once (at most [`MAX_PENDING`]).
pub fn check(run_dir: &Path) -> Result<Summary, TraceError> {
    let mut r = Reader::open(run_dir)?;
    let mut c = Checker::default();
    while let Some(e) = r.next_event()? {
        c.push(&e)?;
    }
    let states = r.state_lines();
    Ok(Summary { states, ..c.summary(r.workers, r.algo, r.notes) })
}

/// A vector clock shared by the sends a worker made between two receipts.
struct Snapshot {
    clock: Vec<u64>,
    live: std::rc::Rc<std::cell::Cell<usize>>,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.live.set(self.live.get() - self.clock.len());
    }
}

/// The most clock entries kept for sends not yet received (8 bytes each): past it,
/// the oldest open messages are let go, as past [`MAX_PENDING`].
pub const MAX_OPEN_CLOCKS: usize = 1 << 23;

/// Vector clocks computed as the events stream by (see the module documentation):
/// each worker's current clock, and for each message not yet received its send's
/// clock, shared by a worker's sends between two receipts. Memory: N² and the open
/// messages, at most [`MAX_PENDING`] and [`MAX_OPEN_CLOCKS`].
///
/// Methods: `new`; `push` (the next event in [`Reader`]'s order), `local` (an event of a
/// worker's that is not in the trace, such as a fault the supervisor made); `notes`.
pub struct Clocks {
    types: Types,
    cur: Vec<Vec<u64>>,
    shared: Vec<Option<std::rc::Rc<Snapshot>>>,
    /// An open send: its type, time, the shared clock and its own entry.
    open: Pending<(u32, u64, std::rc::Rc<Snapshot>, u64)>,
    live: std::rc::Rc<std::cell::Cell<usize>>,
}

impl Clocks {
    /// The clocks of a run of `workers` workers, before any event.
    pub fn new(workers: u32) -> Clocks {
        let n = workers as usize;
        Clocks {
            types: Types::default(),
            cur: vec![vec![0; n]; n],
            shared: vec![None; n],
            open: Pending::default(),
            live: Default::default(),
        }
    }

    /// The clock of `e`, the next event in [`Reader`]'s order. A receive whose send was
    /// not seen before it (or does not match it) counts as a local event.
    pub fn push(&mut self, e: &Event) -> &[u64] {
        let w = e.w as usize;
        let id = msg_id(e);
        match &e.kind {
            EventKind::Recv { from, msg, .. } => {
                let ty = self.types.id(msg);
                if let Some((sty, st, snap, own)) = id.and_then(|id| self.open.remove(&id)) {
                    if sty == ty && st <= e.t {
                        let cur = &mut self.cur[w];
                        for (c, &v) in cur.iter_mut().zip(&snap.clock) {
                            *c = (*c).max(v);
                        }
                        let f = *from as usize;
                        cur[f] = cur[f].max(own);
                        self.shared[w] = None;
                    }
                }
            }
            EventKind::Drop { .. } => {
                if let Some(id) = id {
                    self.open.remove(&id);
                }
            }
            _ => {}
        }
        self.cur[w][w] += 1;
        if let (EventKind::Send { msg, .. }, Some(id)) = (&e.kind, id) {
            let ty = self.types.id(msg);
            if self.live.get() > MAX_OPEN_CLOCKS {
                self.open.shed();
            }
            let snap = match &self.shared[w] {
                Some(s) => s.clone(),
                None => {
                    self.live.set(self.live.get() + self.cur[w].len());
                    let s =
                        std::rc::Rc::new(Snapshot { clock: self.cur[w].clone(), live: self.live.clone() });
                    self.shared[w] = Some(s.clone());
                    s
                }
            };
            self.open.insert(id, (ty, e.t, snap, self.cur[w][w]));
        }
        &self.cur[w]
    }

    /// The clock of a local event of worker `w` that the trace does not hold (a fault
    /// the supervisor made to it), in its place in [`Reader`]'s order.
    pub fn local(&mut self, w: u32) -> &[u64] {
        let cur = &mut self.cur[w as usize];
        cur[w as usize] += 1;
        cur
    }

    /// Add a note if messages were let go unpaired to stay within the bounds.
    pub fn notes(&self, notes: &mut Notes) {
        self.open.note("their receives count as local events", notes);
    }
}

/// Write the trace in `run_dir` to `out`, one line per event in time order; `checked`
/// is what [`check`] said of it. Memory: a line per worker.
pub fn write_text(run_dir: &Path, checked: Summary, out: &mut impl io::Write) -> Result<Summary, TraceError> {
    let summary = checked;
    let mut r = Reader::open(run_dir)?;
    while let Some(e) = r.next_event()? {
        writeln!(out, "{e}").map_err(TraceError::Write)?;
    }
    Ok(summary)
}

/// At most a given number of messages, every k-th in the order sent, with their receipt
/// or drop: what a diagram draws. Memory: the arrows kept.
struct Picker {
    stride: u64,
    sends: u64,
    shown: Vec<Arrow>,
    /// Kept arrows not yet received or dropped.
    open: HashMap<MsgId, usize>,
}

impl Picker {
    fn new(stride: u64) -> Picker {
        Picker { stride: stride.max(1), sends: 0, shown: Vec::new(), open: HashMap::new() }
    }

    fn push(&mut self, e: &Event) {
        let Some(id) = msg_id(e) else { return };
        match &e.kind {
            EventKind::Send { to, msg } => {
                if self.sends.is_multiple_of(self.stride) {
                    self.open.insert(id, self.shown.len());
                    let a = Arrow {
                        from: e.w,
                        to: *to,
                        msg: msg.clone(),
                        sent: e.t,
                        received: None,
                        dropped: None,
                    };
                    self.shown.push(a);
                }
                self.sends += 1;
            }
            EventKind::Recv { .. } => {
                if let Some(i) = self.open.remove(&id) {
                    self.shown[i].received = Some(e.t);
                }
            }
            // A DROP carries its SEND's clock, so it names the same message.
            EventKind::Drop { why, .. } => {
                if let Some(i) = self.open.remove(&id) {
                    self.shown[i].dropped = Some(why.clone());
                }
            }
            EventKind::App { .. } => {}
        }
    }
}

/// The messages of a trace as a diagram draws them: at most `max`, one in `stride`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrows {
    /// The messages drawn, in the order they were sent.
    pub shown: Vec<Arrow>,
    /// One message in this many sent is drawn.
    pub stride: u64,
    /// The whole trace's counts and notes.
    pub summary: Summary,
}

/// At most `max` of the messages in `run_dir`'s trace, evenly spread in the order they
/// were sent, with the whole trace's counts: one read to check and count, one to pick.
/// Memory: the arrows shown and [`check`]'s.
pub fn pick_arrows(run_dir: &Path, max: usize) -> Result<Arrows, TraceError> {
    let summary = check(run_dir)?;
    let stride = summary.messages.div_ceil(max.max(1) as u64).max(1);
    let mut r = Reader::open(run_dir)?;
    let mut p = Picker::new(stride);
    while let Some(e) = r.next_event()? {
        p.push(&e);
    }
    Ok(Arrows { shown: p.shown, stride, summary })
}

impl Trace {
    /// Check the events as [`check`] does (they are in [`Reader`]'s order).
    pub fn check(&self) -> Result<(), TraceError> {
        let mut c = Checker::default();
        self.events.iter().try_for_each(|e| c.push(e))
    }

    /// Every message sent, in the order they were sent.
    pub fn arrows(&self) -> Vec<Arrow> {
        let mut p = Picker::new(1);
        self.events.iter().for_each(|e| p.push(e));
        p.shown
    }

    /// One vector clock per event (indexed like `events`, one entry per worker), from
    /// the happens-before the trace gives: each worker's own order, and every send
    /// before the receive that names it (see the module documentation). A receive whose
    /// send is missing, or comes after it, counts as a local event.
    pub fn vector_clocks(&self) -> Vec<Vec<u64>> {
        let mut c = Clocks::new(self.workers);
        self.events.iter().map(|e| c.push(e).to_vec()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message of kind `.0` with no fields.
    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    struct K(String);
    impl Message for K {
        fn kind(&self) -> &str {
            &self.0
        }
    }
    fn k(kind: &str) -> K {
        K(kind.into())
    }

    /// A message with contents, as an algorithm's enum.
    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    enum Msg {
        Request { ticket: u64, note: String },
        Reply,
        Vote(u32),
        Pair(u32, String),
        Empty {},
        TokenPass(Vec<u64>),
    }
    impl Message for Msg {
        fn kind(&self) -> &str {
            match self {
                Msg::Request { .. } => "REQUEST",
                Msg::Reply => "REPLY",
                Msg::Vote(_) => "VOTE",
                Msg::Pair(..) => "Pair",
                Msg::Empty {} => "EMPTY",
                Msg::TokenPass(_) => "TOKEN",
            }
        }
    }

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

    fn ev(w: u32, t: u64, lc: u64, kind: EventKind) -> Event {
        Event { w, inc: 0, t, lc, kind }
    }
    fn send(w: u32, t: u64, lc: u64, to: u32) -> Event {
        ev(w, t, lc, EventKind::Send { to, msg: "M".into() })
    }
    fn recv(w: u32, t: u64, lc: u64, from: u32, sent_lc: u64) -> Event {
        ev(w, t, lc, EventKind::Recv { from, from_inc: 0, sent_lc, msg: "M".into() })
    }
    fn app(w: u32, t: u64, lc: u64, what: &str) -> Event {
        ev(w, t, lc, EventKind::App { ev: what.into(), leader: None, term: None })
    }

    /// Write `events` as worker files in a fresh run directory, as the workers would.
    fn write_run(workers: u32, events: &[Event]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for w in 0..workers {
            let mut text = format!("{HEADER} w={w} workers={workers} algo=test\n");
            for e in events.iter().filter(|e| e.w == w) {
                text.push_str(&format!("{e}\n"));
            }
            std::fs::write(dir.path().join(file_name(w)), text).unwrap();
        }
        dir
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
    fn the_writer_s_lines_load_back_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut a = Writer::open(dir.path(), 0, 0, 2, "centralized").unwrap();
            let mut b = Writer::open(dir.path(), 1, 0, 2, "centralized").unwrap();
            a.app(0, "want", None);
            a.send(1, 1, &k("REQUEST"));
            a.flush().unwrap();
            b.recv(2, 0, 0, 1, &k("REQUEST"));
            b.send(3, 0, &k("GRANT"));
            b.flush().unwrap();
            a.recv(4, 1, 0, 3, &k("GRANT"));
            a.app(5, "enter", None);
            a.drop(6, 1, &k("RELEASE"), "down");
            // `a` is dropped unflushed: dropping flushes.
        }
        // A second life appends under the same header.
        let mut again = Writer::open(dir.path(), 1, 1, 2, "centralized").unwrap();
        again.app(7, "leader", Some((1, 3)));
        drop(again);
        let text = std::fs::read_to_string(dir.path().join(file_name(1))).unwrap();
        assert_eq!(text.matches(HEADER).count(), 1, "{text}");
        let trace = load(dir.path()).unwrap();
        assert_eq!((trace.workers, trace.algo.as_str()), (2, "centralized"));
        let tags: Vec<String> = trace
            .events
            .iter()
            .map(|e| format!("{}{}", e.to_string().split(' ').next().unwrap(), e.w))
            .collect();
        assert_eq!(tags, ["APP0", "SEND0", "RECV1", "SEND1", "RECV0", "APP0", "DROP0", "APP1"]);
        assert!(trace.events.windows(2).all(|p| p[0].t <= p[1].t));
        // Each line says exactly what was recorded (the times aside).
        let expected = [
            (0, 0, 0, EventKind::App { ev: "want".into(), leader: None, term: None }),
            (0, 0, 1, EventKind::Send { to: 1, msg: "REQUEST".into() }),
            (1, 0, 2, EventKind::Recv { from: 0, from_inc: 0, sent_lc: 1, msg: "REQUEST".into() }),
            (1, 0, 3, EventKind::Send { to: 0, msg: "GRANT".into() }),
            (0, 0, 4, EventKind::Recv { from: 1, from_inc: 0, sent_lc: 3, msg: "GRANT".into() }),
            (0, 0, 5, EventKind::App { ev: "enter".into(), leader: None, term: None }),
            (0, 0, 6, EventKind::Drop { to: 1, msg: "RELEASE".into(), why: "down".into() }),
            (1, 1, 7, EventKind::App { ev: "leader".into(), leader: Some(1), term: Some(3) }),
        ];
        for (got, (w, inc, lc, kind)) in trace.events.iter().zip(expected) {
            assert_eq!(*got, Event { w, inc, t: got.t, lc, kind });
        }
    }

    #[test]
    fn a_wrapped_ring_becomes_a_trace_that_reads_like_a_full_one() {
        let dir = tempfile::tempdir().unwrap();
        let request = |i: u64| Msg::Request { ticket: i, note: format!("a b body={i}") };
        {
            // Tiny rings, which wrap many times over.
            let mut a = Writer::ring(dir.path(), 0, 0, 2048).unwrap();
            let mut b = Writer::ring(dir.path(), 1, 0, 2048).unwrap();
            assert!(a.recording() && a.due().is_none());
            for i in 1..=100 {
                a.send(2 * i - 1, 1, &request(i));
                b.recv(2 * i, 0, 0, 2 * i - 1, &request(i));
                b.send(2 * i + 1, 0, &Msg::Reply);
                a.recv(2 * i + 2, 1, 0, 2 * i + 1, &Msg::Reply);
                a.drop(2 * i + 3, 1, &request(i), "drop");
                assert!(a.buf.is_empty(), "a ring holds nothing back");
            }
            // A second life of worker 0, whose ring does not wrap.
            let mut again = Writer::ring(dir.path(), 0, 1, 2048).unwrap();
            again.app(1, "want", None);
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
        assert!(from_rings(dir.path(), 2, "test", decode_body::<Msg>).is_empty());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "the rings are gone, two traces made: {names:?}");
        let text = std::fs::read_to_string(dir.path().join(file_name(0))).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("{HEADER} w=0 workers=2 algo=test"));
        assert!(lines[1].starts_with(WRAPPED) && lines[1].contains("inc=0"), "{}", lines[1]);
        // Only what the rings kept: of life 0's 500 events, those in 2048 bytes of records.
        let kept = lines.iter().filter(|l| l.starts_with("SEND w=0 ") || l.starts_with("RECV w=0 ")).count();
        assert!(kept > 10 && kept < 2048 / RECORD_HEAD, "{kept}");
        assert!(lines.last().unwrap().starts_with("APP w=0 inc=1 "));
        // The newest line of life 0 is its last DROP, whole, with its contents.
        let drop_line = lines[lines.len() - 2];
        assert!(drop_line.starts_with("DROP w=0 inc=0 ") && drop_line.contains(" lc=203 why=drop body="));
        let json: serde_json::Value = serde_json::from_str(body(drop_line).unwrap()).unwrap();
        assert_eq!(json, serde_json::json!({"type": "REQUEST", "ticket": 100, "note": "a b body=100"}));
        assert!(drop_line.ends_with(r#" body={"type":"REQUEST","ticket":100,"note":"a b body=100"}"#));
        // Readers take it unchanged: the marker is a note, the lost sends' receipts local.
        let summary = check(dir.path()).unwrap();
        assert!(summary.notes.lines().iter().any(|n| n.contains("are lost")), "{:?}", summary.notes.lines());
        let trace = load(dir.path()).unwrap();
        assert!(trace.events.len() > 20);
        assert_eq!(trace.events.iter().filter(|e| e.w == 0 && e.inc == 1).count(), 1);
    }

    /// The same events, at the same times, to a writer: life 0 of worker 1, then life 1.
    /// Every kind of line, every drop reason and application event, messages of every
    /// shape, one too long for a line.
    fn same_events(life: &mut dyn FnMut(u32) -> Writer, n: u64) {
        let msgs = [
            Msg::Request { ticket: 4, note: "a \"b\" {c} body=}".into() },
            Msg::Reply,
            Msg::Vote(3),
            Msg::Pair(1, "x y".into()),
            Msg::Empty {},
            Msg::TokenPass(vec![1, 2, 3]),
            Msg::Request { ticket: 5, note: "é".repeat(BODY_MAX) },
        ];
        for inc in 0..2 {
            let mut w = life(inc);
            for i in 0..n {
                let t = 1_000_000 * u64::from(inc) + 10 * i;
                let m = &msgs[i as usize % msgs.len()];
                w.record(t, Rec::Send { lc: i, to: 2 }, Some(m));
                w.record(t + 1, Rec::Recv { lc: i + 1, from: 0, from_inc: 7, sent_lc: i }, Some(m));
                let why = DROP_REASONS[i as usize % DROP_REASONS.len()];
                w.record(t + 2, Rec::Drop { lc: i + 2, to: 0, why }, Some(m));
                let ev = APP_EVENTS[i as usize % APP_EVENTS.len()];
                let leader = (ev == "leader").then_some((3, i));
                w.record::<Msg>(t + 3, Rec::App { lc: i + 3, ev, leader }, None);
            }
        }
    }

    #[test]
    fn a_dumped_ring_s_lines_are_what_the_trace_file_would_have_held() {
        let (file, ring) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        same_events(&mut |inc| Writer::open(file.path(), 1, inc, 4, "test").unwrap(), 40);
        same_events(&mut |inc| Writer::ring(ring.path(), 1, inc, 1 << 16).unwrap(), 40);
        assert_eq!(from_rings(ring.path(), 4, "test", decode_body::<Msg>), Vec::<String>::new());
        let traced = std::fs::read_to_string(file.path().join(file_name(1))).unwrap();
        let dumped = std::fs::read_to_string(ring.path().join(file_name(1))).unwrap();
        assert_eq!(traced.lines().count(), 1 + 2 * 4 * 40);
        assert!(traced.contains('…') && traced.contains("why=peer-down") && traced.contains("leader=3"));
        assert_eq!(dumped, traced, "line for line, bodies included");
        // The rings are gone; the file readers take the result.
        assert_eq!(std::fs::read_dir(ring.path()).unwrap().count(), 1);
        check(ring.path()).unwrap();
    }

    #[test]
    fn a_wrapped_ring_keeps_the_newest_lines_as_the_trace_file_has_them() {
        let (file, ring) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        same_events(&mut |inc| Writer::open(file.path(), 0, inc, 4, "test").unwrap(), 300);
        // A quarter of the ring holds the longest record (a message of 2 KiB).
        same_events(&mut |inc| Writer::ring(ring.path(), 0, inc, 16 << 10).unwrap(), 300);
        assert_eq!(from_rings(ring.path(), 4, "test", decode_body::<Msg>), Vec::<String>::new());
        let traced = std::fs::read_to_string(file.path().join(file_name(0))).unwrap();
        let dumped = std::fs::read_to_string(ring.path().join(file_name(0))).unwrap();
        let life = |text: &str, inc: u32| -> Vec<String> {
            let mark = format!(" inc={inc} ");
            text.lines().filter(|l| l.contains(&mark)).map(str::to_string).collect()
        };
        for inc in 0..2 {
            let (all, kept) = (life(&traced, inc), life(&dumped, inc));
            let marker = &kept[0];
            assert!(marker.starts_with(WRAPPED) && marker.contains("are lost"), "{marker}");
            let kept = &kept[1..];
            assert!(kept.len() > 20 && kept.len() < all.len(), "{} of {}", kept.len(), all.len());
            assert_eq!(kept, &all[all.len() - kept.len()..], "life {inc}: the newest, whole and in order");
        }
    }

    #[test]
    fn a_torn_record_or_an_unreadable_message_is_left_out_and_said() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut w = Writer::ring(dir.path(), 0, 0, 4096).unwrap();
            w.send(1, 1, &Msg::Reply);
            w.send(2, 1, &k("ODD"));
            w.app(3, "want", None);
        }
        // A ring damaged from outside (a SIGKILL cannot do it: see `flight`): its head
        // moved past a record of which only the first bytes are there.
        let path = dir.path().join(flight::ring_name(0, 0));
        let mut bytes = std::fs::read(&path).unwrap();
        let at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        let head = at(flight::HEAD_AT) as usize;
        let data = flight::HEADER_BYTES as usize + head;
        bytes[data..data + 4].copy_from_slice(&100u32.to_le_bytes());
        bytes[data + 4..data + 10].copy_from_slice(&[TAG_SEND, 0, 0, 0, 9, 9]);
        bytes[flight::HEAD_AT..flight::HEAD_AT + 8].copy_from_slice(&(head as u64 + 10).to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let notes = from_rings(dir.path(), 2, "test", decode_body::<Msg>);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("left out 1 records that do not read"), "{}", notes[0]);
        assert!(notes[1].contains("left out its last record, torn (10 bytes)"), "{}", notes[1]);
        let text = std::fs::read_to_string(dir.path().join(file_name(0))).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[1].starts_with("SEND w=0 inc=0 ")
                && lines[1].ends_with(r#"type=REPLY body={"type":"REPLY"}"#)
        );
        assert!(lines[2].starts_with("APP w=0 inc=0 ") && lines[2].ends_with(" lc=3 ev=want"));
        check(dir.path()).unwrap();
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

    /// Worker 0's two lives: per step a RECV, the state after it, a SEND; one state is
    /// longer than the bound.
    fn states_and_events(life: &mut dyn FnMut(u32) -> Writer) {
        for inc in 0..2 {
            let mut w = life(inc);
            for i in 0..5u64 {
                let t = 1_000_000 * u64::from(inc) + 10 * i;
                w.record(t, Rec::Recv { lc: 2 * i + 1, from: 1, from_inc: 0, sent_lc: i }, Some(&Msg::Reply));
                let json = if i == 3 {
                    format!(r#"{{"step":{i},"pad":"{}"}}"#, "é".repeat(STATE_MAX))
                } else {
                    format!(r#"{{"step":{i},"life":{inc},"peers":["w1"]}}"#)
                };
                w.record_state(t + 1, 2 * i + 1, &json);
                w.record(t + 2, Rec::Send { lc: 2 * i + 2, to: 1 }, Some(&Msg::Vote(i as u32)));
            }
        }
    }

    #[test]
    fn states_from_a_ring_are_the_trace_file_s_lines_and_readers_keep_them_aside() {
        let (file, ring) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        states_and_events(&mut |inc| Writer::open(file.path(), 0, inc, 2, "test").unwrap());
        states_and_events(&mut |inc| Writer::ring(ring.path(), 0, inc, 1 << 16).unwrap());
        for dir in [&file, &ring] {
            std::fs::write(dir.path().join(file_name(1)), format!("{HEADER} w=1 workers=2 algo=test\n"))
                .unwrap();
        }
        assert_eq!(from_rings(ring.path(), 2, "test", decode_body::<Msg>), Vec::<String>::new());
        let traced = std::fs::read_to_string(file.path().join(file_name(0))).unwrap();
        let dumped = std::fs::read_to_string(ring.path().join(file_name(0))).unwrap();
        assert_eq!(dumped, traced, "line for line, states included");
        assert_eq!(traced.lines().filter(|l| l.starts_with("STATE ")).count(), 10);
        assert!(traced.lines().all(|l| l.len() < MAX_LINE));
        assert_eq!(traced.lines().filter(|l| l.starts_with("STATE ") && l.ends_with('…')).count(), 2);
        // Not events: checked, counted apart, listed by no one.
        let summary = check(file.path()).unwrap();
        assert_eq!((summary.events, summary.states), (20, 10));
        assert!(summary.notes.shown.is_empty(), "{:?}", summary.notes);
        let mut listed = Vec::new();
        write_text(file.path(), summary, &mut listed).unwrap();
        assert!(!String::from_utf8(listed).unwrap().contains("STATE"));
        // Each event's state: its worker's last STATE of the same life before it.
        let mut r = Reader::open_keeping_bodies_and_states(file.path()).unwrap();
        let mut seen = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            seen.push((e.kind.clone(), e.inc, r.state().map(|s| (s.inc, s.lc, s.cut()))));
        }
        assert_eq!(r.state_lines(), 10);
        let of = |i: usize| seen[i].2;
        assert_eq!(of(0), None, "the first RECV comes before any state");
        assert_eq!(of(1), Some((0, 1, false)), "a SEND follows its step's state");
        assert_eq!(of(2), Some((0, 1, false)), "a RECV precedes its own step's");
        assert_eq!(of(7), Some((0, 7, true)));
        assert_eq!(of(10), None, "a new life forgets the last one's state");
        assert_eq!(of(11), Some((1, 1, false)));
        // A reader that does not keep them has none.
        let mut r = Reader::open(file.path()).unwrap();
        while r.next_event().unwrap().is_some() {
            assert!(r.state().is_none());
        }
    }

    #[test]
    fn a_bad_state_line_is_named_and_an_old_trace_reads_without_any() {
        let dir = write_run(2, &three()[..2]);
        let path = dir.path().join(file_name(0));
        let good = std::fs::read_to_string(&path).unwrap();
        let then = "APP w=0 inc=0 t=99 lc=99 ev=want\n";
        let cases = [
            (format!("{good}STATE w=0 inc=0 t=x lc=1 json={{}}\n{then}"), ":4: t=x is not a number"),
            (format!("{good}STATE w=1 inc=0 t=9 lc=1 json={{}}\n{then}"), ":4: w=1 in worker 0's file"),
            (format!("{good}STATE w=0 inc=0 t=0 lc=1 json={{}}\n{then}"), ":4: t=0 before"),
            (format!("{good}STATE w=0 inc=0 t=9 lc=1\n{then}"), ":4: STATE line lacks json="),
        ];
        for (text, want) in cases {
            std::fs::write(&path, &text).unwrap();
            let e = load(dir.path()).unwrap_err().to_string();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
        // A good one is skipped by the event readers; the old file (none) reads as before.
        std::fs::write(&path, format!("{good}STATE w=0 inc=0 t=9 lc=1 json={{\"a\":1}}\n{then}")).unwrap();
        let with = load(dir.path()).unwrap();
        std::fs::write(&path, format!("{good}{then}")).unwrap();
        assert_eq!(with, load(dir.path()).unwrap());
        // A STATE line glued to a torn one (by an older writer) is split off and kept.
        let glued =
            format!("{good}SEND w=0 inc=0 t=3 lc=3 to=1 tySTATE w=0 inc=1 t=50 lc=0 json={{\"a\":1}}\n");
        std::fs::write(&path, format!("{glued}APP w=0 inc=1 t=99 lc=1 ev=want\n")).unwrap();
        let summary = check(dir.path()).unwrap();
        assert!(summary.notes.shown[0].contains("a record followed it on its line"), "{:?}", summary.notes);
        let mut r = Reader::open_keeping_bodies_and_states(dir.path()).unwrap();
        let mut last = None;
        while let Some(e) = r.next_event().unwrap() {
            last = Some((e.inc, r.state().map(|s| (s.inc, s.json.clone()))));
        }
        assert_eq!(last, Some((1, Some((1, r#"{"a":1}"#.to_string())))));
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
    fn lines_wait_in_memory_until_due_or_until_the_buffer_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(0));
        let mut w = Writer::open(dir.path(), 0, 0, 2, "x").unwrap();
        let header = std::fs::metadata(&path).unwrap().len();
        assert!(header > 0 && w.due().is_none());
        let before = Instant::now();
        w.send(1, 1, &k("M"));
        assert!(w.due().is_some_and(|d| d >= before + FLUSH_EVERY));
        let mut lc = 1;
        while w.buf.len() < FLUSH_BYTES {
            assert_eq!(std::fs::metadata(&path).unwrap().len(), header, "written before it was due");
            lc += 1;
            w.send(lc, 1, &k("M"));
        }
        w.flush_if_due().unwrap();
        assert!(w.due().is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count() as u64, 1 + lc);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn a_writer_that_is_off_records_nothing() {
        let mut w = Writer::off();
        w.send(1, 1, &k("M"));
        w.app(2, "enter", None);
        assert!(w.due().is_none() && w.buf.is_empty());
        w.flush().unwrap();
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

    /// Three workers: 0 sends to 1, 1 forwards to 2, 2 answers 0; 0's REPLY to 1 is
    /// dropped. Known clocks by hand.
    fn three() -> Vec<Event> {
        vec![
            app(0, 1, 0, "want"),                                                        // [1,0,0]
            send(0, 2, 1, 1),                                                            // [2,0,0]
            app(2, 3, 0, "want"),                                                        // [0,0,1]
            recv(1, 4, 2, 0, 1),                                                         // [2,1,0]
            send(1, 5, 3, 2),                                                            // [2,2,0]
            recv(2, 6, 4, 1, 3),                                                         // [2,2,2]
            send(2, 7, 5, 0),                                                            // [2,2,3]
            send(0, 8, 2, 1),                                                            // [3,0,0]
            ev(0, 9, 2, EventKind::Drop { to: 1, msg: "M".into(), why: "drop".into() }), // [4,0,0]
            recv(0, 10, 6, 2, 5),                                                        // [5,2,3]
        ]
    }

    #[test]
    fn vector_clocks_follow_program_order_and_messages() {
        let dir = write_run(3, &three());
        let trace = load(dir.path()).unwrap();
        let expected: Vec<Vec<u64>> = vec![
            vec![1, 0, 0],
            vec![2, 0, 0],
            vec![0, 0, 1],
            vec![2, 1, 0],
            vec![2, 2, 0],
            vec![2, 2, 2],
            vec![2, 2, 3],
            vec![3, 0, 0],
            vec![4, 0, 0],
            vec![5, 2, 3],
        ];
        assert_eq!(trace.vector_clocks(), expected);
    }

    #[test]
    fn arrows_pair_each_send_with_its_receive() {
        let dir = write_run(3, &three());
        let arrows = load(dir.path()).unwrap().arrows();
        let got: Vec<(u32, u32, u64, Option<u64>)> =
            arrows.iter().map(|a| (a.from, a.to, a.sent, a.received)).collect();
        assert_eq!(got, [(0, 1, 2, Some(4)), (1, 2, 5, Some(6)), (2, 0, 7, Some(10)), (0, 1, 8, None)]);
        // The lost one is named by its DROP line, by the SEND's clock.
        let why: Vec<Option<&str>> = arrows.iter().map(|a| a.dropped.as_deref()).collect();
        assert_eq!(why, [None, None, None, Some("drop")]);
    }

    #[test]
    fn a_receive_before_its_send_is_refused() {
        let mut events = three();
        // 1 receives 0's first message at t=1.5, before 0 sent it at t=2.
        events[3].t = 0;
        let dir = write_run(3, &events);
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("a receive precedes its send"), "{e}");
        // Lenient clocks treat it as a local event instead of failing.
        let trace = Trace { workers: 3, algo: "test".into(), events };
        assert_eq!(trace.vector_clocks()[3], vec![0, 1, 0]);
    }

    #[test]
    fn a_causal_cycle_is_refused_and_does_not_hang_the_lenient_clocks() {
        // Each receives the other's message before sending its own: impossible. The
        // times are all equal, so only the walk can see it.
        let events = vec![recv(0, 5, 2, 1, 1), send(0, 5, 1, 1), recv(1, 5, 2, 0, 1), send(1, 5, 1, 0)];
        let trace = Trace { workers: 2, algo: "test".into(), events };
        let e = trace.check().unwrap_err().to_string();
        assert!(e.contains("causal order"), "{e}");
        assert_eq!(trace.vector_clocks(), [vec![1, 0], vec![2, 0], vec![2, 1], vec![2, 2]]);
    }

    #[test]
    fn two_messages_with_one_name_are_refused() {
        let dir = write_run(2, &[send(0, 1, 1, 1), send(0, 2, 1, 1)]);
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("share one name"), "{e}");
    }

    #[test]
    fn bad_files_are_named_with_their_line() {
        let dir = write_run(2, &three()[..2]);
        let path = dir.path().join(file_name(0));
        let good = std::fs::read_to_string(&path).unwrap();
        // A bad line followed by one of the same life (a torn one ends its life).
        let then = "APP w=0 inc=0 t=99 lc=99 ev=want\n";
        let cases = [
            (format!("{good}SEND w=0 inc=0 t=x lc=1 to=1 type=M\n{then}"), ":4: t=x"),
            (format!("{good}SEND w=1 inc=0 t=9 lc=9 to=1 type=M\n{then}"), ":4: w=1 in worker 0's file"),
            (format!("{good}SEND w=0 inc=0 t=0 lc=9 to=1 type=M\n{then}"), ":4: t=0 before"),
            (good.replace("w=0 workers", "w=1 workers"), ":1: header says w=1"),
            (good.replace("workers=2", "workers=3"), "but"),
            ("hello\n".to_string(), ":1: not a mutexlab trace"),
            (String::new(), ":1: empty"),
            (format!("{good}SEND w=0 inc=0 t=9 lc=9 to=7 type=M\n{then}"), "beyond workers=2"),
        ];
        for (text, want) in cases {
            std::fs::write(&path, &text).unwrap();
            let e = load(dir.path()).unwrap_err().to_string();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(load(empty.path()), Err(TraceError::NoTrace { .. })));
        assert!(matches!(load(&empty.path().join("nothing")), Err(TraceError::Io { .. })));
    }

    #[test]
    fn a_new_life_starts_on_a_fresh_line_after_a_torn_one() {
        let dir = write_run(2, &three()[..2]);
        let path = dir.path().join(file_name(0));
        let mut text = std::fs::read_to_string(&path).unwrap();
        // The first life was killed in the middle of a line.
        text.push_str("SEND w=0 inc=0 t=3 lc=3 to=1 ty");
        std::fs::write(&path, &text).unwrap();
        let mut next = Writer::open(dir.path(), 0, 1, 3, "test").unwrap();
        next.app(0, "want", None);
        drop(next);
        let after = std::fs::read_to_string(&path).unwrap();
        let rest = after.strip_prefix(&format!("{text}\nAPP w=0 inc=1 t=")).expect(&after);
        assert!(rest.ends_with(" lc=0 ev=want\n") && rest.lines().count() == 1, "{after}");
        // The readers skip the torn line, say so, and read the new life.
        let summary = check(dir.path()).unwrap();
        assert!(summary.notes.shown[0].contains(":4: skipped a torn line"), "{:?}", summary.notes);
        assert_eq!(load(dir.path()).unwrap().events.len(), 3);
    }

    #[test]
    fn open_messages_are_bounded_and_letting_them_go_is_noted() {
        let mut c = Checker::default();
        let n = MAX_PENDING as u64 + 10;
        for lc in 1..=n {
            c.push(&send(0, lc, lc, 1)).unwrap();
            assert!(c.open.open.len() <= MAX_PENDING);
        }
        let s = c.summary(2, "test".into(), Notes::default());
        assert_eq!(s.messages, n);
        assert!(s.notes.shown[0].contains("let go unpaired"), "{:?}", s.notes);
    }

    #[test]
    fn a_diagram_gets_at_most_what_it_draws_with_the_counts_of_all() {
        // 0 and 1 exchange 100 messages; 7 are drawn, one in 15.
        let events: Vec<Event> = (0..100u64)
            .flat_map(|i| {
                [
                    send((i % 2) as u32, 2 * i + 1, i + 1, 1 - (i % 2) as u32),
                    recv(1 - (i % 2) as u32, 2 * i + 2, 1000 + i, (i % 2) as u32, i + 1),
                ]
            })
            .collect();
        let dir = write_run(2, &events);
        let a = pick_arrows(dir.path(), 7).unwrap();
        assert_eq!((a.summary.messages, a.stride, a.shown.len()), (100, 15, 7));
        assert_eq!(a.summary.by_type["M"], 100);
        assert!(a.shown.iter().all(|a| a.received == Some(a.sent + 1)));
    }

    #[test]
    fn only_canonical_names_are_trace_files() {
        assert_eq!(worker_of("trace-w12.log"), Some(12));
        assert_eq!(worker_of("trace-w012.log"), None);
        assert_eq!(worker_of("trace-w.log"), None);
        assert_eq!(worker_of("resource.log"), None);
    }
}
