//! mutexlab: a multi-process lab for distributed mutual exclusion.
//!
//! A supervisor ([`supervisor`]) starts N worker processes ([`runtime`]) that talk over
//! Unix domain sockets ([`wire`]); only the run's own workers can speak in it
//! ([`auth`], [`control`]). Each worker runs one algorithm, a sans-IO state machine of
//! inputs and outputs ([`algorithm`], [`algos`]) driven through the one host that keeps
//! the driver contract ([`host`]), and guards a real shared file ([`resource`]). After
//! the run the auditor ([`audit`]) reads the file alone and says whether two workers
//! were ever inside at once, whether updates were lost, and how long each worker
//! waited. The same nodes run in the seeded simulator ([`sim`]), and the command line
//! ([`cli`]) runs any registry of them, the built-in one or a crate's own.

// Every public item says what it is: students and outside crates read the API docs.
#![warn(missing_docs)]

pub mod algorithm;
pub mod algos;
pub mod audit;
pub mod auth;
pub mod bench;
pub mod check;
pub mod cli;
pub mod compare;
pub mod control;
pub mod counterexample;
pub mod exit;
pub mod explore;
pub mod export;
pub mod external;
pub mod faults;
pub mod fields;
pub mod files;
pub mod flight;
pub mod grade;
pub mod handoff;
pub mod host;
pub mod html;
pub mod interrupt;
pub mod lab;
pub mod latency;
pub mod output;
pub mod panics;
pub mod registry;
pub mod report;
pub mod resource;
pub mod runtime;
pub mod schemas;
pub mod script;
pub mod sim;
pub mod supervisor;
pub mod tail;
pub mod text;
pub mod trace;
pub mod wire;
