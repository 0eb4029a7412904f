//! Hirschberg and Sinclair's ring election: candidates probe ever wider stretches of a
//! two-way ring, twice as far each phase, so few of them get to probe far, and an
//! election costs O(N log N) messages where Chang-Roberts can cost O(N²).
//!
//! Beyond the notes, which give the one-way ring elections. The nodes sit in the same
//! ring as in `chang_roberts` (0 → 1 → … → N-1 → 0), but send both ways: *up* to the
//! next live node round the ring, *down* to the previous one. A candidate never sends its
//! id all the way round at once. In phase k it sends a probe each way, to go 2^k nodes
//! out; a probe comes back as a reply only if every node it met had a smaller id. With
//! both replies in, the candidate is the largest within 2^k nodes on either side, and it
//! goes on to phase k+1. A probe that meets a larger id is swallowed, and its candidate
//! gets no further. The probes of the largest id are never swallowed; once 2^k reaches
//! the size of the ring they come all the way round, and it knows it is the largest.
//!
//! # Messages
//!
//! - PROBE { id, round, phase, hops, dir, term }: candidate `id`'s probe of `phase`,
//!   `hops` nodes from it so far, travelling `dir` (up or down). `round` numbers the
//!   candidate's pairs of probes, so it can tell the answers to its latest pair from
//!   stale ones (see *Dead peers*); `term` is the newest term any node it passed has
//!   seen (see *Terms*).
//! - REPLY { id, round, phase, dir }: "your probe went its 2^phase nodes and met only
//!   smaller ids", travelling `dir`, back to `id`.
//! - ELECTED { id, term }: "`id` leads, in `term`." From the winner, up round the ring,
//!   passed on unchanged back to it.
//!
//! Messages say which way they travel because in a ring of two the next node up and the
//! next node down are the same node.
//!
//! # What a node does
//!
//! A node is *idle* (taking no part in an election), a *candidate* (in some phase, waiting
//! for the answers to its two probes), or *beaten* (it has passed on a larger id's probe,
//! so it cannot win; it waits for ELECTED).
//! 1. *Starting an election* (its application calls `elect`, it learns the leader it
//!    follows is down, or it starts as a restarted incarnation), unless it is a
//!    candidate or beaten already: it becomes a candidate in phase 0 and sends
//!    PROBE(own id, phase 0, hops 1) up and down.
//! 2. *PROBE with a larger id*: this node cannot win; it is beaten. If the probe has gone
//!    its 2^phase hops, its way out is over: REPLY back the way it came. Otherwise it
//!    passes the probe on the way it was going, one hop further.
//! 3. *PROBE with a smaller id*: swallow it. A node that is idle joins the election
//!    (rule 1): the node that sent the probe may not be the largest, and this node may
//!    be, or lead to it.
//! 4. *REPLY for another node*: pass it on the way it is going.
//! 5. *REPLY for itself*, to its latest round: that side is done. With both sides done,
//!    go to the next phase: probes up and down to go twice as far.
//! 6. *PROBE with its own id*, of its latest round: it went all the way round, and every
//!    node on the way was smaller. With both probes home, it has won: it takes a new
//!    term, tells its application, and sends ELECTED up.
//! 7. *ELECTED* for another node: accept the leader (become idle), pass it on.
//! 8. *ELECTED with its own id*: the announcement went all the way round; drop it.
//!
//! Who joins (rule 3): a node that nobody asked becomes a candidate the first time it
//! swallows a probe, as in Chang-Roberts, and stays a passive relay if the first probe
//! it sees is larger than itself: such a node can never win. With one initiator, only
//! the nodes that meet a smaller probe before a larger one run: the cost is at least
//! the largest's alone, and within the bound of *Cost*, which counts every node as a
//! candidate in phase 0.
//!
//! Rule 6 waits for *both* probes, where the classic algorithm declares on the first
//! one home. It costs no message (the second probe is on its way anyway) and it leaves
//! nothing behind: every other candidate's probe travelled ahead of one of the winner's
//! and was swallowed before that one came home, and every node that passed the winner's
//! probe is beaten and starts no more. So when ELECTED sets out, no probe of the
//! election is left to wake a node that has already accepted the leader.
//!
//! # Dead peers
//!
//! A node sends to the next node up or down that it does not know to be down, so a dead
//! node is simply left out of the ring. Beyond the algorithm, which assumes nobody
//! fails, as `chang_roberts` does:
//! - A candidate or beaten node that learns any peer is down starts over as a candidate
//!   in phase 0 (its probes, their replies, or the winner's probes may have died with
//!   that peer). Its new probes are a new round, so the answers to the abandoned ones,
//!   still on their way, are ignored. Rounds count on from `incarnation << 32`, so a
//!   restarted node ignores the probes of its earlier life too.
//! - News comes to each node in its own time, so a node that has not heard yet can pass
//!   a message into a dead node after its owner heard, started over, and waits for
//!   nothing more. So a node keeps timers of its own: a candidate in phase k that has
//!   not both answers within 2^(k+1) hops ([`HOP`]) sends the phase again; a leader
//!   whose ELECTED is not home within N hops announces again; a beaten node that gets
//!   no ELECTED within 16N hops runs. Safety never rests on them: they only send again.
//!   An election that ends cancels them all, so when nobody fails they fire only if a
//!   hop takes longer than [`HOP`].
//! - A probe that comes home while its twin is answered with a reply means the ring
//!   grew or shrank between the two: the candidate sends the phase again at once.
//! - Probes and replies of a node known to be down are dropped: nobody waits for them.
//!   An ELECTED naming a node known to be down is not accepted; an election starts.
//! - A node whose probes both came home leads only if it knows every larger peer to be
//!   down: no larger node relays its probe, so a larger one that is up was skipped while
//!   it was dead and is back. It starts over instead, through that peer.
//! - A leader whose ELECTED has not come home when it learns a peer is down or back up
//!   announces again in a newer term, as in `chang_roberts` (the ELECTED may have died,
//!   or skipped the node that is back).
//! - A node does not accept a leader with a smaller id than its own: that leader won
//!   while this node was down. It runs instead (bully's answer to a COORDINATOR from
//!   below).
//! - A node that follows a leader not known to be down measures probes against that
//!   leader's id as well as its own: a probe below the leader cannot win while the
//!   leader lives, so it is swallowed (and the node joins, if idle), and only a probe
//!   larger than both makes it beaten. In a first election nobody follows anyone and
//!   this changes nothing. Later it keeps stray probes (left behind by a crash) from
//!   leaving a node beaten with no election to end it, and it makes a new election
//!   while the leader lives cheap: every probe but the leader's dies at its first hop.
//!
//! # Terms
//!
//! As in `chang_roberts`: every node that sends a probe raises its term to the newest it
//! has seen, so the winner's probes, which passed every live node, come home with the
//! newest term anyone has. The winner takes the next one above it ([`next_term`]:
//! `epoch·N + id`, so two different leaders never share a term) and carries it in
//! ELECTED. A node accepts an ELECTED only with a term above the one it follows, so the
//! terms it reports strictly increase.
//!
//! # Cost, in messages per election
//!
//! With M live nodes, let K = ⌈log2 M⌉: the first phase whose probes, going 2^K ≥ M
//! hops, come all the way round.
//! - Phase 0: each candidate sends 2 probes, and a probe comes back as a reply only from
//!   a smaller neighbour. Each of the M links of the ring has one smaller end, so at most
//!   M replies: at most 3M, exactly 3M when every node runs.
//! - Phase k, 0 < k < K: a candidate got there by being the largest within 2^(k-1) on
//!   either side, so any two are more than 2^(k-1) apart: at most ⌊M / (2^(k-1) + 1)⌋
//!   of them, each sending 2^k probe messages each way and getting as many reply
//!   messages back: at most 4·2^k each.
//! - Phase K: two candidates would have to be more than 2^(K-1) apart both ways round,
//!   so M > 2^K; only the largest is left. Its probes go round, M hops each: 2M.
//! - ELECTED: M.
//!
//! At most 6M + Σ_{0<k<K} 2^(k+2)·⌊M / (2^(k-1) + 1)⌋ then, under the classic
//! 8M(K+1). At least, the largest alone: its probes are never swallowed and every phase
//! before the last is answered in full, 4·(1 + 2 + … + 2^(K-1)) = 4(2^K − 1), then 2M
//! and M: 4(2^K − 1) + 3M. See [`messages_per_election`].
//!
//! On this ring, ids rise going up, so each node but the largest has a larger neighbour
//! and only the largest gets past phase 0. With everyone running: 3M, then 4·2^k for
//! each 0 < k < K, then 3M: 6M + 4(2^K − 2). Chang-Roberts going down costs
//! M(M+1)/2 + M on this ring; Hirschberg-Sinclair sends fewer from M = 21 on (at
//! M = 16 both send 152), and its cost jumps at each power of two, where a new phase
//! starts.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::algorithm::{
    Config, Election, ElectionCall, ElectionEvent, Input, Message, Node, NodeInput, NodeOut, PeerId,
};
use crate::bully::next_term;

/// A generous bound on one hop. A candidate in phase k waits 2^(k+1) hops for its
/// answers, a leader N hops for its ELECTED to come home, a beaten node 16N hops (more
/// than a whole election) for ELECTED, before it acts again.
pub const HOP: Duration = Duration::from_millis(20);

/// The fewest and the most messages one election costs in a ring of `live` live nodes,
/// when nobody fails during it: the largest alone running, `4(2^K − 1) + 3·live`, and
/// every node running, at most `6·live + Σ_{0<k<K} 2^(k+2)·⌊live / (2^(k-1) + 1)⌋`,
/// where `K = ⌈log2 live⌉` (see the module doc).
pub fn messages_per_election(live: u32) -> (u64, u64) {
    let m = u64::from(live);
    if m <= 1 {
        return (0, 0);
    }
    let last = last_phase(live);
    let fewest = 4 * ((1 << last) - 1) + 3 * m;
    let middle: u64 = (1..last).map(|k| (4 << k) * (m / ((1 << (k - 1)) + 1))).sum();
    (fewest, 6 * m + middle)
}

/// ⌈log2 live⌉: the phase whose probes go all the way round a ring of `live` nodes.
fn last_phase(live: u32) -> u32 {
    live.max(1).next_power_of_two().trailing_zeros()
}

/// How far a probe of `phase` goes out: 2^phase hops.
fn reach(phase: u32) -> u64 {
    1u64.checked_shl(phase).unwrap_or(u64::MAX)
}

/// Which way round the ring a message travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dir {
    /// To the next live node up: 0 → 1 → … → N-1 → 0.
    Up,
    /// To the next live node down: N-1 → … → 1 → 0 → N-1.
    Down,
}

impl Dir {
    /// The other way.
    fn back(self) -> Dir {
        match self {
            Dir::Up => Dir::Down,
            Dir::Down => Dir::Up,
        }
    }

    /// Where a candidate keeps the answer to its probe sent this way.
    fn side(self) -> usize {
        match self {
            Dir::Up => 0,
            Dir::Down => 1,
        }
    }
}

/// Messages of `hirschberg-sinclair`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// PROBE: a candidate's probe, to go 2^phase nodes out.
    Probe {
        /// The candidate.
        id: PeerId,
        /// The candidate's pair of probes this one belongs to.
        round: u64,
        /// The phase: the probe goes 2^phase nodes out.
        phase: u32,
        /// How many nodes from the candidate it is so far.
        hops: u64,
        /// The way it travels.
        dir: Dir,
        /// The newest term any node it passed has seen.
        term: u64,
    },
    /// REPLY: the probe went its 2^phase nodes and met only smaller ids; on its way back.
    Reply {
        /// The candidate the reply goes back to.
        id: PeerId,
        /// The round of the probe answered.
        round: u64,
        /// The phase of the probe answered.
        phase: u32,
        /// The way the reply travels.
        dir: Dir,
    },
    /// ELECTED: a leader, passed on unchanged, up round the ring.
    Elected {
        /// The leader.
        id: PeerId,
        /// The term it leads in.
        term: u64,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Probe { .. } => "PROBE",
            Msg::Reply { .. } => "REPLY",
            Msg::Elected { .. } => "ELECTED",
        }
    }
}

/// Timers, tagged with what they wait for, so one left over means nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// Sent a pair of probes; they are not both answered.
    Answers {
        /// The round of the probes.
        round: u64,
    },
    /// Beaten; no ELECTED came.
    Beaten {
        /// The node's round when it was beaten.
        round: u64,
    },
    /// Sent ELECTED; it has not come home.
    Elected {
        /// The term announced.
        term: u64,
    },
}

/// What a candidate has heard of one of its two probes in the current round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Answer {
    Nothing,
    /// It went its distance past smaller ids only.
    Reply,
    /// It came all the way round.
    Home,
}

/// A node's part in the current election.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Role {
    /// Taking no part.
    Idle,
    /// Running, in `phase`; `answers` to the probes sent up and down.
    Candidate { phase: u32, answers: [Answer; 2] },
    /// Has passed on a larger id's probe: cannot win, waits for ELECTED.
    Beaten,
}

type O = NodeOut<HirschbergSinclair>;

/// One node of `hirschberg-sinclair`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HirschbergSinclair {
    cfg: Config,
    /// Peers reported down and not since back up.
    down: BTreeSet<PeerId>,
    role: Role,
    /// Counts this node's pairs of probes and times beaten, to tell their answers and
    /// timers from stale ones; it counts on from `incarnation << 32`, so a new life
    /// never takes an old life's number.
    round: u64,
    /// Leads, and its ELECTED has not come home yet.
    announcing: bool,
    /// The leader this node follows, with its term.
    leader: Option<(PeerId, u64)>,
    /// The newest term seen in any message.
    seen: u64,
}

impl HirschbergSinclair {
    fn me(&self) -> PeerId {
        self.cfg.id
    }

    /// The term of the leader this node follows; 0 before it follows any.
    fn term(&self) -> u64 {
        self.leader.map_or(0, |(_, term)| term)
    }

    /// The next node `dir` not known to be down; `None` when alone.
    fn neighbour(&self, dir: Dir) -> Option<PeerId> {
        let up = |p: PeerId| !self.down.contains(&p);
        match dir {
            Dir::Up => self.cfg.successor(up),
            Dir::Down => self.cfg.predecessor(up),
        }
    }

    /// Send `msg` to the next live node `dir`, if anyone else is alive.
    fn pass(&self, dir: Dir, msg: Msg, out: &mut O) {
        if let Some(next) = self.neighbour(dir) {
            out.send(next, msg);
        }
    }

    /// The id a probe must reach to go past this node: its own, or the leader it
    /// follows while that leader is not known to be down.
    fn bar(&self) -> PeerId {
        match self.leader {
            Some((id, _)) if !self.down.contains(&id) => id.max(self.me()),
            _ => self.me(),
        }
    }

    /// A peer with a larger id is not known to be down.
    fn larger_up(&self) -> bool {
        (self.me().0 + 1..self.cfg.n).any(|p| !self.down.contains(&PeerId(p)))
    }

    /// Take `role`, forgetting what the current one waits for.
    fn become_(&mut self, role: Role, out: &mut O) {
        let round = self.round;
        match self.role {
            Role::Candidate { .. } => out.cancel_timer(Timer::Answers { round }),
            Role::Beaten => out.cancel_timer(Timer::Beaten { round }),
            Role::Idle => {}
        }
        self.role = role;
    }

    /// Rule 2's beaten: wait for ELECTED, but not for ever, since a probe left over
    /// from a crash can beat a node when no election is on.
    fn beaten(&mut self, out: &mut O) {
        if self.role != Role::Beaten {
            self.become_(Role::Beaten, out);
            self.round += 1;
            out.set_timer(
                Timer::Beaten { round: self.round },
                HOP.saturating_mul(self.cfg.n.saturating_mul(16)),
            );
        }
    }

    /// 1. Start an election, unless already taking part in one.
    fn start_election(&mut self, out: &mut O) {
        if self.role == Role::Idle {
            self.run(out);
        }
    }

    /// Run afresh, from phase 0; a new win will announce itself.
    fn run(&mut self, out: &mut O) {
        out.count("elections", 1);
        self.stop_announcing(out);
        if self.neighbour(Dir::Up).is_none() {
            return self.lead(out); // Alone: nobody to ask.
        }
        self.probe(0, out);
    }

    /// Send a new round of probes of `phase` up and down, and wait for their answers.
    fn probe(&mut self, phase: u32, out: &mut O) {
        self.become_(Role::Candidate { phase, answers: [Answer::Nothing; 2] }, out);
        self.round += 1;
        let (id, round, term) = (self.me(), self.round, self.seen);
        for dir in [Dir::Up, Dir::Down] {
            self.pass(dir, Msg::Probe { id, round, phase, hops: 1, dir, term }, out);
        }
        let hops = 1u32 << (phase + 1).min(20);
        out.set_timer(Timer::Answers { round }, HOP.saturating_mul(hops));
    }

    /// 2, 3 and 6: a probe arrives.
    #[allow(clippy::too_many_arguments)]
    fn on_probe(&mut self, id: PeerId, round: u64, phase: u32, hops: u64, dir: Dir, term: u64, out: &mut O) {
        self.seen = self.seen.max(term);
        if id == self.me() {
            return self.answer(round, dir, Answer::Home, out);
        }
        if self.down.contains(&id) {
            return; // Its candidate is dead: nobody waits for it.
        }
        if id >= self.bar() {
            // 2. Larger than this node, and not below its leader (perhaps the leader's
            // own): it goes on, and this node cannot win.
            self.beaten(out);
            self.stop_announcing(out);
            if hops < reach(phase) {
                self.pass(dir, Msg::Probe { id, round, phase, hops: hops + 1, dir, term: self.seen }, out);
            } else {
                self.pass(dir.back(), Msg::Reply { id, round, phase, dir: dir.back() }, out);
            }
        } else if self.role == Role::Idle {
            self.run(out); // 3. Swallowed, and this node joins.
        }
        // Otherwise 3: swallowed by a node already taking part.
    }

    /// 4 and 5: a reply arrives.
    fn on_reply(&mut self, id: PeerId, round: u64, phase: u32, dir: Dir, out: &mut O) {
        if id == self.me() {
            // It answers the probe that went the other way.
            self.answer(round, dir.back(), Answer::Reply, out);
        } else if !self.down.contains(&id) {
            self.pass(dir, Msg::Reply { id, round, phase, dir }, out);
        }
    }

    /// 5 and 6: the probe of `round` sent `dir` was answered. An answer to an earlier
    /// round, or to a node no longer running, is stale.
    fn answer(&mut self, round: u64, dir: Dir, answer: Answer, out: &mut O) {
        let Role::Candidate { phase, answers } = &mut self.role else { return };
        if round != self.round {
            return;
        }
        answers[dir.side()] = answer;
        let phase = *phase;
        match *answers {
            [Answer::Reply, Answer::Reply] => self.probe(phase + 1, out),
            [Answer::Home, Answer::Home] => self.win(out),
            [Answer::Nothing, _] | [_, Answer::Nothing] => {} // Waiting for the other.
            // Home one way, not the other: the ring grew or shrank between the two
            // probes, and the news may be in already (sim seed 2, n = 3). Again.
            _ => self.probe(phase, out),
        }
    }

    /// 6. Both probes came home: lead, unless a larger peer is back since they passed.
    fn win(&mut self, out: &mut O) {
        if self.larger_up() {
            // Skipped while dead: go round again, through it.
            return self.run(out);
        }
        self.lead(out);
    }

    /// Lead in a new term and say so up round the ring.
    fn lead(&mut self, out: &mut O) {
        self.become_(Role::Idle, out);
        self.stop_announcing(out);
        let me = self.me();
        let term = next_term(self.seen, self.cfg.n, me);
        self.seen = term;
        self.leader = Some((me, term));
        out.emit(ElectionEvent::Leader { id: me, term });
        if self.neighbour(Dir::Up).is_some() {
            self.announcing = true;
            self.pass(Dir::Up, Msg::Elected { id: me, term }, out);
            out.set_timer(Timer::Elected { term }, HOP.saturating_mul(self.cfg.n));
        }
    }

    /// No longer waiting for this node's ELECTED to come home.
    fn stop_announcing(&mut self, out: &mut O) {
        if self.announcing {
            self.announcing = false;
            out.cancel_timer(Timer::Elected { term: self.term() });
        }
    }

    /// 7 and 8: an ELECTED arrives.
    fn on_elected(&mut self, id: PeerId, term: u64, out: &mut O) {
        self.seen = self.seen.max(term);
        if id == self.me() {
            // 8: home; the election is over (unless a newer ELECTED of ours is out).
            if term == self.term() {
                self.stop_announcing(out);
            }
            return;
        }
        if term <= self.term() {
            return; // Older than what this node follows and has passed on already.
        }
        if self.down.contains(&id) || id < self.me() {
            // The winner died since, or won while this node was down: not a leader.
            return self.start_election(out);
        }
        self.become_(Role::Idle, out);
        self.stop_announcing(out);
        self.leader = Some((id, term));
        out.emit(ElectionEvent::Leader { id, term });
        self.pass(Dir::Up, Msg::Elected { id, term }, out);
    }

    /// Our ELECTED may have been lost or may skip a node: announce again, in a newer
    /// term, unless a larger peer is up now.
    fn announce_again(&mut self, out: &mut O) {
        if self.larger_up() {
            self.run(out);
        } else {
            out.count("elections", 1);
            self.lead(out);
        }
    }

    /// A timer fired: one left over from a round or term this node has moved on from
    /// means nothing.
    fn on_timer(&mut self, timer: Timer, out: &mut O) {
        match (timer, &self.role) {
            // An answer was lost, past a node that died unnoticed or noticed late
            // (sim seed 186, n = 4): this phase again.
            (Timer::Answers { round }, &Role::Candidate { phase, .. }) if round == self.round => {
                self.probe(phase, out)
            }
            // Beaten by a probe whose election never ended here: run.
            (Timer::Beaten { round }, Role::Beaten) if round == self.round => self.run(out),
            (Timer::Elected { term }, _) if self.announcing && term == self.term() => {
                self.announce_again(out)
            }
            _ => {}
        }
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut O) {
        self.down.insert(peer);
        if self.announcing {
            // Our ELECTED may have died with it, and nodes that passed it on would drop
            // a copy: announce afresh.
            self.announce_again(out);
        } else if self.role != Role::Idle {
            // Our probes, their answers, or the probes of whoever beat us may have died
            // with it: run again.
            self.run(out);
        } else if self.leader.is_some_and(|(id, _)| id == peer) {
            self.start_election(out);
        }
    }

    fn on_peer_up(&mut self, peer: PeerId, out: &mut O) {
        // A new incarnation runs by itself.
        self.down.remove(&peer);
        if self.announcing {
            // Our ELECTED may pass it by: announce again, through it.
            self.announce_again(out);
        }
    }
}

impl Node for HirschbergSinclair {
    type Msg = Msg;
    type Timer = Timer;
    type Service = Election;

    fn create(cfg: &Config) -> Self {
        HirschbergSinclair {
            cfg: cfg.clone(),
            down: BTreeSet::new(),
            role: Role::Idle,
            round: u64::from(cfg.incarnation) << 32,
            announcing: false,
            leader: None,
            seen: 0,
        }
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut O) {
        match input {
            // A restarted node remembers no leader: it runs.
            Input::Start if self.cfg.incarnation > 0 => self.start_election(out),
            Input::Start => {}
            Input::Call { call: ElectionCall::Elect } => self.start_election(out),
            Input::Message { msg, .. } => match msg {
                Msg::Probe { id, round, phase, hops, dir, term } => {
                    self.on_probe(id, round, phase, hops, dir, term, out)
                }
                Msg::Reply { id, round, phase, dir } => self.on_reply(id, round, phase, dir, out),
                Msg::Elected { id, term } => self.on_elected(id, term, out),
            },
            Input::Timer { timer } => self.on_timer(timer, out),
            Input::PeerDown { peer } => self.on_peer_down(peer, out),
            Input::PeerUp { peer } => self.on_peer_up(peer, out),
        }
    }

    fn waiting_for(&self) -> String {
        match (&self.role, self.announcing) {
            (Role::Candidate { phase, answers }, _) => {
                let open: Vec<&str> = [("up", answers[0]), ("down", answers[1])]
                    .into_iter()
                    .filter(|(_, a)| *a == Answer::Nothing)
                    .map(|(way, _)| way)
                    .collect();
                format!("running in phase {phase}: waiting for its probe sent {}", open.join(" and "))
            }
            (Role::Beaten, _) => "beaten: waiting for ELECTED".into(),
            (Role::Idle, true) => "leading: waiting for my ELECTED to come home".into(),
            (Role::Idle, false) => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Output;
    use crate::chang_roberts::ChangRobertsDown;
    use mutexlab_core::script::elect::{elect_once, scenarios, within, Initiators, Net};

    fn probe(id: u32, round: u64, phase: u32, hops: u64, dir: Dir) -> Msg {
        Msg::Probe { id: PeerId(id), round, phase, hops, dir, term: 0 }
    }

    fn reply(id: u32, round: u64, phase: u32, dir: Dir) -> Msg {
        Msg::Reply { id: PeerId(id), round, phase, dir }
    }

    fn won(id: u32, term: u64) -> Msg {
        Msg::Elected { id: PeerId(id), term }
    }

    /// Every live node follows the highest live id and waits for nothing.
    fn settled(net: &Net<HirschbergSinclair>) -> Result<(), String> {
        net.check()?;
        for i in (0..net.n()).filter(|&i| net.is_alive(i)) {
            let w = net.node(i).waiting_for();
            if !w.is_empty() {
                return Err(format!("w{i}: {w}"));
            }
        }
        Ok(())
    }

    /// Deliver every message in flight, firing no timer.
    fn drain(net: &mut Net<HirschbergSinclair>) {
        while net.step() {}
    }

    /// Four nodes, 3 runs alone. Phase 0: a probe to each neighbour, each answered.
    /// Phase 1: two hops out each way, and back. Phase 2: four hops reach round the ring,
    /// so both probes come home; then ELECTED goes a lap. 4 + 8 + 8 + 4 = 4(2^2 − 1) + 3·4.
    #[test]
    fn the_largest_alone_step_by_step_on_a_ring_of_four() {
        use Dir::{Down, Up};
        let mut net = Net::<HirschbergSinclair>::new(4);
        net.elect(3);
        assert_eq!(net.node(3).waiting_for(), "running in phase 0: waiting for its probe sent up and down");
        net.run().unwrap();
        #[rustfmt::skip]
        let expected = [
            (3, 0, probe(3, 1, 0, 1, Up)), (3, 2, probe(3, 1, 0, 1, Down)),
            (0, 3, reply(3, 1, 0, Down)), (2, 3, reply(3, 1, 0, Up)),
            (3, 0, probe(3, 2, 1, 1, Up)), (3, 2, probe(3, 2, 1, 1, Down)),
            (0, 1, probe(3, 2, 1, 2, Up)), (2, 1, probe(3, 2, 1, 2, Down)),
            (1, 0, reply(3, 2, 1, Down)), (1, 2, reply(3, 2, 1, Up)),
            (0, 3, reply(3, 2, 1, Down)), (2, 3, reply(3, 2, 1, Up)),
            (3, 0, probe(3, 3, 2, 1, Up)), (3, 2, probe(3, 3, 2, 1, Down)),
            (0, 1, probe(3, 3, 2, 2, Up)), (2, 1, probe(3, 3, 2, 2, Down)),
            (1, 2, probe(3, 3, 2, 3, Up)), (1, 0, probe(3, 3, 2, 3, Down)),
            (2, 3, probe(3, 3, 2, 4, Up)), (0, 3, probe(3, 3, 2, 4, Down)),
            (3, 0, won(3, 7)), (0, 1, won(3, 7)), (1, 2, won(3, 7)), (2, 3, won(3, 7)),
        ];
        assert_eq!(net.msgs, expected);
        assert_eq!(expected.len() as u64, messages_per_election(4).0);
        settled(&net).unwrap();
    }

    /// In a ring of two, the next node up and the next node down are the same: the
    /// direction in the message tells the probes apart.
    #[test]
    fn in_a_ring_of_two_the_direction_tells_the_probes_apart() {
        use Dir::{Down, Up};
        let mut net = Net::<HirschbergSinclair>::new(2);
        net.elect(1);
        net.run().unwrap();
        #[rustfmt::skip]
        let expected = [
            (1, 0, probe(1, 1, 0, 1, Up)), (1, 0, probe(1, 1, 0, 1, Down)),
            (0, 1, reply(1, 1, 0, Down)), (0, 1, reply(1, 1, 0, Up)),
            (1, 0, probe(1, 2, 1, 1, Up)), (1, 0, probe(1, 2, 1, 1, Down)),
            (0, 1, probe(1, 2, 1, 2, Up)), (0, 1, probe(1, 2, 1, 2, Down)),
            (1, 0, won(1, 3)), (0, 1, won(1, 3)),
        ];
        assert_eq!(net.msgs, expected);
        settled(&net).unwrap();
    }

    /// Exact counts on this ring, where ids rise going up: the largest alone costs
    /// 4(2^K − 1) + 3M; everyone running, 6M + 4(2^K − 2) (only the largest gets past
    /// phase 0). One low initiator wakes the others as its probes are swallowed: between
    /// the two, and always within the theory.
    #[test]
    fn exact_counts_alone_and_all_for_every_size() {
        for n in 2..=32u32 {
            for dead in [None, Some(n - 1), Some(n / 2)] {
                let m = n - u32::from(dead.is_some());
                let case = format!("n = {n}, dead {dead:?}");
                let (_, all) = elect_once::<HirschbergSinclair>(n, dead, Initiators::All);
                let (_, alone) = elect_once::<HirschbergSinclair>(n, dead, Initiators::Highest);
                let (net, low) = elect_once::<HirschbergSinclair>(n, dead, Initiators::Lowest);
                if m == 1 {
                    assert_eq!((all, alone, low), (0, 0, 0), "{case}: alone, nobody to tell");
                    continue;
                }
                let (live, k) = (u64::from(m), last_phase(m));
                assert_eq!(all as u64, 6 * live + 4 * ((1 << k) - 2), "{case}");
                assert_eq!(alone as u64, 4 * ((1 << k) - 1) + 3 * live, "{case}");
                assert_eq!(alone as u64, messages_per_election(m).0, "{case}");
                assert!(alone <= low && low <= all, "{case}: {alone} <= {low} <= {all}");
                within(all, messages_per_election(m)).unwrap();
                assert_eq!(net.count_since(0, "ELECTED") as u32, m, "{case}: one lap");
                assert!(net.sent.iter().all(|s| Some(s.to) != dead), "{case}: nobody sends to the dead");
            }
        }
    }

    /// Everyone running, split by kind: 2M probes and M replies in phase 0, 2^(k+1) of
    /// each in phase k, 2M probes round the ring in phase K.
    #[test]
    fn all_running_by_kind() {
        for n in 2..=32u32 {
            let (net, _) = elect_once::<HirschbergSinclair>(n, None, Initiators::All);
            let (m, k) = (n as usize, last_phase(n));
            let middle = 2 * ((1 << k) - 2);
            assert_eq!(net.count_since(0, "PROBE"), 4 * m + middle, "n = {n}");
            assert_eq!(net.count_since(0, "REPLY"), m + middle, "n = {n}");
        }
    }

    /// Chang-Roberts going down, its worst case, against Hirschberg-Sinclair on the same
    /// ring, everyone starting. Hirschberg-Sinclair's 6N + 4(2^K − 2) jumps at each power
    /// of two; N(N+1)/2 + N overtakes it for good at N = 21 (at 16 they tie at 152).
    #[test]
    fn fewer_messages_than_chang_roberts_going_down_from_21_nodes_on() {
        for n in 2..=64u32 {
            let (_, hs) = elect_once::<HirschbergSinclair>(n, None, Initiators::All);
            let (_, cr) = elect_once::<ChangRobertsDown>(n, None, Initiators::All);
            match n {
                16 => assert_eq!((hs, cr), (152, 152)),
                21.. => assert!(hs < cr, "n = {n}: {hs} against {cr}"),
                _ => assert!(hs > cr, "n = {n}: {hs} against {cr}"),
            }
        }
    }

    #[test]
    fn theory() {
        assert_eq!(messages_per_election(1), (0, 0));
        assert_eq!(messages_per_election(2), (10, 12));
        assert_eq!(messages_per_election(4), (24, 40));
        assert_eq!(messages_per_election(8), (52, 112));
        assert_eq!((last_phase(1), last_phase(2), last_phase(5), last_phase(8)), (0, 1, 3, 3));
        for m in 2..=1024u32 {
            // Under the classic 8M(K+1).
            let classic = 8 * u64::from(m) * u64::from(last_phase(m) + 1);
            assert!(messages_per_election(m).1 <= classic, "m = {m}");
        }
    }

    #[test]
    fn the_leader_dies_and_the_next_takes_over_with_a_higher_term() {
        scenarios::the_leader_dies_again_and_again::<HirschbergSinclair>();
    }

    #[test]
    fn a_restarted_largest_node_wins_back_above_the_old_terms() {
        scenarios::the_highest_comes_back_and_leads_again::<HirschbergSinclair>();
    }

    /// An election while the leader lives: the followers measure probes against their
    /// leader, so they swallow every probe but its own and join, and the leader's probes
    /// pass them all. Sim seed 0, n = 3: a follower that let only ids above the leader
    /// pass swallowed the leader's own probe, and everyone waited.
    #[test]
    fn a_new_election_under_a_live_leader_lets_its_probes_pass() {
        let mut net = Net::<HirschbergSinclair>::new(5);
        net.elect(4);
        net.run().unwrap();
        let mark = net.sent.len();
        net.elect(0);
        drain(&mut net);
        settled(&net).unwrap();
        assert_eq!(net.leader_of(0), Some((PeerId(4), 14)), "a new term");
        // Every probe but the leader's died at its first hop.
        let far = net.msgs[mark..]
            .iter()
            .filter(|(_, _, m)| matches!(m, Msg::Probe { id, hops, .. } if *hops > 1 && id.0 != 4))
            .count();
        assert_eq!(far, 0);
    }

    /// Sim seed 2, n = 3: the ring grows between a candidate's two probes of one phase,
    /// so one comes home and the other is answered. The candidate sends the phase again
    /// at once; it does not wait for news it has already had.
    #[test]
    fn a_ring_that_grew_between_two_probes_is_probed_again() {
        let mut net = Net::<HirschbergSinclair>::new(3);
        net.kill(0);
        net.elect(2);
        // Phase 0 round the ring {1, 2}, then phase 1: 1 passes the probe going up home.
        while !net.msgs.iter().any(|(_, _, m)| matches!(m, Msg::Probe { phase: 1, hops: 2, .. })) {
            assert!(net.step());
        }
        let down = net.hold(2, 1);
        assert_eq!(down, [probe(2, 2, 1, 1, Dir::Down)]);
        assert!(net.step()); // Home, going up.
        net.restart(0); // Its own probes are swallowed.
        net.release(2, 1, down); // Down past 1, and 0: two hops, a reply.
        drain(&mut net);
        settled(&net).unwrap();
        assert!(net.msgs.contains(&(2, 1, probe(2, 3, 1, 1, Dir::Down))), "phase 1 again");
    }

    /// Sim seed 186, n = 4: 2 hears 0 is dead and starts over; 1 has not heard yet and
    /// passes 2's new reply into the dead 0. Nobody else will tell 2: its own timer
    /// sends the phase again.
    #[test]
    fn an_answer_lost_past_a_node_that_died_unnoticed_is_asked_again() {
        let mut net = Net::<HirschbergSinclair>::new(3);
        net.elect(2);
        net.crash(0);
        net.notice(2, 0); // 2 runs again, both probes to 1.
        drain(&mut net); // 1 sends the reply to the probe going up to 0: lost.
        net.notice(1, 0);
        drain(&mut net);
        assert_eq!(net.node(2).waiting_for(), "running in phase 0: waiting for its probe sent up");
        net.run().unwrap(); // The timer fires.
        settled(&net).unwrap();
    }

    /// Sim seed 33, n = 5: a leader that joins a new election before its ELECTED is
    /// home stops announcing, or on news of a peer it would announce again and leave
    /// its probes behind, to beat nodes after the election. And a node that such a
    /// stray probe does beat runs when no ELECTED comes.
    #[test]
    fn a_leader_that_runs_again_no_longer_announces() {
        let mut net = Net::<HirschbergSinclair>::new(3);
        net.elect(2);
        while net.leader_of(2).is_none() {
            assert!(net.step());
        }
        let elected = net.hold(2, 0);
        assert_eq!(elected, [won(2, 5)]);
        net.kill(1); // 2 announces again; 0 runs, and 2 joins.
        let held = net.hold(2, 0);
        assert_eq!(net.node(2).waiting_for(), "leading: waiting for my ELECTED to come home");
        net.release(2, 0, held);
        net.release(2, 0, elected);
        while !matches!(net.node(2).role, Role::Candidate { .. }) {
            assert!(net.step());
        }
        assert!(!net.node(2).announcing);
        net.restart(1);
        drain(&mut net);
        settled(&net).unwrap();
    }

    #[test]
    fn a_stray_probe_that_beats_a_node_times_out() {
        let mut net = Net::<HirschbergSinclair>::new(3);
        net.elect(0);
        net.run().unwrap();
        let mut w1 = net.node(1).clone();
        let mut out = O::new(Duration::ZERO);
        // The leader's probe of a round long gone.
        w1.step(Input::Message { from: PeerId(0), msg: probe(2, 1, 2, 1, Dir::Up) }, &mut out);
        assert_eq!(w1.waiting_for(), "beaten: waiting for ELECTED");
        let round = w1.round;
        let timer = Output::SetTimer { timer: Timer::Beaten { round }, after: HOP * 48 };
        assert!(out.drain().any(|o| o == timer));
        w1.step(Input::Timer { timer: Timer::Beaten { round } }, &mut out);
        assert_eq!(w1.waiting_for(), "running in phase 0: waiting for its probe sent up and down");
    }

    #[test]
    fn stale_timers_and_stray_messages_change_nothing() {
        let mut net = Net::<HirschbergSinclair>::new(4);
        net.elect_by(Initiators::All);
        net.run().unwrap();
        let mut w2 = net.node(2).clone();
        let before = w2.clone();
        let mut out = O::new(Duration::ZERO);
        for timer in [Timer::Answers { round: 1 }, Timer::Beaten { round: 2 }, Timer::Elected { term: 7 }] {
            w2.step(Input::Timer { timer }, &mut out);
        }
        let stray = [
            reply(2, 1, 0, Dir::Up),    // An answer to an old round of its own.
            probe(2, 1, 0, 4, Dir::Up), // Its own old probe, home.
            won(3, 7),                  // An ELECTED it has had.
            won(3, 3),                  // An older one.
        ];
        for msg in stray {
            w2.step(Input::Message { from: PeerId(1), msg }, &mut out);
        }
        assert!(out.actions().is_empty(), "{:?}", out.actions());
        assert_eq!(w2, before);
        // A dead candidate's probe or reply is dropped, not passed on.
        w2.step(Input::PeerDown { peer: PeerId(3) }, &mut out);
        out.reset(Duration::ZERO);
        w2.step(Input::Message { from: PeerId(1), msg: probe(3, 9, 0, 1, Dir::Up) }, &mut out);
        w2.step(Input::Message { from: PeerId(1), msg: reply(3, 9, 0, Dir::Up) }, &mut out);
        assert!(out.actions().is_empty(), "{:?}", out.actions());
    }

    /// A node does not follow a leader below itself (it won while this node was down):
    /// it runs instead.
    #[test]
    fn a_leader_below_is_not_accepted() {
        let mut w2 = HirschbergSinclair::create(&Config::new(2, 3));
        let mut out = O::new(Duration::ZERO);
        w2.step(Input::Message { from: PeerId(1), msg: won(1, 10) }, &mut out);
        assert_eq!(w2.leader, None);
        assert!(!out.actions().iter().any(|o| matches!(o, Output::Event { .. })));
        assert_eq!(w2.waiting_for(), "running in phase 0: waiting for its probe sent up and down");
    }
}
