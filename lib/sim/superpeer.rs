//! Super-peers at scale (the 002 notes' last election topic): choosing super-peers among
//! thousands of nodes, in the seeded simulator, and measuring what the notes require of
//! them: normal nodes have low-latency access to a super-peer (here: within a latency
//! bound), super-peers are evenly spread, they are a predefined share of the nodes, and
//! none serves more than a fixed number of normal nodes; then what happens when some of
//! them fail.
//!
//! Sans-IO and deterministic: a [`Params`] and a seed give one [`Outcome`], with no
//! clock, thread or file. The network is a latency space: nodes at seeded random points
//! of a square [`Params::side_ms`] wide, one-way latency the distance between them (as
//! network coordinates estimate it). Each node draws a seeded rank; ties go to the lower
//! id.
//!
//! The selection, each step a rule a node applies to what it can see within the bound
//! (a grid of cells as wide as the bound finds those nodes without looking at the rest):
//! 1. **Cover**: in rank order, a node with no super-peer within the bound becomes one
//!    (the lowest rank of its uncovered neighbourhood wins its local election). Every
//!    node is then within the bound of a super-peer, and no two super-peers are.
//! 2. **Share**: while there are fewer than ⌈share · n⌉ super-peers, the node farthest
//!    from its nearest super-peer becomes one, so added super-peers spread out. (A bound
//!    too tight for the share leaves more; the table says so.)
//! 3. **Join**: normal nodes, those with the fewest super-peers within the bound first,
//!    each join the nearest super-peer within the bound that serves fewer than
//!    [`Params::capacity`]; one that finds none joins the nearest with room anywhere
//!    (counted as beyond the bound).
//! 4. **Failures**: a share [`Params::fail`] of the super-peers crash. Of the nodes they
//!    served (the orphans), those farthest from the survivors become super-peers until
//!    the share is back (step 2 among the orphans); the others re-join as in step 3;
//!    those left hold the cover election among themselves (step 1), and the rest join as
//!    in step 3.

use std::collections::HashMap;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// The most nodes a selection takes (step 2 is quadratic in the worst case).
pub const MAX_NODES: usize = 20_000;

/// What a selection is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Params {
    /// Nodes.
    pub n: usize,
    /// Super-peers wanted, as a share of the nodes (0 < share ≤ 1).
    pub share: f64,
    /// The most normal nodes one super-peer serves.
    pub capacity: usize,
    /// A normal node's one-way latency to its super-peer should be at most this, ms.
    pub bound_ms: f64,
    /// The share of super-peers that crash (0 ≤ fail < 1).
    pub fail: f64,
    /// The width of the latency space, ms.
    pub side_ms: f64,
    /// The seed of the nodes' places, ranks and crashes.
    pub seed: u64,
}

impl Params {
    /// The defaults for `n` nodes: 5 % super-peers serving at most 40 each, within
    /// 40 ms, in a space 100 ms wide; 10 % of them crash.
    pub fn new(n: usize, seed: u64) -> Params {
        Params { n, share: 0.05, capacity: 40, bound_ms: 40.0, fail: 0.1, side_ms: 100.0, seed }
    }

    /// Why these parameters cannot be run, in one line; `None` if they can.
    pub fn check(&self) -> Option<String> {
        if self.n < 2 || self.n > MAX_NODES {
            return Some(format!("-n must be 2 to {MAX_NODES}, not {}", self.n));
        }
        if !(self.share > 0.0 && self.share <= 1.0) {
            return Some(format!("--share must be above 0 and at most 1, not {}", self.share));
        }
        if self.capacity == 0 {
            return Some("--capacity must be at least 1".into());
        }
        if !(self.bound_ms > 0.0 && self.bound_ms.is_finite()) {
            return Some(format!("--bound-ms must be a positive number, not {}", self.bound_ms));
        }
        if !(0.0..1.0).contains(&self.fail) {
            return Some(format!("--fail must be at least 0 and below 1, not {}", self.fail));
        }
        let k = self.wanted();
        if k * self.capacity < self.n - k {
            return Some(format!(
                "{k} super-peer(s) serving at most {} each cannot serve the other {} of {} nodes: raise --share or --capacity",
                self.capacity,
                self.n - k,
                self.n
            ));
        }
        None
    }

    /// Super-peers the share asks for: ⌈share · n⌉.
    pub fn wanted(&self) -> usize {
        ((self.share * self.n as f64).ceil() as usize).clamp(1, self.n)
    }
}

/// What the notes ask of a set of super-peers, measured.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Properties {
    /// Live nodes.
    pub nodes: usize,
    /// Live super-peers.
    pub superpeers: usize,
    /// Super-peers per live node.
    pub share: f64,
    /// Normal nodes whose super-peer is within the bound, as a share of them.
    pub within_bound: f64,
    /// The worst one-way latency from a normal node to its super-peer, ms.
    pub worst_ms: f64,
    /// The mean of those latencies, ms.
    pub mean_ms: f64,
    /// The most normal nodes a super-peer serves.
    pub max_load: usize,
    /// The mean normal nodes a super-peer serves.
    pub mean_load: f64,
    /// Normal nodes no super-peer could take (every one full).
    pub unserved: usize,
}

/// One selection, before and after its super-peers' crashes.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Outcome {
    /// What was asked.
    pub params: Params,
    /// Super-peers the cover election made (step 1).
    pub elected: usize,
    /// Super-peers added for the share (step 2).
    pub added: usize,
    /// The requirements measured before the crashes.
    pub before: Properties,
    /// Super-peers crashed.
    pub failed: usize,
    /// The normal nodes they served.
    pub orphans: usize,
    /// Orphans that re-joined a super-peer within the bound.
    pub rejoined: usize,
    /// Orphans that became super-peers: for the share, and by the cover election.
    pub promoted: usize,
    /// The requirements measured after the crashes and the recovery.
    pub after: Properties,
}

/// What `mutexlab superpeers --json` prints: one selection per size asked for.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// The version of this document's shape.
    pub schema: u32,
    /// One selection per `-n` size, in the order given.
    pub runs: Vec<Outcome>,
}

/// The nodes and who serves whom.
struct Net {
    pos: Vec<(f64, f64)>,
    rank: Vec<(u64, usize)>,
    bound: f64,
    cap: usize,
    alive: Vec<bool>,
    sp: Vec<bool>,
    /// A normal node's super-peer.
    serves: Vec<Option<usize>>,
    load: Vec<usize>,
    /// Super-peers by grid cell (cells as wide as the bound).
    cells: HashMap<(i64, i64), Vec<usize>>,
}

impl Net {
    fn dist(&self, a: usize, b: usize) -> f64 {
        let (p, q) = (self.pos[a], self.pos[b]);
        ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt()
    }

    fn cell(&self, i: usize) -> (i64, i64) {
        ((self.pos[i].0 / self.bound).floor() as i64, (self.pos[i].1 / self.bound).floor() as i64)
    }

    fn promote(&mut self, i: usize) {
        self.sp[i] = true;
        self.serves[i] = None;
        let c = self.cell(i);
        self.cells.entry(c).or_default().push(i);
    }

    /// Live super-peers within the bound of `i`, nearest first.
    fn near(&self, i: usize) -> Vec<(f64, usize)> {
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

    /// Step 1 over `who` (in rank order): each with no live super-peer within the bound
    /// becomes one. Returns how many did.
    fn cover(&mut self, who: &[usize]) -> usize {
        let mut made = 0;
        for &i in who {
            if self.alive[i] && !self.sp[i] && self.near(i).is_empty() {
                self.promote(i);
                made += 1;
            }
        }
        made
    }

    /// Step 3 for `who`: those with the fewest choices first, each the nearest within the
    /// bound with room. Returns those that found none.
    fn join_within(&mut self, who: &[usize]) -> Vec<usize> {
        let mut order: Vec<(usize, (u64, usize), usize)> =
            who.iter().map(|&i| (self.near(i).len(), self.rank[i], i)).collect();
        order.sort_unstable();
        let mut left = Vec::new();
        for (_, _, i) in order {
            match self.near(i).into_iter().find(|&(_, s)| self.load[s] < self.cap) {
                Some((_, s)) => {
                    self.serves[i] = Some(s);
                    self.load[s] += 1;
                }
                None => left.push(i),
            }
        }
        left
    }

    /// The nearest live super-peer with room, anywhere.
    fn join_anywhere(&mut self, who: &[usize]) {
        let sps: Vec<usize> = (0..self.sp.len()).filter(|&s| self.sp[s] && self.alive[s]).collect();
        for &i in who {
            let best = sps
                .iter()
                .filter(|&&s| self.load[s] < self.cap)
                .map(|&s| (self.dist(i, s), s))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            if let Some((_, s)) = best {
                self.serves[i] = Some(s);
                self.load[s] += 1;
            }
        }
    }

    fn properties(&self) -> Properties {
        let live: Vec<usize> = (0..self.pos.len()).filter(|&i| self.alive[i]).collect();
        let sps: Vec<usize> = live.iter().copied().filter(|&i| self.sp[i]).collect();
        let normal: Vec<usize> = live.iter().copied().filter(|&i| !self.sp[i]).collect();
        let served: Vec<f64> =
            normal.iter().filter_map(|&i| self.serves[i].map(|s| self.dist(i, s))).collect();
        let within = served.iter().filter(|&&d| d <= self.bound).count();
        let loads: Vec<usize> = sps.iter().map(|&s| self.load[s]).collect();
        Properties {
            nodes: live.len(),
            superpeers: sps.len(),
            share: sps.len() as f64 / live.len().max(1) as f64,
            within_bound: if normal.is_empty() { 1.0 } else { within as f64 / normal.len() as f64 },
            worst_ms: served.iter().copied().fold(0.0, f64::max),
            mean_ms: served.iter().sum::<f64>() / served.len().max(1) as f64,
            max_load: loads.iter().copied().max().unwrap_or(0),
            mean_load: loads.iter().sum::<usize>() as f64 / loads.len().max(1) as f64,
            unserved: normal.len() - served.len(),
        }
    }
}

/// Choose super-peers for `p` (checked with [`Params::check`] first), crash some, and
/// measure both.
pub fn select(p: &Params) -> Outcome {
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let n = p.n;
    let pos: Vec<(f64, f64)> =
        (0..n).map(|_| (rng.random_range(0.0..p.side_ms), rng.random_range(0.0..p.side_ms))).collect();
    let rank: Vec<(u64, usize)> = (0..n).map(|i| (rng.random::<u64>(), i)).collect();
    let mut net = Net {
        pos,
        rank,
        bound: p.bound_ms,
        cap: p.capacity,
        alive: vec![true; n],
        sp: vec![false; n],
        serves: vec![None; n],
        load: vec![0; n],
        cells: HashMap::new(),
    };
    let mut by_rank: Vec<usize> = (0..n).collect();
    by_rank.sort_by_key(|&i| net.rank[i]);
    // 1. Cover.
    let elected = net.cover(&by_rank);
    // 2. Share: the farthest from its nearest super-peer, until there are enough.
    let mut nearest: Vec<f64> = (0..n)
        .map(|i| if net.sp[i] { 0.0 } else { net.near(i).first().map_or(f64::INFINITY, |x| x.0) })
        .collect();
    let mut added = 0;
    while elected + added < p.wanted() {
        let far = (0..n)
            .filter(|&i| !net.sp[i])
            .max_by(|&a, &b| nearest[a].total_cmp(&nearest[b]).then(net.rank[b].cmp(&net.rank[a])));
        let Some(far) = far else { break };
        net.promote(far);
        added += 1;
        for (i, d) in nearest.iter_mut().enumerate() {
            *d = d.min(net.dist(i, far));
        }
    }
    // 3. Join.
    let normal: Vec<usize> = (0..n).filter(|&i| !net.sp[i]).collect();
    let left = net.join_within(&normal);
    net.join_anywhere(&left);
    let before = net.properties();
    // 4. Crashes, and recovery.
    let mut sps: Vec<usize> = (0..n).filter(|&i| net.sp[i]).collect();
    let failed = ((p.fail * sps.len() as f64).round() as usize).min(sps.len().saturating_sub(1));
    for k in 0..failed {
        let j = rng.random_range(k..sps.len());
        sps.swap(k, j);
        net.alive[sps[k]] = false;
    }
    let mut orphans: Vec<usize> =
        (0..n).filter(|&i| net.alive[i] && net.serves[i].is_some_and(|s| !net.alive[s])).collect();
    orphans.sort_by_key(|&i| net.rank[i]);
    for &i in &orphans {
        net.serves[i] = None;
    }
    let orphaned = orphans.len();
    // The share back, from the orphans farthest from the survivors: where capacity went.
    let want = ((p.share * (n - failed) as f64).ceil() as usize).max(1);
    let mut live_sps = sps.len() - failed;
    let survivors: Vec<usize> = sps[failed..].to_vec();
    let mut far: Vec<(f64, usize)> = orphans
        .iter()
        .map(|&i| (survivors.iter().map(|&s| net.dist(i, s)).fold(f64::INFINITY, f64::min), i))
        .collect();
    let mut promoted = 0;
    while live_sps < want {
        let Some(k) = (0..far.len())
            .filter(|&k| !net.sp[far[k].1])
            .max_by(|&a, &b| far[a].0.total_cmp(&far[b].0).then(net.rank[far[b].1].cmp(&net.rank[far[a].1])))
        else {
            break;
        };
        let new = far[k].1;
        net.promote(new);
        (live_sps, promoted) = (live_sps + 1, promoted + 1);
        for (d, i) in far.iter_mut() {
            *d = d.min(net.dist(*i, new));
        }
    }
    let orphans: Vec<usize> = orphans.into_iter().filter(|&i| !net.sp[i]).collect();
    let left = net.join_within(&orphans);
    let rejoined = orphans.len() - left.len();
    let promoted = promoted + net.cover(&left);
    let still: Vec<usize> = left.iter().copied().filter(|&i| !net.sp[i]).collect();
    let rest = net.join_within(&still);
    net.join_anywhere(&rest);
    let after = net.properties();
    Outcome { params: *p, elected, added, before, failed, orphans: orphaned, rejoined, promoted, after }
}

/// The table of outcomes, as Markdown: one row per selection.
pub fn table(rows: &[Outcome]) -> String {
    let mut s = String::from(
        "| nodes | super-peers (wanted) | within bound | worst / mean ms | max load (cap) | crashed | orphans | re-joined | promoted | within bound after | share after | max load after |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for o in rows {
        let (b, a, p) = (&o.before, &o.after, &o.params);
        let pct = |x: f64| format!("{:.1} %", x * 100.0);
        s += &format!(
            "| {} | {} ({}) {} | {} | {:.1} / {:.1} | {} ({}) | {} | {} | {} | {} | {} | {} | {} |\n",
            p.n,
            b.superpeers,
            p.wanted(),
            pct(b.share),
            pct(b.within_bound),
            b.worst_ms,
            b.mean_ms,
            b.max_load,
            p.capacity,
            o.failed,
            o.orphans,
            o.rejoined,
            o.promoted,
            pct(a.within_bound),
            pct(a.share),
            a.max_load,
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_requirement_holds_at_a_thousand_nodes_and_after_crashes() {
        let p = Params::new(1000, 1);
        assert_eq!(p.check(), None);
        let o = select(&p);
        let b = &o.before;
        assert_eq!(b.superpeers, 50, "{o:?}");
        assert_eq!(b.within_bound, 1.0, "{o:?}");
        assert!(b.worst_ms <= p.bound_ms && b.max_load <= p.capacity && b.unserved == 0, "{o:?}");
        assert_eq!(o.failed, 5);
        assert!(o.orphans > 0 && o.rejoined + o.promoted == o.orphans, "{o:?}");
        assert!(o.after.max_load <= p.capacity && o.after.unserved == 0, "{o:?}");
        assert_eq!(o.after.within_bound, 1.0, "{o:?}");
        // The share is back: ⌈5 % of the 995 left⌉.
        assert_eq!((o.after.nodes, o.after.superpeers), (995, 50), "{o:?}");
        // The same seed, the same outcome; another seed, another.
        assert_eq!(select(&p), o);
        assert_ne!(select(&Params { seed: 2, ..p }).before, o.before);
    }

    #[test]
    fn a_bound_too_tight_for_the_share_and_a_full_house_are_measured_not_hidden() {
        // A bound of 5 ms needs far more than 5 % of 200 nodes to cover them.
        let p = Params { bound_ms: 5.0, ..Params::new(200, 3) };
        let o = select(&p);
        assert!(o.before.superpeers > p.wanted() && o.added == 0, "{o:?}");
        assert_eq!(o.before.within_bound, 1.0);
        // The negative control: capacity for exactly the others, a tight bound: some
        // nodes must be served from beyond it, and the measure says so.
        let p = Params { bound_ms: 8.0, capacity: 1, share: 0.5, ..Params::new(200, 3) };
        assert_eq!(p.check(), None);
        let o = select(&p);
        assert!(o.before.within_bound < 1.0 && o.before.max_load == 1, "{o:?}");
    }

    #[test]
    fn parameters_that_cannot_work_are_refused_in_one_line() {
        let ok = Params::new(100, 1);
        for (p, says) in [
            (Params { n: 1, ..ok }, "-n must be 2 to"),
            (Params { n: MAX_NODES + 1, ..ok }, "-n must be 2 to"),
            (Params { share: 0.0, ..ok }, "--share"),
            (Params { share: f64::NAN, ..ok }, "--share"),
            (Params { capacity: 0, ..ok }, "--capacity"),
            (Params { bound_ms: -1.0, ..ok }, "--bound-ms"),
            (Params { fail: 1.0, ..ok }, "--fail"),
            (Params { share: 0.01, capacity: 5, ..ok }, "cannot serve the other 99 of 100"),
        ] {
            let e = p.check().expect("refused");
            assert!(e.contains(says) && !e.contains('\n'), "{e}");
        }
    }
}
