//! Bully election: the highest live id always ends up leader, because any live node
//! that hears of an election held by a lower one takes it over.
//!
//! Every node knows every other node's id. An election is a question sent upwards only
//! ("is anybody above me alive?"); silence means the asker is the highest alive, and it
//! tells everyone. A node that is asked and is alive tells the asker to stand down, and
//! asks the same question above itself, so the question climbs until it reaches the
//! highest live node, which hears nothing back and wins.
//!
//! # Messages
//!
//! - ELECTION { term }: "I am holding an election." Sent only to higher ids. `term` is
//!   the term of the leader the sender last accepted (0 if none); see *Late ELECTIONs*.
//! - ANSWER: the notes' OK. "I am alive and above you: stop, I take it from here."
//! - COORDINATOR { term }: "I won; I lead in `term`." From the winner to every other node
//!   not known to be down.
//! - STALE { term }: beyond the notes, for restarted nodes; see *Terms*.
//!
//! # When a node holds an election
//!
//! When its application calls `elect`; when it learns that the leader it follows is down
//! (`PeerDown`); when it starts as a restarted incarnation (`incarnation > 0`), since it
//! remembers nothing (if it is the highest live id, it takes over: it bullies its way
//! back); when an ELECTION from below reaches it; and when a COORDINATOR from below
//! reaches it (that node believed it dead). A node holds at most one election at a
//! time: from its ELECTION until it accepts a COORDINATOR, these are no news.
//!
//! # What a node does, in the order of the notes
//!
//! 1. *Holding an election*: ELECTION to every higher id not known to be down. With
//!    nobody left to ask, it has won (step 2 at once). Otherwise it waits up to
//!    [`answer_timeout`] for an ANSWER: the notes' 2·Tm + Tp, from the bounds the driver
//!    gives in [`Config::timing`] (the worker runtime from `--latency`, `--jitter` and
//!    the machine's load; the node reads no clock).
//! 2. *No ANSWER in time*: nobody above is alive. It wins: it takes a new term, tells its
//!    application, and sends COORDINATOR to every other node not known to be down.
//! 3. *An ANSWER*: somebody above is alive and holds its own election; this node's part
//!    is over. It waits up to [`coordinator_timeout`] for the winner's COORDINATOR.
//! 4. *No COORDINATOR in time*: whoever answered died before winning. Start again.
//! 5. *ELECTION from below*: ANSWER at once, then hold an election unless already
//!    holding one (but see *Late ELECTIONs*).
//! 6. *COORDINATOR*: from above, with a newer term, accept it (tell the application,
//!    stop electing). From below: the sender thinks this node is dead; do not accept, and
//!    hold an election, which this node, being higher, wins or passes further up.
//!
//! # Dead peers
//!
//! The driver reports crashes (`PeerDown`, `PeerUp`) and for now that report is
//! perfect. So a node asks no peer it knows is down, and an electing node that learns
//! its last unanswered higher peer is down wins at once instead of waiting out the
//! timeout. The timeouts stay for peers that die unnoticed, as in the notes' example,
//! where process 6 asks the crashed 7 and wins when 7 stays silent.
//!
//! # Late ELECTIONs
//!
//! Taken literally, rule 5 makes the new leader hold yet another election for every
//! ELECTION of the same round that reaches it after it won, and a node that has already
//! accepted the winner do the same. The term in ELECTION says how old the sender's view
//! is: an ELECTION whose term is older than the leader a node follows was sent before
//! that leader's COORDINATOR reached the sender, which it is already on its way to do.
//! So such a node only answers. The leader, though, is the highest live node, and rule 5
//! has it hold an election, which it wins at once: it announces again, to the asker. It
//! does so at once if its COORDINATOR never went to the asker (the asker was known to be
//! down then), and otherwise when the same node asks a second time: a first late
//! ELECTION may have crossed the COORDINATOR on its way, but a second one means it never
//! arrived (sent while the asker was down, before this node heard so, and the asker
//! restarted before it did: `mutexlab elect --algo bully -n 6 --seed 103 --nemesis
//! kill,restart --nemesis-interval 200` waited for it forever). An ELECTION from a node
//! that already follows the current leader is a new election (its application called
//! `elect`): the leader wins it again, with a new term.
//!
//! # Terms
//!
//! A term is `epoch·N + id` of its leader, where the epoch is one above the highest epoch
//! the winner has seen in any message (see [`next_term`]); the winner carries it in
//! COORDINATOR. The leader's id in the low digits means two different leaders never
//! share a term, and a node accepts a COORDINATOR only with a term above the one it
//! follows, so the terms it reports strictly increase. A restarted node has forgotten
//! every term: if it is the highest live node it wins at once with a term that may be
//! older than the one the others follow. They refuse it and answer STALE with their
//! term; the winner, still leader, declares again above it, unless that term is a higher
//! node's: then it holds an election, which the higher node wins if it is alive.
//!
//! # Cost, in messages per election
//!
//! With M live nodes, at least M-1: the COORDINATORs, when the highest live node holds
//! the election. That is the notes' best case: the coordinator has died and the second
//! highest notices; for N processes, N-2. At most M²-1, when the lowest asks: every one
//! of the M(M-1)/2 ELECTIONs is answered and the winner tells M-1 others (all nodes
//! electing at once costs the same). The notes' worst case, O(N²), is this with M = N-1
//! survivors: N(N-2). Without a failure detector every survivor also asks the dead
//! coordinator, N-1 ELECTIONs more: N²-N-1. See [`messages_per_election`].

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::algorithm::{
    Config, Election, ElectionCall, ElectionEvent, Input, Message, Node, NodeInput, NodeOut, PeerId, Timing,
};

/// How long a node that sent ELECTION waits for an ANSWER before it declares itself: the
/// notes' 2·Tm + Tp, for the run's message time Tm and processing time Tp
/// ([`Timing::reply`]).
pub fn answer_timeout(timing: &Timing) -> Duration {
    timing.reply()
}

/// How long a node that got an ANSWER waits for a COORDINATOR before it starts over:
/// three replies' time, 6·Tm + 3·Tp. The answerer's own election must fit in it: the
/// highest live node hears an ELECTION within Tm + Tp of ours (the asker sends to every
/// higher id at once), waits out its own ANSWER timeout (2·Tm + Tp) if a dead node is
/// above it, and its COORDINATOR takes Tm + Tp more: 4·Tm + 3·Tp.
pub fn coordinator_timeout(timing: &Timing) -> Duration {
    timing.reply().saturating_mul(3)
}

/// The fewest and the most messages one election costs among `live` live nodes, when
/// nobody fails during it: `live - 1` and `live² - 1` (see the module doc).
pub fn messages_per_election(live: u32) -> (u64, u64) {
    let m = u64::from(live);
    if m <= 1 {
        return (0, 0);
    }
    (m - 1, m * m - 1)
}

/// The term a node `leader` takes when it wins, having seen terms up to `seen`: the next
/// epoch, with the leader's id in the low digits (`epoch·n + id`), so it is above
/// `seen` and no other leader can have it. The ring elections form theirs the same way.
pub fn next_term(seen: u64, n: u32, leader: PeerId) -> u64 {
    let n = u64::from(n.max(1));
    (seen / n + 1) * n + u64::from(leader.0)
}

/// Messages of `bully`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// To a higher id: I am holding an election (the notes' ELECTION).
    Election {
        /// The term of the last leader the sender accepted (0 if none).
        term: u64,
    },
    /// To a lower id that sent ELECTION: I am alive and above you (the notes' OK).
    Answer,
    /// From the winner to all: I lead (the notes' COORDINATOR).
    Coordinator {
        /// The winner's new term, `epoch·N + id` ([`next_term`]).
        term: u64,
    },
    /// To a winner whose term is older than the one this node follows.
    Stale {
        /// The term this node follows, which the winner must outbid.
        term: u64,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Election { .. } => "ELECTION",
            Msg::Answer => "ANSWER",
            Msg::Coordinator { .. } => "COORDINATOR",
            Msg::Stale { .. } => "STALE",
        }
    }
}

/// Timers, tagged with the number of the election that set them, so a timer left over
/// from an earlier election means nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// Sent ELECTION; nobody answered.
    Answer {
        /// The number of the election that set it.
        election: u64,
    },
    /// Got an ANSWER; no COORDINATOR came.
    Coordinator {
        /// The number of the election that set it.
        election: u64,
    },
}

/// Where a node is in its own election.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Holding no election.
    Idle,
    /// Sent ELECTION to these higher ids; none has answered yet.
    Electing { asked: BTreeSet<PeerId> },
    /// These higher ids answered; waiting for a COORDINATOR.
    Answered { by: BTreeSet<PeerId> },
}

type O = NodeOut<Bully>;

/// One node of `bully`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bully {
    cfg: Config,
    /// Peers reported down and not since back up.
    down: BTreeSet<PeerId>,
    phase: Phase,
    /// The leader this node follows, with its term.
    leader: Option<(PeerId, u64)>,
    /// The highest term seen in any message.
    seen: u64,
    /// Number of this node's latest election, to recognise stale timers.
    election: u64,
    /// While leading: the peers its COORDINATOR went to (and that have not restarted).
    told: BTreeSet<PeerId>,
    /// While leading: the told peers that have sent a late ELECTION since they were told;
    /// another one from them means the COORDINATOR was lost (see *Late ELECTIONs*).
    asked_late: BTreeSet<PeerId>,
}

impl Bully {
    fn me(&self) -> PeerId {
        self.cfg.id
    }

    /// The term of the leader this node follows; 0 before it follows any.
    fn term(&self) -> u64 {
        self.leader.map_or(0, |(_, term)| term)
    }

    fn leading(&self) -> bool {
        self.leader.is_some_and(|(id, _)| id == self.me())
    }

    fn electing(&self) -> bool {
        self.phase != Phase::Idle
    }

    fn see(&mut self, term: u64) {
        self.seen = self.seen.max(term);
    }

    /// Forget the timer of the current phase, if it has one.
    fn cancel_timer(&self, out: &mut O) {
        let election = self.election;
        match self.phase {
            Phase::Idle => {}
            Phase::Electing { .. } => out.cancel_timer(Timer::Answer { election }),
            Phase::Answered { .. } => out.cancel_timer(Timer::Coordinator { election }),
        }
    }

    /// 1. Hold an election: ask every higher id not known to be down.
    fn hold_election(&mut self, out: &mut O) {
        self.cancel_timer(out);
        self.election += 1;
        out.count("elections", 1);
        let me = self.me();
        let asked: BTreeSet<PeerId> =
            self.cfg.others().filter(|p| *p > me && !self.down.contains(p)).collect();
        if asked.is_empty() {
            return self.win(out);
        }
        for &p in &asked {
            out.send(p, Msg::Election { term: self.term() });
        }
        self.phase = Phase::Electing { asked };
        out.set_timer(Timer::Answer { election: self.election }, answer_timeout(&self.cfg.timing));
    }

    /// 2. Nobody above is alive: lead in a new term and tell everyone.
    fn win(&mut self, out: &mut O) {
        self.cancel_timer(out);
        self.phase = Phase::Idle;
        let me = self.me();
        let term = next_term(self.seen, self.cfg.n, me);
        self.seen = term;
        self.leader = Some((me, term));
        out.emit(ElectionEvent::Leader { id: me, term });
        self.told = self.cfg.others().filter(|p| !self.down.contains(p)).collect();
        self.asked_late.clear();
        for &p in &self.told {
            out.send(p, Msg::Coordinator { term });
        }
    }

    /// 3. Somebody above answered: it takes over; wait for the winner.
    ///
    /// Later ANSWERs are noted too: this node starts again early only once all who
    /// answered are down.
    fn on_answer(&mut self, from: PeerId, out: &mut O) {
        if let Phase::Answered { by } = &mut self.phase {
            if from > self.cfg.id {
                by.insert(from);
            }
            return;
        }
        if let Phase::Electing { asked } = &self.phase {
            if asked.contains(&from) {
                self.cancel_timer(out);
                self.phase = Phase::Answered { by: BTreeSet::from([from]) };
                out.set_timer(
                    Timer::Coordinator { election: self.election },
                    coordinator_timeout(&self.cfg.timing),
                );
            }
        }
    }

    /// 2 and 4: the timers. A timer of an earlier election, or of a phase this node has
    /// left, is stale.
    fn on_timer(&mut self, timer: Timer, out: &mut O) {
        match (timer, &self.phase) {
            (Timer::Answer { election }, Phase::Electing { .. }) if election == self.election => {
                self.win(out)
            }
            (Timer::Coordinator { election }, Phase::Answered { .. }) if election == self.election => {
                self.hold_election(out)
            }
            _ => {}
        }
    }

    /// 5. ELECTION from below: answer, and take the election over unless it is no news.
    fn on_election(&mut self, from: PeerId, term: u64, out: &mut O) {
        self.see(term);
        if from > self.me() {
            return; // Only lower ids ask; nothing to stand up to.
        }
        out.send(from, Msg::Answer);
        if self.electing() {
            return;
        }
        let mine = self.term();
        if term < mine {
            // The asker has not yet heard of the leader this node follows. The leader
            // announces again if its COORDINATOR never went there, or if this is the
            // asker's second late ELECTION: the first may have crossed it.
            if self.leading() && (!self.told.contains(&from) || !self.asked_late.insert(from)) {
                self.told.insert(from);
                self.asked_late.remove(&from);
                out.count("reannounced", 1);
                out.send(from, Msg::Coordinator { term: mine });
            }
            return;
        }
        self.hold_election(out);
    }

    /// 6. COORDINATOR: accept a newer leader from above; stand up to one from below.
    fn on_coordinator(&mut self, from: PeerId, term: u64, out: &mut O) {
        self.see(term);
        if from < self.me() {
            if !self.electing() {
                self.hold_election(out);
            }
            return;
        }
        if self.leader == Some((from, term)) {
            // Told again (this node was electing while it came): nothing new to report.
            self.cancel_timer(out);
            self.phase = Phase::Idle;
        } else if term > self.term() {
            self.cancel_timer(out);
            self.phase = Phase::Idle;
            self.leader = Some((from, term));
            self.told.clear();
            self.asked_late.clear();
            out.emit(ElectionEvent::Leader { id: from, term });
            if self.down.contains(&from) {
                // It died after it won: the news came late.
                self.hold_election(out);
            }
        } else {
            out.send(from, Msg::Stale { term: self.term() });
        }
    }

    /// A node follows a newer term than the one this node won with. Its leader's id is
    /// the term's low digits: a lower one is outbid (win again above it); a higher one
    /// outranks this node, which asks those above instead, as rule 6 does. Outbidding a
    /// higher leader too let two nodes raise each other's terms without end after one
    /// false suspicion (`mutexlab check` found the way).
    fn on_stale(&mut self, term: u64, out: &mut O) {
        self.see(term);
        if !self.leading() || term <= self.term() {
            return;
        }
        let leader = PeerId((term % u64::from(self.cfg.n.max(1))) as u32);
        if leader > self.me() {
            if !self.electing() {
                self.hold_election(out);
            }
        } else {
            self.win(out);
        }
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut O) {
        self.down.insert(peer);
        match &mut self.phase {
            // Dead peers do not answer: with nobody left to, this node has won.
            Phase::Electing { asked } => {
                asked.remove(&peer);
                if asked.is_empty() {
                    self.win(out);
                }
            }
            // Those that answered hold the election on: only with all of them down will
            // none win. (Starting again at any higher death made every node that answered
            // before it heard of a dead leader ask twice.)
            Phase::Answered { by } => {
                by.remove(&peer);
                if by.is_empty() {
                    self.hold_election(out);
                }
            }
            Phase::Idle if self.leader.is_some_and(|(id, _)| id == peer) => self.hold_election(out),
            _ => {}
        }
    }

    /// A peer is back: a new incarnation, or (under a heartbeat detector) one wrongly
    /// taken for dead, such as a paused leader, which never heard of this node's win. A
    /// leader that outranks it tells it again; one it outranks is asked to take over.
    fn on_peer_up(&mut self, peer: PeerId, out: &mut O) {
        self.down.remove(&peer);
        self.told.remove(&peer);
        self.asked_late.remove(&peer);
        if !self.leading() || self.electing() {
            return;
        }
        if peer > self.me() {
            self.hold_election(out);
        } else {
            out.send(peer, Msg::Coordinator { term: self.term() });
            self.told.insert(peer);
        }
    }
}

impl Node for Bully {
    type Msg = Msg;
    type Timer = Timer;
    type Service = Election;

    fn create(cfg: &Config) -> Self {
        Bully {
            cfg: cfg.clone(),
            down: BTreeSet::new(),
            phase: Phase::Idle,
            leader: None,
            seen: 0,
            election: 0,
            told: BTreeSet::new(),
            asked_late: BTreeSet::new(),
        }
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut O) {
        match input {
            Input::Start if self.cfg.incarnation > 0 => self.hold_election(out),
            Input::Start => {}
            Input::Call { call: ElectionCall::Elect } if !self.electing() => self.hold_election(out),
            Input::Call { call: ElectionCall::Elect } => {}
            Input::Message { from, msg } => match msg {
                Msg::Election { term } => self.on_election(from, term, out),
                Msg::Answer => self.on_answer(from, out),
                Msg::Coordinator { term } => self.on_coordinator(from, term, out),
                Msg::Stale { term } => self.on_stale(term, out),
            },
            Input::Timer { timer } => self.on_timer(timer, out),
            Input::PeerDown { peer } => self.on_peer_down(peer, out),
            Input::PeerUp { peer } => self.on_peer_up(peer, out),
        }
    }

    /// The check's counter bound: the highest term seen or followed, or the number of
    /// this node's latest election, whichever is larger.
    fn counter(&self) -> u64 {
        self.seen.max(self.term()).max(self.election)
    }

    fn waiting_for(&self) -> String {
        match &self.phase {
            Phase::Idle => String::new(),
            Phase::Electing { asked } => {
                let who: Vec<String> = asked.iter().map(PeerId::to_string).collect();
                format!("electing: waiting for ANSWER from {}", who.join(", "))
            }
            Phase::Answered { by } => {
                let who: Vec<String> = by.iter().map(PeerId::to_string).collect();
                format!("electing: answered by {}, waiting for COORDINATOR", who.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mutexlab_core::script::elect::{elect_once, scenarios, within, Initiators, Net};
    use mutexlab_core::script::timed::{Machine, Timed};

    fn trace(net: &Net<Bully>, mark: usize) -> Vec<(u32, u32, &str)> {
        net.sent_since(mark).iter().map(|s| (s.from, s.to, s.kind.as_str())).collect()
    }

    /// The ANSWER and COORDINATOR timeouts follow the run's bounds: with 60 ms of latency
    /// a node waits 2×60 + 50 = 170 ms, not the 100 ms once fixed (which a reply over a
    /// 60 ms link, 120 ms there and back, outlasts).
    #[test]
    fn the_timeouts_follow_the_runs_message_and_processing_times() {
        let ms = Duration::from_millis;
        let slow = Timing { message: ms(60), processing: ms(50) };
        assert_eq!(answer_timeout(&slow), ms(170));
        assert_eq!(coordinator_timeout(&slow), ms(510));
        assert_ne!(answer_timeout(&slow), ms(100), "the old fixed value");
        assert!(answer_timeout(&slow) > 2 * slow.message, "a reply's round trip fits");
        assert_eq!(answer_timeout(&Timing::DEFAULT), ms(50));
        // The node arms what its configuration says.
        let mut w0 = Bully::create(&Config { timing: slow, ..Config::new(0, 3) });
        let mut out = O::new(Duration::ZERO);
        w0.step(Input::Call { call: ElectionCall::Elect }, &mut out);
        let armed =
            crate::algorithm::Output::SetTimer { timer: Timer::Answer { election: 1 }, after: ms(170) };
        assert!(out.actions().contains(&armed), "{:?}", out.actions());
    }

    /// The machine of the runs at scale, in the timed driver: 2 cores, 20 µs of CPU for
    /// each message a node handles, up to 1 ms on the wire.
    fn loaded() -> Machine {
        Machine { cores: 2, cost: Duration::from_micros(20), delay: Duration::from_millis(1) }
    }

    /// Every node elects at once at N = 128 on that machine, and the highest waits 150 ms
    /// for a core (of the ⌈128/2⌉ × 3 ms = 192 ms a ready process may wait there). A
    /// timeout derived with that processing time, as the runtime derives it, outlasts
    /// the late replies: one election, within the theory's M² - 1.
    #[test]
    fn at_scale_the_derived_timeout_holds_one_election_within_the_bound() {
        let n = 128;
        let timing = Timing { message: loaded().delay, processing: Duration::from_millis(192) };
        let mut net = Timed::<Bully>::new(n, timing, loaded(), 1);
        net.stall(n - 1, Duration::from_millis(150));
        net.elect_all();
        net.run().unwrap();
        net.check().unwrap();
        assert_eq!(net.elections(), 1, "{:?}", net.terms.keys().collect::<Vec<_>>());
        within(net.sent, messages_per_election(n)).unwrap();
    }

    /// Negative control: the same run with the default 50 ms (and the 100 ms once fixed)
    /// times out on replies that are only late: nodes below the highest win, the highest
    /// bullies them, and the messages pass the bound.
    #[test]
    fn at_scale_a_short_timeout_holds_many_elections_beyond_the_bound() {
        let n = 128;
        for reply in [50, 100] {
            let timing = Timing { message: Duration::ZERO, processing: Duration::from_millis(reply) };
            let mut net = Timed::<Bully>::new(n, timing, loaded(), 1);
            net.stall(n - 1, Duration::from_millis(150));
            net.elect_all();
            net.run().unwrap();
            net.check().unwrap();
            assert!(net.elections() > 1, "{reply} ms: {} elections", net.elections());
            assert!(within(net.sent, messages_per_election(n)).is_err(), "{reply} ms: {} messages", net.sent);
        }
    }

    #[test]
    fn terms_carry_the_leader_and_rise_above_what_was_seen() {
        assert_eq!(next_term(0, 8, PeerId(7)), 15);
        assert_eq!(next_term(15, 8, PeerId(6)), 22);
        assert_eq!(next_term(22, 8, PeerId(7)), 31);
        assert_eq!(next_term(0, 1, PeerId(0)), 1);
        assert_eq!(messages_per_election(1), (0, 0));
        assert_eq!(messages_per_election(8), (7, 63));
    }

    /// The notes' example: eight processes, 7 the coordinator. 7 crashes; only 4
    /// notices. 4 asks 5 and 6, which answer and hold elections of their own; 6 answers
    /// 5; 6 asks 7 and hears nothing, wins and tells everyone. Then 7 recovers and holds
    /// an election: nobody is above it, so it takes over.
    #[test]
    fn notes_example_7_crashes_4_notices_6_wins_then_7_bullies_back() {
        let mut net = Net::<Bully>::new(8);
        net.elect(7);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(7)));
        assert_eq!(net.leader_of(0), Some((PeerId(7), 15)));

        net.crash(7);
        let mark = net.sent.len();
        net.notice(4, 7);
        assert_eq!(net.node(4).waiting_for(), "electing: waiting for ANSWER from w5, w6");
        net.run().unwrap();
        #[rustfmt::skip]
        let expected = [
            (4, 5, "ELECTION"), (4, 6, "ELECTION"),
            (5, 4, "ANSWER"), (5, 6, "ELECTION"), (5, 7, "ELECTION"),
            (6, 4, "ANSWER"), (6, 7, "ELECTION"),
            (6, 5, "ANSWER"),
            // Quiet: 6's wait for an ANSWER from 7 runs out first.
            (6, 0, "COORDINATOR"), (6, 1, "COORDINATOR"), (6, 2, "COORDINATOR"),
            (6, 3, "COORDINATOR"), (6, 4, "COORDINATOR"), (6, 5, "COORDINATOR"),
            (6, 7, "COORDINATOR"),
        ];
        assert_eq!(trace(&net, mark), expected);
        assert_eq!(net.check(), Ok(PeerId(6)));
        assert!((0..7).all(|i| net.leader_of(i) == Some((PeerId(6), 22))));
        assert!((0..7).all(|i| net.node(i).waiting_for().is_empty()));
        within(expected.len(), messages_per_election(7)).unwrap();

        // 7 comes back knowing no term: it wins at once with an old one, is told STALE by
        // all, and wins again above them.
        let mark = net.sent.len();
        net.restart(7);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(7)));
        assert!((0..8).all(|i| net.leader_of(i) == Some((PeerId(7), 31))));
        assert_eq!(net.count_since(mark, "STALE"), 7);
        assert_eq!(net.count_since(mark, "COORDINATOR"), 14);
        assert_eq!(net.sent_since(mark).len(), 21);
    }

    /// The notes' best case: the coordinator has died and the second highest notices.
    #[test]
    fn notes_best_case_the_second_highest_notices_n_minus_2() {
        for n in 2..=32 {
            let (net, m) = elect_once::<Bully>(n, Some(n - 1), Initiators::Highest);
            assert_eq!(m as u32, n - 2, "n = {n}");
            assert_eq!(m as u64, messages_per_election(n - 1).0);
            assert_eq!(net.count_since(0, "ELECTION"), 0);
        }
    }

    /// The notes' worst case: the lowest notices, and every live node above it holds an
    /// election too.
    #[test]
    fn lowest_initiator_costs_m_squared_minus_1() {
        for n in 2..=32 {
            let (_, m) = elect_once::<Bully>(n, None, Initiators::Lowest);
            assert_eq!(m as u64, u64::from(n * n - 1), "n = {n}");
            within(m, messages_per_election(n)).unwrap();
            let (_, m) = elect_once::<Bully>(n, Some(n - 1), Initiators::Lowest);
            assert_eq!(m as u64, u64::from(n * (n - 2)), "n = {n}, the highest dead");
            within(m, messages_per_election(n - 1)).unwrap();
        }
    }

    #[test]
    fn all_initiators_at_once_end_with_one_leader_at_the_same_cost() {
        for n in 2..=32 {
            let (net, m) = elect_once::<Bully>(n, None, Initiators::All);
            assert_eq!(m as u64, u64::from(n * n - 1), "n = {n}");
            assert_eq!(net.count_since(0, "COORDINATOR") as u32, n - 1, "one winner, once");
            let (_, m) = elect_once::<Bully>(n, Some(n - 1), Initiators::All);
            assert_eq!(m as u64, u64::from(n * (n - 2)), "n = {n}, the highest dead");
        }
    }

    #[test]
    fn a_dead_middle_node_is_skipped() {
        for n in 3..=32 {
            for who in [Initiators::Lowest, Initiators::All] {
                let (net, m) = elect_once::<Bully>(n, Some(n / 2), who);
                within(m, messages_per_election(n - 1)).unwrap();
                assert!(net.sent.iter().all(|s| s.to != n / 2), "nobody asks the dead");
            }
        }
    }

    /// Killing the leader after it won: everyone notices, everyone elects, the next one
    /// down wins with a higher term; again and again until one node is left.
    #[test]
    fn the_leader_dies_and_the_next_takes_over_with_a_higher_term() {
        scenarios::the_leader_dies_again_and_again::<Bully>();
    }

    #[test]
    fn a_second_call_elects_the_same_leader_again_in_a_new_term() {
        let mut net = Net::<Bully>::new(4);
        net.elect(0);
        net.run().unwrap();
        let mark = net.sent.len();
        net.elect(1);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(3)));
        assert_eq!(net.leader_of(0), Some((PeerId(3), 11)));
        // 1 asks 2 and 3; 2 asks 3; 3 wins again: 3 + 3 + 3.
        assert_eq!(net.sent_since(mark).len(), 9);
    }

    #[test]
    fn a_restarted_low_node_hears_the_leader_again_without_a_new_term() {
        let mut net = Net::<Bully>::new(4);
        net.elect(3);
        net.run().unwrap();
        net.kill(1);
        net.run().unwrap();
        let mark = net.sent.len();
        net.restart(1);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(3)));
        assert_eq!(net.leader_of(1), Some((PeerId(3), 7)));
        // 3 tells 1 who leads as soon as it is back (1 was down when 3 won); 1 asks 2
        // and 3, both answer and, knowing the leader, only answer.
        #[rustfmt::skip]
        let expected = [
            (3, 1, "COORDINATOR"), (1, 2, "ELECTION"), (1, 3, "ELECTION"), (2, 1, "ANSWER"),
            (3, 1, "ANSWER"),
        ];
        assert_eq!(trace(&net, mark), expected);
    }

    /// `elect -n 6 --seed 103 --nemesis kill,restart`, reduced: the leader's COORDINATOR
    /// to w0 is lost while w0 is down (nobody has noticed), and w0 is back before anybody
    /// does. Its first ELECTION may have crossed the COORDINATOR, so it is only answered;
    /// its second makes the leader announce again. It was answered for ever.
    #[test]
    fn a_coordinator_lost_to_a_node_that_was_down_is_announced_again() {
        let mut net = Net::<Bully>::new(3);
        net.crash(0);
        net.elect(2);
        net.run().unwrap();
        assert_eq!(net.leader_of(1), Some((PeerId(2), 5)));
        let mark = net.sent.len();
        net.revive_unseen(0);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(2)));
        assert_eq!(net.leader_of(0), Some((PeerId(2), 5)));
        #[rustfmt::skip]
        let expected = [
            (0, 1, "ELECTION"), (0, 2, "ELECTION"), (1, 0, "ANSWER"), (2, 0, "ANSWER"),
            // No COORDINATOR: w0 asks again, and w2 announces again.
            (0, 1, "ELECTION"), (0, 2, "ELECTION"), (1, 0, "ANSWER"), (2, 0, "ANSWER"),
            (2, 0, "COORDINATOR"),
        ];
        assert_eq!(trace(&net, mark), expected);
    }

    #[test]
    fn stale_timers_and_stray_messages_change_nothing() {
        let mut net = Net::<Bully>::new(3);
        net.elect(0);
        net.run().unwrap();
        let mut w0 = net.node(0).clone();
        let before = w0.clone();
        let mut out = O::new(Duration::ZERO);
        w0.step(Input::Timer { timer: Timer::Answer { election: 1 } }, &mut out);
        w0.step(Input::Timer { timer: Timer::Coordinator { election: 1 } }, &mut out);
        w0.step(Input::Message { from: PeerId(2), msg: Msg::Answer }, &mut out);
        assert!(out.actions().is_empty(), "{:?}", out.actions());
        assert_eq!(w0, before);
        // An ELECTION from above is ignored; a STALE to a non-leader too.
        w0.step(Input::Message { from: PeerId(1), msg: Msg::Election { term: 0 } }, &mut out);
        w0.step(Input::Message { from: PeerId(2), msg: Msg::Stale { term: 99 } }, &mut out);
        assert!(out.actions().is_empty(), "{:?}", out.actions());
    }

    #[test]
    fn a_node_that_dies_unnoticed_is_outlived_by_the_answer_timeout() {
        let mut net = Net::<Bully>::new(3);
        net.elect(0);
        // 2 crashes before it reads the ELECTION, and nobody is told: 1 asks it in vain.
        net.crash(2);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(1)));
    }

    #[test]
    fn no_coordinator_after_an_answer_means_starting_again() {
        let mut w0 = Bully::create(&Config::new(0, 3));
        let mut out = O::new(Duration::ZERO);
        w0.step(Input::Call { call: ElectionCall::Elect }, &mut out);
        w0.step(Input::Message { from: PeerId(1), msg: Msg::Answer }, &mut out);
        assert_eq!(w0.waiting_for(), "electing: answered by w1, waiting for COORDINATOR");
        out.reset(Duration::ZERO);
        w0.step(Input::Timer { timer: Timer::Coordinator { election: 1 } }, &mut out);
        let sends: Vec<_> = out
            .actions()
            .iter()
            .filter_map(|a| match a {
                crate::algorithm::Output::Send { to, msg } => Some((to.0, msg.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(sends, [(1, Msg::Election { term: 0 }), (2, Msg::Election { term: 0 })]);
        assert_eq!(w0.waiting_for(), "electing: waiting for ANSWER from w1, w2");
        // The first election's timers are stale now.
        out.reset(Duration::ZERO);
        w0.step(Input::Timer { timer: Timer::Coordinator { election: 1 } }, &mut out);
        w0.step(Input::Timer { timer: Timer::Answer { election: 1 } }, &mut out);
        assert!(out.actions().is_empty(), "{:?}", out.actions());
    }

    #[test]
    fn an_answered_node_starts_again_only_when_all_who_answered_are_down() {
        // w0 of 4 asks w1 and w2 (w3, the leader, is dead but not yet reported); both
        // answer. The leader's death is no news to the election that w1 and w2 hold on:
        // w0 asks nobody again (it once did, at any higher death). w1's is no news
        // either; only with w2 down too does w0 start over.
        let mut w0 = Bully::create(&Config::new(0, 4));
        let mut out = O::new(Duration::ZERO);
        w0.step(Input::PeerDown { peer: PeerId(3) }, &mut out);
        w0.step(Input::Call { call: ElectionCall::Elect }, &mut out);
        w0.step(Input::Message { from: PeerId(1), msg: Msg::Answer }, &mut out);
        w0.step(Input::Message { from: PeerId(2), msg: Msg::Answer }, &mut out);
        assert_eq!(w0.waiting_for(), "electing: answered by w1, w2, waiting for COORDINATOR");
        let mut w0b = Bully::create(&Config::new(0, 4));
        let mut out = O::new(Duration::ZERO);
        w0b.step(Input::Call { call: ElectionCall::Elect }, &mut out);
        w0b.step(Input::Message { from: PeerId(2), msg: Msg::Answer }, &mut out);
        out.reset(Duration::ZERO);
        w0b.step(Input::PeerDown { peer: PeerId(3) }, &mut out);
        assert!(out.actions().iter().all(|a| !matches!(a, crate::algorithm::Output::Send { .. })));
        assert_eq!(w0b.waiting_for(), "electing: answered by w2, waiting for COORDINATOR");
        w0.step(Input::PeerDown { peer: PeerId(1) }, &mut out);
        assert_eq!(w0.waiting_for(), "electing: answered by w2, waiting for COORDINATOR");
        w0.step(Input::PeerDown { peer: PeerId(2) }, &mut out);
        // Everyone above is down now: it asks nobody and wins at once.
        assert_eq!(w0.waiting_for(), "");
        assert_eq!(w0.leader, Some((PeerId(0), next_term(0, 4, PeerId(0)))));
    }

    #[test]
    fn a_leader_wrongly_taken_for_dead_is_asked_to_take_over_when_it_is_heard_again() {
        // w3 led; paused, it was taken for dead, and w2 won. When w3 is heard again, w2
        // asks it to take over (w3 never heard of w2's win, and outranks it); a lower
        // peer that comes back is told who leads.
        let mut net = Net::<Bully>::new(4);
        net.elect(0);
        net.run().unwrap();
        let mut w2 = net.node(2).clone();
        let mut out = O::new(Duration::ZERO);
        w2.step(Input::PeerDown { peer: PeerId(3) }, &mut out);
        assert!(w2.leading(), "w2 won once w3 was taken for dead");
        let term = w2.term();
        out.reset(Duration::ZERO);
        w2.step(Input::PeerDown { peer: PeerId(0) }, &mut out);
        w2.step(Input::PeerUp { peer: PeerId(0) }, &mut out);
        let told = crate::algorithm::Output::Send { to: PeerId(0), msg: Msg::Coordinator { term } };
        assert_eq!(out.actions(), [told]);
        out.reset(Duration::ZERO);
        w2.step(Input::PeerUp { peer: PeerId(3) }, &mut out);
        let asked = crate::algorithm::Output::Send { to: PeerId(3), msg: Msg::Election { term } };
        assert!(out.actions().contains(&asked), "{:?}", out.actions());
    }

    #[test]
    fn a_lower_coordinator_is_bullied() {
        let mut net = Net::<Bully>::new(3);
        net.elect(0);
        net.run().unwrap();
        let mut w2 = net.node(2).clone();
        let mut out = O::new(Duration::ZERO);
        w2.step(Input::Message { from: PeerId(1), msg: Msg::Coordinator { term: 10 } }, &mut out);
        // Not accepted; 2 wins again above the term it saw.
        let won =
            crate::algorithm::Output::Event { event: ElectionEvent::Leader { id: PeerId(2), term: 14 } };
        assert!(out.actions().contains(&won), "{:?}", out.actions());
        assert_eq!(w2.leader, Some((PeerId(2), 14)));
    }

    #[test]
    fn stale_news_of_a_higher_leader_makes_a_leader_ask_not_outbid() {
        // w1 won after a false suspicion of w2 (term 4 at n = 3); w0 follows w2's term 5.
        let mut w1 = Bully::create(&Config::new(1, 3));
        let mut out = O::new(Duration::ZERO);
        w1.step(Input::Call { call: ElectionCall::Elect }, &mut out);
        w1.step(Input::Timer { timer: Timer::Answer { election: 1 } }, &mut out);
        assert_eq!(w1.leader, Some((PeerId(1), 4)));
        let leader = |out: &O| {
            out.actions()
                .iter()
                .any(|a| matches!(a, crate::algorithm::Output::Event { event: ElectionEvent::Leader { .. } }))
        };
        // STALE with w2's term 5: w1 asks w2 (it would answer and win), and does not
        // win again above it, which let the two outbid each other without end.
        let mut asks = w1.clone();
        out.reset(Duration::ZERO);
        asks.step(Input::Message { from: PeerId(0), msg: Msg::Stale { term: 5 } }, &mut out);
        assert!(!leader(&out), "{:?}", out.actions());
        let asked = crate::algorithm::Output::Send { to: PeerId(2), msg: Msg::Election { term: 4 } };
        assert!(out.actions().contains(&asked), "{:?}", out.actions());
        // STALE with a lower node's term (w0's, 6): outbid as before.
        out.reset(Duration::ZERO);
        w1.step(Input::Message { from: PeerId(0), msg: Msg::Stale { term: 6 } }, &mut out);
        let won =
            crate::algorithm::Output::Event { event: ElectionEvent::Leader { id: PeerId(1), term: 10 } };
        assert!(out.actions().contains(&won), "{:?}", out.actions());
    }
}
