//! The worker runtime: runs one algorithm state machine inside a real process.
//!
//! It owns everything the algorithm must not: the Unix-socket mesh to the other workers
//! (reliable FIFO streams, one per pair, framed by [`crate::wire`]), the Lamport clock
//! stamped on every envelope, timers, the application loop (think, ask, enter, do the
//! read-modify-write on the shared file, leave), statistics, and the control link to the
//! supervisor.
//!
//! One thread, one `mio` poll loop: sockets are non-blocking and every peer has its own
//! outgoing queue, so a stopped or slow peer can never stall this worker. Timers live in
//! a deadline heap whose head sets the poll timeout. Reads are budgeted
//! ([`wire::FILL_BUDGET`]): a stream that still has bytes when its budget is spent is
//! served again on the next turn of the loop, after everyone else, so a flooding peer
//! can neither starve the others nor make a buffer grow without bound. The only
//! blocking calls are the short writes to the supervisor on the control link and, under
//! `flock`, the kernel lock itself (that algorithm *is* a blocking lock).
//!
//! # Connections
//!
//! Worker i dials every worker below it (a restarted worker dials every live worker);
//! the supervisor orders the dials so that of any two workers only one dials the other.
//! Every connection opens with a [`Hello`] from the caller that proves the run's secret
//! ([`crate::auth`]): who is calling, whom, and as which incarnation.
//!
//! - A connection that has not said hello within [`HELLO_DEADLINE`] is dropped, with a
//!   line on stderr. At most [`max_pending`] connections may be waiting for their hello;
//!   connections beyond that are accepted and closed at once (counted in
//!   `dropped_connections`, one line on stderr per burst), so idle callers cannot use up
//!   this process's descriptors. When `accept` fails anyway (EMFILE, ENFILE, ENOBUFS…),
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
//! Every peer starts *up* (messages to one that has not connected yet are queued). The
//! algorithm then sees, per peer, strictly alternating events, each exactly once:
//! `on_peer_down` when the channel closes, a dial fails, or (for a restarted worker) the
//! supervisor did not list the peer to dial (dead, or not started yet: either way it
//! will dial us when it starts); `on_peer_up` when a peer that was down connects again.
//! An announced hello from a newer incarnation than the one the algorithm knows is
//! reported as `on_peer_down` (if it was not already; what the old life sent is
//! delivered first) followed by `on_peer_up`: the peer has fresh state, whatever the
//! algorithm believed. Messages to a peer that is down are counted
//! as sent and discarded, so a new incarnation never receives what was meant for the
//! old one.
//!
//! # Bad input
//!
//! A frame whose body does not decode, or that is misaddressed (wrong sender or
//! receiver), is dropped and counted in `bad_frames`, with a line on stderr (the first
//! [`BAD_FRAME_LINES`], then one line saying the rest are only counted); the length
//! header kept the stream in step, so the connection is kept and the next frame is read
//! normally. A length above [`wire::MAX_FRAME`] means the stream cannot be trusted any
//! more: the connection is dropped (`dropped_connections`) with a line on stderr, and
//! the peer is down for the algorithm. A stream that ends inside a frame loses that
//! partial frame (a line on stderr) and is a closed channel like any other.
//!
//! # Giving up
//!
//! An error this worker cannot get past (the resource file cannot be written, say,
//! because the disk is full) ends it with status 1, after it has told the supervisor
//! why (`Fatal` on the control link), so the run's failure line names the worker, the
//! file and the OS error.

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Token};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use signal_hook::consts::{SIGINT, SIGTERM};

use crate::algorithm::{Algorithm, Config, Input, Message, MutexEvent, Node, NodeInput, PeerId};
use crate::algos::{self, AlgoInfo, AlgoVisitor};
use crate::auth::{Hello, Secret};
use crate::control::{self, ToSupervisor, ToWorker, WorkerSettings, WorkerStats};
use crate::host::{Breach, Effect, Host, Step};
use crate::resource::{self, Resource};
use crate::wire::{self, Envelope, Fill, FrameReader};

mod link;
mod netfaults;
mod workload;
use link::setup;
use netfaults::NetFaults;
use workload::{App, Local};

/// Everything a worker runs with: its settings, where the run lives, and the secret.
#[derive(Clone, Debug)]
pub struct WorkerOpts {
    pub settings: WorkerSettings,
    pub run_dir: PathBuf,
    pub secret: Secret,
}

/// Run a worker to the end: read the setup from the control link handed down by the
/// supervisor ([`control::LINK_FD`]), then work. `cmdline_id`, the id on the worker's
/// command line (there so `ps` shows who is who), must match the setup's. Errors are
/// fatal for this worker; when the link is up the supervisor is told why first, and the
/// caller reports them too.
pub fn run_worker(run_dir: &Path, cmdline_id: Option<u32>) -> anyhow::Result<()> {
    let mut link =
        control::take_link().map_err(|e| anyhow::anyhow!("{e}; workers are started by `mutexlab run`"))?;
    let result = setup(&mut link, run_dir, cmdline_id).and_then(|opts| {
        let name = opts.settings.algo.clone();
        algos::dispatch(&name, Runner(opts, link.try_clone()?))
            .unwrap_or_else(|| Err(anyhow::anyhow!("unknown algorithm {name:?}")))
    });
    if let Err(e) = &result {
        // Best effort: the supervisor may be gone, or the link broken.
        let mut buf = Vec::new();
        wire::encode(&mut buf, &ToSupervisor::Fatal(format!("{e:#}")));
        let _ = link.write_all(&buf);
    }
    result
}

struct Runner(WorkerOpts, StdUnixStream);

impl AlgoVisitor for Runner {
    type Output = anyhow::Result<()>;
    fn visit<A: Algorithm>(self, info: &'static AlgoInfo) -> anyhow::Result<()> {
        Worker::<A>::new(self.0, self.1, info)?.run()
    }
}

const LISTENER: Token = Token(0);
const CONTROL: Token = Token(1);
const SIGNALS: Token = Token(2);
/// A peer's channel: `PEER_BASE + id`.
const PEER_BASE: usize = 1 << 20;
/// A connection that has not said hello yet: `PENDING_BASE + n`.
const PENDING_BASE: usize = 1 << 24;

/// How long an accepted connection may stay silent before its hello.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(2);
/// How soon to try `accept` again after it failed (EMFILE and the like).
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// Connections accepted in one go before the loop serves everyone else.
const ACCEPT_BATCH: usize = 256;
/// First and longest wait before dialing again a peer whose backlog was full.
const REDIAL_FIRST: Duration = Duration::from_millis(20);
const REDIAL_MAX: Duration = Duration::from_secs(1);
/// Bad frames logged one by one; after that they are only counted.
pub const BAD_FRAME_LINES: u64 = 20;

/// How many accepted connections may wait for their hello at once: room for every peer
/// to dial at the same moment, twice over.
pub fn max_pending(workers: u32) -> usize {
    2 * workers as usize + 16
}

/// Which timer a heap entry stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKind {
    /// The application's think time is over.
    Think,
    /// The critical-section work is done.
    CsDone,
    /// An algorithm timer, by the generation the host armed it with.
    Algo(u64),
    /// Delayed messages may be due.
    Deliver,
    /// A pending connection (`PENDING_BASE + n`) must have said hello by now.
    HelloDue(usize),
    /// Try `accept` again.
    Accept,
    /// Dial this peer again.
    Redial(usize),
}

#[derive(Default)]
struct Peer {
    /// The channel: we write on it and read from it.
    stream: Option<UnixStream>,
    reader: FrameReader,
    out: Vec<u8>,
    written: usize,
    /// The peer's incarnation as far as the algorithm knows.
    incarnation: u32,
    /// That incarnation has had a channel (it may have closed since): a later
    /// connection claiming it is refused.
    had_channel: bool,
    /// The algorithm was told this peer is down, and not since that it is back.
    down: bool,
    /// A dial that found the backlog full, to try again: the path and the next wait.
    redial: Option<(PathBuf, Duration)>,
    /// `stream` is registered for WRITABLE too: only while `out` is backed up, because
    /// every read by the peer would otherwise wake this process for nothing.
    write_interest: bool,
}

/// An accepted connection waiting for its hello.
struct PendingConn {
    stream: UnixStream,
    reader: FrameReader,
    /// A proven hello from a life of its peer the supervisor has not announced yet.
    held: Option<Hello>,
}

struct Worker<A: Node<Service = crate::algorithm::Mutex>> {
    opts: WorkerSettings,
    run_dir: PathBuf,
    secret: Secret,
    /// Each worker's current incarnation, as the supervisor announced it.
    announced: Vec<u32>,
    me: PeerId,
    /// The algorithm, behind the host that keeps the driver contract.
    host: Host<A>,
    poll: Poll,
    listener: UnixListener,
    socket_path: PathBuf,
    control: StdUnixStream,
    control_reader: FrameReader,
    signals: signal_hook_mio::v1_0::Signals,
    /// Set by the SIGTERM/SIGINT handler itself, so it is seen even between two polls.
    term: Arc<AtomicBool>,
    peers: Vec<Peer>,
    pending_conns: HashMap<Token, PendingConn>,
    next_pending: usize,
    max_pending: usize,
    /// Sources whose read budget ran out: served again on the next turn of the loop.
    again: Vec<Token>,
    /// An `Accept` timer is set.
    accept_retry: bool,
    /// `accept` failures in a row (logged when the streak starts and when it ends).
    accept_failures: u64,
    /// Bad frames logged so far.
    bad_logged: u64,
    clock: u64,
    started: Instant,
    deadline: Option<Instant>,
    timers: BinaryHeap<std::cmp::Reverse<(Instant, u64, TimerKind)>>,
    timer_seq: u64,
    /// Algorithm timers armed and not yet fired, by generation.
    algo_timers: HashMap<u64, A::Timer>,
    local: VecDeque<Local>,
    app: App,
    app_since: u64,
    entries: u64,
    resource: Resource,
    /// Where `resource` lives, for error messages.
    resource_path: PathBuf,
    lock_file: Option<File>,
    held_lock: Option<nix::fcntl::Flock<File>>,
    rng: ChaCha8Rng,
    stats: WorkerStats,
    running: bool,
    scratch: Vec<u8>,
    /// Message faults, applied on the send path.
    net: NetFaults,
}

impl<A: Node<Service = crate::algorithm::Mutex>> Worker<A> {
    fn new(opts: WorkerOpts, control: StdUnixStream, info: &'static AlgoInfo) -> anyhow::Result<Self> {
        let WorkerOpts { settings: opts, run_dir, secret } = opts;
        let me = PeerId(opts.id);
        let cfg = Config {
            id: me,
            n: opts.workers,
            seed: opts.seed,
            replicas: opts.replicas,
            incarnation: opts.incarnation,
        };
        let poll = Poll::new()?;
        let socket_path = run_dir.join(control::worker_socket(me, opts.incarnation));
        let _ = std::fs::remove_file(&socket_path);
        let mut listener = UnixListener::bind(&socket_path)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", socket_path.display()))?;
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        let term = Arc::new(AtomicBool::new(false));
        for sig in [SIGTERM, SIGINT] {
            signal_hook::flag::register(sig, Arc::clone(&term))?;
        }
        let mut signals = signal_hook_mio::v1_0::Signals::new([SIGTERM, SIGINT])?;
        poll.registry().register(&mut signals, SIGNALS, Interest::READABLE)?;
        let resource_path = run_dir.join(control::RESOURCE_FILE);
        let resource = Resource::open(&resource_path)
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", resource_path.display()))?;
        let lock_file = if info.kernel_lock { Some(File::open(&resource_path)?) } else { None };
        // A restarted worker forgets everything but its Lamport clock, which it takes up
        // above every fence in the file, as if it had kept it on disk. Otherwise, after
        // every worker has restarted, fresh clocks would start fences below the old ones
        // and every later section would look stale.
        let clock = if opts.incarnation > 0 {
            resource
                .highest_fence_clock()
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", resource_path.display()))?
        } else {
            0
        };
        let seed = opts.seed ^ (u64::from(opts.id) << 32) ^ u64::from(opts.incarnation).rotate_left(16);
        let n = opts.workers as usize;
        Ok(Worker {
            run_dir,
            secret,
            announced: vec![0; n],
            resource_path,
            me,
            host: Host::new(cfg),
            poll,
            listener,
            socket_path,
            control,
            control_reader: FrameReader::default(),
            signals,
            term,
            peers: (0..n).map(|_| Peer::default()).collect(),
            pending_conns: HashMap::new(),
            next_pending: 0,
            max_pending: max_pending(opts.workers),
            again: Vec::new(),
            accept_retry: false,
            accept_failures: 0,
            bad_logged: 0,
            clock,
            started: Instant::now(),
            deadline: None,
            timers: BinaryHeap::new(),
            timer_seq: 0,
            algo_timers: HashMap::new(),
            local: VecDeque::new(),
            app: App::Starting,
            app_since: resource::monotonic_ns(),
            resource,
            lock_file,
            held_lock: None,
            rng: ChaCha8Rng::seed_from_u64(seed),
            stats: WorkerStats { id: me, ..Default::default() },
            running: true,
            scratch: Vec::with_capacity(256),
            net: NetFaults {
                active: !opts.latency.is_zero() || !opts.jitter.is_zero() || opts.drop > 0.0,
                rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6e65_7466_6175_6c74),
                delayed: (0..n).map(|_| VecDeque::new()).collect(),
                held: vec![Vec::new(); n],
                groups: None,
            },
            entries: opts.start_entry,
            opts,
        })
    }

    /// One line on stderr, written with one `write` so that lines from several
    /// workers sharing the terminal never interleave.
    fn log(&self, what: std::fmt::Arguments<'_>) {
        let line = format!("mutexlab: {}: {what}\n", self.me);
        let _ = io::stderr().lock().write_all(line.as_bytes());
    }

    /// The worker was sent SIGTERM or SIGINT.
    fn terminating(&self) -> bool {
        self.term.load(Ordering::SeqCst)
    }

    fn run(mut self) -> anyhow::Result<()> {
        let ready =
            ToSupervisor::Ready { id: self.me, pid: std::process::id(), incarnation: self.opts.incarnation };
        self.tell_supervisor(&ready)?;
        // Wait for Start on the blocking control stream: nothing else can happen yet.
        let dial = match wire::read_blocking::<ToWorker, _>(&mut self.control)? {
            Some(ToWorker::Start { dial, incarnations }) => {
                for (p, inc) in incarnations.into_iter().enumerate().take(self.announced.len()) {
                    self.announced[p] = inc;
                }
                dial
            }
            Some(other) => anyhow::bail!("expected Start from the supervisor, got {other:?}"),
            None => return Ok(()), // the supervisor ended the run before it began
        };
        if self.terminating() {
            self.log(format_args!("terminated by signal before the run began; leaving"));
            return Ok(());
        }
        self.control.set_nonblocking(true)?;
        let fd = self.control.try_clone()?;
        let mut source = mio::net::UnixStream::from_std(fd);
        self.poll.registry().register(&mut source, CONTROL, Interest::READABLE)?;
        let mut unreachable = Vec::new();
        let listed: Vec<PeerId> = dial.iter().map(|(p, _)| *p).collect();
        for (peer, path) in dial {
            if peer == self.me || peer.0 >= self.opts.workers {
                self.log(format_args!("ignoring an order to dial {peer}, which is not a peer"));
                continue;
            }
            let path = self.run_dir.join(path);
            if !self.dial(peer, path) {
                unreachable.push(peer);
            }
        }
        if self.opts.incarnation > 0 {
            // A restarted worker is told to dial every live peer it can reach: the others
            // are dead or not started yet, and will dial us when they start.
            let dead: Vec<PeerId> =
                (0..self.opts.workers).map(PeerId).filter(|p| *p != self.me && !listed.contains(p)).collect();
            if !dead.is_empty() {
                let names: Vec<String> = dead.iter().map(|p| p.to_string()).collect();
                self.log(format_args!(
                    "not listed at restart (dead or not started yet), down until they dial us: {}",
                    names.join(", ")
                ));
            }
            unreachable.extend(dead);
        }
        self.started = Instant::now();
        self.deadline = self.opts.duration.map(|d| self.started + d);
        self.input(Input::Start)?;
        for peer in unreachable {
            self.lost(peer)?;
        }
        self.think();
        self.run_local()?;
        self.flush_all()?;
        self.event_loop()?;
        drop(source);
        Ok(())
    }

    /// Dial `peer` at `path` at startup. False if it cannot be reached: the caller then
    /// tells the algorithm it is down (after `on_start`), and it will dial us when it
    /// starts again. A full backlog is not failure: the dial is tried again later.
    fn dial(&mut self, peer: PeerId, path: PathBuf) -> bool {
        self.peers[peer.index()].incarnation = self.announced[peer.index()];
        match self.connect(peer, &path) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.log(format_args!("{peer}'s backlog is full; dialing again shortly"));
                self.peers[peer.index()].redial = Some((path, REDIAL_FIRST));
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
        wire::encode(&mut hello, &Hello::new(&self.secret, self.me, peer, self.opts.incarnation));
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
        let p = &mut self.peers[peer.index()];
        // The rest of the hello must go first, ahead of anything queued for this peer.
        let mut out = hello[sent..].to_vec();
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
    fn redial(&mut self, peer: PeerId) -> anyhow::Result<()> {
        let p = &mut self.peers[peer.index()];
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
                self.peers[peer.index()].redial = Some((path, next));
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

    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    fn event_loop(&mut self) -> anyhow::Result<()> {
        let mut events = Events::with_capacity(256);
        while self.running {
            if self.terminating() {
                return self.leave_on_signal();
            }
            let timeout = if self.again.is_empty() {
                self.timers.peek().map(|t| t.0 .0.saturating_duration_since(Instant::now()))
            } else {
                Some(Duration::ZERO)
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e.into());
            }
            for ev in events.iter() {
                if !self.running || self.terminating() {
                    break;
                }
                let token = ev.token();
                let is_peer = (PEER_BASE..PENDING_BASE).contains(&token.0);
                if is_peer && !(ev.is_readable() || ev.is_read_closed() || ev.is_error()) {
                    continue; // writable: the flush below takes care of it
                }
                self.dispatch(token)?;
            }
            for token in std::mem::take(&mut self.again) {
                if !self.running || self.terminating() {
                    break;
                }
                self.dispatch(token)?;
            }
            if !self.running || self.terminating() {
                continue;
            }
            self.fire_timers()?;
            self.run_local()?;
            self.flush_all()?;
        }
        Ok(())
    }

    /// Serve a readable source.
    fn dispatch(&mut self, token: Token) -> anyhow::Result<()> {
        match token {
            LISTENER => self.accept(),
            CONTROL => self.control_readable(),
            SIGNALS => {
                if self.signals.pending().next().is_some() {
                    self.term.store(true, Ordering::SeqCst);
                }
                Ok(())
            }
            Token(t) if t >= PENDING_BASE => self.pending_readable(token),
            Token(t) if t >= PEER_BASE => self.peer_readable(PeerId((t - PEER_BASE) as u32)),
            _ => Ok(()),
        }
    }

    fn accept(&mut self) -> anyhow::Result<()> {
        let mut refused = 0u64;
        let mut more = true;
        for _ in 0..ACCEPT_BATCH {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if self.accept_failures > 0 {
                        let n = std::mem::take(&mut self.accept_failures);
                        self.log(format_args!("accepting connections again after {n} failed tries"));
                    }
                    if self.pending_conns.len() >= self.max_pending {
                        // Closed at once: idle callers must not use up our descriptors.
                        refused += 1;
                        self.stats.dropped_connections += 1;
                        drop(stream);
                        continue;
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
                    if self.accept_failures == 0 {
                        self.log(format_args!(
                            "accepting a connection failed: {e}; trying again every {} ms",
                            ACCEPT_RETRY.as_millis()
                        ));
                    }
                    self.accept_failures += 1;
                    if !self.accept_retry {
                        self.accept_retry = true;
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
        if refused > 0 {
            self.log(format_args!(
                "refused {refused} connection(s): {} already waiting for their hello",
                self.pending_conns.len()
            ));
        }
        Ok(())
    }

    fn add_pending(&mut self, mut stream: UnixStream) -> anyhow::Result<()> {
        let token = Token(PENDING_BASE + self.next_pending);
        self.next_pending += 1;
        if let Err(e) = self.poll.registry().register(&mut stream, token, Interest::READABLE) {
            self.log(format_args!("dropping a connection that cannot be polled: {e}"));
            self.stats.dropped_connections += 1;
            return Ok(());
        }
        self.pending_conns.insert(token, PendingConn { stream, reader: FrameReader::default(), held: None });
        self.push_timer(HELLO_DEADLINE, TimerKind::HelloDue(token.0));
        // Data may already be waiting; edge-triggered polling would not say so.
        self.pending_readable(token)
    }

    fn drop_pending(&mut self, token: Token, why: std::fmt::Arguments<'_>) {
        if let Some(mut pc) = self.pending_conns.remove(&token) {
            let _ = self.poll.registry().deregister(&mut pc.stream);
            self.stats.dropped_connections += 1;
            self.log(why);
        }
    }

    /// A connection that has not said hello yet.
    fn pending_readable(&mut self, token: Token) -> anyhow::Result<()> {
        let Some(pc) = self.pending_conns.get_mut(&token) else {
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
        let wrong = if !hello.proves(&self.secret) {
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
        let announced = self.announced[peer.index()];
        let p = &self.peers[peer.index()];
        if inc > announced {
            // Its notice may still be on the way: wait for it (see `announce`).
            if let Some(pc) = self.pending_conns.get_mut(&token) {
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
        let Some(PendingConn { stream, reader, .. }) = self.pending_conns.remove(&token) else {
            return Ok(());
        };
        self.adopt(hello, stream, reader)
    }

    /// The supervisor says worker `peer` now lives as `incarnation`: believe it, and
    /// take up any hello from that life that was waiting for this.
    fn announce(&mut self, peer: PeerId, incarnation: u32) -> anyhow::Result<()> {
        if peer.index() >= self.announced.len() || peer == self.me {
            self.log(format_args!("ignoring an announcement about {peer}, which is not a peer"));
            return Ok(());
        }
        let slot = &mut self.announced[peer.index()];
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
            let hello = self.pending_conns.get_mut(&token).and_then(|pc| pc.held.take());
            if let Some(hello) = hello {
                self.consider(token, hello)?;
            }
        }
        Ok(())
    }

    /// The `HelloDue` timer of a pending connection fired.
    fn hello_overdue(&mut self, token: Token) {
        let secs = HELLO_DEADLINE.as_secs_f64();
        let held = self.pending_conns.get(&token).and_then(|pc| pc.held.clone());
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

    /// A believed hello from `hello.from`: make its connection that peer's channel. A
    /// newer life replaces the old one, whose last frames are delivered first.
    fn adopt(&mut self, hello: Hello, mut stream: UnixStream, reader: FrameReader) -> anyhow::Result<()> {
        let peer = hello.from;
        let idx = peer.index();
        if hello.incarnation > self.peers[idx].incarnation {
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
        let p = &mut self.peers[idx];
        p.stream = Some(stream);
        p.write_interest = false; // registered READABLE only
        p.reader = reader;
        p.incarnation = hello.incarnation;
        p.had_channel = true;
        p.redial = None;
        if std::mem::replace(&mut p.down, false) {
            self.input(Input::PeerUp { peer })?;
        }
        // Frames that arrived right behind the hello.
        self.peer_readable(peer)
    }

    /// Read what `peer`'s channel has and deliver it.
    fn peer_readable(&mut self, peer: PeerId) -> anyhow::Result<()> {
        let idx = peer.index();
        let p = &mut self.peers[idx];
        let (stream, reader) = match p.stream.as_mut() {
            Some(s) => (s, &mut p.reader),
            None => return Ok(()),
        };
        let fill = reader.fill(stream);
        let mut inbox = Vec::new();
        let mut bad = Vec::new();
        let mut broken = None;
        loop {
            match reader.next_frame() {
                Ok(Some(body)) => match wire::decode::<Envelope<A::Msg>>(body) {
                    Ok(env) if env.from == peer && env.to == self.me => inbox.push(env),
                    Ok(env) => bad.push(format!(
                        "dropping a frame on {peer}'s channel addressed {}→{}",
                        env.from, env.to
                    )),
                    Err(e) => bad.push(format!("dropping a frame from {peer}: {e}")),
                },
                Ok(None) => break,
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        let cut_short = reader.finish().err();
        for line in bad {
            self.stats.bad_frames += 1;
            self.bad_logged += 1;
            if self.bad_logged <= BAD_FRAME_LINES {
                self.log(format_args!("{line}"));
            }
            if self.bad_logged == BAD_FRAME_LINES {
                self.log(format_args!("further bad frames are counted, not logged"));
            }
        }
        for env in inbox {
            self.clock = self.clock.max(env.clock).saturating_add(1);
            *self.stats.received.entry(env.msg.kind().to_string()).or_default() += 1;
            self.input(Input::Message { from: peer, msg: env.msg })?;
        }
        match (broken, fill) {
            (Some(why), _) => {
                self.stats.dropped_connections += 1;
                self.log(format_args!("dropping the connection from {peer}: {why}"));
                self.lost(peer)
            }
            (None, Ok(Fill::Eof)) => {
                if let Some(e) = cut_short {
                    self.log(format_args!("{peer}'s {e}"));
                }
                self.lost(peer)
            }
            (None, Err(e)) => {
                // A reset is how a killed peer's channel usually ends: as ordinary as EOF.
                if !e.is_reset() {
                    self.log(format_args!("reading from {peer} failed: {e}"));
                }
                self.lost(peer)
            }
            (None, Ok(Fill::Budget)) => {
                self.again.push(Token(PEER_BASE + idx));
                Ok(())
            }
            (None, Ok(Fill::WouldBlock)) => Ok(()),
        }
    }

    /// `peer` is gone (its channel closed, it cannot be dialed, or a new incarnation
    /// replaces it): close its connections, forget what was queued for it, and tell the
    /// algorithm, unless it was told already.
    fn lost(&mut self, peer: PeerId) -> anyhow::Result<()> {
        let idx = peer.index();
        let p = &mut self.peers[idx];
        if let Some(mut stream) = p.stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
        }
        p.reader = FrameReader::default();
        p.out.clear();
        p.written = 0;
        p.redial = None;
        // Messages to a crashed process are lost with it.
        self.net.held[idx].clear();
        self.net.delayed[idx].clear();
        if std::mem::replace(&mut p.down, true) {
            return Ok(());
        }
        self.input(Input::PeerDown { peer })
    }

    fn push_timer(&mut self, after: Duration, kind: TimerKind) {
        self.timer_seq += 1;
        let now = Instant::now();
        // An absurd duration (an algorithm's bug) means "never", not a panic.
        let at = now.checked_add(after).unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
        self.timers.push(std::cmp::Reverse((at, self.timer_seq, kind)));
    }

    fn fire_timers(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        while let Some(std::cmp::Reverse((at, _, kind))) = self.timers.peek().copied() {
            if at > now || !self.running || self.terminating() {
                break;
            }
            self.timers.pop();
            match kind {
                TimerKind::Think => self.local.push_back(Local::WantCs),
                TimerKind::Deliver => self.deliver_due(),
                TimerKind::CsDone => self.local.push_back(Local::CsDone),
                TimerKind::HelloDue(t) => self.hello_overdue(Token(t)),
                TimerKind::Accept => {
                    self.accept_retry = false;
                    self.accept()?;
                }
                TimerKind::Redial(i) => self.redial(PeerId(i as u32))?,
                TimerKind::Algo(gen) => {
                    // The host drops a timer reset or cancelled since it was armed.
                    let Some(timer) = self.algo_timers.remove(&gen) else { continue };
                    if let Some(step) = self.host.fire(self.now(), &timer, gen) {
                        self.carry(step)?;
                    }
                    continue;
                }
            }
            self.run_local()?;
        }
        Ok(())
    }

    /// Hand the algorithm one input through its host, and carry out what it asks.
    fn input(&mut self, input: NodeInput<A>) -> anyhow::Result<()> {
        let step = self.host.step(self.now(), input);
        self.carry(step)
    }

    /// Carry out a step's effects, then any local events they caused. Breaches of the
    /// contract are logged and counted; the run goes on.
    fn carry(&mut self, step: Step<A>) -> anyhow::Result<()> {
        for breach in &step.breaches {
            if matches!(breach, Breach::Event { .. }) {
                self.stats.unasked_grants += 1;
            }
            self.log(format_args!("{breach}"));
        }
        for effect in step.effects {
            match effect {
                Effect::Send { to, msg } => self.send(to, &msg),
                Effect::Arm { timer, generation, after } => {
                    self.algo_timers.insert(generation, timer);
                    self.push_timer(after, TimerKind::Algo(generation));
                }
                // The host knows it is cancelled; its heap entry is dropped when it fires.
                Effect::Disarm { .. } => {}
                Effect::Event { event: MutexEvent::Enter } => self.enter_cs()?,
                Effect::Count { name, by } => {
                    *self.stats.counters.entry(name.into_owned()).or_default() += by;
                }
            }
        }
        self.run_local()
    }

    /// One non-blocking pass over every outgoing queue.
    fn flush_all(&mut self) -> anyhow::Result<()> {
        for i in 0..self.peers.len() {
            let p = &mut self.peers[i];
            if p.written == p.out.len() {
                continue;
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
                p.written = 0;
            } else if p.written > 64 * 1024 {
                p.out.drain(..p.written);
                p.written = 0;
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

impl<A: Node<Service = crate::algorithm::Mutex>> Drop for Worker<A> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket_path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_may_dial_at_once_without_hitting_the_pending_cap() {
        for n in 1..=256 {
            assert!(max_pending(n) >= n as usize, "n = {n}");
        }
    }
}
