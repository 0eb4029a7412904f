//! `mutexlab sim`: an algorithm or a program run in the seeded simulator over a range of
//! seeds, each failure with the command line that replays it, and the first failing
//! seed's path written for stepping and `replay` (`--out`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::check::modelled;
use super::{invocation, out, shell_word, to_json};
use crate::algorithm::ServiceKind;
use crate::exit::{Error, Outcome, Verdict};
use crate::{check, output, registry};

#[derive(Args)]
pub(super) struct SimArgs {
    /// Algorithm (see `mutexlab algorithms`), of either service; with --worker-cmd,
    /// the label and service of the program (default: mutual exclusion).
    #[arg(long)]
    algo: Option<String>,
    /// Number of nodes.
    #[arg(long, short = 'n', default_value_t = 3)]
    nodes: u32,
    /// Seeds to run: A..B (B left out), A..=B, or one seed.
    #[arg(long, default_value = "0..100", value_name = "A..B", value_parser = parse_seeds)]
    seeds: std::ops::RangeInclusive<u64>,
    /// Critical-section entries per node (elections: elections per node).
    #[arg(long, short = 'k', default_value_t = 1)]
    entries: u32,
    /// Any message in flight on a channel may be delivered first (no FIFO channels).
    #[arg(long)]
    non_fifo: bool,
    /// Up to this many crashes of any node in each run, each followed by a restart.
    #[arg(long, default_value_t = 0)]
    crashes: u32,
    /// Run this program (`sh -c CMD`) as every node (labs/PROTOCOL.md).
    #[arg(long, value_name = "CMD")]
    worker_cmd: Option<String>,
    /// How long the program may take over one answer.
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    worker_timeout_ms: u64,
    /// Steps each run may take (default: 8·n·k·(n+4), at least 200000); a run that ends
    /// there still making progress is inconclusive (exit 4), one that stopped making
    /// progress half a budget before is a livelock (exit 1).
    #[arg(long, value_name = "STEPS")]
    max_steps: Option<u64>,
    /// Print one JSON object instead of the lines.
    #[arg(long)]
    json: bool,
    /// Write the first failing seed's path into this directory, new or empty:
    /// `steps.html` to step through it, and `counterexample.json`, which `mutexlab
    /// replay` runs as real processes.
    #[arg(long, value_name = "DIR", conflicts_with = "worker_cmd")]
    out: Option<PathBuf>,
}

/// `--seeds`: `A..B`, `A..=B` or `A`, as an inclusive range.
fn parse_seeds(text: &str) -> Result<std::ops::RangeInclusive<u64>, String> {
    let num =
        |t: &str| t.trim().parse::<u64>().map_err(|_| format!("`{t}` is not a seed (a whole number ≥ 0)"));
    let (from, to) = if let Some((a, b)) = text.split_once("..=") {
        (num(a)?, num(b)?)
    } else if let Some((a, b)) = text.split_once("..") {
        let (a, b) = (num(a)?, num(b)?);
        if b <= a {
            return Err(format!("{text} holds no seed (A..B leaves B out)"));
        }
        (a, b - 1)
    } else {
        let a = num(text)?;
        (a, a)
    };
    if to < from {
        return Err(format!("{text} holds no seed"));
    }
    Ok(from..=to)
}

/// A failing seed's path into `dir` (`sim --out`), walked in the checker's world set as
/// the simulator's: its seed in every node's configuration, the earliest timer first,
/// stale timers, and the run's channels and crashes. Says on stderr what it wrote.
fn write_sim_path(
    info: &registry::AlgoInfo,
    a: &SimArgs,
    e: &crate::sim::SimError,
    failure: &str,
    dir: &std::path::Path,
) {
    let opts = check::CheckOpts {
        non_fifo: a.non_fifo,
        crashes: a.crashes,
        stale_timers: true,
        timers: check::TimerOrder::Earliest,
        seed: e.seed,
        ..check::CheckOpts::new(a.nodes, a.entries)
    };
    let shown = dir.display();
    match crate::explore::write_path(info, &opts, &e.choices, failure, dir) {
        Ok(page) => eprintln!(
            "seed {}'s path written to {shown}: open {} to step through it; `{} replay {shown}` runs it as real processes",
            e.seed,
            page.display(),
            invocation()
        ),
        Err(why) => eprintln!("mutexlab: seed {}'s path not written to {shown}: {why}", e.seed),
    }
}

pub(super) fn cmd_sim(a: SimArgs) -> Outcome {
    let reg = registry::registry();
    let info = match (&a.worker_cmd, &a.algo) {
        (None, None) => return Err(Error::usage("sim needs --algo NAME or --worker-cmd CMD")),
        (None, Some(name)) => reg.lookup(name).map_err(Error::usage)?,
        (Some(_), label) => {
            let label = label.as_deref().unwrap_or("external");
            let service = reg.get(label).map_or(ServiceKind::Mutex, |l| l.service);
            reg.external(label, service)
        }
    };
    modelled(info)?;
    if a.nodes == 0 || a.nodes > crate::algorithm::MAX_WORKERS {
        return Err(Error::usage(format!("-n must be 1 to {}", crate::algorithm::MAX_WORKERS)));
    }
    if a.entries == 0 {
        return Err(Error::usage("-k must be at least 1"));
    }
    let program = a.worker_cmd.as_ref().map(|command| crate::algorithm::Spawn {
        command: command.clone(),
        timeout: Duration::from_millis(a.worker_timeout_ms),
    });
    // Every setting, so that a replay line repeats the run exactly, with the program
    // that ran it (an outside crate's registry is its own binary's).
    let mut settings = format!("{} sim", invocation());
    match &a.worker_cmd {
        Some(cmd) => {
            if let Some(label) = &a.algo {
                settings += &format!(" --algo {}", shell_word(label));
            }
            settings += &format!(" --worker-cmd {}", shell_word(cmd));
            if a.worker_timeout_ms != 5000 {
                settings += &format!(" --worker-timeout-ms {}", a.worker_timeout_ms);
            }
        }
        None => settings += &format!(" --algo {}", info.name),
    }
    settings += &format!(" -n {} -k {}", a.nodes, a.entries);
    if a.non_fifo {
        settings += " --non-fifo";
    }
    if a.crashes > 0 {
        settings += &format!(" --crashes {}", a.crashes);
    }
    if a.max_steps == Some(0) {
        return Err(Error::usage("--max-steps must be at least 1"));
    }
    let max_steps = a.max_steps.unwrap_or_else(|| crate::sim::step_budget(a.nodes, a.entries));
    if let Some(m) = a.max_steps {
        settings += &format!(" --max-steps {m}");
    }
    if let Some(dir) = &a.out {
        crate::sim::record::new_or_empty(dir).map_err(Error::usage)?;
    }
    let mut written = false;
    // Failures kept for --json: the first few hundred; the rest are counted.
    const KEPT: usize = 200;
    let (mut passed, mut failed, mut kept) = (0u64, 0u64, Vec::new());
    let (mut inconclusive, mut unsure) = (0u64, Vec::new());
    for seed in a.seeds.clone() {
        let opts = crate::sim::SimOpts {
            n: a.nodes,
            seed,
            entries: a.entries,
            non_fifo: a.non_fifo,
            crashes: a.crashes,
            program: program.clone(),
            max_steps: Some(max_steps),
        };
        match (info.sim)(&opts) {
            Ok(_) => passed += 1,
            // The budget ran out with the run still going: no answer, and no replay.
            Err(e) if e.failure.inconclusive() => {
                inconclusive += 1;
                if !a.json {
                    let failure = e.failure.to_string();
                    let why = failure.split("; still waiting").next().unwrap_or_default();
                    out(&format!("seed {seed}: {why}; --max-steps raises the budget\n"));
                } else if unsure.len() < KEPT {
                    unsure.push(seed);
                }
            }
            Err(e) => {
                failed += 1;
                let failure = e.failure.to_string();
                let failure = failure.lines().next().unwrap_or_default();
                let failure = crate::text::clip_to(failure, 300);
                let replay = format!("{settings} --seeds {seed}");
                if let (Some(dir), false) = (&a.out, written) {
                    written = true;
                    write_sim_path(info, &a, &e, &failure, dir);
                }
                if !a.json {
                    out(&format!("seed {seed}: step {}: {failure}\n  replay: {replay}\n", e.step));
                } else if kept.len() < KEPT {
                    kept.push(output::SimFailure {
                        seed,
                        step: e.step,
                        failure: failure.into_owned(),
                        replay,
                    });
                }
            }
        }
    }
    if let (Some(dir), false) = (&a.out, written) {
        eprintln!("no seed failed: nothing written to {}", dir.display());
    }
    let (from, to) = (*a.seeds.start(), *a.seeds.end());
    if a.json {
        out(&to_json(&output::SimOutput {
            schema: output::SIM_SCHEMA,
            algorithm: info.name.to_string(),
            n: a.nodes,
            entries: a.entries,
            seeds: output::SeedRange { from, to },
            non_fifo: a.non_fifo,
            crashes: a.crashes,
            worker_cmd: a.worker_cmd.clone(),
            passed,
            failed,
            failures: kept,
            inconclusive,
            inconclusive_seeds: unsure,
            max_steps,
        }));
    } else {
        let seeds = if from == to { format!("seed {from}") } else { format!("seeds {from}..={to}") };
        let unsure = if inconclusive > 0 {
            format!(", {inconclusive} inconclusive (out of the {max_steps}-step budget)")
        } else {
            String::new()
        };
        out(&format!("{settings}: {seeds}: {passed} passed, {failed} failed{unsure}\n"));
    }
    Ok(if failed > 0 {
        Verdict::Fail
    } else if inconclusive > 0 {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    })
}
