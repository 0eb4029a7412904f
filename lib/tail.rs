//! Follows the resource file as it grows, for the supervisor: progress, and who is inside.
//!
//! The supervisor never asks workers how far they are; it reads what they wrote, so a
//! stalled run, the k-th entry of a fault plan and the current holder are judged by
//! the same file the auditor reads. Only whole lines are consumed; a line still being
//! written waits for the next look.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

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
    /// Workers whose last ENTER has no EXIT yet.
    pub inside: BTreeSet<u32>,
    /// The worker that entered last.
    pub last_entered: Option<u32>,
}

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
        }
    }

    /// Read whatever whole lines were added; returns whether anything was.
    pub fn poll(&mut self) -> bool {
        let Ok(mut f) = File::open(&self.path) else { return false };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len <= self.offset {
            return false;
        }
        let mut buf = Vec::with_capacity((len - self.offset) as usize);
        if f.seek(SeekFrom::Start(self.offset)).is_err() || f.read_to_end(&mut buf).is_err() {
            return false;
        }
        let whole = buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        for line in buf[..whole].split(|&b| b == b'\n') {
            let Ok(rec) = std::str::from_utf8(line).unwrap_or("").parse::<Record>() else { continue };
            match rec {
                Record::Enter { w, .. } => {
                    self.enters += 1;
                    self.inside.insert(w);
                    self.last_entered = Some(w);
                }
                Record::Exit { w, .. } => {
                    self.exits += 1;
                    self.inside.remove(&w);
                    if let Some(c) = self.exits_by_worker.get_mut(w as usize) {
                        *c += 1;
                    }
                }
                Record::Want { .. } => {}
            }
        }
        self.offset += whole as u64;
        whole > 0
    }

    /// Forget that `w` is inside (it crashed there).
    pub fn crashed(&mut self, w: u32) {
        self.inside.remove(&w);
    }

    /// The worker inside the critical section now, or if nobody is, the last to enter.
    pub fn holder(&self) -> Option<u32> {
        match self.last_entered {
            Some(w) if self.inside.contains(&w) => Some(w),
            _ => self.inside.iter().next().copied().or(self.last_entered),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn follows_entries_and_the_holder_across_partial_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        let mut f = File::create(&path).unwrap();
        writeln!(f, "# mutexlab resource v1").unwrap();
        let mut t = Tail::new(&path, 2);
        assert!(t.poll());
        assert_eq!(t.holder(), None);
        write!(f, "WANT w=1 e=1 t=1\nENTER w=1 e=1 fence=1:1 t=2\nEXIT w=1 e=1 fen").unwrap();
        assert!(t.poll());
        assert_eq!((t.enters, t.exits, t.holder()), (1, 0, Some(1)));
        writeln!(f, "ce=1:1 read=0 value=1 t=3").unwrap();
        assert!(t.poll());
        assert_eq!((t.enters, t.exits, t.exits_by_worker.clone()), (1, 1, vec![0, 1]));
        assert!(t.inside.is_empty());
        assert_eq!(t.holder(), Some(1), "nobody inside: the last to enter");
        assert!(!t.poll());
    }
}
