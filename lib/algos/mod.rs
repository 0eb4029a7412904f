//! The algorithms the lab ships, and the registry that names them.
//!
//! Each algorithm lives in its own file as a sans-IO state machine (see
//! [`crate::algorithm`]). The registry maps the name a user types (`--algo NAME`) to a
//! description, the theory of its message cost, and the concrete type, which callers
//! reach through [`dispatch`] with an [`AlgoVisitor`].

pub mod baseline;
pub mod centralized;
pub mod lamport;
pub mod maekawa;
pub mod ricart_agrawala;
pub mod voting;

use crate::algorithm::Algorithm;

/// What theory says an algorithm costs in messages per critical-section entry, for the
/// run's size. `min == max` when the count is exact.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Theory {
    /// Fewest messages per entry on average over a run.
    pub per_entry_min: f64,
    /// Most messages per entry on average over a run.
    pub per_entry_max: f64,
    /// The formula, in words, e.g. `"2(N-1)"`.
    pub formula: String,
}

impl Theory {
    fn exact(value: f64, formula: &str) -> Option<Theory> {
        Some(Theory { per_entry_min: value, per_entry_max: value, formula: formula.into() })
    }
}

/// Parameters that shape an algorithm's cost, besides N.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shape {
    /// Number of workers.
    pub n: u32,
    /// Replicated coordinators (`voting`), if given.
    pub replicas: Option<u32>,
}

/// A registry entry.
#[derive(Debug)]
pub struct AlgoInfo {
    /// The name users type.
    pub name: &'static str,
    /// `baseline`, `permission` or `token`.
    pub family: &'static str,
    /// One line for `mutexlab algorithms`.
    pub summary: &'static str,
    /// The runtime wraps each critical section in `flock(2)` on the resource file.
    pub kernel_lock: bool,
    /// Expected messages per entry for a run of this shape, where theory gives a number.
    pub theory: fn(Shape) -> Option<Theory>,
}

/// Something to do with a concrete algorithm type, chosen by name at run time.
pub trait AlgoVisitor {
    /// What the visit returns.
    type Output;
    /// Called with the algorithm type that `info` names.
    fn visit<A: Algorithm>(self, info: &'static AlgoInfo) -> Self::Output;
}

/// Every algorithm the lab knows, in the order `mutexlab algorithms` lists them.
pub static ALGORITHMS: &[AlgoInfo] = &[
    AlgoInfo {
        name: "none",
        family: "baseline",
        summary: "no coordination at all: the negative control the auditor must flag",
        kernel_lock: false,
        theory: |_| Theory::exact(0.0, "0"),
    },
    AlgoInfo {
        name: "flock",
        family: "baseline",
        summary: "the kernel's exclusive flock(2) on the resource file; no messages",
        kernel_lock: true,
        theory: |_| Theory::exact(0.0, "0"),
    },
    AlgoInfo {
        name: "centralized",
        family: "permission",
        summary: "a coordinator (highest id) with a FIFO queue: REQUEST, GRANT, RELEASE",
        kernel_lock: false,
        theory: |s| {
            let n = f64::from(s.n.max(1));
            Theory::exact(3.0 * (n - 1.0) / n, "3(N-1)/N: 3 per entry, 0 for the coordinator's own")
        },
    },
    AlgoInfo {
        name: "lamport",
        family: "permission",
        summary:
            "a request queue on every node with Lamport clocks: REQUEST, ACK, RELEASE to all (needs FIFO)",
        kernel_lock: false,
        theory: |s| Theory::exact(3.0 * (f64::from(s.n.max(1)) - 1.0), "3(N-1)"),
    },
    AlgoInfo {
        name: "maekawa",
        family: "permission",
        summary:
            "grid quorums of about 2√N-1 voters; INQUIRE/YIELD/FAILED take votes back so it cannot deadlock",
        kernel_lock: false,
        theory: |s| {
            let (lo, hi) = maekawa::quorum_sizes(s.n.max(1));
            Some(Theory {
                per_entry_min: 3.0 * (lo as f64 - 1.0),
                per_entry_max: 5.0 * (hi as f64 - 1.0),
                formula: format!("3(K-1) to 5(K-1), quorum size K = {lo}..{hi}"),
            })
        },
    },
    AlgoInfo {
        name: "ricart-agrawala",
        family: "permission",
        summary: "ask everyone with a ticket (highest seen + 1); deferred REPLYs serve as the release",
        kernel_lock: false,
        theory: |s| Theory::exact(2.0 * (f64::from(s.n.max(1)) - 1.0), "2(N-1)"),
    },
    AlgoInfo {
        name: "ricart-agrawala-rc",
        family: "permission",
        summary: "Ricart-Agrawala keeping permissions until asked (Roucairol-Carvalho): re-entry can be free",
        kernel_lock: false,
        theory: |s| {
            let max = 2.0 * (f64::from(s.n.max(1)) - 1.0);
            Some(Theory { per_entry_min: 0.0, per_entry_max: max, formula: "0 to 2(N-1)".into() })
        },
    },
    AlgoInfo {
        name: "voting",
        family: "permission",
        summary:
            "majority of m coordinators (--replicas, default N); DENY, release and random back-off on failure",
        kernel_lock: false,
        theory: |s| {
            let n = f64::from(s.n.max(1));
            let m = f64::from(s.replicas.unwrap_or(s.n).clamp(1, s.n.max(1)));
            Some(Theory {
                per_entry_min: 3.0 * m - 3.0 * m / n,
                per_entry_max: f64::INFINITY,
                formula: "3m-3m/N with no contention (none for one's own vote); retries unbounded".into(),
            })
        },
    },
];

/// Look an algorithm up by name.
pub fn info(name: &str) -> Option<&'static AlgoInfo> {
    ALGORITHMS.iter().find(|a| a.name == name)
}

/// The names of all algorithms, comma-separated, for error messages.
pub fn names() -> String {
    ALGORITHMS.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
}

/// Run `v` with the algorithm type called `name`; `None` if there is no such algorithm.
pub fn dispatch<V: AlgoVisitor>(name: &str, v: V) -> Option<V::Output> {
    let info = info(name)?;
    Some(match name {
        "none" | "flock" => v.visit::<baseline::Immediate>(info),
        "centralized" => v.visit::<centralized::Centralized>(info),
        "lamport" => v.visit::<lamport::Lamport>(info),
        "maekawa" => v.visit::<maekawa::Maekawa>(info),
        "ricart-agrawala" => v.visit::<ricart_agrawala::RicartAgrawala>(info),
        "ricart-agrawala-rc" => v.visit::<ricart_agrawala::RoucairolCarvalho>(info),
        "voting" => v.visit::<voting::Voting>(info),
        _ => unreachable!("algorithm {name} is registered but not dispatched"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Name;
    impl AlgoVisitor for Name {
        type Output = &'static str;
        fn visit<A: Algorithm>(self, info: &'static AlgoInfo) -> &'static str {
            info.name
        }
    }

    #[test]
    fn every_registered_algorithm_dispatches() {
        for a in ALGORITHMS {
            assert_eq!(dispatch(a.name, Name), Some(a.name));
        }
        assert_eq!(dispatch("nonsense", Name), None);
    }
}
