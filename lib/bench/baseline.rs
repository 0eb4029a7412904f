//! The baseline beside each run: `mutexlab-baseline` (bench/baseline/) and mutexlab in
//! turn, round after round, each of mutexlab's figures a share of the bare program's run
//! beside it ([`Share`]: above 100 % is a measuring error, never a result).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::{cpu_seconds, median, mutex_run, opts};
use crate::registry::Registry;

/// Rounds of the baseline beside mutexlab's runs (two with `--quick`).
pub const BASELINE_ROUNDS: u32 = 5;

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
    /// Wall time per entry: the run's, from its start to its end as the bench sees it
    /// (the baseline program's spawn to its exit; mutexlab's run called to returned).
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
    /// The baseline it is measured beside: `ring`, `central` or `ra`.
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
    pub(super) fn now() -> Load {
        let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let mut f = text.split_whitespace().map(|x| x.parse::<f64>().unwrap_or(0.0));
        Load { one: f.next().unwrap_or(0.0), five: f.next().unwrap_or(0.0), fifteen: f.next().unwrap_or(0.0) }
    }

    pub(super) fn words(&self) -> String {
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
/// around it and its wall time from its spawn to its exit, as for mutexlab's runs: both
/// sides' figures then span the same, each run's start and end included.
fn bare_run(program: &Path, mode: &str, n: u32, k: u64) -> anyhow::Result<(Measured, u64)> {
    let before = cpu_seconds();
    let t0 = Instant::now();
    let out = Command::new(program).args([mode, "-n", &n.to_string(), "-k", &k.to_string()]).output()?;
    let wall_us = t0.elapsed().as_secs_f64() * 1e6;
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
    Ok(((cpu * 1e6 / e, wall_us / e, r.messages as f64 / e), r.frame_bytes))
}

/// One mutexlab run measured as the baseline is (wall time from the call that starts
/// the supervisor's run to its return: the workers' start, the run, the audit); `None`
/// if it failed or was not clean.
fn mutexlab_run(exe: &Path, reg: &Registry, algo: &str, n: u32, k: u64) -> Option<Measured> {
    let before = cpu_seconds();
    let t0 = Instant::now();
    let (r, m) = mutex_run(&opts(exe, reg, algo, n, k, 0.0), reg).ok()?;
    let wall_us = t0.elapsed().as_secs_f64() * 1e6;
    let cpu = cpu_seconds() - before;
    let e = m.entries.total as f64;
    (r.ok && e > 0.0).then(|| (cpu * 1e6 / e, wall_us / e, m.messages.per_entry))
}

/// The pairs the bench measures: the token rings beside the bare ring, Ricart-Agrawala and
/// its Roucairol-Carvalho variant beside the bare Ricart-Agrawala (the same 2(N-1)
/// messages an entry under saturation), everything else beside the bare centralized
/// lock (the cheapest entry with messages this machine has).
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
            let bare = match info.name {
                n if n.starts_with("ricart-agrawala") => "ra",
                // A token passed round the ring, one message an entry, as the bare ring's.
                "token-ring-ft" => "ring",
                _ => "central",
            };
            pairs.push((info.name, 8, bare));
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
pub(super) fn baseline_lines(b: &Baseline) -> Vec<String> {
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
