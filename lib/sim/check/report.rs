//! What a check found: each property and how far it held, the counterexample if any
//! (the path, the shortest the search could find, with its run files), and the summary
//! the command prints ([`CheckReport`]); progress along the way ([`Progress`]).

use serde::Serialize;

use super::CheckOpts;
use crate::algorithm::ServiceKind;
use crate::record::RunFiles;
use crate::{Choice, Failure};

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
    /// Every terminal state is done: every request served (mutual exclusion).
    EveryRequestServed,
    /// While a node's application waits, the others enter at most
    /// [`CheckOpts::bypass_bound`] times (mutual exclusion, where a bound is promised).
    Bypass,
    /// Elections: every terminal state is done, the live nodes agreeing on a live leader.
    AgreementWhenQuiet,
    /// Elections: the leader the live nodes agree on is the highest live id (where the
    /// algorithm promises it: [`CheckOpts::highest_wins`]).
    HighestLiveId,
    /// An algorithm's or a user's own `Invariant`, by its name.
    Invariant(&'static str),
    /// Mutual exclusion, with [`CheckOpts::liveness`]: no request waits for ever round
    /// a cycle of states that takes every delivery, timer and call that stays enabled
    /// (weak fairness).
    FairCycles,
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
            Property::Bypass => "bypass bound",
            Property::AgreementWhenQuiet => "agreement when quiet",
            Property::HighestLiveId => "highest live id",
            Property::Invariant(name) => name,
            Property::FairCycles => "every request served (fair cycles)",
        }
    }

    /// The properties checked for a service with these options, in the order the
    /// summary lists them (invariants of one's own come after).
    pub fn checked(service: ServiceKind, opts: &CheckOpts) -> Vec<Property> {
        match service {
            ServiceKind::Mutex => {
                let mut ps = vec![
                    Property::MutualExclusion,
                    Property::DriverContract,
                    Property::NodeFailure,
                    Property::NoDeadlock,
                    Property::EveryRequestServed,
                ];
                ps.extend(opts.bypass_bound.map(|_| Property::Bypass));
                ps
            }
            ServiceKind::Election => {
                let mut ps = vec![
                    Property::OneLeaderPerTerm,
                    Property::DriverContract,
                    Property::NodeFailure,
                    Property::AgreementWhenQuiet,
                ];
                ps.extend(opts.highest_wins.then_some(Property::HighestLiveId));
                ps
            }
        }
    }

    /// The property a failure of [`World::apply`] violates.
    pub(super) fn of(failure: &Failure) -> Property {
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
    pub(super) fn at_terminal_states(self) -> bool {
        matches!(self, Property::EveryRequestServed | Property::AgreementWhenQuiet | Property::HighestLiveId)
    }
}

/// How one property fared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PropertyResult {
    /// Its name.
    pub name: &'static str,
    /// It held on every state it was checked on.
    pub held: bool,
    /// The states it was checked on (terminal states for `every request served`).
    pub states: u64,
    /// It is judged at terminal states only (else at every state).
    pub terminal: bool,
    /// More to say: for `bypass bound`, the bound and the most seen.
    pub detail: Option<String>,
}

/// A violation and a way to it: the shortest breadth-first, not necessarily depth-first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Counterexample {
    /// The property violated.
    pub property: &'static str,
    /// What went wrong, in one line.
    pub failure: String,
    /// The choices from the initial world, in order ([`crate::Sim::replay`] repeats them).
    pub choices: Vec<Choice>,
    /// What happened, step by step: the world's notes for each choice.
    pub steps: Vec<Vec<String>>,
    /// The replay as a run directory's files (`check --out DIR` writes them).
    #[serde(skip)]
    pub run: RunFiles,
    /// Found breadth-first, so no counterexample is shorter (depth-first: it may be).
    pub shortest: bool,
    /// A lasso (`every request served (fair cycles)`): the choices from this index
    /// (from 0) to the end are a cycle, which repeats for ever.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle_start: Option<usize>,
}

impl Counterexample {
    /// The property and what went wrong, in one line (the property once: "mutual
    /// exclusion violated: …" names it already).
    pub fn headline(&self) -> String {
        if self.failure.starts_with(self.property) {
            self.failure.clone()
        } else {
            format!("{}: {}", self.property, self.failure)
        }
    }

    /// Step `i` (from 0) in one line: its notes, or `(nothing seen)`.
    pub fn step(&self, i: usize) -> String {
        match self.steps.get(i) {
            Some(lines) if !lines.is_empty() => lines.join("; "),
            _ => "(nothing seen)".to_string(),
        }
    }
}

/// What a check found.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
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
    /// The first violation found, with its counterexample (the shortest, breadth-first).
    pub violation: Option<Counterexample>,
    /// Mutual exclusion: the most times others entered while one node's application
    /// waited, in the states explored. Exact up to the bound + 1 when a bound is
    /// checked; without one, a lower bound (the count is not part of the state, so a
    /// state reached again with a higher count is not explored again).
    pub most_bypasses: Option<u32>,
    /// The timer budget the check ran with (`--timer-fires`), if any.
    pub timer_fires: Option<u32>,
    /// States where only that budget stopped anything from happening: at the bound,
    /// not judged as terminal.
    pub at_timer_bound: u64,
    /// The counter bound the check ran with (`--counter-bound`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter_bound: Option<u64>,
    /// States past that bound: judged, not expanded, not taken as terminal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_counter_bound: Option<u64>,
    /// What this check does not judge.
    pub not_checked: Vec<String>,
    /// The liveness pass (`--liveness`), if it ran: it runs after a safety search that
    /// found no violation, for mutual exclusion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liveness: Option<LivenessResult>,
    /// The search was up to symmetry (`--symmetry`): `states` counts one state for each
    /// state and its renamed twins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symmetry: Option<SymmetryResult>,
}

/// A search up to symmetry: how many renamings it tried, and the full count.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SymmetryResult {
    /// The renamings of the node type's group (the identity among them).
    pub renamings: u64,
    /// The distinct states the states found stand for, their renamed twins counted (the
    /// sum of their orbits): what the full search finds when it is complete. `None`
    /// where the start is not symmetric, so the full count is not known.
    pub full_states: Option<u64>,
}

/// How the liveness pass went: its own exploration, without a timer budget, keeping
/// the graph of states to look for cycles in.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LivenessResult {
    /// Distinct states in its graph.
    pub states: u64,
    /// Edges in its graph.
    pub transitions: u64,
    /// States past the counter bound, if one was set: in the graph, with no edges, so
    /// no cycle goes through them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_counter_bound: Option<u64>,
    /// Time it took, in seconds.
    pub seconds: f64,
    /// No limit cut it short: every state within the bounds was explored, or it
    /// stopped at a lasso. A lasso found holds anyway; without one, a pass cut short
    /// decides nothing.
    pub complete: bool,
    /// Why it was cut short, if it was.
    pub cut_short: Option<String>,
    /// It stopped once the states it had explored held a lasso (it looks each time
    /// their number doubles), so not every state was explored.
    pub stopped_at_lasso: bool,
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
        if let Some(sym) = &self.symmetry {
            let full = match sym.full_states {
                Some(f) => format!("; they stand for {f} states, renamed twins counted"),
                None => "; the start is not symmetric, so the full count is not known".into(),
            };
            s.push_str(&format!(
                "symmetry: {} states up to symmetry ({} renamings of the nodes){full}\n",
                self.states, sym.renamings
            ));
        }
        match (&self.cut_short, &self.violation) {
            (Some(why), _) => s.push_str(&format!(
                "search: incomplete, cut short ({why}), {how}; what follows holds of the {} states reached, not of all\n",
                self.states
            )),
            // A lasso comes from the liveness pass, after a safety search that finished.
            (None, Some(v)) if v.cycle_start.is_some() => s.push_str(&format!("search: complete, {how}\n")),
            (None, Some(_)) => s.push_str(&format!("search: stopped at the first violation, {how}\n")),
            (None, None) => s.push_str(&format!("search: complete, {how}\n")),
        }
        // Names of one's own invariants may be longer than the service's.
        let w = self.properties.iter().map(|p| p.name.chars().count()).max().unwrap_or(0).max(22);
        for p in &self.properties {
            let detail = p.detail.as_ref().map(|d| format!(" ({d})")).unwrap_or_default();
            if p.held {
                let terminal = if p.terminal { " (terminal)" } else { "" };
                s.push_str(&format!(
                    "  {:<w$} held on {} states{terminal}{detail}\n",
                    p.name,
                    p.states,
                    w = w
                ));
            } else {
                s.push_str(&format!("  {:<w$} VIOLATED{detail}\n", p.name, w = w));
            }
        }
        let bounded = self.properties.iter().any(|p| p.name == Property::Bypass.name());
        if let (Some(most), false) = (self.most_bypasses, bounded) {
            s.push_str(&format!(
                "  most bypasses seen: {most} (at least; no bound checked, so the count is not part of the state)\n"
            ));
        }
        if let Some(l) = &self.liveness {
            let decided = self.properties.iter().any(|p| p.name == Property::FairCycles.name());
            if !decided {
                s.push_str(&format!(
                    "  {:<w$} UNDECIDED (the liveness pass was cut short and found no lasso in what it reached)\n",
                    Property::FairCycles.name(),
                    w = w
                ));
            }
            let bound = match (self.counter_bound, l.at_counter_bound) {
                (Some(b), Some(k)) => {
                    format!(", counter bound {b} ({k} states past it, no cycle through them)")
                }
                _ => String::new(),
            };
            let how = match (&l.cut_short, l.stopped_at_lasso) {
                (Some(why), _) => format!("cut short ({why})"),
                (None, true) => "stopped at the first lasso".to_string(),
                (None, false) => "complete".to_string(),
            };
            s.push_str(&format!(
                "liveness: weak fairness on every delivery, timer and call (not crashes, restarts or losses), no timer budget{bound}: {} states, {} transitions, {:.2} s, {how}\n",
                l.states, l.transitions, l.seconds
            ));
        }
        if let Some(t) = self.timer_fires {
            s.push_str(&format!(
                "timer bound: at most {t} timer firing{} on any way (--timer-fires); {} states stopped there, not judged as terminal\n",
                if t == 1 { "" } else { "s" },
                self.at_timer_bound
            ));
        }
        if let Some(b) = self.counter_bound {
            s.push_str(&format!(
                "counter bound: clocks, tickets and terms at most {b} (--counter-bound); {} states past it judged but not expanded\n",
                self.at_counter_bound.unwrap_or(0)
            ));
        }
        for what in &self.not_checked {
            s.push_str(&format!("not checked: {what}\n"));
        }
        if let Some(v) = &self.violation {
            let which = if v.shortest { "the shortest" } else { "depth-first, not necessarily the shortest" };
            match v.cycle_start {
                Some(c) => s.push_str(&format!(
                    "counterexample (a lasso: {c} steps to a cycle of {}, which repeats for ever): {}\n",
                    v.choices.len() - c,
                    v.headline()
                )),
                None => s.push_str(&format!(
                    "counterexample ({} steps, {which}): {}\n",
                    v.choices.len(),
                    v.headline()
                )),
            }
            for i in 0..v.steps.len() {
                if v.cycle_start == Some(i) {
                    s.push_str(&match v.steps.len() - i {
                        1 => format!("  the cycle: step {} repeats for ever\n", i + 1),
                        _ => format!("  the cycle: steps {} to {} repeat for ever\n", i + 1, v.steps.len()),
                    });
                }
                s.push_str(&format!("  {:>3}. {}\n", i + 1, v.step(i)));
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
