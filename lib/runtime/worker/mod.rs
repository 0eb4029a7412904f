//! The worker's loop: [`Worker`] owns the node's [`Host`], the poll, the timers, the
//! Lamport clock, the statistics and the trace, and moves values between the operating
//! system and the components. This file holds its start, its sequence, the event loop
//! and the way each step of the node is carried out; the loop's other sides are files of
//! their own: what the supervisor orders on the control link (`orders.rs`), the
//! application's side (`app.rs`), and messages in and out through the mesh, the network
//! faults and the detector (`traffic.rs`).

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use signal_hook::consts::{SIGINT, SIGTERM};

use crate::algorithm::{Config, Election, Input, Node, NodeInput, PeerId, Service, Spawn};
use crate::control::{self, ChannelCount, ToSupervisor, ToWorker, WorkerSettings, WorkerStats};
use crate::detector::{self, Detect};
use crate::elect::Electing;
use crate::entry::{cut, Told};
use crate::held::Held;
use crate::host::{Breach, Effect, Host, Step};
use crate::link::Link;
use crate::mesh::{self, Mesh};
use crate::netfaults::NetFaults;
use crate::service::{AppCall, AppEvent, RunService};
use crate::timers::{TimerKind, Timers};
use crate::workload::{Workload, WriteRefused};
use crate::{trace, wire, ModelBreach, WorkerOpts};

mod app;
mod orders;
mod traffic;
use app::Work;

/// Run node type `N` as this worker process: what a registry entry's `worker` points
/// at ([`RunNode`](crate::RunNode)).
pub fn run_node<N: Node<Service: RunService>>(opts: WorkerOpts, link: StdUnixStream) -> anyhow::Result<()> {
    Worker::<N>::new(opts, link)?.run()
}

/// Held delivery's state for node type `A`: each message with the Lamport time it was
/// sent at.
type HeldFor<A> = Held<(u64, <A as Node>::Msg), <A as Node>::Timer>;

/// The control link's poll token (the mesh's are its own: [`mesh::is_mesh`]).
const CONTROL: Token = Token(1);
const SIGNALS: Token = Token(2);

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
    me: PeerId,
    /// The algorithm, behind the host that keeps the driver contract.
    host: Host<A>,
    poll: Poll,
    /// The control link to the supervisor (`link.rs`).
    link: Link,
    signals: signal_hook_mio::v1_0::Signals,
    /// Set by the SIGTERM/SIGINT handler itself, so it is seen even between two polls.
    term: Arc<AtomicBool>,
    /// The Unix-socket mesh: listener, peers, pending connections (`mesh/`).
    mesh: Mesh<A::Msg>,
    /// Sources whose read budget ran out: served again on the next turn of the loop.
    again: Vec<Token>,
    clock: u64,
    started: Instant,
    /// When `started` was, monotonic ns: the node's time is counted from it.
    started_ns: u64,
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
    /// By peer id: the messages on the channel with each peer (`traffic.rs`), for a
    /// stall's diagnosis.
    channels: Vec<ChannelCount>,
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
        let WorkerOpts { settings: opts, run_dir, secret, kernel_lock, remote_files } = opts;
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
        let mesh = Mesh::listen(
            poll.registry().try_clone()?,
            run_dir.clone(),
            &opts.listen_on(),
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
            (Work::Election(Electing::open(&run_dir, &opts, remote_files, Arc::clone(&term))?), 0)
        } else {
            let files = (kernel_lock, remote_files);
            let (workload, clock) = Workload::open(&run_dir, &opts, files, seed, Arc::clone(&term))?;
            (Work::Mutex(workload), clock)
        };
        Ok(Worker {
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
            started_ns: crate::resource::monotonic_ns(),
            timers: Timers::default(),
            algo_timers: HashMap::new(),
            work,
            detect: Detect::new(opts.detector, opts.workers as usize, opts.lazy),
            stats: WorkerStats { id: me, ..Default::default() },
            channels: vec![ChannelCount::default(); opts.workers as usize],
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
        self.stand_still(gave_up(&e, line.clone()));
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
        let endpoint = self.mesh.endpoint()?;
        let ready = ToSupervisor::Ready {
            id: self.me,
            pid: std::process::id(),
            incarnation: self.opts.incarnation,
            endpoint,
        };
        self.link.tell(&ready)?;
        // Wait for Start on the blocking control stream: nothing else can happen yet.
        let dial = match self.link.read_blocking()? {
            Some(ToWorker::Start { dial, incarnations, listening, partition, links }) => {
                self.mesh.set_announced(incarnations, listening);
                // In force before the node starts: its first messages meet them too.
                self.partition(partition);
                self.net.set_links(links);
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
        for (peer, to) in dial {
            if peer == self.me || peer.0 >= self.opts.workers {
                self.log(format_args!("ignoring an order to dial {peer}, which is not a peer"));
                continue;
            }
            if !self.mesh.dial(peer, to) {
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
        self.started_ns = crate::resource::monotonic_ns();
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

    /// The node's time: since the run began for this worker.
    fn now(&self) -> Duration {
        self.since_start(crate::resource::monotonic_ns())
    }

    /// The node's time at `t`, monotonic ns (the clock `Instant` reads too).
    fn since_start(&self, t: u64) -> Duration {
        Duration::from_nanos(t.saturating_sub(self.started_ns))
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
            // Stamped before the poll: whatever came before this instant, the poll reports,
            // so it is read before any timer due by then fires (timers.rs).
            let polling = Instant::now();
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e.into());
            }
            self.timers.polled(polling);
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

    /// Fire every timer that was due when the last poll began, each to its owner
    /// (`timers.rs`: what came before a timeout is read before it fires).
    fn fire_timers(&mut self) -> anyhow::Result<()> {
        while self.running && !self.terminating() {
            let Some(kind) = self.timers.pop_due() else { break };
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

/// What a worker that gives up tells the supervisor, `line` being its failure in words:
/// a write the kernel refused on the resource file as such, anything else as `Fatal`.
fn gave_up(e: &anyhow::Error, line: String) -> ToSupervisor {
    if e.downcast_ref::<WriteRefused>().is_some() {
        ToSupervisor::WriteRefused(line)
    } else {
        ToSupervisor::Fatal(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_write_is_told_as_such_and_nothing_else_is_for_its_words() {
        let error = io::Error::from_raw_os_error(28);
        let refused = anyhow::Error::from(WriteRefused { path: "/r/resource.log".into(), error });
        let line = format!("{refused:#}");
        assert_eq!(line, "cannot write /r/resource.log: No space left on device (os error 28)");
        assert!(matches!(gave_up(&refused, line.clone()), ToSupervisor::WriteRefused(l) if l == line));
        // The same words from anywhere else are a plain failure.
        let other = anyhow::anyhow!("{line}");
        assert!(matches!(gave_up(&other, line.clone()), ToSupervisor::Fatal(l) if l == line));
    }
}
