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
//! id. Places, ranks and the steps' rules are [`crate::latency`]'s, which the
//! `superpeer` algorithm shares when it runs as processes (`algos/superpeer.rs`): for a
//! seed, both choose the same super-peers, and [`measure`] measures a real run's roles.
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

use rand::RngExt;
use serde::Serialize;

use crate::latency::{self, Net};

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
        Params {
            n,
            share: latency::SHARE,
            capacity: latency::CAPACITY,
            bound_ms: latency::BOUND_MS,
            fail: 0.1,
            side_ms: latency::SIDE_MS,
            seed,
        }
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
        latency::wanted(self.share, self.n)
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
    /// The fewest normal nodes a super-peer serves.
    pub min_load: usize,
    /// How evenly the super-peers share the normal nodes: the standard deviation of their
    /// loads over the mean (0: every one serves as many).
    pub load_cv: f64,
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

fn mean_load(loads: &[usize]) -> f64 {
    loads.iter().sum::<usize>() as f64 / loads.len().max(1) as f64
}

/// The requirements as `net` meets them now.
fn properties(net: &Net, bound: f64) -> Properties {
    let live: Vec<usize> = (0..net.len()).filter(|&i| net.alive[i]).collect();
    let sps: Vec<usize> = live.iter().copied().filter(|&i| net.sp[i]).collect();
    let normal: Vec<usize> = live.iter().copied().filter(|&i| !net.sp[i]).collect();
    let served: Vec<f64> = normal.iter().filter_map(|&i| net.serves[i].map(|s| net.dist(i, s))).collect();
    let within = served.iter().filter(|&&d| d <= bound).count();
    let loads: Vec<usize> = sps.iter().map(|&s| net.load[s]).collect();
    Properties {
        nodes: live.len(),
        superpeers: sps.len(),
        share: sps.len() as f64 / live.len().max(1) as f64,
        within_bound: if normal.is_empty() { 1.0 } else { within as f64 / normal.len() as f64 },
        worst_ms: served.iter().copied().fold(0.0, f64::max),
        mean_ms: served.iter().sum::<f64>() / served.len().max(1) as f64,
        max_load: loads.iter().copied().max().unwrap_or(0),
        mean_load: mean_load(&loads),
        min_load: loads.iter().copied().min().unwrap_or(0),
        load_cv: {
            let m = mean_load(&loads);
            let var = loads.iter().map(|&l| (l as f64 - m).powi(2)).sum::<f64>() / loads.len().max(1) as f64;
            if m > 0.0 {
                var.sqrt() / m
            } else {
                0.0
            }
        },
        unserved: normal.len() - served.len(),
    }
}

/// Choose super-peers for `p` (checked with [`Params::check`] first), crash some, and
/// measure both. Places, ranks and the rules are [`crate::latency`]'s, which the
/// super-peer algorithm shares.
pub fn select(p: &Params) -> Outcome {
    let n = p.n;
    let (pos, rank, mut rng) = latency::layout(p.seed, n, p.side_ms);
    let mut net = Net::new(pos, &rank, p.bound_ms, p.capacity);
    // 1. Cover.
    let elected = net.cover(&net.by_rank());
    // 2. Share: the farthest from its nearest super-peer, until there are enough.
    let added = net.share(p.wanted());
    // 3. Join.
    let normal: Vec<usize> = (0..n).filter(|&i| !net.sp[i]).collect();
    let left = net.join_within(&normal);
    net.join_anywhere(&left);
    let before = properties(&net, p.bound_ms);
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
    orphans.sort_by_key(|&i| rank[i]);
    // The share back, from the orphans farthest from the survivors: where capacity went.
    let want = latency::wanted(p.share, n - failed);
    let (rejoined, promoted) = net.recover(&orphans, want);
    let after = properties(&net, p.bound_ms);
    Outcome { params: *p, elected, added, before, failed, orphans: orphans.len(), rejoined, promoted, after }
}

/// The requirements as roles chosen elsewhere meet them (a run of the `superpeer`
/// algorithm as processes, read from its files by `audit/superpeers.rs`): `of[i]` is
/// node `i`'s super-peer (itself for one), `None` for a node dead or without one, with
/// the places of `seed` in the default space and bound.
pub fn measure(seed: u64, of: &[Option<u32>]) -> Properties {
    let n = of.len();
    let (pos, rank, _) = latency::layout(seed, n, latency::SIDE_MS);
    let mut net = Net::new(pos, &rank, latency::BOUND_MS, latency::CAPACITY);
    for (i, s) in of.iter().enumerate() {
        net.alive[i] = s.is_some();
        if *s == Some(i as u32) {
            net.promote(i);
        }
    }
    for (i, s) in of.iter().enumerate() {
        match s.map(|s| s as usize) {
            Some(s) if s != i && s < n => net.join(i, s),
            _ => {}
        }
    }
    properties(&net, latency::BOUND_MS)
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
    fn roles_chosen_elsewhere_measure_as_the_simulator_s_own() {
        let p = Params::new(300, 4);
        let o = select(&p);
        let (pos, rank, _) = latency::layout(p.seed, p.n, p.side_ms);
        let mut net = Net::new(pos, &rank, p.bound_ms, p.capacity);
        net.cover(&net.by_rank());
        net.share(p.wanted());
        let normal: Vec<usize> = (0..p.n).filter(|&i| !net.sp[i]).collect();
        let left = net.join_within(&normal);
        net.join_anywhere(&left);
        let of: Vec<Option<u32>> = (0..p.n)
            .map(|i| if net.sp[i] { Some(i as u32) } else { net.serves[i].map(|s| s as u32) })
            .collect();
        assert_eq!(measure(p.seed, &of), o.before);
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
