//! Super-peer selection (the 002 notes' last election topic), as nodes that talk: the
//! simulator's four steps (`sim/superpeer.rs`) run by the nodes themselves, each knowing
//! only its own place in the latency space and learning the others' by messages.
//!
//! The notes ask: normal nodes have low-latency access to a super-peer (here: within
//! [`BOUND_MS`]), super-peers are a predefined share of the nodes ([`SHARE`]) and evenly
//! spread, and none serves more than a fixed number ([`CAPACITY`]). Each node's place
//! and rank are [`crate::latency::place`] of the run's seed, `n` and its id, the same
//! function the simulator and the auditor use.
//!
//! 1. **Discovery.** Every node broadcasts `HELLO` with its place and rank; from the
//!    others' it knows who lies within the bound (its neighbours).
//! 2. **Cover**, a local election: once every lower-ranked neighbour has decided, a node
//!    becomes a super-peer if none of them did, and tells its higher-ranked neighbours
//!    (`DECIDED`). The result is the simulator's step 1 exactly: every node within the
//!    bound of a super-peer, no two super-peers within it of each other.
//! 3. **Share and join**, by a coordinator: each node `REPORT`s its decision to the
//!    lowest-ranked node (which the cover made a super-peer: no lower rank could cover
//!    it). Knowing every place, it adds super-peers for the share (the node farthest
//!    from its nearest super-peer, step 2) and lets the normal nodes join the nearest
//!    one with room (step 3), with [`crate::latency::Net`]'s rules, and sends everyone
//!    the `TABLE` of who serves whom, epoch 1. So the super-peers coordinate among
//!    themselves through one of them, as the notes put it.
//! 4. **Recovery.** When a peer goes down (`PeerDown`), the coordinator (the
//!    lowest-ranked live super-peer of the newest table, so a dead coordinator's next
//!    takes over from the table it holds) applies step 4 to the table: orphans farthest
//!    from the survivors become super-peers until the share is back, the others re-join
//!    within the bound, those left hold the cover election among themselves. It sends
//!    the new table with the next epoch; a node takes a table only if its epoch is newer.
//!    A peer that comes back (`PeerUp`) is greeted with a `HELLO` and joined again.
//!
//! Each node tells its application its role as a leader: a super-peer names itself, a
//! normal node the super-peer it joined (`follows X`), with the table's epoch as term;
//! so the leader file holds every node's role, and `audit/superpeers.rs` judges it.
//!
//! Crashes during the selection: a coordinator that dies before the first table is
//! replaced by the next lowest rank, to which every node reports again, and it holds
//! the cover election again for nodes a dead super-peer left uncovered. Not handled: a
//! node that dies or comes back while its neighbours wait for its `DECIDED` can still
//! stall the selection (about 1 seed in 10 of `mutexlab sim --algo superpeer -n 8
//! --crashes 1 --seeds 0..200`, which the simulator reports as a deadlock naming who
//! waits); and a coordinator that dies halfway through sending a table can leave two
//! tables of one epoch (the auditor would say so).

use crate::algorithm::{Config, Election, ElectionEvent, Input, Message, Node, NodeInput, NodeOut, PeerId};
use crate::latency::{self, Net, Point};
pub use crate::latency::{BOUND_MS, CAPACITY, SHARE};

/// The messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Msg {
    /// Discovery: the sender's place and rank.
    Hello {
        /// Its place, ms.
        at: Point,
        /// Its rank (ties to the lower id).
        rank: u64,
    },
    /// The cover election: whether the sender became a super-peer.
    Decided {
        /// It did.
        superpeer: bool,
    },
    /// To the coordinator: the sender's cover decision.
    Report {
        /// It became a super-peer.
        superpeer: bool,
    },
    /// From the coordinator: each node's super-peer (itself for a super-peer; none for
    /// a node down).
    Table {
        /// Newer tables have higher epochs.
        epoch: u64,
        /// By id.
        of: Vec<Option<u32>>,
    },
}

impl Message for Msg {
    fn kind(&self) -> &str {
        match self {
            Msg::Hello { .. } => "HELLO",
            Msg::Decided { .. } => "DECIDED",
            Msg::Report { .. } => "REPORT",
            Msg::Table { .. } => "TABLE",
        }
    }
}

/// One node's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SuperPeer {
    id: u32,
    n: u32,
    /// Each node's place and rank as its `HELLO` said (this node's own from the start).
    known: Vec<Option<(Point, u64)>>,
    /// Peers reported down and not back.
    down: Vec<bool>,
    /// Each node's cover decision as heard (this node's own once made).
    decided: Vec<Option<bool>>,
    /// The coordinator's: each node's reported decision.
    reports: Vec<Option<bool>>,
    /// The newest table: its epoch and each node's super-peer.
    table: Option<(u64, Vec<Option<u32>>)>,
    /// The role last told to the application.
    told: Option<u32>,
    /// The coordinator this node reported its decision to, before the first table.
    reported_to: Option<u32>,
}

/// Messages of a selection with no faults among `n` nodes, `sp` of them super-peers
/// after the cover, `pairs` the (unordered) pairs within the bound: `HELLO` n(n−1),
/// `DECIDED` one per pair, `REPORT` n−1, `TABLE` n−1.
pub fn messages(n: u64, pairs: u64) -> u64 {
    n * n.saturating_sub(1) + pairs + 2 * n.saturating_sub(1)
}

impl SuperPeer {
    fn me(&self) -> usize {
        self.id as usize
    }

    /// `(rank, id)`: the order of the cover election.
    fn order(&self, j: usize) -> Option<(u64, usize)> {
        self.known[j].map(|(_, r)| (r, j))
    }

    /// Every node's place is known, or its node is down.
    fn discovered(&self) -> bool {
        (0..self.n as usize).all(|j| self.known[j].is_some() || self.down[j])
    }

    /// Live nodes within the bound of this one.
    fn neighbours(&self) -> impl Iterator<Item = usize> + '_ {
        let (at, _) = self.known[self.me()].expect("own place");
        (0..self.n as usize).filter(move |&j| {
            j != self.me() && !self.down[j] && self.known[j].is_some_and(|(p, _)| p.dist(at) <= BOUND_MS)
        })
    }

    /// Before the first table: the lowest-ranked live node; after: the lowest-ranked
    /// live super-peer of the table.
    fn coordinator(&self) -> Option<usize> {
        let live = |j: &usize| !self.down[*j];
        match &self.table {
            None => (0..self.n as usize).filter(live).filter_map(|j| self.order(j)).min().map(|o| o.1),
            Some((_, of)) => (0..self.n as usize)
                .filter(live)
                .filter(|&j| of[j] == Some(j as u32))
                .filter_map(|j| self.order(j))
                .min()
                .map(|o| o.1),
        }
    }

    /// Steps 1 to 3, as far as what has been heard allows.
    fn progress(&mut self, out: &mut NodeOut<Self>) {
        if self.table.is_some() || !self.discovered() {
            return;
        }
        let me = self.me();
        if self.decided[me].is_none() {
            let mine = self.order(me);
            let nbrs: Vec<usize> = self.neighbours().collect();
            let lower: Vec<usize> = nbrs.iter().copied().filter(|&j| self.order(j) < mine).collect();
            if lower.iter().all(|&j| self.decided[j].is_some()) {
                let superpeer = !lower.iter().any(|&j| self.decided[j] == Some(true));
                self.decided[me] = Some(superpeer);
                for j in nbrs.into_iter().filter(|&j| self.order(j) > mine) {
                    out.send(PeerId(j as u32), Msg::Decided { superpeer });
                }
            }
        }
        // The report goes to the coordinator, and again to its successor if it dies
        // before the first table.
        let coordinator = self.coordinator().map(|c| c as u32);
        if let Some(superpeer) = self.decided[me].filter(|_| coordinator != self.reported_to) {
            self.reported_to = coordinator;
            match coordinator {
                Some(c) if c == self.id => self.reports[me] = Some(superpeer),
                Some(c) => out.send(PeerId(c), Msg::Report { superpeer }),
                None => {}
            }
        }
        let all_in = (0..self.n as usize).all(|j| self.reports[j].is_some() || self.down[j]);
        if self.coordinator() == Some(me) && all_in {
            let mut net = self.net();
            for i in net.by_rank() {
                if net.alive[i] && self.reports[i] == Some(true) {
                    net.promote(i);
                }
            }
            // Nodes a super-peer that died during the cover left uncovered hold it
            // again (without crashes this adds none: the reports are the cover).
            net.cover(&net.by_rank());
            let live = net.alive.iter().filter(|&&a| a).count();
            net.share(latency::wanted(SHARE, live));
            let normal: Vec<usize> = (0..net.len()).filter(|&i| net.alive[i] && !net.sp[i]).collect();
            let left = net.join_within(&normal);
            net.join_anywhere(&left);
            self.publish(1, &net, out);
        }
    }

    /// The nodes as this one knows them, none a super-peer yet; the down and the unknown
    /// are not alive.
    fn net(&self) -> Net {
        let pos = self.known.iter().map(|k| k.map_or(Point { x: 0.0, y: 0.0 }, |k| k.0)).collect();
        let rank: Vec<u64> = self.known.iter().map(|k| k.map_or(u64::MAX, |k| k.1)).collect();
        let mut net = Net::new(pos, &rank, BOUND_MS, CAPACITY);
        for (i, alive) in net.alive.iter_mut().enumerate() {
            *alive = !self.down[i] && self.known[i].is_some();
        }
        net
    }

    /// Step 4: the coordinator mends the table when someone in it went down, or someone
    /// live has no place in it.
    fn recover(&mut self, out: &mut NodeOut<Self>) {
        let Some((epoch, of)) = self.table.clone() else { return };
        if self.coordinator() != Some(self.me()) {
            return;
        }
        let mut net = self.net();
        let stale = (0..net.len()).any(|i| net.alive[i] != of[i].is_some());
        if !stale {
            return;
        }
        for (i, &s) in of.iter().enumerate() {
            if net.alive[i] && s == Some(i as u32) {
                net.promote(i);
            }
        }
        let mut orphans = Vec::new();
        let normal: Vec<usize> = (0..net.len()).filter(|&i| net.alive[i] && !net.sp[i]).collect();
        for i in normal {
            match of[i].map(|s| s as usize) {
                Some(s) if net.sp[s] => net.join(i, s),
                _ => orphans.push(i),
            }
        }
        orphans.sort_by_key(|&i| self.order(i));
        let live = net.alive.iter().filter(|&&a| a).count();
        net.recover(&orphans, latency::wanted(SHARE, live));
        self.publish(epoch + 1, &net, out);
    }

    /// Take `net` as the table of `epoch` and send it to every live node.
    fn publish(&mut self, epoch: u64, net: &Net, out: &mut NodeOut<Self>) {
        let of: Vec<Option<u32>> = (0..net.len())
            .map(|i| match (net.alive[i], net.sp[i]) {
                (false, _) => None,
                (true, true) => Some(i as u32),
                (true, false) => net.serves[i].map(|s| s as u32),
            })
            .collect();
        for j in (0..self.n as usize).filter(|&j| j != self.me() && !self.down[j]) {
            out.send(PeerId(j as u32), Msg::Table { epoch, of: of.clone() });
        }
        self.take(epoch, of, out);
    }

    /// Hold the table of `epoch`, and tell the application this node's role if it
    /// changed.
    fn take(&mut self, epoch: u64, of: Vec<Option<u32>>, out: &mut NodeOut<Self>) {
        let mine = of.get(self.me()).copied().flatten();
        self.table = Some((epoch, of));
        if let Some(sp) = mine.filter(|&sp| self.told != Some(sp)) {
            self.told = Some(sp);
            out.emit(ElectionEvent::Leader { id: PeerId(sp), term: epoch });
        }
    }

    /// This node's role in its newest table: `Some(self)` for a super-peer.
    pub fn role(&self) -> Option<PeerId> {
        self.table.as_ref().and_then(|(_, of)| of[self.me()]).map(PeerId)
    }

    /// The newest table's epoch, 0 before the first.
    pub fn epoch(&self) -> u64 {
        self.table.as_ref().map_or(0, |t| t.0)
    }
}

impl Node for SuperPeer {
    type Msg = Msg;
    type Timer = crate::algorithm::NoTimer;
    type Service = Election;
    const OWN_LEADERS: bool = true;

    fn create(cfg: &Config) -> Self {
        let n = cfg.n as usize;
        let mut known = vec![None; n];
        known[cfg.id.index()] = Some(latency::place(cfg.seed, n, cfg.id.index()));
        SuperPeer {
            id: cfg.id.0,
            n: cfg.n,
            known,
            down: vec![false; n],
            decided: vec![None; n],
            reports: vec![None; n],
            table: None,
            told: None,
            reported_to: None,
        }
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
        match input {
            Input::Start => {
                let (at, rank) = self.known[self.me()].expect("own place");
                out.broadcast(Msg::Hello { at, rank });
                self.progress(out);
            }
            Input::Message { from, msg } => match msg {
                Msg::Hello { at, rank } => {
                    self.known[from.index()] = Some((at, rank));
                    self.progress(out);
                }
                Msg::Decided { superpeer } => {
                    self.decided[from.index()] = Some(superpeer);
                    self.progress(out);
                }
                Msg::Report { superpeer } => {
                    self.reports[from.index()] = Some(superpeer);
                    self.progress(out);
                }
                Msg::Table { epoch, of } => {
                    if epoch > self.epoch() && of.len() == self.n as usize {
                        self.take(epoch, of, out);
                        self.recover(out);
                    }
                }
            },
            Input::PeerDown { peer } => {
                self.down[peer.index()] = true;
                self.progress(out);
                self.recover(out);
            }
            Input::PeerUp { peer } => {
                self.down[peer.index()] = false;
                let (at, rank) = self.known[self.me()].expect("own place");
                out.send(peer, Msg::Hello { at, rank });
                self.recover(out);
            }
            // The selection starts by itself; an application's call changes nothing.
            Input::Timer { .. } | Input::Call { .. } => {}
        }
    }

    fn waiting_for(&self) -> String {
        let missing = |v: &[Option<bool>]| (0..v.len()).filter(|&j| v[j].is_none() && !self.down[j]).count();
        if !self.discovered() {
            let heard = self.known.iter().filter(|k| k.is_some()).count();
            format!("HELLO: heard {heard} of {}", self.n)
        } else if self.decided[self.me()].is_none() {
            "DECIDED from a lower-ranked neighbour".into()
        } else if self.table.is_none() && self.coordinator() == Some(self.me()) {
            format!("REPORT from {} node(s)", missing(&self.reports))
        } else if self.role().is_none() {
            "TABLE from the coordinator".into()
        } else {
            String::new()
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sim::superpeer::{select, Params};
    use mutexlab_core::script::elect::Net as Script;

    /// Every live node's role after `net` ran: `(id, its super-peer)`.
    fn roles(net: &Script<SuperPeer>) -> Vec<(u32, u32)> {
        (0..net.n())
            .filter(|&i| net.is_alive(i))
            .map(|i| (i, net.node(i).role().expect("a role").0))
            .collect()
    }

    /// The notes' requirements, checked on `roles` with the places of `seed` (also for
    /// `superpeer_cells`, which must meet the same).
    pub(crate) fn meets(seed: u64, n: usize, roles: &[(u32, u32)]) -> Result<(), String> {
        let (pos, _, _) = latency::layout(seed, n, latency::SIDE_MS);
        let sps: Vec<u32> = roles.iter().filter(|(i, s)| i == s).map(|r| r.0).collect();
        for &(i, s) in roles {
            if !sps.contains(&s) {
                return Err(format!("w{i} follows w{s}, not a live super-peer"));
            }
            if pos[i as usize].dist(pos[s as usize]) > BOUND_MS {
                return Err(format!("w{i} is beyond the bound of w{s}"));
            }
        }
        for &s in &sps {
            let load = roles.iter().filter(|&&(i, t)| t == s && i != s).count();
            if load > CAPACITY {
                return Err(format!("w{s} serves {load}"));
            }
        }
        if sps.len() < latency::wanted(SHARE, roles.len()) {
            return Err(format!("{} super-peers for {} nodes", sps.len(), roles.len()));
        }
        Ok(())
    }

    #[test]
    fn the_nodes_choose_what_the_simulator_chooses_for_the_same_seed() {
        for (n, seed) in [(2, 1), (12, 1), (12, 7), (40, 3), (64, 5)] {
            let mut net = Script::<SuperPeer>::with_seed(n, seed);
            net.run().unwrap();
            let got = roles(&net);
            meets(seed, n as usize, &got).unwrap_or_else(|e| panic!("N={n} seed {seed}: {e}"));
            let o = select(&Params::new(n as usize, seed));
            let sps = got.iter().filter(|(i, s)| i == s).count();
            assert_eq!(sps, o.before.superpeers, "N={n} seed {seed}");
            assert_eq!(sps, o.elected + o.added);
            // One table, one role each, told once.
            assert!(net.leaders.iter().all(|a| a.term == 1) && net.leaders.len() == n as usize);
        }
    }

    #[test]
    fn the_share_adds_super_peers_the_cover_did_not_make() {
        // 5 % of 400 is 20, more than a 40 ms cover of a 100 ms square needs.
        let (n, seed) = (400, 2);
        let o = select(&Params::new(n, seed));
        assert!(o.added > 0, "{o:?}");
        let mut net = Script::<SuperPeer>::with_seed(n as u32, seed);
        net.run().unwrap();
        let got = roles(&net);
        meets(seed, n, &got).unwrap();
        assert_eq!(got.iter().filter(|(i, s)| i == s).count(), o.before.superpeers);
    }

    #[test]
    fn a_killed_super_peer_s_orphans_are_homed_again_even_when_it_coordinated() {
        for seed in 0..6u64 {
            let n = 24;
            let mut net = Script::<SuperPeer>::with_seed(n, seed);
            net.run().unwrap();
            let before = roles(&net);
            let coordinator = net.node(0).coordinator().unwrap() as u32;
            // The coordinator for even seeds, another super-peer for odd ones.
            let victim = if seed % 2 == 0 {
                coordinator
            } else {
                match before.iter().find(|(i, s)| i == s && *i != coordinator) {
                    Some(&(s, _)) => s,
                    None => continue,
                }
            };
            let orphans: Vec<u32> =
                before.iter().filter(|r| r.1 == victim && r.0 != victim).map(|r| r.0).collect();
            net.kill(victim);
            net.run().unwrap();
            let after = roles(&net);
            meets(seed, n as usize, &after).unwrap_or_else(|e| panic!("seed {seed}, w{victim} killed: {e}"));
            assert!(orphans.iter().all(|&o| net.node(o).epoch() == 2), "seed {seed}");
            // The others keep their super-peer.
            for (&(i, s), &(j, t)) in before.iter().filter(|r| r.0 != victim).zip(&after) {
                assert_eq!(i, j);
                assert!(s == victim || s == t || t == i, "seed {seed}: w{i} moved from w{s} to w{t}");
            }
            // A second kill, of the coordinator then.
            let c = net.node(after[0].0).coordinator().unwrap() as u32;
            net.kill(c);
            net.run().unwrap();
            meets(seed, n as usize, &roles(&net)).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
    }

    #[test]
    fn a_coordinator_that_dies_before_the_first_table_is_replaced() {
        let (n, seed) = (12u32, 2u64);
        let (_, rank, _) = latency::layout(seed, n as usize, latency::SIDE_MS);
        let first = (0..n).min_by_key(|&i| (rank[i as usize], i)).unwrap();
        // The REPORTs reach the coordinator; it dies then, before its TABLE.
        let mut net2 = Script::<SuperPeer>::with_seed(n, seed);
        while net2.node(first).reports.iter().filter(|r| r.is_some()).count() < n as usize - 1 {
            assert!(net2.step(), "the reports come in");
        }
        net2.kill(first);
        net2.run().unwrap();
        let got = roles(&net2);
        assert_eq!(got.len(), n as usize - 1);
        meets(seed, n as usize, &got).unwrap_or_else(|e| panic!("{e}"));
        assert!(got.iter().all(|&(_, s)| s != first));
    }

    #[test]
    fn a_node_that_comes_back_is_greeted_and_joined_again() {
        let mut net = Script::<SuperPeer>::with_seed(12, 4);
        net.run().unwrap();
        let normal = roles(&net).into_iter().find(|(i, s)| i != s).unwrap().0;
        net.kill(normal);
        net.run().unwrap();
        net.restart(normal);
        net.run().unwrap();
        let got = roles(&net);
        assert_eq!(got.len(), 12);
        meets(4, 12, &got).unwrap();
    }

    #[test]
    fn equal_message_orders_give_equal_states() {
        let run = || {
            let mut net = Script::<SuperPeer>::with_seed(16, 9);
            net.run().unwrap();
            (0..16).map(|i| net.node(i).clone()).collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn the_message_count_is_the_formula_s() {
        let (n, seed) = (20u64, 3);
        let mut net = Script::<SuperPeer>::with_seed(n as u32, seed);
        net.run().unwrap();
        let (pos, _, _) = latency::layout(seed, n as usize, latency::SIDE_MS);
        let pairs = (0..n as usize)
            .flat_map(|i| (i + 1..n as usize).map(move |j| (i, j)))
            .filter(|&(i, j)| pos[i].dist(pos[j]) <= BOUND_MS)
            .count() as u64;
        assert_eq!(net.sent.len() as u64, messages(n, pairs));
        assert_eq!(net.count_since(0, "HELLO") as u64, n * (n - 1));
    }

    #[test]
    fn any_delivery_order_the_simulator_picks_settles_every_node() {
        for seed in 0..20 {
            let r = crate::sim::Sim::<SuperPeer>::new(10, seed).run(1).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.leader, None, "super-peers do not agree on one leader");
        }
    }
}
