//! What the world reports as it goes: one [`WorldEvent`] for each thing that happens (a
//! message sent, delivered or lost, an application's call or what its node tells it, a
//! timer, a crash, a restart, news of a death), handed to the caller's observer as a
//! value. Nothing is formatted unless an observer asks: a search that visits millions of
//! states passes an observer that does nothing.
//!
//! `Display` gives the line the simulator prints for an event in its traces (and the
//! checker in its numbered steps). Those traces show what a node is told and what the
//! applications do; [`WorldEvent::is_note`] says which events they leave out (sends,
//! losses, and the event that broke the service's promise, which the failure names).

use std::fmt::{self, Debug};
use std::time::Duration;

use crate::algorithm::{Message, Node, PeerId};

/// What [`super::World::start`] and [`super::World::apply`] report to, for node type
/// `N`: each event as it happens, with the world's virtual time.
pub type Observer<'o, N> = dyn FnMut(Duration, &WorldEvent<'_, <N as Node>::Msg, <N as Node>::Timer>) + 'o;

/// What an application did, or was told by its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AppAct {
    /// It asks for the critical section.
    Wants,
    /// Its node lets it in.
    Enters,
    /// It leaves the critical section.
    Leaves,
    /// It calls an election.
    CallsElection,
    /// Its node accepts `leader` as elected in `term`.
    AcceptsLeader {
        /// The leader.
        leader: PeerId,
        /// Its term.
        term: u64,
    },
}

/// Why a message sent will never be delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lost {
    /// Its receiver was dead when it was sent: it never left.
    ReceiverDead,
    /// Its receiver crashed while it was in flight.
    ReceiverCrashed,
    /// Its sender restarted before it was delivered: the new life's connection replaces
    /// the old one, and what the old one carried is gone (as the runtime drops it).
    SenderRestarted,
    /// The network lost it in flight (a check's `--lose`): the `index`-th in flight on
    /// its channel.
    Network {
        /// Its place among the messages in flight on its channel.
        index: u32,
    },
}

/// One thing that happened in the world, with the message or timer it concerns borrowed
/// from the world (`M` and `T` are the node type's message and timer types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorldEvent<'a, M, T> {
    /// `from` sent `msg` to `to`; it is in flight on that channel, last in line (unless
    /// a [`WorldEvent::Lost`] with [`Lost::ReceiverDead`] follows at once).
    Sent {
        /// The sender.
        from: PeerId,
        /// The receiver.
        to: PeerId,
        /// The message.
        msg: &'a M,
    },
    /// A message sent will never be delivered. In flight, the oldest on its channel goes
    /// first: a channel's losses come oldest first.
    Lost {
        /// The sender.
        from: PeerId,
        /// The receiver.
        to: PeerId,
        /// The message.
        msg: &'a M,
        /// Why.
        why: Lost,
    },
    /// The `index`-th message in flight from `from` to `to` is delivered.
    Delivered {
        /// The sender.
        from: PeerId,
        /// The receiver.
        to: PeerId,
        /// Its place on the channel when it was taken (0: the oldest).
        index: u32,
        /// The message.
        msg: &'a M,
    },
    /// `node` hears that `peer` is down.
    HearsDown {
        /// The node told.
        node: PeerId,
        /// The node that is down.
        peer: PeerId,
    },
    /// `node` hears that `peer` is up (again, as a new incarnation).
    HearsUp {
        /// The node told.
        node: PeerId,
        /// The node that is up.
        peer: PeerId,
    },
    /// Application `node` did `act`, or was told it.
    App {
        /// The node.
        node: PeerId,
        /// What.
        act: AppAct,
    },
    /// Node `node` told its application `act`, which breaks the service's promise (two
    /// inside, two leaders for a term): the world fails with that failure next.
    Broke {
        /// The node.
        node: PeerId,
        /// What it told.
        act: AppAct,
    },
    /// Node `node`'s `timer` fires; `stale` when it had been reset or cancelled and fires
    /// once anyway.
    TimerFires {
        /// The node.
        node: PeerId,
        /// The timer.
        timer: &'a T,
        /// Reset or cancelled, fired once anyway.
        stale: bool,
    },
    /// Node `node` crashes.
    Crashes {
        /// The node.
        node: PeerId,
    },
    /// Node `node` starts again as `incarnation`.
    Restarts {
        /// The node.
        node: PeerId,
        /// Its new incarnation.
        incarnation: u32,
    },
}

impl<M, T> WorldEvent<'_, M, T> {
    /// Whether the simulator's traces show it: everything but sends and the losses that
    /// follow from another step. The act that broke the promise is shown too: a list of
    /// steps says "w1 enters the critical section" where two end up inside.
    pub fn is_note(&self) -> bool {
        match self {
            // A loss the network chose is a step of its own; the others follow from one.
            WorldEvent::Lost { why, .. } => matches!(why, Lost::Network { .. }),
            WorldEvent::Sent { .. } => false,
            _ => true,
        }
    }
}

impl fmt::Display for AppAct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppAct::Wants => f.write_str("wants the critical section"),
            AppAct::Enters => f.write_str("enters the critical section"),
            AppAct::Leaves => f.write_str("leaves the critical section"),
            AppAct::CallsElection => f.write_str("calls an election"),
            AppAct::AcceptsLeader { leader, term } => write!(f, "accepts {leader} as leader (term {term})"),
        }
    }
}

/// The line of the simulator's trace (see the module doc); sends and losses have lines
/// of their own that no trace of today prints.
impl<M: Message, T: Debug> fmt::Display for WorldEvent<'_, M, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorldEvent::Sent { from, to, msg } => write!(f, "{from} sends {to}: {}", msg.words()),
            WorldEvent::Lost { from, to, msg, why } => {
                let why = match why {
                    Lost::ReceiverDead => "its receiver is down",
                    Lost::ReceiverCrashed => "its receiver crashed",
                    Lost::SenderRestarted => "its sender restarted",
                    Lost::Network { .. } => return write!(f, "{from} -> {to}: {} is lost", msg.words()),
                };
                write!(f, "{from} -> {to}: {} is lost ({why})", msg.words())
            }
            WorldEvent::Delivered { from, to, msg, .. } => write!(f, "{from} -> {to}: {}", msg.words()),
            WorldEvent::HearsDown { node, peer } => write!(f, "{node} hears {peer} is down"),
            WorldEvent::HearsUp { node, peer } => write!(f, "{node} hears {peer} is up"),
            WorldEvent::App { node, act } | WorldEvent::Broke { node, act } => write!(f, "{node} {act}"),
            WorldEvent::TimerFires { node, timer, stale: false } => write!(f, "{node} timer {timer:?} fires"),
            WorldEvent::TimerFires { node, timer, stale: true } => {
                write!(f, "{node} timer {timer:?} fires (stale)")
            }
            WorldEvent::Crashes { node } => write!(f, "{node} crashes"),
            WorldEvent::Restarts { node, incarnation } => {
                write!(f, "{node} restarts (incarnation {incarnation})")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    enum Msg {
        Request { stamp: u64 },
    }

    impl Message for Msg {
        fn kind(&self) -> &str {
            "REQUEST"
        }
    }

    type E<'a> = WorldEvent<'a, Msg, &'static str>;

    #[test]
    fn each_note_reads_in_the_words_every_list_of_steps_uses() {
        let (w0, w1) = (PeerId(0), PeerId(1));
        let msg = Msg::Request { stamp: 3 };
        let app = |act| E::App { node: w1, act };
        let cases: Vec<(E, &str)> = vec![
            (E::Delivered { from: w0, to: w1, index: 0, msg: &msg }, r#"w0 -> w1: REQUEST {"stamp":3}"#),
            (E::Broke { node: w1, act: AppAct::Enters }, "w1 enters the critical section"),
            (E::HearsDown { node: w1, peer: w0 }, "w1 hears w0 is down"),
            (E::HearsUp { node: w1, peer: w0 }, "w1 hears w0 is up"),
            (app(AppAct::Wants), "w1 wants the critical section"),
            (app(AppAct::Enters), "w1 enters the critical section"),
            (app(AppAct::Leaves), "w1 leaves the critical section"),
            (app(AppAct::CallsElection), "w1 calls an election"),
            (app(AppAct::AcceptsLeader { leader: w0, term: 4 }), "w1 accepts w0 as leader (term 4)"),
            (E::TimerFires { node: w0, timer: &"Beat", stale: false }, "w0 timer \"Beat\" fires"),
            (E::TimerFires { node: w0, timer: &"Beat", stale: true }, "w0 timer \"Beat\" fires (stale)"),
            (E::Crashes { node: w1 }, "w1 crashes"),
            (E::Restarts { node: w1, incarnation: 2 }, "w1 restarts (incarnation 2)"),
        ];
        for (event, line) in cases {
            assert!(event.is_note(), "{event}");
            assert_eq!(event.to_string(), line);
        }
        let quiet = [
            E::Sent { from: w0, to: w1, msg: &msg },
            E::Lost { from: w0, to: w1, msg: &msg, why: Lost::ReceiverCrashed },
        ];
        for event in quiet {
            assert!(!event.is_note(), "{event}");
        }
    }
}
