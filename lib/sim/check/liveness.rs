//! Liveness under weak fairness (`check --liveness`): a request that is never served on
//! a way that goes round a cycle of states for ever, where every delivery, timer and
//! application call that stays enabled along the cycle is taken in it. Such a lasso
//! (the way from the start to the cycle, then the cycle) is a counterexample to
//! `every request served (fair cycles)`, which the terminal-state judge of the safety
//! search cannot see: a lost request round which heartbeats go on for ever ends in no
//! terminal state.
//!
//! Its own pass, separate from the safety engines: breadth-first through the same
//! [`World`], keeping the whole graph (each state's fingerprint, the way back to the
//! start, who waits, which fair actions are enabled, and every edge with its action),
//! which is fine for lab-sized models. Then, for each node, the graph restricted to the
//! states where that node waits is cut into maximal strongly connected components
//! (Tarjan); such a component holds a weakly fair cycle exactly when every fair action
//! enabled in all of its states is taken by some edge inside it (a sub-cycle cannot do
//! better). The fair actions are: a delivery on the channel `from → to` (any message on
//! it, so a channel, not a message, is what fairness is about without FIFO), news of a
//! death on a channel, a call of node i's application, a timer of node i firing (whichever
//! of its timers; in `--timers earliest` too, so a cycle the merged timer times make is
//! not taken for fair while another node's timer waits). Crashes, restarts, losses and
//! stale-timer decisions need not be fair.
//!
//! The pass runs without a timer budget (a budget counted in the state breaks every
//! cycle of heartbeats), but with the counter bound: a state past it has no edges, so no
//! cycle goes through it, and the verdict holds of the cycles within the bound. A
//! lasso found in a graph cut short by a limit is still a real one (every state on it
//! was expanded); no lasso in a graph cut short proves nothing, and the report says so.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::memory;
use super::search::fingerprint;
use super::{initial, CheckOpts};
use crate::algorithm::Node;
use crate::{Choice, SimService, World, WorldEvent};

/// No fair action: a crash, a restart, a loss, a stale timer's fate.
const UNFAIR: u16 = u16::MAX;

/// A lasso: a way from the start to a state, then a cycle back to that state, all the
/// way round which `node`'s application waits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Lasso {
    /// The node whose request is never served.
    pub node: u32,
    /// The choices from the start (after the search's own prefix) to the cycle.
    pub stem: Vec<Choice>,
    /// The cycle's choices, from its first state back to it.
    pub cycle: Vec<Choice>,
}

/// What the liveness pass found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Outcome {
    /// States in the graph.
    pub states: u64,
    /// Edges in the graph.
    pub transitions: u64,
    /// States past the counter bound (no edges).
    pub at_counter_bound: u64,
    /// Why exploring stopped before the graph was whole, if a limit stopped it.
    pub cut_short: Option<String>,
    /// Exploring stopped early because the graph so far held a lasso.
    pub stopped_at_lasso: bool,
    /// The lasso with the shortest way to its cycle, if there is one.
    pub lasso: Option<Lasso>,
}

/// Fair actions are numbered: deliveries `from * n + to`, news of deaths `n² + …`,
/// calls `2n² + i`, timers `2n² + n + i`.
struct Actions {
    n: u32,
    words: usize,
}

impl Actions {
    fn new(n: u32) -> Actions {
        let count = 2 * n * n + 2 * n;
        Actions { n, words: (count as usize).div_ceil(64) }
    }

    fn timer(&self, node: u32) -> u16 {
        (2 * self.n * self.n + self.n + node) as u16
    }

    /// The fair action `c` is, given which node's timer `Choice::Timer` fired.
    fn of(&self, c: Choice, fired: Option<u32>) -> u16 {
        let n = self.n;
        match c {
            Choice::Deliver { from, to, .. } => (from * n + to) as u16,
            Choice::Down { from, to } => (n * n + from * n + to) as u16,
            Choice::Call { node, .. } => (2 * n * n + node) as u16,
            Choice::Fire { node, .. } => self.timer(node),
            Choice::Timer => fired.map_or(UNFAIR, |node| self.timer(node)),
            Choice::Lose { .. } | Choice::Stale { .. } | Choice::Crash { .. } | Choice::Restart { .. } => {
                UNFAIR
            }
        }
    }

    /// The fair actions enabled in `world`, as a bit set.
    fn enabled<N: Node>(&self, world: &World<N>, enabled: &[Choice]) -> Vec<u64>
    where
        N::Service: SimService,
    {
        let mut set = vec![0u64; self.words];
        let mut put = |a: u16| {
            if a != UNFAIR {
                set[a as usize / 64] |= 1 << (a % 64);
            }
        };
        for &c in enabled {
            if c == Choice::Timer {
                // Which node's timer would fire is the times' business: every node with
                // a timer armed has one that is enabled, in turn.
                world.timers().for_each(|(node, _, _)| put(self.timer(node.0)));
            } else {
                put(self.of(c, None));
            }
        }
        set
    }
}

/// The graph the pass builds; edges of state `i` are `edges[first[i]..first[i + 1]]`.
struct Graph {
    fps: Vec<u64>,
    /// The way back to the start: the parent and the choice from it.
    parent: Vec<(u32, Choice)>,
    /// Bit i: node i's application waits.
    waiting: Vec<u32>,
    /// Fair actions enabled, `words` per state.
    enabled: Vec<u64>,
    first: Vec<u32>,
    edges: Vec<(u32, u16, Choice)>,
    words: usize,
}

impl Graph {
    fn out(&self, s: u32) -> &[(u32, u16, Choice)] {
        match (self.first.get(s as usize), self.first.get(s as usize + 1)) {
            (Some(&a), Some(&b)) => &self.edges[a as usize..b as usize],
            _ => &[],
        }
    }

    fn expanded(&self) -> usize {
        self.first.len().saturating_sub(1)
    }

    fn enabled(&self, s: u32) -> &[u64] {
        &self.enabled[s as usize * self.words..(s as usize + 1) * self.words]
    }
}

/// Explore the states of `opts`'s model without a timer budget, then look for a fair
/// cycle in which some request waits. Stops at `opts`'s state, time and memory limits,
/// counted from `started`, and at a signal.
pub(super) fn fair_cycles<N: Node>(opts: &CheckOpts, started: Instant) -> Outcome
where
    N::Service: SimService,
{
    let free = CheckOpts { timer_fires: None, ..opts.clone() };
    let (g, mut out) = explore::<N>(&free, opts, started);
    out.lasso = (0..opts.n).filter_map(|i| lasso(&g, i)).min_by_key(|l| l.entry).and_then(|l| {
        // The graph's choices were taken from the first world found of each state; a
        // world equal to it may order its timers (or, without FIFO, its messages)
        // otherwise, so the way is walked again, choosing by the state reached.
        realign::<N>(&free, opts, &g, l)
    });
    out
}

/// The graph of `free`'s model (`opts` with no timer budget), as far as the limits let
/// it go; the outcome without a lasso.
fn explore<N: Node>(free: &CheckOpts, opts: &CheckOpts, started: Instant) -> (Graph, Outcome)
where
    N::Service: SimService,
{
    let actions = Actions::new(opts.n);
    let mut quiet = |_: Duration, _: &WorldEvent<'_, N::Msg, N::Timer>| {};
    let mut world = initial::<N>(free);
    let begun = crate::panics::quietly(|| {
        world.start(&mut quiet)?;
        opts.from.iter().try_for_each(|&c| world.apply(c, &mut quiet))
    });
    let mut g = Graph {
        fps: Vec::new(),
        parent: Vec::new(),
        waiting: Vec::new(),
        enabled: Vec::new(),
        first: vec![0],
        edges: Vec::new(),
        words: actions.words,
    };
    let mut out = Outcome {
        states: 0,
        transitions: 0,
        at_counter_bound: 0,
        cut_short: None,
        stopped_at_lasso: false,
        lasso: None,
    };
    if !matches!(begun, Ok(Ok(()))) {
        out.cut_short = Some("the start itself fails (the safety search says how)".into());
        return (g, out);
    }
    let mut index: HashMap<u64, u32> = HashMap::new();
    let mut memory = memory::Bound::new(opts.max_memory);
    let mut frontier: VecDeque<World<N>> = VecDeque::new();
    let mut add =
        |g: &mut Graph, world: World<N>, parent: (u32, Choice), frontier: &mut VecDeque<World<N>>| {
            let fp = fingerprint(&world);
            if let Some(&i) = index.get(&fp) {
                return i;
            }
            let i = g.fps.len() as u32;
            index.insert(fp, i);
            g.fps.push(fp);
            g.parent.push(parent);
            let mask = world.waiting().iter().fold(0u32, |m, (p, _)| m | 1 << p.0);
            g.waiting.push(mask);
            frontier.push_back(world);
            i
        };
    add(&mut g, world, (u32::MAX, Choice::Timer), &mut frontier);
    let mut s = 0u32;
    // The graph so far is looked at for a lasso each time it doubles: a lasso among the
    // states expanded is a real one, so a buggy model need not be explored whole.
    let mut look_at = 1024usize;
    while let Some(world) = frontier.pop_front() {
        if g.expanded() >= look_at {
            look_at *= 2;
            if (0..opts.n).any(|i| lasso(&g, i).is_some()) {
                out.stopped_at_lasso = true;
                break;
            }
        }
        if let Some(why) = limit(opts, started, &mut memory, g.fps.len() as u64) {
            out.cut_short = Some(why);
            break;
        }
        let enabled = world.enabled();
        g.enabled.extend(actions.enabled(&world, &enabled));
        if world.past_counter_bound() {
            out.at_counter_bound += 1;
        }
        for &c in &enabled {
            let mut next = world.clone();
            let mut fired = None;
            let applied = crate::panics::quietly(|| {
                next.apply(c, &mut |_, e| {
                    if let WorldEvent::TimerFires { node, .. } = e {
                        fired = Some(node.0);
                    }
                })
            });
            match applied {
                Ok(Ok(())) => {}
                Ok(Err(f)) => {
                    out.cut_short = Some(format!(
                        "a state the safety search did not reach (it had a timer budget) breaks a property: {f}; check with --timer-fires none shows the way"
                    ));
                }
                Err(panic) => {
                    out.cut_short = Some(format!(
                        "a state the safety search did not reach (it had a timer budget) makes a node panic: {panic}; check with --timer-fires none shows the way"
                    ));
                }
            }
            if out.cut_short.is_some() {
                break;
            }
            let t = add(&mut g, next, (s, c), &mut frontier);
            g.edges.push((t, actions.of(c, fired), c));
        }
        g.first.push(g.edges.len() as u32);
        if out.cut_short.is_some() {
            // The state's edges are not all known: leave it unexpanded.
            g.edges.truncate(g.first[s as usize] as usize);
            g.first.pop();
            g.enabled.truncate(s as usize * g.words);
            break;
        }
        s += 1;
    }
    out.states = g.fps.len() as u64;
    out.transitions = g.edges.len() as u64;
    (g, out)
}

/// Why the pass must stop before expanding more, if it must.
fn limit(opts: &CheckOpts, started: Instant, memory: &mut memory::Bound, states: u64) -> Option<String> {
    if crate::interrupt::requested() {
        return Some("interrupted by a signal".into());
    }
    if states > opts.max_states {
        return Some(format!("--max-states {} reached", opts.max_states));
    }
    if started.elapsed().as_secs_f64() >= opts.max_seconds {
        return Some(format!("--max-seconds {} reached", opts.max_seconds));
    }
    memory.reached()
}

/// A lasso as state indices: the stem's last state is the cycle's first.
struct Found {
    node: u32,
    entry: u32,
    /// The cycle's edges as (from, edge index into `Graph::edges`).
    cycle: Vec<usize>,
}

/// The fair cycle where `node` waits with the shortest way to it, if there is one.
fn lasso(g: &Graph, node: u32) -> Option<Found> {
    let bit = 1u32 << node;
    let inside = |s: u32| (s as usize) < g.expanded() && g.waiting[s as usize] & bit != 0;
    let comp = components(g, &inside);
    let count = comp.iter().filter(|&&c| c != u32::MAX).max().map_or(0, |&c| c as usize + 1);
    // Per component: the fair actions enabled in all its states, those taken inside,
    // whether it has an edge inside, and its first state (the nearest the start).
    let mut always = vec![u64::MAX; count * g.words];
    let mut taken = vec![0u64; count * g.words];
    let mut cyclic = vec![false; count];
    let mut entry = vec![u32::MAX; count];
    for s in 0..g.expanded() as u32 {
        let c = comp[s as usize];
        if c == u32::MAX {
            continue;
        }
        let c = c as usize;
        entry[c] = entry[c].min(s);
        for (w, e) in g.enabled(s).iter().enumerate() {
            always[c * g.words + w] &= e;
        }
        for &(t, a, _) in g.out(s) {
            if comp.get(t as usize) == Some(&(c as u32)) {
                cyclic[c] = true;
                if a != UNFAIR {
                    taken[c * g.words + a as usize / 64] |= 1 << (a % 64);
                }
            }
        }
    }
    let fair = (0..count).filter(|&c| {
        cyclic[c] && (0..g.words).all(|w| always[c * g.words + w] & !taken[c * g.words + w] == 0)
    });
    let c = fair.min_by_key(|&c| entry[c])?;
    let needed: Vec<u16> = (0..g.words * 64)
        .filter(|&a| always[c * g.words + a / 64] & (1 << (a % 64)) != 0)
        .map(|a| a as u16)
        .collect();
    let cycle = round(g, &comp, c as u32, entry[c], &needed);
    Some(Found { node, entry: entry[c], cycle })
}

/// Strongly connected components of the states `inside` allows (Tarjan, iteratively):
/// each state's component, `u32::MAX` for states left out.
fn components(g: &Graph, inside: &dyn Fn(u32) -> bool) -> Vec<u32> {
    let v = g.fps.len();
    const NONE: u32 = u32::MAX;
    let (mut order, mut low) = (vec![NONE; v], vec![0u32; v]);
    let mut on_stack = vec![false; v];
    let mut comp = vec![NONE; v];
    let (mut next, mut comps) = (0u32, 0u32);
    let mut stack: Vec<u32> = Vec::new();
    // (state, next edge to look at)
    let mut call: Vec<(u32, usize)> = Vec::new();
    for root in 0..v as u32 {
        if !inside(root) || order[root as usize] != NONE {
            continue;
        }
        call.push((root, 0));
        order[root as usize] = next;
        low[root as usize] = next;
        next += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(&mut (s, ref mut k)) = call.last_mut() {
            let out = g.out(s);
            if let Some(&(t, _, _)) = out.get(*k) {
                *k += 1;
                if !inside(t) {
                    continue;
                }
                if order[t as usize] == NONE {
                    order[t as usize] = next;
                    low[t as usize] = next;
                    next += 1;
                    stack.push(t);
                    on_stack[t as usize] = true;
                    call.push((t, 0));
                } else if on_stack[t as usize] {
                    low[s as usize] = low[s as usize].min(order[t as usize]);
                }
                continue;
            }
            call.pop();
            if let Some(&(p, _)) = call.last() {
                low[p as usize] = low[p as usize].min(low[s as usize]);
            }
            if low[s as usize] == order[s as usize] {
                while let Some(t) = stack.pop() {
                    on_stack[t as usize] = false;
                    comp[t as usize] = comps;
                    if t == s {
                        break;
                    }
                }
                comps += 1;
            }
        }
    }
    comp
}

/// A cycle in component `c` from `entry` back to it that takes each of `needed`: from
/// where it is, the nearest edge taking an action not yet taken, then home. Edge indices.
fn round(g: &Graph, comp: &[u32], c: u32, entry: u32, needed: &[u16]) -> Vec<usize> {
    let within = |e: usize| comp.get(g.edges[e].0 as usize) == Some(&c);
    let edges_of = |s: u32| {
        let first = g.first[s as usize] as usize;
        (first..first + g.out(s).len()).filter(move |&e| within(e))
    };
    let mut path: Vec<usize> = Vec::new();
    let mut left: Vec<u16> = needed.to_vec();
    let mut at = entry;
    loop {
        if left.is_empty() && !path.is_empty() && at == entry {
            return path;
        }
        if left.is_empty() && path.is_empty() {
            // Any step out, so that the way home is a cycle of at least one step.
            let e = edges_of(at).next().expect("a component with an edge inside has one from each state");
            path.push(e);
            at = g.edges[e].0;
            continue;
        }
        // Breadth-first in the component from `at`: the nearest state with an edge taking
        // an action still needed, or, none left, the entry.
        let mut back: HashMap<u32, (u32, usize)> = HashMap::new();
        let mut queue = VecDeque::from([at]);
        let mut goal = None;
        'search: while let Some(s) = queue.pop_front() {
            if left.is_empty() && s == entry {
                goal = Some((s, None));
                break;
            }
            for e in edges_of(s) {
                if left.contains(&g.edges[e].1) {
                    goal = Some((s, Some(e)));
                    break 'search;
                }
            }
            for e in edges_of(s) {
                let t = g.edges[e].0;
                if t != at && !back.contains_key(&t) {
                    back.insert(t, (s, e));
                    queue.push_back(t);
                }
            }
        }
        let (s, edge) = goal.expect("a strongly connected component reaches each of its states");
        let mut way = Vec::new();
        let mut x = s;
        while x != at {
            let (p, e) = back[&x];
            way.push(e);
            x = p;
        }
        path.extend(way.into_iter().rev());
        at = s;
        if let Some(e) = edge {
            path.push(e);
            at = g.edges[e].0;
        }
        // Actions taken on the way count too.
        left.retain(|&a| !path.iter().any(|&e| g.edges[e].1 == a));
    }
}

/// The lasso's choices, walked again from the start: each step the choice that reaches
/// the state the graph says (the graph's own first), so that the choices are a way
/// through the worlds the replay makes. `None` if some step cannot be matched (a hash
/// collision, which a 64-bit fingerprint makes all but impossible).
fn realign<N: Node>(free: &CheckOpts, opts: &CheckOpts, g: &Graph, found: Found) -> Option<Lasso>
where
    N::Service: SimService,
{
    let mut stem_states = Vec::new();
    let mut s = found.entry;
    while s != 0 {
        let (p, _) = g.parent[s as usize];
        stem_states.push((s, g.parent[s as usize].1));
        s = p;
    }
    stem_states.reverse();
    let cycle_states: Vec<(u32, Choice)> =
        found.cycle.iter().map(|&e| (g.edges[e].0, g.edges[e].2)).collect();
    let mut quiet = |_: Duration, _: &WorldEvent<'_, N::Msg, N::Timer>| {};
    let mut world = initial::<N>(free);
    let _ = crate::panics::quietly(|| {
        world.start(&mut quiet)?;
        opts.from.iter().try_for_each(|&c| world.apply(c, &mut quiet))
    });
    let step = |world: &mut World<N>, (target, wanted): (u32, Choice)| -> Option<Choice> {
        let fp = g.fps[target as usize];
        let enabled = world.enabled();
        let order = std::iter::once(wanted).chain(enabled.iter().copied().filter(|&c| c != wanted));
        for c in order.filter(|c| enabled.contains(c)) {
            let mut next = world.clone();
            if matches!(crate::panics::quietly(|| next.apply(c, &mut |_, _| {})), Ok(Ok(())))
                && fingerprint(&next) == fp
            {
                *world = next;
                return Some(c);
            }
        }
        None
    };
    let stem = stem_states.into_iter().map(|x| step(&mut world, x)).collect::<Option<Vec<_>>>()?;
    let cycle = cycle_states.into_iter().map(|x| step(&mut world, x)).collect::<Option<Vec<_>>>()?;
    Some(Lasso { node: found.node, stem, cycle })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::{check, CheckOpts, Progress};
    use super::*;
    use crate::algorithm::{Algorithm, Config, Message, Out, PeerId};
    use crate::algos::ricart_agrawala::RicartAgrawala;
    use crate::algos::token_ring::TokenRing;

    fn quiet(_: &Progress) {}

    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    enum Msg {
        Req,
        Grant,
        Rel,
    }

    impl Message for Msg {
        fn kind(&self) -> &str {
            match self {
                Msg::Req => "REQ",
                Msg::Grant => "GRANT",
                Msg::Rel => "REL",
            }
        }
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Tick;

    /// Two nodes, w1 the coordinator: w0 asks w1 with a REQ, and w1 grants it when it
    /// holds nothing (`GRANTS`), or drops it (a lost request); w1 lets itself in the
    /// same way. With `TICKS` w1 has a timer that fires for ever, each time armed again,
    /// as a coordinator's heartbeat.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Toy<const GRANTS: bool, const TICKS: bool> {
        me: u32,
        holder: Option<u32>,
        queue: Vec<u32>,
    }

    impl<const GRANTS: bool, const TICKS: bool> Toy<GRANTS, TICKS> {
        fn grant(&mut self, who: u32, out: &mut Out<Msg, Tick>) {
            if self.holder.is_some() {
                return self.queue.push(who);
            }
            self.holder = Some(who);
            match who {
                1 => out.enter_cs(),
                _ => out.send(PeerId(0), Msg::Grant),
            }
        }
        fn release(&mut self, out: &mut Out<Msg, Tick>) {
            self.holder = None;
            if !self.queue.is_empty() {
                let next = self.queue.remove(0);
                self.grant(next, out);
            }
        }
    }

    impl<const GRANTS: bool, const TICKS: bool> Algorithm for Toy<GRANTS, TICKS> {
        type Msg = Msg;
        type Timer = Tick;
        fn new(cfg: &Config) -> Self {
            Toy { me: cfg.id.0, holder: None, queue: Vec::new() }
        }
        fn on_start(&mut self, out: &mut Out<Msg, Tick>) {
            if TICKS && self.me == 1 {
                out.set_timer(Tick, Duration::from_millis(10));
            }
        }
        fn on_want_cs(&mut self, out: &mut Out<Msg, Tick>) {
            match self.me {
                0 => out.send(PeerId(1), Msg::Req),
                _ => self.grant(1, out),
            }
        }
        fn on_message(&mut self, _: PeerId, msg: Msg, out: &mut Out<Msg, Tick>) {
            match msg {
                Msg::Req if GRANTS => self.grant(0, out),
                Msg::Req => {}
                Msg::Grant => out.enter_cs(),
                Msg::Rel => self.release(out),
            }
        }
        fn on_cs_done(&mut self, out: &mut Out<Msg, Tick>) {
            match self.me {
                0 => out.send(PeerId(1), Msg::Rel),
                _ => self.release(out),
            }
        }
        fn on_timer(&mut self, _: Tick, out: &mut Out<Msg, Tick>) {
            out.set_timer(Tick, Duration::from_millis(10));
        }
    }

    /// One entry each, and the liveness pass.
    fn toy_opts() -> CheckOpts {
        let mut opts = CheckOpts::new(2, 1);
        opts.liveness = true;
        opts
    }

    /// The toy's pass from w0's call.
    fn only_w0<const G: bool, const T: bool>() -> Outcome {
        let mut opts = toy_opts();
        opts.from = vec![Choice::Call { node: 0, index: 0 }];
        fair_cycles::<Toy<G, T>>(&opts, Instant::now())
    }

    #[test]
    fn a_request_lost_while_a_timer_fires_for_ever_is_a_lasso() {
        let out = only_w0::<false, true>();
        assert_eq!(out.cut_short, None);
        let l = out.lasso.expect("w0 waits while w1 ticks for ever");
        assert_eq!(l.node, 0);
        // The way to the cycle delivers the REQ (nothing is fair to leave undelivered);
        // the cycle is w1's tick, alone.
        assert!(l.stem.contains(&Choice::Deliver { from: 0, to: 1, index: 0 }), "{l:?}");
        assert!(l.cycle.iter().all(|c| matches!(c, Choice::Fire { node: 1, .. })), "{l:?}");
        // The same through `check`, with the cycle marked.
        let r = check::<Toy<false, true>>(&toy_opts(), &mut quiet);
        let v = r.violation.clone().expect("found by check --liveness");
        assert_eq!(v.property, "every request served (fair cycles)");
        assert!(v.failure.starts_with("w0 waits for ever") || v.failure.starts_with("w1 waits for ever"));
        let c = v.cycle_start.expect("a lasso marks its cycle");
        assert!(c < v.choices.len());
        let text = r.text("toy");
        assert!(text.contains("counterexample (a lasso: "), "{text}");
        assert_eq!(c + 1, v.choices.len(), "a cycle of one step: w1's tick");
        assert!(text.contains(&format!("the cycle: step {} repeats for ever", c + 1)), "{text}");
        assert!(text.contains("search: complete, breadth-first"), "the safety search finished: {text}");
        assert!(text.contains("every request served (fair cycles) VIOLATED"), "{text}");
        // `check --out` saves where the cycle starts in its counterexample file, and no
        // timer budget: the lasso was found without one, and fires more timers than it.
        let budget = CheckOpts { timer_fires: Some(1), ..toy_opts() };
        let file = crate::counterexample::CounterexampleFile::new("toy", &budget, &v);
        assert_eq!((file.cycle_start, file.opts.timer_fires), (Some(c), None));
        let safety = crate::check::Counterexample { cycle_start: None, ..v.clone() };
        let file = crate::counterexample::CounterexampleFile::new("toy", &budget, &safety);
        assert_eq!(file.opts.timer_fires, Some(1), "a safety path keeps the search's budget");
        // Its negative control: without the tick, the same lost request ends in a state
        // where nothing happens, the safety search's deadlock, and no cycle.
        assert_eq!(only_w0::<false, false>().lasso, None);
        let r = check::<Toy<false, false>>(&toy_opts(), &mut quiet);
        assert_eq!(r.violation.map(|v| v.property), Some("no deadlock"));
    }

    #[test]
    fn a_cycle_that_starves_a_delivery_is_no_counterexample_under_weak_fairness() {
        // w1 grants on the REQ; the REQ may wait while w1 ticks, round and round.
        let opts = CheckOpts { from: vec![Choice::Call { node: 0, index: 0 }], ..toy_opts() };
        let free = CheckOpts { timer_fires: None, ..opts.clone() };
        let (g, out) = explore::<Toy<true, true>>(&free, &opts, Instant::now());
        assert_eq!(out.cut_short, None);
        // Such a cycle is there: a state where w0 waits with a tick back to itself...
        let starving = (0..g.expanded() as u32).find(|&s| {
            g.waiting[s as usize] & 1 != 0 && g.out(s).iter().any(|&(t, a, _)| t == s && a != UNFAIR)
        });
        assert!(starving.is_some(), "the tick's self-loop while the REQ waits");
        // ...but the REQ's delivery is enabled all along it and never taken: not fair.
        assert!(lasso(&g, 0).is_none());
        assert_eq!(only_w0::<true, true>().lasso, None);
        let r = check::<Toy<true, true>>(&toy_opts(), &mut quiet);
        assert!(r.violation.is_none(), "{}", r.text("toy"));
        let p = r.properties.iter().find(|p| p.name == "every request served (fair cycles)").unwrap();
        assert!(p.held && p.states > 0);
    }

    #[test]
    fn the_correct_algorithms_have_no_fair_cycle_with_a_waiting_request() {
        for n in [2, 3] {
            let opts = CheckOpts { liveness: true, ..CheckOpts::new(n, 1) };
            let ra = check::<RicartAgrawala>(&opts, &mut quiet);
            let ring = check::<TokenRing>(&opts, &mut quiet);
            for (name, r) in [("ricart-agrawala", ra), ("token-ring", ring)] {
                assert!(r.violation.is_none(), "{}", r.text(name));
                let l = r.liveness.clone().expect("the pass ran");
                // Its graph holds the safety search's states, and those after done ones
                // (a token that goes round when nobody wants it).
                assert!(l.complete && l.states >= r.states, "{}", r.text(name));
                assert!(r
                    .properties
                    .iter()
                    .any(|p| p.name == "every request served (fair cycles)" && p.held));
                assert!(r.text(name).contains("liveness: weak fairness"), "{}", r.text(name));
            }
        }
    }

    #[test]
    fn a_liveness_pass_cut_short_decides_nothing_and_says_so() {
        let opts = CheckOpts { liveness: true, ..CheckOpts::new(3, 1) };
        let whole = check::<RicartAgrawala>(&opts, &mut quiet);
        let max_states = whole.states - 1;
        let out =
            fair_cycles::<RicartAgrawala>(&CheckOpts { max_states: 100, ..opts.clone() }, Instant::now());
        assert_eq!(out.cut_short.as_deref(), Some("--max-states 100 reached"));
        assert_eq!(out.lasso, None);
        // Through check: the safety search finishes within the bound, the pass does not.
        let mut cut = opts.clone();
        cut.max_states = max_states;
        let r = check::<RicartAgrawala>(&cut, &mut quiet);
        assert!(r.liveness.as_ref().is_some_and(|l| !l.complete), "{}", r.text("ra"));
        assert!(!r.properties.iter().any(|p| p.name == "every request served (fair cycles)"));
        let text = r.text("ricart-agrawala");
        assert!(text.contains("every request served (fair cycles) UNDECIDED"), "{text}");
        // Not asked, not run, and the summary says what is not checked.
        let r = check::<RicartAgrawala>(&CheckOpts::new(2, 1), &mut quiet);
        assert!(r.liveness.is_none());
        assert!(r.text("ra").contains("--liveness checks it"));
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    enum Beat {
        Tick,
        Grow,
    }

    /// w0's request is dropped by w1, whose timers fire for ever: `Tick` (with `TICKS`)
    /// sends w0 a heartbeat, `Grow` counts up without end, so the states never run out.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Endless<const TICKS: bool> {
        me: u32,
        count: u64,
    }

    impl<const TICKS: bool> Algorithm for Endless<TICKS> {
        type Msg = Msg;
        type Timer = Beat;
        fn new(cfg: &Config) -> Self {
            Endless { me: cfg.id.0, count: 0 }
        }
        fn on_start(&mut self, out: &mut Out<Msg, Beat>) {
            if self.me == 1 {
                if TICKS {
                    out.set_timer(Beat::Tick, Duration::from_millis(10));
                }
                out.set_timer(Beat::Grow, Duration::from_millis(10));
            }
        }
        fn on_want_cs(&mut self, out: &mut Out<Msg, Beat>) {
            match self.me {
                0 => out.send(PeerId(1), Msg::Req),
                _ => out.enter_cs(),
            }
        }
        fn on_message(&mut self, _: PeerId, _: Msg, _: &mut Out<Msg, Beat>) {}
        fn on_cs_done(&mut self, _: &mut Out<Msg, Beat>) {}
        fn on_timer(&mut self, timer: Beat, out: &mut Out<Msg, Beat>) {
            match timer {
                Beat::Grow => self.count += 1,
                // A heartbeat: w0 ignores it.
                Beat::Tick => out.send(PeerId(0), Msg::Rel),
            }
            out.set_timer(timer, Duration::from_millis(10));
        }
    }

    #[test]
    fn a_lasso_in_an_endless_space_is_found_without_exploring_it_all() {
        let opts = CheckOpts { max_states: 200_000, ..toy_opts() };
        let out = fair_cycles::<Endless<true>>(&opts, Instant::now());
        assert!(out.stopped_at_lasso, "{out:?}");
        assert_eq!(out.cut_short, None);
        assert!(out.states < 20_000, "it looks each time the graph doubles: {}", out.states);
        let l = out.lasso.expect("w0 waits while w1 ticks");
        assert_eq!(l.node, 0);
        // Fairness is per node's timers: w1's Tick alone going round is fair to w1; the
        // heartbeat it sends is delivered in the cycle, which empties the channel again.
        assert_eq!(l.cycle.len(), 2, "{l:?}");
        assert!(
            matches!(l.cycle[..], [Choice::Fire { node: 1, .. }, Choice::Deliver { from: 1, to: 0, .. }]),
            "{l:?}"
        );
        let r = check::<Endless<true>>(&CheckOpts { max_states: 3_000, ..toy_opts() }, &mut quiet);
        assert_eq!(r.violation.map(|v| v.property), Some("every request served (fair cycles)"));
        // Its negative control: without the tick no state repeats, there is no lasso, and
        // the pass runs to its limit.
        let out =
            fair_cycles::<Endless<false>>(&CheckOpts { max_states: 3_000, ..toy_opts() }, Instant::now());
        assert!(!out.stopped_at_lasso && out.lasso.is_none());
        assert_eq!(out.cut_short.as_deref(), Some("--max-states 3000 reached"));
    }
}
