//! mutexlab: a multi-process lab for distributed mutual exclusion.
//!
//! A supervisor ([`supervisor`]) starts N worker processes ([`runtime`]) that talk over
//! Unix domain sockets ([`wire`]); only the run's own workers can speak in it
//! ([`auth`], [`control`]). Each worker runs one algorithm, a sans-IO state machine of
//! inputs and outputs ([`algorithm`], [`algos`]) driven through the one host that keeps
//! the driver contract ([`host`]), and guards a real shared file ([`resource`]). After
//! the run the auditor ([`audit`]) reads the file alone and says whether two workers
//! were ever inside at once, whether updates were lost, and how long each worker
//! waited. The same nodes run in the seeded simulator ([`sim`]) and the exhaustive
//! checker ([`check`]), and the command line ([`cli`]) runs any registry of them, the
//! built-in one or a crate's own.
//!
//! The layers are crates, each depending only on those below it: `mutexlab-core` (the
//! node contract and every format), `mutexlab-algos`, then `mutexlab-sim` (simulator
//! and checker) and `mutexlab-runtime` (the worker process) side by side, and this
//! crate on top (registry, supervisor, audit, tools, command line). Their modules are
//! re-exported here under the paths they always had (`mutexlab::algorithm::Node`,
//! `mutexlab::sim::Sim`, `mutexlab::runtime::run_node`).

// Every public item says what it is: students and outside crates read the API docs.
#![warn(missing_docs)]

pub use mutexlab_algos as algos;
pub use mutexlab_core::{
    agent, algorithm, auth, control, faults, fields, files, flight, host, interrupt, latency, leaders, lines,
    panics, resource, resource_link, script, text, trace, wire,
};
pub use mutexlab_runtime as runtime;
pub use mutexlab_runtime::external;
pub use mutexlab_sim as sim;
pub use mutexlab_sim::{check, counterexample};

pub mod audit;
pub mod bench;
pub mod cli;
pub mod compare;
pub mod exit;
pub mod explore;
pub mod export;
pub mod grade;
pub mod handoff;
pub mod html;
pub mod lab;
pub mod output;
pub mod registry;
pub mod report;
pub mod schemas;
pub mod supervisor;
pub mod tail;
