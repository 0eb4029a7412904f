//! The message trace: what every worker sent, received and lost, and what its
//! application did, one file per worker in the run directory (`trace-w{ID}.log`).
//!
//! Each file starts with a header line and then holds one human-readable line per
//! event, in the order the worker did them, appended by every incarnation of that
//! worker (`O_APPEND`; a new life starts only after the old one is gone):
//!
//! ```text
//! # mutexlab trace v1 w=0 workers=5 algo=centralized
//! SEND w=0 inc=0 t=8812345001 lc=4 to=3 type=REQUEST
//! RECV w=0 inc=0 t=8812391002 lc=9 from=3 from_inc=0 sent_lc=8 type=GRANT
//! DROP w=0 inc=0 t=8812391502 to=2 type=REQUEST lc=10 why=drop
//! APP w=0 inc=0 t=8812402003 lc=11 ev=enter
//! APP w=3 inc=1 t=8812502003 lc=12 ev=leader leader=4 term=9
//! ```
//!
//! `w` and `inc` are the worker and its incarnation, `t` the machine's monotonic clock
//! in nanoseconds ([`resource::monotonic_ns`], so it lines up with `resource.log` and
//! `faults.log`), `lc` the worker's Lamport clock: on a SEND the clock stamped on the
//! envelope, on a RECV the receiver's clock after taking the message in (`sent_lc` is
//! the envelope's). A DROP follows the SEND of a message that never left its sender: the
//! network lost it (`why=drop`, `--drop`), it was sent to a peer known to be down
//! (`why=down`), a partition held it back until its receiver was lost or its sender
//! left (`why=partition`), it was still queued (delayed by `--latency`, or waiting for room in
//! the socket) when the channel to its receiver closed (`why=peer-down`) or when its
//! sender left at the end of the run (`why=exit`). It carries the SEND's `lc`. A message
//! that did leave and died with a killed receiver before it was read has no DROP: no
//! process knows which those were.
//! `ev` is one of `want`, `enter`, `leave` and `leader` (with `leader` and `term`).
//! Readers must accept fields added after these at the end of a line.
//!
//! A message is named by `(from, from_inc, to, sent_lc)`: every send ticks the sender's
//! Lamport clock, broadcasts included (one envelope and one tick per receiver), so no two
//! messages of one incarnation share a clock. Heartbeats are not traced: they carry no
//! tick of their own and would drown the messages.
//!
//! Workers record only when asked (`--trace`) or when the run directory is kept
//! (`--keep`): even formatted by hand with no allocation and written in batches, a line
//! per message costs a saturated run (no think time, empty sections) 10 to 30 % of its
//! throughput on a 2-core machine, where eight workers share a CPU and every line lands
//! in a cold cache. Runs that think or hold the section for a millisecond do not notice.
//!
//! The worker writes its lines to memory and hands them to the kernel with one `write`
//! at the end of a turn of its event loop once the oldest is [`FLUSH_EVERY`] (5 ms) old
//! or they fill [`FLUSH_BYTES`], and always before it tells the supervisor its final
//! statistics and before it exits. A saturated turn handles a message or two, so this
//! turns thousands of `write`s per run into a few hundred; what cost remains is the
//! lines themselves. A worker killed outright (SIGKILL) therefore loses at most its
//! last 5 ms of lines. Every line that reaches the file is whole, unless the
//! disk fills mid-write, which [`load`] reports as a truncated line.
//!
//! # Vector clocks
//!
//! Nothing beyond the Lamport clock travels on the wire. The happens-before relation is
//! rebuilt from the trace instead ([`Trace::vector_clocks`]): each worker's events in
//! file order (its incarnations one after the other), plus an edge from every SEND to
//! the RECV that names it. That is exactly the relation a vector clock piggybacked on
//! every message would have computed, without making envelopes N counters larger on
//! every run, traced or not. What it cannot see is a message whose SEND was lost with a
//! killed worker's last batch: its RECV is then an ordinary local event.
//!
//! [`Trace::shiviz`] writes the trace in the input format of ShiViz (one event line,
//! then `host {"w0":1,…}`, under a first line holding the parsing regex).

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::resource;

/// First words of every trace file's header line.
pub const HEADER: &str = "# mutexlab trace v1";

/// The trace file of worker `w`, inside the run directory.
pub fn file_name(w: u32) -> String {
    format!("trace-w{w}.log")
}

/// The worker whose trace file is called `name`, if it is one.
pub fn worker_of(name: &str) -> Option<u32> {
    let id = name.strip_prefix("trace-w")?.strip_suffix(".log")?;
    // Only the canonical spelling: "trace-w01.log" is not ours.
    id.parse().ok().filter(|w: &u32| w.to_string() == id)
}

/// One traced event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The worker that recorded it.
    pub w: u32,
    /// Its incarnation.
    pub inc: u32,
    /// Monotonic nanoseconds.
    pub t: u64,
    /// Its Lamport clock (see the module documentation for which).
    pub lc: u64,
    pub kind: EventKind,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A message of type `msg` sent to `to`; `lc` is the envelope's clock.
    Send { to: u32, msg: String },
    /// A message received from `from`'s incarnation `from_inc`, stamped `sent_lc`.
    Recv { from: u32, from_inc: u32, sent_lc: u64, msg: String },
    /// The message sent to `to` with clock `lc` will never arrive, and `why`: one of
    /// [`DROP_REASONS`].
    Drop { to: u32, msg: String, why: String },
    /// The application's `want`, `enter`, `leave` or `leader` (with the leader and term).
    App { ev: String, leader: Option<u32>, term: Option<u64> },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Event { w, inc, t, lc, kind } = self;
        match kind {
            EventKind::Send { to, msg } => write!(f, "SEND w={w} inc={inc} t={t} lc={lc} to={to} type={msg}"),
            EventKind::Recv { from, from_inc, sent_lc, msg } => write!(
                f,
                "RECV w={w} inc={inc} t={t} lc={lc} from={from} from_inc={from_inc} sent_lc={sent_lc} type={msg}"
            ),
            EventKind::Drop { to, msg, why } => {
                write!(f, "DROP w={w} inc={inc} t={t} to={to} type={msg} lc={lc} why={why}")
            }
            EventKind::App { ev, leader, term } => {
                write!(f, "APP w={w} inc={inc} t={t} lc={lc} ev={ev}")?;
                if let Some(l) = leader {
                    write!(f, " leader={l}")?;
                }
                if let Some(term) = term {
                    write!(f, " term={term}")?;
                }
                Ok(())
            }
        }
    }
}

impl FromStr for Event {
    type Err = String;

    /// Parse one line (without its newline). The documented fields must come first, in
    /// their order; fields after them are ignored.
    fn from_str(line: &str) -> Result<Event, String> {
        let mut parts = line.split(' ');
        let tag = parts.next().unwrap_or_default();
        let names: &[&str] = match tag {
            "SEND" => &["w", "inc", "t", "lc", "to", "type"],
            "RECV" => &["w", "inc", "t", "lc", "from", "from_inc", "sent_lc", "type"],
            "DROP" => &["w", "inc", "t", "to", "type", "lc", "why"],
            "APP" => &["w", "inc", "t", "lc", "ev"],
            _ => return Err(format!("unknown event {tag:?}")),
        };
        let mut vals = HashMap::with_capacity(names.len());
        for name in names {
            let part = parts.next().ok_or_else(|| format!("{tag} line lacks {name}="))?;
            let v = field(part, name).ok_or_else(|| format!("expected {name}=…, found {part:?}"))?;
            if v.is_empty() {
                return Err(format!("{name}= is empty"));
            }
            vals.insert(*name, v);
        }
        let num = |name: &str| -> Result<u64, String> {
            vals[name].parse().map_err(|_| format!("{name}={} is not a number", vals[name]))
        };
        let id = |name: &str| -> Result<u32, String> {
            u32::try_from(num(name)?).map_err(|_| format!("{name}={} is out of range", vals[name]))
        };
        let text = |name: &str| vals[name].to_string();
        let kind = match tag {
            "SEND" => EventKind::Send { to: id("to")?, msg: text("type") },
            "RECV" => EventKind::Recv {
                from: id("from")?,
                from_inc: id("from_inc")?,
                sent_lc: num("sent_lc")?,
                msg: text("type"),
            },
            "DROP" => {
                let why = text("why");
                if !DROP_REASONS.contains(&why.as_str()) {
                    return Err(format!("why={why} is not one of {}", DROP_REASONS.join(", ")));
                }
                EventKind::Drop { to: id("to")?, msg: text("type"), why }
            }
            _ => {
                let ev = text("ev");
                let (mut leader, mut term) = (None, None);
                if ev == "leader" {
                    let mut next = |name: &str| -> Result<u64, String> {
                        let part = parts.next().ok_or_else(|| format!("ev=leader lacks {name}="))?;
                        let v =
                            field(part, name).ok_or_else(|| format!("expected {name}=…, found {part:?}"))?;
                        v.parse().map_err(|_| format!("{name}={v} is not a number"))
                    };
                    let l = next("leader")?;
                    leader = Some(u32::try_from(l).map_err(|_| format!("leader={l} is out of range"))?);
                    term = Some(next("term")?);
                } else if !["want", "enter", "leave"].contains(&ev.as_str()) {
                    return Err(format!("ev={ev} is not want, enter, leave or leader"));
                }
                EventKind::App { ev, leader, term }
            }
        };
        Ok(Event { w: id("w")?, inc: id("inc")?, t: num("t")?, lc: num("lc")?, kind })
    }
}

/// Why a message never left its sender, as a DROP line says (see the module
/// documentation).
pub const DROP_REASONS: &[&str] = &["drop", "down", "partition", "peer-down", "exit"];

/// The value of `name=value`, if `part` is that field.
fn field<'a>(part: &'a str, name: &str) -> Option<&'a str> {
    part.strip_prefix(name)?.strip_prefix('=')
}

/// Append a message type as a trace line can hold it: one word. A kind from outside
/// Rust could hold anything.
fn push_word(buf: &mut String, kind: &str) {
    let ok = |c: char| c.is_ascii_graphic() && c != '=';
    if kind.is_empty() {
        buf.push('_');
    } else if kind.chars().all(ok) {
        buf.push_str(kind);
    } else {
        buf.extend(kind.chars().map(|c| if ok(c) { c } else { '_' }));
    }
}

/// Append ` name=v`. By hand: the writer runs on every message, and `fmt` costs a few
/// hundred nanoseconds a line, enough to show in a saturated run's throughput.
fn push_num(buf: &mut String, name: &str, mut v: u64) {
    buf.push(' ');
    buf.push_str(name);
    buf.push('=');
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend(digits[i..].iter().map(|&d| d as char));
}

/// A worker's trace file, open for appending, with the lines not yet written.
///
/// Methods: `open`; recording, `send`, `recv`, `drop`, `app` (each adds one line to
/// the buffer); `flush`, the one `write` of everything buffered (also done on drop).
#[derive(Debug)]
pub struct Writer {
    /// `None` when tracing is off.
    file: Option<File>,
    path: PathBuf,
    w: u32,
    inc: u32,
    buf: String,
    /// A write failed: nothing more is recorded (the run goes on; see `flush`).
    broken: bool,
    /// When the oldest line in `buf` was recorded.
    since: Option<Instant>,
}

/// The most a worker keeps unwritten: this long since its oldest line…
pub const FLUSH_EVERY: Duration = Duration::from_millis(5);
/// …or this many bytes.
pub const FLUSH_BYTES: usize = 16 * 1024;

impl Writer {
    /// Open (or create) worker `w`'s trace file in `run_dir` for incarnation `inc`. The
    /// first life to open it writes the header line.
    pub fn open(run_dir: &Path, w: u32, inc: u32, workers: u32, algo: &str) -> io::Result<Writer> {
        let path = run_dir.join(file_name(w));
        let file = OpenOptions::new().append(true).create(true).open(&path)?;
        let len = file.metadata()?.len();
        let mut writer = Writer {
            file: Some(file),
            path,
            w,
            inc,
            buf: String::with_capacity(2 * FLUSH_BYTES),
            broken: false,
            since: None,
        };
        if len == 0 {
            let _ = write!(writer.buf, "{HEADER} w={w} workers={workers} algo=");
            push_word(&mut writer.buf, algo);
            writer.buf.push('\n');
            writer.flush()?;
        }
        Ok(writer)
    }

    /// A writer that records nothing: tracing is off.
    pub fn off() -> Writer {
        Writer {
            file: None,
            path: PathBuf::new(),
            w: 0,
            inc: 0,
            buf: String::new(),
            broken: true,
            since: None,
        }
    }

    /// Whether lines are still recorded (off, or stopped by a failed write, they are not).
    pub fn recording(&self) -> bool {
        !self.broken
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Start a line: its tag, the worker, its life and the time. False once broken.
    fn head(&mut self, tag: &str) -> bool {
        if self.broken {
            return false;
        }
        if self.buf.is_empty() {
            self.since = Some(Instant::now());
        }
        self.buf.push_str(tag);
        push_num(&mut self.buf, "w", self.w.into());
        push_num(&mut self.buf, "inc", self.inc.into());
        push_num(&mut self.buf, "t", resource::monotonic_ns());
        true
    }

    /// Append ` name=word`.
    fn text(&mut self, name: &str, value: &str) {
        self.buf.push(' ');
        self.buf.push_str(name);
        self.buf.push('=');
        push_word(&mut self.buf, value);
    }

    /// This worker sent a message of type `msg` to `to`, stamped `lc`.
    pub fn send(&mut self, lc: u64, to: u32, msg: &str) {
        if self.head("SEND") {
            push_num(&mut self.buf, "lc", lc);
            push_num(&mut self.buf, "to", to.into());
            self.text("type", msg);
            self.buf.push('\n');
        }
    }

    /// This worker took in a message; `lc` is its clock after.
    pub fn recv(&mut self, lc: u64, from: u32, from_inc: u32, sent_lc: u64, msg: &str) {
        if self.head("RECV") {
            push_num(&mut self.buf, "lc", lc);
            push_num(&mut self.buf, "from", from.into());
            push_num(&mut self.buf, "from_inc", from_inc.into());
            push_num(&mut self.buf, "sent_lc", sent_lc);
            self.text("type", msg);
            self.buf.push('\n');
        }
    }

    /// The message to `to` stamped `lc` will never arrive, because of `why` (one of
    /// [`DROP_REASONS`]).
    pub fn drop(&mut self, lc: u64, to: u32, msg: &str, why: &str) {
        if self.head("DROP") {
            push_num(&mut self.buf, "to", to.into());
            self.text("type", msg);
            push_num(&mut self.buf, "lc", lc);
            self.text("why", why);
            self.buf.push('\n');
        }
    }

    /// The application's event `ev` (`want`, `enter`, `leave`, or `leader` with `leader`).
    pub fn app(&mut self, lc: u64, ev: &str, leader: Option<(u32, u64)>) {
        if self.head("APP") {
            push_num(&mut self.buf, "lc", lc);
            self.text("ev", ev);
            if let Some((l, term)) = leader {
                push_num(&mut self.buf, "leader", l.into());
                push_num(&mut self.buf, "term", term);
            }
            self.buf.push('\n');
        }
    }

    /// Write everything buffered with one `write`, so that a file only ever gains whole
    /// batches of whole lines. On failure (a full disk, most likely) tracing stops for
    /// this life: the error is returned once, for the caller to report; the run's
    /// evidence is the resource file, and it goes on.
    pub fn flush(&mut self) -> io::Result<()> {
        self.since = None;
        if self.buf.is_empty() || self.broken {
            return Ok(());
        }
        let Some(file) = &self.file else { return Ok(()) };
        let result = nix::unistd::write(file, self.buf.as_bytes()).map_err(io::Error::from);
        let len = self.buf.len();
        self.buf.clear();
        self.since = None;
        match result {
            Ok(n) if n == len => Ok(()),
            Ok(n) => {
                self.broken = true;
                Err(io::Error::other(format!("short write ({n} of {len} bytes)")))
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }
}

impl Writer {
    /// When the buffered lines must be written at the latest (`None`: nothing waits).
    pub fn due(&self) -> Option<Instant> {
        self.since.map(|t| t + FLUSH_EVERY)
    }

    /// [`flush`](Self::flush) if the oldest buffered line is [`FLUSH_EVERY`] old or the
    /// buffer holds [`FLUSH_BYTES`]: a `write` per turn of a busy loop would cost more
    /// than all the formatting (see the module documentation).
    pub fn flush_if_due(&mut self) -> io::Result<()> {
        let due = self.due().is_some_and(|d| Instant::now() >= d);
        if due || self.buf.len() >= FLUSH_BYTES {
            self.flush()
        } else {
            Ok(())
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Why a trace cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{dir} holds no trace files (trace-w<ID>.log): runs record them with --trace or --keep")]
    NoTrace { dir: PathBuf },
    #[error("{path}:{line}: {msg}")]
    Bad { path: PathBuf, line: usize, msg: String },
    #[error("{path}:{line}: the last line is cut short (no newline at the end: a write that did not complete, as on a full disk)")]
    Truncated { path: PathBuf, line: usize },
    #[error("{0}")]
    Inconsistent(String),
}

/// A whole run's trace, every worker's events merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    pub workers: u32,
    pub algo: String,
    /// Sorted by `t`; one worker's events stay in the order it recorded them.
    pub events: Vec<Event>,
}

/// One message: from whom to whom, its type, when it was sent and when (if ever) it was
/// received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrow {
    pub from: u32,
    pub to: u32,
    pub msg: String,
    /// `t` of its SEND.
    pub sent: u64,
    /// `t` of its RECV; `None` if it never arrived (dropped, or lost with a process).
    pub received: Option<u64>,
    /// Why it never arrived, when its sender wrote a DROP line for it (`why=`).
    pub dropped: Option<String>,
}

/// Read every trace file in `run_dir`, check it, and merge the events in time order.
pub fn load(run_dir: &Path) -> Result<Trace, TraceError> {
    let io_err = |source| TraceError::Io { path: run_dir.to_path_buf(), source };
    let mut files: Vec<(u32, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(run_dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        if let Some(w) = entry.file_name().to_str().and_then(worker_of) {
            files.push((w, entry.path()));
        }
    }
    if files.is_empty() {
        return Err(TraceError::NoTrace { dir: run_dir.to_path_buf() });
    }
    files.sort();
    let mut header: Option<(u32, String, PathBuf)> = None;
    let mut events = Vec::new();
    for (w, path) in files {
        let text = crate::files::open_regular(&path)
            .and_then(|mut f| {
                let mut v = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut v).map(|_| v)
            })
            .map_err(|source| TraceError::Io { path: path.clone(), source })?;
        let (workers, algo) = parse_file(&path, w, &text, &mut events)?;
        match &header {
            None => header = Some((workers, algo, path)),
            Some((n, a, first)) if (*n, a.as_str()) != (workers, algo.as_str()) => {
                return Err(TraceError::Bad {
                    path,
                    line: 1,
                    msg: format!(
                        "workers={workers} algo={algo}, but {} says workers={n} algo={a}",
                        first.display()
                    ),
                })
            }
            Some(_) => {}
        }
    }
    let (workers, algo, _) = header.expect("at least one file");
    if let Some(ev) = events.iter().find(|e| e.w >= workers || peer_of(e).is_some_and(|p| p >= workers)) {
        return Err(TraceError::Inconsistent(format!("{ev}: names a worker beyond workers={workers}")));
    }
    // Stable: one worker's events keep their file order.
    events.sort_by_key(|e| e.t);
    let trace = Trace { workers, algo, events };
    trace.clocks(true)?;
    Ok(trace)
}

/// The other worker an event names, if any.
fn peer_of(e: &Event) -> Option<u32> {
    match &e.kind {
        EventKind::Send { to, .. } | EventKind::Drop { to, .. } => Some(*to),
        EventKind::Recv { from, .. } => Some(*from),
        EventKind::App { leader, .. } => *leader,
    }
}

/// Parse worker `w`'s file into `events`; its header's worker count and algorithm.
fn parse_file(
    path: &Path,
    w: u32,
    text: &[u8],
    events: &mut Vec<Event>,
) -> Result<(u32, String), TraceError> {
    let bad = |line: usize, msg: String| TraceError::Bad { path: path.to_path_buf(), line, msg };
    let text = std::str::from_utf8(text).map_err(|e| {
        let line = text[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
        bad(line, "not UTF-8 text".into())
    })?;
    if text.is_empty() {
        return Err(bad(1, "empty: no header line".into()));
    }
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    } else {
        return Err(TraceError::Truncated { path: path.to_path_buf(), line: lines.len() });
    }
    let head = lines[0];
    let rest = head
        .strip_prefix(HEADER)
        .and_then(|r| r.strip_prefix(' '))
        .ok_or_else(|| bad(1, format!("not a mutexlab trace: the first line must start with {HEADER:?}")))?;
    let mut fields = rest.split(' ');
    let mut next = |name: &str| {
        let part = fields.next().unwrap_or_default();
        field(part, name)
            .map(str::to_string)
            .ok_or_else(|| bad(1, format!("header: expected {name}=…, found {part:?}")))
    };
    let (hw, workers, algo) = (next("w")?, next("workers")?, next("algo")?);
    if hw != w.to_string() {
        return Err(bad(1, format!("header says w={hw}, but the file is worker {w}'s")));
    }
    let workers: u32 = workers
        .parse()
        .ok()
        .filter(|&n| n > 0 && w < n)
        .ok_or_else(|| bad(1, format!("header: workers={workers} is not a worker count above {w}")))?;
    let mut last: Option<(u32, u64)> = None;
    for (i, line) in lines.iter().enumerate().skip(1) {
        let ev: Event = line.parse().map_err(|m| bad(i + 1, m))?;
        if ev.w != w {
            return Err(bad(i + 1, format!("w={} in worker {w}'s file", ev.w)));
        }
        if let Some((inc, t)) = last {
            if ev.inc < inc {
                return Err(bad(i + 1, format!("inc={} after inc={inc}: lives go forward", ev.inc)));
            }
            if ev.t < t {
                return Err(bad(i + 1, format!("t={} before the previous line's t={t}", ev.t)));
            }
        }
        last = Some((ev.inc, ev.t));
        events.push(ev);
    }
    Ok((workers, algo))
}

/// A message's name: sender, its incarnation, receiver, the sender's clock.
type MsgId = (u32, u32, u32, u64);

impl Trace {
    /// Every SEND's index in `events` by the message it sent.
    fn sends(&self) -> Result<HashMap<MsgId, usize>, TraceError> {
        let mut sends = HashMap::new();
        for (i, e) in self.events.iter().enumerate() {
            if let EventKind::Send { to, .. } = e.kind {
                if let Some(j) = sends.insert((e.w, e.inc, to, e.lc), i) {
                    return Err(TraceError::Inconsistent(format!(
                        "two messages share one name (from, inc, to, lc): {} and {e}",
                        self.events[j]
                    )));
                }
            }
        }
        Ok(sends)
    }

    /// For every RECV, the index of the SEND it names (`None` for other events, and for
    /// a RECV whose SEND is not in the trace).
    fn matches(&self, sends: &HashMap<MsgId, usize>) -> Vec<Option<usize>> {
        self.events
            .iter()
            .map(|e| match &e.kind {
                EventKind::Recv { from, from_inc, sent_lc, msg } => sends
                    .get(&(*from, *from_inc, e.w, *sent_lc))
                    .copied()
                    .filter(|&s| matches!(&self.events[s].kind, EventKind::Send { msg: m, .. } if m == msg)),
                _ => None,
            })
            .collect()
    }

    /// Every message sent, in the order they were sent.
    pub fn arrows(&self) -> Vec<Arrow> {
        let mut received: HashMap<MsgId, u64> = HashMap::new();
        let mut dropped: HashMap<MsgId, &str> = HashMap::new();
        for e in &self.events {
            match &e.kind {
                EventKind::Recv { from, from_inc, sent_lc, .. } => {
                    received.entry((*from, *from_inc, e.w, *sent_lc)).or_insert(e.t);
                }
                // A DROP carries its SEND's clock, so it names the same message.
                EventKind::Drop { to, why, .. } => {
                    dropped.entry((e.w, e.inc, *to, e.lc)).or_insert(why);
                }
                _ => {}
            }
        }
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Send { to, msg } => Some(Arrow {
                    from: e.w,
                    to: *to,
                    msg: msg.clone(),
                    sent: e.t,
                    received: received.get(&(e.w, e.inc, *to, e.lc)).copied(),
                    dropped: dropped.get(&(e.w, e.inc, *to, e.lc)).map(|why| why.to_string()),
                }),
                _ => None,
            })
            .collect()
    }

    /// One vector clock per event (indexed like `events`, one entry per worker), from
    /// the happens-before the trace gives: each worker's own order, and every send
    /// before the receive that names it (see the module documentation). A receive whose
    /// send is missing, or that would precede it (which [`load`] refuses), counts as a
    /// local event.
    pub fn vector_clocks(&self) -> Vec<Vec<u64>> {
        self.clocks(false).expect("lenient clocks never fail")
    }

    /// The vector clocks; `strict`: a receive that comes before its send, in time or in
    /// causality, is an error rather than a local event.
    fn clocks(&self, strict: bool) -> Result<Vec<Vec<u64>>, TraceError> {
        let n = self.workers as usize;
        let sends = self.sends().or_else(|e| if strict { Err(e) } else { Ok(HashMap::new()) })?;
        let mut matched = self.matches(&sends);
        for (r, m) in matched.iter_mut().enumerate() {
            let Some(s) = *m else { continue };
            if self.events[r].t < self.events[s].t {
                if strict {
                    return Err(TraceError::Inconsistent(format!(
                        "a receive precedes its send: {} comes before {}",
                        self.events[r], self.events[s]
                    )));
                }
                *m = None;
            }
        }
        // Each worker's events in its own order, walked together: a receive waits
        // until its send has a clock.
        let mut lanes: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, e) in self.events.iter().enumerate() {
            if let Some(lane) = lanes.get_mut(e.w as usize) {
                lane.push(i);
            }
        }
        let mut pos = vec![0usize; n];
        let mut cur = vec![vec![0u64; n]; n];
        let mut out: Vec<Option<Vec<u64>>> = vec![None; self.events.len()];
        let mut left: usize = lanes.iter().map(Vec::len).sum();
        while left > 0 {
            let mut moved = false;
            for w in 0..n {
                while let Some(&i) = lanes[w].get(pos[w]) {
                    if let Some(s) = matched[i] {
                        let Some(sent) = &out[s] else { break };
                        for (c, &v) in cur[w].iter_mut().zip(sent) {
                            *c = (*c).max(v);
                        }
                    }
                    cur[w][w] = pos[w] as u64 + 1;
                    out[i] = Some(cur[w].clone());
                    pos[w] += 1;
                    left -= 1;
                    moved = true;
                }
            }
            if !moved {
                // Every lane waits on a receive whose send waits too: a cycle.
                let stuck = (0..n)
                    .filter_map(|w| lanes[w].get(pos[w]))
                    .copied()
                    .next()
                    .expect("some lane is not done");
                if strict {
                    return Err(TraceError::Inconsistent(format!(
                        "a receive precedes its send in causal order: {} waits for {}",
                        self.events[stuck],
                        self.events[matched[stuck].expect("a waiting receive has a send")]
                    )));
                }
                matched[stuck] = None;
            }
        }
        Ok(out.into_iter().map(|c| c.expect("every event has a clock")).collect())
    }

    /// The trace in ShiViz's input format: the parsing regex on the first line, an
    /// empty second line (one execution, no delimiter), then for every event its line
    /// and, below it, `w<ID> {"w<ID>":n,…}`, its host and vector clock (zeros left out,
    /// as ShiViz itself drops them).
    pub fn shiviz(&self) -> String {
        let clocks = self.vector_clocks();
        let mut s = String::with_capacity(self.events.len() * 96 + 64);
        s.push_str(SHIVIZ_REGEX);
        s.push_str("\n\n");
        for (e, vc) in self.events.iter().zip(&clocks) {
            let _ = write!(s, "{e}\nw{} {{", e.w);
            let mut first = true;
            for (w, &c) in vc.iter().enumerate().filter(|(_, &c)| c > 0) {
                let _ = write!(s, "{}\"w{w}\":{c}", if first { "" } else { "," });
                first = false;
            }
            s.push_str("}\n");
        }
        s
    }
}

/// The regex ShiViz parses [`Trace::shiviz`]'s log with (its own default): the event is
/// a line, the host and the clock the next.
pub const SHIVIZ_REGEX: &str = r"(?<event>.*)\n(?<host>\S*) (?<clock>{.*})";

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(w: u32, t: u64, lc: u64, kind: EventKind) -> Event {
        Event { w, inc: 0, t, lc, kind }
    }
    fn send(w: u32, t: u64, lc: u64, to: u32) -> Event {
        ev(w, t, lc, EventKind::Send { to, msg: "M".into() })
    }
    fn recv(w: u32, t: u64, lc: u64, from: u32, sent_lc: u64) -> Event {
        ev(w, t, lc, EventKind::Recv { from, from_inc: 0, sent_lc, msg: "M".into() })
    }
    fn app(w: u32, t: u64, lc: u64, what: &str) -> Event {
        ev(w, t, lc, EventKind::App { ev: what.into(), leader: None, term: None })
    }

    /// Write `events` as worker files in a fresh run directory, as the workers would.
    fn write_run(workers: u32, events: &[Event]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for w in 0..workers {
            let mut text = format!("{HEADER} w={w} workers={workers} algo=test\n");
            for e in events.iter().filter(|e| e.w == w) {
                text.push_str(&format!("{e}\n"));
            }
            std::fs::write(dir.path().join(file_name(w)), text).unwrap();
        }
        dir
    }

    #[test]
    fn every_kind_of_line_round_trips() {
        let lines = [
            "SEND w=0 inc=0 t=10 lc=1 to=3 type=REQUEST",
            "RECV w=3 inc=2 t=20 lc=5 from=0 from_inc=1 sent_lc=1 type=REQUEST",
            "DROP w=0 inc=0 t=30 to=3 type=REQUEST lc=2 why=partition",
            "APP w=0 inc=0 t=40 lc=3 ev=enter",
            "APP w=1 inc=4 t=50 lc=9 ev=leader leader=4 term=9",
        ];
        for line in lines {
            let e: Event = line.parse().unwrap_or_else(|m| panic!("{line}: {m}"));
            assert_eq!(e.to_string(), line);
        }
        let e: Event = lines[1].parse().unwrap();
        assert_eq!(
            e,
            Event {
                w: 3,
                inc: 2,
                t: 20,
                lc: 5,
                kind: EventKind::Recv { from: 0, from_inc: 1, sent_lc: 1, msg: "REQUEST".into() }
            }
        );
        // Fields added later at the end of a line are ignored.
        let more: Event = format!("{} extra=1", lines[0]).parse().unwrap();
        assert_eq!(more.to_string(), lines[0]);
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let err = |l: &str| l.parse::<Event>().unwrap_err();
        assert!(err("HELLO w=0").contains("unknown event"));
        assert!(err("SEND w=0 inc=0 t=1 lc=1 to=3").contains("lacks type="));
        assert!(err("SEND w=0 inc=0 t=x lc=1 to=3 type=A").contains("t=x"));
        assert!(err("SEND w=0 inc=0 lc=1 t=1 to=3 type=A").contains("expected t="));
        assert!(err("DROP w=0 inc=0 t=1 to=3 type=A lc=1 why=gone").contains("why=gone"));
        assert!(err("APP w=0 inc=0 t=1 lc=1 ev=dance").contains("ev=dance"));
        assert!(err("APP w=0 inc=0 t=1 lc=1 ev=leader leader=2").contains("lacks term="));
        assert!(err("SEND w=99999999999 inc=0 t=1 lc=1 to=3 type=A").contains("out of range"));
    }

    #[test]
    fn the_writer_s_lines_load_back_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut a = Writer::open(dir.path(), 0, 0, 2, "centralized").unwrap();
            let mut b = Writer::open(dir.path(), 1, 0, 2, "centralized").unwrap();
            a.app(0, "want", None);
            a.send(1, 1, "REQUEST");
            a.flush().unwrap();
            b.recv(2, 0, 0, 1, "REQUEST");
            b.send(3, 0, "GRANT");
            b.flush().unwrap();
            a.recv(4, 1, 0, 3, "GRANT");
            a.app(5, "enter", None);
            a.drop(6, 1, "RELEASE", "down");
            // `a` is dropped unflushed: dropping flushes.
        }
        // A second life appends under the same header.
        let mut again = Writer::open(dir.path(), 1, 1, 2, "centralized").unwrap();
        again.app(7, "leader", Some((1, 3)));
        drop(again);
        let text = std::fs::read_to_string(dir.path().join(file_name(1))).unwrap();
        assert_eq!(text.matches(HEADER).count(), 1, "{text}");
        let trace = load(dir.path()).unwrap();
        assert_eq!((trace.workers, trace.algo.as_str()), (2, "centralized"));
        let tags: Vec<String> = trace
            .events
            .iter()
            .map(|e| format!("{}{}", e.to_string().split(' ').next().unwrap(), e.w))
            .collect();
        assert_eq!(tags, ["APP0", "SEND0", "RECV1", "SEND1", "RECV0", "APP0", "DROP0", "APP1"]);
        assert!(trace.events.windows(2).all(|p| p[0].t <= p[1].t));
        // Each line says exactly what was recorded (the times aside).
        let expected = [
            (0, 0, 0, EventKind::App { ev: "want".into(), leader: None, term: None }),
            (0, 0, 1, EventKind::Send { to: 1, msg: "REQUEST".into() }),
            (1, 0, 2, EventKind::Recv { from: 0, from_inc: 0, sent_lc: 1, msg: "REQUEST".into() }),
            (1, 0, 3, EventKind::Send { to: 0, msg: "GRANT".into() }),
            (0, 0, 4, EventKind::Recv { from: 1, from_inc: 0, sent_lc: 3, msg: "GRANT".into() }),
            (0, 0, 5, EventKind::App { ev: "enter".into(), leader: None, term: None }),
            (0, 0, 6, EventKind::Drop { to: 1, msg: "RELEASE".into(), why: "down".into() }),
            (1, 1, 7, EventKind::App { ev: "leader".into(), leader: Some(1), term: Some(3) }),
        ];
        for (got, (w, inc, lc, kind)) in trace.events.iter().zip(expected) {
            assert_eq!(*got, Event { w, inc, t: got.t, lc, kind });
        }
    }

    #[test]
    fn lines_wait_in_memory_until_due_or_until_the_buffer_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(0));
        let mut w = Writer::open(dir.path(), 0, 0, 2, "x").unwrap();
        let header = std::fs::metadata(&path).unwrap().len();
        assert!(header > 0 && w.due().is_none());
        let before = Instant::now();
        w.send(1, 1, "M");
        assert!(w.due().is_some_and(|d| d >= before + FLUSH_EVERY));
        let mut lc = 1;
        while w.buf.len() < FLUSH_BYTES {
            assert_eq!(std::fs::metadata(&path).unwrap().len(), header, "written before it was due");
            lc += 1;
            w.send(lc, 1, "M");
        }
        w.flush_if_due().unwrap();
        assert!(w.due().is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count() as u64, 1 + lc);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn a_writer_that_is_off_records_nothing() {
        let mut w = Writer::off();
        w.send(1, 1, "M");
        w.app(2, "enter", None);
        assert!(w.due().is_none() && w.buf.is_empty());
        w.flush().unwrap();
    }

    #[test]
    fn odd_message_kinds_stay_one_word() {
        let word = |k: &str| {
            let mut s = String::new();
            push_word(&mut s, k);
            s
        };
        assert_eq!(word("REQUEST"), "REQUEST");
        assert_eq!(word("two words=x"), "two_words_x");
        assert_eq!(word(""), "_");
    }

    #[test]
    fn the_writer_s_numbers_are_written_in_full() {
        let mut s = String::new();
        for v in [0, 7, 10, 1234567890, u64::MAX] {
            push_num(&mut s, "x", v);
        }
        assert_eq!(s, format!(" x=0 x=7 x=10 x=1234567890 x={}", u64::MAX));
    }

    /// Three workers: 0 sends to 1, 1 forwards to 2, 2 answers 0; 0's REPLY to 1 is
    /// dropped. Known clocks by hand.
    fn three() -> Vec<Event> {
        vec![
            app(0, 1, 0, "want"),                                                        // [1,0,0]
            send(0, 2, 1, 1),                                                            // [2,0,0]
            app(2, 3, 0, "want"),                                                        // [0,0,1]
            recv(1, 4, 2, 0, 1),                                                         // [2,1,0]
            send(1, 5, 3, 2),                                                            // [2,2,0]
            recv(2, 6, 4, 1, 3),                                                         // [2,2,2]
            send(2, 7, 5, 0),                                                            // [2,2,3]
            send(0, 8, 2, 1),                                                            // [3,0,0]
            ev(0, 9, 2, EventKind::Drop { to: 1, msg: "M".into(), why: "drop".into() }), // [4,0,0]
            recv(0, 10, 6, 2, 5),                                                        // [5,2,3]
        ]
    }

    #[test]
    fn vector_clocks_follow_program_order_and_messages() {
        let dir = write_run(3, &three());
        let trace = load(dir.path()).unwrap();
        let expected: Vec<Vec<u64>> = vec![
            vec![1, 0, 0],
            vec![2, 0, 0],
            vec![0, 0, 1],
            vec![2, 1, 0],
            vec![2, 2, 0],
            vec![2, 2, 2],
            vec![2, 2, 3],
            vec![3, 0, 0],
            vec![4, 0, 0],
            vec![5, 2, 3],
        ];
        assert_eq!(trace.vector_clocks(), expected);
    }

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
        let e = trace.clocks(true).unwrap_err().to_string();
        assert!(e.contains("causal order"), "{e}");
        assert_eq!(trace.vector_clocks(), [vec![1, 0], vec![2, 0], vec![2, 1], vec![2, 2]]);
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
        let cases = [
            (format!("{good}SEND w=0 inc=0 t=x lc=1 to=1 type=M\n"), ":4: t=x"),
            (format!("{good}SEND w=0 inc=0 t=9 lc=1 to=1"), ":4: the last line is cut short"),
            (format!("{good}SEND w=1 inc=0 t=9 lc=9 to=1 type=M\n"), ":4: w=1 in worker 0's file"),
            (format!("{good}SEND w=0 inc=0 t=0 lc=9 to=1 type=M\n"), ":4: t=0 before"),
            (good.replace("w=0 workers", "w=1 workers"), ":1: header says w=1"),
            (good.replace("workers=2", "workers=3"), "but"),
            ("hello\n".to_string(), ":1: not a mutexlab trace"),
            (String::new(), ":1: empty"),
            (format!("{good}SEND w=0 inc=0 t=9 lc=9 to=7 type=M\n"), "beyond workers=2"),
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

    #[test]
    fn only_canonical_names_are_trace_files() {
        assert_eq!(worker_of("trace-w12.log"), Some(12));
        assert_eq!(worker_of("trace-w012.log"), None);
        assert_eq!(worker_of("trace-w.log"), None);
        assert_eq!(worker_of("resource.log"), None);
    }

    #[test]
    fn the_shiviz_log_has_the_regex_line_then_event_and_clock_pairs() {
        let dir = write_run(3, &three());
        let out = load(dir.path()).unwrap().shiviz();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], SHIVIZ_REGEX);
        assert_eq!(lines[1], "");
        assert_eq!(lines.len(), 2 + 2 * 10);
        assert_eq!(lines[2], "APP w=0 inc=0 t=1 lc=0 ev=want");
        assert_eq!(lines[3], r#"w0 {"w0":1}"#);
        assert_eq!(lines[21], r#"w0 {"w0":5,"w1":2,"w2":3}"#);
        for pair in lines[2..].chunks(2) {
            let (host, clock) = pair[1].split_once(' ').unwrap();
            let vc: HashMap<String, u64> = serde_json::from_str(clock).unwrap();
            assert!(vc.contains_key(host), "{pair:?}");
            assert!(pair[0].contains(&format!(" w={} ", &host[1..])), "{pair:?}");
        }
    }
}
