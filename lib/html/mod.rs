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
//! hold), label placement and colours `labels.rs`, and this file lays out the page and
//! writes it whole, into a new file renamed over the name, never through a link. `compare.rs` makes the page of `mutexlab compare
//! --html` with the same head, style and escaping.
//!
//! Every string that comes from a file or a worker goes through [`esc`] before it
//! reaches the page: a field holding `<script>` is shown, never run.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::algos::{Shape, Theory};
use crate::audit::{self, AuditError, FaultLog, Violation, WaitStats};
use crate::control::{FAULT_LOG, LEADERS_FILE, RESOURCE_FILE};
use crate::supervisor::{Report, ServiceReport};

mod bars;
mod compare;
mod data;
mod events;
mod labels;
mod logical;
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

/// The report of the run in `run_dir`, from its files alone.
pub fn render(run_dir: &Path) -> Result<String, ReportError> {
    render_with(run_dir, Known::Files)
}

/// Write the report of `run_dir` to `out` (default `run_dir/report.html`); returns its path.
/// The default name is always replaced, never written through: whatever was planted
/// under it (a symlink to a file elsewhere, a FIFO) is left untouched.
pub fn write(run_dir: &Path, out: Option<&Path>, known: Known) -> Result<PathBuf, ReportError> {
    write_with_traces(run_dir, None, out, known)
}

/// [`write`], with the message trace read from `traces` when given (the trace files a
/// reader rebuilt from the flight recorder's rings of a run whose supervisor was
/// killed: [`crate::trace::traces_from_rings`]) instead of from `run_dir`.
pub fn write_with_traces(
    run_dir: &Path,
    traces: Option<&Path>,
    out: Option<&Path>,
    known: Known,
) -> Result<PathBuf, ReportError> {
    let html = render_traced(run_dir, traces, known)?;
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
    fn ran(&mut self, r: &Report) {
        self.text = crate::report::summary(r);
        self.violations.clone_from(&r.violations);
        self.count = r.violation_count;
        self.split.clone_from(&r.split);
        self.model_broken = r.model_broken;
        self.never_fired = crate::report::never_fired_line(r);
    }
}

/// The report of the run in `run_dir`, with whatever else is `known` of it.
pub fn render_with(run_dir: &Path, known: Known) -> Result<String, ReportError> {
    render_traced(run_dir, None, known)
}

/// [`render_with`], the trace read from `traces` if given (see [`write_with_traces`]).
fn render_traced(run_dir: &Path, traces: Option<&Path>, known: Known) -> Result<String, ReportError> {
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
        leaders_verdict(&leaders, &faults, known)?
    } else {
        mutex_verdict(&resource, &faults, known)?
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
    Ok(page(&shown, &v, &tl, lanes, known))
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

fn mutex_verdict(path: &Path, faults: &FaultLog, known: Known) -> Result<Verdict, ReportError> {
    let a = audit::audit_file(path, faults)?;
    let mut v = Verdict {
        algorithm: a.algorithm.clone().unwrap_or_else(|| "?".into()),
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
            v.ran(r);
        }
    }
    Ok(v)
}

fn leaders_verdict(path: &Path, faults: &FaultLog, known: Known) -> Result<Verdict, ReportError> {
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
            v.ran(r);
        }
    }
    Ok(v)
}

/// What every page shares: type, tables, notes, and the charts' axes.
const BASE_STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2330; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 24px 0 8px; }
pre { background: #f4f5f8; padding: 10px; overflow-x: auto; font-size: 12px; }
.ok { color: #1a7f37; font-weight: 600; } .bad { color: #c0262d; font-weight: 600; }
table { border-collapse: collapse; } td, th { padding: 2px 10px; text-align: left; border-bottom: 1px solid #e3e5ea; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #7a5b00; }
.scroll { overflow-x: auto; border: 1px solid #e3e5ea; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
line.tick { stroke: #eceef2; } text.tick { fill: #889; text-anchor: middle; }
code { font-size: 12px; }
"#;

/// The run report's own: the diagram, the theory band, the histograms, the findings.
const STYLE: &str = r#"
line.lane { stroke: #b8bfcc; } text.lane { font-weight: 600; }
rect.cs { fill: #3d7bd9; fill-opacity: .75; } rect.cs.open { fill: #8aa9d9; }
rect.cs.bad { fill: #d62d2d; fill-opacity: .9; }
rect.wait { fill: #9aa3b3; } rect.wait.unserved { fill: #e08a2e; }
rect.stopped { fill: url(#hatch); fill-opacity: .6; } rect.down { fill: #dfe2e8; }
line.fault-time { stroke: #999; stroke-width: .8; stroke-dasharray: 1 3; }
g.msg line { stroke-width: 1.3; } g.msg.lost line { stroke-dasharray: 3 2; }
g.msg.out line, g.msg.in line { stroke-dasharray: 1 2; }
text[data-label] { font: 9px monospace; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
text.role { fill: #8a5a00; font-weight: 700; }
rect.token { fill: #f2b600; fill-opacity: .35; }
g.stall line { stroke: #d62d2d; stroke-width: 1.5; stroke-dasharray: 4 3; } g.deadlock path { stroke: #d62d2d; stroke-width: 2.5; fill: none; }
text.deadlock { fill: #d62d2d; font-weight: 700; } div.stall { border-left: 4px solid #d62d2d; padding-left: 10px; }
g.break rect { fill: #f4f5f8; } g.break path { stroke: #778; stroke-width: 1.5; fill: none; }
g.fault.across polyline { stroke: #8a3ffc; stroke-width: 1.5; stroke-dasharray: 6 3; }
svg.defs { position: absolute; } svg.logical[hidden] { display: none; }
#axis-logical:checked ~ .view.wall, #axis-wall:checked ~ .view.logical { display: none; }
.axes label { margin-right: 14px; font-weight: 600; } .why-axis, .help { color: #555; font-size: 12px; }
.aggregate { display: flex; gap: 24px; flex-wrap: wrap; } figure { margin: 0; } figcaption { font-size: 12px; color: #555; }
.legend .key { margin-right: 14px; white-space: nowrap; } .legend svg { vertical-align: middle; margin-right: 3px; }
g.fault.kill path { stroke: #000; stroke-width: 3; } g.fault.restart path { fill: #1a7f37; }
g.fault.pause line { stroke: #a07f00; stroke-width: 2; }
g.fault.across line { stroke: #8a3ffc; stroke-width: 1.5; stroke-dasharray: 6 3; } g.fault.across text { fill: #8a3ffc; }
g.leader path { fill: #fff; stroke: #b07800; stroke-width: 1.5; } g.leader.own path { fill: #f2b600; }
g.refused circle { fill: #fff; stroke: #e08a2e; stroke-width: 2; }
g.violation circle { fill: #d62d2d; stroke: #fff; stroke-width: 1.5; }
svg.theory rect.band { fill: #2da44e; fill-opacity: .45; } svg.theory rect.measured { fill: #3d7bd9; }
svg.hist rect { fill: #3d7bd9; } svg.hist line.axis { stroke: #999; }
svg.wait-time circle { fill: #3d7bd9; fill-opacity: .7; } svg.wait-time rect.fault-period { fill: #e08a2e; fill-opacity: .18; }
svg.wait-time path.unserved { fill: #e08a2e; } svg.wait-time line.axis { stroke: #999; }
svg.hist line.p50 { stroke: #1a7f37; stroke-width: 2; } svg.hist line.p99 { stroke: #d62d2d; stroke-width: 2; }
.violations td:first-child, .listing td:first-child { white-space: nowrap; }
.listing tr:target, .violations tr:target { background: #ffe9a8; }
g.overlap rect { fill: #d62d2d; fill-opacity: .14; stroke: #d62d2d; stroke-width: 1.5; stroke-dasharray: 4 2; }
text.overlap { fill: #c0262d; font-weight: 700; } g.msg.enabler line { stroke-width: 3.5; }
g.jump path { stroke: #1a7f37; stroke-width: 2; fill: none; }
.finder { font-size: 12px; margin: 4px 0; } .finder .group { margin-right: 12px; } .finder label { white-space: nowrap; }
.pinned { font-size: 12px; border-left: 4px solid #3d7bd9; padding-left: 8px; margin: 4px 0; }
.pinned pre { margin: 2px 0; white-space: pre-wrap; }
.pinned table.state { border-collapse: collapse; margin: 2px 0 6px; } .pinned .state-head { margin-top: 4px; font-weight: 600; }
.pinned table.state th { text-align: left; font-weight: 600; padding-right: 10px; vertical-align: top; }
.pinned table.state td { font-family: monospace; white-space: pre-wrap; word-break: break-all; }
g[data-lmsg] { cursor: pointer; } g[data-lmsg] line.hit-area { stroke: transparent; stroke-width: 9; }
g[data-lmsg].hit line:first-child { stroke-width: 4; } g[data-lmsg].pinned line:first-child { stroke-width: 4; stroke: #000; }
g[data-lmsg].past line:first-child { stroke: #3d7bd9; stroke-width: 2.5; }
g[data-lmsg].future line:first-child { stroke: #1a7f37; stroke-width: 2.5; }
g[data-lmsg].dim { opacity: .15; }
"#;

/// Moves the logical diagram from window to window (its buttons), and counts what the
/// browser built, so a test can read it back from the rendered DOM:
/// for each `name=selector` in `#rendered`'s `data-count`, how many elements match, in
/// its `data-name`.
const SCRIPT: &str = r#"
document.addEventListener('click', function (ev) {
  var f = ev.target.closest && ev.target.closest('[data-show-window]');
  if (f) {
    var all = Array.prototype.slice.call(document.querySelectorAll('svg.logical'));
    var want = all[parseInt(f.getAttribute('data-show-window'), 10)];
    if (!want) return;
    all.forEach(function (w) { w.setAttribute('hidden', ''); });
    want.removeAttribute('hidden');
    var ax = document.getElementById('axis-logical');
    if (ax) ax.checked = true;
    var cap = document.getElementById('window-caption');
    if (cap) cap.textContent = want.getAttribute('data-caption');
    return;
  }
  var b = ev.target.closest && ev.target.closest('[data-go]');
  if (!b) return;
  var ws = Array.prototype.slice.call(document.querySelectorAll('svg.logical'));
  var cur = ws.findIndex(function (w) { return !w.hasAttribute('hidden'); });
  var next = Math.max(0, Math.min(ws.length - 1, cur + parseInt(b.getAttribute('data-go'), 10)));
  if (next === cur || cur < 0) return;
  ws[cur].setAttribute('hidden', '');
  ws[next].removeAttribute('hidden');
  var c = document.getElementById('window-caption');
  if (c) c.textContent = ws[next].getAttribute('data-caption');
});
// Both views' arrows: the logical windows' and the wall clock's.
function arrows() { return Array.prototype.slice.call(document.querySelectorAll('svg.logical [data-lmsg], svg.diagram [data-arrow]')); }
function kind(g) { return g.getAttribute('data-lmsg') || g.getAttribute('data-arrow'); }
function bound(id) { var b = document.getElementById(id), v = b ? parseFloat(b.value) : NaN; return isNaN(v) ? null : v; }
function said(name, n) { var r = document.getElementById('rendered'); if (r) r.setAttribute('data-' + name, String(n)); }
function ticked(sel, attr) {
  var off = {};
  document.querySelectorAll(sel).forEach(function (c) { if (!c.checked) off[c.getAttribute(attr)] = true; });
  return off;
}
// Hide, in both views, the unticked workers' lanes, bars and arrows, the unticked types'
// arrows, and the arrows whose event is outside the times asked for (ms).
function filter() {
  var w = ticked('[data-filter-w]', 'data-filter-w'), k = ticked('[data-filter-kind]', 'data-filter-kind'), hidden = 0;
  var lo = bound('from-ms'), hi = bound('to-ms');
  arrows().forEach(function (g) {
    var ms = parseFloat(g.getAttribute('data-ms'));
    var off = w[g.getAttribute('data-from')] || w[g.getAttribute('data-to')] || k[kind(g)] ||
      (lo !== null && ms < lo) || (hi !== null && ms > hi);
    if (off) { g.setAttribute('display', 'none'); hidden++; } else g.removeAttribute('display');
  });
  document.querySelectorAll('svg.logical [data-llane], svg.logical [data-w], svg.diagram [data-lane], svg.diagram [data-w]').forEach(function (e) {
    if (w[e.getAttribute('data-llane') || e.getAttribute('data-lane') || e.getAttribute('data-w')]) e.setAttribute('display', 'none'); else e.removeAttribute('display');
  });
  said('filter-hidden', hidden);
  find();
}
// Mark the shown arrows whose hover (type, ends, times, contents) holds the text.
function find() {
  var box = document.getElementById('find-text');
  var q = box ? box.value.trim().toLowerCase() : '', hits = 0;
  arrows().forEach(function (g) {
    var t = g.querySelector('title'), on = q !== '' && !g.hasAttribute('display') && !!t && t.textContent.toLowerCase().indexOf(q) >= 0;
    g.classList.toggle('hit', on);
    if (on) hits++;
  });
  var c = document.getElementById('find-count');
  if (c) c.textContent = q === '' ? '' : hits + (hits === 1 ? ' arrow matches' : ' arrows match') + ' (both views, every window)';
  said('search-hits', hits);
}
function vc(g) { return (g.getAttribute('data-vc') || '').split(',').map(Number); }
function le(a, b) { for (var i = 0; i < a.length; i++) if (!(a[i] <= b[i])) return false; return a.length === b.length; }
// Pin an arrow: its hover in the panel, and the shown arrows of its window in its causal
// past (their event's clock at most its own) and future (at least) marked, the rest dimmed.
function pin(g) {
  var me = vc(g), past = 0, future = 0;
  arrows().forEach(function (o) { o.classList.remove('pinned', 'past', 'future', 'dim'); });
  g.closest('svg').querySelectorAll('[data-lmsg]').forEach(function (o) {
    if (o === g) { o.classList.add('pinned'); return; }
    if (o.hasAttribute('display')) return;
    var v = vc(o);
    if (le(v, me)) { o.classList.add('past'); past++; }
    else if (le(me, v)) { o.classList.add('future'); future++; }
    else o.classList.add('dim');
  });
  var t = g.querySelector('title'), p = document.getElementById('pinned-text');
  if (p) p.textContent = (t ? t.textContent : '') + '\n' + past + ' arrows in its causal past, ' + future + ' in its future';
  pinStates(g);
  said('causal-past', past);
  said('causal-future', future);
}
// The pinned arrow's node states (run --states): the sender's last recorded state before
// its SEND (after the step that sent it), the receiver's before its RECV (before handling it).
function pinStates(g) {
  var ps = document.getElementById('pinned-states'), store = document.getElementById('node-states'), shown = 0;
  if (!ps) return;
  ps.textContent = '';
  if (!store) { ps.textContent = ps.getAttribute('data-none') || ''; said('pinned-states', 0); return; }
  [['data-sst', 'data-from', 'when it sent this (after the step that sent it)'],
   ['data-rst', 'data-to', 'when this arrived (before it handled it)']].forEach(function (x) {
    var i = g.getAttribute(x[0]);
    if (i === null) return;
    var src = i === '-' ? null : store.querySelector('[data-state="' + i + '"]');
    var d = document.createElement('div'), h = document.createElement('div');
    h.className = 'state-head';
    var none = 'none recorded before it in this life' +
      (store.getAttribute('data-over') !== '0' ? ', or past the page\'s ' + store.getAttribute('data-max') + ' states' : '');
    h.textContent = 'w' + g.getAttribute(x[1]) + '\'s state ' + x[2] + ': ' + (src ? src.getAttribute('data-caption') : none);
    d.appendChild(h);
    if (src && src.firstElementChild) { d.appendChild(src.firstElementChild.cloneNode(true)); shown++; }
    ps.appendChild(d);
  });
  said('pinned-states', shown);
}
document.addEventListener('change', function (ev) {
  if (ev.target.closest && ev.target.closest('.finder')) filter();
});
document.addEventListener('input', function (ev) {
  if (ev.target.id === 'find-text') find();
  if (ev.target.id === 'from-ms' || ev.target.id === 'to-ms') filter();
});
// A wall-clock arrow has no vector clock: pinned, its contents only.
function pinWall(g) {
  arrows().forEach(function (o) { o.classList.remove('pinned', 'past', 'future', 'dim'); });
  g.classList.add('pinned');
  var t = g.querySelector('title'), p = document.getElementById('pinned-text');
  if (p) p.textContent = (t ? t.textContent : '') + '\n(its causal past and future, and its ends\' states, are shown for its arrow on the logical axis)';
  var ps = document.getElementById('pinned-states');
  if (ps) ps.textContent = '';
}
document.addEventListener('click', function (ev) {
  var g = ev.target.closest && ev.target.closest('svg.logical [data-lmsg]');
  if (g) pin(g);
  var a = ev.target.closest && ev.target.closest('svg.diagram [data-arrow]');
  if (a) pinWall(a);
});
document.addEventListener('DOMContentLoaded', function () {
  // A wider, invisible line over each arrow, so a 1.3 px arrow can be clicked.
  arrows().forEach(function (g) {
    var l = g.querySelector('line');
    if (!l) return;
    var h = l.cloneNode(false);
    h.setAttribute('class', 'hit-area');
    h.removeAttribute('marker-end');
    g.appendChild(h);
  });
  var r = document.getElementById('rendered');
  if (!r) return;
  (r.getAttribute('data-count') || '').split(';').forEach(function (pair) {
    var i = pair.indexOf('=');
    if (i > 0) r.setAttribute('data-' + pair.slice(0, i), String(document.querySelectorAll(pair.slice(i + 1)).length));
  });
});
"#;

/// The hidden element [`SCRIPT`] writes its counts into, asking for each `(name,
/// selector)` of `counts`.
fn rendered(counts: &[(&str, &str)]) -> String {
    let asked: Vec<String> = counts.iter().map(|(name, sel)| format!("{name}={sel}")).collect();
    format!("<div id=\"rendered\" hidden data-count=\"{}\"></div>", esc(&asked.join(";")))
}

/// The start of a page up to its heading: nothing may be fetched (the policy allows
/// only what is inline), the shared style plus `style`, and `script`.
fn head(s: &mut String, title: &str, style: &str, script: &str) {
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\
         <title>{}</title><style>{BASE_STYLE}{style}</style><script>{script}</script></head><body>\n",
        esc(title)
    );
    let _ = writeln!(s, "<h1>{}</h1>", esc(title));
}

fn page(dir: &str, v: &Verdict, tl: &Timeline, lanes: u32, known: Known) -> String {
    let mut s = String::new();
    let title = format!("mutexlab report: {}, {} workers", v.algorithm, v.workers);
    head(&mut s, &title, STYLE, SCRIPT);
    let verdict = if v.model_broken {
        // As the text summary says: what the audit found is no verdict on the algorithm.
        format!(
            "<span class=\"bad\">audit: no verdict: the run broke the algorithm's model</span> ({} finding(s), <a href=\"#findings\">listed below</a>)",
            v.count
        )
    } else if v.count == 0 {
        "<span class=\"ok\">audit OK: no violations</span>".to_string()
    } else {
        // Safety and liveness apart: a stall is no safety failure.
        let class = |ok: bool| if ok { "ok" } else { "bad" };
        let line = v.split.line();
        let (safety, liveness) = line.split_once("; ").unwrap_or((&line, ""));
        format!(
            "audit: <span class=\"{}\">{}</span>; <span class=\"{}\">{}</span> (<a href=\"#findings\">listed below</a>)",
            class(v.split.safety_violations == 0),
            esc(safety),
            class(v.split.liveness_violations == 0),
            esc(liveness)
        )
    };
    let _ = writeln!(s, "<p>Run directory <code>{}</code>. {verdict}</p>", esc(dir));
    if let Some(line) = &v.never_fired {
        let _ = writeln!(s, "<p class=\"note\" data-never-fired=\"\">{}</p>", esc(line));
    }
    if tl.interrupted {
        let _ = writeln!(
            s,
            "<p><span class=\"bad\">Interrupted</span> (SIGINT or SIGTERM): the run as far as it got.</p>"
        );
    }
    let _ = writeln!(
        s,
        "{}",
        rendered(&[
            ("lanes", "svg.diagram [data-lane]"),
            ("arrows", "svg.diagram [data-arrow]"),
            ("cs", r#"svg.diagram [data-bar="cs"]"#),
            ("waits", r#"svg.diagram [data-bar="wait"]"#),
            ("faults", "svg.diagram [data-fault]"),
            ("violations", "svg.diagram [data-violation]"),
            ("deadlocks", "svg.diagram [data-deadlock]"),
            ("ldeadlocks", "svg.logical [data-deadlock]"),
            ("roles", "svg.diagram [data-role]"),
            ("lroles", "svg.logical [data-role]"),
            ("lfaults-open", "svg.logical:not([hidden]) [data-fault]"),
            ("overlaps", "svg.logical [data-overlap]"),
            ("enablers", "svg.logical [data-enabler]"),
        ])
    );

    diagrams(&mut s, v, tl, lanes);
    messages(&mut s, v, tl, known);
    let _ = writeln!(s, "<h2>Summary</h2>\n<pre>{}</pre>", esc(&v.text));
    waits(&mut s, v, tl);
    findings(&mut s, v, tl);
    let _ = writeln!(s, "</body></html>");
    s
}

/// The page's one time origin: the run's start as the fault log gives it (the origin of
/// the summary's times), else the leader file's START, else the first thing drawn.
fn origin(tl: &Timeline) -> u64 {
    tl.origin.or(tl.start).or(tl.span().map(|(lo, _)| lo)).unwrap_or(0)
}

/// Lane names, with the role the trace shows: the one worker that sends every GRANT
/// is the coordinator.
fn lane_names(tl: &Timeline, lanes: u32) -> Vec<String> {
    let grants = &tl.granters;
    (0..lanes)
        .map(
            |w| {
                if grants.len() == 1 && grants.contains(&w) {
                    format!("w{w} coord")
                } else {
                    format!("w{w}")
                }
            },
        )
        .collect()
}

/// The space-time diagram on both axes, the switch between them, and the legend.
fn diagrams(s: &mut String, v: &Verdict, tl: &Timeline, lanes: u32) {
    let types: Vec<&str> =
        tl.message_types.keys().map(String::as_str).chain(tl.arrows.iter().map(|a| a.msg.as_str())).collect();
    let colours = labels::Colours::new(types);
    let names = lane_names(tl, lanes);
    let t0 = origin(tl);
    let wall = svg::Wall { t0, colours: &colours, names: &names };
    let drawn = svg::diagram(tl, lanes, &v.violations, &wall);
    let origin = if tl.origin.is_some() {
        "the run's start (as in the summary)"
    } else if tl.start.is_some() {
        "the run's start"
    } else {
        "the first event"
    };
    let _ = writeln!(s, "<h2 id=\"diagram\">Space-time diagram</h2>");
    let what = if v.entries.is_some() {
        "Blue bars: critical sections (ENTER to EXIT); thin grey bars: waits (WANT to ENTER), \
         orange when never served; orange rings: writes a fenced resource refused; red: sections \
         and records the auditor flagged"
    } else {
        "Diamonds: a worker accepts a leader (filled: itself, named with its term); red: records the auditor flagged"
    };
    let _ = writeln!(
        s,
        "<p>One lane per worker, times in ms from {origin}. {what} (click a red dot for \
         the finding); arrows: messages, coloured by type, each labelled beside its send on the \
         sender's lane when there is room; ✕ kill (grey until ▲ restart); hatched: paused; \
         dotted lines: when a fault hit; dashed purple lines: partitions and heals; a gold \
         band: the worker holds the token; a lane named \"coord\": the one worker that sends \
         every GRANT; \"leader, term N\": a worker accepts itself as leader; a red line at the \
         end: the stall, and red arcs between lanes: a deadlock, each worker waiting for the next. Hover \
         over anything for its details: a message's hover has both ends' times and Lamport \
         clocks (lc) and, when the trace recorded it, its contents.</p>"
    );
    stall_note(s, tl, t0);
    match &tl.trace_error {
        Some(e) => {
            let _ = writeln!(
                s,
                "<p class=\"note\">The message trace could not be read, so no arrows: {}</p>",
                esc(e)
            );
        }
        None if tl.messages == 0 => {
            let _ = writeln!(s, "<p class=\"note\">No message trace in this directory: no arrows.</p>");
        }
        None => {}
    }
    for n in &tl.trace_notes {
        let _ = writeln!(s, "<p class=\"note\">Message trace: {}</p>", esc(n));
    }
    for n in &drawn.notes {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(n));
    }
    s.push_str(&svg::defs());
    legend(s, &colours, tl);
    if lanes >= AGGREGATE_FROM && tl.messages > 0 {
        aggregate(s, tl, lanes, &colours, t0, drawn.labelled);
    }
    // The logical axis needs the trace's events; without them, the wall clock alone.
    let wall_view = format!(
        "<div class=\"view wall\">{}<div class=\"scroll\">{}</div></div>",
        dropped_note(drawn.dropped),
        drawn.svg
    );
    if tl.windows.is_empty() {
        let _ = writeln!(s, "{wall_view}");
        return;
    }
    let open = [FIRST_VIOLATION, FIRST_FAULT, FIRST_ELECTION]
        .iter()
        .find_map(|why| tl.windows.iter().position(|w| w.why.iter().any(|x| x == why)))
        .unwrap_or(0);
    let findings: Vec<(u32, u64, String, String)> = v
        .violations
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let &(w, t) = tl.at_line.get(&f.line)?;
            Some((w, t, format!("v{i}"), format!("{} at line {}: {}", f.kind, f.line, in_ms(&f.detail, t0))))
        })
        .collect();
    let faults: Vec<&data::FaultMark> = tl.faults.iter().collect();
    let pauses: Vec<&data::Pause> = tl.pauses.iter().collect();
    let unserved: Vec<(u32, u64)> = tl.unserved.iter().map(|u| (u.w, u.want)).collect();
    // As on the wall clock: a section whose ENTER is a finding's own line.
    let flagged: Vec<(u32, u64)> = v
        .violations
        .iter()
        .filter(|f| tl.listed.get(&f.line).is_some_and(|l| l.starts_with("ENTER ")))
        .filter_map(|f| tl.at_line.get(&f.line).copied())
        .collect();
    let overlaps = overlaps(&v.violations, tl);
    let cx = logical::Ctx {
        lanes,
        t0,
        colours: &colours,
        bodies: &tl.bodies,
        states: &tl.states,
        faults: &faults,
        findings: &findings,
        names: &names,
        stall: tl.stall.as_ref(),
        pauses: &pauses,
        unserved: &unserved,
        flagged: &flagged,
        overlaps: &overlaps,
        fates: &tl.fates,
    };
    let of = tl.windows.len();
    let mut svgs = String::new();
    let mut dropped = Vec::new();
    for (k, w) in tl.windows.iter().enumerate() {
        let d = logical::window(w, k, of, tl.events, k == open, &cx);
        svgs.push_str(&d.svg);
        dropped.push(d.dropped);
    }
    // Logical by default where the wall clock squashes the opening window's messages.
    let logical_first = squashed(tl, &tl.windows[open], t0);
    let (lc, wc) = if logical_first { (" checked", "") } else { ("", " checked") };
    let _ = writeln!(
        s,
        "<div class=\"axes\"><input type=\"radio\" name=\"axis\" id=\"axis-logical\"{lc}>\
         <label for=\"axis-logical\">logical time</label> \
         <input type=\"radio\" name=\"axis\" id=\"axis-wall\"{wc}>\
         <label for=\"axis-wall\">wall clock (idle stretches shortened)</label>\
         <span class=\"why-axis\">{}</span>\n{finder}\
         <div class=\"view logical\" data-axis=\"logical\"><p class=\"nav\">\
         <button type=\"button\" data-go=\"-1\">◀ earlier</button> \
         <button type=\"button\" data-go=\"1\">later ▶</button> \
         <span id=\"window-caption\">{}</span></p>\
         <p class=\"help\">One step per event: each event is one step right of its worker's previous event and of \
         the send it receives (Lamport's clock recomputed over the window), so no arrow points backwards. \
         The axis gives the step and the time by which everything left of it had happened, where nothing right of it happened \
         earlier (a step where workers' times cross has none). A worker's first event after a restart or a pause jumps right \
         of every earlier event (//). A message whose other end is outside the window is a short stub: dashed if it was never received. \
         Shaded: paused or down, as on the wall clock; a red band across two lanes: both inside at once, the thick arrow the \
         message that let the second in. \
         Between windows, events are not drawn on this axis: the wall clock shows the whole run.</p>\
         {}<div class=\"scroll\">{svgs}</div></div>\n{wall_view}</div>",
        if logical_first {
            "Opened on logical time: on the wall clock, a quarter or more of this window's messages start within 4 px of another."
        } else {
            "Opened on the wall clock: its messages are far enough apart there; logical time gives one step per event."
        },
        esc(&format!(
            "window {} of {of}: events {}–{} of {}{}",
            open + 1,
            tl.windows[open].first + 1,
            tl.windows[open].first + tl.windows[open].events.len() as u64,
            tl.events,
            if tl.windows[open].why.is_empty() {
                String::new()
            } else {
                format!(", opened on {}", tl.windows[open].why.join(" and "))
            }
        )),
        dropped_note(dropped.iter().sum()),
        finder = finder(lanes, &tl.windows, &tl.states, t0),
    );
}

/// The toolbar and pinned panel of both views: a box per worker and per message type in
/// the windows (unticked: hidden), a time range, a search over the arrows' hovers, and
/// the panel a clicked arrow's contents, causal counts and ends' states go into
/// ([`SCRIPT`] drives them).
fn finder(lanes: u32, windows: &[events::Window], states: &events::NodeStates, t0: u64) -> String {
    let kinds: BTreeSet<&str> = windows
        .iter()
        .flat_map(|w| &w.events)
        .filter_map(|e| match &e.kind {
            crate::trace::EventKind::Send { msg, .. } | crate::trace::EventKind::Recv { msg, .. } => {
                Some(msg.as_str())
            }
            _ => None,
        })
        .collect();
    let mut s = String::from("<div class=\"finder\"><span class=\"group\">workers:");
    for w in 0..lanes {
        let _ = write!(s, " <label><input type=\"checkbox\" checked data-filter-w=\"{w}\">w{w}</label>");
    }
    s.push_str("</span> <span class=\"group\">messages:");
    for k in kinds {
        let _ = write!(
            s,
            " <label><input type=\"checkbox\" checked data-filter-kind=\"{}\">{}</label>",
            esc(k),
            esc(k)
        );
    }
    s.push_str(
        "</span> <label>from <input type=\"number\" step=\"any\" min=\"0\" id=\"from-ms\" size=\"8\"></label> \
         <label>to <input type=\"number\" step=\"any\" min=\"0\" id=\"to-ms\" size=\"8\"> ms</label> \
         <label>find <input type=\"search\" id=\"find-text\" placeholder=\"in type, ends, contents\"></label> \
         <span id=\"find-count\"></span></div>\
         <div id=\"pinned\" class=\"pinned\"><span class=\"help\">Click an arrow: its contents stay here; \
         arrows sent in its causal past are drawn blue, those in its future green, the rest dimmed.</span>\
         <pre id=\"pinned-text\"></pre>",
    );
    s.push_str(&state_store(states, t0));
    s.push_str("</div>");
    s
}

/// The pinned panel's node states (`run --states`): where [`SCRIPT`] puts a clicked
/// arrow's sender's and receiver's states, and the states themselves, hidden, each a
/// table of its fields (or its text, when it is no JSON object or was cut), with a
/// caption saying whose and when. A run that recorded none says so there.
fn state_store(states: &events::NodeStates, t0: u64) -> String {
    if states.recorded == 0 {
        return "<div id=\"pinned-states\" data-none=\"This run recorded no node states \
                (run --states records them).\"></div>"
            .into();
    }
    let mut s = format!(
        "<div id=\"pinned-states\"></div><div id=\"node-states\" hidden data-over=\"{}\" data-max=\"{}\">",
        states.over,
        events::MAX_STATES
    );
    for (i, st) in states.list.iter().enumerate() {
        let caption = format!(
            "w{}, life {}, recorded at {:.3} ms (lc {}){}",
            st.w,
            st.inc,
            st.t.saturating_sub(t0) as f64 / 1e6,
            st.lc,
            if st.cut() { format!(", cut at {} bytes", crate::trace::STATE_MAX) } else { String::new() }
        );
        let _ = write!(s, "<div data-state=\"{i}\" data-caption=\"{}\">", esc(&caption));
        match serde_json::from_str::<serde_json::Value>(&st.json) {
            Ok(serde_json::Value::Object(fields)) => {
                s.push_str("<table class=\"state\">");
                for (name, value) in &fields {
                    let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(name), esc(&value.to_string()));
                }
                s.push_str("</table>");
            }
            _ => {
                let _ = write!(s, "<pre class=\"state\">{}</pre>", esc(&st.json));
            }
        }
        s.push_str("</div>");
    }
    s.push_str("</div>");
    s
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

/// The window of the logical diagram that holds time `t`, if one does.
fn window_at(tl: &Timeline, t: u64) -> Option<usize> {
    tl.windows.iter().position(|w| {
        let (lo, hi) = (w.events.iter().map(|e| e.t).min(), w.events.iter().map(|e| e.t).max());
        lo.zip(hi).is_some_and(|(lo, hi)| lo <= t && t <= hi)
    })
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

/// What the page says of a stall: when it was diagnosed, its deadlocks (drawn on both
/// axes), and the diagnosis itself.
fn stall_note(s: &mut String, tl: &Timeline, t0: u64) {
    if let Some(e) = &tl.stall_error {
        let _ = writeln!(s, "<p class=\"note\">The stall's diagnosis could not be read: {}</p>", esc(e));
    }
    let Some(st) = &tl.stall else { return };
    let at = st.t.saturating_sub(t0) as f64 / 1e6;
    let found = if st.deadlocks.is_empty() {
        "its waits form no cycle (no deadlock)".to_string()
    } else {
        let cycles: Vec<String> = st
            .deadlocks
            .iter()
            .map(|c| format!("<strong data-deadlock-text=\"\">{}</strong>", esc(&cycle_text(c))))
            .collect();
        format!(
            "{} (each waits for the next), drawn in red between the lanes at the stall, on both axes",
            cycles.join(", ")
        )
    };
    let _ = writeln!(
        s,
        "<div class=\"stall\" data-stall=\"{}\"><p><span class=\"bad\">Stalled</span>: no progress, \
         diagnosed at {at:.3} ms; {found}.</p><details><summary>The diagnosis</summary><pre>{}</pre></details></div>",
        st.deadlocks.len(),
        esc(&st.text)
    );
}

/// From this many workers on, the page leads with the aggregate view: too many lanes
/// for arrows alone to be read.
const AGGREGATE_FROM: u32 = 12;

/// The whole trace counted, not drawn: messages per pair of workers and over the run,
/// with what the diagrams below leave out.
fn aggregate(s: &mut String, tl: &Timeline, lanes: u32, colours: &labels::Colours, t0: u64, labelled: usize) {
    let drawn = tl.arrows.len().div_ceil(tl.arrows.len().div_ceil(svg::MAX_ARROWS).max(1));
    let _ = writeln!(
        s,
        "<h3>All {} messages, counted</h3><p data-aggregate=\"{lanes}\">With {lanes} workers the arrows \
         below cannot all be read: here every message the trace holds is counted. The wall-clock diagram \
         draws {drawn} of them as arrows ({}), the logical one {} windows of {} events; {labelled} of the \
         wall clock's arrows are labelled, where there is room (every hover has the type).</p>\n\
         <div class=\"aggregate\"><figure><figcaption>Per pair: sender (row) to receiver (column)</figcaption>{}</figure>\
         <figure><figcaption>Over the run: messages in {} stretches of equal events, by type</figcaption>{}</figure></div>",
        tl.messages,
        if drawn as u64 >= tl.messages { "all".to_string() } else { format!("one in {}", tl.messages.div_ceil(drawn.max(1) as u64)) },
        tl.windows.len(),
        events::WINDOW,
        svg::pair_matrix(&tl.pairs, lanes),
        tl.slices.len(),
        svg::over_time(&tl.slices, colours, t0),
    );
}

/// Whether the wall clock squashes `win`: a quarter or more of its sends are within
/// 4 px of another send on the wall-clock axis.
fn squashed(tl: &Timeline, win: &events::Window, t0: u64) -> bool {
    let sc = svg::Scale::new(t0, tl.times());
    let mut xs: Vec<(u32, f64)> = win
        .events
        .iter()
        .filter(|e| matches!(e.kind, crate::trace::EventKind::Send { .. }))
        .map(|e| (e.w, sc.x(e.t)))
        .collect();
    if xs.len() < 2 {
        return false;
    }
    xs.sort_by(|a, b| a.1.total_cmp(&b.1));
    let close = xs.windows(2).filter(|p| p[1].1 - p[0].1 < 4.0).count();
    close * 4 >= xs.len()
}

/// What the page says of labels left out.
fn dropped_note(n: usize) -> String {
    if n == 0 {
        return String::new();
    }
    format!(
        "<p class=\"note\" data-dropped=\"{n}\">{n} message label(s) left out for lack of room; each arrow's hover still names its type.</p>"
    )
}

/// One swatch per message type, in the colour its arrows and labels have.
fn legend(s: &mut String, colours: &labels::Colours, tl: &Timeline) {
    if colours.types.is_empty() {
        return;
    }
    let _ = write!(s, "<p class=\"legend\" id=\"legend\">");
    for ty in &colours.types {
        let n = tl.message_types.get(ty).copied().unwrap_or(0);
        let _ = write!(
            s,
            "<span class=\"key\" data-legend=\"{t}\"><svg width=\"22\" height=\"10\" aria-hidden=\"true\"><line x1=\"1\" y1=\"5\" x2=\"21\" y2=\"5\" stroke=\"{c}\" stroke-width=\"3\"/></svg>{t} <small>({n})</small></span> ",
            t = esc(ty),
            c = colours.of(ty),
        );
    }
    let _ = writeln!(s, "</p>");
}

/// Messages by type and per entry, beside the algorithm's theory.
fn messages(s: &mut String, v: &Verdict, tl: &Timeline, known: Known) {
    let (by_type, source): (BTreeMap<String, u64>, &str) = match known {
        Known::Report(r) => (r.by_type().clone(), "the workers' own counts"),
        Known::Files if tl.messages > 0 => (tl.message_types.clone(), "the message trace"),
        Known::Files => (BTreeMap::new(), ""),
    };
    let _ = writeln!(s, "<h2>Messages</h2>");
    if by_type.is_empty() {
        let why = match known {
            Known::Files => "Not recorded: no message trace in this directory.",
            _ => "No messages were sent.",
        };
        let _ = writeln!(s, "<p>{why}</p>");
    }
    // Per entry, or per election; the totals as the text summary gives them (an
    // election's leave the heartbeats aside).
    let (what, count, total) = match known {
        Known::Report(r) => {
            let (total, per) = r.counted();
            let (what, count, label) = match &r.service {
                ServiceReport::Mutex(m) => ("per entry", m.entries.total, "total"),
                ServiceReport::Election(e) => ("per election", e.elections as u64, "total, HEARTBEAT aside"),
            };
            (what, count, Some((label, (total, format!("{per:.2}")))))
        }
        Known::Files => match v.elections {
            Some(held) => ("per election", held as u64, None),
            None => ("per entry", v.entries.unwrap_or(0), None),
        },
    };
    let per = |n: u64| if count > 0 { format!("{:.2}", n as f64 / count as f64) } else { "–".into() };
    // The figure the theory speaks of: the summary's own when known.
    let measured = match known {
        Known::Report(r) => Some(r.counted().1),
        Known::Files if count > 0 && !by_type.is_empty() => {
            Some(by_type.values().sum::<u64>() as f64 / count as f64)
        }
        Known::Files => None,
    };
    if !by_type.is_empty() {
        let _ = writeln!(s, "<p>From {source}.</p><table><tr><th>type</th><th>sent</th><th>{what}</th></tr>");
        for (k, n) in &by_type {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"n\">{n}</td><td class=\"n\">{}</td></tr>",
                esc(k),
                per(*n)
            );
        }
        let sum: u64 = by_type.values().sum();
        let (label, (n, each)) = total.unwrap_or(("total", (sum, per(sum))));
        let _ = writeln!(s, "<tr><th>{label}</th><td class=\"n\">{n}</td><td class=\"n\">{each}</td></tr>");
    } else {
        let _ = writeln!(s, "<table>");
    }
    let (theory, assumed) = match known {
        Known::Report(r) => (r.theory().cloned(), None),
        Known::Files => files_theory(v),
    };
    if let Some(t) = theory {
        let range = if t.per_entry_min == t.per_entry_max {
            format!("{:.2}", t.per_entry_min)
        } else if t.per_entry_max.is_finite() {
            format!("{:.2} to {:.2}", t.per_entry_min, t.per_entry_max)
        } else {
            format!("at least {:.2}", t.per_entry_min)
        };
        let _ = writeln!(
            s,
            "<tr><th>theory</th><td></td><td class=\"n\">{range}</td><td>{what}: {}</td></tr>",
            esc(&t.formula)
        );
        let _ = writeln!(s, "</table>");
        if let Some(a) = assumed {
            let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(&a));
        }
        if let Some(measured) = measured {
            s.push_str(&svg::against_theory(measured, t.per_entry_min, t.per_entry_max, what));
        }
        return;
    }
    let _ = writeln!(s, "</table>");
}

/// The theory for a run known from its files alone, which record the algorithm and the
/// worker count but not `--replicas` (voting) or `--initiators` (elections): for those
/// the commands' defaults are assumed, and the sentence that says so comes back when
/// the assumption changes the figure.
fn files_theory(v: &Verdict) -> (Option<Theory>, Option<String>) {
    let Some(a) = crate::registry::info(&v.algorithm) else { return (None, None) };
    let shape = |initiators| Shape { n: v.workers, replicas: None, initiators };
    if v.elections.is_some() {
        // `mutexlab elect` starts with every worker calling an election.
        let all = (a.theory)(shape(v.workers));
        let one = (a.theory)(shape(1));
        let differs = all.as_ref().map(|t| (t.per_entry_min, t.per_entry_max))
            != one.as_ref().map(|t| (t.per_entry_min, t.per_entry_max));
        let note = differs.then(|| {
            format!(
                "The files do not record who called the first election; the theory assumes all \
                 {} workers did (--initiators all, the default of mutexlab elect).",
                v.workers
            )
        });
        return (all, note);
    }
    let t = (a.theory)(shape(0));
    let note = t.as_ref().and_then(|t| t.replicas).map(|m| {
        format!("The files do not record --replicas; the theory assumes the default, m = {m} coordinators.")
    });
    (t, note)
}

/// Each worker's waits as a histogram on one shared scale, with the auditor's figures.
fn waits(s: &mut String, v: &Verdict, tl: &Timeline) {
    if v.entries.is_none() {
        return;
    }
    let by = &tl.hist.bins;
    let plot = svg::wait_over_time(tl, origin(tl));
    if !plot.is_empty() {
        let _ = writeln!(
            s,
            "<h2>Waits over the run</h2>\n<p>Each wait drawn where it was asked for (ms from the page's \
             origin) and as high as it lasted (log scale); orange triangles at the top: requests never \
             served; shaded: while a worker was paused or down, or the network partitioned.</p>\n{plot}"
        );
    }
    let many = v.waits.len() > AGGREGATE_FROM as usize;
    let _ = writeln!(
        s,
        "<h2>Wait times by worker</h2>\n<p>WANT to ENTER, on one log scale for all workers \
         (each bin a fixed factor longer than the one before, so waits of microseconds and of \
         seconds both show); green line p50, red line p99 (the auditor's figures).</p>\n\
         <details{}><summary>{} workers</summary><table><tr><th>worker</th><th>waits</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th><th>mean ms</th><th>distribution</th></tr>",
        if many { "" } else { " open" },
        v.waits.len()
    );
    let workers = v.waits.len().max(by.keys().last().map_or(0, |w| *w as usize + 1));
    for w in 0..workers as u32 {
        let st = v.waits.get(w as usize).cloned().unwrap_or_default();
        let bins = by.get(&w).copied().unwrap_or_default();
        let _ = writeln!(
            s,
            "<tr><td>w{w}</td><td class=\"n\">{}</td><td class=\"n\">{:.3}</td><td class=\"n\">{:.3}</td>\
             <td class=\"n\">{:.3}</td><td class=\"n\">{:.3}</td><td>{}</td></tr>",
            st.count,
            st.p50,
            st.p99,
            st.max,
            st.mean,
            svg::wait_histogram(w, &bins, &tl.hist, &st)
        );
    }
    let _ = writeln!(s, "</table></details>");
}

/// The findings, each with an anchor, and the file's lines they point at.
fn findings(s: &mut String, v: &Verdict, tl: &Timeline) {
    let _ = writeln!(s, "<h2 id=\"findings\">Findings</h2>");
    if v.violations.is_empty() && v.cut_short.is_empty() {
        let _ = writeln!(s, "<p>None.</p>");
        return;
    }
    let line_link = |n: usize| {
        if tl.listed.contains_key(&n) {
            format!("<a href=\"#L{n}\">line {n}</a>")
        } else if n > 0 {
            format!("line {n}")
        } else {
            "whole file".into()
        }
    };
    let t0 = origin(tl);
    // Where a finding is drawn: the logical window that holds its line's moment.
    let drawn = |f: &Violation| -> String {
        let Some(&(w, t)) = tl.at_line.get(&f.line) else { return String::new() };
        let at = format!("w{w} at {:.3} ms", t.saturating_sub(t0) as f64 / 1e6);
        match window_at(tl, t) {
            Some(k) => format!(
                ", <a href=\"#diagram\" data-show-window=\"{k}\">{at}, window {} of the diagram</a>",
                k + 1
            ),
            None => format!(", {at}"),
        }
    };
    let _ = writeln!(s, "<table class=\"violations\"><tr><th>kind</th><th>where</th><th>what</th></tr>");
    for (i, f) in v.violations.iter().enumerate() {
        let _ = writeln!(
            s,
            "<tr id=\"v{i}\"><td class=\"bad\">{}</td><td>{}{}</td><td>{}</td></tr>",
            esc(f.kind),
            line_link(f.line),
            drawn(f),
            esc(&in_ms(&f.detail, t0))
        );
    }
    for f in &v.cut_short {
        let _ = writeln!(
            s,
            "<tr><td>{} (not a violation)</td><td>{}</td><td>{}</td></tr>",
            esc(f.kind),
            line_link(f.line),
            esc(&in_ms(&f.detail, t0))
        );
    }
    let _ = writeln!(s, "</table>");
    if v.count > v.violations.len() {
        let _ = writeln!(
            s,
            "<p class=\"note\">{} more violations were counted but not kept.</p>",
            v.count - v.violations.len()
        );
    }
    let _ = writeln!(s, "<h2>The lines they point at</h2>\n<table class=\"listing\">");
    for (n, text) in &tl.listed {
        let _ = writeln!(s, "<tr id=\"L{n}\"><td>{n}</td><td><code>{}</code></td></tr>", esc(text));
    }
    let _ = writeln!(s, "</table>");
}

/// Whether `html` names no address but the SVG namespace: nothing to fetch.
#[cfg(test)]
fn fetches_nothing(html: &str) -> bool {
    let at: Vec<&str> = html.match_indices("http").map(|(i, _)| &html[i..(i + 30).min(html.len())]).collect();
    at.iter().all(|u| u.starts_with("http://www.w3.org/2000/svg") || u.starts_with("http-equiv"))
}

#[cfg(test)]
mod tests;
