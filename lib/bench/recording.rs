//! What recording costs a saturated run: none, the flight recorder (the default) and
//! `--trace`, interleaved, as medians over rounds.

use std::path::Path;

use super::{cpu_seconds, median, mutex_run, opts};
use crate::registry::Registry;
use crate::supervisor::RunOpts;

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

/// How often each way of recording runs.
pub const RECORDING_ROUNDS: u32 = 3;

/// Measure [`Recording`] for `algo` with `n` workers, `entries` each.
pub(super) fn recording(exe: &Path, reg: &Registry, algo: &'static str, n: u32, entries: u64) -> Recording {
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
