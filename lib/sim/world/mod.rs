//! The simulated world: every node behind its host, every message in flight, every
//! timer, every application, and nothing random.
//!
//! A [`World`] is a value (`Clone + Eq + Hash`, equal when the protocol cannot tell two
//! apart, whatever the clock and the tallies say): it lists what can happen next
//! ([`World::enabled`]) and does one of those things ([`World::apply`]). Whatever is left
//! open (which message is delivered, whether an application asks now, whether a node
//! crashes, whether a cancelled timer still fires once) is a [`Choice`] made outside,
//! by a scheduler: the seeded one in [`super::Sim`], a list of saved choices to replay
//! a run, or the checker's search that takes each in turn ([`crate::check`]).
//!
//! Rules of the world (the same as the worker runtime's):
//! - Channels are FIFO per ordered pair unless the world was made non-FIFO, and then any
//!   message in flight on a channel may be delivered first.
//! - Delivering a message or an application step takes no virtual time; only timers move
//!   the clock, and the timer that fires is the earliest one ([`Choice::Timer`]), or with
//!   [`World::any_timer`] any armed one ([`Choice::Fire`], the checker's default).
//! - With a loss budget ([`World::lose`]) any message in flight may be lost
//!   ([`Choice::Lose`]), that many times in all.
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
//! - With unnoticed restarts ([`World::unnoticed_restarts`]) news of crashes is as a
//!   heartbeat detector gives it, late or never: a live peer that has not yet heard that
//!   a node died hears nothing when it restarts (it missed the death: what it sent the
//!   dead node is lost, and nothing tells it so), and the fresh node hears of each dead
//!   peer later, by a [`Choice::Down`] of its own.

use std::collections::BTreeMap;
use std::hash::Hash;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use smallvec::{smallvec, SmallVec};

use super::app::{SimApps, SimService};
use super::event::{Lost, Observer, WorldEvent};
use super::Failure;
use crate::algorithm::{Config, Input, Message, Node, NodeInput, PeerId};
use crate::host::{Breach, Effect, Host, Step};

mod same;

/// One thing that can happen next. Serialisable, so a run is a list of choices that can
/// be saved and replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The earliest timer fires (the simulator's rule, and `--timers earliest`).
    Timer,
    /// Node `node`'s `index`-th armed timer (oldest first) fires, whichever is due first:
    /// with any-timer order on ([`World::any_timer`], the checker's default).
    Fire {
        /// The node whose timer fires.
        node: u32,
        /// Which of its armed timers, in the order they were armed.
        index: u32,
    },
    /// The `index`-th message in flight on the channel `from → to` is lost, never
    /// delivered (with a loss budget, [`World::lose`]).
    Lose {
        /// The sender.
        from: u32,
        /// The receiver.
        to: u32,
        /// Which message in flight on that channel.
        index: u32,
    },
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
/// [`World::stale_timers`], [`World::crashes`], [`World::any_timer`], [`World::lose`],
/// [`World::forget`], then [`World::start`]); stepping it
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
    /// Each host with its fingerprint ([`same::print`]), made again when the host
    /// changes: a search hashes the world after every step, and a step changes one host
    /// or two. Beside the host, not in a list of the world's own: 8 bytes a host on the
    /// heap, where a breadth-first level holds worlds by the hundred thousand.
    hosts: Vec<(Host<N>, u64)>,
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
    /// Any armed timer may fire, not only the earliest.
    any_timer: bool,
    /// Messages that may still be lost.
    lose_budget: u32,
    /// Timers that may still fire ([`World::timer_fires`]; `u32::MAX`: no bound).
    fire_budget: u32,
    /// The most any node's growing counter may be in a state that is expanded
    /// ([`World::counter_bound`]; `u64::MAX`: no bound).
    counter_bound: u64,
    /// After each step, every node forgets what no later step reads ([`Node::forget`]).
    forget: bool,
    /// Messages lost so far (a tally, not state).
    pub(super) lost_done: u32,
    /// Crashes still allowed, and which nodes may crash.
    crash_budget: u32,
    may_crash: Flags,
    pub(super) crashes_done: u32,
    /// A restart that a peer has not yet seen as a death is not news to it.
    unnoticed_restarts: bool,
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
            hosts: configs.into_iter().map(|c| same::printed(Host::new(c))).collect(),
            alive: smallvec![true; n],
            links: Vec::new(),
            down_due: smallvec![false; n * n],
            timers: Vec::new(),
            timer_seq: 0,
            now: Duration::ZERO,
            apps: Self::fresh_apps(n, rounds),
            sent: BTreeMap::new(),
            counters: BTreeMap::new(),
            tallies: true,
            fifo: true,
            stale_timers: false,
            any_timer: false,
            lose_budget: 0,
            fire_budget: u32::MAX,
            counter_bound: u64::MAX,
            forget: false,
            lost_done: 0,
            crash_budget: 0,
            may_crash: smallvec![false; n],
            crashes_done: 0,
            unnoticed_restarts: false,
        }
    }

    /// The same world with fresh applications that will do `rounds`.
    pub fn with_rounds(mut self, rounds: u32) -> Self {
        self.apps = Self::fresh_apps(self.n, rounds);
        self
    }

    /// Fresh applications of `n` nodes that will do `rounds`, told whether the nodes
    /// name leaders of their own.
    fn fresh_apps(n: usize, rounds: u32) -> <N::Service as SimService>::Apps {
        let mut apps = N::Service::apps(n, rounds);
        if N::OWN_LEADERS {
            apps.own_leaders();
        }
        apps
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

    /// Let any armed timer fire next ([`Choice::Fire`]), not only the earliest
    /// ([`Choice::Timer`]): a timeout may come before what it waits for however long it
    /// is, as in an asynchronous system.
    pub fn any_timer(mut self, on: bool) -> Self {
        self.any_timer = on;
        self
    }

    /// After each step let every node forget what no later step reads
    /// ([`Node::forget`]): fewer distinct states, the same behaviour.
    pub fn forget(mut self, on: bool) -> Self {
        self.forget = on;
        self
    }

    /// Allow up to `count` messages in flight to be lost, any one of them.
    pub fn lose(mut self, count: u32) -> Self {
        self.lose_budget = count;
        self
    }

    /// Let timers fire at most `count` times in all (`None`: no bound), stale ones
    /// included. A periodic timer or an early timeout can otherwise fire without end,
    /// each time sending more or raising a counter, so a search never ends; with a budget
    /// a state whose armed timers it holds back is at the bound ([`World::timers_held`]),
    /// not terminal.
    pub fn timer_fires(mut self, count: Option<u32>) -> Self {
        self.fire_budget = count.unwrap_or(u32::MAX);
        self
    }

    /// Expand no state where some node's growing counter ([`Node::counter`]: a clock,
    /// a ticket, a term) is above `bound` (`None`: no bound): nothing is enabled there.
    /// A state constraint, as TLC bounds models whose counters grow without end; such a
    /// state is at the bound ([`World::past_counter_bound`]), not terminal.
    pub fn counter_bound(mut self, bound: Option<u64>) -> Self {
        self.counter_bound = bound.unwrap_or(u64::MAX);
        self
    }

    /// Some live node's growing counter is above [`World::counter_bound`].
    pub fn past_counter_bound(&self) -> bool {
        self.counter_bound != u64::MAX
            && self
                .hosts
                .iter()
                .zip(self.alive.iter())
                .any(|((h, _), &up)| up && h.node().counter() > self.counter_bound)
    }

    /// Armed timers that the budget of [`World::timer_fires`] keeps from firing: what
    /// happens next is beyond the bound, so the state is not a terminal one.
    pub fn timers_held(&self) -> bool {
        self.fire_budget == 0 && !self.timers.is_empty()
    }

    /// Allow up to `count` crashes, each of a node `eligible` allows.
    pub fn crashes(mut self, count: u32, eligible: impl Fn(PeerId) -> bool) -> Self {
        self.crash_budget = count;
        self.may_crash = (0..self.n).map(|i| eligible(PeerId(i as u32))).collect();
        self
    }

    /// News of crashes as a heartbeat detector gives it (see the module doc): a restart
    /// is news only to the peers that heard of the death, and a fresh node hears of the
    /// dead peers by [`Choice::Down`], late. A message lost to a node that was down, then
    /// restarted before its sender noticed, is then a path the world can take.
    pub fn unnoticed_restarts(mut self, on: bool) -> Self {
        self.unnoticed_restarts = on;
        self
    }

    /// Start every node, telling `note` what happens.
    pub fn start(&mut self, note: &mut Observer<'_, N>) -> Result<(), Failure> {
        (0..self.n).try_for_each(|i| self.input(i, Input::Start, note))?;
        self.forget_dead_fields();
        Ok(())
    }

    fn forget_dead_fields(&mut self) {
        if self.forget {
            (0..self.n).for_each(|i| {
                self.hosts[i].0.forget();
                self.reprint(i);
            });
        }
    }

    /// Host `i` changed: its fingerprint again.
    fn reprint(&mut self, i: usize) {
        let (host, print) = &mut self.hosts[i];
        *print = same::print(host);
    }

    /// Node `id`.
    pub fn node(&self, id: u32) -> &N {
        self.hosts[id as usize].0.node()
    }

    /// Node `id`'s host: what the driver knows of it (incarnation, who it was told is
    /// down, its application).
    pub fn host(&self, id: u32) -> &Host<N> {
        &self.hosts[id as usize].0
    }

    /// Every timer armed, oldest first, as `(node, timer, live)`: `live` is false for a
    /// reset or cancelled one that may still fire once (stale timers).
    pub fn timers(&self) -> impl Iterator<Item = (PeerId, &N::Timer, bool)> + '_ {
        self.timers.iter().map(|t| (t.node, &t.timer, t.live))
    }

    /// The number of nodes.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Which nodes are up (not crashed, or restarted since), by id.
    pub fn alive(&self) -> &[bool] {
        &self.alive
    }

    /// The applications, to read (what an invariant of the checker's may look at).
    pub fn apps(&self) -> &<N::Service as SimService>::Apps {
        &self.apps
    }

    /// Put `msg` in flight from `from` to `to`, behind what is there (tests build
    /// worlds with it).
    #[cfg(test)]
    pub(crate) fn push_in_flight(&mut self, from: u32, to: u32, msg: N::Msg) {
        let l = from * self.n as u32 + to;
        let end = self.links.partition_point(|&(k, _)| k <= l);
        self.links.insert(end, (l, msg));
    }

    /// Every message in flight, as `(from, to, message)`, channel by channel in order.
    pub fn in_flight(&self) -> impl Iterator<Item = (PeerId, PeerId, &N::Msg)> + '_ {
        let n = self.n as u32;
        self.links.iter().map(move |(l, m)| (PeerId(l / n), PeerId(l % n), m))
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
            .map(|i| (PeerId(i as u32), self.hosts[i].0.node().waiting_for()))
            .collect()
    }

    /// Everything that can happen next, in a fixed order. Undecided stale timers come
    /// alone: their fate is settled before anything else happens.
    pub fn enabled(&self) -> Vec<Choice> {
        if self.past_counter_bound() {
            return Vec::new();
        }
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
        for (l, index) in self.link_indices() {
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
            let calls = self.apps.call_count(i) as u32;
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
        if self.lose_budget > 0 {
            let lose = |(l, index)| Choice::Lose { from: l / n, to: l % n, index };
            out.extend(self.link_indices().map(lose));
        }
        if self.fire_budget == 0 {
            // The budget is spent: no timer fires (see `timers_held`).
        } else if self.any_timer && !self.timers.is_empty() {
            let mut armed: SmallVec<[u32; 16]> = smallvec![0; self.n];
            for t in &self.timers {
                let node = t.node.0;
                out.push(Choice::Fire { node, index: armed[node as usize] });
                armed[node as usize] += 1;
            }
        } else if !self.timers.is_empty() {
            out.push(Choice::Timer);
        }
        out
    }

    /// Do `choice`, which must be one of [`World::enabled`]'s, telling `note` each thing
    /// that happens ([`WorldEvent`]: for traces). An error is a failure of the algorithm.
    pub fn apply(&mut self, choice: Choice, note: &mut Observer<'_, N>) -> Result<(), Failure> {
        self.take(choice, note)?;
        self.forget_dead_fields();
        Ok(())
    }

    fn take(&mut self, choice: Choice, note: &mut Observer<'_, N>) -> Result<(), Failure> {
        match choice {
            Choice::Deliver { from, to, index } => {
                let first = self.link_start(from * self.n as u32 + to);
                let (_, msg) = self.links.remove(first + index as usize);
                let (from, to) = (PeerId(from), PeerId(to));
                note(self.now, &WorldEvent::Delivered { from, to, index, msg: &msg });
                self.input(to.index(), Input::Message { from, msg }, note)
            }
            Choice::Down { from, to } => {
                self.down_due[(from as usize) * self.n + to as usize] = false;
                note(self.now, &WorldEvent::HearsDown { node: PeerId(to), peer: PeerId(from) });
                self.input(to as usize, Input::PeerDown { peer: PeerId(from) }, note)
            }
            Choice::Call { node, index } => {
                let i = node as usize;
                let call = self.apps.calls(i).swap_remove(index as usize);
                let act = self.apps.call(i, &call);
                note(self.now, &WorldEvent::App { node: PeerId(node), act });
                self.input(i, Input::Call { call }, note)
            }
            Choice::Timer => {
                let k = (0..self.timers.len())
                    .min_by_key(|&k| (self.timers[k].at, self.timers[k].seq))
                    .expect("an enabled timer");
                self.fire(k, note)
            }
            Choice::Fire { node, index } => {
                let k = (0..self.timers.len())
                    .filter(|&k| self.timers[k].node.0 == node)
                    .nth(index as usize)
                    .expect("an enabled timer");
                self.fire(k, note)
            }
            Choice::Lose { from, to, index } => {
                let first = self.link_start(from * self.n as u32 + to);
                let (_, msg) = self.links.remove(first + index as usize);
                self.lose_budget -= 1;
                self.lost_done += 1;
                let (from, to) = (PeerId(from), PeerId(to));
                note(self.now, &WorldEvent::Lost { from, to, msg: &msg, why: Lost::Network { index } });
                Ok(())
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

    /// Each message in flight as its channel and its place on that channel, in order.
    fn link_indices(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let mut index = 0;
        self.links.iter().enumerate().map(move |(k, &(l, _))| {
            index = if k > 0 && self.links[k - 1].0 == l { index + 1 } else { 0 };
            (l, index)
        })
    }

    /// Where channel `l`'s messages begin in `links` (or would).
    fn link_start(&self, l: u32) -> usize {
        self.links.partition_point(|&(k, _)| k < l)
    }

    fn link_empty(&self, l: u32) -> bool {
        self.links.get(self.link_start(l)).is_none_or(|&(k, _)| k != l)
    }

    /// Drop channel `l`'s messages, each reported lost for `why`.
    fn clear_link(&mut self, l: u32, why: Lost, note: &mut Observer<'_, N>) {
        let n = self.n as u32;
        let (start, end) = (self.link_start(l), self.links.partition_point(|&(k, _)| k <= l));
        for (_, msg) in self.links.drain(start..end) {
            note(self.now, &WorldEvent::Lost { from: PeerId(l / n), to: PeerId(l % n), msg: &msg, why });
        }
    }

    /// Timer `k` of the list fires (a stale one is delivered once anyway); the clock
    /// moves to its time if that is later.
    fn fire(&mut self, k: usize, note: &mut Observer<'_, N>) -> Result<(), Failure> {
        let t = self.timers.remove(k);
        if self.fire_budget != u32::MAX {
            self.fire_budget -= 1;
        }
        self.now = self.now.max(t.at);
        let i = t.node.index();
        if t.live {
            note(self.now, &WorldEvent::TimerFires { node: t.node, timer: &t.timer, stale: false });
            let step = self.hosts[i].0.fire(self.now, &t.timer, t.generation);
            self.reprint(i);
            match step {
                Some(step) => self.carry(i, step, note),
                None => Ok(()),
            }
        } else {
            // Reset or cancelled, delivered once anyway, as the contract allows.
            note(self.now, &WorldEvent::TimerFires { node: t.node, timer: &t.timer, stale: true });
            self.input(i, Input::Timer { timer: t.timer }, note)
        }
    }

    /// Hand node `i` one input through its host, and carry out what it asks.
    fn input(&mut self, i: usize, input: NodeInput<N>, note: &mut Observer<'_, N>) -> Result<(), Failure> {
        let step = self.hosts[i].0.step(self.now, input);
        self.reprint(i);
        self.carry(i, step, note)
    }

    /// Carry out what node `i` asked for. A breach of the contract is a failure.
    fn carry(&mut self, i: usize, step: Step<N>, note: &mut Observer<'_, N>) -> Result<(), Failure> {
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
                    note(self.now, &WorldEvent::Sent { from: me, to, msg: &msg });
                    // Counted as sent, as the runtime counts it, but a dead process reads
                    // nothing.
                    if self.alive[to.index()] {
                        let l = (i * self.n + to.index()) as u32;
                        let end = self.links.partition_point(|&(k, _)| k <= l);
                        self.links.insert(end, (l, msg));
                    } else {
                        note(
                            self.now,
                            &WorldEvent::Lost { from: me, to, msg: &msg, why: Lost::ReceiverDead },
                        );
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
                    let (act, judged) = self.apps.event(i, &event);
                    match judged {
                        Ok(()) => note(self.now, &WorldEvent::App { node: me, act }),
                        Err(failure) => {
                            note(self.now, &WorldEvent::Broke { node: me, act });
                            return Err(failure);
                        }
                    }
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

    fn crash(&mut self, i: usize, note: &mut Observer<'_, N>) {
        let me = PeerId(i as u32);
        note(self.now, &WorldEvent::Crashes { node: me });
        self.crash_budget -= 1;
        self.crashes_done += 1;
        self.alive[i] = false;
        self.apps.crash(i);
        self.timers.retain(|t| t.node != me);
        for j in 0..self.n {
            // Nothing reaches a dead node, news of others' deaths included.
            self.clear_link((j * self.n + i) as u32, Lost::ReceiverCrashed, note);
            self.down_due[j * self.n + i] = false;
            if j != i && self.alive[j] {
                self.down_due[i * self.n + j] = true;
            }
        }
    }

    fn restart(&mut self, i: usize, note: &mut Observer<'_, N>) -> Result<(), Failure> {
        let me = PeerId(i as u32);
        let mut cfg = self.hosts[i].0.config().clone();
        cfg.incarnation += 1;
        note(self.now, &WorldEvent::Restarts { node: me, incarnation: cfg.incarnation });
        self.hosts[i] = same::printed(Host::new(cfg));
        self.alive[i] = true;
        for j in (0..self.n).filter(|&j| j != i) {
            if self.alive[j] {
                let l = i * self.n + j;
                let peer = PeerId(j as u32);
                if self.down_due[l] {
                    // The runtime drops the old connection when the new one says hello.
                    self.clear_link(l as u32, Lost::SenderRestarted, note);
                    self.down_due[l] = false;
                    if self.unnoticed_restarts {
                        continue; // It never saw the death, so the return is no news.
                    }
                    note(self.now, &WorldEvent::HearsDown { node: peer, peer: me });
                    self.input(j, Input::PeerDown { peer: me }, note)?;
                }
                note(self.now, &WorldEvent::HearsUp { node: peer, peer: me });
                self.input(j, Input::PeerUp { peer: me }, note)?;
            }
        }
        self.input(i, Input::Start, note)?;
        let dead: Vec<usize> = (0..self.n).filter(|&j| j != i && !self.alive[j]).collect();
        for j in dead {
            if self.unnoticed_restarts {
                self.down_due[j * self.n + i] = true; // Its detector will tell it, later.
                continue;
            }
            self.down_due[j * self.n + i] = false;
            note(self.now, &WorldEvent::HearsDown { node: me, peer: PeerId(j as u32) });
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
    fn a_timer_budget_stops_timers_once_spent_and_is_part_of_the_state() {
        let configs = || (0..2).map(|i| Config::new(i, 2)).collect::<Vec<_>>();
        let timer =
            |w: &World<Beat>| w.enabled().iter().any(|c| matches!(c, Choice::Timer | Choice::Fire { .. }));
        for any in [false, true] {
            let mut w = World::<Beat>::new(configs(), 1).any_timer(any).timer_fires(Some(1));
            w.start(&mut |_, _| {}).unwrap();
            assert!(timer(&w) && !w.timers_held());
            let fire = w.enabled().into_iter().find(|c| matches!(c, Choice::Timer | Choice::Fire { .. }));
            let before = w.clone();
            w.apply(fire.unwrap(), &mut |_, _| {}).unwrap();
            // Spent: the re-armed heartbeats wait, and the state says the bound holds them.
            assert!(!timer(&w) && w.timers_held(), "any = {any}");
            assert_ne!(w.fire_budget, before.fire_budget);
        }
        // No budget: timers fire on and on, and nothing is ever held.
        let mut w = World::<Beat>::new(configs(), 1).timer_fires(None);
        w.start(&mut |_, _| {}).unwrap();
        for _ in 0..10 {
            w.apply(Choice::Timer, &mut |_, _| {}).unwrap();
        }
        assert!(timer(&w) && !w.timers_held());
    }

    #[test]
    fn with_any_timer_order_a_later_timer_may_fire_first() {
        let mut w = World::<Beat>::new((0..2).map(|i| Config::new(i, 2)).collect(), 1).any_timer(true);
        w.start(&mut |_, _| {}).unwrap();
        w.apply(call(0), &mut |_, _| {}).unwrap();
        // w0 has its Beat (10 ms) and its Wait (5 ms) armed, w1 its Beat: each may fire.
        let fires: Vec<Choice> =
            w.enabled().into_iter().filter(|c| matches!(c, Choice::Fire { .. })).collect();
        let fire = |node, index| Choice::Fire { node, index };
        assert_eq!(fires, [fire(0, 0), fire(1, 0), fire(0, 1)]);
        assert!(!w.enabled().contains(&Choice::Timer));
        // The Beat before the Wait: a PING goes out while w0 still waits.
        let mut notes = Vec::new();
        w.apply(fire(0, 0), &mut |_, l| {
            if l.is_note() {
                notes.push(l.to_string())
            }
        })
        .unwrap();
        assert_eq!(notes, ["w0 timer Beat fires"]);
        assert_eq!(w.links.iter().filter(|(l, _)| *l == 1).count(), 1);
        // Earliest first (the simulator) offers one timer choice, and it is the Wait.
        let mut early = after(&[call(0)]);
        assert!(!early.enabled().iter().any(|c| matches!(c, Choice::Fire { .. })));
        let mut notes = Vec::new();
        early
            .apply(Choice::Timer, &mut |_, l| {
                if l.is_note() {
                    notes.push(l.to_string())
                }
            })
            .unwrap();
        assert_eq!(notes[0], "w0 timer Wait fires");
    }

    #[test]
    fn a_loss_budget_lets_any_message_in_flight_be_lost_that_often() {
        let mut w = World::<Beat>::new((0..2).map(|i| Config::new(i, 2)).collect(), 1).lose(1);
        w.start(&mut |_, _| {}).unwrap();
        let none_yet = w.clone();
        assert!(!w.enabled().iter().any(|c| matches!(c, Choice::Lose { .. })), "nothing in flight");
        w.apply(Choice::Timer, &mut |_, _| {}).unwrap();
        let lose = Choice::Lose { from: 0, to: 1, index: 0 };
        assert!(w.enabled().contains(&lose));
        w.apply(lose, &mut |_, _| {}).unwrap();
        assert!(w.links.is_empty());
        assert_eq!((w.lost_done, w.sent["PING"]), (1, 1), "sent, and lost");
        // The budget is spent: a second PING cannot be lost, and the state says so.
        w.apply(Choice::Timer, &mut |_, _| {}).unwrap();
        assert!(!w.enabled().iter().any(|c| matches!(c, Choice::Lose { .. })));
        assert_ne!(w.lose_budget, none_yet.lose_budget);
    }

    /// The losses `choices` report, after `start`, as (from, to, why).
    fn losses(mut w: World<Beat>, choices: &[Choice]) -> (World<Beat>, Vec<(u32, u32, Lost)>) {
        let mut lost = Vec::new();
        for &c in choices {
            w.apply(c, &mut |_, e| {
                if let WorldEvent::Lost { from, to, why, .. } = e {
                    lost.push((from.0, to.0, *why));
                }
            })
            .unwrap();
        }
        (w, lost)
    }

    #[test]
    fn messages_dropped_at_a_crash_or_a_restart_are_reported_lost_and_leave_the_links() {
        // w0's PING is in flight to w1 when w1 crashes: lost, and nothing else is.
        let (w, lost) = losses(world(), &[Choice::Timer, Choice::Crash { node: 1 }]);
        assert_eq!(lost, [(0, 1, Lost::ReceiverCrashed)]);
        assert!(w.links.is_empty() && w.in_flight().count() == 0);
        // w0 sends, crashes (its PING still goes), restarts before w1 heard: the old
        // life's connection is dropped with its PING.
        let (w, lost) = losses(world(), &[Choice::Timer, Choice::Crash { node: 0 }]);
        assert!(lost.is_empty());
        assert_eq!(w.in_flight().map(|(f, t, _)| (f.0, t.0)).collect::<Vec<_>>(), [(0, 1)]);
        let (w, lost) = losses(w, &[Choice::Restart { node: 0 }]);
        assert_eq!(lost, [(0, 1, Lost::SenderRestarted)]);
        assert!(w.links.is_empty());
    }

    /// Every host's kept fingerprint is the one made afresh.
    fn prints_kept(w: &World<Beat>) -> bool {
        w.hosts.iter().all(|(h, p)| *p == same::print(h))
    }

    #[test]
    fn each_host_keeps_its_own_fingerprint_through_every_kind_of_step() {
        // Timers, calls, deliveries, a crash and a restart, forgetting on: after each
        // step the prints kept are the hosts' own.
        let mut w =
            World::new((0..2).map(|i| Config::new(i, 2)).collect(), 1).crashes(1, |_| true).forget(true);
        w.start(&mut |_, _| {}).unwrap();
        assert!(prints_kept(&w));
        let steps =
            [call(0), Choice::Timer, Choice::Timer, deliver(0, 1), call(0), Choice::Crash { node: 1 }];
        for c in steps.into_iter().chain([Choice::Restart { node: 1 }, Choice::Timer]) {
            w.apply(c, &mut |_, _| {}).unwrap();
            assert!(prints_kept(&w), "after {c:?}");
        }
        // A world rebuilt from the same choices hashes the same.
        let h = RandomState::new();
        assert_eq!(
            h.hash_one(after(&[call(0), Choice::Timer])),
            h.hash_one(after(&[call(0), Choice::Timer]))
        );
        // Negative control: a host changed behind the world's back keeps a stale print,
        // and the check sees it.
        let mut stale = world();
        stale.hosts[1].0 = Host::new(Config { incarnation: 1, ..Config::new(1, 2) });
        assert!(!prints_kept(&stale));
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
