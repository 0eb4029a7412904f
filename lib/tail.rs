//! Follows the resource file as it grows, for the supervisor: progress, and who is inside.
//!
//! The supervisor never asks workers how far they are; it reads what they wrote, so a
//! stalled run, the k-th entry of a fault plan and the current holder are judged by
//! the same file the auditor reads. Only whole lines are consumed; a line still being
//! written waits for the next look. The file is read a [`CHUNK`] at a time, so however
//! much was added (or however long a line), memory stays bounded. A record naming a worker outside the run is passed
//! over (the auditor reports it), so every worker the tail names is one of the run's.

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

#[cfg(doc)]
use crate::resource::Record;

/// What the file has shown so far.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    offset: u64,
    /// ENTER records seen.
    pub enters: u64,
    /// EXIT records seen.
    pub exits: u64,
    /// EXIT records by worker.
    pub exits_by_worker: Vec<u64>,
    /// Workers whose last ENTER has no EXIT yet (minus those the supervisor said died).
    pub inside: BTreeSet<u32>,
    /// The worker that entered last.
    pub last_entered: Option<u32>,
    /// By worker: the run's ENTER count at that worker's last ENTER (0: never entered).
    last_enter: Vec<u64>,
    /// The file was there once and is gone now (its directory deleted under the run).
    pub gone: bool,
    /// The start of an overlong line was passed over: the rest of it comes first.
    torn: bool,
}

/// The most read from the file at once.
pub const CHUNK: u64 = 1 << 20;

impl Tail {
    /// Follow the file at `path` for `workers` workers.
    pub fn new(path: &Path, workers: u32) -> Tail {
        Tail {
            path: path.to_path_buf(),
            offset: 0,
            enters: 0,
            exits: 0,
            exits_by_worker: vec![0; workers as usize],
            inside: BTreeSet::new(),
            last_entered: None,
            last_enter: vec![0; workers as usize],
            gone: false,
            torn: false,
        }
    }

    /// Read whatever whole lines were added; returns whether any ENTER or EXIT was.
    /// Read a chunk at a time, so memory stays bounded by [`CHUNK`] however much was
    /// added; a line longer than a chunk is no record, and is passed over.
    pub fn poll(&mut self) -> bool {
        let mut f = match crate::files::open_regular(&self.path) {
            Ok(f) => {
                self.gone = false;
                f
            }
            Err(e) => {
                self.gone = e.kind() == std::io::ErrorKind::NotFound;
                return false;
            }
        };
        let before = (self.enters, self.exits);
        let mut buf = Vec::new();
        loop {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if len <= self.offset || f.seek(SeekFrom::Start(self.offset)).is_err() {
                break;
            }
            buf.clear();
            if (&mut f).take(CHUNK).read_to_end(&mut buf).is_err() || buf.is_empty() {
                break;
            }
            let whole = match buf.iter().rposition(|&b| b == b'\n') {
                Some(p) => p + 1,
                // A chunk with no line end: wait for the rest, unless no record is this long.
                None if (buf.len() as u64) < CHUNK => break,
                None => {
                    self.offset += buf.len() as u64;
                    self.torn = true;
                    continue;
                }
            };
            let mut lines = buf[..whole].split(|&b| b == b'\n');
            if std::mem::take(&mut self.torn) {
                lines.next(); // the end of a line passed over
            }
            for line in lines {
                self.line(line);
            }
            self.offset += whole as u64;
        }
        (self.enters, self.exits) != before
    }

    fn line(&mut self, line: &[u8]) {
        let Some((kind, w)) = head(line) else { return };
        // A worker nobody can be (a file written by someone else) is not followed:
        // the supervisor looks every worker named here up in its slots.
        if w as usize >= self.last_enter.len() {
            return;
        }
        match kind {
            Kind::Enter => {
                self.enters += 1;
                self.inside.insert(w);
                self.last_entered = Some(w);
                if let Some(at) = self.last_enter.get_mut(w as usize) {
                    *at = self.enters;
                }
            }
            Kind::Exit => {
                self.exits += 1;
                self.inside.remove(&w);
                if let Some(c) = self.exits_by_worker.get_mut(w as usize) {
                    *c += 1;
                }
            }
            // A fenced resource refused this holder's write: it is out.
            Kind::RefusedExit => {
                self.inside.remove(&w);
            }
            Kind::Other => {}
        }
    }

    /// Forget that `w` is inside, and that it ever entered: it died (there or
    /// elsewhere). Call it after polling past everything the dead process wrote (it is
    /// reaped, so its writes are all in the file), so no record of it read later can put
    /// it back; only a new incarnation's ENTER can.
    pub fn crashed(&mut self, w: u32) {
        self.inside.remove(&w);
        if let Some(at) = self.last_enter.get_mut(w as usize) {
            *at = 0;
        }
    }

    /// The live worker inside the critical section now (the last to enter, if several
    /// seem to be), or if no live worker is inside, the live worker that entered last.
    /// `alive` says which workers are alive; a dead worker is never the holder.
    pub fn holder(&self, alive: impl Fn(u32) -> bool) -> Option<u32> {
        let latest = |ws: &mut dyn Iterator<Item = u32>| {
            ws.filter(|&w| alive(w))
                .filter(|&w| self.last_enter.get(w as usize).is_some_and(|&at| at > 0))
                .max_by_key(|&w| self.last_enter[w as usize])
        };
        latest(&mut self.inside.iter().copied()).or_else(|| latest(&mut (0..self.last_enter.len() as u32)))
    }
}

/// What the tail follows of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Enter,
    Exit,
    /// A fenced resource refused an EXIT.
    RefusedExit,
    /// A WANT, or a refused ENTER.
    Other,
}

/// A record's type and worker (and a REFUSED's stage), from its first fields, by bytes:
/// parsing every field of every record as [`Record`] was most of what following the
/// file cost the supervisor, and the tail needs no more. The line must still be shaped
/// as a record (its type, `w=`, and `t=` last); the auditor parses each whole.
fn head(line: &[u8]) -> Option<(Kind, u32)> {
    let mut fields = line.split(|&b| b == b' ');
    let tag = fields.next()?;
    let w = fields.next()?.strip_prefix(b"w=")?;
    let last = line.rsplit(|&b| b == b' ').next()?.strip_prefix(b"t=")?;
    if w.is_empty() || last.is_empty() || !w.iter().chain(last).all(u8::is_ascii_digit) {
        return None;
    }
    let w = std::str::from_utf8(w).ok()?.parse().ok()?;
    let kind = match tag {
        b"ENTER" => Kind::Enter,
        b"EXIT" => Kind::Exit,
        b"WANT" => Kind::Other,
        // `e=`, then `at=`.
        b"REFUSED" => match fields.nth(1)? {
            b"at=exit" => Kind::RefusedExit,
            b"at=enter" => Kind::Other,
            _ => return None,
        },
        _ => return None,
    };
    Some((kind, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn follows_entries_and_the_holder_across_partial_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, "# mutexlab resource v1").unwrap();
        let mut t = Tail::new(&path, 2);
        assert!(!t.poll(), "a header is no progress");
        assert_eq!(t.holder(|_| true), None);
        writeln!(f, "WANT w=1 e=1 t=1").unwrap();
        assert!(!t.poll(), "a WANT is no progress either");
        write!(f, "ENTER w=1 e=1 fence=1:1 t=2\nEXIT w=1 e=1 fen").unwrap();
        assert!(t.poll());
        assert_eq!((t.enters, t.exits, t.holder(|_| true)), (1, 0, Some(1)));
        writeln!(f, "ce=1:1 read=0 value=1 t=3").unwrap();
        assert!(t.poll());
        assert_eq!((t.enters, t.exits, t.exits_by_worker.clone()), (1, 1, vec![0, 1]));
        assert!(t.inside.is_empty());
        assert_eq!(t.holder(|_| true), Some(1), "nobody inside: the last to enter");
        assert!(!t.poll());
    }

    #[test]
    fn a_worker_outside_the_run_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, "# mutexlab resource v1").unwrap();
        writeln!(f, "ENTER w=0 e=1 fence=1:0 t=1\nENTER w=99 e=1 fence=2:99 t=2").unwrap();
        writeln!(f, "EXIT w=2 e=1 fence=2:2 read=0 value=1 t=3").unwrap();
        let mut t = Tail::new(&path, 2);
        assert!(t.poll());
        assert_eq!((t.enters, t.exits, t.last_entered), (1, 0, Some(0)));
        assert_eq!(t.inside, BTreeSet::from([0]));
        // The supervisor's own lookup: indexes its two slots with whatever it is given.
        let alive = [true, true];
        assert_eq!(t.holder(|w| alive[w as usize]), Some(0));
    }

    #[test]
    fn memory_is_bounded_by_a_chunk_and_an_overlong_line_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, "# mutexlab resource v1").unwrap();
        let mut t = Tail::new(&path, 2);
        // Half a line that is already longer than any record: passed over at once.
        let long = "x".repeat(CHUNK as usize * 5 / 2);
        write!(f, "{long}").unwrap();
        assert!(!t.poll());
        assert!(t.offset > CHUNK, "read past, not held");
        // Its end (which would read as a record if taken alone) and then real records.
        writeln!(f, "ENTER w=1 e=1 fence=1:1 t=1").unwrap();
        writeln!(f, "ENTER w=0 e=1 fence=2:0 t=2\nEXIT w=0 e=1 fence=2:0 read=0 value=1 t=3").unwrap();
        // Several chunks of records added at once are all read.
        let many = "WANT w=1 e=2 t=4\n".repeat(CHUNK as usize / 8);
        writeln!(f, "{many}ENTER w=1 e=2 fence=3:1 t=5").unwrap();
        assert!(t.poll());
        assert_eq!((t.enters, t.exits, t.last_entered), (2, 1, Some(1)));
        assert_eq!(t.offset, std::fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn a_dead_worker_is_never_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, "# mutexlab resource v1").unwrap();
        writeln!(f, "ENTER w=0 e=1 fence=1:0 t=1\nEXIT w=0 e=1 fence=1:0 read=0 value=1 t=2").unwrap();
        writeln!(f, "ENTER w=2 e=1 fence=2:2 t=3\nEXIT w=2 e=1 fence=2:2 read=1 value=2 t=4").unwrap();
        writeln!(f, "ENTER w=1 e=1 fence=3:1 t=5").unwrap();
        let mut t = Tail::new(&path, 3);
        assert!(t.poll());
        assert_eq!(t.holder(|_| true), Some(1));
        // w1 died inside: the holder is the live worker that entered last.
        t.crashed(1);
        assert_eq!(t.holder(|w| w != 1), Some(2));
        assert_eq!(t.holder(|w| w == 0), Some(0));
        assert_eq!(t.holder(|_| false), None);
        // Restarted, w1 is alive but has not entered in its new life.
        assert_eq!(t.holder(|_| true), Some(2));
        // A new incarnation of w1 enters: it is the holder again.
        writeln!(f, "ENTER w=1 e=1 fence=4:1 t=6").unwrap();
        assert!(t.poll());
        assert_eq!(t.holder(|_| true), Some(1));
    }

    #[test]
    fn a_records_head_is_what_the_whole_parse_says_and_a_line_that_is_no_record_is_none() {
        use crate::resource::{Fence, Record, Stage};
        let f = Fence { clock: 7, id: 3 };
        let cases = [
            (Record::Want { w: 3, e: 1, t: 9 }, Kind::Other),
            (Record::Enter { w: 3, e: 1, fence: f, t: 9 }, Kind::Enter),
            (Record::Exit { w: 3, e: 1, fence: f, read: 4, value: 5, t: 9 }, Kind::Exit),
            (Record::Refused { w: 3, e: 1, at: Stage::Exit, fence: f, over: f, t: 9 }, Kind::RefusedExit),
            (Record::Refused { w: 3, e: 1, at: Stage::Enter, fence: f, over: f, t: 9 }, Kind::Other),
        ];
        for (rec, kind) in cases {
            let mut line = String::new();
            rec.push_line(&mut line);
            let line = line.trim_end();
            assert_eq!(line.parse::<Record>().map(|r| r.worker()), Ok(3));
            assert_eq!(head(line.as_bytes()), Some((kind, 3)), "{line}");
        }
        for bad in [
            "",
            "# mutexlab resource v1",
            "ENTER",
            "ENTER w= e=1 fence=1:1 t=2",
            "ENTER w=x e=1 fence=1:1 t=2",
            "ENTER w=99999999999 e=1 fence=1:1 t=2",
            "ENTER e=1 w=1 fence=1:1 t=2",
            "ENTER w=1 e=1 fence=1:1",
            "ENTER w=1 e=1 fence=1:1 t=",
            "LEAVE w=1 e=1 t=2",
            "REFUSED w=1 e=1 at=never fence=1:1 over=2:2 t=3",
        ] {
            assert_eq!(head(bad.as_bytes()), None, "{bad:?}");
        }
    }
}
