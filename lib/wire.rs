//! Frames on the wire: a 4-byte big-endian length, then a MessagePack body.
//!
//! Every stream between workers, and between a worker and the supervisor, carries these
//! frames. MessagePack decoding ignores trailing bytes, so the frame carries its own
//! length, and the length is capped before anything is allocated. [`FrameReader`]
//! collects frames from a non-blocking stream that may hand over any number of bytes at
//! a time; [`encode`] appends one frame to an outgoing buffer.

use std::io::{self, Read};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::algorithm::PeerId;

/// The largest body a frame may have. Algorithm messages are tens of bytes; anything
/// near this is garbage or an attack.
pub const MAX_FRAME: usize = 64 * 1024;

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

/// The first frame on every connection between workers: who is calling.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The caller's id.
    pub from: PeerId,
    /// The caller's incarnation: 0 at first, one more each time it is restarted.
    pub incarnation: u32,
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

/// Append one frame holding `value` to `buf`.
pub fn encode<T: Serialize>(buf: &mut Vec<u8>, value: &T) {
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    // Writing into a Vec cannot fail, and our own types always serialise.
    rmp_serde::encode::write(buf, value).expect("serialising into a Vec");
    let len = (buf.len() - start - 4) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Decode a frame body.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    rmp_serde::from_slice(body).map_err(|e| FrameError::Malformed(e.to_string()))
}

/// Gathers frames from a stream that delivers bytes in arbitrary pieces.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
}

/// What one call to [`FrameReader::fill`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Fill {
    /// The stream has no more bytes for now.
    WouldBlock,
    /// The stream is closed.
    Eof,
}

impl FrameReader {
    /// Read everything the stream has now (until it would block or ends).
    pub fn fill<R: Read>(&mut self, r: &mut R) -> Result<Fill, FrameError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match r.read(&mut chunk) {
                Ok(0) => return Ok(Fill::Eof),
                Ok(k) => self.buf.extend_from_slice(&chunk[..k]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Fill::WouldBlock),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Feed bytes in directly (for blocking readers and tests).
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame body, if one has arrived. An oversized header is an error
    /// that leaves the stream unusable.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        let avail = &self.buf[self.start..];
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

    /// Bytes received but not yet part of a complete frame.
    pub fn leftover(&self) -> usize {
        self.buf.len() - self.start
    }

    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.drain(..self.start);
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

    #[test]
    fn frames_survive_arbitrary_splits() {
        let mut bytes = Vec::new();
        for i in 0..5u32 {
            encode(&mut bytes, &Hello { from: PeerId(i), incarnation: i * 2 });
        }
        for step in [1, 2, 3, 7, 100] {
            let mut r = FrameReader::default();
            let mut got = Vec::new();
            for piece in bytes.chunks(step) {
                r.push(piece);
                while let Some(body) = r.next_frame().unwrap() {
                    got.push(decode::<Hello>(body).unwrap());
                }
            }
            assert_eq!(got.len(), 5, "split {step}");
            assert_eq!(got[4], Hello { from: PeerId(4), incarnation: 8 });
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
    fn garbage_body_is_malformed_not_a_panic() {
        let mut r = FrameReader::default();
        r.push(&[0, 0, 0, 3, 0xc1, 0xc1, 0xc1]);
        let body = r.next_frame().unwrap().unwrap();
        assert!(matches!(decode::<Hello>(body), Err(FrameError::Malformed(_))));
    }

    #[test]
    fn blocking_read_reports_truncation() {
        let mut bytes = Vec::new();
        encode(&mut bytes, &Hello { from: PeerId(1), incarnation: 0 });
        bytes.pop();
        let err = read_blocking::<Hello, _>(&mut bytes.as_slice()).unwrap_err();
        assert!(matches!(err, FrameError::Truncated(_)), "{err}");
        assert!(read_blocking::<Hello, _>(&mut [].as_slice()).unwrap().is_none());
    }
}
