//! Searches ([`Search`]): every interleaving at a small size through the checker, a
//! violation shown by its shortest counterexample's first steps.

use super::{Ctx, Done};
use crate::algorithm::Node;
use crate::check::{self, CheckOpts, CheckReport, Invariant};
use crate::lab::is_unwritten;
use crate::runtime::RunService;
use crate::sim::SimService;

/// A search meant to cover every state stops here all the same (a node with more
/// states than the reference's, or with a counter that only grows, would go on).
const SEARCH_CAP: u64 = 200_000;
/// A search stops after this long whatever its bound: far above what any lab's search
/// takes, and within its test's time limit ([`Kind::limit`](super::Kind::limit)).
const SEARCH_SECONDS: f64 = 100.0;
/// The counterexample's steps a failed search shows (its `check` command shows all).
const SEARCH_STEPS: usize = 3;

/// A search of every interleaving ([`crate::check::check`]) at a small size: `n` nodes,
/// `entries` each (elections: per initiator), with the world's knobs. It covers every
/// reachable state, or with [`Search::first`] the first so many in breadth-first order
/// (for a space too big to finish, or unbounded, as it is where every timeout raises a
/// counter the protocol reads); a search is deterministic, so the same bound covers the
/// same states every time. It passes when every property held on what it covered.
/// `grade --n`/`--seed` narrow the sweeps only: a search's size is part of the test.
#[derive(Clone, Debug)]
pub struct Search {
    opts: CheckOpts,
    /// The stated bound, if the search is not meant to cover every state.
    first: Option<u64>,
}

impl Search {
    /// Every interleaving of `n` nodes, `entries` entries each, FIFO channels, no crashes.
    pub fn new(n: u32, entries: u32) -> Search {
        let mut opts = CheckOpts::new(n, entries);
        opts.max_states = SEARCH_CAP;
        opts.max_seconds = SEARCH_SECONDS;
        Search { opts, first: None }
    }

    /// Let any message in flight on a channel be delivered first.
    pub fn non_fifo(mut self) -> Search {
        self.opts.non_fifo = true;
        self
    }

    /// Up to `count` crashes, of any node, each followed by a restart.
    pub fn crashes(mut self, count: u32) -> Search {
        self.opts.crashes = count;
        self
    }

    /// A reset or cancelled timer may still fire once.
    pub fn stale_timers(mut self) -> Search {
        self.opts.stale_timers = true;
        self
    }

    /// Elections: when the live nodes agree, it is on the highest live id (`highest
    /// live id`), as the ring and bully algorithms promise.
    pub fn highest_wins(mut self) -> Search {
        self.opts.highest_wins = true;
        self
    }

    /// Only the earliest armed timer fires (as the simulator), instead of any of them: a
    /// search of what the node does when its timeouts are right, not early.
    pub fn earliest_timers(mut self) -> Search {
        self.opts.timers = crate::check::TimerOrder::Earliest;
        self
    }

    /// Also look for a request never served round a cycle of states that is weakly fair
    /// to every delivery, timer and call (`check --liveness`: a lasso, which no terminal
    /// state shows when heartbeats go on for ever round a lost request). Its own pass
    /// after the safety search, within the same bound ([`Search::first`]).
    pub fn liveness(mut self) -> Search {
        self.opts.liveness = true;
        self
    }

    /// Cover only the first `states` states, breadth-first (the shortest ways first).
    pub fn first(mut self, states: u64) -> Search {
        self.opts.max_states = states;
        self.first = Some(states);
        self
    }

    /// The knobs, as the test's line and the `check` command give them.
    fn knobs(&self) -> Vec<String> {
        let o = &self.opts;
        let mut v = Vec::new();
        if o.non_fifo {
            v.push("no FIFO".to_string());
        }
        match o.crashes {
            0 => {}
            1 => v.push("1 crash".into()),
            c => v.push(format!("{c} crashes")),
        }
        if o.stale_timers {
            v.push("stale timers".into());
        }
        if o.timers == crate::check::TimerOrder::Earliest {
            v.push("earliest timer first".into());
        }
        if o.liveness {
            v.push("fair cycles".into());
        }
        v
    }

    pub(super) fn detail(&self) -> String {
        let mut d = vec![format!("n={}, k={}", self.opts.n, self.opts.entries)];
        d.extend(self.knobs());
        d.push(match self.first {
            Some(states) => format!("first {states} states"),
            None => "every state".into(),
        });
        d.join(", ")
    }

    /// The command that prints a counterexample whole: the lab program's `check`.
    fn command(&self, algo: &str) -> String {
        let o = &self.opts;
        let mut c = format!("cargo run -- check --algo {algo} -n {} -k {}", o.n, o.entries);
        for flag in o.flags() {
            c = c + " " + &flag;
        }
        if let Some(states) = self.first {
            c.push_str(&format!(" --max-states {states}"));
        }
        c
    }
}

pub(super) fn run_search<N: Node<Service: SimService + RunService>>(
    search: &Search,
    invariants: &[Invariant<N>],
    ctx: &Ctx,
    id: &str,
) -> Result<Done, String> {
    if ctx.external.is_some() {
        return Ok(Done::Skipped(
            "a program's state lives in its process, which a search cannot copy; the sweeps test it".into(),
        ));
    }
    let r = check::check_with::<N>(&search.opts, invariants, &mut |_| {});
    match &r.violation {
        None => Ok(Done::Passed(Some(searched(&r, search)))),
        Some(_) => Err(search_failure(&r, &search.command(&ctx.algo), &format!("{} {id}", ctx.replay))),
    }
}

/// What a search that found nothing covered: every state, its stated bound, or less;
/// and so for its fair-cycle pass, if it has one.
fn searched(r: &CheckReport, search: &Search) -> String {
    let covered = |states: u64, cut_short: &Option<String>| match (cut_short, search.first) {
        (None, _) => format!("{states} states, every one"),
        (Some(_), Some(first)) if states >= first => format!("the first {first} states"),
        (Some(why), _) => format!("{states} states, then cut short: {why}"),
    };
    let safety = covered(r.states, &r.cut_short);
    match &r.liveness {
        Some(l) => format!("{safety}; fair cycles: {}", covered(l.states, &l.cut_short)),
        None => safety,
    }
}

/// A search's violation: what and after how many steps, the first steps, the command
/// that prints them all, and the replay line. An unwritten handler is its one line.
fn search_failure(r: &CheckReport, command: &str, replay: &str) -> String {
    let Some(v) = &r.violation else { return String::new() };
    if let Some(panic) = v.failure.strip_prefix("a node panicked: ") {
        if is_unwritten(panic) {
            return panic.to_string();
        }
    }
    let steps = v.steps.len();
    let plural = if steps == 1 { "" } else { "s" };
    let mut text = match (v.cycle_start, &r.liveness) {
        (Some(c), Some(l)) => format!(
            "{} (a lasso: {c} step{} to a cycle of {}, which repeats for ever; {} states searched for fair cycles)",
            v.headline(),
            if c == 1 { "" } else { "s" },
            steps - c,
            l.states
        ),
        _ => format!("{} (after {steps} step{plural}, the fewest; {} states searched)", v.headline(), r.states),
    };
    for i in 0..steps.min(SEARCH_STEPS) {
        text.push_str(&format!("\n  {}. {}", i + 1, v.step(i)));
    }
    if steps > SEARCH_STEPS {
        text.push_str(&format!("\n  … {} more: {command} shows every step", steps - SEARCH_STEPS));
    }
    text.push_str(&format!("\nreplay: {replay}"));
    // Where a student sees why: every node's state at every step.
    let explore = command.replacen(" check ", " explore ", 1);
    text.push_str(&format!(
        "\nstep through it: {command} --out cex, then open cex/steps.html (or choose the steps yourself: {explore})"
    ));
    text
}
