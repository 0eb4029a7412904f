//! The worker runtime: runs one algorithm state machine inside a real process.
//!
//! It owns everything the algorithm must not: the Unix-socket mesh to the other workers
//! (reliable FIFO streams, one per pair, framed by [`crate::wire`]), the Lamport clock
//! stamped on every envelope, timers, the application loop (think, ask, enter, do the
//! read-modify-write on the shared file, leave), statistics, and the control link to the
//! supervisor.
//!
//! One thread, one `mio` poll loop: sockets are non-blocking and every peer has its own
//! outgoing queue, so a stopped or slow peer can never stall this worker. Timers live in
//! a deadline heap whose head sets the poll timeout. Reads are budgeted
//! ([`wire::FILL_BUDGET`]): a stream that still has bytes when its budget is spent is
//! served again on the next turn of the loop, after everyone else, so a flooding peer
//! can neither starve the others nor make a buffer grow without bound. The only
//! blocking calls are the short writes to the supervisor on the control link and, under
//! `flock`, the kernel lock itself (that algorithm *is* a blocking lock). A SIGTERM or
//! SIGINT is checked at every step of the loop, and the worker leaves in order.
//!
//! One job per file, each a component that owns its state and hands the loop typed
//! values, in the shape of the node's [`Host`](crate::host::Host): `mesh` the
//! Unix-socket mesh (connections and hellos, channels, bad input; it gives
//! `MeshEvent`s), `netfaults` latency, loss and partitions on the send path (it gives
//! each frame its `Fate`), `detector` what the node is told of peers going down and up,
//! `workload` the mutual exclusion service's application loop on the resource file and
//! `elect` the election service's (they give `AppStep`s), `link` the control link to
//! the supervisor (it gives `ToWorker` orders), and `held` held delivery for `mutexlab
//! replay` (what arrives, the application's next step and the node's timers wait for
//! the supervisor's `Replay` orders instead of reaching the node). `worker` is the thin
//! loop between them and the operating system: the poll, the timers (`timers`), the
//! Lamport clock, the statistics, driving the node through its host and handing each
//! effect to its owner; `entry` is the worker process's way in ([`run_worker`]) and
//! out, and `service` the services a worker can run ([`RunService`]). This file is the
//! crate's map: its modules and what it offers. One message's way: node → host → loop
//! (`carry`, `send`) → mesh (`send`: framed, past the network faults, queued; written by
//! the turn's `flush_all`) → wire, and back: mesh (`readable`, `poll_event`) → loop
//! (`deliver`) → host → node. What the worker sends,
//! receives, loses and does goes to its message trace ([`crate::trace`]) when the run
//! asks for one, one line per event, written every few milliseconds.
//! Each file's own documentation says the rest.
//!
//! # Giving up
//!
//! An error this worker cannot get past (the resource file cannot be written, say,
//! because the disk is full) ends it with status 1, after it has told the supervisor
//! why (`Fatal` on the control link), so the run's failure line names the worker, the
//! file and the OS error. A panic in the node ends it the same way, as one line (the
//! panic's message, or a lab skeleton's `on_message is not written yet`), never a
//! backtrace. Texts sent to the supervisor are cut to a few KiB, far below the frame
//! cap.
//!
//! Once the run has begun, a worker that gives up does not close its channels on its
//! way out: its peers would take it for dead and act on that (enter the section it
//! still held, say), and the audit would pin on the algorithm what the failure did. It
//! tells the supervisor why and stands still, channels open, until the supervisor,
//! which stops the run at once with that line as its failure, ends it.
//!
//! When the runtime cannot keep the model its node was promised (a message too big for
//! a frame, a frame refused from a live peer), that is a [`ModelBreach`], not a death:
//! it is told as `Breach` instead of `Fatal`, and the run's audit is no verdict.

// Every public item says what it is: students and outside crates read the API docs.
#![warn(missing_docs)]

// The layer below, under the names every file here uses (`crate::algorithm::…`).
#[cfg(test)]
use mutexlab_algos as algos;
use mutexlab_core::{
    algorithm, auth, control, faults, flight, host, leaders, panics, resource, resource_link, text, trace,
    wire,
};

mod detector;
mod elect;
mod entry;
pub mod external;
mod held;
mod link;
mod mesh;
mod netfaults;
mod service;
mod timers;
mod worker;
mod workload;

pub use detector::HEARTBEAT;
pub use entry::{run_worker, ModelBreach, NodeRun, RunNode, WorkerOpts};
pub use mesh::{max_pending, BAD_FRAME_LINES, DROP_LINES, HELLO_DEADLINE};
pub use service::{AppCall, AppEvent, RunService};
pub use worker::run_node;
// For the components, which name them from the crate's root (`super::cut`).
use entry::cut;
