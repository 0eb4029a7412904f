//! Chang and Roberts's ring election: the largest id goes once round a one-way ring and
//! is then announced once round it.
//!
//! The nodes sit in a ring in id order and each sends only to the next live node round
//! it (its successor); nobody needs to know how many nodes there are. Ids are compared
//! as they travel: a message carrying a smaller id than a node's own is not worth
//! passing on, so only the largest id survives a whole lap, and a node that sees its own
//! id come home knows nobody in the ring is larger.
//!
//! Messages go round one way, given by the type's [`Direction`]: [`ChangRoberts`] sends
//! up, 0 → 1 → … → N-1 → 0, so ids rise along the way; [`ChangRobertsDown`] sends down,
//! N-1 → … → 1 → 0 → N-1, so ids fall along the way, which is the notes' worst case (see
//! *Cost*). Everything else is the same code.
//!
//! # Messages
//!
//! - ELECTION { id, term }: "`id` is the largest id seen on this lap so far." `term` is
//!   the newest term any node it passed has seen (see *Terms*).
//! - ELECTED { id, term }: "`id` leads, in `term`." Sent by the winner, passed on
//!   unchanged round the ring back to it.
//!
//! # What a node does, in the order of the notes
//!
//! Each node is a *participant* (it has sent or passed on an ELECTION of the current
//! election) or not; at first none is.
//! 1. *Starting an election* (its application calls `elect`, it learns the leader is
//!    down, or it starts as a restarted incarnation), unless already a participant:
//!    ELECTION with its own id to its successor, and it becomes a participant.
//! 2. *ELECTION with a larger id*: pass it on, and become a participant.
//! 3. *ELECTION with a smaller id*, not yet a participant: send its own id on instead,
//!    and become a participant.
//! 4. *ELECTION with a smaller id*, already a participant: drop it. This node has already
//!    sent an id at least as large as its own, and that is the one that matters.
//! 5. *ELECTION with its own id*: it went all the way round, so this node has the largest
//!    id. It leads: it stops being a participant, takes a new term, tells its
//!    application, and sends ELECTED to its successor.
//! 6. *ELECTED* for another node: it stops being a participant, accepts the leader, and
//!    passes the message on unchanged.
//! 7. *ELECTED with its own id*: the announcement went all the way round; drop it. The
//!    election is over.
//!
//! # Dead peers
//!
//! The notes assume nobody fails during an election. Here nodes do, and each rule below
//! says what it adds and why.
//!
//! - *The ring closes over the dead.* A node sends to the next node round the ring that
//!   it does not know to be down, so a dead node is simply left out.
//! - *A dead node's id is the smallest.* A message carrying the id of a node known to be
//!   down (it died after sending it) is dropped as smaller than every live id, so it
//!   cannot go round for ever. If that node turns out to be up again (restarted, its
//!   ELECTION having overtaken the news), the node that dropped it passes it on when the
//!   news comes.
//! - *A participant starts over on a death.* Its ELECTION, or the ELECTED, may have died
//!   with the peer. It resends the largest *live* id it has sent on, not its own: the
//!   others are participants already and would drop a smaller one.
//! - *A leader announces again on a death or a return.* A leader whose ELECTED has not
//!   come home when it learns a peer is down announces again in a newer term (the
//!   ELECTED may have died, and nodes that passed it would drop a copy); so does one
//!   that learns a peer is back up (the ELECTED may have skipped it, and a participant
//!   dropped its ELECTION).
//! - *An old ELECTED is dropped.* A node drops an ELECTED older than the leader it
//!   follows: it has already passed the newer one on.
//! - *A leader drops a late copy of its own id.* A copy that comes home in a term older
//!   than the leader's own is one of the resends above, by a participant that heard of a
//!   death after passing the winning id on (under a heartbeat detector the survivors
//!   hear at different moments). Every node it passed had not yet seen the ELECTED,
//!   which follows it round and ends their part; leading again for each copy would cost
//!   a new term and an ELECTED lap apiece. A copy in the leader's own term or newer was
//!   passed on by a node that had accepted the ELECTED and is a participant again: for
//!   that one the leader announces again.
//! - *Rule 5 has a condition.* A node whose own id comes home leads only if it knows
//!   every larger peer to be down. No larger node passes a smaller id on, so a larger
//!   peer not known to be down was skipped: either it was dead and has restarted since,
//!   and the lap is stale (as the nodes it passes raise its term, it could come home
//!   above the restarted node's own win and name a smaller leader over it), or it is
//!   dead and this node has not heard yet. The node sends its id to that larger peer
//!   itself, the one exception to the one-way ring: a live peer answers with an id of its
//!   own; if the peer is dead the message is lost, and the node, a participant, goes
//!   round again when it hears. (Going up, that peer is the successor anyway; going
//!   down, going round again at once came home the same way, lap after lap until the
//!   news came.)
//!
//! # Terms
//!
//! Every node that sends an ELECTION raises the term in it to the newest it has seen, so
//! the winning ELECTION, which passed every live node, comes back with the newest term
//! anyone has. The winner takes the next one above it, as `bully` does
//! ([`next_term`]: `epoch·N + id`, so two different leaders never share a term) and
//! carries it in ELECTED. A node accepts an ELECTED only with a term above the one it
//! follows, so the terms it reports strictly increase. A restarted winner therefore
//! needs no help to pick a term above the old ones.
//!
//! # Cost, in messages per election
//!
//! In a ring of M live nodes with one initiator, the ELECTION travels from the initiator
//! to the largest id (d hops, 0 to M-1), then a whole lap with that id (M), then ELECTED
//! goes a lap (M): d + 2M. Best 2M (the largest id starts), worst 3M-1 (the node just
//! after it starts), and 2M + (M-1)/2 averaged over where the initiator sits, the notes'
//! 2.5N. Going up, the node just after the largest is the lowest; going down, it is the
//! second largest, and the lowest is one hop from the largest (2M+1).
//!
//! With several initiators, an id travels until it meets a larger one, and dies there
//! (a larger participant drops it; a larger node that is not one sends its own instead).
//! Going up, the next node is always larger, so every smaller id dies at its first hop:
//! even with every node initiating at once the cost is (M-1) + M + M = 3M-1. Going down
//! is the notes' O(N²): the id of the node k hops before the largest passes the k-1
//! smaller ones between them and dies at the largest, k hops, and the largest id goes a
//! lap. With all initiating, 1 + 2 + … + (M-1) + M = M(M+1)/2 ELECTIONs and M
//! ELECTEDs: M(M+1)/2 + M. No order of the ids costs more, since in any order an id
//! dies at the largest at the latest. See [`messages_per_election`] and
//! [`messages_per_election_down`].
//!
//! The election after a leader's death costs more than these counts, but only in
//! ELECTIONs: the survivors hear of the death one by one, and each participant resends
//! an id when it hears (see *Dead peers*). The ELECTED still goes round once. Killing the leader of 4 (30
//! real runs each way, heartbeat detector), the 3 survivors sent 3 to 7 ELECTIONs going
//! up (5.9 on average, against 3 to 5 with no death) and 4 to 10 going down (6.6,
//! against 3 to 6), then 3 ELECTEDs.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::algorithm::{
    Config, Election, ElectionCall, ElectionEvent, Input, Message, NoTimer, Node, NodeInput, NodeOut, PeerId,
};
use crate::bully::next_term;

/// The fewest and the most messages one election of [`ChangRoberts`] (going up) costs in
/// a ring of `live` live nodes, one initiator or all of them, when nobody fails during
/// it: `2·live` and `3·live - 1`.
pub fn messages_per_election(live: u32) -> (u64, u64) {
    let m = u64::from(live);
    if m <= 1 {
        return (0, 0);
    }
    (2 * m, 3 * m - 1)
}

/// The same for [`ChangRobertsDown`], where ids fall along the way: `2·live`, and
/// `live(live+1)/2 + live` when every node initiates (see the module doc).
pub fn messages_per_election_down(live: u32) -> (u64, u64) {
    let m = u64::from(live);
    if m <= 1 {
        return (0, 0);
    }
    (2 * m, m * (m + 1) / 2 + m)
}

/// Which way round the ring a Chang-Roberts node sends: a type, so each way is its own
/// node type ([`ChangRoberts`], [`ChangRobertsDown`]) sharing all the code.
pub trait Direction: Clone + Copy + PartialEq + Eq + Hash + Debug + Send + 'static {
    /// The next node this way round for which `up` holds: messages go there.
    fn next(cfg: &Config, up: impl Fn(PeerId) -> bool) -> Option<PeerId>;
    /// The previous one: messages come from there.
    fn previous(cfg: &Config, up: impl Fn(PeerId) -> bool) -> Option<PeerId>;
}

/// Up the ring, 0 → 1 → … → N-1 → 0: ids rise along the way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Up;

/// Down the ring, N-1 → … → 1 → 0 → N-1: ids fall along the way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Down;

impl Direction for Up {
    fn next(cfg: &Config, up: impl Fn(PeerId) -> bool) -> Option<PeerId> {
        cfg.successor(up)
    }
    fn previous(cfg: &Config, up: impl Fn(PeerId) -> bool) -> Option<PeerId> {
        cfg.predecessor(up)
    }
}

impl Direction for Down {
    fn next(cfg: &Config, up: impl Fn(PeerId) -> bool) -> Option<PeerId> {
        cfg.predecessor(up)
    }
    fn previous(cfg: &Config, up: impl Fn(PeerId) -> bool) -> Option<PeerId> {
        cfg.successor(up)
    }
}

/// `chang-roberts`: messages go up the ring, ids rising along the way.
pub type ChangRoberts = ChangRobertsOn<Up>;

/// `chang-roberts-down`: messages go down the ring, ids falling along the way.
pub type ChangRobertsDown = ChangRobertsOn<Down>;

/// Messages of `chang-roberts`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// ELECTION: the largest id seen on this lap so far.
    Election {
        /// That largest id.
        id: PeerId,
        /// The newest term any node the lap passed has seen.
        term: u64,
    },
    /// ELECTED: a leader, passed on unchanged round the ring.
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
            Msg::Election { .. } => "ELECTION",
            Msg::Elected { .. } => "ELECTED",
        }
    }
}

type O<D> = NodeOut<ChangRobertsOn<D>>;

/// One node of Chang-Roberts, sending round the ring the way `D` says.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChangRobertsOn<D: Direction> {
    cfg: Config,
    /// Peers reported down and not since back up.
    down: BTreeSet<PeerId>,
    /// Has sent or passed on an ELECTION of the current election.
    participant: bool,
    /// The ids this node has sent in ELECTIONs while a participant: when one of them
    /// dies, the largest still alive is the one to resend.
    sent: BTreeSet<PeerId>,
    /// Ids whose ELECTION this node dropped because it took them to be down: if one of
    /// them turns out to be up (a restarted node's first ELECTION can overtake the news
    /// that it is back), this node passes it on after all.
    dropped: BTreeSet<PeerId>,
    /// Leads, and its ELECTED has not come home yet.
    announcing: bool,
    /// The leader this node follows, with its term.
    leader: Option<(PeerId, u64)>,
    /// The newest term seen in any message.
    seen: u64,
    way: PhantomData<D>,
}

impl<D: Direction> ChangRobertsOn<D> {
    fn me(&self) -> PeerId {
        self.cfg.id
    }

    /// The next node round the ring (the way `D` goes) not known to be down; `None`
    /// when alone.
    fn successor(&self) -> Option<PeerId> {
        D::next(&self.cfg, |p| !self.down.contains(&p))
    }

    /// The previous live node round the ring: messages come from there.
    fn predecessor(&self) -> Option<PeerId> {
        D::previous(&self.cfg, |p| !self.down.contains(&p))
    }

    /// Send `msg` to the successor, if anyone else is alive.
    fn pass(&self, msg: Msg, out: &mut O<D>) {
        if let Some(next) = self.successor() {
            out.send(next, msg);
        }
    }

    /// 1. Start an election, unless already taking part in one.
    fn start_election(&mut self, out: &mut O<D>) {
        if self.participant {
            return;
        }
        out.count("elections", 1);
        if self.successor().is_none() {
            return self.lead(out); // Alone: nobody to ask.
        }
        self.send_election(self.me(), out);
    }

    /// Send an ELECTION carrying `id`, and remember it was sent.
    fn send_election(&mut self, id: PeerId, out: &mut O<D>) {
        if !self.participant {
            self.sent.clear();
        }
        self.sent.insert(id);
        self.participant = true;
        self.pass(Msg::Election { id, term: self.seen }, out);
    }

    /// 2 to 5: an ELECTION arrives.
    fn on_election(&mut self, id: PeerId, term: u64, out: &mut O<D>) {
        self.seen = self.seen.max(term);
        let me = self.me();
        // An id that died on its way round can never come home: rank it below everyone.
        let larger = id > me && !self.down.contains(&id);
        if id == me && !self.participant && self.leader.is_some_and(|(l, t)| l == me && term < t) {
            // A late copy of our winning id, resent by a participant that heard of a
            // death: our ELECTED follows it and ends the part of every node it passed
            // (see *Dead peers*). Leading again cost a term and a lap per copy.
            return;
        }
        if id == me {
            // Only smaller nodes pass our id on, so a larger peer not known to be down was
            // skipped: it is back from the dead, and the lap is stale, its term raised
            // past that peer's own win on the way (sim seed 281, n = 3); or it is dead
            // and we have not heard yet. Ask that peer itself: it answers with its own
            // id if it is up, and if not, we go round again once we hear. Going up it
            // is our successor; going down, going round again would only spin.
            if let Some(larger) = (me.0 + 1..self.cfg.n).map(PeerId).find(|p| !self.down.contains(p)) {
                out.count("elections", 1);
                self.sent.clear();
                self.sent.insert(me);
                self.participant = true;
                return out.send(larger, Msg::Election { id: me, term: self.seen });
            }
            self.lead(out);
        } else if larger {
            self.send_election(id, out);
        } else if id > me {
            self.dropped.insert(id); // Down, as far as we know: see `on_peer_up`.
            if !self.participant {
                self.send_election(me, out);
            }
        } else if !self.participant {
            self.send_election(me, out);
        }
        // Otherwise smaller, and this node has already sent its own: drop it.
    }

    /// 5. This node's id came all the way round: it leads, and says so round the ring.
    fn lead(&mut self, out: &mut O<D>) {
        self.participant = false;
        let me = self.me();
        let term = next_term(self.seen, self.cfg.n, me);
        self.seen = term;
        self.leader = Some((me, term));
        self.announcing = self.successor().is_some();
        out.emit(ElectionEvent::Leader { id: me, term });
        self.pass(Msg::Elected { id: me, term }, out);
    }

    /// 6 and 7: an ELECTED arrives.
    fn on_elected(&mut self, id: PeerId, term: u64, out: &mut O<D>) {
        self.seen = self.seen.max(term);
        if id == self.me() {
            // 7: round and home; the election is over (unless a newer ELECTED is out).
            self.announcing &= self.leader.is_some_and(|(_, t)| t > term);
            return;
        }
        if term <= self.leader.map_or(0, |(_, t)| t) {
            return; // Older than what this node follows and has passed on already.
        }
        if self.down.contains(&id) {
            // The winner died since: no use announcing it. Elect again instead.
            return self.start_election(out);
        }
        self.participant = false;
        self.announcing = false;
        self.leader = Some((id, term));
        out.emit(ElectionEvent::Leader { id, term });
        self.pass(Msg::Elected { id, term }, out);
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut O<D>) {
        self.down.insert(peer);
        if self.announcing {
            // Our ELECTED may have died with it, and those that passed it on would drop
            // it again: announce afresh in a newer term (sim seed 143, n = 3).
            out.count("elections", 1);
            self.lead(out);
        } else if self.participant {
            // What we sent, or the ELECTED, may have died with it: go round again. Resend
            // the largest live id we passed on, not just our own: downstream participants
            // drop ids below theirs, so a lost larger id resent as ours would stall the
            // ring with everyone waiting (sim seed 13, n = 5). And the largest *live* one:
            // the largest sent may be the dead peer's (CI, n = 6, kill 5 at 0ms).
            let id = self.sent.iter().rev().find(|p| !self.down.contains(p)).map_or(self.me(), |&p| p);
            self.participant = false;
            if id == self.me() || self.successor().is_none() {
                self.start_election(out);
            } else {
                out.count("elections", 1);
                self.send_election(id, out);
            }
        } else if self.leader.is_some_and(|(id, _)| id == peer) {
            self.start_election(out);
        }
    }
}

impl<D: Direction> Node for ChangRobertsOn<D> {
    type Msg = Msg;
    type Timer = NoTimer;
    type Service = Election;

    fn create(cfg: &Config) -> Self {
        ChangRobertsOn {
            cfg: cfg.clone(),
            down: BTreeSet::new(),
            participant: false,
            sent: BTreeSet::new(),
            dropped: BTreeSet::new(),
            announcing: false,
            leader: None,
            seen: 0,
            way: PhantomData,
        }
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut O<D>) {
        match input {
            // A restarted node remembers no leader: it asks.
            Input::Start if self.cfg.incarnation > 0 => self.start_election(out),
            Input::Start => {}
            Input::Call { call: ElectionCall::Elect } => self.start_election(out),
            Input::Message { msg: Msg::Election { id, term }, .. } => self.on_election(id, term, out),
            Input::Message { msg: Msg::Elected { id, term }, .. } => self.on_elected(id, term, out),
            Input::Timer { timer } => match timer {},
            Input::PeerDown { peer } => self.on_peer_down(peer, out),
            // A new incarnation is back in the ring; it elects by itself.
            Input::PeerUp { peer } => {
                self.down.remove(&peer);
                if self.dropped.remove(&peer) {
                    // Its ELECTION came before the news it is up, and we dropped it: it
                    // waits for it to come home. Pass it on now (CI, chang-roberts-down,
                    // n = 6, kill 5 at 1ms; restart 5 at 150ms).
                    out.count("elections", 1);
                    self.send_election(peer, out);
                } else if self.announcing {
                    // Our ELECTED may pass it by, and its ELECTION was perhaps dropped by
                    // a participant: announce again, through it (sim seed 457, n = 3).
                    out.count("elections", 1);
                    self.lead(out);
                }
            }
        }
    }

    fn waiting_for(&self) -> String {
        match (self.participant, self.announcing, self.predecessor()) {
            (true, _, Some(p)) => format!("electing: waiting for ELECTED from {p}"),
            (false, true, Some(p)) => format!("leading: waiting for my ELECTED to come home from {p}"),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mutexlab_core::script::elect::{elect_once, scenarios, within, Initiators, Net};

    fn e(id: u32, term: u64) -> Msg {
        Msg::Election { id: PeerId(id), term }
    }

    fn won(id: u32, term: u64) -> Msg {
        Msg::Elected { id: PeerId(id), term }
    }

    /// Four nodes, 1 starts: its id is replaced by 2's, then 3's, which goes a whole lap
    /// and comes home; then ELECTED goes a lap. d + 2N = 2 + 8 messages.
    #[test]
    fn notes_rules_step_by_step_on_a_ring_of_four() {
        let mut net = Net::<ChangRoberts>::new(4);
        net.elect(1);
        assert_eq!(net.node(1).waiting_for(), "electing: waiting for ELECTED from w0");
        net.run().unwrap();
        #[rustfmt::skip]
        let expected = [
            (1, 2, e(1, 0)), (2, 3, e(2, 0)), (3, 0, e(3, 0)),
            (0, 1, e(3, 0)), (1, 2, e(3, 0)), (2, 3, e(3, 0)),
            (3, 0, won(3, 7)), (0, 1, won(3, 7)), (1, 2, won(3, 7)), (2, 3, won(3, 7)),
        ];
        assert_eq!(net.msgs, expected);
        assert_eq!(net.check(), Ok(PeerId(3)));
        assert!((0..4).all(|i| net.node(i).waiting_for().is_empty()));
    }

    /// The notes' counts: the ELECTION needs d hops to reach the largest id, N to bring it
    /// home, and ELECTED N more. Worst when the node after the largest starts (3N-1),
    /// best when the largest does (2N), 2N + (N-1)/2 on average over the starters; the
    /// same both ways round, only which node is d hops away changes.
    fn every_starter_costs_d_plus_2n<D: Direction>(d: impl Fn(u32, u32) -> u32) {
        for n in 2..=32u32 {
            let mut total = 0;
            for s in 0..n {
                let mut net = Net::<ChangRobertsOn<D>>::new(n);
                net.elect(s);
                net.run().unwrap();
                assert_eq!(net.check(), Ok(PeerId(n - 1)));
                assert_eq!(net.sent.len() as u32, d(n, s) + 2 * n, "n = {n}, starter {s}");
                assert_eq!(net.count_since(0, "ELECTED") as u32, n);
                total += net.sent.len();
            }
            // Twice the mean, to stay in integers: 2(2N + (N-1)/2) = 5N - 1.
            assert_eq!(2 * total as u32, n * (5 * n - 1), "n = {n}");
        }
    }

    #[test]
    fn notes_counts_d_plus_2n_for_every_starter() {
        // Up, the largest is N-1-s hops on; down, s+1 (none from the largest itself).
        every_starter_costs_d_plus_2n::<Up>(|n, s| n - 1 - s);
        every_starter_costs_d_plus_2n::<Down>(|n, s| (s + 1) % n);
    }

    #[test]
    fn lowest_and_all_initiators_cost_3m_minus_1() {
        for n in 2..=32 {
            for who in [Initiators::Lowest, Initiators::All] {
                let (_, m) = elect_once::<ChangRoberts>(n, None, who);
                assert_eq!(m as u64, messages_per_election(n).1, "n = {n}, {who:?}");
                let (_, m) = elect_once::<ChangRoberts>(n, Some(n - 1), who);
                assert_eq!(m as u64, messages_per_election(n - 1).1, "n = {n}, {who:?}, the highest dead");
            }
            let (_, m) = elect_once::<ChangRoberts>(n, None, Initiators::Highest);
            assert_eq!(m as u64, messages_per_election(n).0, "n = {n}, the largest starts");
        }
    }

    /// The notes' worst case, going down: four nodes all start. 0's id dies at 3 after
    /// one hop, 1's after two (past 0), 2's after three; 3's goes a lap. 1+2+3+4
    /// ELECTIONs and 4 ELECTEDs: N(N+1)/2 + N = 14.
    #[test]
    fn going_down_with_all_initiators_each_id_travels_to_the_largest() {
        let mut net = Net::<ChangRobertsDown>::new(4);
        net.elect_by(Initiators::All);
        assert_eq!(net.node(1).waiting_for(), "electing: waiting for ELECTED from w2");
        net.run().unwrap();
        #[rustfmt::skip]
        let expected = [
            (0, 3, e(0, 0)), (1, 0, e(1, 0)), (2, 1, e(2, 0)), (3, 2, e(3, 0)),
            (0, 3, e(1, 0)), (1, 0, e(2, 0)), (2, 1, e(3, 0)),
            (0, 3, e(2, 0)), (1, 0, e(3, 0)),
            (0, 3, e(3, 0)),
            (3, 2, won(3, 7)), (2, 1, won(3, 7)), (1, 0, won(3, 7)), (0, 3, won(3, 7)),
        ];
        assert_eq!(net.msgs, expected);
        assert_eq!(net.check(), Ok(PeerId(3)));
        assert_eq!(expected.len() as u64, messages_per_election_down(4).1);
        assert!((0..4).all(|i| net.node(i).waiting_for().is_empty()));
    }

    /// Exact counts both ways round, for every size: all initiating costs 3M-1 going up
    /// and M(M+1)/2 + M going down; one initiator costs d + 2M.
    #[test]
    fn exact_counts_both_ways_round() {
        for n in 2..=32u32 {
            for dead in [None, Some(n - 1)] {
                let m = n - u32::from(dead.is_some());
                let live = u64::from(m);
                let (_, up) = elect_once::<ChangRoberts>(n, dead, Initiators::All);
                let (_, down) = elect_once::<ChangRobertsDown>(n, dead, Initiators::All);
                let case = format!("n = {n}, dead {dead:?}");
                if m == 1 {
                    assert_eq!((up, down), (0, 0), "{case}: alone, nobody to tell");
                    continue;
                }
                assert_eq!(up as u64, 3 * live - 1, "{case}");
                assert_eq!(down as u64, live * (live + 1) / 2 + live, "{case}");
                assert_eq!(down as u64, messages_per_election_down(m).1, "{case}");
                // The lowest is one hop from the largest going down; the largest alone
                // costs two laps either way.
                let (_, low) = elect_once::<ChangRobertsDown>(n, dead, Initiators::Lowest);
                assert_eq!(low as u64, 2 * live + 1, "{case}");
                let (_, high_up) = elect_once::<ChangRoberts>(n, dead, Initiators::Highest);
                let (_, high_down) = elect_once::<ChangRobertsDown>(n, dead, Initiators::Highest);
                assert_eq!((high_up as u64, high_down as u64), (2 * live, 2 * live), "{case}");
                assert_eq!(messages_per_election_down(m).0, 2 * live);
            }
        }
    }

    #[test]
    fn a_dead_node_is_skipped_round_the_ring() {
        for n in 3..=32 {
            for dead in [0, n / 2] {
                for who in [Initiators::Lowest, Initiators::All] {
                    let (net, m) = elect_once::<ChangRoberts>(n, Some(dead), who);
                    within(m, messages_per_election(n - 1)).unwrap();
                    assert!(net.sent.iter().all(|s| s.to != dead), "nobody sends to the dead");
                    let (net, m) = elect_once::<ChangRobertsDown>(n, Some(dead), who);
                    within(m, messages_per_election_down(n - 1)).unwrap();
                    assert!(net.sent.iter().all(|s| s.to != dead), "nobody sends to the dead");
                }
            }
        }
    }

    #[test]
    fn the_leader_dies_and_the_next_takes_over_with_a_higher_term() {
        scenarios::the_leader_dies_again_and_again::<ChangRoberts>();
        scenarios::the_leader_dies_again_and_again::<ChangRobertsDown>();
    }

    /// A restarted largest node asks; its ELECTION collects the newest term on its lap,
    /// so it wins above the old leader's term with no help.
    #[test]
    fn a_restarted_largest_node_wins_back_above_the_old_terms() {
        scenarios::the_highest_comes_back_and_leads_again::<ChangRoberts>();
        scenarios::the_highest_comes_back_and_leads_again::<ChangRobertsDown>();
    }

    /// The node holding the ELECTION dies with it; its neighbours learn it and go again.
    #[test]
    fn an_election_lost_with_a_dead_node_is_held_again() {
        let mut net = Net::<ChangRoberts>::new(5);
        net.elect(0);
        // The ELECTION to 1 is dropped with 1; everyone then learns 1 is down.
        net.kill(1);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(4)));
    }

    /// Sim seed 13, n = 5: 0 passes 4's id on to 1, which has died unseen. When 0 learns
    /// it, it must resend 4, not its own 0: 2, 3 and 4 are participants again (their
    /// fresh ELECTIONs died at the next one up) and would drop 0, everyone waiting.
    #[test]
    fn a_lost_larger_id_is_resent_not_replaced_by_ones_own() {
        let mut net = Net::<ChangRoberts>::new(5);
        for i in 0..5 {
            net.elect(i);
        }
        net.crash(1); // Its ELECTION to 2 still arrives; 0's to it is lost.
        net.run().unwrap(); // 2, 3, 4 drop smaller ids; 0 passes 4 on to the dead 1.
        for i in [2, 3, 4] {
            net.notice(i, 1);
        }
        net.run().unwrap(); // Each fresh id dies at the next; 4's goes to 1 again.
        assert_eq!(net.msgs.last(), Some(&(0, 1, e(4, 0))));
        let mark = net.msgs.len();
        net.notice(0, 1);
        net.run().unwrap();
        assert_eq!(net.msgs[mark], (0, 2, e(4, 0)), "4's id, resent past the dead 1");
        assert_eq!(net.check(), Ok(PeerId(4)));
        net.restart(1);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(4)));
        assert!((0..5).all(|i| net.node(i).waiting_for().is_empty()));
    }

    /// CI, `chang-roberts-down -n 6 --faults 'kill 5 at 0ms'`: 5's ELECTION goes round
    /// before its death is known, so every node has passed 5 on. 4 learns first and
    /// resends its own id, which 3, 2 and 1 pass on; 0 passes it to the dead 5 too. When
    /// 0 learns, the largest id it sent is 5, dead: it must resend 4, the largest live
    /// one it sent, not its own 0, which 4 would drop with everyone waiting.
    #[test]
    fn the_largest_live_id_sent_is_resent_when_the_largest_sent_is_dead() {
        let mut net = Net::<ChangRobertsDown>::new(6);
        for i in 0..6 {
            net.elect(i);
        }
        net.crash(5); // Its ELECTION to 4 still arrives.
        net.run().unwrap(); // 5's id goes round to 0, which sends it to the dead 5.
        net.notice(4, 5);
        net.run().unwrap(); // 4's id goes round to 0, and on to the dead 5 again.
        assert_eq!(net.msgs.last(), Some(&(0, 5, e(4, 0))));
        for i in [3, 2, 1] {
            net.notice(i, 5);
        }
        net.run().unwrap(); // Their own ids die at 4.
        let mark = net.msgs.len();
        net.notice(0, 5);
        net.run().unwrap();
        assert_eq!(net.msgs[mark], (0, 4, e(4, 0)), "4's id, resent past the dead 5");
        assert_eq!(net.check(), Ok(PeerId(4)));
    }

    /// CI, `chang-roberts-down -n 6 --faults 'kill 5 at 1ms; restart 5 at 150ms'`: the
    /// restarted 5's ELECTION comes round to 0 before 0 has heard 5 is up. 0 drops it as
    /// a dead node's and 5 waits for it for ever, unless 0 passes it on once it hears.
    #[test]
    fn an_election_dropped_as_a_dead_nodes_is_passed_on_when_it_is_up() {
        let mut net = Net::<ChangRobertsDown>::new(6);
        net.elect_by(Initiators::All);
        net.run().unwrap();
        net.kill(5);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(4)));
        net.revive_unseen(5);
        for i in [4, 3, 2, 1] {
            net.hear_up(i, 5);
        }
        net.run().unwrap();
        assert_eq!(net.node(5).waiting_for(), "electing: waiting for ELECTED from w0");
        assert!(
            net.msgs.iter().any(|m| matches!(m, (1, 0, Msg::Election { id: PeerId(5), .. }))),
            "5's id reached 0"
        );
        let mark = net.msgs.len();
        net.hear_up(0, 5);
        net.run().unwrap();
        assert!(matches!(net.msgs[mark], (0, 5, Msg::Election { id: PeerId(5), .. })), "passed on after all");
        assert_eq!(net.check(), Ok(PeerId(5)));
    }

    /// Sim seed 143, n = 3: 2's ELECTED dies with 0, and again after 1 resends 2's id;
    /// only 2, no participant now, can tell it never came home: it announces again.
    #[test]
    fn a_leader_whose_elected_died_announces_again() {
        let mut net = Net::<ChangRoberts>::new(3);
        net.elect(0);
        while net.leader_of(2).is_none() {
            assert!(net.step());
        }
        net.crash(0); // With 2's ELECTED on its way to it.
        net.notice(1, 0); // 1 resends 2's id; 2 leads again, its ELECTED lost to 0 again.
        net.run().unwrap();
        assert_eq!(net.node(1).waiting_for(), "electing: waiting for ELECTED from w2");
        net.notice(2, 0);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(2)));
        net.restart(0);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(2)));
        assert!((0..3).all(|i| net.node(i).waiting_for().is_empty()));
    }

    /// Sim seed 457, n = 3: 2's ELECTED skips the dead 0, which restarts meanwhile and
    /// whose ELECTION 1, a participant still, drops. 2 hears 0 is up before its ELECTED
    /// is home, and announces again, through 0.
    #[test]
    fn a_leader_announces_again_through_a_node_back_up() {
        let mut net = Net::<ChangRoberts>::new(3);
        net.kill(0);
        net.elect(1);
        while net.leader_of(2).is_none() {
            assert!(net.step());
        }
        let elected = net.hold(2, 1);
        assert_eq!(elected, [won(2, 5)]);
        net.restart(0);
        net.run().unwrap(); // 1 drops 0's ELECTION.
        net.release(2, 1, elected);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(2)));
        assert!((0..3).all(|i| net.node(i).waiting_for().is_empty()));
    }

    /// Sim seed 281, n = 3, two crashes (here one crash and a slow link do it): 1's
    /// ELECTION, sent past the dead 2, is slow to reach 0; 2 restarts and wins, and then
    /// the stale lap, its term raised past 2's by 0, would bring 1 home to lead above 2.
    /// A lap of 1's id passed no larger node, so 1 sees the live 2 was skipped, and goes
    /// round again.
    #[test]
    fn a_stale_lap_that_skipped_a_restarted_larger_node_is_not_closed() {
        let mut net = Net::<ChangRoberts>::new(3);
        net.elect(0);
        net.run().unwrap();
        net.kill(2); // 0 and 1 both elect; 1's ELECTION goes straight to 0.
        let stale = net.hold(1, 0);
        assert_eq!(stale, [e(1, 5)]);
        net.run().unwrap(); // 1, a participant, drops 0's id.
        net.restart(2);
        net.run().unwrap();
        let won = net.leader_of(1).unwrap();
        assert_eq!(won.0, PeerId(2));
        net.release(1, 0, stale);
        net.run().unwrap(); // 0 passes it on, raised to 2's term; 1 sees it come home.
        assert_eq!(net.check(), Ok(PeerId(2)));
        assert!(net.leader_of(0).unwrap().1 >= won.1);
        assert!((0..3).all(|i| net.node(i).waiting_for().is_empty()));
    }

    /// Student walkthrough, `elect -n 4 --faults 'kill leader at 200ms'` under the
    /// heartbeat detector: the survivors hear of 3's death one at a time. 2 hears first
    /// and sends its id; 0 and 1, participants by then, resend it as they hear (see *Dead
    /// peers*). Three copies of 2's id come home, and each used to make 2 lead again in a
    /// newer term: three ELECTED laps instead of one.
    #[test]
    fn late_copies_of_the_winning_id_start_no_new_lap() {
        let mut net = Net::<ChangRoberts>::new(4);
        net.elect_by(Initiators::All);
        net.run().unwrap();
        net.crash(3);
        let (mark, accepted) = (net.msgs.len(), net.leaders.len());
        net.notice(2, 3); // 2 followed the dead 3: it sends its own id to 0.
        assert!(net.step()); // 0 passes it to 1...
        net.notice(0, 3); // ...and resends it when it hears.
        assert!(net.step()); // 1 passes the first copy to 2...
        net.notice(1, 3); // ...and resends it too.
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(2)));
        let laps = &net.msgs[mark..];
        assert_eq!(net.count_since(mark, "ELECTED"), 3, "one lap of three: {laps:?}");
        let terms: BTreeSet<u64> = net.leaders[accepted..].iter().map(|a| a.term).collect();
        assert_eq!(terms.len(), 1, "one new term: {terms:?}");
        assert!((0..3).all(|i| net.node(i).waiting_for().is_empty()));
    }

    /// One seeded run in the simulator's world: an election with every node initiating,
    /// played out; then the leader crashes, and the survivors hear of it at whatever
    /// moments the scheduler picks among the messages. The ELECTEDs delivered after the
    /// crash, once all is quiet, with every check passed.
    fn after_the_leaders_death<D: Direction>(n: u32, seed: u64) -> usize {
        use crate::sim::{Choice, Observer, World, WorldEvent};
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let configs = (0..n).map(|i| Config { seed, ..Config::new(i, n) }).collect();
        let mut world = World::<ChangRobertsOn<D>>::new(configs, 1).crashes(1, |p| p.0 == n - 1);
        world.start(&mut |_, _| {}).unwrap();
        let mut play_out = |world: &mut World<ChangRobertsOn<D>>,
                            note: &mut Observer<'_, ChangRobertsOn<D>>| loop {
            let choices: Vec<Choice> = world
                .enabled()
                .into_iter()
                .filter(|c| !matches!(c, Choice::Crash { .. } | Choice::Restart { .. }))
                .collect();
            if choices.is_empty() {
                break;
            }
            let pick = choices[rng.random_range(0..choices.len())];
            world.apply(pick, note).unwrap_or_else(|e| panic!("seed {seed} n {n}: {e:?}"));
        };
        play_out(&mut world, &mut |_, _| {});
        let before = world.node(0).leader.unwrap();
        assert_eq!(before.0, PeerId(n - 1), "seed {seed} n {n}");
        world.apply(Choice::Crash { node: n - 1 }, &mut |_, _| {}).unwrap();
        let mut electeds = 0;
        play_out(&mut world, &mut |_, e| {
            electeds += usize::from(matches!(e, WorldEvent::Delivered { msg: Msg::Elected { .. }, .. }))
        });
        let case = format!("seed {seed} n {n}");
        for i in 0..n - 1 {
            let node = world.node(i);
            let (leader, term) = node.leader.unwrap();
            assert_eq!(leader, PeerId(n - 2), "{case}: w{i}");
            assert_eq!(term, world.node(n - 2).leader.unwrap().1, "{case}: w{i}'s term");
            assert_eq!(node.waiting_for(), "", "{case}: w{i}");
        }
        electeds
    }

    /// The walkthrough's run, swept: in whatever order the survivors hear of the leader's
    /// death, the new leader announces itself in one ELECTED lap of the M survivors.
    /// (Before the fix, 2 to 5 laps in 579 of these 2000 runs.)
    #[test]
    fn one_elected_lap_after_the_leaders_death_whenever_each_survivor_hears() {
        for n in [2, 3, 4, 5, 8] {
            let m = n as usize - 1;
            let laps = if m == 1 { 0 } else { m }; // Alone, it tells nobody.
            for seed in 0..200 {
                let up = after_the_leaders_death::<Up>(n, seed);
                assert_eq!(up, laps, "going up, seed {seed} n {n}");
                let down = after_the_leaders_death::<Down>(n, seed);
                assert_eq!(down, laps, "going down, seed {seed} n {n}");
            }
        }
    }

    /// Sim seed 196, n = 3: 0 passes 2's id to 1 and dies. 2 resends it past 0, wins
    /// and announces; 1 accepts, and only then gets 0's old copy, passes it on (the term
    /// now 2's own) and is a participant again. That copy must make 2 announce again, or
    /// 1 waits for an ELECTED for ever (and would drop a smaller id meanwhile).
    #[test]
    fn a_late_copy_passed_on_after_the_elected_is_announced_again() {
        let mut net = Net::<ChangRoberts>::new(3);
        net.elect(2);
        assert!(net.step()); // 0 passes 2's id to 1...
        let late = net.hold(0, 1);
        net.crash(0); // ...and dies, the copy still on its way.
        net.notice(2, 0);
        net.run().unwrap(); // 2 resends past 0, leads, and its ELECTED comes home.
        let (leader, term) = net.leader_of(1).unwrap();
        assert_eq!(leader, PeerId(2));
        net.release(0, 1, late);
        assert!(net.step());
        assert_eq!(net.msgs.last(), Some(&(1, 2, e(2, term))), "passed on in 2's own term");
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(2)));
        assert!(net.leader_of(1).unwrap().1 > term, "announced again");
        assert!((1..3).all(|i| net.node(i).waiting_for().is_empty()));
    }

    /// Every node of `world` follows the highest, neither electing nor announcing.
    fn settled<D: Direction>(world: &crate::sim::World<ChangRobertsOn<D>>, n: u32) -> Result<(), String> {
        for i in 0..n {
            let node = world.node(i);
            let waits = node.waiting_for();
            if !waits.is_empty() || node.leader.map(|l| l.0) != Some(PeerId(n - 1)) {
                return Err(format!("w{i} follows {:?}, {waits:?}", node.leader));
            }
        }
        Ok(())
    }

    /// Up to two crashes of any node at any moment, each node coming back; then all that
    /// is still due is played out, and nobody may be left electing or announcing. (A
    /// leader that dropped every late copy of its id, whatever its term, deadlocks here:
    /// sim seed 196, n = 3.)
    #[test]
    fn nobody_is_left_electing_after_any_two_crashes() {
        use crate::sim::{Choice, Sim};
        fn sweep<D: Direction>() {
            for n in [2, 3, 5, 8] {
                for seed in 0..200 {
                    let mut sim = Sim::<ChangRobertsOn<D>>::new(n, seed).crashes(2, |_| true);
                    sim.run(1).unwrap_or_else(|e| panic!("{e}"));
                    let mut world = sim.world().clone();
                    while let Some(c) =
                        world.enabled().into_iter().find(|c| !matches!(c, Choice::Crash { .. }))
                    {
                        world.apply(c, &mut |_, _| {}).unwrap();
                    }
                    settled(&world, n).unwrap_or_else(|e| panic!("seed {seed} n {n}: {e}"));
                }
            }
        }
        sweep::<Up>();
        sweep::<Down>();
        // The check fires on a world in mid-election.
        let mut world =
            crate::sim::World::<ChangRoberts>::new((0..3).map(|i| Config::new(i, 3)).collect(), 1);
        world.start(&mut |_, _| {}).unwrap();
        world.apply(Choice::Call { node: 0, index: 0 }, &mut |_, _| {}).unwrap();
        assert_eq!(
            settled(&world, 3).unwrap_err(),
            "w0 follows None, \"electing: waiting for ELECTED from w2\""
        );
    }

    /// Real run, `chang-roberts-down -n 4 --faults 'kill leader at 200ms'`: 2481
    /// ELECTIONs in 100 ms. 0 hears first that 3 is dead and skips it, so 2's id comes
    /// home past 3 before 2 has heard. Going down, 2's successor is smaller: going round
    /// again came home the same way, lap after lap, until the news came. 2 asks 3
    /// itself instead (lost, as 3 is dead), and goes round once it hears.
    #[test]
    fn a_lap_that_skipped_a_larger_node_not_yet_known_dead_does_not_spin() {
        let mut net = Net::<ChangRobertsDown>::new(4);
        net.elect_by(Initiators::All);
        net.run().unwrap();
        net.crash(3);
        let mark = net.msgs.len();
        net.notice(0, 3); // 0's successor is now 2.
        net.run().unwrap();
        #[rustfmt::skip]
        let expected = [
            (0, 2, e(0, 7)), (2, 1, e(2, 7)), (1, 0, e(2, 7)), (0, 2, e(2, 7)),
            (2, 3, e(2, 7)),
        ];
        assert_eq!(net.msgs[mark..], expected);
        net.notice(1, 3);
        net.notice(2, 3);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(2)));
        assert!((0..3).all(|i| net.node(i).waiting_for().is_empty()));
    }

    #[test]
    fn an_id_or_winner_that_died_on_its_way_is_not_passed_on() {
        let mut w1 = ChangRoberts::create(&Config::new(1, 4));
        let mut out = O::<Up>::new(std::time::Duration::ZERO);
        w1.step(Input::PeerDown { peer: PeerId(3) }, &mut out);
        // 3's id, from before it died: replaced by 1's own.
        w1.step(Input::Message { from: PeerId(0), msg: e(3, 0) }, &mut out);
        assert_eq!(
            out.drain().collect::<Vec<_>>(),
            [crate::algorithm::Output::Send { to: PeerId(2), msg: e(1, 0) }]
        );
        // 3's ELECTED: not accepted; 1 is a participant already, so nothing more.
        w1.step(Input::Message { from: PeerId(0), msg: won(3, 7) }, &mut out);
        assert!(out.actions().is_empty(), "{:?}", out.actions());
        assert_eq!(w1.leader, None);
    }

    #[test]
    fn theory() {
        assert_eq!(messages_per_election(1), (0, 0));
        assert_eq!(messages_per_election(2), (4, 5));
        assert_eq!(messages_per_election(8), (16, 23));
        assert_eq!(messages_per_election_down(1), (0, 0));
        assert_eq!(messages_per_election_down(2), (4, 5), "two nodes: both ways are one");
        assert_eq!(messages_per_election_down(8), (16, 44));
    }
}
