//! The flight recorder's ring: the last lines a worker's life recorded, in a file of
//! fixed size mapped into its memory, so that they outlive the worker.
//!
//! Every worker of every run records its trace ([`crate::trace`]) whether or not the run
//! asked for one. Without `--trace` the lines go to a ring, not to the trace file: one
//! file per worker and life in the run directory ([`ring_name`], `flight-w3-1.ring`), of
//! [`RING_BYTES`] once made, of which each line overwrites the oldest when it is full.
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
//! system call: a clean run pays for formatting the lines and touching the ring's pages,
//! and leaves nothing behind. The file is made sparse, so a short run's ring takes only
//! the pages it wrote.
//!
//! # Layout and wrapping
//!
//! A [`HEADER_BYTES`] header (the magic [`MAGIC`], the data's capacity, then the
//! positions `start` and `head`, each a little-endian `u64`), then the data, a circle of
//! `capacity` bytes. Positions count bytes ever written: the lines kept are the bytes
//! from `start` to `head`, each at its position modulo the capacity, and `start` is
//! always the first byte of a line. To add a line [`Ring::push`] (1) moves `start`
//! forward past whole old lines until the new one fits, (2) copies the line in, (3) moves
//! `head` past it; each position is stored after what it covers, in that order. A worker
//! killed anywhere in between leaves positions that describe whole lines only: the bytes
//! a cut-short copy overwrote lie before `start`, and the bytes after `head` are never
//! read. So a torn or overwritten line is never misread; at worst the line being copied
//! when the worker died is lost. A reader that finds `start` above zero knows that the
//! life recorded `start` bytes it no longer has ([`Contents::lost`]); the trace file
//! marks the place with a comment line, which trace readers skip with a note.
//!
//! A line longer than half the ring is not recorded (it would push out everything
//! else); trace lines are at most a few KiB and a ring is a MiB.
//!
//! Reading is bounded: [`read`] refuses a ring whose header claims more than
//! [`MAX_RING_BYTES`] or disagrees with the file's size, and holds one ring at a time.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::{compiler_fence, Ordering};

use memmap2::MmapMut;

/// The ring's data bytes: a few thousand trace lines (a line with its message's
/// contents is 100 to 250 bytes).
pub const RING_BYTES: u64 = 1 << 20;
/// The most a ring's header may claim: readers refuse larger ones unread.
pub const MAX_RING_BYTES: u64 = 64 << 20;
/// The header's size: the magic, the capacity, `start` and `head`.
pub const HEADER_BYTES: u64 = 64;
/// The first bytes of every ring file.
pub const MAGIC: &[u8; 16] = b"mutexlab ring v1";

const CAP_AT: usize = 16;
const START_AT: usize = 24;
const HEAD_AT: usize = 32;

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
        assert!((2..=MAX_RING_BYTES).contains(&cap), "a ring of {cap} bytes");
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

    /// The data byte at position `pos`.
    fn byte(&self, pos: u64) -> u8 {
        self.map[(HEADER_BYTES + pos % self.cap) as usize]
    }

    /// Add one line (its newline included). Returns false, recording nothing, for a line
    /// longer than half the ring or one not ending in a newline.
    pub fn push(&mut self, line: &[u8]) -> bool {
        let len = line.len() as u64;
        if len == 0 || len > self.cap / 2 || line.last() != Some(&b'\n') {
            return false;
        }
        let new_head = self.head + len;
        if new_head - self.start > self.cap {
            // The first line that starts at or after `new_head - cap`: the one after the
            // newline at or after `new_head - cap - 1` (the last line ends in one).
            let mut pos = new_head - self.cap - 1;
            while self.byte(pos) != b'\n' {
                pos += 1;
            }
            self.start = pos + 1;
            self.store(START_AT, self.start);
        }
        let at = (self.head % self.cap) as usize;
        let first = line.len().min(self.cap as usize - at);
        let base = HEADER_BYTES as usize;
        self.map[base + at..base + at + first].copy_from_slice(&line[..first]);
        self.map[base..base + line.len() - first].copy_from_slice(&line[first..]);
        self.head = new_head;
        self.store(HEAD_AT, self.head);
        true
    }
}

/// What a ring holds.
#[derive(Debug, PartialEq, Eq)]
pub struct Contents {
    /// Bytes of lines the life recorded that were pushed out (0: it holds them all).
    pub lost: u64,
    /// The lines kept, oldest first, each ending in a newline.
    pub lines: Vec<u8>,
}

/// Read the ring file at `path`, or say in one line why it is not one.
pub fn read(path: &Path) -> Result<Contents, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    if size < HEADER_BYTES {
        return Err(format!("{size} bytes, shorter than a ring's header"));
    }
    let mut head = [0u8; HEADER_BYTES as usize];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut head, 0).map_err(|e| e.to_string())?;
    if &head[..MAGIC.len()] != MAGIC {
        return Err("not a mutexlab ring (no magic)".into());
    }
    let num = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    let (cap, start, end) = (num(CAP_AT), num(START_AT), num(HEAD_AT));
    if !(2..=MAX_RING_BYTES).contains(&cap) || size != HEADER_BYTES + cap {
        return Err(format!("its header claims {cap} bytes of data in a file of {size}"));
    }
    if start > end || end - start > cap {
        return Err(format!("its positions are inconsistent (start {start}, head {end}, capacity {cap})"));
    }
    let mut lines = vec![0u8; (end - start) as usize];
    let at = start % cap;
    let first = lines.len().min((cap - at) as usize);
    let rd = |buf: &mut [u8], off: u64| std::os::unix::fs::FileExt::read_exact_at(&file, buf, off);
    rd(&mut lines[..first], HEADER_BYTES + at).map_err(|e| e.to_string())?;
    rd(&mut lines[first..], HEADER_BYTES).map_err(|e| e.to_string())?;
    if lines.last().is_some_and(|&b| b != b'\n') {
        return Err("its last line has no newline".into());
    }
    Ok(Contents { lost: start, lines })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(c: &Contents) -> Vec<String> {
        String::from_utf8(c.lines.clone()).unwrap().lines().map(str::to_string).collect()
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
    fn a_tiny_ring_wraps_keeping_whole_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ring_name(0, 0));
        let mut ring = Ring::create(&path, 40).unwrap();
        assert_eq!(read(&path).unwrap(), Contents { lost: 0, lines: vec![] });
        let mut all = Vec::new();
        for i in 0..50u32 {
            let line = format!("line {i}{}\n", "x".repeat((i % 7) as usize));
            assert!(ring.push(line.as_bytes()));
            all.push(line.trim_end().to_string());
            let got = read(&path).unwrap();
            let kept = lines(&got);
            // The newest lines, in order, whole, and no more than fit.
            assert_eq!(kept[..], all[all.len() - kept.len()..], "after line {i}");
            assert!(got.lines.len() <= 40);
            let total: usize = all.iter().map(|l| l.len() + 1).sum();
            assert_eq!(got.lost as usize + got.lines.len(), total);
        }
        assert!(!ring.push(&[b'y'; 21]), "longer than half the ring");
        assert!(!ring.push(b"no newline"));
    }

    #[test]
    fn a_life_killed_mid_copy_leaves_only_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ring_name(1, 0));
        let mut ring = Ring::create(&path, 32).unwrap();
        for i in 0..9 {
            ring.push(format!("old {i}\n").as_bytes());
        }
        let before = lines(&read(&path).unwrap());
        // What a life killed between moving `start` and moving `head` leaves: `start`
        // past the lines the new one will cover, and some of its bytes copied over them.
        let new = b"NEWNEWNEWNEW\n";
        let new_head = ring.head + new.len() as u64;
        let mut pos = new_head - ring.cap - 1;
        while ring.byte(pos) != b'\n' {
            pos += 1;
        }
        ring.start = pos + 1;
        ring.store(START_AT, ring.start);
        for (k, b) in new[..7].iter().enumerate() {
            let at = ((ring.head + k as u64) % ring.cap + HEADER_BYTES) as usize;
            ring.map[at] = *b;
        }
        let after = read(&path).unwrap();
        let kept = lines(&after);
        assert!(!kept.is_empty() && kept.len() < before.len(), "{kept:?}");
        assert_eq!(kept[..], before[before.len() - kept.len()..], "only whole old lines");
        assert!(!String::from_utf8(after.lines).unwrap().contains("NEW"));
    }

    #[test]
    fn a_bad_ring_is_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        std::fs::write(&path, b"short").unwrap();
        assert!(read(&path).unwrap_err().contains("shorter"));
        let mut bytes = vec![0u8; HEADER_BYTES as usize + 8];
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).unwrap_err().contains("no magic"));
        bytes[..16].copy_from_slice(MAGIC);
        bytes[CAP_AT..CAP_AT + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).unwrap_err().contains("claims"), "never sized by the header");
        bytes[CAP_AT..CAP_AT + 8].copy_from_slice(&8u64.to_le_bytes());
        bytes[HEAD_AT..HEAD_AT + 8].copy_from_slice(&9u64.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).unwrap_err().contains("inconsistent"));
    }
}
