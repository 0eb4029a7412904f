//! Centralized coordinator: one node keeps a FIFO queue and hands out the critical section.
//!
//! The coordinator is the node with the highest id (the one a bully election would pick),
//! and it competes for the critical section like everyone else. A node that wants in
//! sends REQUEST to the coordinator and waits for GRANT; when it leaves it sends RELEASE.
//! The coordinator grants at once if nobody holds the section and queues the request
//! otherwise; on each RELEASE it grants the head of the queue. That costs exactly three
//! messages per entry of an ordinary node and none for the coordinator's own entries.
//!
//! The scheme is fair (first come, first served at the coordinator) and simple, but the
//! coordinator is a single point of failure and a bottleneck: if it dies, nobody learns
//! who held the section or who was waiting, and waiting nodes cannot tell a dead
//! coordinator from a busy one.
//!
//! Crashes of other nodes the coordinator can survive here, because on one machine a
//! closed channel means a dead process: it drops a dead node's queued request, and takes
//! the section back from a dead holder. A *paused* holder closes nothing, so everyone
//! waits for it. When a restarted coordinator (with no memory) comes back, a node still
//! waiting asks again; a node that was inside when it died is unknown to the new one,
//! which may then let a second node in: the auditor shows that as an overlap.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId, Renaming, Symmetric};

/// Messages of the centralized algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Node → coordinator: I want the critical section.
    Request,
    /// Coordinator → node: it is yours.
    Grant,
    /// Node → coordinator: I am out.
    Release,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request => "REQUEST",
            Msg::Grant => "GRANT",
            Msg::Release => "RELEASE",
        }
    }
}

/// One node of the centralized algorithm; the coordinator's extra state is unused
/// elsewhere.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Centralized {
    me: PeerId,
    coordinator: PeerId,
    /// This node has asked and not yet been let in.
    waiting: bool,
    /// Coordinator only: who holds the section now.
    holder: Option<PeerId>,
    /// Coordinator only: requests waiting their turn, oldest first.
    queue: VecDeque<PeerId>,
}

impl Centralized {
    /// Who waits in the coordinator's queue, oldest first (empty on other nodes; for the
    /// checker's "queue holds no one twice").
    pub fn queue(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.queue.iter().copied()
    }
}

impl Centralized {
    fn is_coordinator(&self) -> bool {
        self.me == self.coordinator
    }

    /// Coordinator: `who` wants in; grant now or queue.
    fn request(&mut self, who: PeerId, out: &mut Out<Msg, NoTimer>) {
        if self.holder.is_none() {
            self.grant(who, out);
        } else {
            self.queue.push_back(who);
        }
    }

    /// Coordinator: the holder left; grant the next in line, if any.
    fn release(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.holder = None;
        if let Some(next) = self.queue.pop_front() {
            self.grant(next, out);
        }
    }

    fn grant(&mut self, who: PeerId, out: &mut Out<Msg, NoTimer>) {
        self.holder = Some(who);
        if who == self.me {
            self.waiting = false;
            out.enter_cs();
        } else {
            out.send(who, Msg::Grant);
        }
    }
}

impl Algorithm for Centralized {
    type Msg = Msg;
    type Timer = NoTimer;

    fn new(cfg: &Config) -> Self {
        Centralized {
            me: cfg.id,
            coordinator: cfg.highest(),
            waiting: false,
            holder: None,
            queue: VecDeque::new(),
        }
    }

    fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
        self.waiting = true;
        if self.is_coordinator() {
            self.request(self.me, out);
        } else {
            out.send(self.coordinator, Msg::Request);
        }
    }

    fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
        match msg {
            Msg::Request if self.is_coordinator() => self.request(from, out),
            Msg::Release if self.is_coordinator() && self.holder == Some(from) => self.release(out),
            Msg::Grant if from == self.coordinator && self.waiting => {
                self.waiting = false;
                out.enter_cs();
            }
            // Anything else breaks the protocol (a message meant for the coordinator, a
            // RELEASE from a non-holder, an unasked GRANT): ignore it rather than act on it.
            _ => {}
        }
    }

    fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
        if self.is_coordinator() {
            self.release(out);
        } else {
            out.send(self.coordinator, Msg::Release);
        }
    }

    fn on_peer_down(&mut self, peer: PeerId, out: &mut Out<Msg, NoTimer>) {
        if self.is_coordinator() {
            self.queue.retain(|&p| p != peer);
            if self.holder == Some(peer) {
                self.release(out);
            }
        }
    }

    fn on_peer_up(&mut self, peer: PeerId, out: &mut Out<Msg, NoTimer>) {
        // A restarted coordinator forgot our request.
        if peer == self.coordinator && self.waiting {
            out.send(self.coordinator, Msg::Request);
        }
    }

    fn pending(&self) -> String {
        match (self.waiting, self.is_coordinator()) {
            (true, false) => format!("waiting for GRANT from {}", self.coordinator),
            (true, true) => match self.holder {
                Some(h) => format!("coordinator waiting for RELEASE from {h}"),
                None => "coordinator waiting".to_string(),
            },
            (false, _) => String::new(),
        }
    }
}

/// The nodes other than the coordinator are interchangeable: none compares ids, and
/// the coordinator serves them first come, first served. A renaming must fix the
/// coordinator, which is chosen by id (the highest).
impl Symmetric for Centralized {
    fn renamings(n: u32) -> Vec<Renaming> {
        Renaming::all_of(n, &(0..n.saturating_sub(1)).collect::<Vec<_>>())
    }
    fn renamed(&self, r: &Renaming) -> Self {
        Centralized {
            me: r.of(self.me),
            coordinator: r.of(self.coordinator),
            waiting: self.waiting,
            holder: self.holder.map(|h| r.of(h)),
            queue: self.queue.iter().map(|&p| r.of(p)).collect(),
        }
    }
    fn msg_renamed(msg: &Msg, _: &Renaming) -> Msg {
        msg.clone()
    }
    fn timer_renamed(timer: &NoTimer, _: &Renaming) -> NoTimer {
        match *timer {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Action;
    use crate::script::out;

    #[test]
    fn three_messages_for_a_non_coordinator() {
        let mut w0 = Centralized::new(&Config::new(0, 3));
        let mut w2 = Centralized::new(&Config::new(2, 3));
        let mut o = out();
        w0.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[Action::Send { to: PeerId(2), msg: Msg::Request }]);
        let mut o2 = out();
        w2.on_message(PeerId(0), Msg::Request, &mut o2);
        assert_eq!(o2.actions(), &[Action::Send { to: PeerId(0), msg: Msg::Grant }]);
        let mut o = out();
        w0.on_message(PeerId(2), Msg::Grant, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w0.on_cs_done(&mut o);
        assert_eq!(o.actions(), &[Action::Send { to: PeerId(2), msg: Msg::Release }]);
        let mut o2 = out();
        w2.on_message(PeerId(0), Msg::Release, &mut o2);
        assert!(o2.actions().is_empty());
        assert_eq!(w2.holder, None);
    }

    #[test]
    fn coordinator_enters_without_messages() {
        let mut w1 = Centralized::new(&Config::new(1, 2));
        let mut o = out();
        w1.on_want_cs(&mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        let mut o = out();
        w1.on_cs_done(&mut o);
        assert!(o.actions().is_empty());
    }

    #[test]
    fn queue_is_first_come_first_served() {
        let mut c = Centralized::new(&Config::new(3, 4));
        let mut o = out();
        c.on_message(PeerId(1), Msg::Request, &mut o);
        c.on_message(PeerId(0), Msg::Request, &mut o);
        c.on_want_cs(&mut o);
        c.on_message(PeerId(2), Msg::Request, &mut o);
        assert_eq!(o.actions(), &[Action::Send { to: PeerId(1), msg: Msg::Grant }]);
        let mut o = out();
        c.on_message(PeerId(1), Msg::Release, &mut o);
        assert_eq!(o.actions(), &[Action::Send { to: PeerId(0), msg: Msg::Grant }]);
        let mut o = out();
        c.on_message(PeerId(0), Msg::Release, &mut o);
        assert_eq!(o.actions(), &[Action::enter()]);
        assert_eq!(c.pending(), "");
        let mut o = out();
        c.on_cs_done(&mut o);
        assert_eq!(o.actions(), &[Action::Send { to: PeerId(2), msg: Msg::Grant }]);
    }

    #[test]
    fn release_from_a_non_holder_is_ignored() {
        let mut c = Centralized::new(&Config::new(2, 3));
        let mut o = out();
        c.on_message(PeerId(0), Msg::Request, &mut o);
        c.on_message(PeerId(1), Msg::Request, &mut o);
        let mut o = out();
        c.on_message(PeerId(1), Msg::Release, &mut o);
        assert!(o.actions().is_empty(), "w1 never held the section");
        assert_eq!(c.holder, Some(PeerId(0)));
    }

    #[test]
    fn unasked_grant_is_ignored() {
        let mut w0 = Centralized::new(&Config::new(0, 2));
        let mut o = out();
        w0.on_message(PeerId(1), Msg::Grant, &mut o);
        assert!(o.actions().is_empty());
    }

    #[test]
    fn coordinator_takes_the_section_back_from_a_dead_holder() {
        let mut c = Centralized::new(&Config::new(2, 3));
        let mut o = out();
        c.on_message(PeerId(0), Msg::Request, &mut o);
        c.on_message(PeerId(1), Msg::Request, &mut o);
        let mut o = out();
        c.on_peer_down(PeerId(0), &mut o);
        assert_eq!(o.actions(), &[Action::Send { to: PeerId(1), msg: Msg::Grant }]);
        // A dead waiter just leaves the queue.
        let mut c = Centralized::new(&Config::new(2, 3));
        let mut o = out();
        c.on_message(PeerId(0), Msg::Request, &mut o);
        c.on_message(PeerId(1), Msg::Request, &mut o);
        c.on_peer_down(PeerId(1), &mut out());
        let mut o = out();
        c.on_message(PeerId(0), Msg::Release, &mut o);
        assert!(o.actions().is_empty(), "w1 is gone: nobody to grant");
    }

    #[test]
    fn a_waiting_node_asks_a_restarted_coordinator_again() {
        let mut w0 = Centralized::new(&Config::new(0, 2));
        w0.on_want_cs(&mut out());
        let mut o = out();
        w0.on_peer_up(PeerId(1), &mut o);
        assert_eq!(o.actions(), &[Action::Send { to: PeerId(1), msg: Msg::Request }]);
    }

    #[test]
    fn pending_names_the_coordinator() {
        let mut w0 = Centralized::new(&Config::new(0, 4));
        w0.on_want_cs(&mut out());
        assert_eq!(w0.pending(), "waiting for GRANT from w3");
    }
}
