//! The algorithm interface: every mutual-exclusion algorithm is a sans-IO state machine.
//!
//! An algorithm never touches sockets, clocks, files, threads or global randomness. It is
//! told about events (it started, the application wants the critical section, a message
//! arrived from a peer, a timer fired, the application left the critical section, a peer
//! went down or came back) and answers by pushing [`Action`]s into an [`Out`] box: send a
//! message, broadcast one, set or cancel a timer, or let the application enter the
//! critical section. A driver carries the actions out. The worker runtime is one driver
//! (real processes and Unix sockets); the in-process simulator and the unit tests are
//! others, so the same code is both run and checked.
//!
//! Driver contract, which every driver keeps and every algorithm may rely on:
//! - `on_start` is called once, before any other handler.
//! - `on_want_cs` is called only while the application is neither waiting nor inside.
//! - After the algorithm pushes [`Action::EnterCs`], the application is inside until the
//!   driver calls `on_cs_done`. Pushing `EnterCs` when nobody asked is a bug the driver
//!   reports.
//! - Channels are reliable and FIFO per ordered pair of peers unless a fault plan says
//!   otherwise.
//! - Time only enters as the value [`Out::now`]; timers may fire late, and a timer that
//!   was cancelled or reset may still be delivered once, so handlers must check that the
//!   timer still means something.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A worker's identity: a small integer, `0..n`.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PeerId(pub u32);

impl PeerId {
    /// The id as an index into per-worker arrays.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for PeerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "w{}", self.0)
    }
}

/// The smallest number of votes out of `n` that is more than half.
pub fn majority(n: u32) -> u32 {
    n / 2 + 1
}

/// Fixed configuration of one node. It never changes while the node runs, so it is kept
/// apart from the algorithm's mutable state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// This node.
    pub id: PeerId,
    /// Number of nodes; ids are `0..n`.
    pub n: u32,
    /// Seed for any pseudo-randomness the algorithm needs (back-off, for one). An
    /// algorithm must draw only from a generator seeded with this, so runs replay.
    pub seed: u64,
    /// Number of replicated coordinators, for algorithms that use them (`voting`).
    pub replicas: Option<u32>,
    /// 0 for a node's first life, more after each restart. A restarted node has
    /// forgotten everything else, but it knows it is not starting the system: a token
    /// algorithm must not make the initial token again.
    pub incarnation: u32,
}

impl Config {
    /// A configuration with the given id and size, seed 0 and no extra parameters.
    pub fn new(id: u32, n: u32) -> Self {
        Config { id: PeerId(id), n, seed: 0, replicas: None, incarnation: 0 }
    }

    /// Every node, this one included, in id order.
    pub fn all(&self) -> impl Iterator<Item = PeerId> {
        (0..self.n).map(PeerId)
    }

    /// Every node but this one, in id order.
    pub fn others(&self) -> impl Iterator<Item = PeerId> {
        let me = self.id;
        self.all().filter(move |p| *p != me)
    }

    /// The node with the highest id: the one a bully election would pick.
    pub fn highest(&self) -> PeerId {
        PeerId(self.n.saturating_sub(1))
    }
}

/// What a message must be to travel between workers: serialisable, and able to name its
/// own type for the per-type message statistics.
pub trait Message: Serialize + DeserializeOwned + Clone + fmt::Debug + Send + 'static {
    /// A short upper-case name of the message type, e.g. `"REQUEST"`.
    fn kind(&self) -> &'static str;
}

/// A timer tag. Algorithms without timers use [`NoTimer`].
pub trait Timer: Copy + Eq + Hash + fmt::Debug + Send + 'static {}
impl<T: Copy + Eq + Hash + fmt::Debug + Send + 'static> Timer for T {}

/// The timer type of algorithms that set no timers. It has no values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum NoTimer {}

/// One thing the algorithm asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action<M, T> {
    /// Send `msg` to one peer.
    Send { to: PeerId, msg: M },
    /// Send `msg` to every other node (not to this one).
    Broadcast { msg: M },
    /// Fire `timer` after `after`; setting a timer that is already set resets it.
    SetTimer { timer: T, after: Duration },
    /// Forget `timer`; cancelling one that is not set is harmless.
    CancelTimer { timer: T },
    /// Let the waiting application into the critical section.
    EnterCs,
}

/// The outbox handed to every handler, with the current time.
#[derive(Debug)]
pub struct Out<M, T> {
    now: Duration,
    actions: Vec<Action<M, T>>,
}

impl<M, T> Out<M, T> {
    /// An empty outbox at time `now` (time since the node started).
    pub fn new(now: Duration) -> Self {
        Out { now, actions: Vec::new() }
    }

    /// Time since this node started, as the driver measures it.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// Send `msg` to `to`.
    pub fn send(&mut self, to: PeerId, msg: M) {
        self.actions.push(Action::Send { to, msg });
    }

    /// Send `msg` to every other node.
    pub fn broadcast(&mut self, msg: M) {
        self.actions.push(Action::Broadcast { msg });
    }

    /// Fire `timer` after `after` (resets it if already set).
    pub fn set_timer(&mut self, timer: T, after: Duration) {
        self.actions.push(Action::SetTimer { timer, after });
    }

    /// Forget `timer`.
    pub fn cancel_timer(&mut self, timer: T) {
        self.actions.push(Action::CancelTimer { timer });
    }

    /// Let the application into the critical section.
    pub fn enter_cs(&mut self) {
        self.actions.push(Action::EnterCs);
    }

    /// The actions pushed so far, in order.
    pub fn actions(&self) -> &[Action<M, T>] {
        &self.actions
    }

    /// Take the actions out, leaving the box empty (the time stays).
    pub fn drain(&mut self) -> std::vec::Drain<'_, Action<M, T>> {
        self.actions.drain(..)
    }

    /// Move to a new time, keeping no actions.
    pub fn reset(&mut self, now: Duration) {
        self.now = now;
        self.actions.clear();
    }
}

/// A mutual-exclusion algorithm as a set of event handlers.
///
/// Only `new`, `on_want_cs`, `on_message` and `on_cs_done` must be written; the other
/// handlers default to doing nothing. See `algos/centralized.rs` for a complete example.
pub trait Algorithm: Send + 'static {
    /// The algorithm's messages: usually an enum with named fields.
    type Msg: Message;
    /// The algorithm's timer tags: usually an enum, or [`NoTimer`].
    type Timer: Timer;

    /// A fresh node with this configuration and no history (a restarted node gets a
    /// fresh one too: it has forgotten everything).
    fn new(cfg: &Config) -> Self
    where
        Self: Sized;

    /// The node starts. Peers may not have started yet; messages to them are queued.
    fn on_start(&mut self, _out: &mut Out<Self::Msg, Self::Timer>) {}

    /// The application asks for the critical section.
    fn on_want_cs(&mut self, out: &mut Out<Self::Msg, Self::Timer>);

    /// A message arrived from `from`.
    fn on_message(&mut self, from: PeerId, msg: Self::Msg, out: &mut Out<Self::Msg, Self::Timer>);

    /// The application left the critical section.
    fn on_cs_done(&mut self, out: &mut Out<Self::Msg, Self::Timer>);

    /// A timer set earlier fired (possibly late, possibly after being reset).
    fn on_timer(&mut self, _timer: Self::Timer, _out: &mut Out<Self::Msg, Self::Timer>) {}

    /// The channel to `peer` closed: on one machine, a crashed process's socket gives
    /// EOF, so this is a perfect crash detector. A paused peer gives no such event.
    fn on_peer_down(&mut self, _peer: PeerId, _out: &mut Out<Self::Msg, Self::Timer>) {}

    /// `peer` came back as a new incarnation with fresh state.
    fn on_peer_up(&mut self, _peer: PeerId, _out: &mut Out<Self::Msg, Self::Timer>) {}

    /// Counters of the algorithm's own, summed over workers in the run report (e.g.
    /// `("attempts", 12)` for an algorithm that may need several tries per entry).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// What this node is waiting for, in a few words, for stall diagnoses
    /// (e.g. `"waiting for GRANT from w3"`). Empty when it waits for nothing.
    fn pending(&self) -> String {
        String::new()
    }
}

/// Helpers for tests that script a group of nodes by hand: each calls one handler of
/// node `i` at time zero and returns the actions it took, so a test reads as a trace.
///
/// ```
/// use mutexlab::algorithm::{script::*, Action, Algorithm, Config, PeerId};
/// use mutexlab::algos::centralized::{Centralized, Msg};
///
/// let mut w: Vec<Centralized> = (0..2).map(|i| Centralized::new(&Config::new(i, 2))).collect();
/// assert_eq!(want(&mut w, 0), [Action::Send { to: PeerId(1), msg: Msg::Request }]);
/// assert_eq!(deliver(&mut w, 0, 1, Msg::Request), [Action::Send { to: PeerId(0), msg: Msg::Grant }]);
/// assert_eq!(deliver(&mut w, 1, 0, Msg::Grant), [Action::EnterCs]);
/// assert_eq!(done(&mut w, 0), [Action::Send { to: PeerId(1), msg: Msg::Release }]);
/// ```
pub mod script {
    use super::*;

    type Acts<A> = Vec<Action<<A as Algorithm>::Msg, <A as Algorithm>::Timer>>;

    fn on<A: Algorithm>(node: &mut A, f: impl FnOnce(&mut A, &mut Out<A::Msg, A::Timer>)) -> Acts<A> {
        let mut o = Out::new(Duration::ZERO);
        f(node, &mut o);
        o.actions().to_vec()
    }

    /// Node `i`'s application asks for the section.
    pub fn want<A: Algorithm>(w: &mut [A], i: u32) -> Acts<A> {
        on(&mut w[i as usize], |n, o| n.on_want_cs(o))
    }

    /// Node `i`'s application leaves the section.
    pub fn done<A: Algorithm>(w: &mut [A], i: u32) -> Acts<A> {
        on(&mut w[i as usize], |n, o| n.on_cs_done(o))
    }

    /// Deliver `msg` from `from` to `to`.
    pub fn deliver<A: Algorithm>(w: &mut [A], from: u32, to: u32, msg: A::Msg) -> Acts<A> {
        on(&mut w[to as usize], |n, o| n.on_message(PeerId(from), msg, o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majority_is_more_than_half() {
        assert_eq!(majority(1), 1);
        assert_eq!(majority(2), 2);
        assert_eq!(majority(3), 2);
        assert_eq!(majority(4), 3);
        assert_eq!(majority(5), 3);
    }

    #[test]
    fn others_skips_self() {
        let cfg = Config::new(1, 4);
        let ids: Vec<u32> = cfg.others().map(|p| p.0).collect();
        assert_eq!(ids, vec![0, 2, 3]);
        assert_eq!(cfg.highest(), PeerId(3));
    }
}
