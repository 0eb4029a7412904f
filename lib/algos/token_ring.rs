//! Token ring: one token travels round a fixed logical ring, and only its holder may enter.
//!
//! The workers sit in a ring in id order, 0 → 1 → … → N-1 → 0, and each one only ever
//! talks to the next. There is exactly one TOKEN, which worker 0 makes when it starts.
//! A node that receives the TOKEN while its application is waiting goes in; when it comes
//! out it hands the TOKEN to its successor. A node that receives it with no use for it
//! hands it on as well. Safety is plain: the section belongs to whoever holds the one
//! token. Nobody starves either, because the token visits everyone in turn: a node that
//! wants in waits for at most N-1 other sections, and its request is never overtaken
//! twice by the same node.
//!
//! Cost. Every entry is followed by one TOKEN to the successor. A node that declines the
//! token costs one more message with no entry to show for it. When every node is waiting
//! (saturation) nobody declines, and an entry costs exactly one message; under light load
//! a single entry may cost up to N (the exit pass plus N-1 nodes declining before the
//! next one wants in); with nobody wanting at all, messages go on with no entry at all,
//! so there is no upper bound. The registry reports at least 1 per entry (0 for N = 1)
//! and leaves the maximum open, as for `voting`.
//!
//! # Keeping an idle ring cool
//!
//! Taken literally, the algorithm passes the token on the instant nobody needs it, so an
//! idle ring spins it as fast as the processes can exchange messages: one busy core and
//! tens of thousands of messages a second, doing nothing. Nodes cannot tell whether
//! anybody is waiting (no node ever says so; the token just has to come by), so a node
//! cannot simply keep the token until asked. What the token can carry is its own recent
//! history: `idle` counts how many nodes in a row have passed it on unused. A node that
//! uses the token sends it on with `idle = 0`; one that declines it adds one. While the
//! count is below N, somebody used the token less than a lap ago, so demand is likely and
//! the token moves at full speed. Once it reaches N, the token has gone a whole lap with
//! nobody wanting it: from then on each node that gets it and has no use for it holds it
//! for [`IDLE_HOLD`] (a timer) before passing it on. If the application asks during the
//! hold, the node cancels the timer and goes straight in, and the next pass resets the
//! count, so the ring is fast again as soon as anyone uses it.
//!
//! What it costs: an idle ring sends about one message per [`IDLE_HOLD`] in the whole
//! system, whatever N, instead of as many as the machine can carry. The price is latency
//! after a quiet spell: the first node to want the section may wait up to N-1 holds (for
//! N = 16 and a 1 ms hold, some 15 ms) for the token to crawl round to it; once the token
//! is in use it is fast again. Under load nothing changes: the count never reaches N.
//! Time enters only through the timer, so the state machine stays sans-IO and the
//! simulator (where a parked token is no message in flight) can see a run end.
//! Each pass made after such a hold is counted for the run report as `idle_passes`.
//!
//! # Crashes
//!
//! Crashes are outside the model. On one machine a closed channel means a dead process,
//! and a dead process is not inside the section, so a node that is about to pass the
//! token skips a successor it knows to be down (and takes it back into the ring when it
//! comes back); that keeps one token and keeps the others going. But a node that dies
//! while the token is with it, or on its way to it, takes the token along: everyone then
//! waits for good, and the stall diagnosis shows each waiter's [`Algorithm::pending`]
//! (whom the token should come from, and where this node last sent it). Nodes never make
//! a new token of their own accord: a node cannot tell a lost token from a slow one, and
//! a second token would let two nodes in at once. For the same reason only worker 0's
//! first life makes the token ([`Config::incarnation`] is 0): a restarted worker 0 is
//! not starting the system, and the old token may still be going round.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, Out, PeerId, Renaming, Symmetric};

/// How long a node holds a token that has gone a full lap unused before passing it on.
pub const IDLE_HOLD: Duration = Duration::from_millis(1);

/// Messages of the token ring: there is only the token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The right to enter, handed to the next node of the ring.
    Token {
        /// How many nodes in a row have passed the token on unused (at most N).
        idle: u32,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Token { .. } => "TOKEN",
        }
    }
}

/// Timers of the token ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// The hold of an idle token is over: pass it on.
    IdleHold,
}

type O = Out<Msg, Timer>;

/// One node of the token ring.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenRing {
    cfg: Config,
    /// This node holds the token.
    holding: bool,
    /// The token's idle count while this node holds it.
    idle: u32,
    /// The application asked and is not inside yet.
    waiting: bool,
    /// The application is inside.
    inside: bool,
    /// Peers whose channel closed and that have not come back.
    down: BTreeSet<PeerId>,
    /// Where this node last sent the token, if it ever had it.
    last_passed: Option<PeerId>,
}

impl TokenRing {
    /// The token is here (for the checker's "one token at most").
    pub fn holds_token(&self) -> bool {
        self.holding
    }
}

impl TokenRing {
    /// The next node round the ring that is not known to be down; `None` when there is
    /// nobody else alive.
    fn successor(&self) -> Option<PeerId> {
        self.cfg.successor(|p| !self.down.contains(&p))
    }

    /// The previous node round the ring that is not known to be down: the token should
    /// come from there.
    fn predecessor(&self) -> Option<PeerId> {
        self.cfg.predecessor(|p| !self.down.contains(&p))
    }

    fn enter(&mut self, out: &mut O) {
        self.waiting = false;
        self.inside = true;
        self.idle = 0;
        out.enter_cs();
    }

    /// This node holds the token and has no use for it: pass it on now, or hold it for a
    /// while if it has gone a whole lap unused.
    fn decline(&mut self, out: &mut O) {
        self.idle = (self.idle + 1).min(self.cfg.n);
        if self.idle >= self.cfg.n {
            if self.successor().is_some() {
                out.set_timer(Timer::IdleHold, IDLE_HOLD);
            }
        } else {
            self.pass(out);
        }
    }

    /// Hand the token to the successor; keep it if there is nobody alive to take it.
    /// True if it went.
    fn pass(&mut self, out: &mut O) -> bool {
        let Some(next) = self.successor() else {
            return false;
        };
        self.holding = false;
        self.last_passed = Some(next);
        out.send(next, Msg::Token { idle: self.idle });
        true
    }
}

impl Algorithm for TokenRing {
    type Msg = Msg;
    type Timer = Timer;

    fn new(cfg: &Config) -> Self {
        TokenRing {
            cfg: cfg.clone(),
            holding: false,
            idle: 0,
            waiting: false,
            inside: false,
            down: BTreeSet::new(),
            last_passed: None,
        }
    }

    fn on_start(&mut self, out: &mut O) {
        // Worker 0 makes the one token, in its first life only: a restarted worker 0 is
        // not starting the system, and a second token would let two in. Nobody can want
        // it yet (the application is only asked after the start), so it sets off round
        // the ring at once.
        if self.cfg.id == PeerId(0) && self.cfg.incarnation == 0 {
            self.holding = true;
            self.decline(out);
        }
    }

    fn on_want_cs(&mut self, out: &mut O) {
        self.waiting = true;
        if self.holding {
            // Only a held idle token can be here: cut its hold short.
            out.cancel_timer(Timer::IdleHold);
            self.enter(out);
        }
    }

    fn on_message(&mut self, _from: PeerId, msg: Msg, out: &mut O) {
        match msg {
            // A second token cannot exist in the model; keeping only one is the safe
            // side, so an extra one is absorbed rather than passed on.
            Msg::Token { .. } if self.holding => {}
            Msg::Token { idle } => {
                self.holding = true;
                self.idle = idle;
                if self.waiting {
                    self.enter(out);
                } else {
                    self.decline(out);
                }
            }
        }
    }

    fn on_cs_done(&mut self, out: &mut O) {
        self.inside = false;
        self.idle = 0;
        self.pass(out);
    }

    fn on_timer(&mut self, timer: Timer, out: &mut O) {
        match timer {
            // A stale timer (cancelled or reset, delivered anyway) may end a hold early:
            // harmless. One that finds no idle token here has nothing to do.
            Timer::IdleHold if self.holding && !self.inside => {
                if self.pass(out) {
                    out.count("idle_passes", 1);
                }
            }
            Timer::IdleHold => {}
        }
    }

    fn on_peer_down(&mut self, peer: PeerId, _out: &mut O) {
        // Not inside, as it is dead: the next pass skips it. If it had the token, the
        // token is gone, and only waiting (never a new token) is safe.
        self.down.insert(peer);
    }

    fn on_peer_up(&mut self, peer: PeerId, out: &mut O) {
        self.down.remove(&peer);
        // A token kept because nobody else was alive can move again.
        if self.holding && !self.inside {
            out.set_timer(Timer::IdleHold, IDLE_HOLD);
        }
    }

    fn pending(&self) -> String {
        if !self.waiting {
            return String::new();
        }
        let from = match self.predecessor() {
            Some(p) => format!(" from {p}"),
            None => String::new(),
        };
        let last = match self.last_passed {
            Some(p) => format!("I last passed it to {p}"),
            None if self.cfg.incarnation > 0 => "restarted: it has not come by since".to_string(),
            None => "never had it; w0 made it".to_string(),
        };
        format!("waiting for the TOKEN{from} ({last})")
    }
}

/// The ring's rotations, and only those: a node's successor is the next id round the
/// ring, so a renaming that keeps every node's successor is a rotation, and nothing else
/// is a symmetry. Worker 0 making the token breaks it only at the start (a restarted
/// worker 0 makes none), and `check` keys states reached from there.
impl Symmetric for TokenRing {
    fn renamings(n: u32) -> Vec<Renaming> {
        Renaming::rotations(n)
    }
    fn renamed(&self, r: &Renaming) -> Self {
        TokenRing {
            cfg: Config { id: r.of(self.cfg.id), ..self.cfg.clone() },
            holding: self.holding,
            idle: self.idle,
            waiting: self.waiting,
            inside: self.inside,
            down: self.down.iter().map(|&p| r.of(p)).collect(),
            last_passed: self.last_passed.map(|p| r.of(p)),
        }
    }
    fn msg_renamed(msg: &Msg, _: &Renaming) -> Msg {
        msg.clone()
    }
    fn timer_renamed(timer: &Timer, _: &Renaming) -> Timer {
        *timer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::{deliver, done, down, fire, start, up, want};
    use crate::script::{nodes, out};
    use crate::sim::sweep;

    fn token(to: u32, idle: u32) -> Action<Msg, Timer> {
        Action::Send { to: PeerId(to), msg: Msg::Token { idle } }
    }

    fn hold() -> Action<Msg, Timer> {
        Action::SetTimer { timer: Timer::IdleHold, after: IDLE_HOLD }
    }

    /// A pass after an idle hold is counted for the run report.
    fn idle_pass() -> Action<Msg, Timer> {
        Action::Count { name: "idle_passes".into(), by: 1 }
    }

    #[test]
    fn two_nodes_trace() {
        let mut w = nodes::<TokenRing>(2);
        assert!(start(&mut w, 1).is_empty(), "only w0 makes a token");
        assert_eq!(start(&mut w, 0), &[token(1, 1)], "nobody wants it yet: off it goes");
        // w1 has no use for it either: a full lap (2 nodes) unused, so w1 holds it.
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 1 }), vec![hold()]);
        assert_eq!(w[0].pending(), "");
        // w0 asks while w1 holds the token.
        assert!(want(&mut w, 0).is_empty());
        assert_eq!(w[0].pending(), "waiting for the TOKEN from w1 (I last passed it to w1)");
        // The hold ends: the token goes on, still counted idle, and w0 enters.
        assert_eq!(fire(&mut w, 1, Timer::IdleHold), &[token(0, 2), idle_pass()]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Token { idle: 2 }), vec![Action::enter()]);
        assert_eq!(w[0].pending(), "");
        // Leaving, w0 sends it on with a fresh count: the ring is hot again.
        assert_eq!(done(&mut w, 0), &[token(1, 0)]);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 0 }), vec![token(0, 1)]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Token { idle: 1 }), vec![hold()]);
        // w0 holds it idle and asks: it goes straight in, cutting the hold short.
        assert_eq!(want(&mut w, 0), &[Action::CancelTimer { timer: Timer::IdleHold }, Action::enter()]);
    }

    #[test]
    fn three_nodes_pass_in_ring_order() {
        let mut w = nodes::<TokenRing>(3);
        assert_eq!(start(&mut w, 0), &[token(1, 1)]);
        // w2 and w1 both ask; the token reaches w1 first, then w2, whatever the order
        // of asking.
        want(&mut w, 2);
        want(&mut w, 1);
        assert_eq!(w[2].pending(), "waiting for the TOKEN from w1 (never had it; w0 made it)");
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 1 }), vec![Action::enter()]);
        assert_eq!(done(&mut w, 1), &[token(2, 0)]);
        assert_eq!(deliver(&mut w, 1, 2, Msg::Token { idle: 0 }), vec![Action::enter()]);
        assert_eq!(done(&mut w, 2), &[token(0, 0)]);
        // Nobody wants it now: it makes one fast lap (w0, w1), and w2, the third node
        // to decline, holds it.
        assert_eq!(deliver(&mut w, 2, 0, Msg::Token { idle: 0 }), vec![token(1, 1)]);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 1 }), vec![token(2, 2)]);
        assert_eq!(deliver(&mut w, 1, 2, Msg::Token { idle: 2 }), vec![hold()]);
        // From then on every node holds it before passing it on.
        assert_eq!(fire(&mut w, 2, Timer::IdleHold), &[token(0, 3), idle_pass()]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Token { idle: 3 }), vec![hold()]);
        assert_eq!(fire(&mut w, 0, Timer::IdleHold), &[token(1, 3), idle_pass()]);
        // w2 asks while w1 holds: w2 waits out w1's hold, then the token is fast again.
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 3 }), vec![hold()]);
        want(&mut w, 2);
        assert_eq!(fire(&mut w, 1, Timer::IdleHold), &[token(2, 3), idle_pass()]);
        assert_eq!(deliver(&mut w, 1, 2, Msg::Token { idle: 3 }), vec![Action::enter()]);
        assert_eq!(done(&mut w, 2), &[token(0, 0)]);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Token { idle: 0 }), vec![token(1, 1)]);
    }

    #[test]
    fn at_saturation_each_entry_costs_one_message() {
        // Every node asks again as soon as it leaves: nobody ever declines the token.
        let n = 3;
        let mut w = nodes::<TokenRing>(n);
        for i in 0..n {
            start(&mut w, i);
        }
        for i in 0..n {
            want(&mut w, i);
        }
        let mut msg = (0, 1, Msg::Token { idle: 1 });
        let mut sent = 0;
        let mut order = Vec::new();
        for _ in 0..4 * n {
            let (from, to, m) = msg;
            assert_eq!(deliver(&mut w, from, to, m), vec![Action::enter()]);
            order.push(to);
            let mut acts = done(&mut w, to);
            acts.extend(want(&mut w, to));
            assert_eq!(acts, [token((to + 1) % n, 0)]);
            sent += acts.len();
            msg = (to, (to + 1) % n, Msg::Token { idle: 0 });
        }
        assert_eq!(sent, order.len(), "one TOKEN per entry");
        assert_eq!(order, vec![1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn a_stale_hold_timer_does_nothing_without_an_idle_token() {
        let mut w = nodes::<TokenRing>(2);
        start(&mut w, 0);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 1 }), vec![hold()]);
        want(&mut w, 1);
        // Inside: the cancelled timer fires anyway; the token stays.
        assert!(fire(&mut w, 1, Timer::IdleHold).is_empty());
        assert_eq!(done(&mut w, 1), &[token(0, 0)]);
        // Gone: nothing to pass.
        assert!(fire(&mut w, 1, Timer::IdleHold).is_empty(), "no pass, so no idle pass counted");
    }

    #[test]
    fn a_second_token_is_absorbed() {
        let mut w = nodes::<TokenRing>(3);
        start(&mut w, 0);
        assert_eq!(deliver(&mut w, 2, 0, Msg::Token { idle: 0 }), vec![token(1, 1)]);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 1 }), vec![token(2, 2)]);
        assert_eq!(deliver(&mut w, 1, 2, Msg::Token { idle: 2 }), vec![hold()]);
        assert!(deliver(&mut w, 1, 2, Msg::Token { idle: 0 }).is_empty());
    }

    #[test]
    fn single_node_keeps_the_token_without_a_timer() {
        let mut w = TokenRing::new(&Config::new(0, 1));
        let mut o = out();
        w.on_start(&mut o);
        assert!(o.actions().is_empty(), "no successor: no message, no timer");
        let mut o = out();
        w.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[Action::CancelTimer { timer: Timer::IdleHold }, Action::enter()]);
        let mut o = out();
        w.on_cs_done(&mut o);
        assert!(o.actions().is_empty());
        assert!(w.holding);
    }

    #[test]
    fn a_dead_successor_is_skipped_and_taken_back_when_it_returns() {
        let mut w = nodes::<TokenRing>(4);
        down(&mut w, 1, 2);
        want(&mut w, 1);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 1 }), vec![Action::enter()]);
        assert_eq!(done(&mut w, 1), &[token(3, 0)], "w2 is dead: w3 is next");
        // The token comes round again; w2 is back by then and gets it.
        up(&mut w, 1, 2);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 1 }), vec![token(2, 2)]);
        // w3 waits; its predecessor w2 is down, so the token comes from w1.
        down(&mut w, 3, 2);
        want(&mut w, 3);
        assert_eq!(w[3].pending(), "waiting for the TOKEN from w1 (never had it; w0 made it)");
    }

    #[test]
    fn with_everyone_else_dead_the_token_stays_until_someone_returns() {
        let mut w = nodes::<TokenRing>(3);
        down(&mut w, 1, 0);
        down(&mut w, 1, 2);
        want(&mut w, 1);
        assert_eq!(deliver(&mut w, 0, 1, Msg::Token { idle: 1 }), vec![Action::enter()]);
        assert!(done(&mut w, 1).is_empty(), "nobody to pass to, and no new token anywhere");
        assert_eq!(up(&mut w, 1, 0), &[hold()]);
        assert_eq!(
            fire(&mut w, 1, Timer::IdleHold),
            &[token(0, 0), idle_pass()],
            "w2 is still down: w0 is next"
        );
    }

    #[test]
    fn pending_names_where_the_token_should_come_from() {
        let mut w = nodes::<TokenRing>(5);
        want(&mut w, 3);
        assert_eq!(w[3].pending(), "waiting for the TOKEN from w2 (never had it; w0 made it)");
        let mut w0 = TokenRing::new(&Config::new(0, 5));
        w0.on_start(&mut out());
        w0.on_want_cs(&mut out());
        assert_eq!(w0.pending(), "waiting for the TOKEN from w4 (I last passed it to w1)");
        let mut w0 = TokenRing::new(&Config { incarnation: 1, ..Config::new(0, 5) });
        w0.on_start(&mut out());
        w0.on_want_cs(&mut out());
        assert_eq!(w0.pending(), "waiting for the TOKEN from w4 (restarted: it has not come by since)");
    }

    #[test]
    fn sim_token_ring_is_safe_and_live_and_pays_at_least_one_per_entry() {
        let mut idle_runs = 0;
        sweep::<TokenRing>(
            &[1, 2, 3, 5, 8],
            0..200,
            3,
            |_| {},
            |r, _| {
                let n = u64::from(r.n);
                assert_eq!(r.entries, 3 * n);
                let total = r.total_messages();
                assert_eq!(total, r.count("TOKEN"));
                if n == 1 {
                    assert_eq!(total, 0, "one node keeps the token");
                    return;
                }
                // Every exit passes the token on.
                assert!(total >= r.entries, "seed {} n {}: {total} < {}", r.seed, n, r.entries);
                // Fast passes: the exit pass and at most N-1 declines per entry, and the
                // start's first lap; everything else waited out a hold.
                let idle = r.counter("idle_passes");
                assert!(total - idle <= n * (r.entries + 1), "seed {} n {}: {total} - {idle}", r.seed, n);
                if idle > 0 {
                    idle_runs += 1;
                }
            },
        );
        assert!(idle_runs > 100, "the ring went idle in only {idle_runs} runs");
    }

    #[test]
    fn a_restarted_node_0_makes_no_second_token() {
        let cfg = Config { incarnation: 1, ..Config::new(0, 3) };
        let mut w0 = TokenRing::new(&cfg);
        let mut o = Out::new(std::time::Duration::ZERO);
        w0.on_start(&mut o);
        w0.on_want_cs(&mut o);
        assert!(!o.actions().iter().any(|a| *a == Action::enter()), "{:?}", o.actions());
        assert!(o.actions().iter().all(|a| !matches!(a, Action::Send { .. })), "{:?}", o.actions());
        // Its first life does make the token, and sends it round at once.
        let mut w0 = TokenRing::new(&Config::new(0, 3));
        let mut o = Out::new(std::time::Duration::ZERO);
        w0.on_start(&mut o);
        assert!(o.actions().iter().any(|a| matches!(a, Action::Send { .. })), "{:?}", o.actions());
    }
}
