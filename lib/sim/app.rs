//! The application side of a simulated run, one kind per service: what the applications
//! may call next, what they make of their nodes' events (and which events break the
//! service's promise), and when the run is over.
//!
//! - [`MutexApps`]: each application asks for the critical section, is let in, and
//!   leaves, `entries` times; two inside at once is [`Failure::Overlap`].
//! - [`ElectionApps`]: the initiators each call `elect` once; every `leader` event is
//!   checked as it comes (no term ever names two leaders: [`Failure::SplitBrain`]; a
//!   node's terms only rise: [`Failure::TermBackwards`]), and the run is over when every
//!   live node names the same live leader and nothing is in flight. Which leader is the
//!   right one (the highest live id, for bully and the ring algorithms) is the caller's
//!   check, on the report. Nodes that name leaders of their own (super-peers,
//!   [`crate::algorithm::Node::OWN_LEADERS`]) are over when every live node follows a
//!   live one, and a term may name many.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};

use smallvec::{smallvec, SmallVec};

use super::{AppAct, Failure};
use crate::algorithm::{
    Election, ElectionCall, ElectionEvent, Mutex, MutexCall, MutexEvent, PeerId, Renaming, Service,
};

/// A service the simulator can run: it names the applications' side.
pub trait SimService: Service {
    /// The applications of a run.
    type Apps: SimApps<Self>;
    /// The applications of `n` nodes; `rounds` is what [`super::Sim::run`] was given.
    fn apps(n: usize, rounds: u32) -> Self::Apps;
}

/// The applications of every node in a simulated run.
pub trait SimApps<S: Service + ?Sized>: Clone + Debug + PartialEq + Eq + Hash + Send {
    /// The calls application `node` could make now (it is alive).
    fn calls(&self, node: usize) -> Vec<S::Call>;
    /// How many calls application `node` could make now: [`SimApps::calls`]'s length,
    /// without building them (a search asks at every state).
    fn call_count(&self, node: usize) -> usize {
        self.calls(node).len()
    }
    /// Application `node` makes `call`; what it did, for the world's observer.
    fn call(&mut self, node: usize, call: &S::Call) -> AppAct;
    /// Node `node` tells its application `event`: what it was told, for the world's
    /// observer, and the failure the event is, if it breaks the service's promise.
    fn event(&mut self, node: usize, event: &S::Event) -> (AppAct, Result<(), Failure>);
    /// Node `node` crashed: its application's request, section or belief is gone.
    fn crash(&mut self, node: usize);
    /// Nothing more to do: `alive` says who is.
    fn done(&self, alive: &[bool]) -> bool;
    /// Application `node` still waits for its node (for deadlock reports).
    fn waiting(&self, node: usize, alive: &[bool]) -> bool;
    /// Entries each application made (mutual exclusion), zeros otherwise.
    fn entries(&self) -> Vec<u64>;
    /// What application `node` is doing, in a few words (the stepping page shows it).
    fn phase(&self, node: usize) -> String;
    /// The node whose application is inside the critical section (mutual exclusion),
    /// else `None`.
    fn inside(&self) -> Option<PeerId> {
        None
    }
    /// The leader every live node names, if they agree (elections), else `None`.
    fn leader(&self, _alive: &[bool]) -> Option<(PeerId, u64)> {
        None
    }
    /// The nodes each name a leader of their own ([`crate::algorithm::Node::OWN_LEADERS`]):
    /// done when every live node follows a live one. Nothing for other services.
    fn own_leaders(&mut self) {}
    /// These applications with their nodes renamed by `r` (the checker's symmetry
    /// reduction): each application where its node goes, and every id in them renamed.
    fn renamed(&self, r: &Renaming) -> Self;
}

/// What a mutual-exclusion application is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Mx {
    Idle,
    Waiting,
    Inside,
}

/// One value per node, inline for up to 8 nodes: a search copies worlds by millions,
/// and three vectors here were three allocations a copy.
type PerNode<T> = SmallVec<[T; 8]>;

/// Mutual-exclusion applications: see the module doc. Equal by their phases and the
/// entries left, not by the entries made (a tally, kept beside).
#[derive(Debug)]
pub struct MutexApps {
    apps: PerNode<Mx>,
    /// Entries each application still wants.
    left: PerNode<u32>,
    /// Entries each made.
    pub(super) entries: PerNode<u64>,
    inside: Option<PeerId>,
}

// By hand: `SmallVec::clone` pushes the items one by one; `from_slice` copies them.
impl Clone for MutexApps {
    fn clone(&self) -> Self {
        MutexApps {
            apps: SmallVec::from_slice(&self.apps),
            left: SmallVec::from_slice(&self.left),
            entries: SmallVec::from_slice(&self.entries),
            inside: self.inside,
        }
    }
}

// By hand: `entries` only grows, and a search must not tell states apart by it.
impl PartialEq for MutexApps {
    fn eq(&self, other: &Self) -> bool {
        (&self.apps, &self.left, self.inside) == (&other.apps, &other.left, other.inside)
    }
}

impl Eq for MutexApps {}

impl Hash for MutexApps {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (&self.apps, &self.left, self.inside).hash(state);
    }
}

impl SimService for Mutex {
    type Apps = MutexApps;
    fn apps(n: usize, entries: u32) -> MutexApps {
        MutexApps {
            apps: smallvec![Mx::Idle; n],
            left: smallvec![entries; n],
            entries: smallvec![0; n],
            inside: None,
        }
    }
}

impl SimApps<Mutex> for MutexApps {
    fn renamed(&self, r: &Renaming) -> Self {
        MutexApps {
            apps: r.permute(&self.apps).into(),
            left: r.permute(&self.left).into(),
            entries: r.permute(&self.entries).into(),
            inside: self.inside.map(|p| r.of(p)),
        }
    }

    fn calls(&self, node: usize) -> Vec<MutexCall> {
        match self.apps[node] {
            Mx::Idle if self.left[node] > 0 => vec![MutexCall::Want],
            Mx::Inside => vec![MutexCall::Done],
            _ => Vec::new(),
        }
    }

    fn call_count(&self, node: usize) -> usize {
        usize::from(
            matches!(self.apps[node], Mx::Idle if self.left[node] > 0) || self.apps[node] == Mx::Inside,
        )
    }

    fn call(&mut self, node: usize, call: &MutexCall) -> AppAct {
        match call {
            MutexCall::Want => {
                self.apps[node] = Mx::Waiting;
                AppAct::Wants
            }
            MutexCall::Done => {
                self.apps[node] = Mx::Idle;
                self.left[node] -= 1;
                self.entries[node] += 1;
                self.inside = None;
                AppAct::Leaves
            }
        }
    }

    fn event(&mut self, node: usize, MutexEvent::Enter: &MutexEvent) -> (AppAct, Result<(), Failure>) {
        let me = PeerId(node as u32);
        if let Some(inside) = self.inside {
            // In, too: what a walk's last step shows (the world stops at the failure).
            self.apps[node] = Mx::Inside;
            return (AppAct::Enters, Err(Failure::Overlap { inside, entering: me }));
        }
        self.apps[node] = Mx::Inside;
        self.inside = Some(me);
        (AppAct::Enters, Ok(()))
    }

    fn crash(&mut self, node: usize) {
        if self.apps[node] == Mx::Inside {
            self.inside = None;
        }
        self.apps[node] = Mx::Idle;
    }

    fn done(&self, _alive: &[bool]) -> bool {
        self.left.iter().all(|&l| l == 0) && self.apps.iter().all(|&a| a == Mx::Idle)
    }

    fn waiting(&self, node: usize, _alive: &[bool]) -> bool {
        self.apps[node] == Mx::Waiting
    }

    fn entries(&self) -> Vec<u64> {
        self.entries.to_vec()
    }

    fn inside(&self) -> Option<PeerId> {
        self.inside
    }

    fn phase(&self, node: usize) -> String {
        let left = match self.left[node] {
            0 => String::new(),
            1 => ", 1 entry left".to_string(),
            k => format!(", {k} entries left"),
        };
        match self.apps[node] {
            Mx::Idle if self.left[node] == 0 => "done".to_string(),
            Mx::Idle => format!("idle{left}"),
            Mx::Waiting => "waiting".to_string(),
            Mx::Inside => "inside".to_string(),
        }
    }
}

/// Election applications: see the module doc. Equal by the elections left, each node's
/// leader and the terms announced (what the checks judge), not by the count of
/// announcements (a tally, kept beside).
#[derive(Clone, Debug)]
pub struct ElectionApps {
    /// Elections each application will still call for.
    left: Vec<u32>,
    /// The leader each node last accepted, and its term.
    pub(super) leader: Vec<Option<(PeerId, u64)>>,
    /// Every term announced so far, and the leader it named.
    terms: BTreeMap<u64, PeerId>,
    /// Leaders announced, all nodes together.
    pub(super) announcements: u64,
    /// Each node names a leader of its own (see [`SimApps::own_leaders`]).
    own: bool,
}

impl ElectionApps {
    /// Only these nodes call `elect` (each once); the others wait to hear.
    pub fn initiators(&mut self, nodes: &[u32]) {
        for (i, left) in self.left.iter_mut().enumerate() {
            *left = u32::from(nodes.contains(&(i as u32)));
        }
    }

    /// The leader every live node names, if they all name the same one.
    pub fn agreed(&self, alive: &[bool]) -> Option<(PeerId, u64)> {
        let mut live = (0..alive.len()).filter(|&i| alive[i]).map(|i| self.leader[i]);
        let first = live.next()??;
        live.all(|l| l == Some(first)).then_some(first)
    }
}

// By hand: `announcements` only grows, and a search must not tell states apart by it.
impl PartialEq for ElectionApps {
    fn eq(&self, other: &Self) -> bool {
        (&self.left, &self.leader, &self.terms) == (&other.left, &other.leader, &other.terms)
    }
}

impl Eq for ElectionApps {}

impl Hash for ElectionApps {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (&self.left, &self.leader, &self.terms).hash(state);
    }
}

impl SimService for Election {
    type Apps = ElectionApps;
    fn apps(n: usize, rounds: u32) -> ElectionApps {
        ElectionApps {
            left: vec![rounds; n],
            leader: vec![None; n],
            terms: BTreeMap::new(),
            announcements: 0,
            own: false,
        }
    }
}

impl SimApps<Election> for ElectionApps {
    fn renamed(&self, r: &Renaming) -> Self {
        let leader = self.leader.iter().map(|l| l.map(|(id, term)| (r.of(id), term))).collect::<Vec<_>>();
        ElectionApps {
            left: r.permute(&self.left),
            leader: r.permute(&leader),
            terms: self.terms.iter().map(|(&term, &id)| (term, r.of(id))).collect(),
            announcements: self.announcements,
            own: self.own,
        }
    }

    fn calls(&self, node: usize) -> Vec<ElectionCall> {
        if self.left[node] > 0 {
            vec![ElectionCall::Elect]
        } else {
            Vec::new()
        }
    }

    fn call_count(&self, node: usize) -> usize {
        usize::from(self.left[node] > 0)
    }

    fn call(&mut self, node: usize, ElectionCall::Elect: &ElectionCall) -> AppAct {
        self.left[node] -= 1;
        AppAct::CallsElection
    }

    fn event(&mut self, node: usize, event: &ElectionEvent) -> (AppAct, Result<(), Failure>) {
        let me = PeerId(node as u32);
        let ElectionEvent::Leader { id, term } = *event;
        let act = AppAct::AcceptsLeader { leader: id, term };
        if let Some(&other) = self.terms.get(&term).filter(|_| !self.own) {
            if other != id {
                return (act, Err(Failure::SplitBrain { term, first: other, second: id, by: me }));
            }
        }
        if let Some((_, before)) = self.leader[node] {
            if term <= before && self.leader[node] != Some((id, term)) {
                return (act, Err(Failure::TermBackwards { node: me, before, after: term }));
            }
        }
        self.terms.insert(term, id);
        self.leader[node] = Some((id, term));
        self.announcements += 1;
        (act, Ok(()))
    }

    fn crash(&mut self, node: usize) {
        // A restarted node knows no leader until it is told again.
        self.leader[node] = None;
    }

    fn done(&self, alive: &[bool]) -> bool {
        if self.own {
            let follows = |i: usize| self.leader[i].is_some_and(|(id, _)| alive[id.index()]);
            return self.left.iter().all(|&l| l == 0) && (0..alive.len()).all(|i| !alive[i] || follows(i));
        }
        self.left.iter().all(|&l| l == 0) && self.agreed(alive).is_some_and(|(id, _)| alive[id.index()])
    }

    fn waiting(&self, node: usize, alive: &[bool]) -> bool {
        if self.own {
            return self.leader[node].is_none_or(|(id, _)| !alive[id.index()]);
        }
        self.leader[node].is_none() || self.agreed(alive).is_none()
    }

    fn own_leaders(&mut self) {
        self.own = true;
    }

    fn entries(&self) -> Vec<u64> {
        vec![0; self.left.len()]
    }

    fn leader(&self, alive: &[bool]) -> Option<(PeerId, u64)> {
        self.agreed(alive)
    }

    fn phase(&self, node: usize) -> String {
        let named = match self.leader[node] {
            Some((id, term)) => format!("follows {id} (term {term})"),
            None => "knows no leader".to_string(),
        };
        match self.left[node] {
            0 => named,
            k => format!("{named}; may call {k} election{}", if k == 1 { "" } else { "s" }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_count_is_the_number_of_calls_in_every_phase() {
        let mut mx = <Mutex as SimService>::apps(2, 1);
        let counts = |a: &MutexApps| (0..2).map(|i| (a.call_count(i), a.calls(i).len())).collect::<Vec<_>>();
        assert_eq!(counts(&mx), [(1, 1), (1, 1)], "idle with an entry left");
        mx.call(0, &MutexCall::Want);
        assert_eq!(counts(&mx)[0], (0, 0), "waiting");
        let _ = mx.event(0, &MutexEvent::Enter);
        assert_eq!(counts(&mx)[0], (1, 1), "inside");
        mx.call(0, &MutexCall::Done);
        assert_eq!(counts(&mx)[0], (0, 0), "idle with no entry left");
        let mut el = <Election as SimService>::apps(2, 1);
        assert_eq!((el.call_count(0), el.calls(0).len()), (1, 1));
        el.call(0, &ElectionCall::Elect);
        assert_eq!((el.call_count(0), el.calls(0).len()), (0, 0));
    }
}
