//! The integration tests, as one binary (one link instead of one per file): each file
//! here is a module, and `common` holds the helpers they share. Run one file's tests
//! with `cargo test --test integration cli::`, one test by its name.
//!
//! The tests share one process and run on parallel threads, so none may change what is
//! the process's own: its current directory, its environment, its signal handlers or
//! its process group. Each finds what it started by a directory of its own.

mod common;

mod agent;
mod audit;
mod baseline;
mod browser;
mod check;
mod check_out;
mod cli;
mod compare;
mod elect;
mod election;
mod explorer;
mod external;
mod failures;
mod faults;
mod handoff;
mod hostile;
mod impostors;
mod netns;
mod permission;
mod readers;
mod readme;
mod registry;
mod replay;
mod rundir;
mod runtime;
mod scale;
mod schemas;
mod sim_cmd;
mod states;
mod store;
mod superpeer_elect;
mod superpeers;
mod token;
mod token_ring_ft;
mod trace;
mod transport;
