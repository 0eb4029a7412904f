//! The worker's side: [`Writer`] records each event as a line into the worker's trace
//! file (in memory until a batch is due, then one `write`), or as a record into its
//! flight recorder's ring.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::line::{cut_state, push_line, push_word, Rec, APP_EVENTS, DROP_REASONS, STATE_MAX};
use super::ring::{record_head, STATE_CUT};
use super::{file_name, HEADER};
use crate::algorithm::Message;
use crate::flight;
use crate::resource;

/// A worker's trace file, open for appending, with the lines not yet written; or its
/// flight recorder's ring.
///
/// Methods: `open` and `ring`; recording, `send`, `recv`, `drop`, `app` (each adds one
/// line to the buffer, or one record to the ring); `flush`, the one `write` of
/// everything buffered (also done on drop).
#[derive(Debug)]
pub struct Writer {
    /// `None` when tracing is off or goes to the ring.
    file: Option<File>,
    /// The flight recorder's ring ([`crate::flight`]): each event goes there as a
    /// record at once, never as text (see [`RECORD_HEAD`](super::ring::RECORD_HEAD)).
    ring: Option<flight::Ring>,
    path: PathBuf,
    w: u32,
    inc: u32,
    pub(super) buf: String,
    /// A message's bytes on their way into the ring, kept to save an allocation each.
    scratch: Vec<u8>,
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
        let file = OpenOptions::new().read(true).append(true).create(true).open(&path)?;
        let len = file.metadata()?.len();
        let mut writer = Writer {
            file: Some(file),
            ring: None,
            path,
            w,
            inc,
            buf: String::with_capacity(2 * FLUSH_BYTES),
            scratch: Vec::new(),
            broken: false,
            since: None,
        };
        if len == 0 {
            let _ = write!(writer.buf, "{HEADER} w={w} workers={workers} algo=");
            push_word(&mut writer.buf, algo);
            writer.buf.push('\n');
            writer.flush()?;
        } else {
            // A life killed mid-write leaves a torn last line: start on a fresh one, so
            // this life's first line is not glued to it. No other life writes now.
            let mut last = [0u8];
            std::os::unix::fs::FileExt::read_exact_at(
                writer.file.as_ref().expect("open"),
                &mut last,
                len - 1,
            )?;
            if last[0] != b'\n' {
                writer.buf.push('\n');
                writer.flush()?;
            }
        }
        Ok(writer)
    }

    /// A writer that records worker `w`'s life `inc` in the flight recorder's ring, a new
    /// file in `run_dir` ([`flight::ring_name`]) of `cap` bytes ([`flight::RING_BYTES`]
    /// for a run): what the run keeps only if it fails (see the module documentation).
    pub fn ring(run_dir: &Path, w: u32, inc: u32, cap: u64) -> io::Result<Writer> {
        let path = run_dir.join(flight::ring_name(w, inc));
        let ring = flight::Ring::create(&path, cap)?;
        Ok(Writer {
            file: None,
            ring: Some(ring),
            path,
            w,
            inc,
            buf: String::new(),
            scratch: Vec::with_capacity(256),
            broken: false,
            since: None,
        })
    }

    /// A writer that records nothing: tracing is off.
    pub fn off() -> Writer {
        Writer {
            file: None,
            ring: None,
            path: PathBuf::new(),
            w: 0,
            inc: 0,
            buf: String::new(),
            scratch: Vec::new(),
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

    /// Record `rec` at `t`, with its message if it has one: into the ring as a record
    /// (the message as its MessagePack bytes: no text is made), or as a line into the
    /// buffer for the next flush.
    pub(super) fn record<M: Message>(&mut self, t: u64, rec: Rec, msg: Option<&M>) {
        if self.broken {
            return;
        }
        if let Some(ring) = &mut self.ring {
            self.scratch.clear();
            if let Some(msg) = msg {
                // Our messages always serialise (they travel so); one that did not would
                // be recorded with no bytes, and written out as undecodable.
                let _ = rmp_serde::encode::write(&mut self.scratch, msg);
            }
            ring.push(&[&record_head(t, &rec), &self.scratch]);
            return;
        }
        if self.buf.is_empty() {
            self.since = Some(Instant::now());
        }
        match msg {
            Some(msg) => push_line(&mut self.buf, self.w, self.inc, t, &rec, (msg.kind(), &msg.json_text())),
            None => push_line(&mut self.buf, self.w, self.inc, t, &rec, ("", "")),
        }
    }

    /// This worker sent `msg` to `to`, stamped `lc`.
    pub fn send<M: Message>(&mut self, lc: u64, to: u32, msg: &M) {
        if self.recording() {
            self.record(resource::monotonic_ns(), Rec::Send { lc, to }, Some(msg));
        }
    }

    /// This worker took in `msg`; `lc` is its clock after.
    pub fn recv<M: Message>(&mut self, lc: u64, from: u32, from_inc: u32, sent_lc: u64, msg: &M) {
        if self.recording() {
            self.record(resource::monotonic_ns(), Rec::Recv { lc, from, from_inc, sent_lc }, Some(msg));
        }
    }

    /// [`Writer::recv`] at `t` (monotonic ns): a clock reading the caller shares with
    /// the rest of its step.
    pub fn recv_at<M: Message>(&mut self, t: u64, lc: u64, from: u32, from_inc: u32, sent_lc: u64, msg: &M) {
        if self.recording() {
            self.record(t, Rec::Recv { lc, from, from_inc, sent_lc }, Some(msg));
        }
    }

    /// `msg`, sent to `to` stamped `lc`, will never arrive, because of `why` (one of
    /// [`DROP_REASONS`]).
    pub fn drop<M: Message>(&mut self, lc: u64, to: u32, msg: &M, why: &str) {
        debug_assert!(DROP_REASONS.contains(&why), "{why}");
        if self.recording() {
            self.record(resource::monotonic_ns(), Rec::Drop { lc, to, why }, Some(msg));
        }
    }

    /// The application's event `ev` (one of [`APP_EVENTS`]: `want`, `enter`, `leave`, or
    /// `leader` with `leader`).
    pub fn app(&mut self, lc: u64, ev: &str, leader: Option<(u32, u64)>) {
        debug_assert!(APP_EVENTS.contains(&ev), "{ev}");
        if self.recording() {
            self.record::<NoMessage>(resource::monotonic_ns(), Rec::App { lc, ev, leader }, None);
        }
    }

    /// The node's state after a step, as JSON text (`--states`): a STATE record, cut to
    /// [`STATE_MAX`] bytes.
    pub fn state(&mut self, lc: u64, json: &str) {
        if self.recording() {
            self.record_state(resource::monotonic_ns(), lc, json);
        }
    }

    /// [`Writer::state`] at `t`.
    pub(super) fn record_state(&mut self, t: u64, lc: u64, json: &str) {
        if self.broken {
            return;
        }
        let rec = Rec::State { lc };
        if let Some(ring) = &mut self.ring {
            let mut head = record_head(t, &rec);
            if json.len() > STATE_MAX {
                head[1] = STATE_CUT;
            }
            ring.push(&[&head, cut_state(json).as_bytes()]);
            return;
        }
        if self.buf.is_empty() {
            self.since = Some(Instant::now());
        }
        push_line(&mut self.buf, self.w, self.inc, t, &rec, ("", json));
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

/// The message type of an APP event, which has none.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum NoMessage {}

impl Message for NoMessage {
    fn kind(&self) -> &str {
        match *self {}
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

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::super::{check, load, Event, EventKind};
    use super::*;

    #[test]
    fn the_writer_s_lines_load_back_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut a = Writer::open(dir.path(), 0, 0, 2, "centralized").unwrap();
            let mut b = Writer::open(dir.path(), 1, 0, 2, "centralized").unwrap();
            a.app(0, "want", None);
            a.send(1, 1, &k("REQUEST"));
            a.flush().unwrap();
            b.recv(2, 0, 0, 1, &k("REQUEST"));
            b.send(3, 0, &k("GRANT"));
            b.flush().unwrap();
            a.recv(4, 1, 0, 3, &k("GRANT"));
            a.app(5, "enter", None);
            a.drop(6, 1, &k("RELEASE"), "down");
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
        w.send(1, 1, &k("M"));
        assert!(w.due().is_some_and(|d| d >= before + FLUSH_EVERY));
        let mut lc = 1;
        while w.buf.len() < FLUSH_BYTES {
            assert_eq!(std::fs::metadata(&path).unwrap().len(), header, "written before it was due");
            lc += 1;
            w.send(lc, 1, &k("M"));
        }
        w.flush_if_due().unwrap();
        assert!(w.due().is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count() as u64, 1 + lc);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn a_receipt_given_its_time_is_recorded_at_that_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::open(dir.path(), 0, 0, 2, "x").unwrap();
        w.recv_at(12_345, 3, 1, 0, 2, &k("GRANT"));
        w.flush().unwrap();
        let text = std::fs::read_to_string(dir.path().join(file_name(0))).unwrap();
        assert!(
            text.contains("\nRECV w=0 inc=0 t=12345 lc=3 from=1 from_inc=0 sent_lc=2 type=GRANT "),
            "{text}"
        );
    }

    #[test]
    fn a_writer_that_is_off_records_nothing() {
        let mut w = Writer::off();
        w.send(1, 1, &k("M"));
        w.app(2, "enter", None);
        assert!(w.due().is_none() && w.buf.is_empty());
        w.flush().unwrap();
    }

    #[test]
    fn a_new_life_starts_on_a_fresh_line_after_a_torn_one() {
        let dir = write_run(2, &three()[..2]);
        let path = dir.path().join(file_name(0));
        let mut text = std::fs::read_to_string(&path).unwrap();
        // The first life was killed in the middle of a line.
        text.push_str("SEND w=0 inc=0 t=3 lc=3 to=1 ty");
        std::fs::write(&path, &text).unwrap();
        let mut next = Writer::open(dir.path(), 0, 1, 3, "test").unwrap();
        next.app(0, "want", None);
        drop(next);
        let after = std::fs::read_to_string(&path).unwrap();
        let rest = after.strip_prefix(&format!("{text}\nAPP w=0 inc=1 t=")).expect(&after);
        assert!(rest.ends_with(" lc=0 ev=want\n") && rest.lines().count() == 1, "{after}");
        // The readers skip the torn line, say so, and read the new life.
        let summary = check(dir.path()).unwrap();
        assert!(summary.notes.shown[0].contains(":4: skipped a torn line"), "{:?}", summary.notes);
        assert_eq!(load(dir.path()).unwrap().events.len(), 3);
    }
}
