//! Ricart-Agrawala as a Stateright actor model, written to have exactly the states of
//! mutexlab's `World` running `lib/algos/ricart_agrawala.rs` without faults, so the two
//! checkers can be timed on one state space.
//!
//! The algorithm (course notes, Algorithm 10.2): a node that wants the critical section
//! takes a ticket one above the highest ticket it has seen in anybody's REQUEST and
//! sends REQUEST with it to every other node; it enters once every other node has
//! answered REPLY. A node that gets a REQUEST remembers its ticket, then answers at once
//! unless it is inside, or it is competing and its own request is older (smaller ticket,
//! ties to the smaller id); those REPLYs wait until it leaves.
//!
//! How it maps onto the world, so that the states are the same:
//! - The world's network is FIFO per ordered pair of nodes: Stateright's ordered network.
//! - The world's application is a choice: each node's application asks, is let in, and
//!   leaves, `entries` times. Stateright's actors have no application, so a node arms a
//!   timer for each thing its application may do next (`Ask` while idle with entries
//!   left, `Leave` while inside); Stateright lets any armed timer fire at any time, which
//!   is the world's "the application may call now". Which timers are armed follows from
//!   the node's state, so they add no states of their own.
//! - A node's state holds the same fields as the library's node (the ticket stays after
//!   the node leaves, as there) plus the entries its application has left, which the
//!   world keeps beside the node.

use std::borrow::Cow;
use std::collections::BTreeSet;

use stateright::actor::{model_peers, model_timeout, Actor, ActorModel, Id, Network, Out};
use stateright::Expectation;

/// Messages, as the library's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    /// The sender asks with this ticket.
    Request {
        /// Ties go to the smaller id.
        ticket: u64,
    },
    /// The sender gives its permission.
    Reply,
}

/// What the application may do next (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum App {
    /// Ask for the critical section.
    Ask,
    /// Leave it.
    Leave,
}

/// One node's state: the library node's fields and its application's entries left.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    /// The highest ticket seen in any REQUEST received.
    highest: u64,
    /// This node's ticket (meaningful while `requesting`).
    ticket: u64,
    /// The application asked and has not left yet.
    requesting: bool,
    /// The application is inside.
    pub inside: bool,
    /// Peers whose REPLY this node still waits for.
    awaiting: BTreeSet<Id>,
    /// Peers that get their REPLY when this node leaves.
    deferred: BTreeSet<Id>,
    /// Entries the application still wants.
    pub left: u32,
}

/// A node's fixed configuration.
#[derive(Clone, Debug)]
pub struct RaActor {
    peers: Vec<Id>,
    entries: u32,
    /// Tests only: answer every REQUEST at once, which breaks mutual exclusion.
    never_defer: bool,
}

impl RaActor {
    fn on_request(&self, id: Id, state: &mut Node, from: Id, ticket: u64, o: &mut Out<Self>) {
        state.highest = state.highest.max(ticket);
        let older = (ticket, from) < (state.ticket, id);
        let defer = state.inside || (state.requesting && !older);
        if defer && !self.never_defer {
            state.deferred.insert(from);
        } else {
            o.send(from, Msg::Reply);
        }
    }
}

impl Actor for RaActor {
    type Msg = Msg;
    type Timer = App;
    type State = Node;
    type Storage = ();
    type Random = ();

    fn on_start(&self, _id: Id, _storage: &Option<()>, o: &mut Out<Self>) -> Node {
        if self.entries > 0 {
            o.set_timer(App::Ask, model_timeout());
        }
        Node {
            highest: 0,
            ticket: 0,
            requesting: false,
            inside: false,
            awaiting: BTreeSet::new(),
            deferred: BTreeSet::new(),
            left: self.entries,
        }
    }

    fn on_msg(&self, id: Id, state: &mut Cow<Node>, src: Id, msg: Msg, o: &mut Out<Self>) {
        match msg {
            Msg::Request { ticket } => self.on_request(id, state.to_mut(), src, ticket, o),
            Msg::Reply if state.awaiting.contains(&src) => {
                let s = state.to_mut();
                s.awaiting.remove(&src);
                if s.requesting && !s.inside && s.awaiting.is_empty() {
                    s.inside = true;
                    o.set_timer(App::Leave, model_timeout());
                }
            }
            Msg::Reply => {}
        }
    }

    fn on_timeout(&self, _id: Id, state: &mut Cow<Node>, timer: &App, o: &mut Out<Self>) {
        let s = state.to_mut();
        match timer {
            App::Ask => {
                s.requesting = true;
                s.ticket = s.highest + 1;
                s.awaiting = self.peers.iter().copied().collect();
                for &p in &self.peers {
                    o.send(p, Msg::Request { ticket: s.ticket });
                }
                if s.awaiting.is_empty() {
                    // Alone: in at once.
                    s.inside = true;
                    o.set_timer(App::Leave, model_timeout());
                }
            }
            App::Leave => {
                s.requesting = false;
                s.inside = false;
                for p in std::mem::take(&mut s.deferred) {
                    o.send(p, Msg::Reply);
                }
                s.left -= 1;
                if s.left > 0 {
                    o.set_timer(App::Ask, model_timeout());
                }
            }
        }
    }
}

/// `n` nodes whose applications enter `entries` times each, on an ordered network, with
/// the properties mutexlab's check has for this model: never two inside, and every
/// request served at every terminal state (which is also "no deadlock" here).
pub fn model(n: usize, entries: u32) -> ActorModel<RaActor> {
    model_of(n, entries, false)
}

fn model_of(n: usize, entries: u32, never_defer: bool) -> ActorModel<RaActor> {
    ActorModel::new((), ())
        .actors((0..n).map(|i| RaActor { peers: model_peers(i, n), entries, never_defer }))
        .init_network(Network::new_ordered([]))
        .property(Expectation::Always, "mutual exclusion", |_, s| {
            s.actor_states.iter().filter(|a| a.inside).count() <= 1
        })
        .property(Expectation::Eventually, "every request served", |_, s| {
            s.actor_states.iter().all(|a| a.left == 0 && !a.requesting)
        })
}

#[cfg(test)]
mod tests {
    use stateright::{Checker, Model};

    use super::*;

    #[test]
    fn n3_k1_has_the_worlds_states_and_holds() {
        let c = model(3, 1).checker().spawn_bfs().join();
        assert_eq!(c.unique_state_count(), 2_101);
        assert!(c.discoveries().is_empty(), "{:?}", c.discoveries().keys());
    }

    #[test]
    fn a_node_that_never_defers_is_caught_letting_two_in() {
        let c = model_of(2, 1, true).checker().spawn_bfs().join();
        assert!(c.discovery("mutual exclusion").is_some());
    }
}
