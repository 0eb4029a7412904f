//! The model checker: every interleaving of the same node code the workers run, for a
//! small number of nodes, breadth-first from the start, so a violation comes with its
//! shortest counterexample (`mutexlab check`; issue 18, design note `check.md`); or
//! depth-first ([`CheckOpts::dfs`]) with an optional depth bound, in little memory, with
//! a counterexample that need not be the shortest. Breadth-first may run on several
//! threads ([`CheckOpts::threads`]), level by level, finding the same states. The
//! engines are in `check/search.rs`.
//!
//! It is a third scheduler of the simulator's [`World`] (after [`crate::Sim`]'s seeded
//! one and a replay): instead of picking one enabled [`Choice`] it takes each in turn.
//! Worlds compare and hash by protocol state, so the visited set holds only a 64-bit
//! fingerprint of each state with its parent's fingerprint and the choice that led
//! there (depth-first: with the depth it was found at); only the frontier (depth-first:
//! the path) holds whole worlds, kept without the simulator's tallies. A counterexample is rebuilt by walking
//! the parents back to the start and replaying the choices from the initial world, with
//! the world's notes (what the simulator prints for a replay) as its numbered steps; the
//! same replay records it as a run directory's files ([`crate::record`]), which
//! `mutexlab check --out DIR` writes for `audit`, `report` and `trace` to read.
//!
//! Properties, each reported by name (see [`Property`]):
//! - whatever [`World::apply`] fails with: `mutual exclusion` (never two inside),
//!   `one leader per term` for elections, `driver contract` (no unasked entry, no message
//!   to oneself or to no one) and `no node failure` (a program behind a node broke down,
//!   or the node panicked: a lab skeleton's unwritten handler comes back as that line);
//! - `no deadlock`: a state that is not done where nothing is enabled but crashes, while
//!   an application waits (as the simulator's deadlock);
//! - `every request served`, at terminal states: a state where nothing can happen but
//!   crashes is done (each application has had its entries); for elections `agreement
//!   when quiet` (the live nodes agree on a live leader) and, where the algorithm
//!   promises it ([`CheckOpts::highest_wins`]), `highest live id`;
//! - `bypass bound` where one is given ([`CheckOpts::bypass_bound`], from the registry
//!   entry or `--bypass-bound`): while an application waits, others enter at most B
//!   times. The checker keeps a count per node beside each world, in its fingerprint only
//!   when a bound is checked (capped at B + 1); without one the most seen is reported
//!   as a lower bound and the state space is the worlds' alone;
//! - invariants of one's own ([`Invariant`], through [`check_with`]): an algorithm's from
//!   its registry entry (one token at most), or a user's.
//!
//! - `every request served (fair cycles)`, with [`CheckOpts::liveness`] (mutual
//!   exclusion): no request waits for ever on a cycle of states that is weakly fair to
//!   every delivery, timer and call; a lasso (the way to the cycle, then the cycle) is
//!   its counterexample. Its own pass after the safety search (`check/liveness.rs`).
//!
//! Not checked: liveness beyond terminal states without [`CheckOpts::liveness`] (the
//! summary says so), and under strong fairness with it.
//!
//! Knobs are the world's: non-FIFO channels, crashes (each followed by a restart, of any
//! node), stale timers, lost messages ([`CheckOpts::lose`]), and which timers may fire
//! ([`TimerOrder`]). Time: by default any armed timer may fire ([`Choice::Fire`]), so a
//! check assumes nothing about timing and a timeout may come before what it waits for;
//! worlds hash timers as a set, which is exact then. With [`TimerOrder::Earliest`] only
//! the earliest fires, as in the simulator, but states still compare without timer
//! times, so where several timers are armed at once the search is an
//! under-approximation. [`CheckOpts::timer_fires`] bounds timer firings on any way (what
//! ends the search of an algorithm whose timers fire without end); a state only that
//! bound stops is counted, not judged as terminal. [`CheckOpts::forget`] lets nodes
//! clear dead fields. Limits:
//! [`CheckOpts::max_states`], [`CheckOpts::max_seconds`], [`CheckOpts::max_memory`] and
//! [`CheckOpts::max_depth`], and a signal ([`crate::interrupt`]); a search cut short says
//! why, and reports what it covered. The summary gives states, transitions, depth, time and
//! the process's peak memory.

use std::time::Instant;

use crate::algorithm::{Config, Node, PeerId, ServiceKind, Symmetric};
use crate::record::{Recorder, RunFiles};
use crate::{Choice, Failure, SimApps, SimService, World};

mod liveness;
mod memory;
mod opts;
mod report;
mod search;
mod visited;
pub mod walk;

pub use memory::default_bound as default_max_memory;
pub use opts::{CheckOpts, TimerOrder, MAX_ENTRIES, MAX_NODES, MAX_SYMMETRY_NODES};
pub use report::{
    CheckReport, Counterexample, LivenessResult, Progress, Property, PropertyResult, SymmetryResult,
};

/// An invariant of one's own, checked at every state: a name and a judge over read
/// access to the world ([`World::node`], [`World::apps`], [`World::in_flight`],
/// [`World::alive`]) that says why it fails. An algorithm's registry entry adds its own
/// (one token at most); anyone passes theirs to [`check_with`]:
///
/// ```
/// use mutexlab_sim::check::Invariant;
/// use mutexlab_algos::ricart_agrawala::RicartAgrawala;
/// let few: Invariant<RicartAgrawala> = Invariant::new("at most 4 messages in flight", |w| {
///     let k = w.in_flight().count();
///     if k <= 4 { Ok(()) } else { Err(format!("{k} messages in flight")) }
/// });
/// ```
pub struct Invariant<N: Node>
where
    N::Service: SimService,
{
    /// The name the summary gives it.
    pub name: &'static str,
    /// `Ok` where it holds, else why not, in one line.
    pub holds: fn(&World<N>) -> Result<(), String>,
}

impl<N: Node> Invariant<N>
where
    N::Service: SimService,
{
    /// An invariant named `name`, judged by `holds`.
    pub const fn new(name: &'static str, holds: fn(&World<N>) -> Result<(), String>) -> Self {
        Invariant { name, holds }
    }
}

/// Bypass counts of the first [`COUNTED`] nodes, kept inline (no allocation per state).
type Counts = [u8; COUNTED];

/// Nodes whose bypasses are counted (the command line allows 16 nodes at most).
const COUNTED: usize = 16;

/// Where bypass counts stop: at the bound + 1, so that the space stays finite (no
/// bound: the most a count holds).
fn bypass_cap(opts: &CheckOpts) -> u8 {
    opts.bypass_bound.map_or(u8::MAX, |b| b.saturating_add(1).min(u32::from(u8::MAX)) as u8)
}

/// The initial world of a check, not started.
fn initial<N: Node>(opts: &CheckOpts) -> World<N>
where
    N::Service: SimService,
{
    let configs = (0..opts.n).map(|i| Config { seed: opts.seed, ..Config::new(i, opts.n) }).collect();
    let world = World::<N>::new(configs, opts.entries)
        .without_tallies()
        .stale_timers(opts.stale_timers)
        .any_timer(opts.timers == TimerOrder::Any)
        .lose(opts.lose)
        .timer_fires(opts.timer_fires)
        .counter_bound(opts.counter_bound)
        .forget(opts.forget);
    let world = if opts.non_fifo { world.non_fifo() } else { world };
    world.crashes(opts.crashes, |_| true)
}

/// What a state itself says: a bypass over the bound, an invariant of one's own that
/// fails, or at the end a deadlock, an unserved request, no agreement or the wrong
/// leader; else none. `bypass` is the checker's count per node (see [`bypass_step`]).
fn judge<N: Node>(
    service: ServiceKind,
    world: &World<N>,
    enabled: &[Choice],
    opts: &CheckOpts,
    invariants: &[Invariant<N>],
    bypass: &[u8],
) -> Option<(Property, String)>
where
    N::Service: SimService,
{
    if let Some(bound) = opts.bypass_bound {
        if let Some(i) = (0..bypass.len()).find(|&i| u32::from(bypass[i]) > bound) {
            let why = format!(
                "bypass bound exceeded: others entered {} times while {} waited (bound {bound})",
                bypass[i],
                PeerId(i as u32)
            );
            return Some((Property::Bypass, why));
        }
    }
    for inv in invariants {
        if let Err(why) = (inv.holds)(world) {
            return Some((Property::Invariant(inv.name), why));
        }
    }
    let election = service == ServiceKind::Election;
    if world.done() {
        let alive = world.alive();
        let highest = (0..alive.len()).rev().find(|&i| alive[i]);
        return match (opts.highest_wins && election, world.apps().leader(alive), highest) {
            (true, Some((id, term)), Some(h)) if id.index() != h => Some((
                Property::HighestLiveId,
                format!(
                    "the live nodes agree on {id} (term {term}), not the highest live id {}",
                    PeerId(h as u32)
                ),
            )),
            _ => None,
        };
    }
    // Not terminal: something can happen, or would but for the timer budget or the
    // counter bound.
    if !enabled.iter().all(|c| matches!(c, Choice::Crash { .. }))
        || world.timers_held()
        || world.past_counter_bound()
    {
        return None;
    }
    let waiting = world.waiting();
    if election {
        let who = waiting.iter().map(|(p, _)| p.to_string()).collect::<Vec<_>>().join(", ");
        Some((
            Property::AgreementWhenQuiet,
            format!(
                "nothing more can happen and the live nodes do not agree on a live leader (waiting: {who})"
            ),
        ))
    } else if waiting.is_empty() {
        Some((Property::EveryRequestServed, "a terminal state that is not done".into()))
    } else {
        Some((Property::NoDeadlock, Failure::Deadlock { waiting }.to_string()))
    }
}

/// The bypass counts after one step from `before` to `after`: a node whose application
/// waits on both sides counts one more when another node entered in the step (capped at
/// `cap`); a node not waiting counts none. Mutual exclusion only. The most of the new
/// counts, or 0 where nothing changed.
fn bypass_step<N: Node>(before: &World<N>, after: &World<N>, counts: &mut Counts, cap: u8) -> u8
where
    N::Service: SimService,
{
    let was = before.alive();
    bypass_from(before.apps().inside(), was, |i| before.apps().waiting(i, was), after, counts, cap)
}

/// What [`bypass_step`] reads of the state before a step, kept apart where the search
/// moves that world on instead of copying it (a depth-first search's last choice).
pub(super) struct BypassBefore {
    inside: Option<PeerId>,
    alive: smallvec::SmallVec<[bool; 16]>,
    waiting: [bool; COUNTED],
}

impl BypassBefore {
    pub(super) fn of<N: Node>(w: &World<N>) -> BypassBefore
    where
        N::Service: SimService,
    {
        let mut waiting = [false; COUNTED];
        for (i, slot) in waiting.iter_mut().enumerate().take(w.n()) {
            *slot = w.apps().waiting(i, w.alive());
        }
        BypassBefore { inside: w.apps().inside(), alive: smallvec::SmallVec::from_slice(w.alive()), waiting }
    }

    /// [`bypass_step`] from this state to `after`.
    pub(super) fn step<N: Node>(&self, after: &World<N>, counts: &mut Counts, cap: u8) -> u8
    where
        N::Service: SimService,
    {
        bypass_from(self.inside, &self.alive, |i| self.waiting[i], after, counts, cap)
    }
}

/// [`bypass_step`] from what it reads of the state before: who was inside, who was up,
/// and whether node `i`'s application was waiting.
fn bypass_from<N: Node>(
    inside: Option<PeerId>,
    was: &[bool],
    was_waiting: impl Fn(usize) -> bool,
    after: &World<N>,
    counts: &mut Counts,
    cap: u8,
) -> u8
where
    N::Service: SimService,
{
    let entered = after.apps().inside().filter(|&j| inside != Some(j));
    let is = after.alive();
    // A node stops waiting only by entering or by a crash, and starts at a count of 0:
    // without either, no count changes (most steps: this keeps the search fast).
    if entered.is_none() && was == is {
        return 0;
    }
    let mut most = 0;
    for (i, c) in counts.iter_mut().enumerate().take(after.n()) {
        if !after.apps().waiting(i, is) {
            *c = 0;
        } else if was_waiting(i) && entered.is_some_and(|j| j.index() != i) {
            *c = c.saturating_add(1).min(cap);
        }
        most = most.max(*c);
    }
    most
}

/// Check node type `N` breadth-first or depth-first as `opts`
/// say (see the module doc); `progress` is called about once a second. What the
/// registry runs for an algorithm by name.
pub fn check<N: Node>(opts: &CheckOpts, progress: &mut dyn FnMut(&Progress)) -> CheckReport
where
    N::Service: SimService,
{
    check_with::<N>(opts, &[], progress)
}

/// [`check`], and `invariants` of one's own at every state, each reported by its name.
pub fn check_with<N: Node>(
    opts: &CheckOpts,
    invariants: &[Invariant<N>],
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport
where
    N::Service: SimService,
{
    check_inner::<N>(opts, invariants, None, progress)
}

/// [`check_with`] up to symmetry (`mutexlab check --symmetry`): the visited set keys each
/// state by the least fingerprint of its renamings under the node type's group
/// ([`Symmetric::renamings`]), so a state and its renamed twins are explored once. The
/// report gives the states up to symmetry and, where the start is symmetric, the count
/// of the full search they stand for ([`SymmetryResult`]). A counterexample is a path
/// of real states, replayable as any other. The invariants must not tell renamed
/// states apart (those of the registry do not). At most [`MAX_SYMMETRY_NODES`] nodes:
/// every renaming of the group is tried at every state.
pub fn check_symmetric<N: Symmetric>(
    opts: &CheckOpts,
    invariants: &[Invariant<N>],
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport
where
    N::Service: SimService,
{
    check_inner::<N>(opts, invariants, Some(search::Sym::of(opts.n)), progress)
}

fn check_inner<N: Node>(
    opts: &CheckOpts,
    invariants: &[Invariant<N>],
    sym: Option<search::Sym<N>>,
    progress: &mut dyn FnMut(&Progress),
) -> CheckReport
where
    N::Service: SimService,
{
    let service = <N::Service as crate::algorithm::Service>::KIND;
    let started = Instant::now();
    let threads = if opts.dfs { 1 } else { opts.threads.max(1) };
    let renamings = sym.as_ref().map(|s| s.count() as u64);
    let how = search::Search::new(service, opts, invariants);
    let how = match sym {
        Some(sym) => how.symmetric(sym),
        None => how,
    };
    let mut limits = search::Limits::new(opts, started);
    let found = if opts.dfs {
        search::dfs::<N>(&how, &mut limits, progress)
    } else {
        search::bfs::<N>(&how, threads as usize, &mut limits, progress)
    };
    let counted = service == ServiceKind::Mutex;
    let most_bypasses = found.most_bypasses;
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
        most_bypasses: None,
        timer_fires: opts.timer_fires,
        at_timer_bound: found.at_timer_bound,
        counter_bound: opts.counter_bound,
        at_counter_bound: opts.counter_bound.map(|_| found.at_counter_bound),
        not_checked: Vec::new(),
        liveness: None,
        symmetry: renamings.map(|renamings| SymmetryResult {
            renamings,
            full_states: (found.start_orbit == 1).then_some(found.orbits),
        }),
    };
    let live = opts.liveness && service == ServiceKind::Mutex;
    report.not_checked.push(match (live, service) {
        (true, _) => "liveness under strong fairness (a request that waits for ever while a delivery, timer or call is enabled on and off, never taken)".into(),
        (false, ServiceKind::Mutex) => "liveness beyond terminal states (a request that waits forever in a cycle of states; --liveness checks it)".into(),
        (false, _) => "liveness beyond terminal states (an election that waits forever in a cycle of states)".into(),
    });
    if let Some(b) = opts.counter_bound {
        report
            .not_checked
            .push(format!("what can happen once a node's counter is past {b} (--counter-bound)"));
    }
    if let Some(t) = opts.timer_fires {
        report.not_checked.push(format!(
            "what can happen after {t} timer firing{} (--timer-fires)",
            if t == 1 { "" } else { "s" }
        ));
    }
    let terminals = found.terminals;
    let violated = found.violation.as_ref().map(|(p, ..)| *p);
    if counted {
        report.most_bypasses = Some(u32::from(most_bypasses));
    }
    let own = invariants.iter().map(|inv| Property::Invariant(inv.name));
    for p in Property::checked(service, opts).into_iter().chain(own) {
        let terminal = p.at_terminal_states();
        let states = if terminal { terminals } else { report.states };
        let detail = match (p, opts.bypass_bound) {
            (Property::Bypass, Some(b)) => Some(format!("at most {b}; most seen: {most_bypasses}")),
            _ => None,
        };
        report.properties.push(PropertyResult {
            name: p.name(),
            held: violated != Some(p),
            states,
            terminal,
            detail,
        });
    }
    if live && found.violation.is_none() {
        let began = Instant::now();
        let l = liveness::fair_cycles::<N>(opts, began);
        let decided = l.lasso.is_some() || l.cut_short.is_none();
        report.liveness = Some(LivenessResult {
            states: l.states,
            transitions: l.transitions,
            at_counter_bound: opts.counter_bound.map(|_| l.at_counter_bound),
            seconds: began.elapsed().as_secs_f64(),
            complete: l.cut_short.is_none(),
            cut_short: l.cut_short,
            stopped_at_lasso: l.stopped_at_lasso,
        });
        if decided {
            report.properties.push(PropertyResult {
                name: Property::FairCycles.name(),
                held: l.lasso.is_none(),
                states: l.states,
                terminal: false,
                detail: Some("weak fairness".into()),
            });
        }
        if let Some(lasso) = l.lasso {
            let choices = [opts.from.as_slice(), &lasso.stem, &lasso.cycle].concat();
            let cycle_start = opts.from.len() + lasso.stem.len();
            let failure = format!(
                "{} waits for ever: its request is never served round a cycle of {} step{} that repeats for ever, taking every delivery, timer and call that stays enabled (weak fairness)",
                PeerId(lasso.node),
                lasso.cycle.len(),
                if lasso.cycle.len() == 1 { "" } else { "s" }
            );
            let (steps, run) = replay::<N>(service, opts, &choices, Some(&failure));
            report.violation = Some(Counterexample {
                property: Property::FairCycles.name(),
                failure,
                choices,
                steps,
                run,
                shortest: false,
                cycle_start: Some(cycle_start),
            });
        }
        report.peak_memory_bytes = peak_memory();
    }
    if let Some((p, failure, found_choices)) = found.violation {
        let choices = [opts.from.as_slice(), &found_choices].concat();
        // A violation stops the run midway; a state where nothing can happen ends it.
        let ended = matches!(p, Property::NoDeadlock | Property::EveryRequestServed);
        let (steps, run) = replay::<N>(service, opts, &choices, (!ended).then_some(failure.as_str()));
        report.violation = Some(Counterexample {
            property: p.name(),
            failure,
            choices,
            steps,
            run,
            shortest: !opts.dfs,
            cycle_start: None,
        });
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
/// are left out: every node starts) and recording the run's files; `cut_short` says why
/// the run stops there, if it does not end by itself.
fn replay<N: Node>(
    service: ServiceKind,
    opts: &CheckOpts,
    choices: &[Choice],
    cut_short: Option<&str>,
) -> (Vec<Vec<String>>, RunFiles)
where
    N::Service: SimService,
{
    let mut rec = Recorder::new(opts.n, service);
    let mut world = initial::<N>(opts);
    let _ = crate::panics::quietly(|| world.start(&mut |_, e| rec.event(e)));
    let steps = choices
        .iter()
        .map(|&c| {
            let mut lines = Vec::new();
            rec.step();
            let _ = crate::panics::quietly(|| {
                world.apply(c, &mut |_, e| {
                    rec.event(e);
                    if e.is_note() {
                        lines.push(e.to_string());
                    }
                })
            });
            lines
        })
        .collect();
    (steps, rec.finish(cut_short))
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
        let r = check::<RicartAgrawala>(&CheckOpts::new(3, 1), &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("ricart-agrawala"));
        assert!(r.properties.iter().all(|p| p.held));
        assert_eq!(r.states, 2_101, "the count an outside search over the same World found");
    }

    #[test]
    fn without_fifo_a_channel_is_a_multiset_and_the_counts_are_stateright_s_unordered_network_s() {
        // Stateright 0.31's unordered non-duplicating network on the same model: 2,879 and
        // 44,833 (and 2,084,955 at n = 4); kept in send order they were 3,146 and 52,268.
        for (k, want) in [(1, 2_879), (2, 44_833)] {
            let opts = CheckOpts { non_fifo: true, ..CheckOpts::new(3, k) };
            let r = check::<RicartAgrawala>(&opts, &mut quiet);
            assert!(r.complete && r.violation.is_none(), "{}", r.text("ricart-agrawala"));
            assert_eq!(r.states, want, "k = {k}");
        }
        // The same messages in another order on a channel: one state without FIFO, two with.
        let order = |first: u64, fifo: bool| {
            let mut w = initial::<RicartAgrawala>(&CheckOpts { non_fifo: !fifo, ..CheckOpts::new(2, 1) });
            w.push_in_flight(0, 1, crate::algos::ricart_agrawala::Msg::Request { ticket: first });
            w.push_in_flight(0, 1, crate::algos::ricart_agrawala::Msg::Request { ticket: 3 - first });
            w
        };
        assert!(order(1, false) == order(2, false));
        assert_eq!(search::fingerprint(&order(1, false)), search::fingerprint(&order(2, false)));
        assert!(order(1, true) != order(2, true), "FIFO: the order is state");
        assert_ne!(search::fingerprint(&order(1, true)), search::fingerprint(&order(2, true)));
    }

    #[test]
    fn a_counter_bound_finishes_a_growing_model_and_a_state_past_it_is_not_terminal() {
        // Lamport n = 3, k = 2 ran out of memory unbounded; with clocks at most 6 every
        // state within the bound is explored in a moment.
        let opts = CheckOpts { counter_bound: Some(6), ..CheckOpts::new(3, 2) };
        let r = check::<Lamport>(&opts, &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("lamport"));
        assert_eq!(r.at_counter_bound, Some(5_149), "{}", r.text("lamport"));
        assert_eq!(r.states, 8_106);
        let text = r.text("lamport");
        assert!(text.contains(
            "counter bound: clocks, tickets and terms at most 6 (--counter-bound); 5149 states past it"
        ));
        assert!(text.contains("not checked: what can happen once a node's counter is past 6"), "{text}");
        // A state past the bound has nothing enabled, yet is no deadlock: a world that
        // says so.
        let mut w = initial::<Lamport>(&opts);
        let _ = w.start(&mut |_, _| {});
        while !w.past_counter_bound() {
            let c = w.enabled()[0];
            let _ = w.apply(c, &mut |_, _| {});
        }
        assert!(w.enabled().is_empty());
        assert_eq!(
            judge(ServiceKind::Mutex, &w, &[], &opts, &[], &[]),
            None,
            "past the bound is not terminal"
        );
        // Negative control: with no bound the same world goes on.
        let free = initial::<Lamport>(&CheckOpts::new(3, 2));
        assert!(!free.past_counter_bound());
    }

    /// `choice` with its nodes renamed by `r` (indices stay: a renamed world keeps each
    /// channel's and each node's timers' order).
    fn choice_renamed(c: Choice, r: &crate::algorithm::Renaming) -> Choice {
        let of = |i: u32| r.of(PeerId(i)).0;
        match c {
            Choice::Deliver { from, to, index } => Choice::Deliver { from: of(from), to: of(to), index },
            Choice::Lose { from, to, index } => Choice::Lose { from: of(from), to: of(to), index },
            Choice::Down { from, to } => Choice::Down { from: of(from), to: of(to) },
            Choice::Call { node, index } => Choice::Call { node: of(node), index },
            Choice::Fire { node, index } => Choice::Fire { node: of(node), index },
            Choice::Crash { node } => Choice::Crash { node: of(node) },
            Choice::Restart { node } => Choice::Restart { node: of(node) },
            c @ (Choice::Timer | Choice::Stale { .. }) => c,
        }
    }

    /// Every state of `N` at `opts` reachable from the start: each renaming of `N`'s
    /// group enables the renamed choices, and a step then a renaming is the renaming then
    /// the renamed step (ids in states, messages, channels, down flags and applications
    /// all follow); renaming back gives the world again. The states seen and how many
    /// renamed twins differed from their world.
    fn renamings_commute_with_steps<N: crate::algorithm::Symmetric>(opts: &CheckOpts) -> (usize, usize)
    where
        N::Service: SimService,
    {
        use crate::algorithm::Renaming;
        let n = opts.n;
        let mut w = initial::<N>(opts);
        w.start(&mut |_, _| {}).unwrap();
        let (mut todo, mut seen) = (vec![w], std::collections::HashSet::new());
        let renamings = N::renamings(n);
        let mut moved = 0;
        while let Some(w) = todo.pop() {
            if !seen.insert(search::fingerprint(&w)) {
                continue;
            }
            for r in &renamings {
                let back = Renaming::new(
                    (0..n).map(|i| (0..n).find(|&j| r.of(PeerId(j)).0 == i).unwrap()).collect(),
                )
                .unwrap();
                let twin = w.renamed(r);
                assert!(twin.renamed(&back) == w);
                moved += usize::from(twin != w);
                let mut want: Vec<Choice> = w.enabled().into_iter().map(|c| choice_renamed(c, r)).collect();
                let mut got = twin.enabled();
                want.sort_by_key(|c| format!("{c:?}"));
                got.sort_by_key(|c| format!("{c:?}"));
                assert_eq!(got, want);
                for c in w.enabled() {
                    let (mut a, mut b) = (w.clone(), twin.clone());
                    let ra = a.apply(c, &mut |_, _| {}).map_err(|f| f.to_string());
                    let rb = b.apply(choice_renamed(c, r), &mut |_, _| {}).map_err(|f| f.to_string());
                    assert_eq!(ra.is_ok(), rb.is_ok());
                    assert!(
                        a.renamed(r) == b,
                        "{c:?} under {r:?}\nW {w:#?}\nA {:#?}\nB {b:#?}",
                        a.renamed(r)
                    );
                    if ra.is_ok() {
                        todo.push(a);
                    }
                }
            }
        }
        (seen.len(), moved)
    }

    #[test]
    fn a_renamed_world_steps_as_the_world_with_its_ids_renamed() {
        // Centralized's declared symmetries, on every state of n = 3 with a crash.
        use crate::algorithm::Symmetric;
        use crate::algos::centralized::Centralized;
        let opts = CheckOpts { crashes: 1, ..CheckOpts::new(3, 1) };
        let (seen, moved) = renamings_commute_with_steps::<Centralized>(&opts);
        assert!(seen > 100 && moved > 100, "{seen} states, {moved} moved");
        assert_eq!(Centralized::renamings(3).len(), 2, "w0 and w1 swap; w2, the coordinator, stays");
    }

    #[test]
    fn under_symmetry_a_state_and_its_renamed_twin_count_once_and_the_full_count_is_kept() {
        use crate::algos::centralized::Centralized;
        // w0 asks, or w1 asks: two states, one up to symmetry.
        let opts = CheckOpts::new(3, 1);
        let asks = |node: u32| {
            let mut w = initial::<Centralized>(&opts);
            w.start(&mut |_, _| {}).unwrap();
            w.apply(Choice::Call { node, index: 0 }, &mut |_, _| {}).unwrap();
            w
        };
        let (w0, w1) = (asks(0), asks(1));
        let counts: Counts = [0; COUNTED];
        let plain = search::Search::new(ServiceKind::Mutex, &opts, &[]);
        let sym = search::Search::new(ServiceKind::Mutex, &opts, &[]).symmetric(search::Sym::of(3));
        assert_ne!(plain.key(&w0, &counts), plain.key(&w1, &counts), "twice without symmetry");
        assert_eq!(sym.key(&w0, &counts), sym.key(&w1, &counts), "once with it");
        assert_eq!(sym.key(&w0, &counts).1, 2, "standing for both");
        // The coordinator asking is no twin of either.
        assert_ne!(sym.key(&asks(2), &counts).0, sym.key(&w0, &counts).0);
        // Whole searches, every strategy: fewer states, and the ones found stand for
        // exactly the full search's.
        for (n, k, full, reduced) in [(3, 2, 727, 376), (4, 1, 681, 145)] {
            for o in strategies(&CheckOpts::new(n, k)) {
                let all = check::<Centralized>(&o, &mut quiet);
                let up_to = check_symmetric::<Centralized>(&o, &[], &mut quiet);
                assert!(all.complete && up_to.complete && up_to.violation.is_none());
                assert_eq!((all.states, up_to.states), (full, reduced), "{}", up_to.text("centralized"));
                let renamings = if n == 3 { 2 } else { 6 };
                assert_eq!(up_to.symmetry, Some(SymmetryResult { renamings, full_states: Some(full) }));
                assert!(all.symmetry.is_none());
                assert!(up_to.text("centralized").contains(&format!(
                    "symmetry: {reduced} states up to symmetry ({renamings} renamings of the nodes); they stand for {full} states"
                )));
            }
        }
        // From a start that is not symmetric the full count is not known.
        let from = CheckOpts { from: vec![Choice::Call { node: 0, index: 0 }], ..CheckOpts::new(3, 1) };
        let r = check_symmetric::<Centralized>(&from, &[], &mut quiet);
        assert_eq!(r.symmetry.and_then(|s| s.full_states), None);
    }

    #[test]
    fn a_violation_found_up_to_symmetry_is_a_real_path_that_replays_to_it() {
        use crate::algos::centralized::Centralized;
        // The planted bug: a crash of the coordinator lets a second node in. Every
        // strategy's counterexample is a path of real states: walked step by step it
        // breaks mutual exclusion at its last step, with the failure the report gives.
        let crash = CheckOpts { crashes: 1, ..CheckOpts::new(3, 1) };
        for o in strategies(&crash) {
            let r = check_symmetric::<Centralized>(&o, &[], &mut quiet);
            let v = r.violation.clone().expect("the coordinator's amnesia is found under symmetry");
            assert_eq!(v.property, "mutual exclusion");
            let w = walk::walk::<Centralized>(&o, &[], &walk::Route::Choices(v.choices.clone())).unwrap();
            assert_eq!(w.violation_step, Some(v.choices.len()), "{}", r.text("centralized"));
            assert_eq!(w.failure.as_deref(), Some(v.failure.as_str()));
        }
        // And `none` up to symmetry: its overlap replays in the simulator.
        let r = check_symmetric::<Immediate>(&CheckOpts::new(3, 1), &[], &mut quiet);
        let v = r.violation.expect("no coordination is caught under symmetry too");
        let e = crate::Sim::<Immediate>::new(3, 0).replay(1, &v.choices).unwrap_err();
        assert!(matches!(e.failure, Failure::Overlap { .. }), "{e}");
        assert_eq!(e.failure.to_string(), v.failure);
    }

    /// A planted bug for the ring's symmetry: a node leaving the section sends its
    /// successor a second TOKEN (rotation-symmetric, so the reduction must keep it).
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct DoubleToken {
        ring: crate::algos::token_ring::TokenRing,
        next: PeerId,
    }

    impl crate::algorithm::Algorithm for DoubleToken {
        type Msg = crate::algos::token_ring::Msg;
        type Timer = crate::algos::token_ring::Timer;
        fn new(cfg: &crate::algorithm::Config) -> Self {
            let next = PeerId((cfg.id.0 + 1) % cfg.n);
            DoubleToken { ring: crate::algorithm::Algorithm::new(cfg), next }
        }
        fn on_start(&mut self, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.ring.on_start(out)
        }
        fn on_want_cs(&mut self, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.ring.on_want_cs(out)
        }
        fn on_message(
            &mut self,
            from: PeerId,
            msg: Self::Msg,
            out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>,
        ) {
            self.ring.on_message(from, msg, out)
        }
        fn on_cs_done(&mut self, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.ring.on_cs_done(out);
            out.send(self.next, crate::algos::token_ring::Msg::Token { idle: 0 });
        }
        fn on_timer(&mut self, timer: Self::Timer, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.ring.on_timer(timer, out)
        }
        fn on_peer_down(&mut self, peer: PeerId, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.ring.on_peer_down(peer, out)
        }
        fn on_peer_up(&mut self, peer: PeerId, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.ring.on_peer_up(peer, out)
        }
    }

    impl crate::algorithm::Symmetric for DoubleToken {
        fn renamings(n: u32) -> Vec<crate::algorithm::Renaming> {
            crate::algos::token_ring::TokenRing::renamings(n)
        }
        fn renamed(&self, r: &crate::algorithm::Renaming) -> Self {
            DoubleToken { ring: self.ring.renamed(r), next: r.of(self.next) }
        }
        fn msg_renamed(msg: &Self::Msg, _: &crate::algorithm::Renaming) -> Self::Msg {
            msg.clone()
        }
        fn timer_renamed(timer: &Self::Timer, _: &crate::algorithm::Renaming) -> Self::Timer {
            *timer
        }
    }

    #[test]
    fn the_token_rings_rotations_commute_with_its_steps() {
        use crate::algorithm::{Renaming, Symmetric};
        use crate::algos::token_ring::TokenRing;
        for (n, crashes) in [(3, 1), (4, 0)] {
            let opts = CheckOpts { crashes, ..CheckOpts::new(n, 1) };
            let (seen, moved) = renamings_commute_with_steps::<TokenRing>(&opts);
            assert!(seen > 100 && moved > 100, "n = {n}: {seen} states, {moved} moved");
            let rotations = TokenRing::renamings(n);
            assert_eq!(rotations.len(), n as usize);
            assert!(rotations[0].is_identity());
            // Rotations only: a swap of two nodes is no symmetry of a ring (at n = 3 a
            // swap reverses the ring's direction).
            let swap = Renaming::new([vec![1, 0], (2..n).collect()].concat()).unwrap();
            assert!(!rotations.contains(&swap));
        }
        // Negative control: a renaming that is not a rotation does not commute. At n = 3
        // swapping w1 and w2 reverses the ring: w0's token goes to w1, its twin's to w2.
        let opts = CheckOpts::new(3, 1);
        let mut w = initial::<TokenRing>(&opts);
        w.start(&mut |_, _| {}).unwrap();
        let swap = Renaming::new(vec![0, 2, 1]).unwrap();
        let twin = w.renamed(&swap);
        let mut want: Vec<Choice> = w.enabled().into_iter().map(|c| choice_renamed(c, &swap)).collect();
        want.sort_by_key(|c| format!("{c:?}"));
        let (mut a, mut b) = (w.clone(), twin.clone());
        let deliver = Choice::Deliver { from: 0, to: 1, index: 0 };
        a.apply(deliver, &mut |_, _| {}).unwrap();
        b.apply(choice_renamed(deliver, &swap), &mut |_, _| {}).unwrap();
        assert!(a.renamed(&swap) != b, "w1 passes to w2, its twin w2 to w0: not the same");
    }

    #[test]
    fn the_token_ring_up_to_rotation_finds_fewer_states_and_the_same_violation() {
        use crate::algos::token_ring::TokenRing;
        // Counts: (n, k, full, up to rotation), every strategy the same.
        for (n, k, full, reduced) in [(3, 1, 485, 215), (3, 2, 3_731, 1_321), (4, 1, 2_728, 934)] {
            for o in strategies(&CheckOpts::new(n, k)) {
                let all = check::<TokenRing>(&o, &mut quiet);
                let up_to = check_symmetric::<TokenRing>(&o, &[], &mut quiet);
                assert!(
                    all.complete && up_to.complete && all.violation.is_none() && up_to.violation.is_none()
                );
                assert_eq!((all.states, up_to.states), (full, reduced), "n = {n}, k = {k}");
                // The start (w0 makes the token) is not its own rotation: the sum of the
                // orbits is no full count, and the report says it is not known.
                assert_eq!(up_to.symmetry, Some(SymmetryResult { renamings: n as u64, full_states: None }));
            }
        }
        // The planted bug: the full search and the one up to rotation find the same
        // violation at the same depth breadth-first, each a real path that replays to it.
        for o in strategies(&CheckOpts::new(3, 1)) {
            let all = check::<DoubleToken>(&o, &mut quiet);
            let up_to = check_symmetric::<DoubleToken>(&o, &[], &mut quiet);
            let (v, w) = (
                all.violation.expect("the second token is found"),
                up_to.violation.expect("up to rotation too"),
            );
            assert_eq!(v.property, "mutual exclusion");
            assert_eq!(w.property, "mutual exclusion");
            if !o.dfs {
                assert_eq!(v.choices.len(), w.choices.len(), "both shortest");
            }
            assert!(up_to.states < all.states, "{} up to rotation, {} in full", up_to.states, all.states);
            let walked =
                walk::walk::<DoubleToken>(&o, &[], &walk::Route::Choices(w.choices.clone())).unwrap();
            assert_eq!(walked.violation_step, Some(w.choices.len()));
            assert_eq!(walked.failure.as_deref(), Some(w.failure.as_str()));
        }
    }

    /// A wrong `Symmetric` for the negative control: Suzuki-Kasami with its TOKEN left
    /// unrenamed (its `last_served` and queue are indexed by id and must move).
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct UnrenamedToken(crate::algos::suzuki_kasami::SuzukiKasami);

    impl crate::algorithm::Algorithm for UnrenamedToken {
        type Msg = crate::algos::suzuki_kasami::Msg;
        type Timer = crate::algorithm::NoTimer;
        fn new(cfg: &crate::algorithm::Config) -> Self {
            UnrenamedToken(crate::algorithm::Algorithm::new(cfg))
        }
        fn on_start(&mut self, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.0.on_start(out)
        }
        fn on_want_cs(&mut self, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.0.on_want_cs(out)
        }
        fn on_message(
            &mut self,
            from: PeerId,
            msg: Self::Msg,
            out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>,
        ) {
            self.0.on_message(from, msg, out)
        }
        fn on_cs_done(&mut self, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.0.on_cs_done(out)
        }
        fn on_peer_down(&mut self, peer: PeerId, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.0.on_peer_down(peer, out)
        }
        fn on_peer_up(&mut self, peer: PeerId, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.0.on_peer_up(peer, out)
        }
    }

    impl crate::algorithm::Symmetric for UnrenamedToken {
        fn renamings(n: u32) -> Vec<crate::algorithm::Renaming> {
            crate::algorithm::Renaming::rotations(n)
        }
        fn renamed(&self, r: &crate::algorithm::Renaming) -> Self {
            UnrenamedToken(self.0.renamed(r))
        }
        fn msg_renamed(msg: &Self::Msg, _: &crate::algorithm::Renaming) -> Self::Msg {
            msg.clone() // wrong on purpose
        }
        fn timer_renamed(timer: &Self::Timer, _: &crate::algorithm::Renaming) -> Self::Timer {
            match *timer {}
        }
    }

    /// The first step, over every state of `N` at `opts` reachable from the start, whose
    /// outcome renamed by `r` differs from the renamed world's outcome of the renamed step
    /// (or whose renamed world enables other choices): `None` if `r` is a symmetry there.
    /// Unlike [`renamings_commute_with_steps`] it does not assert, so that a renaming
    /// that is no symmetry can be shown to be caught; it looks at `limit` states at most
    /// (a debug build takes minutes over every state of a token algorithm at n = 4).
    fn first_non_commuting<N: crate::algorithm::Symmetric>(
        opts: &CheckOpts,
        r: &crate::algorithm::Renaming,
        limit: usize,
    ) -> Option<String>
    where
        N::Service: SimService,
    {
        let mut w = initial::<N>(opts);
        w.start(&mut |_, _| {}).unwrap();
        let (mut todo, mut seen) = (vec![w], std::collections::HashSet::new());
        while let Some(w) = todo.pop() {
            if seen.len() >= limit || !seen.insert(search::fingerprint(&w)) {
                continue;
            }
            let twin = w.renamed(r);
            let mut want: Vec<Choice> = w.enabled().into_iter().map(|c| choice_renamed(c, r)).collect();
            let mut got = twin.enabled();
            want.sort_by_key(|c| format!("{c:?}"));
            got.sort_by_key(|c| format!("{c:?}"));
            if got != want {
                return Some(format!("enabled choices differ: {got:?} against {want:?}"));
            }
            for c in w.enabled() {
                let (mut a, mut b) = (w.clone(), twin.clone());
                let ra = a.apply(c, &mut |_, _| {}).is_ok();
                let rb = b.apply(choice_renamed(c, r), &mut |_, _| {}).is_ok();
                if ra != rb || a.renamed(r) != b {
                    return Some(format!("{c:?} under {r:?}"));
                }
                if ra {
                    todo.push(a);
                }
            }
        }
        None
    }

    #[test]
    fn suzuki_kasami_and_ra_token_rotations_commute_with_their_steps_and_a_swap_does_not() {
        use crate::algorithm::{Renaming, Symmetric};
        use crate::algos::ra_token::RaToken;
        use crate::algos::suzuki_kasami::SuzukiKasami;
        // Every state at n = 3 with a crash (restarts included), the first 20,000 at n = 4.
        let opts = CheckOpts { crashes: 1, ..CheckOpts::new(3, 1) };
        let (seen, moved) = renamings_commute_with_steps::<SuzukiKasami>(&opts);
        assert!(seen > 100 && moved > 100, "suzuki-kasami: {seen} states, {moved} moved");
        let (seen, moved) = renamings_commute_with_steps::<RaToken>(&opts);
        assert!(seen > 100 && moved > 100, "ra-token: {seen} states, {moved} moved");
        for r in Renaming::rotations(4) {
            assert_eq!(first_non_commuting::<SuzukiKasami>(&CheckOpts::new(4, 1), &r, 20_000), None);
            assert_eq!(first_non_commuting::<RaToken>(&CheckOpts::new(4, 1), &r, 20_000), None);
        }
        for n in [3, 4] {
            assert_eq!(SuzukiKasami::renamings(n), Renaming::rotations(n));
            assert_eq!(RaToken::renamings(n), Renaming::rotations(n));
        }
        // Negative controls: swapping w1 and w2 reverses the ring, and with two nodes
        // waiting the holder serves (or queues) the other one first. The same search
        // that finds no difference under a rotation finds one under the swap.
        let opts = CheckOpts::new(3, 1);
        let swap = Renaming::new(vec![0, 2, 1]).unwrap();
        let rotation = Renaming::new(vec![1, 2, 0]).unwrap();
        assert_eq!(first_non_commuting::<SuzukiKasami>(&opts, &rotation, usize::MAX), None);
        assert_eq!(first_non_commuting::<RaToken>(&opts, &rotation, usize::MAX), None);
        assert!(
            first_non_commuting::<SuzukiKasami>(&opts, &swap, usize::MAX).is_some(),
            "a swap is no symmetry"
        );
        assert!(first_non_commuting::<RaToken>(&opts, &swap, usize::MAX).is_some(), "a swap is no symmetry");
        // And a wrong `Symmetric` is caught: one that leaves the TOKEN's ids as they are.
        assert!(
            first_non_commuting::<UnrenamedToken>(&opts, &rotation, usize::MAX).is_some(),
            "last_served not moved"
        );
    }

    #[test]
    fn suzuki_kasami_and_ra_token_up_to_rotation_find_fewer_states_and_the_same_verdicts() {
        use crate::algos::ra_token::RaToken;
        use crate::algos::suzuki_kasami::SuzukiKasami;
        fn counts<N: crate::algorithm::Symmetric>(o: &CheckOpts) -> (u64, u64)
        where
            N::Service: SimService,
        {
            let all = check::<N>(o, &mut quiet);
            let up_to = check_symmetric::<N>(o, &[], &mut quiet);
            assert!(all.complete && up_to.complete && all.violation.is_none() && up_to.violation.is_none());
            let held = |r: &CheckReport| r.properties.iter().map(|p| (p.name, p.held)).collect::<Vec<_>>();
            assert_eq!(held(&all), held(&up_to), "the same verdicts");
            // w0 makes the token: the start is not its own rotation.
            assert_eq!(up_to.symmetry, Some(SymmetryResult { renamings: u64::from(o.n), full_states: None }));
            (all.states, up_to.states)
        }
        // The request numbers and the token's arrays keep who asked and who was served,
        // so few rotated twins of a state are reachable from w0's token: a small saving.
        for o in strategies(&CheckOpts::new(3, 2)) {
            assert_eq!(counts::<SuzukiKasami>(&o), (15_652, 12_341));
            assert_eq!(counts::<RaToken>(&o), (11_384, 9_176));
        }
        // The planted bug: a leaving node also sends its successor a fresh TOKEN. Found
        // in full and up to rotation, at the same depth breadth-first, a real path each.
        for o in strategies(&CheckOpts::new(3, 1)) {
            let all = check::<SecondToken>(&o, &mut quiet);
            let up_to = check_symmetric::<SecondToken>(&o, &[], &mut quiet);
            let (v, w) = (
                all.violation.expect("the second token is found"),
                up_to.violation.expect("up to rotation too"),
            );
            assert_eq!((v.property, w.property), ("mutual exclusion", "mutual exclusion"));
            if !o.dfs {
                assert_eq!(v.choices.len(), w.choices.len(), "both shortest");
            }
            let walked =
                walk::walk::<SecondToken>(&o, &[], &walk::Route::Choices(w.choices.clone())).unwrap();
            assert_eq!(walked.violation_step, Some(w.choices.len()));
            assert_eq!(walked.failure.as_deref(), Some(w.failure.as_str()));
        }
    }

    /// A planted bug for Suzuki-Kasami's rotations: leaving the section, a node also sends
    /// its successor a fresh TOKEN (rotation-symmetric, so the reduction must keep it).
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct SecondToken(crate::algos::suzuki_kasami::SuzukiKasami, PeerId, u32);

    impl crate::algorithm::Algorithm for SecondToken {
        type Msg = crate::algos::suzuki_kasami::Msg;
        type Timer = crate::algorithm::NoTimer;
        fn new(cfg: &crate::algorithm::Config) -> Self {
            SecondToken(crate::algorithm::Algorithm::new(cfg), PeerId((cfg.id.0 + 1) % cfg.n), cfg.n)
        }
        fn on_start(&mut self, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.0.on_start(out)
        }
        fn on_want_cs(&mut self, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.0.on_want_cs(out)
        }
        fn on_message(
            &mut self,
            from: PeerId,
            msg: Self::Msg,
            out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>,
        ) {
            self.0.on_message(from, msg, out)
        }
        fn on_cs_done(&mut self, out: &mut crate::algorithm::Out<Self::Msg, Self::Timer>) {
            self.0.on_cs_done(out);
            let fresh = vec![0; self.2 as usize];
            out.send(
                self.1,
                crate::algos::suzuki_kasami::Msg::Token { last_served: fresh, queue: Default::default() },
            );
        }
    }

    impl crate::algorithm::Symmetric for SecondToken {
        fn renamings(n: u32) -> Vec<crate::algorithm::Renaming> {
            crate::algorithm::Renaming::rotations(n)
        }
        fn renamed(&self, r: &crate::algorithm::Renaming) -> Self {
            SecondToken(self.0.renamed(r), r.of(self.1), self.2)
        }
        fn msg_renamed(msg: &Self::Msg, r: &crate::algorithm::Renaming) -> Self::Msg {
            crate::algos::suzuki_kasami::SuzukiKasami::msg_renamed(msg, r)
        }
        fn timer_renamed(timer: &Self::Timer, _: &crate::algorithm::Renaming) -> Self::Timer {
            match *timer {}
        }
    }

    #[test]
    fn the_none_baseline_overlaps_in_a_few_steps() {
        let r = check::<Immediate>(&CheckOpts::new(2, 1), &mut quiet);
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
        let r = check::<Lamport>(&opts, &mut quiet);
        let v = r.violation.expect("Lamport needs FIFO channels");
        assert_eq!(v.property, "mutual exclusion");
        let e = crate::Sim::<Lamport>::new(2, 0).non_fifo().replay(1, &v.choices).unwrap_err();
        assert!(matches!(e.failure, Failure::Overlap { .. }), "{e}");
        assert_eq!(e.choices[..], v.choices[..]);
    }

    #[test]
    fn lamport_with_fifo_holds_at_n2() {
        let r = check::<Lamport>(&CheckOpts::new(2, 1), &mut quiet);
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
        let r = check::<Unwritten>(&CheckOpts::new(2, 1), &mut quiet);
        let v = r.violation.expect("a panic is the node's failure");
        assert_eq!(v.property, "no node failure");
        assert!(v.failure.starts_with("a node panicked: on_want_cs is not written yet"), "{}", v.failure);
        assert_eq!(v.choices, vec![Choice::Call { node: 0, index: 0 }]);
    }

    #[test]
    fn without_a_bound_the_most_bypasses_are_told_and_the_counts_stay() {
        let r = check::<RicartAgrawala>(&CheckOpts::new(3, 1), &mut quiet);
        assert_eq!(r.states, 2_101, "no bound, no count in the state");
        assert_eq!(r.most_bypasses, Some(2));
        assert!(!r.properties.iter().any(|p| p.name == "bypass bound"));
        let text = r.text("ricart-agrawala");
        assert!(text.contains("most bypasses seen: 2 (at least;"), "{text}");
        assert!(text.contains("not checked: liveness beyond terminal states"), "{text}");
        assert!(text.contains("every request served   held on 13 states (terminal)"), "{text}");
    }

    #[test]
    fn a_coordinator_that_lets_others_pass_is_caught_by_the_bypass_bound() {
        // Centralized serves in the order requests reach the coordinator: w0's may be
        // slow while w2 enters twice.
        let mut opts = CheckOpts::new(3, 2);
        opts.bypass_bound = Some(1);
        let r = check::<crate::algos::centralized::Centralized>(&opts, &mut quiet);
        let v = r.violation.clone().expect("w2 passes w0 twice");
        assert_eq!(v.property, "bypass bound");
        assert_eq!(v.failure, "bypass bound exceeded: others entered 2 times while w0 waited (bound 1)");
        assert_eq!(v.choices.len(), 4, "{}", r.text("centralized"));
        let p = r.properties.iter().find(|p| p.name == "bypass bound").unwrap();
        assert!(!p.held);
        assert_eq!(p.detail.as_deref(), Some("at most 1; most seen: 2"));
        // Everything else held as far as the search went.
        assert!(r.properties.iter().filter(|p| p.name != "bypass bound").all(|p| p.held));
    }

    #[test]
    fn token_ring_keeps_its_bound_of_n_minus_1_and_the_count_joins_the_state() {
        let mut opts = CheckOpts::new(3, 2);
        let free = check::<crate::algos::token_ring::TokenRing>(&opts, &mut quiet);
        opts.bypass_bound = Some(2);
        let r = check::<crate::algos::token_ring::TokenRing>(&opts, &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("token-ring"));
        let p = r.properties.iter().find(|p| p.name == "bypass bound").unwrap();
        assert_eq!(
            (p.held, p.states, p.detail.as_deref()),
            (true, r.states, Some("at most 2; most seen: 2"))
        );
        // The count is part of the state: 3,731 worlds became 5,611 (world, counts) pairs
        // when this was written (a world model that changes changes the numbers).
        assert!(r.states > free.states, "{} vs {}", r.states, free.states);
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    struct Claim(u32);

    impl crate::algorithm::Message for Claim {
        fn kind(&self) -> &str {
            "CLAIM"
        }
    }

    /// An election toy. `MODE` 0: initiators broadcast their id, everyone takes the
    /// highest claim (correct); 1: every node names w0 (the lowest id wins); 2: every
    /// node names itself, each in its own term (nobody ever agrees).
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Elect<const MODE: u8> {
        me: u32,
        best: Option<u32>,
    }

    impl<const MODE: u8> Node for Elect<MODE> {
        type Msg = Claim;
        type Timer = crate::algorithm::NoTimer;
        type Service = crate::algorithm::Election;

        fn create(cfg: &Config) -> Self {
            Elect { me: cfg.id.0, best: None }
        }

        fn step(
            &mut self,
            input: crate::algorithm::NodeInput<Self>,
            out: &mut crate::algorithm::NodeOut<Self>,
        ) {
            use crate::algorithm::{ElectionCall, ElectionEvent, Input};
            let claim = match (MODE, input) {
                (1, Input::Call { call: ElectionCall::Elect }) => 0,
                (2, Input::Call { call: ElectionCall::Elect }) => {
                    let me = PeerId(self.me);
                    out.emit(ElectionEvent::Leader { id: me, term: u64::from(self.me) + 1 });
                    return;
                }
                (_, Input::Call { call: ElectionCall::Elect }) => {
                    out.broadcast(Claim(self.me));
                    self.me
                }
                (_, Input::Message { msg: Claim(c), .. }) => c,
                _ => return,
            };
            if self.best.is_none_or(|b| claim > b) {
                self.best = Some(claim);
                out.emit(ElectionEvent::Leader { id: PeerId(claim), term: u64::from(claim) + 1 });
            }
        }
    }

    fn elect<const MODE: u8>(highest_wins: bool) -> CheckReport {
        let mut opts = CheckOpts::new(3, 1);
        opts.highest_wins = highest_wins;
        check::<Elect<MODE>>(&opts, &mut quiet)
    }

    #[test]
    fn a_correct_election_agrees_on_the_highest_live_id() {
        let r = elect::<0>(true);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("toy"));
        let names: Vec<&str> = r.properties.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "one leader per term",
                "driver contract",
                "no node failure",
                "agreement when quiet",
                "highest live id"
            ]
        );
        assert!(r.properties[3].terminal && r.properties[4].terminal && r.properties[3].states > 0);
        assert_eq!(r.most_bypasses, None, "no bypasses in an election");
    }

    #[test]
    fn an_election_where_the_lowest_id_wins_is_caught_where_the_highest_is_promised() {
        let r = elect::<1>(true);
        let v = r.violation.expect("w0 wins");
        assert_eq!(v.property, "highest live id");
        assert_eq!(v.failure, "the live nodes agree on w0 (term 1), not the highest live id w2");
        // Not promised, not checked.
        let r = elect::<1>(false);
        assert!(r.violation.is_none() && !r.properties.iter().any(|p| p.name == "highest live id"));
    }

    #[test]
    fn an_election_that_never_agrees_is_caught_when_quiet() {
        let r = elect::<2>(false);
        let v = r.violation.clone().expect("each names itself");
        assert_eq!(v.property, "agreement when quiet");
        assert!(
            v.failure.starts_with("nothing more can happen and the live nodes do not agree"),
            "{}",
            v.failure
        );
        assert_eq!(v.choices.len(), 3, "each node calls its election: {}", r.text("toy"));
    }

    /// An invariant of one's own that Ricart-Agrawala at n = 3 breaks: two nodes asking
    /// their two peers each make four messages in flight.
    fn at_most_3_in_flight() -> Invariant<RicartAgrawala> {
        Invariant::new("at most 3 messages in flight", |w| {
            let k = w.in_flight().count();
            if k <= 3 {
                Ok(())
            } else {
                Err(format!("{k} messages in flight"))
            }
        })
    }

    #[test]
    fn an_invariant_of_ones_own_is_judged_at_every_state_and_named() {
        let quiet_links = at_most_3_in_flight();
        let r = check_with::<RicartAgrawala>(&CheckOpts::new(3, 1), &[quiet_links], &mut quiet);
        let v = r.violation.clone().expect("two requests to two peers each are four");
        assert_eq!(
            (v.property, v.failure.as_str()),
            ("at most 3 messages in flight", "4 messages in flight")
        );
        assert!(!r.properties.last().unwrap().held);
        assert!(r.text("ricart-agrawala").contains("at most 3 messages in flight VIOLATED"));
    }

    #[test]
    fn forgetting_dead_tickets_merges_states_and_is_off_by_default() {
        let mut opts = CheckOpts::new(3, 2);
        let plain = check::<RicartAgrawala>(&opts, &mut quiet);
        assert_eq!(plain.states, 34_845, "the Stateright model's count");
        opts.forget = true;
        let r = check::<RicartAgrawala>(&opts, &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("ricart-agrawala"));
        assert_eq!(r.states, 30_846, "a ticket is dead once its request is over");
    }

    #[test]
    fn a_lost_message_leaves_the_centralized_requester_waiting_forever() {
        use crate::algos::centralized::Centralized;
        let mut opts = CheckOpts::new(2, 1);
        assert!(check::<Centralized>(&opts, &mut quiet).violation.is_none());
        opts.lose = 1;
        let r = check::<Centralized>(&opts, &mut quiet);
        let v = r.violation.clone().expect("a lost REQUEST or GRANT is never made good");
        assert_eq!(v.property, "no deadlock", "{}", r.text("centralized"));
        assert!(v.choices.iter().any(|c| matches!(c, Choice::Lose { .. })));
        assert!(v.steps.iter().flatten().any(|l| l.ends_with("is lost")), "{:?}", v.steps);
        let e = crate::Sim::<Centralized>::new(2, 0).lose(1).replay(1, &v.choices).unwrap_err();
        assert!(matches!(e.failure, Failure::Deadlock { .. }), "{e}");
    }

    #[test]
    fn bully_at_n2_is_finite_whichever_timer_may_fire() {
        use crate::algos::bully::Bully;
        let mut opts = CheckOpts::new(2, 1);
        assert_eq!(opts.timers, TimerOrder::Any, "the checker makes no timing assumption");
        let any = check::<Bully>(&opts, &mut quiet);
        assert!(any.complete && any.violation.is_none(), "{}", any.text("bully"));
        assert_eq!(any.states, 109);
        opts.timers = TimerOrder::Earliest;
        let earliest = check::<Bully>(&opts, &mut quiet);
        assert_eq!(earliest.states, 109);
    }

    #[test]
    fn a_state_limit_cuts_the_search_short_and_says_so() {
        let mut opts = CheckOpts::new(3, 1);
        opts.max_states = 100;
        let r = check::<RicartAgrawala>(&opts, &mut quiet);
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
        let bfs = check::<RicartAgrawala>(&CheckOpts::new(3, 1), &mut quiet);
        let dfs = check::<RicartAgrawala>(&with(3, 1, |o| o.dfs = true), &mut quiet);
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
        let r = check::<Lamport>(&opts, &mut quiet);
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
        let e = crate::Sim::<Lamport>::new(2, 0).non_fifo().replay(1, &v.choices).unwrap_err();
        assert!(matches!(e.failure, Failure::Overlap { .. }), "{e}");
    }

    #[test]
    fn a_depth_bound_is_kept_and_the_search_says_it_was_cut() {
        for dfs in [false, true] {
            let r = check::<RicartAgrawala>(
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
            let bfs = check::<RicartAgrawala>(&with(3, 1, |o| o.max_depth = Some(5)), &mut quiet);
            assert_eq!(r.states, bfs.states, "dfs = {dfs}");
        }
        for dfs in [false, true] {
            let r = check::<RicartAgrawala>(
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
        let one = check::<RicartAgrawala>(&CheckOpts::new(3, 1), &mut quiet);
        for threads in [2, 3, 8] {
            let r = check::<RicartAgrawala>(&with(3, 1, |o| o.threads = threads), &mut quiet);
            assert_eq!(r.threads, threads);
            assert!(r.complete);
            assert_eq!((r.states, r.transitions, r.max_depth), (one.states, one.transitions, one.max_depth));
            assert_eq!(r.properties, one.properties, "{threads} threads");
            assert!(r.text("ricart-agrawala").contains(&format!("breadth-first on {threads} threads")));
        }
    }

    #[test]
    fn threads_still_give_a_shortest_counterexample() {
        let one = check::<Lamport>(&with(2, 1, |o| o.non_fifo = true), &mut quiet);
        let two = check::<Lamport>(
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
        let r = check::<RicartAgrawala>(&CheckOpts::new(2, 1), &mut quiet);
        let bytes = r.peak_memory_bytes.expect("Linux says in /proc/self/status");
        assert!(bytes > 1_000_000, "{bytes}");
        assert!(r.text("ricart-agrawala").contains(" MB"), "{}", r.text("ricart-agrawala"));
    }

    /// Every strategy: breadth-first on one thread and on two, depth-first.
    fn strategies(opts: &CheckOpts) -> [CheckOpts; 3] {
        let mut two = opts.clone();
        two.threads = 2;
        let mut dfs = opts.clone();
        dfs.dfs = true;
        [opts.clone(), two, dfs]
    }

    #[test]
    fn every_strategy_counts_bypasses_and_catches_a_bound_exceeded() {
        let mut opts = CheckOpts::new(3, 2);
        opts.bypass_bound = Some(2);
        for o in strategies(&opts) {
            let r = check::<crate::algos::token_ring::TokenRing>(&o, &mut quiet);
            assert!(r.complete && r.violation.is_none(), "{}", r.text("token-ring"));
            let p = r.properties.iter().find(|p| p.name == "bypass bound").unwrap();
            assert_eq!((p.held, p.detail.as_deref()), (true, Some("at most 2; most seen: 2")), "{o:?}");
        }
        let counts: Vec<u64> = strategies(&opts)
            .iter()
            .map(|o| check::<crate::algos::token_ring::TokenRing>(o, &mut quiet).states)
            .collect();
        assert!(counts.iter().all(|&c| c == counts[0]), "the counts join the state alike: {counts:?}");
        // Its negative control, in each: the coordinator lets others pass.
        opts.bypass_bound = Some(1);
        for o in strategies(&opts) {
            let r = check::<crate::algos::centralized::Centralized>(&o, &mut quiet);
            let v = r.violation.clone().unwrap_or_else(|| panic!("{o:?}: {}", r.text("centralized")));
            assert_eq!(v.property, "bypass bound", "{o:?}");
            assert!(v.failure.starts_with("bypass bound exceeded: others entered 2 times"), "{}", v.failure);
            assert_eq!(v.shortest, !o.dfs);
        }
        // Without a bound the most seen is told by each.
        for o in strategies(&CheckOpts::new(3, 1)) {
            let r = check::<RicartAgrawala>(&o, &mut quiet);
            assert_eq!((r.states, r.most_bypasses), (2_101, Some(2)), "{o:?}");
        }
    }

    #[test]
    fn every_strategy_judges_invariants_and_records_the_counterexample_run() {
        let few = at_most_3_in_flight();
        for o in strategies(&CheckOpts::new(3, 1)) {
            let r = check_with::<RicartAgrawala>(&o, std::slice::from_ref(&few), &mut quiet);
            let v = r.violation.clone().unwrap_or_else(|| panic!("{o:?}: {}", r.text("ra")));
            assert_eq!(
                (v.property, v.failure.as_str()),
                ("at most 3 messages in flight", "4 messages in flight")
            );
            // The replay recorded the run: each node's trace and the resource file.
            let files = v.run.files("ricart-agrawala");
            assert!(
                files.iter().any(|(name, body)| name.starts_with("trace-w") && body.lines().count() > 1),
                "{o:?}"
            );
            assert!(
                files.iter().any(|(name, _)| name == "resource.log"),
                "{:?}",
                files.iter().map(|f| &f.0).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_timer_budget_ends_a_search_that_timers_keep_going() {
        use crate::algos::token_ring_ft::TokenRingFt;
        let fires = |t: Option<u32>| {
            check::<TokenRingFt>(
                &with(2, 1, |o| {
                    o.timer_fires = t;
                    o.max_states = 20_000;
                }),
                &mut quiet,
            )
        };
        let endless = fires(None);
        assert!(!endless.complete && endless.violation.is_none(), "{}", endless.text("token-ring-ft"));
        let (one, two) = (fires(Some(1)), fires(Some(2)));
        for r in [&one, &two] {
            assert!(r.complete && r.violation.is_none(), "{}", r.text("token-ring-ft"));
        }
        assert!(one.states < two.states, "the budget is part of the state: {} {}", one.states, two.states);
        let text = one.text("token-ring-ft");
        assert!(text.contains("timer bound: at most 1 timer firing on any way (--timer-fires)"), "{text}");
        assert!(text.contains("not checked: what can happen after 1 timer firing (--timer-fires)"), "{text}");
        assert_eq!(endless.timer_fires, None);
        assert!(!endless.text("token-ring-ft").contains("timer bound"));
    }

    #[test]
    fn a_state_only_the_timer_budget_stops_is_not_judged_terminal() {
        use crate::algos::token_ring_ft::TokenRingFt;
        // With no timer firing at all, token-ring-ft's regeneration never runs: the
        // search ends in states where an application waits and only a timer could help.
        let opts = with(2, 1, |o| o.timer_fires = Some(0));
        let r = check::<TokenRingFt>(&opts, &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("token-ring-ft"));
        assert!(r.at_timer_bound > 0, "{}", r.text("token-ring-ft"));
        // The negative control: such a state exists and has a waiting application, which
        // the deadlock judge would have flagged had it been taken for terminal.
        let stuck = [Invariant::new(
            "not stopped by the bound with a waiting application",
            |w: &World<TokenRingFt>| match w.timers_held() && !w.waiting().is_empty() {
                true => Err("an application waits and only a timer could help".into()),
                false => Ok(()),
            },
        )];
        let r = check_with::<TokenRingFt>(&opts, &stuck, &mut quiet);
        assert!(r.violation.is_some(), "{}", r.text("token-ring-ft"));
    }
}
