//! The run's report: what `mutexlab run` prints (formatted by [`crate::report`]) and
//! `--json` emits, built once the run is over from the workers' final statistics, the
//! audit of the resource file and the faults the supervisor applied.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::rundir::RunDir;
use super::{AppliedFault, Supervisor};
use crate::algos::{Shape, Theory};
use crate::audit::{AuditReport, ElectionReport, Violation, WaitStats};

/// The run's failure when a worker's runtime could not keep the model its algorithm was
/// promised (`ToSupervisor::Breach`): the worker's line, and that no verdict follows.
pub(super) fn breach_failure(why: &str) -> String {
    format!(
        "{why}; the runtime could not keep the model the algorithm was promised, so the run stopped there and its audit is no verdict on the algorithm"
    )
}

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

/// The version of the `--json` objects of `run` and `elect`: raised when a field
/// changes meaning or goes away (new fields do not raise it).
pub const JSON_SCHEMA: u32 = 1;

/// The message faults every worker applied (`--latency`, `--jitter`, `--drop`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Network {
    pub latency_ms: f64,
    pub jitter_ms: f64,
    pub drop: f64,
}

/// Everything a run found; `--json` prints this.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// [`JSON_SCHEMA`].
    pub schema: u32,
    pub algorithm: String,
    pub workers: u32,
    pub ok: bool,
    /// Why the run failed, apart from audit violations.
    pub failure: Option<String>,
    /// The failure is a worker's runtime breaking the model the algorithm was promised
    /// (a message over the frame cap, a frame refused from a live peer): the run
    /// stopped there, and `violations` are no verdict on the algorithm.
    pub model_broken: bool,
    pub entries: Entries,
    pub messages: Messages,
    pub theory: Option<Theory>,
    pub throughput_per_s: f64,
    pub wait_ms: WaitStats,
    /// The same, by worker id.
    pub wait_ms_by_worker: Vec<WaitStats>,
    pub max_bypass: u64,
    pub jain: f64,
    pub jain_waits: f64,
    pub elapsed_s: f64,
    pub cs_ms: f64,
    pub think_ms: f64,
    pub seed: u64,
    pub network: Network,
    pub violations: Vec<Violation>,
    pub violation_count: usize,
    /// Sections and requests the end of a failed run cut short (not violations).
    pub cut_short: Vec<Violation>,
    /// The directory's path, shown (lossily, if it is not UTF-8): `run_path` is the path.
    pub run_dir: String,
    /// The run directory itself, for whoever writes into it (its report).
    #[serde(skip)]
    pub run_path: std::path::PathBuf,
    pub run_dir_kept: bool,
    /// The fault plan, in the plan grammar (replayable with `--faults-file`).
    pub plan: String,
    /// Faults actually applied, in order.
    pub faults: Vec<AppliedFault>,
    /// Plan steps that never fired (the run ended first), in the plan grammar.
    pub never_fired: Vec<String>,
    /// Messages lost on purpose (`--drop`).
    pub lost_messages: u64,
    /// Incarnations whose final statistics never came (killed, dead of something else,
    /// or paused when the run ended): what they sent is not in the message counts.
    pub unreported: u64,
    /// The same by sender, receiver and type (`w0->w2 REQUEST`).
    pub lost_by: BTreeMap<String, u64>,
    /// `--fenced`: the resource refused writes under a stale fencing token.
    pub fenced: bool,
    /// Writes the fenced resource refused (0 unless fenced).
    pub refused: u64,
    /// The algorithm's own counters, summed over workers (e.g. `attempts`).
    pub counters: BTreeMap<String, u64>,
}

/// The workers' final statistics, summed.
#[derive(Default)]
struct Summed {
    sent: BTreeMap<String, u64>,
    bad_frames: u64,
    dropped_connections: u64,
    lost: u64,
    lost_by: BTreeMap<String, u64>,
    counters: BTreeMap<String, u64>,
}

impl Supervisor<'_> {
    /// From the start of the run to its end (or to now, if it has not ended).
    fn elapsed(&self) -> Duration {
        match (self.started, self.finished) {
            (Some(s), Some(f)) => f - s,
            (Some(s), None) => s.elapsed(),
            _ => Duration::ZERO,
        }
    }

    /// The message faults of the run, for the report.
    fn network(&self) -> Network {
        let o = &self.opts;
        Network { latency_ms: o.latency_ms, jitter_ms: o.jitter_ms, drop: o.drop }
    }

    /// How many incarnations, over all workers, sent no final statistics.
    fn unreported(&self) -> u64 {
        self.slots.iter().map(|s| u64::from(s.incarnation) + 1 - u64::from(s.stats.is_some())).sum()
    }

    /// Every worker's final statistics, summed (a killed worker's died with it).
    fn sum_stats(&self) -> Summed {
        let mut sum = Summed::default();
        for s in self.slots.iter().filter_map(|s| s.stats.as_ref()) {
            for (k, v) in &s.sent {
                *sum.sent.entry(k.clone()).or_default() += v;
            }
            // A program's own counts may be anything (`count` with any `by`): saturate.
            for (k, v) in &s.counters {
                let c = sum.counters.entry(k.clone()).or_default();
                *c = c.saturating_add(*v);
            }
            sum.bad_frames += s.bad_frames;
            sum.dropped_connections += s.dropped_connections;
            sum.lost += s.lost;
            for (k, v) in &s.lost_by {
                *sum.lost_by.entry(k.clone()).or_default() += v;
            }
        }
        sum
    }

    /// The run's report: the workers' statistics summed, the audit's verdict, the faults
    /// applied and the plan steps left. `run_dir_kept` is the caller's to settle.
    pub(super) fn report(&self, audit: AuditReport, failure: Option<String>, dir: &RunDir) -> RunReport {
        let sum = self.sum_stats();
        let (lost, lost_by) = (sum.lost, sum.lost_by);
        let counters = sum.counters;
        let mut messages = Messages {
            total: sum.sent.values().sum(),
            by_type: sum.sent,
            bad_frames: sum.bad_frames,
            dropped_connections: sum.dropped_connections,
            ..Messages::default()
        };
        let elapsed = self.elapsed();
        let total = audit.entries;
        messages.per_entry = if total > 0 { messages.total as f64 / total as f64 } else { 0.0 };
        let shape = Shape { n: self.opts.workers, replicas: self.opts.replicas, initiators: 0 };
        RunReport {
            schema: JSON_SCHEMA,
            network: self.network(),
            algorithm: self.opts.algo.clone(),
            workers: self.opts.workers,
            ok: audit.ok && failure.is_none(),
            failure,
            model_broken: self.breach.is_some(),
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
            fenced: audit.fenced,
            refused: audit.refused,
            jain: audit.jain,
            jain_waits: audit.jain_waits,
            elapsed_s: elapsed.as_secs_f64(),
            cs_ms: self.opts.cs_ms,
            think_ms: self.opts.think_ms,
            seed: self.opts.seed,
            violations: audit.violations,
            violation_count: audit.violation_count,
            cut_short: audit.cut_short,
            run_dir: dir.path.display().to_string(),
            run_path: dir.path.clone(),
            run_dir_kept: true,
            plan: self.opts.plan.to_string(),
            faults: self.applied.clone(),
            never_fired: self.steps.iter().map(|st| st.to_string()).collect(),
            lost_messages: lost,
            unreported: self.unreported(),
            lost_by,
            counters,
        }
    }
}

/// Messages section of an election run's report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ElectMessages {
    /// The election's own messages: every type but HEARTBEAT.
    pub total: u64,
    /// Every type, HEARTBEAT included.
    pub by_type: BTreeMap<String, u64>,
    /// `total` over the elections held (distinct terms).
    pub per_election: f64,
    /// The heartbeat detector's messages.
    pub heartbeats: u64,
    pub bad_frames: u64,
    pub dropped_connections: u64,
}

/// Everything an election run found; `mutexlab elect --json` prints this.
#[derive(Clone, Debug, Serialize)]
pub struct ElectReport {
    /// [`JSON_SCHEMA`].
    pub schema: u32,
    pub algorithm: String,
    pub workers: u32,
    pub ok: bool,
    /// Why the run failed, apart from audit violations.
    pub failure: Option<String>,
    /// As in [`RunReport::model_broken`].
    pub model_broken: bool,
    /// Who called an election at the start (`all`, `lowest` or ids).
    pub initiators: String,
    /// How workers learnt of peers going down and up.
    pub detector: String,
    /// The leader every live worker named at the end, and its term.
    pub leader: Option<u32>,
    pub term: Option<u64>,
    /// Elections held: distinct terms announced.
    pub elections: usize,
    pub messages: ElectMessages,
    /// Messages per election, as theory gives them for this many workers and initiators.
    pub theory: Option<Theory>,
    /// From the last kill or restart (else the start) to the agreement, in ms.
    pub time_to_elect_ms: Option<f64>,
    /// The one-way message time T measured before the run (a ping-pong between two
    /// processes, plus `--latency`), in µs.
    pub message_time_us: Option<f64>,
    /// `time_to_elect_ms` in message times T.
    pub time_to_elect_t: Option<f64>,
    pub elapsed_s: f64,
    pub seed: u64,
    pub network: Network,
    pub violations: Vec<Violation>,
    pub violation_count: usize,
    /// The directory's path, shown (lossily, if it is not UTF-8): `run_path` is the path.
    pub run_dir: String,
    /// The run directory itself, for whoever writes into it (its report).
    #[serde(skip)]
    pub run_path: std::path::PathBuf,
    pub run_dir_kept: bool,
    /// The fault plan, in the plan grammar.
    pub plan: String,
    /// Faults actually applied, in order.
    pub faults: Vec<AppliedFault>,
    /// Plan steps that never fired, in the plan grammar.
    pub never_fired: Vec<String>,
    /// Messages lost on purpose (`--drop`).
    pub lost_messages: u64,
    /// Incarnations whose final statistics never came (killed, dead of something else,
    /// or paused when the run ended): what they sent is not in the message counts.
    pub unreported: u64,
    /// The algorithm's own counters, summed over workers.
    pub counters: BTreeMap<String, u64>,
}

impl Supervisor<'_> {
    /// An election run's report: the workers' statistics summed, the election audit's
    /// verdict, and the time to elect in ms and in message times `t`.
    pub(super) fn elect_report(
        &self,
        audit: ElectionReport,
        failure: Option<String>,
        dir: &RunDir,
        t: Option<Duration>,
    ) -> ElectReport {
        let sum = self.sum_stats();
        let (lost, counters) = (sum.lost, sum.counters);
        let heartbeats = sum.sent.get(crate::runtime::HEARTBEAT).copied().unwrap_or(0);
        let mut messages = ElectMessages {
            total: sum.sent.values().sum::<u64>() - heartbeats,
            heartbeats,
            by_type: sum.sent,
            bad_frames: sum.bad_frames,
            dropped_connections: sum.dropped_connections,
            ..ElectMessages::default()
        };
        let elections = audit.terms;
        messages.per_election =
            if elections > 0 { messages.total as f64 / elections as f64 } else { messages.total as f64 };
        let elapsed = self.elapsed();
        let e = self.opts.elect.as_ref();
        let initiators = e.map_or(0, |e| e.initiators.count(self.opts.workers));
        let shape = Shape { n: self.opts.workers, replicas: None, initiators };
        let t_ms = t.map(|t| t.as_secs_f64() * 1e3).filter(|&t| t > 0.0);
        ElectReport {
            schema: JSON_SCHEMA,
            network: self.network(),
            algorithm: self.opts.algo.clone(),
            workers: self.opts.workers,
            ok: audit.ok && failure.is_none(),
            failure,
            model_broken: self.breach.is_some(),
            initiators: e.map(|e| e.initiators.to_string()).unwrap_or_default(),
            detector: self.opts.detector.to_string(),
            leader: audit.leader.map(|l| l.0),
            term: audit.leader.map(|l| l.1),
            elections,
            messages,
            theory: (self.info.theory)(shape),
            time_to_elect_ms: audit.time_to_agree_ms,
            message_time_us: t_ms.map(|t| t * 1e3),
            time_to_elect_t: audit.time_to_agree_ms.zip(t_ms).map(|(e, t)| e / t),
            elapsed_s: elapsed.as_secs_f64(),
            seed: self.opts.seed,
            violations: audit.violations,
            violation_count: audit.violation_count,
            run_dir: dir.path.display().to_string(),
            run_path: dir.path.clone(),
            run_dir_kept: true,
            plan: self.opts.plan.to_string(),
            faults: self.applied.clone(),
            never_fired: self.steps.iter().map(|st| st.to_string()).collect(),
            lost_messages: lost,
            unreported: self.unreported(),
            counters,
        }
    }
}
