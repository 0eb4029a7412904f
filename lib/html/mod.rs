//! The HTML report of a run: one self-contained file (inline CSS and SVG, one short
//! script, nothing fetched) drawn from the run directory's files alone.
//!
//! It shows the summary and the auditor's verdict as the text summary gives them, the
//! messages by type beside the algorithm's theory, a space-time diagram (one lane per
//! worker: sections, waits, messages coloured by type with a legend, faults, leaders
//! and roles, findings in red linked to their lines, a stall and the waits-for cycles
//! its diagnosis found, from the run directory's `stall.json`) on two axes the reader switches
//! between with CSS alone (logical time, `logical.rs`, in windows of events that open
//! on the first violation, fault or election; the wall clock with idle stretches
//! shortened, `svg.rs`), from 12 workers on an aggregate of every message (per pair,
//! over the run), waits over the run with fault periods shaded, and each worker's wait
//! distribution on a log scale. All times are in ms from one origin (the run's start).
//! Reading the files is `data.rs` and `events.rs` (bars kept bounded by `bars.rs`; the trace's windows, picks and
//! message contents; in memory bounded by what the page draws, whatever the files
//! hold), label placement and colours `labels.rs`; the wall clock's axis `axis.rs`, the
//! logical windows' places and vector clocks `places.rs` and `causal.rs`, the small
//! charts `charts.rs`. The page is laid out by `sections.rs` (its diagram section
//! `diagram.rs`, its style and script `head.rs`); this file judges the run (the
//! auditor's verdict), holds what those files share, and writes the page whole, into a
//! new file renamed over the name, never through a link. `compare.rs` makes the page of
//! `mutexlab compare --html` with the same head, style and escaping.
//!
//! Every string that comes from a file or a worker goes through [`esc`] before it
//! reaches the page: a field holding `<script>` is shown, never run.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::audit::{self, AuditError, FaultLog, Violation, WaitStats};
use crate::control::{FAULT_LOG, LEADERS_FILE, RESOURCE_FILE};
use crate::registry::{AlgoInfo, Registry};
use crate::supervisor::Report;

mod axis;
mod bars;
mod causal;
mod charts;
mod compare;
mod data;
mod diagram;
mod events;
mod head;
mod labels;
mod logical;
mod places;
mod sections;
mod stepper;
mod svg;

pub use compare::comparison_page;
pub use stepper::{step_page, PageMode};

use data::Timeline;

/// Name of the report in a run directory.
pub const REPORT_FILE: &str = "report.html";

/// What is known of the run beyond its files: a report written at the end of a run has
/// the workers' message counts, which no file holds (the trace aside).
#[derive(Clone, Copy)]
pub enum Known<'a> {
    /// Only the files.
    Files,
    /// The run's own report, of either service.
    Report(&'a Report),
}

/// Why no report could be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The run directory, or a file in it, could not be read.
    #[error("cannot read {path}: {err}")]
    Unreadable {
        /// The directory or file, as named.
        path: String,
        /// What the OS said.
        err: std::io::Error,
    },
    /// The directory holds no file a run writes.
    #[error("{path} holds neither {RESOURCE_FILE} nor {LEADERS_FILE}")]
    NotRun {
        /// The directory, as named.
        path: String,
    },
    /// The run's file is not what its name says.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// The report could not be written.
    #[error("cannot write {path}: {err}")]
    Write {
        /// The page's path.
        path: String,
        /// What the OS said.
        err: std::io::Error,
    },
}

/// Escape text for HTML content and attribute values alike.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The report of the run in `run_dir`, from its files alone; `reg` knows the algorithms
/// the files name (their theory, whether they name one leader).
pub fn render(run_dir: &Path, reg: &Registry) -> Result<String, ReportError> {
    render_with(run_dir, Known::Files, reg)
}

/// Write the report of `run_dir` to `out` (default `run_dir/report.html`); returns its path.
/// The default name is always replaced, never written through: whatever was planted
/// under it (a symlink to a file elsewhere, a FIFO) is left untouched.
pub fn write(
    run_dir: &Path,
    out: Option<&Path>,
    known: Known,
    reg: &Registry,
) -> Result<PathBuf, ReportError> {
    write_with_traces(run_dir, None, out, known, reg)
}

/// `write`, with the message trace read from `traces` when given (the trace files a
/// reader rebuilt from the flight recorder's rings of a run whose supervisor was
/// killed: [`crate::trace::traces_from_rings`]) instead of from `run_dir`.
pub fn write_with_traces(
    run_dir: &Path,
    traces: Option<&Path>,
    out: Option<&Path>,
    known: Known,
    reg: &Registry,
) -> Result<PathBuf, ReportError> {
    let html = render_traced(run_dir, traces, known, reg)?;
    let path = out.map_or_else(|| run_dir.join(REPORT_FILE), Path::to_path_buf);
    let written = if out.is_some() { write_named(&path, &html) } else { write_whole(&path, &html) };
    written.map_err(|err| ReportError::Write { path: path.display().to_string(), err })?;
    Ok(path)
}

/// Write `text` to `path` whole or not at all, never through a link: into a new file in
/// the same directory, renamed over the name once complete. A failed write never leaves
/// half a page where a page was, and a symlink under the name is replaced, its target
/// untouched.
pub fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// Whether [`write_named`] could write `path`, touching nothing: a new file can be made
/// beside it (the page is renamed over the name). A path that names no regular file is
/// written directly, and found out then.
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    if path.exists() && !path.is_file() {
        return Ok(());
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    tempfile::NamedTempFile::new_in(dir).map(drop)
}

/// [`write_whole`] for a path the user named: one that names no regular file
/// (`/dev/stdout`) is written directly, as asked. The page is outside a run directory,
/// for others to read (a course's web directory serves only what it can read): a new
/// one is world-readable (0644, whatever the umask a run set), one written over keeps
/// its file's mode.
pub fn write_named(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    if path.exists() && !path.is_file() {
        return std::fs::write(path, text);
    }
    let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// What the auditor said, from the run's report or from auditing the file now.
struct Verdict {
    algorithm: String,
    /// The registry's entry for `algorithm`, if it has one.
    algo: Option<&'static AlgoInfo>,
    workers: u32,
    /// The text summary, as `mutexlab run`, `elect` or `audit` prints it.
    text: String,
    violations: Vec<Violation>,
    count: usize,
    /// `count` split into safety and liveness.
    split: audit::Split,
    cut_short: Vec<Violation>,
    /// Mutual exclusion only: completed entries and waits by worker.
    entries: Option<u64>,
    waits: Vec<WaitStats>,
    /// Elections only: the elections held (distinct terms), as the run's report counts them.
    elections: Option<usize>,
    /// The run broke the algorithm's model (`Report::model_broken`): its findings are
    /// no verdict on the algorithm.
    model_broken: bool,
    /// The run's plan had steps that never fired: the line that says so.
    never_fired: Option<String>,
}

impl Verdict {
    /// The run's own verdict, of either service: the one its summary printed.
    fn ran(&mut self, r: &Report, reg: &Registry) {
        self.text = crate::report::summary(r, reg);
        self.violations.clone_from(&r.violations);
        self.count = r.violation_count;
        self.split.clone_from(&r.split);
        self.model_broken = r.model_broken;
        self.never_fired = crate::report::never_fired_line(r);
    }
}

/// The report of the run in `run_dir`, with whatever else is `known` of it.
pub fn render_with(run_dir: &Path, known: Known, reg: &Registry) -> Result<String, ReportError> {
    render_traced(run_dir, None, known, reg)
}

/// [`render_with`], the trace read from `traces` if given (see [`write_with_traces`]).
fn render_traced(
    run_dir: &Path,
    traces: Option<&Path>,
    known: Known,
    reg: &Registry,
) -> Result<String, ReportError> {
    let shown = run_dir.display().to_string();
    std::fs::read_dir(run_dir).map_err(|err| ReportError::Unreadable { path: shown.clone(), err })?;
    let resource = run_dir.join(RESOURCE_FILE);
    let leaders = run_dir.join(LEADERS_FILE);
    let faults = FaultLog::load(&run_dir.join(FAULT_LOG))?;
    // Present at all: a FIFO planted under the name is refused by name, not skipped.
    let present = |p: &Path| p.symlink_metadata().is_ok();
    let election = !present(&resource);
    if election && !present(&leaders) {
        return Err(ReportError::NotRun { path: shown });
    }
    let v = if election {
        leaders_verdict(&leaders, &faults, known, reg)?
    } else {
        mutex_verdict(&resource, &faults, known, reg)?
    };
    let lines: BTreeSet<usize> =
        v.violations.iter().chain(&v.cut_short).flat_map(data::lines_named).collect();
    let flagged: BTreeSet<usize> = v.violations.iter().map(|v| v.line).collect();
    let wanted = data::Wanted { lines: &lines, flagged: &flagged };
    let mut tl = Timeline::default();
    // The histograms share one scale: the longest wait the auditor saw.
    tl.hist.max = v.waits.iter().map(|w| (w.max * 1e6).round() as u64).max().unwrap_or(0);
    let file = if election { &leaders } else { &resource };
    let unreadable = |err| ReportError::Unreadable { path: file.display().to_string(), err };
    let f = crate::files::open_regular(file).map_err(unreadable)?;
    let read = if election {
        data::read_leaders(f, &wanted, &mut tl)
    } else {
        data::read_resource(f, &wanted, &mut tl)
    };
    read.map_err(unreadable)?;
    let fault_log = run_dir.join(FAULT_LOG);
    data::read_faults(&fault_log, &mut tl)
        .map_err(|err| ReportError::Unreadable { path: fault_log.display().to_string(), err })?;
    // A damaged stall file costs the stall's drawing, not the report.
    match data::read_stall(&run_dir.join(crate::supervisor::STALL_FILE)) {
        Ok(stall) => tl.stall = stall,
        Err(e) => tl.stall_error = Some(e),
    }
    let trace_dir = traces.unwrap_or(run_dir);
    if data::has_trace(trace_dir) {
        // A damaged trace costs the arrows, not the report.
        let wanted = moments(&v, &tl, election);
        if let Err(e) = data::read_trace(trace_dir, svg::MAX_ARROWS, wanted, &mut tl) {
            tl.trace_error = Some(e.to_string());
            (tl.arrows, tl.windows) = (Vec::new(), Vec::new());
        }
    }
    let highest = tl
        .sections
        .iter()
        .map(|s| s.w)
        .chain(tl.leaders.iter().map(|l| l.w))
        .filter(|w| *w < crate::supervisor::MAX_WORKERS)
        .max()
        .map_or(0, |w| w + 1);
    let lanes = v.workers.min(crate::supervisor::MAX_WORKERS).max(highest);
    Ok(sections::page(&shown, &v, &tl, lanes, known))
}

/// What the logical diagram's windows open on, in the order the page prefers them.
const FIRST_VIOLATION: &str = "the first violation";
const FIRST_FAULT: &str = "the first fault";
const FIRST_ELECTION: &str = "the first election";
const THE_END: &str = "the end of the run";

/// The moments the other files name, where the logical diagram's windows go.
fn moments(v: &Verdict, tl: &Timeline, election: bool) -> Vec<events::Anchor> {
    let mut out = Vec::new();
    if let Some(&(_, t)) = v.violations.first().and_then(|f| tl.at_line.get(&f.line)) {
        out.push(events::Anchor::At(t, FIRST_VIOLATION.into()));
    }
    let fault =
        tl.faults.iter().filter(|f| !matches!(f.action.as_str(), "teardown" | "skip")).map(|f| f.t).min();
    if let Some(t) = fault {
        out.push(events::Anchor::At(t, FIRST_FAULT.into()));
    }
    if election {
        if let Some(t) = tl.leaders.iter().map(|l| l.t).min() {
            out.push(events::Anchor::At(t, FIRST_ELECTION.into()));
        }
    }
    out.push(events::Anchor::At(u64::MAX, THE_END.into()));
    out
}

fn mutex_verdict(
    path: &Path,
    faults: &FaultLog,
    known: Known,
    reg: &Registry,
) -> Result<Verdict, ReportError> {
    let a = audit::audit_file(path, faults)?;
    let mut v = Verdict {
        algorithm: a.algorithm.clone().unwrap_or_else(|| "?".into()),
        algo: a.algorithm.as_deref().and_then(|name| reg.get(name)),
        workers: a.workers,
        text: crate::report::audit_summary(&path.display().to_string(), &a),
        violations: a.violations,
        count: a.violation_count,
        split: a.split,
        cut_short: a.cut_short,
        entries: Some(a.entries),
        waits: a.wait_ms_by_worker,
        elections: None,
        model_broken: false,
        never_fired: None,
    };
    if let Known::Report(r) = known {
        if let Some(m) = r.mutex() {
            v.cut_short.clone_from(&m.cut_short);
            v.waits.clone_from(&m.wait_ms_by_worker);
            v.ran(r, reg);
        }
    }
    Ok(v)
}

fn leaders_verdict(
    path: &Path,
    faults: &FaultLog,
    known: Known,
    reg: &Registry,
) -> Result<Verdict, ReportError> {
    // As `mutexlab audit` judges a leader file alone: validity is left out, since the
    // file does not say whether its algorithm promises the highest id wins.
    let rules =
        audit::Rules { overlap_ns: crate::supervisor::HANDOVER.as_nanos() as u64, ..audit::Rules::default() };
    let a = if audit::superpeers::own_leaders(path) {
        audit::superpeers::audit_superpeers_file(path, faults)?
    } else {
        audit::audit_leaders_file(path, faults, rules)?
    };
    let mut v = Verdict {
        algorithm: a.algorithm.clone().unwrap_or_else(|| "?".into()),
        algo: a.algorithm.as_deref().and_then(|name| reg.get(name)),
        workers: a.workers,
        text: crate::report::leaders_summary(&path.display().to_string(), &a),
        violations: a.violations,
        count: a.violation_count,
        split: a.split,
        cut_short: Vec::new(),
        entries: None,
        waits: Vec::new(),
        elections: Some(a.terms),
        model_broken: false,
        never_fired: None,
    };
    if let Known::Report(r) = known {
        if r.election().is_some() {
            v.ran(r, reg);
        }
    }
    Ok(v)
}

/// The page's one time origin: the run's start as the fault log gives it (the origin of
/// the summary's times), else the leader file's START, else the first thing drawn.
fn origin(tl: &Timeline) -> u64 {
    tl.origin.or(tl.start).or(tl.span().map(|(lo, _)| lo)).unwrap_or(0)
}

/// The overlaps the auditor found: who was inside first, who entered then, and when
/// the first of the two left (from the resource file's sections, when kept).
pub(crate) fn overlaps(violations: &[Violation], tl: &Timeline) -> Vec<logical::Overlap> {
    let exit = |line: usize| tl.sections.iter().find(|s| s.line == line).and_then(|s| s.exit);
    violations
        .iter()
        .enumerate()
        .filter(|(_, f)| f.kind == "overlap")
        .filter_map(|(i, f)| {
            let lines = data::lines_named(f);
            let (&second_line, &first_line) = (lines.first()?, lines.get(1)?);
            let (second, first) = (*tl.at_line.get(&second_line)?, *tl.at_line.get(&first_line)?);
            let until = match (exit(first_line), exit(second_line)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            Some(logical::Overlap { first, second, until, anchor: format!("v{i}") })
        })
        .collect()
}

/// A finding's text with the raw times it quotes (`t=<ns>`) as the page's ms from `t0`.
pub(crate) fn in_ms(detail: &str, t0: u64) -> String {
    let mut out = String::with_capacity(detail.len());
    let mut rest = detail;
    while let Some(i) = rest.find("t=") {
        let after = &rest[i + 2..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        // Only a whole field: `t=` after a space or quote, digits up to a space or quote.
        let whole = (i == 0 || matches!(rest.as_bytes()[i - 1], b' ' | b'"'))
            && after[digits..].chars().next().is_none_or(|c| !c.is_ascii_alphanumeric());
        match after[..digits].parse::<u64>() {
            Ok(ns) if whole && digits > 0 => {
                out.push_str(&rest[..i]);
                let _ = write!(out, "at {:.3} ms", ns.saturating_sub(t0) as f64 / 1e6);
                rest = &after[digits..];
            }
            _ => {
                out.push_str(&rest[..i + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `deadlock: w1 → w2 → w1`.
pub(crate) fn cycle_text(cycle: &[u32]) -> String {
    let names: Vec<String> = cycle.iter().chain(cycle.first()).map(|w| format!("w{w}")).collect();
    format!("deadlock: {}", names.join(" → "))
}

/// Whether `html` names no address but the SVG namespace: nothing to fetch.
#[cfg(test)]
fn fetches_nothing(html: &str) -> bool {
    let at: Vec<&str> = html.match_indices("http").map(|(i, _)| &html[i..(i + 30).min(html.len())]).collect();
    at.iter().all(|u| u.starts_with("http://www.w3.org/2000/svg") || u.starts_with("http-equiv"))
}

#[cfg(test)]
mod tests;
