//! The algorithms the lab ships, as node types, and the shapes of what is known of
//! them as data: the theory of their message cost ([`Theory`] for a run's [`Shape`]).
//!
//! Each algorithm lives in its own file as a sans-IO state machine (see
//! [`crate::algorithm`]). Nothing here imports a driver: the registry
//! (`mutexlab::registry`, in the crate above) names each node type with what runs it.

// Every public item says what it is: students and outside crates read the API docs.
#![warn(missing_docs)]

// The layer below, under the names every file here uses (`crate::algorithm::…`).
use mutexlab_core::{algorithm, latency};
#[cfg(test)]
use mutexlab_core::{host, script};
#[cfg(test)]
use mutexlab_sim as sim;

pub mod baseline;
pub mod bully;
pub mod bully_gm;
pub mod centralized;
pub mod centralized_bully;
pub mod chang_roberts;
#[cfg(test)]
mod elect_sweeps;
pub mod fifo;
pub mod hirschberg_sinclair;
pub mod lamport;
pub mod maekawa;
pub mod neilsen_mizuno;
pub mod ra_token;
pub mod raymond;
pub mod ricart_agrawala;
pub mod ring_list;
#[cfg(test)]
mod script_tests;
pub mod superpeer;
pub mod superpeer_cells;
pub mod suzuki_kasami;
pub mod token_ring;
pub mod token_ring_ft;
pub mod voting;

/// What theory says an algorithm costs in messages per critical-section entry, for the
/// run's size. `min == max` when the count is exact.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Theory {
    /// Fewest messages per entry on average over a run.
    pub per_entry_min: f64,
    /// Most messages per entry on average over a run; infinite when theory gives no
    /// bound, and then left out of the JSON (which has no infinity) and the formula says
    /// so.
    #[serde(skip_serializing_if = "unbounded")]
    pub per_entry_max: f64,
    /// The formula, in words, e.g. `"2(N-1)"`.
    pub formula: String,
    /// Mean quorum size K over the nodes (`maekawa`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum_size: Option<f64>,
    /// Number of replicated coordinators m (`voting`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
}

fn unbounded(max: &f64) -> bool {
    max.is_infinite()
}

impl Theory {
    /// A cost theory gives exactly, with its formula in words.
    pub fn exact(value: f64, formula: &str) -> Option<Theory> {
        Some(Theory::range(value, value, formula.into()))
    }

    /// A cost between two bounds (`max` may be infinite: unbounded).
    pub fn range(per_entry_min: f64, per_entry_max: f64, formula: String) -> Theory {
        Theory { per_entry_min, per_entry_max, formula, quorum_size: None, replicas: None }
    }
}

/// Parameters that shape an algorithm's cost, besides N.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shape {
    /// Number of workers.
    pub n: u32,
    /// Replicated coordinators (`voting`), if given.
    pub replicas: Option<u32>,
    /// Elections: how many workers initiate (0 for mutual exclusion).
    pub initiators: u32,
}

/// What kind of algorithm it is, as `mutexlab algorithms` lists it and `compare`'s
/// `--json` writes it (`"permission"`, …).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Mutual exclusion without a distributed algorithm (`none`, `flock`).
    Baseline,
    /// Mutual exclusion by asking others' permission.
    Permission,
    /// Mutual exclusion by holding a token.
    Token,
    /// An election among all (the bully algorithms).
    Election,
    /// An election round a ring.
    Ring,
    /// A program of the user's, like no built-in algorithm (`--worker-cmd`).
    External,
}

impl Family {
    /// The family's name, e.g. `"permission"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Family::Baseline => "baseline",
            Family::Permission => "permission",
            Family::Token => "token",
            Family::Election => "election",
            Family::Ring => "ring",
            Family::External => "external",
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// What the notes claim for one mutual-exclusion algorithm, in this project's words,
/// as `mutexlab compare` sets it beside what it measures. The notes' table has rows for
/// centralized, decentralized (`voting`), distributed (`ricart-agrawala`) and token
/// ring; for the others the textbook figures are given, marked as such.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    /// Messages per entry and exit, for N workers.
    pub messages: fn(u32) -> String,
    /// Delay before entry with nobody ahead, in T.
    pub entry: fn(u32) -> String,
    /// Synchronisation delay, in T.
    pub sync: fn(u32) -> String,
    /// What breaks it.
    pub problems: &'static str,
    /// The coordinator's own entries cost no message and are left out of the count.
    pub coordinator_free: bool,
    /// The 002 notes' delay before entry, for the four algorithms of their table; `None`
    /// for the others (then `entry` is the registry's own claim).
    pub notes_entry: Option<NotesEntry>,
    /// The delay before entry is the hops of this message from the request to the entry
    /// (the token round a ring, which no request reaches), not the messages of the
    /// request's causal chains.
    pub entry_by_hops_of: Option<&'static str>,
}

/// The 002 notes' "delay before entry (in message times)" for one row of their table:
/// "assumes that messages are transmitted sequentially over the network".
#[derive(Clone, Copy, Debug)]
pub struct NotesEntry {
    /// The notes' row: `Centralized`, `Decentralized`, `Distributed`, `Token ring`.
    pub row: &'static str,
    /// The formula in the notes' words with its value at N: `2(n-1) = 8`.
    pub formula: fn(u32) -> String,
    /// Its least and most at N (`f64::INFINITY`: unbounded).
    pub range: fn(u32) -> (f64, f64),
}
