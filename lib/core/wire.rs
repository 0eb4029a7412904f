//! Frames on the wire: a 4-byte big-endian length, then a MessagePack body.
//!
//! Every stream between workers, and between a worker and the supervisor, carries these
//! frames. MessagePack decoding ignores trailing bytes, so the frame carries its own
//! length, and the length is capped before anything is allocated. [`FrameReader`]
//! collects frames from a non-blocking stream that may hand over any number of bytes at
//! a time; [`encode`] appends one frame to an outgoing buffer.
//!
//! # Bad input
//!
//! Framing and decoding are separate steps, and so are their failures:
//!
//! - **A body that does not decode** ([`FrameError::Malformed`], from [`decode`]): the
//!   length header still said where the frame ends, so the stream is still in step.
//!   The reader has already moved past the frame; the caller drops that one frame,
//!   counts it (`bad_frames` in the worker's statistics), says so on stderr and keeps
//!   the connection. The next frame is read as if nothing had happened.
//! - **A length above [`MAX_FRAME`]** ([`FrameError::Oversized`], from
//!   [`FrameReader::next_frame`]): nothing after it can be trusted, since the header may
//!   itself be garbage. The reader refuses it before allocating and keeps refusing it.
//!   On a connection that has not proved itself the caller drops it
//!   (`dropped_connections`), with a line on stderr; from a peer that has, the runtime
//!   stops the run instead (`runtime::ModelBreach`), since closing the channel would
//!   make a live peer look dead. No sender ever writes such a frame: [`try_encode`]
//!   refuses to make it.
//! - **A stream that ends inside a frame** ([`FrameReader::finish`] gives
//!   [`FrameError::Truncated`]): the partial frame is discarded, never delivered; the
//!   connection is closed anyway, so it is reported like any other closed channel.
//!
//! [`FrameReader::fill`] reads at most about [`FILL_BUDGET`] bytes ahead of what has
//! been taken out as frames, so a peer that floods a stream can neither make the reader
//! buffer without bound nor keep one call busy for ever: the caller takes the frames out
//! and calls again (when it gets [`Fill::Budget`]) after serving everyone else.

use std::io::{self, Read};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::algorithm::PeerId;

/// The largest body a frame may have. Algorithm messages are tens of bytes; anything
/// near this is garbage or an attack.
pub const MAX_FRAME: usize = 64 * 1024;

/// How many unconsumed bytes [`FrameReader::fill`] gathers before it stops and lets the
/// caller take frames out: enough for several frames of the largest size, so it always
/// makes progress.
pub const FILL_BUDGET: usize = 4 * (MAX_FRAME + 4);

/// What can be wrong with incoming bytes.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The length header announces more than [`MAX_FRAME`]: the stream cannot be trusted.
    #[error("frame of {0} bytes exceeds the {MAX_FRAME}-byte cap")]
    Oversized(usize),
    /// The body is not a valid message of the expected type.
    #[error("malformed frame body: {0}")]
    Malformed(String),
    /// The stream ended in the middle of a frame.
    #[error("stream ended inside a frame ({0} bytes left over)")]
    Truncated(usize),
    /// Reading failed.
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
}

impl FrameError {
    /// The peer reset the connection: what a killed process's channel usually gives,
    /// no more remarkable than EOF.
    pub fn is_reset(&self) -> bool {
        matches!(self, FrameError::Io(e) if e.kind() == io::ErrorKind::ConnectionReset)
    }
}

/// An algorithm message with its routing and the sender's Lamport clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope<M> {
    /// Sender.
    pub from: PeerId,
    /// Receiver.
    pub to: PeerId,
    /// The sender's Lamport clock when it sent this.
    pub clock: u64,
    /// The algorithm's message.
    pub msg: M,
}

/// Append one frame holding `value` to `buf`. For frames whose size is bounded by the
/// code that makes them (hellos, the supervisor's orders); anything whose size a node
/// or a program decides goes through [`try_encode`].
pub fn encode<T: Serialize>(buf: &mut Vec<u8>, value: &T) {
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    // Writing into a Vec cannot fail, and our own types always serialise.
    rmp_serde::encode::write(buf, value).expect("serialising into a Vec");
    let len = (buf.len() - start - 4) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Append one frame holding `value` to `buf`, unless its body would be over
/// [`MAX_FRAME`]: then `buf` is left as it was and the error says how big it is. A
/// frame the receiver must refuse is never put on the wire, since a refused frame ends
/// a whole stream (see the module documentation).
pub fn try_encode<T: Serialize>(buf: &mut Vec<u8>, value: &T) -> Result<(), FrameError> {
    let start = buf.len();
    encode(buf, value);
    let len = buf.len() - start - 4;
    if len > MAX_FRAME {
        buf.truncate(start);
        return Err(FrameError::Oversized(len));
    }
    Ok(())
}

/// Decode a frame body.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    rmp_serde::from_slice(body).map_err(|e| FrameError::Malformed(e.to_string()))
}

/// Gathers frames from a stream that delivers bytes in arbitrary pieces.
///
/// The bytes live in `buf[start..end]`; the stream is read straight into the room after
/// `end`, which is zeroed once, when the buffer grows, and reused from then on (a fresh
/// zeroed chunk on every read was a measurable part of a message's cost).
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// What one call to [`FrameReader::fill`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Fill {
    /// The stream has no more bytes for now.
    WouldBlock,
    /// The stream is closed.
    Eof,
    /// The reader holds [`FILL_BUDGET`] bytes not yet taken out as frames: take them out,
    /// then call again (the stream may still have more).
    Budget,
}

/// The most one `read` asks a stream for.
const CHUNK: usize = 16 * 1024;

impl FrameReader {
    /// Read what the stream has now: until it would block, ends, or the reader holds
    /// [`FILL_BUDGET`] unconsumed bytes.
    pub fn fill<R: Read>(&mut self, r: &mut R) -> Result<Fill, FrameError> {
        self.fill_from(r, false)
    }

    /// As [`fill`](Self::fill), but a read that returns less than it asked for counts as
    /// "would block": a stream socket hands over all it holds, so it held no more, and
    /// the readiness event that brought us here comes again for new bytes. That saves
    /// the read that fails with EAGAIN after each message. Only for a readiness event
    /// that did not also report the peer's end (which comes only once).
    pub fn fill_until_short<R: Read>(&mut self, r: &mut R) -> Result<Fill, FrameError> {
        self.fill_from(r, true)
    }

    fn fill_from<R: Read>(&mut self, r: &mut R, stop_short: bool) -> Result<Fill, FrameError> {
        self.compact();
        loop {
            if self.leftover() >= FILL_BUDGET {
                return Ok(Fill::Budget);
            }
            self.room(CHUNK);
            match r.read(&mut self.buf[self.end..self.end + CHUNK]) {
                Ok(0) => return Ok(Fill::Eof),
                Ok(k) => {
                    self.end += k;
                    if stop_short && k < CHUNK {
                        return Ok(Fill::WouldBlock);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Fill::WouldBlock),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Make room for `n` bytes after `end`: what grows is zeroed, once.
    fn room(&mut self, n: usize) {
        if self.buf.len() < self.end + n {
            self.buf.resize(self.end + n, 0);
        }
    }

    /// Feed bytes in directly (for blocking readers and tests).
    pub fn push(&mut self, bytes: &[u8]) {
        self.room(bytes.len());
        self.buf[self.end..self.end + bytes.len()].copy_from_slice(bytes);
        self.end += bytes.len();
    }

    /// The next complete frame body, if one has arrived. An oversized header is an error
    /// that leaves the stream unusable.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        let avail = &self.buf[self.start..self.end];
        if avail.len() < 4 {
            self.compact();
            return Ok(None);
        }
        let len = u32::from_be_bytes([avail[0], avail[1], avail[2], avail[3]]) as usize;
        if len > MAX_FRAME {
            return Err(FrameError::Oversized(len));
        }
        if avail.len() < 4 + len {
            self.compact();
            return Ok(None);
        }
        let body = self.start + 4..self.start + 4 + len;
        self.start = body.end;
        Ok(Some(&self.buf[body]))
    }

    /// Bytes received but not yet taken out as frames.
    pub fn leftover(&self) -> usize {
        self.end - self.start
    }

    /// The stream has ended: an error if it ended inside a frame. Call after
    /// [`next_frame`](Self::next_frame) has taken out every complete frame.
    pub fn finish(&self) -> Result<(), FrameError> {
        match self.leftover() {
            0 => Ok(()),
            n => Err(FrameError::Truncated(n)),
        }
    }

    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }
}

/// Read one whole frame from a blocking stream; `Ok(None)` on a clean end of stream.
pub fn read_blocking<T: DeserializeOwned, R: Read>(r: &mut R) -> Result<Option<T>, FrameError> {
    let mut header = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut header[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(FrameError::Truncated(got)),
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::Oversized(len));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => FrameError::Truncated(4),
        _ => FrameError::Io(e),
    })?;
    decode(&body).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small frame body for the tests.
    #[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
    struct Ping {
        from: PeerId,
        incarnation: u32,
    }

    #[test]
    fn frames_survive_arbitrary_splits() {
        let mut bytes = Vec::new();
        for i in 0..5u32 {
            encode(&mut bytes, &Ping { from: PeerId(i), incarnation: i * 2 });
        }
        for step in [1, 2, 3, 7, 100] {
            let mut r = FrameReader::default();
            let mut got = Vec::new();
            for piece in bytes.chunks(step) {
                r.push(piece);
                while let Some(body) = r.next_frame().unwrap() {
                    got.push(decode::<Ping>(body).unwrap());
                }
            }
            assert_eq!(got.len(), 5, "split {step}");
            assert_eq!(got[4], Ping { from: PeerId(4), incarnation: 8 });
            assert_eq!(r.leftover(), 0);
        }
    }

    #[test]
    fn oversized_header_is_refused_before_allocating() {
        let mut r = FrameReader::default();
        r.push(&u32::MAX.to_be_bytes());
        assert!(matches!(r.next_frame(), Err(FrameError::Oversized(_))));
    }

    #[test]
    fn a_frame_over_the_cap_is_never_encoded() {
        let mut buf = vec![1, 2, 3];
        // A body exactly at the cap goes; one byte more does not, and `buf` is untouched.
        let fits = vec![b'x'; MAX_FRAME - 3]; // MessagePack `bin 16`: 3 bytes, then the bytes
        try_encode(&mut buf, &serde_bytes_like(&fits)).unwrap();
        assert_eq!(buf.len(), 3 + 4 + MAX_FRAME);
        let mut buf = vec![1, 2, 3];
        let over = vec![b'x'; MAX_FRAME - 2];
        let err = try_encode(&mut buf, &serde_bytes_like(&over)).unwrap_err();
        assert!(matches!(err, FrameError::Oversized(n) if n == MAX_FRAME + 1), "{err}");
        assert_eq!(buf, [1, 2, 3]);
    }

    /// A byte string, which MessagePack encodes as `bin`: a header, then the bytes.
    fn serde_bytes_like(bytes: &[u8]) -> impl Serialize + '_ {
        struct Bin<'a>(&'a [u8]);
        impl Serialize for Bin<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        Bin(bytes)
    }

    #[test]
    fn garbage_body_is_malformed_not_a_panic() {
        let mut r = FrameReader::default();
        r.push(&[0, 0, 0, 3, 0xc1, 0xc1, 0xc1]);
        let body = r.next_frame().unwrap().unwrap();
        assert!(matches!(decode::<Ping>(body), Err(FrameError::Malformed(_))));
    }

    /// Every frame body the reader hands out, as `Ok(Ping)` or the decode error, and how
    /// reading ended.
    fn read_all(bytes: &[u8]) -> (Vec<Result<Ping, FrameError>>, Result<(), FrameError>) {
        let mut r = FrameReader::default();
        let mut src = bytes;
        let mut got = Vec::new();
        loop {
            let fill = r.fill(&mut src).unwrap();
            loop {
                match r.next_frame() {
                    Ok(Some(body)) => got.push(decode::<Ping>(body)),
                    Ok(None) => break,
                    Err(e) => return (got, Err(e)),
                }
            }
            match fill {
                Fill::Budget => continue,
                Fill::Eof => return (got, r.finish()),
                Fill::WouldBlock => unreachable!("a slice never blocks"),
            }
        }
    }

    #[test]
    fn a_bad_body_is_dropped_and_the_next_frame_still_arrives() {
        let mut bytes = vec![0, 0, 0, 3, 0xc1, 0xc1, 0xc1];
        // A well-formed MessagePack value of the wrong shape is just as bad.
        encode(&mut bytes, &"not a hello");
        encode(&mut bytes, &Ping { from: PeerId(2), incarnation: 1 });
        let (got, end) = read_all(&bytes);
        assert_eq!(got.len(), 3);
        assert!(matches!(got[0], Err(FrameError::Malformed(_))), "{:?}", got[0]);
        assert!(matches!(got[1], Err(FrameError::Malformed(_))), "{:?}", got[1]);
        assert_eq!(got[2].as_ref().unwrap(), &Ping { from: PeerId(2), incarnation: 1 });
        assert!(end.is_ok());
    }

    #[test]
    fn a_frame_cut_short_by_the_end_of_stream_is_truncated_not_delivered() {
        let mut bytes = Vec::new();
        encode(&mut bytes, &Ping { from: PeerId(1), incarnation: 0 });
        encode(&mut bytes, &Ping { from: PeerId(2), incarnation: 0 });
        let whole = bytes.len();
        for cut in whole / 2 + 1..whole {
            let (got, end) = read_all(&bytes[..cut]);
            assert_eq!(got.len(), 1, "cut at {cut}: only the complete frame is delivered");
            assert!(matches!(end, Err(FrameError::Truncated(n)) if n == cut - whole / 2), "{end:?}");
        }
        // A header cut short is truncated too.
        let (got, end) = read_all(&[0, 0]);
        assert!(got.is_empty());
        assert!(matches!(end, Err(FrameError::Truncated(2))));
    }

    #[test]
    fn an_oversized_length_stops_the_stream_for_good() {
        let mut bytes = Vec::new();
        encode(&mut bytes, &Ping { from: PeerId(1), incarnation: 0 });
        bytes.extend_from_slice(&((MAX_FRAME + 1) as u32).to_be_bytes());
        // Whatever follows is never looked at, even a good frame.
        encode(&mut bytes, &Ping { from: PeerId(2), incarnation: 0 });
        let (got, end) = read_all(&bytes);
        assert_eq!(got.len(), 1);
        assert!(matches!(end, Err(FrameError::Oversized(n)) if n == MAX_FRAME + 1), "{end:?}");
        // The largest allowed frame is fine.
        let mut r = FrameReader::default();
        r.push(&(MAX_FRAME as u32).to_be_bytes());
        r.push(&vec![0xc0; MAX_FRAME]);
        assert_eq!(r.next_frame().unwrap().unwrap().len(), MAX_FRAME);
    }

    #[test]
    fn a_short_read_ends_a_fill_until_short_but_not_a_fill() {
        /// Pieces as a socket hands them over, then "would block"; counts the reads.
        struct Pieces(Vec<Vec<u8>>, usize);
        impl Read for Pieces {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.1 += 1;
                match self.0.is_empty() {
                    true => Err(io::ErrorKind::WouldBlock.into()),
                    false => {
                        let p = self.0.remove(0);
                        buf[..p.len()].copy_from_slice(&p);
                        Ok(p.len())
                    }
                }
            }
        }
        let mut one = Vec::new();
        encode(&mut one, &Ping { from: PeerId(1), incarnation: 2 });
        let (a, b) = one.split_at(3);
        // One short read, and the fill ends there: no read fails with EAGAIN.
        let mut src = Pieces(vec![one.clone()], 0);
        let mut r = FrameReader::default();
        assert_eq!(r.fill_until_short(&mut src).unwrap(), Fill::WouldBlock);
        assert_eq!(src.1, 1);
        assert!(r.next_frame().unwrap().is_some());
        // The control: a fill reads on until the stream says it would block.
        let mut src = Pieces(vec![a.to_vec(), b.to_vec()], 0);
        let mut r = FrameReader::default();
        assert_eq!(r.fill(&mut src).unwrap(), Fill::WouldBlock);
        assert_eq!(src.1, 3);
        assert!(r.next_frame().unwrap().is_some());
        // A full read is not short: the fill goes on.
        let mut src = Pieces(vec![vec![0; 16 * 1024], vec![0; 5]], 0);
        let mut r = FrameReader::default();
        assert_eq!(r.fill_until_short(&mut src).unwrap(), Fill::WouldBlock);
        assert_eq!((src.1, r.leftover()), (2, 16 * 1024 + 5));
    }

    #[test]
    fn fill_stops_at_its_budget_and_keeps_every_frame() {
        /// A stream that never runs dry.
        struct Flood(Vec<u8>, usize);
        impl Read for Flood {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let mut k = 0;
                while k < buf.len() {
                    buf[k] = self.0[self.1 % self.0.len()];
                    self.1 += 1;
                    k += 1;
                }
                Ok(k)
            }
        }
        let mut one = Vec::new();
        encode(&mut one, &Ping { from: PeerId(3), incarnation: 7 });
        let mut flood = Flood(one.clone(), 0);
        let mut r = FrameReader::default();
        let mut frames = 0;
        for _ in 0..3 {
            assert_eq!(r.fill(&mut flood).unwrap(), Fill::Budget);
            assert!(r.leftover() < FILL_BUDGET + 16 * 1024, "bounded: {}", r.leftover());
            while let Some(body) = r.next_frame().unwrap() {
                assert_eq!(decode::<Ping>(body).unwrap(), Ping { from: PeerId(3), incarnation: 7 });
                frames += 1;
            }
        }
        assert!(frames * one.len() >= 3 * (FILL_BUDGET - one.len()), "{frames} frames");
    }

    #[test]
    fn blocking_read_reports_truncation() {
        let mut bytes = Vec::new();
        encode(&mut bytes, &Ping { from: PeerId(1), incarnation: 0 });
        bytes.pop();
        let err = read_blocking::<Ping, _>(&mut bytes.as_slice()).unwrap_err();
        assert!(matches!(err, FrameError::Truncated(_)), "{err}");
        assert!(read_blocking::<Ping, _>(&mut [].as_slice()).unwrap().is_none());
    }

    #[test]
    fn only_a_reset_counts_as_a_reset() {
        let reset = FrameError::Io(io::Error::from(io::ErrorKind::ConnectionReset));
        assert!(reset.is_reset());
        assert!(!FrameError::Io(io::Error::from(io::ErrorKind::PermissionDenied)).is_reset());
        assert!(!FrameError::Truncated(3).is_reset());
    }
}
