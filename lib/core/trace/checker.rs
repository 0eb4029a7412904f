//! What is made of the merged events as they stream by: the check that no receive
//! comes before its send ([`check`]), the listing ([`write_text`]), the messages a
//! diagram draws ([`pick_arrows`]), and a whole trace in memory for tests ([`load`]).
//! Messages are named and held open here ([`msg_id`], within [`MAX_PENDING`]), for the
//! vector clocks too.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use super::line::{Event, EventKind};
use super::reader::{Notes, Reader};
use super::TraceError;

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
pub(super) struct Types {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

/// The most message types told apart (algorithms have a handful).
pub const MAX_TYPES: usize = 64;
/// The name the types past [`MAX_TYPES`] are counted under.
pub const OTHER_TYPES: &str = "(other types)";
const OTHER: u32 = u32::MAX;

impl Types {
    pub(super) fn id(&mut self, name: &str) -> u32 {
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
pub(super) struct Pending<V> {
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
    pub(super) fn insert(&mut self, id: MsgId, v: V) {
        if self.open.len() >= MAX_PENDING {
            self.shed();
        }
        self.seq += 1;
        self.open.insert(id, (self.seq, v));
    }

    /// Let the older half go: amortised over the inserts that filled it, a constant
    /// per message.
    pub(super) fn shed(&mut self) {
        let keep = self.seq.saturating_sub(self.open.len() as u64 / 2);
        let before = self.open.len();
        self.open.retain(|_, (s, _)| *s >= keep);
        self.dropped += (before - self.open.len()) as u64;
    }

    pub(super) fn remove(&mut self, id: &MsgId) -> Option<V> {
        self.open.remove(id).map(|(_, v)| v)
    }

    pub(super) fn note(&self, what: &str, notes: &mut Notes) {
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

/// A whole run's trace, every worker's events merged, in memory: for tests and small
/// traces. The commands stream instead ([`Reader`], [`write_text`], [`Clocks`],
/// [`pick_arrows`]), so that they need memory by what they show, not by the trace's size.
///
/// [`Clocks`]: super::Clocks
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Workers in the run, from the headers.
    pub workers: u32,
    /// The algorithm, from the headers.
    pub algo: String,
    /// In [`Reader`]'s order: by `t`; one worker's events stay in the order it recorded them.
    pub events: Vec<Event>,
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
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

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
}
