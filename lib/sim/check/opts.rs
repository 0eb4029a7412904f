//! What a check is asked: the model's size, the world's knobs and the search's limits
//! ([`CheckOpts`]), and the command line that asks for the same check again.

use serde::{Deserialize, Serialize};

use crate::Choice;

/// The most nodes a check takes (`-n`), and so the most a counterexample may have.
pub const MAX_NODES: u32 = 16;

/// The most nodes a check up to symmetry takes (`--symmetry`): it renames every state
/// by each renaming of the group, up to 6! = 720 of them.
pub const MAX_SYMMETRY_NODES: u32 = 6;

/// The most entries per node a check takes (`-k`).
pub const MAX_ENTRIES: u32 = 1000;

/// What to check: the size of the model and the world's knobs, and the search's limits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckOpts {
    /// Number of nodes.
    pub n: u32,
    /// Entries per node (mutual exclusion) or elections per initiator.
    pub entries: u32,
    /// Stop after this many distinct states.
    #[serde(default = "CheckOpts::default_max_states")]
    pub max_states: u64,
    /// Stop after this many seconds.
    #[serde(default = "CheckOpts::default_max_seconds")]
    pub max_seconds: f64,
    /// Stop when the process's resident memory reaches this many bytes (`None`: four
    /// fifths of what the machine had available at the start). A bound of the machine
    /// running the search, so a counterexample file does not carry it.
    #[serde(skip)]
    pub max_memory: Option<u64>,
    /// Any message in flight on a channel may be delivered first.
    #[serde(default)]
    pub non_fifo: bool,
    /// Up to this many crashes (of any node, each followed by a restart).
    #[serde(default)]
    pub crashes: u32,
    /// A reset or cancelled timer may still fire once.
    #[serde(default)]
    pub stale_timers: bool,
    /// Check `bypass bound`: while a node's application waits, others enter at most this
    /// many times (the registry's `crate::registry::Bypass`, or `--bypass-bound`). The
    /// count then becomes part of the state (capped at the bound + 1), which can
    /// multiply the states; without a bound only the most seen is told, as a lower bound.
    /// Only the first 16 nodes' bypasses are counted.
    #[serde(default)]
    pub bypass_bound: Option<u32>,
    /// Elections: check `highest live id` (when the live nodes agree, they agree on the
    /// highest live id), as bully and the ring algorithms promise.
    #[serde(default)]
    pub highest_wins: bool,
    /// Which armed timers may fire next (the checker's default: any of them).
    #[serde(default)]
    pub timers: TimerOrder,
    /// Up to this many messages in flight may be lost.
    #[serde(default)]
    pub lose: u32,
    /// Timers fire at most this many times on any path (`None`: no bound). Periodic
    /// timers and early timeouts otherwise make the space endless; with a bound, "held"
    /// means held on every way with at most this many timer firings, and a state where
    /// only the bound stops anything is not judged as terminal.
    #[serde(default)]
    pub timer_fires: Option<u32>,
    /// Expand no state where a node's growing counter ([`crate::algorithm::Node::counter`]:
    /// a clock, a ticket, a term) is above this (`None`: no bound): a state constraint,
    /// as TLC's, for models whose counters make the space too big to finish. "Held"
    /// then means held on every state within the bound; states past it are judged
    /// (invariants) but not expanded, and not taken as terminal.
    #[serde(default)]
    pub counter_bound: Option<u64>,
    /// Let nodes forget fields no later step reads ([`crate::algorithm::Node::forget`]):
    /// fewer states, the same verdicts. Off by default, so counts match models that do
    /// not (the Stateright bench).
    #[serde(default)]
    pub forget: bool,
    /// The seed in every node's `Config` (`--seed`), for algorithms that draw from it:
    /// 0 for a search; a failing simulator seed's path carries its seed, so the world it
    /// is walked in is the one the simulator ran.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seed: u64,
    /// After a safety search that found nothing, check `every request served (fair
    /// cycles)` (mutual exclusion): its own pass, without a timer budget, keeping the
    /// graph of states, looks for a request that waits for ever round a cycle that
    /// takes every delivery, timer and call that stays enabled (weak fairness).
    #[serde(default)]
    pub liveness: bool,
    /// Depth-first instead of breadth-first: little memory, but a counterexample need
    /// not be the shortest.
    #[serde(default)]
    pub dfs: bool,
    /// Expand no state this many steps from the start (`None`: no bound).
    #[serde(default)]
    pub max_depth: Option<u32>,
    /// Threads for a breadth-first search (depth-first runs on one; 0 counts as 1).
    #[serde(default = "CheckOpts::default_threads")]
    pub threads: u32,
    /// Search from the world these choices lead to, not from the start (the explorer's
    /// "check from here"); a counterexample found begins with them. Bypasses are
    /// counted from there. Not saved: a counterexample file holds the whole path.
    #[serde(skip)]
    pub from: Vec<Choice>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Which armed timer may fire next, `--timers`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerOrder {
    /// Any armed timer, however long it has still to run: no timing assumption at all,
    /// so a timeout may come before what it waits for (a false suspicion).
    #[default]
    Any,
    /// Only the earliest, as the simulator: timers keep their order, but states that
    /// differ only in that order count as one, so with several timers armed at once the
    /// search is not exhaustive.
    Earliest,
}

// A knob a counterexample file does not name is off, so files written before it existed
// (or by hand) still read.
impl CheckOpts {
    // Enough for the README's table (RA n = 4 has 1,412,505 states); the memory bound
    // guards the machine.
    fn default_max_states() -> u64 {
        5_000_000
    }

    fn default_max_seconds() -> f64 {
        60.0
    }

    fn default_threads() -> u32 {
        1
    }

    /// `n` nodes, `entries` each, no knobs, five million states and a minute at most.
    pub fn new(n: u32, entries: u32) -> CheckOpts {
        CheckOpts {
            n,
            entries,
            max_states: CheckOpts::default_max_states(),
            max_seconds: CheckOpts::default_max_seconds(),
            max_memory: None,
            non_fifo: false,
            crashes: 0,
            stale_timers: false,
            bypass_bound: None,
            highest_wins: false,
            timers: TimerOrder::Any,
            lose: 0,
            timer_fires: None,
            counter_bound: None,
            forget: false,
            liveness: false,
            seed: 0,
            dfs: false,
            max_depth: None,
            threads: CheckOpts::default_threads(),
            from: Vec::new(),
        }
    }

    /// The world's knobs and the search's strategy as `mutexlab check`'s flags, those
    /// that differ from [`CheckOpts::new`]'s, for a command line that repeats this check
    /// (the limits, `--max-states` and `--max-seconds`, are the caller's to add).
    /// [`CheckOpts::highest_wins`] has no flag: the registry entry promises it.
    /// No timer bound writes no flag, so a registry entry's default
    /// (`crate::registry::AlgoInfo::timer_fires`) would apply: add `--timer-fires none`.
    pub fn flags(&self) -> Vec<String> {
        let mut f: Vec<String> = Vec::new();
        let mut with = |flag: &str, value: Option<String>| {
            f.push(flag.into());
            f.extend(value);
        };
        if self.non_fifo {
            with("--non-fifo", None);
        }
        if self.crashes > 0 {
            with("--crashes", Some(self.crashes.to_string()));
        }
        if self.stale_timers {
            with("--stale-timers", None);
        }
        if self.timers == TimerOrder::Earliest {
            with("--timers", Some("earliest".into()));
        }
        if self.lose > 0 {
            with("--lose", Some(self.lose.to_string()));
        }
        if let Some(t) = self.timer_fires {
            with("--timer-fires", Some(t.to_string()));
        }
        if let Some(b) = self.counter_bound {
            with("--counter-bound", Some(b.to_string()));
        }
        if self.forget {
            with("--forget", None);
        }
        if self.liveness {
            with("--liveness", None);
        }
        if self.seed != 0 {
            with("--seed", Some(self.seed.to_string()));
        }
        if let Some(b) = self.bypass_bound {
            with("--bypass-bound", Some(b.to_string()));
        }
        if self.dfs {
            with("--dfs", None);
        }
        if let Some(d) = self.max_depth {
            with("--max-depth", Some(d.to_string()));
        }
        if self.threads > 1 {
            with("--threads", Some(self.threads.to_string()));
        }
        f
    }
}
