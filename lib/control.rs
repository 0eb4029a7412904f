//! The control link between the supervisor and each worker.
//!
//! One Unix stream per worker, to the supervisor's `control.sock`, carrying the same
//! length-prefixed MessagePack frames as the mesh. The conversation is short:
//!
//! ```text
//! worker → Ready        (listening on its mesh socket)
//! super  → Start        (whom to dial; the run begins)
//! worker → Done         (finished its entries; keeps serving peers)
//! super  → Finish       (everyone is done)
//! worker → Stats        (then exits)
//! ```
//!
//! At any time the supervisor may send `Query`; the worker answers with `Pending`,
//! saying what its application and algorithm are waiting for.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::algorithm::PeerId;

/// The socket the supervisor listens on, inside the run directory.
pub const CONTROL_SOCKET: &str = "control.sock";
/// The shared resource file, inside the run directory.
pub const RESOURCE_FILE: &str = "resource.log";
/// The supervisor's record of every fault it applied, inside the run directory.
pub const FAULT_LOG: &str = "faults.log";
/// The fault plan of the run, in the plan grammar, inside the run directory.
pub const PLAN_FILE: &str = "plan.txt";

/// The mesh socket of worker `id`, incarnation `inc`. A fresh name per incarnation, so a
/// new listener never fights an old socket file.
pub fn worker_socket(id: PeerId, inc: u32) -> String {
    format!("w{}.{}.sock", id.0, inc)
}

/// Worker → supervisor.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ToSupervisor {
    /// Listening on the mesh socket, ready to start.
    Ready { id: PeerId, pid: u32, incarnation: u32 },
    /// Done with the entries asked for.
    Done { entries: u64 },
    /// Answer to `Query`.
    Pending(PendingState),
    /// Final counters, sent after `Finish`.
    Stats(WorkerStats),
}

/// Supervisor → worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ToWorker {
    /// Begin: dial these peers (id and socket path), then run the application.
    Start { dial: Vec<(PeerId, String)> },
    /// Everyone is done: report stats and exit.
    Finish,
    /// Say what you are waiting for.
    Query,
    /// Hold messages to workers outside your group until `Heal` (workers named in no
    /// group form one more group together).
    Partition { groups: Vec<Vec<u32>> },
    /// Deliver everything held by a partition, in order, and hold nothing more.
    Heal,
}

/// What a worker is doing, for stall diagnoses.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PendingState {
    /// `thinking`, `waiting`, `inside`, `done` or `starting`.
    pub app: String,
    /// Monotonic ns when the application entered this state.
    pub since_ns: u64,
    /// The algorithm's own words (`Algorithm::pending`).
    pub algorithm: String,
    /// Entries completed.
    pub entries: u64,
    /// Peers whose channel is closed.
    pub down: Vec<PeerId>,
}

/// One worker's counters at the end of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerStats {
    pub id: PeerId,
    pub entries: u64,
    /// Messages sent, by type.
    pub sent: BTreeMap<String, u64>,
    /// Messages received, by type.
    pub received: BTreeMap<String, u64>,
    /// Frames dropped because they were malformed or misaddressed.
    pub bad_frames: u64,
    /// Connections dropped because their stream could not be trusted.
    pub dropped_connections: u64,
    /// Times the algorithm granted the section when the application had not asked.
    pub unasked_grants: u64,
    /// Messages lost on purpose (`--drop`).
    pub lost: u64,
    /// The algorithm's own counters (`Algorithm::counters`).
    pub counters: BTreeMap<String, u64>,
}
