//! The measuring: one repeat of an algorithm's timing runs ([`Measured`]), one fault run
//! and the simulator's decision on a fault, and how they are read: delays and waits from
//! the resource file, hops from the trace, outcomes from the report, and the repeats
//! aggregated into a [`Row`].

use std::path::{Path, PathBuf};

use crate::algos::{Claim, Shape};
use crate::control::{Detector, RESOURCE_FILE};
use crate::faults::{FaultKind, Plan, Standing};
use crate::registry::{AlgoInfo, Registry};
use crate::resource::Record;
use crate::supervisor::{self, AppliedFault, Report, RunError, RunOpts};

use super::entries::EntryCounts;
use super::model::*;
use super::{
    claim, CompareOpts, ATTEMPTS, DROP, FAULT_AT_ENTRY, FAULT_ENTRIES, FAULT_STALL_MS, FAULT_TIMING, LIGHT,
    SATURATED, SIM_MAX_STEPS, SIM_SEEDS,
};

/// The faults every algorithm is put through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fault {
    NonHolder,
    Holder,
    Coordinator,
    Lost,
}

pub(super) const FAULTS: [Fault; 4] = [Fault::NonHolder, Fault::Holder, Fault::Coordinator, Fault::Lost];

/// The faults a failure detector can rescue from: the crashes (a lost message is no
/// crash, and no detector tells of it).
pub(super) const CRASHES: [Fault; 3] = [Fault::NonHolder, Fault::Holder, Fault::Coordinator];

impl Fault {
    pub(super) fn name(self) -> &'static str {
        match self {
            Fault::NonHolder => "non-holder crash",
            Fault::Holder => "holder crash",
            Fault::Coordinator => "coordinator crash",
            Fault::Lost => "lost messages",
        }
    }

    /// The fault's plan, in the plan grammar: every fault is a step of one vocabulary,
    /// the same for the real runs and the simulator's.
    fn plan(self) -> String {
        let k = FAULT_AT_ENTRY;
        match self {
            // w0 is never the centralized coordinator, and is retried if it was inside.
            Fault::NonHolder => format!("kill 0 at entry {k}"),
            Fault::Holder => format!("kill holder at entry {k}"),
            Fault::Coordinator => format!("kill coordinator at entry {k}"),
            Fault::Lost => format!("drop {DROP} all at 0ms"),
        }
    }

    /// Whether a run of `n` workers, with these faults applied and this many messages
    /// lost, was hit the way this fault means.
    fn hit(self, faults: &[AppliedFault], lost: u64, n: u32) -> bool {
        let kill = faults.iter().find(|f| f.action == FaultKind::Kill);
        // Where the supervisor saw its victim when it killed it.
        let inside = |f: &AppliedFault| f.standing == Some(Standing::Inside);
        match self {
            Fault::NonHolder => kill.is_some_and(|f| !inside(f)),
            // A holder that is also the coordinator belongs to the next column.
            Fault::Holder => kill.is_some_and(|f| inside(f) && f.worker != Some(n - 1)),
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
pub(super) fn median(v: &mut [u64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[m] as f64 } else { (v[m - 1] as f64 + v[m] as f64) / 2.0 })
}

/// One run's options; the run lives in `dir` (new), which the caller removes.
pub(super) fn run_opts(
    o: &CompareOpts,
    algo: &'static AlgoInfo,
    dir: PathBuf,
    entries: u64,
    (cs, think): (f64, f64),
) -> RunOpts {
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
pub(super) fn unclean(what: &str, r: &Report) -> Option<String> {
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
pub(super) struct Measured {
    /// Messages per entry at light load and at saturation.
    pub(super) light: f64,
    pub(super) saturation: f64,
    /// Heartbeats left out of them.
    pub(super) heartbeats_light: u64,
    pub(super) heartbeats_saturation: u64,
    /// The median wait at light load and its samples, in ns.
    pub(super) entry: Option<(f64, usize)>,
    /// The median synchronisation delay at saturation and its samples, in ns.
    pub(super) sync: Option<(f64, usize)>,
    /// The handoffs from the trace, or why the trace could not be read.
    pub(super) hops: Result<SyncHops, String>,
    /// The light run's entries counted from its trace, or why it could not be read.
    pub(super) entries: Result<EntryCounts, String>,
    /// Both runs clean.
    pub(super) clean: bool,
    /// Why a run was not clean.
    pub(super) notes: Vec<String>,
}

/// One repeat (`rep`, from 0) of the two measurement runs; the directories go after.
pub(super) fn measure_once(
    o: &CompareOpts,
    reg: &Registry,
    info: &'static AlgoInfo,
    rep: u32,
    tmp: &Path,
) -> Result<Measured, RunError> {
    let name = info.name;
    let c = claim(info);
    let free = c.is_some_and(|c| c.coordinator_free);
    let n = o.workers;
    let said = |f: Option<fn(u32) -> String>| f.map_or_else(|| "-".to_string(), |f| f(n));
    let seed = o.seed.wrapping_add(u64::from(rep));
    let light_dir = tmp.join(format!("{name}-light-{rep}"));
    // Traced, for the delay before entry in messages: at light load the lines cost
    // nothing a section of think time does not cover.
    let light = supervisor::run(
        &RunOpts { trace: true, seed, ..run_opts(o, info, light_dir.clone(), o.entries, (o.cs_ms, LIGHT.1)) },
        reg,
    )?;
    let sat_dir = tmp.join(format!("{name}-saturated-{rep}"));
    // Traced, for the handoffs' hops: a few % of a saturated run's speed, which compare
    // does not measure.
    let sat = supervisor::run(
        &RunOpts {
            trace: true,
            seed,
            ..run_opts(o, info, sat_dir.clone(), o.entries, (o.cs_ms, SATURATED.1))
        },
        reg,
    )?;
    let records = |dir: &Path| {
        read_records(&dir.join(RESOURCE_FILE))
            .map_err(|e| RunError::Failed(format!("{name}: cannot read {}: {e}", dir.display())))
    };
    let med = |mut samples: Vec<u64>| median(&mut samples).map(|ns| (ns, samples.len()));
    let coordinator = free.then_some(n - 1);
    let entry = med(entry_waits(records(&light_dir)?, coordinator));
    let entries = super::entries::analyse(&light_dir, coordinator, c.and_then(|c| c.entry_by_hops_of))
        .map_err(|e| e.to_string());
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
        entries,
        clean: light.ok && sat.ok,
        notes: [unclean("light-load", &light), unclean("saturated", &sat)].into_iter().flatten().collect(),
    })
}

/// The row of `info` from its repeats' measurements and its faults: each figure the
/// median over the repeats, its range in [`Row::spread`], the hops over every handoff.
pub(super) fn aggregate(
    info: &AlgoInfo,
    n: u32,
    t_ms: f64,
    measured: &[Measured],
    by_fault: Vec<FaultSummary>,
    rescue: Vec<FaultSummary>,
) -> Row {
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
        if let Err(e) = &m.entries {
            notes.push(run(&format!("light-load run's trace: {e}")));
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
        entry_messages: entry_messages(c, n, measured),
        problems: Problems {
            notes: c.map_or("-", |c| c.problems),
            runs: by_fault.iter().filter_map(|f| f.repeats.first().cloned()).collect(),
            by_fault,
            rescue,
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

/// The repeats' entries counted in messages as one, beside the notes' formula; `None`
/// if no repeat's trace could be read.
fn entry_messages(c: Option<&Claim>, n: u32, measured: &[Measured]) -> Option<EntryMessages> {
    let runs: Vec<&EntryCounts> = measured.iter().filter_map(|m| m.entries.as_ref().ok()).collect();
    if runs.is_empty() {
        return None;
    }
    let mut all = EntryCounts { hops_of: runs[0].hops_of.clone(), ..EntryCounts::default() };
    for r in &runs {
        all.entries += r.entries;
        all.quiet += r.quiet;
        all.skipped += r.skipped;
        all.let_go += r.let_go;
        all.release_samples += r.release_samples;
        all.sequential.merge(&r.sequential);
        all.sequential_quiet.merge(&r.sequential_quiet);
        all.chain.merge(&r.chain);
        all.chain_quiet.merge(&r.chain_quiet);
    }
    let med = |get: fn(&EntryCounts) -> Option<u64>| {
        Spread::of(&runs.iter().filter_map(|r| get(r)).map(|v| v as f64).collect::<Vec<_>>())
            .map(|s| s.median.round() as u64)
    };
    all.wall_median_ns = med(|r| r.wall_median_ns);
    all.wall_quiet_median_ns = med(|r| r.wall_quiet_median_ns);
    all.message_median_ns = med(|r| r.message_median_ns);
    all.release_median_ns = med(|r| r.release_median_ns);
    all.section_median_ns = med(|r| r.section_median_ns);
    let notes = c.and_then(|c| c.notes_entry).map(|f| {
        let (min, max) = (f.range)(n);
        NotesFormula {
            row: f.row.to_string(),
            formula: (f.formula)(n),
            min,
            max: max.is_finite().then_some(max),
        }
    });
    Some(EntryMessages {
        wall_in_message_times: Spread::of(
            &runs.iter().filter_map(|r| r.wall_in_message_times()).collect::<Vec<_>>(),
        ),
        wall_ms: Spread::of(
            &runs.iter().filter_map(|r| r.wall_quiet_median_ns).map(|ns| ns as f64 / 1e6).collect::<Vec<_>>(),
        ),
        wall_all_ms: Spread::of(
            &runs.iter().filter_map(|r| r.wall_median_ns).map(|ns| ns as f64 / 1e6).collect::<Vec<_>>(),
        ),
        release_us: Spread::of(
            &runs.iter().filter_map(|r| r.release_median_ns).map(|ns| ns as f64 / 1e3).collect::<Vec<_>>(),
        ),
        quiet_within_notes: notes.as_ref().and_then(|f| f.holds(&all.sequential_quiet)),
        all_within_notes: notes.as_ref().and_then(|f| f.holds(&all.sequential)),
        notes,
        registry: c.map_or_else(|| "-".to_string(), |c| (c.entry)(n)),
        counts: all,
    })
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
pub(super) fn simulate_fault(o: &CompareOpts, info: &AlgoInfo, fault: Fault) -> Option<SimDecision> {
    use crate::sim::{Ending, Failure, FaultSim};
    let (detector, told) = match o.detector {
        Detector::Perfect => (true, "perfect detector"),
        Detector::None => (false, "no detector"),
        Detector::Heartbeat { .. } => return None,
    };
    let n = o.workers;
    // The same plan as the real runs', so both are asked for one fault in one vocabulary.
    let (crash, links) = crate::sim::plan_faults(&Plan::parse(&fault.plan(), n).ok()?).ok()?;
    let what = match fault {
        Fault::NonHolder => format!("w0 crashes at entry {FAULT_AT_ENTRY}, never restarted"),
        Fault::Holder => format!("the holder crashes at entry {FAULT_AT_ENTRY}, never restarted"),
        Fault::Coordinator => format!("w{} crashes at entry {FAULT_AT_ENTRY}, never restarted", n - 1),
        Fault::Lost => format!("each message lost for good with probability {DROP}"),
    };
    let mut tally = Tally::default();
    let mut other_failure = None;
    for seed in SIM_SEEDS {
        let r = (info.fault_sim)(&FaultSim {
            n,
            seed,
            entries: FAULT_ENTRIES as u32,
            crash,
            drop: 0.0,
            links: links.clone(),
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
        model: format!("{n} nodes, {FAULT_ENTRIES} entries each; {what}; {told}"),
        other_failure,
    })
}

/// The hops row from a saturated run's handoffs and resource records.
pub(super) fn sync_hops(h: crate::handoff::Handoffs, records: Vec<Record>, notes: String) -> SyncHops {
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

/// Put `info` through one fault (repeat `rep`), retrying with the next seed until it
/// hits as meant; repeat r starts at `seed + r·ATTEMPTS`, so that the repeats' seeds
/// never overlap.
/// With the run, the longest its attempts went without an ENTER or EXIT and then went on
/// ([`longest_quiet`]), in ns.
pub(super) fn fault_run(
    o: &CompareOpts,
    reg: &Registry,
    info: &'static AlgoInfo,
    fault: Fault,
    rep: u32,
    detector: Detector,
    tmp: &Path,
) -> Result<(FaultRun, Option<u64>), RunError> {
    let plan_text = fault.plan();
    let plan =
        Plan::parse(&plan_text, o.workers).map_err(|e| RunError::Failed(format!("{plan_text}: {e}")))?;
    let mut last = None;
    let mut quiet = None;
    for attempt in 0..ATTEMPTS {
        let seed = o.seed.wrapping_add(u64::from(rep) * ATTEMPTS + attempt);
        // The rescue's runs beside the others' (a detector's name is too long for a path
        // a socket lives under).
        let tag = if detector == o.detector { "" } else { "-rescue" };
        let dir = tmp.join(format!("{}-{}{tag}-{rep}-{attempt}", info.name, fault.name().replace(' ', "-")));
        let opts = RunOpts {
            seed,
            plan: plan.clone(),
            stall_ms: FAULT_STALL_MS,
            detector,
            ..run_opts(o, info, dir, FAULT_ENTRIES, FAULT_TIMING)
        };
        let r = supervisor::run(&opts, reg)?;
        if let Some(dir) = &opts.run_dir {
            let gap = read_records(&dir.join(RESOURCE_FILE)).ok().and_then(longest_quiet);
            quiet = quiet.max(gap);
            let _ = std::fs::remove_dir_all(dir);
        }
        let hit = fault.hit(&r.faults, r.lost_messages, o.workers);
        let run = FaultRun {
            fault: fault.name(),
            plan: plan_text.clone(),
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

#[cfg(test)]
mod tests {
    use super::super::tests::opts;
    use super::*;
    use crate::resource::Fence;
    use std::time::Duration;

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

    #[test]
    fn a_fault_counts_only_when_it_hit_as_meant() {
        let kill = |w: u32, where_: &str| AppliedFault {
            at_ms: 1.0,
            t: 1,
            action: FaultKind::Kill,
            worker: Some(w),
            incarnation: Some(0),
            pid: Some(1),
            signal: Some("SIGKILL".into()),
            dead: Some(2),
            late_ms: None,
            standing: Some(if where_ == "inside" { Standing::Inside } else { Standing::Outside }),
            step: None,
            kernel: false,
            note: format!("kill holder at entry 3; w{w} {where_} the critical section"),
        };
        let skip = AppliedFault {
            action: FaultKind::Skip,
            standing: None,
            note: "w0 is dead".into(),
            ..kill(0, "outside")
        };
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
    fn the_simulator_decides_a_holder_crash_of_the_ring_and_of_the_coordinator() {
        let o = CompareOpts { detector: Detector::Perfect, ..opts(1) };
        let ring = super::super::tests::builtin("token-ring");
        // A holder that is also the highest id belongs to the coordinator's column: missed.
        let d = simulate_fault(&o, ring, Fault::Holder).unwrap();
        assert_eq!(d.tally.unanimous(), Some(Outcome::Stalls), "{d:?}");
        assert!(d.words().starts_with("sim: always stalls ("), "{d:?}");
        // A node outside: the ring goes on, unless the token was on its way to it.
        let d = simulate_fault(&o, ring, Fault::NonHolder).unwrap();
        assert!(d.tally.survives > 0 && d.tally.unsafe_ == 0, "{d:?}");
        let central = super::super::tests::builtin("centralized");
        assert_eq!(
            simulate_fault(&o, central, Fault::Coordinator).unwrap().tally.unanimous(),
            Some(Outcome::Stalls)
        );
        // The heartbeat detector's timing is not modelled: no decision rather than a wrong one.
        let hb =
            Detector::Heartbeat { every: Duration::from_millis(50), suspect: Duration::from_millis(100) };
        assert!(simulate_fault(&CompareOpts { detector: hb, ..o }, ring, Fault::Holder).is_none());
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
