//! The checker's visited sets: a state's 64-bit fingerprint, a table keyed by
//! fingerprints (open addressing, each key beside its value), and the sharded sets the
//! searches keep: fingerprints only for depth-first, fingerprint → parent for
//! breadth-first, whose threads lock one shard at a time.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Mutex;

/// A fingerprint of a state: aHash with fixed keys, so the same state gets the same
/// fingerprint on every thread (hashing was half the search's work with SipHash, whose
/// cost is per write, and a world is hashed in hundreds of small writes).
pub(super) fn fingerprint<T: Hash>(value: &T) -> u64 {
    const KEYS: [u64; 4] =
        [0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344, 0xa409_3822_299f_31d0, 0x082e_fa98_ec4e_6c89];
    ahash::RandomState::with_seeds(KEYS[0], KEYS[1], KEYS[2], KEYS[3]).hash_one(value)
}

/// Fingerprints are hashes already: a map keyed by them uses them as they are.
#[derive(Default)]
pub(super) struct Unhashed(u64);

impl Hasher for Unhashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

pub(super) type FpMap<V> = HashMap<u64, V, BuildHasherDefault<Unhashed>>;

/// Shards of a visited set: a table grows by doubling, and while it moves its entries it
/// holds both; in shards only one shard's worth is doubled at a time, so the peak memory
/// is the tables' own, not half as much again.
const SHARDS: usize = 64;

/// Which shard `fp` belongs to: its middle bits, since a table itself reads the low
/// bits and the top seven.
fn shard_of(fp: u64) -> usize {
    (fp >> 32) as usize % SHARDS
}

/// A map keyed by fingerprints, by open addressing with linear probing: each key beside
/// its value, so a look-up reads one cache line where a `HashMap` reads its control
/// bytes and its slot apart (the visited set's look-ups were a fifth of a depth-first
/// search's time, nearly all of it cache misses), and a set of fingerprints takes 8
/// bytes a slot, not 9. Key 0 marks an empty slot; the fingerprint 0 is kept beside.
pub(super) struct FpTable<V> {
    slots: Vec<(u64, V)>,
    len: usize,
    zero: Option<V>,
}

impl<V: Copy + Default> FpTable<V> {
    pub(super) fn new() -> Self {
        FpTable { slots: Vec::new(), len: 0, zero: None }
    }

    /// The slot of `fp` (non-zero): where it is, or the empty slot where it would go.
    fn find(&self, fp: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = fp as usize & mask;
        while self.slots[i].0 != fp && self.slots[i].0 != 0 {
            i = (i + 1) & mask;
        }
        i
    }

    /// The value of `fp`, if it is there.
    pub(super) fn get(&self, fp: u64) -> Option<V> {
        if fp == 0 {
            return self.zero;
        }
        if self.slots.is_empty() {
            return None;
        }
        let (k, v) = self.slots[self.find(fp)];
        (k == fp).then_some(v)
    }

    /// Record `fp` with `value`; false (and `value` not kept) if it was there already.
    pub(super) fn insert(&mut self, fp: u64, value: V) -> bool {
        if fp == 0 {
            return self.zero.is_none() && self.zero.replace(value).is_none();
        }
        if !self.slots.is_empty() {
            let i = self.find(fp);
            if self.slots[i].0 == fp {
                return false;
            }
            // At most three quarters full: linear probes stay short.
            if (self.len + 1) * 4 <= self.slots.len() * 3 {
                self.slots[i] = (fp, value);
                self.len += 1;
                return true;
            }
        }
        self.grow();
        let i = self.find(fp);
        self.slots[i] = (fp, value);
        self.len += 1;
        true
    }

    /// Twice the slots (16 at first), every key moved to its place there.
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![(0, V::default()); size]);
        for (k, v) in old.into_iter().filter(|&(k, _)| k != 0) {
            let i = self.find(k);
            self.slots[i] = (k, v);
        }
    }
}

/// The visited set of depth-first search without a depth bound: fingerprints only.
pub(super) struct Seen {
    shards: Vec<FpTable<()>>,
}

impl Seen {
    pub(super) fn new() -> Seen {
        Seen { shards: (0..SHARDS).map(|_| FpTable::new()).collect() }
    }

    /// Record `fp`; false if it was there already.
    pub(super) fn insert(&mut self, fp: u64) -> bool {
        self.shards[shard_of(fp)].insert(fp, ())
    }
}

/// The visited set of breadth-first search: fingerprint → its parent's fingerprint, in
/// shards that threads lock one at a time. The choice from the parent is not kept (it
/// would double each entry): [`Visited::path`] finds it again by replaying the way.
pub(super) struct Visited {
    shards: Vec<Mutex<FpTable<u64>>>,
}

impl Visited {
    pub(super) fn new() -> Visited {
        Visited { shards: (0..SHARDS).map(|_| Mutex::new(FpTable::new())).collect() }
    }

    fn shard(&self, fp: u64) -> std::sync::MutexGuard<'_, FpTable<u64>> {
        self.shards[shard_of(fp)].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record `fp`, found from `parent`; false if it was there already.
    pub(super) fn insert(&self, fp: u64, parent: u64) -> bool {
        self.shard(fp).insert(fp, parent)
    }

    /// The fingerprints from the start to the state with fingerprint `fp`, by its
    /// parents; the start's own first.
    pub(super) fn prints(&self, mut fp: u64) -> Vec<u64> {
        let mut prints = vec![fp];
        while let Some(parent) = self.shard(fp).get(fp) {
            if parent == fp {
                break; // the start is its own parent
            }
            prints.push(parent);
            fp = parent;
        }
        prints.reverse();
        prints
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_table_keeps_each_key_once_with_its_first_value_through_growth() {
        let mut t: FpTable<u64> = FpTable::new();
        // Keys that share their low bits collide in the same slots: probes must go on.
        let keys: Vec<u64> = (1..=5_000u64).map(|i| i << 20).chain([u64::MAX, 0, 7]).collect();
        for (v, &k) in keys.iter().enumerate() {
            assert!(t.insert(k, v as u64), "{k} is new");
        }
        for (v, &k) in keys.iter().enumerate() {
            assert!(!t.insert(k, 99), "{k} was there");
            assert_eq!(t.get(k), Some(v as u64), "the first value stays");
        }
        assert_eq!(t.len, keys.len() - 1, "0 is kept beside the slots");
        assert!(t.len * 4 <= t.slots.len() * 3, "at most three quarters full");
        assert_eq!(t.get(3 << 40), None);
        // Negative control: a table that never saw 0 does not claim it.
        assert_eq!(FpTable::<u64>::new().get(0), None);
        let mut seen = Seen::new();
        assert!(seen.insert(0) && !seen.insert(0) && seen.insert(1) && !seen.insert(1));
    }
}
