//! The simulated world: every node behind its host, every message in flight, every
//! timer, every application, and nothing random.
//!
//! A [`World`] is a value (`Clone + Eq + Hash`, equal when the protocol cannot tell two
//! apart, whatever the clock and the tallies say): it lists what can happen next
//! ([`World::enabled`]) and does one of those things ([`World::apply`]). Whatever is left
//! open (which message is delivered, whether an application asks now, whether a node
//! crashes, whether a cancelled timer still fires once) is a [`Choice`] made outside,
//! by a scheduler: the seeded one in [`super::Sim`], a list of saved choices to replay
//! a run, or one day a search that visits every state once.
//!
//! Rules of the world (the same as the worker runtime's):
//! - Channels are FIFO per ordered pair unless the world was made non-FIFO, and then any
//!   message in flight on a channel may be delivered first.
//! - Delivering a message or an application step takes no virtual time; only timers move
//!   the clock, and the timer that fires is always the earliest one.
//! - With stale timers on, a timer reset or cancelled is not forgotten at once: the next
//!   choice decides whether it still fires once ([`Choice::Stale`]), as the driver
//!   contract allows.
//! - Crashes: a crashed node stops at once (its application's request or section is
//!   gone, its timers too); what it sent before is still delivered, then each live peer
//!   hears `PeerDown`; messages to it are lost. It restarts as a fresh node (one
//!   incarnation higher) that finishes the entries left; every live peer hears
//!   `PeerDown` (if not yet, dropping the old life's undelivered messages, as the
//!   runtime drops the old connection) and `PeerUp`; the fresh node hears `PeerDown` for
//!   every peer that is dead then.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use smallvec::{smallvec, SmallVec};

use super::app::{SimApps, SimService};
use super::Failure;
use crate::algorithm::{Config, Input, Message, Node, NodeInput, PeerId};
use crate::host::{hash_unordered, Breach, Effect, Host, Step};

/// One thing that can happen next. Serialisable, so a run is a list of choices that can
/// be saved and replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Choice {
    /// Deliver the `index`-th message in flight on the channel `from → to` (always 0
    /// when channels are FIFO).
    Deliver {
        /// The sender.
        from: u32,
        /// The receiver.
        to: u32,
        /// Which message in flight on that channel.
        index: u32,
    },
    /// `to` hears that `from` is down (the channel has drained).
    Down {
        /// The node that is down.
        from: u32,
        /// The node that hears it.
        to: u32,
    },
    /// Application `node` makes the `index`-th of the calls it could make now (asks for
    /// the critical section, leaves it, calls an election…).
    Call {
        /// The node whose application calls.
        node: u32,
        /// Which of the calls it could make now.
        index: u32,
    },
    /// The earliest timer fires.
    Timer,
    /// Decide whether the reset or cancelled timer at `index` in the timer list still
    /// fires once (`keep`) or is forgotten.
    Stale {
        /// The timer's place in the timer list.
        index: u32,
        /// It still fires once (`true`) or is forgotten.
        keep: bool,
    },
    /// Node `node` crashes.
    Crash {
        /// The node.
        node: u32,
    },
    /// Crashed node `node` starts again with fresh state.
    Restart {
        /// The node.
        node: u32,
    },
}

/// One flag per node, inline for up to 16 nodes: a search copies worlds by millions.
type Flags = SmallVec<[bool; 16]>;

/// A timer that is set, or a stale one.
#[derive(Clone, Debug)]
struct SetTimer<T> {
    node: PeerId,
    timer: T,
    /// The host's generation for this arming.
    generation: u64,
    at: Duration,
    /// Tie-break among timers due at the same time: the order they were set in.
    seq: u64,
    /// Set and not reset or cancelled since.
    live: bool,
    /// For a timer no longer live: whether it has been decided that it still fires.
    decided: bool,
}

impl<T> SetTimer<T> {
    /// What the protocol can observe of it: whose, which, and whether it is still set
    /// or a stale one whose fate is (un)decided. Not when, nor in which order it was set.
    fn key(&self) -> (PeerId, &T, bool, bool) {
        (self.node, &self.timer, self.live, self.decided)
    }
}

/// N nodes of `N`, their applications, channels and timers. See the module doc.
///
/// Method groups: making one ([`World::new`], then the knobs [`World::non_fifo`],
/// [`World::stale_timers`], [`World::crashes`], then [`World::start`]); stepping it
/// ([`World::enabled`], [`World::apply`]); reading it ([`World::done`],
/// [`World::waiting`], [`World::node`], and the tallies the report is made of).
///
/// Two worlds are equal when the protocol cannot tell them apart (see the `PartialEq`
/// impl below); the clock and the tallies are kept beside that state, not in it.
#[derive(Debug)]
pub struct World<N: Node>
where
    N::Service: SimService,
{
    n: usize,
    hosts: Vec<Host<N>>,
    alive: Flags,
    /// Messages in flight, each with its channel `from * n + to`, in channel order and
    /// in order of sending within a channel: one allocation for all the channels, where
    /// a queue per ordered pair cost n² in every copy of a world.
    links: Vec<(u32, N::Msg)>,
    /// `from * n + to`: `from` is dead and `to` is to hear so once the link drains.
    down_due: SmallVec<[bool; 64]>,
    timers: Vec<SetTimer<N::Timer>>,
    timer_seq: u64,
    pub(super) now: Duration,
    /// The applications, as the node's service has them.
    pub(super) apps: <N::Service as SimService>::Apps,
    pub(super) sent: BTreeMap<String, u64>,
    pub(super) counters: BTreeMap<String, u64>,
    /// Keep `sent` and `counters` (a search reads neither and copies worlds by millions).
    tallies: bool,
    fifo: bool,
    stale_timers: bool,
    /// Crashes still allowed, and which nodes may crash.
    crash_budget: u32,
    may_crash: Flags,
    pub(super) crashes_done: u32,
}

// By hand: a derive would ask the service type itself to be `Clone`, which a search
// generic over the node type cannot promise.
impl<N: Node> Clone for World<N>
where
    N::Service: SimService,
{
    fn clone(&self) -> Self {
        World {
            n: self.n,
            hosts: self.hosts.clone(),
            alive: self.alive.clone(),
            links: self.links.clone(),
            down_due: self.down_due.clone(),
            timers: self.timers.clone(),
            timer_seq: self.timer_seq,
            now: self.now,
            apps: self.apps.clone(),
            sent: self.sent.clone(),
            counters: self.counters.clone(),
            tallies: self.tallies,
            fifo: self.fifo,
            stale_timers: self.stale_timers,
            crash_budget: self.crash_budget,
            may_crash: self.may_crash.clone(),
            crashes_done: self.crashes_done,
        }
    }
}

// By hand, not derived, so that a search recognises a state it has seen (design note
// layers.md, "State that is the same compares the same"). In: the hosts, incarnations,
// who is up, each channel's messages in order, news of deaths due, the armed timers as
// a multiset (whose, which, live or stale), the applications' phases, the crashes still
// allowed and the world's knobs. Out, kept beside as Stateright keeps history: the
// clock, timer times, sequence numbers and generations, messages sent, counters and
// crashes done. The timers are a set because the checker lets any armed timer fire
// (design note check.md); the seeded scheduler's earliest-first rule reads the times.
impl<N: Node> PartialEq for World<N>
where
    N::Service: SimService,
{
    fn eq(&self, other: &Self) -> bool {
        let same_timers = self.timers.len() == other.timers.len() && {
            // A multiset: match each timer with a distinct one of the other's.
            let mut used = vec![false; other.timers.len()];
            self.timers.iter().all(|t| {
                let k = (0..other.timers.len()).find(|&k| !used[k] && other.timers[k].key() == t.key());
                k.map(|k| used[k] = true).is_some()
            })
        };
        self.n == other.n
            && self.hosts == other.hosts
            && self.alive == other.alive
            && self.links == other.links
            && self.down_due == other.down_due
            && same_timers
            && self.apps == other.apps
            && self.fifo == other.fifo
            && self.stale_timers == other.stale_timers
            && self.crash_budget == other.crash_budget
            && self.may_crash == other.may_crash
    }
}

impl<N: Node> Eq for World<N> where N::Service: SimService {}

impl<N: Node> Hash for World<N>
where
    N::Service: SimService,
{
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.n.hash(state);
        self.hosts.hash(state);
        self.alive.hash(state);
        self.links.hash(state);
        self.down_due.hash(state);
        hash_unordered(self.timers.iter().map(SetTimer::key), state);
        self.apps.hash(state);
        self.fifo.hash(state);
        self.stale_timers.hash(state);
        self.crash_budget.hash(state);
        self.may_crash.hash(state);
    }
}

impl<N: Node> World<N>
where
    N::Service: SimService,
{
    /// Nodes with these configurations, not started; `rounds` tells the applications how
    /// much to do (entries each, or elections each initiator calls).
    pub fn new(configs: Vec<Config>, rounds: u32) -> Self {
        let n = configs.len();
        World {
            n,
            hosts: configs.into_iter().map(Host::new).collect(),
            alive: smallvec![true; n],
            links: Vec::new(),
            down_due: smallvec![false; n * n],
            timers: Vec::new(),
            timer_seq: 0,
            now: Duration::ZERO,
            apps: N::Service::apps(n, rounds),
            sent: BTreeMap::new(),
            counters: BTreeMap::new(),
            tallies: true,
            fifo: true,
            stale_timers: false,
            crash_budget: 0,
            may_crash: smallvec![false; n],
            crashes_done: 0,
        }
    }

    /// The same world with fresh applications that will do `rounds`.
    pub fn with_rounds(mut self, rounds: u32) -> Self {
        self.apps = N::Service::apps(self.n, rounds);
        self
    }

    /// The applications, to read them or set them up (e.g. who initiates elections).
    pub fn apps_mut(&mut self) -> &mut <N::Service as SimService>::Apps {
        &mut self.apps
    }

    /// Let any message in flight on a channel be delivered first.
    pub fn non_fifo(mut self) -> Self {
        self.fifo = false;
        self
    }

    /// Keep no tallies of messages sent and counters (a search, which reads neither).
    pub fn without_tallies(mut self) -> Self {
        self.tallies = false;
        self
    }

    /// Keep reset or cancelled timers until a [`Choice::Stale`] decides their fate.
    pub fn stale_timers(mut self, on: bool) -> Self {
        self.stale_timers = on;
        self
    }

    /// Allow up to `count` crashes, each of a node `eligible` allows.
    pub fn crashes(mut self, count: u32, eligible: impl Fn(PeerId) -> bool) -> Self {
        self.crash_budget = count;
        self.may_crash = (0..self.n).map(|i| eligible(PeerId(i as u32))).collect();
        self
    }

    /// Start every node.
    pub fn start(&mut self, note: &mut dyn FnMut(Duration, String)) -> Result<(), Failure> {
        (0..self.n).try_for_each(|i| self.input(i, Input::Start, note))
    }

    /// Node `id`.
    pub fn node(&self, id: u32) -> &N {
        self.hosts[id as usize].node()
    }

    /// The applications have done all they meant to, every node is alive and nothing is
    /// in flight.
    pub fn done(&self) -> bool {
        self.alive.iter().all(|&a| a) && self.links.is_empty() && self.apps.done(&self.alive)
    }

    /// A crash or a restart is among the choices.
    pub fn may_crash_or_restart(&self) -> bool {
        self.crash_budget > 0 || self.alive.contains(&false)
    }

    /// Each waiting node with what it says it waits for.
    pub fn waiting(&self) -> Vec<(PeerId, String)> {
        (0..self.n)
            .filter(|&i| self.alive[i] && self.apps.waiting(i, &self.alive))
            .map(|i| (PeerId(i as u32), self.hosts[i].node().waiting_for()))
            .collect()
    }

    /// Everything that can happen next, in a fixed order. Undecided stale timers come
    /// alone: their fate is settled before anything else happens.
    pub fn enabled(&self) -> Vec<Choice> {
        let undecided: Vec<Choice> = (0..self.timers.len())
            .filter(|&k| !self.timers[k].live && !self.timers[k].decided)
            .flat_map(|k| [false, true].map(|keep| Choice::Stale { index: k as u32, keep }))
            .collect();
        if !undecided.is_empty() {
            return undecided;
        }
        let mut out = Vec::new();
        let n = self.n as u32;
        // Channels in order, each one's messages in order: the first only, if FIFO.
        let mut index = 0;
        for (k, &(l, _)) in self.links.iter().enumerate() {
            index = if k > 0 && self.links[k - 1].0 == l { index + 1 } else { 0 };
            if index == 0 || !self.fifo {
                out.push(Choice::Deliver { from: l / n, to: l % n, index });
            }
        }
        for (from, to) in (0..n).flat_map(|f| (0..n).map(move |t| (f, t))) {
            let l = from * n + to;
            if self.down_due[l as usize] && self.link_empty(l) {
                out.push(Choice::Down { from, to });
            }
        }
        for i in (0..self.n).filter(|&i| self.alive[i]) {
            let calls = self.apps.calls(i).len() as u32;
            out.extend((0..calls).map(|index| Choice::Call { node: i as u32, index }));
        }
        for i in 0..self.n {
            let node = i as u32;
            if !self.alive[i] {
                out.push(Choice::Restart { node });
            } else if self.may_crash[i] && self.crash_budget > 0 {
                out.push(Choice::Crash { node });
            }
        }
        if !self.timers.is_empty() {
            out.push(Choice::Timer);
        }
        out
    }

    /// Do `choice`, which must be one of [`World::enabled`]'s. A note on what happened
    /// is passed to `note` (for traces). An error is a failure of the algorithm.
    pub fn apply(&mut self, choice: Choice, note: &mut dyn FnMut(Duration, String)) -> Result<(), Failure> {
        match choice {
            Choice::Deliver { from, to, index } => {
                let first = self.link_start(from * self.n as u32 + to);
                let (_, msg) = self.links.remove(first + index as usize);
                note(self.now, format!("{} -> {}: {:?}", PeerId(from), PeerId(to), msg));
                self.input(to as usize, Input::Message { from: PeerId(from), msg }, note)
            }
            Choice::Down { from, to } => {
                self.down_due[(from as usize) * self.n + to as usize] = false;
                note(self.now, format!("{} hears {} is down", PeerId(to), PeerId(from)));
                self.input(to as usize, Input::PeerDown { peer: PeerId(from) }, note)
            }
            Choice::Call { node, index } => {
                let i = node as usize;
                let call = self.apps.calls(i).swap_remove(index as usize);
                let line = self.apps.call(i, &call);
                note(self.now, line);
                self.input(i, Input::Call { call }, note)
            }
            Choice::Timer => {
                let k = (0..self.timers.len())
                    .min_by_key(|&k| (self.timers[k].at, self.timers[k].seq))
                    .expect("an enabled timer");
                let t = self.timers.remove(k);
                self.now = self.now.max(t.at);
                let i = t.node.index();
                if t.live {
                    note(self.now, format!("{} timer {:?} fires", t.node, t.timer));
                    match self.hosts[i].fire(self.now, &t.timer, t.generation) {
                        Some(step) => self.carry(i, step, note),
                        None => Ok(()),
                    }
                } else {
                    // Reset or cancelled, delivered once anyway, as the contract allows.
                    note(self.now, format!("{} timer {:?} fires (stale)", t.node, t.timer));
                    self.input(i, Input::Timer { timer: t.timer }, note)
                }
            }
            Choice::Stale { index, keep } => {
                let k = index as usize;
                if keep {
                    self.timers[k].decided = true;
                } else {
                    self.timers.remove(k);
                }
                Ok(())
            }
            Choice::Crash { node } => {
                self.crash(node as usize, note);
                Ok(())
            }
            Choice::Restart { node } => self.restart(node as usize, note),
        }
    }

    /// Where channel `l`'s messages begin in `links` (or would).
    fn link_start(&self, l: u32) -> usize {
        self.links.partition_point(|&(k, _)| k < l)
    }

    fn link_empty(&self, l: u32) -> bool {
        self.links.get(self.link_start(l)).is_none_or(|&(k, _)| k != l)
    }

    /// Hand node `i` one input through its host, and carry out what it asks.
    fn input(
        &mut self,
        i: usize,
        input: NodeInput<N>,
        note: &mut dyn FnMut(Duration, String),
    ) -> Result<(), Failure> {
        let step = self.hosts[i].step(self.now, input);
        self.carry(i, step, note)
    }

    /// Carry out what node `i` asked for. A breach of the contract is a failure.
    fn carry(
        &mut self,
        i: usize,
        step: Step<N>,
        note: &mut dyn FnMut(Duration, String),
    ) -> Result<(), Failure> {
        let me = PeerId(i as u32);
        if let Some(breach) = step.breaches.into_iter().next() {
            return Err(match breach {
                Breach::SelfSend { kind } => Failure::SelfSend { node: me, kind },
                Breach::NoSuchPeer { to, kind } => Failure::NoSuchPeer { node: me, to, kind },
                Breach::Event { .. } => Failure::UnaskedEnter { node: me },
                Breach::Failed { why } => Failure::NodeFailed { node: me, why },
                breach => Failure::Driver { node: me, breach },
            });
        }
        for effect in step.effects {
            match effect {
                Effect::Send { to, msg } => {
                    if self.tallies {
                        *self.sent.entry(msg.kind().to_string()).or_default() += 1;
                    }
                    // Counted as sent, as the runtime counts it, but a dead process reads
                    // nothing.
                    if self.alive[to.index()] {
                        let l = (i * self.n + to.index()) as u32;
                        let end = self.links.partition_point(|&(k, _)| k <= l);
                        self.links.insert(end, (l, msg));
                    }
                }
                Effect::Arm { timer, generation, after } => {
                    self.retire_timer(me, &timer);
                    self.timer_seq += 1;
                    let (at, seq) = (self.now.saturating_add(after), self.timer_seq); // never, not a panic
                    self.timers.push(SetTimer {
                        node: me,
                        timer,
                        generation,
                        at,
                        seq,
                        live: true,
                        decided: true,
                    });
                }
                Effect::Disarm { timer } => self.retire_timer(me, &timer),
                Effect::Event { event } => {
                    let line = self.apps.event(i, &event)?;
                    note(self.now, line);
                }
                Effect::Count { .. } if !self.tallies => {}
                Effect::Count { name, by } => {
                    let c = self.counters.entry(name.into_owned()).or_default();
                    *c = c.saturating_add(by); // a program's `by` may be anything
                }
            }
        }
        Ok(())
    }

    /// Node `me`'s live `timer` is reset or cancelled: forget it, or with stale timers
    /// on, leave its fate to the next choice.
    fn retire_timer(&mut self, me: PeerId, timer: &N::Timer) {
        if let Some(k) = self.timers.iter().position(|t| t.live && t.node == me && t.timer == *timer) {
            if self.stale_timers {
                self.timers[k].live = false;
                self.timers[k].decided = false;
            } else {
                self.timers.remove(k);
            }
        }
    }

    fn crash(&mut self, i: usize, note: &mut dyn FnMut(Duration, String)) {
        let me = PeerId(i as u32);
        note(self.now, format!("{me} crashes"));
        self.crash_budget -= 1;
        self.crashes_done += 1;
        self.alive[i] = false;
        self.apps.crash(i);
        self.timers.retain(|t| t.node != me);
        let n = self.n as u32;
        self.links.retain(|&(l, _)| (l % n) as usize != i);
        for j in 0..self.n {
            // Nothing reaches a dead node, news of others' deaths included.
            self.down_due[j * self.n + i] = false;
            if j != i && self.alive[j] {
                self.down_due[i * self.n + j] = true;
            }
        }
    }

    fn restart(&mut self, i: usize, note: &mut dyn FnMut(Duration, String)) -> Result<(), Failure> {
        let me = PeerId(i as u32);
        let mut cfg = self.hosts[i].config().clone();
        cfg.incarnation += 1;
        note(self.now, format!("{me} restarts (incarnation {})", cfg.incarnation));
        self.hosts[i] = Host::new(cfg);
        self.alive[i] = true;
        for j in (0..self.n).filter(|&j| j != i) {
            if self.alive[j] {
                let l = i * self.n + j;
                if self.down_due[l] {
                    // The runtime drops the old connection when the new one says hello.
                    self.links.retain(|&(k, _)| k as usize != l);
                    self.down_due[l] = false;
                    note(self.now, format!("{} hears {me} is down", PeerId(j as u32)));
                    self.input(j, Input::PeerDown { peer: me }, note)?;
                }
                note(self.now, format!("{} hears {me} is up", PeerId(j as u32)));
                self.input(j, Input::PeerUp { peer: me }, note)?;
            }
        }
        self.input(i, Input::Start, note)?;
        let dead: Vec<usize> = (0..self.n).filter(|&j| j != i && !self.alive[j]).collect();
        for j in dead {
            self.down_due[j * self.n + i] = false;
            note(self.now, format!("{me} hears {} is down", PeerId(j as u32)));
            self.input(i, Input::PeerDown { peer: PeerId(j as u32) }, note)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hash::{BuildHasher, RandomState};

    use super::*;
    use crate::algorithm::{Algorithm, Out};

    #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    struct Ping;

    impl Message for Ping {
        fn kind(&self) -> &str {
            "PING"
        }
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    enum Tick {
        Beat,
        Wait,
    }

    /// A heartbeat every 10 ms to the other node, counted; asking sets a timer that lets
    /// the application in. Its state is its id: all it does is outside it.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Beat(PeerId);

    impl Algorithm for Beat {
        type Msg = Ping;
        type Timer = Tick;
        fn new(cfg: &Config) -> Self {
            Beat(cfg.id)
        }
        fn on_start(&mut self, out: &mut Out<Ping, Tick>) {
            out.set_timer(Tick::Beat, Duration::from_millis(10));
        }
        fn on_want_cs(&mut self, out: &mut Out<Ping, Tick>) {
            out.set_timer(Tick::Wait, Duration::from_millis(5));
        }
        fn on_message(&mut self, _: PeerId, _: Ping, _: &mut Out<Ping, Tick>) {}
        fn on_cs_done(&mut self, _: &mut Out<Ping, Tick>) {}
        fn on_timer(&mut self, timer: Tick, out: &mut Out<Ping, Tick>) {
            if timer == Tick::Wait {
                out.enter_cs();
                return;
            }
            out.send(PeerId(1 - self.0 .0), Ping);
            out.count("beats", 1);
            out.set_timer(Tick::Beat, Duration::from_millis(10));
        }
    }

    fn world() -> World<Beat> {
        let mut w = World::new((0..2).map(|i| Config::new(i, 2)).collect(), 1).crashes(1, |_| true);
        w.start(&mut |_, _| {}).unwrap();
        w
    }

    fn after(choices: &[Choice]) -> World<Beat> {
        let mut w = world();
        for &c in choices {
            assert!(w.enabled().contains(&c), "{c:?} in {:?}", w.enabled());
            w.apply(c, &mut |_, _| {}).unwrap();
        }
        w
    }

    fn hash(w: &World<Beat>) -> u64 {
        RandomState::new().hash_one(w)
    }

    const fn deliver(from: u32, to: u32) -> Choice {
        Choice::Deliver { from, to, index: 0 }
    }

    const fn call(node: u32) -> Choice {
        Choice::Call { node, index: 0 }
    }

    #[test]
    fn one_state_reached_two_ways_is_one_value() {
        let start = world();
        // A heartbeat each way, the deliveries in either order: the protocol is where it
        // began, though the clock, the timers' sequence numbers and generations, the
        // messages sent and the counters all moved on.
        let beats = after(&[Choice::Timer, deliver(0, 1), Choice::Timer, deliver(1, 0)]);
        let crossed = after(&[Choice::Timer, Choice::Timer, deliver(1, 0), deliver(0, 1)]);
        assert_eq!((beats.now, start.now), (Duration::from_millis(10), Duration::ZERO));
        assert_eq!(beats.sent["PING"], 2);
        assert_eq!(beats.counters["beats"], 2);
        assert_eq!(beats, start);
        assert_eq!(crossed, beats);
        // Two applications ask in either order: their timers are armed in another
        // order, with other sequence numbers, and are one set.
        let (one, two) = (after(&[call(0), call(1)]), after(&[call(1), call(0)]));
        assert_ne!(one.timers[2].node, two.timers[2].node, "armed in another order");
        assert_eq!(one, two);
        let set: HashSet<World<Beat>> = [start.clone(), beats.clone(), crossed.clone()].into();
        assert_eq!(set.len(), 1, "one state in a set");
        let hasher = RandomState::new();
        assert_eq!(hasher.hash_one(&one), hasher.hash_one(&two));
        assert_eq!(hasher.hash_one(&beats), hasher.hash_one(&start));
    }

    #[test]
    fn states_the_protocol_can_tell_apart_differ() {
        let start = world();
        let in_flight = after(&[Choice::Timer]);
        let waiting = after(&[call(0)]);
        let inside = after(&[call(0), Choice::Timer]);
        let left = after(&[call(0), Choice::Timer, call(0)]);
        let crashed = after(&[Choice::Crash { node: 1 }]);
        let restarted = after(&[Choice::Crash { node: 1 }, Choice::Restart { node: 1 }]);
        // A PING in flight; an application waiting, its Wait timer armed; inside; done
        // with its entry; a node down; a node back as a new incarnation, with its peer
        // told and no crash left to spend.
        let all = [&start, &in_flight, &waiting, &inside, &left, &crashed, &restarted];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
                assert_ne!(hash(a), hash(b), "{a:?}\n{b:?}");
            }
        }
        // The same timers, one of them stale: not the same state.
        let mut stale = start.clone();
        stale.timers[0].live = false;
        assert_ne!(stale, start);
    }
}
