//! The auditor: judges a run from the resource file alone (and an election run from its
//! leader file: [`leaders`]).
//!
//! It never asks a worker anything, so it judges a student's worker exactly as it judges
//! ours: by what reached the disk. Records are read in file order, which is the order
//! in which the kernel applied the writes. Safety checks: two workers inside at once
//! (overlap), an update computed from a stale counter or not above the highest value
//! ever written (lost update), a fencing token that does not rise (stale token) or a
//! write under an older token than the newest entry (stale writer), ENTER without EXIT
//! and the reverse, corrupt lines (a worker id at or above the header's `workers=` is
//! one), and a last line without its newline (torn, even if it parses). In a fenced file (`run --fenced`) two workers inside at once is an
//! overlap only if both writes landed: a holder whose EXIT the resource refused wrote
//! nothing, so the data is right although it believed it held the lock; refusals are
//! counted, and a REFUSED record in an unfenced file is corrupt. Liveness and fairness: requests never served, wait time from WANT to
//! ENTER, how many entries overtook a waiting request (bypass), and Jain's index over
//! entries.
//!
//! The file is read in one pass through a fixed buffer, so time is linear in its size
//! and memory bounded by the number of workers and of findings kept: a line is kept up
//! to [`MAX_LINE`] bytes, a finding quotes at most [`EXCERPT`] bytes of one, and waits go
//! into a histogram per worker. The supervisor's fault log ([`FaultLog`]) says which
//! workers it killed, whose unfinished business is then no fault, and when it tore the
//! run down: what that left open is listed apart as cut short, not as a violation.
//!
//! Files: this one judges the resource file; `lines.rs` reads lines without trusting
//! them; `faultlog.rs` reads the fault log and indexes its crashes; [`leaders`] judges
//! elections.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use hdrhistogram::Histogram;
use serde::Serialize;

pub mod election_cost;
mod faultlog;
pub mod leaders;
#[cfg(test)]
mod record_tests;
pub use crate::lines;
pub mod superpeers;

use crate::lines::{clip, Lines, Quote};
pub use crate::lines::{EXCERPT, MAX_LINE};
use faultlog::CrashIndex;
pub(crate) use faultlog::FaultLine;
pub use faultlog::{Crash, FaultLog, MAX_CRASHES};
pub use leaders::{audit_leaders_file, ElectionReport, LeaderRecord, Rules, LEADERS_HEADER};

use crate::resource::{Fence, Record, Stage, HEADER};

/// The auditor could not judge the file at all.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The file could not be read.
    #[error("cannot read {path}: {err}")]
    Unreadable {
        /// The file, as named.
        path: String,
        /// What the OS said.
        err: std::io::Error,
    },
    /// The file is not a mutexlab leader file.
    #[error(
        "{path} is not a mutexlab leader file (first line must start with {:?})",
        leaders::LEADERS_HEADER
    )]
    NotLeaders {
        /// The file, as named.
        path: String,
    },
    /// The file is not a mutexlab resource file.
    #[error("{path} is not a mutexlab resource file (first line must start with {HEADER:?})")]
    NotResource {
        /// The file, as named.
        path: String,
    },
}

/// One thing that went wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Violation {
    /// A short stable name: `overlap`, `lost-update`, `stale-token`, `stale-writer`,
    /// `enter-without-exit`, `exit-without-enter`, `unserved`, `corrupt-record`,
    /// `torn-record`; and `cut-short` in [`AuditReport::cut_short`], which lists what
    /// is not a violation.
    pub kind: &'static str,
    /// The line it was found at (1-based), 0 for whole-file findings.
    pub line: usize,
    /// What happened, with the records involved.
    pub detail: String,
}

/// The kinds of finding against liveness: a request never served, a section never left,
/// no leader agreed at the end, or one agreed later than the bound. Every other kind is
/// against safety: mutual exclusion, the shared data and the leader's uniqueness, and a
/// line that is not a whole record (what it hid cannot be vouched for).
pub const LIVENESS: [&str; 4] = ["unserved", "enter-without-exit", "no-leader", "slow-election"];

/// Whether a finding of `kind` is against liveness ([`LIVENESS`]) rather than safety.
pub fn is_liveness(kind: &str) -> bool {
    LIVENESS.contains(&kind)
}

/// The violations split by the property they are against, every one counted (listed or
/// not): a run that only stalled broke no safety property, and says so.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Split {
    /// No violation of safety (liveness aside).
    pub safety_ok: bool,
    /// How many violations are against safety.
    pub safety_violations: usize,
    /// How many are against liveness ([`LIVENESS`]).
    pub liveness_violations: usize,
    /// Every violation counted, by kind.
    pub violations_by_kind: BTreeMap<String, usize>,
}

impl Split {
    /// Count `n` more violations of `kind`.
    pub fn count(&mut self, kind: &str, n: usize) {
        if n == 0 {
            return;
        }
        if is_liveness(kind) {
            self.liveness_violations += n;
        } else {
            self.safety_violations += n;
        }
        *self.violations_by_kind.entry(kind.to_string()).or_default() += n;
        self.safety_ok = self.safety_violations == 0;
    }

    /// `safety: OK; liveness: 119 requests never served`, for summaries.
    pub fn line(&self) -> String {
        let kinds = |liveness: bool| -> Vec<(&str, usize)> {
            self.violations_by_kind
                .iter()
                .filter(|(k, _)| is_liveness(k) == liveness)
                .map(|(k, &n)| (k.as_str(), n))
                .collect()
        };
        let safety = match self.safety_violations {
            0 => "OK".to_string(),
            n => {
                let by: Vec<String> = kinds(false).iter().map(|(k, n)| format!("{k} {n}")).collect();
                format!("{n} VIOLATION{} ({})", if n == 1 { "" } else { "S" }, by.join(", "))
            }
        };
        let liveness = if self.liveness_violations == 0 {
            "OK".to_string()
        } else {
            let s = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
            let by: Vec<String> = kinds(true)
                .into_iter()
                .map(|(k, n)| match k {
                    "unserved" => s(n, "request never served", "requests never served"),
                    "enter-without-exit" => s(n, "section never left", "sections never left"),
                    "no-leader" => "no leader agreed at the end".to_string(),
                    _ => s(n, "election later than the bound", "elections later than the bound"),
                })
                .collect();
            by.join(", ")
        };
        format!("safety: {safety}; liveness: {liveness}")
    }
}

/// Summary statistics of one set of wait times, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WaitStats {
    /// How many waits.
    pub count: usize,
    /// The median.
    pub p50: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The longest.
    pub max: f64,
    /// The mean.
    pub mean: f64,
}

/// Wait times in memory that does not grow with their number: a histogram for the
/// percentiles, with 3 significant digits (each within 0.1 % of the exact rank, and
/// never outside the exact minimum and maximum), and the count, sum, minimum and
/// maximum kept exactly, so `max` and `mean` are exact. Its buckets count to 2^32 (a
/// file of some 400 GB), then saturate.
#[derive(Clone)]
struct Waits {
    hist: Histogram<u32>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Waits {
    fn default() -> Waits {
        // Auto-resizing: memory grows with the log of the longest wait, not the count.
        let hist = Histogram::new(3).expect("3 significant digits are supported");
        Waits { hist, count: 0, sum: 0, min: u64::MAX, max: 0 }
    }
}

impl Waits {
    fn record(&mut self, ns: u64) {
        // Grows the histogram as needed; it cannot fail for a u64 on a 64-bit machine,
        // but if it did, clamping one sample beats a panic.
        if self.hist.record(ns).is_err() {
            self.hist.saturating_record(ns);
        }
        self.count += 1;
        self.sum += u128::from(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    fn stats(&self) -> WaitStats {
        if self.count == 0 {
            return WaitStats::default();
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        // The nearest rank, as the midpoint of its bucket, clamped to what was seen.
        let rank = |q: f64| {
            let v = self.hist.median_equivalent(self.hist.value_at_quantile(q));
            ms(v.clamp(self.min, self.max))
        };
        WaitStats {
            count: self.count as usize,
            p50: rank(0.50),
            p99: rank(0.99),
            max: ms(self.max),
            mean: self.sum as f64 / self.count as f64 / 1e6,
        }
    }
}

/// What the auditor found.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct AuditReport {
    /// No violations.
    pub ok: bool,
    /// Algorithm from the header, if present.
    pub algorithm: Option<String>,
    /// Workers: the header's count, or more if records name higher ids.
    pub workers: u32,
    /// Records read.
    pub records: usize,
    /// Completed critical sections (EXIT records).
    pub entries: u64,
    /// The file is fenced (its header says `fenced=1`).
    pub fenced: bool,
    /// Writes the fenced resource refused (REFUSED records): entries and exits under a
    /// stale fencing token.
    pub refused: u64,
    /// Completed sections by worker id.
    pub entries_by_worker: Vec<u64>,
    /// The counter's final value.
    pub final_value: u64,
    /// Wait from WANT to ENTER over all workers.
    pub wait_ms: WaitStats,
    /// The same, by worker id.
    pub wait_ms_by_worker: Vec<WaitStats>,
    /// The most entries by others between one request and its entry.
    pub max_bypass: u64,
    /// Jain's fairness index over entries per worker (1 = perfectly even).
    pub jain: f64,
    /// Jain's index over each worker's mean wait: what fairness means when every worker
    /// makes the same number of entries (`--entries`), where `jain` is 1 by construction.
    pub jain_waits: f64,
    /// Time from the first record to the last, seconds.
    pub span_s: f64,
    /// Every violation found (the first few hundred; `violation_count` has them all).
    pub violations: Vec<Violation>,
    /// How many violations were found, listed or not.
    pub violation_count: usize,
    /// The same, split into safety and liveness.
    #[serde(flatten)]
    pub split: Split,
    /// Not violations: sections still open and requests still unserved at the end of
    /// the file that the run's teardown cut short (kind `cut-short`; at most two per
    /// worker).
    pub cut_short: Vec<Violation>,
}

/// How many violations are kept in full; the rest are only counted.
const KEEP: usize = 200;

/// Worker ids at or above this are corrupt: no run has more workers. The auditor keeps
/// per-worker state (a wait histogram of up to ~220 KiB each) and looks at every worker
/// inside or waiting on each record, so garbage ids must not multiply its memory or time.
pub const MAX_WORKER_ID: u32 = crate::algorithm::MAX_WORKERS;

/// The first worker id nobody can be: the header's worker count if it gives one (the
/// supervisor always does), else [`MAX_WORKER_ID`].
pub(crate) fn id_bound(workers: u32) -> u32 {
    if workers == 0 {
        MAX_WORKER_ID
    } else {
        workers
    }
}

/// Why [`audit_reader`] could not judge its input.
enum Unjudged {
    Io(std::io::Error),
    NotResource,
}

/// Audit the resource file at `path`.
pub fn audit_file(path: &Path, faults: &FaultLog) -> Result<AuditReport, AuditError> {
    let shown = || path.display().to_string();
    let f = crate::files::open_regular(path).map_err(|err| AuditError::Unreadable { path: shown(), err })?;
    audit_reader(f, faults).map_err(|e| match e {
        Unjudged::Io(err) => AuditError::Unreadable { path: shown(), err },
        Unjudged::NotResource => AuditError::NotResource { path: shown() },
    })
}

/// Audit file contents; `None` if they are not a resource file.
pub fn audit_bytes(bytes: &[u8], faults: &FaultLog) -> Option<AuditReport> {
    audit_reader(bytes, faults).ok()
}

/// The one implementation behind [`audit_file`] and [`audit_bytes`]: one pass, one
/// line at a time.
fn audit_reader(mut src: impl Read, faults: &FaultLog) -> Result<AuditReport, Unjudged> {
    // Check the header before reading the rest, so `audit /dev/zero` or a huge foreign
    // file is refused at once instead of read.
    let mut head = Vec::new();
    (&mut src).take(HEADER.len() as u64).read_to_end(&mut head).map_err(Unjudged::Io)?;
    if head != HEADER.as_bytes() {
        return Err(Unjudged::NotResource);
    }
    let mut lines = Lines::new(src, head);
    let mut a = Auditor {
        crashes: CrashIndex::build(&faults.crashes),
        teardown: faults.teardown,
        ended: faults.ended,
        write_refused: faults.write_refused,
        ..Auditor::default()
    };
    if faults.overflow {
        let detail = format!("the fault log names more than {MAX_CRASHES} crashes; the rest were not read");
        a.flag("corrupt-record", 0, detail);
    }
    let (mut lineno, mut at) = (0, 0u64);
    while let Some(ended) = lines.next().map_err(Unjudged::Io)? {
        lineno += 1;
        if !ended {
            // The refused write's excuse holds for a torn line that ends where the file
            // ended when the supervisor heard of it, if its fault log says where.
            let end = at + lines.len;
            a.write_refused = faults.write_refused && faults.refused.is_none_or(|(_, size)| size == end);
            a.refused_by = faults.refused.map(|(w, _)| w);
        }
        a.line(lineno, &lines.kept, lines.len, ended);
        at += lines.len + 1;
    }
    Ok(a.finish())
}

#[derive(Debug, Clone)]
struct Open {
    line: usize,
    text: String,
    e: u64,
    fence: Fence,
    t: u64,
    /// Fenced file: the ENTERs (line, text) that came while this section was open. They
    /// are overlaps only if this section's EXIT lands too.
    overlapped: Vec<(usize, String)>,
    /// Those beyond the [`KEEP`] in `overlapped`, counted only: no more are ever listed.
    overlapped_more: usize,
}

#[derive(Default)]
struct Auditor {
    report: AuditReport,
    /// Sections entered and not yet left, by worker.
    inside: BTreeMap<u32, Open>,
    /// Requests not yet served: worker → (line, time, entries by others since).
    waiting: BTreeMap<u32, (usize, u64, u64)>,
    /// By worker: the highest fence of a section it closed with its EXIT, that ENTER's
    /// line, and the EXIT's time. Once that worker has crashed, its fences bind nobody:
    /// the chain of messages that would carry its clock on may have died with it (a
    /// section a crash cut short never counts either).
    closed: BTreeMap<u32, (Fence, usize, u64)>,
    committed: u64,
    /// The highest value any EXIT wrote: the counter's high-water mark.
    highest: u64,
    /// Wait times by worker, and over all.
    waits: BTreeMap<u32, Waits>,
    all_waits: Waits,
    first_t: Option<u64>,
    last_t: u64,
    crashes: BTreeMap<u32, CrashIndex>,
    teardown: Option<u64>,
    ended: Option<(u64, u64)>,
    /// [`FaultLog::write_refused`], and the torn line it excuses.
    write_refused: bool,
    /// Whose write it was, if the fault log says.
    refused_by: Option<u32>,
    torn_by_refusal: Option<Violation>,
}

impl Auditor {
    fn flag(&mut self, kind: &'static str, line: usize, detail: String) {
        self.report.violation_count += 1;
        self.report.split.count(kind, 1);
        if self.report.violations.len() < KEEP {
            self.report.violations.push(Violation { kind, line, detail });
        }
    }

    fn count_entry(&mut self, w: u32) {
        let i = w as usize;
        if self.report.entries_by_worker.len() <= i {
            self.report.entries_by_worker.resize(i + 1, 0);
        }
        self.report.entries_by_worker[i] += 1;
    }

    /// Judge one line: `kept` holds its first bytes (all of it unless it is longer than
    /// [`MAX_LINE`]), `len` its full length, `ended` whether a newline ended it.
    fn line(&mut self, line: usize, kept: &[u8], len: u64, ended: bool) {
        let text = Quote { bytes: kept, len };
        if !ended {
            // Every record is written whole, newline included, in one write(2): a last
            // line without its newline was cut short (a full disk, a truncated copy),
            // even if what is left still parses, so none of its fields is trusted. If
            // the kernel refused a worker's write, that write left it: no finding.
            if self.write_refused {
                let whose = self.refused_by.map(|w| format!("w{w}'s, ")).unwrap_or_default();
                let detail = format!(
                    "last line is cut short (no newline) by the write the kernel refused ({whose}the run's failure): {text}"
                );
                self.torn_by_refusal = Some(Violation { kind: "cut-short", line, detail });
            } else {
                self.flag("torn-record", line, format!("last line is cut short (no newline): {text}"));
            }
            return;
        }
        if len > MAX_LINE as u64 {
            self.flag("corrupt-record", line, format!("line longer than any record: {text}"));
            return;
        }
        let raw = String::from_utf8_lossy(kept);
        if line == 1 {
            self.header(&raw);
            return;
        }
        if raw.starts_with('#') {
            return;
        }
        match raw.parse::<Record>() {
            Ok(rec) if rec.worker() >= id_bound(self.report.workers) => self.flag(
                "corrupt-record",
                line,
                format!("worker id out of range (at most {}): {text}", id_bound(self.report.workers) - 1),
            ),
            Ok(rec) => self.record(line, &raw, rec),
            Err(e) => self.flag("corrupt-record", line, format!("{}: {text}", clip(&e))),
        }
    }

    /// The header's fields (its fixed start is checked before any line is read).
    fn header(&mut self, header: &str) {
        for field in header[HEADER.len()..].split_whitespace() {
            match field.split_once('=') {
                Some(("algo", v)) => self.report.algorithm = Some(clip(v).into_owned()),
                Some(("fenced", "1")) => self.report.fenced = true,
                Some(("workers", v)) => match v.parse() {
                    Ok(n) if n <= MAX_WORKER_ID => self.report.workers = n,
                    _ => self.flag(
                        "corrupt-record",
                        1,
                        format!("header: workers={} is not a worker count", clip(v)),
                    ),
                },
                _ => {}
            }
        }
    }

    fn record(&mut self, line: usize, raw: &str, rec: Record) {
        let text = Quote::of(raw);
        self.report.records += 1;
        let t = rec.time();
        self.first_t.get_or_insert(t);
        self.last_t = self.last_t.max(t);
        match rec {
            Record::Want { w, .. } => {
                let killed =
                    self.waiting.get(&w).is_some_and(|(_, want_t, _)| self.crashed_between(w, *want_t, t));
                if killed {
                    self.waiting.remove(&w);
                }
                if let Some((l, _, _)) = self.waiting.get(&w) {
                    let detail = format!("{text} while the request at line {l} is still unserved");
                    self.flag("unserved", line, detail);
                }
                self.waiting.insert(w, (line, t, 0));
            }
            Record::Enter { w, e, fence, t } => self.enter(line, raw, w, e, fence, t),
            Record::Refused { w, e, at, fence, over, .. } => self.refused(line, raw, w, e, at, fence, over),
            Record::Exit { w, e, fence, read, value, .. } => {
                if let Some(open) = self.close(line, raw, w, e, fence) {
                    // Fenced file: whoever entered while this section was open overlapped
                    // a write that landed.
                    for (at, entered) in &open.overlapped {
                        let detail = format!(
                            "{} while w{w} was inside since line {}, and both wrote: w{w}'s {text}",
                            Quote::of(entered),
                            open.line
                        );
                        self.flag("overlap", *at, detail);
                    }
                    self.report.violation_count += open.overlapped_more;
                    self.report.split.count("overlap", open.overlapped_more);
                    let crashed = |c: &(Fence, usize, u64)| self.crashed_between(w, c.2, t);
                    match self.closed.get(&w) {
                        Some(c) if c.0 >= fence && !crashed(c) => {}
                        _ => {
                            self.closed.insert(w, (fence, open.line, t));
                        }
                    }
                }
                let bound = self.fence_bound(t);
                if let Some((max, at)) = bound {
                    if fence < max {
                        self.flag(
                            "stale-writer",
                            line,
                            format!(
                                "{text} writes under fence {fence}, but fence {max} entered at line {at}"
                            ),
                        );
                    }
                }
                // Besides a stale read, a value not above the highest ever written is a
                // lost update: it repeats an increment already counted. Values run 1, 2, 3…
                // with no gap until some write is flagged anyway, so this is "a value
                // written twice" without a set of every value that grows with the run; after
                // a counter that went back, it keeps flagging until the old high is passed.
                let c = self.committed;
                let why = if read != c || read.checked_add(1) != Some(value) {
                    Some(format!(
                        "the last committed value was {c}, so this write should read {c} and write {}",
                        c.wrapping_add(1)
                    ))
                } else if value <= self.highest {
                    Some(format!(
                        "the counter had already reached {}, so this increment was counted before",
                        self.highest
                    ))
                } else {
                    None
                };
                if let Some(why) = why {
                    self.flag("lost-update", line, format!("{text}: {why}"));
                }
                self.committed = value;
                self.highest = self.highest.max(value);
                self.report.entries += 1;
                self.count_entry(w);
            }
        }
    }

    /// The highest fence a record at time `t` must respect: of the sections closed by
    /// their EXIT, and of those still open whose holder was not killed by `t`.
    fn fence_bound(&self, t: u64) -> Option<(Fence, usize)> {
        let open = self
            .inside
            .iter()
            .filter(|(&o, open)| !self.crashed_between(o, open.t, t))
            .map(|(_, open)| (open.fence, open.line));
        let closed =
            self.closed.iter().filter(|(&o, c)| !self.crashed_between(o, c.2, t)).map(|(_, c)| (c.0, c.1));
        closed.chain(open).max()
    }

    /// Whether a kill of `w` overlaps `[from, to]`: it began no later than `to`, and
    /// `w` was still alive at `from`.
    fn crashed_between(&self, w: u32, from: u64, to: u64) -> bool {
        self.crashes.get(&w).is_some_and(|c| c.overlaps(from, to))
    }

    fn enter(&mut self, line: usize, raw: &str, w: u32, e: u64, fence: Fence, t: u64) {
        let text = Quote::of(raw);
        // A section whose holder was killed before this entry ended with the kill.
        let ended: Vec<u32> = self
            .inside
            .iter()
            .filter(|(&o, open)| self.crashed_between(o, open.t, t))
            .map(|(&o, _)| o)
            .collect();
        for o in ended {
            self.inside.remove(&o);
        }
        let unserved: Vec<u32> = self
            .waiting
            .iter()
            .filter(|(&o, (_, want_t, _))| o != w && self.crashed_between(o, *want_t, t))
            .map(|(&o, _)| o)
            .collect();
        for o in unserved {
            self.waiting.remove(&o);
        }
        if let Some(prev) = self.inside.remove(&w) {
            let detail =
                format!("{} has no EXIT before w{w} enters again at line {line}", Quote::of(&prev.text));
            self.flag("enter-without-exit", prev.line, detail);
        }
        if self.report.fenced {
            // Judged when the earlier holder's write lands or is refused.
            for open in self.inside.values_mut() {
                if open.overlapped.len() < KEEP {
                    open.overlapped.push((line, raw.to_string()));
                } else {
                    open.overlapped_more += 1;
                }
            }
        } else {
            for (other, open) in &self.inside {
                let detail = format!(
                    "{text} while w{other} is inside since line {}: {}",
                    open.line,
                    Quote::of(&open.text)
                );
                self.report.violation_count += 1;
                self.report.split.count("overlap", 1);
                if self.report.violations.len() < KEEP {
                    self.report.violations.push(Violation { kind: "overlap", line, detail });
                }
            }
        }
        if let Some((max, at)) = self.fence_bound(t) {
            if fence <= max {
                self.flag(
                    "stale-token",
                    line,
                    format!("{text} enters with fence {fence}, not above fence {max} from line {at}"),
                );
            }
        }
        match self.waiting.remove(&w) {
            Some((_, want_t, _)) => {
                let wait = t.saturating_sub(want_t);
                self.waits.entry(w).or_default().record(wait);
                self.all_waits.record(wait);
            }
            None => self.flag("unserved", line, format!("{text} has no WANT before it")),
        }
        for (_, _, bypassed) in self.waiting.values_mut() {
            *bypassed += 1;
            self.report.max_bypass = self.report.max_bypass.max(*bypassed);
        }
        self.inside.insert(
            w,
            Open { line, text: raw.to_string(), e, fence, t, overlapped: Vec::new(), overlapped_more: 0 },
        );
    }

    /// A fenced resource refused `w`'s ENTER (its request is closed; it asks again with
    /// a new WANT) or its EXIT (its section ends with nothing written, so whoever
    /// entered meanwhile overlapped no write of its).
    #[allow(clippy::too_many_arguments)] // the record's fields, as `enter` takes them
    fn refused(&mut self, line: usize, raw: &str, w: u32, e: u64, at: Stage, fence: Fence, over: Fence) {
        let text = Quote::of(raw);
        if !self.report.fenced {
            return self.flag("corrupt-record", line, format!("{text} in a file that is not fenced"));
        }
        self.report.refused += 1;
        // The resource refuses an ENTER not above the newest token, an EXIT below it.
        let justified = match at {
            Stage::Enter => fence <= over,
            Stage::Exit => fence < over,
        };
        if !justified {
            self.flag(
                "corrupt-record",
                line,
                format!("{text} refuses a token that is not older than {over}"),
            );
        }
        match at {
            Stage::Enter => {
                if self.waiting.remove(&w).is_none() {
                    self.flag("unserved", line, format!("{text} has no WANT before it"));
                }
            }
            Stage::Exit => {
                self.close(line, raw, w, e, fence);
            }
        }
    }

    /// An EXIT or a refused one ends `w`'s open section: that section, if it is the one
    /// the record names; otherwise `exit-without-enter`.
    fn close(&mut self, line: usize, raw: &str, w: u32, e: u64, fence: Fence) -> Option<Open> {
        let text = Quote::of(raw);
        match self.inside.remove(&w) {
            Some(open) if open.e == e && open.fence == fence => return Some(open),
            Some(open) => {
                let detail = format!(
                    "{text} does not match the open section at line {}: {}",
                    open.line,
                    Quote::of(&open.text)
                );
                self.flag("exit-without-enter", line, detail)
            }
            None => self.flag("exit-without-enter", line, format!("{text} but w{w} is not inside")),
        }
        None
    }

    fn finish(mut self) -> AuditReport {
        let inside = std::mem::take(&mut self.inside);
        // Began no later than the teardown, and within the stall window before the run
        // ended: the freeze, not the algorithm, left it open.
        let (teardown, ended) = (self.teardown, self.ended);
        let cut = |t: u64| {
            teardown.is_some_and(|td| t <= td)
                && ended.is_none_or(|(end, window)| t.saturating_add(window) >= end)
        };
        let mut cut_short = Vec::new();
        for (w, open) in inside {
            // A worker killed while inside never writes its EXIT: that alone is no fault.
            let killed = self.crashed_between(w, open.t, u64::MAX);
            let text = Quote::of(&open.text);
            if killed {
                continue;
            }
            if cut(open.t) {
                let detail = format!("{text} was still inside when the run was torn down");
                cut_short.push(Violation { kind: "cut-short", line: open.line, detail });
            } else {
                self.flag(
                    "enter-without-exit",
                    open.line,
                    format!("{text} has no EXIT by the end of the file"),
                );
            }
        }
        let waiting = std::mem::take(&mut self.waiting);
        for (w, (line, t, bypassed)) in waiting {
            let killed = self.crashed_between(w, t, u64::MAX);
            if killed {
                continue;
            }
            let bypassed =
                format!("{bypassed} {} by others since", if bypassed == 1 { "entry" } else { "entries" });
            if cut(t) {
                let detail =
                    format!("w{w}'s request was still waiting when the run was torn down ({bypassed})");
                cut_short.push(Violation { kind: "cut-short", line, detail });
            } else {
                self.flag("unserved", line, format!("w{w}'s request was never served ({bypassed})"));
            }
        }
        cut_short.extend(self.torn_by_refusal.take());
        cut_short.sort_by_key(|v| v.line);
        self.report.cut_short = cut_short;
        let r = &mut self.report;
        r.final_value = self.committed;
        let n = (r.workers as usize).max(r.entries_by_worker.len());
        r.workers = n as u32;
        r.entries_by_worker.resize(n, 0);
        r.wait_ms = self.all_waits.stats();
        r.wait_ms_by_worker =
            (0..n as u32).map(|w| self.waits.get(&w).map(Waits::stats).unwrap_or_default()).collect();
        r.jain = jain(r.entries_by_worker.iter().map(|&x| x as f64));
        r.jain_waits = jain(r.wait_ms_by_worker.iter().filter(|w| w.count > 0).map(|w| w.mean));
        r.span_s = self.first_t.map_or(0.0, |f| (self.last_t - f) as f64 / 1e9);
        r.ok = r.violation_count == 0;
        r.split.safety_ok = r.split.safety_violations == 0;
        self.report
    }
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²), 1 when all are equal, 1/n when one
/// takes everything; 1 for nothing at all.
fn jain(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut n, mut sum, mut sq) = (0.0, 0.0, 0.0);
    for x in xs {
        n += 1.0;
        sum += x;
        sq += x * x;
    }
    if sq > 0.0 {
        sum * sum / (n * sq)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_when_even_and_one_over_n_when_one_takes_all() {
        assert!((jain([2.0, 2.0, 2.0].into_iter()) - 1.0).abs() < 1e-12);
        assert!((jain([6.0, 0.0, 0.0].into_iter()) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(jain(std::iter::empty()), 1.0);
        // Equal entries, unequal waits: only the waits' index says so.
        let body = "WANT w=0 e=1 t=0\nENTER w=0 e=1 fence=1:0 t=1\nEXIT w=0 e=1 fence=1:0 read=0 value=1 t=2\n\
                    WANT w=1 e=1 t=0\nENTER w=1 e=1 fence=2:1 t=9\nEXIT w=1 e=1 fence=2:1 read=1 value=2 t=10\n";
        let r = audit_bytes(&file(body), &none()).unwrap();
        assert!((r.jain - 1.0).abs() < 1e-12 && r.jain_waits < 0.7, "{} {}", r.jain, r.jain_waits);
    }

    fn file(body: &str) -> Vec<u8> {
        format!("{HEADER} algo=test workers=2\n{body}").into_bytes()
    }

    fn none() -> FaultLog {
        FaultLog::default()
    }

    fn crashed(crashes: &[Crash]) -> FaultLog {
        crashes.to_vec().into()
    }

    fn kinds(r: &AuditReport) -> Vec<&'static str> {
        r.violations.iter().map(|v| v.kind).collect()
    }

    const CLEAN: &str = "\
WANT w=0 e=1 t=10
WANT w=1 e=1 t=11
ENTER w=0 e=1 fence=1:0 t=20
EXIT w=0 e=1 fence=1:0 read=0 value=1 t=30
ENTER w=1 e=1 fence=3:1 t=40
EXIT w=1 e=1 fence=3:1 read=1 value=2 t=50
";

    #[test]
    fn a_clean_run_passes_with_stats() {
        let r = audit_bytes(&file(CLEAN), &none()).unwrap();
        assert!(r.ok, "{:?}", r.violations);
        assert_eq!(r.entries, 2);
        assert_eq!(r.entries_by_worker, vec![1, 1]);
        assert_eq!(r.final_value, 2);
        assert_eq!(r.max_bypass, 1);
        assert_eq!(r.wait_ms.count, 2);
        assert!((r.jain - 1.0).abs() < 1e-9);
    }

    #[test]
    fn overlap_and_lost_update_are_caught() {
        let body = "\
WANT w=0 e=1 t=10
WANT w=1 e=1 t=11
ENTER w=0 e=1 fence=1:0 t=20
ENTER w=1 e=1 fence=1:1 t=21
EXIT w=0 e=1 fence=1:0 read=0 value=1 t=30
EXIT w=1 e=1 fence=1:1 read=0 value=1 t=31
";
        let r = audit_bytes(&file(body), &none()).unwrap();
        assert!(!r.ok);
        let k = kinds(&r);
        assert!(k.contains(&"overlap"), "{k:?}");
        assert!(k.contains(&"lost-update"), "{k:?}");
        assert!(k.contains(&"stale-writer"), "{k:?}");
        assert_eq!(r.violations[0].line, 5);
        assert!(r.violations[0].detail.contains("since line 4"));
    }

    #[test]
    fn backwards_fence_is_a_stale_token() {
        let body = CLEAN.replace("fence=3:1", "fence=1:0").replace("fence=1:0 t=20", "fence=5:0 t=20");
        let body = body.replace("EXIT w=0 e=1 fence=1:0", "EXIT w=0 e=1 fence=5:0");
        let r = audit_bytes(&file(&body), &none()).unwrap();
        assert!(kinds(&r).contains(&"stale-token"), "{:?}", r.violations);
    }

    /// Split brain under `--fenced`: w1 enters while w0 still believes it holds the
    /// lock, and the resource refuses w0's stale EXIT and then a stale ENTER. Both
    /// believed they were inside, but only one wrote: no violation, two refusals.
    #[test]
    fn a_fenced_file_forgives_an_overlap_whose_stale_write_was_refused() {
        let body = "\
WANT w=0 e=1 t=10
ENTER w=0 e=1 fence=3:0 t=20
WANT w=1 e=1 t=25
ENTER w=1 e=1 fence=7:1 t=30
REFUSED w=0 e=1 at=exit fence=3:0 over=7:1 t=35
EXIT w=1 e=1 fence=7:1 read=0 value=1 t=40
WANT w=0 e=1 t=45
REFUSED w=0 e=1 at=enter fence=5:0 over=7:1 t=50
WANT w=0 e=1 t=55
ENTER w=0 e=1 fence=9:0 t=60
EXIT w=0 e=1 fence=9:0 read=1 value=2 t=70
";
        let fenced = |body: &str| format!("{HEADER} algo=test workers=2 fenced=1\n{body}").into_bytes();
        let r = audit_bytes(&fenced(body), &none()).unwrap();
        assert!(r.ok, "{:?}", r.violations);
        assert!(r.fenced);
        assert_eq!((r.refused, r.entries, r.final_value), (2, 2, 2));
        // Negative controls: a resource that let the stale EXIT land has two writers
        // (the overlap is flagged at w1's ENTER), and unfenced the file cannot refuse.
        let landed = body.replace(
            "REFUSED w=0 e=1 at=exit fence=3:0 over=7:1 t=35",
            "EXIT w=0 e=1 fence=3:0 read=0 value=1 t=35",
        );
        let r = audit_bytes(&fenced(&landed), &none()).unwrap();
        assert!(kinds(&r).contains(&"overlap"), "{:?}", r.violations);
        assert_eq!(r.violations.iter().find(|v| v.kind == "overlap").unwrap().line, 5);
        assert!(kinds(&r).contains(&"stale-writer"), "{:?}", r.violations);
        let r = audit_bytes(&file(body), &none()).unwrap();
        assert_eq!(kinds(&r)[..3], ["overlap", "corrupt-record", "corrupt-record"], "{:?}", r.violations);
        // A refusal of a token that was the newest is no refusal a fenced resource makes.
        let unjust = body.replace(
            "REFUSED w=0 e=1 at=enter fence=5:0 over=7:1",
            "REFUSED w=0 e=1 at=enter fence=8:0 over=7:1",
        );
        let r = audit_bytes(&fenced(&unjust), &none()).unwrap();
        assert_eq!(kinds(&r)[..1], ["corrupt-record"], "{:?}", r.violations);
    }

    #[test]
    fn unfinished_section_is_flagged_unless_the_worker_was_killed() {
        let body = "WANT w=0 e=1 t=10\nENTER w=0 e=1 fence=1:0 t=20\n";
        let r = audit_bytes(&file(body), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["enter-without-exit"]);
        let r = audit_bytes(&file(body), &crashed(&[Crash::at(0, 25)])).unwrap();
        assert!(r.ok, "{:?}", r.violations);
    }

    #[test]
    fn a_killed_holder_excuses_entries_after_the_kill_but_not_before() {
        let body = "\
WANT w=0 e=1 t=10
ENTER w=0 e=1 fence=1:0 t=20
WANT w=1 e=1 t=25
ENTER w=1 e=1 fence=5:1 t=40
EXIT w=1 e=1 fence=5:1 read=0 value=1 t=50
WANT w=0 e=2 t=60
ENTER w=0 e=2 fence=9:0 t=70
EXIT w=0 e=2 fence=9:0 read=1 value=2 t=80
";
        // Killed at 30, before w1 entered at 40: no overlap, and w0's restarted
        // incarnation may enter again.
        let r = audit_bytes(&file(body), &crashed(&[Crash::at(0, 30)])).unwrap();
        assert!(r.ok, "{:?}", r.violations);
        // Killed at 45, after w1 entered: the overlap stands.
        let r = audit_bytes(&file(body), &crashed(&[Crash::at(0, 45)])).unwrap();
        assert_eq!(kinds(&r), vec!["overlap"]);
    }

    #[test]
    fn a_killed_holder_s_fence_does_not_bind_the_survivors() {
        // w1 dies inside with fence 10:1; nothing carried its clock to w0, whose next
        // token 7:0 is lower. That is no stale token, and w0's write is no stale writer.
        let body = "\
WANT w=0 e=1 t=1
ENTER w=0 e=1 fence=3:0 t=2
EXIT w=0 e=1 fence=3:0 read=0 value=1 t=3
WANT w=1 e=1 t=4
ENTER w=1 e=1 fence=10:1 t=5
WANT w=0 e=2 t=6
ENTER w=0 e=2 fence=7:0 t=20
EXIT w=0 e=2 fence=7:0 read=1 value=2 t=21
";
        let r = audit_bytes(&file(body), &crashed(&[Crash::at(1, 10)])).unwrap();
        assert!(r.ok, "{:?}", r.violations);
        // Without the crash it is an overlap and a backwards token; the closed section's
        // fence 3:0 still binds everyone.
        let r = audit_bytes(&file(body), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["overlap", "stale-token", "stale-writer", "enter-without-exit"]);
        let low = body.replace("fence=7:0", "fence=2:0");
        let r = audit_bytes(&file(&low), &crashed(&[Crash::at(1, 10)])).unwrap();
        assert_eq!(kinds(&r), vec!["stale-token", "stale-writer"]);
    }

    #[test]
    fn a_worker_killed_after_its_exit_binds_nobody_with_its_fence() {
        // w1 leaves with fence 75:1 and dies before anything carries its clock to w0
        // (w0 counted the dead w1 as a yes): w0's 74:0 afterwards is no stale token.
        let body = "\
WANT w=1 e=1 t=1
ENTER w=1 e=1 fence=75:1 t=2
EXIT w=1 e=1 fence=75:1 read=0 value=1 t=3
WANT w=0 e=1 t=10
ENTER w=0 e=1 fence=74:0 t=11
EXIT w=0 e=1 fence=74:0 read=1 value=2 t=12
";
        let r = audit_bytes(&file(body), &crashed(&[Crash::at(1, 5)])).unwrap();
        assert!(r.ok, "{:?}", r.violations);
        // Alive, w1's fence binds: without a crash the token went backwards.
        let r = audit_bytes(&file(body), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["stale-token", "stale-writer"]);
        // A crash before w1's section does not excuse what came after it.
        let r = audit_bytes(&file(body), &crashed(&[Crash::at(1, 0)])).unwrap();
        assert_eq!(kinds(&r), vec!["stale-token", "stale-writer"]);
    }

    #[test]
    fn records_the_dying_worker_writes_after_the_kill_began_are_its_last() {
        // The supervisor stamps the kill at 100 and reaps w1 at 110; w1 managed a WANT
        // and an ENTER at 102 and 103 before the signal landed; w0 enters at 105, after
        // w1's channel closed. None of that is a fault, and w1's request is excused.
        let body = "\
WANT w=1 e=1 t=102
ENTER w=1 e=1 fence=5:1 t=103
WANT w=0 e=1 t=104
ENTER w=0 e=1 fence=6:0 t=105
EXIT w=0 e=1 fence=6:0 read=0 value=1 t=106
";
        let r = audit_bytes(&file(body), &crashed(&[Crash { worker: 1, t: 100, dead: 110 }])).unwrap();
        assert!(r.ok, "{:?}", r.violations);
        // Had w1 been reaped before it wrote them, those records would be another
        // process's: the overlap stands.
        let r = audit_bytes(&file(body), &crashed(&[Crash { worker: 1, t: 100, dead: 101 }])).unwrap();
        assert!(kinds(&r).contains(&"overlap"), "{:?}", r.violations);
    }

    #[test]
    fn fault_log_lines_give_crashes_and_the_teardown() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("faults.log");
        std::fs::write(
            &log,
            "t=100 at=1.0ms kill w=2 inc=0 pid=9 signal=SIGKILL # kill 2 at 1ms\n\
             t=200 at=2.0ms stop w=1 inc=0 pid=8 signal=SIGSTOP\n\
             t=300 at=3.0ms term w=0 inc=1 pid=7 signal=SIGTERM dead=340 # dead=999 in a note\n\
             t=500 at=5.0ms teardown # no progress for 1.0s\n\
             t=400 at=4.0ms teardown # interrupted\n\
             t=600 at=6.0ms kill w=1",
        )
        .unwrap();
        let f = FaultLog::read(&log);
        // The last line lacks its newline: it might be a cut "w=12", so it is not read.
        assert_eq!(f.crashes, vec![Crash::at(2, 100), Crash { worker: 0, t: 300, dead: 340 }]);
        assert_eq!(f.teardown, Some(400));
        assert_eq!(FaultLog::read(&dir.path().join("absent")), FaultLog::default());
        // An overlong line counts if its fields come before the note.
        std::fs::write(&log, format!("t=7 at=0.1ms kill w=3 # {}\n", "n".repeat(2 * MAX_LINE))).unwrap();
        assert_eq!(FaultLog::read(&log).crashes, vec![Crash::at(3, 7)]);
        std::fs::write(&log, format!("t=7 at=0.1ms kill w=3 {}\n", "n".repeat(2 * MAX_LINE))).unwrap();
        assert_eq!(FaultLog::read(&log), FaultLog::default());
    }

    #[test]
    fn a_teardown_cuts_short_what_began_before_it_and_nothing_after() {
        // w0 inside since 20 and w1 waiting since 25 when the run is torn down at 30.
        let body = "\
WANT w=0 e=1 t=10
ENTER w=0 e=1 fence=1:0 t=20
WANT w=1 e=1 t=25
";
        let torn = FaultLog { teardown: Some(30), ..none() };
        let r = audit_bytes(&file(body), &torn).unwrap();
        assert!(r.ok, "{:?}", r.violations);
        let cut: Vec<(&str, usize)> = r.cut_short.iter().map(|v| (v.kind, v.line)).collect();
        assert_eq!(cut, vec![("cut-short", 3), ("cut-short", 4)]);
        assert!(r.cut_short[0].detail.contains("still inside"), "{}", r.cut_short[0].detail);
        assert!(r.cut_short[1].detail.contains("w1's request"), "{}", r.cut_short[1].detail);
        // The controls: without the teardown both are violations, and so they are when
        // the teardown came before them.
        let r = audit_bytes(&file(body), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["enter-without-exit", "unserved"]);
        assert!(r.cut_short.is_empty());
        let early = FaultLog { teardown: Some(22), ..none() };
        let r = audit_bytes(&file(body), &early).unwrap();
        assert_eq!(kinds(&r), vec!["unserved"]);
        assert_eq!(r.cut_short.len(), 1);
        // A teardown excuses nothing but the end: an overlap before it stands.
        let overlap = format!("{body}ENTER w=1 e=1 fence=2:1 t=26\n");
        let r = audit_bytes(&file(&overlap), &torn).unwrap();
        assert_eq!(kinds(&r), vec!["overlap"]);
        assert_eq!(r.cut_short.len(), 2);
        // A crash still excuses its worker outright.
        let both = FaultLog { crashes: vec![Crash::at(0, 22)], teardown: Some(30), ..FaultLog::default() };
        let r = audit_bytes(&file(body), &both).unwrap();
        assert!(r.ok && r.cut_short.len() == 1, "{:?} {:?}", r.violations, r.cut_short);
        // A run that ended at 28 after a stall window of 5: w0's section (since 20) was
        // stuck before the end came, w1's request (since 25) was cut short by it.
        let stalled = FaultLog { teardown: Some(30), ended: Some((28, 5)), ..none() };
        let r = audit_bytes(&file(body), &stalled).unwrap();
        assert_eq!(kinds(&r), vec!["enter-without-exit"]);
        assert_eq!(r.cut_short.len(), 1);
        assert!(r.cut_short[0].detail.contains("w1's request"), "{}", r.cut_short[0].detail);
    }

    #[test]
    fn many_crashes_are_indexed_and_a_flood_of_them_is_refused() {
        // Crashes of w1 everywhere but around w0's section: w0 is still bound by them
        // only where they overlap.
        let crashes: Vec<Crash> =
            (0..50_000).map(|i| Crash { worker: 1, t: 1_000 + 2 * i, dead: 1_001 + 2 * i }).collect();
        let idx = CrashIndex::build(&crashes);
        assert!(idx[&1].overlaps(1_500, 1_500));
        assert!(!idx[&1].overlaps(0, 999), "before the first");
        assert!(idx[&1].overlaps(100_999, u64::MAX), "the last died at 100999");
        assert!(!idx[&1].overlaps(101_000, u64::MAX), "after the last death");
        let mut log = String::new();
        for i in 0..=MAX_CRASHES {
            log.push_str(&format!("t={i} at=0ms kill w=1 dead={i}\n"));
        }
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), log).unwrap();
        let f = FaultLog::read(&tmp.path().join("f"));
        assert!(f.overflow && f.crashes.len() == MAX_CRASHES);
        let r = audit_bytes(&file(""), &f).unwrap();
        assert_eq!(kinds(&r), vec!["corrupt-record"]);
    }

    #[test]
    fn an_exit_that_closes_nothing_or_something_else_is_flagged() {
        // No ENTER at all.
        let r = audit_bytes(&file("EXIT w=0 e=1 fence=1:0 read=0 value=1 t=5\n"), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["exit-without-enter"]);
        // An EXIT that names another section than the one open.
        let body =
            "WANT w=0 e=1 t=1\nENTER w=0 e=1 fence=1:0 t=2\nEXIT w=0 e=2 fence=1:0 read=0 value=1 t=3\n";
        let r = audit_bytes(&file(body), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["exit-without-enter"]);
        assert!(r.violations[0].detail.contains("line 3"), "{}", r.violations[0].detail);
    }

    #[test]
    fn a_stall_breaks_liveness_only_and_an_overlap_breaks_safety() {
        // w0 never leaves, w1 is never served: liveness, every one counted.
        let stalled = "WANT w=0 e=1 t=1\nENTER w=0 e=1 fence=1:0 t=2\nWANT w=1 e=1 t=3\n";
        let r = audit_bytes(&file(stalled), &none()).unwrap();
        assert!(!r.ok && r.split.safety_ok, "{:?}", r.split);
        assert_eq!((r.split.safety_violations, r.split.liveness_violations), (0, 2));
        assert_eq!(r.split.line(), "safety: OK; liveness: 1 section never left, 1 request never served");
        // The control: w1 enters anyway, an overlap.
        let r = audit_bytes(&file(&format!("{stalled}ENTER w=1 e=1 fence=2:1 t=4\n")), &none()).unwrap();
        assert!(!r.split.safety_ok);
        assert_eq!((r.split.safety_violations, r.split.liveness_violations), (1, 2));
        assert_eq!(r.split.line(), "safety: 1 VIOLATION (overlap 1); liveness: 2 sections never left");
        // A clean file is OK on both.
        let r = audit_bytes(&file(CLEAN), &none()).unwrap();
        assert!(r.ok && r.split.safety_ok && r.split.liveness_violations == 0);
    }

    #[test]
    fn unserved_request_is_flagged() {
        let r = audit_bytes(&file("WANT w=1 e=1 t=10\n"), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["unserved"]);
    }

    #[test]
    fn corrupt_and_torn_lines_are_reported_with_line_numbers() {
        let body = format!("{CLEAN}garbage here\nWANT w=0 e=2 t=");
        let r = audit_bytes(&file(&body), &none()).unwrap();
        assert_eq!(r.violations[0].kind, "corrupt-record");
        assert_eq!(r.violations[0].line, 8);
        assert_eq!(r.violations[1].kind, "torn-record");
        assert_eq!(r.violations[1].line, 9);
    }

    #[test]
    fn a_last_line_without_its_newline_is_torn_even_if_it_parses() {
        // `head -c -5` of a clean file: the last EXIT still parses, with a cut timestamp.
        let cut = file(CLEAN);
        let r = audit_bytes(&cut[..cut.len() - 5], &none()).unwrap();
        assert_eq!(kinds(&r), vec!["torn-record", "enter-without-exit"], "{:?}", r.violations);
        assert_eq!((r.violations[0].line, r.violations[1].line), (7, 6));
        // Only the newline lost: still torn.
        let r = audit_bytes(&cut[..cut.len() - 1], &none()).unwrap();
        assert_eq!(r.violations[0].kind, "torn-record");
        // A header cut short is torn too.
        let r = audit_bytes(format!("{HEADER} algo=x").as_bytes(), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["torn-record"]);
        assert_eq!(r.violations[0].line, 1);
        // The control: a whole file is clean.
        assert!(audit_bytes(&cut, &none()).unwrap().ok);
    }

    #[test]
    fn a_line_torn_by_a_write_the_kernel_refused_is_the_run_s_failure_not_a_finding() {
        let cut = file(CLEAN);
        let cut = &cut[..cut.len() - 5];
        let refused = FaultLog { write_refused: true, teardown: Some(u64::MAX), ..none() };
        let r = audit_bytes(cut, &refused).unwrap();
        assert!(r.ok, "{:?}", r.violations);
        assert_eq!(r.cut_short.len(), 2, "{:?}", r.cut_short);
        let torn = r.cut_short.iter().find(|v| v.line == 7).unwrap();
        assert!(torn.detail.contains("the write the kernel refused"), "{}", torn.detail);
        // The control: without the refusal it is torn.
        let r = audit_bytes(cut, &FaultLog { teardown: Some(u64::MAX), ..none() }).unwrap();
        assert_eq!(kinds(&r), vec!["torn-record"]);
    }

    #[test]
    fn a_long_line_is_corrupt_and_quoted_only_in_part() {
        // A two-byte character straddles the excerpt's end: it is left out, not split.
        let long = format!("{}é{}", "x".repeat(EXCERPT - 1), "y".repeat(3 * MAX_LINE));
        let body = format!("WANT w=0 e=1 t=10\n{long}\nENTER w=0 e=1 fence=1:0 t=20\n");
        let r = audit_bytes(&file(&body), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["corrupt-record", "enter-without-exit"], "{:?}", r.violations);
        let v = &r.violations[0];
        assert_eq!(v.line, 3);
        assert!(v.detail.len() < 2 * EXCERPT, "{}", v.detail);
        assert!(v.detail.ends_with(&format!("\"… ({} bytes)", long.len())), "{}", v.detail);
        assert!(!v.detail.contains('é') && !v.detail.contains('\u{fffd}'), "{}", v.detail);
        // The lines after it are read as usual.
        assert_eq!(r.violations[1].line, 4);
        // A record at the cap is still read; one byte more is not.
        let pad = |n: usize| format!("WANT w=0 e=1 t={:0>n$}", 10);
        let fits = pad(MAX_LINE - "WANT w=0 e=1 t=".len());
        assert_eq!(fits.len(), MAX_LINE);
        let r = audit_bytes(&file(&format!("{fits}\n")), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["unserved"]);
        let r = audit_bytes(&file(&format!("0{fits}\n")), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["corrupt-record"]);
        // Long parse errors and header fields are clipped too.
        let r = audit_bytes(&file(&format!("{}\n", "Z".repeat(3000))), &none()).unwrap();
        assert!(r.violations[0].detail.len() < 3 * EXCERPT, "{}", r.violations[0].detail);
        let r = audit_bytes(format!("{HEADER} workers={}\n", "9".repeat(3000)).as_bytes(), &none()).unwrap();
        assert!(r.violations[0].detail.len() < 2 * EXCERPT, "{}", r.violations[0].detail);
    }

    /// Hands out one byte per read, the worst case for a line reader.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_trickling_reader_reads_the_same_lines() {
        let body = format!("{CLEAN}{}\ngarbage\nWANT w=1 e=2 t=9", "q".repeat(MAX_LINE + 7));
        let bytes = file(&body);
        let whole = audit_bytes(&bytes, &none()).unwrap();
        let trickled = audit_reader(Trickle(&bytes), &none()).ok().unwrap();
        assert_eq!(whole.violations, trickled.violations);
        assert_eq!(kinds(&whole), vec!["corrupt-record", "corrupt-record", "torn-record"]);
        assert_eq!(whole.records, trickled.records);
    }

    #[test]
    fn a_write_that_skips_a_value_is_a_lost_update() {
        let body = CLEAN.replace("read=1 value=2", "read=1 value=3");
        let r = audit_bytes(&file(&body), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["lost-update"]);
    }

    #[test]
    fn a_counter_that_went_back_loses_every_increment_until_it_passes_its_high() {
        // w1 writes from a stale read (0 instead of 2): the counter goes back to 1. w0's
        // next write is consistent with the file (reads 1, writes 2) but counts the
        // increment to 2 a second time: a lost update too. Then 3 is new again.
        let body = "\
WANT w=0 e=1 t=1
ENTER w=0 e=1 fence=1:0 t=2
EXIT w=0 e=1 fence=1:0 read=0 value=1 t=3
WANT w=0 e=2 t=4
ENTER w=0 e=2 fence=2:0 t=5
EXIT w=0 e=2 fence=2:0 read=1 value=2 t=6
WANT w=1 e=1 t=7
ENTER w=1 e=1 fence=3:1 t=8
EXIT w=1 e=1 fence=3:1 read=0 value=1 t=9
WANT w=0 e=3 t=10
ENTER w=0 e=3 fence=4:0 t=11
EXIT w=0 e=3 fence=4:0 read=1 value=2 t=12
WANT w=0 e=4 t=13
ENTER w=0 e=4 fence=5:0 t=14
EXIT w=0 e=4 fence=5:0 read=2 value=3 t=15
";
        let r = audit_bytes(&file(body), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["lost-update", "lost-update"], "{:?}", r.violations);
        assert_eq!((r.violations[0].line, r.violations[1].line), (10, 13));
        assert!(r.violations[1].detail.contains("already reached 2"), "{}", r.violations[1].detail);
        assert_eq!(r.final_value, 3);
    }

    #[test]
    fn wait_percentiles_are_within_a_tenth_of_a_percent_and_max_and_mean_exact() {
        // 1..=1000 µs of waits, one each, plus one of a second: nearest ranks 500 µs,
        // 990 µs (p99 of 1001 samples is the 991st: 991 µs).
        let mut body = String::new();
        let mut t = 0u64;
        let mut waits = (1..=1000u64).map(|us| us * 1000).collect::<Vec<_>>();
        waits.push(1_000_000_000);
        for (i, wait) in waits.iter().enumerate() {
            let (e, f) = (i + 1, i + 1);
            body += &format!("WANT w=0 e={e} t={t}\n");
            t += wait;
            body += &format!("ENTER w=0 e={e} fence={f}:0 t={t}\n");
            body += &format!("EXIT w=0 e={e} fence={f}:0 read={i} value={} t={t}\n", i + 1);
        }
        let r = audit_bytes(&file(&body), &none()).unwrap();
        assert!(r.ok, "{:?}", r.violations);
        let w = &r.wait_ms;
        assert_eq!(w.count, 1001);
        assert!((w.p50 - 0.501).abs() <= 0.501e-3, "{w:?}");
        assert!((w.p99 - 0.991).abs() <= 0.991e-3, "{w:?}");
        assert_eq!(w.max, 1000.0);
        let exact_mean = waits.iter().sum::<u64>() as f64 / 1001.0 / 1e6;
        assert!((w.mean - exact_mean).abs() < 1e-9, "{w:?}");
        assert_eq!(r.wait_ms_by_worker[0], *w);
        assert_eq!(r.wait_ms_by_worker[1], WaitStats::default());
        // One sample: every percentile is that sample, exactly.
        let r = audit_bytes(&file("WANT w=0 e=1 t=0\nENTER w=0 e=1 fence=1:0 t=1234567\n"), &none()).unwrap();
        assert_eq!((r.wait_ms.p50, r.wait_ms.p99, r.wait_ms.max), (1.234567, 1.234567, 1.234567));
    }

    #[test]
    fn absurd_ids_and_counters_are_findings_not_crashes() {
        let huge = format!("{HEADER} algo=x workers=4000000000\nWANT w=4000000000 e=1 t=1\n");
        let r = audit_bytes(huge.as_bytes(), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["corrupt-record", "corrupt-record"]);
        assert_eq!((r.violations[0].line, r.violations[1].line), (1, 2));
        // The last id a run can have is read; the next one is not. Without a worker
        // count in the header, that is the most workers any run has.
        let last = MAX_WORKER_ID - 1;
        let body = format!("{HEADER} algo=test\nWANT w={last} e=1 t=1\nWANT w={MAX_WORKER_ID} e=1 t=1\n");
        let r = audit_bytes(body.as_bytes(), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["corrupt-record", "unserved"]);
        assert_eq!((r.violations[0].line, r.violations[1].line), (3, 2));
        // With one, it is that count: w2 of a 2-worker run is nobody, and no entry of it
        // makes the run look bigger.
        let r = audit_bytes(&file("ENTER w=2 e=1 fence=1:2 t=1\nWANT w=1 e=1 t=2\n"), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["corrupt-record", "unserved"]);
        assert!(
            r.violations[0].detail.starts_with("worker id out of range (at most 1): "),
            "{:?}",
            r.violations
        );
        assert_eq!((r.workers, r.entries_by_worker.clone()), (2, vec![0, 0]));
        let max = u64::MAX;
        let body = format!(
            "WANT w=0 e=1 t=1\nENTER w=0 e=1 fence=1:0 t=2\nEXIT w=0 e=1 fence=1:0 read=0 value={max} t=3\n\
             WANT w=1 e=1 t=4\nENTER w=1 e=1 fence=2:1 t=5\nEXIT w=1 e=1 fence=2:1 read={max} value=0 t=6\n"
        );
        let r = audit_bytes(&file(&body), &none()).unwrap();
        assert_eq!(kinds(&r), vec!["lost-update", "lost-update"]);
    }

    #[test]
    fn the_header_is_checked_before_the_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("resource.log");
        std::fs::write(&p, file(CLEAN)).unwrap();
        assert!(audit_file(&p, &none()).unwrap().ok);
        // Only regular files are read: /dev/zero is refused before any byte of it.
        assert!(matches!(audit_file(Path::new("/dev/zero"), &none()), Err(AuditError::Unreadable { .. })));
        let short = dir.path().join("short");
        std::fs::write(&short, "# mutex").unwrap();
        assert!(matches!(audit_file(&short, &none()), Err(AuditError::NotResource { .. })));
    }

    #[test]
    fn overlaps_pending_in_a_fenced_file_are_kept_up_to_the_cap_and_counted_beyond() {
        // w0 inside while w1 enters 1,000 times: every one an overlap once w0's write
        // lands, but only the first few hundred are held until then.
        let mut body = String::from("WANT w=0 e=1 t=1\nENTER w=0 e=1 fence=1:0 t=2\n");
        for e in 1..=1000 {
            body += &format!("WANT w=1 e={e} t=3\nENTER w=1 e={e} fence=2:1 t=4\n");
        }
        body += "EXIT w=0 e=1 fence=1:0 read=0 value=1 t=5\n";
        let fenced = format!("{HEADER} algo=test workers=2 fenced=1\n{body}");
        let mut a = Auditor::default();
        for (i, line) in fenced.lines().enumerate() {
            a.line(i + 1, line.as_bytes(), line.len() as u64, true);
            assert!(a.inside.get(&0).is_none_or(|o| o.overlapped.len() <= KEEP), "line {}", i + 1);
        }
        // All counted: 1,000 overlaps, 999 of w1's sections left for another, its last
        // never left, and w0's write under a fence older than w1's open section.
        assert_eq!(a.finish().violation_count, 1000 + 999 + 1 + 1);
    }

    #[test]
    fn a_foreign_file_is_not_audited() {
        assert!(audit_bytes(b"hello\n", &none()).is_none());
        assert!(audit_bytes(b"", &none()).is_none());
    }
}
