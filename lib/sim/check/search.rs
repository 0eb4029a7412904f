//! The search engines behind [`super::check`]: breadth-first, level by level, on one or
//! more threads; and depth-first with an optional depth bound, on one.
//!
//! Both keep a visited set of 64-bit fingerprints, not worlds, in shards. Breadth-first
//! keeps with each fingerprint only its parent's (the counterexample is rebuilt by
//! walking them back and replaying the way, choosing at each state the first choice
//! that leads to the next), and holds whole worlds only for the level being expanded and
//! the next. Its threads share the visited set's shards, each behind its own lock, and
//! take the level's worlds in small batches, each first those it found itself (see
//! [`expand`]), then the others'; a level is finished before the next begins,
//! so every state is found at its distance from the start whatever the thread count, the
//! states found are the same, and a counterexample is a shortest one. Depth-first keeps
//! only the fingerprints (with a depth bound, with the depth each was found at), and the
//! path it is on (the worlds along it); its counterexample is that path, not necessarily
//! the shortest. With a depth bound, a state reached again closer to the start than before
//! is explored again, since what lies below it may have been cut by the bound.
//!
//! Every strategy carries each world's bypass counts beside it (in its fingerprint only
//! when a bound is checked) and judges each new state with [`super::judge`]: the
//! properties, the bound and the invariants of one's own, the same way.

use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::memory;
pub(super) use super::visited::fingerprint;
use super::visited::{FpMap, Seen, Visited};
use super::{
    bypass_step, initial, judge, BypassBefore, CheckOpts, Counts, Invariant, Progress, Property, COUNTED,
};
use crate::algorithm::{Node, PeerId, Renaming, ServiceKind, Symmetric};
use crate::{Choice, Failure, SimService, World, WorldEvent};

/// What a search is for: the service, the options and the invariants of one's own, with
/// how bypasses are counted.
pub(super) struct Search<'a, N: Node>
where
    N::Service: SimService,
{
    service: ServiceKind,
    opts: &'a CheckOpts,
    invariants: &'a [Invariant<N>],
    /// Bypasses are counted (mutual exclusion).
    counted: bool,
    /// Counts stop at the bound + 1, so that the space stays finite.
    cap: u8,
    /// Symmetry reduction, where the node type declares it and it was asked for.
    sym: Option<Sym<N>>,
}

/// A symmetry reduction: the renamings of the node type's group, and how a world is
/// renamed (`World::renamed`, which needs the node type to be `Symmetric`).
pub(super) struct Sym<N: Node>
where
    N::Service: SimService,
{
    renamings: Vec<Renaming>,
    rename: fn(&World<N>, &Renaming) -> World<N>,
}

impl<N: Symmetric> Sym<N>
where
    N::Service: SimService,
{
    /// The node type's symmetries at `n` nodes.
    pub(super) fn of(n: u32) -> Sym<N> {
        Sym { renamings: N::renamings(n), rename: World::<N>::renamed }
    }
}

impl<N: Node> Sym<N>
where
    N::Service: SimService,
{
    /// The renamings, the identity among them.
    pub(super) fn count(&self) -> usize {
        self.renamings.len()
    }
}

impl<'a, N: Node> Search<'a, N>
where
    N::Service: SimService,
{
    /// A search of `service` under `opts`, judging `invariants` too.
    pub(super) fn new(service: ServiceKind, opts: &'a CheckOpts, invariants: &'a [Invariant<N>]) -> Self {
        let cap = super::bypass_cap(opts);
        Search { service, opts, invariants, counted: service == ServiceKind::Mutex, cap, sym: None }
    }

    /// The same search, keyed up to the symmetries `sym`.
    pub(super) fn symmetric(self, sym: Sym<N>) -> Self {
        Search { sym: Some(sym), ..self }
    }

    /// A state's fingerprint: its world's, with its bypass counts when a bound is checked;
    /// under symmetry the least of its renamings' (see [`Search::key`]).
    fn print(&self, world: &World<N>, counts: &Counts) -> u64 {
        match &self.sym {
            None => self.own_print(world, counts),
            Some(_) => self.key(world, counts).0,
        }
    }

    fn own_print(&self, world: &World<N>, counts: &Counts) -> u64 {
        if self.opts.bypass_bound.is_some() {
            fingerprint(&(world, counts))
        } else {
            fingerprint(world)
        }
    }

    /// A state's key in the visited set and the number of distinct states it stands for:
    /// without symmetry its fingerprint and 1; with it, the least fingerprint of its
    /// renamings (one key for a state and all its renamed twins) and how many distinct
    /// fingerprints they have (its orbit).
    pub(super) fn key(&self, world: &World<N>, counts: &Counts) -> (u64, u64) {
        let Some(sym) = &self.sym else { return (self.own_print(world, counts), 1) };
        let mut prints: Vec<u64> = sym
            .renamings
            .iter()
            .map(|r| {
                if r.is_identity() {
                    return self.own_print(world, counts);
                }
                let mut moved: Counts = [0; COUNTED];
                for (i, &c) in counts.iter().enumerate().take(world.n().min(COUNTED)) {
                    moved[r.of(PeerId(i as u32)).index()] = c;
                }
                self.own_print(&(sym.rename)(world, r), &moved)
            })
            .collect();
        prints.sort_unstable();
        prints.dedup();
        (prints[0], prints.len() as u64)
    }

    /// The counts after the step from `before` to `after`, and the most of them.
    fn count(&self, before: &World<N>, after: &World<N>, counts: &Counts) -> (Counts, u8) {
        let mut next = *counts;
        let most = if self.counted { bypass_step(before, after, &mut next, self.cap) } else { 0 };
        (next, most)
    }
}

/// The observer of a search: nothing is formatted, nothing kept.
fn quiet<M, T>(_: Duration, _: &WorldEvent<'_, M, T>) {}

/// What a search found, for [`super::check`] to report.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// Distinct states found.
    pub states: u64,
    /// Choices applied.
    pub transitions: u64,
    /// The deepest state's depth (breadth-first: its distance from the start).
    pub max_depth: u32,
    /// Terminal states found (done, or nothing enabled but crashes).
    pub terminals: u64,
    /// States where only the timer budget kept anything from happening
    /// ([`World::timers_held`]): at the bound, neither terminal nor judged as such.
    pub at_timer_bound: u64,
    /// States not expanded because a node's growing counter is past the bound
    /// ([`World::past_counter_bound`]): neither terminal nor judged as such.
    pub at_counter_bound: u64,
    /// Why the search stopped before the end, if it did.
    pub cut_short: Option<String>,
    /// The violation found, with the choices from the start to it.
    pub violation: Option<(Property, String, Vec<Choice>)>,
    /// The most bypasses seen (mutual exclusion; see [`bypass_step`]).
    pub most_bypasses: u8,
    /// Under symmetry: the distinct states the states found stand for (the sum of their
    /// orbits), and the start's orbit (1 when the start is its own every renaming, so
    /// that the states reachable are closed under renaming and the sum is the count a
    /// full search finds). Without symmetry, `states` and 1.
    pub orbits: u64,
    pub start_orbit: u64,
}

impl Outcome {
    /// Count the start as `first` judged it, recording a violation there; the start
    /// to expand, if it is to be.
    fn begin<N: Node>(&mut self, first: Look<N>) -> Option<Item<N>>
    where
        N::Service: SimService,
    {
        match first {
            Look::Violation(p, why) => {
                self.violation = Some((p, why, Vec::new()));
                None
            }
            Look::Done => {
                self.terminals = 1;
                None
            }
            Look::Next(item, end) => {
                [self.terminals, self.at_timer_bound, self.at_counter_bound] = end.counts();
                Some(item)
            }
        }
    }
}

/// What a search watches as it goes, besides its state count: the time, the memory
/// and a signal. Each ends it with a partial report that says which stopped it.
pub(super) struct Limits {
    started: Instant,
    max_seconds: f64,
    memory: memory::Bound,
}

impl Limits {
    /// The limits `opts` set, from `started`.
    pub(super) fn new(opts: &CheckOpts, started: Instant) -> Limits {
        Limits { started, max_seconds: opts.max_seconds, memory: memory::Bound::new(opts.max_memory) }
    }

    /// Why the search must stop now, if it must.
    fn reached(&mut self, now: Instant) -> Option<String> {
        if crate::interrupt::requested() {
            return Some("interrupted by a signal".into());
        }
        if now.duration_since(self.started).as_secs_f64() >= self.max_seconds {
            return Some(format!("--max-seconds {} reached", self.max_seconds));
        }
        self.memory.reached()
    }
}

/// A state found and not yet expanded: its world, bypass counts, fingerprint and
/// enabled choices (all worked out once, when it was found and judged).
struct Item<N: Node>
where
    N::Service: SimService,
{
    world: World<N>,
    counts: Counts,
    fp: u64,
    enabled: Vec<Choice>,
}

/// A state in breadth-first search's level: an [`Item`] without its enabled choices,
/// worked out again when it is expanded (the levels hold states by the hundred thousand,
/// and the list was an allocation each).
struct Queued<N: Node>
where
    N::Service: SimService,
{
    world: World<N>,
    counts: Counts,
    fp: u64,
}

impl<N: Node> From<Item<N>> for Queued<N>
where
    N::Service: SimService,
{
    fn from(Item { world, counts, fp, enabled: _ }: Item<N>) -> Self {
        Queued { world, counts, fp }
    }
}

/// What a state newly found turns out to be.
// Moved once, straight into the frontier: boxing the world would cost an allocation each.
#[allow(clippy::large_enum_variant)]
enum Look<N: Node>
where
    N::Service: SimService,
{
    /// It breaks a property.
    Violation(Property, String),
    /// It is done: terminal, nothing to expand.
    Done,
    /// It is to be expanded, with how it ends if nothing but crashes is enabled.
    Next(Item<N>, End),
}

/// What a state that is not done has left to do.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// Something but a crash can happen.
    Open,
    /// Nothing but crashes can happen: a terminal state.
    Terminal,
    /// Nothing but crashes can happen because the timer budget is spent.
    AtBound,
    /// Nothing is expanded: a node's growing counter is past the bound.
    AtCounterBound,
}

impl End {
    /// `[terminal, at the timer bound, at the counter bound]` as counts to add.
    fn counts(self) -> [u64; 3] {
        [self == End::Terminal, self == End::AtBound, self == End::AtCounterBound].map(u64::from)
    }
}

/// Judge `world` with its `counts`, just reached by a step that came out as `applied`.
fn look<N: Node>(
    how: &Search<'_, N>,
    world: World<N>,
    counts: Counts,
    fp: u64,
    applied: Result<Result<(), Failure>, String>,
) -> Look<N>
where
    N::Service: SimService,
{
    match applied {
        Ok(Ok(())) => {}
        Ok(Err(f)) => return Look::Violation(Property::of(&f), f.to_string()),
        // A node's panic (a lab skeleton's unwritten handler, an assertion) is its
        // failure, with the way to it, not a backtrace.
        Err(panic) => return Look::Violation(Property::NodeFailure, format!("a node panicked: {panic}")),
    }
    let enabled = world.enabled();
    if let Some((p, why)) = judge(how.service, &world, &enabled, how.opts, how.invariants, &counts) {
        return Look::Violation(p, why);
    }
    if world.done() {
        return Look::Done;
    }
    let end = match enabled.iter().all(|c| matches!(c, Choice::Crash { .. })) {
        false => End::Open,
        true if world.past_counter_bound() => End::AtCounterBound,
        true if world.timers_held() => End::AtBound,
        true => End::Terminal,
    };
    Look::Next(Item { world, counts, fp, enabled }, end)
}

/// The initial world, started and led along the prefix to search from, with how that
/// went.
fn started<N: Node>(how: &Search<'_, N>) -> (World<N>, Result<Result<(), Failure>, String>)
where
    N::Service: SimService,
{
    let mut world = initial::<N>(how.opts);
    // Started, then led along the prefix to search from (none: the start itself). A
    // prefix that is not a path of this world is the caller's error, caught before.
    let applied = crate::panics::quietly(|| {
        world.start(&mut quiet)?;
        how.opts.from.iter().try_for_each(|&c| world.apply(c, &mut quiet))
    });
    (world, applied)
}

/// The initial world, started, as a state newly found: its key, its orbit and how it
/// looks.
fn start<N: Node>(how: &Search<'_, N>) -> (u64, u64, Look<N>)
where
    N::Service: SimService,
{
    let (world, applied) = started(how);
    let counts: Counts = [0; COUNTED];
    let (fp, orbit) = how.key(&world, &counts);
    (fp, orbit, look(how, world, counts, fp, applied))
}

impl Visited {
    /// The choices from the start to the state with fingerprint `fp`: along its parents,
    /// at each state the first enabled choice (in [`World::enabled`]'s order, the order
    /// a state is expanded in, so the choice that found the state first) that leads to
    /// the next state's fingerprint.
    ///
    /// Under symmetry the way is of real states, not representatives: a state reached
    /// may be a renamed twin of the one that was expanded, and a renaming of the step
    /// that was taken there leads to a twin of the next. The last state is returned with
    /// how its step went, to be judged again (its failure names its own nodes).
    #[allow(clippy::type_complexity)]
    fn path<N: Node>(
        &self,
        how: &Search<'_, N>,
        fp: u64,
    ) -> (Vec<Choice>, World<N>, Counts, Result<Result<(), Failure>, String>)
    where
        N::Service: SimService,
    {
        let prints = self.prints(fp);
        let (mut world, mut applied) = started(how);
        let mut counts: Counts = [0; COUNTED];
        let mut choices = Vec::with_capacity(prints.len().saturating_sub(1));
        for &want in &prints[1..] {
            let next = world.enabled().into_iter().find_map(|choice| {
                let mut after = world.clone();
                let outcome = crate::panics::quietly(|| after.apply(choice, &mut quiet));
                let (after_counts, _) = how.count(&world, &after, &counts);
                (how.print(&after, &after_counts) == want).then_some((choice, after, after_counts, outcome))
            });
            let Some((choice, after, after_counts, outcome)) = next else {
                break; // cannot be: each state was found from its parent by one choice
            };
            choices.push(choice);
            (world, counts, applied) = (after, after_counts, outcome);
        }
        (choices, world, counts, applied)
    }
}

/// What the threads of a breadth-first search share besides the visited set.
struct Shared {
    states: AtomicU64,
    transitions: AtomicU64,
    /// The orbits of the states found (see [`Outcome::orbits`]).
    orbits: AtomicU64,
    terminals: AtomicU64,
    at_timer_bound: AtomicU64,
    at_counter_bound: AtomicU64,
    /// States found and not yet expanded, in this level and the next.
    pending: AtomicU64,
    most_bypasses: AtomicU8,
    stop: AtomicBool,
    /// Why the search stopped early: a violation (with its state's fingerprint) or a limit.
    found: Mutex<Option<(Property, String, u64)>>,
    cut_short: Mutex<Option<String>>,
}

impl Shared {
    fn violation(&self, p: Property, why: String, fp: u64) {
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        found.get_or_insert((p, why, fp));
        self.stop.store(true, Relaxed);
    }

    fn cut(&self, why: String) {
        let mut cut = self.cut_short.lock().unwrap_or_else(|e| e.into_inner());
        cut.get_or_insert(why);
        self.stop.store(true, Relaxed);
    }
}

/// Worlds one thread takes from the level at a time.
const BATCH: usize = 64;

/// A batch of a level's worlds, at most [`BATCH`]. A level is kept in batches, each
/// allocated to its size, not in one vector grown by doubling: a world in the level is
/// 440 bytes before its heap (Ricart-Agrawala, n = 4), and a doubled vector's unused half
/// was up to that much again per state.
type Batch<N> = Vec<Queued<N>>;

/// Breadth-first search on `threads` threads (see the module doc). `progress` is called
/// on the calling thread about once a second.
pub(super) fn bfs<N: Node>(
    how: &Search<'_, N>,
    threads: usize,
    limits: &mut Limits,
    progress: &mut dyn FnMut(&Progress),
) -> Outcome
where
    N::Service: SimService,
{
    let opts = how.opts;
    let threads = threads.max(1);
    let visited = Visited::new();
    let shared = Shared {
        states: AtomicU64::new(1),
        transitions: AtomicU64::new(0),
        orbits: AtomicU64::new(0),
        terminals: AtomicU64::new(0),
        at_timer_bound: AtomicU64::new(0),
        at_counter_bound: AtomicU64::new(0),
        pending: AtomicU64::new(0),
        most_bypasses: AtomicU8::new(0),
        stop: AtomicBool::new(false),
        found: Mutex::new(None),
        cut_short: Mutex::new(None),
    };
    let (fp, orbit, first) = start::<N>(how);
    let mut out = Outcome { states: 1, orbits: orbit, start_orbit: orbit, ..Outcome::default() };
    visited.insert(fp, fp); // the start is its own parent
                            // The level in one share per thread: the worlds each thread found (see [`expand`]),
                            // in batches.
    let mut level: Vec<Vec<Batch<N>>> = (0..threads).map(|_| Vec::new()).collect();
    level[0].extend(out.begin(first).map(|item| vec![Queued::from(item)]));
    if out.violation.is_some() {
        return out;
    }
    shared.terminals.store(out.terminals, Relaxed);
    shared.orbits.store(out.orbits, Relaxed);
    shared.at_timer_bound.store(out.at_timer_bound, Relaxed);
    shared.at_counter_bound.store(out.at_counter_bound, Relaxed);
    let waiting = |level: &[Vec<Batch<N>>]| level.iter().flatten().map(Vec::len).sum::<usize>();
    shared.pending.store(waiting(&level) as u64, Relaxed);
    let mut depth = 0u32;
    let mut last_progress = limits.started;
    while waiting(&level) > 0 && !shared.stop.load(Relaxed) {
        if opts.max_depth == Some(depth) {
            let left = waiting(&level);
            shared.cut(format!("--max-depth {depth} reached; {left} states there not expanded"));
            break;
        }
        let before = shared.states.load(Relaxed);
        let todo: Vec<Mutex<Vec<Batch<N>>>> = level.into_iter().map(Mutex::new).collect();
        let mut nexts: Vec<Vec<Batch<N>>> = Vec::with_capacity(threads);
        let (todo, visited, shared_ref) = (&todo[..], &visited, &shared);
        std::thread::scope(|s| {
            let helpers: Vec<_> = (1..threads)
                .map(|me| s.spawn(move || expand(how, todo, me, depth, visited, shared_ref, None)))
                .collect();
            let mut watch =
                Watch { limits: &mut *limits, last: &mut last_progress, progress: &mut *progress };
            nexts.push(expand(how, todo, 0, depth, visited, shared_ref, Some(&mut watch)));
            for h in helpers {
                match h.join() {
                    Ok(next) => nexts.push(next),
                    // A panic outside a node's handlers is a bug of ours: pass it on.
                    Err(e) => std::panic::resume_unwind(e),
                }
            }
        });
        // Each thread's share stays its own, in the order of the threads: not copied
        // into one vector (as long as the level, for a moment), and expanded next by the
        // thread that made its worlds.
        level = nexts;
        if shared.states.load(Relaxed) > before {
            out.max_depth = depth + 1;
        }
        depth += 1;
    }
    out.states = shared.states.load(Relaxed);
    out.transitions = shared.transitions.load(Relaxed);
    out.orbits = shared.orbits.load(Relaxed);
    out.terminals = shared.terminals.load(Relaxed);
    out.at_timer_bound = shared.at_timer_bound.load(Relaxed);
    out.at_counter_bound = shared.at_counter_bound.load(Relaxed);
    out.most_bypasses = shared.most_bypasses.load(Relaxed);
    out.cut_short = shared.cut_short.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some((p, why, fp)) = shared.found.into_inner().unwrap_or_else(|e| e.into_inner()) {
        let (choices, world, counts, applied) = visited.path(how, fp);
        // Under symmetry the way may end in a renamed twin of the state judged: judge
        // the state it ends in, so that the failure names the nodes of that way.
        let (p, why) = match how.sym.is_some().then(|| look(how, world, counts, fp, applied)) {
            Some(Look::Violation(p, why)) => (p, why),
            _ => (p, why),
        };
        out.violation = Some((p, why, choices));
        out.cut_short = None; // stopped at the violation, whatever else was due
    }
    out
}

/// The calling thread's duty besides its share of the work: the limits and progress.
struct Watch<'a> {
    limits: &'a mut Limits,
    last: &'a mut Instant,
    progress: &'a mut dyn FnMut(&Progress),
}

/// Thread `me`'s part of a level at `depth`: take batches from its own share of `todo`
/// (the worlds it found at the level before) until it is empty, then from the others',
/// expand each world, and return the new states found (its share of the next level).
///
/// A world is best freed by the thread that allocated it: glibc's malloc gives each
/// thread an arena, and a free into another thread's arena takes that arena's lock. With
/// one shared list of the level, half the worlds were freed across, and the two threads
/// spent a quarter of their time waiting on each other's arena locks (`perf`: futex waits
/// under `World::clone` and `drop`), which is why a second thread did not help.
fn expand<N: Node>(
    how: &Search<'_, N>,
    todo: &[Mutex<Vec<Batch<N>>>],
    me: usize,
    depth: u32,
    visited: &Visited,
    shared: &Shared,
    mut watch: Option<&mut Watch<'_>>,
) -> Vec<Batch<N>>
where
    N::Service: SimService,
{
    let opts = how.opts;
    let mut next: Vec<Batch<N>> = Vec::new();
    let (mut transitions, mut most, mut orbits) = (0u64, 0u8, 0u64);
    // Terminal states, at the timer bound, at the counter bound.
    let mut ends = [0u64; 3];
    // Its own share first, then the others' in turn.
    let mut from = (0..todo.len()).map(|i| (me + i) % todo.len());
    let mut share = from.next();
    'work: while let Some(i) = share {
        let Some(batch) = todo[i].lock().unwrap_or_else(|e| e.into_inner()).pop() else {
            share = from.next();
            continue;
        };
        for item in batch {
            if shared.stop.load(Relaxed) {
                break 'work;
            }
            let mut found = 0u64;
            for choice in item.world.enabled() {
                let mut world = item.world.clone();
                transitions += 1;
                let applied = crate::panics::quietly(|| world.apply(choice, &mut quiet));
                let (counts, seen) = how.count(&item.world, &world, &item.counts);
                most = most.max(seen);
                let (fp, orbit) = how.key(&world, &counts);
                if !visited.insert(fp, item.fp) {
                    continue;
                }
                orbits += orbit;
                let states = shared.states.fetch_add(1, Relaxed) + 1;
                match look(how, world, counts, fp, applied) {
                    Look::Violation(p, why) => {
                        shared.violation(p, why, fp);
                        break 'work;
                    }
                    Look::Done => ends[0] += 1,
                    Look::Next(item, end) => {
                        for (sum, add) in ends.iter_mut().zip(end.counts()) {
                            *sum += add;
                        }
                        match next.last_mut() {
                            Some(batch) if batch.len() < BATCH => batch.push(item.into()),
                            _ => {
                                let mut batch = Vec::with_capacity(BATCH);
                                batch.push(item.into());
                                next.push(batch);
                            }
                        }
                        found += 1;
                    }
                }
                if states >= opts.max_states {
                    shared.cut(format!("--max-states {} reached", opts.max_states));
                    break 'work;
                }
            }
            // One taken, `found` added.
            shared.pending.fetch_add(found, Relaxed);
            shared.pending.fetch_sub(1, Relaxed);
        }
        if let Some(w) = watch.as_deref_mut() {
            let now = Instant::now();
            let seconds = now.duration_since(w.limits.started).as_secs_f64();
            if let Some(why) = w.limits.reached(now) {
                shared.cut(why);
                break;
            }
            if now.duration_since(*w.last) >= Duration::from_secs(1) {
                *w.last = now;
                (w.progress)(&Progress {
                    states: shared.states.load(Relaxed),
                    depth,
                    queue: shared.pending.load(Relaxed) as usize,
                    seconds,
                });
            }
        }
    }
    shared.transitions.fetch_add(transitions, Relaxed);
    shared.orbits.fetch_add(orbits, Relaxed);
    shared.terminals.fetch_add(ends[0], Relaxed);
    shared.at_timer_bound.fetch_add(ends[1], Relaxed);
    shared.at_counter_bound.fetch_add(ends[2], Relaxed);
    shared.most_bypasses.fetch_max(most, Relaxed);
    next
}

/// A world on the depth-first path, with the next of its choices to take.
struct Frame<N: Node>
where
    N::Service: SimService,
{
    /// Taken (moved on, not copied) at its last choice.
    world: Option<World<N>>,
    counts: Counts,
    enabled: Vec<Choice>,
    next: usize,
}

impl<N: Node> From<Item<N>> for Frame<N>
where
    N::Service: SimService,
{
    fn from(Item { world, counts, fp: _, enabled }: Item<N>) -> Self {
        Frame { world: Some(world), counts, enabled, next: 0 }
    }
}

/// Depth-first search on the calling thread (see the module doc), no deeper than
/// `opts.max_depth`.
pub(super) fn dfs<N: Node>(
    how: &Search<'_, N>,
    limits: &mut Limits,
    progress: &mut dyn FnMut(&Progress),
) -> Outcome
where
    N::Service: SimService,
{
    let opts = how.opts;
    // With a depth bound each fingerprint with the least depth it was reached at;
    // without, the fingerprints alone (half the memory).
    let mut depths: FpMap<u32> = FpMap::default();
    let mut prints = Seen::new();
    let mut stack: Vec<Frame<N>> = Vec::new();
    let (fp, orbit, first) = start::<N>(how);
    let mut out = Outcome { states: 1, orbits: orbit, start_orbit: orbit, ..Outcome::default() };
    match opts.max_depth {
        Some(_) => depths.insert(fp, 0).is_none(),
        None => prints.insert(fp),
    };
    stack.extend(out.begin(first).map(Frame::from));
    if out.violation.is_some() {
        return out;
    }
    let mut not_expanded = 0u64;
    if opts.max_depth == Some(0) {
        not_expanded = stack.len() as u64;
        stack.clear();
    }
    let mut last_progress = limits.started;
    while !stack.is_empty() {
        let depth = stack.len() as u32;
        let top = stack.last_mut().expect("not empty");
        let Some(&choice) = top.enabled.get(top.next) else {
            stack.pop();
            continue;
        };
        top.next += 1;
        out.transitions += 1;
        // The last choice takes the world itself, not a copy (one copy fewer a state);
        // the frame stays, for its choice on the way to a violation, until it is popped.
        let (world, applied, counts, seen) = if top.next == top.enabled.len() {
            let mut world = top.world.take().expect("a frame's world is taken at its last choice");
            let before = how.counted.then(|| BypassBefore::of(&world));
            let applied = crate::panics::quietly(|| world.apply(choice, &mut quiet));
            let mut counts = top.counts;
            let seen = before.map_or(0, |b| b.step(&world, &mut counts, how.cap));
            (world, applied, counts, seen)
        } else {
            let before = top.world.as_ref().expect("taken only at the last choice");
            let mut world = before.clone();
            let applied = crate::panics::quietly(|| world.apply(choice, &mut quiet));
            let (counts, seen) = how.count(before, &world, &top.counts);
            (world, applied, counts, seen)
        };
        out.most_bypasses = out.most_bypasses.max(seen);
        let (fp, orbit) = how.key(&world, &counts);
        let again = match opts.max_depth.map(|_| depths.entry(fp)) {
            None if prints.insert(fp) => {
                out.states += 1;
                out.orbits += orbit;
                false
            }
            None => continue,
            Some(Entry::Vacant(slot)) => {
                slot.insert(depth);
                out.states += 1;
                out.orbits += orbit;
                false
            }
            Some(Entry::Occupied(mut seen)) if depth < *seen.get() => {
                seen.insert(depth);
                true
            }
            Some(Entry::Occupied(_)) => continue,
        };
        out.max_depth = out.max_depth.max(depth);
        match look(how, world, counts, fp, applied) {
            Look::Violation(p, why) => {
                let choices = stack.iter().map(|f| f.enabled[f.next - 1]).collect();
                out.violation = Some((p, why, choices));
                return out;
            }
            Look::Done => out.terminals += u64::from(!again),
            Look::Next(item, end) => {
                if !again {
                    let [t, b, c] = end.counts();
                    out.terminals += t;
                    out.at_timer_bound += b;
                    out.at_counter_bound += c;
                }
                if opts.max_depth == Some(depth) {
                    not_expanded += u64::from(!again);
                } else {
                    stack.push(Frame::from(item));
                }
            }
        }
        if out.states >= opts.max_states {
            out.cut_short = Some(format!("--max-states {} reached", opts.max_states));
            return out;
        }
        if out.transitions.is_multiple_of(1024) {
            let now = Instant::now();
            let seconds = now.duration_since(limits.started).as_secs_f64();
            if let Some(why) = limits.reached(now) {
                out.cut_short = Some(why);
                return out;
            }
            if now.duration_since(last_progress) >= Duration::from_secs(1) {
                last_progress = now;
                progress(&Progress { states: out.states, depth, queue: stack.len(), seconds });
            }
        }
    }
    if let (Some(bound), true) = (opts.max_depth, not_expanded > 0) {
        out.cut_short =
            Some(format!("--max-depth {bound} reached; {not_expanded} states there not expanded"));
    }
    out
}
