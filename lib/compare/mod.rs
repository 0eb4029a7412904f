//! `mutexlab compare`: the course notes' comparison table of mutual-exclusion
//! algorithms (messages per entry and exit, delay before entry in message times, and
//! problems), measured with real runs on this machine and set beside what the notes
//! and the registry's theory claim.
//!
//! For each algorithm it makes:
//! - a light-load run (long think time next to a short section) and a saturated one (no
//!   think time): messages per entry from the run report, heartbeats left out, and the
//!   median wait at light load, the notes' "delay before entry";
//! - from the saturated run's `resource.log`, the synchronisation delay: from one
//!   worker's EXIT to the next ENTER while someone was waiting ([`sync_delays`]);
//! - from the saturated run's trace, the same handoffs in message hops (the messages
//!   on the shortest causal chain from the leave to the enter, [`crate::handoff`]),
//!   their wall-clock time in the run's own median message time, and the share of time
//!   the resource was held against W/(W+kT) ([`SyncHops`]);
//! - short fault runs, each judged `survives`, `stalls` or `unsafe` from the run's
//!   verdict and audit: a crash of a worker outside the section, of the holder, of the
//!   coordinator (the highest id), and lost messages (`--drop`).
//!
//! Times are also given in message times T: the one-way time between two processes,
//! measured once by [`probe::ping_pong`](crate::supervisor::probe::ping_pong) at the start. The output is a [`Comparison`],
//! printed as a text table ([`text`]), a Markdown table ([`markdown`]) or JSON.
//!
//! **Repeats** (`--repeat R`, [`DEFAULT_REPEAT`]): every run above is made R times,
//! repeat r with seed `seed + r` (fault runs from `seed + r·3`, so that repeat 0 is the
//! single run of old). A figure is the median over the repeats with its range
//! ([`Spread`], [`RowSpread`]); the hops are counted over every handoff of every repeat. A fault's outcomes are tallied over the repeats
//! ([`Tally`]: `stalls 2/3, survives 1/3` where they differ), and beside them the
//! simulator decides the same fault over [`SIM_SEEDS`] seeds ([`SimDecision`],
//! [`crate::sim::fault_run`]: the crash right after the third entry, never restarted,
//! or each message lost with the same probability), so that what the algorithm does
//! always can be told from what one run happened to do.
//!
//! **Scheduling**: the timing runs (light and saturated) come first, one
//! at a time with nothing beside them: on a small machine a second run would load the
//! first and move its delays. Then the fault runs and the simulator's decisions go up to
//! [`fault_width`] at once (two per core, at most [`MAX_FAULT_WIDTH`]). A fault run's
//! figure is its outcome, not a time, and most of its time is asleep: 5 ms sections, or
//! a stalled run's silent one-second window, which was most of `compare`'s time when the
//! fault runs went one after the other (85 stalled runs of 161 in a default `compare`,
//! 97 s of its 150). The stall window is not shortened for going side by side (and the
//! supervisor discounts from its stall clock any time it was itself behind, as in every
//! run); what the load could do to it is measured on every comparison instead: each fault run's
//! longest spell from one ENTER or EXIT to the next ([`longest_quiet`]), the longest of
//! them in [`FaultSettings::longest_quiet_ms`] and the footer, to be read against the
//! 1000 ms window. (The longest is `token-ring-ft` under lost messages waiting out its
//! own 250 ms watchdog once or twice, not the load: 220–490 ms; the other algorithms'
//! stayed under 170 ms with four fault runs side by side on two cores at load 12–21,
//! under 300 ms at load 78–120.)

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::algorithm::ServiceKind;
use crate::algos::{Claim, Family, Shape, Theory};
use crate::control::{Detector, RESOURCE_FILE};
use crate::faults::Plan;
use crate::registry::{self, AlgoInfo};
use crate::resource::Record;
use crate::supervisor::{self, AppliedFault, Report, RunError, RunOpts};

/// Version of the JSON layout; raised whenever a field changes meaning or goes away.
/// (Repeats added fields only: a figure is still the figure, now the median over them.)
pub const SCHEMA: u32 = 1;

/// Repeats of every run unless `--repeat` says: three give a true median and a range,
/// and tell `2/3` from `3/3`. With the fault runs side by side ([`fault_width`]) a
/// default `compare` takes about a minute on two cores shared with other work (release
/// build): 58 s at load average 3.5, 60 s at 12–21 (28 s of it the timing runs);
/// `--repeat 1` 20–23 s. With every run one after the other they took 148–150 s and 51 s.
pub const DEFAULT_REPEAT: u32 = 3;
/// The most repeats `--repeat` takes.
pub const MAX_REPEAT: u32 = 50;
/// The seeds over which the simulator decides each fault.
pub const SIM_SEEDS: std::ops::Range<u64> = 0..50;
/// A simulated fault run that has not finished after this many steps is a stall (a
/// clean run of 5 nodes and 10 entries takes a few hundred).
const SIM_MAX_STEPS: u64 = 20_000;

/// Light load: think time long next to the section, so most requests find nobody ahead.
const LIGHT: (f64, f64) = (1.0, 20.0);
/// Saturation: every worker asks again as soon as it leaves.
const SATURATED: (f64, f64) = (1.0, 0.0);
/// Fault runs: sections long enough that the holder is surely inside when the kill
/// fires, a little think time, and few entries.
const FAULT_TIMING: (f64, f64) = (5.0, 2.0);
const FAULT_ENTRIES: u64 = 10;
/// The ENTER at which a crash fires: early, with the run well under way.
const FAULT_AT_ENTRY: u64 = 3;
/// Long enough that a loaded 2-core machine is not taken for a stall, short enough
/// that a stalled run costs about a second.
const FAULT_STALL_MS: u64 = 1000;
/// Loss probability for the lost-message run: high enough that some message is lost
/// in a short run, where one lost message is all it takes.
const DROP: f64 = 0.05;
/// Each fault run is retried with the next seed until the fault hit as intended (the
/// victim outside the section, say), at most this many times.
const ATTEMPTS: u64 = 3;
/// Round trips for the ping-pong that measures T.
const PING_PONG_ROUNDS: u32 = 2000;

/// What to compare.
#[derive(Clone, Debug)]
pub struct CompareOpts {
    /// The `mutexlab` executable the workers are started from.
    pub exe: PathBuf,
    /// Algorithm names; empty means [`default_algorithms`].
    pub algos: Vec<String>,
    /// Workers in every run.
    pub workers: u32,
    /// Entries per worker in the light and saturated runs.
    pub entries: u64,
    /// The first run's seed (a fault run that misses retries with the next).
    pub seed: u64,
    /// How survivors learn of a crash in the fault runs (the others have no crash).
    pub detector: Detector,
    /// How many times every run is made ([`DEFAULT_REPEAT`]).
    pub repeat: u32,
}

/// An algorithm left out of the default list, and why.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Excluded {
    /// Its name.
    pub algorithm: String,
    /// Why it is not compared.
    pub why: String,
}

/// The whole measured table; `--json` prints it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    /// The version of this layout.
    pub schema: u32,
    /// Workers in every run.
    pub workers: u32,
    /// Entries per worker in the light and saturated runs.
    pub entries_per_worker: u64,
    /// The light-load runs' timing.
    pub light: Timing,
    /// The saturated runs' timing.
    pub saturation: Timing,
    /// How the fault runs are made.
    pub fault_runs: FaultSettings,
    /// The one-way message time T, in µs.
    pub message_time_us: f64,
    /// How long the whole comparison took, in seconds.
    pub elapsed_s: f64,
    /// How many times every run was made; each figure is the median over them.
    pub repeat: u32,
    /// Algorithms left out of the default list.
    pub excluded: Vec<Excluded>,
    /// One row per algorithm compared.
    pub algorithms: Vec<Row>,
}

impl Comparison {
    /// The settings of a comparison of `workers` workers, `entries` entries each, and
    /// `detector` in the fault runs; nothing measured yet (T and the time taken are 0).
    pub fn new(workers: u32, entries: u64, detector: &str) -> Comparison {
        Comparison {
            schema: SCHEMA,
            workers,
            entries_per_worker: entries,
            light: Timing { cs_ms: LIGHT.0, think_ms: LIGHT.1 },
            saturation: Timing { cs_ms: SATURATED.0, think_ms: SATURATED.1 },
            fault_runs: FaultSettings {
                entries_per_worker: FAULT_ENTRIES,
                cs_ms: FAULT_TIMING.0,
                think_ms: FAULT_TIMING.1,
                stall_ms: FAULT_STALL_MS,
                side_by_side: 1,
                longest_quiet_ms: None,
                drop: DROP,
                detector: detector.to_string(),
                sim_seeds: format!("{}..{}", SIM_SEEDS.start, SIM_SEEDS.end),
            },
            message_time_us: 0.0,
            elapsed_s: 0.0,
            repeat: 1,
            excluded: Vec::new(),
            algorithms: Vec::new(),
        }
    }
}

/// Section and think time of a run, in ms.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Timing {
    /// The critical section's length.
    pub cs_ms: f64,
    /// The mean think time.
    pub think_ms: f64,
}

/// How the fault runs are made.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct FaultSettings {
    /// Entries per worker.
    pub entries_per_worker: u64,
    /// The critical section's length, in ms.
    pub cs_ms: f64,
    /// The mean think time, in ms.
    pub think_ms: f64,
    /// The stall window, in ms.
    pub stall_ms: u64,
    /// The most fault runs let go side by side ([`fault_width`]); the timing runs go one
    /// at a time with nothing beside them.
    pub side_by_side: u32,
    /// The longest any fault run went from one ENTER or EXIT to the next, in ms
    /// ([`longest_quiet`]): how near a run that went on came to the stall window. `null`
    /// before anything is measured.
    pub longest_quiet_ms: Option<f64>,
    /// The probability of losing a message in the lost-messages run.
    pub drop: f64,
    /// How survivors learn of a crash.
    pub detector: String,
    /// The seeds over which the simulator decides each fault, as `A..B`.
    pub sim_seeds: String,
}

/// One algorithm's line of the table.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Row {
    /// The algorithm's name.
    pub algorithm: String,
    /// Its family (the registry's).
    pub family: String,
    /// Messages per entry, measured and claimed.
    pub messages_per_entry: PerEntry,
    /// Median wait from WANT to ENTER at light load, the notes' delay before entry (the
    /// coordinator's own left out where its entries are free); `null` if nobody entered.
    pub entry_delay: Option<Delay>,
    /// Median EXIT to next ENTER while someone waits, at saturation; `null` if nobody
    /// ever waited.
    pub sync_delay: Option<Delay>,
    /// Handoffs at saturation in message hops, from the trace; `null` if the trace could
    /// not be read (a note says why).
    pub sync_hops: Option<SyncHops>,
    /// The fault runs, and what the notes say breaks it.
    pub problems: Problems,
    /// Both measurement runs were clean (no violation, no failure).
    pub clean: bool,
    /// Why a measurement run was not clean.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes_on_runs: Vec<String>,
    /// Each figure's median and range over the repeats.
    pub spread: RowSpread,
}

/// One figure over the repeats: the median (the mean of the middle two for an even
/// count) and the range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// How many repeats gave the figure.
    pub runs: usize,
}

impl Spread {
    /// The spread of `values`; `None` if there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        let median = if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 };
        Some(Spread { median, min: v[0], max: v[v.len() - 1], runs: v.len() })
    }

    /// `median [min–max]` with `p` decimals; the median alone for a single run.
    pub fn words(&self, p: usize) -> String {
        if self.runs <= 1 {
            format!("{:.p$}", self.median)
        } else {
            format!("{:.p$} [{:.p$}–{:.p$}]", self.median, self.min, self.max)
        }
    }
}

/// Every figure of a row over the repeats (each over the repeats that gave it; `null`
/// where none did). The row's own fields hold the medians.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct RowSpread {
    /// How many times each run was made.
    pub repeats: u32,
    /// Messages per entry at light load.
    pub messages_light: Option<Spread>,
    /// Messages per entry at saturation.
    pub messages_saturation: Option<Spread>,
    /// The delay before entry, in ms (each repeat's median).
    pub entry_delay_ms: Option<Spread>,
    /// The same in message times T.
    pub entry_delay_t: Option<Spread>,
    /// The synchronisation delay, in ms (each repeat's median).
    pub sync_delay_ms: Option<Spread>,
    /// The same in message times T.
    pub sync_delay_t: Option<Spread>,
    /// Each repeat's median hops.
    pub sync_hops: Option<Spread>,
    /// Each repeat's handoff in its own message times.
    pub sync_in_message_times: Option<Spread>,
    /// Each repeat's measured utilisation.
    pub utilisation: Option<Spread>,
}

/// [`PerEntry::counted`] when every entry counts.
pub const EVERY_ENTRY: &str = "every entry";
/// [`PerEntry::counted`] when the coordinator's own entries, which cost nothing, are left out.
pub const CLIENT_ENTRIES: &str = "entries of every worker but the coordinator";

/// Messages per entry, measured and claimed.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct PerEntry {
    /// At light load.
    pub light: f64,
    /// At saturation.
    pub saturation: f64,
    /// Which entries are counted: all, or all but the coordinator's own, which cost
    /// nothing and which the notes' table (a coordinator apart from its clients) has not.
    pub counted: &'static str,
    /// HEARTBEATs sent, left out of the counts above.
    pub heartbeats_light: u64,
    /// The same at saturation.
    pub heartbeats_saturation: u64,
    /// The registry's theory for this N (over every entry, the coordinator's included).
    pub theory: Option<Theory>,
    /// What the notes (or, for algorithms they leave out, the textbook) say.
    pub notes: String,
}

/// A delay in ms and in message times T, and what is claimed for it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Delay {
    /// The median, in ms.
    pub ms: f64,
    /// The same in message times T.
    pub t: f64,
    /// How many delays the median is of.
    pub samples: usize,
    /// What the notes claim.
    pub notes: String,
}

/// The saturated run's handoffs counted in messages, from its trace
/// ([`crate::handoff`]), and what the notes claim.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SyncHops {
    /// Median messages on the shortest causal chain from a leave to the next enter,
    /// over handoffs with a causal path; `null` if none had one.
    pub median: Option<f64>,
    /// Their mean: the sequential messages a handoff costs on average.
    pub mean: Option<f64>,
    /// Every handoff measured, by hops, and how many had no causal path.
    pub handoffs: crate::handoff::Handoffs,
    /// The median handoff (leave to enter, from the trace) over the run's own median
    /// SEND→RECV time; `null` without a handoff or a message.
    pub in_message_times: Option<f64>,
    /// The run's median SEND→RECV time, in µs.
    pub message_time_us: Option<f64>,
    /// The resource's utilisation at saturation against W/(W+kT).
    pub utilisation: Option<Utilisation>,
    /// What the notes claim (the registry's `Claim::sync`).
    pub notes: String,
}

/// The share of the saturated run's time the resource was held, against what k
/// sequential messages per handoff allow: the notes' W/(W+2T) for the coordinator (W+3T
/// per entry, the REQUEST overlapping the previous section).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Utilisation {
    /// Sections' total length over the time from the first ENTER to the last EXIT.
    pub measured: f64,
    /// W/(W+kT): W the median section, k the median hops, T the run's median message time.
    pub predicted: f64,
    /// The median section W, in ms.
    pub section_ms: f64,
    /// The k used.
    pub k: f64,
}

/// The fault runs and what the notes say breaks the algorithm.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Problems {
    /// What the notes say breaks the algorithm.
    pub notes: &'static str,
    /// One run per fault: the first repeat's.
    pub runs: Vec<FaultRun>,
    /// Per fault, in the order of `runs`: every repeat, their tally, and what the
    /// simulator decides.
    pub by_fault: Vec<FaultSummary>,
}

/// One fault over the repeats, and over the simulator's seeds.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct FaultSummary {
    /// The fault, as in [`FaultRun::fault`].
    pub fault: &'static str,
    /// Every repeat's run, the first as in [`Problems::runs`].
    pub repeats: Vec<FaultRun>,
    /// Their outcomes, counted over the repeats where the fault hit as meant.
    pub tally: Tally,
    /// The simulator's decision; `null` where it does not model the run (a heartbeat
    /// detector).
    pub sim: Option<SimDecision>,
}

/// Outcomes counted: those of the runs where the fault hit as meant, and the misses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Tally {
    /// Survived.
    pub survives: u32,
    /// Stalled.
    pub stalls: u32,
    /// Broke safety.
    #[serde(rename = "unsafe")]
    pub unsafe_: u32,
    /// Runs in which the fault did not hit as meant (their outcome is not counted).
    pub missed: u32,
}

impl Tally {
    /// Count `outcome`.
    pub fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Survives => self.survives += 1,
            Outcome::Stalls => self.stalls += 1,
            Outcome::Unsafe => self.unsafe_ += 1,
        }
    }

    /// The runs' outcomes, those that missed counted apart.
    pub fn of(runs: &[FaultRun]) -> Tally {
        let mut t = Tally::default();
        for r in runs {
            if r.as_intended {
                t.add(r.outcome);
            } else {
                t.missed += 1;
            }
        }
        t
    }

    /// The runs counted, misses included.
    pub fn total(&self) -> u32 {
        self.survives + self.stalls + self.unsafe_ + self.missed
    }

    /// The outcomes seen, most frequent first (the worse first among equals).
    pub fn seen(&self) -> Vec<(Outcome, u32)> {
        let mut v: Vec<(Outcome, u32)> = [
            (Outcome::Unsafe, self.unsafe_),
            (Outcome::Stalls, self.stalls),
            (Outcome::Survives, self.survives),
        ]
        .into_iter()
        .filter(|&(_, k)| k > 0)
        .collect();
        v.sort_by_key(|&(_, k)| std::cmp::Reverse(k));
        v
    }

    /// The one outcome of every run that hit, if they agree and one did.
    pub fn unanimous(&self) -> Option<Outcome> {
        match self.seen()[..] {
            [(o, _)] => Some(o),
            _ => None,
        }
    }

    /// `stalls 3/3`, `stalls 2/3, survives 1/3`, with `, 1/3 missed` for the misses.
    pub fn words(&self) -> String {
        let r = self.total();
        let mut parts: Vec<String> =
            self.seen().iter().map(|(o, k)| format!("{} {k}/{r}", o.word())).collect();
        if self.missed > 0 {
            parts.push(format!("{}/{r} missed", self.missed));
        }
        parts.join(", ")
    }
}

/// What seeded simulations of the same fault came to ([`crate::sim::fault_run`]).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SimDecision {
    /// The seeds, as `A..B`.
    pub seeds: String,
    /// Outcomes over the seeds where the fault hit as meant: finished is `survives`, a
    /// state where nothing can happen or a run past the step limit is `stalls`, two
    /// inside at once is `unsafe`.
    pub tally: Tally,
    /// What was simulated: nodes, entries, the fault, the detector.
    pub model: String,
    /// The first failure of the world other than two inside (a broken driver contract, a
    /// node's panic), counted as a stall as a real run's failure is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_failure: Option<String>,
}

impl SimDecision {
    /// `sim: always stalls (seeds 0..50)`, `sim: stalls 12/50, survives 38/50 (seeds
    /// 0..50)`; with misses, `(47 of seeds 0..50 hit)`.
    pub fn words(&self) -> String {
        let t = &self.tally;
        let hit = t.total() - t.missed;
        let over = if t.missed == 0 {
            format!("seeds {}", self.seeds)
        } else {
            format!("{hit} of seeds {} hit", self.seeds)
        };
        if hit == 0 {
            return format!("sim: never hit (seeds {})", self.seeds);
        }
        let what = match t.unanimous() {
            Some(o) => format!("always {}", o.word()),
            None => {
                t.seen().iter().map(|(o, k)| format!("{} {k}/{hit}", o.word())).collect::<Vec<_>>().join(", ")
            }
        };
        format!("sim: {what} ({over})")
    }
}

impl FaultSummary {
    /// The cell: the repeats' tally (a single run's word, `?` when it missed, as
    /// before repeats), then the simulator's decision.
    pub fn words(&self) -> String {
        let mut s = match &self.repeats[..] {
            [one] => verdict(one),
            runs => {
                let t = Tally::of(runs);
                if t.missed == t.total() {
                    // No repeat hit: what the misses did, marked as misses.
                    let mut m = Tally::default();
                    runs.iter().for_each(|r| m.add(r.outcome));
                    let r = t.total();
                    m.seen()
                        .iter()
                        .map(|(o, k)| format!("{}? {k}/{r}", o.word()))
                        .collect::<Vec<_>>()
                        .join(", ")
                } else {
                    t.words()
                }
            }
        };
        if let Some(d) = &self.sim {
            s.push_str(" · ");
            s.push_str(&d.words());
        }
        s
    }
}

/// What a fault run did to the algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Clean run: every live worker finished, no violation.
    Survives,
    /// No safety violation, but the run did not finish (a stall, unserved requests).
    Stalls,
    /// The audit found a safety violation (overlap, lost update, stale token or writer).
    Unsafe,
}

impl Outcome {
    /// The word the tables print.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Survives => "survives",
            Outcome::Stalls => "stalls",
            Outcome::Unsafe => "unsafe",
        }
    }
}

/// One fault run.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct FaultRun {
    /// `non-holder crash`, `holder crash`, `coordinator crash`, `lost messages`.
    pub fault: &'static str,
    /// Its fault plan, in the plan grammar.
    pub plan: String,
    /// Its message loss probability.
    pub drop: f64,
    /// The seed of the run reported.
    pub seed: u64,
    /// What the fault did to the algorithm.
    pub outcome: Outcome,
    /// Whether the fault hit as meant (e.g. the victim really was outside); if no
    /// attempt managed it, the last one is reported with `false`.
    pub as_intended: bool,
    /// The applied fault's note, messages lost, and the failure or first violation.
    pub detail: String,
}

/// The faults every algorithm is put through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    NonHolder,
    Holder,
    Coordinator,
    Lost,
}

const FAULTS: [Fault; 4] = [Fault::NonHolder, Fault::Holder, Fault::Coordinator, Fault::Lost];

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::NonHolder => "non-holder crash",
            Fault::Holder => "holder crash",
            Fault::Coordinator => "coordinator crash",
            Fault::Lost => "lost messages",
        }
    }

    /// The plan text and the loss probability.
    fn plan(self) -> (String, f64) {
        let k = FAULT_AT_ENTRY;
        match self {
            // w0 is never the centralized coordinator, and is retried if it was inside.
            Fault::NonHolder => (format!("kill 0 at entry {k}"), 0.0),
            Fault::Holder => (format!("kill holder at entry {k}"), 0.0),
            Fault::Coordinator => (format!("kill coordinator at entry {k}"), 0.0),
            Fault::Lost => (String::new(), DROP),
        }
    }

    /// Whether a run of `n` workers, with these faults applied and this many messages
    /// lost, was hit the way this fault means.
    fn hit(self, faults: &[AppliedFault], lost: u64, n: u32) -> bool {
        let kill = faults.iter().find(|f| f.action == "kill");
        // The supervisor's note on a kill says where its victim was.
        let inside = |note: &str| note.ends_with(" inside the critical section");
        match self {
            Fault::NonHolder => kill.is_some_and(|f| !inside(&f.note)),
            // A holder that is also the coordinator belongs to the next column.
            Fault::Holder => kill.is_some_and(|f| inside(&f.note) && f.worker != Some(n - 1)),
            Fault::Coordinator => kill.is_some(),
            Fault::Lost => lost > 0,
        }
    }

    /// The same for a simulated run: the node crashed and whether it was inside, and
    /// the messages lost.
    fn sim_hit(self, crashed: Option<(u32, bool)>, lost: u64, n: u32) -> bool {
        match (self, crashed) {
            (Fault::NonHolder, Some((_, inside))) => !inside,
            (Fault::Holder, Some((w, inside))) => inside && w != n - 1,
            (Fault::Coordinator, Some(_)) => true,
            (Fault::Lost, _) => lost > 0,
            (_, None) => false,
        }
    }
}

/// The claim for `name`, if its registry entry has one (an algorithm from another
/// crate may not).
fn claim(name: &str) -> Option<&'static Claim> {
    registry::info(name).and_then(|a| a.claim.as_ref())
}

/// Why an algorithm of the registry is left out by default, if it is.
fn excluded_why(a: &AlgoInfo) -> Option<&'static str> {
    if a.service != ServiceKind::Mutex {
        return Some("an election, not mutual exclusion");
    }
    if a.family == Family::Baseline {
        return Some(
            "baselines that send no message, so there is nothing to count or to measure in \
             message times (`none` is unsafe by design, `flock` is the kernel's lock)",
        );
    }
    None
}

/// Every mutual-exclusion algorithm of the registry but the baselines, and the
/// mutual-exclusion ones left out, with why.
pub fn default_algorithms() -> (Vec<&'static str>, Vec<Excluded>) {
    let mut chosen = Vec::new();
    let mut left = Vec::new();
    for a in registry::registry().iter() {
        match excluded_why(a) {
            None => chosen.push(a.name),
            Some(why) if a.service == ServiceKind::Mutex => {
                left.push(Excluded { algorithm: a.name.into(), why: why.into() })
            }
            Some(_) => {}
        }
    }
    (chosen, left)
}

/// The synchronisation delays in a resource file's records, in ns: for every EXIT
/// while some worker had asked (a WANT) and not yet entered, the time to the next ENTER.
/// A run in which nobody ever waited gives no sample at all.
pub fn sync_delays(records: impl IntoIterator<Item = Record>) -> Vec<u64> {
    let mut waiting = std::collections::BTreeSet::new();
    let mut since: Option<u64> = None;
    let mut out = Vec::new();
    for rec in records {
        match rec {
            Record::Want { w, .. } => {
                waiting.insert(w);
            }
            Record::Enter { w, t, .. } => {
                waiting.remove(&w);
                if let Some(exit) = since.take() {
                    out.push(t.saturating_sub(exit));
                }
            }
            Record::Exit { t, .. } => since = (!waiting.is_empty()).then_some(t),
            // Only a fenced resource refuses, and compare runs none.
            Record::Refused { .. } => {}
        }
    }
    out
}

/// Waits from WANT to the same worker's ENTER, in ns, leaving out worker `skip` (the
/// centralized coordinator, whose own entries need no message).
pub fn entry_waits(records: impl IntoIterator<Item = Record>, skip: Option<u32>) -> Vec<u64> {
    let mut asked = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for rec in records {
        match rec {
            Record::Want { w, t, .. } if Some(w) != skip => {
                asked.insert(w, t);
            }
            Record::Enter { w, t, .. } => {
                if let Some(since) = asked.remove(&w) {
                    out.push(t.saturating_sub(since));
                }
            }
            _ => {}
        }
    }
    out
}

/// The records of a resource file, skipping its header and comments. A line that does
/// not parse is skipped too: the run's audit has already reported it.
pub fn read_records(path: &Path) -> std::io::Result<Vec<Record>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.parse().ok()).collect())
}

/// The median of `v` (the mean of the middle two for an even count); `None` if empty.
fn median(v: &mut [u64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[m] as f64 } else { (v[m - 1] as f64 + v[m] as f64) / 2.0 })
}

/// Check what was asked before anything runs: names, and the ranges of N and entries.
pub fn validate(o: &CompareOpts) -> Result<(), String> {
    if !(2..=32).contains(&o.workers) {
        return Err(format!("-n must be between 2 and 32 for a comparison, not {}", o.workers));
    }
    if !(2..=1000).contains(&o.entries) {
        return Err(format!("-k must be between 2 and 1000, not {}", o.entries));
    }
    if !(1..=MAX_REPEAT).contains(&o.repeat) {
        return Err(format!("--repeat must be between 1 and {MAX_REPEAT}, not {}", o.repeat));
    }
    for name in &o.algos {
        match registry::lookup(name) {
            Err(e) => return Err(e),
            Ok(a) if a.service != ServiceKind::Mutex => {
                return Err(format!("{name:?} is an election, and compare measures mutual exclusion"))
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

/// What [`compare`] tells its caller as it goes, for progress.
pub enum Progress<'a> {
    /// Every timing run of an algorithm is made (the first phase): its name, and the
    /// time those runs took.
    Timed(&'a str, Duration),
    /// A row is finished, with the time its own runs took (summed: its fault runs went
    /// beside others).
    Row(&'a Row, Duration),
}

/// Measure every algorithm asked for; `done` hears of each algorithm's timing runs and
/// each row as they are finished ([`Progress`]). Usage errors come back as
/// [`RunError::Usage`].
///
/// First every timing run (light and saturated, every repeat), one at a time with
/// nothing beside it; then the fault runs and the simulator's decisions, up to
/// [`fault_width`] at once. Rows are finished in the order asked.
pub fn compare(o: &CompareOpts, mut done: impl FnMut(Progress<'_>)) -> Result<Comparison, RunError> {
    validate(o).map_err(RunError::Usage)?;
    let started = Instant::now();
    let (names, excluded) = if o.algos.is_empty() {
        let (names, excluded) = default_algorithms();
        (names.into_iter().map(String::from).collect(), excluded)
    } else {
        (o.algos.clone(), Vec::new())
    };
    let infos = names
        .iter()
        .map(|name| {
            registry::info(name).ok_or_else(|| RunError::Usage(format!("unknown algorithm {name:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let t = crate::supervisor::probe::ping_pong(&o.exe, PING_PONG_ROUNDS)
        .map_err(|e| RunError::Failed(format!("measuring the message time T: {e}")))?;
    let t_ms = t.as_secs_f64() * 1e3;
    // Every run lives here and is removed with it, clean or not.
    let tmp = tempfile::Builder::new()
        .prefix("mutexlab-compare-")
        .tempdir()
        .map_err(|e| RunError::Failed(format!("cannot make a temporary directory: {e}")))?;
    let jobs = jobs(names.len(), o.repeat);
    let mut parts: Vec<Parts> = names.iter().map(|_| Parts::default()).collect();
    let mut rows: Vec<Row> = Vec::new();
    let width = fault_width();
    let mut quiet: Option<u64> = None;
    let run = |job: &Job| -> Result<Done, RunError> {
        let name = &names[job.algo];
        Ok(match job.what {
            What::Timing { rep } => Done::Measured(Box::new(measure_once(o, name, rep, tmp.path())?)),
            What::Fault { fault, rep } => {
                let (run, quiet) = fault_run(o, name, FAULTS[fault], rep, tmp.path())?;
                Done::Fault(run, quiet)
            }
            What::Sim { fault } => Done::Sim(simulate_fault(o, infos[job.algo], FAULTS[fault])),
        })
    };
    let finished = schedule(&jobs, width, run, |i, result, took| {
        let job = jobs[i];
        if let Done::Fault(_, q) = &result {
            quiet = quiet.max(*q);
        }
        parts[job.algo].add(job, result, took);
        if matches!(job.what, What::Timing { .. }) && parts[job.algo].measured.len() == o.repeat as usize {
            done(Progress::Timed(&names[job.algo], parts[job.algo].took));
        }
        // Rows in the order asked: each once it and every row before it are complete.
        while let Some(p) = parts.get_mut(rows.len()).filter(|p| p.complete(o.repeat)) {
            let row = p.row(infos[rows.len()], o.workers, t_ms);
            done(Progress::Row(&row, p.took));
            rows.push(row);
        }
    });
    match finished {
        Ok(()) => {}
        Err(e @ RunError::Interrupted(_)) => {
            // The error names the interrupted run's directory: keep it, as `run` does.
            let _ = tmp.keep();
            return Err(e);
        }
        Err(e) => return Err(e),
    }
    let mut c = Comparison {
        message_time_us: t_ms * 1e3,
        elapsed_s: started.elapsed().as_secs_f64(),
        excluded,
        algorithms: rows,
        repeat: o.repeat,
        ..Comparison::new(o.workers, o.entries, &o.detector.to_string())
    };
    c.fault_runs.side_by_side = width as u32;
    c.fault_runs.longest_quiet_ms = quiet.map(|ns| ns as f64 / 1e6);
    Ok(c)
}

/// How many fault runs (and simulator decisions) go side by side: two per core, at
/// least two and at most [`MAX_FAULT_WIDTH`]. A fault run spends most of its time asleep
/// (5 ms sections, 2 ms think time, or a silent stall window), so two per core keep the
/// cores far from full; its verdict is an outcome, not a time, and a live run's longest
/// quiet spell stays far below [`FAULT_STALL_MS`] (see the module doc).
pub fn fault_width() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (2 * cores).clamp(2, MAX_FAULT_WIDTH)
}

/// The most fault runs [`fault_width`] lets go side by side, whatever the core count.
pub const MAX_FAULT_WIDTH: usize = 8;

/// Whether a job needs the machine to itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    /// A timing run: its delays are the figure, so nothing may run beside it.
    Alone,
    /// A fault run or a simulation: its outcome is the figure, not its time.
    Beside,
}

/// One unit of work of a comparison, for one algorithm (by its index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Job {
    algo: usize,
    what: What,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum What {
    /// Repeat `rep` of the light and saturated runs.
    Timing { rep: u32 },
    /// Repeat `rep` of fault `FAULTS[fault]`.
    Fault { fault: usize, rep: u32 },
    /// The simulator's decision on `FAULTS[fault]`.
    Sim { fault: usize },
}

impl Job {
    fn lane(&self) -> Lane {
        match self.what {
            What::Timing { .. } => Lane::Alone,
            What::Fault { .. } | What::Sim { .. } => Lane::Beside,
        }
    }
}

/// A comparison's jobs for `algos` algorithms made `repeat` times: every timing run
/// first, in the order asked, then each algorithm's fault runs and simulations, so
/// that the rows are finished one after another.
fn jobs(algos: usize, repeat: u32) -> Vec<Job> {
    let mut v = Vec::new();
    for algo in 0..algos {
        v.extend((0..repeat).map(|rep| Job { algo, what: What::Timing { rep } }));
    }
    for algo in 0..algos {
        for fault in 0..FAULTS.len() {
            v.extend((0..repeat).map(|rep| Job { algo, what: What::Fault { fault, rep } }));
            v.push(Job { algo, what: What::Sim { fault } });
        }
    }
    v
}

/// What a job came to.
enum Done {
    Measured(Box<Measured>),
    /// The run, and the longest it went quiet and went on, in ns.
    Fault(FaultRun, Option<u64>),
    Sim(Option<SimDecision>),
}

/// One algorithm's results as they come in, and the time its jobs took.
#[derive(Default)]
struct Parts {
    measured: Vec<(u32, Measured)>,
    faults: Vec<(usize, u32, FaultRun)>,
    sims: Vec<(usize, Option<SimDecision>)>,
    took: Duration,
    /// Made into its row already.
    taken: bool,
}

impl Parts {
    fn add(&mut self, job: Job, result: Done, took: Duration) {
        self.took += took;
        match (job.what, result) {
            (What::Timing { rep }, Done::Measured(m)) => self.measured.push((rep, *m)),
            (What::Fault { fault, rep }, Done::Fault(r, _)) => self.faults.push((fault, rep, r)),
            (What::Sim { fault }, Done::Sim(d)) => self.sims.push((fault, d)),
            _ => unreachable!("each job gives its own kind of result"),
        }
    }

    /// Every job of the algorithm is in, and its row not made yet.
    fn complete(&self, repeat: u32) -> bool {
        let r = repeat as usize;
        !self.taken
            && self.measured.len() == r
            && self.faults.len() == r * FAULTS.len()
            && self.sims.len() == FAULTS.len()
    }

    /// The row, from the results in repeat order whatever order they came in.
    fn row(&mut self, info: &AlgoInfo, n: u32, t_ms: f64) -> Row {
        self.taken = true;
        self.measured.sort_by_key(|(rep, _)| *rep);
        self.faults.sort_by_key(|(fault, rep, _)| (*fault, *rep));
        self.sims.sort_by_key(|(fault, _)| *fault);
        let measured: Vec<Measured> = self.measured.drain(..).map(|(_, m)| m).collect();
        let mut runs = std::mem::take(&mut self.faults).into_iter().peekable();
        let mut by_fault = Vec::new();
        for (f, sim) in std::mem::take(&mut self.sims) {
            let mut repeats = Vec::new();
            while let Some((_, _, r)) = runs.next_if(|(g, _, _)| *g == f) {
                repeats.push(r);
            }
            by_fault.push(FaultSummary { fault: FAULTS[f].name(), tally: Tally::of(&repeats), repeats, sim });
        }
        aggregate(info, n, t_ms, &measured, by_fault)
    }
}

/// Run `jobs` in order: each [`Lane::Alone`] job with nothing beside it (every job
/// before it has ended, none after it starts until it ends), the [`Lane::Beside`] ones
/// up to `width` at once. `done` gets each job's index, its result and how long it
/// took, on the calling thread, as they end. At the first error nothing more starts;
/// the jobs under way are waited for, and the first error is returned.
fn schedule<T: Send>(
    jobs: &[Job],
    width: usize,
    run: impl Fn(&Job) -> Result<T, RunError> + Sync,
    done: impl FnMut(usize, T, Duration),
) -> Result<(), RunError> {
    schedule_by(jobs, Job::lane, width, run, done)
}

/// [`schedule`] over any jobs, with `lane` saying which need the machine to themselves.
fn schedule_by<J: Sync, T: Send>(
    jobs: &[J],
    lane: impl Fn(&J) -> Lane,
    width: usize,
    run: impl Fn(&J) -> Result<T, RunError> + Sync,
    mut done: impl FnMut(usize, T, Duration),
) -> Result<(), RunError> {
    let width = width.max(1);
    let timed = |job: &J| {
        let t0 = Instant::now();
        // A panic in a run is this job's error, so that the others are still waited for.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(job)))
            .unwrap_or_else(|_| Err(RunError::Failed("a run panicked".into())));
        (r, t0.elapsed())
    };
    let mut first_err: Option<RunError> = None;
    // Takes a job's result; says whether an error has come (this one or an earlier).
    let mut take = |i: usize, (r, took): (Result<T, RunError>, Duration)| {
        match r {
            Ok(v) if first_err.is_none() => done(i, v, took),
            Ok(_) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
        first_err.is_some()
    };
    let mut failed = false;
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut running = 0usize;
        for (i, job) in jobs.iter().enumerate() {
            let alone = lane(job) == Lane::Alone;
            // Alone: wait for every job under way; beside: for a free place.
            let most = if alone { 0 } else { width - 1 };
            while running > most {
                let (k, r) = rx.recv().expect("every job sends its result");
                running -= 1;
                failed |= take(k, r);
            }
            if failed {
                break;
            }
            if alone {
                failed |= take(i, timed(job));
            } else {
                let (tx, timed) = (tx.clone(), &timed);
                s.spawn(move || {
                    let _ = tx.send((i, timed(job)));
                });
                running += 1;
            }
        }
        while running > 0 {
            let (k, r) = rx.recv().expect("every job sends its result");
            running -= 1;
            take(k, r);
        }
    });
    first_err.map_or(Ok(()), Err)
}

/// One run's options; the run lives in `dir` (new), which the caller removes.
fn run_opts(o: &CompareOpts, algo: &str, dir: PathBuf, entries: u64, (cs, think): (f64, f64)) -> RunOpts {
    RunOpts {
        workers: o.workers,
        entries,
        cs_ms: cs,
        think_ms: think,
        seed: o.seed,
        run_dir: Some(dir),
        // Kept so that the resource file can be read; the caller's directory goes.
        keep: true,
        stall_ms: 10_000,
        ..RunOpts::new(algo, o.exe.clone())
    }
}

/// Messages per entry of `r`, heartbeats left out, and the heartbeats (none of either
/// in an election's report).
fn per_entry(r: &Report, coordinator_free: bool) -> (f64, u64) {
    let Some(m) = r.mutex() else { return (0.0, 0) };
    let heartbeats = m.messages.by_type.get(crate::runtime::HEARTBEAT).copied().unwrap_or(0);
    let coordinator = (r.workers as usize).checked_sub(1).and_then(|c| m.entries.by_worker.get(c));
    let own = if coordinator_free { coordinator.copied().unwrap_or(0) } else { 0 };
    let entries = m.entries.total.saturating_sub(own);
    let sent = m.messages.total - heartbeats;
    (if entries > 0 { sent as f64 / entries as f64 } else { 0.0 }, heartbeats)
}

/// Why a measurement run was not clean, in one line.
fn unclean(what: &str, r: &Report) -> Option<String> {
    if r.ok {
        return None;
    }
    let why = r
        .failure
        .as_deref()
        .and_then(|f| f.lines().next())
        .map(str::to_string)
        .or_else(|| r.violations.first().map(|v| format!("{}: {}", v.kind, v.detail)))
        .unwrap_or_default();
    Some(format!("{what} run not clean: {why}"))
}

/// One repeat's measurement runs of one algorithm.
#[derive(Clone, Debug)]
struct Measured {
    /// Messages per entry at light load and at saturation.
    light: f64,
    saturation: f64,
    /// Heartbeats left out of them.
    heartbeats_light: u64,
    heartbeats_saturation: u64,
    /// The median wait at light load and its samples, in ns.
    entry: Option<(f64, usize)>,
    /// The median synchronisation delay at saturation and its samples, in ns.
    sync: Option<(f64, usize)>,
    /// The handoffs from the trace, or why the trace could not be read.
    hops: Result<SyncHops, String>,
    /// Both runs clean.
    clean: bool,
    /// Why a run was not clean.
    notes: Vec<String>,
}

/// One repeat (`rep`, from 0) of the two measurement runs; the directories go after.
fn measure_once(o: &CompareOpts, name: &str, rep: u32, tmp: &Path) -> Result<Measured, RunError> {
    let c = claim(name);
    let free = c.is_some_and(|c| c.coordinator_free);
    let n = o.workers;
    let said = |f: Option<fn(u32) -> String>| f.map_or_else(|| "-".to_string(), |f| f(n));
    let seed = o.seed.wrapping_add(u64::from(rep));
    let light_dir = tmp.join(format!("{name}-light-{rep}"));
    let light = supervisor::run(&RunOpts { seed, ..run_opts(o, name, light_dir.clone(), o.entries, LIGHT) })?;
    let sat_dir = tmp.join(format!("{name}-saturated-{rep}"));
    // Traced, for the handoffs' hops: a few % of a saturated run's speed, which compare
    // does not measure.
    let sat = supervisor::run(&RunOpts {
        trace: true,
        seed,
        ..run_opts(o, name, sat_dir.clone(), o.entries, SATURATED)
    })?;
    let records = |dir: &Path| {
        read_records(&dir.join(RESOURCE_FILE))
            .map_err(|e| RunError::Failed(format!("{name}: cannot read {}: {e}", dir.display())))
    };
    let med = |mut samples: Vec<u64>| median(&mut samples).map(|ns| (ns, samples.len()));
    let coordinator = free.then_some(n - 1);
    let entry = med(entry_waits(records(&light_dir)?, coordinator));
    let sat_records = records(&sat_dir)?;
    let sync = med(sync_delays(sat_records.clone()));
    let hops = crate::handoff::analyse(&sat_dir, coordinator)
        .map(|h| sync_hops(h, sat_records, said(c.map(|c| c.sync))))
        .map_err(|e| e.to_string());
    // Read: a repeat's files need not wait for the others (the disk is small).
    let _ = std::fs::remove_dir_all(&light_dir);
    let _ = std::fs::remove_dir_all(&sat_dir);
    let (light_pe, light_hb) = per_entry(&light, free);
    let (sat_pe, sat_hb) = per_entry(&sat, free);
    Ok(Measured {
        light: light_pe,
        saturation: sat_pe,
        heartbeats_light: light_hb,
        heartbeats_saturation: sat_hb,
        entry,
        sync,
        hops,
        clean: light.ok && sat.ok,
        notes: [unclean("light-load", &light), unclean("saturated", &sat)].into_iter().flatten().collect(),
    })
}

/// The row of `info` from its repeats' measurements and its faults: each figure the
/// median over the repeats, its range in [`Row::spread`], the hops over every handoff.
fn aggregate(info: &AlgoInfo, n: u32, t_ms: f64, measured: &[Measured], by_fault: Vec<FaultSummary>) -> Row {
    let c = info.claim.as_ref();
    let free = c.is_some_and(|c| c.coordinator_free);
    let said = |f: Option<fn(u32) -> String>| f.map_or_else(|| "-".to_string(), |f| f(n));
    let over = |get: &dyn Fn(&Measured) -> Option<f64>| {
        Spread::of(&measured.iter().filter_map(get).collect::<Vec<_>>())
    };
    let light = over(&|m| Some(m.light));
    let saturation = over(&|m| Some(m.saturation));
    let entry_ms = over(&|m| m.entry.map(|(ns, _)| ns / 1e6));
    let sync_ms = over(&|m| m.sync.map(|(ns, _)| ns / 1e6));
    let in_t = |s: Option<Spread>| {
        s.map(|s| Spread { median: s.median / t_ms, min: s.min / t_ms, max: s.max / t_ms, runs: s.runs })
    };
    let delay = |s: Option<Spread>, samples: usize, claimed: Option<fn(u32) -> String>| {
        s.map(|s| Delay { ms: s.median, t: s.median / t_ms, samples, notes: said(claimed) })
    };
    let samples =
        |get: fn(&Measured) -> Option<(f64, usize)>| measured.iter().filter_map(get).map(|x| x.1).sum();
    let traced: Vec<&SyncHops> = measured.iter().filter_map(|m| m.hops.as_ref().ok()).collect();
    let hop_spread = |get: &dyn Fn(&SyncHops) -> Option<f64>| {
        Spread::of(&traced.iter().filter_map(|h| get(h)).collect::<Vec<_>>())
    };
    let many = measured.len() > 1;
    let mut notes = Vec::new();
    for (r, m) in measured.iter().enumerate() {
        let run = |what: &str| if many { format!("repeat {}: {what}", r + 1) } else { what.to_string() };
        notes.extend(m.notes.iter().map(|n| run(n)));
        if let Err(e) = &m.hops {
            notes.push(run(&format!("saturated run's trace: {e}")));
        }
    }
    let med = |get: fn(&Measured) -> u64| {
        Spread::of(&measured.iter().map(|m| get(m) as f64).collect::<Vec<_>>())
            .map_or(0, |s| s.median.round() as u64)
    };
    Row {
        algorithm: info.name.to_string(),
        family: info.family.to_string(),
        messages_per_entry: PerEntry {
            light: light.map_or(0.0, |s| s.median),
            saturation: saturation.map_or(0.0, |s| s.median),
            counted: if free { CLIENT_ENTRIES } else { EVERY_ENTRY },
            heartbeats_light: med(|m| m.heartbeats_light),
            heartbeats_saturation: med(|m| m.heartbeats_saturation),
            theory: (info.theory)(Shape { n, replicas: None, initiators: 0 }),
            notes: said(c.map(|c| c.messages)),
        },
        entry_delay: delay(entry_ms, samples(|m| m.entry), c.map(|c| c.entry)),
        sync_delay: delay(sync_ms, samples(|m| m.sync), c.map(|c| c.sync)),
        sync_hops: (!traced.is_empty()).then(|| merge_hops(&traced)),
        problems: Problems {
            notes: c.map_or("-", |c| c.problems),
            runs: by_fault.iter().filter_map(|f| f.repeats.first().cloned()).collect(),
            by_fault,
        },
        clean: measured.iter().all(|m| m.clean),
        notes_on_runs: notes,
        spread: RowSpread {
            repeats: measured.len() as u32,
            messages_light: light,
            messages_saturation: saturation,
            entry_delay_t: in_t(entry_ms),
            entry_delay_ms: entry_ms,
            sync_delay_t: in_t(sync_ms),
            sync_delay_ms: sync_ms,
            sync_hops: hop_spread(&|h| h.median),
            sync_in_message_times: hop_spread(&|h| h.in_message_times),
            utilisation: hop_spread(&|h| h.utilisation.as_ref().map(|u| u.measured)),
        },
    }
}

/// The repeats' handoffs as one: hops counted over every handoff of every repeat, the
/// times and the utilisation the medians of the repeats'.
fn merge_hops(runs: &[&SyncHops]) -> SyncHops {
    let med = |v: Vec<f64>| Spread::of(&v).map(|s| s.median);
    let mut h = crate::handoff::Handoffs::default();
    for r in runs {
        let x = &r.handoffs;
        h.handoffs += x.handoffs;
        h.no_path += x.no_path;
        h.skipped += x.skipped;
        h.messages_timed += x.messages_timed;
        for (&hops, &k) in &x.by_hops {
            *h.by_hops.entry(hops).or_default() += k;
        }
        h.notes.extend(x.notes.iter().take(8).cloned());
    }
    h.delay_median_ns =
        med(runs.iter().filter_map(|r| r.handoffs.delay_median_ns).map(|v| v as f64).collect())
            .map(|v| v.round() as u64);
    h.message_median_ns =
        med(runs.iter().filter_map(|r| r.handoffs.message_median_ns).map(|v| v as f64).collect())
            .map(|v| v.round() as u64);
    let used: Vec<&Utilisation> = runs.iter().filter_map(|r| r.utilisation.as_ref()).collect();
    let u = |get: fn(&Utilisation) -> f64| med(used.iter().map(|u| get(u)).collect()).unwrap_or(0.0);
    SyncHops {
        median: h.median(),
        mean: h.mean(),
        in_message_times: med(runs.iter().filter_map(|r| r.in_message_times).collect()),
        message_time_us: med(runs.iter().filter_map(|r| r.message_time_us).collect()),
        handoffs: h,
        utilisation: (!used.is_empty()).then(|| Utilisation {
            measured: u(|u| u.measured),
            predicted: u(|u| u.predicted),
            section_ms: u(|u| u.section_ms),
            k: u(|u| u.k),
        }),
        notes: runs.first().map_or_else(String::new, |r| r.notes.clone()),
    }
}

/// What the simulator decides for `fault` on `info` over [`SIM_SEEDS`]: the same crash
/// (right after entry [`FAULT_AT_ENTRY`], never restarted) or the same losses as the real
/// runs, with the real runs' size and entries. `None` under a heartbeat detector, whose
/// timing the simulator does not model.
fn simulate_fault(o: &CompareOpts, info: &AlgoInfo, fault: Fault) -> Option<SimDecision> {
    use crate::sim::{CrashAt, Ending, Failure, FaultSim, Victim};
    let (detector, told) = match o.detector {
        Detector::Perfect => (true, "perfect detector"),
        Detector::None => (false, "no detector"),
        Detector::Heartbeat { .. } => return None,
    };
    let n = o.workers;
    let at = |victim| Some(CrashAt { victim, at_entry: FAULT_AT_ENTRY });
    let (crash, drop, what) = match fault {
        Fault::NonHolder => (at(Victim::Node(0)), 0.0, format!("w0 crashes at entry {FAULT_AT_ENTRY}")),
        Fault::Holder => (at(Victim::Holder), 0.0, format!("the holder crashes at entry {FAULT_AT_ENTRY}")),
        Fault::Coordinator => {
            (at(Victim::Node(n - 1)), 0.0, format!("w{} crashes at entry {FAULT_AT_ENTRY}", n - 1))
        }
        Fault::Lost => (None, DROP, format!("each message lost with probability {DROP}")),
    };
    let mut tally = Tally::default();
    let mut other_failure = None;
    for seed in SIM_SEEDS {
        let r = (info.fault_sim)(&FaultSim {
            n,
            seed,
            entries: FAULT_ENTRIES as u32,
            crash,
            drop,
            detector,
            max_steps: SIM_MAX_STEPS,
        });
        if !fault.sim_hit(r.crashed, r.lost, n) {
            tally.missed += 1;
            continue;
        }
        tally.add(match r.ending {
            Ok(Ending::Finished) => Outcome::Survives,
            Ok(Ending::Stuck | Ending::StepLimit) => Outcome::Stalls,
            Err(Failure::Overlap { .. }) => Outcome::Unsafe,
            Err(e) => {
                other_failure.get_or_insert_with(|| format!("seed {seed}: {e}"));
                Outcome::Stalls
            }
        });
    }
    Some(SimDecision {
        seeds: format!("{}..{}", SIM_SEEDS.start, SIM_SEEDS.end),
        tally,
        model: format!(
            "{n} nodes, {FAULT_ENTRIES} entries each; {what}, never restarted or lost for good; {told}"
        ),
        other_failure,
    })
}

/// The hops row from a saturated run's handoffs and resource records.
fn sync_hops(h: crate::handoff::Handoffs, records: Vec<Record>, notes: String) -> SyncHops {
    let (median, mean) = (h.median(), h.mean());
    let utilisation = match (crate::handoff::utilisation(records), median, h.message_median_ns) {
        (Some((measured, w)), Some(k), Some(t)) => Some(Utilisation {
            measured,
            predicted: crate::handoff::predicted_utilisation(w, k, t),
            section_ms: w as f64 / 1e6,
            k,
        }),
        _ => None,
    };
    SyncHops {
        median,
        mean,
        in_message_times: h.delay_in_messages(),
        message_time_us: h.message_median_ns.map(|ns| ns as f64 / 1e3),
        handoffs: h,
        utilisation,
        notes,
    }
}

/// Put `name` through one fault (repeat `rep`), retrying with the next seed until it
/// hits as meant; repeat r starts at `seed + r·ATTEMPTS`, so that the repeats' seeds
/// never overlap.
/// With the run, the longest its attempts went without an ENTER or EXIT and then went on
/// ([`longest_quiet`]), in ns.
fn fault_run(
    o: &CompareOpts,
    name: &str,
    fault: Fault,
    rep: u32,
    tmp: &Path,
) -> Result<(FaultRun, Option<u64>), RunError> {
    let (plan_text, drop) = fault.plan();
    let plan =
        Plan::parse(&plan_text, o.workers).map_err(|e| RunError::Failed(format!("{plan_text}: {e}")))?;
    let mut last = None;
    let mut quiet = None;
    for attempt in 0..ATTEMPTS {
        let seed = o.seed.wrapping_add(u64::from(rep) * ATTEMPTS + attempt);
        let dir = tmp.join(format!("{name}-{}-{rep}-{attempt}", fault.name().replace(' ', "-")));
        let opts = RunOpts {
            seed,
            plan: plan.clone(),
            drop,
            stall_ms: FAULT_STALL_MS,
            detector: o.detector,
            ..run_opts(o, name, dir, FAULT_ENTRIES, FAULT_TIMING)
        };
        let r = supervisor::run(&opts)?;
        if let Some(dir) = &opts.run_dir {
            let gap = read_records(&dir.join(RESOURCE_FILE)).ok().and_then(longest_quiet);
            quiet = quiet.max(gap);
            let _ = std::fs::remove_dir_all(dir);
        }
        let hit = fault.hit(&r.faults, r.lost_messages, o.workers);
        let run = FaultRun {
            fault: fault.name(),
            plan: plan_text.clone(),
            drop,
            seed,
            outcome: outcome(&r),
            as_intended: hit,
            detail: detail(&r),
        };
        if hit {
            return Ok((run, quiet));
        }
        last = Some(run);
    }
    Ok((last.expect("at least one attempt"), quiet))
}

/// The longest a run went from one ENTER or EXIT to the next, in ns: a quiet spell the
/// run came through, which its stall window must be well above (the supervisor's stall
/// clock runs from the last ENTER or EXIT). `None` with fewer than two.
pub fn longest_quiet(records: impl IntoIterator<Item = Record>) -> Option<u64> {
    let mut t: Vec<u64> = records
        .into_iter()
        .filter(|r| matches!(r, Record::Enter { .. } | Record::Exit { .. }))
        .map(|r| r.time())
        .collect();
    // Workers stamp a record before appending it, so the file may be a hair out of order.
    t.sort_unstable();
    t.windows(2).map(|w| w[1] - w[0]).max()
}

/// Violations that break mutual exclusion or the data, as opposed to liveness.
const SAFETY: &[&str] = &["overlap", "lost-update", "stale-token", "stale-writer", "exit-without-enter"];

/// The verdict on a fault run.
pub fn outcome(r: &Report) -> Outcome {
    judge(r.ok, r.violations.iter().map(|v| v.kind))
}

/// The verdict from a run's success and the kinds of its violations: any safety
/// violation makes it unsafe, whatever else happened.
fn judge<'a>(ok: bool, mut kinds: impl Iterator<Item = &'a str>) -> Outcome {
    if kinds.any(|k| SAFETY.contains(&k)) {
        Outcome::Unsafe
    } else if !ok {
        Outcome::Stalls
    } else {
        Outcome::Survives
    }
}

/// One line on what a fault run did: the fault's note, the losses, and why it failed.
fn detail(r: &Report) -> String {
    let mut parts: Vec<String> = r.faults.iter().map(|f| f.note.clone()).collect();
    if r.lost_messages > 0 {
        let s = if r.lost_messages == 1 { "" } else { "s" };
        parts.push(format!("{} message{s} lost", r.lost_messages));
    }
    if let Some(v) = r.violations.iter().find(|v| SAFETY.contains(&v.kind)) {
        parts.push(format!("{} ({} violations)", v.kind, r.violation_count));
    } else if let Some(f) = r.failure.as_deref().and_then(|f| f.lines().next()) {
        parts.push(f.to_string());
    } else if let Some(v) = r.violations.first() {
        parts.push(format!("{} ({} violations)", v.kind, r.violation_count));
    }
    parts.join("; ")
}

/// A count of message times, with precision that suits its size.
fn in_t(t: f64) -> String {
    if t >= 10.0 {
        format!("{t:.0} T")
    } else {
        format!("{t:.1} T")
    }
}

/// A delay as `ms = T`, with the range over the repeats where there are several:
/// `0.063 [0.050–0.080] ms = 35 [28–44] T`.
fn delay(d: Option<&Delay>, ms: Option<&Spread>, t: Option<&Spread>) -> String {
    let Some(d) = d else { return "no waits".to_string() };
    match (ms, t) {
        (Some(ms), Some(t)) if ms.runs > 1 => {
            let p = if d.t >= 10.0 { 0 } else { 1 };
            format!("{} ms = {} T", ms.words(3), t.words(p))
        }
        _ => format!("{:.3} ms = {}", d.ms, in_t(d.t)),
    }
}

/// A figure with `p` decimals, with its range over the repeats where there are several.
fn figure(v: f64, spread: Option<&Spread>, p: usize) -> String {
    match spread {
        Some(s) if s.runs > 1 => s.words(p),
        _ => format!("{v:.p$}"),
    }
}

/// The hops cell: the median (and range) over every handoff, then the claim.
fn hops(h: Option<&SyncHops>) -> String {
    h.map_or_else(|| "no trace".to_string(), |h| format!("{} ({})", h.handoffs.words(), h.notes))
}

/// The handoff in the run's own message times: `2.27 × 21.3 µs`, or over repeats
/// `2.27 [2.10–2.50] × 21.3 µs` (the median repeat's message time).
fn in_run_t(h: Option<&SyncHops>, spread: Option<&Spread>) -> String {
    match h.and_then(|h| Some((h.in_message_times?, h.message_time_us?))) {
        Some((x, us)) => format!("{} × {us:.1} µs", figure(x, spread, 2)),
        None => "-".to_string(),
    }
}

/// Utilisation against W/(W+kT): `0.946 (W/(W+2T) 0.959)`, the range after the median.
fn used(h: Option<&SyncHops>, spread: Option<&Spread>) -> String {
    match h.and_then(|h| h.utilisation.as_ref()) {
        Some(u) => {
            let k = if u.k.fract() == 0.0 { format!("{:.0}", u.k) } else { format!("{:.1}", u.k) };
            format!("{} (W/(W+{k}T) {:.3})", figure(u.measured, spread, 3), u.predicted)
        }
        None => "-".to_string(),
    }
}

/// A fault run's outcome, marked when the fault did not hit as meant.
fn verdict(r: &FaultRun) -> String {
    let mark = if r.as_intended { "" } else { "?" };
    format!("{}{mark}", r.outcome.word())
}

/// How the runs went: the timing runs alone, the fault runs side by side, and the
/// longest a fault run went quiet against its stall window.
fn side_by_side(f: &FaultSettings) -> String {
    let quiet = match f.longest_quiet_ms {
        Some(q) => format!(
            "; the longest a fault run went from one ENTER or EXIT to the next: {q:.0} ms, against \
             the {} ms stall window",
            f.stall_ms
        ),
        None => String::new(),
    };
    format!(
        "Light and saturated runs one at a time with nothing beside them; fault runs up to {} side \
         by side{quiet}.",
        f.side_by_side
    )
}

/// The two tables' cells: messages and delays, then problems (the HTML page's too).
pub(crate) fn cells(c: &Comparison) -> (Vec<[String; 10]>, Vec<[String; 6]>) {
    let mut costs = Vec::new();
    let mut problems = Vec::new();
    for r in &c.algorithms {
        let m = &r.messages_per_entry;
        let mark = if r.clean { "" } else { " (not clean)" };
        let sp = &r.spread;
        costs.push([
            format!("{}{mark}", r.algorithm),
            figure(m.light, sp.messages_light.as_ref(), 2),
            figure(m.saturation, sp.messages_saturation.as_ref(), 2),
            m.notes.clone(),
            delay(r.entry_delay.as_ref(), sp.entry_delay_ms.as_ref(), sp.entry_delay_t.as_ref()),
            r.entry_delay.as_ref().map_or("-".to_string(), |d| d.notes.clone()),
            format!(
                "{} ({})",
                delay(r.sync_delay.as_ref(), sp.sync_delay_ms.as_ref(), sp.sync_delay_t.as_ref()),
                r.sync_delay.as_ref().map_or("-", |d| d.notes.as_str())
            ),
            hops(r.sync_hops.as_ref()),
            in_run_t(r.sync_hops.as_ref(), sp.sync_in_message_times.as_ref()),
            used(r.sync_hops.as_ref(), sp.utilisation.as_ref()),
        ]);
        // The repeats' tally and the simulator's decision where there is one; a single
        // run's word otherwise.
        let v = |i: usize| match r.problems.by_fault.get(i) {
            Some(f) if !f.repeats.is_empty() => f.words(),
            _ => r.problems.runs.get(i).map_or("-".to_string(), verdict),
        };
        problems.push([r.algorithm.clone(), v(0), v(1), v(2), v(3), r.problems.notes.to_string()]);
    }
    (costs, problems)
}

pub(crate) const COST_HEAD: [&str; 10] = [
    "algorithm",
    "msgs/entry light",
    "msgs/entry saturated",
    "notes say",
    "delay before entry (light)",
    "notes say (T)",
    "sync delay, saturated (theory, T)",
    "sync hops (notes)",
    "sync delay in run's msg time",
    "utilisation (predicted)",
];
pub(crate) const PROBLEM_HEAD: [&str; 6] =
    ["algorithm", "non-holder crash", "holder crash", "coordinator crash", "lost messages", "notes say"];

/// The README's comparison (`make compare-table`, `scripts/compare-table.sh`) lies
/// between this line and [`README_END`]; a test holds its tables to [`markdown`]'s shape.
pub const README_BEGIN: &str = "<!-- compare-table: written by `make compare-table` -->";
/// The end of the README's comparison.
pub const README_END: &str = "<!-- compare-table end -->";

/// The lines under the tables: T, the settings, and what `?` and the counts mean.
pub(crate) fn footer(c: &Comparison) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "N = {}; T = {:.1} µs one way (ping-pong between two processes); light load: {} ms sections, \
         {} ms mean think time; saturated: no think time; {} entries per worker.",
        c.workers, c.message_time_us, c.light.cs_ms, c.light.think_ms, c.entries_per_worker
    );
    let _ = writeln!(
        s,
        "Messages exclude heartbeats; centralized and centralized-bully count the entries of clients \
         only (the coordinator's own cost nothing), for messages and the delay before entry. Delay before \
         entry: median WANT to ENTER at light load. Sync delay: median EXIT to next ENTER while \
         someone waits. Sync hops: messages on the shortest causal chain from that EXIT to \
         that ENTER, from the saturated run's trace (median, range; a handoff whose ENTER does not \
         happen after the EXIT has no causal path). Sync delay in the run's message time: the \
         median handoff over the run's median SEND→RECV time. Utilisation: the share of the \
         saturated run the resource was held, against W/(W+kT) (W the median section, k the \
         median hops, T the run's message time; the notes' W/(W+2T) for the coordinator)."
    );
    if c.repeat > 1 {
        let _ = writeln!(
            s,
            "Every run made {} times: each figure is the median over the repeats, [min–max] their \
             range; the hops are counted over every handoff of every repeat.",
            c.repeat
        );
    }
    let f = &c.fault_runs;
    let _ = writeln!(
        s,
        "Fault runs: {} entries per worker, {} ms sections, kill at entry {FAULT_AT_ENTRY}, \
         --drop {}, --stall-ms {}, detector {}; coordinator = highest id; `?` = the fault did \
         not hit as meant in {ATTEMPTS} seeds.",
        f.entries_per_worker, f.cs_ms, f.drop, f.stall_ms, f.detector
    );
    let _ = writeln!(s, "{}", side_by_side(f));
    if c.repeat > 1 {
        let _ = writeln!(
            s,
            "`stalls 2/3`: the outcome in 2 of 3 repeats (a repeat in which the fault did not hit \
             as meant is counted as missed, not by its outcome)."
        );
    }
    let simulated = c.algorithms.iter().flat_map(|r| &r.problems.by_fault).any(|f| f.sim.is_some());
    if simulated {
        let _ = writeln!(
            s,
            "`sim:` the same fault in the simulator (`mutexlab sim`'s world, the same N and entries), \
             one run per seed of {}: the crash right after entry {FAULT_AT_ENTRY}, never restarted, \
             survivors told as by the detector; or each message lost with probability {}. \
             Finished = survives, nothing left to happen or no end in {SIM_MAX_STEPS} steps = stalls, \
             two inside = unsafe. Seeded runs, not every interleaving: `always` is over those seeds.",
            f.sim_seeds, f.drop
        );
    }
    // One line per reason: the baselines share theirs.
    let mut reasons: Vec<&str> = Vec::new();
    for e in &c.excluded {
        if !reasons.contains(&e.why.as_str()) {
            reasons.push(&e.why);
        }
    }
    for why in reasons {
        let names: Vec<&str> =
            c.excluded.iter().filter(|e| e.why == why).map(|e| e.algorithm.as_str()).collect();
        let _ = writeln!(s, "Left out: {}: {why}.", names.join(", "));
    }
    let _ = writeln!(s, "Measured in {:.1} s.", c.elapsed_s);
    s
}

/// Plain aligned text: one table of costs and delays, one of problems, and the notes.
pub fn text(c: &Comparison) -> String {
    let (costs, problems) = cells(c);
    let mut s = String::new();
    aligned(&mut s, &COST_HEAD, &costs);
    s.push('\n');
    aligned(&mut s, &PROBLEM_HEAD, &problems);
    s.push('\n');
    s.push_str(&footer(c));
    s
}

/// Columns padded to their widest cell (as shown: `∞` is one), two spaces apart, with
/// a rule under the header.
fn aligned<const K: usize>(s: &mut String, head: &[&str; K], rows: &[[String; K]]) {
    s.push_str(&crate::text::columns(Some(head), rows.iter().map(|r| r.to_vec()), ""));
}

/// The same tables in Markdown, for the README or a closing note.
pub fn markdown(c: &Comparison) -> String {
    let (costs, problems) = cells(c);
    let mut s = String::new();
    table(&mut s, &COST_HEAD, &costs);
    s.push('\n');
    table(&mut s, &PROBLEM_HEAD, &problems);
    s.push('\n');
    s.push_str(&footer(c));
    s
}

/// A Markdown table; a `|` inside a cell is escaped.
fn table<const K: usize>(s: &mut String, head: &[&str; K], rows: &[[String; K]]) {
    let mut row = |cells: Vec<&str>| {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    };
    row(head.to_vec());
    row(vec!["---"; K]);
    for r in rows {
        row(r.iter().map(String::as_str).collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Fence;

    fn want(w: u32, t: u64) -> Record {
        Record::Want { w, e: 1, t }
    }
    fn enter(w: u32, t: u64) -> Record {
        Record::Enter { w, e: 1, fence: Fence { clock: t, id: w }, t }
    }
    fn exit(w: u32, t: u64) -> Record {
        Record::Exit { w, e: 1, fence: Fence { clock: 0, id: w }, read: 0, value: 1, t }
    }

    #[test]
    fn an_exit_with_someone_waiting_is_timed_to_the_next_entry() {
        // w1 asks while w0 is inside: the handoff takes 7. w0 then leaves with nobody
        // waiting (w1 is inside, w2 has not asked): no sample. w2 asks while w1 is
        // inside, and w1's exit at 40 hands over at 43.
        let log = [
            want(0, 0),
            enter(0, 1),
            want(1, 2),
            exit(0, 10),
            enter(1, 17),
            want(2, 30),
            exit(1, 40),
            enter(2, 43),
            exit(2, 50),
        ];
        assert_eq!(sync_delays(log), vec![7, 3]);
    }

    #[test]
    fn a_log_where_nobody_waits_gives_no_sample_not_zero() {
        // Negative control: every worker asks only after the last one left.
        let log = [want(0, 0), enter(0, 1), exit(0, 5), want(1, 9), enter(1, 10), exit(1, 12)];
        assert!(sync_delays(log).is_empty());
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn a_wait_runs_from_a_worker_s_want_to_its_own_entry_and_the_skipped_worker_is_left_out() {
        let log = [want(0, 0), want(2, 1), enter(2, 2), want(1, 3), exit(2, 4), enter(0, 6), enter(1, 9)];
        assert_eq!(entry_waits(log.clone(), None), vec![1, 6, 6]);
        assert_eq!(entry_waits(log, Some(2)), vec![6, 6]);
        // An ENTER with no WANT before it (a log cut at the start) is no sample.
        assert!(entry_waits([enter(0, 5)], None).is_empty());
    }

    #[test]
    fn a_hand_written_file_is_read_with_the_resource_parser() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("resource.log");
        let text = "# mutexlab resource v1 algo=centralized workers=2\n\
                    WANT w=0 e=1 t=100\nENTER w=0 e=1 fence=2:0 t=110\nWANT w=1 e=1 t=120\n\
                    EXIT w=0 e=1 fence=2:0 read=0 value=1 t=200\nENTER w=1 e=1 fence=4:1 t=260\n\
                    EXIT w=1 e=1 fence=4:1 read=1 value=2 t=300\n";
        std::fs::write(&path, text).unwrap();
        let mut d = sync_delays(read_records(&path).unwrap());
        assert_eq!(d, vec![60]);
        assert_eq!(median(&mut d), Some(60.0));
    }

    #[test]
    fn a_safety_violation_is_unsafe_a_failure_without_one_stalls() {
        assert_eq!(judge(true, [].into_iter()), Outcome::Survives);
        assert_eq!(judge(false, ["unserved", "enter-without-exit"].into_iter()), Outcome::Stalls);
        assert_eq!(judge(false, ["unserved", "overlap"].into_iter()), Outcome::Unsafe);
        // The auditor's verdict is not trusted to agree: a violation is enough.
        assert_eq!(judge(true, ["lost-update"].into_iter()), Outcome::Unsafe);
    }

    /// A comparison of one made-up row, for the renderers.
    fn sample() -> Comparison {
        let d = |ms: f64| Delay { ms, t: ms * 100.0, samples: 9, notes: "2".into() };
        let run = |fault, outcome, as_intended| FaultRun {
            fault,
            plan: String::new(),
            drop: 0.0,
            seed: 1,
            outcome,
            as_intended,
            detail: String::new(),
        };
        Comparison {
            message_time_us: 10.0,
            elapsed_s: 1.0,
            excluded: vec![
                Excluded { algorithm: "none".into(), why: "no messages".into() },
                Excluded { algorithm: "flock".into(), why: "no messages".into() },
            ],
            algorithms: vec![Row {
                algorithm: "token-ring".into(),
                family: "token".into(),
                messages_per_entry: PerEntry {
                    light: 7.5,
                    saturation: 1.05,
                    counted: "every entry",
                    heartbeats_light: 0,
                    heartbeats_saturation: 0,
                    theory: None,
                    notes: "1 to ∞ | notes".into(),
                },
                entry_delay: Some(d(0.3)),
                sync_delay: None,
                sync_hops: None,
                problems: Problems {
                    notes: "lost token",
                    runs: vec![
                        run("non-holder crash", Outcome::Survives, true),
                        run("holder crash", Outcome::Stalls, false),
                    ],
                    by_fault: vec![],
                },
                clean: false,
                notes_on_runs: vec![],
                spread: RowSpread::default(),
            }],
            ..Comparison::new(3, 5, "perfect")
        }
    }

    #[test]
    fn the_tables_mark_misses_and_unclean_runs_and_align_by_characters() {
        let c = sample();
        let text = text(&c);
        let lines: Vec<&str> = text.lines().collect();
        // Header, rule and row of the first table line up column by column, `∞` counted
        // as one character.
        let col = |l: &str, what: &str| l.find(what).map(|b| l[..b].chars().count());
        assert_eq!(col(lines[0], "notes say"), col(lines[2], "1 to ∞"), "{text}");
        assert_eq!(col(lines[0], "delay before"), col(lines[2], "0.300 ms = 30 T"), "{text}");
        assert!(lines[2].starts_with("token-ring (not clean)"), "{text}");
        assert!(lines[2].contains("no waits"), "a sync delay with no sample is not zero: {text}");
        assert!(lines[2].contains("no trace"), "hops without a trace are not zero: {text}");
        let mut with = c.clone();
        let h = crate::handoff::Handoffs {
            handoffs: 10,
            no_path: 1,
            by_hops: [(2, 9)].into(),
            delay_median_ns: Some(50_000),
            message_median_ns: Some(20_000),
            ..Default::default()
        };
        with.algorithms[0].sync_hops = Some(sync_hops(h, vec![], "2: RELEASE, GRANT".into()));
        let text = super::text(&with);
        assert!(
            text.contains("2; 1 of 10 without a causal path (2: RELEASE, GRANT)  2.50 × 20.0 µs"),
            "{text}"
        );
        assert!(text.contains("survives  ") && text.contains("stalls?"), "{text}");
        assert!(text.contains("Left out: none, flock: no messages."), "{text}");

        let md = markdown(&c);
        assert!(md.contains("| 1 to ∞ \\| notes |"), "a pipe in a cell is escaped: {md}");
        assert_eq!(md.lines().filter(|l| l.starts_with("| token-ring")).count(), 2, "{md}");
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["algorithms"][0]["problems"]["runs"][1]["outcome"], "stalls");
        assert!(v["algorithms"][0]["sync_delay"].is_null());
    }

    #[test]
    fn a_fault_counts_only_when_it_hit_as_meant() {
        let kill = |w: u32, where_: &str| AppliedFault {
            at_ms: 1.0,
            t: 1,
            action: "kill".into(),
            worker: Some(w),
            incarnation: Some(0),
            pid: Some(1),
            signal: Some("SIGKILL".into()),
            dead: Some(2),
            late_ms: None,
            note: format!("kill holder at entry 3; w{w} {where_} the critical section"),
        };
        let skip = AppliedFault { action: "skip".into(), note: "w0 is dead".into(), ..kill(0, "outside") };
        assert!(Fault::NonHolder.hit(&[kill(0, "outside")], 0, 5));
        assert!(!Fault::NonHolder.hit(&[kill(0, "inside")], 0, 5), "the victim was the holder");
        assert!(!Fault::NonHolder.hit(std::slice::from_ref(&skip), 0, 5), "nothing was killed");
        assert!(Fault::Holder.hit(&[kill(1, "inside")], 0, 5));
        assert!(!Fault::Holder.hit(&[kill(1, "outside")], 0, 5), "the holder had already left");
        assert!(!Fault::Holder.hit(&[kill(4, "inside")], 0, 5), "that is the coordinator column");
        assert!(Fault::Coordinator.hit(&[kill(4, "outside")], 0, 5));
        assert!(!Fault::Coordinator.hit(&[skip], 0, 5));
        assert!(Fault::Lost.hit(&[], 2, 5) && !Fault::Lost.hit(&[], 0, 5));
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut [9, 1, 5]), Some(5.0));
        assert_eq!(median(&mut [4, 1, 2, 8]), Some(3.0));
    }

    #[test]
    fn the_default_list_is_every_mutex_algorithm_but_the_baselines_and_each_has_a_claim() {
        let (chosen, left) = default_algorithms();
        assert!(chosen.contains(&"centralized") && chosen.contains(&"token-ring"));
        assert!(!chosen.contains(&"bully"), "elections are not compared");
        let left: Vec<&str> = left.iter().map(|e| e.algorithm.as_str()).collect();
        assert_eq!(left, ["none", "flock"]);
        for name in chosen {
            assert!(claim(name).is_some(), "{name} has no claim");
        }
    }

    fn fault(outcome: Outcome, as_intended: bool) -> FaultRun {
        FaultRun {
            fault: "holder crash",
            plan: "kill holder at entry 3".into(),
            drop: 0.0,
            seed: 1,
            outcome,
            as_intended,
            detail: String::new(),
        }
    }

    #[test]
    fn a_spread_is_the_median_and_the_range_of_the_repeats() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(s, Spread { median: 2.0, min: 1.0, max: 3.0, runs: 3 });
        assert_eq!(s.words(1), "2.0 [1.0–3.0]");
        // An even count: the mean of the middle two.
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 8.0]).unwrap().median, 3.0);
        // One run: the figure alone, as before repeats; none: no spread, not zero.
        assert_eq!(Spread::of(&[1.5]).unwrap().words(2), "1.50");
        assert_eq!(Spread::of(&[]), None);
    }

    #[test]
    fn outcomes_that_differ_between_repeats_are_counted_never_shown_as_one_word() {
        let differ =
            [fault(Outcome::Stalls, true), fault(Outcome::Survives, true), fault(Outcome::Stalls, true)];
        let t = Tally::of(&differ);
        assert_eq!(t.unanimous(), None);
        assert_eq!(t.words(), "stalls 2/3, survives 1/3");
        let summary = |runs: &[FaultRun], sim| FaultSummary {
            fault: "holder crash",
            repeats: runs.to_vec(),
            tally: Tally::of(runs),
            sim,
        };
        let cell = summary(&differ, None).words();
        // The negative control: a mixed cell is neither word alone nor n/n.
        assert!(cell != "stalls" && cell != "survives" && !cell.contains("3/3"), "{cell}");
        let same = [fault(Outcome::Stalls, true), fault(Outcome::Stalls, true), fault(Outcome::Stalls, true)];
        assert_eq!(Tally::of(&same).unanimous(), Some(Outcome::Stalls));
        assert_eq!(summary(&same, None).words(), "stalls 3/3");
        // A miss is counted apart, not by its outcome.
        let missed = [fault(Outcome::Stalls, true), fault(Outcome::Survives, false)];
        assert_eq!(summary(&missed, None).words(), "stalls 1/2, 1/2 missed");
        let none_hit = [fault(Outcome::Stalls, false), fault(Outcome::Stalls, false)];
        assert_eq!(summary(&none_hit, None).words(), "stalls? 2/2");
        // A single run reads as before repeats.
        assert_eq!(summary(&[fault(Outcome::Unsafe, false)], None).words(), "unsafe?");

        let sim = |survives, stalls, missed| SimDecision {
            seeds: "0..50".into(),
            tally: Tally { survives, stalls, unsafe_: 0, missed },
            model: String::new(),
            other_failure: None,
        };
        assert_eq!(
            summary(&same, Some(sim(0, 50, 0))).words(),
            "stalls 3/3 · sim: always stalls (seeds 0..50)"
        );
        assert_eq!(
            summary(&differ, Some(sim(38, 12, 0))).words(),
            "stalls 2/3, survives 1/3 · sim: survives 38/50, stalls 12/50 (seeds 0..50)"
        );
        assert_eq!(sim(0, 47, 3).words(), "sim: always stalls (47 of seeds 0..50 hit)");
        assert_eq!(sim(0, 0, 50).words(), "sim: never hit (seeds 0..50)");
        let v = serde_json::to_value(Tally { unsafe_: 1, ..Tally::default() }).unwrap();
        assert_eq!(v["unsafe"], 1, "{v}");
    }

    /// A made-up repeat of the measurement runs.
    fn measured(light: f64, sync_ns: f64, hops: &[(u32, u64)], clean: bool) -> Measured {
        let h = crate::handoff::Handoffs {
            handoffs: hops.iter().map(|h| h.1).sum(),
            by_hops: hops.iter().copied().collect(),
            delay_median_ns: Some(sync_ns as u64),
            message_median_ns: Some(20_000),
            ..Default::default()
        };
        Measured {
            light,
            saturation: 3.0,
            heartbeats_light: 0,
            heartbeats_saturation: 0,
            entry: Some((sync_ns * 2.0, 10)),
            sync: Some((sync_ns, 19)),
            hops: Ok(sync_hops(h, vec![], "2: RELEASE, GRANT".into())),
            clean,
            notes: if clean { vec![] } else { vec!["saturated run not clean: stall".into()] },
        }
    }

    #[test]
    fn repeats_are_aggregated_into_medians_with_their_range_in_every_table() {
        let info = registry::info("centralized").unwrap();
        let runs = [
            measured(3.0, 40_000.0, &[(2, 9)], true),
            measured(2.5, 60_000.0, &[(2, 8), (1, 1)], true),
            measured(4.0, 50_000.0, &[(2, 10)], false),
        ];
        let by_fault = vec![FaultSummary {
            fault: "holder crash",
            repeats: vec![
                fault(Outcome::Stalls, true),
                fault(Outcome::Survives, true),
                fault(Outcome::Stalls, true),
            ],
            tally: Tally { survives: 1, stalls: 2, ..Tally::default() },
            sim: None,
        }];
        let row = aggregate(info, 5, 0.01, &runs, by_fault);
        assert_eq!(row.messages_per_entry.light, 3.0);
        assert_eq!(row.spread.messages_light, Some(Spread { median: 3.0, min: 2.5, max: 4.0, runs: 3 }));
        let sync = row.sync_delay.as_ref().unwrap();
        assert_eq!((sync.ms, sync.samples), (0.05, 57));
        assert!((sync.t - 5.0).abs() < 1e-9, "{sync:?}");
        // Hops over every handoff of every repeat: 27 of 2, one of 1.
        let h = row.sync_hops.as_ref().unwrap();
        assert_eq!((h.handoffs.handoffs, h.median), (28, Some(2.0)));
        assert_eq!(h.handoffs.words(), "2 (1-2)");
        assert_eq!(h.in_message_times, Some(2.5));
        assert!(!row.clean && row.notes_on_runs == ["repeat 3: saturated run not clean: stall"], "{row:?}");
        assert_eq!(row.problems.runs.len(), 1, "the first repeat's run");

        let c = Comparison { repeat: 3, algorithms: vec![row], ..Comparison::new(5, 20, "perfect") };
        let text = text(&c);
        assert!(text.contains("3.00 [2.50–4.00]"), "{text}");
        assert!(text.contains("0.050 [0.040–0.060] ms = 5.0 [4.0–6.0] T (2: RELEASE, GRANT)"), "{text}");
        assert!(text.contains("2.50 [2.00–3.00] × 20.0 µs"), "{text}");
        assert!(text.contains("stalls 2/3, survives 1/3"), "{text}");
        assert!(text.contains("Every run made 3 times"), "{text}");
        let md = markdown(&c);
        assert!(md.contains("| 3.00 [2.50–4.00] |") && md.contains("| stalls 2/3, survives 1/3 |"), "{md}");
        let page = crate::html::comparison_page(&c);
        assert!(page.contains("<td>3.00 [2.50–4.00]</td>"), "the page's table");
        assert!(page.contains(r#"<line data-range="light""#), "the range over the bar");
        assert!(page.contains(r#"data-cell="stalls 2/3, survives 1/3" class="mixed""#), "{page}");
        let v = serde_json::to_value(&c).unwrap();
        let r = &v["algorithms"][0];
        assert_eq!(r["messages_per_entry"]["light"], 3.0, "the median, in the old field");
        assert_eq!(r["spread"]["messages_light"]["min"], 2.5);
        assert_eq!(r["spread"]["sync_delay_ms"]["max"], 0.06);
        assert_eq!(r["problems"]["by_fault"][0]["tally"]["stalls"], 2);
        assert_eq!(r["problems"]["runs"][0]["outcome"], "stalls");
        assert_eq!((v["schema"].as_u64(), v["repeat"].as_u64()), (Some(1), Some(3)));
    }

    /// compare's defaults (N = 5, -k 20, seed 1, the perfect detector), `repeat` times.
    fn opts(repeat: u32) -> CompareOpts {
        CompareOpts {
            exe: PathBuf::from("mutexlab"),
            algos: vec![],
            workers: 5,
            entries: 20,
            seed: 1,
            detector: Detector::Perfect,
            repeat,
        }
    }

    #[test]
    fn the_simulator_decides_a_holder_crash_of_the_ring_and_of_the_coordinator() {
        let o = opts(1);
        let ring = registry::info("token-ring").unwrap();
        // A holder that is also the highest id belongs to the coordinator's column: missed.
        let d = simulate_fault(&o, ring, Fault::Holder).unwrap();
        assert_eq!(d.tally.unanimous(), Some(Outcome::Stalls), "{d:?}");
        assert!(d.words().starts_with("sim: always stalls ("), "{d:?}");
        // A node outside: the ring goes on, unless the token was on its way to it.
        let d = simulate_fault(&o, ring, Fault::NonHolder).unwrap();
        assert!(d.tally.survives > 0 && d.tally.unsafe_ == 0, "{d:?}");
        let central = registry::info("centralized").unwrap();
        assert_eq!(
            simulate_fault(&o, central, Fault::Coordinator).unwrap().tally.unanimous(),
            Some(Outcome::Stalls)
        );
        // The heartbeat detector's timing is not modelled: no decision rather than a wrong one.
        let hb =
            Detector::Heartbeat { every: Duration::from_millis(50), suspect: Duration::from_millis(100) };
        assert!(simulate_fault(&CompareOpts { detector: hb, ..o }, ring, Fault::Holder).is_none());
    }

    /// A table's header cells, and each row's first cell and number of cells.
    type TableShape = (Vec<String>, Vec<(String, usize)>);

    /// Each Markdown table in `md` (a run of lines starting with `|`): its header's cells,
    /// then each row's first cell (without a `(not clean)` mark) and its number of cells.
    /// The figures are left out: they vary from run to run.
    fn shape(md: &str) -> Vec<TableShape> {
        let cells = |l: &str| -> Vec<String> {
            let inner = l.trim().trim_start_matches('|').trim_end_matches('|');
            let mut out = vec![String::new()];
            let mut chars = inner.chars().peekable();
            while let Some(ch) = chars.next() {
                match ch {
                    '\\' if chars.peek() == Some(&'|') => out.last_mut().unwrap().push(chars.next().unwrap()),
                    '|' => out.push(String::new()),
                    _ => out.last_mut().unwrap().push(ch),
                }
            }
            out.iter().map(|c| c.trim().to_string()).collect()
        };
        let mut tables = Vec::new();
        let mut lines = md.lines().peekable();
        while let Some(l) = lines.next() {
            if !l.starts_with('|') {
                continue;
            }
            let head = cells(l);
            let mut rows = Vec::new();
            while let Some(r) = lines.next_if(|r| r.starts_with('|')) {
                let c = cells(r);
                if c.iter().all(|x| x.chars().all(|ch| ch == '-' || ch == ':')) {
                    continue;
                }
                rows.push((c[0].trim_end_matches(" (not clean)").to_string(), c.len()));
            }
            tables.push((head, rows));
        }
        tables
    }

    /// The README's comparison, between its markers.
    fn readme_table(readme: &str) -> &str {
        let from = readme.find(README_BEGIN).expect("the README has the compare-table markers");
        let to = readme[from..].find(README_END).expect("the README's compare-table has its end marker");
        &readme[from..from + to]
    }

    #[test]
    fn the_readme_s_table_has_the_shape_compare_markdown_prints() {
        // A comparison of every default algorithm, made up: only its shape is compared.
        let (names, excluded) = default_algorithms();
        let rows = names
            .iter()
            .map(|name| {
                let info = registry::info(name).unwrap();
                let by_fault = FAULTS
                    .iter()
                    .map(|f| FaultSummary {
                        fault: f.name(),
                        repeats: vec![fault(Outcome::Stalls, true); 3],
                        tally: Tally { stalls: 3, ..Tally::default() },
                        sim: None,
                    })
                    .collect();
                let m = measured(3.0, 50_000.0, &[(1, 9)], true);
                aggregate(info, 5, 0.01, &[m.clone(), m.clone(), m], by_fault)
            })
            .collect();
        let c = Comparison { repeat: 3, excluded, algorithms: rows, ..Comparison::new(5, 20, "perfect") };
        let printed = shape(&markdown(&c));
        assert_eq!(printed.len(), 2, "figures and faults");
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let documented = shape(readme_table(&readme));
        assert_eq!(documented, printed, "run `make compare-table` to write the README's table afresh");

        // The negative control: a renamed column or a missing row is told apart.
        let table = readme_table(&readme);
        let renamed = table.replacen("| msgs/entry light |", "| messages light |", 1);
        assert_ne!(shape(&renamed), printed);
        let first_row = table.lines().find(|l| l.starts_with("| centralized |")).unwrap();
        assert_ne!(shape(&table.replacen(&format!("{first_row}\n"), "", 1)), printed);
    }

    #[test]
    fn bad_requests_are_refused_by_name() {
        let o = opts(3);
        assert_eq!(validate(&o), Ok(()));
        for (bad, says) in [
            (CompareOpts { workers: 1, ..o.clone() }, "-n must be"),
            (CompareOpts { entries: 1, ..o.clone() }, "-k must be"),
            (CompareOpts { repeat: 0, ..o.clone() }, "--repeat must be between 1"),
            (CompareOpts { algos: vec!["lamprey".into()], ..o.clone() }, "unknown algorithm"),
            (CompareOpts { algos: vec!["bully".into()], ..o.clone() }, "is an election"),
        ] {
            let why = validate(&bad).unwrap_err();
            assert!(why.starts_with(says) || why.contains(says), "{why}");
        }
    }

    /// A job's start or end, in the order the scheduler's runs saw them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Seen {
        Start(usize),
        End(usize),
    }

    /// What a log of starts and ends breaks: a job in `alone` that had company, or more
    /// than `width` jobs at once; one line each.
    fn breaches(log: &[Seen], alone: impl Fn(usize) -> bool, width: usize) -> Vec<String> {
        let mut running: Vec<usize> = Vec::new();
        let mut out = Vec::new();
        for &e in log {
            match e {
                Seen::Start(i) => running.push(i),
                Seen::End(i) => running.retain(|&j| j != i),
            }
            if running.len() > 1 {
                if let Some(&i) = running.iter().find(|&&i| alone(i)) {
                    out.push(format!("job {i} runs alone but {running:?} ran at once"));
                }
            }
            if running.len() > width {
                out.push(format!("{running:?} ran at once, more than {width}"));
            }
        }
        out
    }

    #[test]
    fn a_timing_run_has_the_machine_to_itself_and_fault_runs_share_it_up_to_the_width() {
        let jobs = jobs(3, 3);
        assert_eq!(
            jobs.len(),
            3 * 3 + 3 * FAULTS.len() * 4,
            "the timing runs, the faults' repeats, a sim each"
        );
        let timing: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].lane() == Lane::Alone).collect();
        assert_eq!(timing, (0..9).collect::<Vec<_>>(), "every timing run first, before any fault run");
        for width in [1, 2, 4] {
            let log = std::sync::Mutex::new(Vec::new());
            let mut done = Vec::new();
            let run = |job: &Job| {
                let i = jobs.iter().position(|j| j == job).unwrap();
                log.lock().unwrap().push(Seen::Start(i));
                // Give the others a chance to start meanwhile.
                for _ in 0..50 {
                    std::thread::yield_now();
                }
                log.lock().unwrap().push(Seen::End(i));
                Ok(i)
            };
            schedule(&jobs, width, run, |i, v, _| {
                assert_eq!(i, v);
                done.push(i);
            })
            .unwrap();
            let log = log.into_inner().unwrap();
            assert_eq!(breaches(&log, |i| jobs[i].lane() == Lane::Alone, width), Vec::<String>::new());
            done.sort_unstable();
            assert_eq!(done, (0..jobs.len()).collect::<Vec<_>>(), "each job once, each reported");
            // The timing runs in the order asked.
            let starts: Vec<usize> = log
                .iter()
                .filter_map(|e| match e {
                    Seen::Start(i) if timing.contains(i) => Some(*i),
                    _ => None,
                })
                .collect();
            assert_eq!(starts, timing);
        }
        // Negative control: the checker sees company beside a timing run, and a crowd.
        let company = [Seen::Start(9), Seen::Start(0), Seen::End(0), Seen::End(9)];
        assert_eq!(breaches(&company, |i| i == 0, 4).len(), 1);
        let crowd = [Seen::Start(9), Seen::Start(10), Seen::Start(11), Seen::End(9)];
        assert_eq!(breaches(&crowd, |i| i == 0, 2).len(), 1);
    }

    #[test]
    fn fault_runs_do_go_side_by_side() {
        // Two jobs that each wait to meet the other: only side by side can both meet.
        let met = (std::sync::Mutex::new(0), std::sync::Condvar::new());
        let run = |_: &usize| {
            let (n, cv) = &met;
            let mut n = n.lock().unwrap();
            *n += 1;
            cv.notify_all();
            // A safety limit for a scheduler that runs them one at a time: the test then fails.
            let (n, _) = cv.wait_timeout_while(n, Duration::from_secs(10), |n| *n < 2).unwrap();
            Ok(*n >= 2)
        };
        let mut each = Vec::new();
        schedule_by(&[0, 1], |_| Lane::Beside, 2, run, |_, met, _| each.push(met)).unwrap();
        assert_eq!(each, [true, true]);
    }

    #[test]
    fn after_an_error_nothing_more_starts_and_the_first_error_is_returned() {
        let started = std::sync::Mutex::new(Vec::new());
        // Width 1: the order of starts is the jobs' order.
        let lanes = [Lane::Alone, Lane::Beside, Lane::Beside, Lane::Alone, Lane::Beside];
        let run = |&i: &usize| {
            started.lock().unwrap().push(i);
            if i == 2 {
                Err(RunError::Failed("job 2 broke".into()))
            } else {
                Ok(i)
            }
        };
        let mut done = Vec::new();
        let r = schedule_by(&[0, 1, 2, 3, 4], |&i| lanes[i], 1, run, |i, _, _| done.push(i));
        assert!(matches!(r, Err(RunError::Failed(ref e)) if e == "job 2 broke"), "{r:?}");
        assert_eq!(started.into_inner().unwrap(), [0, 1, 2]);
        assert_eq!(done, [0, 1]);
    }

    #[test]
    fn a_row_is_made_in_repeat_order_whatever_order_its_runs_ended_in() {
        let info = registry::info("centralized").unwrap();
        let mut p = Parts::default();
        let one = Duration::from_millis(1);
        for f in (0..FAULTS.len()).rev() {
            p.add(Job { algo: 0, what: What::Sim { fault: f } }, Done::Sim(None), one);
            for rep in (0..2u32).rev() {
                let run = FaultRun {
                    fault: FAULTS[f].name(),
                    seed: u64::from(rep),
                    ..fault(Outcome::Stalls, true)
                };
                p.add(Job { algo: 0, what: What::Fault { fault: f, rep } }, Done::Fault(run, Some(5)), one);
            }
        }
        assert!(!p.complete(2), "the timing runs are not in");
        for rep in (0..2u32).rev() {
            let m = measured(f64::from(rep) + 2.0, 50_000.0, &[(2, 10)], true);
            p.add(Job { algo: 0, what: What::Timing { rep } }, Done::Measured(Box::new(m)), one);
        }
        assert!(p.complete(2));
        let row = p.row(info, 5, 0.01);
        assert!(!p.complete(2), "a row is made once");
        assert_eq!(p.took, one * (2 + 4 * 3) as u32);
        let faults: Vec<&str> = row.problems.by_fault.iter().map(|f| f.fault).collect();
        assert_eq!(faults, FAULTS.map(Fault::name));
        for f in &row.problems.by_fault {
            assert_eq!(f.repeats.iter().map(|r| r.seed).collect::<Vec<_>>(), [0, 1], "{f:?}");
            assert_eq!(f.tally.stalls, 2);
        }
        assert_eq!(row.problems.runs[0].seed, 0, "the first repeat's run");
        let light = row.spread.messages_light.unwrap();
        assert_eq!((light.min, light.max, light.runs), (2.0, 3.0, 2));
    }

    #[test]
    fn the_longest_quiet_spell_is_between_entries_and_exits_only() {
        let ms = 1_000_000;
        let rec = [
            want(0, 0),
            enter(0, ms),
            exit(0, 2 * ms),
            want(1, 40 * ms),
            enter(1, 30 * ms),
            exit(1, 31 * ms),
        ];
        // 2 ms to 30 ms; the WANT at 40 ms moves nothing; the file's order does not matter.
        assert_eq!(longest_quiet(rec), Some(28 * ms));
        assert_eq!(longest_quiet([want(0, 0), enter(0, ms)]), None, "one ENTER is no spell");
    }
}
