//! Reading lines without trusting them: a bounded buffer per line, and quotes of a line
//! that never grow with it.

use std::io::{BufRead, Read};

/// The longest line kept in memory. Records are under 200 bytes, so a line longer than
/// this is corrupt, and what lies beyond it is skipped without being stored.
pub const MAX_LINE: usize = 4096;

/// How many bytes of a line a finding quotes; a longer line is quoted up to here, then
/// an ellipsis and its full length.
pub const EXCERPT: usize = 160;

/// A line as a finding quotes it: in full if short, else its first [`EXCERPT`] bytes
/// (never splitting a character), an ellipsis and its full length in bytes. Formatted
/// only when a finding is made, so clean records cost nothing.
pub struct Quote<'a> {
    /// The line's first bytes (all of it if `len` is no more).
    pub bytes: &'a [u8],
    /// The line's full length.
    pub len: u64,
}

impl<'a> Quote<'a> {
    /// The quote of a whole line.
    pub fn of(text: &'a str) -> Quote<'a> {
        Quote { bytes: text.as_bytes(), len: text.len() as u64 }
    }
}

impl std::fmt::Display for Quote<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.len <= EXCERPT as u64 && self.bytes.len() as u64 == self.len {
            return write!(f, "{:?}", String::from_utf8_lossy(self.bytes));
        }
        let mut cut = &self.bytes[..self.bytes.len().min(EXCERPT)];
        if let Err(e) = std::str::from_utf8(cut) {
            if e.error_len().is_none() {
                cut = &cut[..e.valid_up_to()]; // a character split by the cut
            }
        }
        write!(f, "{:?}… ({} bytes)", String::from_utf8_lossy(cut), self.len)
    }
}

/// At most [`EXCERPT`] bytes of a message that may repeat part of a line.
pub fn clip(msg: &str) -> std::borrow::Cow<'_, str> {
    crate::text::clip_to(msg, EXCERPT)
}

/// Reads lines with a fixed buffer: at most [`MAX_LINE`] bytes of a line are kept, the
/// rest is counted and skipped, so memory does not grow with line length.
pub struct Lines<R> {
    src: std::io::BufReader<R>,
    /// The current line's first bytes, without its newline.
    pub kept: Vec<u8>,
    /// The current line's full length, without its newline.
    pub len: u64,
    /// Whether `kept` holds a line already returned (cleared before the next).
    returned: bool,
}

impl<R: Read> Lines<R> {
    /// Lines of `src`, the first of which begins with `prefix`, already read.
    pub fn new(src: R, prefix: Vec<u8>) -> Self {
        let len = prefix.len() as u64;
        Lines { src: std::io::BufReader::with_capacity(64 * 1024, src), kept: prefix, len, returned: false }
    }

    /// The next line: `Some(true)` if it ended with a newline, `Some(false)` for a last
    /// line without one, `None` at the end. Its bytes are in `kept`, its length in `len`.
    // Not an `Iterator`: each line reuses the one buffer, which an iterator cannot lend.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> std::io::Result<Option<bool>> {
        if std::mem::replace(&mut self.returned, true) {
            self.kept.clear();
            self.len = 0;
        }
        loop {
            let avail = match self.src.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                return Ok((self.len > 0).then_some(false));
            }
            let newline = avail.iter().position(|&b| b == b'\n');
            let part = &avail[..newline.unwrap_or(avail.len())];
            let room = MAX_LINE.saturating_sub(self.kept.len());
            self.kept.extend_from_slice(&part[..part.len().min(room)]);
            self.len += part.len() as u64;
            let used = part.len() + usize::from(newline.is_some());
            self.src.consume(used);
            if newline.is_some() {
                return Ok(Some(true));
            }
        }
    }
}
