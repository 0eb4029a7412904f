//! Garcia-Molina's bully election in four phases: the highest live id becomes
//! coordinator, and it does not lead until every node it found alive has agreed, twice.
//!
//! Plain `bully` ends when the winner says so. Garcia-Molina's version is written for a
//! system with known message deadlines, where the coordinator must also hand the group
//! the state it needs to carry on (here: the term and the member list). So the winner
//! first makes sure nobody above it is alive, then gathers the live nodes below it, gets
//! each to agree that it is their coordinator, and only then hands out the new state. If
//! the set of nodes that answers changes on the way, it starts again from the top.
//!
//! # Status
//!
//! Every node has a status ([`Status`]), as in the notes: NORMAL (it follows a leader, or
//! knows none yet), ELECTION (a candidate has told it an election is on: it records that
//! CANDIDATE and waits), REORGANIZATION (the candidate has said it is the coordinator: the
//! node waits for the new state), and DOWN (a restarted incarnation that has not been
//! through an election yet; it always starts one).
//!
//! # Messages
//!
//! Each request carries the number of the sender's election (`election`), and each reply
//! echoes it, so a reply that comes late for an earlier attempt is not counted.
//! - STATUS_POLL { term } / STATUS { status }: phase 1, "is anyone above me alive?"
//!   `term` is that of the leader the asker follows (see *Late polls*).
//! - ELECTION / ELECTION_OK { term }: phase 2, "an election is on and I am the
//!   candidate" / "I am alive; the newest term I have seen is `term`".
//! - COORDINATOR { term } / COORDINATOR_OK: phase 3, "I am your coordinator in `term`" /
//!   "agreed".
//! - NEW_STATE { term, active } / NEW_STATE_OK: phase 4, the recovery information (the
//!   term and ACTIVE, the members) / "installed".
//! - POLL { term } / POLL_STATUS { status, follows }: the coordinator's periodic poll,
//!   counted under kinds of their own so the runtime's statistics keep heartbeat traffic
//!   apart from elections.
//!
//! # What the candidate does, phase by phase
//!
//! The notes send to one node at a time and wait for each; here each phase sends to all
//! of its targets at once and collects replies until every target has answered, is
//! reported down (`PeerDown` counts as "no reply" at once), or the phase's timer,
//! [`answer_timeout`], runs out.
//! 1. STATUS_POLL to every higher id not known to be down. Any STATUS back means a
//!    higher node is alive: this node will not be coordinator and stops. It waits up
//!    to [`handover_timeout`] for that node's ELECTION; if none comes, it starts again.
//!    No reply at all: go on.
//! 2. Status ELECTION, with itself as candidate. ELECTION to every lower id not known to
//!    be down; those that answer form ACTIVE.
//! 3. Take a new term (see *Terms*); status REORGANIZATION. COORDINATOR to every lower id
//!    not known to be down; those that answer form ANSWERS. If ANSWERS differs from
//!    ACTIVE, the group changed under it: start again at phase 1.
//! 4. NEW_STATE to each member of ACTIVE; if the set that answers differs from ACTIVE,
//!    start again at phase 1. Otherwise it has won: status NORMAL, it tells its
//!    application it leads, and starts its poll.
//!
//! # What every node does when asked
//!
//! - STATUS_POLL from a lower id: answer with its status. Beyond the notes, which leave
//!   open who carries on after phase 1 stops: a node that is NORMAL and holds no
//!   election of its own takes the election over and holds its own, as plain bully does;
//!   so the question climbs to the highest live node, which finds nobody above.
//! - ELECTION from a higher id: status ELECTION with the sender as CANDIDATE, stop any
//!   election of its own, answer, and wait up to [`candidate_timeout`] for the COORDINATOR.
//! - COORDINATOR: accepted only in status ELECTION from its CANDIDATE, in that same
//!   election, with a term above the one it follows: status REORGANIZATION, answer, and
//!   wait up to [`candidate_timeout`] for the NEW_STATE.
//! - NEW_STATE: accepted only in REORGANIZATION from that coordinator with that term:
//!   status NORMAL, keep the members, tell the application who leads, answer.
//! - POLL: answer with its status and the term of the leader it follows.
//!
//! A node in ELECTION or REORGANIZATION whose candidate is reported down, or stays silent
//! past [`candidate_timeout`], holds an election itself, so no run hangs on a dead
//! candidate. While it polls upwards it keeps its status, so a candidate that was only
//! slow is still accepted.
//!
//! # The coordinator's poll
//!
//! While it leads (status NORMAL, no election of its own), the coordinator sends POLL to
//! every node not known to be down every [`poll_period`]. It holds a new election when a
//! node outside ACTIVE answers (a node that missed the election, or came back), when a
//! member answers with a status other than NORMAL or following another term, or when a
//! member has not answered one poll by the time the next is due (the poll's timeout is
//! the period). A member reported down counts as one that failed to answer, at once.
//!
//! # When a node holds an election
//!
//! When its application calls `elect`, unless it is already in one (its own, or as
//! someone's ELECTION or REORGANIZATION); when it starts as a restarted incarnation
//! (status DOWN: the notes' recovery); when the leader it follows, or its candidate, is
//! reported down or its candidate goes silent; when it takes a STATUS_POLL over; when a
//! phase it ran failed; and, leading, when its poll finds a change.
//!
//! # Leader events
//!
//! The coordinator reports itself leader at the end of a successful phase 4; each member
//! reports the coordinator when it goes NORMAL on NEW_STATE, which is before the
//! coordinator knows phase 4 succeeded. If phase 4 then fails, the members have named a
//! coordinator in a term it never led in; the next attempt takes a newer term, which they
//! report in turn. A node that follows nobody names nobody.
//!
//! # Terms
//!
//! A term is `epoch·N + id` ([`next_term`], as in `bully`): the candidate takes one at the
//! start of phase 3, one epoch above every term it has seen, including those its ELECTION
//! replies reported, and carries it in COORDINATOR and NEW_STATE. Each restart of the
//! phases takes a new term. The id in the low digits means no term can name two leaders,
//! whatever the failure detector says (a node ignores a COORDINATOR or NEW_STATE whose
//! term does not carry its sender's id), and a node accepts a coordinator only with a
//! term above the one it follows, so its reported terms strictly increase. A restarted
//! node has forgotten every term, but learns the newest from the ELECTION replies before
//! it takes its own.
//!
//! # Late polls
//!
//! Taken literally, the take-over rule makes a node that has already joined the new
//! leader start yet another election for a STATUS_POLL of the same round that reaches it
//! late. A poll carries the term its sender follows: one older than the receiver's says
//! the sender has not yet heard of the receiver's leader, which it is about to (it is a
//! member) or which will find it (its poll). So such a poll is only answered, except by
//! the leader itself when the sender is not a member: then it takes over, to let it in.
//!
//! # Cost, in messages per election
//!
//! With M live nodes and a perfect failure detector, when nobody fails during it. Phases
//! 2, 3 and 4 each cost a request and a reply per live node below the winner: 6(M-1).
//! Phase 1 costs nothing when the highest live node starts (the best case, as when the
//! coordinator has died and the next one notices): 6(M-1) in all. When the lowest
//! starts, it polls the M-1 above; each of them takes over and polls those above it, so
//! the node k places from the bottom sends M-1-k polls: M(M-1)/2 polls, all answered,
//! M(M-1) messages, before the highest runs phases 2-4: (M-1)(M+6) in all. Every node
//! starting at once costs the same. Without a detector, each dead node costs one more
//! message per poll that reaches it from below and two (ELECTION, COORDINATOR) if it is
//! below the winner, plus the timeouts. The poll costs 2(N-1) per period while all are
//! up, and is not part of an election. See [`messages_per_election`].

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::algorithm::{
    Config, Election, ElectionCall, ElectionEvent, Input, Message, Node, NodeInput, NodeOut, PeerId, Timing,
};
use crate::bully::next_term;

/// How long each phase waits for its replies: the notes' "wait with timeout", one
/// message there and back, 2·Tm + Tp for the run's message time Tm and processing time
/// Tp ([`Timing::reply`]; 50 ms by default).
pub fn answer_timeout(timing: &Timing) -> Duration {
    timing.reply()
}

/// How long a node that lost phase 1 waits for the ELECTION of a higher node: that
/// node's own phase 1 (one reply's time) and its ELECTION must fit in it; three replies'
/// time.
pub fn handover_timeout(timing: &Timing) -> Duration {
    timing.reply().saturating_mul(3)
}

/// How long a node in ELECTION or REORGANIZATION waits for its candidate's next message:
/// a phase of the candidate's, or a restart up to its next ELECTION, must fit in it;
/// three replies' time.
pub fn candidate_timeout(timing: &Timing) -> Duration {
    timing.reply().saturating_mul(3)
}

/// How often the coordinator polls everyone; also how long a member has to answer:
/// four replies' time.
pub fn poll_period(timing: &Timing) -> Duration {
    timing.reply().saturating_mul(4)
}

/// The fewest and the most messages one election costs among `live` live nodes, with a
/// perfect failure detector and nobody failing during it: `6(live-1)` and
/// `(live-1)(live+6)` (see the module doc).
pub fn messages_per_election(live: u32) -> (u64, u64) {
    let m = u64::from(live);
    if m <= 1 {
        return (0, 0);
    }
    (6 * (m - 1), (m - 1) * (m + 6))
}

/// A node's status, as the notes name them. STATUS and POLL_STATUS carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Status {
    /// A restarted incarnation that has not been through an election yet.
    Down,
    /// Following a leader, leading, or (before any election) knowing none.
    Normal,
    /// A candidate holds an election and this node takes part.
    Election {
        /// Who holds the election (the notes' CANDIDATE).
        candidate: PeerId,
        /// The number of the candidate's election.
        election: u64,
    },
    /// The coordinator has said it leads; the new state is awaited.
    Reorganization {
        /// Who said it is the coordinator.
        coordinator: PeerId,
        /// The term it said it leads in.
        term: u64,
    },
}

/// Messages of `bully-gm`. `election` is the number of the candidate's election; replies
/// echo it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// STATUS_POLL, phase 1, to a higher id: is anyone above me alive?
    StatusPoll {
        /// The number of the candidate's election; a reply echoes it.
        election: u64,
        /// The term of the leader the sender follows (0 if none): see *Late polls*.
        term: u64,
    },
    /// STATUS, the reply to STATUS_POLL: I am alive.
    Status {
        /// The number of the election asked about, echoed.
        election: u64,
        /// The replier's status.
        status: Status,
    },
    /// ELECTION, phase 2, to a lower id: an election is on; I am the candidate.
    Election {
        /// The number of the candidate's election; a reply echoes it.
        election: u64,
    },
    /// ELECTION_OK, the reply to ELECTION: I take part.
    ElectionOk {
        /// The number of the election asked about, echoed.
        election: u64,
        /// The newest term the replier has seen.
        term: u64,
    },
    /// COORDINATOR, phase 3, to a lower id: I am your coordinator.
    Coordinator {
        /// The number of the candidate's election; a reply echoes it.
        election: u64,
        /// The term the candidate will lead in.
        term: u64,
    },
    /// COORDINATOR_OK, the reply to COORDINATOR: agreed.
    CoordinatorOk {
        /// The number of the election asked about, echoed.
        election: u64,
    },
    /// NEW_STATE, phase 4, to each member: the recovery information.
    NewState {
        /// The number of the candidate's election; a reply echoes it.
        election: u64,
        /// The term the coordinator leads in.
        term: u64,
        /// The members (the notes' ACTIVE): the nodes that answered ELECTION.
        active: BTreeSet<PeerId>,
    },
    /// NEW_STATE_OK, the reply to NEW_STATE: installed.
    NewStateOk {
        /// The number of the election asked about, echoed.
        election: u64,
    },
    /// POLL, the coordinator's periodic poll.
    Poll {
        /// The term the coordinator leads in.
        term: u64,
    },
    /// POLL_STATUS, the reply to POLL.
    PollStatus {
        /// The term of the POLL answered, echoed.
        term: u64,
        /// The replier's status.
        status: Status,
        /// The term of the leader the replier follows (0 if none).
        follows: u64,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::StatusPoll { .. } => "STATUS_POLL",
            Msg::Status { .. } => "STATUS",
            Msg::Election { .. } => "ELECTION",
            Msg::ElectionOk { .. } => "ELECTION_OK",
            Msg::Coordinator { .. } => "COORDINATOR",
            Msg::CoordinatorOk { .. } => "COORDINATOR_OK",
            Msg::NewState { .. } => "NEW_STATE",
            Msg::NewStateOk { .. } => "NEW_STATE_OK",
            Msg::Poll { .. } => "POLL",
            Msg::PollStatus { .. } => "POLL_STATUS",
        }
    }
}

/// Timers. Each names what it was set for, so one that fires after the node has moved on
/// (a stale one) means nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// A phase of this node's election: replies are overdue.
    Replies {
        /// The number of the election.
        election: u64,
        /// The phase, 1 to 4.
        phase: u8,
    },
    /// Phase 1 was lost: the higher node's ELECTION is overdue.
    Handover {
        /// The number of the election that lost it.
        election: u64,
    },
    /// Taking part in someone's election: the candidate's next word is overdue.
    Candidate {
        /// The status the node was in when it set the timer.
        status: Status,
    },
    /// The coordinator polls again.
    Poll {
        /// The term it leads in.
        term: u64,
    },
}

/// Where a node is in an election of its own.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Holding none.
    Idle,
    /// 1: polled these higher ids; none has answered yet.
    Polling { waiting: BTreeSet<PeerId> },
    /// 1, lost: these higher ids answered; an ELECTION from above is awaited.
    Outranked { answered: BTreeSet<PeerId> },
    /// 2: sent ELECTION; `active` answered, `waiting` not yet.
    Electing { waiting: BTreeSet<PeerId>, active: BTreeSet<PeerId> },
    /// 3: sent COORDINATOR in `term`; `answers` answered, `waiting` not yet.
    Coordinating { term: u64, active: BTreeSet<PeerId>, waiting: BTreeSet<PeerId>, answers: BTreeSet<PeerId> },
    /// 4: sent NEW_STATE to `active`; `answers` answered, `waiting` not yet.
    Installing { term: u64, active: BTreeSet<PeerId>, waiting: BTreeSet<PeerId>, answers: BTreeSet<PeerId> },
}

impl Phase {
    /// The phase's number in the notes, for its timer.
    fn number(&self) -> Option<u8> {
        match self {
            Phase::Idle | Phase::Outranked { .. } => None,
            Phase::Polling { .. } => Some(1),
            Phase::Electing { .. } => Some(2),
            Phase::Coordinating { .. } => Some(3),
            Phase::Installing { .. } => Some(4),
        }
    }

    /// The peers whose replies the phase still waits for; having lost phase 1, those
    /// above that answered (while one is alive, its ELECTION may still come).
    fn waiting(&mut self) -> Option<&mut BTreeSet<PeerId>> {
        match self {
            Phase::Idle => None,
            Phase::Polling { waiting }
            | Phase::Electing { waiting, .. }
            | Phase::Coordinating { waiting, .. }
            | Phase::Installing { waiting, .. } => Some(waiting),
            Phase::Outranked { answered } => Some(answered),
        }
    }
}

type O = NodeOut<BullyGm>;

/// One node of `bully-gm`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BullyGm {
    cfg: Config,
    /// Peers reported down and not since back up.
    down: BTreeSet<PeerId>,
    /// The notes' STATUS, with CANDIDATE or COORDINATOR in it.
    status: Status,
    /// This node's own election, if it holds one.
    phase: Phase,
    /// The leader this node last reported, with its term.
    leader: Option<(PeerId, u64)>,
    /// The members (ACTIVE) of the leader's group, from NEW_STATE or its own phase 4.
    group: BTreeSet<PeerId>,
    /// The newest term seen anywhere.
    seen: u64,
    /// Number of this node's latest election. A restarted node counts on from
    /// `incarnation << 32`, so no reply meant for its former life matches.
    election: u64,
    /// Leading: members polled at the last tick that have not answered yet.
    unanswered: BTreeSet<PeerId>,
}

impl BullyGm {
    fn me(&self) -> PeerId {
        self.cfg.id
    }

    /// The term of the leader this node follows; 0 before it follows any.
    fn term(&self) -> u64 {
        self.leader.map_or(0, |(_, term)| term)
    }

    /// Leads, is NORMAL, and holds no election: the poll runs.
    fn leading(&self) -> bool {
        self.phase == Phase::Idle
            && self.status == Status::Normal
            && self.leader.is_some_and(|(id, _)| id == self.me())
    }

    fn see(&mut self, term: u64) {
        self.seen = self.seen.max(term);
    }

    /// A term can only be `from`'s if its low digits are `from`'s id.
    fn carries(&self, term: u64, from: PeerId) -> bool {
        term > 0 && term % u64::from(self.cfg.n.max(1)) == u64::from(from.0)
    }

    /// The other nodes on one side of this one, not known to be down.
    fn live(&self, above: bool) -> BTreeSet<PeerId> {
        let me = self.me();
        self.cfg.others().filter(|p| (*p > me) == above && !self.down.contains(p)).collect()
    }

    fn phase_timer(&self) -> Option<Timer> {
        let election = self.election;
        match &self.phase {
            Phase::Outranked { .. } => Some(Timer::Handover { election }),
            phase => phase.number().map(|phase| Timer::Replies { election, phase }),
        }
    }

    /// The timer of a status that waits on someone else.
    fn candidate_timer(&self) -> Option<Timer> {
        let me = self.me();
        match self.status {
            Status::Election { candidate: c, .. } | Status::Reorganization { coordinator: c, .. }
                if c != me =>
            {
                Some(Timer::Candidate { status: self.status })
            }
            _ => None,
        }
    }

    /// Move to `status`, re-arming the wait on the candidate if it has one.
    fn set_status(&mut self, status: Status, out: &mut O) {
        if let Some(timer) = self.candidate_timer() {
            out.cancel_timer(timer);
        }
        self.status = status;
        if let Some(timer) = self.candidate_timer() {
            out.set_timer(timer, candidate_timeout(&self.cfg.timing));
        }
    }

    /// Stop this node's own election, if any.
    fn stop_election(&mut self, out: &mut O) {
        if let Some(timer) = self.phase_timer() {
            out.cancel_timer(timer);
        }
        self.phase = Phase::Idle;
    }

    /// Stop the poll, if this node leads.
    fn stop_polling(&mut self, out: &mut O) {
        if let Some((id, term)) = self.leader {
            if id == self.me() {
                out.cancel_timer(Timer::Poll { term });
            }
        }
        self.unanswered.clear();
    }

    /// Phase 1: ask every higher id not known to be down whether it is alive.
    fn hold_election(&mut self, out: &mut O) {
        self.stop_election(out);
        self.stop_polling(out);
        self.election += 1;
        out.count("elections", 1);
        let (election, term) = (self.election, self.term());
        let higher = self.live(true);
        if higher.is_empty() {
            return self.phase2(out);
        }
        for &p in &higher {
            out.send(p, Msg::StatusPoll { election, term });
        }
        self.phase = Phase::Polling { waiting: higher };
        out.set_timer(Timer::Replies { election, phase: 1 }, answer_timeout(&self.cfg.timing));
    }

    /// The notes' "goto Elect": the group changed during phase 3 or 4.
    fn restart(&mut self, out: &mut O) {
        out.count("restarts", 1);
        self.hold_election(out);
    }

    /// Phase 2: nobody above is alive. Tell every lower id an election is on.
    fn phase2(&mut self, out: &mut O) {
        let election = self.election;
        self.set_status(Status::Election { candidate: self.me(), election }, out);
        let lower = self.live(false);
        for &p in &lower {
            out.send(p, Msg::Election { election });
        }
        self.begin(Phase::Electing { waiting: lower, active: BTreeSet::new() }, out);
    }

    /// Phase 3: a new term, and COORDINATOR to every lower id.
    fn phase3(&mut self, active: BTreeSet<PeerId>, out: &mut O) {
        let (me, election) = (self.me(), self.election);
        let term = next_term(self.seen, self.cfg.n, me);
        self.seen = term;
        self.set_status(Status::Reorganization { coordinator: me, term }, out);
        let lower = self.live(false);
        for &p in &lower {
            out.send(p, Msg::Coordinator { election, term });
        }
        self.begin(Phase::Coordinating { term, active, waiting: lower, answers: BTreeSet::new() }, out);
    }

    /// Phase 4: the new state to every member.
    fn phase4(&mut self, term: u64, active: BTreeSet<PeerId>, out: &mut O) {
        let election = self.election;
        let waiting: BTreeSet<PeerId> = active.iter().filter(|p| !self.down.contains(p)).copied().collect();
        for &p in &waiting {
            out.send(p, Msg::NewState { election, term, active: active.clone() });
        }
        self.begin(Phase::Installing { term, active, waiting, answers: BTreeSet::new() }, out);
    }

    /// Enter a phase of 2 to 4 whose requests are out: wait for the replies, unless
    /// nobody was asked.
    fn begin(&mut self, phase: Phase, out: &mut O) {
        self.phase = phase;
        if self.phase.waiting().is_some_and(|w| w.is_empty()) {
            return self.judge(out);
        }
        if let Some(timer) = self.phase_timer() {
            out.set_timer(timer, answer_timeout(&self.cfg.timing));
        }
    }

    /// The current phase has every reply it will get, before its timer ran out (all in,
    /// or the rest down): forget the timer, judge the phase and go on.
    fn end_phase(&mut self, out: &mut O) {
        if let Some(timer) = self.phase_timer() {
            out.cancel_timer(timer);
        }
        self.judge(out);
    }

    /// Judge the current phase by the replies it has, and go on.
    fn judge(&mut self, out: &mut O) {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Idle => {}
            // Nobody above answered: this node carries on.
            Phase::Polling { .. } => self.phase2(out),
            // Whoever answered never sent its ELECTION: try again.
            Phase::Outranked { .. } => self.hold_election(out),
            Phase::Electing { active, .. } => self.phase3(active, out),
            Phase::Coordinating { term, active, answers, .. } if answers == active => {
                self.phase4(term, active, out)
            }
            Phase::Installing { term, active, answers, .. } if answers == active => {
                self.win(term, active, out)
            }
            Phase::Coordinating { .. } | Phase::Installing { .. } => self.restart(out),
        }
    }

    /// Phase 4 succeeded: lead, and start polling.
    fn win(&mut self, term: u64, active: BTreeSet<PeerId>, out: &mut O) {
        let me = self.me();
        self.set_status(Status::Normal, out);
        // `term` was taken above every term seen, the one followed included.
        self.leader = Some((me, term));
        self.group = active;
        self.unanswered.clear();
        out.emit(ElectionEvent::Leader { id: me, term });
        if self.cfg.n > 1 {
            out.set_timer(Timer::Poll { term }, poll_period(&self.cfg.timing));
        }
    }

    /// A reply to this node's current election from `from`, for phase `phase`: take it
    /// off the waiting list, and end the phase when nobody is left on it.
    fn on_reply(&mut self, from: PeerId, election: u64, phase: u8, out: &mut O) {
        if election != self.election || self.phase.number() != Some(phase) {
            return;
        }
        let Some(waiting) = self.phase.waiting() else { return };
        if !waiting.remove(&from) {
            return;
        }
        let more = !waiting.is_empty();
        match &mut self.phase {
            Phase::Electing { active, .. } => {
                active.insert(from);
            }
            Phase::Coordinating { answers, .. } | Phase::Installing { answers, .. } => {
                answers.insert(from);
            }
            _ => {}
        }
        if !more {
            self.end_phase(out);
        }
    }

    /// STATUS: someone above is alive. Phase 1 is lost; wait for its ELECTION.
    fn on_status(&mut self, from: PeerId, election: u64, out: &mut O) {
        if election != self.election || from < self.me() {
            return;
        }
        match &mut self.phase {
            Phase::Polling { .. } => {
                out.cancel_timer(Timer::Replies { election, phase: 1 });
                self.phase = Phase::Outranked { answered: BTreeSet::from([from]) };
                out.set_timer(Timer::Handover { election }, handover_timeout(&self.cfg.timing));
            }
            Phase::Outranked { answered } => {
                answered.insert(from);
            }
            _ => {}
        }
    }

    /// STATUS_POLL from below: answer, and take the election over if it is news.
    fn on_status_poll(&mut self, from: PeerId, election: u64, term: u64, out: &mut O) {
        if from > self.me() {
            return; // Only lower ids poll upwards.
        }
        out.send(from, Msg::Status { election, status: self.status });
        if self.phase != Phase::Idle || self.status != Status::Normal {
            return; // An election is on already, this node's or one it takes part in.
        }
        // See "Late polls": an asker behind this node's leader is only let in by the
        // leader itself, and only if it is not a member.
        let behind = term < self.term();
        if !behind || (self.leading() && !self.group.contains(&from)) {
            self.hold_election(out);
        }
    }

    /// ELECTION from above: take part, stop anything of its own, answer.
    fn on_election(&mut self, from: PeerId, election: u64, out: &mut O) {
        if from < self.me() {
            return;
        }
        self.stop_election(out);
        self.stop_polling(out);
        self.set_status(Status::Election { candidate: from, election }, out);
        out.send(from, Msg::ElectionOk { election, term: self.seen });
    }

    /// COORDINATOR: agree, if it comes from the candidate of this very election.
    fn on_coordinator(&mut self, from: PeerId, election: u64, term: u64, out: &mut O) {
        if !self.carries(term, from) {
            return;
        }
        self.see(term);
        if self.status != (Status::Election { candidate: from, election }) || term <= self.term() {
            return;
        }
        self.stop_election(out);
        self.set_status(Status::Reorganization { coordinator: from, term }, out);
        out.send(from, Msg::CoordinatorOk { election });
    }

    /// NEW_STATE: install it, if it comes from the coordinator agreed to, in its term.
    fn on_new_state(
        &mut self,
        from: PeerId,
        election: u64,
        term: u64,
        active: BTreeSet<PeerId>,
        out: &mut O,
    ) {
        if self.status != (Status::Reorganization { coordinator: from, term }) || term <= self.term() {
            return;
        }
        self.stop_election(out);
        self.set_status(Status::Normal, out);
        self.leader = Some((from, term));
        self.group = active;
        out.emit(ElectionEvent::Leader { id: from, term });
        out.send(from, Msg::NewStateOk { election });
    }

    /// The poll is due: judge the last one, then poll again.
    fn on_poll_timer(&mut self, term: u64, out: &mut O) {
        if !self.leading() || term != self.term() {
            return;
        }
        if !self.unanswered.is_empty() {
            return self.hold_election(out); // A member did not answer in a whole period.
        }
        for p in self.live(true).into_iter().chain(self.live(false)) {
            out.send(p, Msg::Poll { term });
        }
        self.unanswered = self.group.iter().filter(|p| !self.down.contains(p)).copied().collect();
        out.set_timer(Timer::Poll { term }, poll_period(&self.cfg.timing));
    }

    /// POLL_STATUS: a member in good standing, or a change that calls for an election.
    fn on_poll_status(&mut self, from: PeerId, term: u64, status: Status, follows: u64, out: &mut O) {
        if !self.leading() || term != self.term() {
            return;
        }
        if self.group.contains(&from) && status == Status::Normal && follows == term {
            self.unanswered.remove(&from);
        } else {
            self.hold_election(out);
        }
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut O) {
        self.down.insert(peer);
        if let Some(waiting) = self.phase.waiting() {
            // No reply will come from it: with nobody left to hear from, the phase is over.
            if waiting.remove(&peer) && waiting.is_empty() {
                self.end_phase(out);
            }
            return;
        }
        let me = self.me();
        let lost = match self.status {
            Status::Election { candidate: c, .. } | Status::Reorganization { coordinator: c, .. } => {
                c == peer
            }
            Status::Normal => match self.leader {
                Some((id, _)) if id == me => self.group.contains(&peer),
                Some((id, _)) => id == peer,
                None => false,
            },
            Status::Down => false,
        };
        if lost {
            self.hold_election(out);
        }
    }
}

impl Node for BullyGm {
    type Msg = Msg;
    type Timer = Timer;
    type Service = Election;

    fn create(cfg: &Config) -> Self {
        BullyGm {
            cfg: cfg.clone(),
            down: BTreeSet::new(),
            status: if cfg.incarnation > 0 { Status::Down } else { Status::Normal },
            phase: Phase::Idle,
            leader: None,
            group: BTreeSet::new(),
            seen: 0,
            election: u64::from(cfg.incarnation) << 32,
            unanswered: BTreeSet::new(),
        }
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut O) {
        match input {
            // The notes' recovery: status DOWN, then an election.
            Input::Start if self.status == Status::Down => self.hold_election(out),
            Input::Start => {}
            Input::Call { call: ElectionCall::Elect } => {
                let taking_part =
                    matches!(self.status, Status::Election { .. } | Status::Reorganization { .. });
                if self.phase == Phase::Idle && !taking_part {
                    self.hold_election(out);
                }
            }
            Input::Message { from, msg } => match msg {
                Msg::StatusPoll { election, term } => self.on_status_poll(from, election, term, out),
                Msg::Status { election, .. } => self.on_status(from, election, out),
                Msg::Election { election } => self.on_election(from, election, out),
                Msg::ElectionOk { election, term } => {
                    self.see(term);
                    self.on_reply(from, election, 2, out);
                }
                Msg::Coordinator { election, term } => self.on_coordinator(from, election, term, out),
                Msg::CoordinatorOk { election } => self.on_reply(from, election, 3, out),
                Msg::NewState { election, term, active } => {
                    self.on_new_state(from, election, term, active, out)
                }
                Msg::NewStateOk { election } => self.on_reply(from, election, 4, out),
                Msg::Poll { term } if self.carries(term, from) => {
                    self.see(term);
                    out.send(from, Msg::PollStatus { term, status: self.status, follows: self.term() });
                }
                Msg::Poll { .. } => {}
                Msg::PollStatus { term, status, follows } => {
                    self.on_poll_status(from, term, status, follows, out)
                }
            },
            Input::Timer { timer } => match timer {
                Timer::Replies { election, phase }
                    if election == self.election && self.phase.number() == Some(phase) =>
                {
                    self.judge(out)
                }
                Timer::Handover { election }
                    if election == self.election && matches!(self.phase, Phase::Outranked { .. }) =>
                {
                    self.judge(out)
                }
                // The candidate went silent: hold an election of its own.
                Timer::Candidate { status } if status == self.status && self.phase == Phase::Idle => {
                    self.hold_election(out)
                }
                Timer::Poll { term } => self.on_poll_timer(term, out),
                _ => {}
            },
            Input::PeerDown { peer } => self.on_peer_down(peer, out),
            // A new incarnation holds its own election (it starts DOWN).
            Input::PeerUp { peer } => {
                self.down.remove(&peer);
            }
        }
    }

    /// The check's counter bound: the highest term seen or followed, or the number of
    /// this node's latest election in this life, whichever is larger.
    fn counter(&self) -> u64 {
        self.seen.max(self.term()).max(self.election & u64::from(u32::MAX))
    }

    fn waiting_for(&self) -> String {
        let list = |set: &BTreeSet<PeerId>| set.iter().map(PeerId::to_string).collect::<Vec<_>>().join(", ");
        match &self.phase {
            Phase::Polling { waiting } => format!("phase 1: waiting for STATUS from {}", list(waiting)),
            Phase::Outranked { answered } => {
                format!("phase 1 lost to {}: waiting for an ELECTION from above", list(answered))
            }
            Phase::Electing { waiting, .. } => {
                format!("phase 2: waiting for ELECTION_OK from {}", list(waiting))
            }
            Phase::Coordinating { waiting, .. } => {
                format!("phase 3: waiting for COORDINATOR_OK from {}", list(waiting))
            }
            Phase::Installing { waiting, .. } => {
                format!("phase 4: waiting for NEW_STATE_OK from {}", list(waiting))
            }
            Phase::Idle => match self.status {
                Status::Election { candidate, .. } => {
                    format!("in {candidate}'s election: waiting for COORDINATOR")
                }
                Status::Reorganization { coordinator, .. } => {
                    format!("reorganizing under {coordinator}: waiting for NEW_STATE")
                }
                Status::Down => "down: no election held yet".into(),
                Status::Normal => String::new(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Output;
    use mutexlab_core::script::elect::{within, Initiators, Net};

    fn trace(net: &Net<BullyGm>, mark: usize) -> Vec<(u32, u32, &str)> {
        net.sent_since(mark).iter().map(|s| (s.from, s.to, s.kind.as_str())).collect()
    }

    /// Run until just before a poll could come due: long enough for any election below
    /// to finish, timeouts and all.
    fn settle(net: &mut Net<BullyGm>) {
        net.run_for(poll_period(&Timing::DEFAULT) - Duration::from_millis(1)).unwrap();
    }

    fn step(node: &mut BullyGm, input: NodeInput<BullyGm>) -> Vec<Output<Msg, Timer, ElectionEvent>> {
        let mut out = O::new(Duration::ZERO);
        node.step(input, &mut out);
        out.actions().to_vec()
    }

    #[test]
    fn theory_and_terms() {
        assert_eq!(messages_per_election(1), (0, 0));
        assert_eq!(messages_per_election(2), (6, 8));
        assert_eq!(messages_per_election(5), (24, 44));
        let mut net = Net::<BullyGm>::new(1);
        net.elect(0);
        net.run_for(Duration::ZERO).unwrap();
        assert_eq!(net.check(), Ok(PeerId(0)));
        assert_eq!(net.leader_of(0), Some((PeerId(0), 1)));
        assert!(net.sent.is_empty());
    }

    /// The notes' four phases, the highest alive calling: nobody above to poll, then a
    /// request and a reply per lower node in each of phases 2, 3 and 4.
    #[test]
    fn notes_phases_on_five_with_the_highest_calling() {
        let mut net = Net::<BullyGm>::new(5);
        net.elect(4);
        assert_eq!(net.node(4).waiting_for(), "phase 2: waiting for ELECTION_OK from w0, w1, w2, w3");
        (0..4).for_each(|_| assert!(net.step()));
        assert_eq!(net.node(0).waiting_for(), "in w4's election: waiting for COORDINATOR");
        (0..4).for_each(|_| assert!(net.step()));
        assert_eq!(net.node(4).waiting_for(), "phase 3: waiting for COORDINATOR_OK from w0, w1, w2, w3");
        (0..8).for_each(|_| assert!(net.step()));
        assert_eq!(net.node(0).waiting_for(), "reorganizing under w4: waiting for NEW_STATE");
        assert_eq!(net.node(4).waiting_for(), "phase 4: waiting for NEW_STATE_OK from w0, w1, w2, w3");
        net.run_for(Duration::ZERO).unwrap();
        let to_all = |kind| (0..4).map(move |i| (4, i, kind));
        let from_all = |kind| (0..4).map(move |i| (i, 4, kind));
        let expected: Vec<_> = to_all("ELECTION")
            .chain(from_all("ELECTION_OK"))
            .chain(to_all("COORDINATOR"))
            .chain(from_all("COORDINATOR_OK"))
            .chain(to_all("NEW_STATE"))
            .chain(from_all("NEW_STATE_OK"))
            .collect();
        assert_eq!(trace(&net, 0), expected);
        assert_eq!(net.check(), Ok(PeerId(4)));
        assert!((0..5).all(|i| net.leader_of(i) == Some((PeerId(4), 9))));
        assert!((0..5).all(|i| net.node(i).waiting_for().is_empty()));
        assert_eq!(net.node(0).group, BTreeSet::from([PeerId(0), PeerId(1), PeerId(2), PeerId(3)]));
        assert_eq!(net.sent.len() as u64, messages_per_election(5).0);
    }

    /// The lowest calling: the poll climbs, each node above taking it over, until the
    /// highest finds nobody above and runs phases 2 to 4.
    #[test]
    fn notes_phases_on_five_with_the_lowest_calling() {
        let mut net = Net::<BullyGm>::new(5);
        net.elect(0);
        assert_eq!(net.node(0).waiting_for(), "phase 1: waiting for STATUS from w1, w2, w3, w4");
        net.step();
        assert_eq!(net.node(1).waiting_for(), "phase 1: waiting for STATUS from w2, w3, w4");
        net.run_for(Duration::ZERO).unwrap();
        #[rustfmt::skip]
        let per_kind = [
            ("STATUS_POLL", 10), ("STATUS", 10), ("ELECTION", 4), ("ELECTION_OK", 4),
            ("COORDINATOR", 4), ("COORDINATOR_OK", 4), ("NEW_STATE", 4), ("NEW_STATE_OK", 4),
        ];
        for (kind, count) in per_kind {
            assert_eq!(net.count_since(0, kind), count, "{kind}");
        }
        assert_eq!(
            &trace(&net, 0)[..5],
            [
                (0, 1, "STATUS_POLL"),
                (0, 2, "STATUS_POLL"),
                (0, 3, "STATUS_POLL"),
                (0, 4, "STATUS_POLL"),
                (1, 0, "STATUS")
            ]
        );
        assert_eq!(net.check(), Ok(PeerId(4)));
        assert_eq!(net.sent.len() as u64, messages_per_election(5).1);
    }

    #[test]
    fn exact_counts_highest_and_lowest_calling_n_2_to_16() {
        for n in 2..=16 {
            let (least, most) = messages_per_election(n);
            for (who, expected) in
                [(Initiators::Highest, least), (Initiators::Lowest, most), (Initiators::All, most)]
            {
                let mut net = Net::<BullyGm>::new(n);
                net.elect_by(who);
                net.run_for(Duration::ZERO).unwrap();
                assert_eq!(net.check(), Ok(PeerId(n - 1)), "n = {n}, {who:?}");
                assert_eq!(net.sent.len() as u64, expected, "n = {n}, {who:?}");
            }
            // The highest dead, and known to be: the second highest calls, as in the
            // notes' best case; or the lowest.
            let (least, most) = messages_per_election(n - 1);
            for (who, expected) in [(Initiators::Highest, least), (Initiators::Lowest, most)] {
                let mut net = Net::<BullyGm>::new(n);
                net.kill(n - 1);
                net.elect_by(who);
                net.run_for(Duration::ZERO).unwrap();
                assert_eq!(net.check(), Ok(PeerId(n - 2)), "n = {n}, {who:?}, the highest dead");
                assert_eq!(net.sent.len() as u64, expected, "n = {n}, {who:?}, the highest dead");
            }
        }
    }

    /// The highest has died unnoticed: the second highest polls it, hears nothing, and
    /// carries on when phase 1's timer runs out. Told it is down instead, it carries on
    /// at once.
    #[test]
    fn the_highest_dead_the_second_highest_wins() {
        for noticed in [false, true] {
            let mut net = Net::<BullyGm>::new(5);
            net.elect(4);
            settle(&mut net);
            net.crash(4);
            let mark = net.sent.len();
            net.elect(3);
            assert_eq!(net.node(3).waiting_for(), "phase 1: waiting for STATUS from w4");
            if noticed {
                net.notice(3, 4);
                assert_eq!(net.node(3).waiting_for(), "phase 2: waiting for ELECTION_OK from w0, w1, w2");
                net.run_for(Duration::ZERO).unwrap();
            } else {
                net.run_for(Duration::ZERO).unwrap();
                assert_eq!(net.node(3).waiting_for(), "phase 1: waiting for STATUS from w4");
                net.run_for(answer_timeout(&Timing::DEFAULT)).unwrap();
            }
            assert_eq!(trace(&net, mark)[0], (3, 4, "STATUS_POLL"));
            assert_eq!(net.sent_since(mark).len(), 1 + 6 * 3);
            assert_eq!(net.check(), Ok(PeerId(3)));
            assert!((0..4).all(|i| net.leader_of(i) == Some((PeerId(3), 13))), "one epoch above 9");
        }
    }

    /// A member dies after answering ELECTION and before COORDINATOR: ANSWERS differs
    /// from ACTIVE, so the candidate starts again, in a new term, without it.
    #[test]
    fn a_node_dying_between_phase_2_and_3_restarts_the_election() {
        for noticed in [false, true] {
            let mut net = Net::<BullyGm>::new(5);
            net.elect(4);
            while !net.node(4).waiting_for().starts_with("phase 3") {
                assert!(net.step());
            }
            if noticed {
                net.kill(2);
            } else {
                net.crash(2);
            }
            settle(&mut net);
            assert_eq!(net.check(), Ok(PeerId(4)));
            // The first attempt's term 9 was never installed; everyone reports term 14.
            assert!(net.leaders.iter().all(|a| a.term == 14), "{:?}", net.leaders);
            assert_eq!(net.leaders.len(), 4);
            assert_eq!(net.node(4).group, BTreeSet::from([PeerId(0), PeerId(1), PeerId(3)]));
            assert_eq!(net.count_since(0, "ELECTION"), if noticed { 4 + 3 } else { 4 + 4 });
            // First attempt 4+4+4+3; then 6 per live member, plus an unanswered ELECTION
            // and COORDINATOR to the dead 2 when nobody said it was down.
            assert_eq!(net.sent.len(), 15 + if noticed { 18 } else { 20 });
        }
    }

    /// The highest dies, the next leads; the highest comes back (DOWN), holds an
    /// election, and bullies its way back in a term above the old ones.
    #[test]
    fn a_recovered_node_bullies_back() {
        let mut net = Net::<BullyGm>::new(5);
        net.elect(0);
        settle(&mut net);
        assert_eq!(net.leader_of(0), Some((PeerId(4), 9)));
        let mark = net.sent.len();
        net.kill(4);
        settle(&mut net);
        assert_eq!(net.check(), Ok(PeerId(3)));
        assert_eq!(net.leader_of(0), Some((PeerId(3), 13)));
        // Everyone noticed: every live node called, at the all-callers' cost.
        assert_eq!(net.sent_since(mark).len() as u64, messages_per_election(4).1);

        let fresh = BullyGm::create(&Config { incarnation: 1, ..Config::new(4, 5) });
        assert_eq!(fresh.waiting_for(), "down: no election held yet");
        let mark = net.sent.len();
        net.restart(4);
        assert_eq!(net.node(4).waiting_for(), "phase 2: waiting for ELECTION_OK from w0, w1, w2, w3");
        settle(&mut net);
        assert_eq!(net.check(), Ok(PeerId(4)));
        // It had forgotten every term, and learnt 13 from the ELECTION replies.
        assert!((0..5).all(|i| net.leader_of(i) == Some((PeerId(4), 19))));
        assert_eq!(net.sent_since(mark).len() as u64, messages_per_election(5).0);
    }

    /// A node whose ELECTION was lost is left out of ACTIVE and follows nobody. The
    /// coordinator's next poll hears it answer from outside ACTIVE, and elects again.
    #[test]
    fn the_poll_notices_a_node_that_missed_the_election() {
        let mut net = Net::<BullyGm>::new(4);
        net.elect(3);
        assert_eq!(net.hold(3, 1), [Msg::Election { election: 1 }]);
        settle(&mut net);
        assert_eq!(net.leader_of(3), Some((PeerId(3), 7)));
        assert_eq!(net.agreement(), Err("w1 names no leader".into()));
        let mark = net.sent.len();
        net.run_for(poll_period(&Timing::DEFAULT)).unwrap();
        assert_eq!(net.check(), Ok(PeerId(3)));
        assert!((0..4).all(|i| net.leader_of(i) == Some((PeerId(3), 11))));
        #[rustfmt::skip]
        let expected = [
            (3, 0, "POLL"), (3, 1, "POLL"), (3, 2, "POLL"),
            (0, 3, "POLL_STATUS"), (1, 3, "POLL_STATUS"), (2, 3, "POLL_STATUS"),
        ];
        assert_eq!(trace(&net, mark)[..6], expected);
        assert_eq!(net.sent_since(mark).len(), 6 + 6 * 3);
    }

    /// A member dies and nobody says so: it misses a poll, and the next poll elects again
    /// without it.
    #[test]
    fn the_poll_notices_a_member_that_died_silently() {
        let mut net = Net::<BullyGm>::new(4);
        net.elect(3);
        settle(&mut net);
        net.crash(1);
        let mark = net.sent.len();
        net.run_for(poll_period(&Timing::DEFAULT)).unwrap();
        assert_eq!(net.count_since(mark, "POLL"), 3);
        assert_eq!(net.count_since(mark, "POLL_STATUS"), 2);
        assert_eq!(net.count_since(mark, "ELECTION"), 0);
        // The next tick elects; w1's silence costs phases 2 and 3 a timeout each, and
        // all is over before the tick after.
        net.run_for(poll_period(&Timing::DEFAULT)).unwrap();
        assert_eq!(net.count_since(mark, "ELECTION"), 3);
        assert_eq!(net.count_since(mark, "COORDINATOR"), 3);
        assert_eq!(net.count_since(mark, "NEW_STATE"), 2);
        assert_eq!(net.check(), Ok(PeerId(3)));
        assert_eq!(net.leader_of(0), Some((PeerId(3), 11)));
        assert_eq!(net.node(3).group, BTreeSet::from([PeerId(0), PeerId(2)]));
    }

    /// The negative control for the two above: a healthy group is polled every period
    /// and nobody elects.
    #[test]
    fn a_healthy_group_is_polled_and_left_alone() {
        let mut net = Net::<BullyGm>::new(4);
        net.elect(0);
        settle(&mut net);
        let (mark, events) = (net.sent.len(), net.leaders.len());
        net.run_for(5 * poll_period(&Timing::DEFAULT)).unwrap();
        assert_eq!(net.count_since(mark, "POLL"), 5 * 3, "one poll per period");
        assert_eq!(net.count_since(mark, "POLL_STATUS"), 5 * 3);
        assert_eq!(net.sent_since(mark).len(), 5 * 6);
        assert_eq!(net.leaders.len(), events, "nobody reported a new leader");
    }

    /// A candidate dies after its ELECTION: the nodes waiting on it elect by themselves,
    /// when told it is down or when it has been silent too long.
    #[test]
    fn a_silent_or_dead_candidate_does_not_hang_the_run() {
        for noticed in [false, true] {
            let mut net = Net::<BullyGm>::new(3);
            net.elect(2);
            net.step();
            net.step();
            assert_eq!(net.node(1).waiting_for(), "in w2's election: waiting for COORDINATOR");
            if noticed {
                net.kill(2);
                net.run_for(Duration::ZERO).unwrap();
            } else {
                net.crash(2);
                net.run_for(candidate_timeout(&Timing::DEFAULT)).unwrap();
                assert!(net.node(1).waiting_for().starts_with("phase 1"), "{}", net.node(1).waiting_for());
                settle(&mut net);
            }
            assert_eq!(net.check(), Ok(PeerId(1)));
            assert_eq!(net.leader_of(0), Some((PeerId(1), 4)));
        }
    }

    /// Killing the leader after it won: everyone notices and elects, and the next one
    /// down wins in a higher term; again and again until one node is left.
    #[test]
    fn the_leader_dies_and_the_next_takes_over_with_a_higher_term() {
        for n in [2, 3, 5, 8] {
            let mut net = Net::<BullyGm>::new(n);
            net.elect(0);
            settle(&mut net);
            for dead in (1..n).rev() {
                let before = net.leader_of(0).unwrap();
                net.kill(dead);
                settle(&mut net);
                assert_eq!(net.check(), Ok(PeerId(dead - 1)), "n = {n}");
                assert!(net.leader_of(0).unwrap().1 > before.1);
            }
        }
    }

    #[test]
    fn a_second_call_elects_the_same_leader_again_in_a_new_term() {
        let mut net = Net::<BullyGm>::new(4);
        net.elect(0);
        settle(&mut net);
        let mark = net.sent.len();
        net.elect(1);
        settle(&mut net);
        assert_eq!(net.check(), Ok(PeerId(3)));
        assert_eq!(net.leader_of(0), Some((PeerId(3), 11)));
        // 1 polls 2 and 3, 2 takes over and polls 3, 3 takes over: 3 polls, 3 answers,
        // then phases 2 to 4.
        assert_eq!(net.sent_since(mark).len(), 6 + 6 * 3);
        within(net.sent_since(mark).len(), messages_per_election(4)).unwrap();
    }

    /// A STATUS_POLL from a node behind the current leader is only answered, unless it
    /// reaches the leader from outside the group.
    #[test]
    fn late_polls_start_no_election_unless_the_leader_lacks_the_asker() {
        let mut net = Net::<BullyGm>::new(3);
        net.elect(2);
        settle(&mut net);
        let late =
            |from: u32| Input::Message { from: PeerId(from), msg: Msg::StatusPoll { election: 1, term: 0 } };
        let answer = Output::Send { to: PeerId(0), msg: Msg::Status { election: 1, status: Status::Normal } };
        let (mut w1, mut w2) = (net.node(1).clone(), net.node(2).clone());
        assert_eq!(step(&mut w1, late(0)), std::slice::from_ref(&answer));
        assert_eq!(step(&mut w2, late(0)), [answer], "w0 is a member; it has been told");
        assert_eq!(w2, *net.node(2));

        // Now w0 misses the election, then calls one: w1 only answers; w2 takes over.
        let mut net = Net::<BullyGm>::new(3);
        net.elect(2);
        net.hold(2, 0);
        settle(&mut net);
        assert_eq!(net.leader_of(0), None);
        let mark = net.sent.len();
        net.elect(0);
        settle(&mut net);
        assert_eq!(net.check(), Ok(PeerId(2)));
        assert_eq!(net.sent_since(mark).len(), 4 + 6 * 2);
        assert_eq!(net.count_since(mark, "STATUS_POLL"), 2, "w1 did not take over");
    }

    #[test]
    fn stale_timers_and_stray_messages_change_nothing() {
        let mut net = Net::<BullyGm>::new(3);
        net.elect(0);
        settle(&mut net);
        assert_eq!(net.leader_of(0), Some((PeerId(2), 5)));
        let (mut w0, mut w2) = (net.node(0).clone(), net.node(2).clone());
        let (before0, before2) = (w0.clone(), w2.clone());
        let timer = |timer| Input::Timer { timer };
        let msg = |from, msg| Input::Message { from: PeerId(from), msg };
        let mut stale = Vec::new();
        for phase in 1..=4 {
            stale.push(timer(Timer::Replies { election: 1, phase }));
        }
        stale.push(timer(Timer::Handover { election: 1 }));
        stale
            .push(timer(Timer::Candidate { status: Status::Election { candidate: PeerId(2), election: 1 } }));
        stale.push(timer(Timer::Candidate {
            status: Status::Reorganization { coordinator: PeerId(2), term: 5 },
        }));
        stale.push(timer(Timer::Poll { term: 2 }));
        // Replies nobody asked for, or for another election.
        stale.push(msg(1, Msg::Status { election: 1, status: Status::Normal }));
        stale.push(msg(1, Msg::ElectionOk { election: 1, term: 0 }));
        stale.push(msg(1, Msg::CoordinatorOk { election: 1 }));
        stale.push(msg(1, Msg::NewStateOk { election: 7 }));
        stale.push(msg(1, Msg::PollStatus { term: 5, status: Status::Normal, follows: 5 }));
        // A COORDINATOR or NEW_STATE from a node that is not the candidate, or with a
        // term that is not the sender's (8 is w2's), or older than the leader's.
        stale.push(msg(1, Msg::Coordinator { election: 1, term: 4 }));
        stale.push(msg(1, Msg::Coordinator { election: 1, term: 8 }));
        stale.push(msg(2, Msg::Coordinator { election: 1, term: 5 }));
        stale.push(msg(2, Msg::NewState { election: 1, term: 5, active: BTreeSet::new() }));
        stale.push(msg(1, Msg::NewState { election: 1, term: 4, active: BTreeSet::new() }));
        for input in stale {
            for (node, before) in [(&mut w0, &before0), (&mut w2, &before2)] {
                let acts = step(node, input.clone());
                assert!(acts.is_empty(), "{input:?}: {acts:?}");
                assert_eq!(node, before, "{input:?}");
            }
        }
        // ELECTION from below, STATUS_POLL from above, and a POLL whose term is not its
        // sender's: not answered.
        assert!(step(&mut w2, msg(0, Msg::Election { election: 3 })).is_empty());
        assert!(step(&mut w0, msg(2, Msg::StatusPoll { election: 3, term: 0 })).is_empty());
        assert!(step(&mut w0, msg(1, Msg::Poll { term: 5 })).is_empty());
        assert_eq!((w0, w2), (before0, before2));
    }

    #[test]
    fn a_phase_that_hears_nothing_moves_on_when_its_timer_fires() {
        // w0 polls w1 and w2, which never answer; w0 carries on alone.
        let mut w0 = BullyGm::create(&Config::new(0, 3));
        step(&mut w0, Input::Start);
        step(&mut w0, Input::Call { call: ElectionCall::Elect });
        let acts = step(&mut w0, Input::Timer { timer: Timer::Replies { election: 1, phase: 1 } });
        // Nobody below w0 to tell: it wins at once and sets its poll.
        let won = Output::Event { event: ElectionEvent::Leader { id: PeerId(0), term: 3 } };
        assert_eq!(
            acts,
            [won, Output::SetTimer { timer: Timer::Poll { term: 3 }, after: poll_period(&Timing::DEFAULT) }]
        );
        assert_eq!(w0.leader, Some((PeerId(0), 3)));
        assert!(w0.waiting_for().is_empty());
        // The poll is set, and a stale phase timer does nothing now.
        assert!(step(&mut w0, Input::Timer { timer: Timer::Replies { election: 1, phase: 1 } }).is_empty());
        let polls = step(&mut w0, Input::Timer { timer: Timer::Poll { term: 3 } });
        assert_eq!(polls.len(), 3, "POLL to w1, w2 and the timer again: {polls:?}");
    }
}
