//! Delay before entry as the 002 notes count it, read from a run's message trace.
//!
//! The notes give it "in message times" and say what that means: "assumes that
//! messages are transmitted sequentially over the network". So for each entry, from
//! its worker's `ev=want` to its `ev=enter`:
//! - **sequential**: the messages in the entry's causal past since its request, that is
//!   every message whose SEND happens after the want and whose RECV happens before the
//!   enter (the messages on some causal chain from one to the other). On a network that
//!   carries one message at a time each costs one message time: centralized's REQUEST
//!   and GRANT are 2, Ricart-Agrawala's N-1 REQUESTs and N-1 REPLYs 2(N-1);
//! - **chain**: the most messages on one causal chain from the want to the enter, what
//!   the delay is on a network that carries messages in parallel (2 for both);
//! - **wall**: the time from the want to the enter (over quiet entries beside every
//!   entry), and over the run's own median SEND→RECV time.
//!
//! Happens-before is the trace's (see [`crate::trace`]): each worker's events in order
//! plus each SEND to the RECV that names it. It is computed as the events stream by in
//! [`Reader`]'s order: for each open request, each worker's longest chain from the
//! want and the set of messages after the want in its causal past; a SEND carries its
//! sender's, a RECV merges them into its receiver's.
//!
//! A ring's token is never asked for, so no message of a request's causal chains
//! reaches it: for an algorithm whose claim names the token
//! ([`crate::algos::Claim::entry_by_hops_of`]) both figures are that message's hops
//! from the want to the enter, whoever sends it, the notes' "0 to n-1".
//!
//! An entry is **quiet** when nobody else had asked and not yet left at its want, and
//! nobody else asked before its enter: the notes' case of a request with nobody ahead,
//! where their formulas are exact for centralized and Ricart-Agrawala. Busier entries
//! count the others' messages that lie on their chains too (a GRANT to someone queued
//! ahead and that one's RELEASE), so all entries give a range.
//!
//! Beside them, for the 003 notes' manager: the time from the want to the receipt of
//! the first message the worker sends after leaving (its RELEASE), over quiet requests:
//! the notes' W+3T, W the section measured here from enter to leave.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::trace::{self, Event, EventKind, MsgId, Reader, TraceError};

/// Messages carried for one open request at most; past it the request is let go (a
/// note says how many), so memory stays bounded whatever the trace.
pub const MAX_CARRIED: usize = 4096;

/// Entries counted by a whole number (messages), each count with how many entries had it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Counts(pub BTreeMap<u32, u64>);

impl Counts {
    fn add(&mut self, k: u32) {
        *self.0.entry(k).or_default() += 1;
    }

    /// Add every count of `other`.
    pub fn merge(&mut self, other: &Counts) {
        for (&k, &c) in &other.0 {
            *self.0.entry(k).or_default() += c;
        }
    }

    /// How many entries were counted.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// The median (the mean of the middle two for an even count); `None` if empty.
    pub fn median(&self) -> Option<f64> {
        let n = self.total();
        if n == 0 {
            return None;
        }
        let at = |rank: u64| {
            let mut seen = 0;
            for (&k, &c) in &self.0 {
                seen += c;
                if seen > rank {
                    return f64::from(k);
                }
            }
            unreachable!("rank below the count")
        };
        Some((at((n - 1) / 2) + at(n / 2)) / 2.0)
    }

    /// The fewest and the most.
    pub fn range(&self) -> Option<(u32, u32)> {
        Some((*self.0.keys().next()?, *self.0.keys().next_back()?))
    }

    /// `2`, `8 (8-11)`, `-` when empty.
    pub fn words(&self) -> String {
        match (self.median(), self.range()) {
            (Some(m), Some((lo, hi))) => {
                let m = if m.fract() == 0.0 { format!("{m:.0}") } else { format!("{m:.1}") };
                if lo == hi {
                    m
                } else {
                    format!("{m} ({lo}-{hi})")
                }
            }
            _ => "-".into(),
        }
    }
}

/// What one run's trace says of its entries' delays.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EntryCounts {
    /// Entries measured (the skipped worker's left out).
    pub entries: u64,
    /// Of those, the quiet ones (nobody else asking from the want to the enter).
    pub quiet: u64,
    /// Entries of the skipped worker (the centralized coordinator, whose own cost nothing).
    pub skipped: u64,
    /// The message whose hops are counted instead of causal chains (a ring's token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hops_of: Option<String>,
    /// Messages in each entry's causal past since its request: the notes' sequential
    /// network (each costs one message time).
    pub sequential: Counts,
    /// The same over quiet entries.
    pub sequential_quiet: Counts,
    /// The most messages on one causal chain from the request to the entry: a network
    /// that carries messages in parallel.
    pub chain: Counts,
    /// The same over quiet entries.
    pub chain_quiet: Counts,
    /// Median want to enter, in ns.
    pub wall_median_ns: Option<u64>,
    /// The same over quiet entries.
    pub wall_quiet_median_ns: Option<u64>,
    /// Median SEND→RECV over every message of the run, in ns: the run's own T.
    pub message_median_ns: Option<u64>,
    /// Median want to the receipt of the first message sent after leaving (a RELEASE),
    /// over quiet requests, in ns: the 003 notes' W+3T for the manager.
    pub release_median_ns: Option<u64>,
    /// How many requests that median is of.
    pub release_samples: u64,
    /// Median section, enter to leave, in ns: the notes' W.
    pub section_median_ns: Option<u64>,
    /// Requests let go unmeasured, more than [`MAX_CARRIED`] messages being carried for
    /// one.
    pub let_go: u64,
}

impl EntryCounts {
    /// The median wall time of quiet entries in the run's own message times.
    pub fn wall_in_message_times(&self) -> Option<f64> {
        let (w, m) = (self.wall_quiet_median_ns?, self.message_median_ns?);
        (m > 0).then(|| w as f64 / m as f64)
    }
}

/// One request from its want to its enter.
struct Open {
    t: u64,
    quiet: bool,
    /// Each worker's longest chain from the want, in messages; `None`: not after it.
    long: Vec<Option<u32>>,
    /// Each worker's messages after the want in its causal past.
    past: Vec<HashSet<MsgId>>,
    /// Messages sent after the want, not yet received: their sender's chain and past.
    carried: HashMap<MsgId, (u32, HashSet<MsgId>)>,
    /// SENDs of the counted message since the want.
    hops: u32,
}

fn histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits are supported")
}

fn median_of(h: &Histogram<u64>) -> Option<u64> {
    (!h.is_empty()).then(|| h.value_at_quantile(0.5))
}

/// The entries of a trace, counted as its events stream by (see the module doc).
pub struct Tracker {
    skip: Option<u32>,
    hops_of: Option<String>,
    /// Workers from their want to their leave.
    busy: BTreeSet<u32>,
    open: Vec<Option<Open>>,
    /// Each worker's last want and whether its request was quiet, until its release.
    asked: Vec<Option<(u64, bool)>>,
    /// Each worker's last enter.
    entered: Vec<Option<u64>>,
    /// Left and not yet sent anything: the next SEND is the release.
    left: Vec<bool>,
    /// Releases in flight: the want they close.
    releases: HashMap<MsgId, u64>,
    sent: HashMap<MsgId, u64>,
    messages: Histogram<u64>,
    walls: Histogram<u64>,
    quiet_walls: Histogram<u64>,
    release: Histogram<u64>,
    sections: Histogram<u64>,
    out: EntryCounts,
}

impl Tracker {
    /// A tracker for `workers`, leaving out the entries of `skip`, counting the hops of
    /// `hops_of` if given.
    pub fn new(workers: u32, skip: Option<u32>, hops_of: Option<&str>) -> Tracker {
        let n = workers as usize;
        Tracker {
            skip,
            hops_of: hops_of.map(str::to_string),
            busy: BTreeSet::new(),
            open: (0..n).map(|_| None).collect(),
            asked: vec![None; n],
            entered: vec![None; n],
            left: vec![false; n],
            releases: HashMap::new(),
            sent: HashMap::new(),
            messages: histogram(),
            walls: histogram(),
            quiet_walls: histogram(),
            release: histogram(),
            sections: histogram(),
            out: EntryCounts { hops_of: hops_of.map(str::to_string), ..EntryCounts::default() },
        }
    }

    /// Take in the next event, in [`Reader`]'s order.
    pub fn push(&mut self, e: &Event) {
        let w = e.w as usize;
        if w >= self.open.len() {
            return;
        }
        match &e.kind {
            EventKind::App { ev, .. } => match ev.as_str() {
                "want" => self.want(w, e.t),
                "enter" => self.enter(w, e.t),
                "leave" => {
                    self.busy.remove(&e.w);
                    self.left[w] = true;
                    if let Some(t) = self.entered[w].take() {
                        let _ = self.sections.record(e.t.saturating_sub(t));
                    }
                }
                _ => {}
            },
            EventKind::Send { to, msg } => {
                let id = (e.w, e.inc, *to, e.lc);
                if self.sent.len() >= trace::MAX_PENDING {
                    // Messages never received pile up here: let them go.
                    self.sent.clear();
                }
                self.sent.insert(id, e.t);
                if std::mem::take(&mut self.left[w]) {
                    if let Some((t, true)) = self.asked[w].take() {
                        self.releases.insert(id, t);
                    }
                }
                let counted = self.hops_of.as_deref() == Some(msg.as_str());
                let mut let_go = 0;
                for slot in self.open.iter_mut() {
                    let Some(o) = slot else { continue };
                    if counted {
                        o.hops += 1;
                    }
                    if let Some(d) = o.long[w] {
                        o.carried.insert(id, (d, o.past[w].clone()));
                        if o.carried.len() > MAX_CARRIED || o.past[w].len() > MAX_CARRIED {
                            *slot = None;
                            let_go += 1;
                        }
                    }
                }
                self.out.let_go += let_go;
            }
            EventKind::Recv { from, from_inc, sent_lc, .. } => {
                let id = (*from, *from_inc, e.w, *sent_lc);
                if let Some(st) = self.sent.remove(&id) {
                    let _ = self.messages.record(e.t.saturating_sub(st));
                }
                if let Some(t) = self.releases.remove(&id) {
                    let _ = self.release.record(e.t.saturating_sub(t));
                    self.out.release_samples += 1;
                }
                for o in self.open.iter_mut().flatten() {
                    if let Some((d, past)) = o.carried.remove(&id) {
                        o.long[w] = Some(o.long[w].map_or(d + 1, |m| m.max(d + 1)));
                        o.past[w].extend(past);
                        o.past[w].insert(id);
                    }
                }
            }
            EventKind::Drop { to, .. } => {
                let id = (e.w, e.inc, *to, e.lc);
                self.sent.remove(&id);
                for o in self.open.iter_mut().flatten() {
                    o.carried.remove(&id);
                }
            }
        }
    }

    fn want(&mut self, w: usize, t: u64) {
        let others_busy = self.busy.iter().any(|&b| b as usize != w);
        // Whoever is waiting now has company.
        for o in self.open.iter_mut().flatten() {
            o.quiet = false;
        }
        self.busy.insert(w as u32);
        self.left[w] = false;
        self.asked[w] = Some((t, !others_busy));
        let n = self.open.len();
        let mut long = vec![None; n];
        long[w] = Some(0);
        self.open[w] = Some(Open {
            t,
            quiet: !others_busy,
            long,
            past: vec![HashSet::new(); n],
            carried: HashMap::new(),
            hops: 0,
        });
    }

    fn enter(&mut self, w: usize, t: u64) {
        self.entered[w] = Some(t);
        let Some(o) = self.open[w].take() else { return };
        // The release measures a quiet request only.
        if let Some(a) = &mut self.asked[w] {
            a.1 = o.quiet;
        }
        if self.skip == Some(w as u32) {
            // Its own entry asked nobody: its next SEND is no release.
            self.asked[w] = None;
            self.out.skipped += 1;
            return;
        }
        let (seq, chain) = match self.hops_of {
            Some(_) => (o.hops, o.hops),
            None => (o.past[w].len() as u32, o.long[w].unwrap_or(0)),
        };
        self.out.entries += 1;
        self.out.sequential.add(seq);
        self.out.chain.add(chain);
        if o.quiet {
            self.out.quiet += 1;
            self.out.sequential_quiet.add(seq);
            self.out.chain_quiet.add(chain);
            let _ = self.quiet_walls.record(t.saturating_sub(o.t));
        }
        let _ = self.walls.record(t.saturating_sub(o.t));
    }

    /// What the entries came to.
    pub fn finish(mut self) -> EntryCounts {
        self.out.wall_median_ns = median_of(&self.walls);
        self.out.wall_quiet_median_ns = median_of(&self.quiet_walls);
        self.out.message_median_ns = median_of(&self.messages);
        self.out.release_median_ns = median_of(&self.release);
        self.out.section_median_ns = median_of(&self.sections);
        self.out
    }
}

/// The entries of the trace in `run_dir` (checked whole first, so bad input gives its
/// one error), leaving out those of `skip` and counting the hops of `hops_of` if given.
pub fn analyse(run_dir: &Path, skip: Option<u32>, hops_of: Option<&str>) -> Result<EntryCounts, TraceError> {
    trace::check(run_dir)?;
    let mut r = Reader::open(run_dir)?;
    let mut t = Tracker::new(r.workers, skip, hops_of);
    while let Some(e) = r.next_event()? {
        t.push(&e);
    }
    Ok(t.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Analyse a hand-written trace (one string per worker, lines after the header).
    fn analyse_text(algo: &str, files: &[&str], skip: Option<u32>, hops_of: Option<&str>) -> EntryCounts {
        let dir = tempfile::tempdir().unwrap();
        let n = files.len();
        for (w, body) in files.iter().enumerate() {
            let text = format!("{} w={w} workers={n} algo={algo}\n{body}", trace::HEADER);
            std::fs::write(dir.path().join(trace::file_name(w as u32)), text).unwrap();
        }
        analyse(dir.path(), skip, hops_of).unwrap()
    }

    fn counts(pairs: &[(u32, u64)]) -> Counts {
        Counts(pairs.iter().copied().collect())
    }

    #[test]
    fn a_quiet_centralized_request_is_request_and_grant_and_its_release_closes_w_plus_3t() {
        // w0 asks the coordinator w1: REQUEST, GRANT, then its RELEASE after leaving.
        let w0 = "APP w=0 inc=0 t=100 lc=1 ev=want\n\
                  SEND w=0 inc=0 t=101 lc=2 to=1 type=REQUEST\n\
                  RECV w=0 inc=0 t=130 lc=5 from=1 from_inc=0 sent_lc=4 type=GRANT\n\
                  APP w=0 inc=0 t=131 lc=6 ev=enter\n\
                  APP w=0 inc=0 t=231 lc=7 ev=leave\n\
                  SEND w=0 inc=0 t=232 lc=8 to=1 type=RELEASE\n";
        let w1 = "RECV w=1 inc=0 t=115 lc=3 from=0 from_inc=0 sent_lc=2 type=REQUEST\n\
                  SEND w=1 inc=0 t=116 lc=4 to=0 type=GRANT\n\
                  RECV w=1 inc=0 t=247 lc=9 from=0 from_inc=0 sent_lc=8 type=RELEASE\n";
        let e = analyse_text("centralized", &[w0, w1], Some(1), None);
        assert_eq!((e.entries, e.quiet, e.skipped), (1, 1, 0));
        // The coordinator's own entry later, then a GRANT: no release of its own.
        let w1b = format!(
            "{w1}APP w=1 inc=0 t=300 lc=10 ev=want\nAPP w=1 inc=0 t=301 lc=11 ev=enter\n\
             APP w=1 inc=0 t=400 lc=12 ev=leave\nSEND w=1 inc=0 t=900 lc=13 to=0 type=GRANT\n"
        );
        let w0b = format!("{w0}RECV w=0 inc=0 t=950 lc=14 from=1 from_inc=0 sent_lc=13 type=GRANT\n");
        let e2 = analyse_text("centralized", &[&w0b, &w1b], Some(1), None);
        assert_eq!((e2.skipped, e2.release_samples), (1, 1), "{e2:?}");
        assert_eq!(e.sequential_quiet, counts(&[(2, 1)]));
        assert_eq!(e.chain, counts(&[(2, 1)]));
        assert_eq!(e.wall_median_ns, Some(31));
        // Three messages of 14, 14 and 15 ns: T = 14; W = 100; want to release received 147.
        assert_eq!(e.message_median_ns, Some(14));
        assert_eq!((e.section_median_ns, e.release_median_ns, e.release_samples), (Some(100), Some(147), 1));
    }

    #[test]
    fn ricart_agrawala_s_quiet_entry_counts_every_request_and_reply_but_its_chain_is_two() {
        // N = 3: w0 asks w1 and w2, both reply.
        let w0 = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                  SEND w=0 inc=0 t=11 lc=2 to=1 type=REQUEST\n\
                  SEND w=0 inc=0 t=12 lc=3 to=2 type=REQUEST\n\
                  RECV w=0 inc=0 t=30 lc=6 from=1 from_inc=0 sent_lc=5 type=REPLY\n\
                  RECV w=0 inc=0 t=31 lc=7 from=2 from_inc=0 sent_lc=5 type=REPLY\n\
                  APP w=0 inc=0 t=32 lc=8 ev=enter\n";
        let w1 = "RECV w=1 inc=0 t=20 lc=4 from=0 from_inc=0 sent_lc=2 type=REQUEST\n\
                  SEND w=1 inc=0 t=21 lc=5 to=0 type=REPLY\n";
        let w2 = "RECV w=2 inc=0 t=20 lc=4 from=0 from_inc=0 sent_lc=3 type=REQUEST\n\
                  SEND w=2 inc=0 t=21 lc=5 to=0 type=REPLY\n";
        let e = analyse_text("ricart-agrawala", &[w0, w1, w2], None, None);
        assert_eq!((e.entries, e.quiet), (1, 1));
        assert_eq!(e.sequential, counts(&[(4, 1)]), "2(n-1)");
        assert_eq!(e.chain, counts(&[(2, 1)]), "REQUEST then REPLY");
    }

    #[test]
    fn a_request_queued_behind_another_s_grant_counts_it_and_is_not_quiet() {
        // Negative control: the coordinator w2 holds w1's REQUEST; w0 asks after, and is
        // granted after w1's GRANT and RELEASE, which came after its REQUEST: 4.
        let w0 = "APP w=0 inc=0 t=10 lc=1 ev=want\n\
                  SEND w=0 inc=0 t=11 lc=2 to=2 type=REQUEST\n\
                  RECV w=0 inc=0 t=90 lc=12 from=2 from_inc=0 sent_lc=11 type=GRANT\n\
                  APP w=0 inc=0 t=91 lc=13 ev=enter\n";
        let w1 = "APP w=1 inc=0 t=5 lc=1 ev=want\n\
                  SEND w=1 inc=0 t=6 lc=2 to=2 type=REQUEST\n\
                  RECV w=1 inc=0 t=40 lc=6 from=2 from_inc=0 sent_lc=5 type=GRANT\n\
                  APP w=1 inc=0 t=41 lc=7 ev=enter\n\
                  APP w=1 inc=0 t=60 lc=8 ev=leave\n\
                  SEND w=1 inc=0 t=61 lc=9 to=2 type=RELEASE\n";
        let w2 = "RECV w=2 inc=0 t=8 lc=3 from=1 from_inc=0 sent_lc=2 type=REQUEST\n\
                  RECV w=2 inc=0 t=20 lc=4 from=0 from_inc=0 sent_lc=2 type=REQUEST\n\
                  SEND w=2 inc=0 t=21 lc=5 to=1 type=GRANT\n\
                  RECV w=2 inc=0 t=70 lc=10 from=1 from_inc=0 sent_lc=9 type=RELEASE\n\
                  SEND w=2 inc=0 t=71 lc=11 to=0 type=GRANT\n";
        let e = analyse_text("centralized", &[w0, w1, w2], Some(2), None);
        assert_eq!((e.entries, e.quiet), (2, 0), "{e:?}");
        // w1's entry: REQUEST, GRANT; w0's: its REQUEST, w1's GRANT and RELEASE, its GRANT.
        assert_eq!(e.sequential, counts(&[(2, 1), (4, 1)]));
        assert_eq!(e.chain, counts(&[(2, 1), (4, 1)]));
        assert_eq!(e.sequential.words(), "3 (2-4)");
        assert!(e.sequential_quiet.0.is_empty());
        assert_eq!(e.release_samples, 0, "a busy request's release is no W+3T");
    }

    #[test]
    fn a_ring_counts_the_token_s_hops_from_want_to_enter() {
        // N = 3: w2 wants while the token is at w0; it goes w0 → w1 → w2: 2 hops.
        let w0 = "SEND w=0 inc=0 t=20 lc=1 to=1 type=TOKEN\n";
        let w1 = "RECV w=1 inc=0 t=25 lc=2 from=0 from_inc=0 sent_lc=1 type=TOKEN\n\
                  SEND w=1 inc=0 t=26 lc=3 to=2 type=TOKEN\n";
        let w2 = "APP w=2 inc=0 t=10 lc=1 ev=want\n\
                  RECV w=2 inc=0 t=30 lc=4 from=1 from_inc=0 sent_lc=3 type=TOKEN\n\
                  APP w=2 inc=0 t=31 lc=5 ev=enter\n";
        let e = analyse_text("token-ring", &[w0, w1, w2], None, Some("TOKEN"));
        assert_eq!(e.sequential, counts(&[(2, 1)]));
        assert_eq!(e.hops_of.as_deref(), Some("TOKEN"));
        // Counted by causal chains instead, the want reaches no token: 0.
        let e = analyse_text("token-ring", &[w0, w1, w2], None, None);
        assert_eq!(e.sequential, counts(&[(0, 1)]));
    }

    #[test]
    fn counts_give_their_median_and_range() {
        let c = counts(&[(8, 5), (10, 1)]);
        assert_eq!((c.median(), c.range(), c.words()), (Some(8.0), Some((8, 10)), "8 (8-10)".into()));
        assert_eq!(Counts::default().words(), "-");
        assert_eq!(counts(&[(1, 1), (2, 1)]).words(), "1.5 (1-2)");
    }
}
