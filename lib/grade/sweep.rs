//! Simulator sweeps ([`Sweep`]): every size and seed in the simulator, each failure
//! named by its seed with the command that replays it.

use std::ops::Range;

use super::{Check, Ctx};
use crate::algorithm::{Node, PeerId, Spawn};
use crate::lab::{is_unwritten, quietly};
use crate::sim::{Sim, SimError, SimReport, SimService};

/// A simulator sweep: sizes × seeds, each run until every node has entered `entries`
/// times (or, for [`Sweep::elections`], until all agree on a leader); any overlap,
/// split brain, deadlock or unserved request fails it.
pub struct Sweep {
    sizes: Vec<u32>,
    seeds: Range<u64>,
    entries: u32,
    non_fifo: bool,
    crashes: u32,
    /// Which nodes may crash, given the node and the size (all, unless narrowed).
    crashable: Option<fn(PeerId, u32) -> bool>,
    /// Elections: no entries to count; a run ends once all agree on a leader.
    elect: bool,
    check: Option<Check>,
}

impl Sweep {
    /// Every size in `sizes` with every seed in `seeds`, `entries` entries per node.
    pub fn new(sizes: &[u32], seeds: Range<u64>, entries: u32) -> Sweep {
        Sweep {
            sizes: sizes.to_vec(),
            seeds,
            entries,
            non_fifo: false,
            crashes: 0,
            crashable: None,
            elect: false,
            check: None,
        }
    }

    /// An election sweep: every node calls one election, and each run must end with
    /// every live node naming one live leader, no term naming two leaders and no node's
    /// term going back. Which leader is right is for [`Sweep::check`] (`report.leader`).
    pub fn elections(sizes: &[u32], seeds: Range<u64>) -> Sweep {
        Sweep { elect: true, ..Sweep::new(sizes, seeds, 1) }
    }

    /// Let messages on a channel overtake each other.
    pub fn non_fifo(mut self) -> Sweep {
        self.non_fifo = true;
        self
    }

    /// Let up to `count` nodes crash and restart during each run.
    pub fn crashes(mut self, count: u32) -> Sweep {
        self.crashes = count;
        self
    }

    /// Let up to `count` crashes and restarts happen during each run, each of a node
    /// `eligible(node, n)` allows: `|p, n| p.0 + 1 == n` crashes only the highest id.
    pub fn crashes_of(mut self, count: u32, eligible: fn(PeerId, u32) -> bool) -> Sweep {
        self.crashes = count;
        self.crashable = Some(eligible);
        self
    }

    /// Check each successful run's report too (message counts, say); an `Err` is the
    /// reason the test fails.
    pub fn check(mut self, f: impl Fn(&SimReport) -> Result<(), String> + 'static) -> Sweep {
        self.check = Some(Box::new(f));
        self
    }

    pub(super) fn detail(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(u32::to_string).collect();
        let mut d = format!("{} seeds, n={}", self.seeds.end - self.seeds.start, sizes.join(","));
        if self.non_fifo {
            d.push_str(", no FIFO");
        }
        if self.crashes > 0 {
            d.push_str(", crashes");
        }
        if self.elect {
            d.push_str(", elect");
        }
        d
    }
}

/// A simulator of `n` nodes: a program's nodes (`--worker-cmd`) run it.
pub(super) fn simulator<N: Node<Service: SimService>>(ctx: &Ctx, n: u32, seed: u64) -> Sim<N> {
    let program = ctx.external.as_ref().and_then(|e| {
        e.command.as_ref().map(|command| Spawn { command: command.clone(), timeout: e.timeout })
    });
    Sim::with_config(n, seed, |cfg| cfg.program = program.clone())
}

pub(super) fn run_sweep<N: Node<Service: SimService>>(sw: &Sweep, ctx: &Ctx, id: &str) -> Result<(), String> {
    let sizes: Vec<u32> = match ctx.n {
        Some(n) => vec![n],
        None => sw.sizes.clone(),
    };
    let seeds = match ctx.seed {
        Some(s) => s..s + 1,
        None => sw.seeds.clone(),
    };
    for &n in &sizes {
        for seed in seeds.clone() {
            let replay = format!("replay: {} {id} --n {n} --seed {seed}", ctx.replay);
            let mut sim = simulator::<N>(ctx, n, seed).stale_timers(true);
            if sw.non_fifo {
                sim = sim.non_fifo();
            }
            if sw.crashes > 0 {
                let eligible = sw.crashable.unwrap_or(|_, _| true);
                sim = sim.crashes(sw.crashes, |p: PeerId| eligible(p, n));
            }
            let report = match quietly(|| sim.run(sw.entries)) {
                Err(panic) if is_unwritten(&panic) => return Err(panic),
                Err(panic) => return Err(format!("seed {seed} (n = {n}): the node {panic}\n{replay}")),
                Ok(Err(e)) => return Err(sim_failure(&e, ctx.seed.is_some(), &replay)),
                Ok(Ok(r)) => r,
            };
            let want = u64::from(n) * u64::from(sw.entries);
            if !sw.elect && report.entries < want {
                return Err(format!("seed {seed} (n = {n}): {} entries of {want}\n{replay}", report.entries));
            }
            if let Some(check) = &sw.check {
                check(&report).map_err(|why| format!("seed {seed} (n = {n}): {why}\n{replay}"))?;
            }
        }
    }
    Ok(())
}

/// A failed simulator run: the failure, the replay command, and (when replaying one
/// seed) the last events that led to it.
fn sim_failure(e: &SimError, full: bool, replay: &str) -> String {
    let mut text = format!("seed {} (n = {}), step {}: {}\n", e.seed, e.n, e.step, e.failure);
    if full {
        text.push_str("last events:\n");
        for line in &e.trace {
            text.push_str(&format!("  {line}\n"));
        }
    } else {
        text.push_str(&format!("{replay} (shows the last events)"));
    }
    text
}
