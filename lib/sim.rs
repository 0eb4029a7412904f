//! A deterministic in-process simulator that runs N copies of one algorithm and checks them.
//!
//! The simulator is a third driver of the sans-IO state machines (after the worker runtime
//! and the hand-written unit tests). It keeps every node, every message in flight and
//! every timer in one thread, and lets a seeded [`ChaCha8Rng`] decide, step by step, what
//! happens next: which in-flight message is delivered, which application asks for the
//! critical section, which one leaves it, or whether virtual time jumps to the next timer.
//! The same seed always gives the same run, so any failure can be replayed exactly.
//!
//! ```
//! use mutexlab::algos::centralized::Centralized;
//! use mutexlab::sim::Sim;
//!
//! // Three nodes, seed 7, every node enters the critical section twice.
//! let report = Sim::<Centralized>::new(3, 7).run(2).expect("no violation");
//! assert_eq!(report.entries, 6);
//! ```
//!
//! API in brief:
//! - [`Sim::new`]`(n, seed)` builds the nodes with [`Config::new`] plus the seed;
//!   [`Sim::with_config`] takes a closure that adjusts each node's [`Config`] first
//!   (e.g. `replicas`).
//! - Knobs, all optional: [`Sim::non_fifo`] lets any in-flight message on a channel
//!   overtake the ones before it; [`Sim::stale_timers`] makes cancelled or reset timers
//!   sometimes fire once anyway, as the driver contract allows; [`Sim::max_steps`] bounds
//!   the run (a livelock shows up as [`Failure::StepLimit`]); [`Sim::crashes`] lets up
//!   to k nodes (of those a predicate allows) crash and restart, as the worker runtime
//!   and the supervisor's faults make them.
//! - [`Sim::run`]`(entries_per_node)` drives the run until every application has been
//!   inside `entries_per_node` times and no message is left in flight. It returns a
//!   [`SimReport`] (entries, messages sent by kind, steps) or a [`SimError`] naming the
//!   seed, the step and the failure, with the last events that led to it.
//! - [`Sim::node`] gives read access to a node afterwards, for algorithm-specific counters.
//! - [`sweep`] runs many sizes and seeds (stale timers on) and hands each report to a
//!   check, panicking with the replayable error of the first failed run.
//!
//! What a run checks:
//! - safety: never two applications inside at once ([`Failure::Overlap`]);
//! - the driver contract: no `EnterCs` for an application that did not ask
//!   ([`Failure::UnaskedEnter`]), no message to oneself ([`Failure::SelfSend`]) or to a
//!   node that does not exist ([`Failure::NoSuchPeer`]);
//! - liveness: if nothing can happen (no message in flight, no timer set) while some
//!   application still waits, the run is stuck ([`Failure::Deadlock`], with each waiting
//!   node's [`Node::waiting_for`]); a run that keeps going without finishing hits the
//!   step limit.
//!
//! Model of time: delivering a message or running an application step takes no virtual
//! time; only timers move the clock. Each step picks uniformly among everything that can
//! happen. "Fire the earliest timer" is always among the choices when no message is in
//! flight, but only on one step in eight while some are: timers (back-offs, say) are
//! meant to be long next to message delays, yet a timer may still race a message. With
//! timers weighted like messages, no back-off could outlast a message in flight and
//! back-off algorithms would livelock in the simulator only. Channels are FIFO per
//! ordered pair unless [`Sim::non_fifo`] is set. Broadcasts count as one message per
//! receiver, as on the wire.
//!
//! Crashes (only with [`Sim::crashes`]), as the worker runtime presents them: a crashed
//! node stops at once (its application's request or section is gone, its timers too);
//! what it sent before is still delivered, and then each live peer is told
//! `on_peer_down`; messages to it are lost. Some steps later it restarts as a fresh
//! node (`Config::incarnation` one higher) that finishes the entries left; every live
//! peer is told `on_peer_down` (if it has not been yet, and then the old incarnation's
//! undelivered messages are dropped, as the runtime drops the old connection) and
//! `on_peer_up`, and the fresh node is told `on_peer_down` for every peer that is dead
//! then. A run ends only when every node is alive and done.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::algorithm::{Config, Input, Message, Mutex, MutexCall, MutexEvent, Node, NodeInput, PeerId};
use crate::host::{Breach, Effect, Host, Step};

/// How many recent events a [`SimError`] carries.
const TRACE_LEN: usize = 40;

/// While messages are in flight, a timer may fire on one step in this many.
const TIMER_RACE: u32 = 8;

/// A crash or a restart is a candidate on one step in this many.
const CRASH_RARITY: u32 = 16;

/// What an application is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum App {
    /// Outside the critical section, not asking.
    Idle,
    /// Asked and not yet let in.
    Waiting,
    /// Inside the critical section.
    Inside,
}

/// A timer that is set (or a stale one that will fire once more).
#[derive(Debug)]
struct SetTimer<T> {
    node: PeerId,
    timer: T,
    /// The host's generation for this arming.
    generation: u64,
    at: Duration,
    /// Tie-break among timers due at the same time: the order they were set in.
    seq: u64,
    /// False for a cancelled or reset timer that is delivered once anyway.
    live: bool,
}

/// One thing that can happen next.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// Deliver a message on the channel `from → to`.
    Deliver { from: usize, to: usize },
    /// Application `i` asks for the critical section.
    Want(usize),
    /// Application `i` leaves the critical section.
    Leave(usize),
    /// The earliest timer fires.
    Timer,
    /// Node `i` crashes.
    Crash(usize),
    /// Crashed node `i` starts again with fresh state.
    Restart(usize),
    /// `to` learns that `from` is down (its channel has drained).
    Down { from: usize, to: usize },
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// Two applications were inside the critical section at once.
    #[error("mutual exclusion violated: {entering} entered while {inside} was inside")]
    Overlap {
        /// The one already inside.
        inside: PeerId,
        /// The one let in.
        entering: PeerId,
    },
    /// The algorithm let in an application that had not asked (or was already inside).
    #[error("{node} pushed EnterCs but its application was not waiting")]
    UnaskedEnter {
        /// The node.
        node: PeerId,
    },
    /// The algorithm sent a message to its own node over the network.
    #[error("{node} sent {kind} to itself")]
    SelfSend {
        /// The node.
        node: PeerId,
        /// The message kind.
        kind: String,
    },
    /// The algorithm sent a message to an id outside `0..n`.
    #[error("{node} sent {kind} to {to}, which does not exist")]
    NoSuchPeer {
        /// The sender.
        node: PeerId,
        /// The bad address.
        to: PeerId,
        /// The message kind.
        kind: String,
    },
    /// The driver broke the contract (a bug in the simulator itself).
    #[error("{node}: {breach}")]
    Driver {
        /// The node.
        node: PeerId,
        /// What went wrong.
        breach: Breach,
    },
    /// Nothing can happen, but some applications still wait.
    #[error("deadlock: nothing in flight, no timer set, and still waiting: {}", describe(waiting))]
    Deadlock {
        /// Each waiting node with what it says it waits for.
        waiting: Vec<(PeerId, String)>,
    },
    /// The run went on for too long without finishing (livelock or starvation).
    #[error("no completion after {steps} steps; still waiting: {}", describe(waiting))]
    StepLimit {
        /// The step limit.
        steps: u64,
        /// Each waiting node with what it says it waits for.
        waiting: Vec<(PeerId, String)>,
    },
}

fn describe(waiting: &[(PeerId, String)]) -> String {
    let parts: Vec<String> = waiting
        .iter()
        .map(|(p, s)| if s.is_empty() { p.to_string() } else { format!("{p} ({s})") })
        .collect();
    parts.join(", ")
}

/// A failed run: what went wrong, when, and the seed that replays it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimError {
    /// The seed of the run; `Sim::new(n, seed)` with the same knobs replays it.
    pub seed: u64,
    /// Number of nodes.
    pub n: u32,
    /// The step at which the failure was seen.
    pub step: u64,
    /// What went wrong.
    pub failure: Failure,
    /// The last events before the failure, oldest first.
    pub trace: Vec<String>,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {} (n = {}), step {}: {}", self.seed, self.n, self.step, self.failure)?;
        writeln!(f, "replay with Sim::new({}, {}); last events:", self.n, self.seed)?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SimError {}

/// What a successful run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimReport {
    /// Number of nodes.
    pub n: u32,
    /// The seed of the run.
    pub seed: u64,
    /// Critical-section entries, all nodes together.
    pub entries: u64,
    /// Entries per node, by id.
    pub entries_by_node: Vec<u64>,
    /// Messages sent over the network, by kind (a broadcast counts once per receiver).
    pub messages: BTreeMap<String, u64>,
    /// The algorithms' own counts (`Count` outputs), summed over nodes.
    pub counters: BTreeMap<String, u64>,
    /// Scheduling steps taken.
    pub steps: u64,
    /// Virtual time at the end.
    pub elapsed: Duration,
    /// Crashes that happened (each followed by a restart).
    pub crashes: u32,
}

impl SimReport {
    /// All messages sent.
    pub fn total_messages(&self) -> u64 {
        self.messages.values().sum()
    }

    /// Messages of one kind (0 if none was sent).
    pub fn count(&self, kind: &str) -> u64 {
        self.messages.get(kind).copied().unwrap_or(0)
    }

    /// One of the algorithms' counters (0 if never counted).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    /// Messages per critical-section entry, averaged over the run.
    pub fn per_entry(&self) -> f64 {
        if self.entries == 0 {
            0.0
        } else {
            self.total_messages() as f64 / self.entries as f64
        }
    }
}

/// The simulator: N nodes of algorithm `A`, their applications, channels and timers.
pub struct Sim<A: Node<Service = Mutex>> {
    n: usize,
    seed: u64,
    rng: ChaCha8Rng,
    /// Each node behind the host that keeps the driver contract.
    nodes: Vec<Host<A>>,
    fifo: bool,
    stale_timers: bool,
    max_steps: u64,
    now: Duration,
    /// Messages in flight, one queue per ordered pair, indexed `from * n + to`.
    links: Vec<VecDeque<A::Msg>>,
    timers: Vec<SetTimer<A::Timer>>,
    timer_seq: u64,
    apps: Vec<App>,
    /// Entries each application still wants.
    left: Vec<u32>,
    entries: Vec<u64>,
    inside: Option<PeerId>,
    sent: BTreeMap<String, u64>,
    counters: BTreeMap<String, u64>,
    step: u64,
    trace: VecDeque<String>,
    /// Each node's configuration, to build it again on a restart.
    configs: Vec<Config>,
    alive: Vec<bool>,
    /// Crashes still allowed, and which nodes may crash.
    crash_budget: u32,
    may_crash: Vec<bool>,
    /// `from * n + to`: `from` is dead and `to` is to hear so once the link drains.
    down_due: Vec<bool>,
    crashes_done: u32,
}

impl<A: Node<Service = Mutex>> Sim<A> {
    /// `n` nodes with [`Config::new`] and the given seed.
    pub fn new(n: u32, seed: u64) -> Self {
        Self::with_config(n, seed, |_| {})
    }

    /// `n` nodes whose configurations `tweak` adjusts (after id, n and seed are set).
    pub fn with_config(n: u32, seed: u64, tweak: impl Fn(&mut Config)) -> Self {
        let configs: Vec<Config> = (0..n)
            .map(|i| {
                let mut cfg = Config::new(i, n);
                cfg.seed = seed;
                tweak(&mut cfg);
                cfg
            })
            .collect();
        let nodes = configs.iter().cloned().map(Host::new).collect();
        let n = n as usize;
        Sim {
            n,
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            nodes,
            fifo: true,
            stale_timers: false,
            max_steps: 200_000,
            now: Duration::ZERO,
            links: (0..n * n).map(|_| VecDeque::new()).collect(),
            timers: Vec::new(),
            timer_seq: 0,
            apps: vec![App::Idle; n],
            left: vec![0; n],
            entries: vec![0; n],
            inside: None,
            sent: BTreeMap::new(),
            counters: BTreeMap::new(),
            step: 0,
            trace: VecDeque::new(),
            configs,
            alive: vec![true; n],
            crash_budget: 0,
            may_crash: vec![false; n],
            down_due: vec![false; n * n],
            crashes_done: 0,
        }
    }

    /// Let up to `count` crashes happen, each to a node `eligible` allows, each followed
    /// later by a restart of that node.
    pub fn crashes(mut self, count: u32, eligible: impl Fn(PeerId) -> bool) -> Self {
        self.crash_budget = count;
        self.may_crash = (0..self.n).map(|i| eligible(PeerId(i as u32))).collect();
        self
    }

    /// Let any message in flight on a channel be delivered first, not only the oldest.
    pub fn non_fifo(mut self) -> Self {
        self.fifo = false;
        self
    }

    /// When on, a cancelled or reset timer fires once anyway with probability 1/4.
    pub fn stale_timers(mut self, on: bool) -> Self {
        self.stale_timers = on;
        self
    }

    /// Fail with [`Failure::StepLimit`] after this many steps (default 200 000).
    pub fn max_steps(mut self, steps: u64) -> Self {
        self.max_steps = steps;
        self
    }

    /// Node `id`, to read its state after (or before) a run.
    pub fn node(&self, id: u32) -> &A {
        self.nodes[id as usize].node()
    }

    /// Run until every application has entered `entries_per_node` times and no message is
    /// in flight, checking safety and liveness on the way. Call once per `Sim`.
    pub fn run(&mut self, entries_per_node: u32) -> Result<SimReport, SimError> {
        self.left = vec![entries_per_node; self.n];
        for i in 0..self.n {
            self.input(i, Input::Start)?;
        }
        loop {
            let events = self.enabled();
            let done = self.left.iter().all(|&l| l == 0)
                && self.apps.iter().all(|&a| a == App::Idle)
                && self.alive.iter().all(|&a| a);
            let in_flight = self.links.iter().any(|l| !l.is_empty());
            if done && !in_flight {
                break;
            }
            if events.is_empty() {
                return Err(self.fail(Failure::Deadlock { waiting: self.waiting() }));
            }
            if self.step >= self.max_steps {
                return Err(self.fail(Failure::StepLimit { steps: self.max_steps, waiting: self.waiting() }));
            }
            self.step += 1;
            let ev = events[self.rng.random_range(0..events.len())];
            self.execute(ev)?;
        }
        Ok(SimReport {
            n: self.n as u32,
            seed: self.seed,
            entries: self.entries.iter().sum(),
            entries_by_node: self.entries.clone(),
            messages: self.sent.clone(),
            counters: self.counters.clone(),
            steps: self.step,
            elapsed: self.now,
            crashes: self.crashes_done,
        })
    }

    /// Everything that could happen next, in a fixed order (so the seed decides).
    fn enabled(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        for from in 0..self.n {
            for to in 0..self.n {
                if !self.links[from * self.n + to].is_empty() {
                    events.push(Event::Deliver { from, to });
                }
            }
        }
        for from in 0..self.n {
            for to in 0..self.n {
                let l = from * self.n + to;
                if self.down_due[l] && self.links[l].is_empty() {
                    events.push(Event::Down { from, to });
                }
            }
        }
        for i in 0..self.n {
            match self.apps[i] {
                _ if !self.alive[i] => {}
                App::Idle if self.left[i] > 0 => events.push(Event::Want(i)),
                App::Inside => events.push(Event::Leave(i)),
                _ => {}
            }
        }
        // Crashes and restarts are rare next to everything else. A dead node is always
        // restarted eventually (when nothing else can happen, that is the only choice),
        // but a crash never stands in for nothing happening: a deadlock stays one.
        let stuck = events.is_empty();
        let rare = self.crash_budget > 0 || self.alive.contains(&false);
        let rare = rare && self.rng.random_range(0..CRASH_RARITY) == 0;
        for i in 0..self.n {
            if !self.alive[i] && (stuck || rare) {
                events.push(Event::Restart(i));
            } else if self.alive[i] && self.may_crash[i] && self.crash_budget > 0 && !stuck && rare {
                events.push(Event::Crash(i));
            }
        }
        // Timers are slow next to messages: with the network quiet the next timer is
        // always a candidate, with messages in flight only on one step in TIMER_RACE.
        let quiet = events.iter().all(|e| !matches!(e, Event::Deliver { .. }));
        if !self.timers.is_empty() && (quiet || self.rng.random_range(0..TIMER_RACE) == 0) {
            events.push(Event::Timer);
        }
        events
    }

    fn execute(&mut self, ev: Event) -> Result<(), SimError> {
        match ev {
            Event::Deliver { from, to } => {
                let link = &mut self.links[from * self.n + to];
                let k = if self.fifo { 0 } else { self.rng.random_range(0..link.len()) };
                let msg = link.remove(k).expect("the link is not empty");
                self.note(format!("{} -> {}: {:?}", PeerId(from as u32), PeerId(to as u32), msg));
                self.input(to, Input::Message { from: PeerId(from as u32), msg })
            }
            Event::Want(i) => {
                self.note(format!("{} wants the critical section", PeerId(i as u32)));
                self.apps[i] = App::Waiting;
                self.input(i, Input::Call { call: MutexCall::Want })
            }
            Event::Leave(i) => {
                self.note(format!("{} leaves the critical section", PeerId(i as u32)));
                self.apps[i] = App::Idle;
                self.left[i] -= 1;
                self.entries[i] += 1;
                self.inside = None;
                self.input(i, Input::Call { call: MutexCall::Done })
            }
            Event::Timer => {
                let k = (0..self.timers.len())
                    .min_by_key(|&k| (self.timers[k].at, self.timers[k].seq))
                    .expect("a timer is set");
                let t = self.timers.remove(k);
                self.now = self.now.max(t.at);
                let i = t.node.index();
                if t.live {
                    self.note(format!("{} timer {:?} fires", t.node, t.timer));
                    match self.nodes[i].fire(self.now, &t.timer, t.generation) {
                        Some(step) => self.apply(i, step),
                        None => Ok(()),
                    }
                } else {
                    // Reset or cancelled, delivered once anyway, as the contract allows.
                    self.note(format!("{} timer {:?} fires (stale)", t.node, t.timer));
                    self.input(i, Input::Timer { timer: t.timer })
                }
            }
            Event::Down { from, to } => {
                self.down_due[from * self.n + to] = false;
                self.note(format!("{} hears {} is down", PeerId(to as u32), PeerId(from as u32)));
                self.input(to, Input::PeerDown { peer: PeerId(from as u32) })
            }
            Event::Crash(i) => {
                self.crash(i);
                Ok(())
            }
            Event::Restart(i) => self.restart(i),
        }
    }

    /// Hand node `i` one input through its host, and carry out what it asks.
    fn input(&mut self, i: usize, input: NodeInput<A>) -> Result<(), SimError> {
        let step = self.nodes[i].step(self.now, input);
        self.apply(i, step)
    }

    fn crash(&mut self, i: usize) {
        let me = PeerId(i as u32);
        self.note(format!("{me} crashes"));
        self.crash_budget -= 1;
        self.crashes_done += 1;
        self.alive[i] = false;
        if self.apps[i] == App::Inside {
            self.inside = None;
        }
        self.apps[i] = App::Idle;
        self.timers.retain(|t| t.node != me);
        for j in 0..self.n {
            // Nothing reaches a dead node, news of others' deaths included.
            self.links[j * self.n + i].clear();
            self.down_due[j * self.n + i] = false;
            if j != i && self.alive[j] {
                self.down_due[i * self.n + j] = true;
            }
        }
    }

    fn restart(&mut self, i: usize) -> Result<(), SimError> {
        let me = PeerId(i as u32);
        self.configs[i].incarnation += 1;
        self.note(format!("{me} restarts (incarnation {})", self.configs[i].incarnation));
        self.nodes[i] = Host::new(self.configs[i].clone());
        self.alive[i] = true;
        for j in (0..self.n).filter(|&j| j != i) {
            if self.alive[j] {
                let l = i * self.n + j;
                if self.down_due[l] {
                    // The runtime drops the old connection when the new one says hello.
                    self.links[l].clear();
                    self.down_due[l] = false;
                    self.input(j, Input::PeerDown { peer: me })?;
                }
                self.input(j, Input::PeerUp { peer: me })?;
            }
        }
        self.input(i, Input::Start)?;
        let dead: Vec<usize> = (0..self.n).filter(|&j| j != i && !self.alive[j]).collect();
        for j in dead {
            self.down_due[j * self.n + i] = false;
            self.input(i, Input::PeerDown { peer: PeerId(j as u32) })?;
        }
        Ok(())
    }

    /// Carry out what node `i` asked for. A breach of the contract fails the run.
    fn apply(&mut self, i: usize, step: Step<A>) -> Result<(), SimError> {
        let me = PeerId(i as u32);
        if let Some(breach) = step.breaches.into_iter().next() {
            return Err(self.fail(match breach {
                Breach::SelfSend { kind } => Failure::SelfSend { node: me, kind },
                Breach::NoSuchPeer { to, kind } => Failure::NoSuchPeer { node: me, to, kind },
                Breach::Event { .. } => Failure::UnaskedEnter { node: me },
                breach => Failure::Driver { node: me, breach },
            }));
        }
        for effect in step.effects {
            match effect {
                Effect::Send { to, msg } => self.send(me, to, msg),
                Effect::Arm { timer, generation, after } => {
                    self.drop_timer(me, &timer);
                    self.timer_seq += 1;
                    let at = self.now + after;
                    let seq = self.timer_seq;
                    self.timers.push(SetTimer { node: me, timer, generation, at, seq, live: true });
                }
                Effect::Disarm { timer } => self.drop_timer(me, &timer),
                Effect::Event { event: MutexEvent::Enter } => {
                    if let Some(inside) = self.inside {
                        return Err(self.fail(Failure::Overlap { inside, entering: me }));
                    }
                    self.note(format!("{me} enters the critical section"));
                    self.apps[i] = App::Inside;
                    self.inside = Some(me);
                }
                Effect::Count { name, by } => *self.counters.entry(name.into_owned()).or_default() += by,
            }
        }
        Ok(())
    }

    /// Send `msg` (the host has checked the address).
    fn send(&mut self, from: PeerId, to: PeerId, msg: A::Msg) {
        *self.sent.entry(msg.kind().to_string()).or_default() += 1;
        // Counted as sent, as the runtime counts it, but a dead process reads nothing.
        if self.alive[to.index()] {
            self.links[from.index() * self.n + to.index()].push_back(msg);
        }
    }

    /// Forget node `me`'s live `timer`, or with the stale-timer knob sometimes keep it as
    /// a stale timer that still fires once.
    fn drop_timer(&mut self, me: PeerId, timer: &A::Timer) {
        if let Some(k) = self.timers.iter().position(|t| t.live && t.node == me && t.timer == *timer) {
            if self.stale_timers && self.rng.random_bool(0.25) {
                self.timers[k].live = false;
            } else {
                self.timers.remove(k);
            }
        }
    }

    fn waiting(&self) -> Vec<(PeerId, String)> {
        (0..self.n)
            .filter(|&i| self.apps[i] == App::Waiting)
            .map(|i| (PeerId(i as u32), self.nodes[i].node().waiting_for()))
            .collect()
    }

    fn note(&mut self, line: String) {
        if self.trace.len() == TRACE_LEN {
            self.trace.pop_front();
        }
        self.trace.push_back(format!("#{} t={:?} {line}", self.step, self.now));
    }

    fn fail(&self, failure: Failure) -> SimError {
        SimError {
            seed: self.seed,
            n: self.n as u32,
            step: self.step,
            failure,
            trace: self.trace.iter().cloned().collect(),
        }
    }
}

/// Run `n` nodes of `N` from `seed`, `entries` entries each, with stale timers on (as
/// [`sweep`] does): what the registry runs for an algorithm by name.
pub fn simulate<N: Node<Service = Mutex>>(n: u32, seed: u64, entries: u32) -> Result<SimReport, SimError> {
    Sim::<N>::new(n, seed).stale_timers(true).run(entries)
}

/// Run `A` over `seeds` with every size in `sizes`, `entries` entries per node, and
/// hand each report to `check`; panic with the replayable error of the first failure.
/// A helper for the randomized tests.
pub fn sweep<A: Node<Service = Mutex>>(
    sizes: &[u32],
    seeds: std::ops::Range<u64>,
    entries: u32,
    tweak: impl Fn(&mut Config) + Copy,
    mut check: impl FnMut(&SimReport, &Sim<A>),
) {
    for &n in sizes {
        for seed in seeds.clone() {
            let mut sim = Sim::<A>::with_config(n, seed, tweak).stale_timers(true);
            match sim.run(entries) {
                Ok(report) => check(&report, &sim),
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{Algorithm, Out};
    use crate::algos::baseline::Immediate;
    use crate::algos::centralized::Centralized;

    #[test]
    fn centralized_is_safe_and_costs_three_per_ordinary_entry() {
        sweep::<Centralized>(
            &[1, 2, 3, 5, 8],
            0..200,
            3,
            |_| {},
            |r, _| {
                let coordinator = r.n as usize - 1;
                let ordinary = r.entries - r.entries_by_node[coordinator];
                assert_eq!(r.entries, 3 * u64::from(r.n), "seed {}", r.seed);
                assert_eq!(r.total_messages(), 3 * ordinary, "seed {} n {}", r.seed, r.n);
                assert_eq!(r.count("GRANT"), ordinary);
            },
        );
    }

    #[test]
    fn the_checker_fires_on_the_none_baseline() {
        for n in [2, 3, 5] {
            let mut caught = 0;
            for seed in 0..50 {
                match Sim::<Immediate>::new(n, seed).run(3) {
                    Err(SimError { failure: Failure::Overlap { .. }, .. }) => caught += 1,
                    Err(e) => panic!("unexpected failure: {e}"),
                    Ok(_) => {}
                }
            }
            assert!(caught >= 40, "n = {n}: only {caught} of 50 runs caught the overlap");
        }
    }

    #[test]
    fn centralized_survives_crashes_of_ordinary_nodes() {
        for n in [2, 3, 5] {
            let coordinator = PeerId(n - 1);
            let mut crashes = 0;
            for seed in 0..150 {
                let mut sim =
                    Sim::<Centralized>::new(n, seed).stale_timers(true).crashes(3, |p| p != coordinator);
                let r = sim.run(4).unwrap_or_else(|e| panic!("{e}"));
                assert!(r.entries >= u64::from(n) * 4, "every quota met, whatever a crash cut short");
                crashes += r.crashes;
            }
            assert!(crashes >= 75, "n = {n}: only {crashes} crashes in 150 runs");
        }
    }

    #[test]
    fn a_restarted_coordinator_is_caught_letting_two_in() {
        // The negative control for the crash machinery: a coordinator that forgets who
        // holds the section must, on some seeds, let a second node in.
        let mut caught = 0;
        for seed in 0..300 {
            match Sim::<Centralized>::new(3, seed).crashes(2, |p| p == PeerId(2)).run(6) {
                Err(SimError { failure: Failure::Overlap { .. }, .. }) => caught += 1,
                Err(e) => panic!("unexpected failure: {e}"),
                Ok(_) => {}
            }
        }
        assert!(caught > 0, "no seed out of 300 showed the amnesia overlap");
    }

    #[test]
    fn crashes_replay_from_the_seed() {
        let run = || {
            let mut sim = Sim::<Centralized>::new(4, 9).crashes(3, |p| p != PeerId(3));
            (sim.run(5).unwrap(), sim.trace.iter().cloned().collect::<Vec<_>>())
        };
        let (a, ta) = run();
        let (b, tb) = run();
        assert!(a.crashes > 0, "seed 9 was picked because it crashes");
        assert_eq!((a.steps, a.messages, a.crashes, ta), (b.steps, b.messages, b.crashes, tb));
    }

    #[test]
    fn the_none_baseline_is_fine_alone() {
        let r = Sim::<Immediate>::new(1, 3).run(5).unwrap();
        assert_eq!(r.entries, 5);
        assert_eq!(r.total_messages(), 0);
    }

    #[test]
    fn same_seed_same_run() {
        let a = Sim::<Centralized>::new(5, 42).run(4).unwrap();
        let b = Sim::<Centralized>::new(5, 42).run(4).unwrap();
        assert_eq!(a, b);
        let c = Sim::<Centralized>::new(5, 43).run(4).unwrap();
        assert_ne!(a.steps, 0);
        assert_eq!(c.entries, a.entries);
    }

    #[test]
    fn error_names_the_seed() {
        let e = Sim::<Immediate>::new(2, 0).run(20).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("seed 0 (n = 2)"), "{text}");
        assert!(text.contains("Sim::new(2, 0)"), "{text}");
        assert!(!e.trace.is_empty());
    }

    // Broken algorithms the checker must catch.

    /// Enters when it wakes up, without being asked.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Eager;
    impl Algorithm for Eager {
        type Msg = crate::algos::baseline::Msg;
        type Timer = crate::algorithm::NoTimer;
        fn new(_cfg: &Config) -> Self {
            Eager
        }
        fn on_start(&mut self, out: &mut Out<Self::Msg, Self::Timer>) {
            out.enter_cs();
        }
        fn on_want_cs(&mut self, _out: &mut Out<Self::Msg, Self::Timer>) {}
        fn on_message(&mut self, _from: PeerId, msg: Self::Msg, _out: &mut Out<Self::Msg, Self::Timer>) {
            match msg {}
        }
        fn on_cs_done(&mut self, _out: &mut Out<Self::Msg, Self::Timer>) {}
    }

    #[test]
    fn unasked_enter_is_caught() {
        let e = Sim::<Eager>::new(2, 1).run(1).unwrap_err();
        assert_eq!(e.failure, Failure::UnaskedEnter { node: PeerId(0) });
    }

    /// Asks for a grant nobody will ever give, and talks to itself.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Stuck {
        me: PeerId,
        talk_to_self: bool,
    }
    impl Algorithm for Stuck {
        type Msg = crate::algos::centralized::Msg;
        type Timer = crate::algorithm::NoTimer;
        fn new(cfg: &Config) -> Self {
            Stuck { me: cfg.id, talk_to_self: cfg.seed == 99 }
        }
        fn on_want_cs(&mut self, out: &mut Out<Self::Msg, Self::Timer>) {
            if self.talk_to_self {
                out.send(self.me, crate::algos::centralized::Msg::Request);
            }
        }
        fn on_message(&mut self, _from: PeerId, _msg: Self::Msg, _out: &mut Out<Self::Msg, Self::Timer>) {}
        fn on_cs_done(&mut self, _out: &mut Out<Self::Msg, Self::Timer>) {}
        fn pending(&self) -> String {
            "waiting for nothing in particular".into()
        }
    }

    #[test]
    fn deadlock_and_self_send_are_caught() {
        let e = Sim::<Stuck>::new(2, 5).run(1).unwrap_err();
        match e.failure {
            Failure::Deadlock { waiting } => {
                assert!(!waiting.is_empty());
                assert_eq!(waiting[0].1, "waiting for nothing in particular");
            }
            other => panic!("expected a deadlock, got {other}"),
        }
        let e = Sim::<Stuck>::new(2, 99).run(1).unwrap_err();
        assert!(matches!(e.failure, Failure::SelfSend { ref kind, .. } if kind == "REQUEST"), "{e}");
    }
}
