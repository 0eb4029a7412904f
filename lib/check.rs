//! The model checker: every interleaving of the same node code the workers run, for a
//! small number of nodes, breadth-first from the start, so a violation comes with its
//! shortest counterexample (`mutexlab check`; issue 18, design note `check.md`).
//!
//! It is a third scheduler of the simulator's [`World`] (after [`crate::sim::Sim`]'s seeded
//! one and a replay): instead of picking one enabled [`Choice`] it takes each in turn.
//! Worlds compare and hash by protocol state, so the visited set holds only a 64-bit
//! fingerprint of each state with its parent's fingerprint and the choice that led
//! there; only the frontier holds whole worlds. A counterexample is rebuilt by walking
//! the parents back to the start and replaying the choices from the initial world, with
//! the world's notes (what the simulator prints for a replay) as its numbered steps.
//!
//! Properties, each reported by name (see [`Property`]):
//! - whatever [`World::apply`] fails with: `mutual exclusion` (never two inside),
//!   `one leader per term` for elections, `driver contract` (no unasked entry, no message
//!   to oneself or to no one) and `no node failure` (a program behind a node broke down,
//!   or the node panicked: a lab skeleton's unwritten handler comes back as that line);
//! - `no deadlock`: a state that is not done where nothing is enabled but crashes, while
//!   an application waits (as the simulator's deadlock);
//! - `every request served`, at terminal states: a state where nothing can happen but
//!   crashes is done (each application has had its entries, or for elections the live
//!   nodes agree on a live leader).
//!
//! Knobs are the world's: non-FIFO channels, crashes (each followed by a restart, of any
//! node), stale timers, lost messages ([`CheckOpts::lose`]), and which timers may fire
//! ([`TimerOrder`]). Time: by default any armed timer may fire ([`Choice::Fire`]), so a
//! check assumes nothing about timing and a timeout may come before what it waits for;
//! worlds hash timers as a set, which is exact then. With [`TimerOrder::Earliest`] only
//! the earliest fires, as in the simulator, but states still compare without timer
//! times, so where several timers are armed at once the search is an
//! under-approximation. [`CheckOpts::forget`] lets nodes clear dead fields. Limits: [`CheckOpts::max_states`] and
//! [`CheckOpts::max_seconds`]; a search cut short says why.

use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::algorithm::{Config, Node, ServiceKind};
use crate::sim::{Choice, Failure, SimService, World};

/// What to check: the size of the model and the world's knobs, and the search's limits.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckOpts {
    /// Number of nodes.
    pub n: u32,
    /// Entries per node (mutual exclusion) or elections per initiator.
    pub entries: u32,
    /// Stop after this many distinct states.
    pub max_states: u64,
    /// Stop after this many seconds.
    pub max_seconds: f64,
    /// Any message in flight on a channel may be delivered first.
    pub non_fifo: bool,
    /// Up to this many crashes (of any node, each followed by a restart).
    pub crashes: u32,
    /// A reset or cancelled timer may still fire once.
    pub stale_timers: bool,
    /// Which armed timers may fire next (the checker's default: any of them).
    pub timers: TimerOrder,
    /// Up to this many messages in flight may be lost.
    pub lose: u32,
    /// Let nodes forget fields no later step reads ([`crate::algorithm::Node::forget`]):
    /// fewer states, the same verdicts. Off by default, so counts match models that do
    /// not (the Stateright bench).
    pub forget: bool,
}

/// Which armed timer may fire next, `--timers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerOrder {
    /// Any armed timer, however long it has still to run: no timing assumption at all,
    /// so a timeout may come before what it waits for (a false suspicion).
    Any,
    /// Only the earliest, as the simulator: timers keep their order, but states that
    /// differ only in that order count as one, so with several timers armed at once the
    /// search is not exhaustive.
    Earliest,
}

impl CheckOpts {
    /// `n` nodes, `entries` each, no knobs, a million states and a minute at most.
    pub fn new(n: u32, entries: u32) -> CheckOpts {
        CheckOpts {
            n,
            entries,
            max_states: 1_000_000,
            max_seconds: 60.0,
            non_fifo: false,
            crashes: 0,
            stale_timers: false,
            timers: TimerOrder::Any,
            lose: 0,
            forget: false,
        }
    }
}

/// A property the checker checks, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// Never two applications inside at once.
    MutualExclusion,
    /// Never two leaders for one term, never a term going back (elections).
    OneLeaderPerTerm,
    /// The algorithm keeps the driver contract (no unasked entry, no message to itself
    /// or to a node that does not exist) and the simulator keeps its own.
    DriverContract,
    /// No node fails on its own (a program behind it dies or breaks a rule).
    NodeFailure,
    /// No state where an application waits and nothing can happen but crashes.
    NoDeadlock,
    /// Every terminal state is done: every request served (elections: the live nodes
    /// agree on a live leader).
    EveryRequestServed,
}

impl Property {
    /// The name the summary gives it.
    pub fn name(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual exclusion",
            Property::OneLeaderPerTerm => "one leader per term",
            Property::DriverContract => "driver contract",
            Property::NodeFailure => "no node failure",
            Property::NoDeadlock => "no deadlock",
            Property::EveryRequestServed => "every request served",
        }
    }

    /// The properties checked for a service, in the order the summary lists them.
    pub fn checked(service: ServiceKind) -> Vec<Property> {
        let safety = match service {
            ServiceKind::Mutex => Property::MutualExclusion,
            ServiceKind::Election => Property::OneLeaderPerTerm,
        };
        vec![
            safety,
            Property::DriverContract,
            Property::NodeFailure,
            Property::NoDeadlock,
            Property::EveryRequestServed,
        ]
    }

    /// The property a failure of [`World::apply`] violates.
    fn of(failure: &Failure) -> Property {
        match failure {
            Failure::Overlap { .. } => Property::MutualExclusion,
            Failure::SplitBrain { .. } | Failure::TermBackwards { .. } => Property::OneLeaderPerTerm,
            Failure::NodeFailed { .. } => Property::NodeFailure,
            Failure::Deadlock { .. } | Failure::StepLimit { .. } => Property::NoDeadlock,
            Failure::UnaskedEnter { .. }
            | Failure::SelfSend { .. }
            | Failure::NoSuchPeer { .. }
            | Failure::Driver { .. }
            | Failure::Replay { .. } => Property::DriverContract,
        }
    }

    /// Checked at terminal states only (else at every state).
    fn at_terminal_states(self) -> bool {
        self == Property::EveryRequestServed
    }
}

/// How one property fared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PropertyResult {
    /// Its name.
    pub name: &'static str,
    /// It held on every state it was checked on.
    pub held: bool,
    /// The states it was checked on (terminal states for `every request served`).
    pub states: u64,
}

/// A violation and the shortest way to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counterexample {
    /// The property violated.
    pub property: &'static str,
    /// What went wrong, in one line.
    pub failure: String,
    /// The choices from the initial world, in order ([`crate::sim::Sim::replay`] repeats them).
    pub choices: Vec<Choice>,
    /// What happened, step by step: the world's notes for each choice.
    pub steps: Vec<Vec<String>>,
}

/// What a check found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    /// Number of nodes.
    pub n: u32,
    /// Entries per node.
    pub entries: u32,
    /// Distinct states found.
    pub states: u64,
    /// Transitions taken (choices applied).
    pub transitions: u64,
    /// The deepest state's distance from the start.
    pub max_depth: u32,
    /// Time taken, in seconds.
    pub seconds: f64,
    /// Every reachable state was explored (or the search stopped at a violation).
    pub complete: bool,
    /// Why the search was cut short, if it was.
    pub cut_short: Option<String>,
    /// Each property checked.
    pub properties: Vec<PropertyResult>,
    /// The first violation found, with its shortest counterexample.
    pub violation: Option<Counterexample>,
}

impl CheckReport {
    /// Distinct states per second.
    pub fn states_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.states as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// The summary `mutexlab check` prints.
    pub fn text(&self, algo: &str) -> String {
        let mut s = format!("check {algo}: n = {}, k = {}\n", self.n, self.entries);
        s.push_str(&format!(
            "states: {}, transitions: {}, max depth: {}, time: {:.2} s, {:.0} states/s\n",
            self.states,
            self.transitions,
            self.max_depth,
            self.seconds,
            self.states_per_second()
        ));
        match (&self.cut_short, &self.violation) {
            (Some(why), _) => s.push_str(&format!("search: cut short ({why})\n")),
            (None, Some(_)) => s.push_str("search: stopped at the first violation\n"),
            (None, None) => s.push_str("search: complete\n"),
        }
        for p in &self.properties {
            if p.held {
                s.push_str(&format!("  {:<22} held on {} states\n", p.name, p.states));
            } else {
                s.push_str(&format!("  {:<22} VIOLATED\n", p.name));
            }
        }
        if let Some(v) = &self.violation {
            // "mutual exclusion violated: …" names its property already.
            let what = if v.failure.starts_with(v.property) {
                v.failure.clone()
            } else {
                format!("{}: {}", v.property, v.failure)
            };
            s.push_str(&format!("counterexample ({} steps, the shortest): {what}\n", v.choices.len()));
            for (i, lines) in v.steps.iter().enumerate() {
                let text = if lines.is_empty() { "(nothing seen)".to_string() } else { lines.join("; ") };
                s.push_str(&format!("  {:>3}. {text}\n", i + 1));
            }
        }
        s
    }
}

/// Progress, handed to the caller about once a second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Distinct states so far.
    pub states: u64,
    /// Depth reached.
    pub depth: u32,
    /// States waiting in the frontier.
    pub queue: usize,
    /// Seconds since the start.
    pub seconds: f64,
}

fn fingerprint<T: Hash>(value: &T) -> u64 {
    // SipHash with fixed keys: the same state gets the same fingerprint on every run.
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// The initial world of a check, not started.
fn initial<N: Node>(opts: &CheckOpts) -> World<N>
where
    N::Service: SimService,
{
    let configs = (0..opts.n).map(|i| Config::new(i, opts.n)).collect();
    let world = World::<N>::new(configs, opts.entries)
        .stale_timers(opts.stale_timers)
        .any_timer(opts.timers == TimerOrder::Any)
        .lose(opts.lose)
        .forget(opts.forget);
    let world = if opts.non_fifo { world.non_fifo() } else { world };
    world.crashes(opts.crashes, |_| true)
}

/// What a state itself says: a failure at the end (deadlock, unserved request) or none.
fn judge<N: Node>(world: &World<N>, enabled: &[Choice]) -> Option<(Property, String)>
where
    N::Service: SimService,
{
    if world.done() || !enabled.iter().all(|c| matches!(c, Choice::Crash { .. })) {
        return None;
    }
    let waiting = world.waiting();
    if waiting.is_empty() {
        Some((Property::EveryRequestServed, "a terminal state that is not done".into()))
    } else {
        Some((Property::NoDeadlock, Failure::Deadlock { waiting }.to_string()))
    }
}

/// Check node type `N`, which provides `service`, breadth-first (see the module doc);
/// `progress` is called about once a second. What the registry runs for an algorithm by
/// name.
pub fn check<N: Node>(
    service: ServiceKind,
    opts: &CheckOpts,
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport
where
    N::Service: SimService,
{
    let started = Instant::now();
    let mut quiet = |_: Duration, _: String| {};
    let mut start = initial::<N>(opts);
    let mut report = CheckReport {
        n: opts.n,
        entries: opts.entries,
        states: 0,
        transitions: 0,
        max_depth: 0,
        seconds: 0.0,
        complete: false,
        cut_short: None,
        properties: Vec::new(),
        violation: None,
    };
    let mut terminals = 0u64;
    let mut found: Option<(Property, String, u64)> = None;
    let mut visited: HashMap<u64, (u64, Choice)> = HashMap::new();
    // Each world waits with its depth, fingerprint and choices, all worked out when it
    // was found (to judge it), so none is computed twice.
    let mut frontier: VecDeque<(World<N>, u32, u64, Vec<Choice>)> = VecDeque::new();
    match crate::panics::quietly(|| start.start(&mut quiet)) {
        Err(panic) => found = Some((Property::NodeFailure, format!("a node panicked: {panic}"), 0)),
        Ok(Err(f)) => found = Some((Property::of(&f), f.to_string(), 0)),
        Ok(Ok(())) => {
            let fp = fingerprint(&start);
            // The start is its own parent; the choice is never read.
            visited.insert(fp, (fp, Choice::Timer));
            let enabled = start.enabled();
            match judge(&start, &enabled) {
                Some((p, why)) => found = Some((p, why, fp)),
                None => frontier.push_back((start, 0, fp, enabled)),
            }
        }
    }
    let mut last_progress = started;
    'search: while let Some((world, depth, parent, enabled)) = frontier.pop_front() {
        if world.done() {
            terminals += 1;
            continue;
        }
        if enabled.iter().all(|c| matches!(c, Choice::Crash { .. })) {
            terminals += 1;
        }
        for choice in enabled {
            let mut next = world.clone();
            report.transitions += 1;
            // A node's panic (a lab skeleton's unwritten handler, an assertion) is its
            // failure, with the way to it, not a backtrace.
            let applied = crate::panics::quietly(|| next.apply(choice, &mut quiet));
            let fp = fingerprint(&next);
            let Entry::Vacant(slot) = visited.entry(fp) else { continue };
            slot.insert((parent, choice));
            report.max_depth = report.max_depth.max(depth + 1);
            match applied {
                Ok(Ok(())) => {}
                Ok(Err(f)) => {
                    found = Some((Property::of(&f), f.to_string(), fp));
                    break 'search;
                }
                Err(panic) => {
                    found = Some((Property::NodeFailure, format!("a node panicked: {panic}"), fp));
                    break 'search;
                }
            }
            let next_enabled = next.enabled();
            if let Some((p, why)) = judge(&next, &next_enabled) {
                found = Some((p, why, fp));
                break 'search;
            }
            frontier.push_back((next, depth + 1, fp, next_enabled));
        }
        if visited.len() as u64 >= opts.max_states {
            report.cut_short = Some(format!("--max-states {} reached", opts.max_states));
            break;
        }
        if report.transitions % 1024 < 64 {
            let now = Instant::now();
            if now.duration_since(started).as_secs_f64() >= opts.max_seconds {
                report.cut_short = Some(format!("--max-seconds {} reached", opts.max_seconds));
                break;
            }
            if now.duration_since(last_progress) >= Duration::from_secs(1) {
                last_progress = now;
                progress(&Progress {
                    states: visited.len() as u64,
                    depth,
                    queue: frontier.len(),
                    seconds: now.duration_since(started).as_secs_f64(),
                });
            }
        }
    }
    report.states = visited.len() as u64;
    report.seconds = started.elapsed().as_secs_f64();
    report.complete = report.cut_short.is_none();
    let violated = found.as_ref().map(|(p, ..)| *p);
    for p in Property::checked(service) {
        let states = if p.at_terminal_states() { terminals } else { report.states };
        report.properties.push(PropertyResult { name: p.name(), held: violated != Some(p), states });
    }
    if let Some((p, failure, fp)) = found {
        let choices = path(&visited, fp);
        let steps = replay::<N>(opts, &choices);
        report.violation = Some(Counterexample { property: p.name(), failure, choices, steps });
    }
    report
}

/// The choices from the start to the state with fingerprint `fp`, by its parents.
fn path(visited: &HashMap<u64, (u64, Choice)>, mut fp: u64) -> Vec<Choice> {
    let mut choices = Vec::new();
    while let Some(&(parent, choice)) = visited.get(&fp) {
        if parent == fp {
            break;
        }
        choices.push(choice);
        fp = parent;
    }
    choices.reverse();
    choices
}

/// Replay `choices` from the initial world, keeping the notes of each step (the start's
/// are left out: every node starts).
fn replay<N: Node>(opts: &CheckOpts, choices: &[Choice]) -> Vec<Vec<String>>
where
    N::Service: SimService,
{
    let mut world = initial::<N>(opts);
    let _ = crate::panics::quietly(|| world.start(&mut |_, _| {}));
    choices
        .iter()
        .map(|&c| {
            let mut lines = Vec::new();
            let _ = crate::panics::quietly(|| world.apply(c, &mut |_, line| lines.push(line)));
            lines
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algos::baseline::Immediate;
    use crate::algos::lamport::Lamport;
    use crate::algos::ricart_agrawala::RicartAgrawala;

    fn quiet(_: &Progress) {}

    #[test]
    fn ricart_agrawala_n3_k1_holds_everything_on_every_state() {
        let r = check::<RicartAgrawala>(ServiceKind::Mutex, &CheckOpts::new(3, 1), &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("ricart-agrawala"));
        assert!(r.properties.iter().all(|p| p.held));
        assert_eq!(r.states, 2_101, "the count an outside search over the same World found");
    }

    #[test]
    fn the_none_baseline_overlaps_in_a_few_steps() {
        let r = check::<Immediate>(ServiceKind::Mutex, &CheckOpts::new(2, 1), &mut quiet);
        let v = r.violation.clone().expect("no coordination must be caught");
        assert_eq!(v.property, "mutual exclusion");
        // w0 asks, is let in; w1 asks, is let in.
        assert!(v.choices.len() <= 4, "{}", r.text("none"));
        assert!(!r.properties[0].held);
    }

    #[test]
    fn a_counterexample_replays_in_the_simulator_to_the_same_failure() {
        let mut opts = CheckOpts::new(2, 1);
        opts.non_fifo = true;
        let r = check::<Lamport>(ServiceKind::Mutex, &opts, &mut quiet);
        let v = r.violation.expect("Lamport needs FIFO channels");
        assert_eq!(v.property, "mutual exclusion");
        let e = crate::sim::Sim::<Lamport>::new(2, 0).non_fifo().replay(1, &v.choices).unwrap_err();
        assert!(matches!(e.failure, Failure::Overlap { .. }), "{e}");
        assert_eq!(e.choices, v.choices);
    }

    #[test]
    fn lamport_with_fifo_holds_at_n2() {
        let r = check::<Lamport>(ServiceKind::Mutex, &CheckOpts::new(2, 1), &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("lamport"));
    }

    /// A lab skeleton's node: its first handler is not written yet.
    #[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
    struct Unwritten;

    impl crate::algorithm::Algorithm for Unwritten {
        type Msg = crate::algos::baseline::Msg;
        type Timer = crate::algorithm::NoTimer;
        fn new(_cfg: &Config) -> Self {
            Unwritten
        }
        fn on_want_cs(&mut self, _out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            crate::panics::unwritten("on_want_cs")
        }
        fn on_message(
            &mut self,
            _: crate::algorithm::PeerId,
            msg: Self::Msg,
            _: &mut crate::algorithm::Out<Self::Msg, Self::Timer>,
        ) {
            match msg {}
        }
        fn on_cs_done(&mut self, _out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {}
    }

    #[test]
    fn a_node_that_panics_fails_with_one_line_and_the_way_there() {
        let r = check::<Unwritten>(ServiceKind::Mutex, &CheckOpts::new(2, 1), &mut quiet);
        let v = r.violation.expect("a panic is the node's failure");
        assert_eq!(v.property, "no node failure");
        assert!(v.failure.starts_with("a node panicked: on_want_cs is not written yet"), "{}", v.failure);
        assert_eq!(v.choices, vec![Choice::Call { node: 0, index: 0 }]);
    }

    #[test]
    fn forgetting_dead_tickets_merges_states_and_is_off_by_default() {
        let mut opts = CheckOpts::new(3, 2);
        let plain = check::<RicartAgrawala>(ServiceKind::Mutex, &opts, &mut quiet);
        assert_eq!(plain.states, 34_845, "the Stateright model's count");
        opts.forget = true;
        let r = check::<RicartAgrawala>(ServiceKind::Mutex, &opts, &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("ricart-agrawala"));
        assert_eq!(r.states, 30_846, "a ticket is dead once its request is over");
    }

    #[test]
    fn a_lost_message_leaves_the_centralized_requester_waiting_forever() {
        use crate::algos::centralized::Centralized;
        let mut opts = CheckOpts::new(2, 1);
        assert!(check::<Centralized>(ServiceKind::Mutex, &opts, &mut quiet).violation.is_none());
        opts.lose = 1;
        let r = check::<Centralized>(ServiceKind::Mutex, &opts, &mut quiet);
        let v = r.violation.clone().expect("a lost REQUEST or GRANT is never made good");
        assert_eq!(v.property, "no deadlock", "{}", r.text("centralized"));
        assert!(v.choices.iter().any(|c| matches!(c, Choice::Lose { .. })));
        assert!(v.steps.iter().flatten().any(|l| l.ends_with("is lost")), "{:?}", v.steps);
        let e = crate::sim::Sim::<Centralized>::new(2, 0).lose(1).replay(1, &v.choices).unwrap_err();
        assert!(matches!(e.failure, Failure::Deadlock { .. }), "{e}");
    }

    #[test]
    fn bully_at_n2_is_finite_whichever_timer_may_fire() {
        use crate::algos::bully::Bully;
        let mut opts = CheckOpts::new(2, 1);
        assert_eq!(opts.timers, TimerOrder::Any, "the checker makes no timing assumption");
        let any = check::<Bully>(ServiceKind::Election, &opts, &mut quiet);
        assert!(any.complete && any.violation.is_none(), "{}", any.text("bully"));
        assert_eq!(any.states, 107);
        opts.timers = TimerOrder::Earliest;
        let earliest = check::<Bully>(ServiceKind::Election, &opts, &mut quiet);
        assert_eq!(earliest.states, 107);
    }

    #[test]
    fn a_state_limit_cuts_the_search_short_and_says_so() {
        let mut opts = CheckOpts::new(3, 1);
        opts.max_states = 100;
        let r = check::<RicartAgrawala>(ServiceKind::Mutex, &opts, &mut quiet);
        assert!(!r.complete);
        assert_eq!(r.cut_short.as_deref(), Some("--max-states 100 reached"));
        assert!(r.text("ricart-agrawala").contains("cut short (--max-states 100 reached)"));
    }
}
