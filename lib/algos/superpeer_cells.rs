//! Super-peers for thousands of nodes (the 002 notes' last election topic, at scale): no
//! node hears from every other, each peer group holds its own election, and the groups'
//! directories see to what the notes ask of the whole.
//!
//! `superpeer` (beside this file) discovers by an all-to-all HELLO, M(M−1) messages,
//! which stops it at a few hundred processes. Here the latency space is cut into
//! [`latency::CELLS`] cells small enough that any two nodes of a cell are within
//! [`latency::BOUND_MS`] of each other: the cells are the notes' peer groups. Each node
//! knows only its own place and rank ([`latency::place`]) and, without faults, talks to
//! two others: its group's head and its cell's directory.
//!
//! 1. **Gathering, by id.** Nodes are grouped by id in [`GROUP`]s; a group's lowest id is
//!    its head ([`head_of`]). Each node sends its head `JOIN` with its place and rank.
//!    A head knows its group's ids, so it knows when it has heard from every live one.
//! 2. **Sorting, by place.** The head then sends each cell's directory ([`directory`],
//!    a fixed id per cell) a `BUNDLE` with its members in that cell, an empty one
//!    included: a directory knows it has its whole cell when every group's has come.
//! 3. **The election in each peer group.** The directory elects the cell's super-peers
//!    ([`latency::cell_roles`]): the lowest-ranked members, as many as the cell's share
//!    of the nodes needs and enough that none serves more than [`latency::CAPACITY`]
//!    ([`latency::cell_superpeers`]), each with room for an even share of the others,
//!    who join the nearest with room. It sends every member its `ROLE` (its super-peer
//!    and the cell's epoch). Every member is within the bound of every super-peer of its
//!    cell, so the bound holds by construction; the share holds for the whole because it
//!    holds in every cell; and the super-peers are spread as the nodes are, cell by cell.
//! 4. **Recovery.** A directory hears of a member's death (`PeerDown`: it wrote to every
//!    member) and holds the cell's election again over the living, keeping every role it
//!    can; members whose role changed get a `ROLE` of the next epoch. A member taken for
//!    dead and heard again (`PeerUp`) is joined afresh; so is a restarted node
//!    (incarnation above 0), which sends its place straight to its directory.
//! 5. **Successors.** A head or a directory is only the first of a line: the next id of
//!    the group ([`head_at`]) takes over a dead head, to which every member joins again;
//!    the next id after a cell's directory ([`directory_at`]) takes over a dead one, to
//!    which the heads (which wrote to it, so hear of its death) send their bundles again.
//!    A successor directory's epochs are above any of its predecessors' (the attempt is
//!    the epoch's high half), so every member takes its roles.
//!
//! Each node tells its application its role as a leader, as `superpeer` does: a
//! super-peer names itself, a normal node the super-peer it follows, the epoch as term;
//! `audit/superpeers.rs` judges the leader file. Not handled: a second fault while the
//! line moves on (a member that dies while its group changes head is waited for, as
//! nobody who talks to it is left to notice; a relayed bundle is lost if the next
//! directory is dead too): `mutexlab sim --algo superpeer-cells -n 40 --crashes 2
//! --seeds 0..1000` stalls in 14 seeds of 1,000, and names whom each node waits for.

use std::collections::BTreeMap;

use crate::algorithm::{Config, Election, ElectionEvent, Input, Message, Node, NodeInput, NodeOut, PeerId};
use crate::latency::{self, Point, CELLS};

/// Nodes per id group, whose head gathers their places.
pub const GROUP: u32 = 32;

/// The first head of `id`'s group: its lowest id.
pub fn head_of(id: u32) -> u32 {
    id / GROUP * GROUP
}

/// The head of `id`'s group after `k` heads died: the group's `k`-th id, if it has one.
pub fn head_at(id: u32, k: u32, n: u32) -> Option<u32> {
    let h = head_of(id) + k;
    (k < GROUP && h < n).then_some(h)
}

/// The groups among `n` nodes.
pub fn heads(n: u32) -> u32 {
    n.div_ceil(GROUP)
}

/// The node that first directs `cell` among `n`: ids spread evenly over the cells (some
/// direct several when `n` is below [`CELLS`]).
pub fn directory(cell: usize, n: u32) -> u32 {
    (cell as u64 * u64::from(n) / CELLS as u64) as u32
}

/// The directory of `cell` after `k` directories died: the `k`-th id after the first.
pub fn directory_at(cell: usize, k: u32, n: u32) -> u32 {
    ((u64::from(directory(cell, n)) + u64::from(k)) % u64::from(n.max(1))) as u32
}

/// The messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Msg {
    /// To the sender's group's head (the `head`-th of the line): its place and rank.
    Join {
        /// Its place, ms.
        at: Point,
        /// Its rank (ties to the lower id).
        rank: u64,
        /// Which head of the group this is meant for ([`head_at`]).
        head: u32,
        /// From a restarted node, which also told its directory itself: only for a
        /// head still gathering.
        again: bool,
    },
    /// To a cell's directory (the `dir`-th of the line): members of one group in that
    /// cell (id, place, rank).
    Bundle {
        /// The cell.
        cell: u8,
        /// Which directory of the cell this is meant for ([`directory_at`]).
        dir: u32,
        /// `Some(g)`: group g's whole gathering in the cell, from its head; `None`: late
        /// ones.
        group: Option<u32>,
        /// A restarted node's own place: whatever role its old life had is void.
        fresh: bool,
        /// Its members.
        members: Vec<(u32, Point, u64)>,
    },
    /// From a cell's directory: the receiver's super-peer (itself for a super-peer).
    Role {
        /// The cell's election: newer ones have higher epochs; the high half is the
        /// directory's place in its line.
        epoch: u64,
        /// The super-peer.
        superpeer: u32,
    },
}

impl Message for Msg {
    fn kind(&self) -> &str {
        match self {
            Msg::Join { .. } => "JOIN",
            Msg::Bundle { .. } => "BUNDLE",
            Msg::Role { .. } => "ROLE",
        }
    }
}

/// A group this node heads: its members' places and ranks, by `id - first id`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Gathering {
    group: Vec<Option<(Point, u64)>>,
    /// The bundles went.
    sorted: bool,
}

/// A cell this node directs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Directory {
    cell: u8,
    /// This node's place in the cell's line of directories.
    attempt: u32,
    /// Which groups' gatherings came.
    heard: Vec<bool>,
    /// Every member heard of, dead or alive: id → place and rank.
    members: BTreeMap<u32, (Point, u64)>,
    /// Each member's super-peer as last sent; empty until every group was heard.
    roles: BTreeMap<u32, u32>,
    epoch: u64,
}

impl Directory {
    fn complete(&self) -> bool {
        self.heard.iter().all(|&h| h)
    }
}

/// One node's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SuperPeerCells {
    id: u32,
    n: u32,
    at: Point,
    rank: u64,
    /// A first life joins through its head; a restarted one goes straight to its
    /// directory (its head may have sorted its group long ago).
    restarted: bool,
    /// Peers reported down and not back.
    down: Vec<bool>,
    /// Which head of the group this node joins ([`head_at`]).
    head: u32,
    /// Which directory of each cell this node sends bundles to ([`directory_at`]).
    dir: Vec<u32>,
    /// The group this node heads, once it does.
    gathering: Option<Gathering>,
    /// The cells this node directs.
    dirs: Vec<Directory>,
    /// This node's role: the epoch it came in and its super-peer.
    role: Option<(u64, u32)>,
}

/// Messages of a selection with no faults among `n` nodes: a `JOIN` from every node
/// but the heads, [`CELLS`] `BUNDLE`s from every head but those to itself, and a `ROLE`
/// for every node but the directories' own (at most one each, its cell's; all of the
/// range `(lo, hi)`, as where a directory lives depends on the seed).
pub fn messages(n: u32) -> (u64, u64) {
    let joins = u64::from(n - heads(n));
    let bundles = (0..heads(n))
        .map(|g| (0..CELLS).filter(|&c| directory(c, n) != g * GROUP).count() as u64)
        .sum::<u64>();
    let dirs = (0..CELLS).map(|c| directory(c, n)).collect::<std::collections::BTreeSet<_>>().len() as u64;
    let base = joins + bundles + u64::from(n);
    (base - dirs.min(u64::from(n)), base)
}

impl SuperPeerCells {
    fn cell(&self) -> usize {
        latency::cell_of(self.at)
    }

    /// Send `msg` to `to`, or take it here if that is this node.
    fn post(&mut self, to: u32, msg: Msg, out: &mut NodeOut<Self>) {
        if to == self.id {
            self.on_message(self.id, msg, out);
        } else {
            out.send(PeerId(to), msg);
        }
    }

    fn on_message(&mut self, from: u32, msg: Msg, out: &mut NodeOut<Self>) {
        match msg {
            Msg::Join { at, rank, head, again } => self.joined(from, at, rank, head, again, out),
            Msg::Bundle { cell, dir, group, fresh, members } => {
                self.bundle(cell, dir, group, fresh, members, out)
            }
            Msg::Role { epoch, superpeer } => {
                let from_dir = from == directory_at(self.cell(), (epoch >> 32) as u32, self.n);
                if from_dir && self.role.is_none_or(|(e, _)| epoch > e) {
                    let changed = self.role.map(|r| r.1) != Some(superpeer);
                    self.role = Some((epoch, superpeer));
                    if changed {
                        out.emit(ElectionEvent::Leader { id: PeerId(superpeer), term: epoch });
                    }
                }
            }
        }
    }

    /// Join this node's group's current head, or head it when the line has come here.
    fn join_head(&mut self, out: &mut NodeOut<Self>) {
        // A restarted node's group passed it by when it died: it joins the next head.
        while self.restarted && head_at(self.id, self.head, self.n) == Some(self.id) {
            self.head += 1;
        }
        match head_at(self.id, self.head, self.n) {
            Some(h) if h == self.id => {
                self.lead();
                self.sort(out);
            }
            Some(h) => {
                let again = self.restarted;
                out.send(PeerId(h), Msg::Join { at: self.at, rank: self.rank, head: self.head, again });
            }
            None => {}
        }
    }

    /// Start heading this node's group (as its first head, or a successor).
    fn lead(&mut self) {
        if self.gathering.is_none() {
            let first = head_of(self.id);
            let mut group = vec![None; (self.n - first).min(GROUP) as usize];
            group[(self.id - first) as usize] = Some((self.at, self.rank));
            self.gathering = Some(Gathering { group, sorted: false });
        }
    }

    /// A head hears a member's place: kept until the group is complete, then passed on
    /// at once.
    fn joined(&mut self, from: u32, at: Point, rank: u64, head: u32, again: bool, out: &mut NodeOut<Self>) {
        if head_at(from, head, self.n) != Some(self.id) {
            return;
        }
        self.lead();
        let Some(g) = &mut self.gathering else { return };
        g.group[(from - head_of(from)) as usize] = Some((at, rank));
        if g.sorted && !again {
            let cell = latency::cell_of(at);
            self.send_bundle(cell, None, false, vec![(from, at, rank)], out);
        } else {
            self.sort(out);
        }
    }

    /// Once every live member of the group has joined, a bundle to every directory.
    fn sort(&mut self, out: &mut NodeOut<Self>) {
        let first = head_of(self.id) as usize;
        let Some(g) = &mut self.gathering else { return };
        let all_in = (0..g.group.len()).all(|k| g.group[k].is_some() || self.down[first + k]);
        if g.sorted || !all_in {
            return;
        }
        g.sorted = true;
        let group = Some(self.id / GROUP);
        for cell in 0..CELLS {
            self.send_bundle(cell, group, false, self.members_in(cell), out);
        }
    }

    /// The group's members in `cell`, as this head gathered them.
    fn members_in(&self, cell: usize) -> Vec<(u32, Point, u64)> {
        let first = head_of(self.id);
        let Some(g) = &self.gathering else { return Vec::new() };
        (0..g.group.len())
            .filter_map(|k| g.group[k].map(|(at, rank)| (first + k as u32, at, rank)))
            .filter(|&(_, at, _)| latency::cell_of(at) == cell)
            .collect()
    }

    fn send_bundle(
        &mut self,
        cell: usize,
        group: Option<u32>,
        fresh: bool,
        members: Vec<(u32, Point, u64)>,
        out: &mut NodeOut<Self>,
    ) {
        // A restarted node's cells passed it by when it died: it directs none of them.
        while self.restarted
            && directory_at(cell, self.dir[cell], self.n) == self.id
            && self.dir[cell] < self.n
        {
            self.dir[cell] += 1;
        }
        let dir = self.dir[cell];
        let msg = Msg::Bundle { cell: cell as u8, dir, group, fresh, members };
        self.post(directory_at(cell, dir, self.n), msg, out);
    }

    /// A directory takes a group's members in its cell, or late ones. A restarted node
    /// passes a bundle meant for it on to the next directory of the line (the others
    /// moved on when it died).
    fn bundle(
        &mut self,
        cell: u8,
        attempt: u32,
        group: Option<u32>,
        fresh: bool,
        members: Vec<(u32, Point, u64)>,
        out: &mut NodeOut<Self>,
    ) {
        let (c, n) = (cell as usize, self.n);
        let whole = group.is_none_or(|g| g < heads(n) && members.iter().all(|m| m.0 / GROUP == g));
        if c >= CELLS || directory_at(c, attempt, n) != self.id || !whole {
            return;
        }
        if self.restarted && attempt + 1 < n {
            let msg = Msg::Bundle { cell, dir: attempt + 1, group, fresh, members };
            return self.post(directory_at(c, attempt + 1, n), msg, out);
        }
        let d = match self.dirs.iter().position(|d| d.cell == cell) {
            Some(d) if self.dirs[d].attempt > attempt => return,
            Some(d) if self.dirs[d].attempt == attempt => d,
            found => {
                // A directory of a later attempt starts afresh.
                let started = Directory {
                    cell,
                    attempt,
                    heard: vec![false; heads(n) as usize],
                    members: BTreeMap::new(),
                    roles: BTreeMap::new(),
                    epoch: u64::from(attempt) << 32,
                };
                match found {
                    Some(d) => {
                        self.dirs[d] = started;
                        d
                    }
                    None => {
                        self.dirs.push(started);
                        self.dirs.len() - 1
                    }
                }
            }
        };
        for &(id, at, rank) in &members {
            if fresh {
                // A new life of a member: no role yet, joined afresh.
                self.dirs[d].roles.remove(&id);
                self.down[id as usize] = false;
            }
            self.dirs[d].members.insert(id, (at, rank));
        }
        if let Some(g) = group {
            self.dirs[d].heard[g as usize] = true;
        }
        if self.dirs[d].complete() {
            self.elect(d, out);
        }
    }

    /// The cell's election over its live members; a `ROLE` to each whose role changed.
    fn elect(&mut self, d: usize, out: &mut NodeOut<Self>) {
        let dir = &self.dirs[d];
        let members: Vec<(u32, Point, u64)> = dir
            .members
            .iter()
            .filter(|(&id, _)| !self.down[id as usize])
            .map(|(&id, &(at, rank))| (id, at, rank))
            .collect();
        let roles = latency::cell_roles(&members, &dir.roles);
        let changed: Vec<(u32, u32)> =
            roles.iter().filter(|(id, s)| dir.roles.get(id) != Some(s)).map(|(&id, &s)| (id, s)).collect();
        if changed.is_empty() {
            return;
        }
        let epoch = dir.epoch + 1;
        self.dirs[d].epoch = epoch;
        self.dirs[d].roles = roles;
        for (id, superpeer) in changed {
            self.post(id, Msg::Role { epoch, superpeer }, out);
        }
    }

    /// `peer` is down: its group joins the next head if it headed this node's group, the
    /// cells it directed get the next directory, and the cells it was a member of hold
    /// their election again.
    fn lost(&mut self, peer: u32, out: &mut NodeOut<Self>) {
        if head_at(self.id, self.head, self.n) == Some(peer) {
            self.head += 1;
            self.join_head(out);
        }
        self.sort(out);
        let sorted = self.gathering.as_ref().is_some_and(|g| g.sorted);
        for cell in 0..CELLS {
            if directory_at(cell, self.dir[cell], self.n) != peer {
                continue;
            }
            self.dir[cell] += 1;
            if sorted {
                let members = self.members_in(cell);
                self.send_bundle(cell, Some(self.id / GROUP), false, members, out);
            } else if self.restarted && cell == self.cell() {
                self.send_bundle(cell, None, true, vec![(self.id, self.at, self.rank)], out);
            }
        }
        self.recheck(peer, out);
    }

    /// `peer` went down or came back: each complete cell it is a member of holds its
    /// election again (what it held is forgotten: a member back is joined afresh).
    fn recheck(&mut self, peer: u32, out: &mut NodeOut<Self>) {
        for d in 0..self.dirs.len() {
            if self.dirs[d].members.contains_key(&peer) && self.dirs[d].complete() {
                self.dirs[d].roles.remove(&peer);
                self.elect(d, out);
            }
        }
    }

    /// This node's super-peer: `Some(self)` for a super-peer.
    pub fn role(&self) -> Option<PeerId> {
        self.role.map(|r| PeerId(r.1))
    }
}

impl Node for SuperPeerCells {
    type Msg = Msg;
    type Timer = crate::algorithm::NoTimer;
    type Service = Election;
    const OWN_LEADERS: bool = true;

    fn create(cfg: &Config) -> Self {
        let n = cfg.n;
        let (at, rank) = latency::place(cfg.seed, n as usize, cfg.id.index());
        SuperPeerCells {
            id: cfg.id.0,
            n,
            at,
            rank,
            restarted: cfg.incarnation > 0,
            down: vec![false; n as usize],
            head: 0,
            dir: vec![0; CELLS],
            gathering: None,
            dirs: Vec::new(),
            role: None,
        }
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
        match input {
            // A restarted node tells its directory itself (its head may have sorted its
            // group long ago), and its head too, in case it is still gathering.
            Input::Start if self.restarted => {
                let own = vec![(self.id, self.at, self.rank)];
                self.send_bundle(self.cell(), None, true, own, out);
                self.join_head(out);
            }
            Input::Start => self.join_head(out),
            Input::Message { from, msg } => self.on_message(from.0, msg, out),
            Input::PeerDown { peer } => {
                self.down[peer.index()] = true;
                self.lost(peer.0, out);
            }
            // Taken for dead and heard again (a heartbeat detector's mistake, or a pause):
            // a member again, with a role to be given.
            Input::PeerUp { peer } => {
                self.down[peer.index()] = false;
                self.recheck(peer.0, out);
            }
            // The selection starts by itself; an application's call changes nothing.
            Input::Timer { .. } | Input::Call { .. } => {}
        }
    }

    fn waiting_for(&self) -> String {
        let first = head_of(self.id) as usize;
        if let Some(g) = self.gathering.as_ref().filter(|g| !g.sorted) {
            let missing = (0..g.group.len())
                .filter(|&k| g.group[k].is_none() && !self.down[first + k])
                .map(|k| format!("w{}", first + k))
                .collect::<Vec<_>>();
            return format!("JOIN from {} member(s) of its group: {}", missing.len(), missing.join(" "));
        }
        if let Some(d) = self.dirs.iter().find(|d| !d.complete()) {
            let missing =
                (0..d.heard.len()).filter(|&g| !d.heard[g]).map(|g| format!("w{}", g as u32 * GROUP));
            return format!(
                "BUNDLE for cell {} from group(s) {}",
                d.cell,
                missing.collect::<Vec<_>>().join(" ")
            );
        }
        match self.role {
            None => format!("ROLE from w{}", directory_at(self.cell(), self.dir[self.cell()], self.n)),
            Some(_) => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mutexlab_core::script::elect::Net as Script;
    use std::collections::BTreeSet;

    /// Every live node's super-peer, by id (`None` for the dead).
    fn roles(net: &Script<SuperPeerCells>) -> Vec<Option<u32>> {
        (0..net.n()).map(|i| net.is_alive(i).then(|| net.node(i).role().expect("a role").0)).collect()
    }

    /// What the notes ask, of `of` (by id, `None` for the dead) with the places of
    /// `seed`: `superpeer`'s check.
    fn meets(seed: u64, of: &[Option<u32>]) -> Result<(), String> {
        let roles: Vec<(u32, u32)> =
            (0..of.len() as u32).filter_map(|i| of[i as usize].map(|s| (i, s))).collect();
        crate::superpeer::tests::meets(seed, of.len(), &roles)
    }

    #[test]
    fn the_nodes_choose_what_the_cells_rule_chooses_for_the_seed() {
        for (n, seed) in [(2, 1), (12, 1), (40, 3), (100, 5), (300, 2)] {
            let mut net = Script::<SuperPeerCells>::with_seed(n, seed);
            net.run().unwrap();
            let got = roles(&net);
            meets(seed, &got).unwrap_or_else(|e| panic!("N={n} seed {seed}: {e}"));
            assert_eq!(got, latency::cells_select(seed, n as usize), "N={n} seed {seed}");
            // One role each, told once, in the first epoch.
            assert!(net.leaders.iter().all(|a| a.term == 1) && net.leaders.len() == n as usize);
        }
    }

    #[test]
    fn the_message_count_is_the_formula_s_and_no_node_talks_to_more_than_a_few() {
        for (n, seed) in [(2, 1), (12, 4), (100, 2), (300, 7)] {
            let mut net = Script::<SuperPeerCells>::with_seed(n, seed);
            net.run().unwrap();
            let (lo, hi) = messages(n);
            let sent = net.sent.len() as u64;
            assert!((lo..=hi).contains(&sent), "N={n}: {sent} messages, theory {lo}-{hi}");
            assert_eq!(net.count_since(0, "JOIN") as u32, n - heads(n));
            // A node that is neither a head nor a directory talks to its head and its
            // directory only.
            let dirs: BTreeSet<u32> = (0..CELLS).map(|c| directory(c, n)).collect();
            for i in (0..n).filter(|&i| head_of(i) != i && !dirs.contains(&i)) {
                let peers: BTreeSet<u32> = net
                    .msgs
                    .iter()
                    .filter_map(|&(f, t, _)| (f == i).then_some(t).or((t == i).then_some(f)))
                    .collect();
                assert!(peers.len() <= 2, "N={n}: w{i} talked to {peers:?}");
            }
        }
    }

    #[test]
    fn a_dead_super_peer_s_followers_are_homed_again_and_the_rest_keep_theirs() {
        for seed in 0..4u64 {
            let n = 120;
            let mut net = Script::<SuperPeerCells>::with_seed(n, seed);
            net.run().unwrap();
            let before = roles(&net);
            let dirs: BTreeSet<u32> = (0..CELLS).map(|c| directory(c, n)).collect();
            let victim = (0..n)
                .find(|&i| before[i as usize] == Some(i) && !dirs.contains(&i) && head_of(i) != i)
                .expect("a super-peer that neither directs nor heads");
            net.kill(victim);
            net.run().unwrap();
            let after = roles(&net);
            meets(seed, &after).unwrap_or_else(|e| panic!("seed {seed}, w{victim} killed: {e}"));
            for i in 0..n as usize {
                if let (Some(s), Some(t)) = (before[i], after[i]) {
                    assert!(s == victim || s == t, "seed {seed}: w{i} moved from w{s} to w{t}");
                }
            }
        }
    }

    #[test]
    fn a_node_that_comes_back_is_joined_again_through_its_directory() {
        let (n, seed) = (64, 3);
        let mut net = Script::<SuperPeerCells>::with_seed(n, seed);
        net.run().unwrap();
        let dirs: BTreeSet<u32> = (0..CELLS).map(|c| directory(c, n)).collect();
        // A head and a normal node, each killed and restarted.
        let normal = (0..n).find(|&i| net.node(i).role() != Some(PeerId(i)) && !dirs.contains(&i)).unwrap();
        for w in [0, normal] {
            net.kill(w);
            net.run().unwrap();
            net.restart(w);
            net.run().unwrap();
            let got = roles(&net);
            assert!(got.iter().all(Option::is_some), "w{w} back: {got:?}");
            meets(seed, &got).unwrap_or_else(|e| panic!("w{w} back: {e}"));
        }
    }

    #[test]
    fn a_dead_member_before_the_gathering_is_left_out_not_waited_for() {
        let (n, seed) = (40, 2);
        let mut net = Script::<SuperPeerCells>::with_seed(n, seed);
        // w6 neither heads nor directs (a directory's death is not handled).
        assert!((0..CELLS).all(|c| directory(c, n) != 6));
        net.kill(6);
        net.run().unwrap();
        let got = roles(&net);
        assert_eq!(got[6], None);
        assert_eq!(got.iter().flatten().count(), n as usize - 1);
        meets(seed, &got).unwrap();
    }

    #[test]
    fn a_member_taken_for_dead_and_heard_again_gets_a_role_again() {
        let (n, seed) = (64, 5);
        let mut net = Script::<SuperPeerCells>::with_seed(n, seed);
        net.run().unwrap();
        let before = roles(&net);
        // Every directory wrongly suspects a super-peer, then hears from it again.
        let dirs: BTreeSet<u32> = (0..CELLS).map(|c| directory(c, n)).collect();
        let sp = (0..n).find(|&i| before[i as usize] == Some(i) && !dirs.contains(&i)).unwrap();
        for &d in &dirs {
            net.notice(d, sp);
        }
        net.run().unwrap();
        meets(
            seed,
            &roles(&net).iter().enumerate().map(|(i, r)| r.filter(|_| i as u32 != sp)).collect::<Vec<_>>(),
        )
        .unwrap();
        for &d in &dirs {
            net.hear_up(d, sp);
        }
        net.run().unwrap();
        let after = roles(&net);
        assert!(after.iter().all(Option::is_some));
        meets(seed, &after).unwrap();
    }

    #[test]
    fn a_stalled_selection_says_whom_it_waits_for() {
        let mut net = Script::<SuperPeerCells>::with_seed(40, 2);
        // w3's JOIN never reaches its head, and nobody hears it died.
        let _lost = net.hold(3, 0);
        net.crash(3);
        net.run().unwrap();
        assert_eq!(net.node(0).waiting_for(), "JOIN from 1 member(s) of its group: w3");
        assert!(net.node(1).waiting_for().starts_with("ROLE from w"), "{}", net.node(1).waiting_for());
    }

    #[test]
    fn any_delivery_order_the_simulator_picks_settles_every_node() {
        for seed in 0..20 {
            let r = crate::sim::Sim::<SuperPeerCells>::new(10, seed).run(1).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.leader, None, "super-peers do not agree on one leader");
        }
    }

    #[test]
    fn a_crash_and_restart_anywhere_heads_and_directories_included_still_settles() {
        // At 12 nodes 8 direct a cell and one heads the group: most crashes hit one.
        for seed in 0..60 {
            crate::sim::Sim::<SuperPeerCells>::new(12, seed)
                .crashes(1, |_| true)
                .run(1)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
    }
}
