//! The mesh: one reliable FIFO stream per pair of workers (a Unix socket or a TCP
//! connection, `stream.rs`), framed by [`crate::wire`]. This worker listens on its own
//! socket and accepts callers, who must
//! say hello first; dials the peers the supervisor names (again, with back-off, while a
//! backlog is full); believes, holds or refuses each hello; reads every peer's frames;
//! and writes each peer's outgoing queue without ever blocking ([`Mesh::send`] frames a
//! message and queues it, [`Mesh::flush_all`] writes). Whatever ends a channel ends in a [`MeshEvent::Down`];
//! so only the peer's death (its end of the stream closed or reset, a dial refused) or a
//! newer life may end one, never this worker's refusal of what a live peer sent.
//!
//! This file holds the component, its events and its state; its jobs are files of their
//! own: dialing and accepting connections (`connect.rs`), believing, holding or refusing
//! hellos (`hello.rs`), the channels: reading frames, queueing and writing them,
//! losing a peer (`channel.rs`), and the byte streams under it all (`stream.rs`).
//!
//! # A component in the host's shape
//!
//! [`Mesh`] owns its sockets and its state and knows nothing of the node, the detector
//! or the application. The loop tells it what happened ([`Mesh::readable`] for one of
//! its poll tokens, [`Mesh::timer`] for one of its timers, [`Mesh::announce`],
//! [`Mesh::dial`], [`Mesh::send`], [`Mesh::flush_all`]) and then takes what came of it, one
//! [`MeshEvent`] at a time, from [`Mesh::poll_event`]: a message, a peer up or down, a
//! breach of the model, a timer to set, a source to serve again, a line to log. Work
//! that must follow what the loop does with an event (closing a channel after its last
//! messages were delivered and answered, adopting a newer life after the old one's
//! messages) waits in the mesh's own queue until the loop asks for the next event, so
//! the order is the one a synchronous call would give. The tests at the bottom drive a
//! mesh over real sockets in one thread, with no process and no node.
//!
//!
//! # Connections
//!
//! Worker i dials every worker below it (a restarted worker dials every live worker);
//! the supervisor orders the dials so that of any two workers only one dials the other.
//! A lazily connected mesh ([`Mesh::connect_lazily`], for algorithms that talk to few
//! peers) dials nobody at the start, but a peer the first time it has something to
//! write to it; a peer never written to nor heard from holds no descriptor, and is
//! never reported down. Two such workers may dial each other at once: each then writes
//! on the connection it dialed and reads the other's as a second channel (either one
//! closing is the peer's death), so each direction is still one FIFO stream.
//! Every connection opens with a [`Hello`] from the caller that proves the run's secret
//! ([`crate::auth`]): who is calling, whom, and as which incarnation.
//!
//! - A connection that has not said hello within [`connect_time`] is dropped, with a
//!   line on stderr. At most [`max_pending`] connections may be waiting for their hello,
//!   so idle callers cannot use up this process's descriptors. When a new caller finds
//!   the room full, the silent caller that has waited longest is dropped to make room
//!   (counted in `dropped_connections`, one line per burst): a caller's hello is read
//!   the moment it is accepted, so a worker dialing amid a flood of silent connections
//!   is still heard, where refusing newcomers would shut it out for good. Lines about
//!   dropped connections stop after [`DROP_LINES`]; the rest are only counted. When
//!   `accept` fails anyway (EMFILE, ENFILE, ENOBUFS…),
//!   the worker says so once, leaves the callers in the backlog and tries again after
//!   100 ms; ECONNABORTED is skipped. Accept errors never end the worker.
//! - A hello that is not one, does not prove the secret, is meant for another worker,
//!   or names a stranger (an id outside the run, or our own) is dropped with one line on
//!   stderr naming what was wrong.
//! - The supervisor is the authority on incarnations: `Start` says which life of each
//!   worker is current, and `Incarnation` announces each restart. A hello from an older
//!   life is dropped. A hello from a newer life than announced is held (it still counts
//!   against the pending cap and its deadline) until the announcement arrives, since
//!   the restarted worker's hello and the supervisor's notice travel on different
//!   sockets and either may come first. A second connection claiming a peer whose
//!   current life already has, or had, a channel is refused, never adopted.
//! - A dial that fails (the peer just died, or is not listening yet) is no error: the
//!   peer is down for the algorithm, with a line on stderr, and it will dial us if it
//!   starts again. A dial that finds the peer's backlog full is tried again, with
//!   back-off, until it succeeds or the peer dials us. A TCP dial completes later: the
//!   connection waits, queueing what is written to the peer, until its socket is
//!   writable, and then it is a channel (hello first) or a failed dial as above.
//!
//! # What the algorithm is told about peers
//!
//! This is what the channels say; the detector (`detector.rs`) decides what of it the
//! algorithm is told: all of it under `--detector perfect` (the default of `run`),
//! nothing under `none`, and under `heartbeat` only its own suspicions. Every peer starts
//! *up* (messages to one that has not connected yet are queued). The perfect detector's
//! algorithm then sees, per peer, strictly alternating events, each exactly once:
//! `on_peer_down` when the channel closes, a dial fails, or (for a restarted worker) the
//! supervisor did not list the peer to dial (dead, or not started yet: either way it
//! will dial us when it starts); `on_peer_up` when a peer that was down connects again.
//! An announced hello from a newer incarnation than the one the algorithm knows is
//! reported as `on_peer_down` (if it was not already; what the old life sent is
//! delivered first) followed by `on_peer_up`: the peer has fresh state, whatever the
//! algorithm believed. Messages to a peer that is down are counted
//! as sent and discarded, so a new incarnation never receives what was meant for the
//! old one; so is whatever was still queued for it when it went down. The trace has a
//! DROP line for each (`why=down`, `why=peer-down`): the other way a message can vanish,
//! written to the socket and never read by a peer that was killed, nobody can see.
//!
//! # Bad input
//!
//! A frame whose body does not decode, or that is misaddressed (wrong sender or
//! receiver), is dropped and counted in `bad_frames`, with a line on stderr (the first
//! [`BAD_FRAME_LINES`], then one line saying the rest are only counted); the length
//! header kept the stream in step, so the connection is kept and the next frame is read
//! normally. A length above [`wire::MAX_FRAME`] means the stream cannot be read past
//! it; but the peer proved itself and is alive, so closing the channel would tell the
//! algorithm a live peer is down, a lie the perfect detector must never tell. The worker
//! stops instead ([`ModelBreach`](super::ModelBreach): the run fails, naming the peer),
//! the channel open. For the same reason [`Mesh::frame`] refuses a message whose frame
//! would be over the cap: that is a breach of the sender; so is a message that would
//! take what the worker holds unwritten for its peers past [`MAX_UNSENT`] (peers that
//! read slower than it sends), since a queue without end is no channel the runtime can
//! keep. A stream that ends inside a frame loses that partial frame (a line on stderr)
//! and is a closed channel like any other: its peer died. Before its hello, a
//! connection has proved nothing, and any bad input drops it.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::Duration;

use mio::{Interest, Registry, Token};

use crate::algorithm::{Message, PeerId};
use crate::auth::{Hello, Secret};
use crate::control::Endpoint;
use crate::netfaults::Fate;
use crate::wire::{Envelope, FrameReader};

mod channel;
mod connect;
mod hello;
mod stream;
pub(crate) use channel::messages;
use stream::{Listener, Stream};

/// How long an accepted connection may stay silent before its hello, at the least; a
/// run of many workers allows `connect_time`.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(2);

/// How long making the mesh may take: [`HELLO_DEADLINE`], and 20 ms more per worker (an
/// all-to-all mesh of 256 took 2.5 s on a loaded 2-core machine, and at 768 a caller's
/// hello came more than 2 s after its connect: hundreds of processes share the CPUs).
/// An accepted connection may wait this long for its hello; an initiator waits at most
/// this long for its mesh before it holds its election, and a peer not heard from since
/// the start is given this long more before it is suspected.
pub fn connect_time(workers: u32) -> Duration {
    HELLO_DEADLINE + Duration::from_millis(20).saturating_mul(workers)
}
/// How soon to try `accept` again after it failed (EMFILE and the like).
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// Connections accepted in one go before the loop serves everyone else.
const ACCEPT_BATCH: usize = 256;
/// First and longest wait before dialing again a peer whose backlog was full.
const REDIAL_FIRST: Duration = Duration::from_millis(20);
const REDIAL_MAX: Duration = Duration::from_secs(1);
/// The most bytes a worker holds for its peers, written to none of them yet: past it, a
/// message is a [`ModelBreach`](super::ModelBreach) (the runtime cannot carry it), never
/// a queue that grows without end.
pub const MAX_UNSENT: usize = 64 << 20;
/// Bad frames logged one by one; after that they are only counted.
pub const BAD_FRAME_LINES: u64 = 20;
/// Dropped or refused connections logged one by one; after that they are only counted.
pub const DROP_LINES: u64 = 50;

/// The listening socket's poll token.
pub(super) const LISTENER: Token = Token(0);
/// A peer's channel: `PEER_BASE + id`.
const PEER_BASE: usize = 1 << 20;
/// A peer's second channel, read only (see [`Mesh::connect_lazily`]): `EXTRA_BASE + id`.
const EXTRA_BASE: usize = 1 << 22;
/// A connection that has not said hello yet: `PENDING_BASE + n`.
const PENDING_BASE: usize = 1 << 24;

/// How many accepted connections may wait for their hello at once: room for every peer
/// to dial at the same moment, twice over.
pub fn max_pending(workers: u32) -> usize {
    2 * workers as usize + 16
}

/// Whether `token` is one of the mesh's sources (the listener, a peer's channel, a
/// connection waiting for its hello).
pub(super) fn is_mesh(token: Token) -> bool {
    token == LISTENER || token.0 >= PEER_BASE
}

/// Whether `token` is a peer's channel.
pub(super) fn is_channel(token: Token) -> bool {
    (PEER_BASE..PENDING_BASE).contains(&token.0)
}

/// A timer the mesh asks the loop to set, and gets back in [`Mesh::timer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum MeshTimer {
    /// A pending connection must have said hello by now.
    HelloDue(Token),
    /// Try `accept` again.
    Accept,
    /// Dial this peer again.
    Redial(PeerId),
}

/// What came of what the loop told the mesh, in the order it must be acted on.
#[derive(Debug)]
pub(super) enum MeshEvent<M> {
    /// An envelope from `from` to this worker, in the channel's order (a heartbeat has
    /// no message).
    Message { from: PeerId, envelope: Envelope<Option<M>> },
    /// Frames came from `peer`: a sign of life, given before the read's messages.
    Heard(PeerId),
    /// `peer` has a channel again; `was_down`: it was down until now.
    Up { peer: PeerId, was_down: bool },
    /// `peer` is gone (its channel closed, it cannot be dialed, or a newer life replaces
    /// it): `unsent` are the whole frames queued for it that never left; `was_down`: it
    /// was down already.
    Down { peer: PeerId, unsent: Vec<u8>, was_down: bool },
    /// A live peer sent what the runtime must refuse: the model is broken, the line says
    /// how.
    Breach(String),
    /// Set `timer` to fire `after` from now.
    Timer { after: Duration, timer: MeshTimer },
    /// `token`'s read budget ran out: serve it again on the next turn of the loop.
    Again(Token),
    /// A line for stderr.
    Log(String),
}

/// What became of an envelope handed to [`Mesh::send`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// In its peer's queue: the loop's next [`Mesh::flush_all`] writes it.
    Queued,
    /// Not sent: its peer is down, and a new life starts afresh.
    Down,
    /// The network faults have it: held by a partition, delayed or lost (never
    /// [`Fate::Now`], which is queued).
    Kept(Fate),
}

/// Work the mesh still has to do, in order, before or between the events it gives.
enum Todo<M> {
    Emit(MeshEvent<M>),
    /// Accept the next caller of this batch (`left` to go).
    Accept {
        left: usize,
        refused: u64,
        evicted: u64,
    },
    /// Weigh a proven hello on a pending connection.
    Consider(Token, Hello),
    /// Make a believed hello's connection its peer's channel.
    Adopt(Hello, Stream, FrameReader),
    /// The same, once any older life is gone.
    Install(Hello, Stream, FrameReader),
    /// Read what the peer's channel has.
    Read(PeerId),
    /// Read what the peer's second channel has (a lazily connected mesh's).
    ReadExtra(PeerId),
    /// As `Read` (`ReadExtra` if true), for a readiness event that did not report the
    /// peer's end: a short read means the channel is drained.
    ReadEdge(PeerId, bool),
    /// The peer is gone.
    Lose(PeerId),
    /// Write the queues of this peer and every one after it.
    Flush(PeerId),
}

/// One peer as the mesh sees it: its channel, what is queued for it, and which of its
/// lives the algorithm knows.
#[derive(Default)]
struct Peer {
    /// The channel: we write on it and read from it.
    stream: Option<Stream>,
    /// A dial of ours still under way (TCP), and where to: it becomes `stream` when it
    /// completes. What is written to the peer meanwhile waits in `out`.
    dialing: Option<(Stream, Endpoint)>,
    reader: FrameReader,
    out: Vec<u8>,
    written: usize,
    /// Where in `out` a frame starts with whole frames from there on: 0, or just past
    /// the rest of a hello, so that a lost channel can name each message it throws away.
    frames_from: usize,
    /// The peer's incarnation as far as the algorithm knows.
    incarnation: u32,
    /// That incarnation has had a channel (it may have closed since): a later
    /// connection claiming it is refused.
    had_channel: bool,
    /// The algorithm was told this peer is down, and not since that it is back.
    down: bool,
    /// A dial that found the backlog full, to try again: where, and the next wait.
    redial: Option<(Endpoint, Duration)>,
    /// `stream` is registered for WRITABLE too: only while `out` is backed up, because
    /// every read by the peer would otherwise wake this process for nothing.
    write_interest: bool,
    /// `stream` is a connection this worker dialed (not one it accepted).
    dialed: bool,
    /// Lazily connected meshes only: the peer's own dialed connection, when both dialed
    /// each other at once. Read only: each side writes on the one it dialed.
    extra: Option<(Stream, FrameReader)>,
}

/// An accepted connection waiting for its hello.
struct PendingConn {
    stream: Stream,
    reader: FrameReader,
    /// A proven hello from a life of its peer the supervisor has not announced yet.
    held: Option<Hello>,
}

/// The mesh of one worker, `me`: the listening socket, a [`Peer`] per worker, the
/// connections still waiting for their hello, which life of each worker the supervisor
/// announced, and the work and events not yet handed to the loop. `M` is the node's
/// message type.
pub(super) struct Mesh<M> {
    me: PeerId,
    /// This worker's own incarnation, which its hellos give.
    incarnation: u32,
    workers: u32,
    /// The run's secret, which every hello proves.
    secret: Secret,
    /// Where this worker's own poll registers the mesh's sockets.
    registry: Registry,
    /// Each worker's current incarnation, as the supervisor announced it.
    announced: Vec<u32>,
    /// Where each worker's announced life listens, as far as the supervisor said.
    listening: Vec<Option<Endpoint>>,
    listener: Listener,
    /// The run directory, where Unix socket names are.
    dir: PathBuf,
    peers: Vec<Peer>,
    pending_conns: HashMap<Token, PendingConn>,
    next_pending: usize,
    max_pending: usize,
    /// An `Accept` timer is set.
    accept_retry: bool,
    /// `accept` failures in a row (logged when the streak starts and when it ends).
    accept_failures: u64,
    /// Bad frames logged so far.
    bad_logged: u64,
    /// Lines about dropped connections so far.
    drops_logged: u64,
    /// Frames dropped as malformed or misaddressed (`bad_frames` in the statistics).
    pub(super) bad_frames: u64,
    /// Connections dropped or refused (`dropped_connections` in the statistics).
    pub(super) dropped_connections: u64,
    /// Connect to a peer only when there is something to write to it
    /// ([`Mesh::connect_lazily`]).
    lazy: bool,
    /// Channels this life has made or adopted (a lazily connected mesh's fan-out).
    pub(super) channels_opened: u64,
    todo: VecDeque<Todo<M>>,
    /// The frame of the message being sent, kept to save an allocation each.
    scratch: Vec<u8>,
    /// What one piece of work led to ([`Mesh::poll_event`]), and the envelopes one read
    /// took in: kept, empty, between uses, to save allocations per message.
    then: Vec<Todo<M>>,
    inbox: Vec<Envelope<Option<M>>>,
}

impl<M: Message> Mesh<M> {
    /// Listen on `on` (a Unix socket's name in the run directory `dir`, where a stale
    /// socket file is removed first, or a TCP address) as worker `me`, life
    /// `incarnation`, of `workers`, registering every socket with `registry`.
    pub(super) fn listen(
        registry: Registry,
        dir: PathBuf,
        on: &Endpoint,
        me: PeerId,
        incarnation: u32,
        workers: u32,
        secret: Secret,
    ) -> anyhow::Result<Mesh<M>> {
        let where_ = || match on {
            Endpoint::Unix(name) => dir.join(name).display().to_string(),
            Endpoint::Tcp(addr) => format!("TCP {addr}"),
        };
        let mut listener =
            Listener::bind(&dir, on).map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", where_()))?;
        registry.register(&mut listener, LISTENER, Interest::READABLE)?;
        let n = workers as usize;
        Ok(Mesh {
            me,
            incarnation,
            workers,
            secret,
            registry,
            announced: vec![0; n],
            listening: vec![None; n],
            listener,
            dir,
            peers: (0..n).map(|_| Peer::default()).collect(),
            pending_conns: HashMap::new(),
            next_pending: 0,
            max_pending: max_pending(workers),
            accept_retry: false,
            accept_failures: 0,
            bad_logged: 0,
            drops_logged: 0,
            bad_frames: 0,
            dropped_connections: 0,
            lazy: false,
            channels_opened: 0,
            todo: VecDeque::new(),
            scratch: Vec::new(),
            then: Vec::new(),
            inbox: Vec::new(),
        })
    }

    /// The next thing the loop must act on, doing the mesh's own work up to it; `None`
    /// when there is nothing left.
    pub(super) fn poll_event(&mut self) -> Option<MeshEvent<M>> {
        loop {
            let todo = self.todo.pop_front()?;
            // A buffer that lives on: no allocation per message read.
            let mut then = std::mem::take(&mut self.then);
            match todo {
                Todo::Emit(event) => return Some(event),
                Todo::Accept { left, refused, evicted } => self.accept_one(left, refused, evicted, &mut then),
                Todo::Consider(token, hello) => self.consider(token, hello, &mut then),
                Todo::Adopt(hello, stream, reader) => self.adopt(hello, stream, reader, &mut then),
                Todo::Install(hello, stream, reader) => self.install(hello, stream, reader, &mut then),
                Todo::Read(peer) => self.read(peer, false, false, &mut then),
                Todo::ReadExtra(peer) => self.read(peer, true, false, &mut then),
                Todo::ReadEdge(peer, extra) => self.read(peer, extra, true, &mut then),
                Todo::Lose(peer) => self.lose(peer, &mut then),
                Todo::Flush(peer) => self.flush(peer, &mut then),
            }
            // What that work led to comes before whatever was already waiting, as the
            // rest of a synchronous call would.
            for todo in then.drain(..).rev() {
                self.todo.push_front(todo);
            }
            self.then = then;
        }
    }

    fn emit(&mut self, event: MeshEvent<M>) {
        self.todo.push_back(Todo::Emit(event));
    }

    /// Connect to a peer the first time something is written to it, not at the start:
    /// a worker of an algorithm that talks to few peers then holds only the channels it
    /// uses. The peer is dialed where the supervisor's `Start` (or a restart's
    /// `Incarnation`) said the announced life listens (all first lives are listening
    /// before any worker starts). If both dial each other at once, each keeps
    /// writing on the connection it dialed and reads the other's as a second channel,
    /// so each direction stays one FIFO stream; a third connection is refused as ever.
    pub(super) fn connect_lazily(&mut self) {
        self.lazy = true;
    }

    /// What this worker listens on, as bound (for TCP, the port the kernel gave).
    pub(super) fn endpoint(&self) -> std::io::Result<Endpoint> {
        self.listener.endpoint()
    }

    /// The supervisor's `Start`: the current life of each worker, and where it listens.
    pub(super) fn set_announced(&mut self, incarnations: Vec<u32>, listening: Vec<Option<Endpoint>>) {
        for (p, inc) in incarnations.into_iter().enumerate().take(self.announced.len()) {
            self.announced[p] = inc;
        }
        for (p, at) in listening.into_iter().enumerate().take(self.listening.len()) {
            self.listening[p] = at;
        }
    }

    /// The algorithm was told `peer` is down and not since that it is back.
    pub(super) fn is_down(&self, peer: PeerId) -> bool {
        self.peers[peer.index()].down
    }

    /// Every peer's current life has had a channel, or is down: the mesh is made, and a
    /// message to any live peer leaves at once instead of waiting for it to dial.
    pub(super) fn connected(&self) -> bool {
        let me = self.me.index();
        self.peers.iter().enumerate().all(|(i, p)| i == me || p.had_channel || p.down)
    }

    /// The peers that have neither had a channel nor are down (see [`Mesh::connected`]).
    pub(super) fn unconnected(&self) -> Vec<PeerId> {
        let me = self.me.index();
        let missing =
            |(i, p): (usize, &Peer)| (i != me && !p.had_channel && !p.down).then_some(PeerId(i as u32));
        self.peers.iter().enumerate().filter_map(missing).collect()
    }

    /// `peer` has a channel open now.
    #[cfg(test)]
    pub(super) fn has_channel(&self, peer: PeerId) -> bool {
        self.peers[peer.index()].stream.is_some()
    }

    /// Whether `peer`'s channel is down as far as anyone can tell: it has none, or, in a
    /// lazily connected mesh (where a peer without one is just not talked to yet), it
    /// was lost.
    pub(super) fn channel_down(&self, peer: PeerId) -> bool {
        let p = &self.peers[peer.index()];
        if self.lazy {
            p.down
        } else {
            p.stream.is_none() && p.dialing.is_none()
        }
    }

    /// The incarnation of `peer` the algorithm knows.
    pub(super) fn incarnation(&self, peer: PeerId) -> u32 {
        self.peers[peer.index()].incarnation
    }

    /// Serve `token`, one of the mesh's sources, which is readable; `edge`: the event
    /// said only that (not the peer's end, not an error), so a channel's short read
    /// means it is drained.
    pub(super) fn readable(&mut self, token: Token, edge: bool) {
        match token.0 {
            t if t == LISTENER.0 => {
                self.todo.push_back(Todo::Accept { left: ACCEPT_BATCH, refused: 0, evicted: 0 })
            }
            t if t >= PENDING_BASE => {
                let mut then = Vec::new();
                self.pending_readable(token, &mut then);
                self.todo.extend(then);
            }
            t if t >= EXTRA_BASE => self.todo.push_back(match PeerId((t - EXTRA_BASE) as u32) {
                peer if edge => Todo::ReadEdge(peer, true),
                peer => Todo::ReadExtra(peer),
            }),
            t if t >= PEER_BASE => self.todo.push_back(match PeerId((t - PEER_BASE) as u32) {
                peer if edge => Todo::ReadEdge(peer, false),
                peer => Todo::Read(peer),
            }),
            _ => {}
        }
    }

    /// One of the mesh's timers fired.
    pub(super) fn timer(&mut self, timer: MeshTimer) {
        match timer {
            MeshTimer::HelloDue(token) => self.hello_overdue(token),
            MeshTimer::Accept => {
                self.accept_retry = false;
                self.readable(LISTENER, false);
            }
            MeshTimer::Redial(peer) => self.redial(peer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire;
    use std::io::{Read, Write};
    use std::path::Path;

    #[test]
    fn every_peer_may_dial_at_once_without_hitting_the_pending_cap() {
        for n in 1..=256 {
            assert!(max_pending(n) >= n as usize, "n = {n}");
        }
    }

    // The mesh as a component: driven over real sockets in one thread, no process, no
    // node. Each test plays the loop: it says what happened and takes the events.

    use std::os::unix::net::UnixStream as StdStream;

    /// A message that is a line of text.
    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    #[serde(transparent)]
    struct Text(String);

    impl Message for Text {
        fn kind(&self) -> &str {
            "TEXT"
        }
    }

    const SECRET: [u8; crate::auth::SECRET_LEN] = [7; crate::auth::SECRET_LEN];

    /// Worker `me` of 3, listening in `dir`, with the poll its sockets are registered on.
    fn mesh(dir: &Path, me: u32) -> (mio::Poll, Mesh<Text>) {
        let poll = mio::Poll::new().unwrap();
        let registry = poll.registry().try_clone().unwrap();
        let on = Endpoint::Unix(format!("w{me}.sock"));
        let mesh =
            Mesh::listen(registry, dir.to_path_buf(), &on, PeerId(me), 0, 3, Secret::from_bytes(SECRET))
                .unwrap();
        (poll, mesh)
    }

    /// Everything the mesh has to say now, in order.
    fn drain(mesh: &mut Mesh<Text>) -> Vec<MeshEvent<Text>> {
        std::iter::from_fn(|| mesh.poll_event()).collect()
    }

    /// The events, with timers and logs left out, as short words.
    fn said(events: &[MeshEvent<Text>]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                MeshEvent::Message { from, envelope } => {
                    Some(format!("{from}:{}", envelope.msg.as_ref().map_or("beat", |t| t.0.as_str())))
                }
                MeshEvent::Heard(p) => Some(format!("heard {p}")),
                MeshEvent::Up { peer, was_down } => Some(format!("up {peer} {was_down}")),
                MeshEvent::Down { peer, unsent, was_down } => {
                    let unsent: Vec<String> =
                        messages::<Text>(unsent).into_iter().map(|(_, m)| m.0).collect();
                    Some(format!("down {peer} {was_down} {unsent:?}"))
                }
                MeshEvent::Breach(why) => Some(format!("breach {why}")),
                MeshEvent::Timer { .. } | MeshEvent::Again(_) | MeshEvent::Log(_) => None,
            })
            .collect()
    }

    fn logs(events: &[MeshEvent<Text>]) -> Vec<&str> {
        events
            .iter()
            .filter_map(|e| if let MeshEvent::Log(l) = e { Some(l.as_str()) } else { None })
            .collect()
    }

    /// A caller of worker 0 in `dir`, saying `hello` and then messages `msgs` as `from`.
    fn call(dir: &Path, hello: &Hello, msgs: &[&str]) -> StdStream {
        let mut bytes = Vec::new();
        wire::encode(&mut bytes, hello);
        for m in msgs {
            let env = Envelope { from: hello.from, to: PeerId(0), clock: 1, msg: Some(Text(m.to_string())) };
            wire::encode(&mut bytes, &env);
        }
        let mut stream = StdStream::connect(dir.join("w0.sock")).unwrap();
        stream.write_all(&bytes).unwrap();
        stream
    }

    fn hello(from: u32, to: u32, inc: u32) -> Hello {
        Hello::new(&Secret::from_bytes(SECRET), PeerId(from), PeerId(to), inc)
    }

    fn frame(mesh: &Mesh<Text>, to: u32, msg: &str) -> Vec<u8> {
        let env = Envelope { from: mesh.me, to: PeerId(to), clock: 2, msg: Some(Text(msg.to_string())) };
        mesh.frame(&env, 0).unwrap()
    }

    #[test]
    fn a_dialing_mesh_is_adopted_and_its_messages_come_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let (_p0, mut w0) = mesh(dir.path(), 0);
        let (_p1, mut w1) = mesh(dir.path(), 1);
        assert!(w1.dial(PeerId(0), Endpoint::Unix("w0.sock".into())));
        for m in ["one", "two"] {
            let f = frame(&w1, 0, m);
            w1.queue(PeerId(0), &f);
        }
        w1.flush_all();
        assert!(said(&drain(&mut w1)).is_empty());
        w0.readable(LISTENER, false);
        let events = drain(&mut w0);
        assert!(matches!(events[0], MeshEvent::Timer { timer: MeshTimer::HelloDue(_), .. }));
        assert_eq!(said(&events), ["up w1 false", "heard w1", "w1:one", "w1:two"]);
        assert!(w0.has_channel(PeerId(1)) && !w0.is_down(PeerId(1)));
        // And back: w0 writes, w1 reads on its channel.
        let f = frame(&w0, 1, "back");
        w0.queue(PeerId(1), &f);
        w0.flush_all();
        assert!(drain(&mut w0).is_empty());
        w1.readable(Token(PEER_BASE), false);
        assert_eq!(said(&drain(&mut w1)), ["heard w0", "w0:back"]);
    }

    #[test]
    fn impostors_are_dropped_before_their_hello_is_believed() {
        let dir = tempfile::tempdir().unwrap();
        let (_p, mut w0) = mesh(dir.path(), 0);
        let forged = Hello::new(&Secret::from_bytes([8; crate::auth::SECRET_LEN]), PeerId(1), PeerId(0), 0);
        let _a = call(dir.path(), &forged, &["let me in"]);
        let _b = call(dir.path(), &hello(2, 1, 0), &["wrong door"]);
        let _c = call(dir.path(), &hello(5, 0, 0), &["stranger"]);
        w0.readable(LISTENER, false);
        let events = drain(&mut w0);
        assert!(said(&events).is_empty(), "{:?}", said(&events));
        assert_eq!(
            logs(&events),
            [
                "dropping a connection whose hello claims to be w1 (incarnation 0) without the run's secret",
                "dropping a connection whose hello from w2 is addressed to w1",
                "dropping a connection whose hello names w5, which is not a peer",
            ]
        );
        assert_eq!(w0.dropped_connections, 3);
        assert!(!w0.has_channel(PeerId(1)));
    }

    #[test]
    fn a_newer_life_replaces_the_old_whose_last_words_and_replies_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let (_p, mut w0) = mesh(dir.path(), 0);
        let mut old = call(dir.path(), &hello(1, 0, 0), &[]);
        w0.readable(LISTENER, false);
        assert_eq!(said(&drain(&mut w0)), ["up w1 false"]);
        // The old life's last message, read as the new life is adopted: the reply the
        // loop queues to it goes down with the old life, never to the new one.
        let env = Envelope { from: PeerId(1), to: PeerId(0), clock: 1, msg: Some(Text("last".to_string())) };
        let mut bytes = Vec::new();
        wire::encode(&mut bytes, &env);
        old.write_all(&bytes).unwrap();
        w0.announce(PeerId(1), 1, Endpoint::Unix("w1.1.sock".into()));
        let _new = call(dir.path(), &hello(1, 0, 1), &["fresh"]);
        w0.readable(LISTENER, false);
        let mut seen = Vec::new();
        while let Some(event) = w0.poll_event() {
            if let MeshEvent::Message { envelope, .. } = &event {
                if envelope.msg.as_ref().is_some_and(|t| t.0 == "last") {
                    let f = frame(&w0, 1, "reply");
                    w0.queue(PeerId(1), &f);
                }
            }
            seen.push(event);
        }
        assert_eq!(
            said(&seen),
            ["heard w1", "w1:last", "down w1 false [\"reply\"]", "up w1 true", "heard w1", "w1:fresh"]
        );
        assert_eq!(w0.incarnation(PeerId(1)), 1);
        // A second connection claiming the same life is refused.
        let _again = call(dir.path(), &hello(1, 0, 1), &[]);
        w0.readable(LISTENER, false);
        let events = drain(&mut w0);
        assert_eq!(
            logs(&events),
            ["refusing a connection whose hello claims w1 (incarnation 1), whose channel is already open"]
        );
        let mut buf = [0u8; 1];
        drop(_new);
        w0.readable(Token(PEER_BASE + 1), false);
        assert_eq!(said(&drain(&mut w0)), ["down w1 false []"]);
        assert!(w0.is_down(PeerId(1)) && !w0.has_channel(PeerId(1)));
        // The old life's channel was closed by w0.
        assert_eq!(old.read(&mut buf).unwrap(), 0);
    }

    #[test]
    fn a_frame_over_the_cap_from_a_live_peer_is_a_breach_not_a_peer_down() {
        let dir = tempfile::tempdir().unwrap();
        let (_p, mut w0) = mesh(dir.path(), 0);
        let mut w1 = call(dir.path(), &hello(1, 0, 0), &["fine"]);
        w0.readable(LISTENER, false);
        assert_eq!(said(&drain(&mut w0)), ["up w1 false", "heard w1", "w1:fine"]);
        w1.write_all(&((wire::MAX_FRAME + 1) as u32).to_be_bytes()).unwrap();
        w0.readable(Token(PEER_BASE + 1), false);
        let said = said(&drain(&mut w0));
        assert_eq!(said.len(), 1);
        assert!(
            said[0].starts_with("breach the runtime refused a frame from w1, which is alive"),
            "{said:?}"
        );
        assert!(w0.has_channel(PeerId(1)), "the channel stays open");
    }

    #[test]
    fn what_the_queues_may_hold_unwritten_is_capped_and_a_message_over_the_frame_cap_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (_p, w0) = mesh(dir.path(), 0);
        let env = |msg: String| Envelope { from: PeerId(0), to: PeerId(1), clock: 1, msg: Some(Text(msg)) };
        let big = w0.frame(&env("x".repeat(wire::MAX_FRAME + 1)), 0).unwrap_err();
        assert!(big.contains("over the 65536-byte frame cap"), "{big}");
        let full = w0.frame(&env("x".into()), MAX_UNSENT).unwrap_err();
        assert!(full.contains(&format!("over the {MAX_UNSENT}-byte cap")), "{full}");
        // A heartbeat is a few bytes, whatever the queues hold.
        let beat = Envelope { from: PeerId(0), to: PeerId(1), clock: 1, msg: None::<Text> };
        assert!(w0.frame(&beat, MAX_UNSENT).is_ok());
    }

    /// Worker `me` of 3 in `dir`, at its socket's real name, connecting lazily.
    fn lazy_mesh(dir: &Path, me: u32) -> (mio::Poll, Mesh<Text>) {
        let poll = mio::Poll::new().unwrap();
        let registry = poll.registry().try_clone().unwrap();
        let on = Endpoint::Unix(crate::control::worker_socket(PeerId(me), 0));
        let mut mesh =
            Mesh::listen(registry, dir.to_path_buf(), &on, PeerId(me), 0, 3, Secret::from_bytes(SECRET))
                .unwrap();
        mesh.connect_lazily();
        (poll, mesh)
    }

    fn send(from: &mut Mesh<Text>, to: u32, msgs: &[&str]) {
        for m in msgs {
            let f = frame(from, to, m);
            from.queue(PeerId(to), &f);
        }
        from.flush_all();
    }

    #[test]
    fn a_lazily_connected_mesh_connects_only_to_the_peers_it_writes_to() {
        let dir = tempfile::tempdir().unwrap();
        let (_p0, mut w0) = lazy_mesh(dir.path(), 0);
        let (_p1, mut w1) = lazy_mesh(dir.path(), 1);
        let (_p2, mut w2) = lazy_mesh(dir.path(), 2);
        // Nothing is dialed until something is written, and then only that peer.
        assert!(said(&drain(&mut w1)).is_empty());
        assert!(!w1.has_channel(PeerId(0)) && !w1.has_channel(PeerId(2)));
        send(&mut w1, 2, &["one", "two"]);
        assert!(said(&drain(&mut w1)).is_empty());
        assert!(w1.has_channel(PeerId(2)) && !w1.has_channel(PeerId(0)));
        w2.readable(LISTENER, false);
        assert_eq!(said(&drain(&mut w2)), ["up w1 false", "heard w1", "w1:one", "w1:two"]);
        // The answer goes back on the same connection: no second one.
        send(&mut w2, 1, &["back"]);
        assert!(said(&drain(&mut w2)).is_empty());
        w1.readable(Token(PEER_BASE + 2), false);
        assert_eq!(said(&drain(&mut w1)), ["heard w2", "w2:back"]);
        assert_eq!((w1.channels_opened, w2.channels_opened, w0.channels_opened), (1, 1, 0));
        w0.readable(LISTENER, false);
        assert!(drain(&mut w0).is_empty(), "nobody called w0");
        // A peer without a channel is no channel down; one that cannot be reached is.
        assert!(!w1.channel_down(PeerId(0)));
        drop((_p0, w0));
        send(&mut w1, 0, &["lost"]);
        assert_eq!(said(&drain(&mut w1)), ["down w0 false [\"lost\"]"]);
        assert!(w1.channel_down(PeerId(0)));
    }

    #[test]
    fn two_lazy_meshes_that_dial_each_other_at_once_keep_each_direction_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let (_p0, mut w0) = lazy_mesh(dir.path(), 0);
        let (_p1, mut w1) = lazy_mesh(dir.path(), 1);
        send(&mut w0, 1, &["a1", "a2"]);
        send(&mut w1, 0, &["b1", "b2"]);
        assert!(said(&drain(&mut w0)).is_empty() && said(&drain(&mut w1)).is_empty());
        // Each accepts the other's connection as a second channel: nobody is down.
        w0.readable(LISTENER, false);
        assert_eq!(said(&drain(&mut w0)), ["heard w1", "w1:b1", "w1:b2"]);
        w1.readable(LISTENER, false);
        assert_eq!(said(&drain(&mut w1)), ["heard w0", "w0:a1", "w0:a2"]);
        // Later messages go on the connection each dialed, and arrive on the other's
        // second channel, in order.
        send(&mut w0, 1, &["a3"]);
        assert!(drain(&mut w0).is_empty());
        w1.readable(Token(EXTRA_BASE), false);
        assert_eq!(said(&drain(&mut w1)), ["heard w0", "w0:a3"]);
        // A third connection claiming w1 is refused as ever.
        std::fs::rename(dir.path().join("w0.0.sock"), dir.path().join("w0.sock")).unwrap();
        let _again = call(dir.path(), &hello(1, 0, 0), &[]);
        w0.readable(LISTENER, false);
        assert_eq!(
            logs(&drain(&mut w0)),
            ["refusing a connection whose hello claims w1 (incarnation 0), whose channel is already open"]
        );
        // Either connection closing is w1's death: both close.
        drop((_p1, w1));
        w0.readable(Token(PEER_BASE + 1), false);
        assert_eq!(said(&drain(&mut w0)), ["down w1 false []"]);
        assert!(w0.channel_down(PeerId(1)));
    }

    #[test]
    fn a_message_is_sent_in_one_call_queued_kept_by_the_faults_or_dropped_for_a_peer_down() {
        let dir = tempfile::tempdir().unwrap();
        let (_p0, mut w0) = mesh(dir.path(), 0);
        let (_p1, mut w1) = mesh(dir.path(), 1);
        assert!(w1.dial(PeerId(0), Endpoint::Unix("w0.sock".into())));
        let env = |msg: &str| Envelope {
            from: PeerId(1),
            to: PeerId(0),
            clock: 2,
            msg: Some(Text(msg.to_string())),
        };
        assert_eq!(w1.send(&env("one"), 0, Fate::Now), Ok(Sent::Queued));
        assert_eq!(w1.send(&env("held"), 0, |_| Fate::Held), Ok(Sent::Kept(Fate::Held)));
        assert_eq!(w1.send(&env("lost"), 0, |_| Fate::Lost), Ok(Sent::Kept(Fate::Lost)));
        assert_eq!(w1.send(&env("two"), 0, Fate::Now), Ok(Sent::Queued));
        // Refused as `frame` refuses it, before the faults see it.
        let big = w1.send(&env(&"x".repeat(wire::MAX_FRAME + 1)), 0, |_| panic!("framed")).unwrap_err();
        assert!(big.contains("over the 65536-byte frame cap"), "{big}");
        w1.flush_all();
        assert!(said(&drain(&mut w1)).is_empty());
        w0.readable(LISTENER, false);
        assert_eq!(said(&drain(&mut w0)), ["up w1 false", "heard w1", "w1:one", "w1:two"]);
        // w0 is gone: to a peer that is down nothing reaches the faults or the queue.
        drop((_p0, w0));
        w1.readable(Token(PEER_BASE), false);
        assert_eq!(said(&drain(&mut w1)), ["down w0 false []"]);
        assert_eq!(w1.send(&env("late"), 0, |_| panic!("to the faults")), Ok(Sent::Down));
        assert!(w1.take_unsent(PeerId(0)).is_empty());
    }

    #[test]
    fn a_silent_caller_is_dropped_when_its_hello_is_overdue() {
        let dir = tempfile::tempdir().unwrap();
        let (_p, mut w0) = mesh(dir.path(), 0);
        let _silent = StdStream::connect(dir.path().join("w0.sock")).unwrap();
        w0.readable(LISTENER, false);
        let events = drain(&mut w0);
        let Some(MeshEvent::Timer { after, timer }) = events.first() else { panic!("{events:?}") };
        // Three workers: 2 s and 20 ms a worker.
        assert_eq!(*after, connect_time(3));
        assert_eq!(*after, HELLO_DEADLINE + Duration::from_millis(60));
        w0.timer(*timer);
        assert_eq!(logs(&drain(&mut w0)), ["dropping a connection that sent no hello within 2.06 s"]);
        assert_eq!(w0.dropped_connections, 1);
    }

    #[test]
    fn a_hello_waiting_unread_when_its_deadline_fires_is_believed_not_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (_p, mut w0) = mesh(dir.path(), 0);
        let mut late = StdStream::connect(dir.path().join("w0.sock")).unwrap();
        w0.readable(LISTENER, false);
        let events = drain(&mut w0);
        let Some(&MeshEvent::Timer { timer, .. }) = events.first() else { panic!("{events:?}") };
        // The hello arrives, but its readiness is not served before the deadline fires
        // (a busy worker's poll returned other events first).
        let mut bytes = Vec::new();
        wire::encode(&mut bytes, &hello(1, 0, 0));
        late.write_all(&bytes).unwrap();
        w0.timer(timer);
        let events = drain(&mut w0);
        assert!(logs(&events).is_empty(), "{events:?}");
        assert_eq!(said(&events), ["up w1 false"]);
        assert_eq!(w0.dropped_connections, 0);
        assert!(w0.has_channel(PeerId(1)));
    }

    // Over TCP: the same mesh, the streams a kernel's TCP connections on loopback.

    /// Worker `me` of 3 listening on a TCP port of the kernel's choosing, and where.
    fn tcp_mesh(me: u32, lazy: bool) -> (mio::Poll, Mesh<Text>, Endpoint) {
        let poll = mio::Poll::new().unwrap();
        let registry = poll.registry().try_clone().unwrap();
        let on = Endpoint::Tcp("127.0.0.1:0".parse().unwrap());
        // No file is made: the directory only names Unix sockets.
        let dir = std::env::temp_dir();
        let mut mesh =
            Mesh::listen(registry, dir, &on, PeerId(me), 0, 3, Secret::from_bytes(SECRET)).unwrap();
        if lazy {
            mesh.connect_lazily();
        }
        let at = mesh.endpoint().unwrap();
        (poll, mesh, at)
    }

    /// Wait until `poll` reports `token` (a bound only so that a broken test ends).
    fn wait_for(poll: &mut mio::Poll, token: Token) {
        let mut events = mio::Events::with_capacity(16);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "{token:?} never became ready");
            poll.poll(&mut events, Some(left)).unwrap();
            if events.iter().any(|e| e.token() == token) {
                return;
            }
        }
    }

    /// Serve `token` of `mesh` as its poll reports it, until the mesh says something.
    fn serve_until_said(poll: &mut mio::Poll, mesh: &mut Mesh<Text>, token: Token) -> Vec<MeshEvent<Text>> {
        loop {
            wait_for(poll, token);
            if token == LISTENER || token.0 >= PEER_BASE {
                mesh.readable(token, false);
            }
            mesh.flush_all();
            let events = drain(mesh);
            if !said(&events).is_empty() {
                return events;
            }
        }
    }

    /// Let `mesh`'s dial to `peer` finish (it may have at once, on loopback).
    fn dialed(poll: &mut mio::Poll, mesh: &mut Mesh<Text>, peer: u32) {
        while !mesh.has_channel(PeerId(peer)) {
            wait_for(poll, Token(PEER_BASE + peer as usize));
            mesh.flush_all();
            assert!(said(&drain(mesh)).is_empty());
        }
    }

    #[test]
    fn two_meshes_over_tcp_say_hello_first_and_keep_each_direction_in_order() {
        let (mut p0, mut w0, at0) = tcp_mesh(0, false);
        let (mut p1, mut w1, _) = tcp_mesh(1, false);
        assert!(matches!(at0, Endpoint::Tcp(a) if a.port() != 0), "the port the kernel gave: {at0:?}");
        assert!(w1.dial(PeerId(0), at0));
        // Queued behind the hello while the handshake may still be under way.
        send(&mut w1, 0, &["one", "two"]);
        assert!(said(&drain(&mut w1)).is_empty());
        dialed(&mut p1, &mut w1, 0);
        let events = serve_until_said(&mut p0, &mut w0, LISTENER);
        let mut got = said(&events);
        while got.len() < 4 {
            got.extend(said(&serve_until_said(&mut p0, &mut w0, Token(PEER_BASE + 1))));
        }
        assert_eq!(got, ["up w1 false", "heard w1", "w1:one", "w1:two"]);
        send(&mut w0, 1, &["back"]);
        assert!(said(&drain(&mut w0)).is_empty());
        assert_eq!(said(&serve_until_said(&mut p1, &mut w1, Token(PEER_BASE))), ["heard w0", "w0:back"]);
        // The peer's end closing is its death, over TCP as over a Unix socket.
        drop((p0, w0));
        assert_eq!(said(&serve_until_said(&mut p1, &mut w1, Token(PEER_BASE))), ["down w0 false []"]);
    }

    #[test]
    fn a_lazy_mesh_dials_over_tcp_where_the_supervisor_said_the_peer_listens() {
        let (mut p0, mut w0, at0) = tcp_mesh(0, true);
        let (mut p1, mut w1, _) = tcp_mesh(1, true);
        w1.set_announced(vec![0, 0, 0], vec![Some(at0), None, None]);
        send(&mut w1, 0, &["hi"]);
        assert!(said(&drain(&mut w1)).is_empty());
        dialed(&mut p1, &mut w1, 0);
        let mut got = said(&serve_until_said(&mut p0, &mut w0, LISTENER));
        while got.len() < 3 {
            got.extend(said(&serve_until_said(&mut p0, &mut w0, Token(PEER_BASE + 1))));
        }
        assert_eq!(got, ["up w1 false", "heard w1", "w1:hi"]);
        assert_eq!(w1.channels_opened, 1);
    }

    #[test]
    fn a_tcp_port_nobody_listens_on_is_a_peer_down_as_a_missing_socket_is() {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let (mut p1, mut w1, _) = tcp_mesh(1, false);
        let events = if w1.dial(PeerId(0), Endpoint::Tcp(addr)) {
            // The refusal comes later, with the socket's readiness.
            serve_until_said(&mut p1, &mut w1, Token(PEER_BASE))
        } else {
            // The kernel refused at once (loopback may): as a missing Unix socket.
            w1.unreachable(PeerId(0));
            drain(&mut w1)
        };
        assert_eq!(said(&events), ["down w0 false []"]);
        let refused = std::io::Error::from_raw_os_error(nix::libc::ECONNREFUSED);
        let line = format!("cannot connect to w0 at TCP {addr}: {refused}; it is down until it dials us");
        assert_eq!(logs(&events), [line.as_str()]);
        assert!(w1.is_down(PeerId(0)) && !w1.has_channel(PeerId(0)));
    }

    /// A listener whose accept queue of one is full: the kernel drops a new SYN until
    /// there is room, so a dial to it stays under way (its SYN is sent again after about
    /// a second). The connection that fills it comes with it.
    fn full_listener() -> (std::net::TcpListener, std::net::SocketAddr, std::net::TcpStream) {
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        // SAFETY: a plain system call on a socket this test owns.
        assert_eq!(unsafe { nix::libc::listen(listener.as_raw_fd(), 0) }, 0);
        let addr = listener.local_addr().unwrap();
        let filler = std::net::TcpStream::connect(addr).unwrap();
        (listener, addr, filler)
    }

    #[test]
    fn a_tcp_dial_still_under_way_keeps_what_is_written_for_after_its_hello() {
        let (listener, addr, _filler) = full_listener();
        let (mut p1, mut w1, _) = tcp_mesh(1, false);
        assert!(w1.dial(PeerId(0), Endpoint::Tcp(addr)));
        assert!(!w1.has_channel(PeerId(0)) && !w1.channel_down(PeerId(0)), "under way, not down");
        send(&mut w1, 0, &["queued"]);
        assert!(said(&drain(&mut w1)).is_empty());
        drop(listener.accept().unwrap()); // room for the SYN sent again
        dialed(&mut p1, &mut w1, 0);
        let (mut s, _) = listener.accept().unwrap();
        let mut frame = || {
            let mut len = [0u8; 4];
            s.read_exact(&mut len).unwrap();
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            s.read_exact(&mut body).unwrap();
            body
        };
        let hello: Hello = wire::decode(&frame()).unwrap();
        assert_eq!((hello.from, hello.to, hello.incarnation), (PeerId(1), PeerId(0), 0));
        assert!(hello.proves(&Secret::from_bytes(SECRET)));
        let env: Envelope<Option<Text>> = wire::decode(&frame()).unwrap();
        assert_eq!(env.msg, Some(Text("queued".into())));
    }

    #[test]
    fn a_tcp_dial_refused_after_it_was_under_way_is_a_peer_down_with_the_same_line() {
        let (listener, addr, _filler) = full_listener();
        let (mut p1, mut w1, _) = tcp_mesh(1, false);
        assert!(w1.dial(PeerId(0), Endpoint::Tcp(addr)));
        assert!(!w1.has_channel(PeerId(0)), "the handshake waits for room");
        // The peer dies: the SYN sent again finds the port closed.
        drop(listener);
        let events = serve_until_said(&mut p1, &mut w1, Token(PEER_BASE));
        assert_eq!(said(&events), ["down w0 false []"]);
        let refused = std::io::Error::from_raw_os_error(nix::libc::ECONNREFUSED);
        let line = format!("cannot connect to w0 at TCP {addr}: {refused}; it is down until it dials us");
        assert_eq!(logs(&events), [line.as_str()]);
    }
}
