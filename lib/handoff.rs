//! Handoffs over the message trace: how many messages stand between one worker leaving
//! the critical section and the next entering, and how long the handoff took next to the
//! run's own message time.
//!
//! A **handoff** is an `ev=leave` while some worker had asked (`ev=want`) and not yet
//! entered, and the next `ev=enter` of any worker, both in [`Reader`]'s order (by time).
//! A leave with nobody waiting starts none, and a second leave before any enter replaces
//! the first (only an unsafe run does that), as `compare::sync_delays` does with the
//! resource file.
//!
//! Its **hops** are the messages on the shortest causal chain from the leave to the
//! enter: the fewest message edges on any happens-before path (each worker's events in
//! file order, plus an edge from a SEND to the RECV that names it by `(from, from_inc,
//! to, sent_lc)`) that starts at the leave and ends at the enter. The same worker
//! entering again is reached by its own program order, a path of no message; so for it
//! the chain that counts is the shortest one that leaves it and comes back before the
//! enter (voting's REQUEST out and a vote back: 2), and 0 only when none came back (a
//! token it kept, or `flock`). An enter that does not happen after the
//! leave at all (the kernel's `flock` hands over with no message; a SEND line lost with a
//! killed worker's last batch breaks a chain) has **no causal path**, and is counted as
//! such, never as 0. This is exact and does not depend on the machine's load: 1 for the
//! token ring at saturation and Ricart-Agrawala's deferred REPLY, 2 for the centralized
//! coordinator (RELEASE, then GRANT).
//!
//! It is computed as the events stream by, in [`Reader`]'s order, which puts every
//! RECV after its SEND (what [`trace::check`] verifies): at the leave its worker is at
//! distance 0 and every other at none; a SEND carries its sender's distance, a RECV sets
//! its receiver's to the smaller of its own and the message's plus one; the enter reads
//! its worker's. Memory: a distance per worker, the messages sent since the leave and
//! not yet received, and the send time of every message in flight (both at most
//! [`MAX_PENDING`]: past that the oldest are let go, and a note says so), never a
//! record per event.
//!
//! Beside the hops: the handoff's wall-clock time (leave to enter) and the run's median
//! SEND→RECV time over all its messages, whose ratio is the delay in the run's own
//! message times, and [`utilisation`], the share of a run's time the resource was held.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::resource::Record;
use crate::trace::{self, Event, EventKind, MsgId, Reader, TraceError, MAX_PENDING};

/// What the handoffs of one run's trace came to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Handoffs {
    /// Handoffs measured (those touching the skipped worker left out).
    pub handoffs: u64,
    /// Of those, the enters that do not happen after their leave: no causal path.
    pub no_path: u64,
    /// The others by the messages on their shortest causal chain.
    pub by_hops: BTreeMap<u32, u64>,
    /// Handoffs left out because the skipped worker (the centralized coordinator, whose
    /// own entries need no message) left or entered.
    pub skipped: u64,
    /// Median wall-clock time of the handoffs measured, leave to enter, in ns.
    pub delay_median_ns: Option<u64>,
    /// Median SEND→RECV time over every message of the run paired, in ns.
    pub message_median_ns: Option<u64>,
    /// Messages whose SEND→RECV time was measured.
    pub messages_timed: u64,
    /// What the reader skipped or let go, one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Handoffs {
    /// Handoffs with a causal path.
    pub fn with_path(&self) -> u64 {
        self.by_hops.values().sum()
    }

    /// The median hops over handoffs with a path (the mean of the middle two for an
    /// even count); `None` if none had one.
    pub fn median(&self) -> Option<f64> {
        let n = self.with_path();
        if n == 0 {
            return None;
        }
        // The values at ranks (n-1)/2 and n/2, counting from 0.
        let at = |rank: u64| {
            let mut seen = 0;
            for (&h, &c) in &self.by_hops {
                seen += c;
                if seen > rank {
                    return f64::from(h);
                }
            }
            unreachable!("rank below the count")
        };
        Some((at((n - 1) / 2) + at(n / 2)) / 2.0)
    }

    /// The mean hops over handoffs with a path: the sequential messages a handoff costs
    /// on average, what bounds throughput.
    pub fn mean(&self) -> Option<f64> {
        let n = self.with_path();
        let sum: u64 = self.by_hops.iter().map(|(&h, &c)| u64::from(h) * c).sum();
        (n > 0).then(|| sum as f64 / n as f64)
    }

    /// The fewest and most hops seen.
    pub fn range(&self) -> Option<(u32, u32)> {
        Some((*self.by_hops.keys().next()?, *self.by_hops.keys().next_back()?))
    }

    /// The median handoff in the run's median message times.
    pub fn delay_in_messages(&self) -> Option<f64> {
        let (d, m) = (self.delay_median_ns?, self.message_median_ns?);
        (m > 0).then(|| d as f64 / m as f64)
    }

    /// The hops in a few words: `2`, `1 (1-3)`, with `; 4 of 90 without a causal path`
    /// when some had none, `no handoff` or `no causal path (90)`.
    pub fn words(&self) -> String {
        let mut s = match (self.median(), self.range()) {
            (Some(m), Some((lo, hi))) if lo == hi => fmt_hops(m),
            (Some(m), Some((lo, hi))) => format!("{} ({lo}-{hi})", fmt_hops(m)),
            _ if self.handoffs == 0 => return "no handoff".into(),
            _ => return format!("no causal path ({})", self.handoffs),
        };
        if self.no_path > 0 {
            s.push_str(&format!("; {} of {} without a causal path", self.no_path, self.handoffs));
        }
        s
    }
}

/// A median of whole counts: `2`, or `1.5` between two.
fn fmt_hops(m: f64) -> String {
    if m.fract() == 0.0 {
        format!("{m:.0}")
    } else {
        format!("{m:.1}")
    }
}

/// A histogram of nanoseconds, 3 significant digits: bounded whatever it is given.
fn histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits are supported")
}

fn median_of(h: &Histogram<u64>) -> Option<u64> {
    (!h.is_empty()).then(|| h.value_at_quantile(0.5))
}

/// The handoff open since a leave.
struct Open {
    leaver: u32,
    t: u64,
    /// Each worker's distance from the leave, in messages; `None`: not after it yet.
    dist: Vec<Option<u32>>,
    /// Messages sent after the leave and not yet received: their sender's distance.
    carried: HashMap<MsgId, u32>,
    /// The shortest chain from the leave back to the leaver itself, in messages.
    back: Option<u32>,
}

/// The handoffs of a trace, computed as its events stream by (see the module
/// documentation).
pub struct Tracker {
    workers: u32,
    skip: Option<u32>,
    waiting: std::collections::BTreeSet<u32>,
    open: Option<Open>,
    /// Send time of every message in flight.
    sent: HashMap<MsgId, u64>,
    messages: Histogram<u64>,
    delays: Histogram<u64>,
    out: Handoffs,
    /// Messages let go to stay within [`MAX_PENDING`].
    let_go: u64,
}

impl Tracker {
    /// A tracker for a run of `workers`, leaving out handoffs from or to `skip`.
    pub fn new(workers: u32, skip: Option<u32>) -> Tracker {
        Tracker {
            workers,
            skip,
            waiting: Default::default(),
            open: None,
            sent: HashMap::new(),
            messages: histogram(),
            delays: histogram(),
            out: Handoffs::default(),
            let_go: 0,
        }
    }

    /// Take in the next event, in [`Reader`]'s order.
    pub fn push(&mut self, e: &Event) {
        let w = e.w;
        match &e.kind {
            EventKind::App { ev, .. } => match ev.as_str() {
                "want" => {
                    self.waiting.insert(w);
                }
                "enter" => {
                    self.waiting.remove(&w);
                    if let Some(open) = self.open.take() {
                        self.close(open, w, e.t);
                    }
                }
                "leave" => {
                    self.open = (!self.waiting.is_empty()).then(|| {
                        let mut dist = vec![None; self.workers as usize];
                        dist[w as usize] = Some(0);
                        Open { leaver: w, t: e.t, dist, carried: HashMap::new(), back: None }
                    });
                }
                _ => {}
            },
            EventKind::Send { to, .. } => {
                let id = (w, e.inc, *to, e.lc);
                if self.sent.len() >= MAX_PENDING {
                    // Messages never received (lost with a killed receiver) pile up here.
                    self.let_go += self.sent.len() as u64;
                    self.sent.clear();
                }
                self.sent.insert(id, e.t);
                if let Some(open) = &mut self.open {
                    if let Some(d) = open.dist[w as usize] {
                        if open.carried.len() >= MAX_PENDING {
                            self.let_go += open.carried.len() as u64;
                            open.carried.clear();
                        }
                        open.carried.insert(id, d);
                    }
                }
            }
            EventKind::Recv { from, from_inc, sent_lc, .. } => {
                let id = (*from, *from_inc, w, *sent_lc);
                if let Some(st) = self.sent.remove(&id) {
                    let _ = self.messages.record(e.t.saturating_sub(st));
                    self.out.messages_timed += 1;
                }
                if let Some(open) = &mut self.open {
                    if let Some(d) = open.carried.remove(&id) {
                        // The leaver stays at 0 for the chains it starts; what comes back
                        // to it is kept apart, for its own re-entry.
                        let mine = if w == open.leaver { &mut open.back } else { &mut open.dist[w as usize] };
                        *mine = Some(mine.map_or(d + 1, |m| m.min(d + 1)));
                    }
                }
            }
            EventKind::Drop { to, .. } => {
                let id = (w, e.inc, *to, e.lc);
                self.sent.remove(&id);
                if let Some(open) = &mut self.open {
                    open.carried.remove(&id);
                }
            }
        }
    }

    fn close(&mut self, open: Open, enterer: u32, t: u64) {
        if self.skip.is_some_and(|s| s == open.leaver || s == enterer) {
            self.out.skipped += 1;
            return;
        }
        self.out.handoffs += 1;
        let _ = self.delays.record(t.saturating_sub(open.t));
        let hops =
            if enterer == open.leaver { Some(open.back.unwrap_or(0)) } else { open.dist[enterer as usize] };
        match hops {
            Some(h) => *self.out.by_hops.entry(h).or_default() += 1,
            None => self.out.no_path += 1,
        }
    }

    /// What the handoffs came to; `notes` are the reader's.
    pub fn finish(mut self, notes: &trace::Notes) -> Handoffs {
        self.out.delay_median_ns = median_of(&self.delays);
        self.out.message_median_ns = median_of(&self.messages);
        self.out.notes = notes.lines();
        if self.let_go > 0 {
            self.out.notes.push(format!(
                "{} messages were let go unpaired, more than {MAX_PENDING} being open at once",
                self.let_go
            ));
        }
        self.out
    }
}

/// The handoffs of the trace in `run_dir`, leaving out those from or to `skip`. The
/// trace is checked whole first ([`trace::check`]), so bad input gives its one error
/// and nothing else.
pub fn analyse(run_dir: &Path, skip: Option<u32>) -> Result<Handoffs, TraceError> {
    trace::check(run_dir)?;
    let mut r = Reader::open(run_dir)?;
    let mut t = Tracker::new(r.workers, skip);
    while let Some(e) = r.next_event()? {
        t.push(&e);
    }
    Ok(t.finish(&r.notes))
}

/// The share of a run's time the resource was held: the sections' total length over
/// the time from the first ENTER to the last EXIT, and the median section, in ns.
/// `None` if no section was completed.
pub fn utilisation(records: impl IntoIterator<Item = Record>) -> Option<(f64, u64)> {
    let mut inside: HashMap<u32, u64> = HashMap::new();
    let (mut first, mut last, mut busy) = (None, 0u64, 0u64);
    let mut sections = histogram();
    for rec in records {
        match rec {
            Record::Enter { w, t, .. } => {
                first.get_or_insert(t);
                inside.insert(w, t);
            }
            Record::Exit { w, t, .. } => {
                if let Some(since) = inside.remove(&w) {
                    busy += t.saturating_sub(since);
                    let _ = sections.record(t.saturating_sub(since));
                    last = last.max(t);
                }
            }
            _ => {}
        }
    }
    let span = last.saturating_sub(first?);
    (span > 0).then(|| (busy as f64 / span as f64, median_of(&sections).unwrap_or(0)))
}

/// W/(W+kT): the share of time the resource can be held when every handoff costs `k`
/// sequential messages of `t_ns` each and a section lasts `w_ns`.
pub fn predicted_utilisation(w_ns: u64, k: f64, t_ns: u64) -> f64 {
    let w = w_ns as f64;
    w / (w + k * t_ns as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Write a hand-written trace (one string per worker, lines after the header) to a
    /// temporary run directory and analyse it.
    fn analyse_text(algo: &str, files: &[&str], skip: Option<u32>) -> Handoffs {
        let dir = tempfile::tempdir().unwrap();
        let n = files.len();
        for (w, body) in files.iter().enumerate() {
            let text = format!("{} w={w} workers={n} algo={algo}\n{body}", trace::HEADER);
            std::fs::write(dir.path().join(trace::file_name(w as u32)), text).unwrap();
        }
        analyse(dir.path(), skip).unwrap()
    }

    #[test]
    fn a_deferred_reply_is_a_one_hop_handoff() {
        // Ricart-Agrawala, N = 2: w1 asks while w0 is inside; w0's deferred REPLY on
        // leaving lets w1 in. A body= field at the end of a line is accepted.
        let w0 = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                  APP w=0 inc=0 t=20 lc=2 ev=enter\n\
                  RECV w=0 inc=0 t=35 lc=4 from=1 from_inc=0 sent_lc=3 type=REQUEST\n\
                  APP w=0 inc=0 t=50 lc=5 ev=leave\n\
                  SEND w=0 inc=0 t=52 lc=6 to=1 type=REPLY body={\"ok\":true}\n";
        let w1 = "APP w=1 inc=0 t=30 lc=2 ev=want\n\
                  SEND w=1 inc=0 t=31 lc=3 to=0 type=REQUEST\n\
                  RECV w=1 inc=0 t=62 lc=7 from=0 from_inc=0 sent_lc=6 type=REPLY body={}\n\
                  APP w=1 inc=0 t=64 lc=8 ev=enter\n\
                  APP w=1 inc=0 t=70 lc=9 ev=leave\n";
        let h = analyse_text("ricart-agrawala", &[w0, w1], None);
        assert_eq!((h.handoffs, h.no_path, h.by_hops.clone()), (1, 0, BTreeMap::from([(1, 1)])));
        assert_eq!(h.median(), Some(1.0));
        assert_eq!(h.delay_median_ns, Some(14));
        // Two messages timed, of 4 and 10 ns.
        assert_eq!(h.messages_timed, 2);
        assert!(matches!(h.message_median_ns, Some(4 | 10)), "{h:?}");
        assert_eq!(h.words(), "1");
    }

    #[test]
    fn release_then_grant_is_two_hops_and_the_shortest_chain_counts() {
        // Centralized, coordinator w2. w1 waits (its REQUEST queued); w0 leaves, RELEASE
        // to w2, GRANT to w1: two hops. w0 also sends w1 a message straight after
        // leaving, received before the GRANT: a one-message path, so the handoff is 1.
        let w0 = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                  APP w=0 inc=0 t=12 lc=3 ev=enter\n\
                  APP w=0 inc=0 t=20 lc=4 ev=leave\n\
                  SEND w=0 inc=0 t=21 lc=5 to=2 type=RELEASE\n";
        let w1 = "APP w=1 inc=0 t=11 lc=1 ev=want\n\
                  SEND w=1 inc=0 t=11 lc=2 to=2 type=REQUEST\n\
                  RECV w=1 inc=0 t=40 lc=8 from=2 from_inc=0 sent_lc=7 type=GRANT\n\
                  APP w=1 inc=0 t=41 lc=9 ev=enter\n";
        let w2 = "RECV w=2 inc=0 t=13 lc=3 from=1 from_inc=0 sent_lc=2 type=REQUEST\n\
                  RECV w=2 inc=0 t=30 lc=6 from=0 from_inc=0 sent_lc=5 type=RELEASE\n\
                  SEND w=2 inc=0 t=31 lc=7 to=1 type=GRANT\n";
        let h = analyse_text("centralized", &[w0, w1, w2], None);
        assert_eq!(h.by_hops, BTreeMap::from([(2, 1)]), "{h:?}");
        assert_eq!(h.delay_median_ns, Some(21));
        // The same with a shortcut: w0 → w1 directly after the leave.
        let w0 = format!("{w0}SEND w=0 inc=0 t=22 lc=6 to=1 type=NOTE\n");
        let w1 = w1.replace(
            "RECV w=1 inc=0 t=40",
            "RECV w=1 inc=0 t=25 lc=7 from=0 from_inc=0 sent_lc=6 type=NOTE\nRECV w=1 inc=0 t=40",
        );
        let h = analyse_text("centralized", &[&w0, &w1, w2], None);
        assert_eq!(h.by_hops, BTreeMap::from([(1, 1)]), "the shortest chain: {h:?}");
        // Handoffs to or from the coordinator are left out when asked.
        let h = analyse_text("centralized", &[&w0, &w1, w2], Some(1));
        assert_eq!((h.handoffs, h.skipped), (0, 1));
    }

    #[test]
    fn an_enter_not_after_the_leave_has_no_causal_path_not_zero_hops() {
        // flock: the kernel hands over, no message at all.
        let w0 = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                  APP w=0 inc=0 t=11 lc=2 ev=enter\n\
                  APP w=0 inc=0 t=20 lc=3 ev=leave\n";
        let w1 = "APP w=1 inc=0 t=12 lc=1 ev=want\n\
                  APP w=1 inc=0 t=21 lc=2 ev=enter\n";
        let h = analyse_text("flock", &[w0, w1], None);
        assert_eq!((h.handoffs, h.no_path, h.with_path()), (1, 1, 0));
        assert_eq!(h.median(), None, "not 0");
        assert_eq!(h.words(), "no causal path (1)");
        // A message sent before the leave is no path from it, even received after.
        let w0b = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                   APP w=0 inc=0 t=11 lc=2 ev=enter\n\
                   SEND w=0 inc=0 t=15 lc=3 to=1 type=EARLY\n\
                   APP w=0 inc=0 t=20 lc=4 ev=leave\n";
        let w1b = "APP w=1 inc=0 t=12 lc=1 ev=want\n\
                   RECV w=1 inc=0 t=21 lc=4 from=0 from_inc=0 sent_lc=3 type=EARLY\n\
                   APP w=1 inc=0 t=22 lc=5 ev=enter\n";
        let h = analyse_text("odd", &[w0b, w1b], None);
        assert_eq!((h.handoffs, h.no_path), (1, 1), "{h:?}");
        // The same worker entering again with nothing coming back (a token kept): 0,
        // with a path.
        let w0c = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                   APP w=0 inc=0 t=11 lc=2 ev=enter\n\
                   APP w=0 inc=0 t=20 lc=3 ev=leave\n\
                   APP w=0 inc=0 t=21 lc=4 ev=want\n\
                   APP w=0 inc=0 t=22 lc=5 ev=enter\n";
        let w1c = "APP w=1 inc=0 t=12 lc=1 ev=want\n";
        let h = analyse_text("odd", &[w0c, w1c], None);
        assert_eq!((h.handoffs, h.no_path, h.by_hops.clone()), (1, 0, BTreeMap::from([(0, 1)])));
    }

    #[test]
    fn a_leaver_entering_again_counts_the_chain_that_came_back_to_it() {
        // Voting: w0 leaves while w1 waits, asks again, and its voter w2 grants it first:
        // REQUEST out, GRANT back, 2 hops (not the 0 of its own program order).
        let w0 = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                  APP w=0 inc=0 t=11 lc=2 ev=enter\n\
                  APP w=0 inc=0 t=20 lc=3 ev=leave\n\
                  SEND w=0 inc=0 t=21 lc=4 to=2 type=RELEASE\n\
                  APP w=0 inc=0 t=22 lc=5 ev=want\n\
                  SEND w=0 inc=0 t=23 lc=6 to=2 type=REQUEST\n\
                  RECV w=0 inc=0 t=40 lc=9 from=2 from_inc=0 sent_lc=8 type=GRANT\n\
                  APP w=0 inc=0 t=41 lc=10 ev=enter\n";
        let w1 = "APP w=1 inc=0 t=12 lc=1 ev=want\n";
        let w2 = "RECV w=2 inc=0 t=30 lc=5 from=0 from_inc=0 sent_lc=4 type=RELEASE\n\
                  RECV w=2 inc=0 t=31 lc=7 from=0 from_inc=0 sent_lc=6 type=REQUEST\n\
                  SEND w=2 inc=0 t=32 lc=8 to=0 type=GRANT\n";
        let h = analyse_text("voting", &[w0, w1, w2], None);
        assert_eq!((h.handoffs, h.by_hops.clone()), (1, BTreeMap::from([(2, 1)])), "{h:?}");
        // The chain that comes back does not shorten another worker's: w2 grants w1
        // instead, and w1's entry is 2 hops as before.
        let w0 = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                  APP w=0 inc=0 t=11 lc=2 ev=enter\n\
                  APP w=0 inc=0 t=20 lc=3 ev=leave\n\
                  SEND w=0 inc=0 t=21 lc=4 to=2 type=RELEASE\n";
        let w1 = "APP w=1 inc=0 t=12 lc=1 ev=want\n\
                  RECV w=1 inc=0 t=40 lc=9 from=2 from_inc=0 sent_lc=8 type=GRANT\n\
                  APP w=1 inc=0 t=41 lc=10 ev=enter\n";
        let w2 = "RECV w=2 inc=0 t=30 lc=5 from=0 from_inc=0 sent_lc=4 type=RELEASE\n\
                  SEND w=2 inc=0 t=32 lc=8 to=1 type=GRANT\n";
        let h = analyse_text("voting", &[w0, w1, w2], None);
        assert_eq!(h.by_hops, BTreeMap::from([(2, 1)]), "{h:?}");
    }

    #[test]
    fn a_leave_with_nobody_waiting_is_no_handoff() {
        let w0 = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                  APP w=0 inc=0 t=11 lc=2 ev=enter\n\
                  APP w=0 inc=0 t=20 lc=3 ev=leave\n\
                  SEND w=0 inc=0 t=21 lc=4 to=1 type=TOKEN\n";
        let w1 = "RECV w=1 inc=0 t=25 lc=5 from=0 from_inc=0 sent_lc=4 type=TOKEN\n\
                  APP w=1 inc=0 t=30 lc=6 ev=want\n\
                  APP w=1 inc=0 t=31 lc=7 ev=enter\n";
        let h = analyse_text("token-ring", &[w0, w1], None);
        assert_eq!((h.handoffs, h.words().as_str()), (0, "no handoff"));
        assert_eq!(h.message_median_ns, Some(4));
    }

    #[test]
    fn medians_means_and_words_of_a_mixed_count() {
        let h = Handoffs {
            handoffs: 5,
            no_path: 1,
            by_hops: BTreeMap::from([(1, 2), (3, 2)]),
            ..Default::default()
        };
        assert_eq!(h.median(), Some(2.0));
        assert_eq!(h.mean(), Some(2.0));
        assert_eq!(h.words(), "2 (1-3); 1 of 5 without a causal path");
        let h = Handoffs { by_hops: BTreeMap::from([(1, 3), (2, 1)]), handoffs: 4, ..Default::default() };
        assert_eq!((h.median(), h.mean()), (Some(1.0), Some(1.25)));
    }

    #[test]
    fn utilisation_is_the_held_share_of_the_time_from_first_enter_to_last_exit() {
        use crate::resource::Fence;
        let enter = |w, t| Record::Enter { w, e: 1, fence: Fence { clock: t, id: w }, t };
        let exit = |w, t| Record::Exit { w, e: 1, fence: Fence { clock: 0, id: w }, read: 0, value: 1, t };
        let u = utilisation([enter(0, 100), exit(0, 190), enter(1, 200), exit(1, 300)]).unwrap();
        assert!((u.0 - 0.95).abs() < 1e-9, "{u:?}");
        assert!(utilisation([enter(0, 1)]).is_none());
        assert!((predicted_utilisation(1000, 2.0, 25) - 1000.0 / 1050.0).abs() < 1e-12);
    }
}
