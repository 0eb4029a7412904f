//! `make bench-check`: states per second of mutexlab's checker against Stateright's on
//! the same fixed models, in one run (issue 18, item 6). A benchmark, not a test: it
//! prints what it measured and fails only when the checkers disagree.
//!
//! Each model is Ricart-Agrawala at a fixed size: mutexlab checks its library node
//! through the registry entry `mutexlab check` uses, Stateright checks the actor model in
//! `ra.rs`, written to have the same states. Every measurement runs in a child process
//! of its own (this program, `one …`), on one thread (two for the rows that say so: both
//! checkers breadth-first on two threads), so its peak memory is its own and one
//! checker's heap does not slow the next. States must agree, every search must
//! complete and no property may fail; otherwise the run ends with exit code 1 and says
//! which. Usage errors exit with 2.
//!
//! Speed is states per second of CPU time (user and system, of every thread of the
//! measuring process), not of wall-clock time: on a shared machine the wall clock
//! counts other programs' turns too. Wall time is printed beside it.
//!
//! `bench-check [--quick] [--repeat R]`: `--quick` checks only n = 3 with one entry (a
//! sanity run of a few seconds); `--repeat R` runs each measurement R times and keeps
//! the one with the least CPU time (the least disturbed by other programs' cache use).
//!
//! `bench-check one RUN N K [THREADS]` is one measurement, as the parent starts it; by
//! hand, THREADS (1 to 8, default 1) runs a breadth-first search on that many threads
//! (mutexlab's depth-first search has one), to see whether a second thread helps (CPU
//! time counts every thread's).

mod ra;

use std::process::{Command, ExitCode};
use std::time::Instant;

use mutexlab::check::CheckOpts;
use stateright::{Checker, Model};

/// A fixed model: nodes, entries each, and the states the anchor counted.
type FixedModel = (u32, u32, u64);

/// The fixed models.
const MODELS: [FixedModel; 3] = [(3, 1, 2_101), (3, 2, 34_845), (4, 1, 1_412_505)];

/// Which checker and search order one measurement uses.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Run {
    Mutexlab,
    MutexlabDfs,
    StaterightBfs,
    StaterightDfs,
    /// Breadth-first on two threads.
    Mutexlab2,
    StaterightBfs2,
}

impl Run {
    /// The runs each model gets: each checker breadth-first and depth-first, and
    /// breadth-first on two threads.
    const ALL: [Run; 6] = [
        Run::Mutexlab,
        Run::MutexlabDfs,
        Run::StaterightBfs,
        Run::StaterightDfs,
        Run::Mutexlab2,
        Run::StaterightBfs2,
    ];

    fn arg(self) -> &'static str {
        match self {
            Run::Mutexlab => "mutexlab",
            Run::MutexlabDfs => "mutexlab-dfs",
            Run::StaterightBfs => "stateright-bfs",
            Run::StaterightDfs => "stateright-dfs",
            Run::Mutexlab2 => "mutexlab-2",
            Run::StaterightBfs2 => "stateright-bfs-2",
        }
    }

    fn from_arg(s: &str) -> Option<Run> {
        Run::ALL.into_iter().find(|r| r.arg() == s)
    }

    fn checker(self) -> &'static str {
        match self {
            Run::Mutexlab | Run::MutexlabDfs | Run::Mutexlab2 => "mutexlab",
            Run::StaterightBfs | Run::StaterightDfs | Run::StaterightBfs2 => "Stateright 0.31",
        }
    }

    fn order(self) -> &'static str {
        match self {
            Run::Mutexlab | Run::StaterightBfs => "breadth-first",
            Run::MutexlabDfs | Run::StaterightDfs => "depth-first",
            Run::Mutexlab2 | Run::StaterightBfs2 => "breadth-first, 2 threads",
        }
    }

    /// The threads it searches on.
    fn threads(self) -> u32 {
        match self {
            Run::Mutexlab2 | Run::StaterightBfs2 => 2,
            _ => 1,
        }
    }
}

/// What one measurement found.
#[derive(Clone, Debug, PartialEq)]
struct Measure {
    states: u64,
    /// CPU time (what states per second are counted in: the machine may be shared).
    seconds: f64,
    /// Wall-clock time.
    wall: f64,
    /// Peak resident memory of the child process, in kB (0 if unknown).
    peak_kb: u64,
    /// The search explored every state.
    complete: bool,
    /// The property that failed, if one did.
    violated: Option<String>,
}

impl Measure {
    /// States per CPU second.
    fn per_second(&self) -> f64 {
        self.states as f64 / self.seconds.max(1e-9)
    }

    /// The line a child prints for its parent.
    fn line(&self) -> String {
        let v = self.violated.as_deref().unwrap_or("-").replace(' ', "_");
        format!(
            "states={} seconds={} wall={} peak_kb={} complete={} violated={v}",
            self.states, self.seconds, self.wall, self.peak_kb, self.complete
        )
    }

    fn parse(line: &str) -> Option<Measure> {
        let field = |key: &str| {
            line.split_whitespace().find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        };
        let violated = field("violated")?;
        Some(Measure {
            states: field("states")?.parse().ok()?,
            seconds: field("seconds")?.parse().ok()?,
            wall: field("wall")?.parse().ok()?,
            peak_kb: field("peak_kb")?.parse().ok()?,
            complete: field("complete")?.parse().ok()?,
            violated: (violated != "-").then(|| violated.replace('_', " ")),
        })
    }
}

/// This process's CPU time so far (user and system, every thread), in seconds, and its
/// peak resident memory in kB.
fn usage_now() -> (f64, u64) {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime) + secs(ru.ru_stime), ru.ru_maxrss.max(0) as u64)
}

/// One measurement, in this process.
fn measure(run: Run, n: u32, k: u32, threads: u32) -> Measure {
    let (cpu, _) = usage_now();
    let started = Instant::now();
    let (states, complete, violated) = search(run, n, k, threads);
    let wall = started.elapsed().as_secs_f64();
    let (cpu_after, peak_kb) = usage_now();
    Measure { states, seconds: cpu_after - cpu, wall, peak_kb, complete, violated }
}

/// One search: the states it found, whether it explored them all, what it found violated.
fn search(run: Run, n: u32, k: u32, threads: u32) -> (u64, bool, Option<String>) {
    match run {
        Run::Mutexlab | Run::MutexlabDfs | Run::Mutexlab2 => {
            let info = mutexlab::registry::lookup("ricart-agrawala").expect("a built-in algorithm");
            let mut opts = CheckOpts::new(n, k);
            opts.dfs = run == Run::MutexlabDfs;
            opts.threads = threads;
            opts.max_states = u64::MAX;
            opts.max_seconds = 3600.0;
            let r = (info.check)(&opts, &mut |_| {});
            (r.states, r.complete, r.violation.map(|v| v.property.to_string()))
        }
        Run::StaterightBfs | Run::StaterightDfs | Run::StaterightBfs2 => {
            let builder = ra::model(n as usize, k).checker().threads(threads as usize);
            let (states, discoveries) = if run != Run::StaterightDfs {
                let c = builder.spawn_bfs().join();
                (c.unique_state_count(), c.discoveries())
            } else {
                let c = builder.spawn_dfs().join();
                (c.unique_state_count(), c.discoveries())
            };
            let mut violated: Vec<&str> = discoveries.keys().copied().collect();
            violated.sort();
            // Stateright stops early only when every property has failed.
            (states as u64, true, (!violated.is_empty()).then(|| violated.join(", ")))
        }
    }
}

/// One measurement in a child process of its own.
fn measure_in_child(run: Run, n: u32, k: u32) -> Result<Measure, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let out = Command::new(me)
        .args(["one", run.arg(), &n.to_string(), &k.to_string()])
        .output()
        .map_err(|e| format!("cannot start a measurement: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match (out.status.success(), stdout.lines().last().and_then(Measure::parse)) {
        (true, Some(m)) => Ok(m),
        _ => {
            let err = String::from_utf8_lossy(&out.stderr);
            let err: String = err.trim().chars().take(300).collect();
            Err(format!("{} at n = {n}, k = {k} failed ({}): {err}", run.arg(), out.status))
        }
    }
}

/// 1234567 as "1,234,567".
fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One model's measurements: why they cannot be compared, if they cannot.
fn disagreement(n: u32, k: u32, rows: &[(Run, Measure)]) -> Option<String> {
    let model = format!("ricart-agrawala n = {n}, k = {k}");
    for (run, m) in rows {
        if let Some(p) = &m.violated {
            return Some(format!("{model}: {} {} found a violation of {p}", run.checker(), run.order()));
        }
        if !m.complete {
            return Some(format!("{model}: {} {} did not complete", run.checker(), run.order()));
        }
    }
    let first = &rows.first()?.1;
    if rows.iter().all(|(_, m)| m.states == first.states) {
        return None;
    }
    let counts: Vec<String> = rows
        .iter()
        .map(|(run, m)| format!("{} {} {}", run.checker(), run.order(), thousands(m.states)))
        .collect();
    Some(format!("STATES DISAGREE on {model}: {}", counts.join(", ")))
}

/// The table of every measurement, and the ratios, in Markdown.
fn table(results: &[(FixedModel, Vec<(Run, Measure)>)]) -> String {
    let mut s = String::from(
        "| model | checker | search | states | CPU (s) | wall (s) | states/s (CPU) | peak memory (MB) |\n\
         |---|---|---|---:|---:|---:|---:|---:|\n",
    );
    for ((n, k, _), rows) in results {
        for (run, m) in rows {
            s.push_str(&format!(
                "| RA n={n} k={k} | {} | {} | {} | {:.3} | {:.3} | {} | {:.0} |\n",
                run.checker(),
                run.order(),
                thousands(m.states),
                m.seconds,
                m.wall,
                thousands(m.per_second().round() as u64),
                m.peak_kb as f64 / 1024.0
            ));
        }
    }
    s.push_str(
        "\n| model | mutexlab ÷ Stateright, states per CPU second, both breadth-first | both depth-first | both breadth-first, 2 threads |\n\
         |---|---:|---:|---:|\n",
    );
    for ((n, k, _), rows) in results {
        let rate = |want: Run| rows.iter().find(|(r, _)| *r == want).map(|(_, m)| m.per_second());
        let ratio = |ours: Run, other: Run| match (rate(ours), rate(other)) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
            _ => "–".to_string(),
        };
        s.push_str(&format!(
            "| RA n={n} k={k} | {} | {} | {} |\n",
            ratio(Run::Mutexlab, Run::StaterightBfs),
            ratio(Run::MutexlabDfs, Run::StaterightDfs),
            ratio(Run::Mutexlab2, Run::StaterightBfs2)
        ));
    }
    s
}

fn usage(why: &str) -> ExitCode {
    eprintln!("bench-check: {why} (usage: bench-check [--quick] [--repeat R])");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("one") {
        // A child: one measurement, one line for the parent.
        let run = args.get(1).and_then(|a| Run::from_arg(a));
        let n = args.get(2).and_then(|a| a.parse().ok()).filter(|n| (1..=6).contains(n));
        let k = args.get(3).and_then(|a| a.parse().ok()).filter(|k| (1..=10).contains(k));
        let threads = match args.get(4) {
            None => Some(run.map_or(1, Run::threads)),
            Some(t) => t.parse().ok().filter(|t| (1..=8).contains(t)),
        };
        let (Some(run), Some(n), Some(k), Some(threads)) = (run, n, k, threads) else {
            return usage("one: expected a checker, n (1 to 6), k (1 to 10) and optionally threads (1 to 8)");
        };
        println!("{}", measure(run, n, k, threads).line());
        return ExitCode::SUCCESS;
    }
    let mut quick = false;
    let mut repeat = 1u32;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--repeat" => match it.next().and_then(|r| r.parse().ok()).filter(|r| (1..=20).contains(r)) {
                Some(r) => repeat = r,
                None => return usage("--repeat takes a count from 1 to 20"),
            },
            other => {
                let other: String = other.chars().take(100).collect();
                return usage(&format!("unknown argument {other:?}"));
            }
        }
    }
    let models: &[FixedModel] = if quick { &MODELS[..1] } else { &MODELS };
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for &(n, k, anchor) in models {
        let mut rows = Vec::new();
        for run in Run::ALL {
            let mut best: Option<Measure> = None;
            for _ in 0..repeat {
                let m = match measure_in_child(run, n, k) {
                    Ok(m) => m,
                    Err(e) => {
                        eprintln!("bench-check: {e}");
                        return ExitCode::FAILURE;
                    }
                };
                eprintln!(
                    "bench-check: RA n={n} k={k}, {} {}: {} states in {:.2} s of CPU ({:.2} s wall)",
                    run.checker(),
                    run.order(),
                    thousands(m.states),
                    m.seconds,
                    m.wall
                );
                if best.as_ref().is_none_or(|b| m.seconds < b.seconds) {
                    best = Some(m);
                }
            }
            rows.push((run, best.expect("at least one repeat")));
        }
        failures.extend(disagreement(n, k, &rows));
        if rows.iter().any(|(_, m)| m.states != anchor) {
            // Not a failure (a model may change on purpose), but worth knowing.
            eprintln!(
                "bench-check: note: RA n={n} k={k} no longer has the issue's {} states",
                thousands(anchor)
            );
        }
        results.push(((n, k, anchor), rows));
    }
    println!("{}", table(&results));
    println!(
        "One thread each but the rows with 2, every measurement in a process of its own; states \
         per second of CPU time (user + system, every thread's); peak memory is the measuring \
         process's."
    );
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for f in &failures {
            eprintln!("bench-check: {f}");
        }
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(states: u64) -> Measure {
        Measure { states, seconds: 1.0, wall: 1.5, peak_kb: 1024, complete: true, violated: None }
    }

    #[test]
    fn a_measure_survives_the_trip_from_child_to_parent() {
        let mut a = m(2_101);
        a.violated = Some("mutual exclusion".into());
        assert_eq!(Measure::parse(&a.line()), Some(a));
        assert_eq!(Measure::parse("states=3 seconds=x"), None);
    }

    #[test]
    fn agreeing_counts_pass_and_a_different_count_is_named() {
        let rows =
            [(Run::Mutexlab, m(2_101)), (Run::StaterightBfs, m(2_101)), (Run::StaterightDfs, m(2_101))];
        assert_eq!(disagreement(3, 1, &rows), None);
        let rows = [(Run::Mutexlab, m(2_101)), (Run::StaterightBfs, m(2_100))];
        let why = disagreement(3, 1, &rows).expect("counts differ");
        assert!(why.starts_with("STATES DISAGREE on ricart-agrawala n = 3, k = 1"), "{why}");
        assert!(
            why.contains("mutexlab breadth-first 2,101")
                && why.contains("Stateright 0.31 breadth-first 2,100")
        );
    }

    #[test]
    fn a_violation_or_a_cut_search_fails_the_bench() {
        let mut v = m(10);
        v.violated = Some("mutual exclusion".into());
        assert!(disagreement(3, 1, &[(Run::StaterightDfs, v)])
            .unwrap()
            .contains("violation of mutual exclusion"));
        let mut cut = m(10);
        cut.complete = false;
        assert!(disagreement(3, 1, &[(Run::Mutexlab, cut)]).unwrap().contains("did not complete"));
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(1_412_505), "1,412,505");
        assert_eq!(thousands(101), "101");
        assert_eq!(thousands(2_101), "2,101");
    }
}
