//! The hellos: reading a caller's first frame, believing it (it proves the run's
//! secret, is meant for this worker and names a peer), holding one from a life the
//! supervisor has not announced yet, refusing a second claim on a peer's life, and
//! adopting a believed connection as its peer's channel (or, in a lazily connected
//! mesh, as its second channel).

use mio::{Interest, Token};

use crate::algorithm::{Message, PeerId};
use crate::auth::Hello;
use crate::wire::{self, Fill, FrameReader};

use super::{connect_time, Mesh, MeshEvent, PendingConn, Stream, Todo, EXTRA_BASE, PEER_BASE};
use crate::control::Endpoint;

impl<M: Message> Mesh<M> {
    /// The `HelloDue` timer of a pending connection fired.
    pub(super) fn hello_overdue(&mut self, token: Token) {
        let secs = connect_time(self.workers).as_secs_f64();
        let mut then = Vec::new();
        // The hello may be in the socket with its readiness not served yet: a poll returns
        // a few hundred events, and a busy worker fires its timers after serving those, so
        // at a few hundred peers a caller that did speak would be dropped. Read it first.
        if self.pending_conns.get(&token).is_some_and(|pc| pc.held.is_none()) {
            self.pending_readable(token, &mut then);
        }
        let held = self.pending_conns.get(&token).and_then(|pc| pc.held.clone());
        let why = match held {
            Some(h) => format!(
                "dropping a connection whose hello claims {}'s incarnation {}, which the supervisor did not announce within {secs} s",
                h.from, h.incarnation
            ),
            None => format!("dropping a connection that sent no hello within {secs} s"),
        };
        self.drop_pending(token, why, &mut then);
        self.todo.extend(then);
    }

    /// A connection that has not said hello yet.
    pub(super) fn pending_readable(&mut self, token: Token, then: &mut Vec<Todo<M>>) {
        let Some(pc) = self.pending_conns.get_mut(&token) else {
            return;
        };
        if pc.held.is_some() {
            // Nothing more is read before the hello is believed: the frames behind it
            // wait in the socket, in order.
            return;
        }
        let fill = pc.reader.fill(&mut pc.stream);
        let hello = match pc.reader.next_frame() {
            Ok(Some(body)) => {
                Some(wire::decode::<Hello>(body).map_err(|e| format!("its first frame is not a hello ({e})")))
            }
            Ok(None) => None,
            Err(e) => Some(Err(e.to_string())),
        };
        let hello = match (hello, fill) {
            (Some(h), _) => h,
            (None, Ok(Fill::WouldBlock)) => return,
            (None, Ok(Fill::Budget)) => {
                then.push(Todo::Emit(MeshEvent::Again(token)));
                return;
            }
            (None, Ok(Fill::Eof)) => match pc.reader.finish() {
                Ok(()) => Err("it closed".to_string()),
                Err(e) => Err(e.to_string()),
            },
            (None, Err(e)) => Err(e.to_string()),
        };
        let hello = match hello {
            Ok(h) => h,
            Err(why) => {
                return self.drop_pending(
                    token,
                    format!("dropping a connection before its hello: {why}"),
                    then,
                );
            }
        };
        let (from, to, inc) = (hello.from, hello.to, hello.incarnation);
        let wrong = if !hello.proves(&self.secret) {
            Some(format!("claims to be {from} (incarnation {inc}) without the run's secret"))
        } else if to != self.me {
            Some(format!("from {from} is addressed to {to}"))
        } else if from.0 >= self.workers || from == self.me {
            Some(format!("names {from}, which is not a peer"))
        } else {
            None
        };
        if let Some(why) = wrong {
            return self.drop_pending(token, format!("dropping a connection whose hello {why}"), then);
        }
        self.consider(token, hello, then)
    }

    /// A proven hello arrived on pending connection `token`: adopt it, hold it until the
    /// supervisor announces its incarnation, or refuse it.
    pub(super) fn consider(&mut self, token: Token, hello: Hello, then: &mut Vec<Todo<M>>) {
        let (peer, inc) = (hello.from, hello.incarnation);
        let announced = self.announced[peer.index()];
        let p = &self.peers[peer.index()];
        if inc > announced {
            // Its notice may still be on the way: wait for it (see `announce`).
            if let Some(pc) = self.pending_conns.get_mut(&token) {
                pc.held = Some(hello);
            }
            return;
        }
        let ours = (p.stream.is_some() && p.dialed) || p.dialing.is_some();
        if self.lazy && inc == p.incarnation && ours && p.extra.is_none() {
            // Both dialed at once: its connection is the one it writes on (ours may still
            // be under way).
            if let Some(PendingConn { stream, reader, .. }) = self.pending_conns.remove(&token) {
                return self.add_extra(peer, stream, reader, then);
            }
        }
        let refusal = if inc < announced || inc < p.incarnation {
            Some(format!("claims {peer}'s incarnation {inc}, but the supervisor announced {announced}"))
        } else if inc == p.incarnation && p.had_channel {
            let state = if p.stream.is_some() { "open" } else { "closed" };
            Some(format!("claims {peer} (incarnation {inc}), whose channel is already {state}"))
        } else {
            None
        };
        if let Some(why) = refusal {
            return self.drop_pending(token, format!("refusing a connection whose hello {why}"), then);
        }
        if let Some(PendingConn { stream, reader, .. }) = self.pending_conns.remove(&token) {
            then.push(Todo::Adopt(hello, stream, reader));
        }
    }

    /// The supervisor says worker `peer` now lives as `incarnation`, listening on
    /// `endpoint`: believe it, and take up any hello from that life that was waiting for
    /// this.
    pub(crate) fn announce(&mut self, peer: PeerId, incarnation: u32, endpoint: Endpoint) {
        if peer.index() >= self.announced.len() || peer == self.me {
            self.emit(MeshEvent::Log(format!("ignoring an announcement about {peer}, which is not a peer")));
            return;
        }
        let slot = &mut self.announced[peer.index()];
        if incarnation >= *slot {
            self.listening[peer.index()] = Some(endpoint);
        }
        *slot = (*slot).max(incarnation);
        let waiting: Vec<Token> = self
            .pending_conns
            .iter()
            .filter(|(_, pc)| {
                pc.held.as_ref().is_some_and(|h| h.from == peer && h.incarnation <= incarnation)
            })
            .map(|(t, _)| *t)
            .collect();
        for token in waiting {
            if let Some(hello) = self.pending_conns.get_mut(&token).and_then(|pc| pc.held.take()) {
                self.todo.push_back(Todo::Consider(token, hello));
            }
        }
    }

    /// A believed hello from `hello.from`: make its connection that peer's channel. A
    /// newer life replaces the old one, whose last frames are delivered first.
    pub(super) fn adopt(
        &mut self,
        hello: Hello,
        stream: Stream,
        reader: FrameReader,
        then: &mut Vec<Todo<M>>,
    ) {
        let peer = hello.from;
        if hello.incarnation > self.peers[peer.index()].incarnation {
            // A new incarnation with fresh state: the old one is gone, whether or not its
            // channel has closed yet, and so is everything queued for it.
            then.push(Todo::Read(peer));
            then.push(Todo::ReadExtra(peer));
            then.push(Todo::Lose(peer));
        }
        then.push(Todo::Install(hello, stream, reader));
    }

    pub(super) fn install(
        &mut self,
        hello: Hello,
        mut stream: Stream,
        reader: FrameReader,
        then: &mut Vec<Todo<M>>,
    ) {
        let peer = hello.from;
        let idx = peer.index();
        let token = Token(PEER_BASE + idx);
        if let Err(e) = self.registry.reregister(&mut stream, token, Interest::READABLE) {
            let _ = self.registry.deregister(&mut stream);
            self.dropped_connections += 1;
            then.push(Todo::Emit(MeshEvent::Log(format!("dropping {peer}'s connection: {e}"))));
            then.push(Todo::Lose(peer));
            return;
        }
        let p = &mut self.peers[idx];
        p.stream = Some(stream);
        p.write_interest = false; // registered READABLE only
        p.dialed = false;
        self.channels_opened += 1;
        p.reader = reader;
        p.incarnation = hello.incarnation;
        p.had_channel = true;
        p.redial = None;
        let was_down = std::mem::replace(&mut p.down, false);
        then.push(Todo::Emit(MeshEvent::Up { peer, was_down }));
        // Frames that arrived right behind the hello.
        then.push(Todo::Read(peer));
    }

    /// The peer's own connection, when both dialed each other at once: read it beside
    /// the channel this worker dialed.
    fn add_extra(&mut self, peer: PeerId, mut stream: Stream, reader: FrameReader, then: &mut Vec<Todo<M>>) {
        let idx = peer.index();
        if let Err(e) = self.registry.reregister(&mut stream, Token(EXTRA_BASE + idx), Interest::READABLE) {
            let _ = self.registry.deregister(&mut stream);
            self.dropped_connections += 1;
            then.push(Todo::Emit(MeshEvent::Log(format!("dropping {peer}'s connection: {e}"))));
            then.push(Todo::Lose(peer));
            return;
        }
        self.peers[idx].extra = Some((stream, reader));
        self.channels_opened += 1;
        // Frames that arrived right behind the hello.
        then.push(Todo::ReadExtra(peer));
    }
}
