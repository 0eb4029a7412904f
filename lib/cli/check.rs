//! `mutexlab check` and `mutexlab explore`: the checker's flags, read into its options
//! within bounds, the search run and its counterexample written, or the same world
//! served to step through in a browser. `sim` and `replay` share the refusal of an
//! algorithm the world does not model.

use std::path::PathBuf;

use clap::Args;

use super::to_json;
use super::{invocation, out};
use crate::exit::{Error, Kind, Outcome, Verdict};
use crate::{check, registry};

#[derive(Args)]
pub(super) struct CheckArgs {
    /// Algorithm (see `mutexlab algorithms`), of either service.
    #[arg(long)]
    algo: String,
    /// Number of nodes.
    #[arg(long, short = 'n', default_value_t = 3, allow_negative_numbers = true)]
    nodes: i64,
    /// Critical-section entries per node (elections: elections per node).
    #[arg(long, short = 'k', default_value_t = 1, allow_negative_numbers = true)]
    entries: i64,
    /// Stop after this many distinct states.
    #[arg(long, default_value_t = 5_000_000, allow_negative_numbers = true)]
    max_states: i64,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 60.0, allow_negative_numbers = true)]
    max_seconds: f64,
    /// Stop when the search holds this many MB (default: 4/5 of the memory available
    /// at the start); what it covered is reported, as for every other limit.
    #[arg(long, value_name = "MB", allow_negative_numbers = true)]
    max_memory: Option<i64>,
    /// Any message in flight on a channel may be delivered first (no FIFO channels).
    #[arg(long)]
    non_fifo: bool,
    /// Up to this many crashes, of any node, each followed by a restart.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    crashes: i64,
    /// A reset or cancelled timer may still fire once, as the driver contract allows.
    #[arg(long)]
    stale_timers: bool,
    /// Depth-first instead of breadth-first: little memory, but a counterexample need
    /// not be the shortest.
    #[arg(long)]
    dfs: bool,
    /// Expand no state this many steps from the start.
    #[arg(long, allow_negative_numbers = true)]
    max_depth: Option<i64>,
    /// Threads for breadth-first search (depth-first runs on one).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    threads: i64,
    /// Which armed timer may fire next: `any` (no timing assumption) or `earliest`.
    #[arg(long, value_enum, default_value = "any")]
    timers: TimersArg,
    /// Up to this many messages in flight may be lost, any one of them.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    lose: i64,
    /// Let nodes forget fields no later step reads (fewer states, same verdicts).
    #[arg(long)]
    forget: bool,
    /// The seed in every node's configuration, for algorithms that draw from it (voting's
    /// back-off); a failing `sim` seed's counterexample carries its seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Timers fire at most T times on any way, or `none` for no bound (default: 1 for
    /// algorithms whose timers can fire without end, such as centralized-bully and
    /// bully; else none). Without a bound their search never ends.
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    timer_fires: Option<String>,
    /// Expand no state where a node's clock, ticket or term is above B, or `none` for no
    /// bound (default: the algorithm's, for those whose counters make the space too big
    /// to finish, such as lamport; else none). States past it are judged, not expanded.
    #[arg(long, value_name = "B", allow_hyphen_values = true)]
    counter_bound: Option<String>,
    /// After a safety search that finds nothing, look for a request never served round
    /// a cycle of states that takes every delivery, timer and call that stays enabled
    /// (weak fairness): `every request served (fair cycles)`, a lasso if not. Its own
    /// pass without a timer budget (within --counter-bound), keeping every state and
    /// edge; mutual exclusion only. A pass cut short that found none decides nothing.
    #[arg(long)]
    liveness: bool,
    /// Check that while a node waits, the others enter at most B times (default: the
    /// bound the algorithm promises, if it promises one). The count joins the state.
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    bypass_bound: Option<i64>,
    /// Count a state and its renamed twins once, for an algorithm whose nodes are
    /// interchangeable up to renaming (`none`, `centralized`: not the coordinator); the
    /// report gives the states up to symmetry and the full count they stand for.
    #[arg(long)]
    symmetry: bool,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    json: bool,
    /// On a violation, write the counterexample into this directory, new or empty: a run
    /// directory that `mutexlab report`, `audit` and `trace` read, and
    /// `counterexample.json`, which `mutexlab replay` runs as real processes.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub(super) struct ExploreArgs {
    #[command(flatten)]
    check: CheckArgs,
    /// The port on 127.0.0.1 (default: a free one; the address is printed).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

/// Which armed timer `check` may fire next (`--timers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TimersArg {
    /// Any armed timer: no timing assumption, a timeout may come early.
    Any,
    /// Only the earliest, as the simulator.
    Earliest,
}

/// The check `a` asks for, its numbers within bounds (before the registry entry's
/// promises are added). [`check::CheckOpts::flags`] writes the knobs back as these flags.
/// A flag that takes `what` (a number from `lo` to `hi`), or `none`, as if not given.
fn count_or_none(
    flag: &str,
    what: &str,
    text: Option<&str>,
    (lo, hi): (i64, i64),
) -> Result<Option<u64>, Error> {
    let Some(text) = text.filter(|t| *t != "none") else {
        return Ok(None);
    };
    match text.parse::<i64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(Some(v as u64)),
        Ok(v) => Err(Error::usage(format!("{flag} must be between {lo} and {hi}, not {v}"))),
        Err(_) => Err(Error::usage(format!(
            "{flag} takes {what} or `none`, not {:?}",
            crate::text::clip_to(text, 40)
        ))),
    }
}

fn check_opts(a: &CheckArgs) -> Result<check::CheckOpts, Error> {
    let within = |name: &str, v: i64, lo: i64, hi: i64| {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(Error::usage(format!("{name} must be between {lo} and {hi}, not {v}")))
        }
    };
    let n = within("-n", a.nodes, 1, check::MAX_NODES.into())? as u32;
    let entries = within("-k", a.entries, 1, check::MAX_ENTRIES.into())? as u32;
    let max_states = within("--max-states", a.max_states, 1, i64::MAX)? as u64;
    let crashes = within("--crashes", a.crashes, 0, 100)? as u32;
    let max_depth =
        a.max_depth.map(|d| within("--max-depth", d, 0, u32::MAX as i64)).transpose()?.map(|d| d as u32);
    let threads = within("--threads", a.threads, 1, 256)? as u32;
    let max_memory = a
        .max_memory
        .map(|m| within("--max-memory", m, 1, 1 << 30))
        .transpose()?
        .map(|m| m as u64 * 1_000_000);
    if a.dfs && threads > 1 {
        return Err(Error::usage("--threads is for breadth-first search; --dfs runs on one thread"));
    }
    let bypass_bound = match a.bypass_bound {
        Some(b) => Some(within("--bypass-bound", b, 0, 254)? as u32),
        None => None,
    };
    if !a.max_seconds.is_finite() || a.max_seconds <= 0.0 || a.max_seconds > 86_400.0 {
        return Err(Error::usage(format!(
            "--max-seconds must be above 0 and at most 86400, not {}",
            crate::text::short_float(a.max_seconds)
        )));
    }
    Ok(check::CheckOpts {
        n,
        entries,
        max_states,
        max_seconds: a.max_seconds,
        max_memory,
        non_fifo: a.non_fifo,
        crashes,
        stale_timers: a.stale_timers,
        dfs: a.dfs,
        max_depth,
        threads,
        bypass_bound,
        highest_wins: false,
        from: Vec::new(),
        timers: match a.timers {
            TimersArg::Any => check::TimerOrder::Any,
            TimersArg::Earliest => check::TimerOrder::Earliest,
        },
        lose: within("--lose", a.lose, 0, 100)? as u32,
        timer_fires: count_or_none("--timer-fires", "a count", a.timer_fires.as_deref(), (0, 1000))?
            .map(|t| t as u32),
        forget: a.forget,
        liveness: a.liveness,
        seed: a.seed,
        counter_bound: count_or_none(
            "--counter-bound",
            "a number",
            a.counter_bound.as_deref(),
            (1, 1_000_000),
        )?,
    })
}

/// Refuse an algorithm whose exclusion is the runtime's flock(2), which the world does
/// not model: a violation found would blame it for nothing, and no counterexample of
/// it can be replayed.
pub(super) fn modelled(info: &registry::AlgoInfo) -> Result<(), Error> {
    if info.kernel_lock {
        return Err(Error::usage(format!(
            "{} relies on the runtime's kernel lock, which check does not model",
            info.name
        )));
    }
    Ok(())
}

/// The check `--symmetry` asks of `info` at `n` nodes: its check up to symmetry, or a
/// usage error for an algorithm that declares no symmetry or too many nodes.
fn symmetric_check(info: &registry::AlgoInfo, n: u32) -> Result<registry::CheckFn, Error> {
    let Some(check) = info.symmetric else {
        return Err(Error::usage(format!(
            "--symmetry: {} does not declare its nodes interchangeable up to renaming (those that do: {})",
            info.name,
            registry::registry()
                .iter()
                .filter(|a| a.symmetric.is_some())
                .map(|a| a.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    if n > check::MAX_SYMMETRY_NODES {
        return Err(Error::usage(format!(
            "--symmetry takes at most {} nodes (every renaming is tried at every state), not {n}",
            check::MAX_SYMMETRY_NODES
        )));
    }
    Ok(check)
}

pub(super) fn cmd_check(a: CheckArgs) -> Outcome {
    let info = registry::lookup(&a.algo).map_err(Error::usage)?;
    modelled(info)?;
    let opts = check_opts(&a)?;
    let run_check = if a.symmetry { symmetric_check(info, opts.n)? } else { info.check };
    if a.liveness && info.service != crate::algorithm::ServiceKind::Mutex {
        return Err(Error::usage(format!(
            "--liveness is for mutual exclusion; {} is an election",
            info.name
        )));
    }
    if let Some(dir) = &a.out {
        crate::sim::record::new_or_empty(dir).map_err(Error::usage)?;
    }
    // The entry's promises (its bypass bound, the highest live id) are checked too.
    let mut opts = info.check_opts(opts);
    if a.timer_fires.is_none() {
        opts.timer_fires = info.timer_fires;
    }
    if a.counter_bound.is_none() {
        opts.counter_bound = info.default_counter_bound(opts.n, opts.entries);
    }
    // SIGINT or SIGTERM stops the search where it is (it polls for it), and what it
    // covered is reported within the grace.
    let _hook = crate::interrupt::Hook::new(|| {}, None);
    // A progress line only for a person watching: a pipe or a test sees none.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = |p: &check::Progress| {
        if tty {
            eprint!(
                "\rcheck: {} states, {:.0} states/s, depth {}, queue {}   ",
                p.states,
                p.states as f64 / p.seconds.max(1e-9),
                p.depth,
                p.queue
            );
        }
    };
    let r = run_check(&opts, &mut progress);
    if tty && r.seconds >= 1.0 {
        eprintln!();
    }
    out(&if a.json {
        to_json(&crate::output::CheckOutput { schema: crate::output::CHECK_SCHEMA, report: &r })
    } else {
        r.text(info.name)
    });
    if let Some(dir) = &a.out {
        let shown = dir.display();
        match &r.violation {
            Some(v) => {
                v.run.write(dir, info.name).map_err(|e| Error::failed(e.to_string()))?;
                let file = crate::counterexample::CounterexampleFile::new(info.name, &opts, v);
                file.write(dir).map_err(Error::failed)?;
                let page = crate::explore::write_lasso_page(
                    info,
                    &opts,
                    &v.choices,
                    v.cycle_start.map(|c| (c, v.property, v.failure.as_str())),
                    dir,
                )
                .map_err(Error::failed)?;
                let me = invocation();
                eprintln!("counterexample written to {shown}: open {} to step through it, `{me} replay {shown}` runs it as real processes, `{me} report {shown}` draws it, `{me} audit {shown}` judges its files, `{me} trace {shown}` lists its messages", page.display());
            }
            None => eprintln!("no counterexample: nothing written to {shown}"),
        }
    }
    // A violation stands however the search ended; without one, a search that did not
    // cover every state has no verdict (exit 4), or was interrupted (130).
    // A liveness pass cut short without a lasso decides nothing either.
    let undecided = r.liveness.as_ref().and_then(|l| l.cut_short.as_ref());
    Ok(match (&r.violation, r.cut_short.as_ref().or(undecided)) {
        (Some(_), _) => Verdict::Fail,
        (None, None) => Verdict::Pass,
        (None, Some(_)) if crate::interrupt::requested() => {
            return Err(Error::new(
                Kind::Interrupted,
                "interrupted: the search stopped; the report above covers what it reached",
            ))
        }
        (None, Some(_)) => Verdict::Inconclusive,
    })
}

pub(super) fn cmd_explore(a: ExploreArgs) -> Outcome {
    let info = registry::lookup(&a.check.algo).map_err(Error::usage)?;
    modelled(info)?;
    if a.check.symmetry {
        return Err(Error::usage("--symmetry is for check; explore steps through real states"));
    }
    let mut opts = info.check_opts(check_opts(&a.check)?);
    if a.check.timer_fires.is_none() {
        opts.timer_fires = info.timer_fires;
    }
    if a.check.counter_bound.is_none() {
        opts.counter_bound = info.default_counter_bound(opts.n, opts.entries);
    }
    let save_to = a.check.out.clone().unwrap_or_else(|| PathBuf::from("mutexlab-explored"));
    let mut explorer = crate::explore::Explorer::new(info, opts, save_to.clone()).map_err(Error::failed)?;
    let json = a.check.json;
    explorer
        .serve(a.port, &mut |url| {
            if json {
                out(&format!("{}\n", serde_json::json!({ "url": url, "saves": save_to })));
            } else {
                out(&format!(
                    "mutexlab explore: {} -n {}: open {url}\n  saved paths go to {}/path-N; Ctrl-C ends it\n",
                    info.name,
                    a.check.nodes,
                    save_to.display()
                ));
            }
        })
        .map_err(Error::failed)?;
    Err(Error::new(Kind::Interrupted, "interrupted: the explorer stopped"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Cmd};
    use clap::Parser;

    /// `check`'s options from its command line.
    fn parsed(words: &[String]) -> check::CheckOpts {
        let line = ["mutexlab", "check", "--algo", "none"]
            .iter()
            .map(|w| w.to_string())
            .chain(words.iter().cloned());
        match Cli::try_parse_from(line).unwrap_or_else(|e| panic!("{words:?}: {e}")).cmd {
            Cmd::Check(a) => check_opts(&a).unwrap(),
            _ => unreachable!("a check"),
        }
    }

    #[test]
    fn a_checks_flags_read_back_as_its_options() {
        let plain = check::CheckOpts::new(3, 2);
        let size = |o: &check::CheckOpts| {
            vec!["-n".to_string(), o.n.to_string(), "-k".into(), o.entries.to_string()]
        };
        assert_eq!(plain.flags(), Vec::<String>::new());
        assert_eq!(parsed(&size(&plain)), plain);
        let every = check::CheckOpts {
            non_fifo: true,
            crashes: 2,
            stale_timers: true,
            timers: check::TimerOrder::Earliest,
            lose: 1,
            timer_fires: Some(2),
            counter_bound: Some(12),
            forget: true,
            bypass_bound: Some(3),
            max_depth: Some(7),
            threads: 2,
            seed: 9,
            ..plain.clone()
        };
        assert_eq!(parsed(&[size(&every), every.flags()].concat()), every);
        let dfs = check::CheckOpts { dfs: true, max_depth: Some(0), ..plain };
        assert_eq!(parsed(&[size(&dfs), dfs.flags()].concat()), dfs);
    }

    #[test]
    fn symmetry_is_refused_in_one_line_for_an_algorithm_that_does_not_declare_it() {
        let entry = |name| registry::lookup(name).unwrap();
        // Ricart-Agrawala breaks ties by id: renaming two nodes changes who goes first.
        for name in ["ricart-agrawala", "lamport", "token-ring-ft", "bully"] {
            let e = symmetric_check(entry(name), 3).expect_err(name);
            assert_eq!(e.kind(), Kind::Usage);
            let line = e.line().unwrap();
            assert!(!line.contains('\n'));
            assert!(
                line.starts_with(&format!("--symmetry: {name} does not declare"))
                    && line.contains("centralized"),
                "{line}"
            );
        }
        assert!(symmetric_check(entry("centralized"), 3).is_ok());
        for name in ["token-ring", "suzuki-kasami", "ra-token"] {
            assert!(symmetric_check(entry(name), 3).is_ok(), "{name}: its rotations");
        }
        assert!(symmetric_check(entry("none"), 6).is_ok());
        let e = symmetric_check(entry("centralized"), 7).unwrap_err();
        assert_eq!(
            (e.kind(), e.line()),
            (
                Kind::Usage,
                Some("--symmetry takes at most 6 nodes (every renaming is tried at every state), not 7")
            )
        );
    }
}
