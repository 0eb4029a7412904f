//! Tests that script a group of nodes by hand, through the host like every driver.
//!
//! A [`Script`] is N nodes, each behind its own [`Host`], at time zero. Each verb hands
//! one node one input (`want`, `done`, `deliver`, `start`, `fire`, `down`, `up`, or any
//! input with [`step`]) and returns what the node asked for as the host carried it, so a
//! test reads as a trace and the contract is the one every other driver keeps:
//! broadcasts come back as one `Send` per other node in id order, a timer set comes back
//! as `SetTimer` and a cancelled one as `CancelTimer`, and a breach of the contract (a
//! send to itself, an `enter` nobody asked for, a `done` while outside…) fails the test
//! on the spot with the host's one-line reason.
//!
//! A node is started the first time it is driven: [`start`] hands it `Start` and
//! returns what it asked for; any other verb on a node not started yet starts it first,
//! keeping the timers that start set, and fails if that start sent a message or told
//! the application something, so no message or event goes unseen.
//!
//! ```
//! use mutexlab_core::algorithm::{Action, PeerId};
//! use mutexlab_algos::centralized::{Centralized, Msg};
//! use mutexlab_core::script::*;
//!
//! let mut w = nodes::<Centralized>(2);
//! assert_eq!(want(&mut w, 0), [Action::Send { to: PeerId(1), msg: Msg::Request }]);
//! assert_eq!(deliver(&mut w, 0, 1, Msg::Request), [Action::Send { to: PeerId(0), msg: Msg::Grant }]);
//! assert_eq!(deliver(&mut w, 1, 0, Msg::Grant), [Action::enter()]);
//! assert_eq!(done(&mut w, 0), [Action::Send { to: PeerId(1), msg: Msg::Release }]);
//! ```
//!
//! Plain nodes, for calling a handler directly, come from [`fresh`] with an outbox from
//! [`out`]; [`send`] builds the action a test expects.

use std::ops::Index;
use std::time::Duration;

use crate::algorithm::{
    Action, Algorithm, Config, Input, Mutex, MutexCall, Node, NodeInput, NodeOutput, Out, Output, PeerId,
};
use crate::host::{Breach, Effect, Host, Step};

/// N nodes behind their hosts, driven by hand at time zero. `w[i]` reads node `i`.
#[derive(Debug)]
pub struct Script<N: Node> {
    hosts: Vec<Host<N>>,
    started: Vec<bool>,
}

impl<N: Node> Script<N> {
    /// `n` fresh nodes with [`Config::new`], not started.
    pub fn new(n: u32) -> Self {
        Self::with_configs((0..n).map(|i| Config::new(i, n)).collect())
    }

    /// Fresh nodes with these configurations (ids `0..n` in order), not started.
    pub fn with_configs(configs: Vec<Config>) -> Self {
        let started = vec![false; configs.len()];
        Script { hosts: configs.into_iter().map(Host::new).collect(), started }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// No nodes at all.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Node `i` comes back as a fresh node with `cfg` (a new incarnation, say), not
    /// started; nobody else is told.
    pub fn restart(&mut self, i: u32, cfg: Config) {
        self.hosts[i as usize] = Host::new(cfg);
        self.started[i as usize] = false;
    }

    /// The nodes, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &N> {
        self.hosts.iter().map(Host::node)
    }

    /// Node `i`'s host: its application's state, who it was told is down, its timers.
    pub fn host(&self, i: u32) -> &Host<N> {
        &self.hosts[i as usize]
    }

    /// Node `i`, to call a handler by hand (bypassing the host) in a unit test.
    pub fn node_mut(&mut self, i: usize) -> &mut N {
        self.hosts[i].node_mut()
    }

    /// Hand node `i` one input through its host, starting it first if need be; the
    /// node's outputs as the host carried them. A breach fails the test.
    #[track_caller]
    fn drive(&mut self, i: u32, input: NodeInput<N>) -> Vec<NodeOutput<N>> {
        let k = i as usize;
        if matches!(input, Input::Start) {
            self.started[k] = true;
        } else {
            self.start_quietly(i);
        }
        outputs(i, self.hosts[k].step(Duration::ZERO, input))
    }

    /// Start node `i` if it has not started, keeping the timers it sets; fail if it
    /// sends or tells its application anything, which the test would not see.
    #[track_caller]
    fn start_quietly(&mut self, i: u32) {
        let k = i as usize;
        if std::mem::replace(&mut self.started[k], true) {
            return;
        }
        let said = outputs(i, self.hosts[k].step(Duration::ZERO, Input::Start));
        let unseen: Vec<_> =
            said.iter().filter(|o| matches!(o, Output::Send { .. } | Output::Event { .. })).collect();
        assert!(unseen.is_empty(), "w{i} asked for {unseen:?} when it started: script start(w, {i}) first");
    }

    /// Node `i`'s `timer` fires: through [`Host::fire`] if it is armed, else as a late
    /// timer (reset or cancelled since), which the contract allows once.
    #[track_caller]
    fn fire(&mut self, i: u32, timer: N::Timer) -> Vec<NodeOutput<N>> {
        self.start_quietly(i);
        let host = &mut self.hosts[i as usize];
        match host.armed(&timer) {
            Some(generation) => {
                host.fire(Duration::ZERO, &timer, generation).map(|s| outputs(i, s)).unwrap_or_default()
            }
            None => self.drive(i, Input::Timer { timer }),
        }
    }
}

impl<N: Node> Index<usize> for Script<N> {
    type Output = N;
    fn index(&self, i: usize) -> &N {
        self.hosts[i].node()
    }
}

/// In a unit test, `w[i].on_…(&mut out())` calls a handler by hand, bypassing the host.
impl<N: Node> std::ops::IndexMut<usize> for Script<N> {
    fn index_mut(&mut self, i: usize) -> &mut N {
        self.node_mut(i)
    }
}

/// What node `i` asked for in `step`, as outputs; a breach fails the test.
#[track_caller]
fn outputs<N: Node>(i: u32, step: Step<N>) -> Vec<NodeOutput<N>> {
    match step.breaches.first() {
        // The node itself failed (a program that died or answered garbage): its own
        // line, unwound without the panic hook so it is shown without a place.
        Some(Breach::Failed { why }) => std::panic::resume_unwind(Box::new(why.clone())),
        Some(breach) => panic!("w{i} broke the driver contract: {breach}"),
        None => {}
    }
    step.effects
        .into_iter()
        .map(|e| match e {
            Effect::Send { to, msg } => Output::Send { to, msg },
            Effect::Arm { timer, after, .. } => Output::SetTimer { timer, after },
            Effect::Disarm { timer } => Output::CancelTimer { timer },
            Effect::Event { event } => Output::Event { event },
            Effect::Count { name, by } => Output::Count { name, by },
        })
        .collect()
}

/// `n` fresh nodes with [`Config::new`], behind their hosts, not started.
pub fn nodes<N: Node>(n: u32) -> Script<N> {
    Script::new(n)
}

/// Node `i` is handed `input` (anything the verbs below do not name, e.g. an election
/// call).
#[track_caller]
pub fn step<N: Node>(w: &mut Script<N>, i: u32, input: NodeInput<N>) -> Vec<NodeOutput<N>> {
    w.drive(i, input)
}

/// Node `i`'s application asks for the section.
#[track_caller]
pub fn want<N: Node<Service = Mutex>>(w: &mut Script<N>, i: u32) -> Vec<NodeOutput<N>> {
    w.drive(i, Input::Call { call: MutexCall::Want })
}

/// Node `i`'s application leaves the section.
#[track_caller]
pub fn done<N: Node<Service = Mutex>>(w: &mut Script<N>, i: u32) -> Vec<NodeOutput<N>> {
    w.drive(i, Input::Call { call: MutexCall::Done })
}

/// Deliver `msg` from `from` to `to`.
#[track_caller]
pub fn deliver<N: Node>(w: &mut Script<N>, from: u32, to: u32, msg: N::Msg) -> Vec<NodeOutput<N>> {
    w.drive(to, Input::Message { from: PeerId(from), msg })
}

/// Node `i` starts.
#[track_caller]
pub fn start<N: Node>(w: &mut Script<N>, i: u32) -> Vec<NodeOutput<N>> {
    w.drive(i, Input::Start)
}

/// Node `i`'s `timer` fires (armed, or late after a reset or cancel).
#[track_caller]
pub fn fire<N: Node>(w: &mut Script<N>, i: u32, timer: N::Timer) -> Vec<NodeOutput<N>> {
    w.fire(i, timer)
}

/// Node `i` hears that `peer` is down (news it already has is dropped: nothing).
#[track_caller]
pub fn down<N: Node>(w: &mut Script<N>, i: u32, peer: u32) -> Vec<NodeOutput<N>> {
    w.drive(i, Input::PeerDown { peer: PeerId(peer) })
}

/// Node `i` hears that `peer` is back, as a new incarnation (dropped, giving nothing,
/// unless `i` was told it was down).
#[track_caller]
pub fn up<N: Node>(w: &mut Script<N>, i: u32, peer: u32) -> Vec<NodeOutput<N>> {
    w.drive(i, Input::PeerUp { peer: PeerId(peer) })
}

/// `n` fresh plain nodes with [`Config::new`], for calling handlers directly.
pub fn fresh<A: Algorithm>(n: u32) -> Vec<A> {
    (0..n).map(|i| A::new(&Config::new(i, n))).collect()
}

/// An empty outbox at time zero, for calling a handler directly.
pub fn out<M, T>() -> Out<M, T> {
    Out::new(Duration::ZERO)
}

/// The action of sending `msg` to `to`.
pub fn send<M, T>(to: u32, msg: M) -> Action<M, T> {
    Action::Send { to: PeerId(to), msg }
}

/// The actions of a broadcast of `msg` by `me` among `n`, as the host carries it: one
/// send to each other node, in id order.
pub fn broadcast<M: Clone, T>(n: u32, me: u32, msg: M) -> Vec<Action<M, T>> {
    (0..n).filter(|&p| p != me).map(|p| send(p, msg.clone())).collect()
}

pub mod elect;
pub mod timed;
