//! A deterministic in-process simulator that runs N copies of one algorithm and checks them.
//!
//! The simulator is a third driver of the sans-IO state machines (after the worker runtime
//! and the hand-written unit tests). It is in two parts. A [`World`] (`world.rs`) keeps
//! every node behind its host, every message in flight, every timer and application,
//! with no randomness of its own: it lists what can happen next and does what it is
//! told, one [`Choice`] at a time. [`Sim`] is the seeded scheduler: a [`ChaCha8Rng`]
//! picks each choice (which in-flight message is delivered, which application asks for
//! the critical section, which one leaves it, whether virtual time jumps to the next
//! timer). The same seed always gives the same run, and every run's choices are kept
//! (in the report, or in the error), so a run can be saved and replayed exactly
//! ([`Sim::replay`]); the world being `Clone + Eq + Hash` is what the checker's
//! exhaustive search ([`crate::check`]) needs.
//!
//! ```
//! use mutexlab_algos::centralized::Centralized;
//! use mutexlab_sim::Sim;
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
//!   and the supervisor's faults make them, and [`Sim::unnoticed_restarts`] lets a
//!   restart go unnoticed by a peer that never heard of the death, as a heartbeat
//!   detector may miss a quick one, and [`Sim::synchronous`] keeps timers from racing
//!   messages; [`Sim::any_timer`] and [`Sim::lose`] are
//!   the checker's own (any armed timer may fire, messages may be lost), to replay its
//!   counterexamples.
//! - [`Sim::run`]`(rounds)` drives the run until the applications have done their
//!   rounds and no message is left in flight: for mutual exclusion, each application
//!   has been inside `rounds` times; for elections, each initiator has called `rounds`
//!   elections and every live node names the same live leader ([`Sim::set_up`] with
//!   [`ElectionApps::initiators`] picks the initiators; all nodes by default). What the
//!   applications do is their service's ([`SimService`], `app.rs`). It returns a
//!   [`SimReport`] (entries, messages sent by kind, steps) or a [`SimError`] naming the
//!   seed, the step and the failure, with the last events that led to it.
//! - [`Sim::node`] gives read access to a node afterwards; the report carries the
//!   algorithms' own counts ([`SimReport::counter`]) and the run's choices.
//! - [`Sim::replay`]`(entries, &choices)` runs the same world on saved choices.
//! - What happens in the world reaches the caller as values, [`WorldEvent`]s (`event.rs`:
//!   a message sent, delivered or lost, an application's step, a timer, a crash…),
//!   through the observer given to [`World::start`] and [`World::apply`]; a trace line is
//!   an event's `Display`, formatted only when a trace is kept.
//! - [`record`] writes a replay's events as a run directory that the tools made for real
//!   runs read (`mutexlab check --out DIR` writes its counterexample so).
//! - [`fault_run`] (`fault.rs`) makes one fault as `mutexlab compare` makes it on real
//!   workers (a crash at the K-th entry that never restarts, or lost messages), so that
//!   many seeds can decide a fault's outcome.
//! - [`sweep`] runs many sizes and seeds (stale timers on) and hands each report to a
//!   check, panicking with the replayable error of the first failed run.
//!
//! What a run checks:
//! - safety: never two applications inside at once ([`Failure::Overlap`]); for
//!   elections, never two leaders for one term ([`Failure::SplitBrain`]) and never a
//!   node's term going back ([`Failure::TermBackwards`]);
//! - the driver contract: no `EnterCs` for an application that did not ask
//!   ([`Failure::UnaskedEnter`]), no message to oneself ([`Failure::SelfSend`]) or to a
//!   node that does not exist ([`Failure::NoSuchPeer`]);
//! - liveness: if nothing can happen (no message in flight, no timer set) while some
//!   application still waits (for elections: while the live nodes do not all name one
//!   live leader), the run is stuck ([`Failure::Deadlock`], with each waiting node's
//!   [`Node::waiting_for`]); a run that keeps going without finishing hits the step
//!   limit.
//!
//! Model of time and of the scheduler: delivering a message or running an application
//! step takes no virtual time; only timers move the clock. Each step picks uniformly
//! among what can happen. "Fire the earliest timer" is always among the choices when no
//! message is in flight, but only on one step in eight while some are: timers (back-offs,
//! say) are meant to be long next to message delays, yet a timer may still race a
//! message. With timers weighted like messages, no back-off could outlast a message in
//! flight and back-off algorithms would livelock in the simulator only. A reset or
//! cancelled timer still fires once on one time in four with stale timers on. Channels
//! are FIFO per ordered pair unless [`Sim::non_fifo`] is set. Broadcasts count as one
//! message per receiver, as on the wire.
//!
//! Crashes (only with [`Sim::crashes`]) happen as the worker runtime presents them (see
//! `world.rs`); a crash or a restart is a candidate on one step in sixteen, and a dead
//! node is always restarted eventually (when nothing else can happen, that is the only
//! choice), but a crash never stands in for nothing happening: a deadlock stays one. A
//! run ends only when every node is alive and done. With [`Sim::unnoticed_restarts`]
//! news of a death is as rare a candidate as a restart, so a node is often back before
//! a peer heard it was gone.

// Every public item says what it is: students and outside crates read the API docs.
#![warn(missing_docs)]

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::algorithm::{Config, Node, PeerId};
use crate::host::Breach;
// The layers below, under the names every file here uses (`crate::algorithm::…`).
#[cfg(test)]
use mutexlab_algos as algos;
use mutexlab_core::{
    algorithm, control, faults, fields, files, host, interrupt, latency, panics, resource, text, trace,
};

mod app;
pub mod check;
pub mod counterexample;
mod event;
mod fault;
pub mod record;
pub mod superpeer;
mod world;
pub use app::{ElectionApps, MutexApps, SimApps, SimService};
pub use event::{AppAct, Lost, Observer, WorldEvent};
pub use fault::{fault_run, plan_faults, CrashAt, Ending, FaultSim, FaultSimReport};
pub use world::{Choice, World};

/// How many recent events a [`SimError`] carries.
const TRACE_LEN: usize = 40;

/// While messages are in flight, a timer may fire on one step in this many.
const TIMER_RACE: u32 = 8;

/// A crash or a restart is a candidate on one step in this many.
const CRASH_RARITY: u32 = 16;

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
    /// Two nodes accepted different leaders for the same term.
    #[error("split brain: term {term} names {first}, and {by} accepted {second} for it")]
    SplitBrain {
        /// The term.
        term: u64,
        /// The leader first announced for it.
        first: PeerId,
        /// The other one.
        second: PeerId,
        /// The node that accepted the other.
        by: PeerId,
    },
    /// A node accepted a leader of an older (or the same) term than one it had.
    #[error("{node} accepted a leader of term {after} after one of term {before}")]
    TermBackwards {
        /// The node.
        node: PeerId,
        /// The term it had.
        before: u64,
        /// The term it took.
        after: u64,
    },
    /// A saved choice that the world does not offer at that point (a replay of another
    /// algorithm, size or version).
    #[error("replay: choice {index} ({choice}) is not possible here")]
    Replay {
        /// Its position in the list.
        index: usize,
        /// The choice, as saved.
        choice: String,
    },
    /// The node failed on its own: a program behind it died, answered garbage or broke
    /// a rule (`Breach::Failed`).
    #[error("{node}: {why}")]
    NodeFailed {
        /// The node.
        node: PeerId,
        /// Its failure, in one line.
        why: String,
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
    /// The run reached its step limit without finishing. With no entry (or election)
    /// completed in the last half of the budget, it is a livelock or starvation; with
    /// one, the run was still getting on and the budget was too small to say
    /// ([`Failure::inconclusive`]).
    #[error("{}; still waiting: {}", step_limit(*steps, *idle), describe(waiting))]
    StepLimit {
        /// The step limit.
        steps: u64,
        /// Each waiting node with what it says it waits for (boxed: the error stays small).
        waiting: Box<[(PeerId, String)]>,
        /// Steps since the last entry (or election) completed, or since the start.
        idle: u64,
    },
}

/// What a step limit means: a livelock seen, or a budget too small to tell.
fn step_limit(steps: u64, idle: u64) -> String {
    if stalled(steps, idle) {
        format!("no completion in the last {idle} of {steps} steps (livelock or starvation)")
    } else {
        format!(
            "inconclusive: the step budget of {steps} steps ran out while the run was still making progress \
             (the last entry {idle} steps before its end)"
        )
    }
}

/// A run at its step limit that completed nothing in the last half of it is stuck.
fn stalled(steps: u64, idle: u64) -> bool {
    idle >= steps / 2
}

impl Failure {
    /// A step budget that ran out while the run was still making progress: no verdict
    /// either way. Every other failure, a livelock included, is a finding.
    pub fn inconclusive(&self) -> bool {
        matches!(self, Failure::StepLimit { steps, idle, .. } if !stalled(*steps, *idle))
    }
}

/// The default step budget of `mutexlab sim` for `n` nodes and `k` entries each: it grows
/// with n × k, and with n again since an entry takes O(n) messages in most algorithms
/// (ricart-agrawala at n = 64, k = 25 takes about 210 000 steps); never below the
/// simulator's own default.
pub fn step_budget(n: u32, k: u32) -> u64 {
    let (n, k) = (u64::from(n), u64::from(k));
    8u64.saturating_mul(n).saturating_mul(k).saturating_mul(n + 4).max(MAX_STEPS)
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
    /// The last events before the failure, oldest first (boxed slices keep the error
    /// small enough to return by value).
    pub trace: Box<[String]>,
    /// Every choice up to and including the failing one: [`Sim::replay`] repeats it.
    pub choices: Box<[Choice]>,
    /// How the run was made, as the Rust that makes it again: `Sim::new(3, 6)` and every
    /// knob set, `.non_fifo().stale_timers(true)` (a seed alone replays a different run
    /// when a knob is left out).
    pub made: Box<str>,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {} (n = {}), step {}: {}", self.seed, self.n, self.step, self.failure)?;
        writeln!(f, "replay with {}; last events:", self.made)?;
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
    /// The leader every node names at the end (elections), and its term.
    pub leader: Option<(PeerId, u64)>,
    /// Every choice made, in order: [`Sim::replay`] repeats the run.
    pub choices: Vec<Choice>,
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

/// A run's step limit unless [`Sim::max_steps`] sets one.
const MAX_STEPS: u64 = 200_000;

/// How often (in steps) a run samples how many entries are done.
const PROGRESS_EVERY: u64 = 256;

/// The seeded scheduler over a [`World`] of N nodes of `A`.
pub struct Sim<A: Node>
where
    A::Service: SimService,
{
    n: usize,
    seed: u64,
    rng: ChaCha8Rng,
    world: World<A>,
    max_steps: u64,
    step: u64,
    /// [`Sim::unnoticed_restarts`]: news of a death is a rare choice, as a restart is.
    unnoticed: bool,
    /// [`Sim::synchronous`]: no timer fires while a message is in flight.
    synchronous: bool,
    trace: VecDeque<String>,
    choices: Vec<Choice>,
    /// How this simulator was made, for [`SimError::made`]: the constructor, then each
    /// knob's call in the order set (a knob set again replaces its call).
    made: (String, Vec<(&'static str, String)>),
    /// What to do to the applications before the run.
    #[allow(clippy::type_complexity)]
    set_up: Option<Box<dyn FnOnce(&mut <A::Service as SimService>::Apps)>>,
}

impl<A: Node> Sim<A>
where
    A::Service: SimService,
{
    /// `n` nodes with [`Config::new`] and the given seed.
    pub fn new(n: u32, seed: u64) -> Self {
        let mut sim = Self::with_config(n, seed, |_| {});
        sim.made.0 = format!("Sim::new({n}, {seed})");
        sim
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
        Sim {
            n: n as usize,
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            world: World::new(configs, 0),
            max_steps: MAX_STEPS,
            step: 0,
            unnoticed: false,
            synchronous: false,
            trace: VecDeque::new(),
            choices: Vec::new(),
            made: (format!("Sim::with_config({n}, {seed}, …)"), Vec::new()),
            set_up: None,
        }
    }

    /// Note a knob's call for [`SimError::made`]; `None` for its default, which is left out.
    fn knob(&mut self, name: &'static str, call: Option<String>) {
        self.made.1.retain(|(k, _)| *k != name);
        self.made.1.extend(call.map(|c| (name, c)));
    }

    /// Let up to `count` crashes happen, each to a node `eligible` allows, each followed
    /// later by a restart of that node.
    pub fn crashes(mut self, count: u32, eligible: impl Fn(PeerId) -> bool) -> Self {
        let may: Vec<String> =
            (0..self.n as u32).filter(|&i| eligible(PeerId(i))).map(|i| i.to_string()).collect();
        let who = if may.len() == self.n {
            "|_| true".to_string()
        } else {
            format!("|p| [{}].contains(&p.0)", may.join(", "))
        };
        self.knob("crashes", (count > 0).then(|| format!(".crashes({count}, {who})")));
        self.world = self.world.crashes(count, eligible);
        self
    }

    /// News of crashes as a heartbeat detector gives it, late or never
    /// ([`World::unnoticed_restarts`]): a node that restarts before a peer heard of its
    /// death is no news to that peer, whose messages to the dead node were lost.
    pub fn unnoticed_restarts(mut self, on: bool) -> Self {
        self.knob("unnoticed_restarts", on.then(|| ".unnoticed_restarts(true)".into()));
        self.world = self.world.unnoticed_restarts(on);
        self.unnoticed = on;
        self
    }

    /// The notes' synchronous system for bully: every message arrives before any
    /// timeout (2·Tm + Tp) runs out, so no timer fires while a message is in flight. An
    /// early timeout can start a round that hides a livelock the real runs have (a node
    /// answered for ever and never told the leader), as it did for `bully`.
    pub fn synchronous(mut self, on: bool) -> Self {
        self.knob("synchronous", on.then(|| ".synchronous(true)".into()));
        self.synchronous = on;
        self
    }

    /// Let any message in flight on a channel be delivered first, not only the oldest.
    pub fn non_fifo(mut self) -> Self {
        self.knob("non_fifo", Some(".non_fifo()".into()));
        self.world = self.world.non_fifo();
        self
    }

    /// When on, a cancelled or reset timer fires once anyway with probability 1/4.
    pub fn stale_timers(mut self, on: bool) -> Self {
        self.knob("stale_timers", on.then(|| ".stale_timers(true)".into()));
        self.world = self.world.stale_timers(on);
        self
    }

    /// Let any armed timer fire, not only the earliest (as `mutexlab check` does by
    /// default): to replay a check's counterexample. A seeded run then fires one of them
    /// at random where it would have fired the earliest.
    pub fn any_timer(mut self, on: bool) -> Self {
        self.knob("any_timer", on.then(|| ".any_timer(true)".into()));
        self.world = self.world.any_timer(on);
        self
    }

    /// Let up to `count` messages in flight be lost (`mutexlab check --lose`): to replay
    /// a check's counterexample; the seeded scheduler never loses one itself.
    pub fn lose(mut self, count: u32) -> Self {
        self.knob("lose", (count > 0).then(|| format!(".lose({count})")));
        self.world = self.world.lose(count);
        self
    }

    /// Fail with [`Failure::StepLimit`] after this many steps (default 200 000).
    pub fn max_steps(mut self, steps: u64) -> Self {
        self.knob("max_steps", (steps != MAX_STEPS).then(|| format!(".max_steps({steps})")));
        self.max_steps = steps;
        self
    }

    /// Node `id`, to read its state after (or before) a run.
    pub fn node(&self, id: u32) -> &A {
        self.world.node(id)
    }

    /// The world, as the run left it.
    pub fn world(&self) -> &World<A> {
        &self.world
    }

    /// Set the applications up once the run gives them their rounds (e.g. who
    /// initiates elections: [`ElectionApps::initiators`]).
    pub fn set_up(mut self, f: impl FnOnce(&mut <A::Service as SimService>::Apps) + 'static) -> Self {
        self.set_up = Some(Box::new(f));
        self
    }

    /// Run until every application has entered `entries_per_node` times and no message is
    /// in flight, checking safety and liveness on the way. Call once per `Sim`.
    pub fn run(&mut self, entries_per_node: u32) -> Result<SimReport, SimError> {
        self.drive(entries_per_node, None)
    }

    /// Run again on `choices`, saved from a report or an error: the same world, the
    /// same steps, the same outcome. Call once per `Sim`, made with the same size,
    /// configuration and knobs as the run that made them.
    pub fn replay(&mut self, entries_per_node: u32, choices: &[Choice]) -> Result<SimReport, SimError> {
        self.drive(entries_per_node, Some(choices))
    }

    fn drive(&mut self, rounds: u32, saved: Option<&[Choice]>) -> Result<SimReport, SimError> {
        let world = std::mem::replace(&mut self.world, World::new(Vec::new(), 0));
        self.world = world.with_rounds(rounds);
        if let Some(f) = self.set_up.take() {
            f(self.world.apps_mut());
        }
        let Sim { world, trace, step, .. } = self;
        let started = world.start(&mut |now, event| note(trace, *step, now, event));
        started.map_err(|f| self.fail(f))?;
        // Entries (or elections) completed, and the step at which that count last rose.
        let (mut done, mut last) = (0u64, 0u64);
        loop {
            if self.world.done() {
                break;
            }
            let enabled = self.world.enabled();
            let choice = match saved {
                Some(list) => match list.get(self.choices.len()) {
                    Some(c) if enabled.contains(c) => *c,
                    Some(c) => {
                        let (index, choice) = (self.choices.len(), format!("{c:?}"));
                        return Err(self.fail(Failure::Replay { index, choice }));
                    }
                    // The list ends before the world is done: the saved run ended in a
                    // deadlock if nothing but crashes could happen next, else the list is
                    // too short for this world.
                    None if enabled.iter().all(|c| matches!(c, Choice::Crash { .. })) => {
                        return Err(self.fail(Failure::Deadlock { waiting: self.world.waiting() }))
                    }
                    None => {
                        let index = self.choices.len();
                        return Err(
                            self.fail(Failure::Replay { index, choice: "the end of the list".into() })
                        );
                    }
                },
                None => {
                    // Progress is sampled every so many steps: cheap, and exact enough to
                    // tell a run still going from one that stopped long ago.
                    if self.step.is_multiple_of(PROGRESS_EVERY) {
                        let now: u64 = self.world.apps.entries().iter().sum();
                        if now != done {
                            (done, last) = (now, self.step);
                        }
                    }
                    if self.step >= self.max_steps {
                        let waiting = self.world.waiting().into();
                        let idle = self.step - last;
                        let failure = Failure::StepLimit { steps: self.max_steps, waiting, idle };
                        return Err(self.fail(failure));
                    }
                    match self.pick(&enabled) {
                        Some(c) => c,
                        None => return Err(self.fail(Failure::Deadlock { waiting: self.world.waiting() })),
                    }
                }
            };
            self.step += 1;
            self.choices.push(choice);
            let Sim { world, trace, step, .. } = self;
            let applied = world.apply(choice, &mut |now, event| note(trace, *step, now, event));
            applied.map_err(|f| self.fail(f))?;
        }
        let w = &self.world;
        Ok(SimReport {
            n: self.n as u32,
            seed: self.seed,
            entries: w.apps.entries().iter().sum(),
            entries_by_node: w.apps.entries(),
            leader: w.apps.leader(&vec![true; self.n]),
            messages: w.sent.clone(),
            counters: w.counters.clone(),
            steps: self.step,
            elapsed: w.now,
            crashes: w.crashes_done,
            choices: self.choices.clone(),
        })
    }

    /// The seeded policy: settle a stale timer's fate first (kept one time in four);
    /// otherwise pick uniformly among deliveries, news of deaths and application steps,
    /// with crashes and restarts rare and timers racing messages only now and then (see
    /// the module doc). `None` when nothing can happen: a deadlock.
    fn pick(&mut self, enabled: &[Choice]) -> Option<Choice> {
        if let Some(&Choice::Stale { index, .. }) = enabled.first() {
            return Some(Choice::Stale { index, keep: self.rng.random_bool(0.25) });
        }
        // With unnoticed restarts news of a death is as rare as a restart, so that a node
        // often restarts before a peer has heard it died (a detector's suspicion takes
        // many message times).
        let late_news = self.unnoticed;
        let ordinary = |c: &Choice| match c {
            Choice::Deliver { .. } | Choice::Call { .. } => true,
            Choice::Down { .. } => !late_news,
            _ => false,
        };
        let mut candidates: Vec<Choice> = enabled.iter().copied().filter(ordinary).collect();
        let stuck = candidates.is_empty();
        let rare = self.world.may_crash_or_restart() && self.rng.random_range(0..CRASH_RARITY) == 0;
        for c in enabled {
            match c {
                Choice::Down { .. } if late_news && (stuck || rare) => candidates.push(*c),
                Choice::Restart { .. } if stuck || rare => candidates.push(*c),
                Choice::Crash { .. } if !stuck && rare => candidates.push(*c),
                _ => {}
            }
        }
        let quiet = !candidates.iter().any(|c| matches!(c, Choice::Deliver { .. }));
        let timers: Vec<Choice> =
            enabled.iter().copied().filter(|c| matches!(c, Choice::Timer | Choice::Fire { .. })).collect();
        // Drawn only where it was before the synchronous knob: seeded runs stay as they were.
        if !timers.is_empty() && (quiet || (!self.synchronous && self.rng.random_range(0..TIMER_RACE) == 0)) {
            // Earliest first offers one timer choice: no draw, so seeded runs stay as they were.
            let k = if timers.len() > 1 { self.rng.random_range(0..timers.len()) } else { 0 };
            candidates.push(timers[k]);
        }
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[self.rng.random_range(0..candidates.len())])
    }

    fn fail(&self, failure: Failure) -> SimError {
        SimError {
            seed: self.seed,
            n: self.n as u32,
            step: self.step,
            failure,
            trace: self.trace.iter().cloned().collect(),
            choices: self.choices.clone().into(),
            made: self.made.1.iter().fold(self.made.0.clone(), |m, (_, call)| m + call).into(),
        }
    }
}

/// Keep `event` in the trace of recent events, if the trace shows it.
fn note<M: crate::algorithm::Message, T: fmt::Debug>(
    trace: &mut VecDeque<String>,
    step: u64,
    now: Duration,
    event: &WorldEvent<'_, M, T>,
) {
    if !event.is_note() {
        return;
    }
    if trace.len() == TRACE_LEN {
        trace.pop_front();
    }
    trace.push_back(format!("#{step} t={now:?} {event}"));
}

/// Run `n` nodes of `N` from `seed`, `entries` entries each, with stale timers on (as
/// [`sweep`] does): what the registry runs for an algorithm by name.
pub fn simulate<N: Node>(n: u32, seed: u64, entries: u32) -> Result<SimReport, SimError>
where
    N::Service: SimService,
{
    Sim::<N>::new(n, seed).stale_timers(true).run(entries)
}

/// The settings of one seeded run by name (`mutexlab sim`; [`simulate_with`]).
#[derive(Clone, Debug, Default)]
pub struct SimOpts {
    /// Number of nodes.
    pub n: u32,
    /// The seed.
    pub seed: u64,
    /// Entries per node (elections: elections per node).
    pub entries: u32,
    /// Messages on a channel may overtake each other ([`Sim::non_fifo`]).
    pub non_fifo: bool,
    /// Up to this many crashes of any node, each followed by a restart ([`Sim::crashes`]).
    pub crashes: u32,
    /// The program external nodes run (`--worker-cmd`), in each node's [`Config`].
    pub program: Option<crate::algorithm::Spawn>,
    /// The step budget ([`Sim::max_steps`]); `None`: [`step_budget`] of n and entries.
    pub max_steps: Option<u64>,
}

/// Run `N` with `opts`, stale timers on (as [`simulate`]): what the registry runs for
/// `mutexlab sim`.
pub fn simulate_with<N: Node>(opts: &SimOpts) -> Result<SimReport, SimError>
where
    N::Service: SimService,
{
    let mut sim = Sim::<N>::with_config(opts.n, opts.seed, |c| c.program = opts.program.clone())
        .stale_timers(true)
        .crashes(opts.crashes, |_| true)
        .max_steps(opts.max_steps.unwrap_or_else(|| step_budget(opts.n, opts.entries)));
    if opts.non_fifo {
        sim = sim.non_fifo();
    }
    sim.run(opts.entries)
}

/// Run `A` over `seeds` with every size in `sizes`, `entries` entries per node, and
/// hand each report to `check`; panic with the replayable error of the first failure.
/// A helper for the randomized tests.
pub fn sweep<A: Node>(
    sizes: &[u32],
    seeds: std::ops::Range<u64>,
    entries: u32,
    tweak: impl Fn(&mut Config) + Copy,
    mut check: impl FnMut(&SimReport, &Sim<A>),
) where
    A::Service: SimService,
{
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
    fn a_budget_that_runs_out_mid_run_is_inconclusive_and_one_past_the_last_entry_is_not() {
        use crate::algos::ricart_agrawala::RicartAgrawala;
        // Still entering when the budget ends: no verdict.
        let e = Sim::<RicartAgrawala>::new(3, 0).max_steps(2_000).run(1_000).unwrap_err();
        assert!(e.failure.inconclusive(), "{e}");
        assert!(e.failure.to_string().starts_with("inconclusive: the step budget of 2000 steps"), "{e}");
        // The budget grows with n and k, and never falls below the old default.
        assert_eq!(step_budget(3, 1), MAX_STEPS);
        assert_eq!(step_budget(64, 25), 8 * 64 * 25 * 68);
        assert!(step_budget(1024, u32::MAX) > step_budget(1024, 1));
    }

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
    fn a_restart_is_told_in_the_trace_as_the_peers_hear_it() {
        // Replays list what each node is told, so a reader can see that a restarted
        // peer's messages come after the news that it is up.
        let found = (0..50).find_map(|seed| {
            let mut sim = Sim::<Centralized>::new(3, seed).crashes(1, |p| p == PeerId(1));
            sim.run(2).unwrap();
            let t: Vec<String> = sim.trace.iter().cloned().collect();
            let at = t.iter().position(|l| l.contains("w1 restarts (incarnation 1)"))?;
            Some(t[at..].to_vec())
        });
        let after = found.expect("no seed of 50 restarted w1 within the trace");
        for peer in ["w0", "w2"] {
            let up = format!("{peer} hears w1 is up");
            assert!(after.iter().any(|l| l.ends_with(&up)), "{up:?} missing after the restart: {after:#?}");
        }
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
    fn a_saved_list_of_choices_replays_the_same_run() {
        use crate::algos::voting::Voting;
        // Timers, stale timers, crashes and non-FIFO channels: every kind of choice.
        let make = || Sim::<Voting>::new(4, 11).stale_timers(true).non_fifo().crashes(2, |p| p.0 < 2);
        let mut first = make();
        let a = first.run(3).unwrap();
        assert!(a.choices.iter().any(|c| matches!(c, Choice::Timer)));
        // Saved as JSON lines and read back, as a file would be.
        let saved: Vec<Choice> = a
            .choices
            .iter()
            .map(|c| serde_json::from_str(&serde_json::to_string(c).unwrap()).unwrap())
            .collect();
        let mut again = make();
        let b = again.replay(3, &saved).unwrap();
        assert_eq!(a, b);
        assert_eq!(first.world(), again.world(), "the same world at the end");
        // A list that ends early, or a choice the world does not offer, says so.
        let e = make().replay(3, &saved[..saved.len() / 2]).unwrap_err();
        assert!(matches!(e.failure, Failure::Replay { .. }), "{e}");
        let e = make().replay(3, &[Choice::Call { node: 0, index: 3 }]).unwrap_err();
        assert!(matches!(e.failure, Failure::Replay { index: 0, .. }), "{e}");
    }

    #[test]
    fn a_failure_says_how_its_simulator_was_made() {
        let make = || Sim::<Immediate>::new(3, 4).non_fifo().stale_timers(true).crashes(1, |p| p.0 == 0);
        let e = make().run(3).unwrap_err();
        let made = "Sim::new(3, 4).non_fifo().stale_timers(true).crashes(1, |p| [0].contains(&p.0))";
        assert_eq!(&*e.made, made);
        assert!(e.to_string().contains(&format!("replay with {made}; last events:")), "{e}");
        // A knob set again, or back to its default, is said once or not at all.
        let e = Sim::<Immediate>::new(3, 4).stale_timers(true).stale_timers(false).crashes(2, |_| true);
        let e = e.max_steps(MAX_STEPS).run(3).unwrap_err();
        assert_eq!(&*e.made, "Sim::new(3, 4).crashes(2, |_| true)");
    }

    #[test]
    fn a_failed_run_replays_to_the_same_failure() {
        let e = Sim::<Immediate>::new(3, 4).run(3).unwrap_err();
        let again = Sim::<Immediate>::new(3, 4).replay(3, &e.choices).unwrap_err();
        assert_eq!((again.failure, again.step), (e.failure, e.step));
    }

    #[test]
    fn worlds_are_values() {
        // Each step of a run gives a world that can be cloned, compared and kept in a
        // set: what an exhaustive search over states needs.
        let mut sim = Sim::<Centralized>::new(3, 2);
        let report = sim.run(2).unwrap();
        let configs: Vec<Config> = (0..3).map(|i| Config { seed: 2, ..Config::new(i, 3) }).collect();
        let mut world = World::<Centralized>::new(configs, 2);
        world.start(&mut |_, _| {}).unwrap();
        let mut seen = std::collections::HashSet::new();
        seen.insert(world.clone());
        for &c in &report.choices {
            assert!(world.enabled().contains(&c));
            world.apply(c, &mut |_, _| {}).unwrap();
            seen.insert(world.clone());
        }
        assert!(world.done());
        assert_eq!(&world, sim.world());
        assert!(seen.len() > report.choices.len() / 2, "{} states", seen.len());
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

    /// Sets a timer for the end of time each time it is asked, then lets the
    /// application in.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Forever;
    impl Algorithm for Forever {
        type Msg = crate::algos::baseline::Msg;
        type Timer = u8;
        fn new(_cfg: &Config) -> Self {
            Forever
        }
        fn on_want_cs(&mut self, out: &mut Out<Self::Msg, Self::Timer>) {
            out.set_timer(0, Duration::MAX);
            out.enter_cs();
        }
        fn on_message(&mut self, _from: PeerId, msg: Self::Msg, _out: &mut Out<Self::Msg, Self::Timer>) {
            match msg {}
        }
        fn on_cs_done(&mut self, _out: &mut Out<Self::Msg, Self::Timer>) {}
    }

    #[test]
    fn a_timer_beyond_the_end_of_time_never_fires_and_panics_nothing() {
        Sim::<Forever>::new(1, 3).run(3).unwrap();
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

/// The election side of the simulator, with toy nodes: the checks must pass a correct
/// one and catch each kind of broken one.
#[cfg(test)]
mod election_tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::algorithm::{Election, ElectionCall, ElectionEvent, Input, Message, NodeInput, NodeOut};

    #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    struct Claim(u32);

    impl Message for Claim {
        fn kind(&self) -> &str {
            "CLAIM"
        }
    }

    /// Whoever is elected, the highest id any initiator has heard of wins: initiators
    /// claim, everyone takes the highest claim seen. `mode` breaks it on purpose.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Toy {
        me: u32,
        best: Option<u32>,
        mode: u8,
    }

    // Mode 0 is the correct toy.
    const SELFISH: u8 = 1;
    const BACKWARDS: u8 = 2;

    impl Node for Toy {
        type Msg = Claim;
        type Timer = crate::algorithm::NoTimer;
        type Service = Election;

        fn create(cfg: &Config) -> Self {
            Toy { me: cfg.id.0, best: None, mode: cfg.seed as u8 % 3 }
        }

        fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
            let claim = match input {
                Input::Call { call: ElectionCall::Elect } => {
                    if self.mode == SELFISH {
                        // Declares itself at once, in the same term as anyone else.
                        out.emit(ElectionEvent::Leader { id: PeerId(self.me), term: 1 });
                        return;
                    }
                    out.broadcast(Claim(self.me));
                    self.me
                }
                Input::Message { msg: Claim(c), .. } => c,
                _ => return,
            };
            if self.best.is_none_or(|b| claim > b) {
                self.best = Some(claim);
                let term = if self.mode == BACKWARDS { 100 - u64::from(claim) } else { u64::from(claim) + 1 };
                out.emit(ElectionEvent::Leader { id: PeerId(claim), term });
            }
        }
    }

    fn toy(n: u32, seed: u64) -> Sim<Toy> {
        // The seed picks the mode (seed % 3), so seeds 0, 3, 6… are correct toys.
        Sim::<Toy>::new(n, seed)
    }

    #[test]
    fn a_correct_election_agrees_and_reports_its_leader() {
        for seed in (0..60).step_by(3) {
            let r = toy(5, seed).run(1).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.leader.map(|l| l.0), Some(PeerId(4)), "every node initiates: the highest wins");
            assert_eq!(r.count("CLAIM"), 5 * 4);
        }
        // Only w1 and w2 initiate: w2 wins, though w4 exists.
        let r = toy(5, 3).set_up(|apps| apps.initiators(&[1, 2])).run(1).unwrap();
        assert_eq!(r.leader, Some((PeerId(2), 3)));
    }

    #[test]
    fn two_leaders_in_one_term_are_caught() {
        let e = toy(3, 1).run(1).unwrap_err();
        assert!(matches!(e.failure, Failure::SplitBrain { term: 1, .. }), "{e}");
    }

    #[test]
    fn a_term_going_backwards_is_caught() {
        let mut caught = 0;
        for seed in (2..200).step_by(3) {
            match toy(3, seed).run(1) {
                Err(SimError { failure: Failure::TermBackwards { .. }, .. }) => caught += 1,
                Err(e) => panic!("{e}"),
                Ok(_) => {} // the highest claim happened to come first everywhere
            }
        }
        assert!(caught > 10, "only {caught} of 66 runs caught it");
    }

    #[test]
    fn a_restarted_node_that_is_never_told_the_leader_is_caught() {
        // The toy does not tell a node that comes back who leads: the run cannot end
        // with every live node agreeing, and the simulator says who is still waiting.
        let mut caught = 0;
        for seed in (0..150).step_by(3) {
            match toy(3, seed).crashes(1, |_| true).run(1) {
                Err(SimError { failure: Failure::Deadlock { waiting }, .. }) => {
                    assert!(!waiting.is_empty());
                    caught += 1;
                }
                Err(e) => panic!("{e}"),
                // No crash, or one before the node had called its own election.
                Ok(_) => {}
            }
        }
        assert!(caught > 0);
    }
}
