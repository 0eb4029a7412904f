//! The run's report: what `mutexlab run` prints (formatted by [`crate::report`]) and
//! `--json` emits, built once the run is over from the workers' final statistics, the
//! audit of the resource file and the faults the supervisor applied.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::rundir::RunDir;
use super::{AppliedFault, Supervisor};
use crate::algos::{Shape, Theory};
use crate::audit::{AuditReport, Violation, WaitStats};

/// Messages section of the report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Messages {
    pub total: u64,
    pub by_type: BTreeMap<String, u64>,
    pub per_entry: f64,
    pub bad_frames: u64,
    pub dropped_connections: u64,
}

/// Entries section of the report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Entries {
    pub total: u64,
    pub by_worker: Vec<u64>,
}

/// Everything a run found; `--json` prints this.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub algorithm: String,
    pub workers: u32,
    pub ok: bool,
    /// Why the run failed, apart from audit violations.
    pub failure: Option<String>,
    pub entries: Entries,
    pub messages: Messages,
    pub theory: Option<Theory>,
    pub throughput_per_s: f64,
    pub wait_ms: WaitStats,
    /// The same, by worker id.
    pub wait_ms_by_worker: Vec<WaitStats>,
    pub max_bypass: u64,
    pub jain: f64,
    pub elapsed_s: f64,
    pub cs_ms: f64,
    pub think_ms: f64,
    pub seed: u64,
    pub violations: Vec<Violation>,
    pub violation_count: usize,
    /// Sections and requests the end of a failed run cut short (not violations).
    pub cut_short: Vec<Violation>,
    pub run_dir: String,
    pub run_dir_kept: bool,
    /// The fault plan, in the plan grammar (replayable with `--faults-file`).
    pub plan: String,
    /// Faults actually applied, in order.
    pub faults: Vec<AppliedFault>,
    /// Plan steps that never fired (the run ended first), in the plan grammar.
    pub never_fired: Vec<String>,
    /// Messages lost on purpose (`--drop`).
    pub lost_messages: u64,
    /// The algorithm's own counters, summed over workers (e.g. `attempts`).
    pub counters: BTreeMap<String, u64>,
}

impl Supervisor<'_> {
    /// The run's report: the workers' statistics summed, the audit's verdict, the faults
    /// applied and the plan steps left. `run_dir_kept` is the caller's to settle.
    pub(super) fn report(&self, audit: AuditReport, failure: Option<String>, dir: &RunDir) -> RunReport {
        let mut messages = Messages::default();
        let mut lost = 0;
        let mut counters: BTreeMap<String, u64> = BTreeMap::new();
        for s in self.slots.iter().filter_map(|s| s.stats.as_ref()) {
            for (k, v) in &s.sent {
                *messages.by_type.entry(k.clone()).or_default() += v;
                messages.total += v;
            }
            messages.bad_frames += s.bad_frames;
            lost += s.lost;
            for (k, v) in &s.counters {
                *counters.entry(k.clone()).or_default() += v;
            }
            messages.dropped_connections += s.dropped_connections;
        }
        let elapsed = match (self.started, self.finished) {
            (Some(s), Some(f)) => f - s,
            (Some(s), None) => s.elapsed(),
            _ => Duration::ZERO,
        };
        let total = audit.entries;
        messages.per_entry = if total > 0 { messages.total as f64 / total as f64 } else { 0.0 };
        let shape = Shape { n: self.opts.workers, replicas: self.opts.replicas };
        RunReport {
            algorithm: self.opts.algo.clone(),
            workers: self.opts.workers,
            ok: audit.ok && failure.is_none(),
            failure,
            entries: Entries { total, by_worker: audit.entries_by_worker.clone() },
            messages,
            theory: (self.info.theory)(shape),
            throughput_per_s: if elapsed.as_secs_f64() > 0.0 {
                total as f64 / elapsed.as_secs_f64()
            } else {
                0.0
            },
            wait_ms: audit.wait_ms.clone(),
            wait_ms_by_worker: audit.wait_ms_by_worker.clone(),
            max_bypass: audit.max_bypass,
            jain: audit.jain,
            elapsed_s: elapsed.as_secs_f64(),
            cs_ms: self.opts.cs_ms,
            think_ms: self.opts.think_ms,
            seed: self.opts.seed,
            violations: audit.violations,
            violation_count: audit.violation_count,
            cut_short: audit.cut_short,
            run_dir: dir.path.display().to_string(),
            run_dir_kept: true,
            plan: self.opts.plan.to_string(),
            faults: self.applied.clone(),
            never_fired: self.steps.iter().map(|st| st.to_string()).collect(),
            lost_messages: lost,
            counters,
        }
    }
}
