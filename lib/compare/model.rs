//! The data a comparison is made of: the [`Comparison`] with its rows, figures, spreads
//! and fault tallies, as printed and written to JSON (their fields are the JSON schema),
//! with the small sums on them (medians and ranges, tallies, their words).

use serde::Serialize;

use crate::algos::Theory;

use super::{DROP, FAULT_ENTRIES, FAULT_STALL_MS, FAULT_TIMING, LIGHT, SATURATED, SCHEMA, SIM_SEEDS};

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
    /// The 003 notes' manager measured, when the centralized algorithm is compared.
    pub manager: Option<Manager>,
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
                rescue_detector: None,
                sim_seeds: format!("{}..{}", SIM_SEEDS.start, SIM_SEEDS.end),
            },
            message_time_us: 0.0,
            elapsed_s: 0.0,
            repeat: 1,
            manager: None,
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
    /// The most fault runs let go side by side (`fault_width`); the timing runs go one
    /// at a time with nothing beside them.
    pub side_by_side: u32,
    /// The longest any fault run went from one ENTER or EXIT to the next, in ms
    /// (`longest_quiet`): how near a run that went on came to the stall window. `null`
    /// before anything is measured.
    pub longest_quiet_ms: Option<f64>,
    /// The probability of losing a message in the lost-messages run.
    pub drop: f64,
    /// How survivors learn of a crash.
    pub detector: String,
    /// The detector the crashes are made again under, for the rescue column; `null`
    /// when `detector` is already the perfect one.
    pub rescue_detector: Option<String>,
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
    /// The delay before entry in message times as the 002 notes count it, from the
    /// light-load runs' traces; `null` if no trace could be read (a note says why).
    pub entry_messages: Option<EntryMessages>,
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

/// The delay before entry in message times, counted from the light-load runs' traces
/// ([`super::entries`]) over every entry of every repeat, beside the notes' formula.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct EntryMessages {
    /// The entries' counts, merged over the repeats (the medians in ns are the median
    /// repeat's).
    pub counts: super::entries::EntryCounts,
    /// Each repeat's median want-to-enter time of quiet entries over its own median
    /// SEND→RECV time.
    pub wall_in_message_times: Option<Spread>,
    /// Each repeat's median want-to-enter time of quiet entries, in ms (from the trace).
    pub wall_ms: Option<Spread>,
    /// The same over every entry.
    pub wall_all_ms: Option<Spread>,
    /// Each repeat's median want to RELEASE received over quiet requests, in µs.
    pub release_us: Option<Spread>,
    /// The 002 notes' formula, where their table has the algorithm.
    pub notes: Option<NotesFormula>,
    /// The registry's claim (`Claim::entry`), for the algorithms the notes leave out and
    /// beside theirs.
    pub registry: String,
    /// Every quiet entry's sequential count lies within the notes' range; `null` without
    /// a formula or a quiet entry.
    pub quiet_within_notes: Option<bool>,
    /// The same over every entry.
    pub all_within_notes: Option<bool>,
}

/// The 002 notes' delay before entry at this N.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct NotesFormula {
    /// Their table's row.
    pub row: String,
    /// The formula and its value: `2(n-1) = 8`.
    pub formula: String,
    /// The least it allows.
    pub min: f64,
    /// The most it allows; `null`: unbounded.
    pub max: Option<f64>,
}

impl NotesFormula {
    /// Whether every count in `c` lies within the formula's range; `None` if `c` is empty.
    pub fn holds(&self, c: &super::entries::Counts) -> Option<bool> {
        let (lo, hi) = c.range()?;
        Some(f64::from(lo) >= self.min && self.max.is_none_or(|m| f64::from(hi) <= m))
    }
}

/// The 003 notes' manager (the centralized coordinator): a request costs W+3T, a single
/// user's rate is at most 1/(W+3T), and the resource is used W/(W+2T) of the time
/// when requests come while it is held.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Manager {
    /// The algorithm measured.
    pub algorithm: String,
    /// A quiet request from its want to the manager's receipt of its RELEASE, in the
    /// light-load runs (sections of `--cs-ms`).
    pub cost: Option<ManagerCost>,
    /// The T the loads' sections were chosen against, in µs: the median SEND→RECV of a
    /// saturated calibration run whose sections were a first guess at T (the median
    /// SEND→RECV of the algorithm's saturated timing runs, else the ping-pong T); the
    /// guess itself if that run's trace gave none.
    pub chosen_against_t_us: f64,
    /// Which of the two `chosen_against_t_us` is.
    pub chosen_against: String,
    /// Runs at three section lengths, W ≈ T, 10 T and 100 T of that T.
    pub utilisation: Vec<ManagerLoad>,
}

/// The manager's cost of one request, measured beside W+3T.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ManagerCost {
    /// Each repeat's median want → RELEASE received, in µs.
    pub measured_us: Spread,
    /// Requests measured, over every repeat.
    pub samples: u64,
    /// The median section W, in µs (the median repeat's).
    pub w_us: f64,
    /// The run's median SEND→RECV time T, in µs (the median repeat's).
    pub t_us: f64,
    /// W+3T, in µs.
    pub predicted_us: f64,
    /// 1/(measured), per second: the most requests a single user can make.
    pub rate_per_s: f64,
    /// 1/(W+3T), per second.
    pub predicted_rate_per_s: f64,
}

/// The manager at one section length: its utilisation in saturated runs, and a quiet
/// request's cost in light-load runs.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ManagerLoad {
    /// The section asked for, as a multiple of [`Manager::chosen_against_t_us`].
    pub times_t: f64,
    /// The section asked for, in ms (below 1 ms a worker spins, at or above it a timer
    /// of its loop holds the section).
    pub cs_ms: f64,
    /// Each repeat's measured utilisation (sections' total over first ENTER to last EXIT).
    pub measured: Option<Spread>,
    /// The mean section W measured in the saturated runs, in µs (the median repeat's):
    /// utilisation is a sum.
    pub w_us: f64,
    /// The run's median SEND→RECV time T, in µs (the median repeat's).
    pub t_us: f64,
    /// W/(W+2T), the notes'.
    pub predicted: f64,
    /// W/(W+k̄T) with k̄ the run's mean hops per handoff (the coordinator's own entries
    /// hand over in one message, its clients' in two).
    pub with_mean_hops: Option<f64>,
    /// That k̄.
    pub mean_hops: Option<f64>,
    /// A quiet request's want → RELEASE received in light-load runs with this section,
    /// beside W+3T (W and T of those runs); `null` if no quiet request was traced.
    pub cost: Option<ManagerCost>,
    /// Why a repeat could not be measured, if one could not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
    /// The crashes again under the perfect detector, where the runs above had another
    /// (`--detector none`, the notes' model, by default): what the detector rescues.
    /// Empty when the runs above had the perfect detector.
    pub rescue: Vec<FaultSummary>,
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
    /// Its fault plan, in the plan grammar (the lost messages: `drop P all at 0ms`).
    pub plan: String,
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

/// A fault run's outcome, marked when the fault did not hit as meant.
pub(super) fn verdict(r: &FaultRun) -> String {
    let mark = if r.as_intended { "" } else { "?" };
    format!("{}{mark}", r.outcome.word())
}

#[cfg(test)]
mod tests {
    use super::super::tests::fault;
    use super::*;

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
}
