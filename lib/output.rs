//! The JSON objects the command line builds itself (`audit`, `algorithms` and `sim`
//! `--json`), typed so that their schemas are generated as every other output's are
//! ([`crate::schemas`]).

use serde::Serialize;

use crate::algorithm::ServiceKind;
use crate::algos::Family;
use crate::audit::{AuditReport, ElectionReport};
use crate::external::MessageShape;

/// What `mutexlab audit --json` prints: the report of the file's kind, with the
/// version of this layout.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct AuditOutput {
    /// Raised only when a field changes meaning or goes away (fields may be added).
    pub schema: u32,
    /// The audit of a resource file or of a leader file.
    #[serde(flatten)]
    pub report: AuditKind,
}

/// The audit of either kind of file `mutexlab audit` reads.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum AuditKind {
    /// A resource file's (`resource.log`, of `mutexlab run`).
    Resource(AuditReport),
    /// A leader file's (`leaders.log`, of `mutexlab elect`).
    Leaders(ElectionReport),
}

/// `algorithms --json`'s `schema`: raised only when a field changes meaning or goes away.
pub const ALGORITHMS_SCHEMA: u32 = 1;
/// `sim --json`'s `schema`: raised only when a field changes meaning or goes away.
pub const SIM_SCHEMA: u32 = 1;
/// `check --json`'s `schema`: raised only when a field changes meaning or goes away.
pub const CHECK_SCHEMA: u32 = 1;

/// What `mutexlab check --json` prints: the check's report, with the version of this
/// layout.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct CheckOutput<'a> {
    /// Raised only when a field changes meaning or goes away (fields may be added).
    pub schema: u32,
    /// What the check found.
    #[serde(flatten)]
    pub report: &'a crate::check::CheckReport,
}

/// What `mutexlab algorithms --json` prints.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct AlgorithmList {
    /// Raised only when a field changes meaning or goes away (fields may be added).
    pub schema: u32,
    /// Every registered algorithm (or, with `--messages NAME`, that one).
    pub algorithms: Vec<AlgorithmEntry>,
}

/// One algorithm of [`AlgorithmList`]; its fields are in the order of their keys, as
/// the output always had them.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct AlgorithmEntry {
    /// `baseline`, `permission` or `token` for mutual exclusion; `election` or `ring`
    /// for elections.
    pub family: Family,
    /// With `--messages`: every message it sends, as a program among its workers sends
    /// it (labs/PROTOCOL.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<MessageShape>>,
    /// The name `--algo` takes.
    pub name: &'static str,
    /// `mutex` (`mutexlab run`) or `election` (`mutexlab elect`).
    pub service: ServiceKind,
    /// What it does, in one line.
    pub summary: &'static str,
}

/// What `mutexlab sim --json` prints; its fields are in the order of their keys, as the
/// output always had them.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SimOutput {
    /// Raised only when a field changes meaning or goes away (fields may be added).
    pub schema: u32,
    /// The algorithm's name (or the label of a `--worker-cmd` program).
    pub algorithm: String,
    /// Crashes (each followed by a restart) allowed in each run.
    pub crashes: u32,
    /// Critical-section entries per node (elections: elections per node).
    pub entries: u32,
    /// How many seeds failed.
    pub failed: u64,
    /// The first failures (a few hundred; `failed` counts them all), by seed.
    pub failures: Vec<SimFailure>,
    /// How many seeds ran out of the step budget while still making progress: neither
    /// passed nor failed.
    pub inconclusive: u64,
    /// The first of those seeds (a few hundred; `inconclusive` counts them all).
    pub inconclusive_seeds: Vec<u64>,
    /// The step budget of each run (`--max-steps`, or the default for n and k).
    pub max_steps: u64,
    /// Number of nodes.
    pub n: u32,
    /// Any message in flight on a channel could be delivered first.
    pub non_fifo: bool,
    /// How many seeds passed.
    pub passed: u64,
    /// The seeds run, both ends included.
    pub seeds: SeedRange,
    /// The program every node ran (`--worker-cmd`), or null for a built-in algorithm.
    pub worker_cmd: Option<String>,
}

/// One failed seed of [`SimOutput`].
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SimFailure {
    /// What went wrong, in one line (cut to a few hundred bytes).
    pub failure: String,
    /// The command that runs this seed again with every setting.
    pub replay: String,
    /// The seed.
    pub seed: u64,
    /// The step at which it failed.
    pub step: u64,
}

/// The seeds of [`SimOutput`], both ends included.
#[derive(Clone, Copy, Debug, Serialize, schemars::JsonSchema)]
pub struct SeedRange {
    /// The first seed.
    pub from: u64,
    /// The last seed.
    pub to: u64,
}
