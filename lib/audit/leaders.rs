//! The election auditor: judges a run's elections from its leader file alone.
//!
//! Every worker appends a record each time it accepts a leader, one `write` per line,
//! to `leaders.log` in the run directory:
//!
//! ```text
//! # mutexlab leaders v1 algo=bully workers=4
//! START t=8000000
//! LEADER w=2 inc=0 leader=3 term=1 t=8123456
//! ```
//!
//! An election run's header also says how long a handover may take there
//! (`handover_ms=`, the run's reply time 2·Tm + Tp, if above the auditor's own
//! allowance), so the `two-leaders` check scales with the run's timeouts.
//!
//! The supervisor writes the `START` line (monotonic ns, the clock of every record and
//! of the fault log) when it starts the workers, and an `END` line when it judged the
//! run settled and begins to stop the workers. Stopping them takes a while (each is
//! frozen in turn for its `Finish`), and a worker not frozen yet hears nothing from those
//! that are: it may suspect the leader and elect itself. A record stamped after `END`
//! is that teardown's, not the run's: it is counted (`after_end`) and not judged. (A
//! record stamped after `END` but written before it is judged: the two stamps are
//! microseconds apart.)
//!
//! With the fault log's kills and restarts, that is enough to check what the notes ask
//! of an election:
//! - **uniqueness**: no term names two leaders (`split-brain`), no two live workers
//!   believe themselves leader at once for longer than a handover takes (`two-leaders`:
//!   a paused leader wrongly suspected, say, that still leads when it wakes beside its
//!   successor), and a worker's terms only rise (`term-backwards`);
//! - **agreement**: at the end, every live worker names the same leader
//!   (`disagreement`), and some leader was agreed at all (`no-leader`);
//! - **validity** (when asked, for bully and the ring algorithms): the agreed leader is
//!   the highest live id (`not-highest`);
//! - **termination**: the time from the last kill or restart (else the start, else the
//!   first record) to the agreement, reported, and a violation (`slow-election`) beyond a bound when one is
//!   given.
//!
//! Lines are read as the resource file's are: bounded, a last line without its newline
//! is `torn-record`, anything that does not parse, or names a worker or leader at or
//! above the header's `workers=`, is `corrupt-record`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::io::Read;
use std::path::Path;

use serde::Serialize;

pub use crate::leaders::{LeaderRecord, LEADERS_HEADER};

use super::{clip, AuditError, FaultLog, Lines, Quote, Violation, KEEP, MAX_WORKER_ID};

/// The longest handover a leader file's header may allow (`handover_ms=`): ten minutes.
pub const MAX_HANDOVER_MS: u64 = 600_000;

/// What the election auditor is asked to check besides the invariants.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rules {
    /// The agreed leader must be the highest live id (bully, ring elections).
    pub highest_wins: bool,
    /// Agreement must come within this many ns of the last fault (or the first record).
    pub bound_ns: Option<u64>,
    /// How long two live workers may both believe themselves leader before it is
    /// `two-leaders`: a handover (the new leader declares, the old one hears of it) takes
    /// a few message times. 0: not for a moment. A header's `handover_ms=` (the run's
    /// reply time, 2·Tm + Tp) raises it: the old leader hears of the new within that.
    pub overlap_ns: u64,
}

/// The fields of a leaders file's header line that an election auditor reads; a field
/// it does not know is passed over, so that new ones do not break old readers.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Header {
    /// `algo=`.
    pub algorithm: Option<String>,
    /// `workers=`.
    pub workers: Option<u32>,
    /// `handover_ms=`: the run's own reply time (2·Tm + Tp), which a handover may take.
    pub handover_ms: Option<u64>,
    /// `seed=`: a super-peer run's places come from it.
    pub seed: Option<u64>,
}

impl ElectionReport {
    /// Count a violation; keep its line while fewer than [`KEEP`] are kept.
    pub(super) fn flag(&mut self, kind: &'static str, line: usize, detail: String) {
        self.violation_count += 1;
        self.split.count(kind, 1);
        if self.violations.len() < KEEP {
            self.violations.push(Violation { kind, line, detail });
        }
    }
}

impl Header {
    /// The header's fields, each bad one flagged as a `corrupt-record` on line 1.
    pub(super) fn parse(text: &str, report: &mut ElectionReport) -> Header {
        let mut h = Header::default();
        let fields = text.strip_prefix(LEADERS_HEADER).unwrap_or(text);
        for field in fields.split_whitespace() {
            let Some((key, v)) = field.split_once('=') else { continue };
            let bad = |what: &str| format!("header: {key}={:?} is not {what}", clip(v));
            match key {
                "algo" => h.algorithm = Some(clip(v).into_owned()),
                "workers" => match v.parse() {
                    Ok(n) if n <= MAX_WORKER_ID => h.workers = Some(n),
                    _ => report.flag("corrupt-record", 1, bad("a worker count")),
                },
                "handover_ms" => match v.parse::<u64>() {
                    Ok(ms) if ms <= MAX_HANDOVER_MS => h.handover_ms = Some(ms),
                    _ => report.flag(
                        "corrupt-record",
                        1,
                        bad(&format!("a number of ms up to {MAX_HANDOVER_MS}")),
                    ),
                },
                "seed" => match v.parse() {
                    Ok(seed) => h.seed = Some(seed),
                    _ => report.flag("corrupt-record", 1, bad("a seed")),
                },
                _ => {}
            }
        }
        if let Some(a) = &h.algorithm {
            report.algorithm = Some(a.clone());
        }
        if let Some(n) = h.workers {
            report.workers = n;
        }
        h
    }
}

/// A line of a leaders file that an election auditor judges.
pub(super) enum Line {
    /// The header's fields (line 1).
    Header(Header),
    /// The supervisor's `START t=`: when it started the workers.
    Start(u64),
    /// The supervisor's `END t=`: when it judged the run settled and began to stop it.
    End(u64),
    /// A worker's record, with its line number.
    Record(usize, LeaderRecord),
}

/// A leaders file read line by line for either election auditor: what is no line of a
/// leaders file (torn, corrupt, too long, a second START, a worker id out of range) is
/// flagged on the report and passed over, and comments and blank lines are skipped.
pub(super) struct LeaderLines<R> {
    lines: Lines<R>,
    lineno: usize,
    started: bool,
    ended: bool,
}

impl<R: Read> LeaderLines<R> {
    /// Begin reading `src`; `Err(None)` if it is not a leaders file.
    pub(super) fn open(mut src: R) -> Result<LeaderLines<R>, Option<std::io::Error>> {
        let mut head = Vec::new();
        (&mut src).take(LEADERS_HEADER.len() as u64).read_to_end(&mut head).map_err(Some)?;
        if head != LEADERS_HEADER.as_bytes() {
            return Err(None);
        }
        Ok(LeaderLines { lines: Lines::new(src, head), lineno: 0, started: false, ended: false })
    }

    /// The next line to judge, `None` at the end of the file.
    pub(super) fn next(&mut self, report: &mut ElectionReport) -> std::io::Result<Option<Line>> {
        while let Some(ended) = self.lines.next()? {
            self.lineno += 1;
            let lineno = self.lineno;
            let text = String::from_utf8_lossy(&self.lines.kept).into_owned();
            if lineno == 1 {
                return Ok(Some(Line::Header(Header::parse(&text, report))));
            }
            if text.is_empty() && ended || text.starts_with('#') {
                continue;
            }
            let quote = Quote { bytes: &self.lines.kept, len: self.lines.len };
            if !ended {
                report.flag("torn-record", lineno, format!("last line is cut short (no newline): {quote}"));
                continue;
            }
            if let Some(t) = text.strip_prefix("START t=") {
                match t.parse::<u64>() {
                    Ok(t) if !self.started => {
                        self.started = true;
                        return Ok(Some(Line::Start(t)));
                    }
                    Ok(_) => report.flag("corrupt-record", lineno, format!("a second START: {quote}")),
                    Err(_) => {
                        report.flag("corrupt-record", lineno, format!("START t= is not a number: {quote}"))
                    }
                }
                continue;
            }
            if let Some(t) = text.strip_prefix("END t=") {
                match t.parse::<u64>() {
                    Ok(t) if !self.ended => {
                        self.ended = true;
                        return Ok(Some(Line::End(t)));
                    }
                    Ok(_) => report.flag("corrupt-record", lineno, format!("a second END: {quote}")),
                    Err(_) => {
                        report.flag("corrupt-record", lineno, format!("END t= is not a number: {quote}"))
                    }
                }
                continue;
            }
            match text.parse::<LeaderRecord>() {
                Ok(r) if r.w.max(r.leader) >= super::id_bound(report.workers) => {
                    report.flag("corrupt-record", lineno, format!("worker id out of range: {quote}"))
                }
                Ok(r) if self.lines.len <= super::MAX_LINE as u64 => {
                    return Ok(Some(Line::Record(lineno, r)))
                }
                Ok(_) => report.flag("corrupt-record", lineno, format!("line too long: {quote}")),
                Err(e) => report.flag("corrupt-record", lineno, format!("{e}: {quote}")),
            }
        }
        Ok(None)
    }
}

/// What the election auditor found.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct ElectionReport {
    /// No violations.
    pub ok: bool,
    /// Algorithm from the header, if present.
    pub algorithm: Option<String>,
    /// Workers: the header's count, or more if records name higher ids.
    pub workers: u32,
    /// Records read.
    pub records: usize,
    /// The leader every live worker names at the end, and its term, if it is alive: a
    /// dead one named by all is no agreement (`no-leader`).
    pub leader: Option<(u32, u64)>,
    /// Distinct terms announced.
    pub terms: usize,
    /// From the last kill or restart (else the `START` line, else the first record) to
    /// the record that completed the final agreement, in ms; `None` without one (no
    /// `leader`).
    pub time_to_agree_ms: Option<f64>,
    /// Every violation found (the first few hundred; `violation_count` has them all).
    pub violations: Vec<Violation>,
    /// How many violations were found, listed or not.
    pub violation_count: usize,
    /// The same, split into safety and liveness.
    #[serde(flatten)]
    pub split: super::Split,
    /// Records stamped after the supervisor's `END` line: written while the run was
    /// being stopped (a worker not frozen yet that suspected a frozen leader), so not
    /// judged.
    #[serde(default)]
    pub after_end: usize,
}

/// Audit the leader file at `path`.
pub fn audit_leaders_file(
    path: &Path,
    faults: &FaultLog,
    rules: Rules,
) -> Result<ElectionReport, AuditError> {
    let shown = || path.display().to_string();
    let f = crate::files::open_regular(path).map_err(|err| AuditError::Unreadable { path: shown(), err })?;
    audit_leaders(f, faults, rules).map_err(|e| match e {
        None => AuditError::NotLeaders { path: shown() },
        Some(err) => AuditError::Unreadable { path: shown(), err },
    })
}

/// Audit leader file contents; `Err(None)` if they are not a leader file.
pub fn audit_leaders(
    src: impl Read,
    faults: &FaultLog,
    rules: Rules,
) -> Result<ElectionReport, Option<std::io::Error>> {
    let mut file = LeaderLines::open(src)?;
    let lives = Lives::of(faults);
    let mut a = Judge::default();
    let mut rules = rules;
    while let Some(line) = file.next(&mut a.report).map_err(Some)? {
        match line {
            Line::Header(h) => {
                if rules.overlap_ns > 0 {
                    rules.overlap_ns = rules.overlap_ns.max(h.handover_ms.unwrap_or(0) * 1_000_000);
                }
            }
            Line::Start(t) => a.start_t = Some(t),
            Line::End(t) => a.end_t = Some(t),
            // The teardown's, not the run's (see the module documentation).
            Line::Record(_, r) if a.end_t.is_some_and(|end| r.t > end) => a.report.after_end += 1,
            Line::Record(lineno, r) => a.record(lineno, r, &lives, rules),
        }
    }
    Ok(a.finish(&lives, rules))
}

/// Each worker's kills and restarts from the fault log, sorted, so "was it killed in
/// this span" and "when did its current life begin" are binary searches rather than a
/// scan of the whole log for every record.
#[derive(Default)]
struct Lives {
    kills: BTreeMap<u32, Vec<u64>>,
    restarts: BTreeMap<u32, Vec<u64>>,
    /// The latest kill or restart of anyone.
    last_fault: Option<u64>,
}

impl Lives {
    fn of(faults: &FaultLog) -> Lives {
        let mut lives = Lives::default();
        for c in &faults.crashes {
            lives.kills.entry(c.worker).or_default().push(c.t);
        }
        for &(w, t) in &faults.restarts {
            lives.restarts.entry(w).or_default().push(t);
        }
        for v in lives.kills.values_mut().chain(lives.restarts.values_mut()) {
            v.sort_unstable();
        }
        lives.last_fault =
            lives.kills.values().chain(lives.restarts.values()).filter_map(|v| v.last()).max().copied();
        lives
    }

    /// The latest of `events` no later than `now`.
    fn last(events: Option<&Vec<u64>>, now: u64) -> Option<u64> {
        let v = events?;
        v[..v.partition_point(|&t| t <= now)].last().copied()
    }

    /// `w`'s first kill at or after `from`.
    fn first_kill_from(&self, w: u32, from: u64) -> Option<u64> {
        let v = self.kills.get(&w)?;
        v.get(v.partition_point(|&t| t < from)).copied()
    }

    /// `w` was killed at some time in `[from, to]`.
    fn killed_between(&self, w: u32, from: u64, to: u64) -> bool {
        Self::last(self.kills.get(&w), to).is_some_and(|k| k >= from)
    }

    /// When `w`'s life current at `now` began (0 for its first).
    fn life_began(&self, w: u32, now: u64) -> u64 {
        Self::last(self.restarts.get(&w), now).unwrap_or(0)
    }

    /// `w` is dead at `now`: killed since its current life began.
    fn dead_at(&self, w: u32, now: u64) -> bool {
        Self::last(self.kills.get(&w), now)
            .is_some_and(|k| Self::last(self.restarts.get(&w), now).is_none_or(|r| r < k))
    }
}

/// The auditor's state while reading.
#[derive(Default)]
struct Judge {
    report: ElectionReport,
    /// Each term's leader, and the line that first named it.
    terms: BTreeMap<u64, (u32, usize)>,
    /// Each worker's current belief: (incarnation, leader, term, line, time).
    belief: BTreeMap<u32, (u32, u32, u64, usize, u64)>,
    /// Time of the record after which the current agreement held (reset on change).
    agreed_since: Option<u64>,
    first_t: Option<u64>,
    /// When the supervisor started the workers (the `START` line), if it says.
    start_t: Option<u64>,
    /// When the supervisor judged the run settled (the `END` line), if it says.
    end_t: Option<u64>,
    /// Pairs of workers that both believe themselves leader, while it lasts.
    overlaps: BTreeMap<(u32, u32), Overlap>,
    /// Each worker's partners in `overlaps`, so a record looks only at its own pairs.
    partners: BTreeMap<u32, BTreeSet<u32>>,
    /// Overlaps a kill ends: (the first kill of either since it began, pair, since).
    /// A record looks at those due by its time, not at every overlap: a file of 256
    /// self-declared leaders has 32,640 pairs.
    kills_due: BinaryHeap<Reverse<KillDue>>,
}

/// When a kill ends an overlap: (due, pair, the overlap's `since`).
type KillDue = (u64, (u32, u32), u64);

/// Two workers both believing themselves leader (see [`Rules::overlap_ns`]).
#[derive(Clone, Copy, Debug)]
struct Overlap {
    /// When the second declared itself, and on which line.
    since: u64,
    line: usize,
    /// The one that declared second, and its term.
    new: (u32, u64),
    /// The one that already led: its term and the line it declared on.
    old: (u32, u64, usize),
}

impl Judge {
    fn flag(&mut self, kind: &'static str, line: usize, detail: String) {
        self.report.flag(kind, line, detail);
    }

    /// End the overlaps of two self-believed leaders that are over by time `now` (one of
    /// the two follows someone else, or was killed), and flag those that lasted too long.
    /// With `now` = `u64::MAX`, at the end of the file, the rest are still going on.
    /// Only the pairs that can have changed are looked at: those of `who`, whose belief
    /// just changed, if it no longer leads, and those a kill due by `now` ends; at the
    /// end, all. So each pair is looked at about once, not on every record.
    fn settle_overlaps(&mut self, now: u64, who: Option<u32>, lives: &Lives, rules: Rules) {
        let mut looked: BTreeSet<(u32, u32)> = BTreeSet::new();
        if now == u64::MAX {
            looked.extend(self.overlaps.keys());
        }
        // A pair ends by belief only when one of the two stops leading.
        if let Some(w) = who.filter(|w| self.belief.get(w).is_none_or(|b| b.1 != *w)) {
            looked.extend(self.partners.get(&w).into_iter().flatten().map(|&o| (w.min(o), w.max(o))));
        }
        while let Some(&Reverse((due, pair, since))) = self.kills_due.peek() {
            if due > now {
                break;
            }
            self.kills_due.pop();
            if self.overlaps.get(&pair).is_some_and(|o| o.since == since) {
                looked.insert(pair);
            }
        }
        let mut over = Vec::new();
        for (&(a, b), o) in looked.iter().filter_map(|p| self.overlaps.get_key_value(p)) {
            let leads = |w: u32| self.belief.get(&w).is_some_and(|b| b.1 == w);
            let killed = |w: u32| Lives::last(lives.kills.get(&w), now).filter(|&k| k >= o.since);
            let end = match (killed(a).into_iter().chain(killed(b)).min(), leads(a) && leads(b)) {
                (Some(k), _) => Some(k),
                (None, false) => Some(now),
                (None, true) if now == u64::MAX => None,
                (None, true) => continue,
            };
            over.push(((a, b), end));
        }
        for (pair, end) in over {
            let Some(o) = self.overlaps.remove(&pair) else { continue };
            for (x, y) in [(pair.0, pair.1), (pair.1, pair.0)] {
                if let Some(set) = self.partners.get_mut(&x) {
                    set.remove(&y);
                }
            }
            let (w, term) = o.new;
            let (rival, rival_term, at) = o.old;
            let grace = rules.overlap_ns as f64 / 1e6;
            match end {
                Some(end) if end.saturating_sub(o.since) <= rules.overlap_ns => {}
                Some(end) => self.flag(
                    "two-leaders",
                    o.line,
                    format!(
                        "w{w} believed itself leader (term {term}) while w{rival} did (term {rival_term}, \
                         line {at}) for {:.1} ms, longer than the {grace} ms a handover may take",
                        end.saturating_sub(o.since) as f64 / 1e6
                    ),
                ),
                None => self.flag(
                    "two-leaders",
                    o.line,
                    format!(
                        "w{w} believes itself leader (term {term}) while w{rival} does (term {rival_term}, \
                         line {at}), and both still do at the end"
                    ),
                ),
            }
        }
    }

    fn record(&mut self, line: usize, r: LeaderRecord, lives: &Lives, rules: Rules) {
        self.report.records += 1;
        self.first_t.get_or_insert(r.t);
        match self.terms.get(&r.term) {
            Some(&(other, at)) if other != r.leader => self.flag(
                "split-brain",
                line,
                format!(
                    "w{} accepted w{} for term {}, which line {at} gave to w{other}",
                    r.w, r.leader, r.term
                ),
            ),
            Some(_) => {}
            None => {
                self.terms.insert(r.term, (r.leader, line));
            }
        }
        if let Some(&(inc, _, term, at, _)) = self.belief.get(&r.w) {
            if inc == r.inc && r.term <= term {
                self.flag(
                    "term-backwards",
                    line,
                    format!("w{} accepted term {} after term {term} at line {at}", r.w, r.term),
                );
            }
        }
        self.belief.insert(r.w, (r.inc, r.leader, r.term, line, r.t));
        self.settle_overlaps(r.t, Some(r.w), lives, rules);
        // Two live workers that each believe themselves leader from this moment.
        if r.leader == r.w {
            let rivals: Vec<(u32, u64, usize)> = self
                .belief
                .iter()
                .filter(|(&o, &(_, leader, _, _, since))| {
                    // Killed in the life that wrote its belief: a line written between a
                    // kill's stamp and its signal is that dying life's.
                    o != r.w && leader == o && !lives.killed_between(o, lives.life_began(o, since), r.t)
                })
                .map(|(&o, &(_, _, term, at, _))| (o, term, at))
                .collect();
            for (o, term, at) in rivals {
                let pair = (r.w.min(o), r.w.max(o));
                if rules.overlap_ns == 0 {
                    self.flag(
                        "two-leaders",
                        line,
                        format!(
                            "w{} believes itself leader (term {}) while w{o} does (term {term}, line {at})",
                            r.w, r.term
                        ),
                    );
                } else if let std::collections::btree_map::Entry::Vacant(slot) = self.overlaps.entry(pair) {
                    let since = r.t;
                    slot.insert(Overlap { since, line, new: (r.w, r.term), old: (o, term, at) });
                    self.partners.entry(r.w).or_default().insert(o);
                    self.partners.entry(o).or_default().insert(r.w);
                    let first_kill =
                        [r.w, o].into_iter().filter_map(|w| lives.first_kill_from(w, since)).min();
                    if let Some(due) = first_kill {
                        self.kills_due.push(Reverse((due, pair, since)));
                    }
                }
            }
        }
        // Timed from the record that completed the agreement in force; a break resets it.
        self.agreed_since = if self.all_agree(lives, r.t) { self.agreed_since.or(Some(r.t)) } else { None };
    }

    /// Every worker alive at time `now` holds a belief formed in its current life, and
    /// they all name the same leader.
    fn all_agree(&self, lives: &Lives, now: u64) -> bool {
        let mut first = None;
        for w in 0..self.report.workers {
            if lives.dead_at(w, now) {
                continue;
            }
            let leader = match self.belief.get(&w) {
                Some(b) if b.4 >= lives.life_began(w, now) => b.1,
                _ => return false,
            };
            if *first.get_or_insert(leader) != leader {
                return false;
            }
        }
        first.is_some()
    }

    fn finish(mut self, lives: &Lives, rules: Rules) -> ElectionReport {
        self.settle_overlaps(u64::MAX, None, lives, rules);
        let n = self.report.workers.max(self.belief.keys().max().map_or(0, |m| m + 1));
        let last_restart = |w: u32| lives.life_began(w, u64::MAX);
        let alive: Vec<u32> = (0..n).filter(|&w| !lives.dead_at(w, u64::MAX)).collect();
        let beliefs: Vec<(u32, Option<u32>)> = alive
            .iter()
            .map(|&w| {
                // A belief from before the last restart is the old life's, not this one's.
                let b = self.belief.get(&w).filter(|b| b.4 >= last_restart(w)).map(|b| b.1);
                (w, b)
            })
            .collect();
        let named: Vec<u32> = beliefs.iter().filter_map(|b| b.1).collect();
        let agreed =
            named.first().copied().filter(|&l| named.len() == beliefs.len() && named.iter().all(|&x| x == l));
        match agreed {
            Some(l) => {
                let term = self.belief.values().filter(|b| b.1 == l).map(|b| b.2).max().unwrap_or(0);
                if alive.contains(&l) {
                    self.report.leader = Some((l, term));
                } else {
                    self.flag(
                        "no-leader",
                        0,
                        format!("every live worker names w{l}, which is dead at the end"),
                    );
                }
                // A dead leader is `no-leader` above, not an agreed one to rank.
                if rules.highest_wins && alive.contains(&l) && alive.last().is_some_and(|&h| h != l) {
                    let h = alive.last().copied().unwrap_or(l);
                    self.flag(
                        "not-highest",
                        0,
                        format!("the agreed leader is w{l}, but w{h} is the highest live id"),
                    );
                }
            }
            None if named.is_empty() => {
                self.flag("no-leader", 0, "no live worker names a leader at the end".into())
            }
            None => {
                let list: Vec<String> = beliefs
                    .iter()
                    .map(|(w, b)| match b {
                        Some(l) => format!("w{w} names w{l}"),
                        None => format!("w{w} names nobody"),
                    })
                    .collect();
                self.flag("disagreement", 0, format!("at the end {}", list.join(", ")));
            }
        }
        let from = lives.last_fault.or(self.start_t).or(self.first_t);
        // Without a live leader agreed at the end, an agreement from earlier is no
        // election's time (it once read "elected in 0.00 ms" for a dead leader).
        let since = self.agreed_since.filter(|_| self.report.leader.is_some());
        if let (Some(since), Some(from)) = (since, from) {
            let took = since.saturating_sub(from);
            self.report.time_to_agree_ms = Some(took as f64 / 1e6);
            if let Some(bound) = rules.bound_ns.filter(|&b| took > b) {
                self.flag(
                    "slow-election",
                    0,
                    format!(
                        "agreement took {:.1} ms, beyond the bound of {:.1} ms",
                        took as f64 / 1e6,
                        bound as f64 / 1e6
                    ),
                );
            }
        }
        self.report.terms = self.terms.len();
        self.report.workers = n;
        self.report.ok = self.report.violation_count == 0;
        self.report.split.safety_ok = self.report.split.safety_violations == 0;
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::Crash;

    fn judge(body: &str, faults: &FaultLog, rules: Rules) -> ElectionReport {
        let text = format!("{LEADERS_HEADER} algo=bully workers=4\n{body}");
        audit_leaders(text.as_bytes(), faults, rules).unwrap()
    }

    fn kinds(r: &ElectionReport) -> Vec<&'static str> {
        r.violations.iter().map(|v| v.kind).collect()
    }

    fn rec(w: u32, leader: u32, term: u64, t: u64) -> String {
        format!("{}\n", LeaderRecord { w, inc: 0, leader, term, t })
    }

    /// Everyone names w3 in term 1.
    fn clean() -> String {
        (0..4).map(|w| rec(w, 3, 1, 10 + u64::from(w))).collect()
    }

    #[test]
    fn records_round_trip_and_bad_ones_are_named() {
        let r = LeaderRecord { w: 2, inc: 1, leader: 3, term: 7, t: 99 };
        assert_eq!(r.to_string().parse::<LeaderRecord>(), Ok(r));
        for bad in [
            "LEADER w=2",
            "LEADER w=x inc=0 leader=1 term=1 t=1",
            "LEAD w=1",
            "LEADER w=1 inc=0 leader=1 term=1 t=1 x",
        ] {
            assert!(bad.parse::<LeaderRecord>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_clean_election_agrees_on_the_highest() {
        let r = judge(&clean(), &FaultLog::default(), Rules { highest_wins: true, ..Rules::default() });
        assert!(r.ok, "{:?}", r.violations);
        assert_eq!(r.leader, Some((3, 1)));
        assert_eq!((r.records, r.terms), (4, 1));
        assert_eq!(
            r.time_to_agree_ms,
            Some(3e-6),
            "3 ns, from the first record to the one completing agreement"
        );
    }

    /// The leader killed, and the run over before anyone suspected it (a detector slower
    /// than the stall window): every live worker still names it. No leader was agreed
    /// and no election timed; this once reported w3 as agreed, elected in 0 ms.
    #[test]
    fn a_dead_leader_named_by_every_live_worker_is_no_agreement_and_no_time() {
        let faults = FaultLog { crashes: vec![Crash::at(3, 100)], ..FaultLog::default() };
        let r = judge(&clean(), &faults, Rules { highest_wins: true, ..Rules::default() });
        assert_eq!(kinds(&r), ["no-leader"], "not also 'the agreed leader is w3': {:?}", r.violations);
        assert_eq!((r.leader, r.time_to_agree_ms), (None, None));
        // Negative control: a follower killed leaves the agreement and its time.
        let faults = FaultLog { crashes: vec![Crash::at(1, 100)], ..FaultLog::default() };
        let r = judge(&clean(), &faults, Rules::default());
        assert!(r.ok, "{:?}", r.violations);
        assert_eq!(r.leader, Some((3, 1)));
        assert!(r.time_to_agree_ms.is_some());
    }

    /// `elect --algo bully -n 32 --faults 'kill leader at 3s'` (seed 10, 6 of 60 such
    /// runs on a loaded machine): every live worker followed w3 when the run settled;
    /// while the supervisor froze the workers one by one, w2, not frozen yet, heard
    /// nothing from w3, suspected it and elected itself, 114 ms after. That record was
    /// judged as the run's end: `disagreement` and `two-leaders` for a run that ended
    /// agreed. After the supervisor's `END` it is the teardown's: counted, not judged.
    #[test]
    fn a_record_stamped_after_the_end_is_the_teardowns_and_not_judged() {
        let late = format!("{}{}", rec(2, 2, 7, 500), rec(0, 2, 7, 501));
        let rules = Rules { highest_wins: true, overlap_ns: 1, ..Rules::default() };
        // Negative control: without the END line, the same records are findings.
        let r = judge(&format!("{}{late}", clean()), &FaultLog::default(), rules);
        assert!(kinds(&r).contains(&"disagreement"), "{:?}", r.violations);
        assert!(kinds(&r).contains(&"two-leaders"), "{:?}", r.violations);
        let r = judge(&format!("{}END t=100\n{late}", clean()), &FaultLog::default(), rules);
        assert!(r.ok, "{:?}", r.violations);
        assert_eq!((r.leader, r.records, r.after_end), (Some((3, 1)), 4, 2));
        // A record stamped before the END is the run's, wherever it lands in the file.
        let r = judge(&format!("{}END t=100\n{}", clean(), rec(2, 2, 7, 99)), &FaultLog::default(), rules);
        assert!(kinds(&r).contains(&"disagreement"), "{:?}", r.violations);
        // A second END, or one that is no time, is no supervisor's.
        let r = judge(&format!("{}END t=100\nEND t=x\nEND t=200\n", clean()), &FaultLog::default(), rules);
        assert_eq!(kinds(&r), ["corrupt-record", "corrupt-record"], "{:?}", r.violations);
    }

    #[test]
    fn two_leaders_for_one_term_is_split_brain() {
        let body = format!("{}{}", rec(0, 2, 1, 10), rec(1, 3, 1, 11));
        assert!(kinds(&judge(&body, &FaultLog::default(), Rules::default())).contains(&"split-brain"));
    }

    #[test]
    fn two_live_self_leaders_at_once_are_caught_unless_one_is_dead() {
        let body = format!("{}{}", rec(2, 2, 1, 10), rec(3, 3, 2, 20));
        let r = judge(&body, &FaultLog::default(), Rules::default());
        assert!(kinds(&r).contains(&"two-leaders"), "{:?}", r.violations);
        // w2 was killed before w3 declared: no rival.
        let faults = FaultLog { crashes: vec![Crash::at(2, 15)], ..FaultLog::default() };
        let r = judge(&body, &faults, Rules::default());
        assert!(!kinds(&r).contains(&"two-leaders"), "{:?}", r.violations);
    }

    #[test]
    fn a_record_written_while_its_worker_was_being_killed_is_no_rival() {
        // The kill is stamped before its signal; a worker may write a line between the
        // two (a loaded machine). That line is its dying life's, which the kill ended.
        let faults = FaultLog { crashes: vec![Crash::at(2, 15)], ..FaultLog::default() };
        let body = format!("{}{}", rec(2, 2, 1, 16), rec(3, 3, 2, 40_000_000));
        for rules in [Rules::default(), Rules { overlap_ns: 1_000_000, ..Rules::default() }] {
            let r = judge(&body, &faults, rules);
            assert!(!kinds(&r).contains(&"two-leaders"), "{:?}", r.violations);
        }
    }

    #[test]
    fn a_handover_may_overlap_briefly_but_a_long_or_lasting_overlap_is_caught() {
        let rules = Rules { overlap_ns: 100, ..Rules::default() };
        // w3 declares at 20; w2 hears of it at 60 (40 ns of overlap): a handover.
        let quick = format!("{}{}{}", rec(2, 2, 1, 10), rec(3, 3, 7, 20), rec(2, 3, 7, 60));
        let r = judge(&quick, &FaultLog::default(), rules);
        assert!(!kinds(&r).contains(&"two-leaders"), "{:?}", r.violations);
        // The same 200 ns later: too long (a paused leader that woke still leading).
        let slow = format!("{}{}{}", rec(2, 2, 1, 10), rec(3, 3, 7, 20), rec(2, 3, 7, 220));
        let r = judge(&slow, &FaultLog::default(), rules);
        assert_eq!(kinds(&r)[0], "two-leaders", "{:?}", r.violations);
        assert!(r.violations[0].detail.contains("for 0.0 ms"), "{}", r.violations[0].detail);
        assert_eq!(r.violations[0].line, 3, "flagged where the second declared itself");
        // Never resolved: both still lead at the end.
        let lasting = format!("{}{}", rec(2, 2, 1, 10), rec(3, 3, 7, 20));
        let r = judge(&lasting, &FaultLog::default(), rules);
        assert!(r.violations.iter().any(|v| v.detail.contains("at the end")), "{:?}", r.violations);
        // Ended by a kill of the old leader within the grace: fine; after it: caught.
        let killed = |t| FaultLog { crashes: vec![Crash::at(2, t)], ..FaultLog::default() };
        assert!(!kinds(&judge(&lasting, &killed(90), rules)).contains(&"two-leaders"));
        assert!(kinds(&judge(&lasting, &killed(500), rules)).contains(&"two-leaders"));
    }

    /// The header's `handover_ms=` lets a handover take the run's reply time; without
    /// it (the negative control) the same overlap is caught.
    #[test]
    fn the_headers_handover_time_raises_the_allowance() {
        let rules = Rules { overlap_ns: 250_000_000, ..Rules::default() };
        // w3 declares at 0.1 s; w2, which led, hears of it 0.6 s later.
        let body = format!("{}{}{}", rec(2, 2, 1, 10), rec(3, 3, 7, 100_000_000), rec(2, 3, 7, 700_000_000));
        let with = |header: &str| {
            let text = format!("{LEADERS_HEADER} algo=bully workers=4{header}\n{body}");
            audit_leaders(text.as_bytes(), &FaultLog::default(), rules).unwrap()
        };
        assert!(kinds(&with("")).contains(&"two-leaders"), "250 ms: too long");
        assert!(kinds(&with(" handover_ms=384")).contains(&"two-leaders"), "384 ms: too long");
        let r = with(" handover_ms=1306");
        assert!(!kinds(&r).contains(&"two-leaders"), "{:?}", r.violations);
        // It only raises: a smaller one keeps the auditor's own.
        let quick = format!("{}{}{}", rec(2, 2, 1, 10), rec(3, 3, 7, 20), rec(2, 3, 7, 200_000_000));
        let text = format!("{LEADERS_HEADER} algo=bully workers=4 handover_ms=1\n{quick}");
        let r = audit_leaders(text.as_bytes(), &FaultLog::default(), rules).unwrap();
        assert!(!kinds(&r).contains(&"two-leaders"), "{:?}", r.violations);
        // Not a number: a corrupt header.
        assert!(kinds(&with(" handover_ms=soon")).contains(&"corrupt-record"));
    }

    #[test]
    fn a_term_going_back_is_caught() {
        let body = format!("{}{}", rec(0, 3, 2, 10), rec(0, 2, 1, 11));
        assert!(kinds(&judge(&body, &FaultLog::default(), Rules::default())).contains(&"term-backwards"));
    }

    #[test]
    fn disagreement_no_leader_and_not_highest_are_caught() {
        let body = format!("{}{}{}", rec(0, 3, 1, 10), rec(1, 3, 1, 11), rec(2, 2, 2, 12));
        let r = judge(&body, &FaultLog::default(), Rules::default());
        assert!(kinds(&r).contains(&"disagreement"), "{:?}", r.violations);
        assert!(r.violations.iter().any(|v| v.detail.contains("w3 names nobody")), "{:?}", r.violations);
        let r = judge("", &FaultLog::default(), Rules::default());
        assert_eq!(kinds(&r), ["no-leader"]);
        // All agree on w2, but w3 is alive: fine without the rule, caught with it.
        let body: String = (0..4).map(|w| rec(w, 2, 1, 10)).collect();
        assert!(judge(&body, &FaultLog::default(), Rules::default()).ok);
        let r = judge(&body, &FaultLog::default(), Rules { highest_wins: true, ..Rules::default() });
        assert_eq!(kinds(&r), ["not-highest"]);
    }

    #[test]
    fn after_the_leader_is_killed_the_survivors_must_agree_on_a_new_one() {
        // w3 led, was killed at 50; w0..w2 then agree on w2 in term 2.
        let faults = FaultLog { crashes: vec![Crash::at(3, 50)], ..FaultLog::default() };
        let after: String = (0..3).map(|w| rec(w, 2, 2, 60 + u64::from(w))).collect();
        let r = judge(
            &format!("{}{after}", clean()),
            &faults,
            Rules { highest_wins: true, bound_ns: Some(100), ..Rules::default() },
        );
        assert!(r.ok, "{:?}", r.violations);
        assert_eq!(r.leader, Some((2, 2)));
        assert_eq!(r.time_to_agree_ms, Some(12e-6));
        // Still naming the dead w3 at the end: no leader.
        let r = judge(&clean(), &faults, Rules::default());
        assert_eq!(kinds(&r), ["no-leader"]);
        // Too slow for the bound.
        let r = judge(
            &format!("{}{after}", clean()),
            &faults,
            Rules { highest_wins: true, bound_ns: Some(5), ..Rules::default() },
        );
        assert_eq!(kinds(&r), ["slow-election"]);
        // w3 restarted at 70 and never told who leads: it names nobody.
        let restarted = FaultLog { restarts: vec![(3, 70)], ..faults.clone() };
        let r = judge(&format!("{}{after}", clean()), &restarted, Rules::default());
        assert!(kinds(&r).contains(&"disagreement"), "{:?}", r.violations);
    }

    #[test]
    fn torn_and_corrupt_lines_are_findings() {
        let body = format!(
            "{}LEADER w=99999 inc=0 leader=1 term=1 t=1\nnonsense\n{}",
            clean(),
            "LEADER w=1 inc=0 lea"
        );
        let r = judge(&body, &FaultLog::default(), Rules::default());
        assert_eq!(kinds(&r), ["corrupt-record", "corrupt-record", "torn-record"]);
        assert!(audit_leaders("# mutexlab resource v1\n".as_bytes(), &FaultLog::default(), Rules::default())
            .is_err());
    }

    #[test]
    fn a_leader_or_worker_outside_the_run_is_corrupt_not_agreed() {
        // Everyone names w99 in a 4-worker run, and a w4 says so too: nobody can be w99,
        // nobody is w4, so none of it counts, and no leader was agreed.
        let body: String = (0..5).map(|w| rec(w, 99, 1, 10 + u64::from(w))).collect();
        let r = judge(&body, &FaultLog::default(), Rules::default());
        assert_eq!(
            kinds(&r),
            ["corrupt-record"; 5].iter().chain(&["no-leader"]).copied().collect::<Vec<_>>()
        );
        assert_eq!((r.workers, r.leader, r.records), (4, None, 0));
    }

    #[test]
    fn a_long_header_field_is_quoted_only_in_part() {
        let long = "x".repeat(3000);
        let text = format!("{LEADERS_HEADER} algo={long} workers={long}\n");
        let r = audit_leaders(text.as_bytes(), &FaultLog::default(), Rules::default()).unwrap();
        assert!(r.algorithm.as_ref().unwrap().len() < 2 * crate::audit::EXCERPT, "{:?}", r.algorithm);
        assert!(r.violations[0].detail.len() < 2 * crate::audit::EXCERPT, "{}", r.violations[0].detail);
    }
}
