//! Suzuki-Kasami (1985): broadcast a numbered request; the token carries who was served.
//!
//! There is one TOKEN, which worker 0 holds at the start, and its holder may enter the
//! section as often as it likes without a word to anyone. A node without the token that
//! wants in numbers its requests 1, 2, 3, … and broadcasts REQUEST carrying the new
//! number. Every node keeps, for every node j, the highest request number it has heard
//! from j (`rn[j]`). The token itself carries two things: for every node, the number of
//! its last request that was served (`last_served[j]`), and a queue of nodes waiting for
//! it. So node j has a request outstanding exactly when `rn[j] = last_served[j] + 1`:
//! a node asks again only after its previous request was served, so the difference is
//! never more than one.
//!
//! Leaving the section, the holder records its own request as served (`last_served[me]
//! = rn[me]`), then appends to the token's queue every node with an outstanding request
//! that is not queued already (looking at nodes in ring order from its successor on, so
//! no id is favoured), and sends the token to the head of the queue with the rest of the
//! queue inside. With an empty queue it keeps the token; when a REQUEST then reaches it
//! while it is outside the section, it sends the token off at once. A REQUEST whose
//! number is not above what the receiver already knows from that node is a duplicate or
//! was overtaken (channels need not be FIFO) and is dropped. A REQUEST may also arrive
//! after its request has been served through another holder: then `rn[j]` equals
//! `last_served[j]` and the holder sees nothing outstanding, so an outdated request
//! never draws the token.
//!
//! Safety is the single token. Liveness and fairness come from the queue: a request
//! reaches every node, so the holder at the time sees it and queues it (or some earlier
//! holder already did, and the queue travels with the token), and a queued node is
//! served before anyone who joins the queue after it.
//!
//! Cost: an entry that needs the token costs exactly N messages, N-1 REQUESTs and one
//! TOKEN (every TOKEN goes to a node whose request it serves); an entry by the holder
//! when nobody has asked for the token since costs nothing. So a run costs between 0 and
//! N per entry on average: N at saturation, where the token moves for every entry, less
//! when one node re-enters alone. The TOKEN message grows with N (an array and a queue).
//! Each entry that costs no message is counted for the run report as `free_entries`.
//!
//! The Ricart-Agrawala token-passing algorithm in the course notes (Algorithm 10.3, the
//! built-in `ra-token`, [`super::ra_token`]) shares the numbered requests and the two
//! arrays: its `requested` is `rn`, its `granted` (passed along with the token) is
//! `last_served`. It is not this algorithm: its token carries no queue, and a leaving
//! holder picks the next one afresh by scanning ids round from its own successor, so
//! the two can serve waiting nodes in different orders (lab 02's question 5 asks for
//! one). Either way nobody is passed over for ever.
//!
//! # Crashes
//!
//! Crashes are outside the model; what follows only keeps the damage small. A dead
//! process is not inside the section, so a holder never sends the token to a node it
//! knows to be down: such a node is dropped from the queue and not queued again while it
//! stays down. A holder that dies takes the token along, and everyone who wants in then
//! waits for good; the stall diagnosis shows [`Algorithm::pending`], which names where
//! this node last knew the token to be. Nobody ever makes a new token: a node cannot tell
//! a lost token from a busy holder, and two tokens would let two nodes in at once. For
//! the same reason only worker 0's first life makes the token ([`Config::incarnation`]
//! is 0): a restarted worker 0 would make a second one if the old one survived.
//!
//! A restarted node other than worker 0 numbers its requests from 1 again. So that they
//! do not look old, every node forgets what it heard from the old incarnation when a peer
//! comes back (`rn[p] = 0`), and the token's `last_served[p]` is set back to 0 by the
//! holder at the time, or, if the token was travelling, by each node that saw the
//! restart, when the token next reaches it. Setting an entry back can only make a node
//! look as if it waits when it does not; the worst that follows is a spare TOKEN to a
//! node that did not ask, which puts its own entry right (every node knows its own
//! count) and hands the token on or keeps it. That is why "outstanding" is tested as
//! `rn[j] > last_served[j]` rather than `= last_served[j] + 1`: the two agree whenever
//! nobody restarted. None of this touches safety, which rests on the one token alone.

use std::collections::{BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId, Renaming, Symmetric};

/// Messages of Suzuki-Kasami.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Broadcast: the sender wants the token for its request number `number`.
    Request {
        /// The sender's request count, 1 for its first request.
        number: u64,
    },
    /// The token itself, sent to the node it serves.
    Token {
        /// For each node, the number of its last request that was served.
        last_served: Vec<u64>,
        /// Nodes waiting for the token after the receiver, in order.
        queue: VecDeque<PeerId>,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "REQUEST",
            Msg::Token { .. } => "TOKEN",
        }
    }
}

type O = Out<Msg, NoTimer>;

/// The token while a node holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Token {
    last_served: Vec<u64>,
    queue: VecDeque<PeerId>,
}

/// One node of Suzuki-Kasami.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SuzukiKasami {
    cfg: Config,
    /// The highest request number heard from each node (this node's own included).
    rn: Vec<u64>,
    /// The token, while this node holds it.
    token: Option<Token>,
    /// The application asked and is not inside yet.
    waiting: bool,
    /// The application is inside.
    inside: bool,
    /// Where this node last knew the token to be (`None`: not since it restarted).
    holder: Option<PeerId>,
    /// Peers whose channel closed and that have not come back.
    down: BTreeSet<PeerId>,
    /// Peers that came back while the token was not here: their `last_served` entry is
    /// set back to 0 when it arrives.
    restarted: BTreeSet<PeerId>,
}

impl SuzukiKasami {
    /// The token is here (for the checker's "one token at most").
    pub fn holds_token(&self) -> bool {
        self.token.is_some()
    }
}

impl SuzukiKasami {
    fn enter(&mut self, out: &mut O) {
        self.waiting = false;
        self.inside = true;
        out.enter_cs();
    }

    /// Holder, outside the section: queue every outstanding request, and send the token
    /// to the first live node in the queue, if there is one.
    fn hand_on(&mut self, out: &mut O) {
        let (me, n) = (self.cfg.id.0, self.cfg.n);
        let Some(tok) = self.token.as_mut() else {
            return;
        };
        for j in (1..n).map(|k| PeerId((me + k) % n)) {
            let outstanding = self.rn[j.index()] > tok.last_served[j.index()];
            if outstanding && !self.down.contains(&j) && !tok.queue.contains(&j) {
                tok.queue.push_back(j);
            }
        }
        tok.queue.retain(|p| !self.down.contains(p));
        if let Some(next) = tok.queue.pop_front() {
            let Token { last_served, queue } = self.token.take().expect("held");
            self.holder = Some(next);
            out.send(next, Msg::Token { last_served, queue });
        }
    }
}

impl Algorithm for SuzukiKasami {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        let n = cfg.n as usize;
        SuzukiKasami {
            cfg: cfg.clone(),
            rn: vec![0; n],
            token: None,
            waiting: false,
            inside: false,
            // w0 makes the token; a restarted node cannot know where it went (and a
            // guess by id would be no symmetry of the ring's).
            holder: (cfg.incarnation == 0).then_some(PeerId(0)),
            down: BTreeSet::new(),
            restarted: BTreeSet::new(),
        }
    }

    fn on_start(&mut self, _out: &mut O) {
        // Only the first life of worker 0 makes the token; a restarted one must not.
        if self.cfg.id == PeerId(0) && self.cfg.incarnation == 0 {
            let n = self.cfg.n as usize;
            self.token = Some(Token { last_served: vec![0; n], queue: VecDeque::new() });
        }
    }

    fn on_want_cs(&mut self, out: &mut O) {
        self.waiting = true;
        if self.token.is_some() {
            // Nobody asked since this node last had the section (or it would have sent
            // the token away): in again, for free.
            out.count("free_entries", 1);
            self.enter(out);
        } else {
            let me = self.cfg.id.index();
            self.rn[me] += 1;
            out.broadcast(Msg::Request { number: self.rn[me] });
        }
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut O) {
        match msg {
            Msg::Request { number } => {
                let Some(known) = self.rn.get_mut(from.index()) else {
                    return;
                };
                if number <= *known {
                    return; // a duplicate, or overtaken by a newer one
                }
                *known = number;
                if !self.inside {
                    // An idle holder sends the token off; anyone else just remembers.
                    self.hand_on(out);
                }
            }
            // A second token cannot exist in the model; keeping only one is the safe
            // side, so an extra one is dropped.
            Msg::Token { .. } if self.token.is_some() => {}
            Msg::Token { last_served, queue } => {
                if last_served.len() != self.cfg.n as usize {
                    return; // not a token of this run
                }
                let mut tok = Token { last_served, queue };
                // Restarts only (see the module doc): forget what old incarnations were
                // served, and put this node's own entry right.
                for p in std::mem::take(&mut self.restarted) {
                    tok.last_served[p.index()] = 0;
                }
                let me = self.cfg.id.index();
                tok.last_served[me] = self.rn[me] - u64::from(self.waiting && self.rn[me] > 0);
                self.token = Some(tok);
                self.holder = Some(self.cfg.id);
                if self.waiting {
                    self.enter(out);
                } else {
                    // Unasked (not in the model): serve whoever waits, or keep it.
                    self.hand_on(out);
                }
            }
        }
    }

    fn on_cs_done(&mut self, out: &mut O) {
        self.inside = false;
        let me = self.cfg.id.index();
        if let Some(tok) = self.token.as_mut() {
            tok.last_served[me] = self.rn[me];
        }
        self.hand_on(out);
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut O) {
        // A dead node is not inside and must not be sent the token; if it held the
        // token, the token is gone, and only waiting (never a new token) is safe.
        self.down.insert(peer);
        if !self.inside {
            self.hand_on(out);
        }
    }

    fn on_peer_up(&mut self, peer: PeerId, _out: &mut O) {
        // The fresh process numbers its requests from 1 again (see the module doc).
        self.down.remove(&peer);
        let Some(known) = self.rn.get_mut(peer.index()) else {
            return;
        };
        *known = 0;
        match self.token.as_mut() {
            Some(tok) => {
                tok.last_served[peer.index()] = 0;
                tok.queue.retain(|&p| p != peer);
            }
            None => {
                self.restarted.insert(peer);
            }
        }
    }

    fn pending(&self) -> String {
        if !self.waiting {
            return String::new();
        }
        let me = self.cfg.id.index();
        match self.holder {
            Some(h) => {
                format!("waiting for the TOKEN for request {} (held by {h} as far as I know)", self.rn[me])
            }
            None => format!(
                "waiting for the TOKEN for request {} (where it is, unknown: restarted since)",
                self.rn[me]
            ),
        }
    }
}

/// The ring's rotations, and only those: a leaving holder queues the waiting nodes in
/// ring order from its successor, so a renaming must keep every node's successor (a swap
/// of two nodes changes who is queued first when both wait). `rn`, the token's
/// `last_served` and its queue are indexed by id and move with the renaming. Worker 0
/// making the token breaks the symmetry only at the start, as in `token-ring`.
impl Symmetric for SuzukiKasami {
    fn renamings(n: u32) -> Vec<Renaming> {
        Renaming::rotations(n)
    }
    fn renamed(&self, r: &Renaming) -> Self {
        SuzukiKasami {
            cfg: Config { id: r.of(self.cfg.id), ..self.cfg.clone() },
            rn: r.permute(&self.rn),
            token: self.token.as_ref().map(|t| Token {
                last_served: r.permute(&t.last_served),
                queue: t.queue.iter().map(|&p| r.of(p)).collect(),
            }),
            waiting: self.waiting,
            inside: self.inside,
            holder: self.holder.map(|h| r.of(h)),
            down: self.down.iter().map(|&p| r.of(p)).collect(),
            restarted: self.restarted.iter().map(|&p| r.of(p)).collect(),
        }
    }
    fn msg_renamed(msg: &Msg, r: &Renaming) -> Msg {
        match msg {
            Msg::Request { number } => Msg::Request { number: *number },
            Msg::Token { last_served, queue } => Msg::Token {
                last_served: r.permute(last_served),
                queue: queue.iter().map(|&p| r.of(p)).collect(),
            },
        }
    }
    fn timer_renamed(timer: &NoTimer, _: &Renaming) -> NoTimer {
        match *timer {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::{broadcast, out, send, start, Script};
    use crate::script::{deliver, done, want};
    use crate::sim::{sweep, Sim};
    use std::time::Duration;

    fn req(number: u64) -> Msg {
        Msg::Request { number }
    }

    fn tok(last_served: &[u64], queue: &[u32]) -> Msg {
        Msg::Token { last_served: last_served.to_vec(), queue: queue.iter().map(|&p| PeerId(p)).collect() }
    }

    /// `me`'s REQUEST `number` to every other node, as the host carries a broadcast.
    fn bcast(w: &Script<SuzukiKasami>, me: u32, number: u64) -> Vec<Action<Msg, NoTimer>> {
        broadcast(w.len() as u32, me, req(number))
    }

    /// A re-entry with the token at hand: counted, and in at once.
    fn free() -> Vec<Action<Msg, NoTimer>> {
        vec![Action::Count { name: "free_entries".into(), by: 1 }, Action::enter()]
    }

    fn nodes(n: u32) -> Script<SuzukiKasami> {
        let mut w = Script::new(n);
        for i in 0..n {
            assert!(start(&mut w, i).is_empty(), "starting costs nothing");
        }
        w
    }

    #[test]
    fn two_nodes_trace() {
        let mut w = nodes(2);
        // w1 asks; w0 holds the token, idle, and sends it at once.
        assert_eq!(want(&mut w, 1), bcast(&w, 1, 1));
        assert_eq!(w[1].pending(), "waiting for the TOKEN for request 1 (held by w0 as far as I know)");
        assert_eq!(deliver(&mut w, 1, 0, req(1)), vec![send(1, tok(&[0, 0], &[]))]);
        assert_eq!(deliver(&mut w, 0, 1, tok(&[0, 0], &[])), vec![Action::enter()]);
        assert_eq!(w[1].pending(), "");
        // Nobody else asked: w1 keeps the token, and re-enters for nothing.
        assert!(done(&mut w, 1).is_empty());
        assert_eq!(want(&mut w, 1), free());
        assert!(done(&mut w, 1).is_empty());
        // w0 asks now: request 1 of its own; the token carries w1's served request.
        assert_eq!(want(&mut w, 0), bcast(&w, 0, 1));
        assert_eq!(w[0].pending(), "waiting for the TOKEN for request 1 (held by w1 as far as I know)");
        assert_eq!(deliver(&mut w, 0, 1, req(1)), vec![send(0, tok(&[0, 1], &[]))]);
        assert_eq!(deliver(&mut w, 1, 0, tok(&[0, 1], &[])), vec![Action::enter()]);
        assert!(done(&mut w, 0).is_empty());
        assert_eq!(w[0].token.as_ref().unwrap().last_served, vec![1, 1]);
    }

    #[test]
    fn the_holder_re_enters_for_free_until_someone_asks() {
        let mut w = nodes(3);
        for _ in 0..3 {
            assert_eq!(want(&mut w, 0), free());
            assert!(done(&mut w, 0).is_empty());
        }
        // A request arriving while the holder is inside waits for the exit.
        assert_eq!(want(&mut w, 0), free());
        assert_eq!(want(&mut w, 2), bcast(&w, 2, 1));
        assert!(deliver(&mut w, 2, 0, req(1)).is_empty());
        assert_eq!(done(&mut w, 0), vec![send(2, tok(&[0, 0, 0], &[]))]);
    }

    #[test]
    fn three_nodes_queue_in_ring_order_and_the_queue_travels() {
        let mut w = nodes(3);
        assert_eq!(want(&mut w, 0), free());
        // w2 then w1 ask while w0 is inside.
        assert_eq!(want(&mut w, 2), bcast(&w, 2, 1));
        assert_eq!(want(&mut w, 1), bcast(&w, 1, 1));
        assert!(deliver(&mut w, 2, 0, req(1)).is_empty());
        assert!(deliver(&mut w, 1, 0, req(1)).is_empty());
        // w1 hears w2's request too; w2 never hears w1's before the token comes.
        assert!(deliver(&mut w, 2, 1, req(1)).is_empty());
        // w0 leaves: both are queued, from its successor on, and w1 gets the token with
        // w2 still queued inside it.
        assert_eq!(done(&mut w, 0), vec![send(1, tok(&[0, 0, 0], &[2]))]);
        assert_eq!(w[0].token, None);
        assert_eq!(deliver(&mut w, 0, 1, tok(&[0, 0, 0], &[2])), vec![Action::enter()]);
        // w1 leaves; w2 is queued already and is not queued twice.
        assert_eq!(done(&mut w, 1), vec![send(2, tok(&[0, 1, 0], &[]))]);
        assert_eq!(deliver(&mut w, 1, 2, tok(&[0, 1, 0], &[])), vec![Action::enter()]);
        // w1's request reaches w2 only now, already served: it draws nothing.
        assert!(deliver(&mut w, 1, 2, req(1)).is_empty());
        assert!(done(&mut w, 2).is_empty(), "nothing outstanding: w2 keeps the token");
        assert_eq!(w[2].token.as_ref().unwrap().last_served, vec![0, 1, 1]);
        // w1's and w2's entries cost N = 3 messages each (two REQUESTs, one TOKEN);
        // w0's was free, so its own count stayed 0.
    }

    #[test]
    fn an_outdated_request_is_ignored_by_an_idle_holder() {
        let mut w = nodes(3);
        // w1 asks; only w0 (the holder) hears it before serving it.
        assert_eq!(want(&mut w, 1), bcast(&w, 1, 1));
        assert_eq!(deliver(&mut w, 1, 0, req(1)), vec![send(1, tok(&[0, 0, 0], &[]))]);
        assert_eq!(deliver(&mut w, 0, 1, tok(&[0, 0, 0], &[])), vec![Action::enter()]);
        assert!(done(&mut w, 1).is_empty());
        // w2 gets the token from w1.
        assert_eq!(want(&mut w, 2), bcast(&w, 2, 1));
        assert_eq!(deliver(&mut w, 2, 1, req(1)), vec![send(2, tok(&[0, 1, 0], &[]))]);
        assert_eq!(deliver(&mut w, 1, 2, tok(&[0, 1, 0], &[])), vec![Action::enter()]);
        assert!(done(&mut w, 2).is_empty());
        // w1's old request 1 turns up at w2, the idle holder: already served, ignored.
        assert!(deliver(&mut w, 1, 2, req(1)).is_empty());
        assert!(w[2].token.is_some());
        // A duplicate (or overtaken) request number is dropped on arrival.
        assert!(deliver(&mut w, 1, 2, req(1)).is_empty());
        assert_eq!(w[2].rn, vec![0, 1, 1]);
        // w1's next request does draw the token.
        assert_eq!(want(&mut w, 1), bcast(&w, 1, 2));
        assert_eq!(deliver(&mut w, 1, 2, req(2)), vec![send(1, tok(&[0, 1, 1], &[]))]);
    }

    #[test]
    fn a_newer_request_that_overtook_an_older_one_counts_once() {
        let mut w = nodes(2);
        assert_eq!(want(&mut w, 0), free());
        assert!(deliver(&mut w, 1, 0, req(2)).is_empty());
        assert!(deliver(&mut w, 1, 0, req(1)).is_empty());
        assert_eq!(w[0].rn, vec![0, 2]);
    }

    #[test]
    fn a_dead_node_is_never_sent_the_token() {
        let mut w = nodes(4);
        assert_eq!(want(&mut w, 0), free());
        for i in [1, 2] {
            assert_eq!(want(&mut w, i), bcast(&w, i, 1));
            assert!(deliver(&mut w, i, 0, req(1)).is_empty());
        }
        w[0].on_peer_down(PeerId(1), &mut out());
        assert_eq!(done(&mut w, 0), vec![send(2, tok(&[0, 0, 0, 0], &[]))]);
        // A dead node queued inside the token is dropped by the next holder.
        let mut w = nodes(4);
        assert_eq!(want(&mut w, 0), free());
        for i in [1, 2, 3] {
            assert_eq!(want(&mut w, i), bcast(&w, i, 1));
            assert!(deliver(&mut w, i, 0, req(1)).is_empty());
        }
        assert_eq!(done(&mut w, 0), vec![send(1, tok(&[0, 0, 0, 0], &[2, 3]))]);
        assert_eq!(deliver(&mut w, 0, 1, tok(&[0, 0, 0, 0], &[2, 3])), vec![Action::enter()]);
        w[1].on_peer_down(PeerId(2), &mut out());
        assert_eq!(done(&mut w, 1), vec![send(3, tok(&[0, 1, 0, 0], &[]))]);
    }

    #[test]
    fn a_restarted_node_numbers_from_1_again_and_is_still_served() {
        let mut w = nodes(3);
        // w1 is served twice (requests 1 and 2), w0 once; then w2 gets the token.
        assert_eq!(want(&mut w, 1), bcast(&w, 1, 1));
        assert_eq!(deliver(&mut w, 1, 0, req(1)), vec![send(1, tok(&[0, 0, 0], &[]))]);
        assert_eq!(deliver(&mut w, 0, 1, tok(&[0, 0, 0], &[])), vec![Action::enter()]);
        assert!(done(&mut w, 1).is_empty());
        assert_eq!(want(&mut w, 0), bcast(&w, 0, 1));
        assert_eq!(deliver(&mut w, 0, 1, req(1)), vec![send(0, tok(&[0, 1, 0], &[]))]);
        assert_eq!(deliver(&mut w, 1, 0, tok(&[0, 1, 0], &[])), vec![Action::enter()]);
        assert!(done(&mut w, 0).is_empty());
        assert_eq!(want(&mut w, 1), bcast(&w, 1, 2));
        assert_eq!(deliver(&mut w, 1, 0, req(2)), vec![send(1, tok(&[1, 1, 0], &[]))]);
        assert_eq!(deliver(&mut w, 0, 1, tok(&[1, 1, 0], &[])), vec![Action::enter()]);
        assert!(done(&mut w, 1).is_empty());
        assert_eq!(want(&mut w, 2), bcast(&w, 2, 1));
        assert_eq!(deliver(&mut w, 2, 1, req(1)), vec![send(2, tok(&[1, 2, 0], &[]))]);
        assert_eq!(deliver(&mut w, 1, 2, tok(&[1, 2, 0], &[])), vec![Action::enter()]);
        // w1 dies and comes back with no memory, while w2 is inside with the token.
        for i in [0, 2] {
            let mut o = out();
            w[i].on_peer_down(PeerId(1), &mut o);
            w[i].on_peer_up(PeerId(1), &mut o);
            assert!(o.actions().is_empty());
        }
        assert_eq!(w[2].token.as_ref().unwrap().last_served, vec![1, 0, 0], "the holder forgot w1");
        w[1] = SuzukiKasami::new(&Config::new(1, 3));
        w[1].on_start(&mut out());
        // Its request 1 is new to everyone, and w2 serves it on leaving.
        assert_eq!(want(&mut w, 1), bcast(&w, 1, 1));
        assert!(deliver(&mut w, 1, 0, req(1)).is_empty());
        assert!(deliver(&mut w, 1, 2, req(1)).is_empty());
        assert_eq!(done(&mut w, 2), vec![send(1, tok(&[1, 0, 1], &[]))]);
        assert_eq!(deliver(&mut w, 2, 1, tok(&[1, 0, 1], &[])), vec![Action::enter()]);
        assert!(done(&mut w, 1).is_empty());
        // w0 saw the restart without the token, so it sets w1's entry back when the
        // token reaches it: w1 looks as if it waited, and gets one spare TOKEN, which it
        // keeps after putting its own entry right.
        assert_eq!(want(&mut w, 0), bcast(&w, 0, 2));
        assert_eq!(deliver(&mut w, 0, 1, req(2)), vec![send(0, tok(&[1, 1, 1], &[]))]);
        assert_eq!(deliver(&mut w, 1, 0, tok(&[1, 1, 1], &[])), vec![Action::enter()]);
        assert_eq!(done(&mut w, 0), vec![send(1, tok(&[2, 0, 1], &[]))]);
        assert!(deliver(&mut w, 0, 1, tok(&[2, 0, 1], &[])).is_empty());
        assert_eq!(w[1].token.as_ref().unwrap().last_served, vec![2, 1, 1]);
        assert_eq!(want(&mut w, 1), free());
    }

    #[test]
    fn a_dead_requester_is_served_once_it_is_back_and_asks_again() {
        let mut w = nodes(3);
        w[0].on_peer_down(PeerId(1), &mut out());
        assert!(deliver(&mut w, 1, 0, req(1)).is_empty(), "w1 is known down");
        let mut o = out();
        w[0].on_peer_up(PeerId(1), &mut o);
        assert!(o.actions().is_empty(), "the old incarnation's request is void");
        assert_eq!(deliver(&mut w, 1, 0, req(1)), vec![send(1, tok(&[0, 0, 0], &[]))]);
    }

    #[test]
    fn a_lost_token_is_never_replaced() {
        let mut w = nodes(3);
        assert_eq!(want(&mut w, 1), bcast(&w, 1, 1));
        // The holder dies with the token: w1 waits, and says where it thinks it is.
        let mut o = out();
        w[1].on_peer_down(PeerId(0), &mut o);
        assert!(o.actions().is_empty());
        assert_eq!(w[1].pending(), "waiting for the TOKEN for request 1 (held by w0 as far as I know)");
        assert!(w.iter().all(|x| x.token.is_none() || x.cfg.id == PeerId(0)));
    }

    #[test]
    fn single_node_enters_alone_for_free() {
        let mut w = nodes(1);
        assert_eq!(want(&mut w, 0), free());
        assert!(done(&mut w, 0).is_empty());
    }

    fn check_costs(r: &crate::sim::SimReport, _sim: &Sim<SuzukiKasami>) {
        let n = u64::from(r.n);
        assert_eq!(r.entries, 3 * n);
        let free = r.counter("free_entries");
        let moved = r.entries - free;
        // Every entry that was not free drew exactly one TOKEN and N-1 REQUESTs.
        assert_eq!(r.count("TOKEN"), moved, "seed {} n {}", r.seed, n);
        assert_eq!(r.count("REQUEST"), (n - 1) * moved, "seed {} n {}", r.seed, n);
        assert_eq!(r.total_messages(), n * moved);
        assert!(r.per_entry() <= n as f64);
    }

    #[test]
    fn sim_suzuki_kasami_costs_n_per_token_move_and_0_per_free_entry() {
        let mut some_free = 0;
        sweep::<SuzukiKasami>(
            &[1, 2, 3, 5, 8],
            0..200,
            3,
            |_| {},
            |r, sim| {
                check_costs(r, sim);
                if r.n > 1 && r.total_messages() < u64::from(r.n) * r.entries {
                    some_free += 1;
                }
            },
        );
        assert!(some_free > 100, "free re-entries in only {some_free} runs");
    }

    #[test]
    fn sim_suzuki_kasami_needs_no_fifo() {
        for n in [2, 3, 5] {
            for seed in 0..100 {
                let mut sim = Sim::<SuzukiKasami>::new(n, seed).non_fifo();
                let r = sim.run(3).unwrap_or_else(|e| panic!("{e}"));
                check_costs(&r, &sim);
            }
        }
    }

    #[test]
    fn a_restarted_node_0_makes_no_second_token() {
        let cfg = Config { incarnation: 1, ..Config::new(0, 3) };
        let mut w0 = SuzukiKasami::new(&cfg);
        let mut o = Out::new(Duration::ZERO);
        w0.on_start(&mut o);
        w0.on_want_cs(&mut o);
        assert!(!o.actions().iter().any(|a| *a == Action::enter()), "{:?}", o.actions());
        // Its first life does make the token.
        let mut w0 = SuzukiKasami::new(&Config::new(0, 3));
        let mut o = Out::new(Duration::ZERO);
        w0.on_start(&mut o);
        w0.on_want_cs(&mut o);
        assert!(o.actions().iter().any(|a| *a == Action::enter()), "{:?}", o.actions());
    }
}
