//! The 003 notes' manager (the algorithm of the notes' centralized row): its runs at
//! three section lengths chosen against a calibrated T ([`MANAGER_LOADS`] of it), each a
//! saturated run for the utilisation and a light-load run for a quiet request's cost,
//! and the figures they make beside W/(W+2T), W+3T and 1/(W+3T) ([`Manager`]).

use std::path::Path;

use crate::control::RESOURCE_FILE;
use crate::registry::{AlgoInfo, Registry};
use crate::resource::Record;
use crate::supervisor::{self, RunError, RunOpts};

use super::entries::EntryCounts;
use super::measure::{median, read_records, run_opts, unclean, Measured};
use super::model::*;
use super::{claim, CompareOpts, LIGHT, MANAGER_LOADS, SATURATED};

/// One repeat of the manager's runs with sections of `cs_ms`: a saturated one and a
/// light-load one.
#[derive(Clone, Debug, Default)]
pub(super) struct ManagerRun {
    /// The section asked for, in ms.
    pub(super) cs_ms: f64,
    /// Sections' total over first ENTER to last EXIT, and the mean section in ns.
    pub(super) used: Option<(f64, u64)>,
    /// The run's median SEND→RECV time, in ns.
    pub(super) t_ns: Option<u64>,
    /// Mean hops per handoff, the coordinator's own included.
    pub(super) mean_hops: Option<f64>,
    /// The light-load run's quiet requests: median want → RELEASE received and how many,
    /// the median section and the median SEND→RECV, in ns.
    pub(super) cost: Option<RequestCost>,
    /// Why it could not be measured, or was not clean.
    pub(super) note: Option<String>,
}

/// A light-load run's quiet requests, as the manager's W+3T reads them (ns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct RequestCost {
    pub(super) release_ns: u64,
    pub(super) samples: u64,
    pub(super) section_ns: u64,
    pub(super) t_ns: u64,
}

impl RequestCost {
    /// From a light-load run's entry counts and its median section (ENTER to EXIT in
    /// the resource file: the trace's enter is stamped after the ENTER is written and the
    /// counter read, which a spun section of a few T would lose); `None` without a quiet
    /// request's RELEASE.
    fn of(c: &EntryCounts, section_ns: Option<u64>) -> Option<RequestCost> {
        Some(RequestCost {
            release_ns: c.release_median_ns?,
            samples: c.release_samples,
            section_ns: section_ns?,
            t_ns: c.message_median_ns?,
        })
    }
}

/// Repeat `rep` of the manager's saturated run with sections of `cs_ms` (traced, for
/// the run's own T), then its light-load run (traced, for a quiet request's W+3T);
/// their directories go after.
pub(super) fn manager_once(
    o: &CompareOpts,
    reg: &Registry,
    info: &'static AlgoInfo,
    rep: u32,
    cs_ms: f64,
    tmp: &Path,
) -> Result<ManagerRun, RunError> {
    let dir = tmp.join(format!("{}-manager-{cs_ms:.4}-{rep}", info.name));
    let seed = o.seed.wrapping_add(u64::from(rep));
    let r = supervisor::run(
        &RunOpts { trace: true, seed, ..run_opts(o, info, dir.clone(), o.entries, (cs_ms, SATURATED.1)) },
        reg,
    )?;
    let mut m = ManagerRun { cs_ms, note: unclean("manager's saturated", &r), ..ManagerRun::default() };
    match read_records(&dir.join(RESOURCE_FILE)) {
        // The mean section, not the median: utilisation is a sum.
        Ok(records) => {
            let mean = mean_section(&records);
            m.used = crate::handoff::utilisation(records).zip(mean).map(|((share, _), w)| (share, w));
        }
        Err(e) => m.note = Some(format!("cannot read its resource file: {e}")),
    }
    match crate::handoff::analyse(&dir, None) {
        Ok(h) => {
            m.t_ns = h.message_median_ns;
            m.mean_hops = h.mean();
        }
        Err(e) => m.note = Some(format!("its trace: {e}")),
    }
    let _ = std::fs::remove_dir_all(&dir);
    let light_dir = tmp.join(format!("{}-manager-light-{cs_ms:.4}-{rep}", info.name));
    let light = supervisor::run(
        &RunOpts { trace: true, seed, ..run_opts(o, info, light_dir.clone(), o.entries, (cs_ms, LIGHT.1)) },
        reg,
    )?;
    if let Some(why) = unclean("manager's light-load", &light) {
        m.note.get_or_insert(why);
    }
    // As in the timing runs: the coordinator's own entries cost nothing and are left out.
    let c = claim(info);
    let skip = c.is_some_and(|c| c.coordinator_free).then_some(o.workers - 1);
    let sections = read_records(&light_dir.join(RESOURCE_FILE)).map(|r| section_median(&r)).unwrap_or(None);
    match super::entries::analyse(&light_dir, skip, c.and_then(|c| c.entry_by_hops_of)) {
        Ok(c) => m.cost = RequestCost::of(&c, sections),
        Err(e) => m.note = Some(format!("its light-load run's trace: {e}")),
    }
    let _ = std::fs::remove_dir_all(&light_dir);
    Ok(m)
}

/// The manager's calibration: one saturated run (traced) with sections of `cs_ms`, the
/// first guess at T; its median SEND→RECV in ns, the T its loads' sections are chosen
/// against (a run's messages cost more than a ping-pong, and less with short sections
/// than with 1 ms ones). `None` if its trace gave none.
pub(super) fn manager_calibration(
    o: &CompareOpts,
    reg: &Registry,
    info: &'static AlgoInfo,
    cs_ms: f64,
    tmp: &Path,
) -> Result<Option<u64>, RunError> {
    let dir = tmp.join(format!("{}-manager-calibration", info.name));
    supervisor::run(
        &RunOpts { trace: true, ..run_opts(o, info, dir.clone(), o.entries, (cs_ms, SATURATED.1)) },
        reg,
    )?;
    let t = crate::handoff::analyse(&dir, None).ok().and_then(|h| h.message_median_ns);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(t)
}

/// Every completed section, ENTER to its EXIT, in ns.
fn sections(records: &[Record]) -> Vec<u64> {
    let mut inside = std::collections::HashMap::new();
    let mut out = Vec::new();
    for r in records {
        match *r {
            Record::Enter { w, t, .. } => {
                inside.insert(w, t);
            }
            Record::Exit { w, t, .. } => {
                if let Some(since) = inside.remove(&w) {
                    out.push(t.saturating_sub(since));
                }
            }
            _ => {}
        }
    }
    out
}

/// The mean section, ENTER to its EXIT, in ns; `None` if none was completed.
pub(super) fn mean_section(records: &[Record]) -> Option<u64> {
    let s = sections(records);
    (!s.is_empty()).then(|| s.iter().sum::<u64>() / s.len() as u64)
}

/// The median section, ENTER to its EXIT, in ns; `None` if none was completed.
pub(super) fn section_median(records: &[Record]) -> Option<u64> {
    median(&mut sections(records)).map(|m| m as u64)
}

/// What the manager's sections were chosen against ([`Manager::chosen_against`]).
pub(super) const CALIBRATED: &str =
    "the median SEND→RECV of a saturated calibration run with sections of its timing runs' T";
pub(super) const UNCALIBRATED: &str = "a first guess: the calibration run's trace gave no T";

/// The median over `measured`'s repeats of their saturated run's median SEND→RECV, in
/// ms; `None` if no trace gave one.
pub(super) fn saturated_t(measured: &[(u32, Measured)]) -> Option<f64> {
    let t: Vec<f64> = measured
        .iter()
        .filter_map(|(_, m)| m.hops.as_ref().ok()?.message_time_us)
        .map(|us| us / 1e3)
        .collect();
    Spread::of(&t).map(|s| s.median)
}

/// A request's cost beside W+3T: `measured` each repeat's median in µs, W and T in ns.
fn request_cost(measured: Spread, samples: u64, w: f64, t: f64) -> ManagerCost {
    let predicted = w + 3.0 * t;
    ManagerCost {
        measured_us: measured,
        samples,
        w_us: w / 1e3,
        t_us: t / 1e3,
        predicted_us: predicted / 1e3,
        rate_per_s: 1e6 / measured.median,
        predicted_rate_per_s: 1e9 / predicted,
    }
}

/// The manager's figures: its cost from its row's light runs, its utilisation and cost
/// from the runs at [`MANAGER_LOADS`] (sorted by load and repeat), whose sections were
/// chosen against `against` (T in ms, and which T).
pub(super) fn manager_figures(row: &Row, runs: &[(usize, u32, ManagerRun)], against: (f64, &str)) -> Manager {
    let cost = row.entry_messages.as_ref().and_then(|e| {
        let c = &e.counts;
        let (w, t) = (c.section_median_ns? as f64, c.message_median_ns? as f64);
        Some(request_cost(e.release_us?, c.release_samples, w, t))
    });
    let utilisation = MANAGER_LOADS
        .iter()
        .enumerate()
        .map(|(level, &times_t)| {
            let mine: Vec<&ManagerRun> = runs.iter().filter(|r| r.0 == level).map(|r| &r.2).collect();
            let med = |v: Vec<f64>| Spread::of(&v).map(|s| s.median);
            let costs: Vec<_> = mine.iter().filter_map(|m| m.cost).collect();
            let cost =
                Spread::of(&costs.iter().map(|c| c.release_ns as f64 / 1e3).collect::<Vec<_>>()).map(|s| {
                    let w = med(costs.iter().map(|c| c.section_ns as f64).collect()).unwrap_or(0.0);
                    let t = med(costs.iter().map(|c| c.t_ns as f64).collect()).unwrap_or(0.0);
                    request_cost(s, costs.iter().map(|c| c.samples).sum(), w, t)
                });
            let w = med(mine.iter().filter_map(|m| m.used.map(|u| u.1 as f64)).collect());
            let t = med(mine.iter().filter_map(|m| m.t_ns.map(|t| t as f64)).collect());
            let k_bar = med(mine.iter().filter_map(|m| m.mean_hops).collect());
            let (w, t) = (w.unwrap_or(0.0), t.unwrap_or(0.0));
            let share = |k: f64| if w + k * t > 0.0 { w / (w + k * t) } else { 0.0 };
            ManagerLoad {
                times_t,
                cs_ms: mine.first().map_or(0.0, |m| m.cs_ms),
                measured: Spread::of(&mine.iter().filter_map(|m| m.used.map(|u| u.0)).collect::<Vec<_>>()),
                w_us: w / 1e3,
                t_us: t / 1e3,
                predicted: share(2.0),
                with_mean_hops: k_bar.map(share),
                mean_hops: k_bar,
                cost,
                notes: mine.iter().filter_map(|m| m.note.clone()).collect(),
            }
        })
        .collect();
    Manager {
        algorithm: row.algorithm.clone(),
        cost,
        chosen_against_t_us: against.0 * 1e3,
        chosen_against: against.1.to_string(),
        utilisation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Fence;

    fn enter(w: u32, t: u64) -> Record {
        Record::Enter { w, e: 1, fence: Fence { clock: t, id: w }, t }
    }
    fn exit(w: u32, t: u64) -> Record {
        Record::Exit { w, e: 1, fence: Fence { clock: 0, id: w }, read: 0, value: 1, t }
    }

    #[test]
    fn the_mean_section_weighs_a_long_one_the_median_would_hide() {
        let log = [enter(0, 0), exit(0, 10), enter(1, 20), exit(1, 30), enter(2, 40), exit(2, 1040)];
        assert_eq!(mean_section(&log), Some(340));
        assert_eq!(mean_section(&[enter(0, 5)]), None, "no section completed");
        assert_eq!(section_median(&log), Some(10));
        assert_eq!(section_median(&[enter(0, 5)]), None);
    }
}
