//! The child process and the ends of its pipes ([`Program`]): starting it (`sh -c`,
//! under its keeper) with a thread on its stdout and one copying its stderr to ours;
//! one exchange of a line for an answer, within the deadline, saying when the program
//! has stopped reading its input; and giving up on it (killed and reaped, the reason
//! kept).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::control::{input_blocked, InputBlocked};

use super::keeper::{keeper, note_containment, IdMaps};
use super::{BLOCKED_NOTE, MAX_LINE, MAX_LOG_LINE, QUOTE, REMEMBERED};

/// The child process and the ends of its pipes.
pub(super) struct Program {
    /// `w3`, for logs.
    pub(super) name: String,
    pub(super) command: String,
    pub(super) timeout: Duration,
    /// Time the next exchange may take beyond `timeout`: the start allowance, for the
    /// first (`init`), then none.
    pub(super) allowance: Duration,
    /// `None` once it has failed and been reaped.
    pub(super) process: Option<(Child, ChildStdin)>,
    /// Why it failed: the node's [`Node::failure`], and its stall diagnosis.
    pub(super) failed: Option<String>,
    /// Lines from its stdout, read by a thread so a read can time out. The channel
    /// holds one line: a program that writes more than it is asked stalls on its own
    /// pipe, and is caught at the next input (`exchange`).
    pub(super) lines: Option<Receiver<Line>>,
    /// A line taken from `lines` while looking for one nobody asked for.
    pub(super) early: Option<Line>,
    /// The last input sent and its answer, to quote when the program writes more.
    pub(super) last: Option<(String, String)>,
    /// What the program last said it waits for (`{"type":"waiting",…}`), for
    /// [`Node::waiting_for`]; cleared by a new statement or its `enter`.
    pub(super) waiting: String,
    /// Number of nodes, to check the ids a statement names.
    pub(super) n: u32,
    /// Statements dropped as malformed, of which the first few are noted.
    pub(super) dropped: u32,
    /// Closed when its stderr has been copied to the end.
    pub(super) log_done: Option<Receiver<()>>,
    /// The last line of its stderr, for the reason it exited (Python's `can't open
    /// file`, an exception's last line).
    pub(super) last_words: Arc<StdMutex<String>>,
    /// The lengths of the last lines written to its stdin (at most [`REMEMBERED`]
    /// bytes' worth), newest last, to count those still unread.
    pub(super) written: VecDeque<u64>,
}

/// What the stdout reader saw.
pub(super) enum Line {
    Text(String),
    TooLong,
    Eof,
}

impl Drop for Program {
    fn drop(&mut self) {
        self.reap();
    }
}

impl Program {
    /// Kill the program and wait for it; closing its stdin first lets a well-behaved
    /// one see EOF, but nobody waits for that.
    fn reap(&mut self) {
        if let Some((mut child, stdin)) = self.process.take() {
            drop(stdin);
            // Our child is the program's keeper (see `keeper`), which kills the program
            // and all it started, then exits. Not reaped yet, so the pid is still its.
            let keeper = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(keeper, nix::sys::signal::Signal::SIGTERM);
            let _ = child.wait();
        }
        // Its last words are shown before the worker says why it gave up on it (briefly:
        // something that escaped may hold the pipe open).
        if let Some(done) = self.log_done.take() {
            let _ = done.recv_timeout(Duration::from_millis(500));
        }
        self.lines = None;
        self.early = None;
    }

    /// Give up on the program: reap it and keep the reason for [`Node::failure`].
    pub(super) fn fail(&mut self, why: String) {
        let why = format!("external node `{}`: {why}", self.command);
        self.give_up(why);
    }

    /// Reap the program and keep `why`, whole, unless it has failed already.
    pub(super) fn give_up(&mut self, why: String) {
        self.reap();
        self.failed.get_or_insert(why);
    }

    /// How the program ended, if it has (waiting briefly: its stdout closes a moment
    /// before it is reapable), with the last line of its log, which often says why.
    fn exit_status(&mut self) -> String {
        let Some((child, _)) = self.process.as_mut() else { return String::new() };
        let until = Instant::now() + Duration::from_millis(500);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break format!(" ({status})"),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => break String::new(),
            }
        };
        // Its log ends soon after it does (briefly, as in `reap`).
        if let Some(done) = &self.log_done {
            let _ = done.recv_timeout(Duration::from_millis(500));
        }
        let said = self.last_words.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if said.is_empty() {
            status
        } else {
            format!("{status}; its stderr ended {}", quote(&said))
        }
    }

    /// Send one line and read the answer as JSON; `Err` says what went wrong, quoting
    /// what was sent and what came back. The deadline covers both the write (a program
    /// that stops reading fills its pipe) and the answer.
    pub(super) fn exchange(&mut self, sent: &str) -> Result<Value, ExchangeError> {
        let Some((_, stdin)) = self.process.as_mut() else {
            return Err(ExchangeError::Other("has already failed".into()));
        };
        let lines = self.lines.as_ref().expect("a live child has a reader");
        // One answer per input: a line already waiting was written unasked.
        if self.early.is_none() {
            self.early = match lines.try_recv() {
                Ok(line) => Some(line),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => Some(Line::Eof),
            };
        }
        match &self.early {
            Some(Line::Text(extra)) => {
                let (before, answer) = self.last.clone().unwrap_or_default();
                return Err(ExchangeError::Other(format!(
                    "wrote {} when nothing was asked of it (it had answered {} with {}; one line \
                     answers one input)",
                    quote(extra),
                    quote(&before),
                    quote(&answer)
                )));
            }
            Some(Line::TooLong) => {
                return Err(ExchangeError::Other(format!(
                    "wrote a line over {MAX_LINE} bytes when nothing was asked of it"
                )))
            }
            _ => {}
        }
        let start = std::mem::take(&mut self.allowance);
        let allowed = self.timeout + start;
        let deadline = Instant::now() + allowed;
        let line = format!("{sent}\n");
        remember(&mut self.written, line.len() as u64);
        let written = &self.written;
        let mut told = false;
        let mut last_read = (Instant::now(), crate::resource::monotonic_ns(), pending(stdin));
        let wrote = write_within(stdin, line.as_bytes(), deadline, |stdin, left| {
            // Fewer bytes unread than last look: the program read some.
            let unread = pending(stdin);
            let read = unread < last_read.2;
            if unread < last_read.2 {
                last_read = (Instant::now(), crate::resource::monotonic_ns(), unread);
            }
            // Told once it has waited a while, and again whenever the program reads.
            if (!told && last_read.0.elapsed() >= BLOCKED_NOTE) || (told && read) {
                told = true;
                let lines = unread_lines(written, unread + left);
                input_blocked(Some(InputBlocked { since_ns: last_read.1, lines }));
            }
        });
        if told {
            input_blocked(None);
        }
        match wrote {
            Ok(true) => {}
            Ok(false) => {
                let stdin = &self.process.as_ref().expect("still running").1;
                let lines = unread_lines(&self.written, pending(stdin) + line.len() as u64);
                return Err(ExchangeError::Other(format!(
                    "was sent {} and did not read it within {} ms ({lines} line{} waiting in its input)",
                    quote(sent),
                    allowed.as_millis(),
                    if lines == 1 { "" } else { "s" }
                )));
            }
            Err(e) => {
                let status = self.exit_status();
                return Err(ExchangeError::Unsent { sent: sent.to_string(), error: e, status });
            }
        }
        // The first input waits for the program to start: the answer's deadline counts
        // from when it has read the line, and the start has its own allowance.
        let deadline = if start.is_zero() {
            deadline
        } else {
            let called = Instant::now();
            match self.read_by(called + start) {
                Some(read) => {
                    let took = read.duration_since(called);
                    if took > self.timeout {
                        eprintln!(
                            "mutexlab: {}: the program took {} ms to start (to read its first input); a \
                             start may take {} s, on top of the {} ms an answer may",
                            self.name,
                            took.as_millis(),
                            start.as_secs(),
                            self.timeout.as_millis()
                        );
                    }
                    read + self.timeout
                }
                None => {
                    return Err(ExchangeError::Other(format!(
                        "was sent {} and did not start reading its input within {} s",
                        quote(sent),
                        start.as_secs()
                    )))
                }
            }
        };
        let lines = self.lines.as_ref().expect("a live child has a reader");
        let got = self
            .early
            .take()
            .map(Ok)
            .unwrap_or_else(|| lines.recv_timeout(deadline.saturating_duration_since(Instant::now())));
        let got = match got {
            Ok(Line::Text(text)) => text,
            Ok(Line::TooLong) => {
                return Err(ExchangeError::Other(format!(
                    "was sent {} and answered a line over {MAX_LINE} bytes",
                    quote(sent)
                )))
            }
            Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.exit_status();
                return Err(ExchangeError::Unanswered { sent: sent.to_string(), status });
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(ExchangeError::Other(format!(
                    "was sent {} and did not answer within {} ms",
                    quote(sent),
                    self.timeout.as_millis()
                )))
            }
        };
        self.last = Some((sent.to_string(), got.clone()));
        serde_json::from_str(&got).map_err(|e| {
            ExchangeError::Other(format!(
                "was sent {} and answered {}, which is not JSON ({e})",
                quote(sent),
                quote(&got)
            ))
        })
    }
}

/// Why an exchange with the program failed. Whether it exited is what a caller decides
/// on (a program that exits at its first input never started); the rest is told as is.
#[derive(Debug, thiserror::Error)]
pub(super) enum ExchangeError {
    /// It exited before it took the line: the write failed.
    #[error("could not be sent {} ({error}): it has exited{status}", quote(sent))]
    Unsent {
        /// The line.
        sent: String,
        /// Why the write failed.
        error: std::io::Error,
        /// How it ended ([`Program::exit_status`]).
        status: String,
    },
    /// It took the line and exited without answering.
    #[error("was sent {} and exited without answering{status}", quote(sent))]
    Unanswered {
        /// The line.
        sent: String,
        /// How it ended ([`Program::exit_status`]).
        status: String,
    },
    /// Anything else, in words: no answer in time, an answer that is no JSON, a line
    /// nobody asked for.
    #[error("{0}")]
    Other(String),
}

impl Program {
    /// When the program read what was last written (its pipe emptied) or answered, if
    /// it did by `until`. A starting program is watched this way, a few times a
    /// millisecond: it has not answered yet, so there is nothing else to wait on.
    fn read_by(&mut self, until: Instant) -> Option<Instant> {
        loop {
            let Some((_, stdin)) = self.process.as_ref() else { return Some(Instant::now()) };
            if self.early.is_some() || pending(stdin) == 0 {
                return Some(Instant::now());
            }
            let lines = self.lines.as_ref().expect("a live child has a reader");
            match lines.recv_timeout(Duration::from_millis(2)) {
                Ok(line) => self.early = Some(line),
                Err(RecvTimeoutError::Disconnected) => self.early = Some(Line::Eof),
                Err(RecvTimeoutError::Timeout) if Instant::now() >= until => return None,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// Write all of `bytes` to the program's stdin (non-blocking) by `deadline`: `Ok(false)`
/// when the program has not taken them by then. While it waits, `waiting` is called
/// every [`BLOCKED_NOTE`] or sooner with the stdin and how many bytes are still to go.
fn write_within(
    stdin: &mut ChildStdin,
    mut bytes: &[u8],
    deadline: Instant,
    mut waiting: impl FnMut(&ChildStdin, u64),
) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    while !bytes.is_empty() {
        match stdin.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                waiting(stdin, bytes.len() as u64);
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(false);
                }
                let mut fd =
                    nix::libc::pollfd { fd: stdin.as_raw_fd(), events: nix::libc::POLLOUT, revents: 0 };
                let ms =
                    left.min(BLOCKED_NOTE / 2).as_millis().clamp(1, i32::MAX as u128) as nix::libc::c_int;
                // SAFETY: one valid pollfd; EINTR and readiness both go round again.
                unsafe { nix::libc::poll(&mut fd, 1, ms) };
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Remember a line of `len` bytes written to the program, forgetting the oldest beyond
/// [`REMEMBERED`] bytes: no pipe holds more.
fn remember(written: &mut VecDeque<u64>, len: u64) {
    written.push_back(len);
    let mut total: u64 = written.iter().sum();
    while total > REMEMBERED + len {
        total -= written.pop_front().unwrap_or(0);
    }
}

/// Bytes written to the program's stdin that it has not read (`FIONREAD` on the pipe);
/// 0 if the kernel does not say.
fn pending(stdin: &ChildStdin) -> u64 {
    use std::os::fd::AsRawFd;
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int to a valid pointer; a pipe's end answers it.
    let r = unsafe { nix::libc::ioctl(stdin.as_raw_fd(), nix::libc::FIONREAD, &mut n) };
    if r == 0 {
        n.max(0) as u64
    } else {
        0
    }
}

/// How many of the lines `written` (lengths, newest last) the last `unread` bytes
/// touch: those not read, wholly or in part.
fn unread_lines(written: &VecDeque<u64>, unread: u64) -> u64 {
    let mut covered = 0;
    let mut lines = 0;
    for &len in written.iter().rev() {
        if covered >= unread {
            break;
        }
        covered += len;
        lines += 1;
    }
    lines
}

/// `text` shortened for a one-line diagnosis.
pub(super) fn quote(text: &str) -> String {
    let text = text.trim_end();
    match text.char_indices().nth(QUOTE) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

/// Start `sh -c command` with piped stdio and threads for its stdout and stderr (the
/// last receiver hears when the stderr thread is done).
#[allow(clippy::type_complexity)]
pub(super) fn spawn(
    name: &str,
    command: &str,
    last_words: Arc<StdMutex<String>>,
) -> std::io::Result<(Child, ChildStdin, Receiver<Line>, Receiver<()>)> {
    // A simple command is exec'd by the shell: one process fewer.
    let simple = !command.contains(|c: char| ";&|<>()`$\n\\'\"".contains(c));
    let line = if simple { format!("exec {command}") } else { command.to_string() };
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(line).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Its own process group, out of reach of a terminal's Ctrl-C and the run's signals.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let worker = std::process::id() as nix::libc::pid_t;
    // Made here: between fork and exec nothing may allocate.
    let maps = IdMaps::new();
    // SAFETY: `keeper` makes only async-signal-safe calls (see there).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || keeper(worker, &maps));
    }
    let mut child = cmd.spawn()?;
    note_containment(name, child.id());
    let stdin = child.stdin.take().expect("piped");
    // Writes wait for the program with a deadline (`write_within`), never forever.
    nix::fcntl::fcntl(&stdin, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK))?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut buf = Vec::new();
            let line = match (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => Line::Eof,
                Ok(_) if buf.len() > MAX_LINE => Line::TooLong,
                Ok(_) => Line::Text(String::from_utf8_lossy(&buf).trim_end().to_string()),
            };
            let last = !matches!(line, Line::Text(_));
            if tx.send(line).is_err() || last {
                return;
            }
        }
    });
    let prefix = format!("{name}| ");
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        copy_log(stderr, &prefix, |line| {
            // One write per line, so lines of several workers never interleave.
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            let text = line.strip_prefix(&prefix).unwrap_or(&line).trim_end();
            if !text.is_empty() {
                let mut last = last_words.lock().unwrap_or_else(|e| e.into_inner());
                last.clear();
                last.push_str(text);
            }
        });
        drop(done_tx);
    });
    Ok((child, stdin, rx, done_rx))
}

/// Copy the program's log `from` line by line to `emit`, each prefixed: a line over
/// [`MAX_LOG_LINE`] bytes is shown cut, with a note, as soon as it is that long, and
/// the rest of it is read and dropped, so memory stays bounded however much comes.
fn copy_log(from: impl Read, prefix: &str, mut emit: impl FnMut(String)) {
    let mut reader = BufReader::new(from);
    let mut line: Vec<u8> = Vec::with_capacity(MAX_LOG_LINE + 1);
    loop {
        line.clear();
        match (&mut reader).take(MAX_LOG_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') || line.len() <= MAX_LOG_LINE {
            emit(format!("{prefix}{}\n", String::from_utf8_lossy(&line).trim_end()));
            continue;
        }
        line.truncate(MAX_LOG_LINE);
        // Not in the middle of a character.
        if let Err(e) = std::str::from_utf8(&line) {
            if e.error_len().is_none() {
                line.truncate(e.valid_up_to());
            }
        }
        let text = String::from_utf8_lossy(&line);
        emit(format!("{prefix}{text}… (line cut at {MAX_LOG_LINE} bytes)\n"));
        if reader.skip_until(b'\n').is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_is_cut_at_its_bound_and_the_rest_of_it_dropped() {
        // 16 MiB without a newline, streamed: nothing holds more than the bound.
        let long = std::io::repeat(b'x').take(16 << 20);
        let rest = &b"\nnext\n\xc3\xa9t\xc3\xa9\nlast words"[..];
        let mut lines = Vec::new();
        copy_log(long.chain(rest), "w3| ", |l| lines.push(l));
        assert_eq!(lines.len(), 4, "{:?}", lines.iter().map(|l| l.len()).collect::<Vec<_>>());
        let cut = format!("w3| {}… (line cut at {MAX_LOG_LINE} bytes)\n", "x".repeat(MAX_LOG_LINE));
        assert_eq!(lines[0], cut);
        assert_eq!(lines[1..], ["w3| next\n", "w3| été\n", "w3| last words\n"]);
        // A cut inside a character keeps the character out rather than mangled.
        let mut accents = Vec::new();
        copy_log(format!("x{}", "é".repeat(MAX_LOG_LINE)).as_bytes(), "", |l| accents.push(l));
        let whole = (MAX_LOG_LINE - 1) / 2;
        assert_eq!(accents, [format!("x{}… (line cut at {MAX_LOG_LINE} bytes)\n", "é".repeat(whole))]);
    }
}
