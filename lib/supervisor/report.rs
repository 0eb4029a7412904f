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

/// A report of each service with every field set, nested ones too: for the tests that
/// pin the JSON, the summaries and the page.
#[cfg(test)]
pub(crate) mod samples {
    use super::*;

    fn violation(kind: &'static str, line: usize) -> Violation {
        Violation { kind, line, detail: format!("{kind} <at> line {line}") }
    }

    fn fault() -> AppliedFault {
        AppliedFault {
            at_ms: 120.5,
            t: 7,
            action: "kill".into(),
            worker: Some(1),
            incarnation: Some(0),
            pid: Some(4242),
            signal: Some("SIGKILL".into()),
            dead: Some(9),
            late_ms: Some(2.5),
            note: "kill 1 at 120ms".into(),
        }
    }

    fn theory() -> Theory {
        Theory {
            per_entry_min: 2.0,
            per_entry_max: 8.0,
            formula: "M-1 to M²-1".into(),
            quorum_size: None,
            replicas: Some(2),
        }
    }

    fn waits(p50: f64) -> WaitStats {
        WaitStats { count: 3, p50, p99: 2.5, max: 3.0, mean: 1.5 }
    }

    fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
    }

    /// A mutual-exclusion run's report.
    pub(crate) fn mutex() -> RunReport {
        RunReport {
            schema: JSON_SCHEMA,
            algorithm: "ricart-agrawala".into(),
            workers: 3,
            ok: false,
            failure: Some("no progress for 5 s".into()),
            model_broken: false,
            entries: Entries { total: 9, by_worker: vec![3, 3, 3] },
            messages: Messages {
                total: 36,
                by_type: counts(&[("REPLY", 18), ("REQUEST", 18)]),
                per_entry: 4.0,
                bad_frames: 1,
                dropped_connections: 2,
            },
            theory: Some(theory()),
            throughput_per_s: 90.5,
            wait_ms: waits(1.0),
            wait_ms_by_worker: vec![waits(0.5), waits(1.5)],
            max_bypass: 2,
            jain: 0.99,
            jain_waits: 0.875,
            elapsed_s: 0.125,
            cs_ms: 1.0,
            think_ms: 2.0,
            seed: 7,
            network: Network { latency_ms: 1.0, jitter_ms: 0.5, drop: 0.25 },
            violations: vec![violation("overlap", 12)],
            violation_count: 1,
            cut_short: vec![violation("cut-short", 30)],
            run_dir: "/tmp/run-x".into(),
            run_path: "/tmp/run-x".into(),
            run_dir_kept: true,
            plan: "kill 1 at 120ms\nrestart 1 at 300ms".into(),
            faults: vec![fault()],
            never_fired: vec!["restart 1 at 300ms".into()],
            lost_messages: 3,
            unreported: 1,
            lost_by: counts(&[("w0->w1 REQUEST", 2), ("w2->w0 REPLY", 1)]),
            fenced: true,
            refused: 4,
            counters: counts(&[("attempts", 11)]),
        }
    }

    /// An election run's report.
    pub(crate) fn election() -> ElectReport {
        ElectReport {
            schema: JSON_SCHEMA,
            algorithm: "bully".into(),
            workers: 3,
            ok: false,
            failure: Some("w1 sent a frame over the cap".into()),
            model_broken: true,
            initiators: "all".into(),
            detector: "heartbeat (every 50 ms, suspect after 100 ms)".into(),
            leader: Some(2),
            term: Some(5),
            elections: 2,
            messages: ElectMessages {
                total: 8,
                by_type: counts(&[("ANSWER", 3), ("COORDINATOR", 2), ("ELECTION", 3), ("HEARTBEAT", 40)]),
                per_election: 4.0,
                heartbeats: 40,
                bad_frames: 1,
                dropped_connections: 0,
            },
            theory: Some(theory()),
            time_to_elect_ms: Some(7.5),
            message_time_us: Some(6.25),
            time_to_elect_t: Some(1200.0),
            elapsed_s: 0.5,
            seed: 1,
            network: Network::default(),
            violations: vec![violation("two-leaders", 4)],
            violation_count: 1,
            run_dir: "/tmp/elect-x".into(),
            run_path: "/tmp/elect-x".into(),
            run_dir_kept: true,
            plan: "kill 1 at 120ms".into(),
            faults: vec![fault()],
            never_fired: Vec::new(),
            lost_messages: 2,
            unreported: 2,
            counters: counts(&[("elections", 3)]),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::samples;

    /// The top-level keys of `v`, in the order they were written.
    fn keys(json: &str) -> Vec<String> {
        // serde_json's maps sort their keys: read the order off the text instead.
        let mut de = serde_json::Deserializer::from_str(json);
        let mut order = Vec::new();
        struct Keys<'a>(&'a mut Vec<String>);
        impl<'de> serde::de::Visitor<'de> for Keys<'_> {
            type Value = ();
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
                while let Some((k, _)) = m.next_entry::<String, serde::de::IgnoredAny>()? {
                    self.0.push(k);
                }
                Ok(())
            }
        }
        serde::Deserializer::deserialize_map(&mut de, Keys(&mut order)).unwrap();
        order
    }

    /// Every field's name, nesting and value, as `--json` printed them before the two
    /// services' reports became one (order aside: see the next test).
    #[test]
    fn the_json_of_both_services_keeps_its_fields_names_and_values() {
        let fault = json!({"at_ms": 120.5, "t": 7, "action": "kill", "worker": 1, "incarnation": 0,
            "pid": 4242, "signal": "SIGKILL", "dead": 9, "late_ms": 2.5, "note": "kill 1 at 120ms"});
        let theory =
            json!({"per_entry_min": 2.0, "per_entry_max": 8.0, "formula": "M-1 to M²-1", "replicas": 2});
        let waits = |p50| json!({"count": 3, "p50": p50, "p99": 2.5, "max": 3.0, "mean": 1.5});
        let mutex = json!({
            "schema": 1, "algorithm": "ricart-agrawala", "workers": 3, "ok": false,
            "failure": "no progress for 5 s", "model_broken": false,
            "entries": {"total": 9, "by_worker": [3, 3, 3]},
            "messages": {"total": 36, "by_type": {"REPLY": 18, "REQUEST": 18}, "per_entry": 4.0,
                "bad_frames": 1, "dropped_connections": 2},
            "theory": theory, "throughput_per_s": 90.5, "wait_ms": waits(1.0),
            "wait_ms_by_worker": [waits(0.5), waits(1.5)], "max_bypass": 2, "jain": 0.99,
            "jain_waits": 0.875, "elapsed_s": 0.125, "cs_ms": 1.0, "think_ms": 2.0, "seed": 7,
            "network": {"latency_ms": 1.0, "jitter_ms": 0.5, "drop": 0.25},
            "violations": [{"kind": "overlap", "line": 12, "detail": "overlap <at> line 12"}],
            "violation_count": 1,
            "cut_short": [{"kind": "cut-short", "line": 30, "detail": "cut-short <at> line 30"}],
            "run_dir": "/tmp/run-x", "run_dir_kept": true, "plan": "kill 1 at 120ms\nrestart 1 at 300ms",
            "faults": [fault], "never_fired": ["restart 1 at 300ms"], "lost_messages": 3,
            "unreported": 1, "lost_by": {"w0->w1 REQUEST": 2, "w2->w0 REPLY": 1}, "fenced": true,
            "refused": 4, "counters": {"attempts": 11}
        });
        let election = json!({
            "schema": 1, "algorithm": "bully", "workers": 3, "ok": false,
            "failure": "w1 sent a frame over the cap", "model_broken": true, "initiators": "all",
            "detector": "heartbeat (every 50 ms, suspect after 100 ms)", "leader": 2, "term": 5,
            "elections": 2,
            "messages": {"total": 8, "by_type": {"ANSWER": 3, "COORDINATOR": 2, "ELECTION": 3,
                "HEARTBEAT": 40}, "per_election": 4.0, "heartbeats": 40, "bad_frames": 1,
                "dropped_connections": 0},
            "theory": theory, "time_to_elect_ms": 7.5, "message_time_us": 6.25,
            "time_to_elect_t": 1200.0, "elapsed_s": 0.5, "seed": 1,
            "network": {"latency_ms": 0.0, "jitter_ms": 0.0, "drop": 0.0},
            "violations": [{"kind": "two-leaders", "line": 4, "detail": "two-leaders <at> line 4"}],
            "violation_count": 1, "run_dir": "/tmp/elect-x", "run_dir_kept": true,
            "plan": "kill 1 at 120ms", "faults": [fault], "never_fired": [], "lost_messages": 2,
            "unreported": 2,
            "counters": {"elections": 3}
        });
        assert_eq!(serde_json::to_value(samples::mutex()).unwrap(), mutex);
        assert_eq!(serde_json::to_value(samples::election()).unwrap(), election);
        // Nothing rides along unseen (`run_path` is the caller's, never printed).
        let printed: Value =
            serde_json::from_str(&serde_json::to_string(&samples::mutex()).unwrap()).unwrap();
        assert_eq!(printed, mutex);
    }

    /// Both objects open with what every run has, and an election's keeps its order
    /// field for field.
    #[test]
    fn the_json_opens_with_the_run_and_an_elections_keeps_its_order() {
        let head = ["schema", "algorithm", "workers", "ok", "failure", "model_broken"];
        let mutex = keys(&serde_json::to_string(&samples::mutex()).unwrap());
        assert_eq!(mutex[..head.len()], head);
        assert_eq!(mutex.len(), 34);
        let election = keys(&serde_json::to_string_pretty(&samples::election()).unwrap());
        let order = "schema algorithm workers ok failure model_broken initiators detector leader term \
            elections messages theory time_to_elect_ms message_time_us time_to_elect_t elapsed_s seed \
            network violations violation_count run_dir run_dir_kept plan faults never_fired \
            lost_messages unreported counters";
        assert_eq!(election, order.split_whitespace().collect::<Vec<_>>());
    }
}
