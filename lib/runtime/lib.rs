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
//! `flock`, the kernel lock itself (that algorithm *is* a blocking lock). A SIGTERM or
//! SIGINT is checked at every step of the loop, and the worker leaves in order.
//!
//! One job per file, each a component that owns its state and hands the loop typed
//! values, in the shape of the node's [`Host`]: `mesh` the Unix-socket mesh
//! (connections and hellos, channels, bad input; it gives `MeshEvent`s), `netfaults`
//! latency, loss and partitions on the send path (it gives each frame its `Fate`),
//! `detector` what the node is told of peers going down and up, `workload` the mutual
//! exclusion service's application loop on the resource file and `elect` the election
//! service's (they give `AppStep`s), `link` the control link to the supervisor (it
//! gives `ToWorker` orders), and `held` held delivery for `mutexlab replay` (what
//! arrives, the application's next step and the node's timers wait for the
//! supervisor's `Replay` orders instead of reaching the node). This file holds [`run_worker`] and the thin loop between
//! them and the operating system: the poll, the timers, the Lamport clock, the
//! statistics, driving the node through its [`Host`] and handing each effect to its
//! owner. One message's way: node → host → loop (`carry`, `send`) → mesh (`frame`,
//! `queue`, then `flush_all`) → wire, and back: mesh (`readable`, `poll_event`) → loop
//! (`deliver`) → host → node. What the worker sends, receives, loses and does goes to
//! its message trace ([`crate::trace`]) when the run asks for one, one line per event,
//! written every few milliseconds.
//! Each file's own documentation says the rest.
//!
//! # Giving up
//!
//! An error this worker cannot get past (the resource file cannot be written, say,
//! because the disk is full) ends it with status 1, after it has told the supervisor
//! why (`Fatal` on the control link), so the run's failure line names the worker, the
//! file and the OS error. A panic in the node ends it the same way, as one line (the
//! panic's message, or a lab skeleton's `on_message is not written yet`), never a
//! backtrace. Texts sent to the supervisor are cut to a few KiB, far below the frame
//! cap.
//!
//! Once the run has begun, a worker that gives up does not close its channels on its
//! way out: its peers would take it for dead and act on that (enter the section it
//! still held, say), and the audit would pin on the algorithm what the failure did. It
//! tells the supervisor why and stands still, channels open, until the supervisor,
//! which stops the run at once with that line as its failure, ends it.
//!
//! When the runtime cannot keep the model its node was promised (a message too big for
//! a frame, a frame refused from a live peer), that is a [`ModelBreach`], not a death:
//! it is told as `Breach` instead of `Fatal`, and the run's audit is no verdict.

// Every public item says what it is: students and outside crates read the API docs.
#![warn(missing_docs)]

use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::io::{self, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use signal_hook::consts::{SIGINT, SIGTERM};

use crate::algorithm::{
    Config, Election, ElectionCall, ElectionEvent, Input, Message, Mutex, MutexCall, MutexEvent, Node,
    NodeInput, PeerId, Service, ServiceKind, Spawn,
};
use crate::auth::Secret;
use crate::control::{PendingState, ReplayOrder, ToSupervisor, ToWorker, WorkerSettings, WorkerStats};
use crate::host::{Breach, Effect, Host, Step};
use crate::wire::Envelope;
// The layer below, under the names every file here uses (`crate::algorithm::…`).
#[cfg(test)]
use mutexlab_algos as algos;
use mutexlab_core::{algorithm, auth, control, flight, host, leaders, panics, resource, text, trace, wire};

mod detector;
mod elect;
pub mod external;
mod held;
mod link;
mod mesh;
mod netfaults;
mod workload;
use detector::Detect;
pub use detector::HEARTBEAT;
use elect::Electing;
use held::Held;
use link::{setup, Link};
pub use mesh::{max_pending, BAD_FRAME_LINES, DROP_LINES, HELLO_DEADLINE};
use mesh::{Mesh, MeshEvent, MeshTimer};
use netfaults::{Fate, NetFaults};
use workload::{AppStep, AppTimer, Workload};

/// Everything a worker runs with: its settings, where the run lives, and the secret.
#[derive(Clone, Debug)]
pub struct WorkerOpts {
    /// The settings the supervisor sent.
    pub settings: WorkerSettings,
    /// The run's directory.
    pub run_dir: PathBuf,
    /// The run's secret, for the hellos between workers.
    pub secret: Secret,
    /// Wrap each critical section in `flock(2)` ([`NodeRun::kernel_lock`]).
    pub kernel_lock: bool,
}

/// A node type as a worker process runs it: [`run_node`] for that type.
pub type RunNode = fn(WorkerOpts, StdUnixStream) -> anyhow::Result<()>;

/// What a worker runs, as the worker's entry point (the registry, which the runtime
/// does not know) resolved it from the settings.
#[derive(Clone, Copy, Debug)]
pub struct NodeRun {
    /// Runs the node type ([`run_node`]).
    pub run: RunNode,
    /// The service the node provides, for the settings' check.
    pub service: ServiceKind,
    /// Wrap each critical section in `flock(2)` on the resource file.
    pub kernel_lock: bool,
}

/// Run a worker to the end: read the setup from the control link handed down by the
/// supervisor ([`control::LINK_FD`]), ask `resolve` what its settings name (`None`: an
/// unknown algorithm), then work. `cmdline_id`, the id on the worker's command line
/// (there so `ps` shows who is who), must match the setup's. Errors are fatal for this
/// worker; when the link is up the supervisor is told why first, and the caller
/// reports them too.
pub fn run_worker(
    run_dir: &Path,
    cmdline_id: Option<u32>,
    resolve: impl FnOnce(&WorkerSettings) -> Option<NodeRun>,
) -> anyhow::Result<()> {
    let mut link =
        control::take_link().map_err(|e| anyhow::anyhow!("{e}; workers are started by `mutexlab run`"))?;
    let result = setup(&mut link, run_dir, cmdline_id, resolve).and_then(|(opts, node)| {
        let link = link.try_clone()?;
        // A node that panics (a lab skeleton's unwritten handler, say) ends this worker
        // with one line, sent to the supervisor like any other fatal error.
        crate::panics::quietly(|| (node.run)(opts, link)).map_err(anyhow::Error::msg)?
    });
    match &result {
        // Told to the supervisor while the worker stood still.
        Err(e) if e.is::<ModelBreach>() || e.is::<Told>() => {}
        Err(e) => {
            // Best effort: the supervisor may be gone, or the link broken.
            let mut buf = Vec::new();
            wire::encode(&mut buf, &ToSupervisor::Fatal(cut(&format!("{e:#}"))));
            let _ = link.write_all(&buf);
        }
        Ok(()) => {}
    }
    result
}

/// The most of a failure's text sent to the supervisor: a line a person reads, far
/// below the frame cap whatever a node or a program put in it.
const FATAL_TEXT: usize = 4096;

/// `text` cut to [`FATAL_TEXT`] bytes, on a character boundary, saying so.
fn cut(text: &str) -> String {
    if text.len() <= FATAL_TEXT {
        return text.to_string();
    }
    format!("{} ({} bytes, cut)", crate::text::clip_to(text, FATAL_TEXT), text.len())
}

/// The runtime could not keep the model its node was promised: a message it cannot
/// carry (over the frame cap), or a frame it must refuse from a live peer. Reliable
/// channels and a perfect detector are what the algorithm was told it runs on, so
/// neither may be quietly broken (a refused frame would close the channel, and the
/// peer would be reported down while alive). The worker stops where it is, tells the
/// supervisor (`Breach` on the control link), keeps its channels open so no peer takes
/// it for dead, and waits for the supervisor to end the run with this as its failure.
#[derive(Debug)]
pub struct ModelBreach(pub String);

impl std::fmt::Display for ModelBreach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelBreach {}

/// A failure already told to the supervisor as `Fatal` by a worker that then stood
/// still (`Worker::run`): the text is the failure's own.
#[derive(Debug)]
struct Told(String);

impl std::fmt::Display for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Told {}

/// What a worker's application asks of its node, whatever the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppCall {
    /// Mutual exclusion: let me in.
    Want,
    /// Mutual exclusion: I have left.
    Done,
    /// Election: hold one.
    Elect,
}

/// What a node tells a worker's application, whatever the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// Mutual exclusion: go in.
    Enter,
    /// Election: `id` leads, elected in `term`.
    Leader {
        /// The leader.
        id: PeerId,
        /// The election's term.
        term: u64,
    },
}

/// A service a worker process can run: which application loop stands for its
/// applications (`workload.rs` for `mutex`, `elect.rs` for `election`), and its calls
/// and events in that loop's words.
pub trait RunService: Service {
    /// The call, or `None` if it is not one of this service's.
    fn from_app(call: AppCall) -> Option<Self::Call>;
    /// The event in the application loop's words.
    fn to_app(event: &Self::Event) -> AppEvent;
}

impl RunService for Mutex {
    fn from_app(call: AppCall) -> Option<MutexCall> {
        match call {
            AppCall::Want => Some(MutexCall::Want),
            AppCall::Done => Some(MutexCall::Done),
            AppCall::Elect => None,
        }
    }
    fn to_app(MutexEvent::Enter: &MutexEvent) -> AppEvent {
        AppEvent::Enter
    }
}

impl RunService for Election {
    fn from_app(call: AppCall) -> Option<ElectionCall> {
        (call == AppCall::Elect).then_some(ElectionCall::Elect)
    }
    fn to_app(event: &ElectionEvent) -> AppEvent {
        let ElectionEvent::Leader { id, term } = *event;
        AppEvent::Leader { id, term }
    }
}

/// The application loop a worker runs, by its service.
// One per worker for its whole life: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
enum Work {
    /// Mutual exclusion on the resource file (`workload.rs`).
    Mutex(Workload),
    /// Elections, each leader accepted recorded in the leader file (`elect.rs`).
    Election(Electing),
}

impl Work {
    /// Where the application stands, as a diagnosis shows it.
    fn state(&self) -> String {
        match self {
            Work::Mutex(w) => w.app.name().to_string(),
            Work::Election(e) => e.state(),
        }
    }

    /// Since when it has stood there, monotonic ns.
    fn since(&self) -> u64 {
        match self {
            Work::Mutex(w) => w.app_since,
            Work::Election(e) => e.since,
        }
    }

    /// Entries made (mutual exclusion, all lives) or leaders accepted (this life).
    fn entries(&self) -> u64 {
        match self {
            Work::Mutex(w) => w.entries,
            Work::Election(e) => e.accepted,
        }
    }
}

/// Run node type `N` as this worker process: what a registry entry's `worker` points
/// at ([`RunNode`]).
pub fn run_node<N: Node<Service: RunService>>(opts: WorkerOpts, link: StdUnixStream) -> anyhow::Result<()> {
    Worker::<N>::new(opts, link)?.run()
}

/// Held delivery's state for node type `A`: each message with the Lamport time it was
/// sent at.
type HeldFor<A> = Held<(u64, <A as Node>::Msg), <A as Node>::Timer>;

/// The control link's poll token (the mesh's are its own: [`mesh::is_mesh`]).
const CONTROL: Token = Token(1);
const SIGNALS: Token = Token(2);

/// Which timer a heap entry stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKind {
    /// One of the application's own (`workload.rs`).
    App(AppTimer),
    /// An algorithm timer, by the generation the host armed it with.
    Algo(u64),
    /// Delayed messages may be due (`netfaults.rs`).
    Deliver,
    /// One of the mesh's own (`mesh.rs`).
    Mesh(MeshTimer),
    /// Send the next heartbeats, and suspect peers silent too long (`detector.rs`).
    Heartbeat,
    /// An initiator has waited long enough for its mesh (`elect.rs`).
    Begin,
}

/// The worker's timers: a deadline heap whose head sets the poll timeout. Timers due at
/// the same instant fire in the order they were set.
#[derive(Default)]
struct Timers {
    heap: BinaryHeap<std::cmp::Reverse<(Instant, u64, TimerKind)>>,
    seq: u64,
}

impl Timers {
    /// Set `kind` to fire `after` from `now`.
    fn push(&mut self, now: Instant, after: Duration, kind: TimerKind) {
        self.seq += 1;
        // An absurd duration (an algorithm's bug) means "never", not a panic.
        let at = now.checked_add(after).unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
        self.heap.push(std::cmp::Reverse((at, self.seq, kind)));
    }

    /// When the next timer is due.
    fn next_at(&self) -> Option<Instant> {
        self.heap.peek().map(|t| t.0 .0)
    }

    /// The next timer due at `now`, taken off the heap.
    fn pop_due(&mut self, now: Instant) -> Option<TimerKind> {
        if self.next_at()? > now {
            return None;
        }
        self.heap.pop().map(|t| t.0 .2)
    }
}

/// One worker at work: the loop, which owns the node's [`Host`], the poll, the timers,
/// the Lamport clock, the statistics and the trace, and moves values between the
/// operating system and its components: the mesh ([`Mesh`]), the network faults
/// ([`NetFaults`]), the failure detector ([`Detect`]), the application loop ([`Work`])
/// and the control link. Each component's module says its job.
///
/// [`run_worker`] reads the setup and makes a `Worker` (listen, open the resource file,
/// seed). `run` then tells the supervisor it is `Ready`, waits for `Start` (each peer's
/// life and whom to dial), dials, starts the node, reports the peers it could not
/// reach, starts the detector and the workload, writes what is queued and enters the
/// event loop. Each turn of the loop leaves at once on a signal, polls until the next
/// timer at most, serves every ready source and then those whose read budget ran out,
/// fires the timers that are due, runs the application's local events, writes what is
/// queued, and writes the trace if its lines are due. The loop ends on the
/// supervisor's `Finish` (after the statistics) or when the control link closes.
struct Worker<A: Node<Service: RunService>> {
    opts: WorkerSettings,
    run_dir: PathBuf,
    me: PeerId,
    /// The algorithm, behind the host that keeps the driver contract.
    host: Host<A>,
    poll: Poll,
    /// The control link to the supervisor (`link.rs`).
    link: Link,
    signals: signal_hook_mio::v1_0::Signals,
    /// Set by the SIGTERM/SIGINT handler itself, so it is seen even between two polls.
    term: Arc<AtomicBool>,
    /// The Unix-socket mesh: listener, peers, pending connections (`mesh.rs`).
    mesh: Mesh<A::Msg>,
    /// Sources whose read budget ran out: served again on the next turn of the loop.
    again: Vec<Token>,
    clock: u64,
    started: Instant,
    /// Every timer of the worker, its components' and the node's.
    timers: Timers,
    /// Algorithm timers armed and not yet fired, by generation.
    algo_timers: HashMap<u64, A::Timer>,
    /// The application's loop: on the resource file (`workload.rs`), or electing
    /// (`elect.rs`).
    work: Work,
    /// What the node is told of its peers being down or up (`detector.rs`).
    detect: Detect,
    stats: WorkerStats,
    /// The supervisor said `Start`: from here a failure stands still ([`Worker::run`]).
    serving: bool,
    running: bool,
    /// Message faults, applied on the send path.
    net: NetFaults,
    /// This worker's message trace (`trace-w{ID}.log`), written every few milliseconds.
    trace: trace::Writer,
    /// Held delivery (`mutexlab replay`): what waits for the supervisor's word
    /// (`held.rs`); `None` in any other run.
    held: Option<HeldFor<A>>,
    /// `--states`: the JSON text of the node's state last recorded in the trace, so an
    /// unchanged one is not recorded again.
    last_state: String,
}

impl<A: Node<Service: RunService>> Worker<A> {
    fn new(opts: WorkerOpts, control: StdUnixStream) -> anyhow::Result<Self> {
        let WorkerOpts { settings: opts, run_dir, secret, kernel_lock } = opts;
        let me = PeerId(opts.id);
        let cfg = Config {
            id: me,
            n: opts.workers,
            seed: opts.seed,
            replicas: opts.replicas,
            incarnation: opts.incarnation,
            majority: opts.majority,
            // A program of the user's (`--worker-cmd`) is the node: it comes with the node's
            // configuration.
            program: opts.external.as_ref().map(|e| Spawn { command: e.command.clone(), timeout: e.timeout }),
            timing: opts.timing,
        };
        let poll = Poll::new()?;
        let socket_path = run_dir.join(control::worker_socket(me, opts.incarnation));
        let mesh = Mesh::listen(
            poll.registry().try_clone()?,
            socket_path,
            me,
            opts.incarnation,
            opts.workers,
            secret,
        )?;
        let mut mesh = mesh;
        if opts.lazy {
            mesh.connect_lazily();
        }
        let term = Arc::new(AtomicBool::new(false));
        for sig in [SIGTERM, SIGINT] {
            signal_hook::flag::register(sig, Arc::clone(&term))?;
        }
        let mut signals = signal_hook_mio::v1_0::Signals::new([SIGTERM, SIGINT])?;
        poll.registry().register(&mut signals, SIGNALS, Interest::READABLE)?;
        let seed = opts.seed ^ (u64::from(opts.id) << 32) ^ u64::from(opts.incarnation).rotate_left(16);
        let trace = if opts.trace {
            trace::Writer::open(&run_dir, opts.id, opts.incarnation, opts.workers, &opts.algo).map_err(
                |e| anyhow::anyhow!("cannot open {}: {e}", run_dir.join(trace::file_name(opts.id)).display()),
            )?
        } else if opts.flight {
            // The recorder is a help, not the run: without room for it this life runs
            // unrecorded and says so, and the run goes on to meet its real trouble.
            trace::Writer::ring(&run_dir, opts.id, opts.incarnation, crate::flight::RING_BYTES)
                .unwrap_or_else(|e| {
                    let path = run_dir.join(crate::flight::ring_name(opts.id, opts.incarnation));
                    eprintln!(
                        "mutexlab worker w{}: no flight recorder: cannot make {}: {e}",
                        opts.id,
                        path.display()
                    );
                    trace::Writer::off()
                })
        } else {
            trace::Writer::off()
        };
        let (work, clock) = if A::Service::NAME == Election::NAME {
            (Work::Election(Electing::open(&run_dir, &opts, Arc::clone(&term))?), 0)
        } else {
            let (workload, clock) = Workload::open(&run_dir, &opts, kernel_lock, seed, Arc::clone(&term))?;
            (Work::Mutex(workload), clock)
        };
        Ok(Worker {
            run_dir,
            me,
            host: Host::new(cfg),
            poll,
            link: Link::new(control),
            signals,
            term,
            mesh,
            again: Vec::new(),
            clock,
            started: Instant::now(),
            timers: Timers::default(),
            algo_timers: HashMap::new(),
            work,
            detect: Detect::new(opts.detector, opts.workers as usize),
            stats: WorkerStats { id: me, ..Default::default() },
            serving: false,
            running: true,
            net: NetFaults::new(&opts, seed),
            trace,
            held: opts.held.then(|| Held::new(opts.workers)),
            last_state: String::new(),
            opts,
        })
    }

    /// One line on stderr, written with one `write` so that lines from several
    /// workers sharing the terminal never interleave.
    fn log(&self, what: std::fmt::Arguments<'_>) {
        let line = format!("mutexlab: {}: {what}\n", self.me);
        let _ = io::stderr().lock().write_all(line.as_bytes());
    }

    /// Hand the trace lines not yet written to the kernel: at the start and on `Finish`
    /// (the loop writes them when due; the writer also does on drop, so every way out
    /// of the worker but SIGKILL keeps them). A failed write stops the trace, not the
    /// run.
    fn flush_trace(&mut self) {
        if let Err(e) = self.trace.flush() {
            self.trace_failed(e);
        }
    }

    fn trace_failed(&self, e: io::Error) {
        let path = self.trace.path().display().to_string();
        self.log(format_args!("cannot write {path}: {e}; this worker's trace stops here"));
    }

    /// The worker was sent SIGTERM or SIGINT.
    fn terminating(&self) -> bool {
        self.term.load(Ordering::SeqCst)
    }

    /// The worker's sequence (see [`Worker`]). A failure once the run has begun (and
    /// before `Finish`) is told to the supervisor, and the worker stands still, its
    /// channels open, until the end: a [`ModelBreach`] as `Breach`, any other as `Fatal`.
    fn run(mut self) -> anyhow::Result<()> {
        let result = self.serve();
        let Err(e) = result else { return result };
        if let Some(breach) = e.downcast_ref::<ModelBreach>() {
            let line = cut(&format!("{}: {breach}", self.me));
            self.log(format_args!("{breach}; waiting for the supervisor to stop the run"));
            self.stand_still(ToSupervisor::Breach(line));
            return Err(e);
        }
        if !self.serving || !self.running {
            return Err(e); // not begun, or finished: nothing left for a peer to act on
        }
        let line = cut(&format!("{e:#}"));
        self.stand_still(ToSupervisor::Fatal(line.clone()));
        Err(Told(line).into())
    }

    /// Tell the supervisor `why` (`Breach` or `Fatal`), then wait for it to end the run:
    /// answer its `Finish` with the statistics, or leave when it is gone or on a signal.
    /// Nothing is read from or written to a peer meanwhile, and no channel is closed, so
    /// no peer is told anything the failure made untrue.
    fn stand_still(&mut self, why: ToSupervisor) {
        let told = self.link.stand_by().and_then(|()| self.link.tell(&why));
        if told.is_err() {
            return; // the supervisor is gone: nobody will audit this run
        }
        while !self.terminating() {
            // With a read timeout, a blocking read that times out is a would-block.
            let fill = match self.link.fill() {
                Ok(fill) => fill,
                Err(_) => return,
            };
            loop {
                match self.link.next() {
                    Ok(Some(ToWorker::Finish)) => {
                        let stats = ToSupervisor::Stats(self.report());
                        self.trace_all_unsent();
                        self.flush_trace();
                        let _ = self.link.tell(&stats);
                        return;
                    }
                    // Anything else waits with the rest of the run.
                    Ok(Some(_)) | Err(wire::FrameError::Malformed(_)) => {}
                    Ok(None) | Err(_) => break,
                }
            }
            if fill == wire::Fill::Eof {
                return;
            }
        }
    }

    /// The worker's sequence proper: from `Ready` to the end of the event loop.
    fn serve(&mut self) -> anyhow::Result<()> {
        let ready =
            ToSupervisor::Ready { id: self.me, pid: std::process::id(), incarnation: self.opts.incarnation };
        self.link.tell(&ready)?;
        // Wait for Start on the blocking control stream: nothing else can happen yet.
        let dial = match self.link.read_blocking()? {
            Some(ToWorker::Start { dial, incarnations }) => {
                self.mesh.set_announced(incarnations);
                dial
            }
            Some(other) => anyhow::bail!("expected Start from the supervisor, got {other:?}"),
            None => return Ok(()), // the supervisor ended the run before it began
        };
        if self.terminating() {
            self.log(format_args!("terminated by signal before the run began; leaving"));
            return Ok(());
        }
        self.serving = true;
        let mut source = self.link.poll_source()?;
        // A program that stops reading its input holds this worker inside a step.
        crate::control::on_input_blocked(self.link.blocked_hook()?);
        self.poll.registry().register(&mut source, CONTROL, Interest::READABLE)?;
        let mut unreachable = Vec::new();
        let listed: Vec<PeerId> = dial.iter().map(|(p, _)| *p).collect();
        for (peer, path) in dial {
            if peer == self.me || peer.0 >= self.opts.workers {
                self.log(format_args!("ignoring an order to dial {peer}, which is not a peer"));
                continue;
            }
            let path = self.run_dir.join(path);
            if !self.mesh.dial(peer, path) {
                unreachable.push(peer);
            }
            self.drain_mesh()?;
        }
        if self.opts.incarnation > 0 {
            // A restarted worker is told to dial every live peer it can reach: the others
            // are dead or not started yet, and will dial us when they start. Nothing to
            // tell the terminal: the supervisor's fault list says who was dead.
            let dead = (0..self.opts.workers).map(PeerId).filter(|p| *p != self.me && !listed.contains(p));
            unreachable.extend(dead);
        }
        self.started = Instant::now();
        if let Work::Mutex(w) = &mut self.work {
            w.deadline = self.opts.duration.map(|d| self.started + d);
        }
        self.input(Input::Start)?;
        for peer in unreachable {
            self.mesh.unreachable(peer);
            self.drain_mesh()?;
        }
        self.start_detector();
        let ready = self.opts.lazy || self.mesh_ready();
        let steps = match &mut self.work {
            Work::Mutex(w) => vec![w.think()],
            // Held: an election is called when the supervisor says `Call`.
            Work::Election(_) if self.held.is_some() => Vec::new(),
            Work::Election(e) => {
                let steps = e.begin(ready);
                if e.waiting() {
                    self.push_timer(detector::connect_time(self.opts.workers), TimerKind::Begin);
                }
                steps
            }
        };
        self.perform(steps)?;
        self.run_local()?;
        self.flush_all()?;
        self.flush_trace();
        self.event_loop()?;
        drop(source);
        // Left on a signal, or the supervisor is gone (after `Finish` nothing is left):
        // the writer's drop writes the lines.
        self.trace_all_unsent();
        Ok(())
    }

    /// This worker is leaving: whatever is still queued for any peer never leaves.
    fn trace_all_unsent(&mut self) {
        let me = self.me;
        for peer in (0..self.opts.workers).map(PeerId).filter(|p| *p != me) {
            let unsent = self.mesh.take_unsent(peer);
            self.trace_unsent(peer, unsent, "exit");
        }
    }

    /// The statistics as they stand, with the components' counts.
    fn report(&self) -> WorkerStats {
        WorkerStats {
            entries: self.work.entries(),
            bad_frames: self.mesh.bad_frames,
            dropped_connections: self.mesh.dropped_connections,
            ..self.stats.clone()
        }
    }

    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// Poll and serve until the run ends for this worker.
    fn event_loop(&mut self) -> anyhow::Result<()> {
        let mut events = Events::with_capacity(256);
        while self.running {
            if self.terminating() {
                return self.leave_on_signal();
            }
            let timeout = if self.again.is_empty() {
                // Wake for the next timer, or to write the trace's lines when they are due.
                let next = self.timers.next_at().into_iter().chain(self.trace.due()).min();
                next.map(|at| at.saturating_duration_since(Instant::now()))
            } else {
                Some(Duration::ZERO)
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e.into());
            }
            // The supervisor first: a Finish must be read before any channel that closed
            // because another worker finished is taken for a crash.
            let control = events.iter().any(|ev| ev.token() == CONTROL);
            if control {
                self.dispatch(CONTROL, false)?;
            }
            for ev in events.iter() {
                if !self.running || self.terminating() {
                    break;
                }
                let token = ev.token();
                if token == CONTROL {
                    continue;
                }
                if mesh::is_channel(token) && !(ev.is_readable() || ev.is_read_closed() || ev.is_error()) {
                    continue; // writable: the flush below takes care of it
                }
                self.dispatch(token, ev.is_readable() && !ev.is_read_closed() && !ev.is_error())?;
            }
            for token in std::mem::take(&mut self.again) {
                if !self.running || self.terminating() {
                    break;
                }
                self.dispatch(token, false)?;
            }
            if !self.running || self.terminating() {
                continue;
            }
            self.begin_when_connected(false)?;
            self.fire_timers()?;
            self.run_local()?;
            self.flush_all()?;
            if let Err(e) = self.trace.flush_if_due() {
                self.trace_failed(e);
            }
        }
        Ok(())
    }

    /// Serve what the supervisor said on the control link.
    fn control_readable(&mut self) -> anyhow::Result<()> {
        let fill = self.link.fill()?;
        while let Some(msg) = self.link.next()? {
            match msg {
                ToWorker::Finish => {
                    // The run is over for this worker: a failure from here on is told
                    // and the worker leaves, since it must not stand still for a Finish
                    // it has already read.
                    self.running = false;
                    let stats = ToSupervisor::Stats(self.report());
                    self.flush_all()?;
                    // Written before the statistics: the supervisor may freeze this
                    // worker for good once it has them.
                    self.trace_all_unsent();
                    self.flush_trace();
                    self.link.block()?;
                    self.link.tell(&stats)?;
                    return Ok(());
                }
                ToWorker::Query => {
                    let state = PendingState {
                        app: self.work.state(),
                        since_ns: self.work.since(),
                        algorithm: cut(&self.host.node().waiting_for()),
                        entries: self.work.entries(),
                        down: (0..self.opts.workers)
                            .map(PeerId)
                            .filter(|p| *p != self.me && self.mesh.channel_down(*p))
                            .collect(),
                    };
                    self.link.tell_blocking(&ToSupervisor::Pending(state))?;
                }
                ToWorker::Start { .. } => self.log(format_args!("ignoring a second Start")),
                ToWorker::Incarnation { id, incarnation } => {
                    self.mesh.announce(id, incarnation);
                    self.drain_mesh()?;
                }
                ToWorker::Partition { groups } => self.partition(Some(groups)),
                ToWorker::Heal => self.partition(None),
                ToWorker::Replay(order) => {
                    let done = self.replay_step(order)?;
                    self.link.tell_blocking(&ToSupervisor::Held(control::Held::Stepped(done)))?;
                }
            }
        }
        match fill {
            // The supervisor is gone: nobody will audit or stop us, so stop now.
            wire::Fill::Eof => self.running = false,
            wire::Fill::Budget => self.again.push(CONTROL),
            wire::Fill::WouldBlock => {}
        }
        Ok(())
    }

    /// One step of a replay, under held delivery: `Err` says in a few words why this
    /// worker cannot take it (nothing of the kind is held); the node's own failures are
    /// the worker's, as in any run.
    fn replay_step(&mut self, order: ReplayOrder) -> anyhow::Result<Result<(), String>> {
        let Some(h) = &mut self.held else {
            return Ok(Err("this worker is not in held mode".into()));
        };
        match order {
            ReplayOrder::Release { from, seq } => {
                let Some((sent, msg)) = h.release(from, seq) else {
                    return Ok(Err(format!("no message #{seq} from {from} is held")));
                };
                self.hand_over(from, sent, msg)?;
            }
            ReplayOrder::Down { peer } => {
                if !h.take_down(peer) {
                    return Ok(Err(format!("no news that {peer} is down is held")));
                }
                self.input(Input::PeerDown { peer })?;
            }
            ReplayOrder::Up { peer } => {
                if !h.take_up(peer) {
                    return Ok(Err(format!("no news that {peer} is up is held")));
                }
                self.input(Input::PeerUp { peer })?;
            }
            ReplayOrder::Call => match &mut self.work {
                // An election application calls whenever it is told to.
                Work::Election(_) => self.call(AppCall::Elect)?,
                Work::Mutex(w) => {
                    let Some(timer) = h.app.take() else {
                        return Ok(Err("the application has no call to make".into()));
                    };
                    w.timer(timer);
                    self.run_local()?;
                }
            },
            ReplayOrder::Lose { from, seq } => {
                // The checker's lost message: it arrived here and is never handed over.
                if h.release(from, seq).is_none() {
                    return Ok(Err(format!("no message #{seq} from {from} is held")));
                }
            }
            ReplayOrder::Fire { nth } => {
                let Some((timer, generation)) = h.fire(nth.map(|i| i as usize)) else {
                    return Ok(Err(match nth {
                        Some(i) => format!("no timer #{i} is armed"),
                        None => "no timer is armed".into(),
                    }));
                };
                if let Some(step) = self.host.fire(self.now(), &timer, generation) {
                    self.carry(step)?;
                }
            }
        }
        self.flush_all()?;
        Ok(Ok(()))
    }

    /// Serve a readable source.
    /// `edge`: the event said the source is readable and nothing more (see
    /// `Mesh::readable`).
    fn dispatch(&mut self, token: Token, edge: bool) -> anyhow::Result<()> {
        match token {
            CONTROL => self.control_readable(),
            SIGNALS => {
                if self.signals.pending().next().is_some() {
                    self.term.store(true, Ordering::SeqCst);
                }
                Ok(())
            }
            token if mesh::is_mesh(token) => {
                self.mesh.readable(token, edge);
                self.drain_mesh()
            }
            _ => Ok(()),
        }
    }

    fn push_timer(&mut self, after: Duration, kind: TimerKind) {
        self.timers.push(Instant::now(), after, kind);
    }

    /// The mesh is connected, and every live peer is known to serve its channels (it
    /// has finished dialing): an ELECTION sent now is read at once.
    fn mesh_ready(&self) -> bool {
        let me = self.me;
        self.mesh.connected()
            && (0..self.opts.workers)
                .map(PeerId)
                .all(|p| p == me || self.mesh.is_down(p) || self.detect.serving(p))
    }

    /// An initiator waiting for its mesh holds its election once the mesh is connected,
    /// or when the wait is `over` (saying which peers never came).
    fn begin_when_connected(&mut self, over: bool) -> anyhow::Result<()> {
        if !matches!(&self.work, Work::Election(e) if e.waiting()) {
            return Ok(());
        }
        let ready = self.mesh_ready();
        if !(over || ready) {
            return Ok(());
        }
        if !ready {
            let me = self.me;
            let missing: std::collections::BTreeSet<PeerId> = (0..self.opts.workers)
                .map(PeerId)
                .filter(|&p| p != me && !self.mesh.is_down(p) && !self.detect.serving(p))
                .chain(self.mesh.unconnected())
                .collect();
            let shown: Vec<String> = missing.iter().take(8).map(|p| p.to_string()).collect();
            let more = if missing.len() > 8 { ", …" } else { "" };
            let waited = detector::connect_time(self.opts.workers).as_secs_f64();
            self.log(format_args!(
                "the mesh is not ready after {waited:.1} s (waiting for {}{more}); electing anyway",
                shown.join(", ")
            ));
        }
        let Work::Election(e) = &mut self.work else { return Ok(()) };
        let steps = e.go();
        self.perform(steps)
    }

    /// Fire every timer that is due, each to its owner.
    fn fire_timers(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        while self.running && !self.terminating() {
            let Some(kind) = self.timers.pop_due(now) else { break };
            match kind {
                TimerKind::App(timer) => {
                    if let Work::Mutex(w) = &mut self.work {
                        w.timer(timer);
                    }
                }
                TimerKind::Begin => self.begin_when_connected(true)?,
                TimerKind::Deliver => self.deliver_due(),
                TimerKind::Heartbeat => self.beat()?,
                TimerKind::Mesh(timer) => {
                    self.mesh.timer(timer);
                    self.drain_mesh()?;
                }
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

    /// News that `peer` is up (or down) from the channel: to the node, or under held
    /// delivery reported to the supervisor and kept until its word.
    fn peer_news(&mut self, peer: PeerId, up: bool) -> anyhow::Result<()> {
        let Some(h) = &mut self.held else {
            return self.input(if up { Input::PeerUp { peer } } else { Input::PeerDown { peer } });
        };
        let (new, news) = if up {
            (h.up(peer), control::Held::Up { peer })
        } else {
            (h.down(peer), control::Held::Down { peer })
        };
        if new {
            self.link.tell_blocking(&ToSupervisor::Held(news))?;
        }
        Ok(())
    }

    /// Hand the algorithm one input through its host, and carry out what it asks.
    fn input(&mut self, input: NodeInput<A>) -> anyhow::Result<()> {
        let step = self.host.step(self.now(), input);
        self.carry(step)
    }

    /// The application makes `call`, which must be one of its service's.
    fn call(&mut self, call: AppCall) -> anyhow::Result<()> {
        let Some(call) = A::Service::from_app(call) else {
            anyhow::bail!("internal error: {call:?} is not a call of the {} service", A::Service::NAME);
        };
        self.input(Input::Call { call })
    }

    /// Carry out a step's effects, then any local events they caused. Breaches of the
    /// contract are logged and counted; the run goes on, unless the node itself has
    /// failed (a program that died or broke a rule), which ends this worker.
    fn carry(&mut self, step: Step<A>) -> anyhow::Result<()> {
        if let Some(why) = step.breaches.iter().find_map(|b| match b {
            Breach::Failed { why } => Some(why),
            _ => None,
        }) {
            return Err(anyhow::Error::msg(why.clone()));
        }
        if self.opts.states {
            self.record_state();
        }
        for breach in &step.breaches {
            if matches!(breach, Breach::Event { .. }) {
                self.stats.unasked_grants += 1;
            }
            self.log(format_args!("{breach}"));
        }
        for effect in step.effects {
            match effect {
                Effect::Send { to, msg } => self.send(to, &msg)?,
                Effect::Arm { timer, generation, after } => match &mut self.held {
                    Some(h) => h.arm(timer, generation, after),
                    None => {
                        self.algo_timers.insert(generation, timer);
                        self.push_timer(after, TimerKind::Algo(generation));
                    }
                },
                Effect::Disarm { timer } => {
                    if let Some(h) = &mut self.held {
                        h.disarm(&timer);
                    }
                    // Else the host knows it is cancelled; its heap entry is dropped when
                    // it fires.
                }
                Effect::Event { event } => {
                    let steps = match (A::Service::to_app(&event), &mut self.work) {
                        (AppEvent::Enter, Work::Mutex(w)) => w.enter(&mut self.clock)?,
                        (AppEvent::Leader { id, term }, Work::Election(e)) => e.accept_leader(id, term)?,
                        (event, _) => anyhow::bail!("internal error: {event:?} for the wrong application"),
                    };
                    self.perform(steps)?;
                }
                Effect::Count { name, by } => {
                    let c = self.stats.counters.entry(name.into_owned()).or_default();
                    *c = c.saturating_add(by); // a program's `by` may be anything
                }
            }
        }
        self.run_local()
    }
}

impl<A: Node<Service: RunService>> Worker<A> {
    /// `--states`: record the node's state after a step, before the step's sends (so a
    /// SEND's last STATE before it is the state it was sent from), unless it is what
    /// was last recorded.
    fn record_state(&mut self) {
        if !self.trace.recording() {
            return;
        }
        let text = self.host.node().state().to_string();
        if text != self.last_state {
            self.trace.state(self.clock, &text);
            self.last_state = text;
        }
    }
}

/// The application's side of the loop: its local events, its steps, and leaving on a
/// signal.
impl<A: Node<Service: RunService>> Worker<A> {
    /// Handle the local events the application has queued so far (an election worker
    /// has none).
    fn run_local(&mut self) -> anyhow::Result<()> {
        loop {
            let Work::Mutex(w) = &mut self.work else { return Ok(()) };
            let Some(steps) = w.next_local()? else { return Ok(()) };
            self.perform(steps)?;
        }
    }

    /// Carry out what the application asked, in order.
    fn perform(&mut self, steps: Vec<AppStep>) -> anyhow::Result<()> {
        for step in steps {
            match step {
                AppStep::Call(call) => self.call(call)?,
                AppStep::Timer { after, timer } => match &mut self.held {
                    // Held: the application's next step waits for the supervisor's `Call`.
                    Some(h) => h.app = Some(timer),
                    None => self.push_timer(after, TimerKind::App(timer)),
                },
                AppStep::Trace { what, leader } => self.trace.app(self.clock, what, leader),
                AppStep::Tell(msg) => self.link.tell_blocking(&msg)?,
            }
        }
        Ok(())
    }

    /// SIGTERM or SIGINT: leave now (see `workload.rs`). A worker inside the critical
    /// section closes it, tells the node, and makes one attempt to send what is queued.
    fn leave_on_signal(&mut self) -> anyhow::Result<()> {
        self.running = false;
        let w = match &mut self.work {
            Work::Election(e) => {
                let state = e.state();
                self.log(format_args!("terminated by signal while {state}; leaving"));
                return Ok(());
            }
            Work::Mutex(w) => w,
        };
        let line = w.signal_line();
        self.log(format_args!("{line}"));
        let Work::Mutex(w) = &mut self.work else { return Ok(()) };
        let Some(steps) = w.close_on_signal()? else { return Ok(()) };
        self.perform(steps)?;
        if let Work::Mutex(w) = &mut self.work {
            w.left();
        }
        self.flush_all()
    }
}

/// The mesh's side of the loop: what it says goes to the node, the detector, the
/// timers and the log; what the node sends goes through the network faults to it.
impl<A: Node<Service: RunService>> Worker<A> {
    /// Act on everything the mesh has to say, in order.
    fn drain_mesh(&mut self) -> anyhow::Result<()> {
        while let Some(event) = self.mesh.poll_event() {
            match event {
                MeshEvent::Message { from, envelope } => self.deliver(from, envelope)?,
                MeshEvent::Heard(peer) => {
                    // Only a heartbeat detector learns from a frame that its peer is alive.
                    let up = match &mut self.detect {
                        Detect::Heartbeat(hb) => hb.heard(peer, Instant::now()),
                        Detect::Perfect | Detect::None => false,
                    };
                    if up {
                        self.input(Input::PeerUp { peer })?;
                    }
                }
                MeshEvent::Up { peer, was_down } => {
                    if self.detect.channel_up(peer, was_down, Instant::now()) {
                        self.peer_news(peer, true)?;
                    }
                }
                MeshEvent::Down { peer, unsent, was_down } => {
                    self.trace_unsent(peer, unsent, "peer-down");
                    if !was_down && self.detect.channel_down() {
                        self.peer_news(peer, false)?;
                    }
                }
                MeshEvent::Breach(why) => return Err(ModelBreach(why).into()),
                MeshEvent::Timer { after, timer } => self.push_timer(after, TimerKind::Mesh(timer)),
                MeshEvent::Again(token) => self.again.push(token),
                MeshEvent::Log(line) => self.log(format_args!("{line}")),
            }
        }
        Ok(())
    }

    /// An envelope from `from`: a heartbeat is counted; a message moves the Lamport
    /// clock, is traced and counted, and goes to the node.
    /// Under held delivery the message waits instead, and the supervisor is told.
    fn deliver(&mut self, from: PeerId, envelope: Envelope<Option<A::Msg>>) -> anyhow::Result<()> {
        let Some(msg) = envelope.msg else {
            *self.stats.received.entry(HEARTBEAT.to_string()).or_default() += 1;
            return Ok(());
        };
        if let Some(h) = &mut self.held {
            let kind = msg.kind().to_string();
            let seq = h.arrive(from, (envelope.clock, msg));
            let news = control::Held::Arrived { from, seq, kind };
            return Ok(self.link.tell_blocking(&ToSupervisor::Held(news))?);
        }
        self.hand_over(from, envelope.clock, msg)
    }

    /// Hand a message from `from`, sent at Lamport time `sent`, to the node.
    fn hand_over(&mut self, from: PeerId, sent: u64, msg: A::Msg) -> anyhow::Result<()> {
        self.clock = self.clock.max(sent).saturating_add(1);
        let inc = self.mesh.incarnation(from);
        self.trace.recv(self.clock, from.0, inc, sent, &msg);
        tally(&mut self.stats.received, msg.kind());
        self.input(Input::Message { from, msg })
    }

    /// Send `msg` to `to` (the host has checked that `to` is a peer), stamped with the
    /// Lamport clock. A message the mesh cannot carry (over the frame cap, or past what
    /// may wait unwritten) is never sent: it is a [`ModelBreach`] of this worker, whether
    /// or not `to` is up.
    fn send(&mut self, to: PeerId, msg: &A::Msg) -> anyhow::Result<()> {
        let clock = self.clock.saturating_add(1);
        let env = Envelope { from: self.me, to, clock, msg: Some(msg.clone()) };
        let frame = self.mesh.frame(&env, self.net.held_bytes()).map_err(ModelBreach)?;
        self.clock = clock;
        tally(&mut self.stats.sent, msg.kind());
        self.trace.send(self.clock, to.0, msg);
        if self.mesh.is_down(to) {
            self.trace.drop(self.clock, to.0, msg, "down");
        }
        self.send_frame(to, &env, frame);
        Ok(())
    }

    /// Send a heartbeat to `to`: an envelope with no message (`detector.rs`). It takes
    /// the same path as a message, faults and partitions included.
    fn send_heartbeat(&mut self, to: PeerId) {
        let env = Envelope { from: self.me, to, clock: self.clock, msg: None };
        *self.stats.sent.entry(HEARTBEAT.to_string()).or_default() += 1;
        // A heartbeat is never refused (`Mesh::frame`).
        if let Ok(frame) = self.mesh.frame(&env, 0) {
            self.send_frame(to, &env, frame);
        }
    }

    /// Queue `env`, encoded as `frame`, for `to`, through the network faults if any.
    fn send_frame(&mut self, to: PeerId, env: &Envelope<Option<A::Msg>>, frame: Vec<u8>) {
        if self.mesh.is_down(to) {
            // Nobody to deliver it to; a new incarnation starts afresh.
            return;
        }
        if !self.net.on() {
            self.mesh.queue(to, &frame);
            return;
        }
        match self.net.send(to, frame) {
            Fate::Now(frame) => self.mesh.queue(to, &frame),
            Fate::Held => {}
            Fate::Delayed(after) => self.push_timer(after, TimerKind::Deliver),
            Fate::Lost => {
                self.stats.lost += 1;
                let kind = env.msg.as_ref().map_or(HEARTBEAT, |m| m.kind());
                *self.stats.lost_by.entry(format!("{}->{to} {kind}", self.me)).or_default() += 1;
                if let Some(msg) = &env.msg {
                    self.trace.drop(env.clock, to.0, msg, "drop");
                }
            }
        }
    }

    /// Queue every delayed frame that is due.
    fn deliver_due(&mut self) {
        for (to, frame) in self.net.due(Instant::now()) {
            self.mesh.queue(to, &frame);
        }
    }

    /// The supervisor's `Partition` (`Some`) or `Heal` (`None`): on a heal, what the
    /// partition held is queued, in order.
    fn partition(&mut self, groups: Option<Vec<Vec<u32>>>) {
        for (to, frames) in self.net.partition(groups) {
            self.mesh.queue(to, &frames);
        }
    }

    /// One non-blocking pass over every outgoing queue.
    fn flush_all(&mut self) -> anyhow::Result<()> {
        self.mesh.flush_all();
        self.drain_mesh()
    }

    /// Every message for `peer` that will never leave (`unsent`, from the mesh's queue,
    /// then what a partition holds, then what latency delays) gets a DROP line in the
    /// trace, `why` it did not leave (what a partition held says `partition`).
    fn trace_unsent(&mut self, peer: PeerId, unsent: Vec<u8>, why: &str) {
        let (held, delayed) = self.net.forget(peer);
        if !self.trace.recording() {
            return;
        }
        self.trace_dropped(peer, &unsent, why);
        self.trace_dropped(peer, &held, "partition");
        for frame in delayed {
            self.trace_dropped(peer, &frame, why);
        }
    }

    fn trace_dropped(&mut self, to: PeerId, frames: &[u8], why: &str) {
        for (clock, msg) in mesh::messages::<A::Msg>(frames) {
            self.trace.drop(clock, to.0, &msg, why);
        }
    }

    /// The run began: under `heartbeat`, every peer's silence is counted from now, and
    /// the first heartbeats go out at once.
    fn start_detector(&mut self) {
        if let Detect::Heartbeat(hb) = &mut self.detect {
            hb.start(Instant::now());
            self.push_timer(Duration::ZERO, TimerKind::Heartbeat);
        }
    }

    /// The heartbeat timer: beat to every peer with a channel, report every peer silent
    /// for too long, and set the timer again.
    fn beat(&mut self) -> anyhow::Result<()> {
        let Detect::Heartbeat(hb) = &self.detect else { return Ok(()) };
        let every = hb.every();
        let me = self.me;
        for peer in (0..self.opts.workers).map(PeerId).filter(|&p| p != me) {
            if !self.mesh.is_down(peer) {
                self.send_heartbeat(peer);
            }
        }
        let down = match &mut self.detect {
            Detect::Heartbeat(hb) => hb.tick(Instant::now(), me),
            Detect::Perfect | Detect::None => Vec::new(),
        };
        for peer in down {
            self.input(Input::PeerDown { peer })?;
        }
        self.push_timer(every, TimerKind::Heartbeat);
        Ok(())
    }
}

/// Count one message of type `kind`: past [`trace::MAX_TYPES`] types, under
/// [`trace::OTHER_TYPES`], so that a program inventing a type per message costs its
/// worker a bounded count, and the statistics still fit their frame.
fn tally(counts: &mut BTreeMap<String, u64>, kind: &str) {
    let key =
        if counts.contains_key(kind) || counts.len() < trace::MAX_TYPES { kind } else { trace::OTHER_TYPES };
    match counts.get_mut(key) {
        Some(c) => *c += 1,
        None => {
            counts.insert(key.to_string(), 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_fire_by_deadline_then_in_the_order_set_and_an_absurd_one_never() {
        let t0 = Instant::now();
        let mut timers = Timers::default();
        timers.push(t0, Duration::from_millis(20), TimerKind::Heartbeat);
        timers.push(t0, Duration::from_millis(10), TimerKind::Deliver);
        timers.push(t0, Duration::from_millis(10), TimerKind::Algo(7));
        timers.push(t0, Duration::MAX, TimerKind::Algo(8));
        assert_eq!(timers.next_at(), Some(t0 + Duration::from_millis(10)));
        assert_eq!(timers.pop_due(t0), None);
        let later = t0 + Duration::from_secs(1);
        let fired: Vec<TimerKind> = std::iter::from_fn(|| timers.pop_due(later)).collect();
        assert_eq!(fired, [TimerKind::Deliver, TimerKind::Algo(7), TimerKind::Heartbeat]);
        assert!(timers.next_at().is_some(), "the absurd one is still set, for a century");
    }

    #[test]
    fn past_the_type_cap_messages_are_counted_under_other_types() {
        let mut counts = BTreeMap::new();
        for i in 0..trace::MAX_TYPES + 5 {
            tally(&mut counts, &format!("T{i}"));
        }
        tally(&mut counts, "T0");
        assert_eq!(counts.len(), trace::MAX_TYPES + 1);
        assert_eq!(counts[trace::OTHER_TYPES], 5);
        assert_eq!(counts["T0"], 2);
    }
}
