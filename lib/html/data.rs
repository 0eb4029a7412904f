//! What the report draws, read from the run directory's files: the sections and waits
//! of the resource file, the leaders of the leader file, the faults of the fault log and
//! the lines the auditor's findings point at.
//!
//! Records are parsed by the types that write them ([`Record`], [`LeaderRecord`]); the
//! verdict is the auditor's, never recomputed here. Lines are read through a bounded
//! buffer, like the auditor's: a line longer than any record is skipped unread.
//!
//! Memory is bounded by what the page can show, not by the files: bars (sections,
//! waits) are kept up to [`KEEP_BARS`], beyond which bars of a lane that nearly touch
//! are merged into one, with a gap that grows as needed ([`Bars`]); marks (leaders,
//! refusals, faults) are kept up to a cap, beyond which one in k is kept ([`Sampled`]);
//! the wait histograms are bins per worker; and only the lines findings name are kept.
//! Every reader keeps a count of what it saw, so the page can say what it left out.
//! Time is linear in the files' size: pauses and downtimes are paired with what ends
//! them in one pass, with one open span per worker.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use crate::audit::lines::Lines;
use crate::audit::{FaultLine, LeaderRecord, Violation, MAX_LINE};
use crate::resource::{Fence, Record, Stage};
use crate::supervisor::{StallRecord, MAX_WORKERS};
use crate::text::clip_to;

pub(crate) use super::bars::{Bars, Span, MAX_BARS, WIDTH};

/// How many bytes of a listed line the page quotes.
const QUOTE: usize = 300;

/// How many leaders, refusals, fault lines, or pauses and downtimes are kept; beyond it,
/// one in k is.
pub(crate) const KEEP_MARKS: usize = 4000;

/// Bins of each worker's wait histogram.
pub(crate) const HIST_BINS: usize = 24;

/// One critical section as the resource file shows it, or several merged into one bar.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Section {
    pub w: u32,
    pub e: u64,
    pub fence: Fence,
    /// The WANT that asked for it, if the file has one.
    pub want: Option<u64>,
    pub enter: u64,
    /// None: never left (killed inside, or the run was cut short).
    pub exit: Option<u64>,
    /// The ENTER's line in the file.
    pub line: usize,
    /// How many sections this bar holds (1 unless merged).
    pub count: usize,
    /// A finding points at one of them.
    pub bad: bool,
}

impl Section {
    /// Wait from WANT to ENTER, in ns.
    pub fn wait(&self) -> Option<u64> {
        self.want.map(|w| self.enter.saturating_sub(w))
    }
}

/// A wait from WANT to ENTER (`enter` None: never served), or several merged.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Wait {
    pub w: u32,
    pub e: u64,
    pub want: u64,
    pub enter: Option<u64>,
    pub count: usize,
}

/// A write a fenced resource refused (`run --fenced`): its fence was older than `over`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Refusal {
    pub w: u32,
    pub e: u64,
    /// The EXIT was refused (else the ENTER).
    pub exit: bool,
    pub fence: Fence,
    pub over: Fence,
    pub t: u64,
}

/// One line of the fault log, as the report marks it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FaultMark {
    pub t: u64,
    /// `kill`, `term`, `stop`, `cont`, `restart`, `partition`, `heal`, `teardown`, `skip`.
    pub action: String,
    pub w: Option<u32>,
    /// The supervisor's note (after `#`), for the hover text.
    pub note: String,
}

/// A stretch of a worker's life: paused (stop to cont) or down (kill or term to
/// restart); `to` None: to the end of the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pause {
    pub w: u32,
    pub down: bool,
    pub from: u64,
    pub to: Option<u64>,
}

/// A leader accepted, from the leader file.
pub(crate) type Leader = LeaderRecord;

/// A stalled run's diagnosis, from the run directory's [`STALL_FILE`](crate::supervisor::STALL_FILE).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct StallMark {
    /// When it was diagnosed, ns.
    pub t: u64,
    pub text: String,
    /// The waits-for cycles, each worker waiting for the next (and the last for the
    /// first); workers below [`MAX_WORKERS`], at most [`MAX_CYCLES`] cycles.
    pub deadlocks: Vec<Vec<u32>>,
}

/// The most bytes of [`STALL_FILE`](crate::supervisor::STALL_FILE) read: a diagnosis is a line per worker.
const STALL_BYTES: u64 = 512 * 1024;
/// The most cycles a page draws.
const MAX_CYCLES: usize = 64;

pub(crate) use super::events::Hold;
/// A message between two workers, from the trace.
pub(crate) use super::events::Msg as Arrow;

impl Span for Section {
    fn lane(&self) -> u32 {
        self.w
    }
    fn from(&self) -> u64 {
        self.enter
    }
    fn to(&self) -> u64 {
        self.exit.unwrap_or(u64::MAX)
    }
    fn absorb(&mut self, o: Section) {
        self.want = match (self.want, o.want) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.enter = self.enter.min(o.enter);
        self.exit = self.exit.zip(o.exit).map(|(a, b)| a.max(b));
        self.count += o.count;
        self.bad |= o.bad;
    }
}

impl Span for Hold {
    fn lane(&self) -> u32 {
        self.w
    }
    fn from(&self) -> u64 {
        self.from
    }
    fn to(&self) -> u64 {
        self.to.unwrap_or(u64::MAX)
    }
    fn absorb(&mut self, o: Hold) {
        self.from = self.from.min(o.from);
        self.to = self.to.zip(o.to).map(|(a, b)| a.max(b));
        self.count += o.count;
    }
}

impl Span for Wait {
    fn lane(&self) -> u32 {
        self.w
    }
    fn from(&self) -> u64 {
        self.want
    }
    fn to(&self) -> u64 {
        self.enter.unwrap_or(u64::MAX)
    }
    fn absorb(&mut self, o: Wait) {
        self.want = self.want.min(o.want);
        self.enter = self.enter.zip(o.enter).map(|(a, b)| a.max(b));
        self.count += o.count;
    }
}

/// Marks in file order, at most a cap of them: past it, one in k is kept (k doubling),
/// so what is kept is spread over the whole file.
#[derive(Debug)]
pub(crate) struct Sampled<T> {
    items: Vec<(u64, T)>,
    cap: usize,
    stride: u64,
    /// Marks pushed, kept or not.
    pub seen: u64,
}

impl<T> Sampled<T> {
    pub fn new(cap: usize) -> Sampled<T> {
        Sampled { items: Vec::new(), cap, stride: 1, seen: 0 }
    }

    pub fn push(&mut self, item: T) {
        if self.seen.is_multiple_of(self.stride) {
            self.items.push((self.seen, item));
            if self.items.len() > self.cap {
                self.stride *= 2;
                let stride = self.stride;
                self.items.retain(|(i, _)| i.is_multiple_of(stride));
            }
        }
        self.seen += 1;
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().map(|(_, x)| x)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }
}

impl<T> Default for Sampled<T> {
    fn default() -> Sampled<T> {
        Sampled::new(KEEP_MARKS)
    }
}

/// Each worker's waits as counts in [`HIST_BINS`] bins on a log scale from
/// [`Hist::low`] to `max` ns (a wait below the low end counts in the first bin): one
/// pause of seconds leaves the waits of microseconds their own bins.
#[derive(Debug, Default)]
pub(crate) struct Hist {
    pub max: u64,
    pub bins: BTreeMap<u32, [u64; HIST_BINS]>,
}

impl Hist {
    /// The low end of the scale, ns: 1 µs, or a tenth of the longest wait if shorter.
    pub fn low(&self) -> f64 {
        (self.max as f64 / 10.0).clamp(1.0, 1000.0)
    }

    /// Where `ns` falls on the scale, from 0 (the low end or below) to 1 (the longest).
    pub fn at(&self, ns: f64) -> f64 {
        let (lo, hi) = (self.low(), (self.max as f64).max(self.low() * 1.0001));
        ((ns.max(lo) / lo).ln() / (hi / lo).ln()).clamp(0.0, 1.0)
    }

    /// The wait (ns) at position `f` of the scale.
    pub fn ns_at(&self, f: f64) -> f64 {
        let (lo, hi) = (self.low(), (self.max as f64).max(self.low() * 1.0001));
        lo * (hi / lo).powf(f)
    }

    fn record(&mut self, w: u32, wait: u64) {
        let i = (self.at(wait as f64) * HIST_BINS as f64) as usize;
        self.bins.entry(w).or_insert([0; HIST_BINS])[i.min(HIST_BINS - 1)] += 1;
    }
}

/// Everything the diagram needs, in monotonic ns.
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    pub sections: Bars<Section>,
    pub waits: Bars<Wait>,
    pub unserved: Bars<Wait>,
    pub hist: Hist,
    pub refused: Sampled<Refusal>,
    pub leaders: Sampled<Leader>,
    pub faults: Sampled<FaultMark>,
    pub pauses: Sampled<Pause>,
    /// The fault log says the run was interrupted (a `teardown # interrupted` line).
    pub interrupted: bool,
    /// The messages drawn: at most the diagram's limit of the trace's, one in
    /// `arrow_stride`.
    pub arrows: Vec<Arrow>,
    pub arrow_stride: u64,
    /// All the trace's messages, and by type.
    pub messages: u64,
    pub message_types: BTreeMap<String, u64>,
    /// What the trace's reader skipped (torn lines and the like), one line each.
    pub trace_notes: Vec<String>,
    /// The records findings point at, by line number: (worker, time).
    pub at_line: BTreeMap<usize, (u32, u64)>,
    /// The lines findings point at: number → text (clipped).
    pub listed: BTreeMap<usize, String>,
    /// The leader file's START, if any.
    pub start: Option<u64>,
    /// Why the trace present could not be drawn, if it could not.
    pub trace_error: Option<String>,
    /// The run's start as the fault log gives it (a line's `t` less its `at`): the
    /// origin of the times the text summary prints.
    pub origin: Option<u64>,
    /// The logical diagram's windows, and the contents of their messages.
    pub windows: Vec<super::events::Window>,
    pub bodies: std::collections::HashMap<(u32, u32, u64, bool), String>,
    /// The node states of the windows' messages (`run --states`).
    pub states: super::events::NodeStates,
    /// All the trace's events, and its messages by (sender, receiver).
    pub events: u64,
    pub pairs: BTreeMap<(u32, u32), u64>,
    /// Messages by type in stretches of the run, for the aggregate view.
    pub slices: Vec<super::events::Slice>,
    /// Who held the token when, from every TOKEN in the trace.
    pub holds: Bars<Hold>,
    /// The workers that sent a GRANT (at most two kept: one is the coordinator).
    pub granters: BTreeSet<u32>,
    /// What became of the windows' messages received after them, or never.
    pub fates: std::collections::HashMap<crate::trace::MsgId, super::events::Fate>,
    /// The stall's diagnosis, if the run stalled; why it could not be read, if not.
    pub stall: Option<StallMark>,
    pub stall_error: Option<String>,
}

impl Timeline {
    /// The earliest and latest time of anything drawn; `None` if nothing is.
    pub fn span(&self) -> Option<(u64, u64)> {
        self.times().into_iter().fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((lo, hi)) => Some((lo.min(t), hi.max(t))),
        })
    }

    /// The time of everything drawn (bounded as what is drawn is), in no order.
    pub fn times(&self) -> Vec<u64> {
        self.sections
            .iter()
            .flat_map(|s| [s.want, Some(s.enter), s.exit])
            .flatten()
            .chain(self.unserved.iter().map(|u| u.want))
            .chain(self.refused.iter().map(|r| r.t))
            .chain(self.leaders.iter().map(|l| l.t))
            .chain(self.faults.iter().map(|f| f.t))
            .chain(self.arrows.iter().flat_map(|a| [Some(a.sent), a.received.map(|r| r.0)]).flatten())
            .chain(self.pauses.iter().flat_map(|p| [Some(p.from), p.to]).flatten())
            .chain(self.holds.iter().flat_map(|h| [Some(h.from), h.to]).flatten())
            .chain(self.start)
            .chain(self.stall.as_ref().map(|s| s.t))
            .collect()
    }
}

/// The line numbers a finding points at: its own, and any `line N` its text names.
pub(crate) fn lines_named(v: &Violation) -> Vec<usize> {
    let mut out = vec![v.line];
    let mut rest = v.detail.as_str();
    while let Some(i) = rest.find("line ") {
        rest = &rest[i + 5..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse() {
            out.push(n);
        }
    }
    out.retain(|&n| n > 0);
    out
}

/// Call `f` with each line of `src` (1-based number, text), read through the auditor's
/// bounded reader: a line longer than [`MAX_LINE`] is passed as empty, as no record is
/// that long.
pub(crate) fn each_line(src: impl Read, mut f: impl FnMut(usize, &str)) -> std::io::Result<()> {
    let mut lines = Lines::new(src, Vec::new());
    let mut n = 0;
    while lines.next()?.is_some() {
        n += 1;
        if lines.len > MAX_LINE as u64 {
            f(n, "");
        } else {
            f(n, &String::from_utf8_lossy(&lines.kept));
        }
    }
    Ok(())
}

/// A line as the listing quotes it: at most [`QUOTE`] bytes, never splitting a character.
fn clip(text: &str) -> String {
    clip_to(text, QUOTE).into_owned()
}

/// What the page wants from the resource or leader file besides what it draws.
pub(crate) struct Wanted<'a> {
    /// Lines the findings name: listed in full (clipped) and placed on the diagram.
    pub lines: &'a BTreeSet<usize>,
    /// Lines the findings are at: the sections they mark are red.
    pub flagged: &'a BTreeSet<usize>,
}

/// Read the resource file's sections and waits (the histograms on a scale up to
/// `tl.hist.max`), and keep the lines wanted.
pub(crate) fn read_resource(src: impl Read, wanted: &Wanted, tl: &mut Timeline) -> std::io::Result<()> {
    // Each worker's request not yet granted, and section not yet left: one each, so
    // memory is bounded by the workers, not by the records.
    let mut wants: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    let mut open: BTreeMap<u32, Section> = BTreeMap::new();
    each_line(src, |n, text| {
        if wanted.lines.contains(&n) {
            tl.listed.insert(n, clip(text));
        }
        // A worker no run can have is the auditor's finding, not a lane.
        let Ok(rec) = text.parse::<Record>() else { return };
        if rec.worker() >= MAX_WORKERS {
            return;
        }
        if wanted.lines.contains(&n) {
            tl.at_line.insert(n, (rec.worker(), rec.time()));
        }
        match rec {
            Record::Want { w, e, t } => {
                if let Some((e, want)) = wants.insert(w, (e, t)) {
                    tl.unserved.push(Wait { w, e, want, enter: None, count: 1 });
                }
            }
            Record::Enter { w, e, fence, t } => {
                let want = wants.remove_entry(&w).and_then(|(_, (we, want))| {
                    if we == e {
                        return Some(want);
                    }
                    wants.insert(w, (we, want)); // asked for another entry: still waiting
                    None
                });
                if let Some(want) = want {
                    tl.waits.push(Wait { w, e, want, enter: Some(t), count: 1 });
                    tl.hist.record(w, t.saturating_sub(want));
                }
                let bad = wanted.flagged.contains(&n);
                let section = Section { w, e, fence, want, enter: t, exit: None, line: n, count: 1, bad };
                if let Some(never_left) = open.insert(w, section) {
                    tl.sections.push(never_left);
                }
            }
            Record::Refused { w, e, at, fence, over, t } => {
                // A refused EXIT ends its section uncommitted; a refused ENTER opens none.
                let exit = at == Stage::Exit;
                if exit && open.get(&w).is_some_and(|s| s.e == e) {
                    if let Some(mut s) = open.remove(&w) {
                        s.exit = Some(t);
                        tl.sections.push(s);
                    }
                }
                tl.refused.push(Refusal { w, e, exit, fence, over, t });
            }
            Record::Exit { w, e, t, .. } => {
                // Only the EXIT of the section its worker has open closes it.
                if let Some(mut s) = open.remove(&w) {
                    if s.e == e {
                        s.exit = Some(t);
                    }
                    tl.sections.push(s);
                }
            }
        }
    })?;
    for (_, s) in open {
        tl.sections.push(s);
    }
    for (w, (e, want)) in wants {
        tl.unserved.push(Wait { w, e, want, enter: None, count: 1 });
    }
    Ok(())
}

/// Read the leader file's START and LEADER records, and keep the lines wanted.
pub(crate) fn read_leaders(src: impl Read, wanted: &Wanted, tl: &mut Timeline) -> std::io::Result<()> {
    each_line(src, |n, text| {
        if wanted.lines.contains(&n) {
            tl.listed.insert(n, clip(text));
        }
        if let Some(t) = text.strip_prefix("START t=").and_then(|t| t.parse().ok()) {
            tl.start = Some(t);
        } else if let Ok(rec) = text.parse::<LeaderRecord>() {
            if rec.w >= MAX_WORKERS {
                return;
            }
            if wanted.lines.contains(&n) {
                tl.at_line.insert(n, (rec.w, rec.t));
            }
            tl.leaders.push(rec);
        }
    })
}

/// Read the fault log's lines as `t=<ns> at=<ms>ms <action> [w=<id>] [key=value…] [# note]`,
/// and pair each pause and downtime with what ends it, in one pass. The auditor's
/// [`crate::audit::FaultLog`] keeps only what judging needs (crashes, restarts, the
/// teardown); the picture also wants stops, continues and partitions. An absent log
/// has no faults; one that is no regular file is an error.
pub(crate) fn read_faults(path: &Path, tl: &mut Timeline) -> std::io::Result<()> {
    let f = match crate::files::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    // Each worker's pause and downtime still open: when it began. A second stop while
    // paused lies within the first's span, so one per worker is all there is to draw.
    let mut paused: BTreeMap<u32, u64> = BTreeMap::new();
    let mut down: BTreeMap<u32, u64> = BTreeMap::new();
    each_line(f, |_, line| {
        let Some(l) = FaultLine::parse(line) else { return };
        if tl.origin.is_none() {
            // `t=<ns> at=<ms>ms`: the run began `at` before `t`.
            let at = line
                .split(' ')
                .nth(1)
                .and_then(|a| a.strip_prefix("at=")?.strip_suffix("ms")?.parse::<f64>().ok());
            if let Some(at) = at.filter(|a| a.is_finite() && *a >= 0.0) {
                tl.origin = Some(l.t.saturating_sub((at * 1e6) as u64));
            }
        }
        let w = l.worker().filter(|w| *w < MAX_WORKERS);
        if l.action == "teardown" && l.note == "interrupted" {
            tl.interrupted = true;
        }
        if let Some(w) = w {
            let (t, action) = (l.t, l.action);
            if matches!(action, "cont" | "kill" | "term") {
                if let Some(from) = paused.remove(&w) {
                    tl.pauses.push(Pause { w, down: false, from, to: Some(t) });
                }
            }
            match action {
                "stop" => {
                    paused.entry(w).or_insert(t);
                }
                "kill" | "term" => {
                    down.entry(w).or_insert(t);
                }
                "restart" => {
                    if let Some(from) = down.remove(&w) {
                        tl.pauses.push(Pause { w, down: true, from, to: Some(t) });
                    }
                }
                _ => {}
            }
        }
        let action = clip_to(l.action, 32).into_owned();
        tl.faults.push(FaultMark { t: l.t, action, w: l.worker(), note: clip(l.note) });
    })?;
    for (w, from) in paused {
        tl.pauses.push(Pause { w, down: false, from, to: None });
    }
    for (w, from) in down {
        tl.pauses.push(Pause { w, down: true, from, to: None });
    }
    Ok(())
}

/// Read a stalled run's diagnosis from `path` ([`STALL_FILE`](crate::supervisor::STALL_FILE)): `Ok(None)` if there is
/// none, an error (one line) if it cannot be read or is not what the supervisor
/// writes. Cycles naming a worker no run can have are left out, and past
/// [`MAX_CYCLES`] the rest.
pub(crate) fn read_stall(path: &Path) -> Result<Option<StallMark>, String> {
    let f = match crate::files::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut text = Vec::new();
    f.take(STALL_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if text.len() as u64 > STALL_BYTES {
        return Err(format!("{} is longer than {STALL_BYTES} bytes: not read", path.display()));
    }
    let r: StallRecord = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not a stall record: {}", path.display(), clip_to(&e.to_string(), 200)))?;
    let deadlocks = r
        .deadlocks
        .into_iter()
        .filter(|c| c.len() >= 2 && c.len() <= MAX_WORKERS as usize && c.iter().all(|&w| w < MAX_WORKERS))
        .take(MAX_CYCLES)
        .collect();
    Ok(Some(StallMark { t: r.t, text: r.diagnosis, deadlocks }))
}

/// Whether the run left a message trace (any `trace-w{ID}.log`).
pub(crate) fn has_trace(run_dir: &Path) -> bool {
    std::fs::read_dir(run_dir).is_ok_and(|d| {
        d.flatten().any(|e| e.file_name().to_str().and_then(crate::trace::worker_of).is_some())
    })
}

/// The messages of the run's trace as the diagrams draw them (at most `max` for the
/// wall clock, the windows `wanted` asks for and a spread of others for the logical
/// axis), and the counts of all: memory by what is drawn, not by the trace's size.
pub(crate) fn read_trace(
    run_dir: &Path,
    max: usize,
    wanted: Vec<super::events::Anchor>,
    tl: &mut Timeline,
) -> Result<(), crate::trace::TraceError> {
    let summary = crate::trace::check(run_dir)?;
    let anchors = super::events::anchors(summary.events, wanted);
    let v = super::events::read(run_dir, (summary.events, summary.messages), max, anchors)?;
    tl.arrows = v.msgs;
    tl.arrow_stride = v.stride;
    tl.windows = v.windows;
    tl.bodies = v.bodies;
    tl.events = v.events;
    tl.pairs = v.pairs;
    tl.slices = v.slices;
    tl.holds = v.holds;
    tl.granters = v.granters;
    tl.fates = v.fates;
    tl.states = v.states;
    tl.messages = summary.messages;
    tl.message_types = summary.by_type;
    tl.trace_notes = summary.notes.lines();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::bars::KEEP_BARS;

    #[test]
    fn sections_pair_want_enter_and_exit_and_keep_the_unserved() {
        let body = "# mutexlab resource v1 algo=x workers=2\n\
                    WANT w=0 e=1 t=10\nENTER w=0 e=1 fence=1:0 t=20\nWANT w=1 e=1 t=25\n\
                    EXIT w=0 e=1 fence=1:0 read=0 value=1 t=30\nENTER w=0 e=2 fence=2:0 t=40\n";
        let mut tl = Timeline::default();
        let lines = BTreeSet::from([3]);
        let wanted = Wanted { lines: &lines, flagged: &lines };
        read_resource(body.as_bytes(), &wanted, &mut tl).unwrap();
        let sections: Vec<&Section> = tl.sections.iter().collect();
        assert_eq!(sections.len(), 2);
        assert_eq!((sections[0].wait(), sections[0].exit, sections[0].bad), (Some(10), Some(30), true));
        assert_eq!((sections[1].want, sections[1].exit, sections[1].bad), (None, None, false));
        let unserved: Vec<&Wait> = tl.unserved.iter().collect();
        assert_eq!(unserved, vec![&Wait { w: 1, e: 1, want: 25, enter: None, count: 1 }]);
        assert_eq!(tl.listed[&3], "ENTER w=0 e=1 fence=1:0 t=20");
        assert_eq!(tl.at_line.keys().collect::<Vec<_>>(), vec![&3], "only the lines findings name");
        assert_eq!(tl.span(), Some((10, 40)));
    }

    #[test]
    fn bars_beyond_the_cap_merge_and_memory_stays_bounded() {
        // Two lanes of back-to-back sections: past the cap, what nearly touches merges.
        let mut bars: Bars<Wait> = Bars::default();
        let n = 20 * KEEP_BARS as u64;
        for i in 0..n {
            bars.push(Wait { w: (i % 2) as u32, e: i, want: i * 100, enter: Some(i * 100 + 90), count: 1 });
            assert!(bars.kept <= KEEP_BARS);
        }
        assert_eq!(bars.seen, n);
        assert!(bars.gap > 0);
        assert_eq!(bars.iter().map(|b| b.count as u64).sum::<u64>(), n, "every bar is in some merged one");
        // A lone bar far from the others stays whole.
        let mut few: Bars<Wait> = Bars::default();
        few.push(Wait { w: 0, e: 1, want: 0, enter: Some(1), count: 1 });
        few.push(Wait { w: 0, e: 2, want: 5, enter: Some(6), count: 1 });
        assert_eq!((few.kept, few.gap), (2, 0));
    }

    #[test]
    fn samples_keep_a_spread_of_at_most_their_cap() {
        let mut s = Sampled::new(100);
        for i in 0..100_000u64 {
            s.push(i);
        }
        assert!(s.len() <= 100 && s.len() > 50, "{}", s.len());
        assert_eq!(s.seen, 100_000);
        let kept: Vec<u64> = s.iter().copied().collect();
        assert_eq!(kept[0], 0);
        assert!(*kept.last().unwrap() > 99_000 - 2048, "spread to the end: {kept:?}");
    }

    #[test]
    fn pauses_pair_in_one_pass_whatever_the_number_of_stops() {
        // Unpaired stops: each later one lies within the first's span, so one is drawn.
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("faults.log");
        let mut text = String::new();
        for i in 0..50_000 {
            text += &format!("t={i} at=0ms stop w=1 inc=0 pid=9 signal=SIGSTOP\n");
        }
        text += "t=60000 at=0ms cont w=1 inc=0\nt=60001 at=0ms kill w=1\nt=60002 at=0ms restart w=1\n";
        text += "t=60003 at=0ms kill w=0 # never restarted\n";
        std::fs::write(&log, text).unwrap();
        let mut tl = Timeline::default();
        read_faults(&log, &mut tl).unwrap();
        let pauses: Vec<&Pause> = tl.pauses.iter().collect();
        assert_eq!(
            pauses,
            vec![
                &Pause { w: 1, down: false, from: 0, to: Some(60000) },
                &Pause { w: 1, down: true, from: 60001, to: Some(60002) },
                &Pause { w: 0, down: true, from: 60003, to: None },
            ]
        );
        assert_eq!(tl.faults.seen, 50_004);
        assert!(tl.faults.len() <= KEEP_MARKS);
        // An absent log has no faults; a FIFO is refused at once.
        let mut tl = Timeline::default();
        read_faults(&dir.path().join("absent"), &mut tl).unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(read_faults(&fifo, &mut tl).unwrap_err().to_string().contains("not a regular file"));
    }

    #[test]
    fn an_overlong_line_is_skipped_and_counted() {
        let body = format!("a\n{}\nb", "x".repeat(3 * MAX_LINE));
        let mut seen = Vec::new();
        each_line(body.as_bytes(), |n, t| seen.push((n, t.to_string()))).unwrap();
        assert_eq!(seen, vec![(1, "a".into()), (2, String::new()), (3, "b".into())]);
    }

    #[test]
    fn findings_name_their_lines() {
        let v =
            Violation { kind: "overlap", line: 18, detail: "x while w1 is inside since line 16: y".into() };
        assert_eq!(lines_named(&v), vec![18, 16]);
    }
}
