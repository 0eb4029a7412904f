//! mutexlab's bottom layer: the node contract and every format, with no processes,
//! sockets or threads of its own.
//!
//! An algorithm is a sans-IO state machine ([`algorithm`]) that every driver reaches
//! through the one host that keeps the driver contract ([`host`]); [`script`] drives
//! nodes by hand in tests. The formats are those every layer above reads or writes: the
//! wire's frames ([`wire`]), who may speak ([`auth`]), the agent's protocol ([`agent`]), the control link ([`control`]),
//! the shared file ([`resource`]), the leader file ([`leaders`]), fault plans
//! ([`faults`]), the message trace and its rings ([`trace`], [`flight`]). The rest are
//! small utilities they share: bounded line reading ([`lines`]), quoted text
//! ([`text`]), files someone else may have planted ([`files`]), panics as one line
//! ([`panics`]) and the process's interrupt flag ([`interrupt`]).

// Every public item says what it is: students and outside crates read the API docs.
#![warn(missing_docs)]

pub mod agent;
pub mod algorithm;
pub mod auth;
pub mod control;
pub mod faults;
pub mod fields;
pub mod files;
pub mod flight;
pub mod host;
pub mod interrupt;
pub mod latency;
pub mod leaders;
pub mod lines;
pub mod panics;
pub mod peer;
pub mod resource;
pub mod resource_link;
pub mod script;
pub mod service;
pub mod text;
pub mod trace;
pub mod wire;
