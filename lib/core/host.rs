//! The host: the one place the driver contract of [`crate::algorithm`] is kept.
//!
//! A [`Host`] wraps one node with what the contract needs and nothing else: whether it
//! has started, its application's state (under the node's service), which peers are
//! down, and which timers are set, each with a generation so that a timer reset or
//! cancelled since it was armed is recognised when it fires late. Every driver (the
//! worker runtime, the simulator, the test script) hands inputs to
//! [`Host::step`] (or [`Host::fire`] for a timer) and carries out the [`Effect`]s it
//! returns; what a driver does about a [`Breach`] is its own policy (the runtime logs
//! and counts it, the simulator fails the run).
//!
//! What the host does with a node's outputs:
//! - `Send` to the node itself or to an id outside `0..n` is a breach, not an effect.
//! - `Broadcast` becomes one `Send` per other node, in id order.
//! - `SetTimer` becomes `Arm` with a fresh generation (replacing the timer's earlier
//!   one, if set); `CancelTimer` becomes `Disarm`.
//! - `Event` is checked against the application's state by the service; an event the
//!   application cannot take (an `enter` nobody asked for), or one that names a node
//!   outside `0..n` (a leader nobody can be), is a breach.
//! - `Count` passes through, for the driver to tally.
//!
//! A node that stands for a program (`external.rs`) may fail on its own (the
//! program died, answered garbage or broke one of the rules above): after every step
//! the host asks it ([`Node::failure`], having told it of any breach with
//! [`Node::breached`]) and reports the failure as [`Breach::Failed`], first among the
//! step's breaches, so the runtime, the simulator and any other driver see it alike.
//!
//! And with inputs: anything before `Start`, a second `Start`, a call the application
//! may not make now, or a message from itself or a stranger is a breach and never
//! reaches the node; a `PeerDown` for a peer already down, or a `PeerUp` for one that is
//! up, is dropped quietly (drivers may learn of a death twice).

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde::Serialize;

use crate::algorithm::{
    Config, Input, Message, Node, NodeInput, NodeOut, NodeOutput, Output, PeerId, Renaming, Service,
    Symmetric,
};

/// Something a driver must do for its node.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Effect<M, T, E> {
    /// Deliver `msg` to `to` (broadcasts arrive already expanded).
    Send {
        /// The peer.
        to: PeerId,
        /// The message.
        msg: M,
    },
    /// Fire `timer` after `after`, then hand it back to [`Host::fire`] with this
    /// generation.
    Arm {
        /// The timer.
        timer: T,
        /// Which setting of the timer this is; an older one fires as a stale timer.
        generation: u64,
        /// How long from now.
        after: Duration,
    },
    /// `timer` is no longer set; a driver may forget it (firing it anyway is harmless).
    Disarm {
        /// The timer.
        timer: T,
    },
    /// Tell the application `event`.
    Event {
        /// What to tell it.
        event: E,
    },
    /// Add `by` to the report's counter `name`.
    Count {
        /// The counter's name in the report.
        name: Cow<'static, str>,
        /// How much to add.
        by: u64,
    },
}

/// A broken rule of the driver contract, by the node or by its driver.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, thiserror::Error)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Breach {
    /// The node sent a message to itself.
    #[error("the algorithm sent {kind} to itself; dropped")]
    SelfSend {
        /// The message's type.
        kind: String,
    },
    /// The node sent a message to an id outside the run.
    #[error("the algorithm sent {kind} to {to}, which is not a peer; dropped")]
    NoSuchPeer {
        /// The id it named.
        to: PeerId,
        /// The message's type.
        kind: String,
    },
    /// The node told its application something it could not take.
    #[error("{why}; ignored")]
    Event {
        /// Why the application could not take it.
        why: String,
    },
    /// The node told its application of a node outside the run (a leader id `>= n`).
    #[error("the algorithm announced {event}, naming {id}, which is not one of the {n} nodes; ignored")]
    EventStranger {
        /// The id named.
        id: PeerId,
        /// How many nodes the run has.
        n: u32,
        /// The event, as text.
        event: String,
    },
    /// The driver made a call the application may not make now.
    #[error("{why}; not passed on")]
    Call {
        /// Why the call may not be made now.
        why: String,
    },
    /// The driver gave an input before `Start`, or `Start` twice.
    #[error("{what}; not passed on")]
    Order {
        /// What came out of order.
        what: String,
    },
    /// The driver delivered a message from the node itself or from a stranger.
    #[error("a message from {from}, which is not a peer; not passed on")]
    Stranger {
        /// Who it claimed to come from.
        from: PeerId,
    },
    /// The node failed on its own ([`Node::failure`]): a program behind it died,
    /// answered garbage or broke a rule. It does nothing from here on.
    #[error("{why}")]
    Failed {
        /// The failure, in one line.
        why: String,
    },
}

/// The effects of node type `N`.
pub type NodeEffect<N> =
    Effect<<N as Node>::Msg, <N as Node>::Timer, <<N as Node>::Service as Service>::Event>;

/// What one input did: the effects, in the order the node asked for them, and any
/// breaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step<N: Node> {
    /// What the driver must do, in order.
    pub effects: Vec<NodeEffect<N>>,
    /// The rules broken in this step (by the node or its driver); the first is the worst.
    pub breaches: Vec<Breach>,
}

impl<N: Node> Default for Step<N> {
    fn default() -> Self {
        Step { effects: Vec::new(), breaches: Vec::new() }
    }
}

/// One node and its side of the contract.
///
/// Method groups, in the order a driver uses them:
/// - making one: [`Host::new`] (a fresh node from its configuration);
/// - driving it: [`Host::step`] for every input, [`Host::fire`] for a timer the driver
///   armed;
/// - reading it: [`Host::node`], [`Host::app`], [`Host::is_down`], [`Host::config`],
///   [`Host::armed`].
///
/// Two hosts are equal when the protocol cannot tell them apart (see the `PartialEq`
/// impl below): the generations of its timers are not part of it.
#[derive(Debug)]
pub struct Host<N: Node> {
    cfg: Config,
    node: N,
    started: bool,
    app: <N::Service as Service>::App,
    /// Peers the node was told are down (and not since that they are up).
    down: smallvec::SmallVec<[bool; 16]>,
    /// Timers set, with the generation of their latest arming.
    timers: Vec<(N::Timer, u64)>,
    /// The last generation handed out.
    generation: u64,
}

// By hand: a derive would ask the service type itself to be `Clone`, which code
// generic over the node type (the checker) cannot promise.
impl<N: Node> Clone for Host<N> {
    fn clone(&self) -> Self {
        Host {
            cfg: self.cfg.clone(),
            node: self.node.clone(),
            started: self.started,
            app: self.app.clone(),
            // A copy: `SmallVec::clone` pushes the flags one by one.
            down: smallvec::SmallVec::from_slice(&self.down),
            timers: self.timers.clone(),
            generation: self.generation,
        }
    }
}

// By hand, not derived: a host is what the protocol can observe (the node, whether it
// started, its application, who is down, WHICH timers are armed). Generations only
// tell a late timer from a live one; they grow forever, and a search must find a
// state equal however many times its timers were reset on the way there.
impl<N: Node> PartialEq for Host<N> {
    fn eq(&self, other: &Self) -> bool {
        self.cfg == other.cfg
            && self.node == other.node
            && self.started == other.started
            && self.app == other.app
            && self.down == other.down
            && self.timers.len() == other.timers.len()
            && self.timers.iter().all(|(t, _)| other.timers.iter().any(|(u, _)| t == u))
    }
}

impl<N: Node> Eq for Host<N> {}

impl<N: Node> Hash for Host<N> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Only what may differ between two hosts of one node: the rest of its
        // configuration is fixed for a run (equality still compares it all).
        (self.cfg.id, self.cfg.incarnation).hash(state);
        self.node.hash(state);
        self.started.hash(state);
        self.app.hash(state);
        hash_flags(&self.down, state);
        hash_unordered(self.timers.iter().map(|(t, _)| t), state);
    }
}

/// Hash a slice of flags as its length and 64 flags a word: `Hash for [bool]` writes each
/// flag on its own, and a search hashes many per state.
pub fn hash_flags<H: Hasher>(flags: &[bool], state: &mut H) {
    state.write_usize(flags.len());
    for chunk in flags.chunks(64) {
        state.write_u64(chunk.iter().enumerate().fold(0, |w, (k, &f)| w | (u64::from(f) << k)));
    }
}

/// Hash `items` as a multiset: the same items in any order hash the same. Each item is
/// hashed on its own with a fixed-key hasher and the results are summed.
pub fn hash_unordered<T: Hash, H: Hasher>(items: impl Iterator<Item = T>, state: &mut H) {
    let (mut count, mut sum) = (0usize, 0u64);
    for item in items {
        let mut h = std::hash::DefaultHasher::new();
        item.hash(&mut h);
        sum = sum.wrapping_add(h.finish());
        count += 1;
    }
    state.write_usize(count);
    state.write_u64(sum);
}

impl<N: Node> Host<N> {
    /// A fresh node for `cfg`, not started yet.
    pub fn new(cfg: Config) -> Self {
        let node = N::create(&cfg);
        Host {
            down: smallvec::smallvec![false; cfg.n as usize],
            cfg,
            node,
            started: false,
            app: Default::default(),
            timers: Vec::new(),
            generation: 0,
        }
    }

    /// The node, to read its state.
    pub fn node(&self) -> &N {
        &self.node
    }

    /// This host with every node id renamed by `r` (its own, the node's state, who is
    /// down, its timers), for the checker's symmetry reduction ([`Symmetric`]).
    pub fn renamed(&self, r: &Renaming) -> Self
    where
        N: Symmetric,
    {
        Host {
            cfg: Config { id: r.of(self.cfg.id), ..self.cfg.clone() },
            node: self.node.renamed(r),
            started: self.started,
            app: self.app.clone(),
            down: r.permute(&self.down).into_iter().collect(),
            timers: self.timers.iter().map(|(t, g)| (N::timer_renamed(t, r), *g)).collect(),
            generation: self.generation,
        }
    }

    /// Let the node clear the fields no later step reads ([`Node::forget`]).
    pub fn forget(&mut self) {
        self.node.forget()
    }

    /// Its configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The application's state, as the contract sees it.
    pub fn app(&self) -> &<N::Service as Service>::App {
        &self.app
    }

    /// The generation `timer` was last armed with, if it is armed (set, and not fired,
    /// reset into a newer generation or cancelled since): what [`Host::fire`] takes.
    pub fn armed(&self, timer: &N::Timer) -> Option<u64> {
        self.timers.iter().find(|(t, _)| t == timer).map(|&(_, g)| g)
    }

    /// The node, to set it up or call a handler by hand in a unit test ([`crate::script`]);
    /// no driver may.
    pub(crate) fn node_mut(&mut self) -> &mut N {
        &mut self.node
    }

    /// The node was told `peer` is down, and not since that it is up.
    pub fn is_down(&self, peer: PeerId) -> bool {
        self.down.get(peer.index()).copied().unwrap_or(false)
    }

    /// Hand the node one input at time `now`, and say what it asked for.
    pub fn step(&mut self, now: Duration, input: NodeInput<N>) -> Step<N> {
        let mut step = Step::default();
        if let Some(breach) = self.admit(&input) {
            step.breaches.extend(breach);
        } else {
            let mut out = NodeOut::<N>::new(now);
            self.node.step(input, &mut out);
            for output in out.drain() {
                self.carry(output, &mut step);
            }
        }
        self.own_failure(&mut step);
        step
    }

    /// Tell the node of the step's first breach, then report its own failure, if it has
    /// one, first among the breaches.
    fn own_failure(&mut self, step: &mut Step<N>) {
        if let Some(breach) = step.breaches.first() {
            self.node.breached(&breach.to_string());
        }
        if let Some(why) = self.node.failure() {
            step.breaches.insert(0, Breach::Failed { why });
        }
    }

    /// A timer armed with `generation` has come due. `None` if it has been reset or
    /// cancelled since (a stale timer: drop it); otherwise the node handles it.
    pub fn fire(&mut self, now: Duration, timer: &N::Timer, generation: u64) -> Option<Step<N>> {
        let k = self.timers.iter().position(|(t, g)| t == timer && *g == generation)?;
        let (timer, _) = self.timers.swap_remove(k);
        Some(self.step(now, Input::Timer { timer }))
    }

    /// `None` if `input` may reach the node; otherwise `Some` of the breach, or of
    /// nothing for an input dropped quietly.
    fn admit(&mut self, input: &NodeInput<N>) -> Option<Option<Breach>> {
        let order = |what: &str| Some(Some(Breach::Order { what: what.to_string() }));
        match input {
            Input::Start if self.started => return order("Start given twice"),
            Input::Start => {
                self.started = true;
                return None;
            }
            _ if !self.started => return order("an input before Start"),
            _ => {}
        }
        match input {
            Input::Message { from, .. } if *from == self.cfg.id || from.0 >= self.cfg.n => {
                Some(Some(Breach::Stranger { from: *from }))
            }
            Input::PeerDown { peer } | Input::PeerUp { peer }
                if *peer == self.cfg.id || peer.0 >= self.cfg.n =>
            {
                Some(Some(Breach::Stranger { from: *peer }))
            }
            Input::PeerDown { peer } => {
                // Down and up alternate: a second down is the same news again.
                let was = std::mem::replace(&mut self.down[peer.index()], true);
                was.then_some(None)
            }
            Input::PeerUp { peer } => {
                let was = std::mem::replace(&mut self.down[peer.index()], false);
                (!was).then_some(None)
            }
            Input::Call { call } => match N::Service::call(&self.app, call) {
                Ok(app) => {
                    self.app = app;
                    None
                }
                Err(why) => Some(Some(Breach::Call { why })),
            },
            Input::Start | Input::Message { .. } | Input::Timer { .. } => None,
        }
    }

    /// Turn one of the node's outputs into effects or a breach.
    fn carry(&mut self, output: NodeOutput<N>, step: &mut Step<N>) {
        match output {
            Output::Send { to, msg } => {
                if to == self.cfg.id {
                    step.breaches.push(Breach::SelfSend { kind: msg.kind().to_string() });
                } else if to.0 >= self.cfg.n {
                    step.breaches.push(Breach::NoSuchPeer { to, kind: msg.kind().to_string() });
                } else {
                    step.effects.push(Effect::Send { to, msg });
                }
            }
            Output::Broadcast { msg } => {
                for to in self.cfg.others() {
                    step.effects.push(Effect::Send { to, msg: msg.clone() });
                }
            }
            Output::SetTimer { timer, after } => {
                self.generation += 1;
                let generation = self.generation;
                match self.timers.iter_mut().find(|(t, _)| *t == timer) {
                    Some(slot) => slot.1 = generation,
                    None => self.timers.push((timer.clone(), generation)),
                }
                step.effects.push(Effect::Arm { timer, generation, after });
            }
            Output::CancelTimer { timer } => {
                self.timers.retain(|(t, _)| *t != timer);
                step.effects.push(Effect::Disarm { timer });
            }
            Output::Event { event } => match N::Service::names(&event) {
                Some(id) if id.0 >= self.cfg.n => {
                    let event = serde_json::to_string(&event).unwrap_or_default();
                    step.breaches.push(Breach::EventStranger { id, n: self.cfg.n, event });
                }
                _ => match N::Service::event(&self.app, &event) {
                    Ok(app) => {
                        self.app = app;
                        step.effects.push(Effect::Event { event });
                    }
                    Err(why) => step.breaches.push(Breach::Event { why }),
                },
            },
            Output::Count { name, by } => step.effects.push(Effect::Count { name, by }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{Algorithm, MutexApp, MutexCall, MutexEvent, Out};

    #[test]
    fn flags_hash_by_value_and_length_and_past_one_word() {
        use std::hash::BuildHasher;
        let keys = std::hash::RandomState::new();
        let h = |flags: &[bool]| {
            let mut state = keys.build_hasher();
            hash_flags(flags, &mut state);
            state.finish()
        };
        let mut long = vec![false; 70];
        let quiet = h(&long);
        long[66] = true;
        assert_ne!(h(&long), quiet, "a flag past the first word counts");
        assert_ne!(h(&[true]), h(&[true, false]), "the length counts");
        assert_ne!(h(&[true, false]), h(&[false, true]));
        assert_eq!(h(&[false, true, true]), h(&[false, true, true]));
    }

    /// A node that does whatever its messages tell it to, to provoke every rule.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Puppet {
        heard: Vec<String>,
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    enum Cmd {
        SendTo(u32),
        Broadcast,
        Arm(u8, u64),
        Cancel(u8),
        Enter,
        Count,
    }

    impl Message for Cmd {
        fn kind(&self) -> &str {
            "CMD"
        }
    }

    impl Algorithm for Puppet {
        type Msg = Cmd;
        type Timer = u8;
        fn new(_: &Config) -> Self {
            Puppet { heard: Vec::new() }
        }
        fn on_want_cs(&mut self, _: &mut Out<Cmd, u8>) {
            self.heard.push("want".into());
        }
        fn on_cs_done(&mut self, _: &mut Out<Cmd, u8>) {
            self.heard.push("done".into());
        }
        fn on_timer(&mut self, t: u8, out: &mut Out<Cmd, u8>) {
            self.heard.push(format!("timer {t}"));
            if t == 9 {
                out.set_timer(9, Duration::from_millis(1)); // a beat that re-arms itself
            }
        }
        fn on_peer_down(&mut self, p: PeerId, _: &mut Out<Cmd, u8>) {
            self.heard.push(format!("down {p}"));
        }
        fn on_peer_up(&mut self, p: PeerId, _: &mut Out<Cmd, u8>) {
            self.heard.push(format!("up {p}"));
        }
        fn on_message(&mut self, _: PeerId, cmd: Cmd, out: &mut Out<Cmd, u8>) {
            match cmd {
                Cmd::SendTo(p) => out.send(PeerId(p), Cmd::Count),
                Cmd::Broadcast => out.broadcast(Cmd::Count),
                Cmd::Arm(t, ms) => out.set_timer(t, Duration::from_millis(ms)),
                Cmd::Cancel(t) => out.cancel_timer(t),
                Cmd::Enter => out.enter_cs(),
                Cmd::Count => out.count("things", 2),
            }
        }
    }

    fn host() -> Host<Puppet> {
        let mut h = Host::new(Config::new(1, 3));
        assert_eq!(h.step(Duration::ZERO, Input::Start), Step::default());
        h
    }

    fn tell(h: &mut Host<Puppet>, cmd: Cmd) -> Step<Puppet> {
        h.step(Duration::ZERO, Input::Message { from: PeerId(0), msg: cmd })
    }

    #[test]
    fn sends_are_checked_and_broadcasts_expanded() {
        let mut h = host();
        assert_eq!(tell(&mut h, Cmd::SendTo(2)).effects, [Effect::Send { to: PeerId(2), msg: Cmd::Count }]);
        assert_eq!(tell(&mut h, Cmd::SendTo(1)).breaches, [Breach::SelfSend { kind: "CMD".into() }]);
        let s = tell(&mut h, Cmd::SendTo(7));
        assert!(s.effects.is_empty());
        assert_eq!(s.breaches, [Breach::NoSuchPeer { to: PeerId(7), kind: "CMD".into() }]);
        let to: Vec<PeerId> = tell(&mut h, Cmd::Broadcast)
            .effects
            .into_iter()
            .map(|e| match e {
                Effect::Send { to, .. } => to,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(to, [PeerId(0), PeerId(2)]);
    }

    #[test]
    fn a_reset_or_cancelled_timer_is_recognised_as_stale() {
        let mut h = host();
        let arm = |s: Step<Puppet>| match s.effects[..] {
            [Effect::Arm { generation, .. }] => generation,
            ref other => panic!("{other:?}"),
        };
        let first = arm(tell(&mut h, Cmd::Arm(5, 10)));
        let second = arm(tell(&mut h, Cmd::Arm(5, 20)));
        assert!(second > first);
        assert!(h.fire(Duration::ZERO, &5, first).is_none(), "reset since: stale");
        assert!(h.fire(Duration::ZERO, &5, second).is_some());
        assert!(h.fire(Duration::ZERO, &5, second).is_none(), "fires once");
        let third = arm(tell(&mut h, Cmd::Arm(5, 20)));
        assert_eq!(tell(&mut h, Cmd::Cancel(5)).effects, [Effect::Disarm { timer: 5 }]);
        assert!(h.fire(Duration::ZERO, &5, third).is_none(), "cancelled: stale");
        assert_eq!(h.node().heard, ["timer 5"]);
    }

    /// What a node without generation tags of its own relies on (`centralized-bully`):
    /// timers are told apart by value, so setting one leaves another's setting live, and
    /// a timer re-armed from its own firing fires again, its old setting spent.
    #[test]
    fn only_the_latest_setting_of_each_timer_fires() {
        let mut h = host();
        let arm = |s: Step<Puppet>| match s.effects[..] {
            [Effect::Arm { generation, .. }] => generation,
            ref other => panic!("{other:?}"),
        };
        let five = arm(tell(&mut h, Cmd::Arm(5, 10)));
        let six = arm(tell(&mut h, Cmd::Arm(6, 10)));
        let six_again = arm(tell(&mut h, Cmd::Arm(6, 10)));
        assert!(h.fire(Duration::ZERO, &6, six).is_none(), "6 reset: its first setting is stale");
        assert!(h.fire(Duration::ZERO, &5, five).is_some(), "setting 6 left 5 live");
        assert!(h.fire(Duration::ZERO, &6, six_again).is_some());
        let beat = arm(tell(&mut h, Cmd::Arm(9, 1)));
        let again = arm(h.fire(Duration::ZERO, &9, beat).expect("live"));
        assert!(again > beat);
        assert!(h.fire(Duration::ZERO, &9, beat).is_none(), "the spent setting fires no more");
        assert_eq!(h.armed(&9), Some(again));
        assert!(h.fire(Duration::ZERO, &9, again).is_some());
        assert_eq!(h.node().heard, ["timer 5", "timer 6", "timer 9", "timer 9"]);
    }

    #[test]
    fn hosts_are_equal_by_which_timers_are_armed_not_by_their_generations() {
        use std::hash::{BuildHasher, RandomState};
        let (mut a, mut b) = (host(), host());
        tell(&mut a, Cmd::Arm(5, 10));
        tell(&mut a, Cmd::Arm(6, 10));
        // The other way round, and 5 reset twice and 7 cancelled on the way.
        for cmd in [Cmd::Arm(6, 10), Cmd::Arm(5, 1), Cmd::Arm(7, 1), Cmd::Arm(5, 3), Cmd::Cancel(7)] {
            tell(&mut b, cmd);
        }
        assert_ne!(a.armed(&5), b.armed(&5), "other generations");
        assert_eq!(a, b);
        let hasher = RandomState::new();
        assert_eq!(hasher.hash_one(&a), hasher.hash_one(&b));
        // Another set of timers, an application in another phase: other states.
        tell(&mut b, Cmd::Cancel(6));
        assert_ne!(a, b);
        assert_ne!(hasher.hash_one(&a), hasher.hash_one(&b));
        let mut c = a.clone();
        c.step(Duration::ZERO, Input::Call { call: MutexCall::Want });
        assert_ne!(a, c);
    }

    #[test]
    fn the_application_contract_is_kept_both_ways() {
        let mut h = host();
        let call = |h: &mut Host<Puppet>, call| h.step(Duration::ZERO, Input::Call { call });
        // An enter nobody asked for never reaches the application.
        let s = tell(&mut h, Cmd::Enter);
        assert!(s.effects.is_empty());
        assert!(matches!(s.breaches[..], [Breach::Event { .. }]), "{s:?}");
        // Done before want, want twice: the driver's bugs, never passed on.
        assert!(matches!(call(&mut h, MutexCall::Done).breaches[..], [Breach::Call { .. }]));
        assert!(call(&mut h, MutexCall::Want).breaches.is_empty());
        assert!(matches!(call(&mut h, MutexCall::Want).breaches[..], [Breach::Call { .. }]));
        assert_eq!(*h.app(), MutexApp::Waiting);
        assert_eq!(tell(&mut h, Cmd::Enter).effects, [Effect::Event { event: MutexEvent::Enter }]);
        assert_eq!(*h.app(), MutexApp::Inside);
        assert!(call(&mut h, MutexCall::Done).breaches.is_empty());
        assert_eq!(h.node().heard, ["want", "done"]);
        assert_eq!(tell(&mut h, Cmd::Count).effects, [Effect::Count { name: "things".into(), by: 2 }]);
    }

    /// An election node that, when asked, names whoever the call's peer says.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Names(u32);

    impl Node for Names {
        type Msg = Cmd;
        type Timer = u8;
        type Service = crate::algorithm::Election;
        fn create(_: &Config) -> Self {
            Names(0)
        }
        fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
            if let Input::Call { .. } = input {
                out.emit(crate::algorithm::ElectionEvent::Leader { id: PeerId(self.0), term: 1 });
            }
        }
    }

    #[test]
    fn a_leader_nobody_can_be_is_a_breach_and_never_reaches_the_application() {
        use crate::algorithm::{ElectionCall, ElectionEvent};
        let mut h: Host<Names> = Host::new(Config::new(0, 4));
        h.step(Duration::ZERO, Input::Start);
        let elect = |h: &mut Host<Names>, id| {
            h.node.0 = id;
            h.step(Duration::ZERO, Input::Call { call: ElectionCall::Elect })
        };
        let last = elect(&mut h, 3);
        assert_eq!(last.effects, [Effect::Event { event: ElectionEvent::Leader { id: PeerId(3), term: 1 } }]);
        let s = elect(&mut h, 99);
        assert!(s.effects.is_empty(), "{s:?}");
        let [Breach::EventStranger { id, n: 4, .. }] = &s.breaches[..] else { panic!("{s:?}") };
        assert_eq!(*id, PeerId(99));
        assert_eq!(
            s.breaches[0].to_string(),
            r#"the algorithm announced {"type":"leader","id":99,"term":1}, naming w99, which is not one of the 4 nodes; ignored"#
        );
        assert!(!elect(&mut h, 4).breaches.is_empty(), "n itself is outside 0..n");
    }

    #[test]
    fn start_comes_first_and_once_and_peers_alternate_down_and_up() {
        let mut h: Host<Puppet> = Host::new(Config::new(1, 3));
        let down = Input::PeerDown { peer: PeerId(0) };
        assert!(matches!(h.step(Duration::ZERO, down.clone()).breaches[..], [Breach::Order { .. }]));
        h.step(Duration::ZERO, Input::Start);
        assert!(matches!(h.step(Duration::ZERO, Input::Start).breaches[..], [Breach::Order { .. }]));
        h.step(Duration::ZERO, Input::PeerUp { peer: PeerId(0) }); // up already: dropped
        h.step(Duration::ZERO, down.clone());
        h.step(Duration::ZERO, down.clone()); // the same news again: dropped
        assert!(h.is_down(PeerId(0)));
        h.step(Duration::ZERO, Input::PeerUp { peer: PeerId(0) });
        assert_eq!(h.node().heard, ["down w0", "up w0"]);
        let stranger = Input::Message { from: PeerId(1), msg: Cmd::Count };
        assert_eq!(h.step(Duration::ZERO, stranger).breaches, [Breach::Stranger { from: PeerId(1) }]);
    }

    /// A node standing for a program that fails when told to, or when it breaks a rule.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Fragile {
        failed: Option<String>,
    }

    impl Node for Fragile {
        type Msg = Cmd;
        type Timer = u8;
        type Service = crate::algorithm::Mutex;
        fn create(_: &Config) -> Self {
            Fragile { failed: None }
        }
        fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
            match input {
                Input::Message { msg: Cmd::Count, .. } => {
                    self.failed.get_or_insert_with(|| "it died".into());
                }
                Input::Message { msg: Cmd::SendTo(p), .. } => out.send(PeerId(p), Cmd::Count),
                _ => {}
            }
        }
        fn failure(&self) -> Option<String> {
            self.failed.clone()
        }
        fn breached(&mut self, breach: &str) {
            self.failed.get_or_insert(format!("broke the contract: {breach}"));
        }
    }

    #[test]
    fn a_node_s_own_failure_is_a_breach_first_among_the_step_s() {
        let mut h: Host<Fragile> = Host::new(Config::new(1, 3));
        let tell =
            |h: &mut Host<Fragile>, msg| h.step(Duration::ZERO, Input::Message { from: PeerId(0), msg });
        assert_eq!(h.step(Duration::ZERO, Input::Start), Step::default());
        assert_eq!(tell(&mut h, Cmd::SendTo(2)).breaches, []);
        // A rule broken: the node hears of it and fails over it.
        let s = tell(&mut h, Cmd::SendTo(1));
        let why = "broke the contract: the algorithm sent CMD to itself; dropped";
        assert_eq!(s.breaches, [Breach::Failed { why: why.into() }, Breach::SelfSend { kind: "CMD".into() }]);
        assert_eq!(s.breaches[0].to_string(), why);
        // Failed, it stays failed: every step says so, the first failure kept.
        assert_eq!(tell(&mut h, Cmd::Count).breaches, [Breach::Failed { why: why.into() }]);
        let mut h: Host<Fragile> = Host::new(Config::new(1, 3));
        h.step(Duration::ZERO, Input::Start);
        assert_eq!(tell(&mut h, Cmd::Count).breaches, [Breach::Failed { why: "it died".into() }]);
    }

    #[test]
    fn inputs_and_outputs_are_json_lines_with_a_type_tag() {
        type I = Input<Cmd, u8, MutexCall>;
        let line = serde_json::to_string(&I::Call { call: MutexCall::Want }).unwrap();
        assert_eq!(line, r#"{"type":"call","call":"want"}"#);
        let back: I = serde_json::from_str(r#"{"type":"peer_down","peer":3}"#).unwrap();
        assert_eq!(back, I::PeerDown { peer: PeerId(3) });
        let out: Output<Cmd, u8, MutexEvent> = Output::enter();
        assert_eq!(serde_json::to_string(&out).unwrap(), r#"{"type":"event","event":"enter"}"#);
    }
}
