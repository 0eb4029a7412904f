//! A deterministic driver for election tests, shared by the election algorithms' tests
//! (`bully`, `chang_roberts`, `ring_list` and others) and the super-peer audit's.
//!
//! [`Net`] makes N hosts ([`crate::host::Host`]) and starts them. Messages go into one
//! global FIFO queue and are delivered in the order they were sent, with no time
//! passing; only when the queue is empty does the earliest armed timer fire (time jumps
//! to its deadline). A crashed node gets nothing more, and messages to it are dropped
//! (but still counted as sent). Every `Leader` event is kept with who emitted it, so the
//! checkers below can judge a run from the events alone, the way the auditor will judge
//! a run from its file.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::algorithm::{Config, Election, ElectionCall, ElectionEvent, Input, Message, Node, PeerId};
use crate::host::{Effect, Host, Step};

/// A loop that never goes quiet is a bug, not a long election.
const MAX_STEPS: usize = 1_000_000;

/// One message sent: by whom, to whom, of what kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The sender.
    pub from: u32,
    /// The receiver.
    pub to: u32,
    /// The message's kind (its `Message::kind`).
    pub kind: String,
}

/// One `Leader` event: node `who`, in its incarnation, accepted `id` in `term`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The node that accepted a leader.
    pub who: u32,
    /// Its incarnation then.
    pub incarnation: u32,
    /// The leader it accepted.
    pub id: PeerId,
    /// The term it was elected in.
    pub term: u64,
}

/// Who calls `elect`.
#[derive(Clone, Copy, Debug)]
pub enum Initiators {
    /// The lowest live id.
    Lowest,
    /// The highest live id.
    Highest,
    /// Every live node, before any message is delivered.
    All,
}

/// A timer a node armed and has not disarmed.
struct Armed<T> {
    node: usize,
    timer: T,
    generation: u64,
    due: Duration,
}

/// N election nodes, a FIFO network between them, and the timers they armed.
pub struct Net<N: Node<Service = Election>> {
    hosts: Vec<Host<N>>,
    alive: Vec<bool>,
    queue: VecDeque<(PeerId, PeerId, N::Msg)>,
    timers: Vec<Armed<N::Timer>>,
    now: Duration,
    /// Every message sent, in order.
    pub sent: Vec<Sent>,
    /// The same messages themselves, for traces that show what they carry.
    pub msgs: Vec<(u32, u32, N::Msg)>,
    /// Every `Leader` event, in order.
    pub leaders: Vec<Accepted>,
}

impl<N: Node<Service = Election>> Net<N> {
    /// `n` nodes with [`Config::new`], started.
    pub fn new(n: u32) -> Self {
        Self::with_seed(n, 0)
    }

    /// `n` nodes whose configurations carry `seed`, started.
    pub fn with_seed(n: u32, seed: u64) -> Self {
        let mut net = Net {
            hosts: (0..n).map(|i| Host::new(Config { seed, ..Config::new(i, n) })).collect(),
            alive: vec![true; n as usize],
            queue: VecDeque::new(),
            timers: Vec::new(),
            now: Duration::ZERO,
            sent: Vec::new(),
            msgs: Vec::new(),
            leaders: Vec::new(),
        };
        for i in 0..n as usize {
            net.input(i, Input::Start);
        }
        net
    }

    /// How many nodes.
    pub fn n(&self) -> u32 {
        self.hosts.len() as u32
    }

    /// Node `i`'s state.
    pub fn node(&self, i: u32) -> &N {
        self.hosts[i as usize].node()
    }

    /// Whether node `i` is up.
    pub fn is_alive(&self, i: u32) -> bool {
        self.alive[i as usize]
    }

    fn live(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.n()).filter(|&i| self.is_alive(i))
    }

    /// Node `i` crashes silently: nobody is told.
    pub fn crash(&mut self, i: u32) {
        self.alive[i as usize] = false;
        self.queue.retain(|(_, to, _)| to.0 != i);
        self.timers.retain(|t| t.node != i as usize);
    }

    /// Node `who` learns that `peer` is down.
    pub fn notice(&mut self, who: u32, peer: u32) {
        self.input(who as usize, Input::PeerDown { peer: PeerId(peer) });
    }

    /// Node `i` crashes and every live node learns it (the perfect detector).
    pub fn kill(&mut self, i: u32) {
        self.crash(i);
        let live: Vec<u32> = self.live().collect();
        for w in live {
            self.notice(w, i);
        }
    }

    /// Node `i` comes back as its next incarnation, with fresh state: the live nodes
    /// learn it is up, then it starts, then it learns which peers are down (a fresh node
    /// takes everyone to be up).
    pub fn restart(&mut self, i: u32) {
        let cfg = self.hosts[i as usize].config().clone();
        let cfg = Config { incarnation: cfg.incarnation + 1, ..cfg };
        self.hosts[i as usize] = Host::new(cfg);
        self.alive[i as usize] = true;
        let others: Vec<u32> = self.live().filter(|&w| w != i).collect();
        for w in others {
            self.input(w as usize, Input::PeerUp { peer: PeerId(i) });
        }
        self.input(i as usize, Input::Start);
        let dead: Vec<u32> = (0..self.n()).filter(|&w| !self.is_alive(w)).collect();
        for w in dead {
            self.notice(i, w);
        }
    }

    /// Node `i` comes back as its next incarnation, but nobody has heard yet that it is
    /// up ([`Net::hear_up`] tells them, one by one): its first messages may come first.
    pub fn revive_unseen(&mut self, i: u32) {
        let cfg = self.hosts[i as usize].config().clone();
        self.hosts[i as usize] = Host::new(Config { incarnation: cfg.incarnation + 1, ..cfg });
        self.alive[i as usize] = true;
        self.input(i as usize, Input::Start);
        let dead: Vec<u32> = (0..self.n()).filter(|&w| !self.is_alive(w)).collect();
        for w in dead {
            self.notice(i, w);
        }
    }

    /// Node `who` learns that `peer` is up again.
    pub fn hear_up(&mut self, who: u32, peer: u32) {
        self.input(who as usize, Input::PeerUp { peer: PeerId(peer) });
    }

    /// Node `i`'s application calls `elect`.
    pub fn elect(&mut self, i: u32) {
        self.input(i as usize, Input::Call { call: ElectionCall::Elect });
    }

    /// The chosen live nodes call `elect`, all before any message moves.
    pub fn elect_by(&mut self, who: Initiators) {
        let live: Vec<u32> = self.live().collect();
        let chosen = match who {
            Initiators::Lowest => live[..1].to_vec(),
            Initiators::Highest => live[live.len() - 1..].to_vec(),
            Initiators::All => live,
        };
        for i in chosen {
            self.elect(i);
        }
    }

    /// Deliver the next message in the queue, if any; `false` when none is left.
    pub fn step(&mut self) -> bool {
        let Some((from, to, msg)) = self.queue.pop_front() else {
            return false;
        };
        if self.alive[to.index()] {
            self.input(to.index(), Input::Message { from, msg });
        }
        true
    }

    /// Take the messages in flight from `from` to `to` out of the queue, as a slow link
    /// holds them; [`Net::release`] puts them back.
    pub fn hold(&mut self, from: u32, to: u32) -> Vec<N::Msg> {
        let (mut held, mut rest) = (Vec::new(), VecDeque::new());
        for (f, t, msg) in self.queue.drain(..) {
            if (f.0, t.0) == (from, to) {
                held.push(msg);
            } else {
                rest.push_back((f, t, msg));
            }
        }
        self.queue = rest;
        held
    }

    /// Put held messages back, behind everything in flight now.
    pub fn release(&mut self, from: u32, to: u32, msgs: Vec<N::Msg>) {
        self.queue.extend(msgs.into_iter().map(|m| (PeerId(from), PeerId(to), m)));
    }

    /// Deliver messages in FIFO order until none is left, firing the earliest timer
    /// whenever the network is quiet, until no timer is left either.
    pub fn run(&mut self) -> Result<(), String> {
        self.drive(None)
    }

    /// As [`Net::run`], but fire only the timers due within `span` from now; the clock
    /// then stands at the end of the span. For nodes that always keep a timer set (a
    /// leader's periodic poll), whose runs never go quiet by themselves.
    pub fn run_for(&mut self, span: Duration) -> Result<(), String> {
        let until = self.now + span;
        self.drive(Some(until))?;
        self.now = self.now.max(until);
        Ok(())
    }

    fn drive(&mut self, until: Option<Duration>) -> Result<(), String> {
        for _ in 0..MAX_STEPS {
            if self.step() {
                continue;
            }
            let Some(k) = (0..self.timers.len()).min_by_key(|&k| self.timers[k].due) else {
                return Ok(());
            };
            if until.is_some_and(|until| self.timers[k].due > until) {
                return Ok(());
            }
            let Armed { node, timer, generation, due } = self.timers.remove(k);
            self.now = self.now.max(due);
            if let Some(step) = self.hosts[node].fire(self.now, &timer, generation) {
                self.apply(node, step);
            }
        }
        Err(format!("still busy after {MAX_STEPS} steps: {} messages in flight", self.queue.len()))
    }

    /// Messages sent since the first `mark` of them.
    pub fn sent_since(&self, mark: usize) -> &[Sent] {
        &self.sent[mark..]
    }

    /// How many messages of `kind` were sent since `mark`.
    pub fn count_since(&self, mark: usize, kind: &str) -> usize {
        self.sent[mark..].iter().filter(|s| s.kind == kind).count()
    }

    /// The leader node `i` follows in its current incarnation, with its term.
    pub fn leader_of(&self, i: u32) -> Option<(PeerId, u64)> {
        let inc = self.hosts[i as usize].config().incarnation;
        self.leaders.iter().rev().find(|a| a.who == i && a.incarnation == inc).map(|a| (a.id, a.term))
    }

    /// Agreement: every live node names the same leader. That leader.
    pub fn agreement(&self) -> Result<PeerId, String> {
        let mut named = self.live().map(|i| (i, self.leader_of(i)));
        let (first, leader) = named.next().ok_or("no live node")?;
        let leader = leader.ok_or(format!("w{first} names no leader"))?.0;
        for (i, l) in named {
            match l {
                Some((id, _)) if id == leader => {}
                Some((id, _)) => return Err(format!("w{first} names {leader}, w{i} names {id}")),
                None => return Err(format!("w{i} names no leader")),
            }
        }
        Ok(leader)
    }

    /// Validity: the agreed leader is the highest live id.
    pub fn validity(&self) -> Result<(), String> {
        let leader = self.agreement()?;
        let highest = self.live().max().map(PeerId).ok_or("no live node")?;
        if leader == highest {
            Ok(())
        } else {
            Err(format!("the leader is {leader}, the highest live node {highest}"))
        }
    }

    /// Uniqueness: no term ever named two different leaders, anywhere.
    pub fn unique_terms(&self) -> Result<(), String> {
        let mut by_term: BTreeMap<u64, Accepted> = BTreeMap::new();
        for a in &self.leaders {
            let first = *by_term.entry(a.term).or_insert(*a);
            if first.id != a.id {
                return Err(format!(
                    "term {} has two leaders: {} (by w{}) and {} (by w{})",
                    a.term, first.id, first.who, a.id, a.who
                ));
            }
        }
        Ok(())
    }

    /// Each node (in each incarnation) accepts leaders in strictly increasing terms.
    pub fn increasing_terms(&self) -> Result<(), String> {
        let mut last: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for a in &self.leaders {
            if let Some(&before) = last.get(&(a.who, a.incarnation)) {
                if a.term <= before {
                    return Err(format!("w{} accepted term {} after term {before}", a.who, a.term));
                }
            }
            last.insert((a.who, a.incarnation), a.term);
        }
        Ok(())
    }

    /// Every check at once; the agreed leader.
    pub fn check(&self) -> Result<PeerId, String> {
        self.validity()?;
        self.unique_terms()?;
        self.increasing_terms()?;
        self.agreement()
    }

    fn input(&mut self, i: usize, input: Input<N::Msg, N::Timer, ElectionCall>) {
        assert!(self.alive[i], "input to the dead w{i}");
        let step = self.hosts[i].step(self.now, input);
        self.apply(i, step);
    }

    fn apply(&mut self, i: usize, step: Step<N>) {
        assert!(step.breaches.is_empty(), "w{i}: {:?}", step.breaches);
        let me = PeerId(i as u32);
        for effect in step.effects {
            match effect {
                Effect::Send { to, msg } => {
                    self.sent.push(Sent { from: me.0, to: to.0, kind: msg.kind().to_string() });
                    self.msgs.push((me.0, to.0, msg.clone()));
                    self.queue.push_back((me, to, msg));
                }
                Effect::Arm { timer, generation, after } => {
                    self.timers.retain(|t| !(t.node == i && t.timer == timer));
                    self.timers.push(Armed { node: i, timer, generation, due: self.now + after });
                }
                Effect::Disarm { timer } => self.timers.retain(|t| !(t.node == i && t.timer == timer)),
                Effect::Event { event: ElectionEvent::Leader { id, term } } => {
                    let incarnation = self.hosts[i].config().incarnation;
                    self.leaders.push(Accepted { who: me.0, incarnation, id, term });
                }
                Effect::Count { .. } => {}
            }
        }
    }
}

/// Within the theory's bounds, inclusive.
pub fn within(measured: usize, (lo, hi): (u64, u64)) -> Result<(), String> {
    let m = measured as u64;
    if lo <= m && m <= hi {
        Ok(())
    } else {
        Err(format!("{m} messages, theory {lo}..={hi}"))
    }
}

/// Scenarios every election algorithm must pass, written once.
pub mod scenarios {
    use super::*;

    /// Killing the leader after it won: everyone notices, everyone elects, and the next
    /// one down wins in a higher term; again and again until one node is left.
    pub fn the_leader_dies_again_and_again<N: Node<Service = Election>>() {
        for n in [2, 3, 5, 8] {
            let mut net = Net::<N>::new(n);
            net.elect(0);
            net.run().unwrap();
            for dead in (1..n).rev() {
                let before = net.leader_of(0).unwrap();
                net.kill(dead);
                net.run().unwrap();
                assert_eq!(net.check(), Ok(PeerId(dead - 1)), "n = {n}");
                assert!(net.leader_of(0).unwrap().1 > before.1);
            }
        }
    }

    /// The highest node dies and the next leads; the highest comes back and leads again,
    /// in a term above the old ones.
    pub fn the_highest_comes_back_and_leads_again<N: Node<Service = Election>>() {
        let mut net = Net::<N>::new(4);
        net.elect(0);
        net.run().unwrap();
        net.kill(3);
        net.run().unwrap();
        let old = net.leader_of(0).unwrap();
        assert_eq!(old.0, PeerId(2));
        net.restart(3);
        net.run().unwrap();
        assert_eq!(net.check(), Ok(PeerId(3)));
        assert!(net.leader_of(3).unwrap().1 > old.1);
    }
}

/// One election on a fresh net of `n` nodes: `dead` crashes first and everyone learns
/// it, then `who` call `elect`, then the net runs until quiet. Every check must pass;
/// the net and the number of messages the election took.
pub fn elect_once<N: Node<Service = Election>>(
    n: u32,
    dead: Option<u32>,
    who: Initiators,
) -> (Net<N>, usize) {
    let mut net = Net::<N>::new(n);
    if let Some(d) = dead {
        net.kill(d);
    }
    let mark = net.sent.len();
    net.elect_by(who);
    let case = format!("n = {n}, dead {dead:?}, initiators {who:?}");
    net.run().unwrap_or_else(|e| panic!("{case}: {e}"));
    net.check().unwrap_or_else(|e| panic!("{case}: {e}"));
    let m = net.sent.len() - mark;
    (net, m)
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::algorithm::{NoTimer, NodeInput, NodeOut};

    /// A broken election whose nodes, when called, announce a fixed script of leaders
    /// without asking anyone (chosen by the seed), each script breaking one rule.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Broken {
        cfg: Config,
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    struct Ping;

    impl Message for Ping {
        fn kind(&self) -> &str {
            "PING"
        }
    }

    const HASTY: u64 = 0;
    const LOWEST: u64 = 1;
    const SHARED_TERM: u64 = 2;
    const TERM_GOES_BACK: u64 = 3;
    const CHATTY: u64 = 4;

    impl Node for Broken {
        type Msg = Ping;
        type Timer = NoTimer;
        type Service = Election;

        fn create(cfg: &Config) -> Self {
            Broken { cfg: cfg.clone() }
        }

        fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
            let (me, top) = (self.cfg.id, self.cfg.highest());
            let below = PeerId(top.0.saturating_sub(1));
            let script: Vec<(PeerId, u64)> = match self.cfg.seed {
                // Declares itself without waiting for anyone.
                HASTY => vec![(me, 1)],
                // All agree, on the wrong node.
                LOWEST => vec![(PeerId(0), 1)],
                // w0 names the top at term 5, the others name another node at term 5
                // before moving on to the top at term 6.
                SHARED_TERM if me.0 == 0 => vec![(top, 5)],
                SHARED_TERM => vec![(below, 5), (top, 6)],
                TERM_GOES_BACK => vec![(top, 6), (top, 5)],
                _ => vec![(top, 1)],
            };
            match input {
                Input::Call { .. } => {
                    for (id, term) in script {
                        out.emit(ElectionEvent::Leader { id, term });
                    }
                    if self.cfg.seed == CHATTY {
                        out.broadcast(Ping);
                    }
                }
                // Answers every message with another: never quiet.
                Input::Message { from, .. } if self.cfg.seed == CHATTY => out.send(from, Ping),
                _ => {}
            }
        }
    }

    fn run(seed: u64) -> Net<Broken> {
        let mut net = Net::<Broken>::with_seed(4, seed);
        net.elect_by(Initiators::All);
        net.run().unwrap();
        net
    }

    #[test]
    fn every_checker_catches_its_broken_election() {
        let hasty = run(HASTY);
        assert!(hasty.agreement().unwrap_err().contains("names"));
        assert!(hasty.unique_terms().unwrap_err().contains("term 1 has two leaders"));

        let lowest = run(LOWEST);
        assert_eq!(lowest.agreement(), Ok(PeerId(0)));
        assert_eq!(lowest.validity().unwrap_err(), "the leader is w0, the highest live node w3");

        let shared = run(SHARED_TERM);
        assert_eq!(shared.agreement(), Ok(PeerId(3)));
        assert!(shared.validity().is_ok() && shared.increasing_terms().is_ok());
        assert!(shared.unique_terms().unwrap_err().contains("term 5 has two leaders: w3 (by w0) and w2"));

        let back = run(TERM_GOES_BACK);
        assert!(back.validity().is_ok() && back.unique_terms().is_ok());
        assert_eq!(back.increasing_terms().unwrap_err(), "w0 accepted term 5 after term 6");
        assert!(back.check().is_err());

        let mut chatty = Net::<Broken>::with_seed(3, CHATTY);
        chatty.elect(0);
        assert!(chatty.run().unwrap_err().contains("still busy"));

        // A node that never hears of any leader breaks agreement too.
        let mut silent = Net::<Broken>::with_seed(3, 9);
        silent.elect(0);
        silent.run().unwrap();
        assert_eq!(silent.agreement().unwrap_err(), "w1 names no leader");

        assert!(within(5, (2, 5)).is_ok());
        assert_eq!(within(6, (2, 5)).unwrap_err(), "6 messages, theory 2..=5");
        assert!(within(1, (2, 5)).is_err());
    }

    #[test]
    fn the_dead_get_nothing_and_the_restarted_start_afresh() {
        let mut net = Net::<Broken>::with_seed(3, 9);
        net.kill(2);
        assert!(!net.is_alive(2));
        net.elect_by(Initiators::Highest);
        net.run().unwrap();
        // Only w1 was called (the highest live), and its script names w2.
        assert_eq!(net.leader_of(1), Some((PeerId(2), 1)));
        assert_eq!(net.leader_of(0), None);
        net.kill(0);
        net.restart(2);
        assert!(net.is_alive(2));
        assert_eq!(net.leader_of(2), None, "a new incarnation has accepted nobody yet");
        // It is told who is down, or a ring node would send into the dead w0 for ever.
        assert!(net.hosts[2].is_down(PeerId(0)) && !net.hosts[2].is_down(PeerId(1)));
        assert!(!net.hosts[1].is_down(PeerId(2)), "and the others that it is up");
    }
}
