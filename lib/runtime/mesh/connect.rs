//! Making the mesh's connections: dialing a peer (at the start, again with back-off
//! while its backlog is full, or lazily the first time something is written to it) with
//! the hello first, and accepting callers in batches into the room of connections
//! waiting for their hello, dropping the silent ones when it is full.

use std::io::{self, Write};

use mio::{Interest, Token};

use crate::algorithm::{Message, PeerId};
use crate::auth::Hello;
use crate::control::Endpoint;
use crate::wire::{self, FrameReader};

use super::stream::{Dialing, Stream};
use super::{
    connect_time, Mesh, MeshEvent, MeshTimer, PendingConn, Todo, ACCEPT_RETRY, DROP_LINES, LISTENER,
    PEER_BASE, PENDING_BASE, REDIAL_FIRST, REDIAL_MAX,
};

/// Whether a failed dial still found the peer listening, so that it is alive and is to
/// be dialed again, never reported down: its backlog was full (`WouldBlock`), or it
/// took our call and let it go before our hello was written (`BrokenPipe`,
/// `ConnectionReset`), as a listener flooded by silent callers does with the oldest of
/// them. A dead peer's socket refuses the call (`ConnectionRefused`: a Unix socket file
/// with nobody behind it, or a TCP port nobody listens on) or is gone (`NotFound`).
/// (A TCP backlog that is full makes no error: the kernel retries the handshake.)
fn listening(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset)
}

impl<M: Message> Mesh<M> {
    /// Dial `peer` at `to` at startup. False if it cannot be reached: the caller then
    /// tells the algorithm it is down (after `on_start`), and it will dial us when it
    /// starts again. A peer still listening ([`listening`]) is not failure: the dial is
    /// tried again later. Nor is a TCP dial still under way: its outcome comes later,
    /// from [`Mesh::flush_all`] (a refusal then reports the peer down).
    pub(crate) fn dial(&mut self, peer: PeerId, to: Endpoint) -> bool {
        self.peers[peer.index()].incarnation = self.announced[peer.index()];
        match self.connect(peer, &to) {
            Ok(()) => true,
            Err(e) if listening(&e) => {
                self.emit(MeshEvent::Log(match e.kind() {
                    io::ErrorKind::WouldBlock => format!("{peer}'s backlog is full; dialing again shortly"),
                    _ => format!("{peer} let our call go before our hello ({e}); dialing again shortly"),
                }));
                self.peers[peer.index()].redial = Some((to, REDIAL_FIRST));
                self.emit(MeshEvent::Timer { after: REDIAL_FIRST, timer: MeshTimer::Redial(peer) });
                true
            }
            Err(e) => {
                let line = self.unreachable_line(peer, &to, &e);
                self.emit(MeshEvent::Log(line));
                false
            }
        }
    }

    /// `peer` could not be reached: it is down until it dials us.
    pub(crate) fn unreachable(&mut self, peer: PeerId) {
        self.todo.push_back(Todo::Lose(peer));
    }

    fn unreachable_line(&self, peer: PeerId, to: &Endpoint, e: &io::Error) -> String {
        let at = match to {
            Endpoint::Unix(name) => self.dir.join(name).display().to_string(),
            Endpoint::Tcp(addr) => format!("TCP {addr}"),
        };
        format!("cannot connect to {peer} at {at}: {e}; it is down until it dials us")
    }

    /// Connect to `peer` and make the connection its channel, hello first; a TCP dial
    /// still under way waits in `dialing` ([`Mesh::dial_progress`]).
    fn connect(&mut self, peer: PeerId, to: &Endpoint) -> io::Result<()> {
        let mut stream = Stream::connect(&self.dir, to)?;
        match stream.dial_state() {
            Dialing::Connected => self.open_channel(peer, stream, false),
            Dialing::Failed(e) => Err(e),
            Dialing::InProgress => {
                // Writable says the handshake ended, either way.
                let token = Token(PEER_BASE + peer.index());
                self.registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
                self.peers[peer.index()].dialing = Some((stream, to.clone()));
                Ok(())
            }
        }
    }

    /// Make `stream`, connected to `peer`, its channel: hello first. `registered`: it
    /// is registered already, under the channel's token.
    fn open_channel(&mut self, peer: PeerId, mut stream: Stream, registered: bool) -> io::Result<()> {
        let mut hello = Vec::new();
        wire::encode(&mut hello, &Hello::new(&self.secret, self.me, peer, self.incarnation));
        // Say hello at once (a fresh socket has room for it): a listener drops callers
        // that stay silent too long, and this worker might be paused before it flushes.
        let mut sent = 0;
        while sent < hello.len() {
            match stream.write(&hello[sent..]) {
                Ok(0) => break,
                Ok(k) => sent += k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let token = Token(PEER_BASE + peer.index());
        if registered {
            self.registry.reregister(&mut stream, token, Interest::READABLE)?;
        } else {
            self.registry.register(&mut stream, token, Interest::READABLE)?;
        }
        let p = &mut self.peers[peer.index()];
        // The rest of the hello must go first, ahead of anything queued for this peer.
        // Nothing is written while there is no channel, so what is queued is whole frames.
        let mut out = hello[sent..].to_vec();
        p.frames_from = out.len() + p.frames_from.saturating_sub(p.written);
        out.extend_from_slice(&p.out[p.written..]);
        p.out = out;
        p.written = 0;
        p.stream = Some(stream);
        p.write_interest = false; // registered READABLE only
        p.had_channel = true;
        p.dialed = true;
        p.redial = None;
        self.channels_opened += 1;
        Ok(())
    }

    /// Where a TCP dial to `peer` stands, if one is under way: `Some(false)` still
    /// under way (or to be tried again), `Some(true)` failed and the peer is lost
    /// (`then` reports it down), `None` no dial waits (or it completed: the channel is
    /// open, hello first).
    pub(super) fn dial_progress(&mut self, peer: PeerId, then: &mut Vec<Todo<M>>) -> Option<bool> {
        let p = &mut self.peers[peer.index()];
        let state = p.dialing.as_ref()?.0.dial_state();
        if matches!(state, Dialing::InProgress) {
            return Some(false);
        }
        let (mut stream, to) = p.dialing.take()?;
        let result = match state {
            Dialing::Failed(e) => {
                let _ = self.registry.deregister(&mut stream);
                Err(e)
            }
            _ => self.open_channel(peer, stream, true),
        };
        match result {
            Ok(()) => None,
            Err(e) => self.dial_failed(peer, to, e, then),
        }
    }

    /// A dial of `peer` at `to` failed with `e`: dial again later if it is listening,
    /// or it is down ([`Mesh::dial_lazily`]'s answer).
    fn dial_failed(
        &mut self,
        peer: PeerId,
        to: Endpoint,
        e: io::Error,
        then: &mut Vec<Todo<M>>,
    ) -> Option<bool> {
        if listening(&e) {
            self.peers[peer.index()].redial = Some((to, REDIAL_FIRST));
            then.push(Todo::Emit(MeshEvent::Timer { after: REDIAL_FIRST, timer: MeshTimer::Redial(peer) }));
            return Some(false);
        }
        then.push(Todo::Emit(MeshEvent::Log(self.unreachable_line(peer, &to, &e))));
        then.push(Todo::Lose(peer));
        Some(true)
    }

    /// A lazily connected mesh has something for `peer`, which it has no channel to:
    /// dial it. `None` if the channel is there to write on (or a TCP dial is under way);
    /// otherwise whether the peer was lost (`then` reports it down).
    pub(super) fn dial_lazily(&mut self, peer: PeerId, then: &mut Vec<Todo<M>>) -> Option<bool> {
        let i = peer.index();
        let announced = self.announced[i];
        if announced > self.peers[i].incarnation {
            // A life this worker never spoke with has been replaced: what was queued was
            // meant for it, and the new one will dial us itself.
            then.push(Todo::Lose(peer));
            return Some(true);
        }
        // Where the supervisor said it listens; a run over Unix sockets may leave that
        // out, the name being the life's.
        let to = self.listening[i]
            .clone()
            .unwrap_or_else(|| Endpoint::Unix(crate::control::worker_socket(peer, announced)));
        match self.connect(peer, &to) {
            Ok(()) => None,
            Err(e) => self.dial_failed(peer, to, e, then),
        }
    }

    /// The `Redial` timer for `peer` fired.
    pub(super) fn redial(&mut self, peer: PeerId) {
        let p = &mut self.peers[peer.index()];
        let Some((to, wait)) = p.redial.take() else {
            return;
        };
        if p.stream.is_some() || p.dialing.is_some() || p.down {
            return; // it dialed us, or it died meanwhile
        }
        match self.connect(peer, &to) {
            Ok(()) => {}
            Err(e) if listening(&e) => {
                let next = (wait * 2).min(REDIAL_MAX);
                self.peers[peer.index()].redial = Some((to, next));
                self.emit(MeshEvent::Timer { after: next, timer: MeshTimer::Redial(peer) });
            }
            Err(e) => {
                let line = self.unreachable_line(peer, &to, &e);
                self.emit(MeshEvent::Log(line));
                self.todo.push_back(Todo::Lose(peer));
            }
        }
    }

    /// Accept the next caller of a batch (`left` to go, of which `refused` were refused
    /// and `evicted` silent ones dropped so far), then go on with the batch.
    pub(super) fn accept_one(
        &mut self,
        left: usize,
        mut refused: u64,
        mut evicted: u64,
        then: &mut Vec<Todo<M>>,
    ) {
        let more = |left: usize, refused, evicted| Todo::Accept { left: left - 1, refused, evicted };
        if left == 0 {
            return self.accepted(true, refused, evicted, then);
        }
        match self.listener.accept() {
            Ok(stream) => {
                if self.accept_failures > 0 {
                    let n = std::mem::take(&mut self.accept_failures);
                    then.push(Todo::Emit(MeshEvent::Log(format!(
                        "accepting connections again after {n} failed tries"
                    ))));
                }
                if self.pending_conns.len() >= self.max_pending {
                    if self.evict_oldest_silent() {
                        evicted += 1;
                    } else {
                        // Every waiting connection holds a proven hello: the newcomer goes.
                        refused += 1;
                        self.dropped_connections += 1;
                        drop(stream);
                        then.push(more(left, refused, evicted));
                        return;
                    }
                }
                self.add_pending(stream, then);
                then.push(more(left, refused, evicted));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.accepted(false, refused, evicted, then),
            Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted) => {
                then.push(more(left, refused, evicted));
            }
            Err(e) => {
                // EMFILE, ENFILE, ENOBUFS…: the callers stay in the backlog. Try again
                // shortly, when hello deadlines may have freed descriptors; a failing
                // accept must neither end the worker nor spin.
                if self.accept_failures == 0 {
                    then.push(Todo::Emit(MeshEvent::Log(format!(
                        "accepting a connection failed: {e}; trying again every {} ms",
                        ACCEPT_RETRY.as_millis()
                    ))));
                }
                self.accept_failures += 1;
                if !self.accept_retry {
                    self.accept_retry = true;
                    then.push(Todo::Emit(MeshEvent::Timer { after: ACCEPT_RETRY, timer: MeshTimer::Accept }));
                }
                self.accepted(false, refused, evicted, then);
            }
        }
    }

    /// The end of an accept batch: serve the listener again if callers may be left.
    fn accepted(&mut self, more: bool, refused: u64, evicted: u64, then: &mut Vec<Todo<M>>) {
        if more {
            then.push(Todo::Emit(MeshEvent::Again(LISTENER)));
        }
        let waiting = self.pending_conns.len();
        if evicted > 0 {
            self.log_drop(
                format!("dropped {evicted} silent connection(s) to make room for new callers: {waiting} waiting for their hello"),
                then,
            );
        }
        if refused > 0 {
            self.log_drop(
                format!("refused {refused} connection(s): {waiting} already waiting, each with a hello"),
                then,
            );
        }
    }

    /// Drop the connection that has waited longest without saying anything, to make
    /// room; false if every waiting connection has said a proven hello (held for its
    /// announcement).
    fn evict_oldest_silent(&mut self) -> bool {
        // Tokens are handed out in order: the smallest is the oldest.
        let oldest = self.pending_conns.iter().filter(|(_, pc)| pc.held.is_none()).map(|(t, _)| *t).min();
        let Some(token) = oldest else { return false };
        if let Some(mut pc) = self.pending_conns.remove(&token) {
            let _ = self.registry.deregister(&mut pc.stream);
            self.dropped_connections += 1;
        }
        true
    }

    /// A line about a dropped connection: the first [`DROP_LINES`], then one saying the
    /// rest are only counted, so a flood of callers cannot flood stderr.
    pub(super) fn log_drop(&mut self, what: String, then: &mut Vec<Todo<M>>) {
        self.drops_logged += 1;
        if self.drops_logged <= DROP_LINES {
            then.push(Todo::Emit(MeshEvent::Log(what)));
        }
        if self.drops_logged == DROP_LINES {
            then.push(Todo::Emit(MeshEvent::Log(
                "further dropped connections are counted, not logged".into(),
            )));
        }
    }

    pub(super) fn add_pending(&mut self, mut stream: Stream, then: &mut Vec<Todo<M>>) {
        let token = Token(PENDING_BASE + self.next_pending);
        self.next_pending += 1;
        if let Err(e) = self.registry.register(&mut stream, token, Interest::READABLE) {
            then.push(Todo::Emit(MeshEvent::Log(format!(
                "dropping a connection that cannot be polled: {e}"
            ))));
            self.dropped_connections += 1;
            return;
        }
        self.pending_conns.insert(token, PendingConn { stream, reader: FrameReader::default(), held: None });
        then.push(Todo::Emit(MeshEvent::Timer {
            after: connect_time(self.workers),
            timer: MeshTimer::HelloDue(token),
        }));
        // Data may already be waiting; edge-triggered polling would not say so.
        self.pending_readable(token, then)
    }

    pub(super) fn drop_pending(&mut self, token: Token, why: String, then: &mut Vec<Todo<M>>) {
        if let Some(mut pc) = self.pending_conns.remove(&token) {
            let _ = self.registry.deregister(&mut pc.stream);
            self.dropped_connections += 1;
            self.log_drop(why, then);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_that_lets_our_call_go_is_dialed_again_and_only_a_refusal_is_down() {
        for kind in [io::ErrorKind::WouldBlock, io::ErrorKind::BrokenPipe, io::ErrorKind::ConnectionReset] {
            assert!(listening(&io::Error::from(kind)), "{kind:?}: the peer is alive");
        }
        for kind in
            [io::ErrorKind::ConnectionRefused, io::ErrorKind::NotFound, io::ErrorKind::PermissionDenied]
        {
            assert!(!listening(&io::Error::from(kind)), "{kind:?}: nobody is listening");
        }
    }

    /// A real refusal: a socket file with no listener behind it (a dead worker's).
    #[test]
    fn a_socket_nobody_listens_on_refuses_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w9.0.sock");
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let e = std::os::unix::net::UnixStream::connect(&path).unwrap_err();
        assert!(!listening(&e), "{e}");
    }
}
