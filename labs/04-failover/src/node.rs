//! Your centralized coordinator that survives its own death (the notes' manager with a
//! FIFO queue, `003_…`, and the bully election, `000_…`/`002_…`). This is the only file
//! you edit.
//!
//! Normal operation and the bully election are given: the coordinator (the highest live
//! id) queues REQUESTs and hands out GRANTs, a node sends RELEASE when it leaves, and a
//! node that holds an election sends ELECTION to every higher id it does not know to be
//! dead and wins if none answers. Every REQUEST, GRANT and RELEASE carries the *term* of
//! the coordinator it is meant for, so a GRANT from a deposed coordinator is ignored.
//!
//! What is left to you is the failover, five handlers marked `YOUR CODE HERE`:
//! noticing that the coordinator is gone (`on_node_down`, `on_silence`), what the
//! winner does before it grants anything (`begin_recovery`, `on_state`), and what every
//! node tells it so that no request is lost (`on_coordinator`). The sections below are:
//! messages and timers (given), state, construction, the application's calls (given),
//! the event dispatch (given), normal operation and the election (given), the failover
//! (yours). `README.md` beside this file walks you through them.

// The skeleton does not use its arguments and some helpers yet; delete this line when done.
#![allow(unused_variables, dead_code)]

use std::collections::{BTreeSet, VecDeque};

use mutexlab::algorithm::{Algorithm, Config, Message, Out as MutexOut, PeerId};
use mutexlab::algos::centralized_bully::{
    Term, COORDINATOR_TIMEOUT, ELECTION_TIMEOUT, HEARTBEAT, SUSPECT_AFTER,
};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------
// Messages and timers (given: the grader's scripted traces build these, so keep them)
// ---------------------------------------------------------------------------------------

/// What nodes send each other. `Term` is `{ epoch, id }`, compared epoch first, so two
/// coordinators never share one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Node → coordinator of `term`: I want the section.
    Request { term: Term },
    /// Coordinator → node: the section is yours.
    Grant { term: Term },
    /// Node → coordinator: I am out.
    Release { term: Term },
    /// Coordinator → all: I am alive (sent only while someone depends on it).
    Heartbeat { term: Term },
    /// Candidate → every higher id: I am holding an election.
    Election,
    /// Higher node → candidate: I am alive; leave it to me.
    Answer,
    /// Winner → all: I coordinate `term`; tell me your state.
    Coordinator { term: Term },
    /// Node → the coordinator of `term`: what I was doing when I accepted it.
    State { term: Term, inside: bool, waiting: bool },
    /// Node → a candidate whose term is older than the one I follow, `term`.
    Stale { term: Term },
}

impl Message for Msg {
    fn kind(&self) -> &str {
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
        }
    }
}

/// Timers. Setting one that is already set resets it: the runtime drops the firing of
/// the earlier setting, so only the latest fires (`Suspect` set again on each HEARTBEAT
/// is a silence timer that starts over). Its handler still checks that the node is in
/// the role the timer was set for, which may have ended since.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// Coordinator: time for a HEARTBEAT round (every `HEARTBEAT`, 50 ms).
    Heartbeat,
    /// Waiting follower: `SUSPECT_AFTER` (200 ms) without a word from its coordinator.
    Suspect,
    /// Candidate: no ANSWER within `ELECTION_TIMEOUT`.
    Election,
    /// Candidate that got an ANSWER: no COORDINATOR within `COORDINATOR_TIMEOUT`.
    AwaitCoordinator,
}

type Out = MutexOut<Msg, Timer>;

// ---------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------

/// Where this node's application is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum App {
    Idle,
    Waiting,
    Inside,
}

/// This node's part in the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Follows `self.coordinator` (if known) in `self.term`.
    Follower,
    /// Sent ELECTION to these higher ids and waits for an ANSWER.
    Electing(BTreeSet<PeerId>),
    /// Got an ANSWER; waits for the winner's COORDINATOR.
    AwaitCoordinator,
    /// Won `self.term`, and still waits for the STATE of these nodes: grants nothing yet.
    Recovering(BTreeSet<PeerId>),
    /// Coordinates `self.term`: queues and grants.
    Coordinator,
}

/// One node. `cfg.id` is this node, `cfg.n` the number of nodes, `cfg.incarnation` 0 in
/// its first life and more after each restart. Methods: the handlers the library calls
/// (`impl Algorithm`), then in `impl Node` the given helpers (`is_coordinator`,
/// `start_election`, `declare`, `enqueue`, `grant_next`, `watch`) and your failover
/// handlers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    cfg: Config,
    /// The newest term this node has accepted.
    term: Term,
    /// That term's coordinator, once known.
    coordinator: Option<PeerId>,
    /// The highest epoch seen in any message: a winner's term goes above it.
    max_epoch: u64,
    /// Peers whose channel closed (on one machine, dead), until they come back.
    down: BTreeSet<PeerId>,
    app: App,
    role: Role,
    /// Coordinator only: who holds the section, and who waits, in order.
    holder: Option<PeerId>,
    queue: VecDeque<PeerId>,
    // YOUR CODE HERE (optional): anything more your failover needs.
}

impl Algorithm for Node {
    type Msg = Msg;
    type Timer = Timer;

    // -----------------------------------------------------------------------------------
    // Construction (given)
    // -----------------------------------------------------------------------------------

    /// In its first life every node knows the highest id coordinates, in term `0.N-1`.
    /// A restarted node knows nothing and holds an election from `on_start`.
    fn new(cfg: &Config) -> Self {
        let first_life = cfg.incarnation == 0;
        let highest = cfg.highest();
        Node {
            cfg: cfg.clone(),
            term: Term { epoch: 0, id: if first_life { highest.0 } else { 0 } },
            coordinator: first_life.then_some(highest),
            max_epoch: 0,
            down: BTreeSet::new(),
            app: App::Idle,
            role: if first_life && cfg.id == highest { Role::Coordinator } else { Role::Follower },
            holder: None,
            queue: VecDeque::new(),
        }
    }

    fn on_start(&mut self, out: &mut Out) {
        if self.cfg.incarnation > 0 {
            self.start_election(out);
        } else if self.is_coordinator() {
            out.set_timer(Timer::Heartbeat, HEARTBEAT);
        }
    }

    // -----------------------------------------------------------------------------------
    // The application's calls (given)
    // -----------------------------------------------------------------------------------

    fn on_want_cs(&mut self, out: &mut Out) {
        self.app = App::Waiting;
        match (&self.role, self.coordinator) {
            (Role::Coordinator | Role::Recovering(_), _) => self.enqueue(self.me(), out),
            (Role::Follower, Some(c)) => {
                out.send(c, Msg::Request { term: self.term });
                self.watch(out);
            }
            // In an election: the STATE this node gives the winner will carry the request.
            _ => {}
        }
    }

    fn on_cs_done(&mut self, out: &mut Out) {
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

    // -----------------------------------------------------------------------------------
    // The event dispatch (given)
    // -----------------------------------------------------------------------------------

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out) {
        match &msg {
            Msg::Request { term }
            | Msg::Grant { term }
            | Msg::Release { term }
            | Msg::Heartbeat { term }
            | Msg::Coordinator { term }
            | Msg::State { term, .. }
            | Msg::Stale { term } => self.max_epoch = self.max_epoch.max(term.epoch),
            Msg::Election | Msg::Answer => {}
        }
        match msg {
            // Normal operation: only messages of the term this node coordinates or follows.
            Msg::Request { term } if self.is_coordinator() && term == self.term => self.enqueue(from, out),
            Msg::Release { term }
                if self.is_coordinator() && term == self.term && self.holder == Some(from) =>
            {
                self.holder = None;
                self.grant_next(out);
            }
            Msg::Grant { term } if self.follows(from, term) && self.app == App::Waiting => {
                self.app = App::Inside;
                out.enter_cs();
            }
            Msg::Heartbeat { term } if self.follows(from, term) => self.watch(out),
            // The bully election: a lower node asks; answer, and take over.
            Msg::Election if from < self.me() => {
                out.send(from, Msg::Answer);
                match self.role {
                    // Already in charge: tell the asker so.
                    Role::Coordinator | Role::Recovering(_) => {
                        out.send(from, Msg::Coordinator { term: self.term })
                    }
                    Role::Follower => self.start_election(out),
                    Role::Electing(_) | Role::AwaitCoordinator => {}
                }
            }
            Msg::Answer if matches!(self.role, Role::Electing(_)) => {
                self.role = Role::AwaitCoordinator;
                out.set_timer(Timer::AwaitCoordinator, COORDINATOR_TIMEOUT);
            }
            // Someone follows a newer term than ours: declare again, above it.
            Msg::Stale { term } if term > self.term && self.is_coordinator() => self.start_election(out),
            // The failover (yours).
            Msg::Coordinator { term } => self.on_coordinator(from, term, out),
            Msg::State { term, inside, waiting } if self.is_coordinator() && term == self.term => {
                self.on_state(from, inside, waiting, out)
            }
            // Old terms, and messages for a coordinator this node is not.
            _ => {}
        }
    }

    fn on_timer(&mut self, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Heartbeat if self.is_coordinator() => {
                // Only while someone depends on us: an idle system stays quiet.
                if matches!(self.role, Role::Recovering(_)) || self.holder.is_some() || !self.queue.is_empty()
                {
                    for p in self.live_others() {
                        out.send(p, Msg::Heartbeat { term: self.term });
                    }
                }
                out.set_timer(Timer::Heartbeat, HEARTBEAT);
            }
            Timer::Heartbeat => {}
            Timer::Suspect => self.on_silence(out),
            // Each means something only while the election it was set for still waits.
            Timer::Election if matches!(self.role, Role::Electing(_)) => self.declare(out),
            Timer::AwaitCoordinator if self.role == Role::AwaitCoordinator => self.start_election(out),
            Timer::Election | Timer::AwaitCoordinator => {}
        }
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut Out) {
        self.down.insert(peer);
        let me = self.me();
        match &mut self.role {
            // The election (given): a candidate does not wait for the dead.
            Role::Electing(higher) => {
                higher.remove(&peer);
                if higher.is_empty() {
                    self.declare(out);
                }
            }
            Role::AwaitCoordinator if peer > me => self.start_election(out),
            Role::AwaitCoordinator => {}
            Role::Follower | Role::Recovering(_) | Role::Coordinator => self.on_node_down(peer, out),
        }
    }

    fn on_peer_up(&mut self, peer: PeerId, out: &mut Out) {
        // A restarted node holds an election itself; one back from a pause may still
        // follow an older term, so a coordinator tells it the current one.
        self.down.remove(&peer);
        if self.is_coordinator() {
            out.send(peer, Msg::Coordinator { term: self.term });
        }
    }

    fn pending(&self) -> String {
        let list = |s: &BTreeSet<PeerId>| s.iter().map(PeerId::to_string).collect::<Vec<_>>().join(", ");
        match (&self.role, self.app) {
            (Role::Electing(higher), _) => format!("electing: waiting for ANSWER from {}", list(higher)),
            (Role::AwaitCoordinator, _) => "electing: answered, waiting for COORDINATOR".into(),
            (Role::Recovering(missing), _) => {
                format!("new coordinator (term {}) waiting for STATE from {}", self.term, list(missing))
            }
            (Role::Coordinator, App::Waiting) => match self.holder {
                Some(h) => format!("coordinator (term {}) waiting for RELEASE from {h}", self.term),
                None => format!("coordinator (term {}) waiting", self.term),
            },
            (Role::Follower, App::Waiting) => match self.coordinator {
                Some(c) => format!("waiting for GRANT from {c} (term {})", self.term),
                None => "waiting for a coordinator".into(),
            },
            _ => String::new(),
        }
    }
}

impl Node {
    // -----------------------------------------------------------------------------------
    // Normal operation and the election (given)
    // -----------------------------------------------------------------------------------

    fn me(&self) -> PeerId {
        self.cfg.id
    }

    /// Coordinating `self.term`, whether still recovering or not.
    fn is_coordinator(&self) -> bool {
        matches!(self.role, Role::Coordinator | Role::Recovering(_))
    }

    /// `from` is the coordinator this node follows, and `term` the term it follows.
    fn follows(&self, from: PeerId, term: Term) -> bool {
        term == self.term && self.coordinator == Some(from)
    }

    /// Every other node not known to be down.
    fn live_others(&self) -> Vec<PeerId> {
        self.cfg.others().filter(|p| !self.down.contains(p)).collect()
    }

    /// Hold a bully election: ELECTION to every live higher id, or win at once.
    fn start_election(&mut self, out: &mut Out) {
        out.count("elections", 1);
        if self.is_coordinator() {
            self.role = Role::Follower;
        }
        self.holder = None;
        self.queue.clear();
        let higher: BTreeSet<PeerId> = self.live_others().into_iter().filter(|p| *p > self.me()).collect();
        if higher.is_empty() {
            return self.declare(out);
        }
        for &p in &higher {
            out.send(p, Msg::Election);
        }
        self.role = Role::Electing(higher);
        out.set_timer(Timer::Election, ELECTION_TIMEOUT);
    }

    /// Win: take a term above every epoch seen, then recover (`begin_recovery`).
    fn declare(&mut self, out: &mut Out) {
        out.count("terms", 1);
        self.max_epoch += 1;
        self.term = Term { epoch: self.max_epoch, id: self.me().0 };
        self.coordinator = Some(self.me());
        self.holder = None;
        self.queue.clear();
        out.set_timer(Timer::Heartbeat, HEARTBEAT);
        self.begin_recovery(out);
    }

    /// Coordinator: `who` wants in; queue it once, and grant if the section is free.
    fn enqueue(&mut self, who: PeerId, out: &mut Out) {
        if self.holder != Some(who) && !self.queue.contains(&who) {
            self.queue.push_back(who);
        }
        self.grant_next(out);
    }

    /// Coordinator, not recovering: if nobody holds the section, grant the head of the
    /// queue (to itself, by entering).
    fn grant_next(&mut self, out: &mut Out) {
        if self.role != Role::Coordinator || self.holder.is_some() {
            return;
        }
        let Some(next) = self.queue.pop_front() else { return };
        self.holder = Some(next);
        if next == self.me() {
            self.app = App::Inside;
            out.enter_cs();
        } else {
            out.send(next, Msg::Grant { term: self.term });
        }
    }

    /// A waiting follower (re)starts its suspicion of its coordinator: setting
    /// `Suspect` again resets it, so the earlier setting never fires.
    fn watch(&mut self, out: &mut Out) {
        if self.app == App::Waiting && self.role == Role::Follower && self.coordinator != Some(self.me()) {
            out.set_timer(Timer::Suspect, SUSPECT_AFTER);
        }
    }

    // -----------------------------------------------------------------------------------
    // The failover (yours)
    // -----------------------------------------------------------------------------------

    /// Task 1. `peer`'s channel closed: it is dead (`self.down` already has it). This is
    /// called for a follower, a recovering coordinator and a coordinator; the roles in an
    /// election are handled for you. A follower that has lost its coordinator holds an
    /// election; any other death means nothing to it. A coordinator forgets what the
    /// dead node held or asked for, and grants the section if that freed it; a
    /// recovering one also stops waiting for its STATE (a dead node has nothing to
    /// say), which may complete the recovery.
    fn on_node_down(&mut self, peer: PeerId, out: &mut Out) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_node_down")
    }

    /// Task 1. The suspicion timer fired: nothing reset it for `SUSPECT_AFTER` (the
    /// runtime drops a setting that `watch` reset since). If this node is still a
    /// follower waiting for its GRANT, its coordinator has been silent that long: hold an
    /// election. Otherwise (granted meanwhile, or in an election) it means nothing.
    fn on_silence(&mut self, out: &mut Out) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_silence")
    }

    /// Task 2. This node has just won `self.term` (`declare` did that). Before it grants
    /// anything it must learn what the old coordinator knew, from the nodes themselves:
    /// send COORDINATOR to every live node, and wait (`Role::Recovering`) for the STATE
    /// of each. Its own state counts at once: if it is inside it holds the section; if it
    /// waits it is queued. A node alone has nobody to wait for.
    fn begin_recovery(&mut self, out: &mut Out) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("begin_recovery")
    }

    /// Task 2. `from` answered this coordinator's COORDINATOR with its STATE (the
    /// dispatch checked it is for `self.term`). A node inside holds the section; a
    /// waiting node is queued, its STATE standing for the REQUEST it will not send
    /// again. Once every node waited for has answered, recovery is over: grant. A STATE
    /// may also come after the recovery, from a restarted node that the coordinator
    /// answered with COORDINATOR: queue it and grant all the same, for nothing else will.
    fn on_state(&mut self, from: PeerId, inside: bool, waiting: bool, out: &mut Out) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_state")
    }

    /// Task 3. `from` says it coordinates `term`. An older term than ours gets STALE
    /// with ours. Otherwise follow it: take its term and coordinator (and, if this node
    /// coordinated or was electing, stop), then answer STATE with what the application is
    /// doing, and watch the new coordinator if waiting. Last, the bully: a COORDINATOR
    /// from a lower id means a live higher node should be in charge, so hold an election.
    fn on_coordinator(&mut self, from: PeerId, term: Term, out: &mut Out) {
        // YOUR CODE HERE
        mutexlab::lab::unwritten("on_coordinator")
    }
}
