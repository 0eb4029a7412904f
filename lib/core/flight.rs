//! The flight recorder's ring: the last records a worker's life made, in a file of
//! fixed size mapped into its memory, so that they outlive the worker.
//!
//! Every worker of every run records its trace ([`crate::trace`]) whether or not the run
//! asked for one. Without `--trace` the events go to a ring, not to the trace file: one
//! file per worker and life in the run directory ([`ring_name`], `flight-w3-1.ring`), of
//! [`RING_BYTES`] once made, of which each record overwrites the oldest when it is full.
//! A worker keeps the rings of its last [`LIVES_KEPT`] lives ([`Kept`]), so a worker
//! restarted often does not fill the disk with rings of lives long over.
//! When the run fails or is kept, the supervisor turns the rings into the ordinary
//! `trace-w<ID>.log` files (`trace::from_rings`); after a clean run not kept it deletes
//! them unread.
//!
//! Why a mapped file and not memory of the worker's own, asked for over the control
//! link at the end: the runs that most need their messages are the ones whose workers
//! cannot answer. A worker killed by the fault plan (SIGKILL), or one the supervisor
//! kills when the run stalls or ends, loses its heap; the pages of a shared file mapping
//! are the kernel's page cache, and every store the worker made before it died is in the
//! file for the supervisor to read. Recording is then a copy into memory, with no
//! system call. The file is made sparse, so a short run's ring takes only the pages it
//! wrote.
//!
//! What a record holds is the trace's business (`trace`: a few numbers and the message
//! as its wire bytes, formatted as text only when a ring is written out, so that a
//! clean run pays for a copy and not for making lines); this file keeps records whole.
//!
//! # Layout and wrapping
//!
//! A [`HEADER_BYTES`] header (the magic [`MAGIC`], the data's capacity, then the
//! positions `start` and `head`, each a little-endian `u64`), then the data, a circle of
//! `capacity` bytes. Each record is its length (a little-endian `u32`) and that many
//! bytes. Positions count bytes ever written: the records kept are the bytes from
//! `start` to `head`, each at its position modulo the capacity, and `start` is always
//! the first byte of a record. To add a record [`Ring::push`] (1) moves `start` forward
//! past whole old records until the new one fits, (2) copies the record in, (3) moves
//! `head` past it; each position is stored after what it covers, in that order. A worker
//! killed anywhere in between leaves positions that describe whole records only: the
//! bytes a cut-short copy overwrote lie before `start`, and the bytes after `head` are
//! never read. So a torn or overwritten record is never misread; at worst the record
//! being copied when the worker died is lost. A reader that finds `start` above zero
//! knows that the life recorded `start` bytes it no longer has ([`Contents::lost`]); the
//! trace file marks the place with a comment line, which trace readers skip with a note.
//!
//! Reading trusts nothing it reads: [`read`] refuses a ring whose header claims more than
//! [`MAX_RING_BYTES`] or disagrees with the file's size, holds one ring at a time, and
//! [`Contents::records`] stops at a record whose length runs past `head` (torn: only a
//! ring damaged from outside has one), which [`Contents::torn`] then counts, so the
//! records before it are still read.
//!
//! A record longer than a quarter of the ring is not recorded (it would push out
//! everything else); records are tens of bytes and a ring is a MiB.

use std::fs::OpenOptions;
use std::io;
use std::path::Path;
use std::sync::atomic::{compiler_fence, Ordering};

use memmap2::MmapMut;

/// The ring's data bytes: tens of thousands of events (a record with its message is 40
/// to 100 bytes).
pub const RING_BYTES: u64 = 1 << 20;
/// The most a ring's header may claim: readers refuse larger ones unread.
pub const MAX_RING_BYTES: u64 = 64 << 20;
/// The header's size: the magic, the capacity, `start` and `head`.
pub const HEADER_BYTES: u64 = 64;
/// The first bytes of every ring file (v1 held text lines; v2 length-prefixed records).
pub const MAGIC: &[u8; 16] = b"mutexlab ring v2";
/// The bytes before each record: its length.
pub const LEN_BYTES: u64 = 4;

pub(crate) const CAP_AT: usize = 16;
pub(crate) const START_AT: usize = 24;
pub(crate) const HEAD_AT: usize = 32;

/// The ring file of worker `w`'s life `inc`, inside the run directory.
pub fn ring_name(w: u32, inc: u32) -> String {
    format!("flight-w{w}-{inc}.ring")
}

/// The worker and life whose ring is called `name`, if it is one.
pub fn ring_of(name: &str) -> Option<(u32, u32)> {
    let (w, inc) = name.strip_prefix("flight-w")?.strip_suffix(".ring")?.split_once('-')?;
    let num = |s: &str| s.parse::<u32>().ok().filter(|n| n.to_string() == s);
    Some((num(w)?, num(inc)?))
}

/// How many rings a worker keeps: one restarted more often keeps its newest lives'
/// and loses the oldest's, so a run's rings take at most this many [`RING_BYTES`] per
/// worker, however long it runs and however often it restarts.
pub const LIVES_KEPT: usize = 4;

/// The rings of each worker's lives on disk, oldest first, kept to [`LIVES_KEPT`].
#[derive(Debug, Default)]
pub struct Kept {
    lives: std::collections::BTreeMap<u32, std::collections::VecDeque<u32>>,
    /// Rings removed to make room, over the run.
    pub dropped: u64,
}

impl Kept {
    /// Worker `w`'s life `inc` starts in `run_dir`: make room for its ring, removing its
    /// oldest. Lives are one after another, so every earlier one is over: one that made
    /// no ring (killed before it could) never will, and takes no place.
    pub fn starting(&mut self, run_dir: &Path, w: u32, inc: u32) {
        let lives = self.lives.entry(w).or_default();
        lives.retain(|&i| run_dir.join(ring_name(w, i)).symlink_metadata().is_ok());
        while lives.len() >= LIVES_KEPT {
            let old = lives.pop_front().expect("not empty");
            if std::fs::remove_file(run_dir.join(ring_name(w, old))).is_ok() {
                self.dropped += 1;
            }
        }
        lives.push_back(inc);
    }
}

/// A life's ring, mapped and being written.
#[derive(Debug)]
pub struct Ring {
    map: MmapMut,
    cap: u64,
    start: u64,
    head: u64,
}

impl Ring {
    /// Make the ring file at `path` (new: an existing file is an error) with `cap` data
    /// bytes, and map it.
    pub fn create(path: &Path, cap: u64) -> io::Result<Ring> {
        assert!((16..=MAX_RING_BYTES).contains(&cap), "a ring of {cap} bytes");
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
        // Blocks allocated now, not on first touch: a page the file system cannot give a
        // mapping later is a SIGBUS (a full disk), where this is an error to handle.
        let len = i64::try_from(HEADER_BYTES + cap).map_err(io::Error::other)?;
        if let Err(e) = nix::fcntl::posix_fallocate(&file, 0, len) {
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(e.into());
        }
        // SAFETY: the file is new and this life's alone (its name has the life in it);
        // the supervisor reads it only once this life is over or frozen, and a reader
        // that comes early reads positions before the bytes they cover (see `read`).
        let mut map = unsafe { MmapMut::map_mut(&file)? };
        // No read-ahead: the first store would fault the whole ring into the page cache
        // (zeroed, then evicted again when the file is deleted), where a run touches only
        // the pages it records into (`perf`: an eighth of a short run's CPU).
        let _ = map.advise(memmap2::Advice::Random); // advice only: without it, slower
        map[..MAGIC.len()].copy_from_slice(MAGIC);
        map[CAP_AT..CAP_AT + 8].copy_from_slice(&cap.to_le_bytes());
        Ok(Ring { map, cap, start: 0, head: 0 })
    }

    fn store(&mut self, at: usize, v: u64) {
        // The bytes a position covers are stored before it (see the module doc). Only
        // this thread writes, and a reader comes after it died or stopped: what must
        // hold is program order, which the compiler alone could change.
        compiler_fence(Ordering::SeqCst);
        self.map[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// Copy `bytes` into the data at position `pos`, wrapping at the end.
    fn put(&mut self, pos: u64, bytes: &[u8]) {
        let at = (pos % self.cap) as usize;
        let first = bytes.len().min(self.cap as usize - at);
        let base = HEADER_BYTES as usize;
        self.map[base + at..base + at + first].copy_from_slice(&bytes[..first]);
        self.map[base..base + bytes.len() - first].copy_from_slice(&bytes[first..]);
    }

    /// The length of the record at position `pos` (which may wrap).
    fn len_at(&self, pos: u64) -> u64 {
        let mut len = [0u8; LEN_BYTES as usize];
        for (k, b) in len.iter_mut().enumerate() {
            *b = self.map[(HEADER_BYTES + (pos + k as u64) % self.cap) as usize];
        }
        u64::from(u32::from_le_bytes(len))
    }

    /// Add one record, the concatenation of `parts` (a record is written in pieces so
    /// that nobody has to join them first). Returns false, recording nothing, for an
    /// empty record or one longer than a quarter of the ring.
    pub fn push(&mut self, parts: &[&[u8]]) -> bool {
        let body: usize = parts.iter().map(|p| p.len()).sum();
        let len = LEN_BYTES + body as u64;
        if body == 0 || len > self.cap / 4 {
            return false;
        }
        let new_head = self.head + len;
        if new_head - self.start > self.cap {
            // Whole old records out, oldest first, until the new one fits.
            let mut pos = self.start;
            while new_head - pos > self.cap {
                pos += LEN_BYTES + self.len_at(pos);
            }
            self.start = pos;
            self.store(START_AT, self.start);
        }
        let mut pos = self.head;
        self.put(pos, &(body as u32).to_le_bytes());
        pos += LEN_BYTES;
        for part in parts {
            self.put(pos, part);
            pos += part.len() as u64;
        }
        self.head = new_head;
        self.store(HEAD_AT, self.head);
        true
    }
}

/// What a ring holds.
#[derive(Debug, PartialEq, Eq)]
pub struct Contents {
    /// Bytes of records the life made that were pushed out (0: it holds them all).
    pub lost: u64,
    /// The records kept, oldest first, each its length and its bytes (see
    /// [`Contents::records`]).
    pub bytes: Vec<u8>,
}

impl Contents {
    /// The records, oldest first. Stops at a record whose length runs past the end,
    /// which only a damaged ring has ([`Contents::torn`] says how many bytes were left).
    pub fn records(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut rest = &self.bytes[..];
        std::iter::from_fn(move || {
            let (len, tail) = split_record(rest)?;
            let (record, after) = tail.split_at(len);
            rest = after;
            Some(record)
        })
    }

    /// Bytes after the last whole record: 0, unless the ring's last record is torn.
    pub fn torn(&self) -> usize {
        let mut rest = &self.bytes[..];
        while let Some((len, tail)) = split_record(rest) {
            rest = &tail[len..];
        }
        rest.len()
    }
}

/// The next record's length and the bytes from its start, if it is whole and not empty.
fn split_record(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let (len, tail) = bytes.split_first_chunk::<{ LEN_BYTES as usize }>()?;
    let len = u32::from_le_bytes(*len) as usize;
    (len > 0 && len <= tail.len()).then_some((len, tail))
}

/// Read the ring file at `path`, or say in one line why it is not one.
pub fn read(path: &Path) -> Result<Contents, String> {
    // Not blocking, not following a link: anyone of the user's may have put a FIFO here.
    let file = crate::files::open_regular(path).map_err(|e| e.to_string())?;
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    if size < HEADER_BYTES {
        return Err(format!("{size} bytes, shorter than a ring's header"));
    }
    let mut head = [0u8; HEADER_BYTES as usize];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut head, 0).map_err(|e| e.to_string())?;
    if &head[..MAGIC.len()] == b"mutexlab ring v1" {
        return Err("a ring of an older mutexlab (v1), which this one does not read".into());
    }
    if &head[..MAGIC.len()] != MAGIC {
        return Err("not a mutexlab ring (no magic)".into());
    }
    let num = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    let (cap, start, end) = (num(CAP_AT), num(START_AT), num(HEAD_AT));
    if !(16..=MAX_RING_BYTES).contains(&cap) || size != HEADER_BYTES + cap {
        return Err(format!("its header claims {cap} bytes of data in a file of {size}"));
    }
    if start > end || end - start > cap {
        return Err(format!("its positions are inconsistent (start {start}, head {end}, capacity {cap})"));
    }
    let mut bytes = vec![0u8; (end - start) as usize];
    let at = start % cap;
    let first = bytes.len().min((cap - at) as usize);
    let rd = |buf: &mut [u8], off: u64| std::os::unix::fs::FileExt::read_exact_at(&file, buf, off);
    rd(&mut bytes[..first], HEADER_BYTES + at).map_err(|e| e.to_string())?;
    rd(&mut bytes[first..], HEADER_BYTES).map_err(|e| e.to_string())?;
    Ok(Contents { lost: start, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(c: &Contents) -> Vec<String> {
        c.records().map(|r| String::from_utf8(r.to_vec()).unwrap()).collect()
    }

    #[test]
    fn names_round_trip_and_others_are_not_rings() {
        assert_eq!(ring_of(&ring_name(3, 12)), Some((3, 12)));
        for other in
            ["flight-w3.ring", "flight-w03-1.ring", "flight-w3-1.log", "trace-w3.log", "flight-w3-x.ring"]
        {
            assert_eq!(ring_of(other), None, "{other}");
        }
    }

    #[test]
    fn a_worker_keeps_the_rings_of_its_last_lives_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut kept = Kept::default();
        // Worker 1 restarted 11 times (lives 0 to 11), worker 0 never. Lives 8 and 10
        // were killed before they made a ring: they take no place.
        for (w, lives) in [(0, 1), (1, 12)] {
            for inc in 0..lives {
                kept.starting(dir.path(), w, inc);
                if !(w == 1 && (inc == 8 || inc == 10)) {
                    Ring::create(&dir.path().join(ring_name(w, inc)), 64).unwrap();
                }
            }
        }
        let mut on_disk: Vec<(u32, u32)> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| ring_of(e.unwrap().file_name().to_str().unwrap()).unwrap())
            .collect();
        on_disk.sort();
        assert_eq!(on_disk, [(0, 0), (1, 6), (1, 7), (1, 9), (1, 11)]);
        assert_eq!(kept.dropped, 6, "each one dropped is counted");
    }

    #[test]
    fn a_tiny_ring_wraps_keeping_whole_records_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ring_name(0, 0));
        let mut ring = Ring::create(&path, 64).unwrap();
        assert_eq!(read(&path).unwrap(), Contents { lost: 0, bytes: vec![] });
        let mut all = Vec::new();
        for i in 0..80u32 {
            // Records of odd sizes, in two parts, so that they straddle the ring's end
            // (length and body alike) at every offset.
            let rec = format!("rec {i}{}", "x".repeat((i % 7) as usize));
            let (a, b) = rec.as_bytes().split_at(3);
            assert!(ring.push(&[a, b]));
            all.push(rec);
            let got = read(&path).unwrap();
            let kept = records(&got);
            // The newest records, in order, whole, and no more than fit.
            assert_eq!(kept[..], all[all.len() - kept.len()..], "after record {i}");
            assert!(got.bytes.len() <= 64 && got.torn() == 0);
            let total: usize = all.iter().map(|r| r.len() + LEN_BYTES as usize).sum();
            assert_eq!(got.lost as usize + got.bytes.len(), total);
            assert!(kept.len() >= (i as usize + 1).min(3), "a wrapped ring still holds the newest records");
        }
        assert!(!ring.push(&[&[b'y'; 13]]), "longer than a quarter of the ring");
        assert!(!ring.push(&[]), "empty");
    }

    #[test]
    fn a_life_killed_mid_copy_leaves_only_whole_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ring_name(1, 0));
        let mut ring = Ring::create(&path, 64).unwrap();
        for i in 0..9 {
            ring.push(&[format!("old {i}").as_bytes()]);
        }
        let before = records(&read(&path).unwrap());
        // What a life killed between moving `start` and moving `head` leaves: `start`
        // past the records the new one will cover, and some of its bytes copied over them.
        let new = b"NEWNEWNEWNE";
        let new_head = ring.head + LEN_BYTES + new.len() as u64;
        let mut pos = ring.start;
        while new_head - pos > ring.cap {
            pos += LEN_BYTES + ring.len_at(pos);
        }
        ring.start = pos;
        ring.store(START_AT, ring.start);
        ring.put(ring.head, &(new.len() as u32).to_le_bytes());
        ring.put(ring.head + LEN_BYTES, &new[..7]);
        let after = read(&path).unwrap();
        let kept = records(&after);
        assert!(!kept.is_empty() && kept.len() < before.len(), "{kept:?}");
        assert_eq!(kept[..], before[before.len() - kept.len()..], "only whole old records");
        assert!(!String::from_utf8_lossy(&after.bytes).contains("NEW"));
        assert_eq!(after.torn(), 0);
    }

    #[test]
    fn a_torn_last_record_is_left_out_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ring_name(2, 0));
        let mut ring = Ring::create(&path, 256).unwrap();
        for i in 0..3 {
            ring.push(&[format!("whole {i}").as_bytes()]);
        }
        // A ring damaged from outside: `head` moved past a record whose bytes are only
        // partly there (its length says 40, 10 are).
        ring.put(ring.head, &40u32.to_le_bytes());
        ring.put(ring.head + LEN_BYTES, b"torn recor");
        ring.head += LEN_BYTES + 10;
        ring.store(HEAD_AT, ring.head);
        let got = read(&path).unwrap();
        assert_eq!(records(&got), ["whole 0", "whole 1", "whole 2"]);
        assert_eq!(got.torn(), LEN_BYTES as usize + 10);
    }

    #[test]
    fn a_bad_ring_is_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        std::fs::write(&path, b"short").unwrap();
        assert!(read(&path).unwrap_err().contains("shorter"));
        let mut bytes = vec![0u8; HEADER_BYTES as usize + 16];
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).unwrap_err().contains("no magic"));
        bytes[..16].copy_from_slice(b"mutexlab ring v1");
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).unwrap_err().contains("older"));
        bytes[..16].copy_from_slice(MAGIC);
        bytes[CAP_AT..CAP_AT + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).unwrap_err().contains("claims"), "never sized by the header");
        bytes[CAP_AT..CAP_AT + 8].copy_from_slice(&16u64.to_le_bytes());
        bytes[HEAD_AT..HEAD_AT + 8].copy_from_slice(&17u64.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).unwrap_err().contains("inconsistent"));
    }
}
