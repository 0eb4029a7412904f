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
//! MessagePack, the wire's own encoding (`ring::RECORD_HEAD`), so a clean run makes no text
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
//! [`Clocks`] is that computation, for the exports of `mutexlab::export` (ShiViz's log).
//!
//! [`resource::monotonic_ns`]: crate::resource::monotonic_ns
//! [`MAX_LINE`]: crate::lines::MAX_LINE
//! [`MAX_WORKERS`]: crate::algorithm::MAX_WORKERS

use std::io;
use std::path::PathBuf;

mod checker;
mod clocks;
mod line;
mod reader;
mod rebuild;
mod ring;
mod writer;

pub use checker::{
    check, load, msg_id, pick_arrows, write_text, Arrow, Arrows, MsgId, Summary, Trace, MAX_PENDING,
    MAX_TYPES, OTHER_TYPES,
};
pub use clocks::{Clocks, MAX_OPEN_CLOCKS};
pub use line::{body, push_body, Event, EventKind, State, APP_EVENTS, BODY_MAX, DROP_REASONS, STATE_MAX};
pub use reader::{Notes, Reader};
pub use rebuild::{from_rings, remove_rings, traces_from_rings, WRAPPED};
pub use ring::{decode_body, Body, Decode};
pub use writer::{Writer, FLUSH_BYTES, FLUSH_EVERY};

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

#[cfg(test)]
mod tests {
    //! What the tests of every part of the trace share: messages, events, and a run
    //! directory written from them.
    use super::*;
    use crate::algorithm::Message;

    /// A message of kind `.0` with no fields.
    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    pub(super) struct K(String);
    impl Message for K {
        fn kind(&self) -> &str {
            &self.0
        }
    }
    pub(super) fn k(kind: &str) -> K {
        K(kind.into())
    }

    /// A message with contents, as an algorithm's enum.
    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    pub(super) enum Msg {
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

    pub(super) fn ev(w: u32, t: u64, lc: u64, kind: EventKind) -> Event {
        Event { w, inc: 0, t, lc, kind }
    }
    pub(super) fn send(w: u32, t: u64, lc: u64, to: u32) -> Event {
        ev(w, t, lc, EventKind::Send { to, msg: "M".into() })
    }
    pub(super) fn recv(w: u32, t: u64, lc: u64, from: u32, sent_lc: u64) -> Event {
        ev(w, t, lc, EventKind::Recv { from, from_inc: 0, sent_lc, msg: "M".into() })
    }
    pub(super) fn app(w: u32, t: u64, lc: u64, what: &str) -> Event {
        ev(w, t, lc, EventKind::App { ev: what.into(), leader: None, term: None })
    }

    /// Write `events` as worker files in a fresh run directory, as the workers would.
    pub(super) fn write_run(workers: u32, events: &[Event]) -> tempfile::TempDir {
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

    /// Three workers: 0 sends to 1, 1 forwards to 2, 2 answers 0; 0's REPLY to 1 is
    /// dropped. Known clocks by hand.
    pub(super) fn three() -> Vec<Event> {
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
    fn only_canonical_names_are_trace_files() {
        assert_eq!(worker_of("trace-w12.log"), Some(12));
        assert_eq!(worker_of("trace-w012.log"), None);
        assert_eq!(worker_of("trace-w.log"), None);
        assert_eq!(worker_of("resource.log"), None);
    }
}
