//! The services a worker process can run ([`RunService`]): the application's calls and
//! the node's events in the words of the worker's application loops (`workload.rs` for
//! `mutex`, `elect.rs` for `election`), whatever the service.

use crate::algorithm::{
    Election, ElectionCall, ElectionEvent, Mutex, MutexCall, MutexEvent, PeerId, Service,
};

/// What a worker's application asks of its node, whatever the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppCall {
    /// Mutual exclusion: let me in.
    Want,
    /// Mutual exclusion: I have left.
    Done,
    /// Election: hold one.
    Elect,
}

/// What a node tells a worker's application, whatever the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// Mutual exclusion: go in.
    Enter,
    /// Election: `id` leads, elected in `term`.
    Leader {
        /// The leader.
        id: PeerId,
        /// The election's term.
        term: u64,
    },
}

/// A service a worker process can run: which application loop stands for its
/// applications (`workload.rs` for `mutex`, `elect.rs` for `election`), and its calls
/// and events in that loop's words.
pub trait RunService: Service {
    /// The call, or `None` if it is not one of this service's.
    fn from_app(call: AppCall) -> Option<Self::Call>;
    /// The event in the application loop's words.
    fn to_app(event: &Self::Event) -> AppEvent;
}

impl RunService for Mutex {
    fn from_app(call: AppCall) -> Option<MutexCall> {
        match call {
            AppCall::Want => Some(MutexCall::Want),
            AppCall::Done => Some(MutexCall::Done),
            AppCall::Elect => None,
        }
    }
    fn to_app(MutexEvent::Enter: &MutexEvent) -> AppEvent {
        AppEvent::Enter
    }
}

impl RunService for Election {
    fn from_app(call: AppCall) -> Option<ElectionCall> {
        (call == AppCall::Elect).then_some(ElectionCall::Elect)
    }
    fn to_app(event: &ElectionEvent) -> AppEvent {
        let ElectionEvent::Leader { id, term } = *event;
        AppEvent::Leader { id, term }
    }
}
