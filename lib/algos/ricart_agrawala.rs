//! Ricart-Agrawala (1981), and the Roucairol-Carvalho refinement that keeps permissions.
//!
//! Every node asks every other node for permission and enters once all of them have said
//! yes. The requests are ordered like tickets at a bakery counter: a node that wants in
//! takes the number one above the highest ticket it has seen in anybody's REQUEST, and
//! sends REQUEST carrying that ticket to all others. Equal tickets are ordered by node
//! id, so two requests are never tied. A node that gets a REQUEST first remembers the
//! ticket (so its own next ticket will be higher), then
//! - answers REPLY at once if it is not competing for the section at all, whatever the
//!   numbers say (a quiet node must never hold anyone up);
//! - answers REPLY at once if it is competing but the other request is older (smaller
//!   ticket, or same ticket and smaller id);
//! - otherwise defers the REPLY until it has been through the section itself.
//!
//! Every entry costs N-1 REQUESTs and N-1 REPLYs: exactly 2(N-1) messages, one fewer
//! per peer than Lamport's algorithm, because the deferred REPLY doubles as the release.
//! The algorithm needs no FIFO channels. Its weakness is that every node is needed: one
//! that never answers blocks everyone.
//!
//! This follows the course notes' Algorithm 10.2 with one addition: a node that is
//! *inside* the section always defers. Without faults the ticket rule already makes that
//! so (whoever sends a REQUEST after letting us in has seen our ticket and picked a
//! higher one), but a restarted peer has forgotten every ticket and may send a small one.
//!
//! Crashes. On one machine a closed channel means a dead process, and a dead process is
//! not inside the section, so a node keeps a set of peers it knows to be down: it does
//! not wait for them, neither in a request already under way (a peer that goes down
//! counts as having answered) nor in a new one (it does not ask them at all). When a peer
//! comes back it is a new process with fresh state that knows nothing of us, so a node
//! that is still waiting asks it, whatever it knew of the old one: the REQUEST may never
//! have reached it (sent while it was dead, or lost with it), and a REPLY from the old
//! incarnation promised nothing on the new one's behalf. The fresh peer will itself ask
//! before it enters, and a node that is inside defers it. A REQUEST deferred for the old
//! incarnation is dropped: nobody is left to answer.
//!
//! # Roucairol-Carvalho (`ricart-agrawala-rc`)
//!
//! Think of each pair of nodes as sharing one permission, held by one side at a time
//! (or travelling as a REPLY). A node keeps the permissions it was given until the other
//! side asks for them back. To enter, it sends REQUEST only to the peers whose permission
//! it does not hold; if it holds them all it enters with no message at all. When it
//! hands a permission back (a REPLY) while it still wants the section, it must ask for
//! it again with a REQUEST of its own. Each REQUEST is still answered by exactly one
//! REPLY and a node sends at most one REQUEST per peer per entry, so an entry costs
//! between 0 and 2(N-1) messages: 0 when one node re-enters with no competition.
//!
//! Restarts, pair by pair. A permission this node keeps from a peer's old incarnation is
//! still its own to use: the fresh peer holds no permission at all, so it must ask us
//! before it enters, and its REQUEST takes the permission back the usual way (answered
//! at once, or deferred while we are inside or ahead). The permission for the pair is
//! in one place, with us, as before the crash. A permission the old incarnation kept
//! from us (or a REPLY travelling to it) died with it; we do not hold it either, so for
//! that pair both sides ask until a REPLY puts the permission on one side again, which
//! is plain Ricart-Agrawala and just as safe. Hence on peer-up a node that is requesting
//! and not inside asks the fresh peer unless it holds that peer's permission; a peer
//! that went down answered nothing, so it is never added to the kept permissions.

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId};

/// Messages of Ricart-Agrawala (both variants).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Sender asks for the section with this ticket.
    Request {
        /// The sender's ticket; ties go to the smaller id.
        ticket: u64,
    },
    /// Sender gives its permission.
    Reply,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "REQUEST",
            Msg::Reply => "REPLY",
        }
    }
}

/// A set of peers, one bit each: a search copies and hashes nodes by millions, and a
/// bit set is copied without an allocation (up to 64 nodes) and hashed in a word. The
/// words past the first keep no trailing zero, so equal sets are equal values.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
struct Peers {
    /// Peers 0 to 63.
    low: u64,
    /// Peers from 64 on, 64 a word (a boxed slice: a word smaller than a `Vec`).
    more: Box<[u64]>,
}

impl Peers {
    /// The word `p` is in, if there is one, and its bit there.
    fn word(&mut self, p: PeerId, grow: bool) -> Option<(&mut u64, u64)> {
        let (w, bit) = (p.index() / 64, 1u64 << (p.index() % 64));
        if w == 0 {
            return Some((&mut self.low, bit));
        }
        if grow && self.more.len() < w {
            let mut more = std::mem::take(&mut self.more).into_vec();
            more.resize(w, 0);
            self.more = more.into_boxed_slice();
        }
        self.more.get_mut(w - 1).map(|word| (word, bit))
    }

    /// Add `p`; false if it was there.
    fn insert(&mut self, p: PeerId) -> bool {
        let (word, bit) = self.word(p, true).expect("grown to hold it");
        let was = *word & bit != 0;
        *word |= bit;
        !was
    }

    /// Take `p` out; false if it was not there.
    fn remove(&mut self, p: &PeerId) -> bool {
        let Some((word, bit)) = self.word(*p, false) else { return false };
        let was = *word & bit != 0;
        *word &= !bit;
        if self.more.last() == Some(&0) {
            let keep = self.more.iter().rposition(|&w| w != 0).map_or(0, |k| k + 1);
            self.more = self.more[..keep].into();
        }
        was
    }

    fn contains(&self, p: &PeerId) -> bool {
        let (w, bit) = (p.index() / 64, 1u64 << (p.index() % 64));
        let word = if w == 0 { Some(self.low) } else { self.more.get(w - 1).copied() };
        word.is_some_and(|word| word & bit != 0)
    }

    fn is_empty(&self) -> bool {
        self.low == 0 && self.more.is_empty()
    }

    /// The peers in ascending order (as a `BTreeSet` gives them).
    fn iter(&self) -> impl Iterator<Item = PeerId> + '_ {
        std::iter::once(&self.low).chain(&self.more).enumerate().flat_map(|(w, &word)| {
            (0..64).filter(move |b| word & (1u64 << b) != 0).map(move |b| PeerId((w * 64 + b) as u32))
        })
    }
}

impl FromIterator<PeerId> for Peers {
    fn from_iter<I: IntoIterator<Item = PeerId>>(iter: I) -> Self {
        let mut set = Peers::default();
        for p in iter {
            set.insert(p);
        }
        set
    }
}

// As a `BTreeSet<PeerId>` prints, so a node's state reads the same.
impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// Plain Ricart-Agrawala: ask everyone on every entry.
pub type RicartAgrawala = Ra<false>;

/// Roucairol-Carvalho: keep permissions until someone asks for them back.
pub type RoucairolCarvalho = Ra<true>;

/// One node of Ricart-Agrawala; `KEEP` selects the Roucairol-Carvalho variant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ra<const KEEP: bool> {
    cfg: Config,
    /// The highest ticket seen in any REQUEST received.
    highest: u64,
    /// This node's current ticket (meaningful while `requesting`).
    ticket: u64,
    /// The application asked and has not left the section yet.
    requesting: bool,
    /// The application is inside.
    inside: bool,
    /// Peers whose REPLY this node still waits for.
    awaiting: Peers,
    /// Peers whose REQUEST gets its REPLY when this node leaves the section.
    deferred: Peers,
    /// Roucairol-Carvalho only: peers whose permission this node holds.
    held: Peers,
    /// Peers whose channel closed and that have not come back: dead, so not inside.
    down: Peers,
}

impl<const KEEP: bool> Ra<KEEP> {
    /// Whether the request `(ticket, from)` goes before this node's own.
    fn older_than_mine(&self, ticket: u64, from: PeerId) -> bool {
        (ticket, from) < (self.ticket, self.cfg.id)
    }

    fn request(&mut self, from: PeerId, ticket: u64, out: &mut Out<Msg, NoTimer>) {
        self.highest = self.highest.max(ticket);
        let defer = self.inside || (self.requesting && !self.older_than_mine(ticket, from));
        if defer {
            self.deferred.insert(from);
        } else {
            self.reply(from, out);
        }
    }

    /// Give `to` this node's permission; ask for it back if this node still wants in.
    fn reply(&mut self, to: PeerId, out: &mut Out<Msg, NoTimer>) {
        out.send(to, Msg::Reply);
        if KEEP {
            self.held.remove(&to);
            if self.requesting && self.awaiting.insert(to) {
                out.send(to, Msg::Request { ticket: self.ticket });
            }
        }
    }

    fn try_enter(&mut self, out: &mut Out<Msg, NoTimer>) {
        if self.requesting && !self.inside && self.awaiting.is_empty() {
            self.inside = true;
            out.enter_cs();
        }
    }
}

impl<const KEEP: bool> Algorithm for Ra<KEEP> {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        Ra {
            cfg: cfg.clone(),
            highest: 0,
            ticket: 0,
            requesting: false,
            inside: false,
            awaiting: Peers::default(),
            deferred: Peers::default(),
            held: Peers::default(),
            down: Peers::default(),
        }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.requesting = true;
        self.ticket = self.highest + 1;
        // A dead peer is not inside; if it comes back, on_peer_up asks the new one.
        self.awaiting =
            self.cfg.others().filter(|p| !self.held.contains(p) && !self.down.contains(p)).collect();
        for p in self.awaiting.iter() {
            out.send(p, Msg::Request { ticket: self.ticket });
        }
        self.try_enter(out);
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        match msg {
            Msg::Request { ticket } => self.request(from, ticket, out),
            Msg::Reply if self.awaiting.remove(&from) => {
                if KEEP {
                    self.held.insert(from);
                }
                self.try_enter(out);
            }
            // A REPLY nobody waits for (a duplicate, or from a dead peer's old
            // incarnation): nothing to do.
            Msg::Reply => {}
        }
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.requesting = false;
        self.inside = false;
        for p in std::mem::take(&mut self.deferred).iter() {
            self.reply(p, out);
        }
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut Out<Msg, NoTimer>) {
        // A dead peer is not inside and will not answer: count it as a yes. A permission
        // we keep from it stays ours (see the module doc).
        self.down.insert(peer);
        self.deferred.remove(&peer);
        if self.awaiting.remove(&peer) {
            self.try_enter(out);
        }
    }

    fn on_peer_up(&mut self, peer: PeerId, out: &mut Out<Msg, NoTimer>) {
        // The new incarnation knows nothing of us. A REQUEST we deferred came from the
        // old one; whatever we asked the old one (or meant to ask while it was dead) is
        // lost, so a node still waiting asks the new one, unless it holds the pair's
        // permission, which the new one must ask us for.
        self.down.remove(&peer);
        self.deferred.remove(&peer);
        if self.requesting && !self.inside && !self.held.contains(&peer) {
            self.awaiting.insert(peer);
            out.send(peer, Msg::Request { ticket: self.ticket });
        }
    }

    fn pending(&self) -> String {
        if !self.requesting || self.inside || self.awaiting.is_empty() {
            return String::new();
        }
        let who: Vec<String> = self.awaiting.iter().map(|p| p.to_string()).collect();
        format!("waiting for REPLY from {} (ticket {})", who.join(", "), self.ticket)
    }

    fn forget(&mut self) {
        // The ticket is read only while requesting; the next request takes a new one.
        if !self.requesting {
            self.ticket = 0;
        }
    }

    fn counter(&self) -> u64 {
        self.highest.max(self.ticket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::{out, send};
    use crate::sim::{sweep, Sim};

    #[test]
    fn a_peer_set_does_what_a_btreeset_does_and_equal_sets_are_equal_values() {
        use std::collections::BTreeSet;
        let (mut set, mut model) = (Peers::default(), BTreeSet::new());
        // Ids inside the first word, past it and past the second, in and out in turn.
        let ids = [3u32, 0, 63, 64, 3, 130, 64, 7, 130, 200, 0, 200, 63, 7];
        for (k, &id) in ids.iter().enumerate() {
            let p = PeerId(id);
            if k % 3 == 2 {
                assert_eq!(set.remove(&p), model.remove(&p), "remove {id}");
            } else {
                assert_eq!(set.insert(p), model.insert(p), "insert {id}");
            }
            assert_eq!(set.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
            assert!(model.iter().all(|q| set.contains(q)) && !set.contains(&PeerId(999)));
            assert_eq!(set.is_empty(), model.is_empty());
            // The same members built afresh: the same value, and the same Debug text.
            let fresh: Peers = model.iter().copied().collect();
            assert_eq!(fresh, set, "after {k} steps");
            assert_eq!(format!("{set:?}"), format!("{model:?}"));
        }
        // A high id in and out leaves no trailing word behind.
        let mut grown = Peers::default();
        grown.insert(PeerId(300));
        grown.remove(&PeerId(300));
        assert_eq!(grown, Peers::default());
    }

    fn req(ticket: u64) -> Msg {
        Msg::Request { ticket }
    }

    fn nodes<const K: bool>(n: u32) -> Vec<Ra<K>> {
        (0..n).map(|i| Ra::new(&Config::new(i, n))).collect()
    }

    #[test]
    fn two_nodes_one_entry() {
        let mut w = nodes::<false>(2);
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(1, req(1))]);
        let mut o = out();
        w[1].on_message(PeerId(0), req(1), &mut o);
        assert_eq!(o.actions(), &[send(0, Msg::Reply)], "a quiet node answers at once");
        let mut o = out();
        w[0].on_message(PeerId(1), Msg::Reply, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w[0].on_cs_done(&mut o);
        assert!(o.actions().is_empty(), "nobody was deferred");
        // w1's next ticket is above the one it saw.
        let mut o = out();
        w[1].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(0, req(2))]);
    }

    #[test]
    fn three_nodes_concurrent_requests_in_ticket_order() {
        let mut w = nodes::<false>(3);
        // w2 asks first (ticket 1); w1 sees that request, then asks itself (ticket 2).
        let mut o = out();
        w[2].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(0, req(1)), send(1, req(1))]);
        let mut o = out();
        w[1].on_message(PeerId(2), req(1), &mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Reply)]);
        let mut o = out();
        w[1].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(0, req(2)), send(2, req(2))]);
        // w0 is quiet: it answers both at once.
        let mut o = out();
        w[0].on_message(PeerId(1), req(2), &mut o);
        w[0].on_message(PeerId(2), req(1), &mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Reply), send(2, Msg::Reply)]);
        // w2 holds the older request: it defers w1 and enters after w0's and w1's REPLY.
        let mut o = out();
        w[2].on_message(PeerId(1), req(2), &mut o);
        assert!(o.actions().is_empty());
        assert_eq!(w[2].pending(), "waiting for REPLY from w0, w1 (ticket 1)");
        w[2].on_message(PeerId(0), Msg::Reply, &mut o);
        w[2].on_message(PeerId(1), Msg::Reply, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        // w1 has w0's REPLY only.
        let mut o = out();
        w[1].on_message(PeerId(0), Msg::Reply, &mut o);
        assert!(o.actions().is_empty());
        assert_eq!(w[1].pending(), "waiting for REPLY from w2 (ticket 2)");
        // w2 leaves and sends the deferred REPLY; w1 enters.
        let mut o = out();
        w[2].on_cs_done(&mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Reply)]);
        let mut o = out();
        w[1].on_message(PeerId(2), Msg::Reply, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        assert_eq!(w[1].pending(), "");
    }

    #[test]
    fn equal_tickets_go_to_the_smaller_id() {
        let mut w = nodes::<false>(2);
        let mut o0 = out();
        let mut o1 = out();
        w[0].on_want_cs(&mut o0);
        w[1].on_want_cs(&mut o1);
        assert_eq!(o0.actions(), &[send(1, req(1))]);
        assert_eq!(o1.actions(), &[send(0, req(1))]);
        // Both tickets are 1: w0 wins, so w0 defers w1 and w1 answers w0.
        let mut o0 = out();
        w[0].on_message(PeerId(1), req(1), &mut o0);
        assert!(o0.actions().is_empty());
        let mut o1 = out();
        w[1].on_message(PeerId(0), req(1), &mut o1);
        assert_eq!(o1.actions(), &[send(0, Msg::Reply)]);
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Reply, &mut o0);
        assert_eq!(o0.actions(), &[Action::enter()]);
        let mut o0 = out();
        w[0].on_cs_done(&mut o0);
        assert_eq!(o0.actions(), &[send(1, Msg::Reply)]);
        let mut o1 = out();
        w[1].on_message(PeerId(0), Msg::Reply, &mut o1);
        assert_eq!(o1.actions(), &[Action::enter()]);
    }

    #[test]
    fn a_quiet_node_answers_even_a_small_ticket() {
        let mut w1 = Ra::<false>::new(&Config::new(1, 3));
        let mut o = out();
        w1.on_message(PeerId(2), req(9), &mut o);
        w1.on_message(PeerId(0), req(1), &mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Reply), send(0, Msg::Reply)]);
        // Having seen ticket 9, its own next ticket is 10.
        let mut o = out();
        w1.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(0, req(10)), send(2, req(10))]);
    }

    #[test]
    fn a_node_inside_defers_even_a_smaller_ticket() {
        // Only a forgetful (restarted) peer sends such a ticket; it must wait anyway.
        let mut w = nodes::<false>(2);
        w[0].on_message(PeerId(1), req(5), &mut out());
        w[0].on_want_cs(&mut out());
        w[0].on_message(PeerId(1), Msg::Reply, &mut out());
        assert!(w[0].inside);
        let mut o = out();
        w[0].on_message(PeerId(1), req(1), &mut o);
        assert!(o.actions().is_empty());
        let mut o = out();
        w[0].on_cs_done(&mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Reply)]);
    }

    #[test]
    fn peer_down_counts_as_a_reply_and_peer_up_asks_again() {
        let mut w0 = Ra::<false>::new(&Config::new(0, 3));
        w0.on_want_cs(&mut out());
        w0.on_message(PeerId(1), Msg::Reply, &mut out());
        // w1 restarts: its REPLY no longer counts, ask the new one.
        let mut o = out();
        w0.on_peer_up(PeerId(1), &mut o);
        assert_eq!(o.actions(), &[send(1, req(1))]);
        // A deferred REQUEST from w1's old incarnation gets no REPLY.
        w0.on_message(PeerId(1), req(7), &mut out());
        w0.on_peer_up(PeerId(1), &mut out());
        assert!(w0.deferred.is_empty());
        // w2 dies: it will never answer, and it is not inside.
        let mut o = out();
        w0.on_peer_down(PeerId(2), &mut o);
        assert!(o.actions().is_empty());
        let mut o = out();
        w0.on_message(PeerId(1), Msg::Reply, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
    }

    #[test]
    fn a_peer_known_down_is_not_waited_for_and_is_asked_when_it_comes_back() {
        let mut w0 = Ra::<false>::new(&Config::new(0, 3));
        w0.on_peer_down(PeerId(2), &mut out());
        // A request made while w2 is dead does not wait for it.
        let mut o = out();
        w0.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(1, req(1))]);
        assert_eq!(w0.pending(), "waiting for REPLY from w1 (ticket 1)");
        // w2 comes back before w1 answers: the fresh process is asked, and waited for.
        let mut o = out();
        w0.on_peer_up(PeerId(2), &mut o);
        assert_eq!(o.actions(), &[send(2, req(1))]);
        assert_eq!(w0.pending(), "waiting for REPLY from w1, w2 (ticket 1)");
        let mut o = out();
        w0.on_message(PeerId(1), Msg::Reply, &mut o);
        assert!(o.actions().is_empty());
        w0.on_message(PeerId(2), Msg::Reply, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        // Inside, a peer coming back is not asked: it must ask us, and we defer it.
        let mut o = out();
        w0.on_peer_down(PeerId(1), &mut o);
        w0.on_peer_up(PeerId(1), &mut o);
        w0.on_message(PeerId(1), req(1), &mut o);
        assert!(o.actions().is_empty());
        let mut o = out();
        w0.on_cs_done(&mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Reply)]);
    }

    #[test]
    fn a_peer_still_awaited_is_asked_again_when_it_comes_back() {
        // The REQUEST to w2 went to a process that is gone (or never got there); the
        // runtime may even report the new incarnation before the old channel's EOF. The
        // new one must be asked, though w2 was awaited all along.
        let mut w0 = Ra::<false>::new(&Config::new(0, 3));
        w0.on_want_cs(&mut out());
        let mut o = out();
        w0.on_peer_up(PeerId(2), &mut o);
        assert_eq!(o.actions(), &[send(2, req(1))]);
        assert_eq!(w0.pending(), "waiting for REPLY from w1, w2 (ticket 1)");
    }

    #[test]
    fn a_restarted_peer_with_a_small_ticket_goes_first_and_nobody_overlaps() {
        let mut w = nodes::<false>(3);
        // Tickets climb to 5; then w0 asks with ticket 6 and w2 answers.
        w[0].on_message(PeerId(1), req(5), &mut out());
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(1, req(6)), send(2, req(6))]);
        w[0].on_message(PeerId(2), Msg::Reply, &mut out());
        // w2 dies and comes back with no memory; w0 asks the new one.
        w[0].on_peer_down(PeerId(2), &mut out());
        w[2] = Ra::new(&Config::new(2, 3));
        let mut o = out();
        w[0].on_peer_up(PeerId(2), &mut o);
        assert_eq!(o.actions(), &[send(2, req(6))]);
        // The fresh w2 asks with ticket 1: older than w0's, so w0 lets it go first and
        // w2 defers w0's request.
        let mut o = out();
        w[2].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(0, req(1)), send(1, req(1))]);
        let mut o = out();
        w[0].on_message(PeerId(2), req(1), &mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Reply)]);
        let mut o = out();
        w[2].on_message(PeerId(0), req(6), &mut o);
        assert!(o.actions().is_empty());
        // w1 is quiet and answers both: w2 enters, w0 still waits for w2.
        let mut o = out();
        w[0].on_message(PeerId(1), Msg::Reply, &mut o);
        assert!(o.actions().is_empty(), "w0 must not count the old w2's REPLY");
        let mut o = out();
        w[2].on_message(PeerId(0), Msg::Reply, &mut o);
        w[2].on_message(PeerId(1), Msg::Reply, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w[2].on_cs_done(&mut o);
        assert_eq!(o.actions(), &[send(0, Msg::Reply)]);
        let mut o = out();
        w[0].on_message(PeerId(2), Msg::Reply, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
    }

    #[test]
    fn single_node_enters_alone() {
        let mut w = Ra::<false>::new(&Config::new(0, 1));
        let mut o = out();
        w.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
    }

    #[test]
    fn rc_reenters_without_messages() {
        let mut w = nodes::<true>(3);
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(1, req(1)), send(2, req(1))]);
        w[1].on_message(PeerId(0), req(1), &mut out());
        w[2].on_message(PeerId(0), req(1), &mut out());
        w[0].on_message(PeerId(1), Msg::Reply, &mut out());
        let mut o = out();
        w[0].on_message(PeerId(2), Msg::Reply, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        w[0].on_cs_done(&mut out());
        // Nobody asked in between: w0 still holds both permissions.
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        w[0].on_cs_done(&mut out());
        // w1 asks: w0 is quiet, gives the permission away, and must ask w1 next time.
        let mut o = out();
        w[0].on_message(PeerId(1), req(2), &mut o);
        assert_eq!(o.actions(), &[send(1, Msg::Reply)]);
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(1, req(3))]);
        assert_eq!(w[0].pending(), "waiting for REPLY from w1 (ticket 3)");
    }

    #[test]
    fn rc_gives_back_a_kept_permission_and_asks_for_it_again() {
        let mut w = nodes::<true>(3);
        // w1 enters once and keeps both permissions.
        w[1].on_want_cs(&mut out());
        w[0].on_message(PeerId(1), req(1), &mut out());
        w[2].on_message(PeerId(1), req(1), &mut out());
        w[1].on_message(PeerId(0), Msg::Reply, &mut out());
        w[1].on_message(PeerId(2), Msg::Reply, &mut out());
        w[1].on_cs_done(&mut out());
        // w2 enters with ticket 2, taking back w1's permission.
        let mut o = out();
        w[2].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(0, req(2)), send(1, req(2))]);
        let mut o = out();
        w[1].on_message(PeerId(2), req(2), &mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Reply)]);
        w[0].on_message(PeerId(2), req(2), &mut out());
        w[2].on_message(PeerId(0), Msg::Reply, &mut out());
        w[2].on_message(PeerId(1), Msg::Reply, &mut out());
        w[2].on_cs_done(&mut out());
        // w0 and w1 both ask with ticket 3. w1 still holds w0's permission, so it asks
        // only w2.
        let mut o0 = out();
        w[0].on_want_cs(&mut o0);
        assert_eq!(o0.actions(), &[send(1, req(3)), send(2, req(3))]);
        let mut o1 = out();
        w[1].on_want_cs(&mut o1);
        assert_eq!(o1.actions(), &[send(2, req(3))]);
        // w0's request ties on the ticket and wins on the id: w1 hands the permission
        // over and asks for it back in the same breath.
        let mut o1 = out();
        w[1].on_message(PeerId(0), req(3), &mut o1);
        assert_eq!(o1.actions(), &[send(0, Msg::Reply), send(0, req(3))]);
        assert_eq!(w[1].pending(), "waiting for REPLY from w0, w2 (ticket 3)");
        // w2 is quiet and answers both; w0 enters and defers w1 until it leaves.
        let mut o2 = out();
        w[2].on_message(PeerId(0), req(3), &mut o2);
        w[2].on_message(PeerId(1), req(3), &mut o2);
        assert_eq!(o2.actions(), &[send(0, Msg::Reply), send(1, Msg::Reply)]);
        let mut o0 = out();
        w[0].on_message(PeerId(1), Msg::Reply, &mut o0);
        w[0].on_message(PeerId(2), Msg::Reply, &mut o0);
        w[0].on_message(PeerId(1), req(3), &mut o0);
        assert_eq!(o0.actions(), &[Action::enter()]);
        let mut o0 = out();
        w[0].on_cs_done(&mut o0);
        assert_eq!(o0.actions(), &[send(1, Msg::Reply)]);
        let mut o1 = out();
        w[1].on_message(PeerId(2), Msg::Reply, &mut o1);
        w[1].on_message(PeerId(0), Msg::Reply, &mut o1);
        assert_eq!(o1.actions(), &[Action::enter()]);
    }

    #[test]
    fn rc_keeps_a_permission_across_the_peer_s_restart_and_the_fresh_peer_asks_for_it() {
        let mut w = nodes::<true>(3);
        // w0 enters once and keeps both permissions.
        w[0].on_want_cs(&mut out());
        w[1].on_message(PeerId(0), req(1), &mut out());
        w[2].on_message(PeerId(0), req(1), &mut out());
        w[0].on_message(PeerId(1), Msg::Reply, &mut out());
        w[0].on_message(PeerId(2), Msg::Reply, &mut out());
        w[0].on_cs_done(&mut out());
        // w2 dies and restarts. w0 still holds the pair's permission: the fresh w2 holds
        // none and will have to ask for it.
        let mut o = out();
        w[0].on_peer_down(PeerId(2), &mut o);
        w[2] = Ra::new(&Config::new(2, 3));
        w[0].on_peer_up(PeerId(2), &mut o);
        assert!(o.actions().is_empty());
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[Action::enter()], "both permissions are still w0's");
        // The fresh w2 asks everyone (ticket 1); w0 is inside and defers it.
        let mut o = out();
        w[2].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(0, req(1)), send(1, req(1))]);
        let mut o = out();
        w[0].on_message(PeerId(2), req(1), &mut o);
        assert!(o.actions().is_empty());
        let mut o = out();
        w[1].on_message(PeerId(2), req(1), &mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Reply)]);
        let mut o = out();
        w[2].on_message(PeerId(1), Msg::Reply, &mut o);
        assert!(o.actions().is_empty(), "w2 cannot enter while w0 is inside");
        assert_eq!(w[2].pending(), "waiting for REPLY from w0 (ticket 1)");
        // w0 leaves and hands the permission over; now w2 holds it and w0 must ask.
        let mut o = out();
        w[0].on_cs_done(&mut o);
        assert_eq!(o.actions(), &[send(2, Msg::Reply)]);
        let mut o = out();
        w[2].on_message(PeerId(0), Msg::Reply, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(2, req(2))]);
    }

    #[test]
    fn rc_asks_a_restarted_peer_whose_permission_it_does_not_hold() {
        let mut w = nodes::<true>(3);
        // w2 enters once and keeps both permissions; w0 holds none.
        w[2].on_want_cs(&mut out());
        w[0].on_message(PeerId(2), req(1), &mut out());
        w[1].on_message(PeerId(2), req(1), &mut out());
        w[2].on_message(PeerId(0), Msg::Reply, &mut out());
        w[2].on_message(PeerId(1), Msg::Reply, &mut out());
        w[2].on_cs_done(&mut out());
        // w2 dies: w0's request made meanwhile skips it.
        w[0].on_peer_down(PeerId(2), &mut out());
        let mut o = out();
        w[0].on_want_cs(&mut o);
        assert_eq!(o.actions(), &[send(1, req(2))]);
        // The permission w2 kept died with it; w0 does not hold it either, so it asks
        // the fresh w2 and waits for its REPLY.
        let mut o = out();
        w[0].on_peer_up(PeerId(2), &mut o);
        assert_eq!(o.actions(), &[send(2, req(2))]);
        assert_eq!(w[0].pending(), "waiting for REPLY from w1, w2 (ticket 2)");
        // Should w2 restart once more before answering, the newest one is asked too.
        let mut o = out();
        w[0].on_peer_up(PeerId(2), &mut o);
        assert_eq!(o.actions(), &[send(2, req(2))]);
    }

    #[test]
    fn sim_ricart_agrawala_costs_exactly_2_n_minus_1() {
        sweep::<RicartAgrawala>(
            &[1, 2, 3, 5, 8],
            0..200,
            3,
            |_| {},
            |r, _| {
                let n = u64::from(r.n);
                assert_eq!(r.entries, 3 * n);
                assert_eq!(r.total_messages(), r.entries * 2 * (n - 1), "seed {} n {}", r.seed, r.n);
                assert_eq!(r.count("REQUEST"), r.count("REPLY"));
            },
        );
    }

    #[test]
    fn sim_ricart_agrawala_needs_no_fifo() {
        for n in [2, 3, 5] {
            for seed in 0..100 {
                let r =
                    Sim::<RicartAgrawala>::new(n, seed).non_fifo().run(3).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(r.per_entry(), 2.0 * f64::from(n - 1));
            }
        }
    }

    #[test]
    fn sim_roucairol_carvalho_never_costs_more() {
        let mut cheaper = 0;
        sweep::<RoucairolCarvalho>(
            &[1, 2, 3, 5, 8],
            0..200,
            3,
            |_| {},
            |r, _| {
                let n = u64::from(r.n);
                assert_eq!(r.entries, 3 * n);
                assert!(r.total_messages() <= r.entries * 2 * (n - 1), "seed {} n {}", r.seed, r.n);
                assert_eq!(r.count("REQUEST"), r.count("REPLY"));
                if r.total_messages() < r.entries * 2 * (n - 1) {
                    cheaper += 1;
                }
            },
        );
        assert!(cheaper > 100, "keeping permissions saved messages in only {cheaper} runs");
    }

    /// Crashes and restarts anywhere, holders included: a dead node is not inside, and a
    /// fresh one is asked again.
    fn survives_crashes<const K: bool>() {
        let mut crashes = 0;
        for n in [2, 3, 5] {
            for seed in 0..200 {
                let mut sim = crate::sim::Sim::<Ra<K>>::new(n, seed).non_fifo().crashes(3, |_| true);
                let r = sim.run(4).unwrap_or_else(|e| panic!("{e}"));
                assert!(r.entries >= u64::from(n) * 4);
                crashes += r.crashes;
            }
        }
        assert!(crashes > 300, "only {crashes} crashes");
    }

    #[test]
    fn sim_ricart_agrawala_survives_crashes_and_restarts() {
        survives_crashes::<false>();
    }

    #[test]
    fn sim_roucairol_carvalho_survives_crashes_and_restarts() {
        survives_crashes::<true>();
    }
}
