//! The channels: reading a peer's frames (budgeted; bad frames dropped and counted, a
//! length over the cap refused), framing a message (or refusing one the runtime cannot
//! carry), each peer's outgoing queue kept in whole frames and written without ever
//! blocking, and losing a peer with what never left its queue.

use std::io::{self, Read, Write};

use mio::{Interest, Token};
use serde::de::DeserializeOwned;

use crate::algorithm::{Message, PeerId};
use crate::wire::{self, Envelope, Fill, FrameReader};

use crate::netfaults::Fate;

use super::{Mesh, MeshEvent, Peer, Sent, Todo, BAD_FRAME_LINES, EXTRA_BASE, MAX_UNSENT, PEER_BASE};

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

impl<M: Message> Mesh<M> {
    /// Bytes queued for peers and written to none of them yet.
    fn unsent(&self) -> usize {
        self.peers.iter().map(|p| p.out.len().saturating_sub(p.written)).sum()
    }

    /// `env` as a frame, or why the runtime cannot carry its message: its body is over the frame
    /// cap (the receiver would have to refuse it and close the channel), or it would
    /// take what this worker holds unwritten for its peers (with `held_elsewhere`, what
    /// the network faults hold) past [`MAX_UNSENT`].
    #[cfg(test)]
    pub(super) fn frame(&self, env: &Envelope<Option<M>>, held_elsewhere: usize) -> Result<Vec<u8>, String> {
        let mut frame = Vec::new();
        self.frame_into(&mut frame, env, held_elsewhere).map(|()| frame)
    }

    /// [`Mesh::frame`] into `frame`, which must be empty (and is left so on `Err`).
    fn frame_into(
        &self,
        frame: &mut Vec<u8>,
        env: &Envelope<Option<M>>,
        held_elsewhere: usize,
    ) -> Result<(), String> {
        let Some(msg) = &env.msg else {
            // A heartbeat is a few bytes, whatever the queues hold.
            wire::encode(frame, env);
            return Ok(());
        };
        let (kind, to) = (msg.kind(), env.to);
        if let Err(wire::FrameError::Oversized(n)) = wire::try_encode(frame, env) {
            let (kind, cap) = (crate::cut(kind), wire::MAX_FRAME);
            return Err(format!("message {kind} to {to} is {n} bytes, over the {cap}-byte frame cap"));
        }
        // Peers that read slower than this worker sends (a program flooding them, one
        // stuck in its own program) would make the queues grow without end.
        let unsent = self.unsent() + held_elsewhere + frame.len();
        if unsent > MAX_UNSENT {
            frame.clear();
            let kind = crate::cut(kind);
            return Err(format!(
                "message {kind} to {to} would put {unsent} bytes in its queues to peers that have not read them, over the {MAX_UNSENT}-byte cap"
            ));
        }
        Ok(())
    }

    /// Send `env` to its peer in one call: framed (`Err`, as [`Mesh::frame`] says, if
    /// the runtime cannot carry it), dropped if the peer is down, else handed to `fate`
    /// (the network faults, given `held_elsewhere` bytes of what they hold) and queued if
    /// it is to go now; [`Mesh::flush_all`] writes it at the end of the loop's turn.
    pub(crate) fn send(
        &mut self,
        env: &Envelope<Option<M>>,
        held_elsewhere: usize,
        fate: impl FnOnce(Vec<u8>) -> Fate,
    ) -> Result<Sent, String> {
        // Framed in a buffer that lives on: no allocation per message, unless the
        // network faults keep the frame.
        let mut frame = std::mem::take(&mut self.scratch);
        frame.clear();
        self.frame_into(&mut frame, env, held_elsewhere)?;
        if self.peers[env.to.index()].down {
            self.scratch = frame;
            return Ok(Sent::Down);
        }
        Ok(match fate(frame) {
            Fate::Now(frame) => {
                self.queue(env.to, &frame);
                self.scratch = frame;
                Sent::Queued
            }
            kept => Sent::Kept(kept),
        })
    }

    /// Put `frame` at the end of `to`'s outgoing queue ([`Mesh::flush_all`] writes it).
    pub(crate) fn queue(&mut self, to: PeerId, frame: &[u8]) {
        self.peers[to.index()].out.extend_from_slice(frame);
    }

    /// Read what `peer`'s channel (or its second channel, `extra`) has.
    pub(super) fn read(&mut self, peer: PeerId, extra: bool, edge: bool, then: &mut Vec<Todo<M>>) {
        let idx = peer.index();
        let p = &mut self.peers[idx];
        let (stream, reader) = match (extra, p.stream.as_mut(), p.extra.as_mut()) {
            (false, Some(s), _) => (s, &mut p.reader),
            (true, _, Some((s, r))) => (s, r),
            _ => return,
        };
        let inbox = std::mem::take(&mut self.inbox);
        let ChannelRead { mut inbox, bad, end } =
            read_channel::<M, _>(reader, stream, peer, self.me, edge, inbox);
        for line in bad {
            self.bad_frames += 1;
            self.bad_logged += 1;
            if self.bad_logged <= BAD_FRAME_LINES {
                then.push(Todo::Emit(MeshEvent::Log(line)));
            }
            if self.bad_logged == BAD_FRAME_LINES {
                then.push(Todo::Emit(MeshEvent::Log("further bad frames are counted, not logged".into())));
            }
        }
        if !inbox.is_empty() {
            then.push(Todo::Emit(MeshEvent::Heard(peer)));
        }
        then.extend(inbox.drain(..).map(|envelope| Todo::Emit(MeshEvent::Message { from: peer, envelope })));
        self.inbox = inbox;
        match end {
            ChannelEnd::Refused(why) => then.push(Todo::Emit(MeshEvent::Breach(why))),
            ChannelEnd::Closed(why) => {
                if let Some(why) = why {
                    then.push(Todo::Emit(MeshEvent::Log(why)));
                }
                then.push(Todo::Lose(peer));
            }
            ChannelEnd::Again => {
                let base = if extra { EXTRA_BASE } else { PEER_BASE };
                then.push(Todo::Emit(MeshEvent::Again(Token(base + idx))))
            }
            ChannelEnd::Open => {}
        }
    }

    /// `peer` is gone: close its connection, take what was queued for it, and say so.
    pub(super) fn lose(&mut self, peer: PeerId, then: &mut Vec<Todo<M>>) {
        let p = &mut self.peers[peer.index()];
        if let Some(mut stream) = p.stream.take() {
            let _ = self.registry.deregister(&mut stream);
        }
        if let Some((mut stream, _)) = p.dialing.take() {
            let _ = self.registry.deregister(&mut stream);
        }
        if let Some((mut stream, _)) = p.extra.take() {
            let _ = self.registry.deregister(&mut stream);
        }
        p.reader = FrameReader::default();
        p.redial = None;
        let was_down = std::mem::replace(&mut p.down, true);
        // Messages to a crashed process are lost with it: what never left goes back to
        // the loop, to be traced as such. What did leave and was never read died with
        // the peer, and nobody can say which it was.
        let unsent = p.take_unsent();
        then.push(Todo::Emit(MeshEvent::Down { peer, unsent, was_down }));
    }

    /// This worker is leaving: what is still queued for `peer` never leaves.
    pub(crate) fn take_unsent(&mut self, peer: PeerId) -> Vec<u8> {
        self.peers[peer.index()].take_unsent()
    }

    /// One non-blocking pass over every outgoing queue, in peer order.
    pub(crate) fn flush_all(&mut self) {
        self.todo.push_back(Todo::Flush(PeerId(0)));
    }

    /// Write the queues from `from` on, as far as each socket takes them. A peer whose
    /// channel failed is read and lost before the next queue is written, since what the
    /// loop does with its last messages may queue more for the others.
    pub(super) fn flush(&mut self, from: PeerId, then: &mut Vec<Todo<M>>) {
        for i in from.index()..self.peers.len() {
            if self.flush_one(PeerId(i as u32), then) {
                then.push(Todo::Flush(PeerId(i as u32 + 1)));
                return;
            }
        }
    }

    /// Write what `peer`'s queue has, as far as its socket takes it; true if the
    /// channel failed (and `then` reads and loses it).
    fn flush_one(&mut self, peer: PeerId, then: &mut Vec<Todo<M>>) -> bool {
        let i = peer.index();
        // A TCP dial under way: nothing is written before it ends, either way.
        if let Some(lost) = self.dial_progress(peer, then) {
            return lost;
        }
        let p = &mut self.peers[i];
        if p.written == p.out.len() {
            return false;
        }
        if p.written > 64 * 1024 {
            // Backed up for a while: drop what is written before writing more.
            p.forget_written();
        }
        if p.stream.is_none() {
            if !self.lazy || p.down || p.redial.is_some() {
                return false;
            }
            if let Some(lost) = self.dial_lazily(peer, then) {
                return lost;
            }
        }
        let p = &mut self.peers[i];
        let Some(stream) = p.stream.as_mut() else {
            return false;
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
            match self.registry.reregister(stream, Token(PEER_BASE + i), interest) {
                Ok(()) => p.write_interest = backed_up,
                Err(e) => failed = Some(e),
            }
        }
        if let Some(e) = failed {
            // A peer that is gone shows as EPIPE or a reset: reading reports it down.
            if !matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) {
                then.push(Todo::Emit(MeshEvent::Log(format!("writing to {peer} failed: {e}"))));
            }
            // Take what it sent before it went, then report it down.
            then.push(Todo::Read(peer));
            then.push(Todo::ReadExtra(peer));
            then.push(Todo::Lose(peer));
            return true;
        }
        false
    }
}

/// The messages among `frames` (whole frames this worker encoded), with the clock each
/// was sent at: to trace what never left.
pub(crate) fn messages<M: DeserializeOwned>(frames: &[u8]) -> Vec<(u64, M)> {
    let mut reader = FrameReader::default();
    reader.push(frames);
    let mut out = Vec::new();
    // Our own frames, whole: nothing here can fail to decode.
    while let Ok(Some(body)) = reader.next_frame() {
        if let Ok(Envelope { clock, msg: Some(msg), .. }) = wire::decode::<Envelope<Option<M>>>(body) {
            out.push((clock, msg));
        }
    }
    out
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
/// take out every whole frame, into `inbox` (empty: a buffer kept between reads).
fn read_channel<M: DeserializeOwned, R: Read>(
    reader: &mut FrameReader,
    stream: &mut R,
    peer: PeerId,
    me: PeerId,
    edge: bool,
    inbox: Vec<Envelope<Option<M>>>,
) -> ChannelRead<M> {
    let fill = if edge { reader.fill_until_short(stream) } else { reader.fill(stream) };
    let mut read = ChannelRead { inbox, bad: Vec::new(), end: ChannelEnd::Open };
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
        let inbox = Vec::new();
        read_channel::<String, _>(
            &mut FrameReader::default(),
            &mut &bytes[..],
            PeerId(1),
            PeerId(0),
            false,
            inbox,
        )
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
}
