//! The model checker: every interleaving of the same node code the workers run, for a
//! small number of nodes, breadth-first from the start, so a violation comes with its
//! shortest counterexample (`mutexlab check`; issue 18, design note `check.md`); or
//! depth-first ([`CheckOpts::dfs`]) with an optional depth bound, in little memory, with
//! a counterexample that need not be the shortest. Breadth-first may run on several
//! threads ([`CheckOpts::threads`]), level by level, finding the same states. The
//! engines are in `check/search.rs`.
//!
//! It is a third scheduler of the simulator's [`World`] (after [`crate::sim::Sim`]'s seeded
//! one and a replay): instead of picking one enabled [`Choice`] it takes each in turn.
//! Worlds compare and hash by protocol state, so the visited set holds only a 64-bit
//! fingerprint of each state with its parent's fingerprint and the choice that led
//! there (depth-first: with the depth it was found at); only the frontier (depth-first:
//! the path) holds whole worlds, kept without the simulator's tallies. A counterexample is rebuilt by walking
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
//! node), stale timers. Time: the world's [`Choice::Timer`] fires the earliest armed
//! timer, and this first cut keeps that (the design note wants "any armed timer may
//! fire"). Worlds hash timers as a set, not by their times, so where several timers are
//! armed at once a state reached with another timer order is taken for the one seen
//! first: the search is exhaustive for algorithms with at most one armed timer at a
//! time, and an under-approximation otherwise. Limits: [`CheckOpts::max_states`],
//! [`CheckOpts::max_seconds`] and [`CheckOpts::max_depth`]; a search cut short says why.
//! The summary gives states, transitions, depth, time and the process's peak memory.

use std::time::Instant;

use serde::Serialize;

use crate::algorithm::{Config, Node, ServiceKind};
use crate::sim::{Choice, Failure, SimService, World};

mod search;

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
    /// Depth-first instead of breadth-first: little memory, but a counterexample need
    /// not be the shortest.
    pub dfs: bool,
    /// Expand no state this many steps from the start (`None`: no bound).
    pub max_depth: Option<u32>,
    /// Threads for a breadth-first search (depth-first runs on one).
    pub threads: u32,
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
            dfs: false,
            max_depth: None,
            threads: 1,
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
    /// Found breadth-first, so no counterexample is shorter (depth-first: it may be).
    pub shortest: bool,
}

/// What a check found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    /// Number of nodes.
    pub n: u32,
    /// Entries per node.
    pub entries: u32,
    /// How the search went: `breadth-first` or `depth-first`.
    pub search: &'static str,
    /// Threads searching.
    pub threads: u32,
    /// Distinct states found.
    pub states: u64,
    /// Transitions taken (choices applied).
    pub transitions: u64,
    /// The deepest state's distance from the start.
    pub max_depth: u32,
    /// Time taken, in seconds.
    pub seconds: f64,
    /// The process's peak resident memory (VmHWM), in bytes, where the system says.
    pub peak_memory_bytes: Option<u64>,
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
        let memory = match self.peak_memory_bytes {
            Some(b) => format!(", peak memory: {:.0} MB", b as f64 / 1e6),
            None => String::new(),
        };
        let how = match self.threads {
            1 => self.search.to_string(),
            t => format!("{} on {t} threads", self.search),
        };
        s.push_str(&format!(
            "states: {}, transitions: {}, max depth: {}, time: {:.2} s, {:.0} states/s{memory}\n",
            self.states,
            self.transitions,
            self.max_depth,
            self.seconds,
            self.states_per_second()
        ));
        match (&self.cut_short, &self.violation) {
            (Some(why), _) => s.push_str(&format!("search: cut short ({why}), {how}\n")),
            (None, Some(_)) => s.push_str(&format!("search: stopped at the first violation, {how}\n")),
            (None, None) => s.push_str(&format!("search: complete, {how}\n")),
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
            let which = if v.shortest { "the shortest" } else { "depth-first, not necessarily the shortest" };
            s.push_str(&format!("counterexample ({} steps, {which}): {what}\n", v.choices.len()));
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

/// The initial world of a check, not started.
fn initial<N: Node>(opts: &CheckOpts) -> World<N>
where
    N::Service: SimService,
{
    let configs = (0..opts.n).map(|i| Config::new(i, opts.n)).collect();
    let world = World::<N>::new(configs, opts.entries).stale_timers(opts.stale_timers).without_tallies();
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

/// Check node type `N`, which provides `service`, breadth-first or depth-first as `opts`
/// say (see the module doc); `progress` is called about once a second. What the
/// registry runs for an algorithm by name.
pub fn check<N: Node>(
    service: ServiceKind,
    opts: &CheckOpts,
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport
where
    N::Service: SimService,
{
    let started = Instant::now();
    let threads = if opts.dfs { 1 } else { opts.threads.max(1) };
    let found = if opts.dfs {
        search::dfs::<N>(opts, started, progress)
    } else {
        search::bfs::<N>(opts, threads as usize, started, progress)
    };
    let mut report = CheckReport {
        n: opts.n,
        entries: opts.entries,
        search: if opts.dfs { "depth-first" } else { "breadth-first" },
        threads,
        states: found.states,
        transitions: found.transitions,
        max_depth: found.max_depth,
        seconds: started.elapsed().as_secs_f64(),
        peak_memory_bytes: peak_memory(),
        complete: found.cut_short.is_none(),
        cut_short: found.cut_short,
        properties: Vec::new(),
        violation: None,
    };
    let violated = found.violation.as_ref().map(|(p, ..)| *p);
    for p in Property::checked(service) {
        let states = if p.at_terminal_states() { found.terminals } else { report.states };
        report.properties.push(PropertyResult { name: p.name(), held: violated != Some(p), states });
    }
    if let Some((p, failure, choices)) = found.violation {
        let steps = replay::<N>(opts, &choices);
        report.violation =
            Some(Counterexample { property: p.name(), failure, choices, steps, shortest: !opts.dfs });
    }
    report
}

/// The process's peak resident memory so far, from `/proc/self/status` (Linux); `None`
/// elsewhere.
pub fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
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
    fn a_state_limit_cuts_the_search_short_and_says_so() {
        let mut opts = CheckOpts::new(3, 1);
        opts.max_states = 100;
        let r = check::<RicartAgrawala>(ServiceKind::Mutex, &opts, &mut quiet);
        assert!(!r.complete);
        assert_eq!(r.cut_short.as_deref(), Some("--max-states 100 reached"));
        assert!(r.text("ricart-agrawala").contains("cut short (--max-states 100 reached)"));
    }

    fn with(n: u32, k: u32, set: impl FnOnce(&mut CheckOpts)) -> CheckOpts {
        let mut opts = CheckOpts::new(n, k);
        set(&mut opts);
        opts
    }

    #[test]
    fn depth_first_finds_every_state_breadth_first_finds() {
        let bfs = check::<RicartAgrawala>(ServiceKind::Mutex, &CheckOpts::new(3, 1), &mut quiet);
        let dfs = check::<RicartAgrawala>(ServiceKind::Mutex, &with(3, 1, |o| o.dfs = true), &mut quiet);
        assert!(dfs.complete && dfs.violation.is_none(), "{}", dfs.text("ricart-agrawala"));
        assert_eq!((dfs.states, dfs.transitions), (bfs.states, bfs.transitions));
        assert_eq!(dfs.properties, bfs.properties, "the same terminal states too");
        assert_eq!(dfs.search, "depth-first");
        assert!(dfs.text("ricart-agrawala").contains("search: complete, depth-first"));
    }

    #[test]
    fn depth_first_finds_a_counterexample_and_does_not_call_it_the_shortest() {
        let opts = with(2, 1, |o| {
            o.non_fifo = true;
            o.dfs = true;
        });
        let r = check::<Lamport>(ServiceKind::Mutex, &opts, &mut quiet);
        let v = r.violation.clone().expect("Lamport needs FIFO channels, depth-first too");
        assert_eq!(v.property, "mutual exclusion");
        assert!(!v.shortest);
        let text = r.text("lamport");
        assert!(
            text.contains("steps, depth-first, not necessarily the shortest): mutual exclusion"),
            "{text}"
        );
        assert!(!text.contains("steps, the shortest)"), "{text}");
        // Its choices are a real way there.
        let e = crate::sim::Sim::<Lamport>::new(2, 0).non_fifo().replay(1, &v.choices).unwrap_err();
        assert!(matches!(e.failure, Failure::Overlap { .. }), "{e}");
    }

    #[test]
    fn a_depth_bound_is_kept_and_the_search_says_it_was_cut() {
        for dfs in [false, true] {
            let r = check::<RicartAgrawala>(
                ServiceKind::Mutex,
                &with(3, 1, |o| {
                    o.dfs = dfs;
                    o.max_depth = Some(5);
                }),
                &mut quiet,
            );
            assert!(r.max_depth <= 5, "{}", r.text("ricart-agrawala"));
            assert!(!r.complete);
            let why = r.cut_short.clone().unwrap_or_default();
            assert!(why.starts_with("--max-depth 5 reached; "), "{why}");
            assert!(r.states < 2_101);
            // Within the bound, the two searches see the same states: a state first
            // reached deep is explored again when reached shallower.
            let bfs = check::<RicartAgrawala>(
                ServiceKind::Mutex,
                &with(3, 1, |o| o.max_depth = Some(5)),
                &mut quiet,
            );
            assert_eq!(r.states, bfs.states, "dfs = {dfs}");
        }
        for dfs in [false, true] {
            let r = check::<RicartAgrawala>(
                ServiceKind::Mutex,
                &with(2, 1, |o| {
                    o.dfs = dfs;
                    o.max_depth = Some(0);
                }),
                &mut quiet,
            );
            assert_eq!((r.states, r.transitions), (1, 0), "only the start, dfs = {dfs}");
            assert_eq!(r.cut_short.as_deref(), Some("--max-depth 0 reached; 1 states there not expanded"));
        }
        // The overlap is 4 steps deep: a bound of 3 does not reach it.
        let r = check::<Lamport>(
            ServiceKind::Mutex,
            &with(2, 1, |o| {
                o.non_fifo = true;
                o.dfs = true;
                o.max_depth = Some(3);
            }),
            &mut quiet,
        );
        assert!(r.violation.is_none() && !r.complete, "{}", r.text("lamport"));
    }

    #[test]
    fn threads_find_the_same_states_as_one() {
        let one = check::<RicartAgrawala>(ServiceKind::Mutex, &CheckOpts::new(3, 1), &mut quiet);
        for threads in [2, 3, 8] {
            let r =
                check::<RicartAgrawala>(ServiceKind::Mutex, &with(3, 1, |o| o.threads = threads), &mut quiet);
            assert_eq!(r.threads, threads);
            assert!(r.complete);
            assert_eq!((r.states, r.transitions, r.max_depth), (one.states, one.transitions, one.max_depth));
            assert_eq!(r.properties, one.properties, "{threads} threads");
            assert!(r.text("ricart-agrawala").contains(&format!("breadth-first on {threads} threads")));
        }
    }

    #[test]
    fn threads_still_give_a_shortest_counterexample() {
        let one = check::<Lamport>(ServiceKind::Mutex, &with(2, 1, |o| o.non_fifo = true), &mut quiet);
        let two = check::<Lamport>(
            ServiceKind::Mutex,
            &with(2, 1, |o| {
                o.non_fifo = true;
                o.threads = 2;
            }),
            &mut quiet,
        );
        let (one, two) = (one.violation.unwrap(), two.violation.unwrap());
        assert_eq!(one.choices.len(), two.choices.len());
        assert!(two.shortest);
    }

    #[test]
    fn the_summary_gives_peak_memory() {
        let r = check::<RicartAgrawala>(ServiceKind::Mutex, &CheckOpts::new(2, 1), &mut quiet);
        let bytes = r.peak_memory_bytes.expect("Linux says in /proc/self/status");
        assert!(bytes > 1_000_000, "{bytes}");
        assert!(r.text("ricart-agrawala").contains(" MB"), "{}", r.text("ricart-agrawala"));
    }
}
