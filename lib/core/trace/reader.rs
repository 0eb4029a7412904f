//! Reading a run's trace files, bounded: each worker's file a line at a time, checked
//! as it is read (torn and overlong lines skipped with a note), and every file merged
//! in time order ([`Reader`]).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::line::{body, field, Event, EventKind, State};
use super::rebuild::WRAPPED;
use super::{worker_of, TraceError, HEADER};
use crate::algorithm::MAX_WORKERS;
use crate::lines::{clip, Lines, MAX_LINE};

/// What a reader skipped (torn and overlong lines), or could not pair within its bounds:
/// the first few, and how many in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notes {
    /// The first few notes, one line each.
    pub shown: Vec<String>,
    /// Notes beyond those shown.
    pub more: u64,
}

/// How many notes are kept word for word.
const NOTES_SHOWN: usize = 5;

impl Notes {
    /// Add a note: kept word for word among the first few, else counted.
    pub fn add(&mut self, note: String) {
        if self.shown.len() < NOTES_SHOWN {
            self.shown.push(note);
        } else {
            self.more += 1;
        }
    }

    /// One line each, the count of the rest last.
    pub fn lines(&self) -> Vec<String> {
        let mut v = self.shown.clone();
        if self.more > 0 {
            v.push(format!("and {} more such notes", self.more));
        }
        v
    }
}

/// Whether the line at hand is a record, torn, or to be skipped.
enum Line {
    /// A record, and where it starts on its line.
    Event(Event, usize),
    /// A STATE line.
    State(State),
    Bad(String),
}

/// One worker's file, read a bounded line at a time ([`Lines`]), checked as it goes.
struct WorkerFile {
    w: u32,
    workers: u32,
    path: PathBuf,
    lines: Lines<File>,
    lineno: usize,
    /// The life and time of the last event kept.
    last: Option<(u32, u64)>,
    /// The clock of the last SEND of that life.
    last_send: Option<u64>,
    /// Bad lines waiting for the next record: torn if it begins a new life (or the file
    /// ends), else the first of them is the file's error.
    held: Vec<(usize, String)>,
    /// Keep each record's `body=` (what [`Reader::body`] gives), in `body`.
    bodies: bool,
    body: Option<String>,
    /// Keep STATE lines: the last one of the current life in `state`, and in
    /// `event_state` the one that was last when the event read ahead was read (what
    /// [`Reader::state`] gives).
    states: bool,
    state: Option<std::rc::Rc<State>>,
    event_state: Option<std::rc::Rc<State>>,
    /// STATE lines read, kept or not.
    state_lines: u64,
}

/// Consecutive bad lines that can still be torn ones (a life, and the ones after it,
/// killed mid-write before they wrote a whole line).
const MAX_TORN_RUN: usize = 4;

/// The tags a record starts with: a line holding one further in was glued to a torn one.
const TAGS: [&str; 5] = ["SEND", "RECV", "DROP", "APP", "STATE"];

impl WorkerFile {
    /// Open worker `w`'s file and read its header: its worker count and algorithm.
    fn open(path: PathBuf, w: u32) -> Result<(WorkerFile, String), TraceError> {
        let file = crate::files::open_regular(&path)
            .map_err(|source| TraceError::Io { path: path.clone(), source })?;
        let mut lines = Lines::new(file, Vec::new());
        let bad = |msg: String| TraceError::Bad { path: path.clone(), line: 1, msg };
        let got = lines.next().map_err(|source| TraceError::Io { path: path.clone(), source })?;
        if got.is_none() {
            return Err(bad("empty: no header line".into()));
        }
        let head = std::str::from_utf8(&lines.kept).unwrap_or_default();
        let rest = head
            .strip_prefix(HEADER)
            .and_then(|r| r.strip_prefix(' '))
            .filter(|_| lines.len <= MAX_LINE as u64 && got == Some(true))
            .ok_or_else(|| bad(format!("not a mutexlab trace: the first line must start with {HEADER:?}")))?;
        let mut fields = rest.split(' ');
        let mut next = |name: &str| {
            let part = fields.next().unwrap_or_default();
            field(part, name)
                .map(str::to_string)
                .ok_or_else(|| bad(format!("header: expected {name}=…, found {:?}", clip(part))))
        };
        let (hw, workers, algo) = (next("w")?, next("workers")?, next("algo")?);
        if hw != w.to_string() {
            return Err(bad(format!("header says w={}, but the file is worker {w}'s", clip(&hw))));
        }
        // Checked before anything is sized by it.
        let workers: u32 = workers.parse().ok().filter(|&n| n > w && n <= MAX_WORKERS).ok_or_else(|| {
            bad(format!(
                "header: workers={} is not a worker count above {w} and at most {MAX_WORKERS}",
                clip(&workers)
            ))
        })?;
        let f = WorkerFile {
            w,
            workers,
            path,
            lines,
            lineno: 1,
            last: None,
            last_send: None,
            held: Vec::new(),
            bodies: false,
            body: None,
            states: false,
            state: None,
            event_state: None,
            state_lines: 0,
        };
        Ok((f, algo))
    }

    fn bad(&self, line: usize, msg: &str) -> TraceError {
        TraceError::Bad { path: self.path.clone(), line, msg: clip(msg).into_owned() }
    }

    /// The next event of this file, skipping torn and overlong lines with a note.
    fn next_event(&mut self, notes: &mut Notes) -> Result<Option<Event>, TraceError> {
        loop {
            let ended =
                self.lines.next().map_err(|source| TraceError::Io { path: self.path.clone(), source })?;
            let Some(ended) = ended else {
                // The last life may have been killed mid-write: what it left is torn.
                for (n, msg) in std::mem::take(&mut self.held) {
                    notes.add(self.torn_note(n, &msg));
                }
                return Ok(None);
            };
            self.lineno += 1;
            let n = self.lineno;
            if self.lines.len > MAX_LINE as u64 {
                let note = format!(
                    "{}:{n}: skipped a line of {} bytes, longer than any record",
                    self.path.display(),
                    self.lines.len
                );
                notes.add(note);
                continue;
            }
            if ended && self.lines.kept.starts_with(WRAPPED.as_bytes()) {
                let text = String::from_utf8_lossy(&self.lines.kept);
                notes.add(format!("{}:{n}: {}", self.path.display(), clip(&text[2..])));
                continue;
            }
            if !ended {
                // Every batch ends with a newline: this one was cut short.
                self.held.push((n, "the last line is cut short (no newline at its end)".into()));
                continue;
            }
            let (ev, start) = match self.parse_line(notes) {
                Line::Event(ev, start) => (ev, start),
                Line::State(st) => {
                    self.take_state(st, notes)?;
                    continue;
                }
                Line::Bad(msg) => {
                    if self.held.len() == MAX_TORN_RUN {
                        let (n, msg) = &self.held[0];
                        return Err(self.bad(*n, msg));
                    }
                    self.held.push((n, msg));
                    continue;
                }
            };
            if !self.held.is_empty() {
                // Torn lines end a life: the next record starts a new one.
                let new_life = ev.inc > self.last.map_or(0, |(inc, _)| inc);
                if !new_life {
                    let (n, msg) = &self.held[0];
                    return Err(self.bad(*n, msg));
                }
                for (n, msg) in std::mem::take(&mut self.held) {
                    notes.add(self.torn_note(n, &msg));
                }
            }
            self.accept(&ev).map_err(|msg| self.bad(n, &msg))?;
            if self.states {
                // A state of an earlier life is not this one's.
                self.state = self.state.take().filter(|s| s.inc == ev.inc);
                self.event_state = self.state.clone();
            }
            if self.bodies {
                // The rest of the record's line after ` body=` (spaces in its strings too).
                let record = std::str::from_utf8(&self.lines.kept[start..]).unwrap_or_default();
                self.body = body(record).map(str::to_string);
            }
            return Ok(Some(ev));
        }
    }

    /// A STATE line read: checked like a record (its worker, life and time), then kept
    /// if asked. Torn lines before it end a life as before a record.
    fn take_state(&mut self, st: State, notes: &mut Notes) -> Result<(), TraceError> {
        let n = self.lineno;
        if !self.held.is_empty() {
            if st.inc <= self.last.map_or(0, |(inc, _)| inc) {
                let (n, msg) = &self.held[0];
                return Err(self.bad(*n, msg));
            }
            for (n, msg) in std::mem::take(&mut self.held) {
                notes.add(self.torn_note(n, &msg));
            }
        }
        if st.w != self.w {
            return Err(self.bad(n, &format!("w={} in worker {}'s file", st.w, self.w)));
        }
        if let Some((inc, t)) = self.last {
            if st.inc < inc {
                return Err(self.bad(n, &format!("inc={} after inc={inc}: lives go forward", st.inc)));
            }
            if st.t < t {
                return Err(self.bad(n, &format!("t={} before the previous line's t={t}", st.t)));
            }
            if st.inc > inc {
                self.last_send = None;
            }
        }
        self.last = Some((st.inc, st.t));
        self.state_lines += 1;
        if self.states {
            self.state = Some(std::rc::Rc::new(st));
        }
        Ok(())
    }

    fn torn_note(&self, n: usize, msg: &str) -> String {
        format!("{}:{n}: skipped a torn line (its life ended mid-write): {}", self.path.display(), clip(msg))
    }

    /// The current line as a record; a record glued to a torn line (by a writer that
    /// did not start its life on a fresh line) is taken, and the torn part noted.
    fn parse_line(&self, notes: &mut Notes) -> Line {
        let Ok(text) = std::str::from_utf8(&self.lines.kept) else {
            return Line::Bad("not UTF-8 text".into());
        };
        // A record has one " w=": a second one may start a glued record.
        let mut marks = text.match_indices(" w=").map(|(i, _)| i).skip(1).collect::<Vec<_>>();
        while let Some(i) = marks.pop() {
            let Some(tag) = TAGS.iter().find(|t| text[..i].ends_with(*t)) else { continue };
            let start = i - tag.len();
            if *tag == "STATE" {
                if let Ok(st) = text[start..].parse::<State>() {
                    if st.w == self.w {
                        let note = self.torn_note(
                            self.lineno,
                            &format!("{:?} (a record followed it on its line)", &text[..start]),
                        );
                        notes.add(note);
                        return Line::State(st);
                    }
                }
                continue;
            }
            if let Ok(ev) = text[start..].parse::<Event>() {
                if ev.w == self.w {
                    let note = self.torn_note(
                        self.lineno,
                        &format!("{:?} (a record followed it on its line)", &text[..start]),
                    );
                    notes.add(note);
                    return Line::Event(ev, start);
                }
            }
        }
        if text.starts_with("STATE ") {
            return match text.parse::<State>() {
                Ok(st) => Line::State(st),
                Err(m) => Line::Bad(m),
            };
        }
        match text.parse::<Event>() {
            Ok(ev) => Line::Event(ev, 0),
            Err(m) => Line::Bad(m),
        }
    }

    /// Check a parsed record against its file and what came before in it.
    fn accept(&mut self, ev: &Event) -> Result<(), String> {
        let w = self.w;
        if ev.w != w {
            return Err(format!("w={} in worker {w}'s file", ev.w));
        }
        if ev.w >= self.workers || peer_of(ev).is_some_and(|p| p >= self.workers) {
            return Err(format!("{ev}: names a worker beyond workers={}", self.workers));
        }
        if let Some((inc, t)) = self.last {
            if ev.inc < inc {
                return Err(format!("inc={} after inc={inc}: lives go forward", ev.inc));
            }
            if ev.t < t {
                return Err(format!("t={} before the previous line's t={t}", ev.t));
            }
            if ev.inc > inc {
                self.last_send = None;
            }
        }
        if let EventKind::Send { .. } = ev.kind {
            // Every send ticks the clock, so one life never names two messages alike.
            if let Some(prev) = self.last_send.filter(|&p| ev.lc <= p) {
                return Err(format!(
                    "lc={} after a SEND with lc={prev} in the same life: two messages would share one name (from, inc, to, lc)",
                    ev.lc
                ));
            }
            self.last_send = Some(ev.lc);
        }
        self.last = Some((ev.inc, ev.t));
        Ok(())
    }
}

/// Where an event goes in the merge: its time, whether it is a receive, its worker.
type MergeKey = (u64, bool, u32);

/// Every worker's events, merged in time order as they are read: a file's next line is
/// read only when its last was handed out, so memory is a line per worker.
///
/// Order: by `t`; at one time, a receive after the other events (its send may be among
/// them), then by worker; one worker's events always in its file's order.
pub struct Reader {
    /// Workers in the run, from the headers.
    pub workers: u32,
    /// The algorithm, from the headers.
    pub algo: String,
    files: Vec<WorkerFile>,
    /// Each file's next event, by the merge key.
    heads: std::collections::BinaryHeap<std::cmp::Reverse<(MergeKey, usize)>>,
    next: Vec<Option<Event>>,
    /// Lines skipped, said once each.
    pub notes: Notes,
    /// The `body=` of the event last returned, if kept.
    body: Option<String>,
    /// The state kept for the event last returned ([`Reader::state`]).
    state: Option<std::rc::Rc<State>>,
}

impl Reader {
    /// Open every trace file in `run_dir` and check their headers agree.
    pub fn open(run_dir: &Path) -> Result<Reader, TraceError> {
        Reader::open_with(run_dir, false, false)
    }

    /// [`Reader::open`], keeping each event's `body=` for [`Reader::body`].
    pub fn open_keeping_bodies(run_dir: &Path) -> Result<Reader, TraceError> {
        Reader::open_with(run_dir, true, false)
    }

    /// [`Reader::open_keeping_bodies`], also keeping each event's worker's last STATE
    /// line before it, for [`Reader::state`].
    pub fn open_keeping_bodies_and_states(run_dir: &Path) -> Result<Reader, TraceError> {
        Reader::open_with(run_dir, true, true)
    }

    fn open_with(run_dir: &Path, bodies: bool, states: bool) -> Result<Reader, TraceError> {
        let io_err = |source| TraceError::Io { path: run_dir.to_path_buf(), source };
        let mut found: Vec<(u32, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(run_dir).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            if let Some(w) = entry.file_name().to_str().and_then(worker_of) {
                // No run has more workers: such a file is no file of a run's.
                if w >= MAX_WORKERS {
                    return Err(TraceError::Bad {
                        path: entry.path(),
                        line: 1,
                        msg: format!("worker {w} is beyond the most a run has ({MAX_WORKERS})"),
                    });
                }
                found.push((w, entry.path()));
            }
        }
        if found.is_empty() {
            return Err(TraceError::NoTrace { dir: run_dir.to_path_buf() });
        }
        found.sort();
        let mut files: Vec<WorkerFile> = Vec::with_capacity(found.len());
        let mut algo = String::new();
        for (w, path) in found {
            let (mut f, a) = WorkerFile::open(path, w)?;
            f.bodies = bodies;
            f.states = states;
            if let Some(first) = files.first() {
                if (f.workers, a.as_str()) != (first.workers, algo.as_str()) {
                    return Err(TraceError::Bad {
                        path: f.path.clone(),
                        line: 1,
                        msg: format!(
                            "workers={} algo={}, but {} says workers={} algo={}",
                            f.workers,
                            clip(&a),
                            first.path.display(),
                            first.workers,
                            clip(&algo)
                        ),
                    });
                }
            } else {
                algo = a;
            }
            files.push(f);
        }
        let workers = files[0].workers;
        let mut r = Reader {
            workers,
            algo,
            next: vec![None; files.len()],
            files,
            heads: Default::default(),
            notes: Notes::default(),
            body: None,
            state: None,
        };
        for i in 0..r.files.len() {
            r.refill(i)?;
        }
        Ok(r)
    }

    fn refill(&mut self, i: usize) -> Result<(), TraceError> {
        if let Some(e) = self.files[i].next_event(&mut self.notes)? {
            let key = (e.t, matches!(e.kind, EventKind::Recv { .. }), e.w);
            self.heads.push(std::cmp::Reverse((key, i)));
            self.next[i] = Some(e);
        }
        Ok(())
    }

    /// The next event of the run, `None` after the last.
    pub fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        let Some(std::cmp::Reverse((_, i))) = self.heads.pop() else { return Ok(None) };
        let e = self.next[i].take().expect("a head has its event");
        // A file reads one event ahead: its body is the one of the event handed out.
        self.body = self.files[i].body.take();
        self.state = self.files[i].event_state.take();
        self.refill(i)?;
        Ok(Some(e))
    }

    /// The message contents (`body=`, the rest of its line) of the event last returned,
    /// if it has them and the reader was opened keeping them.
    pub fn body(&self) -> Option<&str> {
        self.body.as_deref()
    }

    /// The last STATE line its worker recorded in the same life before the event last
    /// returned (the node's state when it was recorded: a SEND follows its step's
    /// state, a RECV precedes its own), if the reader was opened keeping them.
    pub fn state(&self) -> Option<&std::rc::Rc<State>> {
        self.state.as_ref()
    }

    /// STATE lines read so far in all files, kept or not.
    pub fn state_lines(&self) -> u64 {
        self.files.iter().map(|f| f.state_lines).sum()
    }
}

/// The other worker an event names, if any.
fn peer_of(e: &Event) -> Option<u32> {
    match &e.kind {
        EventKind::Send { to, .. } | EventKind::Drop { to, .. } => Some(*to),
        EventKind::Recv { from, .. } => Some(*from),
        EventKind::App { leader, .. } => *leader,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::super::*;

    #[test]
    fn a_bad_state_line_is_named_and_an_old_trace_reads_without_any() {
        let dir = write_run(2, &three()[..2]);
        let path = dir.path().join(file_name(0));
        let good = std::fs::read_to_string(&path).unwrap();
        let then = "APP w=0 inc=0 t=99 lc=99 ev=want\n";
        let cases = [
            (format!("{good}STATE w=0 inc=0 t=x lc=1 json={{}}\n{then}"), ":4: t=x is not a number"),
            (format!("{good}STATE w=1 inc=0 t=9 lc=1 json={{}}\n{then}"), ":4: w=1 in worker 0's file"),
            (format!("{good}STATE w=0 inc=0 t=0 lc=1 json={{}}\n{then}"), ":4: t=0 before"),
            (format!("{good}STATE w=0 inc=0 t=9 lc=1\n{then}"), ":4: STATE line lacks json="),
        ];
        for (text, want) in cases {
            std::fs::write(&path, &text).unwrap();
            let e = load(dir.path()).unwrap_err().to_string();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
        // A good one is skipped by the event readers; the old file (none) reads as before.
        std::fs::write(&path, format!("{good}STATE w=0 inc=0 t=9 lc=1 json={{\"a\":1}}\n{then}")).unwrap();
        let with = load(dir.path()).unwrap();
        std::fs::write(&path, format!("{good}{then}")).unwrap();
        assert_eq!(with, load(dir.path()).unwrap());
        // A STATE line glued to a torn one (by an older writer) is split off and kept.
        let glued =
            format!("{good}SEND w=0 inc=0 t=3 lc=3 to=1 tySTATE w=0 inc=1 t=50 lc=0 json={{\"a\":1}}\n");
        std::fs::write(&path, format!("{glued}APP w=0 inc=1 t=99 lc=1 ev=want\n")).unwrap();
        let summary = check(dir.path()).unwrap();
        assert!(summary.notes.shown[0].contains("a record followed it on its line"), "{:?}", summary.notes);
        let mut r = Reader::open_keeping_bodies_and_states(dir.path()).unwrap();
        let mut last = None;
        while let Some(e) = r.next_event().unwrap() {
            last = Some((e.inc, r.state().map(|s| (s.inc, s.json.clone()))));
        }
        assert_eq!(last, Some((1, Some((1, r#"{"a":1}"#.to_string())))));
    }

    #[test]
    fn two_messages_with_one_name_are_refused() {
        let dir = write_run(2, &[send(0, 1, 1, 1), send(0, 2, 1, 1)]);
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("share one name"), "{e}");
    }

    #[test]
    fn bad_files_are_named_with_their_line() {
        let dir = write_run(2, &three()[..2]);
        let path = dir.path().join(file_name(0));
        let good = std::fs::read_to_string(&path).unwrap();
        // A bad line followed by one of the same life (a torn one ends its life).
        let then = "APP w=0 inc=0 t=99 lc=99 ev=want\n";
        let cases = [
            (format!("{good}SEND w=0 inc=0 t=x lc=1 to=1 type=M\n{then}"), ":4: t=x"),
            (format!("{good}SEND w=1 inc=0 t=9 lc=9 to=1 type=M\n{then}"), ":4: w=1 in worker 0's file"),
            (format!("{good}SEND w=0 inc=0 t=0 lc=9 to=1 type=M\n{then}"), ":4: t=0 before"),
            (good.replace("w=0 workers", "w=1 workers"), ":1: header says w=1"),
            (good.replace("workers=2", "workers=3"), "but"),
            ("hello\n".to_string(), ":1: not a mutexlab trace"),
            (String::new(), ":1: empty"),
            (format!("{good}SEND w=0 inc=0 t=9 lc=9 to=7 type=M\n{then}"), "beyond workers=2"),
        ];
        for (text, want) in cases {
            std::fs::write(&path, &text).unwrap();
            let e = load(dir.path()).unwrap_err().to_string();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(load(empty.path()), Err(TraceError::NoTrace { .. })));
        assert!(matches!(load(&empty.path().join("nothing")), Err(TraceError::Io { .. })));
    }
}
