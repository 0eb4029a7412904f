//! Exports of a kept run's message trace (`mutexlab trace`): its lines merged in time
//! order, or the log ShiViz reads (`--shiviz`); whole, or a [`Part`] of it (a time window
//! since the run's start, some of the workers) for a run too big to look at whole.
//!
//! # ShiViz's log
//!
//! ShiViz (<https://bestchai.bitbucket.io/shiviz/>) parses a log with the regex on its
//! first line ([`SHIVIZ_REGEX`], its own default), an empty second line (one execution,
//! no delimiter), then for every event its text on one line and, below it,
//! `w<ID> {"w<ID>":n,…}`: its host and vector clock (zeros left out, as ShiViz itself
//! drops them). The text starts with what a reader looks for, the message's type, where
//! ShiViz's narrow column shows it, then the trace's own line for the rest:
//!
//! ```text
//! REQUEST to w2 | SEND w=0 inc=0 t=8812345001 lc=4 to=2 type=REQUEST
//! w0 {"w0":3,"w1":1}
//! KILLED by SIGKILL | t=8812400000 at=30.360ms kill w=1 inc=0 pid=19040 … # kill 1 at 30ms
//! w1 {"w0":2,"w1":7}
//! ```
//!
//! What the trace line carries after its documented fields (a message's `body=` JSON,
//! say) comes with it, at the end of the text. The supervisor's faults to a worker
//! (`kill`, `term`, `stop`, `cont` and `restart` lines of `faults.log`) are events on
//! that worker's host, so a killed worker's line ends in its death, not in silence: a
//! kill or term where the process was known dead (`dead=`, after its last record), the
//! others where the supervisor acted.
//!
//! ShiViz insists that each host's own clock counts 1, 2, 3… and that a clock names only
//! events in the log. A part keeps, of each worker it shows, the events within the
//! window, which are one run of its events; the clocks are renumbered from each
//! worker's first kept event, and an entry that names an event left out (before the
//! window, or of a worker not shown) is dropped: each kept clock is the full one seen
//! through the part. A worker not shown still carries causality: w0 → w1 → w2 with w1
//! left out keeps w0's entry in w2's clock.
//!
//! The run's start, from which `--from` and `--to` count, is the fault log's (each line's
//! `t` less its `at`), else the leader file's `START`, else the first traced event.
//!
//! Memory: what [`trace::Clocks`] needs (N² and the messages open at once), a line per
//! worker, and the fault log's worker events (at most [`MAX_CRASHES`], each clipped).

use std::io;
use std::path::Path;
use std::time::Duration;

use crate::audit::lines::Lines;
use crate::audit::{FaultLine, MAX_CRASHES};
use crate::trace::{self, Clocks, Event, EventKind, Reader, Summary, TraceError};

/// The regex ShiViz parses the log with (its own default): the event is a line, the host
/// and the clock the next.
pub const SHIVIZ_REGEX: &str = r"(?<event>.*)\n(?<host>\S*) (?<clock>{.*})";

/// Beyond this many events a ShiViz log loads slowly, if at all, in a browser: the
/// command line suggests exporting a part.
pub const SHIVIZ_COMFORT: u64 = 20_000;

/// How many bytes of a fault log line an event's text quotes.
const FAULT_QUOTE: usize = 300;

/// What to export: events within a time window since the run's start, of some workers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Part {
    /// Leave out what happened before this long after the start.
    pub from: Option<Duration>,
    /// Leave out what happened after this long after the start.
    pub to: Option<Duration>,
    /// Only these workers' events (sorted, no repeats); `None`: every worker's.
    pub workers: Option<Vec<u32>>,
}

impl Part {
    /// The whole trace.
    pub fn whole() -> Part {
        Part::default()
    }

    /// Whether it leaves nothing out by construction.
    pub fn is_whole(&self) -> bool {
        *self == Part::default()
    }

    /// Parse `--workers`: ids and ranges separated by commas (`0,2,5`, `0-3,7`).
    pub fn parse_workers(text: &str) -> Result<Vec<u32>, String> {
        let bad = || {
            format!(
                "--workers {:?}: expected worker ids and ranges separated by commas, like 0,2,5 or 0-3",
                crate::text::clip_to(text, 100)
            )
        };
        let mut ids = Vec::new();
        for item in text.split(',') {
            let num = |s: &str| s.trim().parse::<u32>().ok().filter(|&w| w < crate::algorithm::MAX_WORKERS);
            match item.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a).ok_or_else(bad)?, num(b).ok_or_else(bad)?);
                    if a > b {
                        return Err(bad());
                    }
                    ids.extend(a..=b);
                }
                None => ids.push(num(item).ok_or_else(bad)?),
            }
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// Check the part against the run: a window that ends before it begins, or a worker
    /// beyond the run's, is refused.
    pub fn check(&self, workers: u32) -> Result<(), String> {
        if let (Some(f), Some(t)) = (self.from, self.to) {
            if f > t {
                return Err(format!("--from {f:?} is after --to {t:?}"));
            }
        }
        if let Some(w) = self.workers.iter().flatten().find(|&&w| w >= workers) {
            return Err(format!(
                "--workers names w{w}, but the run has {workers} workers (w0 to w{})",
                workers - 1
            ));
        }
        Ok(())
    }

    fn keeps_worker(&self, w: u32) -> bool {
        self.workers.as_ref().is_none_or(|ws| ws.binary_search(&w).is_ok())
    }

    /// Whether an event of worker `w` at `t` (monotonic ns) is in the part, the run
    /// having started at `origin`.
    fn keeps(&self, w: u32, t: u64, origin: u64) -> bool {
        let since = t.saturating_sub(origin);
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.keeps_worker(w)
            && self.from.is_none_or(|f| since >= ns(f))
            && self.to.is_none_or(|to| since <= ns(to))
    }

    /// What the part leaves out, for a note: "outside 300ms..2s, not of w0, w2".
    pub fn describe(&self) -> String {
        let mut what = Vec::new();
        if self.from.is_some() || self.to.is_some() {
            let show = |d: Option<Duration>| d.map_or(String::new(), |d| format!("{d:?}"));
            what.push(format!("outside {}..{}", show(self.from), show(self.to)));
        }
        if let Some(ws) = &self.workers {
            let names: Vec<String> = ws.iter().map(|w| format!("w{w}")).collect();
            what.push(format!("of workers other than {}", names.join(", ")));
        }
        what.join(", ")
    }
}

/// What an export wrote, and what it left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// What [`trace::check`] said of the trace, and the notes of the writing.
    pub summary: Summary,
    /// Events considered: the trace's, and (for ShiViz) the faults to workers.
    pub events: u64,
    /// Events written.
    pub written: u64,
    /// Of the events, faults from the fault log.
    pub faults: u64,
}

impl Exported {
    /// Events left out by the part.
    pub fn left_out(&self) -> u64 {
        self.events - self.written
    }
}

/// A fault of the supervisor's to one worker, as an event on its host.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fault {
    /// Where it goes among the events (monotonic ns).
    at: u64,
    w: u32,
    /// Its text: what happened first, then the fault log's line.
    text: String,
}

/// The run's start (monotonic ns), from the fault log or the leader file, if either says.
pub fn start_of(run_dir: &Path) -> Result<Option<u64>, TraceError> {
    for (file, parse) in [
        (crate::control::FAULT_LOG, fault_line_start as fn(&str) -> Option<u64>),
        (crate::control::LEADERS_FILE, |l: &str| l.strip_prefix("START t=")?.parse().ok()),
    ] {
        let path = run_dir.join(file);
        let mut found = None;
        read_lines(&path, |line| {
            found = parse(line);
            found.is_none()
        })?;
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// A fault log line's time less its `at=…ms`: when the run started.
fn fault_line_start(line: &str) -> Option<u64> {
    let f = FaultLine::parse(line)?;
    let at: f64 = line.split_whitespace().nth(1)?.strip_prefix("at=")?.strip_suffix("ms")?.parse().ok()?;
    Some(f.t.saturating_sub((at * 1e6).round() as u64))
}

/// Call `each` with every whole line of `path` no longer than a record can be, until it
/// returns false; a missing file has none.
fn read_lines(path: &Path, mut each: impl FnMut(&str) -> bool) -> Result<(), TraceError> {
    let io_err = |source| TraceError::Io { path: path.to_path_buf(), source };
    let f = match crate::files::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(e)),
    };
    let mut lines = Lines::new(f, Vec::new());
    while let Some(ended) = lines.next().map_err(io_err)? {
        if ended && lines.len <= crate::audit::MAX_LINE as u64 && !each(&String::from_utf8_lossy(&lines.kept))
        {
            break;
        }
    }
    Ok(())
}

/// The faults of the fault log that happened to one of `workers` workers, in the order
/// they go among the events.
fn faults(run_dir: &Path, workers: u32, notes: &mut trace::Notes) -> Result<Vec<Fault>, TraceError> {
    let mut out = Vec::new();
    let mut more = 0u64;
    read_lines(&run_dir.join(crate::control::FAULT_LOG), |line| {
        let Some(f) = FaultLine::parse(line) else { return true };
        let Some(w) = f.worker().filter(|&w| w < workers) else { return true };
        let field = |name: &str| f.fields.split_whitespace().find_map(|x| x.strip_prefix(name));
        let signal = field("signal=").unwrap_or("");
        let (head, at) = match f.action {
            "kill" => (format!("KILLED by {signal}"), field("dead=").and_then(|d| d.parse().ok())),
            "term" => (format!("TERMINATED by {signal}"), field("dead=").and_then(|d| d.parse().ok())),
            "stop" => (format!("PAUSED by {signal}"), None),
            "cont" => (format!("RESUMED by {signal}"), None),
            "restart" => (format!("RESTARTED as inc={}", field("inc=").unwrap_or("?")), None),
            _ => return true,
        };
        if out.len() >= MAX_CRASHES {
            more += 1;
            return true;
        }
        let quote = crate::text::clip_to(line.trim(), FAULT_QUOTE);
        out.push(Fault { at: at.unwrap_or(f.t).max(f.t), w, text: format!("{} | {quote}", head.trim_end()) });
        true
    })?;
    if more > 0 {
        notes.add(format!("{more} faults beyond the first {MAX_CRASHES} of faults.log are not drawn"));
    }
    out.sort_by_key(|f| f.at);
    Ok(out)
}

/// An event's text for ShiViz: what a reader looks for first (the message's type, its
/// peer), then the trace's line, then the message's contents (`body`) if the line had them.
pub fn shiviz_text(e: &Event, body: Option<&str>) -> String {
    let head = match &e.kind {
        EventKind::Send { to, msg } => format!("{msg} to w{to}"),
        EventKind::Recv { from, msg, .. } => format!("{msg} from w{from}"),
        EventKind::Drop { to, msg, why } => format!("{msg} to w{to} lost ({why})"),
        EventKind::App { ev, leader: Some(l), term, .. } => {
            format!("{ev} w{l}{}", term.map_or(String::new(), |t| format!(" term {t}")))
        }
        EventKind::App { ev, .. } => format!("{ev} the section"),
    };
    match body {
        Some(b) => format!("{head} | {e} body={b}"),
        None => format!("{head} | {e}"),
    }
}

/// Write a ShiViz host and clock line: the entries the part shows, renumbered.
struct Renumber {
    /// Per worker: the full clock's own entry at its first kept event.
    first: Vec<Option<u64>>,
    /// Per worker: events kept.
    kept: Vec<u64>,
    whole: bool,
}

impl Renumber {
    fn new(workers: u32, whole: bool) -> Renumber {
        Renumber { first: vec![None; workers as usize], kept: vec![0; workers as usize], whole }
    }

    fn write(&mut self, out: &mut impl io::Write, w: u32, vc: &[u64]) -> io::Result<()> {
        let wi = w as usize;
        self.first[wi].get_or_insert(vc[wi]);
        self.kept[wi] += 1;
        write!(out, "w{w} {{")?;
        let mut sep = "";
        for (h, &c) in vc.iter().enumerate() {
            let c = if self.whole {
                c
            } else {
                match self.first[h] {
                    Some(first) if c >= first => (c - first + 1).min(self.kept[h]),
                    _ => 0,
                }
            };
            if c > 0 {
                write!(out, "{sep}\"w{h}\":{c}")?;
                sep = ",";
            }
        }
        out.write_all(b"}\n")
    }
}

/// Write the part of the trace in `run_dir` to `out` in ShiViz's format (see the module
/// documentation), with the supervisor's faults to workers as events. `checked` is what
/// [`trace::check`] said of it (a first read); this second read writes each event as its
/// clock is computed, never holding a clock per event.
pub fn write_shiviz(
    run_dir: &Path,
    checked: Summary,
    part: &Part,
    out: &mut impl io::Write,
) -> Result<Exported, TraceError> {
    let mut summary = checked;
    let mut r = Reader::open_keeping_bodies(run_dir)?;
    part.check(r.workers).map_err(TraceError::Inconsistent)?;
    let faults = faults(run_dir, r.workers, &mut summary.notes)?;
    let mut next = r.next_event()?;
    let origin = match start_of(run_dir)? {
        Some(t) => t,
        None => next.as_ref().map_or(0, |e| e.t).min(faults.first().map_or(u64::MAX, |f| f.at)),
    };
    let mut clocks = Clocks::new(r.workers);
    let mut clock_line = Renumber::new(r.workers, part.is_whole());
    let mut done = Exported { summary: Summary::default(), events: 0, written: 0, faults: 0 };
    let w_err = TraceError::Write;
    out.write_all(SHIVIZ_REGEX.as_bytes()).and_then(|_| out.write_all(b"\n\n")).map_err(w_err)?;
    let mut faults = faults.into_iter().peekable();
    loop {
        // A fault goes before the events of its instant: a death after its last record.
        let fault_first = match (&next, faults.peek()) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(e), Some(f)) => f.at <= e.t,
        };
        done.events += 1;
        if fault_first {
            let f = faults.next().expect("peeked");
            done.faults += 1;
            let vc = clocks.local(f.w);
            if part.keeps(f.w, f.at, origin) {
                done.written += 1;
                writeln!(out, "{}", f.text).and_then(|_| clock_line.write(out, f.w, vc)).map_err(w_err)?;
            }
        } else if let Some(e) = next.take() {
            let vc = clocks.push(&e);
            if part.keeps(e.w, e.t, origin) {
                done.written += 1;
                writeln!(out, "{}", shiviz_text(&e, r.body()))
                    .and_then(|_| clock_line.write(out, e.w, vc))
                    .map_err(w_err)?;
            }
            next = r.next_event()?;
        } else {
            done.events -= 1;
            break;
        }
    }
    // The reader's notes are the first read's, in `checked` already.
    clocks.notes(&mut summary.notes);
    done.summary = summary;
    Ok(done)
}

/// Write the part of the trace in `run_dir` to `out`, one line per event in time order,
/// as the workers wrote them (the documented fields, and the message's contents if the
/// line had them); `checked` is what [`trace::check`] said of it. Memory: a
/// line per worker.
pub fn write_text(
    run_dir: &Path,
    checked: Summary,
    part: &Part,
    out: &mut impl io::Write,
) -> Result<Exported, TraceError> {
    let mut r = Reader::open_keeping_bodies(run_dir)?;
    part.check(r.workers).map_err(TraceError::Inconsistent)?;
    let mut next = r.next_event()?;
    let origin = match start_of(run_dir)? {
        Some(t) => t,
        None => next.as_ref().map_or(0, |e| e.t),
    };
    let mut done = Exported { summary: checked, events: 0, written: 0, faults: 0 };
    while let Some(e) = next {
        done.events += 1;
        if part.keeps(e.w, e.t, origin) {
            done.written += 1;
            match r.body() {
                Some(b) => writeln!(out, "{e} body={b}"),
                None => writeln!(out, "{e}"),
            }
            .map_err(TraceError::Write)?;
        }
        next = r.next_event()?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::trace::{file_name, HEADER};

    /// Write `lines` (trace lines, any worker's) as worker files in a fresh run
    /// directory, and `faults` as its fault log.
    fn run_dir(workers: u32, lines: &[&str], faults: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for w in 0..workers {
            let mut text = format!("{HEADER} w={w} workers={workers} algo=test\n");
            for l in lines.iter().filter(|l| l.contains(&format!(" w={w} "))) {
                text.push_str(l);
                text.push('\n');
            }
            std::fs::write(dir.path().join(file_name(w)), text).unwrap();
        }
        if !faults.is_empty() {
            std::fs::write(dir.path().join(crate::control::FAULT_LOG), faults).unwrap();
        }
        dir
    }

    /// Three workers: w0 asks w1, w1 asks w2, w2 answers w0 (the clocks in comments).
    const THREE: &[&str] = &[
        "APP w=0 inc=0 t=1 lc=0 ev=want",                              // [1,0,0]
        "SEND w=0 inc=0 t=2 lc=1 to=1 type=M",                         // [2,0,0]
        "APP w=2 inc=0 t=3 lc=0 ev=want",                              // [0,0,1]
        "RECV w=1 inc=0 t=4 lc=2 from=0 from_inc=0 sent_lc=1 type=M",  // [2,1,0]
        "SEND w=1 inc=0 t=5 lc=3 to=2 type=M",                         // [2,2,0]
        "RECV w=2 inc=0 t=6 lc=4 from=1 from_inc=0 sent_lc=3 type=M",  // [2,2,2]
        "SEND w=2 inc=0 t=7 lc=5 to=0 type=M",                         // [2,2,3]
        "SEND w=0 inc=0 t=8 lc=2 to=1 type=M",                         // [3,0,0]
        "DROP w=0 inc=0 t=9 to=1 type=M lc=2 why=drop",                // [4,0,0]
        "RECV w=0 inc=0 t=10 lc=6 from=2 from_inc=0 sent_lc=5 type=M", // [5,2,3]
    ];

    fn shiviz(dir: &Path, part: &Part) -> (String, Exported) {
        let mut out = Vec::new();
        let done = write_shiviz(dir, trace::check(dir).unwrap(), part, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), done)
    }

    /// A vector clock as ShiViz reads it: host to count.
    type Clock = HashMap<String, u64>;

    /// What ShiViz checks of a log (its parser and `ModelGraph`): the regex line, the
    /// empty delimiter line, then pairs of an event's text and `host {clock}`; each
    /// host's own entry counts 1, 2, 3…; every entry names a host of the log and one of
    /// its events; each event's clock is at least its host's previous one. The (host,
    /// clock) of every event, or the first thing ShiViz would refuse.
    fn shiviz_accepts(log: &str) -> Result<Vec<(String, Clock)>, String> {
        let lines: Vec<&str> = log.lines().collect();
        if lines.len() < 2
            || lines[0] != SHIVIZ_REGEX
            || !lines[1].is_empty()
            || !lines.len().is_multiple_of(2)
        {
            return Err("not a regex line, an empty line, then pairs of lines".into());
        }
        let mut own: HashMap<String, u64> = HashMap::new();
        let mut last: HashMap<String, HashMap<String, u64>> = HashMap::new();
        let mut events = Vec::new();
        for pair in lines[2..].chunks(2) {
            let (host, clock) = pair[1].split_once(' ').ok_or(format!("{pair:?}: no host, space, clock"))?;
            if pair[0].is_empty() || host.is_empty() || host.contains(char::is_whitespace) {
                return Err(format!("{pair:?}: no event text or host"));
            }
            let vc: HashMap<String, u64> =
                serde_json::from_str(clock).map_err(|e| format!("{pair:?}: {e}"))?;
            let n = own.entry(host.to_string()).or_default();
            *n += 1;
            if vc.get(host) != Some(&*n) {
                return Err(format!("{pair:?}: the host's own entry should be {n}"));
            }
            if let Some(prev) = last.get(host) {
                if !prev.iter().all(|(h, c)| vc.get(h).is_some_and(|v| v >= c)) {
                    return Err(format!("{pair:?}: goes back from {prev:?}"));
                }
            }
            last.insert(host.to_string(), vc.clone());
            events.push((host.to_string(), vc));
        }
        for (h, vc) in &events {
            for (other, c) in vc {
                if own.get(other).is_none_or(|max| c > max) {
                    return Err(format!("{h}: {other}:{c} names no event of the log"));
                }
            }
        }
        Ok(events)
    }

    #[test]
    fn the_shiviz_log_has_the_regex_line_then_event_and_clock_pairs() {
        let dir = run_dir(3, THREE, "");
        let (out, done) = shiviz(dir.path(), &Part::whole());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2 + 2 * 10);
        assert_eq!(lines[2], "want the section | APP w=0 inc=0 t=1 lc=0 ev=want");
        assert_eq!(lines[3], r#"w0 {"w0":1}"#);
        // The type first, then the trace's line, which still parses.
        assert_eq!(lines[4], "M to w1 | SEND w=0 inc=0 t=2 lc=1 to=1 type=M");
        assert_eq!(lines[8], "M from w0 | RECV w=1 inc=0 t=4 lc=2 from=0 from_inc=0 sent_lc=1 type=M");
        assert_eq!(lines[18], "M to w1 lost (drop) | DROP w=0 inc=0 t=9 to=1 type=M lc=2 why=drop");
        assert_eq!(lines[21], r#"w0 {"w0":5,"w1":2,"w2":3}"#);
        for pair in lines[2..].chunks(2) {
            let (host, _) = pair[1].split_once(' ').unwrap();
            let (_, record) = pair[0].split_once(" | ").unwrap();
            assert_eq!(record.parse::<Event>().unwrap().w.to_string(), host[1..], "{pair:?}");
        }
        shiviz_accepts(&out).unwrap();
        assert_eq!((done.events, done.written, done.left_out(), done.faults), (10, 10, 0, 0));
    }

    #[test]
    fn a_message_s_contents_end_the_event_text() {
        // Spaces and " body=" inside the contents are the contents'.
        let body = r#"{"type":"REQUEST","ticket":4,"note":"a b body=1"}"#;
        let lines = [
            format!("SEND w=0 inc=0 t=2 lc=1 to=1 type=REQUEST body={body}"),
            "RECV w=1 inc=0 t=3 lc=2 from=0 from_inc=0 sent_lc=1 type=REQUEST".to_string(),
        ];
        let dir = run_dir(2, &lines.iter().map(String::as_str).collect::<Vec<_>>(), "");
        let (out, _) = shiviz(dir.path(), &Part::whole());
        let texts: Vec<&str> = out.lines().skip(2).step_by(2).collect();
        assert_eq!(
            texts[0],
            format!("REQUEST to w1 | SEND w=0 inc=0 t=2 lc=1 to=1 type=REQUEST body={body}")
        );
        // The negative control: a line without contents has none in its text.
        assert!(!texts[1].contains("body="), "{texts:?}");
        shiviz_accepts(&out).unwrap();
    }

    #[test]
    fn kills_and_restarts_are_events_on_their_hosts() {
        // w1 is killed after its receive (the kill begun at t=4, the process reaped dead at
        // t=5), and restarted at t=6.
        let lines = [
            "SEND w=0 inc=0 t=2 lc=1 to=1 type=M",
            "RECV w=1 inc=0 t=3 lc=2 from=0 from_inc=0 sent_lc=1 type=M",
            "APP w=0 inc=0 t=4 lc=2 ev=want",
            "APP w=1 inc=1 t=7 lc=0 ev=want",
        ];
        let faults = "t=4 at=0.000004ms kill w=1 inc=0 pid=9 signal=SIGKILL dead=5 # kill 1 at 4ns\n\
                      t=6 at=0.000006ms restart w=1 inc=1 pid=10 # restart 1\n\
                      t=6 at=0.000006ms partition # 0|1\n";
        let dir = run_dir(2, &lines, faults);
        let (out, done) = shiviz(dir.path(), &Part::whole());
        let events = shiviz_accepts(&out).unwrap();
        let texts: Vec<&str> = out.lines().skip(2).step_by(2).collect();
        assert_eq!(texts.len(), 6);
        // The kill goes where the process was known dead: after w0's event at t=4.
        assert!(texts[2].starts_with("want the section | APP w=0"), "{texts:?}");
        assert!(texts[3].starts_with("KILLED by SIGKILL | t=4 at=0.000004ms kill w=1"), "{texts:?}");
        assert!(texts[4].starts_with("RESTARTED as inc=1 | t=6"), "{texts:?}");
        assert_eq!(events[3].0, "w1");
        assert_eq!(events[3].1, HashMap::from([("w0".into(), 1), ("w1".into(), 2)]));
        assert_eq!(events[5].1, HashMap::from([("w0".into(), 1), ("w1".into(), 4)]));
        assert_eq!((done.events, done.faults), (6, 2));
        // The negative control: without the fault log, w1's line just stops.
        std::fs::remove_file(dir.path().join(crate::control::FAULT_LOG)).unwrap();
        let (out, done) = shiviz(dir.path(), &Part::whole());
        assert!(!out.contains("KILLED") && !out.contains("RESTARTED"));
        assert_eq!((done.events, done.faults), (4, 0));
    }

    #[test]
    fn a_part_renumbers_the_clocks_and_counts_what_it_left_out() {
        let dir = run_dir(3, THREE, "");
        // No start recorded: the first event (t=1) is the start. 3ns..=7ns keeps t=4..8.
        let part =
            Part { from: Some(Duration::from_nanos(3)), to: Some(Duration::from_nanos(7)), workers: None };
        let (out, done) = shiviz(dir.path(), &part);
        let events = shiviz_accepts(&out).unwrap();
        assert_eq!((done.events, done.written, done.left_out()), (10, 5, 5));
        let clocks: Vec<(&str, HashMap<String, u64>)> =
            events.iter().map(|(h, c)| (h.as_str(), c.clone())).collect();
        // w1's receive knew w0's two first events, both before the window: left out.
        assert_eq!(clocks[0], ("w1", HashMap::from([("w1".into(), 1)])));
        assert_eq!(clocks[2].1, HashMap::from([("w1".into(), 2), ("w2".into(), 1)]));
        // w0's send at t=8 is its first kept event.
        assert_eq!(clocks[4], ("w0", HashMap::from([("w0".into(), 1)])));
        // Only w0 and w2: w0's last receive keeps w2's entry, renumbered.
        let part = Part { workers: Some(vec![0, 2]), ..Part::whole() };
        let (out, done) = shiviz(dir.path(), &part);
        let events = shiviz_accepts(&out).unwrap();
        assert_eq!((done.written, done.left_out()), (8, 2));
        assert!(events.iter().all(|(h, c)| h != "w1" && !c.contains_key("w1")));
        assert_eq!(events.last().unwrap().1, HashMap::from([("w0".into(), 5), ("w2".into(), 3)]));
        // The negative control for the checker above: the window's events with their
        // whole clocks, not renumbered, are not what ShiViz accepts.
        let whole = shiviz(dir.path(), &Part::whole()).0;
        let lines: Vec<&str> = whole.lines().collect();
        let cut = [&lines[..2], &lines[8..18]].concat().join("\n");
        assert!(shiviz_accepts(&cut).unwrap_err().contains("own entry should be 1"));
    }

    #[test]
    fn the_window_counts_from_the_fault_log_s_start() {
        // The fault log says the run started at t=1000 (t=31000 is at=0.030ms).
        let lines = ["APP w=0 inc=0 t=1500 lc=0 ev=want", "APP w=0 inc=0 t=40000 lc=1 ev=enter"];
        let faults = "t=31000 at=0.030ms stop w=0 inc=0 pid=9 signal=SIGSTOP # stop 0\n";
        let dir = run_dir(1, &lines, faults);
        assert_eq!(start_of(dir.path()).unwrap(), Some(1000));
        let part = Part { from: Some(Duration::from_micros(20)), ..Part::whole() };
        let (out, done) = shiviz(dir.path(), &part);
        assert_eq!((done.events, done.written), (3, 2));
        assert!(out.contains("PAUSED by SIGSTOP"));
        assert!(!out.contains("ev=want"));
        // The leader file's START when there is no fault log.
        std::fs::remove_file(dir.path().join(crate::control::FAULT_LOG)).unwrap();
        std::fs::write(
            dir.path().join(crate::control::LEADERS_FILE),
            "# mutexlab leaders v1 algo=x workers=1\nSTART t=1400\n",
        )
        .unwrap();
        assert_eq!(start_of(dir.path()).unwrap(), Some(1400));
    }

    #[test]
    fn parts_are_parsed_and_checked_against_the_run() {
        assert_eq!(Part::parse_workers("5,0,2,2").unwrap(), vec![0, 2, 5]);
        assert_eq!(Part::parse_workers("0-3,7").unwrap(), vec![0, 1, 2, 3, 7]);
        for bad in ["", "a", "3-1", "1,,2", "-1", "99999"] {
            assert!(Part::parse_workers(bad).unwrap_err().contains("expected worker ids"), "{bad}");
        }
        let part = Part { workers: Some(vec![0, 4]), ..Part::whole() };
        assert!(part.check(4).unwrap_err().contains("names w4, but the run has 4 workers"));
        assert!(part.check(5).is_ok());
        let backwards =
            Part { from: Some(Duration::from_secs(2)), to: Some(Duration::from_secs(1)), workers: None };
        assert!(backwards.check(4).unwrap_err().contains("is after --to"));
    }
}
