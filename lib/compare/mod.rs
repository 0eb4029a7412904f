//! `mutexlab compare`: the course notes' comparison table of mutual-exclusion
//! algorithms (messages per entry and exit, delay before entry in message times, and
//! problems), measured with real runs on this machine and set beside what the notes
//! and the registry's theory claim.
//!
//! For each algorithm it makes:
//! - a light-load run (long think time next to a section of `--cs-ms`) and a saturated
//!   one (no think time): messages per entry from the run report, heartbeats left out,
//!   and the median wait at light load;
//! - from the light-load run's trace, the notes' "delay before entry (in message times)"
//!   as they count it ([`entries`]): the messages in each entry's causal past since its
//!   request (their sequential network), the longest causal chain (a parallel one), the
//!   wall time in the run's own message time, beside the notes' formula at this N
//!   ([`crate::algos::NotesEntry`]) or the registry's claim;
//! - for the 003 notes' manager (the algorithm of the notes' centralized row): a quiet
//!   request's time from its want to the coordinator's receipt of its RELEASE beside
//!   W+3T, and at three section lengths chosen against the run's T (W ≈ T, 10 T, 100 T)
//!   saturated runs beside W/(W+2T) and light-load runs beside W+3T ([`Manager`]);
//! - from the saturated run's `resource.log`, the synchronisation delay: from one
//!   worker's EXIT to the next ENTER while someone was waiting ([`sync_delays`]);
//! - from the saturated run's trace, the same handoffs in message hops (the messages
//!   on the shortest causal chain from the leave to the enter, [`crate::handoff`]),
//!   their wall-clock time in the run's own median message time, and the share of time
//!   the resource was held against W/(W+kT) ([`SyncHops`]);
//! - short fault runs, each judged `survives`, `stalls` or `unsafe` from the run's
//!   verdict and audit: a crash of a worker outside the section, of the holder, of the
//!   coordinator (the highest id), and lost messages (`drop 0.05 all at 0ms`), each a
//!   step of the plan grammar, the simulator's as the real runs'. They run under
//!   `--detector`, `none` by default (the notes' model: a crash looks like slowness), and
//!   the crashes again under the perfect detector, what it rescues
//!   ([`Problems::rescue`]).
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
//! **Scheduling**: the timing runs (light and saturated, then the manager's) come first, one
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
//!
//! Here the steps in order ([`compare`]); the data in `model.rs`, the scheduler in
//! `schedule.rs`, the runs and their reading in `measure.rs`, the manager's in
//! `manager.rs`, the tables in `render.rs`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::algorithm::ServiceKind;
use crate::algos::{Claim, Family};
use crate::control::Detector;
use crate::registry::{AlgoInfo, Registry};
use crate::supervisor::RunError;

pub mod entries;
mod manager;
mod measure;
mod model;
mod render;
mod schedule;

use manager::{manager_calibration, manager_figures, manager_once, saturated_t, CALIBRATED, UNCALIBRATED};
pub use measure::{entry_waits, longest_quiet, outcome, read_records, sync_delays};
use measure::{fault_run, measure_once, simulate_fault, FAULTS};
pub use model::{
    Comparison, Delay, EntryMessages, Excluded, FaultRun, FaultSettings, FaultSummary, Manager, ManagerCost,
    ManagerLoad, NotesFormula, Outcome, PerEntry, Problems, Row, RowSpread, SimDecision, Spread, SyncHops,
    Tally, Timing, Utilisation, CLIENT_ENTRIES, EVERY_ENTRY,
};
pub(crate) use render::{cells, footer, manager_cells, COST_HEAD, MANAGER_HEAD, PROBLEM_HEAD};
pub use render::{markdown, text, README_BEGIN, README_END};
pub(crate) use schedule::MANAGER_LOADS;
pub use schedule::{fault_width, MAX_FAULT_WIDTH};
use schedule::{jobs, schedule, Done, Job, Parts, What};

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
/// The section is `--cs-ms` (this by default).
const LIGHT: (f64, f64) = (1.0, 20.0);
/// The longest section `--cs-ms` takes: a saturated run of the defaults is 100 of them
/// one after another.
pub const MAX_CS_MS: f64 = 100.0;
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
    /// The algorithms, as the registry's entries; empty means [`default_algorithms`] of
    /// the registry [`compare`] is given.
    pub algos: Vec<&'static AlgoInfo>,
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
    /// The section W of the light and saturated runs, in ms (`--cs-ms`).
    pub cs_ms: f64,
}

/// The claim for `info`, if its registry entry has one (an algorithm from another
/// crate may not).
fn claim(info: &'static AlgoInfo) -> Option<&'static Claim> {
    info.claim.as_ref()
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

/// Every mutual-exclusion algorithm of `reg` but the baselines, and the
/// mutual-exclusion ones left out, with why.
pub fn default_algorithms(reg: &Registry) -> (Vec<&'static AlgoInfo>, Vec<Excluded>) {
    let mut chosen = Vec::new();
    let mut left = Vec::new();
    for a in reg.iter() {
        match excluded_why(a) {
            None => chosen.push(a),
            Some(why) if a.service == ServiceKind::Mutex => {
                left.push(Excluded { algorithm: a.name.into(), why: why.into() })
            }
            Some(_) => {}
        }
    }
    (chosen, left)
}

/// Check what was asked before anything runs: the ranges of N and entries, and that
/// every algorithm is comparable.
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
    if !(o.cs_ms.is_finite() && o.cs_ms > 0.0 && o.cs_ms <= MAX_CS_MS) {
        return Err(format!("--cs-ms must be above 0 and at most {MAX_CS_MS}, not {}", o.cs_ms));
    }
    match o.algos.iter().find(|a| a.service != ServiceKind::Mutex) {
        Some(a) => Err(format!("{:?} is an election, and compare measures mutual exclusion", a.name)),
        None => Ok(()),
    }
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

/// Measure every algorithm asked for (none asked: the defaults of `reg`); `done` hears
/// of each algorithm's timing runs and each row as they are finished ([`Progress`]).
/// Usage errors come back as [`RunError::Usage`].
///
/// First every timing run (light and saturated, every repeat), one at a time with
/// nothing beside it; then the fault runs and the simulator's decisions, up to
/// [`fault_width`] at once. Rows are finished in the order asked.
pub fn compare(
    o: &CompareOpts,
    reg: &Registry,
    mut done: impl FnMut(Progress<'_>),
) -> Result<Comparison, RunError> {
    validate(o).map_err(RunError::Usage)?;
    let started = Instant::now();
    let (infos, excluded) =
        if o.algos.is_empty() { default_algorithms(reg) } else { (o.algos.clone(), Vec::new()) };
    let t = crate::supervisor::probe::ping_pong(&o.exe, PING_PONG_ROUNDS, crate::supervisor::Transport::Unix)
        .map_err(|e| RunError::Failed(format!("measuring the message time T: {e}")))?;
    let t_ms = t.as_secs_f64() * 1e3;
    // Every run lives here and is removed with it, clean or not.
    let tmp = tempfile::Builder::new()
        .prefix("mutexlab-compare-")
        .tempdir()
        .map_err(|e| RunError::Failed(format!("cannot make a temporary directory: {e}")))?;
    // The 003 notes' manager: the algorithm of the notes' centralized row.
    let manager = infos
        .iter()
        .position(|i| claim(i).and_then(|c| c.notes_entry).is_some_and(|e| e.row == "Centralized"));
    // Under another detector the crashes are made again under the perfect one.
    let rescue = o.detector != Detector::Perfect;
    let jobs = jobs(infos.len(), o.repeat, manager, rescue);
    let mut parts: Vec<Parts> = (0..infos.len()).map(|i| Parts::new(manager == Some(i), rescue)).collect();
    let mut rows: Vec<Row> = Vec::new();
    let mut manager_row: Option<Manager> = None;
    let width = fault_width();
    let mut quiet: Option<u64> = None;
    // The manager's first guess at T, set once its timing runs are in (every timing run
    // comes first, alone); then the T its sections are chosen against, from a
    // calibration run at that guess made before its first run (alone too).
    let timing_t: std::sync::OnceLock<Option<f64>> = std::sync::OnceLock::new();
    let manager_t: std::sync::OnceLock<(f64, &'static str)> = std::sync::OnceLock::new();
    let run = |job: &Job| -> Result<Done, RunError> {
        let info = infos[job.algo];
        Ok(match job.what {
            What::Timing { rep } => Done::Measured(Box::new(measure_once(o, reg, info, rep, tmp.path())?)),
            What::Manager { level, rep } => {
                if manager_t.get().is_none() {
                    let guess = timing_t.get().copied().flatten().unwrap_or(t_ms);
                    let t = manager_calibration(o, reg, info, guess, tmp.path())?;
                    let _ =
                        manager_t.set(t.map_or((guess, UNCALIBRATED), |ns| (ns as f64 / 1e6, CALIBRATED)));
                }
                let (t, _) = manager_t.get().copied().unwrap_or((t_ms, UNCALIBRATED));
                let cs_ms = (MANAGER_LOADS[level] * t).min(MAX_CS_MS);
                Done::Manager(manager_once(o, reg, info, rep, cs_ms, tmp.path())?)
            }
            What::Fault { fault, rep } => {
                let (run, quiet) = fault_run(o, reg, info, FAULTS[fault], rep, o.detector, tmp.path())?;
                Done::Fault(run, quiet)
            }
            What::Rescue { fault, rep } => {
                let (run, quiet) =
                    fault_run(o, reg, info, FAULTS[fault], rep, Detector::Perfect, tmp.path())?;
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
            if manager == Some(job.algo) {
                let _ = timing_t.set(saturated_t(&parts[job.algo].measured));
            }
            done(Progress::Timed(infos[job.algo].name, parts[job.algo].took));
        }
        // Rows in the order asked: each once it and every row before it are complete.
        while let Some(p) = parts.get_mut(rows.len()).filter(|p| p.complete(o.repeat)) {
            let row = p.row(infos[rows.len()], o.workers, t_ms);
            if manager == Some(rows.len()) {
                let against = manager_t.get().copied().unwrap_or((t_ms, UNCALIBRATED));
                manager_row = Some(manager_figures(&row, &p.managers, against));
            }
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
        manager: manager_row,
        ..Comparison::new(o.workers, o.entries, &o.detector.to_string())
    };
    c.light.cs_ms = o.cs_ms;
    c.saturation.cs_ms = o.cs_ms;
    c.fault_runs.rescue_detector = rescue.then(|| Detector::Perfect.to_string());
    c.fault_runs.side_by_side = width as u32;
    c.fault_runs.longest_quiet_ms = quiet.map(|ns| ns as f64 / 1e6);
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::manager::{ManagerRun, RequestCost};
    use super::measure::{aggregate, sync_hops, Measured};
    use super::*;

    pub(super) fn fault(outcome: Outcome, as_intended: bool) -> FaultRun {
        FaultRun {
            fault: "holder crash",
            plan: "kill holder at entry 3".into(),
            seed: 1,
            outcome,
            as_intended,
            detail: String::new(),
        }
    }

    /// A made-up repeat of the measurement runs.
    pub(super) fn measured(light: f64, sync_ns: f64, hops: &[(u32, u64)], clean: bool) -> Measured {
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
            entries: Ok(entries::EntryCounts {
                entries: 10,
                quiet: 9,
                sequential: entries::Counts([(2, 9), (4, 1)].into()),
                sequential_quiet: entries::Counts([(2, 9)].into()),
                chain: entries::Counts([(2, 9), (4, 1)].into()),
                chain_quiet: entries::Counts([(2, 9)].into()),
                wall_median_ns: Some(sync_ns as u64 * 2),
                wall_quiet_median_ns: Some(sync_ns as u64),
                message_median_ns: Some(20_000),
                release_median_ns: Some(1_100_000),
                release_samples: 9,
                section_median_ns: Some(1_040_000),
                ..Default::default()
            }),
            clean,
            notes: if clean { vec![] } else { vec!["saturated run not clean: stall".into()] },
        }
    }

    /// The built-in algorithm `name`.
    pub(super) fn builtin(name: &str) -> &'static AlgoInfo {
        Registry::builtin().get(name).unwrap()
    }

    /// compare's defaults (N = 5, -k 20, seed 1, no detector, 1 ms sections), `repeat` times.
    pub(super) fn opts(repeat: u32) -> CompareOpts {
        CompareOpts {
            exe: PathBuf::from("mutexlab"),
            algos: vec![],
            workers: 5,
            entries: 20,
            seed: 1,
            detector: Detector::None,
            repeat,
            cs_ms: 1.0,
        }
    }

    #[test]
    fn the_default_list_is_every_mutex_algorithm_but_the_baselines_and_each_has_a_claim() {
        let (chosen, left) = default_algorithms(&Registry::builtin());
        let names: Vec<&str> = chosen.iter().map(|a| a.name).collect();
        assert!(names.contains(&"centralized") && names.contains(&"token-ring"));
        assert!(!names.contains(&"bully"), "elections are not compared");
        let left: Vec<&str> = left.iter().map(|e| e.algorithm.as_str()).collect();
        assert_eq!(left, ["none", "flock"]);
        for a in chosen {
            assert!(claim(a).is_some(), "{} has no claim", a.name);
        }
    }

    #[test]
    fn the_defaults_are_those_of_the_registry_given() {
        // An algorithm a lab registers is compared by default, where the process's
        // registry (the built-in one here) does not know it.
        let reg = Registry::builtin().with(AlgoInfo {
            name: "lamport-again",
            family: Family::Permission,
            summary: "Lamport under another name",
            ..AlgoInfo::runs::<crate::algos::lamport::Lamport>()
        });
        let names = |reg: &Registry| default_algorithms(reg).0.iter().map(|a| a.name).collect::<Vec<_>>();
        assert_eq!(names(&reg).last(), Some(&"lamport-again"));
        assert!(!names(crate::registry::registry()).contains(&"lamport-again"));
        let mine = reg.get("lamport-again").unwrap();
        assert!(claim(mine).is_none(), "no claim of its own: none borrowed by name");
        assert_eq!(validate(&CompareOpts { algos: vec![mine], ..opts(1) }), Ok(()));
    }

    #[test]
    fn repeats_are_aggregated_into_medians_with_their_range_in_every_table() {
        let info = builtin("centralized");
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
        let row = aggregate(info, 5, 0.01, &runs, by_fault, vec![]);
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

        // The delay before entry in messages: every entry of every repeat, then the quiet.
        let cell = "2 (2-4); quiet 2 (27 of 30)";
        assert!(text.contains(cell) && md.contains(&format!("| {cell} |")), "{text}");
        assert!(page.contains(&format!("<td>{cell}</td>")), "{page}");
        assert!(text.contains("notes (Centralized): 2; quiet entries within, all outside"), "{text}");
        let e = &r["entry_messages"];
        assert_eq!(e["counts"]["sequential_quiet"]["2"], 27, "{e}");
        assert_eq!(e["counts"]["sequential"]["4"], 3, "{e}");
        assert_eq!(
            (e["quiet_within_notes"].as_bool(), e["all_within_notes"].as_bool()),
            (Some(true), Some(false))
        );
        // Quiet entries' wall time over the run's own T: 50 µs over 20 µs.
        assert_eq!(e["wall_in_message_times"]["median"].as_f64(), Some(2.5), "{e}");
    }

    #[test]
    fn the_manager_s_figures_stand_beside_w_plus_3t_and_w_over_w_plus_2t() {
        let info = builtin("centralized");
        let m = measured(3.0, 50_000.0, &[(2, 10)], true);
        let row = aggregate(info, 5, 0.01, &[m.clone(), m.clone(), m], vec![], vec![]);
        // At W = 1, 10, 100 T of 25 µs: each repeat's saturated share, and a light-load
        // run whose quiet requests took W+3T plus 10 µs.
        let run = |level: usize, used: f64| {
            let w_ns = 25_000 * [1, 10, 100][level];
            ManagerRun {
                cs_ms: w_ns as f64 / 1e6,
                used: Some((used, w_ns)),
                t_ns: Some(25_000),
                mean_hops: Some(1.6),
                cost: Some(RequestCost {
                    release_ns: w_ns + 3 * 20_000 + 10_000,
                    samples: 9,
                    section_ns: w_ns,
                    t_ns: 20_000,
                }),
                note: None,
            }
        };
        let runs: Vec<(usize, u32, ManagerRun)> =
            (0..3).flat_map(|level| (0..2).map(move |rep| (level, rep, run(level, 0.5)))).collect();
        let man = manager_figures(&row, &runs, (0.025, CALIBRATED));
        // W = 1040 µs, T = 20 µs: W+3T = 1100 µs, as measured; 1/(W+3T) ≈ 909/s.
        let cost = man.cost.as_ref().unwrap();
        assert_eq!((cost.w_us, cost.t_us, cost.predicted_us), (1040.0, 20.0, 1100.0));
        assert_eq!(cost.measured_us.median, 1100.0);
        assert!((cost.predicted_rate_per_s - 1e6 / 1100.0).abs() < 1e-9, "{cost:?}");
        assert_eq!(man.utilisation.len(), 3);
        assert_eq!(man.chosen_against_t_us, 25.0);
        // W = T: W/(W+2T) = 1/3; with 1.6 hops a handoff, 1/2.6.
        let u = &man.utilisation[0];
        assert_eq!((u.times_t, u.cs_ms), (1.0, 0.025));
        assert!(
            (u.predicted - 1.0 / 3.0).abs() < 1e-12 && (u.with_mean_hops.unwrap() - 1.0 / 2.6).abs() < 1e-12
        );
        assert_eq!(u.measured.unwrap().runs, 2, "one figure a repeat");
        // Its quiet requests at W = 25 µs, T = 20 µs: W+3T = 85 µs against 95 measured.
        let k = u.cost.as_ref().unwrap();
        assert_eq!(
            (k.w_us, k.t_us, k.predicted_us, k.measured_us.median, k.samples),
            (25.0, 20.0, 85.0, 95.0, 18)
        );
        let c = Comparison { manager: Some(man), ..Comparison::new(5, 20, "none") };
        let text = text(&c);
        assert!(text.contains("W+3T = 1100.0 µs") && text.contains("W/(W+2T) = 0.333"), "{text}");
        assert!(text.contains("25.0 µs = 1.0 T (0.025 ms asked)"), "W in T: {text}");
        assert!(text.contains("2500.0 µs = 100.0 T (2.500 ms asked)"), "W in T: {text}");
        assert!(text.contains("W ≈ 1 T: a quiet request") && text.contains("W+3T = 85.0 µs"), "{text}");
        assert!(text.contains("rate 10526/s; 1/(W+3T) = 11765/s"), "{text}");
        assert!(text.contains("sections W of 1, 10, 100 T asked, T 25.0 µs (the median SEND→RECV of a saturated calibration"), "{text}");
    }

    #[test]
    fn bad_requests_are_refused_by_name() {
        let o = opts(3);
        assert_eq!(validate(&o), Ok(()));
        for (bad, says) in [
            (CompareOpts { workers: 1, ..o.clone() }, "-n must be"),
            (CompareOpts { entries: 1, ..o.clone() }, "-k must be"),
            (CompareOpts { repeat: 0, ..o.clone() }, "--repeat must be between 1"),
            (
                CompareOpts { algos: vec![builtin("lamport"), builtin("bully")], ..o.clone() },
                "\"bully\" is an election",
            ),
        ] {
            let why = validate(&bad).unwrap_err();
            assert!(why.starts_with(says) || why.contains(says), "{why}");
        }
    }
}
