//! `mutexlab superpeers`: super-peers chosen among many nodes in the simulator and
//! measured, or (`--run DIR`) the roles a real `elect` run ended with beside them.

use std::path::PathBuf;

use clap::Args;

use super::{out, to_json};
use crate::audit;
use crate::exit::{Error, Outcome, Verdict};

#[derive(Args)]
pub(super) struct SuperpeersArgs {
    /// Numbers of nodes, one row each: 1000 or 100,1000,10000.
    #[arg(long, short = 'n', default_value = "100,1000,10000", value_delimiter = ',')]
    nodes: Vec<usize>,
    /// Seed of the nodes' places, ranks and crashes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Super-peers wanted, as a share of the nodes.
    #[arg(long, default_value_t = 0.05)]
    share: f64,
    /// The most normal nodes one super-peer serves.
    #[arg(long, default_value_t = 40)]
    capacity: usize,
    /// The latency a normal node may have to its super-peer, ms (the space is 100 ms wide).
    #[arg(long, default_value_t = 40.0, value_name = "MS")]
    bound_ms: f64,
    /// The share of super-peers that crash.
    #[arg(long, default_value_t = 0.1)]
    fail: f64,
    /// Print one JSON list instead of the table.
    #[arg(long)]
    json: bool,
    /// Measure a kept `elect --algo superpeer` run from its files instead (its leader
    /// file and fault log), beside the simulator's selection for its seed and size.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["json", "nodes"])]
    run: Option<PathBuf>,
}

pub(super) fn cmd_superpeers(a: SuperpeersArgs) -> Outcome {
    use crate::sim::superpeer::{self, Params};
    if let Some(dir) = &a.run {
        return superpeers_run(dir);
    }
    let params: Vec<Params> = a
        .nodes
        .iter()
        .map(|&n| Params {
            share: a.share,
            capacity: a.capacity,
            bound_ms: a.bound_ms,
            fail: a.fail,
            ..Params::new(n, a.seed)
        })
        .collect();
    if let Some(e) = params.iter().find_map(Params::check) {
        return Err(Error::usage(e));
    }
    let rows: Vec<superpeer::Outcome> = params.iter().map(superpeer::select).collect();
    if a.json {
        out(&to_json(&superpeer::Report { schema: 1, runs: rows }));
    } else {
        let p = &params[0];
        out(&format!(
            "mutexlab superpeers: seed {}, {} % super-peers serving at most {} each, within {} ms \
             (a space {} ms wide), then {} % of them crash\n{}",
            p.seed,
            p.share * 100.0,
            p.capacity,
            p.bound_ms,
            p.side_ms,
            p.fail * 100.0,
            superpeer::table(&rows)
        ));
    }
    Ok(Verdict::Pass)
}

/// `superpeers --run DIR`: the roles a real run ended with, measured as the simulator
/// measures its own, beside the simulator's for the same seed and size.
fn superpeers_run(dir: &std::path::Path) -> Outcome {
    use crate::sim::superpeer::{self, Params};
    let file = dir.join(crate::control::LEADERS_FILE);
    if !file.exists() {
        return Err(Error::usage(format!("{} holds no {}", dir.display(), crate::control::LEADERS_FILE)));
    }
    let faults = audit::FaultLog::load(&dir.join(crate::control::FAULT_LOG))?;
    let (report, roles) = audit::superpeers::final_roles(&file, &faults)?;
    let Some(seed) = roles.seed.filter(|_| roles.of.len() >= 2) else {
        return Err(Error::usage(format!(
            "{} is not a superpeer run's leader file (no seed= or workers=)",
            file.display()
        )));
    };
    let real = superpeer::measure(seed, &roles.of);
    // The simulator's figures for the rule the run's algorithm follows.
    let (sim, rule) = if report.algorithm.as_deref() == Some("superpeer-cells") {
        (
            superpeer::measure(seed, &crate::latency::cells_select(seed, roles.of.len())),
            "the cells' rule, no faults",
        )
    } else {
        (superpeer::select(&Params::new(roles.of.len(), seed)).before, "before crashes")
    };
    let row = |what: &str, p: &superpeer::Properties| {
        format!(
            "| {what} | {} | {} ({:.1} %) | {:.1} % | {:.1} / {:.1} | {} / {:.1} / {} ({}) | {:.2} |\n",
            p.nodes,
            p.superpeers,
            p.share * 100.0,
            p.within_bound * 100.0,
            p.worst_ms,
            p.mean_ms,
            p.min_load,
            p.mean_load,
            p.max_load,
            crate::latency::CAPACITY,
            p.load_cv,
        )
    };
    out(&format!(
        "mutexlab superpeers --run: {}, seed {seed}, {} workers, audit {}\n\
         | selection | live nodes | super-peers | within bound | worst / mean ms | min / mean / max load (cap) | load spread (cv) |\n\
         |---|---:|---:|---:|---:|---:|---:|\n{}{}",
        report.algorithm.as_deref().unwrap_or("superpeer"),
        roles.of.len(),
        if report.ok { "OK".to_string() } else { format!("{} violation(s)", report.violation_count) },
        row("real run, at its end", &real),
        row(&format!("simulator, {rule}"), &sim),
    ));
    Ok(if report.ok { Verdict::Pass } else { Verdict::Fail })
}
