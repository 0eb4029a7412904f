//! `mutexlab-baseline`: the cheapest token ring, centralized lock and Ricart-Agrawala this
//! machine allows, for `mutexlab bench` to measure beside mutexlab's own runs (README,
//! "Benchmark").
//!
//! It forks N processes joined by Unix socket pairs, each waiting in epoll (mio), and
//! passes fixed frames of [`FRAME`] bytes, the size of mutexlab's REQUEST and RELEASE
//! frames: in `ring` mode a token round the ring, in `central` mode REQUEST, GRANT and
//! RELEASE with process 0 as coordinator (its own entries take no message, as in
//! mutexlab's `centralized`), in `ra` mode Ricart-Agrawala over a socket pair between
//! every two processes (a REQUEST with a Lamport time to every peer, a REPLY from each,
//! deferred while the process asks with an older request or is inside). Each entry does the file work a mutexlab worker does on its
//! resource file (one O_APPEND write each of a WANT, an ENTER and an EXIT line, and an
//! fstat and a pread of the file's tail for the counter), unless `--no-file`. No trace,
//! no flight recorder, no allocation per message.
//!
//! It prints one JSON object: the children's CPU time (their rusage, reaped) and the
//! wall time from the moment all of them may start until the last is reaped, each per
//! entry and per message, and the counter the file ends with (every entry adds one, so
//! it equals the entries when the lock held).

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Parser, ValueEnum};
use mio::{Events, Interest, Poll, Token};
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};

/// Bytes per frame: a 4-byte length and a 12-byte body, the size of mutexlab's REQUEST
/// and RELEASE with a clock under 128 (its GRANT is 14 to 16 bytes, its TOKEN 17 to 18).
pub const FRAME: usize = 16;

/// What the ring's and the coordinator's frames say, in the body's first byte.
const TOKEN: u8 = 1;
const REQUEST: u8 = 2;
const GRANT: u8 = 3;
const RELEASE: u8 = 4;
const REPLY: u8 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// A token passed round a ring of N processes.
    Ring,
    /// REQUEST, GRANT, RELEASE with process 0 as coordinator.
    Central,
    /// Ricart-Agrawala: REQUEST to every peer, a REPLY from each.
    Ra,
}

/// The baseline of `mutexlab bench`: a bare token ring or centralized lock.
#[derive(Parser, Debug)]
#[command(name = "mutexlab-baseline", version)]
struct Args {
    /// `ring`, `central` or `ra`.
    #[arg(value_enum)]
    mode: Mode,
    /// Processes (2 to 1024).
    #[arg(short = 'n', long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(2..=1024))]
    workers: u32,
    /// Entries each process makes (at least 1).
    #[arg(short = 'k', long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    entries: u64,
    /// No file work at all: only the messages.
    #[arg(long)]
    no_file: bool,
    /// Where to put the resource file (a fresh temporary folder if not given).
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// What the run measured: the line it prints.
#[derive(Debug, serde::Serialize)]
struct Output {
    mode: &'static str,
    workers: u32,
    /// Entries made, by all processes.
    entries: u64,
    /// Frames sent, by all processes.
    messages: u64,
    frame_bytes: usize,
    file_work: bool,
    /// Children reaped, each with status 0.
    reaped: u32,
    /// The counter in the file at the end (0 without file work).
    counter: u64,
    /// User and system CPU of the children, in µs.
    cpu_us: f64,
    /// From the start signal to the last child reaped, in µs.
    wall_us: f64,
    cpu_us_per_entry: f64,
    wall_us_per_entry: f64,
    cpu_us_per_message: f64,
}

fn main() {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // One line, clap's first: what is wrong.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("bad arguments").trim_start_matches("error: ");
            eprintln!("mutexlab-baseline: {first}");
            std::process::exit(2);
        }
    };
    match run(&args) {
        Ok(out) => println!("{}", serde_json::to_string(&out).expect("the output serialises")),
        Err(e) => {
            eprintln!("mutexlab-baseline: {e}");
            std::process::exit(1);
        }
    }
}

/// The resource file's work for one process, with its buffers kept between entries.
struct FileWork {
    file: File,
    me: u32,
    line: String,
    tail: Vec<u8>,
}

impl FileWork {
    fn open(path: &Path, me: u32) -> io::Result<FileWork> {
        let file = OpenOptions::new().read(true).append(true).open(path)?;
        Ok(FileWork { file, me, line: String::with_capacity(96), tail: Vec::with_capacity(512) })
    }

    /// One line with one `write`, as mutexlab's resource does.
    fn append(&mut self) -> io::Result<()> {
        let n = nix::unistd::write(&self.file, self.line.as_bytes())?;
        if n != self.line.len() {
            return Err(io::Error::other(format!("short write ({n} of {} bytes)", self.line.len())));
        }
        Ok(())
    }

    fn want(&mut self, e: u64) -> io::Result<()> {
        self.line.clear();
        let _ = writeln!(self.line, "WANT w={} e={e} t={}", self.me, now_ns());
        self.append()
    }

    /// Inside: read the counter from the file's tail (the last EXIT's value), then
    /// write ENTER and EXIT with the counter plus one.
    fn enter_and_exit(&mut self, e: u64, fence: u64) -> io::Result<()> {
        let read = self.counter()?;
        self.line.clear();
        let _ = writeln!(self.line, "ENTER w={} e={e} fence={fence}:{} t={}", self.me, self.me, now_ns());
        self.append()?;
        self.line.clear();
        let _ = writeln!(
            self.line,
            "EXIT w={} e={e} fence={fence}:{} read={read} value={} t={}",
            self.me,
            self.me,
            read + 1,
            now_ns()
        );
        self.append()
    }

    /// The `value=` of the last EXIT line (0 if none), read from the file's tail: the
    /// last 512 bytes, four times more each time they hold no EXIT, as mutexlab's
    /// resource reads its tail (without parsing every line).
    fn counter(&mut self) -> io::Result<u64> {
        let len = self.file.metadata()?.len();
        let mut want = 512u64;
        loop {
            let start = len.saturating_sub(want);
            self.tail.resize((len - start) as usize, 0);
            self.file.read_exact_at(&mut self.tail, start)?;
            if let Some(v) = last_value(&self.tail) {
                return Ok(v);
            }
            if start == 0 {
                return Ok(0);
            }
            want *= 4;
        }
    }
}

/// The value of the last whole `EXIT … value=V …` line in `text`.
fn last_value(text: &[u8]) -> Option<u64> {
    for line in text.split(|&b| b == b'\n').rev() {
        if line.starts_with(b"EXIT ") {
            let at = line.windows(6).position(|w| w == b"value=")? + 6;
            let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
            return std::str::from_utf8(&line[at..at + digits]).ok()?.parse().ok();
        }
    }
    None
}

fn now_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// A frame: the length, the kind, and a counter.
fn frame(kind: u8, count: u64) -> [u8; FRAME] {
    let mut f = [0u8; FRAME];
    f[..4].copy_from_slice(&((FRAME - 4) as u32).to_be_bytes());
    f[4] = kind;
    f[5..13].copy_from_slice(&count.to_le_bytes());
    f
}

/// Bytes one read may take: many frames at once when several are queued (Ricart-Agrawala's
/// REPLYs), as mutexlab's streams read.
const READ_BUF: usize = 4096;

/// One process's end of a socket, non-blocking, in epoll, with what was read and not yet
/// taken as frames kept.
struct Link {
    stream: mio::net::UnixStream,
    buf: Box<[u8; READ_BUF]>,
    /// The bytes read and not yet taken: `buf[start..end]`.
    start: usize,
    end: usize,
}

impl Link {
    fn new(s: UnixStream) -> io::Result<Link> {
        s.set_nonblocking(true)?;
        let stream = mio::net::UnixStream::from_std(s);
        Ok(Link { stream, buf: Box::new([0; READ_BUF]), start: 0, end: 0 })
    }

    /// Send one frame. At most two frames are ever in flight on a link (a REQUEST and a
    /// REPLY), so the socket's buffer cannot be full: a write that does not take it all
    /// is an error.
    fn send(&mut self, f: &[u8; FRAME]) -> io::Result<()> {
        match self.stream.write(f) {
            Ok(FRAME) => Ok(()),
            Ok(n) => Err(io::Error::other(format!("short send ({n} of {FRAME} bytes)"))),
            Err(e) => Err(e),
        }
    }

    /// The next whole frame, `Ok(None)` when the socket has no more now, or `Err`
    /// `UnexpectedEof` when the peer has closed. Read until the socket would block, as
    /// epoll is edge-triggered: a short read does not say that no close is pending.
    fn recv(&mut self) -> io::Result<Option<(u8, u64)>> {
        loop {
            if self.end - self.start >= FRAME {
                let f = &self.buf[self.start..self.start + FRAME];
                self.start += FRAME;
                return Ok(Some((f[4], u64::from_le_bytes(f[5..13].try_into().expect("8 bytes")))));
            }
            // A partial frame moves to the front, so a read always has room.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

fn is_eof(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset)
}

/// What one child does, given its sockets; its result decides its exit status.
type Child = Box<dyn FnOnce() -> io::Result<()>>;

fn run(args: &Args) -> anyhow::Result<Output> {
    let (n, k) = (args.workers, args.entries);
    let tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::Builder::new().prefix("mutexlab-baseline-").tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let path = dir.join("resource");
    let file_work = !args.no_file;
    if file_work {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
        writeln!(f, "# mutexlab-baseline resource workers={n}")?;
    }
    let file = move |me: u32| -> io::Result<Option<FileWork>> {
        if file_work {
            FileWork::open(&path, me).map(Some)
        } else {
            Ok(None)
        }
    };
    let (children, messages): (Vec<Child>, u64) = match args.mode {
        Mode::Ring => {
            // pairs[i] joins process i (its .0, to write) to process i+1 (its .1, to read).
            let mut outs = Vec::new();
            let mut ins = Vec::new();
            for _ in 0..n {
                let (a, b) = UnixStream::pair()?;
                outs.push(Some(a));
                ins.push(Some(b));
            }
            let mut children: Vec<Child> = Vec::new();
            for i in 0..n as usize {
                let out = outs[i].take().expect("each end once");
                let inp = ins[(i + n as usize - 1) % n as usize].take().expect("each end once");
                let f = file.clone();
                children.push(Box::new(move || {
                    ring_node(i as u32, n, k, Link::new(inp)?, Link::new(out)?, f(i as u32)?)
                }));
            }
            (children, u64::from(n) * k - 1)
        }
        Mode::Central => {
            let mut coord = Vec::new();
            let mut children: Vec<Child> = Vec::new();
            for c in 1..n {
                let (a, b) = UnixStream::pair()?;
                coord.push(a);
                let f = file.clone();
                children.push(Box::new(move || client(c, k, Link::new(b)?, f(c)?)));
            }
            let f = file.clone();
            children.insert(0, Box::new(move || coordinator(k, coord, f(0)?)));
            (children, 3 * u64::from(n - 1) * k)
        }
        Mode::Ra => {
            // links[i][j]: process i's end of the pair it shares with process j.
            let mut links: Vec<Vec<Option<UnixStream>>> =
                (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
            let m = n as usize;
            for (i, j) in (0..m).flat_map(|i| (i + 1..m).map(move |j| (i, j))) {
                let (a, b) = UnixStream::pair()?;
                links[i][j] = Some(a);
                links[j][i] = Some(b);
            }
            let mut children: Vec<Child> = Vec::new();
            for (i, mine) in links.into_iter().enumerate() {
                let f = file.clone();
                children.push(Box::new(move || {
                    let links =
                        mine.into_iter().map(|s| s.map(Link::new).transpose()).collect::<io::Result<_>>()?;
                    ra_node(i as u32, k, links, f(i as u32)?)
                }));
            }
            (children, 2 * u64::from(n - 1) * u64::from(n) * k)
        }
    };
    // Every child waits on this pipe until the parent closes it, when all are forked.
    let (go_r, go_w) = nix::unistd::pipe()?;
    let mut pids = Vec::new();
    let mut rest = children.into_iter();
    while let Some(child) = rest.next() {
        // SAFETY: this process has one thread; the child only runs its own code and exits.
        match unsafe { fork() }? {
            ForkResult::Child => {
                // The sockets of the children still to fork are not this child's.
                drop(rest);
                drop(go_w);
                let code = match wait_for_go(go_r).and_then(|()| child()) {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("mutexlab-baseline: child: {e}");
                        1
                    }
                };
                std::process::exit(code);
            }
            ForkResult::Parent { child: pid } => {
                // The parent's copies of the child's sockets close as the closure drops.
                drop(child);
                pids.push(pid);
            }
        }
    }
    drop(go_r);
    let t0 = Instant::now();
    drop(go_w);
    let mut reaped = 0;
    let mut failed = Vec::new();
    for pid in pids {
        match reap(pid)? {
            WaitStatus::Exited(_, 0) => reaped += 1,
            s => failed.push(format!("{s:?}")),
        }
    }
    let wall_us = t0.elapsed().as_secs_f64() * 1e6;
    if !failed.is_empty() {
        anyhow::bail!("{} of {n} children failed: {}", failed.len(), failed.join(", "));
    }
    let u = getrusage(UsageWho::RUSAGE_CHILDREN)?;
    let us = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1e6 + t.tv_usec() as f64;
    let cpu_us = us(u.user_time()) + us(u.system_time());
    let counter = if file_work {
        let text = std::fs::read(dir.join("resource"))?;
        last_value(&text).unwrap_or(0)
    } else {
        0
    };
    let entries = u64::from(n) * k;
    Ok(Output {
        mode: match args.mode {
            Mode::Ring => "ring",
            Mode::Central => "central",
            Mode::Ra => "ra",
        },
        workers: n,
        entries,
        messages,
        frame_bytes: FRAME,
        file_work,
        reaped,
        counter,
        cpu_us,
        wall_us,
        cpu_us_per_entry: cpu_us / entries as f64,
        wall_us_per_entry: wall_us / entries as f64,
        cpu_us_per_message: if messages > 0 { cpu_us / messages as f64 } else { 0.0 },
    })
}

fn reap(pid: Pid) -> nix::Result<WaitStatus> {
    loop {
        match waitpid(pid, None) {
            Err(nix::errno::Errno::EINTR) => continue,
            r => return r,
        }
    }
}

/// Block until the parent closes the pipe's write end.
fn wait_for_go(go: OwnedFd) -> io::Result<()> {
    let mut f = File::from(go);
    let mut b = [0u8; 1];
    loop {
        match f.read(&mut b) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn poll_once(poll: &mut Poll, events: &mut Events) -> io::Result<()> {
    match poll.poll(events, None) {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        r => r,
    }
}

/// A ring node: process 0 starts with the token. Each receipt is an entry while this
/// node has entries left; the token counts the entries made, and the node that makes
/// the last one stops, which closes its link: each node then sees its reader close and
/// stops in turn.
fn ring_node(
    me: u32,
    n: u32,
    k: u64,
    mut inp: Link,
    mut out: Link,
    mut file: Option<FileWork>,
) -> io::Result<()> {
    let total = u64::from(n) * k;
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(4);
    poll.registry().register(&mut inp.stream, Token(0), Interest::READABLE)?;
    let mut made = 0u64;
    if let Some(f) = file.as_mut() {
        f.want(1)?;
    }
    // (token present, entries made so far in the run)
    let mut token = (me == 0).then_some(0u64);
    loop {
        if let Some(count) = token.take() {
            let mut count = count;
            if made < k {
                made += 1;
                if let Some(f) = file.as_mut() {
                    f.enter_and_exit(made, count + 1)?;
                }
                count += 1;
                if count == total {
                    return Ok(());
                }
                if made < k {
                    if let Some(f) = file.as_mut() {
                        f.want(made + 1)?;
                    }
                }
            }
            out.send(&frame(TOKEN, count))?;
        }
        poll_once(&mut poll, &mut events)?;
        loop {
            match inp.recv() {
                Ok(Some((TOKEN, count))) => token = Some(count),
                Ok(Some((kind, _))) => return Err(io::Error::other(format!("unexpected frame kind {kind}"))),
                Ok(None) => break,
                Err(e) if is_eof(&e) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
}

/// A client of the coordinator: REQUEST, wait for GRANT, the entry, RELEASE, k times.
fn client(me: u32, k: u64, mut link: Link, mut file: Option<FileWork>) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(4);
    poll.registry().register(&mut link.stream, Token(0), Interest::READABLE)?;
    for e in 1..=k {
        if let Some(f) = file.as_mut() {
            f.want(e)?;
        }
        link.send(&frame(REQUEST, u64::from(me)))?;
        let fence = loop {
            match link.recv()? {
                Some((GRANT, fence)) => break fence,
                Some((kind, _)) => return Err(io::Error::other(format!("unexpected frame kind {kind}"))),
                None => poll_once(&mut poll, &mut events)?,
            }
        };
        if let Some(f) = file.as_mut() {
            f.enter_and_exit(e, fence)?;
        }
        link.send(&frame(RELEASE, u64::from(me)))?;
    }
    Ok(())
}

/// The coordinator, process 0: a FIFO of requests, itself among them (its own entries
/// take no message); it stops when every client has closed and it has made its own.
fn coordinator(k: u64, clients: Vec<UnixStream>, mut file: Option<FileWork>) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(clients.len() + 1);
    let mut links: Vec<Option<Link>> = Vec::with_capacity(clients.len());
    for (i, s) in clients.into_iter().enumerate() {
        let mut l = Link::new(s)?;
        poll.registry().register(&mut l.stream, Token(i + 1), Interest::READABLE)?;
        links.push(Some(l));
    }
    let mut open = links.len();
    let mut queue = std::collections::VecDeque::with_capacity(links.len() + 1);
    // Who holds the lock: None, 0 (the coordinator) or a client's number.
    let mut holder: Option<usize> = None;
    let mut made = 0u64;
    let mut grants = 0u64;
    if let Some(f) = file.as_mut() {
        f.want(1)?;
    }
    queue.push_back(0usize);
    loop {
        while holder.is_none() {
            let Some(next) = queue.pop_front() else { break };
            grants += 1;
            if next == 0 {
                made += 1;
                if let Some(f) = file.as_mut() {
                    f.enter_and_exit(made, grants)?;
                }
                if made < k {
                    if let Some(f) = file.as_mut() {
                        f.want(made + 1)?;
                    }
                    queue.push_back(0);
                }
            } else {
                let l =
                    links[next - 1].as_mut().ok_or_else(|| io::Error::other("grant to a closed client"))?;
                l.send(&frame(GRANT, grants))?;
                holder = Some(next);
            }
        }
        if open == 0 && made == k {
            return Ok(());
        }
        poll_once(&mut poll, &mut events)?;
        for ev in events.iter() {
            let c = ev.token().0;
            let Some(l) = links[c - 1].as_mut() else { continue };
            let mut closed = false;
            loop {
                match l.recv() {
                    Ok(Some((REQUEST, _))) => queue.push_back(c),
                    Ok(Some((RELEASE, _))) if holder == Some(c) => holder = None,
                    Ok(Some((kind, _))) => {
                        return Err(io::Error::other(format!("unexpected frame kind {kind} from {c}")))
                    }
                    Ok(None) => break,
                    Err(e) if is_eof(&e) => {
                        if holder == Some(c) {
                            return Err(io::Error::other(format!(
                                "client {c} closed while holding the lock"
                            )));
                        }
                        poll.registry().deregister(&mut l.stream)?;
                        closed = true;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            if closed {
                links[c - 1] = None;
                open -= 1;
            }
        }
    }
}

/// A Ricart-Agrawala process: `links[p]` joins it to process `p` (none to itself). It
/// asks for its next entry as soon as it left the last, and stops once it made its `k`
/// and has answered the `k` REQUESTs of every peer (no REPLY of its is then owed; a peer
/// that stopped closes its links, and what it sent before is read before the close).
fn ra_node(me: u32, k: u64, mut links: Vec<Option<Link>>, mut file: Option<FileWork>) -> io::Result<()> {
    let n = links.len();
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(n);
    for (p, l) in links.iter_mut().enumerate() {
        if let Some(l) = l {
            poll.registry().register(&mut l.stream, Token(p), Interest::READABLE)?;
        }
    }
    let mut clock = 0u64;
    // The time of this process's request while it asks or is inside.
    let mut asking: Option<u64> = None;
    let mut replies = 0usize;
    let mut deferred = vec![false; n];
    // REQUESTs received from each peer.
    let mut heard = vec![0u64; n];
    let mut made = 0u64;
    loop {
        if asking.is_none() && made < k {
            clock += 1;
            asking = Some(clock);
            replies = 0;
            if let Some(f) = file.as_mut() {
                f.want(made + 1)?;
            }
            for l in links.iter_mut().flatten() {
                l.send(&frame(REQUEST, clock))?;
            }
        }
        if let (Some(ts), true) = (asking, replies == n - 1) {
            made += 1;
            if let Some(f) = file.as_mut() {
                f.enter_and_exit(made, ts)?;
            }
            asking = None;
            for (p, d) in deferred.iter_mut().enumerate() {
                if std::mem::take(d) {
                    links[p]
                        .as_mut()
                        .ok_or_else(|| io::Error::other("a deferred peer closed"))?
                        .send(&frame(REPLY, clock))?;
                }
            }
            continue;
        }
        let others_done = heard.iter().enumerate().all(|(p, &h)| p == me as usize || h == k);
        if made == k && others_done {
            return Ok(());
        }
        poll_once(&mut poll, &mut events)?;
        for ev in events.iter() {
            let p = ev.token().0;
            while let Some(l) = links[p].as_mut() {
                match l.recv() {
                    Ok(Some((REQUEST, ts))) => {
                        heard[p] += 1;
                        clock = clock.max(ts) + 1;
                        // Ours first if it is older (ties to the lower id): theirs waits.
                        if asking.is_some_and(|mine| (mine, me) < (ts, p as u32)) {
                            deferred[p] = true;
                        } else {
                            l.send(&frame(REPLY, clock))?;
                        }
                    }
                    Ok(Some((REPLY, _))) if asking.is_some() => replies += 1,
                    Ok(Some((kind, _))) => {
                        return Err(io::Error::other(format!("unexpected frame kind {kind} from {p}")))
                    }
                    Ok(None) => break,
                    Err(e) if is_eof(&e) => {
                        poll.registry().deregister(&mut l.stream)?;
                        links[p] = None;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_is_the_last_exit_value() {
        let text = b"# h\nWANT w=1 e=1 t=5\nEXIT w=0 e=1 fence=1:0 read=6 value=7 t=9\nWANT w=0 e=2 t=10\n";
        assert_eq!(last_value(text), Some(7));
        assert_eq!(last_value(b"WANT w=1 e=1 t=5\n"), None);
    }

    #[test]
    fn a_frame_is_the_size_mutexlab_sends() {
        let f = frame(GRANT, 42);
        assert_eq!(f.len(), 16);
        assert_eq!(u32::from_be_bytes(f[..4].try_into().unwrap()) as usize, FRAME - 4);
    }
}
