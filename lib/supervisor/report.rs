//! The run's report, of either service: what `mutexlab run` and `mutexlab elect` print
//! (formatted by [`crate::report::summary`]) and `--json` emits, built once the run is
//! over from the workers' final statistics, the audit of the run's file (the resource,
//! or the leader file) and the faults the supervisor applied.
//!
//! One [`Report`] holds what every run has; its [`ServiceReport`] what only one service
//! measures ([`MutexPart`], [`ElectionPart`]), flattened into the same JSON object, so
//! each service's `--json` keeps the fields it always had, at the top level.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::evidence::{unjudged, Evidence};
use super::processes::Slot;
use super::rundir::RunDir;
use super::{AppliedFault, RunOpts, HANDOVER};
use crate::algos::{Shape, Theory};
use crate::audit::election_cost::{self, ElectionCost};
use crate::audit::{self, AuditReport, ElectionReport, Violation, WaitStats};
use crate::control;
use crate::registry::AlgoInfo;

/// The run's failure when a worker's runtime could not keep the model its algorithm was
/// promised (`ToSupervisor::Breach`): the worker's line, and that no verdict follows.
pub(super) fn breach_failure(why: &str) -> String {
    format!(
        "{why}; the runtime could not keep the model the algorithm was promised, so the run stopped there and its audit is no verdict on the algorithm"
    )
}

/// The mutual-exclusion run's messages.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Messages {
    /// Every message the workers reported sending.
    pub total: u64,
    /// The same, by type.
    pub by_type: BTreeMap<String, u64>,
    /// `total` over the entries completed (0 when none were).
    pub per_entry: f64,
    /// Frames the workers dropped as unreadable.
    pub bad_frames: u64,
    /// Connections the workers dropped for bad input.
    pub dropped_connections: u64,
}

/// The entries completed.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Entries {
    /// Over all workers.
    pub total: u64,
    /// By worker id.
    pub by_worker: Vec<u64>,
}

/// The version of the `--json` objects of `run` and `elect`: raised when a field
/// changes meaning or goes away (new fields do not raise it).
pub const JSON_SCHEMA: u32 = 1;

/// Under `--agents`, one agent's place in the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AgentPlace {
    /// The address the agent connected from, which its workers' peers dial.
    pub address: String,
    /// The workers it ran, in order.
    pub workers: Vec<u32>,
    /// Its workers ran in a directory of its own (`mutexlab agent --own-dir`), their
    /// resource requests and files through its connection (only when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub own_dir: bool,
}

/// The message faults every worker applied (`--latency`, `--jitter`, `--drop`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Network {
    /// Added to every message's delivery, in ms.
    pub latency_ms: f64,
    /// Up to this much more, drawn per message, in ms.
    pub jitter_ms: f64,
    /// The probability that a message is lost.
    pub drop: f64,
}

/// Everything a run found, of either service; `run --json` and `elect --json` print it.
/// The fields every run has are here; what only one service measures is its
/// [`ServiceReport`], whose fields the JSON lists between the run's outcome and its
/// timing, as if they were this struct's own.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// [`JSON_SCHEMA`].
    pub schema: u32,
    /// The algorithm's name (or the label of a program's).
    pub algorithm: String,
    /// How many workers the run had.
    pub workers: u32,
    /// The run was clean: no failure and no violation.
    pub ok: bool,
    /// Why the run failed, apart from audit violations.
    pub failure: Option<String>,
    /// The failure is a worker's runtime breaking the model the algorithm was promised
    /// (a message over the frame cap, a frame refused from a live peer): the run
    /// stopped there, and `violations` are no verdict on the algorithm.
    pub model_broken: bool,
    /// The failure is a stall: no progress for the stall window, and `failure` is its
    /// diagnosis (for readers in the same process, such as a test's grader).
    #[serde(skip)]
    #[schemars(skip)]
    pub stalled: bool,
    /// What the run's service measured.
    #[serde(flatten)]
    pub service: ServiceReport,
    /// From the start of the run to its end, in seconds.
    pub elapsed_s: f64,
    /// The run's seed.
    pub seed: u64,
    /// The message faults applied.
    pub network: Network,
    /// The byte streams between workers (`--transport`).
    pub transport: super::Transport,
    /// Under `--agents`, each agent in the order it joined and the workers it ran
    /// (empty, and left out of the JSON, when the workers ran here).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentPlace>,
    /// What the auditor found (the first few hundred; `violation_count` counts all).
    pub violations: Vec<Violation>,
    /// How many violations the auditor found.
    pub violation_count: usize,
    /// The same, split into safety and liveness (a stall breaks liveness only).
    #[serde(flatten)]
    pub split: audit::Split,
    /// The directory's path, shown (lossily, if it is not UTF-8): `run_path` is the path.
    pub run_dir: String,
    /// The run directory itself, for whoever writes into it (its report).
    #[serde(skip)]
    pub run_path: std::path::PathBuf,
    /// The run directory was kept (after a failure, or with `--keep`).
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
    /// The algorithm's own counters, summed over workers (e.g. `attempts`).
    pub counters: BTreeMap<String, u64>,
    /// The message trace the run directory holds, as a pattern of its files'
    /// paths (`…/trace-w*.log`), or `None` when it holds none (not kept, or recorded by
    /// nobody).
    #[serde(default)]
    pub trace: Option<String>,
    /// Whether that trace is every event (`--trace`, `--keep`) or only each worker's
    /// last ones, kept by the flight recorder for a failing run ([`crate::flight`]).
    #[serde(default)]
    pub trace_complete: bool,
    /// A stall's deadlocks: each a cycle of the waits-for graph, the workers in the order
    /// each waits for the next (`[1, 2]`: w1 waits for w2, w2 for w1); empty if none.
    #[serde(default)]
    pub deadlocks: Vec<Vec<u32>>,
}

/// What only one service measures: its fields stand in the report's JSON object itself.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ServiceReport {
    /// `mutexlab run`.
    Mutex(MutexPart),
    /// `mutexlab elect`.
    Election(ElectionPart),
}

/// What a mutual-exclusion run measured besides what every run has.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct MutexPart {
    /// The entries completed.
    pub entries: Entries,
    /// The messages sent.
    pub messages: Messages,
    /// Messages per entry, as theory gives them for this run's size.
    pub theory: Option<Theory>,
    /// Entries per second of the run.
    pub throughput_per_s: f64,
    /// Waits from WANT to ENTER, in ms.
    pub wait_ms: WaitStats,
    /// The same, by worker id.
    pub wait_ms_by_worker: Vec<WaitStats>,
    /// The most entries others made while one worker waited.
    pub max_bypass: u64,
    /// Jain's fairness index over the workers' entries.
    pub jain: f64,
    /// The same over their mean waits.
    pub jain_waits: f64,
    /// The critical section's length asked for, in ms.
    pub cs_ms: f64,
    /// The mean think time asked for, in ms.
    pub think_ms: f64,
    /// Sections and requests the end of a failed run cut short (not violations).
    pub cut_short: Vec<Violation>,
    /// Messages lost on purpose, by sender, receiver and type (`w0->w2 REQUEST`).
    pub lost_by: BTreeMap<String, u64>,
    /// `--fenced`: the resource refused writes under a stale fencing token.
    pub fenced: bool,
    /// Writes the fenced resource refused (0 unless fenced).
    pub refused: u64,
}

/// An election run's messages.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct ElectMessages {
    /// The election's own messages: every type but HEARTBEAT.
    pub total: u64,
    /// Every type, HEARTBEAT included.
    pub by_type: BTreeMap<String, u64>,
    /// `total` over the elections held (distinct terms).
    pub per_election: f64,
    /// The heartbeat detector's messages.
    pub heartbeats: u64,
    /// Frames the workers dropped as unreadable.
    pub bad_frames: u64,
    /// Connections the workers dropped for bad input.
    pub dropped_connections: u64,
}

/// What an election run measured besides what every run has.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ElectionPart {
    /// Who called an election at the start (`all`, `lowest` or ids).
    pub initiators: String,
    /// How workers learnt of peers going down and up.
    pub detector: String,
    /// The time bounds the nodes were given and the reply timeout they derive from them
    /// (`2·Tm + Tp = 2×0 ms + 50 ms = 50 ms`; [`crate::algorithm::Timing`]).
    pub timeouts: String,
    /// The leader every live worker named at the end.
    pub leader: Option<u32>,
    /// The newest term any of them had for it.
    pub term: Option<u64>,
    /// Elections held: distinct terms announced.
    pub elections: usize,
    /// The messages sent.
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
    /// Leader records written after the run had settled, while its workers were being
    /// stopped (the audit's `after_end`): the teardown's, not judged.
    pub after_end: usize,
    /// The run against the theory of the run it was, from its trace: the killed lives'
    /// sends (in `messages.total`), each round's bound, and the turnaround after a
    /// leader's kill in message times; `None` when the trace could not be read.
    pub cost: Option<ElectionCost>,
}

impl Report {
    /// The mutual-exclusion part, unless this is an election's report.
    pub fn mutex(&self) -> Option<&MutexPart> {
        match &self.service {
            ServiceReport::Mutex(m) => Some(m),
            ServiceReport::Election(_) => None,
        }
    }

    /// The election part, unless this is a mutual-exclusion report.
    pub fn election(&self) -> Option<&ElectionPart> {
        match &self.service {
            ServiceReport::Election(e) => Some(e),
            ServiceReport::Mutex(_) => None,
        }
    }

    /// Messages by type, as the workers counted them.
    pub fn by_type(&self) -> &BTreeMap<String, u64> {
        match &self.service {
            ServiceReport::Mutex(m) => &m.messages.by_type,
            ServiceReport::Election(e) => &e.messages.by_type,
        }
    }

    /// What theory expects per entry, or per election.
    pub fn theory(&self) -> Option<&Theory> {
        match &self.service {
            ServiceReport::Mutex(m) => m.theory.as_ref(),
            ServiceReport::Election(e) => e.theory.as_ref(),
        }
    }

    /// The messages the service counts (an election's leave the heartbeats aside),
    /// and the same per entry, or per election.
    pub fn counted(&self) -> (u64, f64) {
        match &self.service {
            ServiceReport::Mutex(m) => (m.messages.total, m.messages.per_entry),
            ServiceReport::Election(e) => (e.messages.total, e.messages.per_election),
        }
    }

    /// Frames and connections the workers dropped for bad input.
    pub fn bad_input(&self) -> (u64, u64) {
        match &self.service {
            ServiceReport::Mutex(m) => (m.messages.bad_frames, m.messages.dropped_connections),
            ServiceReport::Election(e) => (e.messages.bad_frames, e.messages.dropped_connections),
        }
    }
}

/// What the auditor made of the run's evidence file, by service.
pub(super) enum Audited {
    /// The resource file's audit.
    Mutex(AuditReport),
    /// The leader file's audit, and the one-way message time T measured before the run.
    Election(ElectionReport, Option<Duration>),
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

/// What a finished run leaves for its report, gathered from the supervisor's
/// components once every worker is gone: the report is made from these values alone.
pub(super) struct Outcome<'a> {
    /// What the run asked for.
    pub(super) opts: &'a RunOpts,
    /// The algorithm's entry in the registry.
    pub(super) info: &'static AlgoInfo,
    /// Every worker's slot, with its final statistics if they came.
    pub(super) slots: &'a [Slot],
    /// The faults applied, in order.
    pub(super) applied: &'a [AppliedFault],
    /// The plan steps that never fired, in the plan grammar.
    pub(super) never_fired: Vec<String>,
    /// From the start of the run to its end (or to now, if it has not ended).
    pub(super) elapsed: Duration,
    /// A worker's runtime broke the model its algorithm was promised.
    pub(super) model_broken: bool,
    /// The resource file was gone during the run.
    pub(super) evidence_gone: bool,
    /// Under `--agents`, where the workers ran.
    pub(super) agents: Vec<AgentPlace>,
}

impl Outcome<'_> {
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

    /// Audit the run's `evidence` in `dir`. Evidence that cannot be read leaves the run
    /// unjudged, which `failure` then says.
    pub(super) fn audit(
        &self,
        dir: &RunDir,
        faults: &audit::FaultLog,
        failure: &mut Option<String>,
        evidence: &Evidence,
    ) -> Audited {
        match *evidence {
            Evidence::Resource => {
                let path = dir.path.join(control::RESOURCE_FILE);
                Audited::Mutex(audit::audit_file(&path, faults).unwrap_or_else(|e| {
                    // A run that failed because the file is gone already says so.
                    if !(self.evidence_gone && failure.is_some()) {
                        unjudged(failure, e);
                    }
                    AuditReport::default()
                }))
            }
            Evidence::Leaders(t) => {
                let rules = audit::Rules {
                    highest_wins: self.info.highest_wins,
                    bound_ns: None,
                    overlap_ns: HANDOVER.as_nanos() as u64,
                };
                let path = dir.path.join(control::LEADERS_FILE);
                let a = if self.info.own_leaders {
                    audit::superpeers::audit_superpeers_file(&path, faults)
                } else {
                    audit::audit_leaders_file(&path, faults, rules)
                };
                let a = a.unwrap_or_else(|e| {
                    unjudged(failure, e);
                    ElectionReport::default()
                });
                Audited::Election(a, t)
            }
        }
    }

    /// The run's report: the workers' statistics summed, the audit's verdict, the faults
    /// applied and the plan steps left. `run_dir_kept` is the caller's to settle.
    pub(super) fn report(&self, mut audited: Audited, failure: Option<String>, dir: &RunDir) -> Report {
        let mut sum = self.sum_stats();
        let elapsed = self.elapsed;
        let (ok, violations, violation_count, split) = match &mut audited {
            Audited::Mutex(a) => {
                (a.ok, std::mem::take(&mut a.violations), a.violation_count, a.split.clone())
            }
            Audited::Election(a, _) => {
                (a.ok, std::mem::take(&mut a.violations), a.violation_count, a.split.clone())
            }
        };
        let service = match audited {
            Audited::Mutex(a) => ServiceReport::Mutex(self.mutex_part(a, &mut sum, elapsed)),
            Audited::Election(a, t) => ServiceReport::Election(self.election_part(&a, &mut sum, t)),
        };
        Report {
            schema: JSON_SCHEMA,
            algorithm: self.opts.algo.name.to_string(),
            workers: self.opts.workers,
            ok: ok && failure.is_none(),
            failure,
            model_broken: self.model_broken,
            stalled: false,
            service,
            elapsed_s: elapsed.as_secs_f64(),
            seed: self.opts.seed,
            network: self.network(),
            transport: self.opts.transport,
            agents: self.agents.clone(),
            violations,
            violation_count,
            split,
            run_dir: dir.path.display().to_string(),
            run_path: dir.path.clone(),
            run_dir_kept: true,
            plan: self.opts.plan.to_string(),
            faults: self.applied.to_vec(),
            never_fired: self.never_fired.clone(),
            lost_messages: sum.lost,
            unreported: self.unreported(),
            counters: sum.counters,
            trace: None,
            trace_complete: false,
            deadlocks: Vec::new(),
        }
    }

    /// A mutual-exclusion run's own measures: its entries, messages, waits and fairness.
    fn mutex_part(&self, a: AuditReport, sum: &mut Summed, elapsed: Duration) -> MutexPart {
        let total = sum.sent.values().sum::<u64>();
        let entries = a.entries;
        let per = |n: f64, over: f64| if over > 0.0 { n / over } else { 0.0 };
        let shape = Shape { n: self.opts.workers, replicas: self.opts.replicas, initiators: 0 };
        MutexPart {
            entries: Entries { total: entries, by_worker: a.entries_by_worker },
            messages: Messages {
                total,
                by_type: std::mem::take(&mut sum.sent),
                per_entry: per(total as f64, entries as f64),
                bad_frames: sum.bad_frames,
                dropped_connections: sum.dropped_connections,
            },
            theory: (self.info.theory)(shape),
            throughput_per_s: per(entries as f64, elapsed.as_secs_f64()),
            wait_ms: a.wait_ms,
            wait_ms_by_worker: a.wait_ms_by_worker,
            max_bypass: a.max_bypass,
            jain: a.jain,
            jain_waits: a.jain_waits,
            cs_ms: self.opts.cs_ms,
            think_ms: self.opts.think_ms,
            cut_short: a.cut_short,
            lost_by: std::mem::take(&mut sum.lost_by),
            fenced: a.fenced,
            refused: a.refused,
        }
    }

    /// An election run's own measures: the leader, the elections held and their
    /// messages (heartbeats aside), and the time to elect in ms and in message times `t`.
    fn election_part(&self, a: &ElectionReport, sum: &mut Summed, t: Option<Duration>) -> ElectionPart {
        let heartbeats = sum.sent.get(crate::runtime::HEARTBEAT).copied().unwrap_or(0);
        let total = sum.sent.values().sum::<u64>() - heartbeats;
        let elections = a.terms;
        let e = self.opts.elect.as_ref();
        let initiators = e.map_or(0, |e| e.initiators.count(self.opts.workers));
        let shape = Shape { n: self.opts.workers, replicas: None, initiators };
        let t_ms = t.map(|t| t.as_secs_f64() * 1e3).filter(|&t| t > 0.0);
        ElectionPart {
            initiators: e.map(|e| e.initiators.to_string()).unwrap_or_default(),
            detector: self.opts.detector.to_string(),
            timeouts: super::options::timing(self.opts).to_string(),
            leader: a.leader.map(|l| l.0),
            term: a.leader.map(|l| l.1),
            elections,
            messages: ElectMessages {
                total,
                by_type: std::mem::take(&mut sum.sent),
                per_election: if elections > 0 { total as f64 / elections as f64 } else { total as f64 },
                heartbeats,
                bad_frames: sum.bad_frames,
                dropped_connections: sum.dropped_connections,
            },
            theory: (self.info.theory)(shape),
            time_to_elect_ms: a.time_to_agree_ms,
            message_time_us: t_ms.map(|t| t * 1e3),
            time_to_elect_t: a.time_to_agree_ms.zip(t_ms).map(|(e, t)| e / t),
            after_end: a.after_end,
            cost: None,
        }
    }

    /// The lives whose final statistics never came: (worker, incarnation).
    fn unreported_lives(&self) -> std::collections::BTreeSet<(u32, u32)> {
        let mut lives = std::collections::BTreeSet::new();
        for (w, s) in self.slots.iter().enumerate() {
            let last = s.incarnation + u32::from(s.stats.is_none());
            lives.extend((0..last).map(|inc| (w as u32, inc)));
        }
        lives
    }

    /// Weigh an election run against the theory of the run it was, from its trace in
    /// `dir` (the trace files, or else the flight recorder's rings, written out to a
    /// temporary directory and left in place), and count the killed lives' sends into
    /// its messages. A trace that cannot be read leaves `cost` empty, with a line saying why.
    pub(super) fn weigh_election(&self, report: &mut Report, dir: &RunDir, faults: &audit::FaultLog) {
        let ServiceReport::Election(e) = &mut report.service else { return };
        if self.info.own_leaders {
            return;
        }
        let unreported = self.unreported_lives();
        let body = self.info.body;
        let rings = match crate::trace::traces_from_rings(&dir.path, |_| Some(body)) {
            Ok(r) => r,
            Err(err) => return eprintln!("mutexlab: election cost not weighed: {err}"),
        };
        let from = rings.as_ref().map_or(dir.path.as_path(), |(t, _)| t.path());
        let start_ns = election_cost::start_of(&dir.path.join(control::LEADERS_FILE)).unwrap_or(0);
        let initiators = self.opts.elect.as_ref().map_or(0, |x| x.initiators.count(self.opts.workers));
        let inputs = election_cost::Inputs {
            workers: self.opts.workers,
            initiators,
            theory: self.info.theory,
            faults,
            start_ns,
            unreported: &unreported,
            t_ms: e.message_time_us.map(|us| us / 1e3),
            reported: e.messages.total,
            notes_turnaround: (self.info.name == "bully").then_some(election_cost::NOTES_TURNAROUND),
            asks: (self.info.name == "bully").then_some("ELECTION"),
        };
        match election_cost::analyse(from, &inputs) {
            Ok(c) => {
                e.messages.total += c.unreported_sent;
                for (k, v) in &c.unreported_by_type {
                    *e.messages.by_type.entry(k.clone()).or_default() += v;
                }
                let elections = e.elections.max(1) as f64;
                e.messages.per_election = e.messages.total as f64 / elections;
                e.cost = Some(c);
            }
            Err(err) => eprintln!("mutexlab: election cost not weighed: {err}"),
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

    /// The split of `kinds`, one violation each.
    fn split(kinds: &[&str]) -> audit::Split {
        let mut s = audit::Split { safety_ok: true, ..audit::Split::default() };
        for k in kinds {
            s.count(k, 1);
        }
        s
    }

    fn fault() -> AppliedFault {
        AppliedFault {
            at_ms: 120.5,
            t: 7,
            action: crate::faults::FaultKind::Kill,
            worker: Some(1),
            incarnation: Some(0),
            pid: Some(4242),
            signal: Some("SIGKILL".into()),
            dead: Some(9),
            late_ms: Some(2.5),
            standing: Some(crate::faults::Standing::Outside),
            step: None,
            kernel: false,
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
    pub(crate) fn mutex() -> Report {
        let service = ServiceReport::Mutex(MutexPart {
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
            cs_ms: 1.0,
            think_ms: 2.0,
            cut_short: vec![violation("cut-short", 30)],
            lost_by: counts(&[("w0->w1 REQUEST", 2), ("w2->w0 REPLY", 1)]),
            fenced: true,
            refused: 4,
        });
        Report {
            schema: JSON_SCHEMA,
            algorithm: "ricart-agrawala".into(),
            workers: 3,
            ok: false,
            failure: Some("no progress for 5 s".into()),
            model_broken: false,
            stalled: false,
            service,
            elapsed_s: 0.125,
            seed: 7,
            network: Network { latency_ms: 1.0, jitter_ms: 0.5, drop: 0.25 },
            transport: Default::default(),
            agents: Vec::new(),
            violations: vec![violation("overlap", 12)],
            violation_count: 1,
            split: split(&["overlap"]),
            run_dir: "/tmp/run-x".into(),
            run_path: "/tmp/run-x".into(),
            run_dir_kept: true,
            plan: "kill 1 at 120ms\nrestart 1 at 300ms".into(),
            faults: vec![fault()],
            never_fired: vec!["restart 1 at 300ms".into()],
            lost_messages: 3,
            unreported: 1,
            counters: counts(&[("attempts", 11)]),
            trace: Some("/tmp/run-x/trace-w*.log".into()),
            trace_complete: false,
            deadlocks: vec![vec![0, 2]],
        }
    }

    /// An election run's report.
    pub(crate) fn election() -> Report {
        let service = ServiceReport::Election(ElectionPart {
            initiators: "all".into(),
            detector: "heartbeat (every 50 ms, suspect after 100 ms)".into(),
            timeouts: "2·Tm + Tp = 2×0 ms + 50 ms = 50 ms".into(),
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
            after_end: 2,
            cost: None,
        });
        Report {
            schema: JSON_SCHEMA,
            algorithm: "bully".into(),
            workers: 3,
            ok: false,
            failure: Some("w1 sent a frame over the cap".into()),
            model_broken: true,
            stalled: false,
            service,
            elapsed_s: 0.5,
            seed: 1,
            network: Network::default(),
            transport: Default::default(),
            agents: Vec::new(),
            violations: vec![violation("two-leaders", 4)],
            violation_count: 1,
            split: split(&["two-leaders"]),
            run_dir: "/tmp/elect-x".into(),
            run_path: "/tmp/elect-x".into(),
            run_dir_kept: true,
            plan: "kill 1 at 120ms".into(),
            faults: vec![fault()],
            never_fired: Vec::new(),
            lost_messages: 2,
            unreported: 2,
            counters: counts(&[("elections", 3)]),
            trace: Some("/tmp/elect-x/trace-w*.log".into()),
            trace_complete: true,
            deadlocks: Vec::new(),
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
            "network": {"latency_ms": 1.0, "jitter_ms": 0.5, "drop": 0.25}, "transport": "unix",
            "violations": [{"kind": "overlap", "line": 12, "detail": "overlap <at> line 12"}],
            "violation_count": 1,
            "cut_short": [{"kind": "cut-short", "line": 30, "detail": "cut-short <at> line 30"}],
            "run_dir": "/tmp/run-x", "run_dir_kept": true, "plan": "kill 1 at 120ms\nrestart 1 at 300ms",
            "faults": [fault], "never_fired": ["restart 1 at 300ms"], "lost_messages": 3,
            "unreported": 1, "lost_by": {"w0->w1 REQUEST": 2, "w2->w0 REPLY": 1}, "fenced": true,
            "refused": 4, "counters": {"attempts": 11},
            "trace": "/tmp/run-x/trace-w*.log", "trace_complete": false, "deadlocks": [[0, 2]]
        });
        let election = json!({
            "schema": 1, "algorithm": "bully", "workers": 3, "ok": false,
            "failure": "w1 sent a frame over the cap", "model_broken": true, "initiators": "all",
        "detector": "heartbeat (every 50 ms, suspect after 100 ms)",
            "timeouts": "2·Tm + Tp = 2×0 ms + 50 ms = 50 ms", "leader": 2, "term": 5,
            "elections": 2,
            "messages": {"total": 8, "by_type": {"ANSWER": 3, "COORDINATOR": 2, "ELECTION": 3,
                "HEARTBEAT": 40}, "per_election": 4.0, "heartbeats": 40, "bad_frames": 1,
                "dropped_connections": 0},
            "theory": theory, "time_to_elect_ms": 7.5, "message_time_us": 6.25,
            "time_to_elect_t": 1200.0, "after_end": 2, "cost": null, "elapsed_s": 0.5, "seed": 1,
            "network": {"latency_ms": 0.0, "jitter_ms": 0.0, "drop": 0.0}, "transport": "unix",
            "violations": [{"kind": "two-leaders", "line": 4, "detail": "two-leaders <at> line 4"}],
            "violation_count": 1, "run_dir": "/tmp/elect-x", "run_dir_kept": true,
            "plan": "kill 1 at 120ms", "faults": [fault], "never_fired": [], "lost_messages": 2,
            "unreported": 2,
            "counters": {"elections": 3},
            "trace": "/tmp/elect-x/trace-w*.log", "trace_complete": true, "deadlocks": []
        });
        // Safety and liveness apart (one json! of all would pass the macro's recursion limit).
        let (mut mutex, mut election) = (mutex, election);
        for (j, kind) in [(&mut mutex, "overlap"), (&mut election, "two-leaders")] {
            j["safety_ok"] = json!(false);
            j["safety_violations"] = json!(1);
            j["liveness_violations"] = json!(0);
            j["violations_by_kind"] = json!({ kind: 1 });
        }
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
        assert_eq!(mutex.len(), 42);
        let election = keys(&serde_json::to_string_pretty(&samples::election()).unwrap());
        let order =
            "schema algorithm workers ok failure model_broken initiators detector timeouts leader term \
            elections messages theory time_to_elect_ms message_time_us time_to_elect_t after_end cost elapsed_s seed \
            network transport violations violation_count safety_ok safety_violations liveness_violations \
            violations_by_kind run_dir run_dir_kept plan faults never_fired \
            lost_messages unreported counters trace trace_complete deadlocks";
        assert_eq!(election, order.split_whitespace().collect::<Vec<_>>());
    }

    /// The report's sums from the workers' slots alone: no process, no run directory.
    #[test]
    fn the_report_sums_what_came_and_counts_the_lives_that_sent_nothing() {
        use super::{Outcome, Slot};
        use crate::audit::AuditReport;
        use crate::control::WorkerStats;
        use nix::unistd::Pid;
        use std::time::Duration;
        let counts = |pairs: &[(&str, u64)]| pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect();
        let opts = crate::supervisor::options::tests::sample();
        let info = crate::supervisor::validate(&opts, &crate::registry::Registry::builtin()).unwrap();
        let slot = |incarnation, stats: Option<WorkerStats>| Slot {
            stats,
            ..Slot::new(Pid::from_raw(i32::MAX), incarnation)
        };
        let stats = |sent, attempts, lost| WorkerStats {
            sent: counts(sent),
            counters: counts(&[("attempts", attempts)]),
            lost,
            ..Default::default()
        };
        // A restarted worker whose second life reported, one that never did, one that did.
        let slots = [
            slot(1, Some(stats(&[("REQUEST", 2)], u64::MAX, 1))),
            slot(0, None),
            slot(0, Some(stats(&[("REQUEST", 3), ("REPLY", 1)], 5, 2))),
        ];
        let outcome = Outcome {
            opts: &opts,
            info,
            slots: &slots,
            applied: &[],
            never_fired: Vec::new(),
            elapsed: Duration::from_secs(2),
            model_broken: false,
            evidence_gone: false,
            agents: Vec::new(),
        };
        assert_eq!(outcome.unreported(), 2, "w0's first life and w1's only one");
        let mut sum = outcome.sum_stats();
        assert_eq!(sum.sent, counts(&[("REPLY", 1), ("REQUEST", 5)]));
        assert_eq!(sum.counters["attempts"], u64::MAX, "a program's counts saturate");
        assert_eq!(sum.lost, 3);
        let part =
            outcome.mutex_part(AuditReport { entries: 4, ..Default::default() }, &mut sum, outcome.elapsed);
        assert_eq!((part.messages.total, part.messages.per_entry, part.throughput_per_s), (6, 1.5, 2.0));
    }
}
