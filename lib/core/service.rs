//! The services a node offers its application, and the application's side of the
//! contract the host checks: mutual exclusion (`want`, `done`; the node's `enter`) and
//! leader election (`elect`; the node's `leader`). The node interface that uses them is
//! [`crate::algorithm`], which re-exports everything here.

use std::fmt;
use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::peer::PeerId;

/// Which service a node type provides, by name: `mutex` (`mutexlab run`) or `election`
/// (`mutexlab elect`), as the registry lists it and `--json` and the control link write
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServiceKind {
    /// Mutual exclusion ([`Mutex`]).
    Mutex,
    /// Leader election ([`Election`]).
    Election,
}

impl ServiceKind {
    /// `"mutex"` or `"election"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ServiceKind::Mutex => "mutex",
            ServiceKind::Election => "election",
        }
    }

    /// The service of that name, if there is one.
    pub fn from_name(name: &str) -> Option<ServiceKind> {
        [ServiceKind::Mutex, ServiceKind::Election].into_iter().find(|s| s.as_str() == name)
    }
}

impl fmt::Display for ServiceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// What a node offers its application: the calls the application makes, the events the
/// node reports back, and the application's side of the contract, which the host
/// ([`crate::host::Host`]) checks.
pub trait Service: fmt::Debug + Send + 'static {
    /// Which service it is, as the registry, the control link and `--json` name it.
    const KIND: ServiceKind;
    /// The service's name (`mutex`, `election`).
    const NAME: &'static str = Self::KIND.as_str();
    /// What the application can ask.
    type Call: Clone + PartialEq + Eq + Hash + fmt::Debug + Serialize + DeserializeOwned + Send + 'static;
    /// What the node can tell the application.
    type Event: Clone + PartialEq + Eq + Hash + fmt::Debug + Serialize + DeserializeOwned + Send + 'static;
    /// The application's state as far as the contract is concerned.
    type App: Clone + Default + PartialEq + Eq + Hash + fmt::Debug + Send + 'static;
    /// The application's state after `call`, or why it may not make it now.
    fn call(app: &Self::App, call: &Self::Call) -> Result<Self::App, String>;
    /// The application's state after `event`, or why the node may not tell it now.
    fn event(app: &Self::App, event: &Self::Event) -> Result<Self::App, String>;
    /// The node `event` names, if any (a leader): the host refuses one outside the run,
    /// since every driver keeps its nodes by id.
    fn names(_event: &Self::Event) -> Option<PeerId> {
        None
    }
}

/// Mutual exclusion: the application calls `want` and later `done`; the node answers
/// `want` with `enter` when the application may go in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mutex;

/// A mutual-exclusion application's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MutexCall {
    /// Asks for the critical section.
    Want,
    /// Has left the critical section.
    Done,
}

/// What a mutual-exclusion node tells its application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MutexEvent {
    /// Go in.
    Enter,
}

/// A mutual-exclusion application, as the contract sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MutexApp {
    /// Outside the section, not asking.
    #[default]
    Idle,
    /// Asked, not yet let in.
    Waiting,
    /// Inside the section.
    Inside,
}

impl Service for Mutex {
    const KIND: ServiceKind = ServiceKind::Mutex;
    type Call = MutexCall;
    type Event = MutexEvent;
    type App = MutexApp;

    fn call(app: &MutexApp, call: &MutexCall) -> Result<MutexApp, String> {
        match (app, call) {
            (MutexApp::Idle, MutexCall::Want) => Ok(MutexApp::Waiting),
            (MutexApp::Inside, MutexCall::Done) => Ok(MutexApp::Idle),
            (app, call) => Err(format!("the application called {call:?} while {app:?}")),
        }
    }

    fn event(app: &MutexApp, event: &MutexEvent) -> Result<MutexApp, String> {
        match (app, event) {
            (MutexApp::Waiting, MutexEvent::Enter) => Ok(MutexApp::Inside),
            (app, _) => Err(format!("the algorithm let the application in while it was {app:?}")),
        }
    }
}

/// Leader election: the application calls `elect` to start an election; the node
/// reports each leader it accepts, with the term or epoch it was elected in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Election;

/// An election application's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElectionCall {
    /// Start an election.
    Elect,
}

/// What an election node tells its application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ElectionEvent {
    /// `id` leads, elected in `term`.
    Leader {
        /// The leader.
        id: PeerId,
        /// The election's term (0 for algorithms without terms).
        term: u64,
    },
}

impl Service for Election {
    const KIND: ServiceKind = ServiceKind::Election;
    type Call = ElectionCall;
    type Event = ElectionEvent;
    type App = ();

    // An election may be called for at any time, and a leader announced at any time:
    // agreement and uniqueness are judged by the auditor, not by the contract.
    fn call(_: &(), _: &ElectionCall) -> Result<(), String> {
        Ok(())
    }

    fn event(_: &(), _: &ElectionEvent) -> Result<(), String> {
        Ok(())
    }

    fn names(event: &ElectionEvent) -> Option<PeerId> {
        let ElectionEvent::Leader { id, .. } = *event;
        Some(id)
    }
}
