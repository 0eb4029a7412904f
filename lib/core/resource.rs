//! The shared resource: a real, append-only file that the workers guard.
//!
//! One human-readable line per record, each written with a single `write(2)` on an
//! `O_APPEND` descriptor, so the file's order is the order in which the kernel applied
//! the writes, and the auditor can judge a run from the file alone:
//!
//! ```text
//! # mutexlab resource v1 algo=centralized workers=3
//! WANT w=0 e=1 t=8812345001
//! ENTER w=0 e=1 fence=4:0 t=8812391002
//! EXIT w=0 e=1 fence=4:0 read=0 value=1 t=8812402003
//! ```
//!
//! `w` is the worker, `e` its entry number (from 1), `t` the machine's monotonic clock in
//! nanoseconds. `fence` is the fencing token `clock:id`, which must rise strictly from
//! one entry to the next. `read` is the counter value the holder read inside its critical
//! section and `value` the one it wrote back (`read + 1`): the counter lives in the file
//! as the `value` of the last EXIT record.
//!
//! A *fenced* file (`run --fenced`, header field `fenced=1`) guards itself as well: the
//! resource refuses an ENTER whose fence is not above the newest fence it accepted, and
//! an EXIT whose fence is no longer the newest (someone entered after this holder), and
//! records the refusal instead, so the data stays right even when two workers believe
//! they hold the lock ([`Local::append_fenced`]):
//!
//! ```text
//! REFUSED w=4 e=9 at=exit fence=31:4 over=40:3 t=8812502003
//! ```

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// First line of every resource file.
pub const HEADER: &str = "# mutexlab resource v1";

/// A fencing token: the holder's Lamport clock at entry, ties broken by worker id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Fence {
    /// Logical clock at entry.
    pub clock: u64,
    /// Worker id, to break ties.
    pub id: u32,
}

impl fmt::Display for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.clock, self.id)
    }
}

impl FromStr for Fence {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let at = s.bytes().position(|b| b == b':').ok_or(())?;
        let (c, i) = (&s[..at], &s[at + 1..]);
        Ok(Fence { clock: c.parse().map_err(|_| ())?, id: i.parse().map_err(|_| ())? })
    }
}

/// One line of the resource file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Record {
    /// WANT: the application asked for the critical section.
    Want {
        /// The worker.
        w: u32,
        /// Its entry number, from 1.
        e: u64,
        /// When, on the machine's monotonic clock, in nanoseconds.
        t: u64,
    },
    /// ENTER: the worker entered.
    Enter {
        /// The worker.
        w: u32,
        /// Its entry number, from 1.
        e: u64,
        /// Its fencing token, which must rise strictly from one entry to the next.
        fence: Fence,
        /// When, on the machine's monotonic clock, in nanoseconds.
        t: u64,
    },
    /// EXIT: the worker wrote the counter and left.
    Exit {
        /// The worker.
        w: u32,
        /// Its entry number, from 1.
        e: u64,
        /// The fencing token it entered with.
        fence: Fence,
        /// The counter it read inside.
        read: u64,
        /// The counter it wrote back (`read + 1`).
        value: u64,
        /// When, on the machine's monotonic clock, in nanoseconds.
        t: u64,
    },
    /// REFUSED: a fenced resource refused this worker's ENTER or EXIT. Nothing was
    /// written.
    Refused {
        /// The worker.
        w: u32,
        /// Its entry number, from 1.
        e: u64,
        /// Which write was refused.
        at: Stage,
        /// The worker's fence, older than `over`.
        fence: Fence,
        /// The newest fence the resource had accepted.
        over: Fence,
        /// When, on the machine's monotonic clock, in nanoseconds.
        t: u64,
    },
}

/// Which write a fenced resource refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    /// The ENTER record.
    Enter,
    /// The EXIT record.
    Exit,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Enter => "enter",
            Stage::Exit => "exit",
        }
    }
}

impl Record {
    /// The worker that wrote it.
    pub fn worker(&self) -> u32 {
        match *self {
            Record::Want { w, .. }
            | Record::Enter { w, .. }
            | Record::Exit { w, .. }
            | Record::Refused { w, .. } => w,
        }
    }

    /// Its timestamp (monotonic nanoseconds).
    pub fn time(&self) -> u64 {
        match *self {
            Record::Want { t, .. }
            | Record::Enter { t, .. }
            | Record::Exit { t, .. }
            | Record::Refused { t, .. } => t,
        }
    }
}

impl Record {
    /// Append the record's line, as [`Display`](fmt::Display) shows it, and its newline
    /// to `buf`. By hand: a worker writes three records an entry, and `fmt` was a
    /// measurable part of what an entry cost it.
    pub fn push_line(&self, buf: &mut String) {
        let (tag, w, e) = match *self {
            Record::Want { w, e, .. } => ("WANT", w, e),
            Record::Enter { w, e, .. } => ("ENTER", w, e),
            Record::Exit { w, e, .. } => ("EXIT", w, e),
            Record::Refused { w, e, .. } => ("REFUSED", w, e),
        };
        buf.push_str(tag);
        push_num(buf, " w=", u64::from(w));
        push_num(buf, " e=", e);
        match *self {
            Record::Want { .. } => {}
            Record::Enter { fence, .. } => push_fence(buf, " fence=", fence),
            Record::Exit { fence, read, value, .. } => {
                push_fence(buf, " fence=", fence);
                push_num(buf, " read=", read);
                push_num(buf, " value=", value);
            }
            Record::Refused { at, fence, over, .. } => {
                buf.push_str(" at=");
                buf.push_str(at.name());
                push_fence(buf, " fence=", fence);
                push_fence(buf, " over=", over);
            }
        }
        push_num(buf, " t=", self.time());
        buf.push('\n');
    }
}

/// Append `name` (with its space and `=`) and `v` in decimal.
fn push_num(buf: &mut String, name: &str, v: u64) {
    buf.push_str(name);
    push_digits(buf, v);
}

/// Append `name` and `fence` as `clock:id`.
fn push_fence(buf: &mut String, name: &str, fence: Fence) {
    push_num(buf, name, fence.clock);
    buf.push(':');
    push_digits(buf, u64::from(fence.id));
}

/// `v` in decimal, without `fmt` (the writer runs on every entry).
fn push_digits(buf: &mut String, v: u64) {
    buf.push_str(itoa::Buffer::new().format(v));
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Record::Want { w, e, t } => write!(f, "WANT w={w} e={e} t={t}"),
            Record::Enter { w, e, fence, t } => write!(f, "ENTER w={w} e={e} fence={fence} t={t}"),
            Record::Exit { w, e, fence, read, value, t } => {
                write!(f, "EXIT w={w} e={e} fence={fence} read={read} value={value} t={t}")
            }
            Record::Refused { w, e, at, fence, over, t } => {
                write!(f, "REFUSED w={w} e={e} at={} fence={fence} over={over} t={t}", at.name())
            }
        }
    }
}

impl FromStr for Record {
    type Err = String;

    /// Parse one line (without its newline). Fields must come in the documented order.
    fn from_str(line: &str) -> Result<Self, String> {
        let mut parts = Fields(Some(line));
        let tag = parts.next().unwrap_or_default();
        let names: &[&str] = match tag {
            "WANT" => &["w", "e", "t"],
            "ENTER" => &["w", "e", "fence", "t"],
            "EXIT" => &["w", "e", "fence", "read", "value", "t"],
            "REFUSED" => &["w", "e", "at", "fence", "over", "t"],
            _ => return Err(format!("unknown record type {tag:?}")),
        };
        // No allocation: a worker parses a record back on every entry.
        let mut vals = [""; 6];
        for (name, val) in names.iter().zip(&mut vals) {
            let part = parts.next().ok_or_else(|| format!("{tag} record lacks {name}="))?;
            *val = part
                .strip_prefix(name)
                .and_then(|r| r.strip_prefix('='))
                .ok_or_else(|| format!("expected {name}=…, found {part:?}"))?;
        }
        if let Some(extra) = parts.next() {
            return Err(format!("unexpected field {extra:?}"));
        }
        let num = |i: usize| -> Result<u64, String> {
            vals[i].parse().map_err(|_| format!("{}={} is not a number", names[i], vals[i]))
        };
        let fence = |i: usize| -> Result<Fence, String> {
            vals[i].parse().map_err(|_| format!("fence={} is not clock:id", vals[i]))
        };
        let w = u32::try_from(num(0)?).map_err(|_| "worker id out of range".to_string())?;
        Ok(match tag {
            "WANT" => Record::Want { w, e: num(1)?, t: num(2)? },
            "ENTER" => Record::Enter { w, e: num(1)?, fence: fence(2)?, t: num(3)? },
            "REFUSED" => {
                let at = match vals[2] {
                    "enter" => Stage::Enter,
                    "exit" => Stage::Exit,
                    v => return Err(format!("at={v} is not enter or exit")),
                };
                Record::Refused { w, e: num(1)?, at, fence: fence(3)?, over: fence(4)?, t: num(5)? }
            }
            _ => Record::Exit { w, e: num(1)?, fence: fence(2)?, read: num(3)?, value: num(4)?, t: num(5)? },
        })
    }
}

/// `str::split(' ')`, by bytes: the supervisor's tail of the file and the audit split
/// every record, and a char search per field was most of what that cost.
struct Fields<'a>(Option<&'a str>);

impl<'a> Iterator for Fields<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.0?;
        match rest.bytes().position(|b| b == b' ') {
            // A space is one byte: both sides of it are whole characters.
            Some(i) => {
                self.0 = Some(&rest[i + 1..]);
                Some(&rest[..i])
            }
            None => {
                self.0 = None;
                Some(rest)
            }
        }
    }
}

/// The machine's monotonic clock in nanoseconds: the same clock in every process, so
/// records from different workers and the supervisor's fault log compare directly.
pub fn monotonic_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available on Linux");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// Create a fresh resource file with its header line; `fenced` marks it as one that
/// refuses stale writes.
pub fn create(path: &Path, algo: &str, workers: u32, fenced: bool) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).open(path)?;
    let mark = if fenced { " fenced=1" } else { "" };
    io::Write::write_all(&mut f, format!("{HEADER} algo={algo} workers={workers}{mark}\n").as_bytes())
}

/// What a fenced resource did with a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fenced {
    /// Written; the file held this when it was.
    Accepted(Committed),
    /// Refused, and a REFUSED record written instead.
    Refused {
        /// The newer fence the resource had accepted.
        over: Fence,
    },
}

/// What a worker last found committed in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    /// The counter: `value` of the last EXIT record, 0 if none.
    pub value: u64,
    /// The fence of the last ENTER record, if any.
    pub last_fence: Option<Fence>,
}

/// The resource file itself, open in this process.
#[derive(Debug)]
pub struct Local {
    file: File,
    line: String,
    /// The file's tail as [`Local::committed`] last read it, kept between calls: a
    /// fresh zeroed buffer each time was most of what an entry cost a worker.
    tail: Vec<u8>,
    /// Where the file ended when last read (it only grows).
    end: u64,
}

impl Local {
    /// Open an existing resource file for appending and reading.
    pub fn open(path: &Path) -> io::Result<Local> {
        let file = OpenOptions::new().read(true).append(true).open(path)?;
        let end = file.metadata()?.len();
        Ok(Local { file, line: String::with_capacity(128), tail: Vec::new(), end })
    }

    /// The file (for `flock`).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Append one record with a single `write`, so records never interleave.
    pub fn append(&mut self, rec: &Record) -> io::Result<()> {
        self.line.clear();
        rec.push_line(&mut self.line);
        let n = nix::unistd::write(&self.file, self.line.as_bytes()).map_err(io::Error::from)?;
        if n != self.line.len() {
            // The rest is not written: a second write could land after another worker's
            // record. A short write on a full file system is how ENOSPC first shows:
            // say so in the OS's words when that is the cause.
            let len = self.line.len();
            let full = nix::sys::statvfs::fstatvfs(&self.file).is_ok_and(|v| v.blocks_available() == 0);
            let cause = if full {
                format!(": {}", io::Error::from_raw_os_error(nix::libc::ENOSPC))
            } else {
                String::new()
            };
            return Err(io::Error::other(format!("short write ({n} of {len} bytes){cause}")));
        }
        Ok(())
    }

    /// Append an ENTER or EXIT as a fenced resource does: under an exclusive lock on the
    /// file, so that no other worker's check and write come between ours, it reads the
    /// newest fence accepted (that of the last ENTER: accepted fences only rise) and
    /// writes the record only if its fence is newer (ENTER) or still the newest (EXIT);
    /// otherwise it writes a REFUSED record. The lock plays the storage's own atomic
    /// compare-and-write: it is not the mutual exclusion under test, only how one file
    /// on disk can check a token before it takes a write.
    pub fn append_fenced(&mut self, rec: &Record) -> io::Result<Fenced> {
        let (w, e, at, fence, t) = match *rec {
            Record::Enter { w, e, fence, t } => (w, e, Stage::Enter, fence, t),
            Record::Exit { w, e, fence, t, .. } => (w, e, Stage::Exit, fence, t),
            _ => return self.append(rec).map(|()| Fenced::Accepted(Committed::default())),
        };
        let lock = nix::fcntl::Flock::lock(self.file.try_clone()?, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| io::Error::from(e))?;
        let result = (|| {
            let now = self.committed()?;
            let stale = now.last_fence.filter(|&over| match at {
                Stage::Enter => fence <= over,
                Stage::Exit => fence < over,
            });
            match stale {
                Some(over) => {
                    self.append(&Record::Refused { w, e, at, fence, over, t })?;
                    Ok(Fenced::Refused { over })
                }
                None => self.append(rec).map(|()| Fenced::Accepted(now)),
            }
        })();
        drop(lock); // closes the duplicate, and with it the lock
        result
    }

    /// The highest fence clock of any ENTER in the file (0 if none): where a restarted
    /// worker's Lamport clock resumes. The whole file is read; restarts are rare.
    pub fn highest_fence_clock(&self) -> io::Result<u64> {
        let len = self.file.metadata()?.len();
        let mut buf = vec![0u8; len as usize];
        self.file.read_exact_at(&mut buf, 0)?;
        Ok(buf
            .split(|&b| b == b'\n')
            .filter(|l| l.starts_with(b"ENTER "))
            .filter_map(|l| std::str::from_utf8(l).ok()?.parse::<Record>().ok())
            .filter_map(|r| match r {
                Record::Enter { fence, .. } => Some(fence.clock),
                _ => None,
            })
            .max()
            .unwrap_or(0))
    }

    /// Find the counter and the last fence by scanning the file backwards from its end.
    /// A last line without its newline (a write still landing) is skipped.
    pub fn committed(&mut self) -> io::Result<Committed> {
        self.scan(true)
    }

    /// The counter alone (see [`Local::committed`]): what an unfenced worker reads
    /// once inside, where the last fence is its own ENTER, just written.
    pub fn counter(&mut self) -> io::Result<u64> {
        Ok(self.scan(false)?.value)
    }

    /// Read from `start` to the end of the file into `tail`, if that is at most
    /// [`READ_AHEAD`] bytes: the file's length then, `None` if there is more. A regular
    /// file's read comes back short only at its end, so this is one `pread` where a
    /// `stat` for the length and a `pread` were two.
    fn read_to_end(&mut self, start: u64) -> io::Result<Option<u64>> {
        if self.tail.len() < READ_AHEAD {
            self.tail.resize(READ_AHEAD, 0); // zeroed once, reused from then on
        }
        let mut filled = 0;
        while filled < READ_AHEAD {
            let want = READ_AHEAD - filled;
            match self.file.read_at(&mut self.tail[filled..READ_AHEAD], start + filled as u64) {
                Ok(n) if n < want => return Ok(Some(start + (filled + n) as u64)),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// [`Local::committed`], the last fence only if `need_fence`. The scan reads
    /// what was written since the file was last read (it only grows: the byte before
    /// its end then on, so that a whole first line is seen whole), which holds the last
    /// EXIT when this worker wrote its own since, and widens backwards fourfold from a
    /// [`WINDOW`] while what it looks for is not in sight.
    fn scan(&mut self, need_fence: bool) -> io::Result<Committed> {
        let first = self.end.saturating_sub(1);
        let (mut start, len) = match self.read_to_end(first)? {
            // Nothing at all past a place the file reached before: it was cut short
            // from outside; find its length.
            Some(len) if len > first || first == 0 => (first, len),
            _ => {
                let len = self.file.metadata()?.len();
                (len, len)
            }
        };
        self.end = len;
        loop {
            let text = &self.tail[..(len - start) as usize];
            // Whole lines only: not a first line cut by the window, nor a last one
            // still landing.
            let from = match start {
                0 => 0,
                _ => text.iter().position(|&b| b == b'\n').map_or(text.len(), |p| p + 1),
            };
            let to = text.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1).max(from);
            let mut found = Committed::default();
            let (mut have_value, mut have_fence) = (false, !need_fence);
            for line in text[from..to].split(|&b| b == b'\n').rev() {
                // Only an EXIT or an ENTER line can be one: the others (the WANTs of the
                // waiting, mostly) are passed over unparsed.
                let exit = !have_value && line.starts_with(b"EXIT ");
                let enter = !have_fence && line.starts_with(b"ENTER ");
                if !(exit || enter) {
                    continue;
                }
                let Ok(s) = std::str::from_utf8(line) else {
                    continue;
                };
                match s.parse::<Record>() {
                    Ok(Record::Exit { value, .. }) => {
                        found.value = value;
                        have_value = true;
                    }
                    Ok(Record::Enter { fence, .. }) => {
                        found.last_fence = Some(fence);
                        have_fence = true;
                    }
                    _ => {}
                }
                if have_value && have_fence {
                    return Ok(found);
                }
            }
            if start == 0 {
                return Ok(found);
            }
            start = len.saturating_sub((len - start).max(WINDOW) * 4);
            let n = (len - start) as usize;
            if self.tail.len() < n {
                self.tail.resize(n, 0);
            }
            self.file.read_exact_at(&mut self.tail[..n], start)?;
        }
    }
}

/// The least a scan of the file's tail widens to when what it reads first falls short.
const WINDOW: u64 = 512;
/// How much a scan reads forward to the file's end before it asks for its length
/// instead: what the file may grow between two entries of one worker.
const READ_AHEAD: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_fence_is_found_wherever_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.log");
        create(&path, "x", 2, false).unwrap();
        let mut r = Local::open(&path).unwrap();
        assert_eq!(r.highest_fence_clock().unwrap(), 0);
        for (w, clock) in [(0, 4), (1, 9), (0, 2)] {
            r.append(&Record::Enter { w, e: 1, fence: Fence { clock, id: w }, t: 1 }).unwrap();
        }
        assert_eq!(r.highest_fence_clock().unwrap(), 9);
    }

    #[test]
    fn lines_made_by_hand_are_what_display_shows() {
        let f = Fence { clock: u64::MAX, id: u32::MAX };
        let zero = Fence { clock: 0, id: 0 };
        for r in [
            Record::Want { w: 0, e: 0, t: 0 },
            Record::Want { w: u32::MAX, e: u64::MAX, t: u64::MAX },
            Record::Enter { w: 7, e: 10, fence: f, t: 1_000_000_007 },
            Record::Exit { w: 1, e: 2, fence: zero, read: 9, value: 10, t: 5 },
            Record::Exit { w: 3, e: 99, fence: f, read: u64::MAX - 1, value: u64::MAX, t: 12 },
            Record::Refused { w: 1, e: 2, at: Stage::Enter, fence: zero, over: f, t: 6 },
            Record::Refused { w: 4, e: 9, at: Stage::Exit, fence: Fence { clock: 31, id: 4 }, over: f, t: 6 },
        ] {
            let mut line = String::from("kept ");
            r.push_line(&mut line);
            assert_eq!(line, format!("kept {r}\n"));
        }
    }

    #[test]
    fn fields_split_as_str_split_does() {
        for line in ["", " ", "WANT", "WANT w=1  e=2 ", " a b", "é ü  x", "a\tb c"] {
            let mine: Vec<&str> = Fields(Some(line)).collect();
            assert_eq!(mine, line.split(' ').collect::<Vec<_>>(), "{line:?}");
        }
        assert_eq!("3:4".parse::<Fence>(), Ok(Fence { clock: 3, id: 4 }));
        assert!(
            "3".parse::<Fence>().is_err() && "3:".parse::<Fence>().is_err() && ":4".parse::<Fence>().is_err()
        );
    }

    #[test]
    fn records_round_trip() {
        let f = Fence { clock: 17, id: 3 };
        for r in [
            Record::Want { w: 1, e: 2, t: 3 },
            Record::Enter { w: 1, e: 2, fence: f, t: 4 },
            Record::Exit { w: 1, e: 2, fence: f, read: 9, value: 10, t: 5 },
            Record::Refused { w: 1, e: 2, at: Stage::Exit, fence: f, over: Fence { clock: 20, id: 0 }, t: 6 },
        ] {
            assert_eq!(r.to_string().parse::<Record>(), Ok(r));
        }
    }

    /// The fenced resource takes an ENTER only above the newest fence and an EXIT only
    /// while its fence is still the newest; it records what it refuses. (Negative
    /// control: the same writes unfenced all land.)
    #[test]
    fn a_fenced_resource_refuses_stale_writes_and_records_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.log");
        create(&path, "x", 2, true).unwrap();
        let mut r = Local::open(&path).unwrap();
        let (old, new) = (Fence { clock: 5, id: 0 }, Fence { clock: 8, id: 1 });
        let enter = |w, fence| Record::Enter { w, e: 1, fence, t: 1 };
        let exit = |w, fence| Record::Exit { w, e: 1, fence, read: 0, value: 1, t: 2 };
        assert!(matches!(r.append_fenced(&enter(0, old)).unwrap(), Fenced::Accepted(_)));
        assert!(matches!(r.append_fenced(&enter(1, new)).unwrap(), Fenced::Accepted(_)));
        assert_eq!(r.append_fenced(&exit(0, old)).unwrap(), Fenced::Refused { over: new });
        assert_eq!(r.append_fenced(&enter(0, old)).unwrap(), Fenced::Refused { over: new });
        assert_eq!(
            r.append_fenced(&enter(0, new)).unwrap(),
            Fenced::Refused { over: new },
            "equal is not newer"
        );
        let Fenced::Accepted(c) = r.append_fenced(&exit(1, new)).unwrap() else { panic!("the newest exits") };
        assert_eq!(c.last_fence, Some(new));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mutexlab resource v1 algo=x workers=2 fenced=1\n"), "{text}");
        let refused: Vec<&str> = text.lines().filter(|l| l.starts_with("REFUSED ")).collect();
        assert_eq!(refused.len(), 3, "{text}");
        assert!(refused[0].starts_with("REFUSED w=0 e=1 at=exit fence=5:0 over=8:1 t="), "{text}");

        let plain = dir.path().join("p.log");
        create(&plain, "x", 2, false).unwrap();
        let mut p = Local::open(&plain).unwrap();
        for rec in [enter(0, old), enter(1, new), exit(0, old)] {
            p.append(&rec).unwrap();
        }
        assert!(!std::fs::read_to_string(&plain).unwrap().contains("REFUSED"));
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        assert!("HELLO w=1".parse::<Record>().unwrap_err().contains("unknown record"));
        assert!("WANT w=1 e=x t=3".parse::<Record>().unwrap_err().contains("e=x"));
        assert!("ENTER w=1 e=1 fence=3 t=3".parse::<Record>().unwrap_err().contains("fence"));
        assert!("WANT w=1 e=1".parse::<Record>().unwrap_err().contains("lacks t="));
        assert!("WANT w=1 e=1 t=2 x=1".parse::<Record>().unwrap_err().contains("unexpected"));
    }

    #[test]
    fn fences_order_by_clock_then_id() {
        assert!(Fence { clock: 3, id: 9 } < Fence { clock: 4, id: 0 });
        assert!(Fence { clock: 4, id: 0 } < Fence { clock: 4, id: 1 });
    }

    #[test]
    fn committed_reads_the_tail_even_across_a_long_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("resource");
        create(&path, "test", 2, false).unwrap();
        let mut r = Local::open(&path).unwrap();
        assert_eq!(r.committed().unwrap(), Committed::default());
        let f = |c| Fence { clock: c, id: 0 };
        for i in 0..300u64 {
            r.append(&Record::Enter { w: 0, e: i + 1, fence: f(i), t: i }).unwrap();
            r.append(&Record::Exit { w: 0, e: i + 1, fence: f(i), read: i, value: i + 1, t: i }).unwrap();
        }
        // A long run of WANTs pushes the last EXIT beyond the first tail chunk.
        for i in 0..200 {
            r.append(&Record::Want { w: 1, e: i, t: 0 }).unwrap();
        }
        r.append(&Record::Enter { w: 1, e: 1, fence: f(999), t: 0 }).unwrap();
        let c = r.committed().unwrap();
        assert_eq!(c.value, 300);
        assert_eq!(c.last_fence, Some(f(999)));
        assert_eq!(r.counter().unwrap(), 300);
    }

    /// A worker's handle reads on from where the file last ended: what others wrote
    /// since, however much (past what it reads ahead), and an EXIT far back.
    #[test]
    fn the_tail_is_found_however_much_others_wrote_since() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("resource");
        create(&path, "test", 3, false).unwrap();
        let mut mine = Local::open(&path).unwrap();
        let mut other = Local::open(&path).unwrap();
        let f = |c| Fence { clock: c, id: 1 };
        assert_eq!(mine.counter().unwrap(), 0);
        other.append(&Record::Enter { w: 1, e: 1, fence: f(1), t: 1 }).unwrap();
        other.append(&Record::Exit { w: 1, e: 1, fence: f(1), read: 0, value: 1, t: 2 }).unwrap();
        assert_eq!(mine.counter().unwrap(), 1, "a little written by another");
        for (grown, value) in [(READ_AHEAD / 4, 2), (3 * READ_AHEAD, 3)] {
            other.append(&Record::Enter { w: 1, e: value, fence: f(value), t: 3 }).unwrap();
            other.append(&Record::Exit { w: 1, e: value, fence: f(value), read: 0, value, t: 4 }).unwrap();
            let start = std::fs::metadata(&path).unwrap().len() as usize;
            while (std::fs::metadata(&path).unwrap().len() as usize) < start + grown {
                other.append(&Record::Want { w: 2, e: 1, t: 5 }).unwrap();
            }
            other.append(&Record::Enter { w: 0, e: 1, fence: f(100 + value), t: 6 }).unwrap();
            let c = mine.committed().unwrap();
            assert_eq!((c.value, c.last_fence), (value, Some(f(100 + value))), "{grown} bytes since");
            assert_eq!(mine.counter().unwrap(), value);
        }
        // A torn last line (a write still landing) is left out.
        let mut torn = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        io::Write::write_all(&mut torn, b"EXIT w=2 e=1 fen").unwrap();
        assert_eq!(mine.counter().unwrap(), 3);
    }
}
