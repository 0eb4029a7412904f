//! A latency space and the super-peer rules over it (the 002 notes' last election
//! topic), at the bottom of the layers: the simulator's selection (`sim/superpeer.rs`),
//! the super-peer algorithm that runs as processes (`algos/superpeer.rs`) and its
//! auditor (`audit/superpeers.rs`) all take places and rules from here, so the three
//! agree for a seed.
//!
//! Nodes sit at seeded random points of a square [`SIDE_MS`] wide; the one-way latency
//! between two is their distance (as network coordinates estimate it). Each node also
//! draws a seeded rank; ties go to the lower id. [`layout`] draws them all from one
//! ChaCha8 stream (every node's place, then every rank), so a node's place depends on
//! the seed, `n` and its id only, and [`place`] gives one node its own.
//!
//! [`Net`] holds who serves whom and applies the selection's rules: the cover election
//! ([`Net::cover`]), the share ([`Net::share`]), joining with capacity
//! ([`Net::join_within`], [`Net::join_anywhere`]) and recovery after crashes
//! ([`Net::recover`]); `sim/superpeer.rs` explains them step by step.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The width of the latency space, ms, unless told otherwise.
pub const SIDE_MS: f64 = 100.0;
/// A normal node's one-way latency to its super-peer should be at most this, ms.
pub const BOUND_MS: f64 = 40.0;
/// The most normal nodes one super-peer serves.
pub const CAPACITY: usize = 40;
/// Super-peers wanted, as a share of the (live) nodes.
pub const SHARE: f64 = 0.05;

/// Super-peers a share asks for among `n` nodes: ⌈share · n⌉, at least 1.
pub fn wanted(share: f64, n: usize) -> usize {
    ((share * n as f64).ceil() as usize).clamp(1, n.max(1))
}

/// A place in the latency space, ms. Equal by its bits, so it can sit in a node's state
/// and a message (places are never NaN).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Point {
    /// Across.
    pub x: f64,
    /// Up.
    pub y: f64,
}

impl PartialEq for Point {
    fn eq(&self, other: &Self) -> bool {
        (self.x.to_bits(), self.y.to_bits()) == (other.x.to_bits(), other.y.to_bits())
    }
}

impl Eq for Point {}

impl Hash for Point {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.x.to_bits(), self.y.to_bits()).hash(state);
    }
}

impl Point {
    /// The one-way latency to `other`, ms.
    pub fn dist(self, other: Point) -> f64 {
        ((self.x - other.x).powi(2) + (self.y - other.y).powi(2)).sqrt()
    }
}

/// Every node's place and rank for `seed`, and the stream they were drawn from, left
/// where they end (the simulator draws its crashes from it).
pub fn layout(seed: u64, n: usize, side_ms: f64) -> (Vec<Point>, Vec<u64>, ChaCha8Rng) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pos: Vec<Point> = (0..n)
        .map(|_| Point { x: rng.random_range(0.0..side_ms), y: rng.random_range(0.0..side_ms) })
        .collect();
    let rank: Vec<u64> = (0..n).map(|_| rng.random::<u64>()).collect();
    (pos, rank, rng)
}

/// Node `id`'s own place and rank among `n` for `seed`, in a space [`SIDE_MS`] wide.
pub fn place(seed: u64, n: usize, id: usize) -> (Point, u64) {
    let (pos, rank, _) = layout(seed, n, SIDE_MS);
    (pos[id], rank[id])
}

/// The nodes and who serves whom.
#[derive(Clone, Debug)]
pub struct Net {
    pos: Vec<Point>,
    rank: Vec<(u64, usize)>,
    bound: f64,
    cap: usize,
    /// Who is alive.
    pub alive: Vec<bool>,
    /// Who is a super-peer.
    pub sp: Vec<bool>,
    /// A normal node's super-peer.
    pub serves: Vec<Option<usize>>,
    /// How many normal nodes each super-peer serves.
    pub load: Vec<usize>,
    /// Super-peers by grid cell (cells as wide as the bound).
    cells: HashMap<(i64, i64), Vec<usize>>,
}

impl Net {
    /// Nodes at `pos` with ranks `rank`, all alive, none a super-peer yet.
    pub fn new(pos: Vec<Point>, rank: &[u64], bound: f64, cap: usize) -> Net {
        let n = pos.len();
        Net {
            pos,
            rank: rank.iter().enumerate().map(|(i, &r)| (r, i)).collect(),
            bound,
            cap,
            alive: vec![true; n],
            sp: vec![false; n],
            serves: vec![None; n],
            load: vec![0; n],
            cells: HashMap::new(),
        }
    }

    /// Nodes.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// No nodes.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// The latency between `a` and `b`, ms.
    pub fn dist(&self, a: usize, b: usize) -> f64 {
        self.pos[a].dist(self.pos[b])
    }

    /// The ids in rank order.
    pub fn by_rank(&self) -> Vec<usize> {
        let mut by: Vec<usize> = (0..self.len()).collect();
        by.sort_by_key(|&i| self.rank[i]);
        by
    }

    fn cell(&self, i: usize) -> (i64, i64) {
        ((self.pos[i].x / self.bound).floor() as i64, (self.pos[i].y / self.bound).floor() as i64)
    }

    /// `i` becomes a super-peer.
    pub fn promote(&mut self, i: usize) {
        self.sp[i] = true;
        self.serves[i] = None;
        let c = self.cell(i);
        self.cells.entry(c).or_default().push(i);
    }

    /// `i` joins super-peer `s`.
    pub fn join(&mut self, i: usize, s: usize) {
        self.serves[i] = Some(s);
        self.load[s] += 1;
    }

    /// Live super-peers within the bound of `i`, nearest first.
    pub fn near(&self, i: usize) -> Vec<(f64, usize)> {
        let (cx, cy) = self.cell(i);
        let mut out: Vec<(f64, usize)> = (-1..=1)
            .flat_map(|dx| (-1..=1).map(move |dy| (cx + dx, cy + dy)))
            .filter_map(|c| self.cells.get(&c))
            .flatten()
            .filter(|&&s| self.alive[s] && s != i)
            .map(|&s| (self.dist(i, s), s))
            .filter(|(d, _)| *d <= self.bound)
            .collect();
        out.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        out
    }

    /// Step 1 over `who` (in the order given, rank order for the selection): each with
    /// no live super-peer within the bound becomes one. Returns how many did.
    pub fn cover(&mut self, who: &[usize]) -> usize {
        let mut made = 0;
        for &i in who {
            if self.alive[i] && !self.sp[i] && self.near(i).is_empty() {
                self.promote(i);
                made += 1;
            }
        }
        made
    }

    /// Step 2: while there are fewer than `want` super-peers, the node farthest from its
    /// nearest one (within the bound; the lower rank on a tie) becomes one. Returns how
    /// many were added.
    pub fn share(&mut self, want: usize) -> usize {
        let n = self.len();
        let mut nearest: Vec<f64> = (0..n)
            .map(|i| if self.sp[i] { 0.0 } else { self.near(i).first().map_or(f64::INFINITY, |x| x.0) })
            .collect();
        let have = (0..n).filter(|&i| self.sp[i] && self.alive[i]).count();
        let mut added = 0;
        while have + added < want {
            let far = (0..n)
                .filter(|&i| !self.sp[i] && self.alive[i])
                .max_by(|&a, &b| nearest[a].total_cmp(&nearest[b]).then(self.rank[b].cmp(&self.rank[a])));
            let Some(far) = far else { break };
            self.promote(far);
            added += 1;
            for (i, d) in nearest.iter_mut().enumerate() {
                *d = d.min(self.dist(i, far));
            }
        }
        added
    }

    /// Step 3 for `who`: those with the fewest choices first, each the nearest within the
    /// bound with room. Returns those that found none.
    pub fn join_within(&mut self, who: &[usize]) -> Vec<usize> {
        let mut order: Vec<(usize, (u64, usize), usize)> =
            who.iter().map(|&i| (self.near(i).len(), self.rank[i], i)).collect();
        order.sort_unstable();
        let mut left = Vec::new();
        for (_, _, i) in order {
            match self.near(i).into_iter().find(|&(_, s)| self.load[s] < self.cap) {
                Some((_, s)) => self.join(i, s),
                None => left.push(i),
            }
        }
        left
    }

    /// Step 3's last resort: each of `who` joins the nearest live super-peer with room,
    /// anywhere.
    pub fn join_anywhere(&mut self, who: &[usize]) {
        let sps: Vec<usize> = (0..self.len()).filter(|&s| self.sp[s] && self.alive[s]).collect();
        for &i in who {
            let best = sps
                .iter()
                .filter(|&&s| self.load[s] < self.cap)
                .map(|&s| (self.dist(i, s), s))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            if let Some((_, s)) = best {
                self.join(i, s);
            }
        }
    }

    /// Step 4, once the dead are marked (`alive`): the orphans (live nodes whose
    /// super-peer is dead, in rank order) farthest from the live super-peers become
    /// super-peers until there are `want`, the others re-join within the bound, those
    /// left hold the cover election among themselves, and the rest join as in step 3.
    /// Returns (orphans that re-joined within the bound, orphans promoted).
    pub fn recover(&mut self, orphans: &[usize], want: usize) -> (usize, usize) {
        for &i in orphans {
            self.serves[i] = None;
        }
        let survivors: Vec<usize> = (0..self.len()).filter(|&s| self.sp[s] && self.alive[s]).collect();
        let mut live_sps = survivors.len();
        let mut far: Vec<(f64, usize)> = orphans
            .iter()
            .map(|&i| (survivors.iter().map(|&s| self.dist(i, s)).fold(f64::INFINITY, f64::min), i))
            .collect();
        let mut promoted = 0;
        while live_sps < want {
            let Some(k) = (0..far.len()).filter(|&k| !self.sp[far[k].1]).max_by(|&a, &b| {
                far[a].0.total_cmp(&far[b].0).then(self.rank[far[b].1].cmp(&self.rank[far[a].1]))
            }) else {
                break;
            };
            let new = far[k].1;
            self.promote(new);
            (live_sps, promoted) = (live_sps + 1, promoted + 1);
            for (d, i) in far.iter_mut() {
                *d = d.min(self.dist(*i, new));
            }
        }
        let orphans: Vec<usize> = orphans.iter().copied().filter(|&i| !self.sp[i]).collect();
        let left = self.join_within(&orphans);
        let rejoined = orphans.len() - left.len();
        let promoted = promoted + self.cover(&left);
        let still: Vec<usize> = left.iter().copied().filter(|&i| !self.sp[i]).collect();
        let rest = self.join_within(&still);
        self.join_anywhere(&rest);
        (rejoined, promoted)
    }
}

/// Cells across the space for a selection that scales (`superpeer-cells`): the peer
/// groups. 4 × 4 cells 25 ms wide, whose diagonal (35.4 ms) is within [`BOUND_MS`], so
/// any member of a cell is within the bound of any other: a cell's election needs no
/// distances, and no node needs to hear from anyone outside its cell.
pub const CELLS_PER_SIDE: usize = 4;
/// Cells in all.
pub const CELLS: usize = CELLS_PER_SIDE * CELLS_PER_SIDE;

/// The cell a place lies in, `0..CELLS`, row by row.
pub fn cell_of(p: Point) -> usize {
    let side = SIDE_MS / CELLS_PER_SIDE as f64;
    let at = |v: f64| ((v / side).floor().max(0.0) as usize).min(CELLS_PER_SIDE - 1);
    at(p.y) * CELLS_PER_SIDE + at(p.x)
}

/// Super-peers a cell of `m` live nodes elects: its share of them, and enough that none
/// serves more than [`CAPACITY`] (`s` super-peers serve `m - s` nodes). Summed over the
/// cells, at least the share of all the nodes (a sum of ceilings is at least the ceiling
/// of the sum).
pub fn cell_superpeers(m: usize) -> usize {
    if m == 0 {
        return 0;
    }
    wanted(SHARE, m).max(m.div_ceil(CAPACITY + 1))
}

/// One cell's election: `members` (id, place, rank) are its live nodes, `before` the
/// roles they held (id → its super-peer, itself for a super-peer), empty the first
/// time. Super-peers stay super-peers; while the cell has fewer than
/// [`cell_superpeers`], the lowest-ranked others (ties to the lower id) become ones. Each
/// super-peer has room for an even share of the cell's normal nodes (at most the
/// capacity): followers of a live super-peer with room stay, and every other node joins
/// the nearest super-peer with room (in rank order). Returns each member's super-peer.
pub fn cell_roles(members: &[(u32, Point, u64)], before: &BTreeMap<u32, u32>) -> BTreeMap<u32, u32> {
    let mut by_rank: Vec<&(u32, Point, u64)> = members.iter().collect();
    by_rank.sort_by_key(|&&(id, _, rank)| (rank, id));
    let live: BTreeMap<u32, Point> = members.iter().map(|&(id, at, _)| (id, at)).collect();
    let was_sp = |id: u32| before.get(&id) == Some(&id);
    let mut sps: Vec<u32> = by_rank.iter().map(|m| m.0).filter(|&id| was_sp(id)).collect();
    for &&(id, _, _) in &by_rank {
        if sps.len() >= cell_superpeers(members.len()) {
            break;
        }
        if !sps.contains(&id) {
            sps.push(id);
        }
    }
    let mut roles: BTreeMap<u32, u32> = sps.iter().map(|&s| (s, s)).collect();
    let mut load: BTreeMap<u32, usize> = sps.iter().map(|&s| (s, 0)).collect();
    // An even share of the cell's normal nodes each (loads differ by one at most when
    // nobody stays put), never past the capacity.
    let room = (members.len() - sps.len()).div_ceil(sps.len().max(1)).min(CAPACITY);
    let mut rest = Vec::new();
    let others: Vec<u32> = by_rank.iter().map(|m| m.0).filter(|id| !roles.contains_key(id)).collect();
    for id in others {
        match before.get(&id).copied().filter(|s| load.get(s).is_some_and(|&l| l < room)) {
            Some(s) => {
                roles.insert(id, s);
                *load.get_mut(&s).expect("a super-peer") += 1;
            }
            None => rest.push(id),
        }
    }
    for id in rest {
        let best = sps
            .iter()
            .filter(|s| load[s] < room)
            .map(|&s| (live[&id].dist(live[&s]), s))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if let Some((_, s)) = best {
            roles.insert(id, s);
            *load.get_mut(&s).expect("a super-peer") += 1;
        }
    }
    roles
}

/// Every node's super-peer when each cell holds its election over all its nodes (the
/// `superpeer-cells` selection with no faults), by id.
pub fn cells_select(seed: u64, n: usize) -> Vec<Option<u32>> {
    let (pos, rank, _) = layout(seed, n, SIDE_MS);
    let mut cells: Vec<Vec<(u32, Point, u64)>> = vec![Vec::new(); CELLS];
    for i in 0..n {
        cells[cell_of(pos[i])].push((i as u32, pos[i], rank[i]));
    }
    let mut of = vec![None; n];
    for members in &cells {
        for (id, s) in cell_roles(members, &BTreeMap::new()) {
            of[id as usize] = Some(s);
        }
    }
    of
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_s_own_place_is_the_one_the_whole_layout_gives_it() {
        let (pos, rank, _) = layout(7, 12, SIDE_MS);
        for id in 0..12 {
            assert_eq!(place(7, 12, id), (pos[id], rank[id]));
        }
        assert_ne!(place(8, 12, 3), place(7, 12, 3), "another seed, another place");
        assert!(pos.iter().all(|p| (0.0..SIDE_MS).contains(&p.x) && (0.0..SIDE_MS).contains(&p.y)));
    }

    #[test]
    fn any_two_nodes_of_a_cell_are_within_the_bound() {
        let side = SIDE_MS / CELLS_PER_SIDE as f64;
        assert!(side * 2f64.sqrt() <= BOUND_MS);
        assert_eq!(cell_of(Point { x: 0.0, y: 0.0 }), 0);
        assert_eq!(cell_of(Point { x: 99.9, y: 0.1 }), CELLS_PER_SIDE - 1);
        assert_eq!(cell_of(Point { x: 99.9, y: 99.9 }), CELLS - 1);
        assert_eq!(cell_of(Point { x: 26.0, y: 51.0 }), 2 * CELLS_PER_SIDE + 1);
    }

    #[test]
    fn every_cell_meets_share_and_capacity_and_the_sum_meets_the_share() {
        for (n, seed) in [(2, 1), (30, 2), (400, 3), (1024, 1), (5000, 4)] {
            let of = cells_select(seed, n);
            let sps = (0..n).filter(|&i| of[i] == Some(i as u32)).count();
            assert!(sps >= wanted(SHARE, n), "n={n}: {sps} super-peers");
            let (pos, _, _) = layout(seed, n, SIDE_MS);
            for i in 0..n {
                let s = of[i].expect("a role") as usize;
                assert_eq!(of[s], Some(s as u32), "w{i} follows a super-peer");
                assert!(pos[i].dist(pos[s]) <= BOUND_MS);
                assert_eq!(cell_of(pos[i]), cell_of(pos[s]), "within its own cell");
            }
            for s in 0..n {
                let load = (0..n).filter(|&i| i != s && of[i] == Some(s as u32)).count();
                assert!(load <= CAPACITY, "n={n}: w{s} serves {load}");
            }
        }
    }

    #[test]
    fn a_cell_keeps_what_it_can_when_a_super_peer_dies() {
        let (pos, rank, _) = layout(5, 200, SIDE_MS);
        let members: Vec<(u32, Point, u64)> =
            (0..200).filter(|&i| cell_of(pos[i]) == 5).map(|i| (i as u32, pos[i], rank[i])).collect();
        let first = cell_roles(&members, &BTreeMap::new());
        let dead = *first.iter().find(|(i, s)| i == s).expect("a super-peer").0;
        let live: Vec<_> = members.iter().copied().filter(|m| m.0 != dead).collect();
        let after = cell_roles(&live, &first);
        for (&i, &s) in &first {
            if i != dead && s != dead {
                assert_eq!(after[&i], s, "w{i} keeps its super-peer");
            }
        }
        assert_eq!(after.len(), live.len(), "every live member has a role");
        assert!(after.values().all(|s| *s != dead));
    }
}
