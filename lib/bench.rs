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
//! this tool) is the cheapest token ring and centralized lock the machine allows: N
//! processes, Unix socket pairs, epoll, frames of mutexlab's size, the same file work per
//! entry, nothing else. [`baseline`] runs it and mutexlab in turn (A, B, B, A, …) for
//! several rounds and gives each of mutexlab's figures as a share of the baseline run
//! beside it, in CPU time per entry (this process's and its children's rusage) and in
//! wall time per entry, as the median and range over rounds, with the load average
//! before and after. A share above 100 % (mutexlab cheaper than the bare program) can
//! only be a measuring error, and is reported as one ([`Share`]), never as a result.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::handoff;
use crate::registry::Registry;
use crate::supervisor::probe::ping_pong;
use crate::supervisor::{self, RunOpts};

/// The options of one benchmark run: no faults, a fresh temp dir, no progress bar.
fn opts(exe: &Path, reg: &Registry, algo: &str, n: u32, entries: u64, think_ms: f64) -> RunOpts {
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
fn mutex_run(
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

/// What recording costs: one saturated algorithm run without recording, with the
/// flight recorder (the default) and with `--trace`, the three interleaved
/// ([`RECORDING_ROUNDS`] times), each as medians.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Recording {
    /// The algorithm.
    pub algorithm: &'static str,
    /// Workers in each run.
    pub workers: u32,
    /// Runs of each way, interleaved.
    pub rounds: u32,
    /// `off` (`--no-flight-recorder`), `flight recorder`, `trace`, in that order.
    pub ways: Vec<RecordingWay>,
}

/// One way of recording, over its runs.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct RecordingWay {
    /// `off`, `flight recorder` or `trace`.
    pub way: &'static str,
    /// Median critical sections per second.
    pub throughput_per_s: f64,
    /// Median CPU time (user and system, this process and its workers) per entry, in µs:
    /// steadier than throughput on a loaded machine.
    pub cpu_us_per_entry: f64,
    /// `cpu_us_per_entry` over that of `off`: 1.0 costs nothing.
    pub cpu_vs_off: f64,
    /// Runs that failed or were not clean (they count in no median).
    pub failed: u32,
}

/// Rounds of the baseline beside mutexlab's runs (two with `--quick`).
pub const BASELINE_ROUNDS: u32 = 5;

/// How often each way of recording runs.
pub const RECORDING_ROUNDS: u32 = 3;

/// User and system CPU time of this process and its reaped children, in seconds.
fn cpu_seconds() -> f64 {
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
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Measure [`Recording`] for `algo` with `n` workers, `entries` each.
fn recording(exe: &Path, reg: &Registry, algo: &'static str, n: u32, entries: u64) -> Recording {
    let ways: [(&'static str, bool, bool); 3] =
        [("off", false, false), ("flight recorder", true, false), ("trace", true, true)];
    let mut got: Vec<(Vec<f64>, Vec<f64>, u32)> = ways.iter().map(|_| (Vec::new(), Vec::new(), 0)).collect();
    for _ in 0..RECORDING_ROUNDS {
        for (i, &(_, flight, trace)) in ways.iter().enumerate() {
            let o = RunOpts { flight, trace, ..opts(exe, reg, algo, n, entries, 0.0) };
            let before = cpu_seconds();
            match mutex_run(&o, reg) {
                Ok((r, m)) if r.ok && m.entries.total > 0 => {
                    let cpu = (cpu_seconds() - before) / m.entries.total as f64 * 1e6;
                    got[i].0.push(m.throughput_per_s);
                    got[i].1.push(cpu);
                }
                _ => got[i].2 += 1,
            }
        }
    }
    let off = median(got[0].1.clone());
    let ways = ways
        .iter()
        .zip(got)
        .map(|(&(way, _, _), (tp, cpu, failed))| {
            let cpu = median(cpu);
            RecordingWay {
                way,
                throughput_per_s: median(tp),
                cpu_us_per_entry: cpu,
                cpu_vs_off: if off > 0.0 { cpu / off } else { 0.0 },
                failed,
            }
        })
        .collect();
    Recording { algorithm: algo, workers: n, rounds: RECORDING_ROUNDS, ways }
}

/// mutexlab's cost as a share of the baseline's: `baseline / mutexlab`, in percent, so
/// 100 % is as cheap as the bare program and 50 % twice its cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Share {
    /// At most 100 %: a result.
    Percent(f64),
    /// Above 100 %: mutexlab cannot cost less than the bare program doing the same
    /// messages and file work, so the two runs were not measured alike (the load moved
    /// between them, a figure sampled elsewhere). The number is kept only to say so.
    MeasuringError(f64),
}

impl Share {
    /// The share of `mutexlab` (a cost) that `baseline` (the same cost, of the baseline)
    /// is; `None` when either is not a positive finite number (a run that made nothing).
    pub fn of(baseline: f64, mutexlab: f64) -> Option<Share> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !ok(baseline) || !ok(mutexlab) {
            return None;
        }
        let p = 100.0 * baseline / mutexlab;
        Some(if p > 100.0 { Share::MeasuringError(p) } else { Share::Percent(p) })
    }

    /// A table cell: `41.3%`, or what went wrong.
    pub fn cell(self) -> String {
        match self {
            Share::Percent(p) => format!("{p:.1}%"),
            Share::MeasuringError(p) => format!("meas. error ({p:.0}%)"),
        }
    }
}

/// Shares over rounds: the median and range of those that are results, and how many
/// came out above 100 % (measuring errors, in no median).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct ShareSpread {
    /// Median share in percent over the rounds that gave a result; `null` if none did.
    pub median_percent: Option<f64>,
    /// Smallest such share.
    pub min_percent: Option<f64>,
    /// Largest such share (at most 100).
    pub max_percent: Option<f64>,
    /// Rounds whose share was a result.
    pub rounds: u32,
    /// Rounds whose share came out above 100 %: measuring errors, left out.
    pub measuring_errors: u32,
}

impl ShareSpread {
    /// Gather the shares of each round.
    pub fn of(shares: &[Share]) -> ShareSpread {
        let ok: Vec<f64> = shares
            .iter()
            .filter_map(|s| match s {
                Share::Percent(p) => Some(*p),
                Share::MeasuringError(_) => None,
            })
            .collect();
        let errors = (shares.len() - ok.len()) as u32;
        let (lo, hi) = ok.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &p| (l.min(p), h.max(p)));
        ShareSpread {
            median_percent: (!ok.is_empty()).then(|| median(ok.clone())),
            min_percent: (!ok.is_empty()).then_some(lo),
            max_percent: (!ok.is_empty()).then_some(hi),
            rounds: ok.len() as u32,
            measuring_errors: errors,
        }
    }

    /// `41% [38-45]`, with the measuring errors named; `measuring error` if no round
    /// gave a result.
    pub fn words(&self) -> String {
        let errs = match self.measuring_errors {
            0 => String::new(),
            e => format!(", {e} meas. error{}", if e == 1 { "" } else { "s" }),
        };
        match (self.median_percent, self.min_percent, self.max_percent) {
            (Some(m), Some(lo), Some(hi)) => format!("{m:.0}% [{lo:.0}-{hi:.0}]{errs}"),
            _ if self.measuring_errors > 0 => format!("measuring error ({} rounds)", self.measuring_errors),
            _ => "-".into(),
        }
    }
}

/// A cost over rounds: median, smallest, largest.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    fn of(v: &[f64]) -> Spread {
        if v.is_empty() {
            return Spread::default();
        }
        Spread {
            median: median(v.to_vec()),
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// One side of a pair (mutexlab's runs or the baseline's) over its rounds, in µs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Side {
    /// CPU time per entry: user and system, of every process of the run.
    pub cpu_us_per_entry: Spread,
    /// Wall time per entry.
    pub wall_us_per_entry: Spread,
    /// CPU time per message sent (per hop, for a ring); zero without messages.
    pub cpu_us_per_message: Spread,
    /// Messages sent per entry (median).
    pub messages_per_entry: f64,
}

/// One of mutexlab's algorithms beside the baseline's ring or lock, at the same N.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct BaselinePair {
    /// mutexlab's algorithm.
    pub algorithm: &'static str,
    /// Processes on each side.
    pub workers: u32,
    /// The baseline it is measured beside: `ring` or `central`.
    pub baseline: &'static str,
    /// mutexlab's runs.
    pub mutexlab: Side,
    /// The baseline's runs.
    pub bare: Side,
    /// mutexlab's CPU time per entry as a share of the baseline's, round by round.
    pub cpu_share: ShareSpread,
    /// mutexlab's wall time per entry as a share of the baseline's, round by round.
    pub wall_share: ShareSpread,
    /// mutexlab's CPU time per message as a share of the baseline's, over the rounds
    /// where both sent about the same messages per entry (none otherwise).
    pub cpu_per_message_share: ShareSpread,
    /// Rounds left out: either side failed, or mutexlab's run was not clean.
    pub failed: u32,
}

/// The load average (/proc/loadavg): 1, 5 and 15 minutes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Load {
    /// Over 1 minute.
    pub one: f64,
    /// Over 5 minutes.
    pub five: f64,
    /// Over 15 minutes.
    pub fifteen: f64,
}

impl Load {
    /// Now; zeros where /proc/loadavg cannot be read.
    fn now() -> Load {
        let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let mut f = text.split_whitespace().map(|x| x.parse::<f64>().unwrap_or(0.0));
        Load { one: f.next().unwrap_or(0.0), five: f.next().unwrap_or(0.0), fifteen: f.next().unwrap_or(0.0) }
    }

    fn words(&self) -> String {
        format!("{:.2} {:.2} {:.2}", self.one, self.five, self.fifteen)
    }
}

/// mutexlab beside the baseline program, interleaved.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Baseline {
    /// The baseline program run.
    pub program: String,
    /// Rounds: in each, every pair runs both sides, one after the other.
    pub rounds: u32,
    /// Entries each worker makes, on both sides.
    pub entries_per_worker: u64,
    /// Bytes in each of the baseline's frames (mutexlab's REQUEST and RELEASE are 16
    /// to 18, its GRANT 14 to 16 and its TOKEN 17 to 18, by the clock's width).
    pub frame_bytes: u64,
    /// Load average before the first round.
    pub load_before: Load,
    /// Load average after the last.
    pub load_after: Load,
    /// Each algorithm beside its baseline.
    pub pairs: Vec<BaselinePair>,
}

/// What one run of the baseline program printed (the fields the bench reads).
#[derive(Debug, serde::Deserialize)]
struct BareRun {
    entries: u64,
    messages: u64,
    frame_bytes: u64,
    reaped: u32,
    workers: u32,
    counter: u64,
    file_work: bool,
    wall_us: f64,
}

/// Whether two runs send close enough to the same messages per entry (within 5 %) for
/// their CPU per message to compare: an algorithm that sends many cheap messages per
/// entry may rightly spend less per message than the bare lock's few, with its file
/// work spread over them.
fn same_messages(mutexlab: f64, bare: f64) -> bool {
    mutexlab > 0.0 && bare > 0.0 && (mutexlab - bare).abs() <= 0.05 * bare
}

/// Where the baseline program is: beside this executable.
pub fn baseline_program(exe: &Path) -> PathBuf {
    exe.with_file_name("mutexlab-baseline")
}

/// One round's measures of one side: CPU µs per entry, wall µs per entry, messages per
/// entry.
type Measured = (f64, f64, f64);

/// Run the baseline program once; its CPU time is this process's children's rusage
/// around it, as for mutexlab's runs.
fn bare_run(program: &Path, mode: &str, n: u32, k: u64) -> anyhow::Result<(Measured, u64)> {
    let before = cpu_seconds();
    let out = Command::new(program).args([mode, "-n", &n.to_string(), "-k", &k.to_string()]).output()?;
    let cpu = cpu_seconds() - before;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        anyhow::bail!("{} {mode} -n {n} failed ({}): {}", program.display(), out.status, err.trim());
    }
    let r: BareRun = serde_json::from_slice(&out.stdout)
        .map_err(|e| anyhow::anyhow!("{} printed what the bench cannot read: {e}", program.display()))?;
    if r.reaped != r.workers || r.entries == 0 || (r.file_work && r.counter != r.entries) {
        anyhow::bail!(
            "{} {mode} -n {n}: {} of {} children reaped, counter {} after {} entries",
            program.display(),
            r.reaped,
            r.workers,
            r.counter,
            r.entries
        );
    }
    let e = r.entries as f64;
    Ok(((cpu * 1e6 / e, r.wall_us / e, r.messages as f64 / e), r.frame_bytes))
}

/// One mutexlab run measured as the baseline is; `None` if it failed or was not clean.
fn mutexlab_run(exe: &Path, reg: &Registry, algo: &str, n: u32, k: u64) -> Option<Measured> {
    let before = cpu_seconds();
    let (r, m) = mutex_run(&opts(exe, reg, algo, n, k, 0.0), reg).ok()?;
    let cpu = cpu_seconds() - before;
    (r.ok && m.entries.total > 0 && m.throughput_per_s > 0.0)
        .then(|| (cpu * 1e6 / m.entries.total as f64, 1e6 / m.throughput_per_s, m.messages.per_entry))
}

/// The pairs the bench measures: the token ring beside the bare ring, everything else
/// beside the bare centralized lock (the cheapest entry with messages this machine has).
fn baseline_pairs(reg: &Registry, quick: bool) -> Vec<(&'static str, u32, &'static str)> {
    let mut pairs = vec![("token-ring", 8, "ring"), ("centralized", 8, "central")];
    if !quick {
        pairs.insert(0, ("centralized", 2, "central"));
        pairs.insert(0, ("token-ring", 2, "ring"));
        for info in reg.iter().filter(|a| {
            // `flock` sends no message: beside the bare lock's messages it may rightly cost
            // less, which the rule for shares would call an error.
            a.name != "none"
                && a.name != "flock"
                && a.name != "token-ring"
                && a.name != "centralized"
                && a.service == crate::algorithm::ServiceKind::Mutex
        }) {
            pairs.push((info.name, 8, "central"));
        }
    }
    pairs
}

/// Measure [`Baseline`]: `rounds` rounds, in each every pair's two sides one after the
/// other (the baseline first in even rounds, mutexlab first in odd ones).
pub fn baseline(
    exe: &Path,
    reg: &Registry,
    program: &Path,
    rounds: u32,
    k: u64,
    quick: bool,
) -> anyhow::Result<Baseline> {
    let pairs = baseline_pairs(reg, quick);
    let load_before = Load::now();
    let mut got: Vec<Vec<(Measured, Measured)>> = pairs.iter().map(|_| Vec::new()).collect();
    let mut failed = vec![0u32; pairs.len()];
    let mut frame_bytes = 0;
    for round in 0..rounds {
        for (i, &(algo, n, mode)) in pairs.iter().enumerate() {
            let (mine, bare) = if round % 2 == 0 {
                let bare = bare_run(program, mode, n, k)?;
                (mutexlab_run(exe, reg, algo, n, k), bare)
            } else {
                let mine = mutexlab_run(exe, reg, algo, n, k);
                (mine, bare_run(program, mode, n, k)?)
            };
            frame_bytes = bare.1;
            match mine {
                Some(m) => got[i].push((m, bare.0)),
                None => failed[i] += 1,
            }
        }
    }
    let pairs = pairs
        .iter()
        .zip(got)
        .zip(failed)
        .map(|((&(algorithm, workers, baseline), rounds), failed)| {
            let side = |pick: fn(&(Measured, Measured)) -> Measured| {
                let v: Vec<Measured> = rounds.iter().map(pick).collect();
                let per_msg: Vec<f64> = v.iter().filter(|m| m.2 > 0.0).map(|m| m.0 / m.2).collect();
                Side {
                    cpu_us_per_entry: Spread::of(&v.iter().map(|m| m.0).collect::<Vec<_>>()),
                    wall_us_per_entry: Spread::of(&v.iter().map(|m| m.1).collect::<Vec<_>>()),
                    cpu_us_per_message: Spread::of(&per_msg),
                    messages_per_entry: median(v.iter().map(|m| m.2).collect()),
                }
            };
            let shares = |f: fn(&Measured) -> f64| {
                let v: Vec<Share> = rounds.iter().filter_map(|(m, b)| Share::of(f(b), f(m))).collect();
                ShareSpread::of(&v)
            };
            BaselinePair {
                algorithm,
                workers,
                baseline,
                mutexlab: side(|r| r.0),
                bare: side(|r| r.1),
                cpu_share: shares(|m| m.0),
                wall_share: shares(|m| m.1),
                cpu_per_message_share: ShareSpread::of(
                    &rounds
                        .iter()
                        .filter(|(m, b)| same_messages(m.2, b.2))
                        .filter_map(|(m, b)| Share::of(b.0 / b.2, m.0 / m.2))
                        .collect::<Vec<_>>(),
                ),
                failed,
            }
        })
        .collect();
    Ok(Baseline {
        program: program.display().to_string(),
        rounds,
        entries_per_worker: k,
        frame_bytes,
        load_before,
        load_after: Load::now(),
        pairs,
    })
}

/// The baseline's table, one line each.
fn baseline_lines(b: &Baseline) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<20} {:>3} {:>8} {:>19} {:>19} {:>21} {:>19} {:>19} {:>21}",
        "algorithm",
        "N",
        "baseline",
        "CPU µs/entry",
        "baseline CPU",
        "share of CPU",
        "wall µs/entry",
        "baseline wall",
        "share of wall"
    )];
    let sp = |s: &Spread| format!("{:.1} [{:.1}-{:.1}]", s.median, s.min, s.max);
    for p in &b.pairs {
        let failed = if p.failed > 0 { format!("  ({} rounds failed)", p.failed) } else { String::new() };
        lines.push(format!(
            "{:<20} {:>3} {:>8} {:>19} {:>19} {:>21} {:>19} {:>19} {:>21}{failed}",
            p.algorithm,
            p.workers,
            p.baseline,
            sp(&p.mutexlab.cpu_us_per_entry),
            sp(&p.bare.cpu_us_per_entry),
            p.cpu_share.words(),
            sp(&p.mutexlab.wall_us_per_entry),
            sp(&p.bare.wall_us_per_entry),
            p.wall_share.words(),
        ));
    }
    lines.push(String::new());
    lines.push(format!(
        "{:<20} {:>3} {:>8} {:>10} {:>19} {:>10} {:>19} {:>21}",
        "per message",
        "N",
        "baseline",
        "msgs/entry",
        "CPU µs/message",
        "bare msgs",
        "baseline CPU",
        "share of CPU"
    ));
    for p in &b.pairs {
        if p.mutexlab.messages_per_entry == 0.0 {
            continue;
        }
        lines.push(format!(
            "{:<20} {:>3} {:>8} {:>10.2} {:>19} {:>10.2} {:>19} {:>21}",
            p.algorithm,
            p.workers,
            p.baseline,
            p.mutexlab.messages_per_entry,
            sp(&p.mutexlab.cpu_us_per_message),
            p.bare.messages_per_entry,
            sp(&p.bare.cpu_us_per_message),
            match &p.cpu_per_message_share {
                s if s.rounds + s.measuring_errors == 0 => "- (other messages)".to_string(),
                s => s.words(),
            },
        ));
    }
    lines
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
        "\nBaseline: mutexlab beside {} (a bare ring and centralized lock: socket pairs, epoll, \
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
    fn a_share_is_the_baseline_cost_over_mutexlab_cost() {
        assert_eq!(Share::of(5.0, 20.0), Some(Share::Percent(25.0)));
        assert_eq!(Share::of(7.5, 7.5), Some(Share::Percent(100.0)));
        assert_eq!(Share::Percent(25.0).cell(), "25.0%");
        // Nothing measured on either side: no share at all.
        assert_eq!(Share::of(0.0, 20.0), None);
        assert_eq!(Share::of(5.0, f64::INFINITY), None);
        assert_eq!(Share::of(f64::NAN, 1.0), None);
    }

    #[test]
    fn a_share_above_100_percent_is_a_measuring_error_never_a_result() {
        let s = Share::of(30.0, 20.0).unwrap();
        assert_eq!(s, Share::MeasuringError(150.0));
        assert!(s.cell().starts_with("meas. error"), "{}", s.cell());
        // Over rounds: the error is counted and left out of the median and range.
        let spread = ShareSpread::of(&[Share::Percent(40.0), s, Share::Percent(50.0), Share::Percent(45.0)]);
        assert_eq!(spread.median_percent, Some(45.0));
        assert_eq!((spread.min_percent, spread.max_percent), (Some(40.0), Some(50.0)));
        assert_eq!((spread.rounds, spread.measuring_errors), (3, 1));
        assert_eq!(spread.words(), "45% [40-50], 1 meas. error");
        // Every round above 100 %: no figure at all, only the error.
        let all = ShareSpread::of(&[s, s]);
        assert_eq!(all.median_percent, None);
        assert_eq!(all.words(), "measuring error (2 rounds)");
        assert!(!all.words().contains('%'), "{}", all.words());
    }

    #[test]
    fn the_limit_share_above_100_percent_is_flagged_not_given() {
        assert_eq!(limit_share(100.0, 50.0), (Some(50.0), false));
        assert_eq!(limit_share(100.0, 150.0), (None, true));
        // No limit (no k) or no throughput: neither a share nor an error.
        assert_eq!(limit_share(0.0, 50.0), (None, false));
        assert_eq!(limit_share(100.0, 0.0), (None, false));
    }

    #[test]
    fn costs_per_message_compare_only_for_the_same_messages_per_entry() {
        assert!(same_messages(1.001, 1.0));
        assert!(same_messages(2.64, 2.625));
        // Ricart-Agrawala's 14 beside the bare lock's 2.625: not comparable.
        assert!(!same_messages(14.0, 2.625));
        assert!(!same_messages(0.0, 0.0));
    }

    #[test]
    fn spreads_take_median_and_range() {
        let s = Spread::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of(&[]), Spread::default());
    }
}
