//! Descriptors for a run's size. The supervisor holds one control link per worker, and
//! the busiest worker one channel per peer it talks to (every peer, for an algorithm
//! that connects all-to-all; a coordinator's every client): each process needs about
//! one descriptor per worker, plus a few of its own. Before any worker starts, the
//! soft limit (`RLIMIT_NOFILE`) is raised as far as that takes, up to the hard limit,
//! and the workers inherit it; where the hard limit is too low, the run says so in one
//! line (how many descriptors N workers need against the limit) and exits 3, instead of
//! failing later with "too many open files" from somewhere inside.
//!
//! Past the descriptors, what stops an all-to-all algorithm is soft: N(N-1) connections
//! made at the start and messages growing as N² per round, which a slow or loaded
//! machine may not get through within the stall window. Where the registry has the
//! largest N an algorithm was measured clean at ([`AlgoInfo::measured_clean`]), a bigger
//! run is warned about in one line ([`beyond_measured`]) and then made all the same.

use nix::sys::resource::{getrlimit, setrlimit, Resource};

use super::RunError;
use crate::registry::AlgoInfo;

/// Descriptors a process of the run holds beyond one per worker: standard streams,
/// polls, signal pipes, the control link, the listener, the resource and trace files,
/// connections waiting for their hello.
pub(super) const BASE_FDS: u64 = 64;

/// Descriptors each process of a run of `workers` may need.
pub(super) fn needed(workers: u32) -> u64 {
    u64::from(workers) + BASE_FDS
}

/// What to do about a soft limit `soft` and hard limit `hard` when `need` are needed.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    Enough,
    /// Raise the soft limit to this.
    Raise(u64),
    TooFew,
}

fn plan(need: u64, soft: u64, hard: u64) -> Plan {
    if soft >= need {
        Plan::Enough
    } else if hard >= need {
        // Room to spare for what `BASE_FDS` does not foresee, within the hard limit.
        Plan::Raise(hard.min(need.saturating_mul(2)))
    } else {
        Plan::TooFew
    }
}

/// Make sure this process, and so every worker it starts, may open enough descriptors
/// for `workers`; otherwise the one line saying why not.
pub(super) fn make_room(workers: u32) -> Result<(), RunError> {
    let need = needed(workers);
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)
        .map_err(|e| RunError::Failed(format!("cannot read the descriptor limit: {e}")))?;
    let too_few = |limit: u64, why: &str| {
        let fewer = match limit.checked_sub(BASE_FDS) {
            Some(n) if n > 0 => format!(" or run at most {n} workers"),
            _ => String::new(),
        };
        RunError::Limits(format!(
            "{workers} workers need {need} file descriptors per process (one per worker, plus {BASE_FDS}), \
             but {why} {limit}: raise it{fewer}"
        ))
    };
    match plan(need, soft, hard) {
        Plan::Enough => Ok(()),
        Plan::TooFew => Err(too_few(hard, "the hard limit (`ulimit -Hn`) is")),
        Plan::Raise(to) => setrlimit(Resource::RLIMIT_NOFILE, to, hard)
            .map_err(|e| too_few(soft, &format!("raising the limit failed ({e}) and it is"))),
    }
}

/// The one-line warning for a run of `workers` of `info`'s algorithm, if that is more
/// than it was measured clean at.
pub(super) fn beyond_measured(info: &AlgoInfo, workers: u32) -> Option<String> {
    let clean = info.measured_clean.filter(|&m| workers > m)?;
    Some(format!(
        "mutexlab: warning: {} was measured clean up to {clean} workers on a two-core machine, not at {workers} \
         (connections and messages grow as N²; see README, How far it scales); a slow machine may need a \
         longer --stall-ms",
        info.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_beyond_the_measured_size_is_warned_about_in_one_line() {
        let reg = crate::registry::registry();
        let ra = reg.get("ricart-agrawala").unwrap();
        let clean = ra.measured_clean.expect("ricart-agrawala was measured");
        let said = beyond_measured(ra, clean + 1).expect("a warning");
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(
            said.starts_with(&format!(
                "mutexlab: warning: ricart-agrawala was measured clean up to {clean} workers on a two-core machine, not at {}",
                clean + 1
            )),
            "{said}"
        );
        // Negative controls: the measured size itself, and an algorithm that talks to few
        // peers at the most workers a run takes.
        assert_eq!(beyond_measured(ra, clean), None);
        let ring = reg.get("token-ring").unwrap();
        assert_eq!(beyond_measured(ring, crate::control::MAX_WORKERS), None);
        // Every all-to-all mutual exclusion algorithm says how far it was measured.
        for a in reg
            .iter()
            .filter(|a| a.service == crate::algorithm::ServiceKind::Mutex && !a.few_peers && a.name != "none")
        {
            assert!(a.measured_clean.is_some(), "{}", a.name);
        }
    }

    #[test]
    fn the_soft_limit_is_raised_within_the_hard_one_or_the_run_is_refused() {
        let need = needed(1024);
        assert_eq!(need, 1088);
        assert_eq!(plan(need, 20_000, 20_000), Plan::Enough);
        assert_eq!(plan(need, 1024, 4096), Plan::Raise(2176));
        assert_eq!(plan(need, 1024, 1500), Plan::Raise(1500));
        assert_eq!(plan(need, 1024, 1024), Plan::TooFew);
        assert_eq!(plan(needed(16), 64, 64), Plan::TooFew);
    }
}
