//! The Unix-socket mesh: one reliable FIFO stream per pair of workers, framed by
//! [`crate::wire`]. This worker listens on its own socket and accepts callers, who must
//! say hello first; dials the peers the supervisor names (again, with back-off, while a
//! backlog is full); believes, holds or refuses each hello; reads every peer's frames
//! and hands them to the algorithm; and writes each peer's outgoing queue without ever
//! blocking ([`Worker::send`] queues, [`Worker::flush_all`] writes). Whatever ends a
//! channel ends in [`Worker::lost`], which tells the algorithm the peer is down; so
//! only the peer's death (its end of the stream closed or reset, a dial refused) or a
//! newer life may end one, never this worker's refusal of what a live peer sent.
//!
//! # Connections
//!
//! Worker i dials every worker below it (a restarted worker dials every live worker);
//! the supervisor orders the dials so that of any two workers only one dials the other.
//! Every connection opens with a [`Hello`] from the caller that proves the run's secret
//! ([`crate::auth`]): who is calling, whom, and as which incarnation.
//!
//! - A connection that has not said hello within [`HELLO_DEADLINE`] is dropped, with a
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
//!   back-off, until it succeeds or the peer dials us.
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
//! stops instead ([`ModelBreach`]: the run fails, naming the peer), the channel open.
//! For the same reason [`Worker::send`] never queues a message whose frame would be
//! over the cap: that is a breach of the sender; so is a message that would take what
//! the worker holds unwritten for its peers past [`MAX_UNSENT`] (peers that read slower
//! than it sends), since a queue without end is no channel the runtime can keep. A stream that ends inside a frame
//! loses that partial frame (a line on stderr) and is a closed channel like any other:
//! its peer died. Before its hello, a connection has proved nothing, and any bad input
//! drops it.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mio::net::{UnixListener, UnixStream};
use mio::{Interest, Token};

use super::detector::HEARTBEAT;
use serde::de::DeserializeOwned;

use super::{ModelBreach, RunService, TimerKind, Worker, LISTENER, PEER_BASE, PENDING_BASE};
use crate::algorithm::{Input, Message, Node, PeerId};
use crate::auth::{Hello, Secret};
use crate::trace;
use crate::wire::{self, Envelope, Fill, FrameReader};

/// How long an accepted connection may stay silent before its hello.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(2);
/// How soon to try `accept` again after it failed (EMFILE and the like).
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// Connections accepted in one go before the loop serves everyone else.
const ACCEPT_BATCH: usize = 256;
/// First and longest wait before dialing again a peer whose backlog was full.
const REDIAL_FIRST: Duration = Duration::from_millis(20);
const REDIAL_MAX: Duration = Duration::from_secs(1);
/// The most bytes a worker holds for its peers, written to none of them yet: past it, a
/// message is a [`ModelBreach`] (the runtime cannot carry it), never a queue that grows
/// without end.
pub const MAX_UNSENT: usize = 64 << 20;
/// Bad frames logged one by one; after that they are only counted.
pub const BAD_FRAME_LINES: u64 = 20;
/// Dropped or refused connections logged one by one; after that they are only counted.
pub const DROP_LINES: u64 = 50;

/// How many accepted connections may wait for their hello at once: room for every peer
/// to dial at the same moment, twice over.
pub fn max_pending(workers: u32) -> usize {
    2 * workers as usize + 16
}

/// One peer as the mesh sees it: its channel, what is queued for it, and which of its
/// lives the algorithm knows.
#[derive(Default)]
pub(super) struct Peer {
    /// The channel: we write on it and read from it.
    pub(super) stream: Option<UnixStream>,
    reader: FrameReader,
    pub(super) out: Vec<u8>,
    written: usize,
    /// Where in `out` a frame starts with whole frames from there on: 0, or just past
    /// the rest of a hello, so that `lost` can name each message it throws away.
    frames_from: usize,
    /// The peer's incarnation as far as the algorithm knows.
    incarnation: u32,
    /// That incarnation has had a channel (it may have closed since): a later
    /// connection claiming it is refused.
    had_channel: bool,
    /// The algorithm was told this peer is down, and not since that it is back.
    pub(super) down: bool,
    /// A dial that found the backlog full, to try again: the path and the next wait.
    redial: Option<(PathBuf, Duration)>,
    /// `stream` is registered for WRITABLE too: only while `out` is backed up, because
    /// every read by the peer would otherwise wake this process for nothing.
    write_interest: bool,
}

impl Peer {
    /// Forget the bytes of `out` written so far, up to where the frame being written
    /// starts, so that the queue still starts with whole frames.
    fn forget_written(&mut self) {
        let cut = if self.frames_from >= self.written {
            self.written
        } else {
            frames(&self.out, self.frames_from)
                .map(|f| f.start)
                .take_while(|&at| at <= self.written)
                .last()
                .unwrap_or(self.frames_from)
        };
        self.out.drain(..cut);
        self.written -= cut;
        self.frames_from = self.frames_from.saturating_sub(cut);
    }

    /// Take the queue, as what was never wholly written: a frame cut off halfway never
    /// arrives whole, so it did not leave either.
    fn take_unsent(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.out);
        let first =
            frames(&out, self.frames_from).find(|f| f.end > self.written).map_or(out.len(), |f| f.start);
        (self.frames_from, self.written) = (0, 0);
        out.drain(..first);
        out
    }
}

/// An accepted connection waiting for its hello.
pub(super) struct PendingConn {
    stream: UnixStream,
    reader: FrameReader,
    /// A proven hello from a life of its peer the supervisor has not announced yet.
    held: Option<Hello>,
}

/// The mesh's part of a worker: the listening socket, a [`Peer`] per worker, the
/// connections still waiting for their hello, and which life of each worker the
/// supervisor announced.
pub(super) struct Mesh {
    /// The run's secret, which every hello proves.
    pub(super) secret: Secret,
    /// Each worker's current incarnation, as the supervisor announced it.
    pub(super) announced: Vec<u32>,
    pub(super) listener: UnixListener,
    pub(super) socket_path: PathBuf,
    pub(super) peers: Vec<Peer>,
    pub(super) pending_conns: HashMap<Token, PendingConn>,
    pub(super) next_pending: usize,
    pub(super) max_pending: usize,
    /// An `Accept` timer is set.
    pub(super) accept_retry: bool,
    /// `accept` failures in a row (logged when the streak starts and when it ends).
    pub(super) accept_failures: u64,
    /// Bad frames logged so far.
    pub(super) bad_logged: u64,
    /// Lines about dropped connections so far.
    pub(super) drops_logged: u64,
}

impl<A: Node<Service: RunService>> Worker<A> {
    /// Dial `peer` at `path` at startup. False if it cannot be reached: the caller then
    /// tells the algorithm it is down (after `on_start`), and it will dial us when it
    /// starts again. A full backlog is not failure: the dial is tried again later.
    pub(super) fn dial(&mut self, peer: PeerId, path: PathBuf) -> bool {
        self.mesh.peers[peer.index()].incarnation = self.mesh.announced[peer.index()];
        match self.connect(peer, &path) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.log(format_args!("{peer}'s backlog is full; dialing again shortly"));
                self.mesh.peers[peer.index()].redial = Some((path, REDIAL_FIRST));
                self.push_timer(REDIAL_FIRST, TimerKind::Redial(peer.index()));
                true
            }
            Err(e) => {
                self.log(format_args!(
                    "cannot connect to {peer} at {}: {e}; it is down until it dials us",
                    path.display()
                ));
                false
            }
        }
    }

    /// Connect to `peer` and make the connection its channel, hello first.
    fn connect(&mut self, peer: PeerId, path: &Path) -> io::Result<()> {
        let mut stream = UnixStream::connect(path)?;
        let mut hello = Vec::new();
        wire::encode(&mut hello, &Hello::new(&self.mesh.secret, self.me, peer, self.opts.incarnation));
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
        self.poll.registry().register(&mut stream, Token(PEER_BASE + peer.index()), Interest::READABLE)?;
        let p = &mut self.mesh.peers[peer.index()];
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
        p.redial = None;
        Ok(())
    }

    /// The `Redial` timer for `peer` fired.
    pub(super) fn redial(&mut self, peer: PeerId) -> anyhow::Result<()> {
        let p = &mut self.mesh.peers[peer.index()];
        let Some((path, wait)) = p.redial.take() else {
            return Ok(());
        };
        if p.stream.is_some() || p.down {
            return Ok(()); // it dialed us, or it died meanwhile
        }
        match self.connect(peer, &path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let next = (wait * 2).min(REDIAL_MAX);
                self.mesh.peers[peer.index()].redial = Some((path, next));
                self.push_timer(next, TimerKind::Redial(peer.index()));
                Ok(())
            }
            Err(e) => {
                self.log(format_args!(
                    "cannot connect to {peer} at {}: {e}; it is down until it dials us",
                    path.display()
                ));
                self.lost(peer)
            }
        }
    }

    pub(super) fn accept(&mut self) -> anyhow::Result<()> {
        let (mut refused, mut evicted) = (0u64, 0u64);
        let mut more = true;
        for _ in 0..ACCEPT_BATCH {
            match self.mesh.listener.accept() {
                Ok((stream, _)) => {
                    if self.mesh.accept_failures > 0 {
                        let n = std::mem::take(&mut self.mesh.accept_failures);
                        self.log(format_args!("accepting connections again after {n} failed tries"));
                    }
                    if self.mesh.pending_conns.len() >= self.mesh.max_pending {
                        if self.evict_oldest_silent() {
                            evicted += 1;
                        } else {
                            // Every waiting connection holds a proven hello: the newcomer goes.
                            refused += 1;
                            self.stats.dropped_connections += 1;
                            drop(stream);
                            continue;
                        }
                    }
                    self.add_pending(stream)?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted) => {}
                Err(e) => {
                    // EMFILE, ENFILE, ENOBUFS…: the callers stay in the backlog. Try again
                    // shortly, when hello deadlines may have freed descriptors; a failing
                    // accept must neither end the worker nor spin.
                    if self.mesh.accept_failures == 0 {
                        self.log(format_args!(
                            "accepting a connection failed: {e}; trying again every {} ms",
                            ACCEPT_RETRY.as_millis()
                        ));
                    }
                    self.mesh.accept_failures += 1;
                    if !self.mesh.accept_retry {
                        self.mesh.accept_retry = true;
                        self.push_timer(ACCEPT_RETRY, TimerKind::Accept);
                    }
                    more = false;
                    break;
                }
            }
        }
        if more {
            self.again.push(LISTENER);
        }
        let waiting = self.mesh.pending_conns.len();
        if evicted > 0 {
            self.log_drop(format_args!(
                "dropped {evicted} silent connection(s) to make room for new callers: {waiting} waiting for their hello"
            ));
        }
        if refused > 0 {
            self.log_drop(format_args!(
                "refused {refused} connection(s): {waiting} already waiting, each with a hello"
            ));
        }
        Ok(())
    }

    /// Drop the connection that has waited longest without saying anything, to make
    /// room; false if every waiting connection has said a proven hello (held for its
    /// announcement).
    fn evict_oldest_silent(&mut self) -> bool {
        // Tokens are handed out in order: the smallest is the oldest.
        let oldest =
            self.mesh.pending_conns.iter().filter(|(_, pc)| pc.held.is_none()).map(|(t, _)| *t).min();
        let Some(token) = oldest else { return false };
        if let Some(mut pc) = self.mesh.pending_conns.remove(&token) {
            let _ = self.poll.registry().deregister(&mut pc.stream);
            self.stats.dropped_connections += 1;
        }
        true
    }

    /// A line about a dropped connection: the first [`DROP_LINES`], then one saying the
    /// rest are only counted, so a flood of callers cannot flood stderr.
    pub(super) fn log_drop(&mut self, what: std::fmt::Arguments<'_>) {
        self.mesh.drops_logged += 1;
        if self.mesh.drops_logged <= DROP_LINES {
            self.log(what);
        }
        if self.mesh.drops_logged == DROP_LINES {
            self.log(format_args!("further dropped connections are counted, not logged"));
        }
    }

    fn add_pending(&mut self, mut stream: UnixStream) -> anyhow::Result<()> {
        let token = Token(PENDING_BASE + self.mesh.next_pending);
        self.mesh.next_pending += 1;
        if let Err(e) = self.poll.registry().register(&mut stream, token, Interest::READABLE) {
            self.log(format_args!("dropping a connection that cannot be polled: {e}"));
            self.stats.dropped_connections += 1;
            return Ok(());
        }
        self.mesh
            .pending_conns
            .insert(token, PendingConn { stream, reader: FrameReader::default(), held: None });
        self.push_timer(HELLO_DEADLINE, TimerKind::HelloDue(token.0));
        // Data may already be waiting; edge-triggered polling would not say so.
        self.pending_readable(token)
    }

    fn drop_pending(&mut self, token: Token, why: std::fmt::Arguments<'_>) {
        if let Some(mut pc) = self.mesh.pending_conns.remove(&token) {
            let _ = self.poll.registry().deregister(&mut pc.stream);
            self.stats.dropped_connections += 1;
            self.log_drop(why);
        }
    }

    /// The `HelloDue` timer of a pending connection fired.
    pub(super) fn hello_overdue(&mut self, token: Token) {
        let secs = HELLO_DEADLINE.as_secs_f64();
        let held = self.mesh.pending_conns.get(&token).and_then(|pc| pc.held.clone());
        match held {
            Some(h) => self.drop_pending(
                token,
                format_args!(
                    "dropping a connection whose hello claims {}'s incarnation {}, which the supervisor did not announce within {secs} s",
                    h.from, h.incarnation
                ),
            ),
            None => {
                self.drop_pending(token, format_args!("dropping a connection that sent no hello within {secs} s"))
            }
        }
    }

    /// A connection that has not said hello yet.
    pub(super) fn pending_readable(&mut self, token: Token) -> anyhow::Result<()> {
        let Some(pc) = self.mesh.pending_conns.get_mut(&token) else {
            return Ok(());
        };
        if pc.held.is_some() {
            // Nothing more is read before the hello is believed: the frames behind it
            // wait in the socket, in order.
            return Ok(());
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
            (None, Ok(Fill::WouldBlock)) => return Ok(()),
            (None, Ok(Fill::Budget)) => {
                self.again.push(token);
                return Ok(());
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
                self.drop_pending(token, format_args!("dropping a connection before its hello: {why}"));
                return Ok(());
            }
        };
        let (from, to, inc) = (hello.from, hello.to, hello.incarnation);
        let wrong = if !hello.proves(&self.mesh.secret) {
            Some(format!("claims to be {from} (incarnation {inc}) without the run's secret"))
        } else if to != self.me {
            Some(format!("from {from} is addressed to {to}"))
        } else if from.0 >= self.opts.workers || from == self.me {
            Some(format!("names {from}, which is not a peer"))
        } else {
            None
        };
        if let Some(why) = wrong {
            self.drop_pending(token, format_args!("dropping a connection whose hello {why}"));
            return Ok(());
        }
        self.consider(token, hello)
    }

    /// A proven hello arrived on pending connection `token`: adopt it, hold it until the
    /// supervisor announces its incarnation, or refuse it.
    fn consider(&mut self, token: Token, hello: Hello) -> anyhow::Result<()> {
        let (peer, inc) = (hello.from, hello.incarnation);
        let announced = self.mesh.announced[peer.index()];
        let p = &self.mesh.peers[peer.index()];
        if inc > announced {
            // Its notice may still be on the way: wait for it (see `announce`).
            if let Some(pc) = self.mesh.pending_conns.get_mut(&token) {
                pc.held = Some(hello);
            }
            return Ok(());
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
            self.drop_pending(token, format_args!("refusing a connection whose hello {why}"));
            return Ok(());
        }
        let Some(PendingConn { stream, reader, .. }) = self.mesh.pending_conns.remove(&token) else {
            return Ok(());
        };
        self.adopt(hello, stream, reader)
    }

    /// The supervisor says worker `peer` now lives as `incarnation`: believe it, and
    /// take up any hello from that life that was waiting for this.
    pub(super) fn announce(&mut self, peer: PeerId, incarnation: u32) -> anyhow::Result<()> {
        if peer.index() >= self.mesh.announced.len() || peer == self.me {
            self.log(format_args!("ignoring an announcement about {peer}, which is not a peer"));
            return Ok(());
        }
        let slot = &mut self.mesh.announced[peer.index()];
        *slot = (*slot).max(incarnation);
        let waiting: Vec<Token> = self
            .mesh
            .pending_conns
            .iter()
            .filter(|(_, pc)| {
                pc.held.as_ref().is_some_and(|h| h.from == peer && h.incarnation <= incarnation)
            })
            .map(|(t, _)| *t)
            .collect();
        for token in waiting {
            let hello = self.mesh.pending_conns.get_mut(&token).and_then(|pc| pc.held.take());
            if let Some(hello) = hello {
                self.consider(token, hello)?;
            }
        }
        Ok(())
    }

    /// A believed hello from `hello.from`: make its connection that peer's channel. A
    /// newer life replaces the old one, whose last frames are delivered first.
    fn adopt(&mut self, hello: Hello, mut stream: UnixStream, reader: FrameReader) -> anyhow::Result<()> {
        let peer = hello.from;
        let idx = peer.index();
        if hello.incarnation > self.mesh.peers[idx].incarnation {
            // A new incarnation with fresh state: the old one is gone, whether or not its
            // channel has closed yet, and so is everything queued for it.
            self.peer_readable(peer)?;
            self.lost(peer)?;
        }
        let token = Token(PEER_BASE + idx);
        if let Err(e) = self.poll.registry().reregister(&mut stream, token, Interest::READABLE) {
            let _ = self.poll.registry().deregister(&mut stream);
            self.stats.dropped_connections += 1;
            self.log(format_args!("dropping {peer}'s connection: {e}"));
            return self.lost(peer);
        }
        let p = &mut self.mesh.peers[idx];
        p.stream = Some(stream);
        p.write_interest = false; // registered READABLE only
        p.reader = reader;
        p.incarnation = hello.incarnation;
        p.had_channel = true;
        p.redial = None;
        let was_down = std::mem::replace(&mut p.down, false);
        self.channel_up(peer, was_down)?;
        // Frames that arrived right behind the hello.
        self.peer_readable(peer)
    }

    /// Read what `peer`'s channel has and deliver it.
    pub(super) fn peer_readable(&mut self, peer: PeerId) -> anyhow::Result<()> {
        let idx = peer.index();
        let p = &mut self.mesh.peers[idx];
        let (stream, reader) = match p.stream.as_mut() {
            Some(s) => (s, &mut p.reader),
            None => return Ok(()),
        };
        let ChannelRead { inbox, bad, end } = read_channel::<A::Msg, _>(reader, stream, peer, self.me);
        for line in bad {
            self.stats.bad_frames += 1;
            self.mesh.bad_logged += 1;
            if self.mesh.bad_logged <= BAD_FRAME_LINES {
                self.log(format_args!("{line}"));
            }
            if self.mesh.bad_logged == BAD_FRAME_LINES {
                self.log(format_args!("further bad frames are counted, not logged"));
            }
        }
        if !inbox.is_empty() {
            self.heard(peer)?;
        }
        for env in inbox {
            let Some(msg) = env.msg else {
                *self.stats.received.entry(HEARTBEAT.to_string()).or_default() += 1;
                continue;
            };
            self.clock = self.clock.max(env.clock).saturating_add(1);
            let inc = self.mesh.peers[idx].incarnation;
            self.trace.recv(self.clock, peer.0, inc, env.clock, msg.kind());
            tally(&mut self.stats.received, msg.kind());
            self.input(Input::Message { from: peer, msg })?;
        }
        match end {
            ChannelEnd::Refused(why) => Err(ModelBreach(why).into()),
            ChannelEnd::Closed(why) => {
                if let Some(why) = why {
                    self.log(format_args!("{why}"));
                }
                self.lost(peer)
            }
            ChannelEnd::Again => {
                self.again.push(Token(PEER_BASE + idx));
                Ok(())
            }
            ChannelEnd::Open => Ok(()),
        }
    }

    /// `peer` is gone (its channel closed, it cannot be dialed, or a new incarnation
    /// replaces it): close its connections, forget what was queued for it, and tell the
    /// algorithm, unless it was told already.
    pub(super) fn lost(&mut self, peer: PeerId) -> anyhow::Result<()> {
        let idx = peer.index();
        let p = &mut self.mesh.peers[idx];
        if let Some(mut stream) = p.stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
        }
        p.reader = FrameReader::default();
        p.redial = None;
        let was_down = std::mem::replace(&mut p.down, true);
        // Messages to a crashed process are lost with it: what never left is traced as
        // such, oldest first. What did leave and was never read died with the peer,
        // and nobody can say which it was.
        self.trace_unsent(peer, "peer-down");
        if was_down {
            return Ok(());
        }
        self.channel_down(peer)
    }

    /// Empty every queue of messages for `peer` (its outgoing queue, then what a
    /// partition holds, then what latency delays), with a DROP line in the trace for
    /// each message that never left, `why` it did not (what a partition held says
    /// `partition`).
    pub(super) fn trace_unsent(&mut self, peer: PeerId, why: &str) {
        let idx = peer.index();
        let unsent = self.mesh.peers[idx].take_unsent();
        let held = std::mem::take(&mut self.net.held[idx]);
        let delayed = std::mem::take(&mut self.net.delayed[idx]);
        if !self.trace.recording() {
            return;
        }
        self.trace_dropped(peer, &unsent, why);
        self.trace_dropped(peer, &held, "partition");
        for (_, frame) in delayed {
            self.trace_dropped(peer, &frame, why);
        }
    }

    /// Send `msg` to `to` (the host has checked that `to` is a peer). A message too big
    /// for one frame is never sent: it is a [`ModelBreach`] of this worker, whether or
    /// not `to` is up, since the receiver would have to refuse it and close the channel.
    pub(super) fn send(&mut self, to: PeerId, msg: &A::Msg) -> anyhow::Result<()> {
        let clock = self.clock.saturating_add(1);
        let env = Envelope { from: self.me, to, clock, msg: Some(msg.clone()) };
        let mut frame = Vec::new();
        if let Err(wire::FrameError::Oversized(n)) = wire::try_encode(&mut frame, &env) {
            let (kind, cap) = (msg.kind(), wire::MAX_FRAME);
            let kind = super::cut(kind);
            return Err(ModelBreach(format!(
                "message {kind} to {to} is {n} bytes, over the {cap}-byte frame cap"
            ))
            .into());
        }
        // Peers that read slower than this worker sends (a program flooding them, one
        // stuck in its own program) would make the queues grow without end.
        let unsent: usize =
            self.mesh.peers.iter().map(|p| p.out.len().saturating_sub(p.written)).sum::<usize>()
                + self.net.held.iter().map(Vec::len).sum::<usize>();
        if unsent + frame.len() > MAX_UNSENT {
            let kind = super::cut(msg.kind());
            return Err(ModelBreach(format!(
                "message {kind} to {to} would put {} bytes in its queues to peers that have not read them, over the {MAX_UNSENT}-byte cap",
                unsent + frame.len()
            ))
            .into());
        }
        self.clock = clock;
        tally(&mut self.stats.sent, msg.kind());
        self.trace.send(self.clock, to.0, msg.kind());
        if self.mesh.peers[to.index()].down {
            self.trace.drop(self.clock, to.0, msg.kind(), "down");
        }
        self.send_frame(to, &env, frame);
        Ok(())
    }

    /// Send a heartbeat to `to`: an envelope with no message (`detector.rs`). It takes
    /// the same path as a message, faults and partitions included.
    pub(super) fn send_heartbeat(&mut self, to: PeerId) {
        let env = Envelope { from: self.me, to, clock: self.clock, msg: None };
        *self.stats.sent.entry(HEARTBEAT.to_string()).or_default() += 1;
        let mut frame = Vec::new();
        // An envelope with no message is a few bytes.
        wire::encode(&mut frame, &env);
        self.send_frame(to, &env, frame);
    }

    /// Queue `env`, encoded as `frame`, for `to`, through the network faults if any.
    fn send_frame(&mut self, to: PeerId, env: &Envelope<Option<A::Msg>>, frame: Vec<u8>) {
        if self.mesh.peers[to.index()].down {
            // Nobody to deliver it to; a new incarnation starts afresh.
            return;
        }
        if !self.net.active && self.net.groups.is_none() {
            self.mesh.peers[to.index()].out.extend_from_slice(&frame);
            return;
        }
        self.send_with_faults(to, env, frame);
    }

    /// One non-blocking pass over every outgoing queue.
    pub(super) fn flush_all(&mut self) -> anyhow::Result<()> {
        for i in 0..self.mesh.peers.len() {
            let p = &mut self.mesh.peers[i];
            if p.written == p.out.len() {
                continue;
            }
            if p.written > 64 * 1024 {
                // Backed up for a while: drop what is written before writing more.
                p.forget_written();
            }
            let Some(stream) = p.stream.as_mut() else {
                continue;
            };
            let mut failed = None;
            while p.written < p.out.len() {
                match stream.write(&p.out[p.written..]) {
                    Ok(0) => break,
                    Ok(k) => p.written += k,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if p.written == p.out.len() {
                p.out.clear();
                (p.written, p.frames_from) = (0, 0);
            }
            // Ask to hear of free space only while something waits for it.
            let backed_up = !p.out.is_empty() && failed.is_none();
            if backed_up != p.write_interest {
                let interest =
                    if backed_up { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
                let token = Token(PEER_BASE + i);
                match self.poll.registry().reregister(stream, token, interest) {
                    Ok(()) => p.write_interest = backed_up,
                    Err(e) => failed = Some(e),
                }
            }
            if let Some(e) = failed {
                let peer = PeerId(i as u32);
                // A peer that is gone shows as EPIPE or a reset: reading reports it down.
                if !matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) {
                    self.log(format_args!("writing to {peer} failed: {e}"));
                }
                // Take what it sent before it went, then report it down.
                self.peer_readable(peer)?;
                self.lost(peer)?;
            }
        }
        Ok(())
    }
}

/// What one read of a peer's channel gave ([`read_channel`]).
struct ChannelRead<M> {
    /// The envelopes from the peer to us, in order.
    inbox: Vec<Envelope<Option<M>>>,
    /// A line for each frame dropped as malformed or misaddressed.
    bad: Vec<String>,
    end: ChannelEnd,
}

/// How a peer's channel stands after a read.
#[derive(Debug, PartialEq, Eq)]
enum ChannelEnd {
    /// Nothing more for now.
    Open,
    /// The read budget ran out: read again after serving everyone else.
    Again,
    /// The channel closed: the peer is gone (with a line to log, if there is one).
    Closed(Option<String>),
    /// The peer sent what this runtime must refuse (a length over the frame cap, after
    /// which the stream cannot be read): the line saying so. The peer is alive, so this
    /// is no closed channel and no peer down, but a breach of the model (`ModelBreach`).
    Refused(String),
}

/// Read what `stream`, `peer`'s channel to worker `me`, has now, into `reader`, and
/// take out every whole frame.
fn read_channel<M: DeserializeOwned, R: Read>(
    reader: &mut FrameReader,
    stream: &mut R,
    peer: PeerId,
    me: PeerId,
) -> ChannelRead<M> {
    let fill = reader.fill(stream);
    let mut read = ChannelRead { inbox: Vec::new(), bad: Vec::new(), end: ChannelEnd::Open };
    loop {
        match reader.next_frame() {
            Ok(Some(body)) => match wire::decode::<Envelope<Option<M>>>(body) {
                Ok(env) if env.from == peer && env.to == me => read.inbox.push(env),
                Ok(env) => read
                    .bad
                    .push(format!("dropping a frame on {peer}'s channel addressed {}→{}", env.from, env.to)),
                Err(e) => read.bad.push(format!("dropping a frame from {peer}: {e}")),
            },
            Ok(None) => break,
            Err(e) => {
                read.end = ChannelEnd::Refused(format!(
                    "the runtime refused a frame from {peer}, which is alive: {e}; its channel cannot be read past it"
                ));
                return read;
            }
        }
    }
    read.end = match fill {
        Ok(Fill::Eof) => ChannelEnd::Closed(reader.finish().err().map(|e| format!("{peer}'s {e}"))),
        // A reset is how a killed peer's channel usually ends: as ordinary as EOF.
        Err(e) if e.is_reset() => ChannelEnd::Closed(None),
        Err(e) => ChannelEnd::Closed(Some(format!("reading from {peer} failed: {e}"))),
        Ok(Fill::Budget) => ChannelEnd::Again,
        Ok(Fill::WouldBlock) => ChannelEnd::Open,
    };
    read
}

/// Count one message of type `kind`: past [`trace::MAX_TYPES`] types, under
/// [`trace::OTHER_TYPES`], so that a program inventing a type per message costs its
/// worker a bounded count, and the statistics still fit their frame.
fn tally(counts: &mut std::collections::BTreeMap<String, u64>, kind: &str) {
    let key =
        if counts.contains_key(kind) || counts.len() < trace::MAX_TYPES { kind } else { trace::OTHER_TYPES };
    match counts.get_mut(key) {
        Some(c) => *c += 1,
        None => {
            counts.insert(key.to_string(), 1);
        }
    }
}

/// The frames of an outgoing queue from `from`, where one starts, as the range each
/// takes up. Every frame queued is whole, so the walk ends at the end of the queue.
fn frames(queue: &[u8], from: usize) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut at = from;
    std::iter::from_fn(move || {
        let len = u32::from_be_bytes(queue.get(at..at + 4)?.try_into().ok()?) as usize;
        let frame = at..(at + 4 + len).min(queue.len());
        at = frame.end;
        Some(frame)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frames_of_a_queue_are_walked_from_a_boundary() {
        let mut queue = vec![9, 9]; // the rest of a hello, already cut
        for body in [&b"ab"[..], b"", b"xyz"] {
            wire::encode(&mut queue, &body.to_vec());
        }
        let lens: Vec<usize> = frames(&queue, 2).map(|f| f.len()).collect();
        let first = frames(&queue, 2).next().unwrap();
        assert_eq!(first.start, 2);
        assert_eq!(frames(&queue, 2).last().unwrap().end, queue.len());
        assert_eq!(lens.len(), 3);
        assert!(lens[1] < lens[0] && lens[0] < lens[2], "{lens:?}");
        assert_eq!(frames(&queue, queue.len()).count(), 0);
    }

    /// A queue as `connect` leaves it: two bytes of a hello, then three messages.
    fn queued() -> (Peer, Vec<std::ops::Range<usize>>) {
        let mut p = Peer { out: vec![7, 7], frames_from: 2, ..Peer::default() };
        for body in ["one", "two", "three"] {
            wire::encode(&mut p.out, &body);
        }
        let spans = frames(&p.out, 2).collect();
        (p, spans)
    }

    fn bodies(queue: &[u8]) -> Vec<String> {
        frames(queue, 0).map(|f| wire::decode(&queue[f.start + 4..f.end]).unwrap()).collect()
    }

    #[test]
    fn what_was_never_wholly_written_is_what_is_unsent() {
        let (mut p, spans) = queued();
        p.written = 1; // the hello is not out yet: every message is unsent
        assert_eq!(bodies(&p.take_unsent()), ["one", "two", "three"]);
        let (mut p, _) = queued();
        p.written = spans[1].start + 1; // "two" is cut off halfway
        assert_eq!(bodies(&p.take_unsent()), ["two", "three"]);
        let (mut p, _) = queued();
        p.written = spans[1].end;
        assert_eq!(bodies(&p.take_unsent()), ["three"]);
        assert_eq!((p.out.len(), p.written, p.frames_from), (0, 0, 0));
    }

    #[test]
    fn forgetting_what_is_written_keeps_the_queue_in_whole_frames() {
        let (mut p, spans) = queued();
        p.written = spans[1].start + 2;
        p.forget_written();
        // What is left starts with the frame being written, and the queue's end is kept.
        assert_eq!((p.written, p.frames_from), (2, 0));
        assert_eq!(bodies(&p.out), ["two", "three"]);
        assert_eq!(bodies(&p.take_unsent()), ["two", "three"]);
        // Inside the hello: only written bytes go, and the frames stay where they were.
        let (mut p, _) = queued();
        p.written = 1;
        p.forget_written();
        assert_eq!((p.written, p.frames_from, p.out.len()), (0, 1, spans[2].end - 1));
    }

    /// What worker 0 reads from `bytes`, on worker 1's channel.
    fn read_from_w1(bytes: &[u8]) -> ChannelRead<String> {
        read_channel::<String, _>(&mut FrameReader::default(), &mut &bytes[..], PeerId(1), PeerId(0))
    }

    fn envelope(from: u32, msg: &str) -> Vec<u8> {
        let mut frame = Vec::new();
        let env = Envelope { from: PeerId(from), to: PeerId(0), clock: 1, msg: Some(msg.to_string()) };
        wire::encode(&mut frame, &env);
        frame
    }

    #[test]
    fn a_length_over_the_cap_from_a_live_peer_is_refused_not_a_closed_channel() {
        // A message, then a length over the cap, then more: the stream ends after it too
        // (a slice always ends), yet the peer is not gone, so it is not reported down.
        let mut bytes = envelope(1, "hi");
        bytes.extend_from_slice(&((wire::MAX_FRAME + 1) as u32).to_be_bytes());
        bytes.extend_from_slice(&envelope(1, "never read"));
        let read = read_from_w1(&bytes);
        assert_eq!(read.inbox.len(), 1, "what came before is delivered");
        assert_eq!(read.inbox[0].msg.as_deref(), Some("hi"));
        match read.end {
            ChannelEnd::Refused(why) => {
                assert!(why.contains("refused a frame from w1, which is alive"), "{why}");
                assert!(why.contains(&format!("{} bytes", wire::MAX_FRAME + 1)), "{why}");
            }
            other => panic!("a refused frame must not close the channel: {other:?}"),
        }
    }

    #[test]
    fn a_peer_whose_stream_ends_is_gone_and_bad_frames_keep_the_channel() {
        // The end of the stream is a closed channel: the peer died.
        let mut bytes = envelope(1, "last words");
        assert_eq!(read_from_w1(&bytes).end, ChannelEnd::Closed(None));
        // Cut inside a frame: still a death, with a line.
        bytes.extend_from_slice(&envelope(1, "cut")[..5]);
        let read = read_from_w1(&bytes);
        assert!(
            matches!(&read.end, ChannelEnd::Closed(Some(why)) if why.contains("w1's stream ended inside"))
        );
        // A misaddressed frame and a body that does not decode are dropped, one line each.
        let mut bytes = envelope(2, "not from w1");
        bytes.extend_from_slice(&[0, 0, 0, 1, 0xc1]);
        bytes.extend_from_slice(&envelope(1, "fine"));
        let read = read_from_w1(&bytes);
        assert_eq!((read.inbox.len(), read.bad.len()), (1, 2), "{:?}", read.bad);
    }

    #[test]
    fn every_peer_may_dial_at_once_without_hitting_the_pending_cap() {
        for n in 1..=256 {
            assert!(max_pending(n) >= n as usize, "n = {n}");
        }
    }
}
