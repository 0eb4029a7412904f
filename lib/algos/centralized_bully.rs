//! Centralized coordinator that survives its coordinator: a bully election picks a new
//! one, and the survivors tell it what the old one knew.
//!
//! # Normal operation
//!
//! As in `centralized`: the coordinator (the highest live id) keeps a FIFO queue; a node
//! sends REQUEST, waits for GRANT, and sends RELEASE when it leaves, three messages per
//! entry of an ordinary node and none for the coordinator's own. Every one of those
//! messages carries the *term* of the coordinator it belongs to, a pair (epoch, id of the
//! coordinator) ordered epoch first, so two coordinators never share a term.
//!
//! # Noticing that the coordinator is gone
//!
//! On one machine a crashed process's socket gives EOF, so `on_peer_down(coordinator)`
//! starts an election at once. A *paused* coordinator closes nothing, so the coordinator
//! also sends HEARTBEAT to every other node every [`HEARTBEAT`] (50 ms), but only while
//! somebody depends on it (a request is queued, someone holds the section, or it is still
//! rebuilding its state); an idle system sends none. A node that waits for a GRANT and
//! hears nothing from its coordinator for [`SUSPECT_AFTER`] (200 ms) suspects it and
//! starts an election. HEARTBEAT is its own message kind, so its cost shows in the report.
//!
//! # Bully election
//!
//! A node that starts an election sends ELECTION to every higher id it does not know to
//! be down; with none left it wins at once. A live higher node answers ANSWER and starts
//! an election of its own (an active coordinator instead re-announces itself to the
//! asker with COORDINATOR). A node that got no ANSWER within [`ELECTION_TIMEOUT`] wins;
//! one that got an ANSWER but no COORDINATOR within [`COORDINATOR_TIMEOUT`] starts over.
//! A node that hears ANSWER-less peers go down (EOF) does not wait for them. The winner
//! takes the epoch one above every epoch it has seen. A node hearing COORDINATOR from a
//! term older than its own replies STALE with its term, and the candidate declares again
//! above it (a restarted node remembers no epoch). A node that accepts a COORDINATOR from
//! a *lower* id starts an election itself: the highest live node always ends up in charge
//! (a restarted or resumed high node takes over, which is the bully).
//!
//! A restarted node (`incarnation > 0`) never assumes anything: it starts an election
//! from `on_start`, and learns the coordinator from the COORDINATOR that follows.
//!
//! # Recovery
//!
//! The COORDINATOR broadcast is also the state query: every node that accepts it adopts
//! the new term, stops trusting anything of older terms, and answers STATE {inside,
//! waiting}. The new coordinator grants nothing until it has a STATE from **every node
//! not known to be down** (a node going down while it waits counts as answered). Then a
//! node that said it is inside holds the section, and the waiting nodes are queued in
//! the order their STATE replies (or REQUESTs sent to the new term) arrived: the STATE
//! answer *is* the request, so nobody re-sends REQUEST. A STATE that arrives after
//! recovery (from a node re-announced to later) is handled the same way.
//!
//! # What is safe, and what is not
//!
//! A node enters only on a GRANT of the term it currently follows, from that term's
//! coordinator (or, as coordinator, by its own decision). A GRANT of an older term is
//! ignored. Each node handles its events one at a time, so a GRANT of the old term that
//! reaches it before the new COORDINATOR lets it in, and its STATE then says *inside*;
//! one that arrives after is ignored. The old coordinator, once it accepts the newer
//! term, steps down and grants nothing more. The new coordinator waits for every node
//! that is not dead, the old coordinator included, so it never hands out the section
//! while an old holder (the old coordinator itself, say, paused inside its section)
//! still has it. On one machine "down" means dead, so excluding the down nodes is exact.
//!
//! The price is liveness under a **pause**: a SIGSTOPped coordinator is suspected and a
//! new one is elected within a few hundred milliseconds, but that one waits for the
//! paused node's STATE, so nobody enters until it is continued (or killed). Letting the
//! others go on without it would be unsafe: a coordinator enters its own section without
//! telling anyone, so a paused coordinator may be inside, and nobody can tell. (Making
//! that safe would need the coordinator to announce its own entries to everyone and wait
//! for acknowledgements before entering, 2(N-1) more messages per coordinator entry; not
//! done here.) When the paused node wakes, it may still act as coordinator for a moment
//! (even let itself in), which is harmless because the new coordinator has granted
//! nothing yet; then it reads the newer COORDINATOR, answers STATE, and, being the
//! highest id, takes over again with a newer term.
//!
//! # The majority rule (`run --majority`)
//!
//! Everything above trusts the failure detector: a node reported down is taken to be
//! dead. Under `--detector heartbeat` that is false for a paused or cut-off node, and a
//! partition gives two coordinators that both grant (split brain). With
//! [`Config::majority`] set, the coordinator grants only what a majority has
//! acknowledged, and trusts no report of a death:
//!
//! - *Before each grant* the coordinator sends LOCK {term, seq, holder, incarnation} to
//!   every node and grants only once a majority, itself included, has answered ACK. A
//!   node acknowledges only a LOCK of the term it follows and remembers the newest LOCK
//!   it acknowledged; to a LOCK of an older term it answers STALE. On the minority side
//!   of a partition no LOCK gathers a majority, so nothing is granted there; and a LOCK
//!   is only sent once the previous holder has released, so the newest LOCK anyone
//!   acknowledged names the only holder that may still be inside.
//! - *A new coordinator* needs STATE from a majority, and each STATE carries the newest
//!   LOCK its sender acknowledged. Any two majorities share a node, so the newest of
//!   those LOCKs names the last holder granted. The new coordinator grants nothing until
//!   that holder itself has answered (inside or not): a holder cut off on the other side
//!   stops everyone until the partition heals. That is the price of never trusting the
//!   detector.
//! - *A holder reported down is not released.* Only evidence that its section is over
//!   ends it: its RELEASE, or a REQUEST or STATE from a later incarnation of it (a
//!   restarted node holds nothing). A dead holder that never restarts stops everyone, as
//!   a lost token does.
//!
//! Cost: an ordinary entry takes REQUEST, N-1 LOCKs, N-1 ACKs, GRANT and RELEASE, 2N+1
//! messages instead of 3; the coordinator's own entry 2(N-1) instead of none.
//!
//! What this does **not** survive: lost messages (`--drop`): a lost STATE or COORDINATOR
//! leaves the new coordinator waiting for ever (safe, not live). It also needs FIFO
//! channels for liveness (not for safety): a node's STATE {inside} overtaken by its own
//! RELEASE would leave the coordinator believing it still holds the section. The
//! simulator sweeps it with FIFO channels, crashes of any node and stale timers.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::algorithm::{majority, Algorithm, Config, Message, Out, PeerId};

/// How often a coordinator that someone depends on sends HEARTBEAT.
pub const HEARTBEAT: Duration = Duration::from_millis(50);
/// A waiting node that hears nothing from its coordinator for this long suspects it.
pub const SUSPECT_AFTER: Duration = Duration::from_millis(200);
/// A candidate that gets no ANSWER within this declares itself coordinator.
pub const ELECTION_TIMEOUT: Duration = Duration::from_millis(100);
/// A candidate that got an ANSWER but no COORDINATOR within this starts over.
pub const COORDINATOR_TIMEOUT: Duration = Duration::from_millis(300);

/// A coordinator's term: an epoch, ties (which a restart can cause) broken by the
/// coordinator's id, so every coordinator has a term of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Term {
    /// Compared first.
    pub epoch: u64,
    /// The coordinator of this term.
    pub id: u32,
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.epoch, self.id)
    }
}

/// Majority rule: a grant the coordinator of `term` asked a majority to acknowledge,
/// the `seq`th of its term, to `holder` in its incarnation `inc`. Ordered by term, then
/// `seq`: the newest is the last grant made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Lock {
    /// The term of the coordinator that made the grant.
    pub term: Term,
    /// The grant's number in its term, from 1.
    pub seq: u64,
    /// Who the section was granted to.
    pub holder: PeerId,
    /// The holder's incarnation the grant was for.
    pub inc: u32,
}

/// Messages of `centralized-bully`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST, node → coordinator: I want the section.
    Request {
        /// The term of the coordinator asked.
        term: Term,
        /// The sender's incarnation.
        inc: u32,
    },
    /// GRANT, coordinator → node: it is yours, if you are still the incarnation asked
    /// for (a grant for an earlier life of a node that restarted unnoticed is not the
    /// new life's).
    Grant {
        /// The coordinator's term the message belongs to.
        term: Term,
        /// The incarnation the section is granted to.
        inc: u32,
    },
    /// RELEASE, node → coordinator: I am out.
    Release {
        /// The coordinator's term the message belongs to.
        term: Term,
    },
    /// HEARTBEAT, coordinator → all: I am alive (only while someone depends on it).
    Heartbeat {
        /// The coordinator's term the message belongs to.
        term: Term,
    },
    /// Candidate → higher ids: I am holding an election.
    Election,
    /// Higher node → candidate: I am alive, stand down.
    Answer,
    /// COORDINATOR, winner → all: I coordinate; tell me your state (the STATE_QUERY).
    Coordinator {
        /// The winner's new term.
        term: Term,
    },
    /// STATE, node → new coordinator: my state when I accepted its term.
    State {
        /// The term accepted.
        term: Term,
        /// The sender was inside the section.
        inside: bool,
        /// The sender was waiting for it.
        waiting: bool,
        /// The sender's incarnation.
        inc: u32,
        /// Majority rule: the newest LOCK the sender acknowledged, if any.
        lock: Option<Lock>,
    },
    /// STALE, node → candidate: your term is older than mine.
    Stale {
        /// The term the sender follows.
        term: Term,
    },
    /// LOCK, majority rule, coordinator → all: acknowledge this grant before I make it.
    Lock {
        /// The grant to acknowledge.
        lock: Lock,
    },
    /// ACK, majority rule, node → coordinator: I acknowledge the LOCK.
    Ack {
        /// The term of the LOCK acknowledged.
        term: Term,
        /// The LOCK's number in its term.
        seq: u64,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "REQUEST",
            Msg::Grant { .. } => "GRANT",
            Msg::Release { .. } => "RELEASE",
            Msg::Heartbeat { .. } => "HEARTBEAT",
            Msg::Election => "ELECTION",
            Msg::Answer => "ANSWER",
            Msg::Coordinator { .. } => "COORDINATOR",
            Msg::State { .. } => "STATE",
            Msg::Stale { .. } => "STALE",
            Msg::Lock { .. } => "LOCK",
            Msg::Ack { .. } => "ACK",
        }
    }
}

/// Timers. None carries a generation: setting one again resets it, and the host drops
/// the firing of a setting reset or cancelled since (`crate::host::Host::fire`), so
/// the one that fires is the latest. (A driver may still deliver a stale one once, as
/// the simulator's stale timers do; each handler checks the role the timer was set for,
/// and a stale firing then acts as the live one would, early.) A tag would make the
/// state grow with every setting, and no cycle of states would ever close.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// Coordinator: time to send HEARTBEAT (if anyone depends on us).
    Heartbeat,
    /// Waiting node: the coordinator has been silent too long.
    Suspect,
    /// Candidate: nobody higher answered.
    Election,
    /// Candidate that got an ANSWER: no COORDINATOR came.
    AwaitCoordinator,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum App {
    Idle,
    Waiting,
    Inside,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Role {
    /// Follows `coordinator` (if known) in `term`.
    Follower,
    /// Sent ELECTION to these higher ids and waits for an ANSWER.
    Electing(BTreeSet<PeerId>),
    /// Got an ANSWER; waits for a COORDINATOR.
    AwaitCoordinator,
    /// Coordinates `term`; with `Some(missing)` still waiting for their STATE.
    Coordinator(Option<BTreeSet<PeerId>>),
}

/// One node of `centralized-bully`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CentralizedBully {
    cfg: Config,
    /// The newest term this node has accepted.
    term: Term,
    /// That term's coordinator, once known.
    coordinator: Option<PeerId>,
    /// The highest epoch seen in any message.
    max_epoch: u64,
    down: BTreeSet<PeerId>,
    app: App,
    role: Role,
    // Coordinator only.
    holder: Option<PeerId>,
    queue: VecDeque<PeerId>,
    // Majority rule only.
    /// The newest LOCK this node acknowledged (the coordinator acknowledges its own).
    lock: Option<Lock>,
    /// Coordinator: LOCKs sent in this term, and the one waiting for a majority of ACKs.
    seq: u64,
    acks: Option<BTreeSet<PeerId>>,
    /// Coordinator: the incarnation the holder had when granted, and the newest
    /// incarnation heard from each node (in REQUEST and STATE).
    holder_inc: u32,
    incs: Vec<u32>,
    /// Recovering coordinator: who answered STATE, and the newest LOCK they reported.
    answered: BTreeSet<PeerId>,
    newest: Option<Lock>,
}

impl CentralizedBully {
    fn me(&self) -> PeerId {
        self.cfg.id
    }

    fn is_coordinator(&self) -> bool {
        matches!(self.role, Role::Coordinator(_))
    }

    fn recovering(&self) -> bool {
        matches!(self.role, Role::Coordinator(Some(_)))
    }

    fn note(&mut self, term: Term) {
        self.max_epoch = self.max_epoch.max(term.epoch);
    }

    /// Start (or restart) a bully election.
    fn start_election(&mut self, out: &mut Out<Msg, Timer>) {
        out.count("elections", 1);
        self.stop_coordinating();
        let higher: BTreeSet<PeerId> =
            self.cfg.others().filter(|p| *p > self.me() && !self.down.contains(p)).collect();
        if higher.is_empty() {
            return self.declare(out);
        }
        for &p in &higher {
            out.send(p, Msg::Election);
        }
        self.role = Role::Electing(higher);
        out.set_timer(Timer::Election, ELECTION_TIMEOUT);
    }

    /// Forget the coordinator's state (on losing or leaving the role).
    fn stop_coordinating(&mut self) {
        if self.is_coordinator() {
            self.role = Role::Follower;
        }
        self.holder = None;
        self.queue.clear();
        self.acks = None;
    }

    /// Win: take a new term above every epoch seen and ask everyone for their state.
    fn declare(&mut self, out: &mut Out<Msg, Timer>) {
        out.count("terms", 1);
        self.max_epoch += 1;
        self.term = Term { epoch: self.max_epoch, id: self.me().0 };
        self.coordinator = Some(self.me());
        self.holder = (self.app == App::Inside).then_some(self.me());
        self.holder_inc = self.cfg.incarnation;
        self.queue.clear();
        self.acks = None;
        self.seq = 0;
        self.answered.clear();
        self.newest = self.lock;
        if self.app == App::Waiting {
            self.queue.push_back(self.me());
        }
        let missing: BTreeSet<PeerId> = self.cfg.others().filter(|p| !self.down.contains(p)).collect();
        for &p in &missing {
            out.send(p, Msg::Coordinator { term: self.term });
        }
        self.role = Role::Coordinator(Some(missing));
        out.set_timer(Timer::Heartbeat, HEARTBEAT);
        self.maybe_recovered(out);
    }

    /// Coordinator: once every live node has told its state, start granting. Under the
    /// majority rule, also a majority, the last holder among them.
    fn maybe_recovered(&mut self, out: &mut Out<Msg, Timer>) {
        if let Role::Coordinator(Some(missing)) = &self.role {
            if missing.is_empty() && self.quorum_recovered() {
                self.role = Role::Coordinator(None);
                self.grant_next(out);
            }
        }
    }

    /// Majority rule: a majority told its state, and the last holder granted (named by
    /// the newest LOCK reported) has answered, or is this node.
    fn quorum_recovered(&self) -> bool {
        if !self.cfg.majority {
            return true;
        }
        let enough = self.answered.len() as u32 + 1 >= majority(self.cfg.n);
        let last = self.newest.map(|l| l.holder);
        enough && last.is_none_or(|h| h == self.me() || self.answered.contains(&h))
    }

    /// The newest incarnation heard from `p`.
    fn inc_of(&self, p: PeerId) -> u32 {
        if p == self.me() {
            self.cfg.incarnation
        } else {
            self.incs.get(p.index()).copied().unwrap_or(0)
        }
    }

    /// Coordinator: `p` spoke as incarnation `inc`. A later life than the holder's ends
    /// that holder's section: a restarted node holds nothing.
    fn heard_inc(&mut self, p: PeerId, inc: u32) {
        if let Some(slot) = self.incs.get_mut(p.index()) {
            if inc > *slot {
                // A restart the detector did not report (under heartbeats, one quicker
                // than the suspicion time): the old life's queued request died with it.
                self.queue.retain(|&q| q != p);
            }
            *slot = (*slot).max(inc);
        }
        if self.holder == Some(p) && inc > self.holder_inc {
            self.holder = None;
            self.acks = None;
        }
    }

    /// Coordinator: `who` wants in.
    fn enqueue(&mut self, who: PeerId, out: &mut Out<Msg, Timer>) {
        if self.holder != Some(who) && !self.queue.contains(&who) {
            self.queue.push_back(who);
        }
        self.grant_next(out);
    }

    /// Coordinator, not recovering: grant the head of the queue if nobody holds (under
    /// the majority rule, ask for the acknowledgements first).
    fn grant_next(&mut self, out: &mut Out<Msg, Timer>) {
        if self.recovering() || self.holder.is_some() {
            return;
        }
        let Some(next) = self.queue.pop_front() else { return };
        self.holder = Some(next);
        self.holder_inc = self.inc_of(next);
        if !self.cfg.majority {
            return self.grant(next, out);
        }
        self.seq += 1;
        let lock = Lock { term: self.term, seq: self.seq, holder: next, inc: self.holder_inc };
        self.lock = Some(lock);
        self.acks = Some(BTreeSet::from([self.me()]));
        for p in self.cfg.others().filter(|p| !self.down.contains(p)) {
            out.send(p, Msg::Lock { lock });
        }
        self.maybe_grant(out);
    }

    /// Majority rule: grant once a majority acknowledged the LOCK.
    fn maybe_grant(&mut self, out: &mut Out<Msg, Timer>) {
        let acked = self.acks.as_ref().map_or(0, BTreeSet::len) as u32;
        if let (Some(holder), true) = (self.holder, acked >= majority(self.cfg.n)) {
            self.acks = None;
            self.grant(holder, out);
        }
    }

    fn grant(&mut self, next: PeerId, out: &mut Out<Msg, Timer>) {
        if next == self.me() {
            self.app = App::Inside;
            out.enter_cs();
        } else {
            out.send(next, Msg::Grant { term: self.term, inc: self.holder_inc });
        }
    }

    /// A waiting follower (re)arms its suspicion of the coordinator.
    fn watch(&mut self, out: &mut Out<Msg, Timer>) {
        if self.app == App::Waiting && self.role == Role::Follower && self.coordinator != Some(self.me()) {
            out.set_timer(Timer::Suspect, SUSPECT_AFTER);
        }
    }

    fn is_my_coordinator(&self, from: PeerId, term: Term) -> bool {
        term == self.term && self.coordinator == Some(from)
    }

    fn on_coordinator(&mut self, from: PeerId, term: Term, out: &mut Out<Msg, Timer>) {
        if term < self.term {
            out.send(from, Msg::Stale { term: self.term });
            return;
        }
        if term > self.term || self.coordinator != Some(from) {
            // A newer term: whatever we coordinated or elected is over.
            self.stop_coordinating();
            self.term = term;
            self.coordinator = Some(from);
            self.role = Role::Follower;
        } else if !self.is_coordinator() {
            self.role = Role::Follower;
        }
        let (inside, waiting) = (self.app == App::Inside, self.app == App::Waiting);
        out.send(from, Msg::State { term, inside, waiting, inc: self.cfg.incarnation, lock: self.lock });
        self.watch(out);
        if from < self.me() {
            // Bully: a live higher node takes over.
            self.start_election(out);
        }
    }
}

impl Algorithm for CentralizedBully {
    type Msg = Msg;
    type Timer = Timer;

    fn new(cfg: &Config) -> Self {
        let first_life = cfg.incarnation == 0;
        let highest = cfg.highest();
        CentralizedBully {
            cfg: cfg.clone(),
            term: Term { epoch: 0, id: if first_life { highest.0 } else { 0 } },
            coordinator: first_life.then_some(highest),
            max_epoch: 0,
            down: BTreeSet::new(),
            app: App::Idle,
            role: if first_life && cfg.id == highest { Role::Coordinator(None) } else { Role::Follower },
            holder: None,
            queue: VecDeque::new(),
            lock: None,
            seq: 0,
            acks: None,
            holder_inc: 0,
            incs: vec![0; cfg.n as usize],
            answered: BTreeSet::new(),
            newest: None,
        }
    }

    fn on_start(&mut self, out: &mut Out<Msg, Timer>) {
        if self.cfg.incarnation > 0 {
            // A restarted node knows nothing: it asks by holding an election.
            self.start_election(out);
        } else if self.is_coordinator() {
            out.set_timer(Timer::Heartbeat, HEARTBEAT);
        }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, Timer>) {
        self.app = App::Waiting;
        match (&self.role, self.coordinator) {
            (Role::Coordinator(_), _) => self.enqueue(self.me(), out),
            (Role::Follower, Some(c)) => {
                out.send(c, Msg::Request { term: self.term, inc: self.cfg.incarnation });
                self.watch(out);
            }
            // Electing: the STATE answer to the winner will carry the request.
            _ => {}
        }
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, Timer>) {
        match msg {
            Msg::Request { term, .. }
            | Msg::Release { term }
            | Msg::Grant { term, .. }
            | Msg::Heartbeat { term } => self.note(term),
            Msg::Coordinator { term } | Msg::State { term, .. } | Msg::Stale { term } => self.note(term),
            Msg::Lock { lock } => self.note(lock.term),
            Msg::Ack { term, .. } => self.note(term),
            Msg::Election | Msg::Answer => {}
        }
        match msg {
            Msg::Request { term, inc } if self.is_coordinator() && term == self.term => {
                self.heard_inc(from, inc);
                self.enqueue(from, out)
            }
            Msg::Release { term }
                if self.is_coordinator() && term == self.term && self.holder == Some(from) =>
            {
                self.holder = None;
                self.grant_next(out);
            }
            Msg::Grant { term, inc }
                if self.is_my_coordinator(from, term)
                    && self.app == App::Waiting
                    && inc == self.cfg.incarnation =>
            {
                self.app = App::Inside;
                out.enter_cs();
            }
            Msg::Heartbeat { term } if self.is_my_coordinator(from, term) => self.watch(out),
            Msg::Election if from < self.me() => {
                out.send(from, Msg::Answer);
                match self.role {
                    Role::Coordinator(_) => out.send(from, Msg::Coordinator { term: self.term }),
                    Role::Follower => self.start_election(out),
                    Role::Electing(_) | Role::AwaitCoordinator => {}
                }
            }
            Msg::Answer if matches!(self.role, Role::Electing(_)) => {
                self.role = Role::AwaitCoordinator;
                out.set_timer(Timer::AwaitCoordinator, COORDINATOR_TIMEOUT);
            }
            Msg::Coordinator { term } => self.on_coordinator(from, term, out),
            Msg::State { term, inside, waiting, inc, lock } if self.is_coordinator() && term == self.term => {
                self.heard_inc(from, inc);
                if self.recovering() {
                    self.answered.insert(from);
                    self.newest = self.newest.max(lock);
                }
                if inside && self.holder.is_none() {
                    self.holder = Some(from);
                    self.holder_inc = inc;
                }
                if waiting && self.holder != Some(from) && !self.queue.contains(&from) {
                    self.queue.push_back(from);
                }
                if let Role::Coordinator(Some(missing)) = &mut self.role {
                    missing.remove(&from);
                }
                self.maybe_recovered(out);
                self.grant_next(out);
            }
            // Someone follows a newer term than the one we declared or coordinate: stop
            // granting and hold a new election (which we win above it if we are the
            // highest live node).
            Msg::Stale { term } if term > self.term && self.is_coordinator() => self.start_election(out),
            // Majority rule: acknowledge a grant of the term we follow; a coordinator of
            // an older term learns it is one.
            Msg::Lock { lock } if self.is_my_coordinator(from, lock.term) => {
                self.lock = self.lock.max(Some(lock));
                out.send(from, Msg::Ack { term: lock.term, seq: lock.seq });
            }
            Msg::Lock { lock } if lock.term < self.term => out.send(from, Msg::Stale { term: self.term }),
            Msg::Ack { term, seq } if self.is_coordinator() && term == self.term && seq == self.seq => {
                if let Some(acks) = &mut self.acks {
                    acks.insert(from);
                }
                self.maybe_grant(out);
            }
            // Stale terms, messages for a coordinator we are not, unasked GRANTs.
            _ => {}
        }
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, Timer>) {
        self.app = App::Idle;
        if self.is_coordinator() {
            if self.holder == Some(self.me()) {
                self.holder = None;
            }
            self.grant_next(out);
        } else if let Some(c) = self.coordinator.filter(|&c| c != self.me()) {
            out.send(c, Msg::Release { term: self.term });
        }
    }

    fn on_timer(&mut self, timer: Timer, out: &mut Out<Msg, Timer>) {
        match timer {
            Timer::Heartbeat if self.is_coordinator() => {
                if self.recovering() || self.holder.is_some() || !self.queue.is_empty() {
                    for p in self.cfg.others().filter(|p| !self.down.contains(p)) {
                        out.send(p, Msg::Heartbeat { term: self.term });
                    }
                }
                out.set_timer(Timer::Heartbeat, HEARTBEAT);
            }
            // Each timer means something only in the role it was set for; the host fires
            // only its latest setting, which is what a generation tag used to check.
            Timer::Suspect if self.app == App::Waiting && self.role == Role::Follower => {
                self.start_election(out)
            }
            Timer::Election if matches!(self.role, Role::Electing(_)) => self.declare(out),
            Timer::AwaitCoordinator if self.role == Role::AwaitCoordinator => self.start_election(out),
            _ => {}
        }
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut Out<Msg, Timer>) {
        self.down.insert(peer);
        let me = self.me();
        match &mut self.role {
            Role::Coordinator(missing) => {
                if let Some(m) = missing {
                    m.remove(&peer);
                }
                self.queue.retain(|&p| p != peer);
                // Majority rule: a report of a death proves nothing; a holder not yet
                // granted (its LOCK still gathering ACKs) can be passed over, though.
                if self.holder == Some(peer) && (!self.cfg.majority || self.acks.is_some()) {
                    self.holder = None;
                    self.acks = None;
                }
                self.maybe_recovered(out);
                self.grant_next(out);
            }
            Role::Electing(higher) => {
                higher.remove(&peer);
                if higher.is_empty() {
                    self.declare(out);
                }
            }
            Role::AwaitCoordinator if peer > me => self.start_election(out),
            Role::Follower if self.coordinator == Some(peer) => self.start_election(out),
            _ => {}
        }
    }

    fn on_peer_up(&mut self, peer: PeerId, out: &mut Out<Msg, Timer>) {
        // The fresh node holds an election itself; a lower one reaches us with ELECTION
        // (and we re-announce), a higher one takes over.
        self.down.remove(&peer);
        if self.is_coordinator() {
            // It may be back from a pause or from the other side of a partition, not
            // restarted, and still follow (or be) an older coordinator that waits for
            // it: tell it the term. (Majority rule: it may hold the last grant, or be
            // part of the majority we wait for.)
            out.send(peer, Msg::Coordinator { term: self.term });
            if let (Some(_), Some(lock)) = (&self.acks, self.lock) {
                out.send(peer, Msg::Lock { lock }); // Its ACK may be the one missing.
            }
        }
    }

    /// The check's counter bound: the highest epoch seen (every election that wins
    /// raises it, so a model with false suspicions grows without end).
    fn counter(&self) -> u64 {
        self.max_epoch
    }

    fn pending(&self) -> String {
        let list = |s: &BTreeSet<PeerId>| s.iter().map(PeerId::to_string).collect::<Vec<_>>().join(", ");
        match &self.role {
            Role::Electing(higher) => format!("electing: waiting for ANSWER from {}", list(higher)),
            Role::AwaitCoordinator => "electing: answered, waiting for COORDINATOR".into(),
            Role::Coordinator(Some(missing)) if !missing.is_empty() => {
                format!("new coordinator (term {}) waiting for STATE from {}", self.term, list(missing))
            }
            Role::Coordinator(Some(_)) => match self.newest.map(|l| l.holder) {
                Some(h) if self.answered.len() as u32 + 1 >= majority(self.cfg.n) => {
                    format!("new coordinator (term {}) waiting for STATE from the last holder {h}", self.term)
                }
                _ => format!(
                    "new coordinator (term {}) waiting for STATE from a majority ({} of {})",
                    self.term,
                    self.answered.len() + 1,
                    majority(self.cfg.n)
                ),
            },
            Role::Coordinator(None) if self.acks.is_some() => format!(
                "coordinator (term {}) waiting for a majority to ACK LOCK {} ({} of {})",
                self.term,
                self.seq,
                self.acks.as_ref().map_or(0, BTreeSet::len),
                majority(self.cfg.n)
            ),
            Role::Coordinator(None) if self.app == App::Waiting => match self.holder {
                Some(h) => format!("coordinator (term {}) waiting for RELEASE from {h}", self.term),
                None => format!("coordinator (term {}) waiting", self.term),
            },
            Role::Follower if self.app == App::Waiting => match self.coordinator {
                Some(c) => format!("waiting for GRANT from {c} (term {})", self.term),
                None => "waiting for a coordinator".into(),
            },
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::{deliver, done, down, fire, start, up, want};
    use crate::script::{nodes, send, Script};
    use crate::sim::{sweep, Sim};

    type A = Action<Msg, Timer>;

    fn sends(acts: &[A]) -> Vec<(u32, Msg)> {
        acts.iter()
            .filter_map(|a| match a {
                Action::Send { to, msg } => Some((to.0, msg.clone())),
                _ => None,
            })
            .collect()
    }

    const T0: Term = Term { epoch: 0, id: 2 };

    #[test]
    fn three_messages_for_an_ordinary_entry() {
        let mut w = nodes::<CentralizedBully>(3);
        let a = want(&mut w, 0);
        assert_eq!(a[0], send(2, Msg::Request { term: T0, inc: 0 }));
        assert!(matches!(a[1], Action::SetTimer { timer: Timer::Suspect, after: SUSPECT_AFTER }));
        assert_eq!(
            deliver(&mut w, 0, 2, Msg::Request { term: T0, inc: 0 }),
            [send(0, Msg::Grant { term: T0, inc: 0 })]
        );
        assert_eq!(deliver(&mut w, 2, 0, Msg::Grant { term: T0, inc: 0 }), [Action::enter()]);
        assert_eq!(done(&mut w, 0), [send(2, Msg::Release { term: T0 })]);
        assert!(deliver(&mut w, 0, 2, Msg::Release { term: T0 }).is_empty());
        assert_eq!(w[2].holder, None);
        // The coordinator's own entry costs nothing.
        assert_eq!(want(&mut w, 2), [Action::enter()]);
        assert!(done(&mut w, 2).is_empty());
    }

    #[test]
    fn a_dead_coordinator_is_replaced_and_a_waiting_node_is_granted() {
        let mut w = nodes::<CentralizedBully>(3);
        want(&mut w, 0);
        deliver(&mut w, 0, 2, Msg::Request { term: T0, inc: 0 }); // w2 grants w0 ...
        want(&mut w, 1);
        assert_eq!(w[1].pending(), "waiting for GRANT from w2 (term 0.2)");
        // ... and dies before the GRANT or w1's REQUEST are handled. The GRANT was lost.
        // w1 has nobody higher alive: it wins at once with epoch 1 and asks for states.
        let t1 = Term { epoch: 1, id: 1 };
        assert_eq!(sends(&down(&mut w, 1, 2)), [(0, Msg::Coordinator { term: t1 })]);
        assert_eq!(w[1].term, t1);
        // The check's counter bound reads the epoch, which every win raises.
        assert_eq!((Algorithm::counter(&w[1]), Algorithm::counter(&w[0])), (1, 0));
        assert_eq!(w[1].pending(), "new coordinator (term 1.1) waiting for STATE from w0");
        // w0 hears of the death, elects: ELECTION to w1 (w2 is down).
        let a = down(&mut w, 0, 2);
        assert_eq!(sends(&a), [(1, Msg::Election)]);
        assert_eq!(w[0].pending(), "electing: waiting for ANSWER from w1");
        let a = deliver(&mut w, 0, 1, Msg::Election);
        assert_eq!(sends(&a), [(0, Msg::Answer), (0, Msg::Coordinator { term: t1 })]);
        deliver(&mut w, 1, 0, Msg::Answer);
        assert_eq!(w[0].pending(), "electing: answered, waiting for COORDINATOR");
        // w0 accepts the term and says it waits: that is its request.
        let a = deliver(&mut w, 1, 0, Msg::Coordinator { term: t1 });
        assert_eq!(
            sends(&a),
            [(1, Msg::State { term: t1, inside: false, waiting: true, inc: 0, lock: None })]
        );
        // The first COORDINATOR (from the broadcast) is answered again: harmless.
        // w1 heard from everyone alive: it queued itself first, then w0.
        let a =
            deliver(&mut w, 0, 1, Msg::State { term: t1, inside: false, waiting: true, inc: 0, lock: None });
        assert_eq!(a, [Action::enter()]);
        let a = done(&mut w, 1);
        assert_eq!(a, [send(0, Msg::Grant { term: t1, inc: 0 })]);
        assert_eq!(deliver(&mut w, 1, 0, Msg::Grant { term: t1, inc: 0 }), [Action::enter()]);
        assert_eq!(done(&mut w, 0), [send(1, Msg::Release { term: t1 })]);
    }

    #[test]
    fn a_holder_keeps_the_section_and_the_new_coordinator_queues_others_behind_it() {
        let mut w = nodes::<CentralizedBully>(4);
        want(&mut w, 0);
        deliver(&mut w, 0, 3, Msg::Request { term: Term { epoch: 0, id: 3 }, inc: 0 });
        deliver(&mut w, 3, 0, Msg::Grant { term: Term { epoch: 0, id: 3 }, inc: 0 });
        want(&mut w, 1);
        // w3 dies; w2 is the highest left and declares.
        let a = down(&mut w, 2, 3);
        let t1 = Term { epoch: 1, id: 2 };
        assert_eq!(sends(&a), [(0, Msg::Coordinator { term: t1 }), (1, Msg::Coordinator { term: t1 })]);
        // w1 (waiting) answers first, then w0 (inside).
        let a = deliver(&mut w, 2, 1, Msg::Coordinator { term: t1 });
        assert_eq!(
            sends(&a),
            [(2, Msg::State { term: t1, inside: false, waiting: true, inc: 0, lock: None })]
        );
        assert!(deliver(
            &mut w,
            1,
            2,
            Msg::State { term: t1, inside: false, waiting: true, inc: 0, lock: None }
        )
        .is_empty());
        let a = deliver(&mut w, 2, 0, Msg::Coordinator { term: t1 });
        assert_eq!(
            sends(&a),
            [(2, Msg::State { term: t1, inside: true, waiting: false, inc: 0, lock: None })]
        );
        let a =
            deliver(&mut w, 0, 2, Msg::State { term: t1, inside: true, waiting: false, inc: 0, lock: None });
        assert!(a.is_empty(), "w0 still holds the section: nothing is granted");
        assert_eq!(w[2].holder, Some(PeerId(0)));
        // w2 wants in too: behind w1.
        assert!(want(&mut w, 2).is_empty());
        assert_eq!(done(&mut w, 0), [send(2, Msg::Release { term: t1 })]);
        let a = deliver(&mut w, 0, 2, Msg::Release { term: t1 });
        assert_eq!(a, [send(1, Msg::Grant { term: t1, inc: 0 })]);
    }

    #[test]
    fn a_grant_from_an_old_term_is_ignored() {
        let mut w = nodes::<CentralizedBully>(3);
        want(&mut w, 0);
        let t1 = Term { epoch: 1, id: 1 };
        // w0 has moved on to w1's term (w2 was suspected) ...
        deliver(&mut w, 1, 0, Msg::Coordinator { term: t1 });
        // ... when the old coordinator, waking up, grants it: ignored.
        assert!(deliver(&mut w, 2, 0, Msg::Grant { term: T0, inc: 0 }).is_empty());
        assert_eq!(w[0].app, App::Waiting);
        // The old coordinator, still unaware, may let itself in (w1 grants nothing before
        // hearing from it); told of the newer term it steps down, says it is inside, and,
        // being higher, bullies its way back with an election.
        assert_eq!(want(&mut w, 2), [Action::enter()]);
        let a = deliver(&mut w, 1, 2, Msg::Coordinator { term: t1 });
        assert_eq!(
            sends(&a)[0],
            (1, Msg::State { term: t1, inside: true, waiting: false, inc: 0, lock: None })
        );
        assert!(matches!(w[2].role, Role::Coordinator(Some(_))), "w2 declared a newer term");
        assert!(w[2].term > t1);
        // A COORDINATOR of a term older than ours gets STALE.
        assert_eq!(deliver(&mut w, 1, 0, Msg::Coordinator { term: T0 }), [send(1, Msg::Stale { term: t1 })]);
    }

    #[test]
    fn a_restarted_node_holds_an_election_instead_of_coordinating() {
        let mut cfg = Config::new(2, 3);
        cfg.incarnation = 1;
        let mut w2 = CentralizedBully::new(&cfg);
        let mut o = Out::new(Duration::ZERO);
        w2.on_start(&mut o);
        // Nobody is higher: it declares, but grants nothing before hearing everyone.
        assert_eq!(
            sends(o.actions()),
            [
                (0, Msg::Coordinator { term: Term { epoch: 1, id: 2 } }),
                (1, Msg::Coordinator { term: Term { epoch: 1, id: 2 } })
            ]
        );
        let mut o = Out::new(Duration::ZERO);
        w2.on_want_cs(&mut o);
        assert!(!o.actions().contains(&Action::enter()), "no entry before the states are in");
        // A follower that knows a newer term answers STALE; w2 declares above it.
        let mut o = Out::new(Duration::ZERO);
        w2.on_message(PeerId(0), Msg::Stale { term: Term { epoch: 4, id: 1 } }, &mut o);
        assert_eq!(w2.term, Term { epoch: 5, id: 2 });
        // A restarted lower node asks the higher ones first.
        let mut cfg = Config::new(0, 3);
        cfg.incarnation = 1;
        let mut w0 = CentralizedBully::new(&cfg);
        let mut o = Out::new(Duration::ZERO);
        w0.on_start(&mut o);
        assert_eq!(sends(o.actions()), [(1, Msg::Election), (2, Msg::Election)]);
        assert!(!w0.is_coordinator());
        // It may not ask for the section until it knows the coordinator.
        let mut o = Out::new(Duration::ZERO);
        w0.on_want_cs(&mut o);
        assert!(o.actions().is_empty());
    }

    #[test]
    fn a_silent_coordinator_is_suspected() {
        let mut w = nodes::<CentralizedBully>(3);
        want(&mut w, 0);
        // A HEARTBEAT resets the suspicion (the host drops the earlier setting's firing).
        let a = deliver(&mut w, 2, 0, Msg::Heartbeat { term: T0 });
        assert_eq!(a, [Action::SetTimer { timer: Timer::Suspect, after: SUSPECT_AFTER }]);
        let a = fire(&mut w, 0, Timer::Suspect);
        assert_eq!(sends(&a), [(1, Msg::Election), (2, Msg::Election)]);
        // Once granted, the suspicion that fires means nothing.
        let mut w = nodes::<CentralizedBully>(3);
        want(&mut w, 0);
        deliver(&mut w, 2, 0, Msg::Grant { term: T0, inc: 0 });
        assert!(fire(&mut w, 0, Timer::Suspect).is_empty());
        // Nor do an election's timers once the role they were set for is over.
        let mut w = nodes::<CentralizedBully>(3);
        want(&mut w, 0);
        fire(&mut w, 0, Timer::Suspect);
        deliver(&mut w, 1, 0, Msg::Answer);
        assert!(fire(&mut w, 0, Timer::Election).is_empty(), "answered: no longer electing");
        deliver(&mut w, 2, 0, Msg::Coordinator { term: T0 });
        assert!(fire(&mut w, 0, Timer::AwaitCoordinator).is_empty(), "following again");
    }

    #[test]
    fn heartbeats_only_while_someone_depends_on_the_coordinator() {
        let mut w = nodes::<CentralizedBully>(3);
        let a = fire(&mut w, 2, Timer::Heartbeat);
        assert_eq!(sends(&a), []);
        deliver(&mut w, 0, 2, Msg::Request { term: T0, inc: 0 });
        let a = fire(&mut w, 2, Timer::Heartbeat);
        assert_eq!(sends(&a), [(0, Msg::Heartbeat { term: T0 }), (1, Msg::Heartbeat { term: T0 })]);
    }

    /// Nodes with the majority rule on.
    fn majority_nodes(n: u32) -> Script<CentralizedBully> {
        Script::with_configs((0..n).map(|i| Config { majority: true, ..Config::new(i, n) }).collect())
    }

    /// Deliver every message in `acts` sent by `from`, breadth first, except to nodes in
    /// `cut` (a partition: lost); returns what was delivered.
    fn flood(w: &mut Script<CentralizedBully>, from: u32, acts: Vec<A>, cut: &[u32]) -> Vec<(u32, u32, Msg)> {
        let mut queue: VecDeque<(u32, u32, Msg)> =
            sends(&acts).into_iter().map(|(to, m)| (from, to, m)).collect();
        let mut seen = Vec::new();
        while let Some((f, to, m)) = queue.pop_front() {
            if cut.contains(&to) || cut.contains(&f) {
                continue;
            }
            seen.push((f, to, m.clone()));
            let a = deliver(w, f, to, m);
            queue.extend(sends(&a).into_iter().map(|(t, m)| (to, t, m)));
        }
        seen
    }

    /// An ordinary entry under the majority rule: the coordinator's LOCK must be
    /// acknowledged by a majority (itself and one more of three) before the GRANT.
    #[test]
    fn majority_rule_grants_after_a_majority_acknowledged_the_lock() {
        let mut w = majority_nodes(3);
        let a = want(&mut w, 0);
        let lock = Lock { term: T0, seq: 1, holder: PeerId(0), inc: 0 };
        assert_eq!(
            sends(&deliver(&mut w, 0, 2, Msg::Request { term: T0, inc: 0 })),
            [(0, Msg::Lock { lock }), (1, Msg::Lock { lock })]
        );
        drop(a);
        assert_eq!(w[2].pending(), "coordinator (term 0.2) waiting for a majority to ACK LOCK 1 (1 of 2)");
        assert_eq!(deliver(&mut w, 2, 1, Msg::Lock { lock }), [send(2, Msg::Ack { term: T0, seq: 1 })]);
        assert_eq!(
            deliver(&mut w, 1, 2, Msg::Ack { term: T0, seq: 1 }),
            [send(0, Msg::Grant { term: T0, inc: 0 })]
        );
        // The holder's own late ACK changes nothing.
        assert_eq!(deliver(&mut w, 2, 0, Msg::Lock { lock }), [send(2, Msg::Ack { term: T0, seq: 1 })]);
        assert!(deliver(&mut w, 0, 2, Msg::Ack { term: T0, seq: 1 }).is_empty());
        assert_eq!(w[1].lock, Some(lock));
    }

    /// The notes' split brain, with a partition {4, 0} | {1, 2, 3} that the detector
    /// reports as deaths on both sides. w0 holds the last grant when it falls. Without
    /// the rule the majority's new coordinator grants w1 at once, while w0 is inside, and
    /// the old coordinator grants w0 again; with it, the minority cannot grant, and the
    /// majority waits for w0 itself, which answers once the partition heals.
    #[test]
    fn majority_rule_stops_the_minority_and_waits_for_the_last_holder() {
        for rule in [false, true] {
            let mut w = if rule { majority_nodes(5) } else { nodes::<CentralizedBully>(5) };
            let t0 = Term { epoch: 0, id: 4 };
            let a = want(&mut w, 0);
            flood(&mut w, 0, a, &[]);
            assert_eq!(w[0].app, App::Inside);
            // The partition. Each side takes the other for dead.
            for (i, p) in [(4, 1), (4, 2), (4, 3), (0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (1, 0), (2, 0)] {
                let a = down(&mut w, i, p);
                flood(&mut w, i, a, &[]);
            }
            let a = down(&mut w, 3, 0);
            flood(&mut w, 3, a, &[0, 4]);
            let a = down(&mut w, 3, 4); // w3 is the highest left: it declares.
            flood(&mut w, 3, a, &[0, 4]);
            let t1 = w[3].term;
            assert!(t1 > t0 && w[3].is_coordinator());
            let a = want(&mut w, 1);
            let majority_side = flood(&mut w, 1, a, &[0, 4]);
            let granted_w1 =
                majority_side.iter().any(|(_, to, m)| *to == 1 && matches!(m, Msg::Grant { .. }));
            // The minority: w0 leaves and asks again of its coordinator w4.
            let a = done(&mut w, 0);
            flood(&mut w, 0, a, &[1, 2, 3]);
            let a = want(&mut w, 0);
            let minority = flood(&mut w, 0, a, &[1, 2, 3]);
            let granted_w0 = minority.iter().any(|(_, to, m)| *to == 0 && matches!(m, Msg::Grant { .. }));
            if !rule {
                assert!(
                    granted_w1 && granted_w0,
                    "without the rule both sides grant: {majority_side:?} {minority:?}"
                );
                continue;
            }
            assert!(!granted_w1 && !granted_w0, "{majority_side:?} {minority:?}");
            assert_eq!(
                w[3].pending(),
                "new coordinator (term 1.3) waiting for STATE from the last holder w0"
            );
            assert_eq!(
                w[4].pending(),
                "coordinator (term 0.4) waiting for a majority to ACK LOCK 2 (2 of 3)"
            );
            // The heal: w3 hears w0 and w4 again and asks them; w0 follows the newer term,
            // w4 steps down and, being the highest, takes over with a term above it.
            for (i, p) in [
                (0, 3),
                (3, 0),
                (3, 4),
                (4, 3),
                (0, 1),
                (0, 2),
                (1, 0),
                (2, 0),
                (1, 4),
                (2, 4),
                (4, 1),
                (4, 2),
            ] {
                let a = up(&mut w, i, p);
                flood(&mut w, i, a, &[]);
            }
            let leader = w.iter().position(|n| n.is_coordinator() && !n.recovering()).expect("a coordinator");
            assert_eq!(leader, 4);
            let inside: Vec<usize> = (0..5).filter(|&i| w[i].app == App::Inside).collect();
            assert!(inside.len() <= 1, "{inside:?}");
        }
    }

    /// Under heartbeats a node can die and restart quicker than the suspicion time, and
    /// nobody hears it was down. The coordinator's GRANT for the old life's queued
    /// request must not let the new life in, or a later STATE from the new life (which
    /// ends the old life's grant) would let the next one in beside it.
    #[test]
    fn a_grant_for_an_earlier_life_does_not_let_the_new_one_in() {
        let mut w = majority_nodes(3);
        let t0 = T0;
        let a = want(&mut w, 1);
        flood(&mut w, 1, a, &[]); // w1 holds
        want(&mut w, 0);
        deliver(&mut w, 0, 2, Msg::Request { term: t0, inc: 0 }); // queued behind w1
                                                                  // w0 restarts unnoticed, wants in again, and its election reaches w2, which
                                                                  // answers and tells it the term; w0's STATE (its new life, waiting) is slow.
        w.restart(0, Config { majority: true, incarnation: 1, ..Config::new(0, 3) });
        start(&mut w, 0);
        want(&mut w, 0);
        for m in sends(&deliver(&mut w, 0, 2, Msg::Election)).into_iter().map(|(_, m)| m) {
            deliver(&mut w, 2, 0, m);
        }
        assert_eq!(w[0].coordinator, Some(PeerId(2)));
        // w1 leaves: w2 asks for ACKs of a LOCK for w0's old life, and grants it.
        let a = done(&mut w, 1);
        let seen = flood(&mut w, 1, a, &[]);
        let grant = seen.iter().find(|(_, to, m)| *to == 0 && matches!(m, Msg::Grant { .. }));
        assert_eq!(grant.map(|g| g.2.clone()), Some(Msg::Grant { term: t0, inc: 0 }), "{seen:?}");
        assert_ne!(w[0].app, App::Inside, "the old life's grant does not let the new one in");
        // The STATE arrives: it ends the old life's grant, and queues the new life,
        // which is granted in its own right.
        let a =
            deliver(&mut w, 0, 2, Msg::State { term: t0, inside: false, waiting: true, inc: 1, lock: None });
        let seen = flood(&mut w, 2, a, &[]);
        assert!(seen.iter().any(|(_, to, m)| *to == 0 && *m == Msg::Grant { term: t0, inc: 1 }), "{seen:?}");
        assert_eq!(w[0].app, App::Inside);
        assert_ne!(w[1].app, App::Inside);
    }

    #[test]
    fn survives_crashes_of_any_node_coordinator_included() {
        for n in [2, 3, 5] {
            let mut crashes = 0;
            let mut elections = 0;
            for seed in 0..150 {
                let mut sim = Sim::<CentralizedBully>::new(n, seed).stale_timers(true).crashes(3, |_| true);
                let r = sim.run(4).unwrap_or_else(|e| panic!("{e}"));
                assert!(r.entries >= u64::from(n) * 4, "every quota met, whatever a crash cut short");
                crashes += r.crashes;
                elections += r.count("COORDINATOR");
            }
            assert!(crashes >= 75, "n = {n}: only {crashes} crashes in 150 runs");
            assert!(elections > 0, "n = {n}: no election in 150 runs");
        }
    }

    /// The majority rule holds through the simulator's crashes too: every crashed node
    /// restarts, and a restarted holder's new incarnation ends its old grant.
    #[test]
    fn majority_rule_survives_crashes_of_any_node() {
        for n in [2, 3, 5] {
            let mut crashes = 0;
            for seed in 0..150 {
                let sim = Sim::<CentralizedBully>::with_config(n, seed, |c| c.majority = true);
                let r = sim.stale_timers(true).crashes(3, |_| true).run(4).unwrap_or_else(|e| panic!("{e}"));
                assert!(r.entries >= u64::from(n) * 4);
                crashes += r.crashes;
                if r.crashes == 0 && n > 1 {
                    // 2N+1 for an ordinary entry, 2(N-1) for the coordinator's own.
                    let ordinary = r.entries - r.entries_by_node[n as usize - 1];
                    assert!(r.count("LOCK") >= r.entries * u64::from(n - 1), "seed {seed} n {n}");
                    assert!(r.total_messages() >= ordinary * (2 * u64::from(n) + 1));
                }
            }
            assert!(crashes >= 75, "n = {n}: only {crashes} crashes");
        }
    }

    #[test]
    fn without_faults_it_costs_what_centralized_costs_plus_control_traffic() {
        sweep::<CentralizedBully>(
            &[1, 2, 3, 5],
            0..150,
            3,
            |_| {},
            |r, _| {
                let coordinator = r.n as usize - 1;
                let ordinary = r.entries - r.entries_by_node[coordinator];
                assert_eq!(r.entries, 3 * u64::from(r.n));
                assert!(r.total_messages() >= 3 * ordinary, "seed {} n {}", r.seed, r.n);
            },
        );
    }
}
