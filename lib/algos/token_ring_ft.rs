//! Token ring with recovery: the ring of `token_ring`, plus a way to tell that the token
//! is lost and to make exactly one new one.
//!
//! Without failures this is `token_ring`, message for message: the ring 0 → 1 → … →
//! N-1 → 0, worker 0's first life makes the one TOKEN, the holder enters if its
//! application waits and otherwise passes the token on, and a token that has gone a
//! whole lap unused is held [`IDLE_HOLD`] per hop so an idle ring does not spin (see
//! that file). The notes add two sentences about failures: a lost token (its holder
//! died, say) has to be made again, and an election is needed when the holder fails.
//! The hard part they leave out is that a node cannot tell a lost token from a slow one:
//! a holder inside a long critical section looks exactly like a dead one from outside,
//! and a second token made while the first still exists lets two nodes in. This file's
//! answer: every token carries a *generation*, and a new one is made only after an
//! ELECTION has gone round every live node, each of which either promises to refuse
//! every older token or, if it holds the token, stops the ELECTION.
//!
//! # Messages
//!
//! - TOKEN { gen, idle }: the right to enter, of generation `gen`; `idle` as in
//!   `token_ring` (how many nodes in a row passed it on unused).
//! - ELECTION { gen }: "the token seems lost; I mean to make a new one of generation
//!   `gen`. Unless you hold the token, promise to refuse any older one and pass this
//!   on." Its generation is its initiator's, and tells ELECTIONs apart.
//!
//! # Generations
//!
//! A generation ([`Gen`]) is an epoch, the id of the node that proposed it and that
//! node's incarnation, compared in that order. The first token is generation zero. A
//! node that starts an ELECTION proposes the next epoch above the newest generation it
//! knows, with its own id: two nodes never propose the same generation, and of two
//! proposals in the same epoch the larger id wins, as in Chang and Roberts. The
//! incarnation is there because a restarted node has forgotten what it proposed in its
//! earlier life, and that life's ELECTION may still be going round. Each node keeps a
//! *floor*: the newest generation it has held, or promised to another node's ELECTION.
//! A TOKEN below a node's floor is stale: the node drops it and counts it
//! (`stale_tokens`). Its own ELECTION, while out, is kept apart from the floor: it is
//! no promise to anybody.
//!
//! # What a node does, in the notes' order
//!
//! 1. *The token comes*: as in `token_ring`, unless it is stale.
//! 2. *The token seems lost*: the node starts an ELECTION (counted as `elections`) with
//!    a new generation and sends it to its successor. It does
//!    so when its watchdog fires (no token for [`lost_timeout`]; see *The timeout*), when
//!    the node it last passed the token to goes down (the token may have died there),
//!    and when any peer goes down while its own ELECTION is out (the ELECTION may have
//!    died there): a holder never suspects anything.
//! 3. *An ELECTION newer than any the node knows* (its floor, and its own ELECTION if one
//!    is out), *at a node without the token*: the node promises
//!    (the ELECTION's generation becomes its floor, so every older token is stale here
//!    from now on) and passes it on. If its own ELECTION was out, it is called off: the
//!    newer one stands for both, as in Chang and Roberts a node passes a larger id on
//!    instead of its own.
//! 4. *An ELECTION newer than the floor, at the holder* (inside or not): the token is not
//!    lost. The holder drops the ELECTION (a veto, counted as `vetoes`) and stamps its
//!    token with the ELECTION's generation, so that the nodes that have promised will
//!    take it. A slow holder is never overtaken: no ELECTION gets past it.
//! 5. *An ELECTION not newer than what the node knows*: dropped. A newer token or
//!    ELECTION has been here already; the newest one is the one that matters.
//! 6. *A node's own ELECTION comes home*: every live node has promised and none had the
//!    token. The node makes the new token with the ELECTION's generation (counted as
//!    `regenerations`) and uses it or passes it on as in step 1. No lap announcing the
//!    winner is needed: the new token announces itself.
//! 7. *The token reaches a node whose own ELECTION is still out*, and is not stale there:
//!    it was never lost; it outran the ELECTION. The node stamps it with its ELECTION's
//!    generation (which the nodes the ELECTION has passed will take), calls the ELECTION
//!    off, and goes on as in step 1. When the ELECTION comes home it is dropped. A token
//!    below the floor stays stale, own ELECTION or not: the promise behind the floor may
//!    have let another ELECTION come home and make a token (sim seed 14, n = 5, without
//!    FIFO, found this).
//!
//! # Why there is never a second token
//!
//! With a perfect failure detector (a peer reported down is dead), a token is made only
//! in step 6, and by then every node round the ring has forwarded the ELECTION: the only
//! ones it skipped were dead, or restarted so lately that their neighbour had not heard,
//! and those hold no token. Follow the old
//! token, wherever it was when the ELECTION set out: a node that had it when the
//! ELECTION came would have stopped it (step 4); a node that got it after forwarding
//! drops it (step 1: it is older than its promise); and it cannot get round to the
//! initiator unseen (step 7). It cannot slip round the ELECTION through a dead node
//! either: a TOKEN the dead node sent before dying, still in flight to the next node,
//! arrives after that node has promised or before the ELECTION does, and either way is
//! caught. A stamp (steps 4 and 7) does not make a token, it renames the one there is,
//! and an ELECTION's generation is used at most once: either its message comes home, or
//! it is dropped at one holder, or its initiator stamps a token and then drops the
//! message. None of this needs FIFO channels; they only make stamps likelier than
//! drops. The simulator checks it, with crashes and restarts, with and without FIFO.
//!
//! # The timeout
//!
//! The watchdog is set when the node starts, passes the token or an ELECTION on, or
//! starts an ELECTION, and fires
//! after [`lost_timeout`]: [`HOP_BOUND`] per node of the ring, a generous bound on one
//! hop plus one critical section and one idle hold on a loaded machine (the default
//! section is 1 ms), so a lap of a healthy ring ends well inside it. A firing that comes
//! before the deadline (a reset timer, delivered anyway) is ignored. Safety does not
//! rest on the timeout: a timer that fires too early starts an ELECTION that the holder
//! stops, at the cost of the hops it made. What rests on it is how soon a token lost
//! with no peer reported down (a lost message, say) is noticed.
//!
//! # Wrong suspicions
//!
//! The argument above needs the detector's word that a node skipped round the ring is
//! dead. Today's detector is a closed socket, so a paused holder (SIGSTOP) is not
//! skipped: the ELECTION waits in its socket, it stops the ELECTION when it wakes, and
//! the ring is only slow. With a detector that can be wrong (heartbeats that time out
//! on a slow holder), the ring skips a live holder, the ELECTION comes home, and a new
//! token is made while the old one exists: the suspected holder's current section, or
//! its next one if it holds the token idle, may overlap another node's. After that
//! section its token dies at the first node that promised, so the damage is one section.
//! With no detector at all, nothing unsafe happens, but an ELECTION sent to a dead node
//! never comes home, and the ring stalls once the token is lost.
//!
//! # Dead peers and restarts
//!
//! A node passes the token and ELECTIONs to the next node round the ring not known to be
//! down, so a dead node drops out of the ring, and a restarted one comes back in when its
//! neighbours hear it is up. Only worker 0's first life makes the first token. A
//! restarted node has forgotten every generation (its floor is zero); it learns the
//! current one when the token comes by. An ELECTION it starts before then may propose a
//! generation the others are past: they drop it, and their own watchdogs take over if the
//! token is really lost.
//!
//! # Cost
//!
//! Without failures, exactly `token_ring`'s: 1 message per entry at saturation, up to N
//! with declines, unbounded when idle. A regeneration among M live nodes costs M
//! ELECTIONs when one node starts it, and 2M-1 when all of them start at once (every
//! ELECTION but the largest dies at the next node, which has proposed a larger one); an
//! ELECTION that meets the token costs the hops it made. See
//! [`messages_per_regeneration`].

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, Out, PeerId};
pub use crate::token_ring::IDLE_HOLD;

/// The watchdog's allowance per node of the ring: one hop, one critical section and one
/// idle hold, with a wide margin for a loaded machine.
pub const HOP_BOUND: Duration = Duration::from_millis(50);

/// How long a node that does not hold the token waits to see it (or an ELECTION) before
/// it suspects the token is lost: [`HOP_BOUND`] for each of the `n` nodes.
pub fn lost_timeout(n: u32) -> Duration {
    HOP_BOUND * n.max(1)
}

/// The fewest and the most ELECTIONs one regeneration costs among `live` live nodes when
/// nobody fails during it: `live` (one initiator) and `2·live - 1` (all at once).
pub fn messages_per_regeneration(live: u32) -> (u64, u64) {
    let m = u64::from(live);
    if m <= 1 {
        return (0, 0);
    }
    (m, 2 * m - 1)
}

/// A token's generation: compared by epoch, then proposer, then its incarnation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Gen {
    /// One above the newest epoch the proposer knew of; 0 for the first token.
    pub epoch: u64,
    /// The node that proposed it.
    pub by: PeerId,
    /// That node's incarnation when it proposed it.
    pub life: u32,
}

impl fmt::Display for Gen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.epoch, self.by)?;
        if self.life > 0 {
            write!(f, " (life {})", self.life)?;
        }
        Ok(())
    }
}

/// Messages of the token ring with recovery.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The right to enter, of generation `gen`.
    Token {
        /// Its generation: a node whose floor is above it drops it.
        gen: Gen,
        /// How many nodes in a row have passed it on unused (at most N).
        idle: u32,
    },
    /// The token seems lost: promise to refuse tokens older than `gen`, or stop this if
    /// you hold it.
    Election {
        /// The generation the initiator would give the new token.
        gen: Gen,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Token { .. } => "TOKEN",
            Msg::Election { .. } => "ELECTION",
        }
    }
}

/// Timers of the token ring with recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// The hold of an idle token is over: pass it on.
    IdleHold,
    /// The watchdog: no token (nor ELECTION) for [`lost_timeout`].
    Lost,
}

type O = Out<Msg, Timer>;

/// One node of the token ring with recovery.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenRingFt {
    cfg: Config,
    /// Peers whose channel closed and that have not come back.
    down: BTreeSet<PeerId>,
    /// The newest generation this node has held, or promised to another node's
    /// ELECTION: older tokens are stale here.
    floor: Gen,
    /// This node holds the token (of generation `floor`).
    holding: bool,
    /// The token's idle count while this node holds it.
    idle: u32,
    /// The application asked and is not inside yet.
    waiting: bool,
    /// The application is inside.
    inside: bool,
    /// Where this node last sent the token, if it ever had it.
    last_passed: Option<PeerId>,
    /// This node's own ELECTION while it is out; always above `floor`.
    lap: Option<Gen>,
    /// When the watchdog is due: a firing before then is a stale timer.
    watch_due: Duration,
}

impl TokenRingFt {
    fn me(&self) -> PeerId {
        self.cfg.id
    }

    /// The next node round the ring not known to be down; `None` when nobody else is
    /// alive.
    fn successor(&self) -> Option<PeerId> {
        self.cfg.successor(|p| !self.down.contains(&p))
    }

    /// The previous node round the ring not known to be down: the token comes from there.
    fn predecessor(&self) -> Option<PeerId> {
        self.cfg.predecessor(|p| !self.down.contains(&p))
    }

    /// (Re)start the watchdog.
    fn watch(&mut self, out: &mut O) {
        let after = lost_timeout(self.cfg.n);
        self.watch_due = out.now() + after;
        out.set_timer(Timer::Lost, after);
    }

    /// The newest generation this node knows of: its own ELECTION's, if one is out.
    fn newest(&self) -> Gen {
        self.lap.unwrap_or(self.floor)
    }

    fn enter(&mut self, out: &mut O) {
        self.waiting = false;
        self.inside = true;
        self.idle = 0;
        out.enter_cs();
    }

    /// This node now holds the token: go in, or pass it on or hold it as an idle token.
    fn got_token(&mut self, out: &mut O) {
        self.holding = true;
        if self.waiting {
            self.enter(out);
        } else {
            self.decline(out);
        }
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

    /// Hand the token to the successor and start watching for it; keep it if there is
    /// nobody alive to take it. True if it went.
    fn pass(&mut self, out: &mut O) -> bool {
        let Some(next) = self.successor() else {
            return false;
        };
        self.holding = false;
        self.last_passed = Some(next);
        out.send(next, Msg::Token { gen: self.floor, idle: self.idle });
        self.watch(out);
        true
    }

    /// 1 and 7: a TOKEN arrives.
    fn on_token(&mut self, gen: Gen, idle: u32, out: &mut O) {
        if self.holding {
            // A second token cannot exist with a perfect detector. Should one come
            // anyway, the two merge here into one of the newer generation.
            out.count("stale_tokens", 1);
            self.floor = self.floor.max(gen);
            return;
        }
        if gen < self.floor {
            // Older than a generation this node held or promised: another ELECTION
            // may have come home on that promise.
            out.count("stale_tokens", 1);
            return;
        }
        // 7: if our own ELECTION is out, the token was not lost after all. Stamp it
        // with the ELECTION's generation, which the nodes it passed will take.
        self.floor = self.lap.take().map_or(gen, |lap| lap.max(gen));
        self.idle = idle;
        self.got_token(out);
    }

    /// 2: the token seems lost. Propose the next epoch, and send the ELECTION round.
    fn start_election(&mut self, out: &mut O) {
        let gen = Gen { epoch: self.newest().epoch + 1, by: self.me(), life: self.cfg.incarnation };
        self.lap = Some(gen);
        out.count("elections", 1);
        self.watch(out);
        match self.successor() {
            Some(next) => out.send(next, Msg::Election { gen }),
            // Alone: the lap is over before it starts.
            None => self.regenerate(gen, out),
        }
    }

    /// 6: our ELECTION came home: every live node has promised. Make the token.
    fn regenerate(&mut self, gen: Gen, out: &mut O) {
        self.lap = None;
        self.floor = gen;
        self.idle = 0;
        out.count("regenerations", 1);
        self.got_token(out);
    }

    /// 3 to 6: an ELECTION arrives.
    fn on_election(&mut self, gen: Gen, out: &mut O) {
        if gen.by == self.me() && gen.life == self.cfg.incarnation {
            // 6, or a lap we called off (7, or replaced by a newer one): dropped.
            if self.lap == Some(gen) {
                self.regenerate(gen, out);
            }
        } else if gen <= self.newest() {
            // 5: a newer token or ELECTION has been here.
        } else if self.holding {
            // 4: the token is here, not lost. Stamp it so the promised nodes take it.
            self.floor = gen;
            out.count("vetoes", 1);
        } else if let Some(next) = self.successor() {
            // 3: promise, and pass it on; ours, if out, is older and called off.
            self.floor = gen;
            self.lap = None;
            self.watch(out);
            out.send(next, Msg::Election { gen });
        }
    }
}

impl Algorithm for TokenRingFt {
    type Msg = Msg;
    type Timer = Timer;

    fn new(cfg: &Config) -> Self {
        TokenRingFt {
            cfg: cfg.clone(),
            down: BTreeSet::new(),
            floor: Gen::default(),
            holding: false,
            idle: 0,
            waiting: false,
            inside: false,
            last_passed: None,
            lap: None,
            watch_due: Duration::ZERO,
        }
    }

    fn on_start(&mut self, out: &mut O) {
        // Worker 0's first life makes the token of generation zero and sends it round
        // (which starts its watchdog); a restarted worker 0 is not starting the system.
        if self.cfg.id == PeerId(0) && self.cfg.incarnation == 0 {
            self.got_token(out);
        }
        if !self.holding && self.last_passed.is_none() {
            self.watch(out);
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
            Msg::Token { gen, idle } => self.on_token(gen, idle, out),
            Msg::Election { gen } => self.on_election(gen, out),
        }
    }

    fn on_cs_done(&mut self, out: &mut O) {
        self.inside = false;
        self.idle = 0;
        self.pass(out);
    }

    fn on_timer(&mut self, timer: Timer, out: &mut O) {
        match timer {
            // A stale hold timer may end a hold early: harmless. One that finds no idle
            // token here has nothing to do.
            Timer::IdleHold if self.holding && !self.inside => {
                if self.pass(out) {
                    out.count("idle_passes", 1);
                }
            }
            Timer::IdleHold => {}
            // Reset since (a stale firing), or the token is here: nothing is lost. The
            // watchdog starts again when the token leaves.
            Timer::Lost if out.now() < self.watch_due || self.holding => {}
            Timer::Lost => self.start_election(out),
        }
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut O) {
        // Dead, so not inside: the next pass skips it.
        self.down.insert(peer);
        if self.holding {
            return;
        }
        // The token may have died with the node we passed it to, or our ELECTION with
        // whichever node it had reached.
        if self.last_passed == Some(peer) || self.lap.is_some() {
            self.start_election(out);
        }
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
        if let Some(lap) = self.lap {
            return format!("waiting for my ELECTION {lap} to come home{from}: the TOKEN seems lost");
        }
        let last = match self.last_passed {
            Some(p) => format!("I last passed it to {p}"),
            None if self.cfg.incarnation > 0 => "restarted: it has not come by since".to_string(),
            None => "never had it; w0 made it".to_string(),
        };
        format!("waiting for the TOKEN{from} (generation {} or newer; {last})", self.floor)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, VecDeque};

    use super::*;
    use crate::algorithm::{Action, Input, Mutex, MutexCall, MutexEvent, Node};
    use crate::host::{Effect, Host};
    use crate::sim::{Failure, Sim, SimError};
    use crate::token_ring::{self, TokenRing};

    /// What a scripted application is doing.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum App {
        Idle,
        Waiting,
        Inside,
    }

    /// A scripted ring of mutex nodes, each behind its host: one FIFO queue for every
    /// message, delivered in the order sent; timers fire only when a test says so, the
    /// clock jumping to their deadline; a crashed node gets nothing more. Two nodes
    /// inside at once, or a breach of the contract, panics.
    struct Ring<N: Node<Service = Mutex>> {
        hosts: Vec<Host<N>>,
        alive: Vec<bool>,
        apps: Vec<App>,
        queue: VecDeque<(u32, u32, N::Msg)>,
        /// Armed timers: node, tag, host generation, deadline.
        timers: Vec<(u32, N::Timer, u64, Duration)>,
        now: Duration,
        /// Every message sent, in order, the lost ones too.
        sent: Vec<(u32, u32, N::Msg)>,
        /// Every entry, in order.
        entered: Vec<u32>,
        counts: BTreeMap<String, u64>,
    }

    impl<N: Node<Service = Mutex>> Ring<N> {
        fn new(n: u32) -> Self {
            let mut ring = Ring {
                hosts: (0..n).map(|i| Host::new(Config::new(i, n))).collect(),
                alive: vec![true; n as usize],
                apps: vec![App::Idle; n as usize],
                queue: VecDeque::new(),
                timers: Vec::new(),
                now: Duration::ZERO,
                sent: Vec::new(),
                entered: Vec::new(),
                counts: BTreeMap::new(),
            };
            for i in 0..n {
                ring.input(i, Input::Start);
            }
            ring
        }

        fn node(&self, i: u32) -> &N {
            self.hosts[i as usize].node()
        }

        fn input(&mut self, i: u32, input: Input<N::Msg, N::Timer, MutexCall>) {
            assert!(self.alive[i as usize], "input to the dead w{i}");
            let step = self.hosts[i as usize].step(self.now, input);
            self.apply(i, step);
        }

        fn apply(&mut self, i: u32, step: crate::host::Step<N>) {
            assert!(step.breaches.is_empty(), "w{i}: {:?}", step.breaches);
            for effect in step.effects {
                match effect {
                    Effect::Send { to, msg } => {
                        self.sent.push((i, to.0, msg.clone()));
                        if self.alive[to.index()] {
                            self.queue.push_back((i, to.0, msg));
                        }
                    }
                    Effect::Arm { timer, generation, after } => {
                        self.timers.retain(|t| !(t.0 == i && t.1 == timer));
                        self.timers.push((i, timer, generation, self.now + after));
                    }
                    Effect::Disarm { timer } => self.timers.retain(|t| !(t.0 == i && t.1 == timer)),
                    Effect::Event { event: MutexEvent::Enter } => {
                        let inside = self.apps.iter().position(|&a| a == App::Inside);
                        assert_eq!(inside, None, "w{i} entered while another was inside");
                        self.apps[i as usize] = App::Inside;
                        self.entered.push(i);
                    }
                    Effect::Count { name, by } => *self.counts.entry(name.into_owned()).or_default() += by,
                }
            }
        }

        fn want(&mut self, i: u32) {
            self.apps[i as usize] = App::Waiting;
            self.input(i, Input::Call { call: MutexCall::Want });
        }

        fn done(&mut self, i: u32) {
            self.apps[i as usize] = App::Idle;
            self.input(i, Input::Call { call: MutexCall::Done });
        }

        /// Deliver the oldest message in flight; false if there is none.
        fn step(&mut self) -> bool {
            let Some((from, to, msg)) = self.queue.pop_front() else {
                return false;
            };
            self.input(to, Input::Message { from: PeerId(from), msg });
            true
        }

        /// Deliver messages until none is left.
        fn run(&mut self) {
            for _ in 0..100_000 {
                if !self.step() {
                    return;
                }
            }
            panic!("still busy after 100 000 messages");
        }

        /// Fire node `i`'s `timer`, which must be armed, at its deadline.
        fn fire(&mut self, i: u32, timer: N::Timer) {
            let k = self.timers.iter().position(|t| t.0 == i && t.1 == timer);
            let (_, timer, generation, due) = self.timers.remove(k.expect("an armed timer"));
            self.now = self.now.max(due);
            if let Some(step) = self.hosts[i as usize].fire(self.now, &timer, generation) {
                self.apply(i, step);
            }
        }

        /// Fire the earliest armed timer that `which` picks; false if there is none.
        fn fire_earliest(&mut self, which: impl Fn(&N::Timer) -> bool) -> bool {
            let earliest = self.timers.iter().filter(|t| which(&t.1)).min_by_key(|t| t.3).cloned();
            match earliest {
                Some((i, timer, ..)) => {
                    self.fire(i, timer);
                    true
                }
                None => false,
            }
        }

        /// Node `i` dies silently: nothing reaches it any more. What it sent is still
        /// delivered.
        fn crash(&mut self, i: u32) {
            self.alive[i as usize] = false;
            self.apps[i as usize] = App::Idle;
            self.queue.retain(|m| m.1 != i);
            self.timers.retain(|t| t.0 != i);
        }

        /// Node `i` dies and every live node hears it (the perfect detector).
        fn kill(&mut self, i: u32) {
            self.crash(i);
            for w in 0..self.alive.len() as u32 {
                if self.alive[w as usize] {
                    self.input(w, Input::PeerDown { peer: PeerId(i) });
                }
            }
        }

        /// Node `i` comes back as its next incarnation: the others hear it is up, it
        /// starts, and it hears who is dead.
        fn restart(&mut self, i: u32) {
            let cfg = self.hosts[i as usize].config().clone();
            self.hosts[i as usize] = Host::new(Config { incarnation: cfg.incarnation + 1, ..cfg });
            self.alive[i as usize] = true;
            let n = self.alive.len() as u32;
            let (live, dead): (Vec<u32>, Vec<u32>) = (0..n).partition(|&w| self.alive[w as usize]);
            for w in live.into_iter().filter(|&w| w != i) {
                self.input(w, Input::PeerUp { peer: PeerId(i) });
            }
            self.input(i, Input::Start);
            for w in dead {
                self.input(i, Input::PeerDown { peer: PeerId(w) });
            }
        }

        /// Take the messages in flight from `from` to `to` out of the queue (a slow or
        /// lossy link); [`Ring::release`] puts them back, behind everything else.
        fn hold(&mut self, from: u32, to: u32) -> Vec<N::Msg> {
            let (held, rest) = self.queue.drain(..).partition(|m| (m.0, m.1) == (from, to));
            self.queue = rest;
            held.into_iter().map(|m: (u32, u32, N::Msg)| m.2).collect()
        }

        fn release(&mut self, from: u32, to: u32, msgs: Vec<N::Msg>) {
            self.queue.extend(msgs.into_iter().map(|m| (from, to, m)));
        }

        fn count(&self, name: &str) -> u64 {
            self.counts.get(name).copied().unwrap_or(0)
        }

        /// Messages of `kind` sent since the first `mark`.
        fn sent_since(&self, mark: usize, kind: &str) -> usize {
            self.sent[mark..].iter().filter(|m| m.2.kind() == kind).count()
        }
    }

    type Ft = Ring<TokenRingFt>;

    fn g(epoch: u64, by: u32) -> Gen {
        Gen { epoch, by: PeerId(by), life: 0 }
    }

    fn tok(from: u32, to: u32, gen: Gen, idle: u32) -> (u32, u32, Msg) {
        (from, to, Msg::Token { gen, idle })
    }

    fn el(from: u32, to: u32, gen: Gen) -> (u32, u32, Msg) {
        (from, to, Msg::Election { gen })
    }

    /// The generation of the token each node holds, if it holds one: never two.
    fn holders(ring: &Ft) -> Vec<(u32, Gen)> {
        (0..ring.alive.len() as u32)
            .filter(|&i| ring.alive[i as usize] && ring.node(i).holding)
            .map(|i| (i, ring.node(i).floor))
            .collect()
    }

    // ---- without failures: token_ring, message for message ----

    /// A seeded script on `Ring<N>`: at each step one of the things that can happen now
    /// (deliver the oldest message, an application asks or leaves, an idle hold ends
    /// when nothing is in flight) until every node has left the section `k` times. Returns the
    /// entries in order and every message, as `project` shows it. The watchdog never
    /// fires here.
    fn script<N: Node<Service = Mutex>>(
        n: u32,
        k: u32,
        seed: u64,
        is_hold: fn(&N::Timer) -> bool,
        project: fn(&N::Msg) -> String,
    ) -> (Vec<u32>, Vec<(u32, u32, String)>) {
        let mut ring = Ring::<N>::new(n);
        let mut left = vec![k; n as usize];
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        while left.iter().any(|&l| l > 0) {
            let mut choices: Vec<(u8, u32)> = Vec::new();
            if !ring.queue.is_empty() {
                choices.push((0, 0));
            }
            for i in 0..n {
                match ring.apps[i as usize] {
                    App::Idle if left[i as usize] > 0 => choices.push((1, i)),
                    App::Inside => choices.push((2, i)),
                    _ => {}
                }
            }
            if ring.queue.is_empty() && ring.timers.iter().any(|t| is_hold(&t.1)) {
                choices.push((3, 0));
            }
            assert!(!choices.is_empty(), "n {n} seed {seed}: stuck with {left:?} left");
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            match choices[(rng % choices.len() as u64) as usize] {
                (0, _) => assert!(ring.step()),
                (1, i) => ring.want(i),
                (2, i) => {
                    left[i as usize] -= 1;
                    ring.done(i);
                }
                _ => assert!(ring.fire_earliest(is_hold)),
            }
        }
        let sent = ring.sent.iter().map(|(f, t, m)| (*f, *t, project(m))).collect();
        (ring.entered, sent)
    }

    #[test]
    fn without_failures_it_moves_exactly_like_token_ring() {
        for n in 1..=6 {
            for seed in 0..60 {
                let plain = script::<TokenRing>(
                    n,
                    3,
                    seed,
                    |t| *t == token_ring::Timer::IdleHold,
                    |token_ring::Msg::Token { idle }| format!("TOKEN idle {idle}"),
                );
                let ft = script::<TokenRingFt>(
                    n,
                    3,
                    seed,
                    |t| *t == Timer::IdleHold,
                    |m| match m {
                        Msg::Token { gen, idle } if *gen == Gen::default() => format!("TOKEN idle {idle}"),
                        other => format!("{other:?}"),
                    },
                );
                assert_eq!(plain, ft, "n {n} seed {seed}");
                assert_eq!(ft.0.len() as u32, 3 * n);
            }
        }
    }

    #[test]
    fn at_saturation_each_entry_costs_one_token_and_nothing_else() {
        let mut ring = Ft::new(4);
        for i in 0..4 {
            ring.want(i);
        }
        let mark = ring.sent.len();
        for _ in 0..12 {
            ring.run();
            let inside = ring.apps.iter().position(|&a| a == App::Inside).unwrap() as u32;
            ring.done(inside);
            ring.want(inside);
        }
        assert_eq!(ring.entered, [1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0]);
        assert_eq!(ring.sent.len() - mark, 12);
        assert_eq!(ring.sent_since(mark, "TOKEN"), 12);
    }

    // ---- the token is lost ----

    /// w2 dies inside; w1, which passed it the token, starts the ELECTION, which goes
    /// round the four live nodes and comes home: one new token, one epoch up.
    #[test]
    fn the_holder_dies_and_exactly_one_token_is_made_one_epoch_up() {
        let mut ring = Ft::new(5);
        ring.want(2);
        ring.run();
        assert_eq!(ring.entered, [2]);
        assert_eq!(holders(&ring), [(2, g(0, 0))]);
        ring.want(3);
        let mark = ring.sent.len();
        ring.kill(2);
        assert_eq!(
            ring.node(3).pending(),
            "waiting for the TOKEN from w1 (generation 0:w0 or newer; never had it; w0 made it)"
        );
        ring.run();
        #[rustfmt::skip]
        let expected = [
            el(1, 3, g(1, 1)), el(3, 4, g(1, 1)), el(4, 0, g(1, 1)), el(0, 1, g(1, 1)),
            tok(1, 3, g(1, 1), 1),
        ];
        assert_eq!(ring.sent[mark..], expected);
        assert_eq!(ring.entered, [2, 3]);
        assert_eq!(ring.count("elections"), 1);
        assert_eq!(ring.count("regenerations"), 1);
        assert_eq!(holders(&ring), [(3, g(1, 1))]);
        // Everybody now refuses generation 0.
        assert!([0, 1, 3, 4].iter().all(|&i| ring.node(i).floor == g(1, 1)));
    }

    /// The TOKEN is lost on its way (a lost message: nobody is reported down), and w1
    /// and w3 time out at once. w1's ELECTION dies at w3, which has proposed a larger
    /// generation; w3's goes round and w3 alone makes the token.
    #[test]
    fn two_nodes_time_out_at_once_and_one_regenerates() {
        let mut ring = Ft::new(4);
        assert_eq!(ring.hold(0, 1), [Msg::Token { gen: g(0, 0), idle: 1 }]);
        ring.want(0);
        let mark = ring.sent.len();
        ring.fire(1, Timer::Lost);
        ring.fire(3, Timer::Lost);
        assert_eq!(ring.now, lost_timeout(4));
        assert_eq!(
            ring.node(0).pending(),
            "waiting for the TOKEN from w3 (generation 0:w0 or newer; I last passed it to w1)"
        );
        assert_eq!(ring.node(1).pending(), "", "not waiting: its application did not ask");
        ring.run();
        #[rustfmt::skip]
        let expected = [
            el(1, 2, g(1, 1)), el(3, 0, g(1, 3)),
            el(2, 3, g(1, 1)), el(0, 1, g(1, 3)), // w3 drops the smaller one
            el(1, 2, g(1, 3)), el(2, 3, g(1, 3)), // home: w3 makes the token
            tok(3, 0, g(1, 3), 1),
        ];
        assert_eq!(ring.sent[mark..], expected);
        assert_eq!(ring.count("elections"), 2);
        assert_eq!(ring.count("regenerations"), 1);
        assert_eq!(ring.entered, [0]);
        assert_eq!(holders(&ring), [(0, g(1, 3))]);
    }

    /// w1 passes the token to w2 and dies; the TOKEN is slow to reach w2, which meanwhile
    /// promises w0's ELECTION. When the old TOKEN arrives it is stale: dropped and
    /// counted, and only w0's new one goes round.
    #[test]
    fn an_old_generation_token_is_discarded_and_counted() {
        let mut ring = Ft::new(4);
        ring.step(); // w1 has it, and passes it on.
        let old = ring.hold(1, 2);
        assert_eq!(old, [Msg::Token { gen: g(0, 0), idle: 2 }]);
        ring.kill(1);
        ring.step(); // w2 promises w0's ELECTION, and passes it on.
        assert_eq!(ring.node(2).floor, g(1, 0));
        ring.release(1, 2, old);
        ring.want(2);
        ring.run();
        assert_eq!(ring.count("stale_tokens"), 1);
        assert_eq!(ring.count("regenerations"), 1);
        assert_eq!(ring.entered, [2], "with the new token, not the old one");
        assert_eq!(holders(&ring), [(2, g(1, 0))]);
    }

    /// The same race the other way round: the old TOKEN reaches w2 first. w2 holds it
    /// when the ELECTION comes, stops it, and stamps the token; nothing is made.
    #[test]
    fn an_old_token_that_arrives_first_stops_the_election() {
        let mut ring = Ft::new(4);
        ring.step();
        let old = ring.hold(1, 2);
        ring.want(2);
        ring.kill(1);
        let election = ring.hold(0, 2);
        assert_eq!(election, [Msg::Election { gen: g(1, 0) }]);
        ring.release(1, 2, old);
        ring.release(0, 2, election);
        ring.run();
        assert_eq!(ring.entered, [2]);
        assert_eq!(ring.count("vetoes"), 1);
        assert_eq!(ring.count("regenerations"), 0);
        assert_eq!(holders(&ring), [(2, g(1, 0))], "the old token, stamped with the ELECTION's generation");
        // w0's ELECTION is over: the stamped token ends it when it comes round.
        ring.done(2);
        ring.run();
        assert_eq!(ring.node(0).lap, None);
        assert_eq!(ring.count("stale_tokens"), 0);
    }

    /// Sim seed 14, n = 5, without FIFO: a node promised another ELECTION, which came home
    /// and made a token, then started its own; an old TOKEN reaching it must still be
    /// stale, not stamped with its own ELECTION's generation (step 7 is for a token the
    /// node could take, not for one its promise ruled out).
    #[test]
    fn a_token_older_than_a_promise_stays_stale_while_the_node_elects() {
        let mut ring = Ft::new(3);
        let old = ring.hold(0, 1);
        ring.want(0);
        ring.fire(2, Timer::Lost);
        ring.run(); // 1:w2 goes round, w1 promises it; w2 makes the token and w0 goes in.
        assert_eq!(ring.entered, [0]);
        assert_eq!(ring.node(1).floor, g(1, 2));
        ring.fire(1, Timer::Lost); // w1's own ELECTION, 2:w1, is out
        ring.want(1);
        ring.release(0, 1, old);
        ring.run();
        assert_eq!(ring.count("stale_tokens"), 1);
        assert_eq!(ring.entered, [0], "w0 is still inside");
        assert_eq!(holders(&ring), [(0, g(2, 1))], "w0 stopped w1's ELECTION and stamped the token");
        ring.done(0);
        ring.run();
        assert_eq!(ring.entered, [0, 1]);
    }

    /// w1 is inside for longer than w3's watchdog allows. w3's ELECTION reaches w1 and
    /// stops there: w1 is slow, not dead, and nobody gets past it.
    #[test]
    fn a_slow_holder_inside_is_not_overtaken() {
        let mut ring = Ft::new(4);
        ring.want(1);
        ring.run();
        assert_eq!(ring.entered, [1]);
        ring.want(3);
        let mark = ring.sent.len();
        ring.fire(3, Timer::Lost);
        assert_eq!(
            ring.node(3).pending(),
            "waiting for my ELECTION 1:w3 to come home from w2: the TOKEN seems lost"
        );
        ring.run();
        assert_eq!(ring.sent[mark..], [el(3, 0, g(1, 3)), el(0, 1, g(1, 3))]);
        assert_eq!(ring.count("vetoes"), 1);
        ring.done(1);
        ring.run();
        assert_eq!(ring.sent[mark + 2..], [tok(1, 2, g(1, 3), 0), tok(2, 3, g(1, 3), 1)]);
        assert_eq!(ring.entered, [1, 3]);
        assert_eq!(ring.count("regenerations"), 0);
        assert_eq!(ring.node(3).lap, None);
    }

    /// w2's ELECTION chases the token round the ring and never catches it: the token
    /// reaches w2 first. w2 stamps it and calls the ELECTION off; when the ELECTION comes
    /// home it is dropped.
    #[test]
    fn a_token_that_outruns_the_election_calls_it_off() {
        let mut ring = Ft::new(3);
        ring.fire(2, Timer::Lost); // the TOKEN to w1 is still in flight
        ring.run();
        #[rustfmt::skip]
        let expected = [
            tok(0, 1, g(0, 0), 1), el(2, 0, g(1, 2)),
            tok(1, 2, g(0, 0), 2), el(0, 1, g(1, 2)),
            el(1, 2, g(1, 2)),
        ];
        assert_eq!(ring.sent, expected);
        assert_eq!(holders(&ring), [(2, g(1, 2))]);
        assert_eq!(ring.count("regenerations"), 0);
        assert_eq!(ring.count("stale_tokens"), 0);
        // The stamped token is taken everywhere.
        ring.want(1);
        while ring.entered.is_empty() {
            assert!(ring.fire_earliest(|t| *t == Timer::IdleHold));
            ring.run();
        }
        assert_eq!(ring.entered, [1]);
        assert!((0..3).all(|i| ring.node(i).floor == g(1, 2)));
    }

    #[test]
    fn a_dead_successor_is_skipped_by_the_token_and_the_election() {
        let mut ring = Ft::new(4);
        ring.kill(2);
        ring.want(1);
        ring.run();
        let mark = ring.sent.len();
        ring.done(1);
        assert_eq!(ring.sent[mark..], [tok(1, 3, g(0, 0), 0)], "w2 is dead: w3 is next");
        ring.hold(1, 3); // lost on the way
        ring.fire(1, Timer::Lost);
        ring.run();
        #[rustfmt::skip]
        let expected = [el(1, 3, g(1, 1)), el(3, 0, g(1, 1)), el(0, 1, g(1, 1)), tok(1, 3, g(1, 1), 1)];
        assert_eq!(ring.sent[mark + 1..mark + 5], expected);
        assert!(ring.sent.iter().all(|m| m.1 != 2), "nothing is sent to the dead");
        // w2 comes back, and is in the ring again.
        ring.restart(2);
        ring.want(2);
        ring.run();
        while ring.entered.last() != Some(&2) {
            assert!(ring.fire_earliest(|t| *t == Timer::IdleHold));
            ring.run();
        }
        assert_eq!(ring.count("regenerations"), 1);
    }

    /// With every other node dead, the token is made at once: the lap is only this node.
    #[test]
    fn alone_a_lost_token_is_made_again_at_once() {
        let mut ring = Ft::new(2);
        ring.want(1);
        ring.run();
        ring.kill(1);
        assert_eq!(holders(&ring), [(0, g(1, 0))]);
        assert_eq!(ring.count("regenerations"), 1);
        assert_eq!(ring.sent_since(0, "ELECTION"), 0);
        // w1 comes back: the kept token moves again.
        ring.restart(1);
        ring.want(1);
        ring.fire(0, Timer::IdleHold);
        ring.run();
        assert_eq!(ring.entered, [1, 1]);
    }

    /// One initiator: one lap of M ELECTIONs. Every live node at once: 2M-1, every
    /// ELECTION but the largest dying at the next node.
    #[test]
    fn a_regeneration_costs_m_elections_from_one_node_and_2m_minus_1_from_all() {
        for n in 2..=16u32 {
            for who in 0..n {
                let mut ring = Ft::new(n);
                ring.hold(0, 1);
                ring.fire(who, Timer::Lost);
                ring.run();
                assert_eq!(
                    ring.sent_since(1, "ELECTION") as u64,
                    messages_per_regeneration(n).0,
                    "n {n} w{who}"
                );
                assert_eq!(ring.count("regenerations"), 1);
                assert_eq!(holders(&ring)[..].iter().map(|h| h.1).collect::<Vec<_>>(), [g(1, who)], "n {n}");
            }
            let mut ring = Ft::new(n);
            ring.hold(0, 1);
            for i in 0..n {
                ring.fire(i, Timer::Lost);
            }
            ring.run();
            assert_eq!(ring.sent_since(1, "ELECTION") as u64, messages_per_regeneration(n).1, "n {n}: all");
            assert_eq!(ring.count("regenerations"), 1);
            assert_eq!(holders(&ring)[..].iter().map(|h| h.1).collect::<Vec<_>>(), [g(1, n - 1)], "n {n}");
        }
        assert_eq!(messages_per_regeneration(1), (0, 0));
        assert_eq!(messages_per_regeneration(5), (5, 9));
    }

    #[test]
    fn a_stale_watchdog_does_nothing() {
        let mut w1 = TokenRingFt::new(&Config::new(1, 3));
        let mut o = Out::new(Duration::ZERO);
        w1.on_start(&mut o);
        assert_eq!(o.actions(), [Action::SetTimer { timer: Timer::Lost, after: lost_timeout(3) }]);
        // Fired before its deadline (reset since, and delivered anyway): ignored.
        let mut o = Out::new(lost_timeout(3) - Duration::from_millis(1));
        w1.on_timer(Timer::Lost, &mut o);
        assert!(o.actions().is_empty(), "{:?}", o.actions());
        let mut o = Out::new(lost_timeout(3));
        w1.on_timer(Timer::Lost, &mut o);
        assert_eq!(o.actions()[0], Action::Count { name: "elections".into(), by: 1 });
    }

    #[test]
    fn a_single_node_keeps_the_token_without_timers() {
        let mut w = TokenRingFt::new(&Config::new(0, 1));
        let mut o = Out::new(Duration::ZERO);
        w.on_start(&mut o);
        assert!(o.actions().is_empty(), "{:?}", o.actions());
        w.on_want_cs(&mut o);
        assert_eq!(o.actions(), [Action::CancelTimer { timer: Timer::IdleHold }, Action::enter()]);
        let mut o = Out::new(Duration::ZERO);
        w.on_cs_done(&mut o);
        assert!(o.actions().is_empty());
        assert!(w.holding);
    }

    #[test]
    fn a_restarted_node_0_makes_no_second_token() {
        let mut ring = Ft::new(3);
        ring.run();
        ring.kill(0);
        ring.restart(0);
        assert!(!ring.node(0).holding);
        assert_eq!(holders(&ring).len(), 1);
        ring.want(0);
        assert_eq!(
            ring.node(0).pending(),
            "waiting for the TOKEN from w2 (generation 0:w0 or newer; restarted: it has not come by since)"
        );
        assert_eq!(Gen { life: 2, ..g(3, 1) }.to_string(), "3:w1 (life 2)");
    }

    // ---- the simulator: every order the scheduler picks, crashes of any node ----

    /// Asserts the run served every node's quota (crashed ones finish theirs after their
    /// restart), and adds up what happened.
    #[derive(Default, Debug)]
    struct Tally {
        runs: u64,
        crashes: u64,
        regenerations: u64,
        stale: u64,
        vetoes: u64,
    }

    fn sweep(
        sizes: &[u32],
        seeds: std::ops::Range<u64>,
        make: impl Fn(u32, u64) -> Sim<TokenRingFt>,
    ) -> Tally {
        let mut t = Tally::default();
        for &n in sizes {
            for seed in seeds.clone() {
                let r = make(n, seed).run(3).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(r.entries_by_node, vec![3; n as usize], "seed {seed} n {n}");
                t.runs += 1;
                t.crashes += u64::from(r.crashes);
                t.regenerations += r.counter("regenerations");
                t.stale += r.counter("stale_tokens");
                t.vetoes += r.counter("vetoes");
            }
        }
        t
    }

    const SIZES: [u32; 4] = [2, 3, 5, 8];

    #[test]
    fn sim_survives_two_crashes_of_any_node_with_no_overlap_and_everyone_served() {
        let t = sweep(&SIZES, 0..50, |n, seed| {
            Sim::<TokenRingFt>::new(n, seed).stale_timers(true).crashes(2, |_| true)
        });
        assert!(t.crashes >= 150, "{t:?}");
        assert!(t.regenerations >= 50, "the holder died in some runs: {t:?}");
        assert!(t.vetoes > 0, "{t:?}");
    }

    #[test]
    fn sim_without_crashes_never_makes_a_token() {
        // FIFO links and no deaths: nothing is lost, so every ELECTION a watchdog starts
        // meets the token; none comes home, and no token is ever stale.
        let t = sweep(&SIZES, 0..50, |n, seed| Sim::<TokenRingFt>::new(n, seed).stale_timers(true));
        assert_eq!((t.regenerations, t.stale), (0, 0), "{t:?}");
        assert!(t.vetoes > 0, "the watchdogs fired in some long sections: {t:?}");
    }

    #[test]
    fn sim_without_fifo_is_still_safe() {
        // An ELECTION may now overtake the TOKEN on a link: the TOKEN arrives stale and
        // a new one is made, with no crash at all. Still never two.
        let t = sweep(&SIZES, 0..50, |n, seed| {
            Sim::<TokenRingFt>::new(n, seed).stale_timers(true).non_fifo().crashes(2, |_| true)
        });
        assert!(t.stale > 0 && t.regenerations > 0, "{t:?}");
    }

    /// The negative control for the liveness check: the plain ring under the same
    /// crashes loses its token, and the simulator says so.
    #[test]
    fn sim_catches_plain_token_ring_stalling_when_its_holder_dies() {
        let mut stalled = 0;
        for n in SIZES {
            for seed in 0..50 {
                match Sim::<TokenRing>::new(n, seed).stale_timers(true).crashes(2, |_| true).run(3) {
                    Err(SimError { failure: Failure::Deadlock { waiting }, .. }) => {
                        assert!(waiting.iter().any(|w| w.1.contains("waiting for the TOKEN")), "{waiting:?}");
                        stalled += 1;
                    }
                    Err(e) => panic!("{e}"),
                    Ok(_) => {}
                }
            }
        }
        assert!(stalled >= 20, "only {stalled} of 200 runs lost the token");
    }

    /// A holder that does not stop ELECTIONs: it promises and passes them on while it
    /// keeps its token. The veto is what this breaks.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct NoVeto(TokenRingFt);

    impl Algorithm for NoVeto {
        type Msg = Msg;
        type Timer = Timer;
        fn new(cfg: &Config) -> Self {
            NoVeto(TokenRingFt::new(cfg))
        }
        fn on_start(&mut self, out: &mut O) {
            self.0.on_start(out)
        }
        fn on_want_cs(&mut self, out: &mut O) {
            self.0.on_want_cs(out)
        }
        fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut O) {
            match msg {
                Msg::Election { gen } if self.0.holding => {
                    self.0.holding = false;
                    self.0.on_election(gen, out);
                    self.0.holding = true;
                }
                msg => self.0.on_message(from, msg, out),
            }
        }
        fn on_cs_done(&mut self, out: &mut O) {
            self.0.on_cs_done(out)
        }
        fn on_timer(&mut self, timer: Timer, out: &mut O) {
            self.0.on_timer(timer, out)
        }
        fn on_peer_down(&mut self, peer: PeerId, out: &mut O) {
            self.0.on_peer_down(peer, out)
        }
        fn on_peer_up(&mut self, peer: PeerId, out: &mut O) {
            self.0.on_peer_up(peer, out)
        }
    }

    /// The negative control for the safety check: without the veto, an ELECTION started
    /// during a long section comes home past the holder, and the simulator catches the
    /// second token letting someone in.
    #[test]
    fn sim_catches_a_holder_that_does_not_veto() {
        let mut caught = 0;
        for n in SIZES {
            for seed in 0..50 {
                match Sim::<NoVeto>::new(n, seed).stale_timers(true).run(3) {
                    Err(SimError { failure: Failure::Overlap { .. }, .. }) => caught += 1,
                    Err(e) => panic!("{e}"),
                    Ok(_) => {}
                }
            }
        }
        assert!(caught >= 20, "only {caught} of 200 runs caught the second token");
    }
}
