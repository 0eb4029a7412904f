//! `mutexlab bench`: message latency and algorithm throughput on this machine.
//!
//! First a raw ping-pong between two processes over a Unix socket gives the one-way
//! message time T. Then each algorithm runs with no think time and an empty critical
//! section for several N, and its throughput is printed as CS/s and as a ratio to the
//! message-bound ideal 1/(2T): under saturation every handoff of the centralized
//! coordinator needs at least two messages in a row (RELEASE, then GRANT). Everything is
//! measured in the same run, so the ratios compare like with like.
//!
//! That ideal ignores the resource: `flock`, with no message at all, reaches half of it.
//! So the bench also measures C, the resource's own cost per entry (`none` with one
//! worker, no think time: 1/C is its throughput), and gives each algorithm's throughput
//! as a share of the limit 1/(C + kT), k the sequential messages per handoff: the mean
//! hops of a short traced run of the same algorithm and N ([`crate::handoff`]; the
//! throughput run itself is not traced, which would slow it), or the number the notes
//! claim where the trace gives none (`k_from` says which).
//!
//! By default the whole benchmark (ping-pong, supervisors, workers) runs on one CPU. On a
//! virtual machine a message that wakes a process on an idle second CPU costs 5 to 25 µs
//! depending on how deeply that CPU slept, so unpinned figures swing by a factor of three
//! from one run to the next; on one CPU they hold still. `--all-cpus` lets the kernel
//! spread the processes instead, to see what a second CPU buys on this machine.
//!
//! Those limits are computed from T and C measured once, at the start; the **baseline**
//! is measured beside each run instead. `mutexlab-baseline` (bench/baseline/, built with
//! this tool) is the cheapest token ring, centralized lock and Ricart-Agrawala the machine allows: N
//! processes, Unix socket pairs, epoll, frames of mutexlab's size, the same file work per
//! entry, nothing else. [`baseline`] runs it and mutexlab in turn (A, B, B, A, …) for
//! several rounds and gives each of mutexlab's figures as a share of the baseline run
//! beside it, in CPU time per entry (this process's and its children's rusage) and in
//! wall time per entry, as the median and range over rounds, with the load average
//! before and after. A share above 100 % (mutexlab cheaper than the bare program) can
//! only be a measuring error, and is reported as one ([`Share`]), never as a result.

mod baseline;
mod recording;

use std::path::Path;

use crate::handoff;
use crate::registry::Registry;
use crate::supervisor::probe::ping_pong;
use crate::supervisor::{self, RunOpts};

use baseline::baseline_lines;
pub use baseline::{
    baseline, baseline_program, Baseline, BaselinePair, Load, Share, ShareSpread, Side, Spread,
    BASELINE_ROUNDS,
};
use recording::recording;
pub use recording::{Recording, RecordingWay, RECORDING_ROUNDS};

/// The options of one benchmark run: no faults, a fresh temp dir, no progress bar.
pub(super) fn opts(exe: &Path, reg: &Registry, algo: &str, n: u32, entries: u64, think_ms: f64) -> RunOpts {
    RunOpts {
        workers: n,
        entries,
        cs_ms: 0.0,
        think_ms,
        stall_ms: 10_000,
        // The bench names its algorithms in this file; `reg` is the command line's registry.
        ..RunOpts::new(reg.get(algo).unwrap_or_else(|| panic!("{algo} is not registered")), exe.to_path_buf())
    }
}

/// A mutual-exclusion run: its report, and the part only such a run has.
pub(super) fn mutex_run(
    opts: &RunOpts,
    reg: &Registry,
) -> Result<(supervisor::Report, supervisor::MutexPart), supervisor::RunError> {
    let r = supervisor::run(opts, reg)?;
    let m = r.mutex().cloned().ok_or_else(|| {
        supervisor::RunError::Failed(format!(
            "{} ran as an election, not as mutual exclusion",
            opts.algo.name
        ))
    })?;
    Ok((r, m))
}

/// The theory column: the expected messages per entry, or its range.
fn theory(r: &supervisor::Report) -> String {
    match r.theory() {
        Some(t) if t.per_entry_min == t.per_entry_max => format!("{:.2}", t.per_entry_min),
        Some(t) if t.per_entry_max.is_finite() => format!("{:.1}-{:.1}", t.per_entry_min, t.per_entry_max),
        Some(t) => format!(">={:.2}", t.per_entry_min),
        None => "-".into(),
    }
}

/// Keep this process, and every process it starts from now on, on its first allowed CPU.
/// Returns that CPU.
fn pin_to_one_cpu() -> anyhow::Result<usize> {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    let me = nix::unistd::Pid::from_raw(0);
    let allowed = sched_getaffinity(me)?;
    let first = (0..CpuSet::count()).find(|&c| allowed.is_set(c).unwrap_or(false)).unwrap_or(0);
    let mut one = CpuSet::new();
    one.set(first)?;
    sched_setaffinity(me, &one)?;
    Ok(first)
}

/// What `mutexlab bench --json` prints.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct BenchReport {
    /// Version of this layout.
    pub schema: u32,
    /// Whether the processes could use every CPU (else all ran on `cpu`).
    pub all_cpus: bool,
    /// The one CPU every process ran on, unless `all_cpus`.
    pub cpu: Option<usize>,
    /// The one-way message time T, in µs.
    pub message_time_us: f64,
    /// The ping-pong round trips T was measured over.
    pub round_trips: u32,
    /// The message-bound ideal 1/(2T), in CS/s.
    pub ideal_cs_per_s: f64,
    /// C: the resource's own cost per entry (one worker of `none`, no think time), in µs.
    pub resource_cost_us: f64,
    /// Empty sections, no think time.
    pub saturation: Vec<BenchRow>,
    /// Empty sections, mean think time `light_think_ms`.
    pub light: Vec<BenchRow>,
    /// The mean think time of the `light` runs, in ms.
    pub light_think_ms: f64,
    /// What recording the message trace costs a saturated run.
    pub recording: Recording,
    /// mutexlab's runs beside the baseline program's, interleaved.
    pub baseline: Baseline,
}

/// User and system CPU time of this process and its reaped children, in seconds.
pub(super) fn cpu_seconds() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    let secs = |who| {
        getrusage(who).map_or(0.0, |u| {
            let (a, b) = (u.user_time(), u.system_time());
            (a.tv_sec() + b.tv_sec()) as f64 + (a.tv_usec() + b.tv_usec()) as f64 * 1e-6
        })
    };
    secs(UsageWho::RUSAGE_SELF) + secs(UsageWho::RUSAGE_CHILDREN)
}

/// The median of `v` (0 if empty).
pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// One benchmark run.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct BenchRow {
    /// The algorithm's name.
    pub algorithm: String,
    /// Worker processes in the run.
    pub workers: u32,
    /// Why the run could not be made at all; the numbers are then zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run was clean: the audit found nothing.
    pub ok: bool,
    /// Critical sections completed.
    pub entries: u64,
    /// Critical sections per second.
    pub throughput_per_s: f64,
    /// Messages sent per critical section.
    pub messages_per_entry: f64,
    /// What the notes say it should cost, if the algorithm has a theory.
    pub theory: Option<crate::algos::Theory>,
    /// Jain's fairness index over entries per worker (1 = perfectly even).
    pub jain: f64,
    /// Throughput over the ideal 1/(2T), in percent.
    pub vs_ideal_percent: f64,
    /// k: sequential messages per handoff; `null` if neither a trace nor a claim gave one.
    pub k: Option<f64>,
    /// Where k comes from: `trace` (the mean hops of a traced run), `claim` (the notes'
    /// number), or `none`.
    pub k_from: &'static str,
    /// The limit 1/(C + kT), in CS/s; 0 without k.
    pub limit_cs_per_s: f64,
    /// Throughput over that limit, in percent; `null` without k, or when it came out
    /// above 100 % (see `limit_measuring_error`).
    pub vs_limit_percent: Option<f64>,
    /// The share of the limit came out above 100 %: T and C, measured once at the
    /// start, do not hold for this run, so the share is a measuring error, not a result.
    pub limit_measuring_error: bool,
}

/// k for `algo` with `n` workers, and where it came from: the mean hops of a short
/// traced saturated run, else the leading number of the notes' claim.
fn hops(exe: &Path, reg: &Registry, algo: &str, n: u32, entries: u64) -> (Option<f64>, &'static str) {
    let measured = (|| {
        let tmp = tempfile::tempdir().ok()?;
        let dir = tmp.path().join("run");
        let o = RunOpts {
            trace: true,
            keep: true,
            run_dir: Some(dir.clone()),
            ..opts(exe, reg, algo, n, entries, 0.0)
        };
        supervisor::run(&o, reg).ok()?;
        let h = handoff::analyse(&dir, None).ok()?;
        // No message at all (flock): nothing sequential but the resource.
        h.mean().or((h.messages_timed == 0).then_some(0.0))
    })();
    if let Some(k) = measured {
        return (Some(k), "trace");
    }
    let claimed = reg.get(algo).and_then(|a| a.claim.as_ref()).and_then(|c| {
        let said = (c.sync)(n);
        let digits: String = said.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<f64>().ok()
    });
    match claimed {
        Some(k) => (Some(k), "claim"),
        None => (None, "none"),
    }
}

/// Throughput `tp` over the limit `lim` (both CS/s) in percent, and whether it came
/// out above 100 % (then no percentage: a measuring error).
fn limit_share(lim: f64, tp: f64) -> (Option<f64>, bool) {
    match Share::of(1.0 / lim, 1.0 / tp) {
        Some(Share::Percent(p)) => (Some(p), false),
        Some(Share::MeasuringError(_)) => (None, true),
        None => (None, false),
    }
}

impl BenchRow {
    fn of(
        algo: &str,
        n: u32,
        run: &Result<(supervisor::Report, supervisor::MutexPart), supervisor::RunError>,
        ideal: f64,
        limit: Option<(f64, &'static str, f64)>,
    ) -> BenchRow {
        let (k, k_from, lim) = limit.map_or((None, "none", 0.0), |(k, from, l)| (Some(k), from, l));
        match run {
            Ok((r, m)) => BenchRow {
                algorithm: algo.into(),
                workers: n,
                error: None,
                ok: r.ok,
                entries: m.entries.total,
                throughput_per_s: m.throughput_per_s,
                messages_per_entry: m.messages.per_entry,
                theory: m.theory.clone(),
                jain: m.jain,
                vs_ideal_percent: 100.0 * m.throughput_per_s / ideal,
                k,
                k_from,
                limit_cs_per_s: lim,
                vs_limit_percent: limit_share(lim, m.throughput_per_s).0,
                limit_measuring_error: limit_share(lim, m.throughput_per_s).1,
            },
            Err(e) => BenchRow {
                algorithm: algo.into(),
                workers: n,
                error: Some(e.to_string()),
                ok: false,
                entries: 0,
                throughput_per_s: 0.0,
                messages_per_entry: 0.0,
                theory: None,
                jain: 0.0,
                vs_ideal_percent: 0.0,
                k,
                k_from,
                limit_cs_per_s: lim,
                vs_limit_percent: None,
                limit_measuring_error: false,
            },
        }
    }
}

/// Run the whole benchmark, on one CPU unless `all_cpus`. The table is printed as it
/// is measured, unless `json`: then nothing is printed and the caller prints the report.
pub fn run(
    exe: &Path,
    reg: &Registry,
    quick: bool,
    all_cpus: bool,
    json: bool,
) -> anyhow::Result<BenchReport> {
    let say = |line: String| {
        if !json {
            println!("{line}");
        }
    };
    let program = baseline_program(exe);
    if !program.is_file() {
        anyhow::bail!(
            "the baseline program {} is missing: build it with `cargo build --release --bins` (`make bench` does)",
            program.display()
        );
    }
    let cpu = if all_cpus { None } else { Some(pin_to_one_cpu()?) };
    say(match cpu {
        None => "processes free to use every CPU".to_string(),
        Some(c) => format!("every process on CPU {c} (--all-cpus to spread them)"),
    });
    let rounds = if quick { 2_000 } else { 20_000 };
    let t = ping_pong(exe, rounds, crate::supervisor::Transport::Unix)?;
    let ideal = 1.0 / (2.0 * t.as_secs_f64());
    say(format!(
        "one-way message time T = {:.2} µs ({rounds} round trips between two processes)",
        t.as_secs_f64() * 1e6
    ));
    say(format!("message-bound ideal 1/(2T) = {ideal:.0} CS/s"));
    let sizes: &[u32] = if quick { &[2, 8] } else { &[2, 8, 32] };
    let total: u64 = if quick { 400 } else { 4_000 };
    // C: the resource alone, one worker, nothing to wait for.
    let alone = mutex_run(&opts(exe, reg, "none", 1, total, 0.0), reg)
        .map_err(|e| anyhow::anyhow!("measuring the resource's cost C (none, -n 1): {e}"))?;
    let c_s = if alone.1.throughput_per_s > 0.0 { 1.0 / alone.1.throughput_per_s } else { 0.0 };
    let t_s = t.as_secs_f64();
    say(format!(
        "resource cost per entry C = {:.2} µs (one worker of `none`, {} entries); limit 1/(C+kT), \
         k = sequential messages per handoff (from a traced run, or the notes' claim)\n",
        c_s * 1e6,
        alone.1.entries.total
    ));
    say("Saturation: empty sections, no think time.".into());
    say(format!(
        "{:<20} {:>4} {:>8} {:>9} {:>10} {:>11} {:>6} {:>10} {:>10} {:>12}",
        "algorithm", "N", "entries", "CS/s", "msgs/entry", "theory", "Jain", "vs 1/(2T)", "k", "vs 1/(C+kT)"
    ));
    let mut saturation = Vec::new();
    // Elections have no critical section to saturate; `none` is not a lock.
    for info in reg.iter().filter(|a| a.name != "none" && a.service == crate::algorithm::ServiceKind::Mutex) {
        for &n in sizes {
            let run = mutex_run(&opts(exe, reg, info.name, n, (total / u64::from(n)).max(1), 0.0), reg);
            // A quarter as many entries traced are enough to count hops.
            let (k, k_from) = hops(exe, reg, info.name, n, (total / 4 / u64::from(n)).max(5));
            let limit = k.map(|k| (k, k_from, 1.0 / (c_s + k * t_s)));
            let k_cell = match k {
                Some(k) if k_from == "claim" => format!("{k:.0} (claim)"),
                Some(k) => format!("{k:.2}"),
                None => "-".into(),
            };
            let share = |tp: f64| match limit.and_then(|(_, _, l)| Share::of(1.0 / l, 1.0 / tp)) {
                None => "-".to_string(),
                Some(s) => s.cell(),
            };
            say(match &run {
                Ok((r, m)) => format!(
                    "{:<20} {:>4} {:>8} {:>9.0} {:>10.2} {:>11} {:>6.3} {:>9.1}% {:>10} {:>12}{}",
                    info.name,
                    n,
                    m.entries.total,
                    m.throughput_per_s,
                    m.messages.per_entry,
                    theory(r),
                    m.jain,
                    100.0 * m.throughput_per_s / ideal,
                    k_cell,
                    share(m.throughput_per_s),
                    if r.ok { "" } else { "  (run not clean)" }
                ),
                Err(e) => format!("{:<20} {:>4} failed: {e}", info.name, n),
            });
            saturation.push(BenchRow::of(info.name, n, &run, ideal, limit));
        }
    }
    // Under saturation every worker always wants in, so Roucairol-Carvalho can keep no
    // permission; its saving shows when workers think between entries.
    let (n, think) = (8, 2.0);
    say(format!("\nLight load: N = {n}, empty sections, mean think time {think} ms."));
    say(format!("{:<20} {:>4} {:>8} {:>10} {:>11}", "algorithm", "N", "entries", "msgs/entry", "theory"));
    let mut light = Vec::new();
    for algo in ["ricart-agrawala", "ricart-agrawala-rc"] {
        let entries = if quick { 25 } else { 100 };
        let run = mutex_run(&opts(exe, reg, algo, n, entries, think), reg);
        say(match &run {
            Ok((r, m)) => format!(
                "{:<20} {:>4} {:>8} {:>10.2} {:>11}{}",
                algo,
                n,
                m.entries.total,
                m.messages.per_entry,
                theory(r),
                if r.ok { "" } else { "  (run not clean)" }
            ),
            Err(e) => format!("{algo:<20} {n:>4} failed: {e}"),
        });
        light.push(BenchRow::of(algo, n, &run, ideal, None));
    }
    let (algo, n) = ("ricart-agrawala", 6);
    say(format!(
        "\nRecording: {algo}, N = {n}, saturated; no recording, the flight recorder (default) and \
         --trace, interleaved, medians of {RECORDING_ROUNDS} runs each."
    ));
    let rec = recording(exe, reg, algo, n, if quick { 100 } else { 500 });
    say(format!("{:<16} {:>9} {:>14} {:>10}", "recording", "CS/s", "CPU µs/entry", "CPU vs off"));
    for w in &rec.ways {
        let failed = if w.failed > 0 { format!("  ({} runs failed)", w.failed) } else { String::new() };
        say(format!(
            "{:<16} {:>9.0} {:>14.1} {:>10.2}{failed}",
            w.way, w.throughput_per_s, w.cpu_us_per_entry, w.cpu_vs_off
        ));
    }
    let (rounds, k) = if quick { (2, 25) } else { (BASELINE_ROUNDS, 1_000) };
    say(format!(
        "\nBaseline: mutexlab beside {} (a bare ring, centralized lock and Ricart-Agrawala: socket pairs, epoll, \
         the same file work per entry, no tracing), interleaved, {rounds} rounds, {k} entries a worker; \
         shares are the baseline's cost over mutexlab's, median [range] over rounds; load average {}",
        program.display(),
        Load::now().words()
    ));
    let base = baseline(exe, reg, &program, rounds, k, quick)?;
    for line in baseline_lines(&base) {
        say(line);
    }
    say(format!(
        "load average before {}, after {}; a share above 100% is a measuring error, left out of its median",
        base.load_before.words(),
        base.load_after.words()
    ));
    Ok(BenchReport {
        schema: 1,
        all_cpus,
        cpu,
        message_time_us: t.as_secs_f64() * 1e6,
        round_trips: rounds,
        ideal_cs_per_s: ideal,
        resource_cost_us: c_s * 1e6,
        saturation,
        light,
        light_think_ms: think,
        recording: rec,
        baseline: base,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_share_above_100_percent_is_flagged_not_given() {
        assert_eq!(limit_share(100.0, 50.0), (Some(50.0), false));
        assert_eq!(limit_share(100.0, 150.0), (None, true));
        // No limit (no k) or no throughput: neither a share nor an error.
        assert_eq!(limit_share(0.0, 50.0), (None, false));
        assert_eq!(limit_share(100.0, 0.0), (None, false));
    }
}
