//! Who a worker is: its id, and how many a run may have. At the bottom of the node
//! contract, so the services and the algorithm interface (which re-exports both) can
//! name a peer without naming each other.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Largest worker count accepted: each worker is a process, with a socket per peer it
/// talks to (N-1 for an algorithm that connects all-to-all). Here, at the bottom, so
/// that readers of a run's files can check a count against it.
pub const MAX_WORKERS: u32 = 1024;

/// A worker's identity: a small integer, `0..n`.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PeerId(pub u32);

impl PeerId {
    /// The id as an index into per-worker arrays.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for PeerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "w{}", self.0)
    }
}
