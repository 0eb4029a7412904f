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
//! a deadline heap whose head sets the poll timeout. A peer that sends garbage loses that
//! frame (if the framing still holds) or its connection (if it does not), with a line on
//! stderr saying so; the run goes on.

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mio::net::{UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Token};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use signal_hook::consts::{SIGINT, SIGTERM};

use crate::algorithm::{Action, Algorithm, Config, Message, Out, PeerId};
use crate::algos::{self, AlgoInfo, AlgoVisitor};
use crate::control::{self, PendingState, ToSupervisor, ToWorker, WorkerStats};
use crate::resource::{self, Fence, Record, Resource};
use crate::wire::{self, Envelope, Fill, FrameError, FrameReader, Hello};

/// Everything a worker process is told on its command line.
#[derive(Clone, Debug)]
pub struct WorkerOpts {
    pub id: u32,
    pub workers: u32,
    pub algo: String,
    pub run_dir: PathBuf,
    pub incarnation: u32,
    /// Entries to complete; 0 means run until `duration` is over.
    pub entries: u64,
    pub duration: Option<Duration>,
    pub cs: Duration,
    pub think: Duration,
    pub seed: u64,
    pub replicas: Option<u32>,
    /// The supervisor's pid: if our parent is already someone else, it died before we
    /// could ask to be told, so we leave at once.
    pub parent: Option<u32>,
    /// Entries this worker completed in earlier incarnations (numbering goes on).
    pub start_entry: u64,
    /// Message faults: fixed delay, extra uniform delay, and loss probability.
    pub latency: Duration,
    pub jitter: Duration,
    pub drop: f64,
}

/// Run a worker to the end. Errors are fatal for this worker and are reported by the
/// caller; the supervisor then sees the worker die.
pub fn run_worker(opts: WorkerOpts) -> anyhow::Result<()> {
    if let Some(parent) = opts.parent {
        if nix::unistd::getppid().as_raw() as u32 != parent {
            anyhow::bail!("supervisor {parent} is gone");
        }
    }
    let name = opts.algo.clone();
    algos::dispatch(&name, Runner(opts)).unwrap_or_else(|| Err(anyhow::anyhow!("unknown algorithm {name:?}")))
}

struct Runner(WorkerOpts);

impl AlgoVisitor for Runner {
    type Output = anyhow::Result<()>;
    fn visit<A: Algorithm>(self, info: &'static AlgoInfo) -> anyhow::Result<()> {
        Worker::<A>::new(self.0, info)?.run()
    }
}

const LISTENER: Token = Token(0);
const CONTROL: Token = Token(1);
const SIGNALS: Token = Token(2);
const PEER_BASE: usize = 1 << 20;
const PENDING_BASE: usize = 1 << 24;

/// Which timer a heap entry stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKind {
    /// The application's think time is over.
    Think,
    /// The critical-section work is done.
    CsDone,
    /// An algorithm timer (index into `algo_timers`, generation).
    Algo(usize, u64),
    /// Delayed messages may be due.
    Deliver,
}

/// The application's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum App {
    Starting,
    Thinking,
    Waiting,
    Inside { fence: Fence, read: u64 },
    Done,
}

impl App {
    fn name(self) -> &'static str {
        match self {
            App::Starting => "starting",
            App::Thinking => "thinking",
            App::Waiting => "waiting",
            App::Inside { .. } => "inside",
            App::Done => "done",
        }
    }
}

/// Local events queued while applying actions, handled right after.
#[derive(Debug)]
enum Local {
    WantCs,
    CsDone,
}

#[derive(Default)]
struct Peer {
    stream: Option<UnixStream>,
    reader: FrameReader,
    out: Vec<u8>,
    written: usize,
    incarnation: u32,
    /// We have heard from this peer at some point.
    known: bool,
}

struct Worker<A: Algorithm> {
    opts: WorkerOpts,
    me: PeerId,
    algo: A,
    poll: Poll,
    listener: UnixListener,
    socket_path: PathBuf,
    control: StdUnixStream,
    control_reader: FrameReader,
    signals: signal_hook_mio::v1_0::Signals,
    peers: Vec<Peer>,
    pending_conns: HashMap<Token, (UnixStream, FrameReader)>,
    next_pending: usize,
    clock: u64,
    started: Instant,
    deadline: Option<Instant>,
    timers: BinaryHeap<std::cmp::Reverse<(Instant, u64, TimerKind)>>,
    timer_seq: u64,
    algo_timers: Vec<(A::Timer, u64)>,
    local: VecDeque<Local>,
    app: App,
    app_since: u64,
    entries: u64,
    resource: Resource,
    lock_file: Option<File>,
    held_lock: Option<nix::fcntl::Flock<File>>,
    rng: ChaCha8Rng,
    stats: WorkerStats,
    running: bool,
    scratch: Vec<u8>,
    /// Message faults, applied on the send path.
    net: NetFaults,
}

/// Latency, loss and partitions, applied to outgoing frames. Delays keep each channel
/// FIFO: a frame is never released before one sent earlier on the same channel.
struct NetFaults {
    active: bool,
    rng: ChaCha8Rng,
    delayed: Vec<VecDeque<(Instant, Vec<u8>)>>,
    /// Frames held back by a partition, per peer, in order.
    held: Vec<Vec<u8>>,
    /// Group number of each worker while partitioned.
    groups: Option<Vec<usize>>,
}

impl<A: Algorithm> Worker<A> {
    fn new(opts: WorkerOpts, info: &'static AlgoInfo) -> anyhow::Result<Self> {
        let me = PeerId(opts.id);
        let cfg = Config { id: me, n: opts.workers, seed: opts.seed, replicas: opts.replicas };
        let poll = Poll::new()?;
        let socket_path = opts.run_dir.join(control::worker_socket(me, opts.incarnation));
        let _ = std::fs::remove_file(&socket_path);
        let mut listener = UnixListener::bind(&socket_path)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", socket_path.display()))?;
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        let mut signals = signal_hook_mio::v1_0::Signals::new([SIGTERM, SIGINT])?;
        poll.registry().register(&mut signals, SIGNALS, Interest::READABLE)?;
        let resource_path = opts.run_dir.join(control::RESOURCE_FILE);
        let resource = Resource::open(&resource_path)
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", resource_path.display()))?;
        let lock_file = if info.kernel_lock { Some(File::open(&resource_path)?) } else { None };
        let control = StdUnixStream::connect(opts.run_dir.join(control::CONTROL_SOCKET))
            .map_err(|e| anyhow::anyhow!("cannot reach the supervisor: {e}"))?;
        let seed = opts.seed ^ (u64::from(opts.id) << 32) ^ u64::from(opts.incarnation).rotate_left(16);
        let n = opts.workers as usize;
        Ok(Worker {
            me,
            algo: A::new(&cfg),
            poll,
            listener,
            socket_path,
            control,
            control_reader: FrameReader::default(),
            signals,
            peers: (0..n).map(|_| Peer::default()).collect(),
            pending_conns: HashMap::new(),
            next_pending: 0,
            clock: 0,
            started: Instant::now(),
            deadline: None,
            timers: BinaryHeap::new(),
            timer_seq: 0,
            algo_timers: Vec::new(),
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

    fn log(&self, what: std::fmt::Arguments<'_>) {
        eprintln!("mutexlab: {}: {what}", self.me);
    }

    fn tell_supervisor(&mut self, msg: &ToSupervisor) -> io::Result<()> {
        self.scratch.clear();
        wire::encode(&mut self.scratch, msg);
        self.control.write_all(&self.scratch)
    }

    fn run(mut self) -> anyhow::Result<()> {
        let ready =
            ToSupervisor::Ready { id: self.me, pid: std::process::id(), incarnation: self.opts.incarnation };
        self.tell_supervisor(&ready)?;
        // Wait for Start on the blocking control stream: nothing else can happen yet.
        let dial = match wire::read_blocking::<ToWorker, _>(&mut self.control)? {
            Some(ToWorker::Start { dial }) => dial,
            Some(other) => anyhow::bail!("expected Start from the supervisor, got {other:?}"),
            None => return Ok(()), // the supervisor ended the run before it began
        };
        self.control.set_nonblocking(true)?;
        let fd = self.control.try_clone()?;
        let mut source = mio::net::UnixStream::from_std(fd);
        self.poll.registry().register(&mut source, CONTROL, Interest::READABLE)?;
        for (peer, path) in dial {
            self.dial(peer, &self.opts.run_dir.join(path))?;
        }
        self.started = Instant::now();
        self.deadline = self.opts.duration.map(|d| self.started + d);
        let mut out = Out::new(Duration::ZERO);
        self.algo.on_start(&mut out);
        self.apply(&mut out)?;
        self.think();
        self.run_local()?;
        self.flush_all();
        self.event_loop()?;
        drop(source);
        Ok(())
    }

    fn dial(&mut self, peer: PeerId, path: &std::path::Path) -> anyhow::Result<()> {
        let std_stream = StdUnixStream::connect(path)
            .map_err(|e| anyhow::anyhow!("cannot connect to {peer} at {}: {e}", path.display()))?;
        std_stream.set_nonblocking(true)?;
        let mut stream = UnixStream::from_std(std_stream);
        self.poll.registry().register(
            &mut stream,
            Token(PEER_BASE + peer.index()),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        let mut hello = Vec::new();
        wire::encode(&mut hello, &Hello { from: self.me, incarnation: self.opts.incarnation });
        let p = &mut self.peers[peer.index()];
        // The hello must go first, ahead of anything queued for this peer.
        hello.extend_from_slice(&p.out[p.written..]);
        p.out = hello;
        p.written = 0;
        p.stream = Some(stream);
        p.known = true;
        Ok(())
    }

    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    fn event_loop(&mut self) -> anyhow::Result<()> {
        let mut events = Events::with_capacity(256);
        while self.running {
            let timeout = self.timers.peek().map(|t| t.0 .0.saturating_duration_since(Instant::now()));
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e.into());
            }
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept()?,
                    CONTROL => self.control_readable()?,
                    SIGNALS if self.signals.pending().next().is_some() => {
                        self.log(format_args!("terminated by signal; leaving"));
                        self.running = false;
                    }
                    Token(t) if t >= PENDING_BASE => self.pending_readable(Token(t))?,
                    Token(t) if t >= PEER_BASE => {
                        let peer = PeerId((t - PEER_BASE) as u32);
                        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                            self.peer_readable(peer)?;
                        }
                    }
                    _ => {}
                }
            }
            self.fire_timers()?;
            self.run_local()?;
            self.flush_all();
        }
        Ok(())
    }

    fn accept(&mut self) -> anyhow::Result<()> {
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    let token = Token(PENDING_BASE + self.next_pending);
                    self.next_pending += 1;
                    self.poll.registry().register(&mut stream, token, Interest::READABLE)?;
                    self.pending_conns.insert(token, (stream, FrameReader::default()));
                    // Data may already be waiting; edge-triggered polling would not say so.
                    self.pending_readable(token)?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// A connection that has not said hello yet.
    fn pending_readable(&mut self, token: Token) -> anyhow::Result<()> {
        let Some((stream, reader)) = self.pending_conns.get_mut(&token) else {
            return Ok(());
        };
        let fill = reader.fill(stream);
        let hello = match reader.next_frame() {
            Ok(Some(body)) => Some(wire::decode::<Hello>(body)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        };
        let hello = match (hello, fill) {
            (None, Ok(Fill::WouldBlock)) => return Ok(()),
            (None, Ok(Fill::Eof)) => Err(FrameError::Truncated(reader.leftover())),
            (None, Err(e)) => Err(e),
            (Some(h), _) => h,
        };
        let (mut stream, reader) = self.pending_conns.remove(&token).expect("present above");
        let hello = match hello {
            Ok(h) if h.from.0 < self.opts.workers && h.from != self.me => h,
            Ok(h) => {
                self.log(format_args!("dropping a connection whose hello names a stranger ({})", h.from));
                self.stats.dropped_connections += 1;
                return Ok(());
            }
            Err(e) => {
                self.log(format_args!("dropping a connection before its hello: {e}"));
                self.stats.dropped_connections += 1;
                return Ok(());
            }
        };
        let idx = hello.from.index();
        if self.peers[idx].stream.is_some() && hello.incarnation <= self.peers[idx].incarnation {
            // Only a new incarnation may take over a live channel; anything else is an
            // impostor or a confused student worker.
            self.log(format_args!(
                "dropping a second connection claiming to be {} (incarnation {}) while its channel is open",
                hello.from, hello.incarnation
            ));
            self.stats.dropped_connections += 1;
            return Ok(());
        }
        let token = Token(PEER_BASE + idx);
        self.poll.registry().reregister(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
        let came_back = {
            let p = &mut self.peers[idx];
            let came_back = p.known && hello.incarnation > p.incarnation;
            if let Some(mut old) = p.stream.take() {
                let _ = self.poll.registry().deregister(&mut old);
            }
            if came_back {
                // Whatever was queued was meant for the old incarnation.
                p.out.clear();
                p.written = 0;
                self.net.held[idx].clear();
                self.net.delayed[idx].clear();
            }
            p.stream = Some(stream);
            p.reader = reader;
            p.incarnation = hello.incarnation;
            p.known = true;
            came_back
        };
        if came_back {
            let mut out = Out::new(self.now());
            self.algo.on_peer_up(hello.from, &mut out);
            self.apply(&mut out)?;
        }
        // Frames that arrived right behind the hello.
        self.peer_readable(hello.from)
    }

    fn peer_readable(&mut self, peer: PeerId) -> anyhow::Result<()> {
        let idx = peer.index();
        let p = &mut self.peers[idx];
        let Some(stream) = p.stream.as_mut() else {
            return Ok(());
        };
        let fill = p.reader.fill(stream);
        let mut inbox = Vec::new();
        let mut broken = None;
        loop {
            match self.peers[idx].reader.next_frame() {
                Ok(Some(body)) => match wire::decode::<Envelope<A::Msg>>(body) {
                    Ok(env) if env.from == peer && env.to == self.me => inbox.push(env),
                    Ok(env) => {
                        self.stats.bad_frames += 1;
                        let (from, to) = (env.from, env.to);
                        self.log(format_args!("dropping a frame on {peer}'s channel addressed {from}→{to}"));
                    }
                    Err(e) => {
                        self.stats.bad_frames += 1;
                        self.log(format_args!("dropping a frame from {peer}: {e}"));
                    }
                },
                Ok(None) => break,
                Err(e) => {
                    broken = Some(e.to_string());
                    break;
                }
            }
        }
        for env in inbox {
            self.clock = self.clock.max(env.clock) + 1;
            *self.stats.received.entry(env.msg.kind().to_string()).or_default() += 1;
            let mut out = Out::new(self.now());
            self.algo.on_message(peer, env.msg, &mut out);
            self.apply(&mut out)?;
        }
        match (broken, fill) {
            (Some(why), _) => {
                self.stats.dropped_connections += 1;
                self.log(format_args!("dropping the connection from {peer}: {why}"));
                self.peer_down(peer)
            }
            (None, Ok(Fill::Eof)) => {
                let left = self.peers[idx].reader.leftover();
                if left > 0 {
                    self.log(format_args!("{peer}'s stream ended inside a frame ({left} bytes)"));
                }
                self.peer_down(peer)
            }
            (None, Err(e)) => {
                self.log(format_args!("reading from {peer} failed: {e}"));
                self.peer_down(peer)
            }
            (None, Ok(Fill::WouldBlock)) => Ok(()),
        }
    }

    fn peer_down(&mut self, peer: PeerId) -> anyhow::Result<()> {
        let p = &mut self.peers[peer.index()];
        let Some(mut stream) = p.stream.take() else {
            return Ok(());
        };
        let _ = self.poll.registry().deregister(&mut stream);
        p.reader = FrameReader::default();
        p.out.clear();
        p.written = 0;
        // Messages to a crashed process are lost with it.
        self.net.held[peer.index()].clear();
        self.net.delayed[peer.index()].clear();
        let mut out = Out::new(self.now());
        self.algo.on_peer_down(peer, &mut out);
        self.apply(&mut out)
    }

    fn control_readable(&mut self) -> anyhow::Result<()> {
        let fill = self.control_reader.fill(&mut self.control)?;
        while let Some(body) = self.control_reader.next_frame()? {
            let msg = wire::decode::<ToWorker>(body)?;
            match msg {
                ToWorker::Finish => {
                    self.stats.entries = self.entries;
                    self.stats.counters =
                        self.algo.counters().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                    let stats = ToSupervisor::Stats(self.stats.clone());
                    self.flush_all();
                    self.control.set_nonblocking(false)?;
                    self.tell_supervisor(&stats)?;
                    self.running = false;
                }
                ToWorker::Query => {
                    let state = PendingState {
                        app: self.app.name().to_string(),
                        since_ns: self.app_since,
                        algorithm: self.algo.pending(),
                        entries: self.entries,
                        down: (0..self.opts.workers)
                            .map(PeerId)
                            .filter(|p| *p != self.me && self.peers[p.index()].stream.is_none())
                            .collect(),
                    };
                    self.control.set_nonblocking(false)?;
                    self.tell_supervisor(&ToSupervisor::Pending(state))?;
                    self.control.set_nonblocking(true)?;
                }
                ToWorker::Start { .. } => self.log(format_args!("ignoring a second Start")),
                ToWorker::Partition { groups } => self.partition(Some(groups)),
                ToWorker::Heal => self.partition(None),
            }
        }
        if fill == Fill::Eof {
            // The supervisor is gone: nobody will audit or stop us, so stop now.
            self.running = false;
        }
        Ok(())
    }

    fn set_app(&mut self, app: App) {
        self.app = app;
        self.app_since = resource::monotonic_ns();
    }

    fn push_timer(&mut self, after: Duration, kind: TimerKind) {
        self.timer_seq += 1;
        self.timers.push(std::cmp::Reverse((Instant::now() + after, self.timer_seq, kind)));
    }

    fn fire_timers(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        while let Some(std::cmp::Reverse((at, _, kind))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            match kind {
                TimerKind::Think => self.local.push_back(Local::WantCs),
                TimerKind::Deliver => self.deliver_due(),
                TimerKind::CsDone => self.local.push_back(Local::CsDone),
                TimerKind::Algo(slot, gen) => {
                    let (timer, current) = self.algo_timers[slot];
                    if current == gen {
                        self.algo_timers[slot].1 = 0;
                        let mut out = Out::new(self.now());
                        self.algo.on_timer(timer, &mut out);
                        self.apply(&mut out)?;
                        continue;
                    }
                }
            }
            self.run_local()?;
        }
        Ok(())
    }

    /// Carry out the algorithm's actions, then any local events they caused.
    fn apply(&mut self, out: &mut Out<A::Msg, A::Timer>) -> anyhow::Result<()> {
        let actions: Vec<_> = out.drain().collect();
        for action in actions {
            match action {
                Action::Send { to, msg } => self.send(to, &msg),
                Action::Broadcast { msg } => {
                    for p in 0..self.opts.workers {
                        if p != self.me.0 {
                            self.send(PeerId(p), &msg);
                        }
                    }
                }
                Action::SetTimer { timer, after } => {
                    self.timer_seq += 1;
                    let gen = self.timer_seq;
                    let slot = match self.algo_timers.iter().position(|(t, _)| *t == timer) {
                        Some(s) => s,
                        None => {
                            self.algo_timers.push((timer, 0));
                            self.algo_timers.len() - 1
                        }
                    };
                    self.algo_timers[slot].1 = gen;
                    self.push_timer(after, TimerKind::Algo(slot, gen));
                }
                Action::CancelTimer { timer } => {
                    if let Some(slot) = self.algo_timers.iter().position(|(t, _)| *t == timer) {
                        self.algo_timers[slot].1 = 0;
                    }
                }
                Action::EnterCs => self.enter_cs()?,
            }
        }
        self.run_local()
    }

    fn run_local(&mut self) -> anyhow::Result<()> {
        while let Some(ev) = self.local.pop_front() {
            let mut out = Out::new(self.now());
            match ev {
                Local::WantCs => {
                    if self.finished() {
                        self.set_app(App::Done);
                        let entries = self.entries;
                        self.control.set_nonblocking(false)?;
                        self.tell_supervisor(&ToSupervisor::Done { entries })?;
                        self.control.set_nonblocking(true)?;
                        continue;
                    }
                    self.set_app(App::Waiting);
                    let rec = Record::Want { w: self.me.0, e: self.entries + 1, t: resource::monotonic_ns() };
                    self.append(&rec)?;
                    self.algo.on_want_cs(&mut out);
                }
                Local::CsDone => {
                    self.leave_cs()?;
                    self.algo.on_cs_done(&mut out);
                    self.think();
                }
            }
            self.apply(&mut out)?;
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        match self.deadline {
            Some(d) => Instant::now() >= d,
            None => self.entries >= self.opts.entries,
        }
    }

    fn think(&mut self) {
        self.set_app(App::Thinking);
        let mean = self.opts.think.as_secs_f64();
        if mean <= 0.0 {
            // Not inline: the loop must poll for messages between entries, or a worker
            // with nothing to wait for would run all its entries without listening.
            self.push_timer(Duration::ZERO, TimerKind::Think);
        } else {
            // Uniform on [0, 2·mean]: the mean is what the user asked for.
            let secs = self.rng.random_range(0.0..=2.0 * mean);
            self.push_timer(Duration::from_secs_f64(secs), TimerKind::Think);
        }
    }

    fn append(&mut self, rec: &Record) -> anyhow::Result<()> {
        self.resource.append(rec).map_err(|e| anyhow::anyhow!("cannot write the resource file: {e}"))
    }

    fn enter_cs(&mut self) -> anyhow::Result<()> {
        if self.app != App::Waiting {
            self.stats.unasked_grants += 1;
            self.log(format_args!(
                "the algorithm granted the section while the application was {}; ignored",
                self.app.name()
            ));
            return Ok(());
        }
        self.clock += 1;
        let mut fence = Fence { clock: self.clock, id: self.me.0 };
        if let Some(file) = self.lock_file.take() {
            let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| anyhow::anyhow!("flock failed: {e}"))?;
            self.held_lock = Some(lock);
            // Under the kernel lock the token comes from the file: one above the last.
            let last = self.resource.committed()?.last_fence;
            fence.clock = last.map_or(1, |f| f.clock + 1);
            self.clock = self.clock.max(fence.clock);
        }
        let e = self.entries + 1;
        self.append(&Record::Enter { w: self.me.0, e, fence, t: resource::monotonic_ns() })?;
        let read = self.resource.committed()?.value;
        self.set_app(App::Inside { fence, read });
        if self.opts.cs.is_zero() {
            self.local.push_back(Local::CsDone);
        } else {
            self.push_timer(self.opts.cs, TimerKind::CsDone);
        }
        Ok(())
    }

    fn leave_cs(&mut self) -> anyhow::Result<()> {
        let App::Inside { fence, read } = self.app else {
            anyhow::bail!("internal error: leaving a section we are not in");
        };
        self.entries += 1;
        let rec = Record::Exit {
            w: self.me.0,
            e: self.entries,
            fence,
            read,
            value: read + 1,
            t: resource::monotonic_ns(),
        };
        self.append(&rec)?;
        if let Some(lock) = self.held_lock.take() {
            let file = lock.unlock().map_err(|(_, e)| anyhow::anyhow!("unlock failed: {e}"))?;
            self.lock_file = Some(file);
        }
        Ok(())
    }

    fn send(&mut self, to: PeerId, msg: &A::Msg) {
        if to == self.me || to.0 >= self.opts.workers {
            self.log(format_args!("the algorithm sent {} to {to}, which is not a peer; dropped", msg.kind()));
            return;
        }
        self.clock += 1;
        let env = Envelope { from: self.me, to, clock: self.clock, msg: msg.clone() };
        *self.stats.sent.entry(msg.kind().to_string()).or_default() += 1;
        if !self.net.active && self.net.groups.is_none() {
            wire::encode(&mut self.peers[to.index()].out, &env);
            return;
        }
        if self.opts.drop > 0.0 && self.net.rng.random_bool(self.opts.drop.min(1.0)) {
            self.stats.lost += 1;
            return;
        }
        let mut frame = Vec::new();
        wire::encode(&mut frame, &env);
        let delay = self.opts.latency
            + if self.opts.jitter.is_zero() {
                Duration::ZERO
            } else {
                self.opts.jitter.mul_f64(self.net.rng.random_range(0.0..1.0))
            };
        if delay.is_zero() && self.net.delayed[to.index()].is_empty() {
            self.release(to, &frame);
            return;
        }
        let q = &mut self.net.delayed[to.index()];
        let due = (Instant::now() + delay).max(q.back().map_or(Instant::now(), |(t, _)| *t));
        q.push_back((due, frame));
        self.push_timer(due.saturating_duration_since(Instant::now()), TimerKind::Deliver);
    }

    /// Hand a frame to the peer's queue, or hold it if a partition is in the way.
    fn release(&mut self, to: PeerId, frame: &[u8]) {
        let cut = self.net.groups.as_ref().is_some_and(|g| g[to.index()] != g[self.me.index()]);
        if cut {
            self.net.held[to.index()].extend_from_slice(frame);
        } else {
            self.peers[to.index()].out.extend_from_slice(frame);
        }
    }

    /// Release every delayed frame that is due.
    fn deliver_due(&mut self) {
        let now = Instant::now();
        for i in 0..self.net.delayed.len() {
            while self.net.delayed[i].front().is_some_and(|(t, _)| *t <= now) {
                let (_, frame) = self.net.delayed[i].pop_front().expect("checked above");
                self.release(PeerId(i as u32), &frame);
            }
        }
    }

    fn partition(&mut self, groups: Option<Vec<Vec<u32>>>) {
        match groups {
            Some(groups) => {
                // Workers named in no group form one more group together.
                let mut of = vec![groups.len(); self.opts.workers as usize];
                for (g, members) in groups.iter().enumerate() {
                    for &w in members {
                        if let Some(slot) = of.get_mut(w as usize) {
                            *slot = g;
                        }
                    }
                }
                self.net.groups = Some(of);
            }
            None => {
                self.net.groups = None;
                for i in 0..self.peers.len() {
                    let held = std::mem::take(&mut self.net.held[i]);
                    self.peers[i].out.extend_from_slice(&held);
                }
            }
        }
    }

    fn flush_all(&mut self) {
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
            if let Some(e) = failed {
                let peer = PeerId(i as u32);
                // A peer that is gone shows as EPIPE or a reset: reading reports it down.
                if !matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) {
                    self.log(format_args!("writing to {peer} failed: {e}"));
                }
                // Reading will see the EOF and report the peer down.
                let _ = self.peer_readable(peer);
            }
        }
    }
}

impl<A: Algorithm> Drop for Worker<A> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket_path);
    }
}
