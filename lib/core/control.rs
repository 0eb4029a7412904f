//! The control link between the supervisor and each worker.
//!
//! One Unix socket pair per worker process, made by the supervisor before it spawns the
//! worker and inherited by the worker as file descriptor [`LINK_FD`]. No path in the
//! file system, so nobody outside the run can connect to it or pose as a worker on it.
//! It carries the same length-prefixed MessagePack frames as the mesh. The conversation:
//!
//! ```text
//! super  → WorkerSetup  (the settings and the run's secret: the first frame, always)
//! worker → Ready        (listening on its mesh socket, Unix or TCP: says which)
//! super  → Start        (whom to dial, every worker's incarnation; the run begins)
//! super  → Incarnation  (a restarted worker is ready: believe hellos from its new life)
//! worker → Done         (finished its entries; keeps serving peers)
//! worker → Leader       (under an election: accepted a leader; any number of times)
//! super  → Finish       (everyone is done)
//! worker → Stats        (then exits)
//! ```
//!
//! Under held delivery (`mutexlab replay`, [`WorkerSettings::held`]) the worker also
//! reports each message and each peer's death it holds (`Held`), and the supervisor
//! drives it one step at a time (`Replay`, each answered with `Held(Stepped)`).
//!
//! At any time the supervisor may send `Query`; the worker answers with `Pending`,
//! saying what its application and algorithm are waiting for. A worker that must give up
//! sends `Fatal` with the reason before it exits, so the run's failure line can name it.
//! One whose runtime cannot keep the model its algorithm was promised (a message over
//! the frame cap, say) sends `Breach` instead and stands still, its channels open; the
//! supervisor stops the run at once with that line as its failure.
//!
//! The settings travel as one serialised value that both sides read with the same code
//! ([`WorkerSettings::check`]), so the supervisor and a worker can never disagree on
//! what a valid setting is (a command line parsed twice could).

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::algorithm::{PeerId, ServiceKind};
use crate::auth::Secret;
use crate::faults::{LinkFault, MessageFaults, Partition};

/// The file descriptor a worker finds its control link on.
pub const LINK_FD: RawFd = 3;

pub use crate::algorithm::MAX_WORKERS;
/// The shared resource file, inside the run directory.
pub const RESOURCE_FILE: &str = "resource.log";
/// The supervisor's record of every fault it applied, inside the run directory.
pub const FAULT_LOG: &str = "faults.log";
/// Each leader a worker accepts, one record per line (`mutexlab elect`), inside the run
/// directory; see `crate::audit::leaders`.
pub const LEADERS_FILE: &str = "leaders.log";
/// The fault plan of the run, in the plan grammar, inside the run directory.
pub const PLAN_FILE: &str = "plan.txt";

/// The mesh socket of worker `id`, incarnation `inc`. A fresh name per incarnation, so a
/// new listener never fights an old socket file.
pub fn worker_socket(id: PeerId, inc: u32) -> String {
    format!("w{}.{}.sock", id.0, inc)
}

/// Where a worker's mesh listens, or where a peer reaches it (`--transport`): a Unix
/// socket's name in the run directory, or a TCP address. A worker told to listen on TCP
/// port 0 reports the port it got in its `Ready`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Endpoint {
    /// A socket file, named relative to the run directory.
    Unix(String),
    /// A TCP address.
    Tcp(std::net::SocketAddr),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(name) => f.write_str(name),
            Endpoint::Tcp(addr) => write!(f, "tcp {addr}"),
        }
    }
}

/// Everything a worker is told before it starts: the first frame on its link.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerSetup {
    /// What to run, and how.
    pub settings: WorkerSettings,
    /// The run's secret, which every mesh hello must prove (see [`crate::auth`]).
    pub secret: Secret,
}

/// A worker's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerSettings {
    /// This worker's id, `0..workers`.
    pub id: u32,
    /// Workers in the run.
    pub workers: u32,
    /// The algorithm's name in the registry.
    pub algo: String,
    /// 0 at first, one more each time this worker is restarted.
    pub incarnation: u32,
    /// Entries to complete; ignored when `duration` is set.
    pub entries: u64,
    /// Run until this long after the start (a restarted worker gets what is left).
    pub duration: Option<Duration>,
    /// Time inside each critical section (`--cs-ms`).
    pub cs: Duration,
    /// Mean time between leaving the section and asking again (`--think-ms`).
    pub think: Duration,
    /// The run's seed (`--seed`): every random choice of the worker and its node comes
    /// from it.
    pub seed: u64,
    /// Replicated coordinators, for algorithms that use them
    /// ([`crate::algorithm::Config::replicas`]).
    pub replicas: Option<u32>,
    /// The supervisor's pid: if our parent is already someone else, it died before we
    /// could ask to be told, so we leave at once.
    pub parent: Option<u32>,
    /// Entries this worker completed in earlier incarnations (numbering goes on).
    pub start_entry: u64,
    /// Faults on every message this worker sends (`--latency`, `--jitter`, `--drop`).
    pub messages: MessageFaults,
    /// Under an election: this worker's application calls `elect` when the run starts.
    pub initiator: bool,
    /// How the worker learns that a peer is down or back up.
    pub detector: Detector,
    /// Enter and leave through [`crate::resource_link::Resource::append_fenced`].
    pub fenced: bool,
    /// [`crate::algorithm::Config::majority`].
    pub majority: bool,
    /// Record every message and application event in `trace-w{ID}.log` (`--trace`,
    /// and every `--keep` run).
    pub trace: bool,
    /// Without `trace`: record the same lines in the flight recorder's ring
    /// ([`crate::flight`]), which the supervisor keeps only if the run fails or is kept.
    #[serde(default)]
    pub flight: bool,
    /// Record the node's state after each step that changed it, as STATE records in the
    /// trace or the ring (`--states`).
    #[serde(default)]
    pub states: bool,
    /// Run this program as the node instead of `algo`'s own (`--worker-cmd`); `algo`
    /// is then only a label, or the reference algorithm of a mixed cluster.
    #[serde(default)]
    pub external: Option<ExternalWorker>,
    /// Held delivery (`mutexlab replay`): nothing reaches the node and the application
    /// does nothing until the supervisor says so ([`ToWorker::Replay`]); each message
    /// that arrives, and each news of a peer, is reported instead ([`Held`]).
    #[serde(default)]
    pub held: bool,
    /// Connect to a peer only when first writing to it, not to every peer at the start
    /// (algorithms that talk to few peers; see the runtime's mesh). The supervisor then
    /// names no peer to dial in a first life's `Start`.
    #[serde(default)]
    pub lazy: bool,
    /// The run's time bounds (Tm, Tp), from which the node derives its timeouts
    /// ([`crate::algorithm::Config::timing`]).
    #[serde(default)]
    pub timing: crate::algorithm::Timing,
    /// Where to listen for peers: `None`, this life's Unix socket in the run directory
    /// ([`worker_socket`]); a TCP address (port 0: any free port) under `--transport tcp`.
    #[serde(default)]
    pub listen: Option<Endpoint>,
}

/// Who tells a node that a peer is down or up again (`--detector`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Detector {
    /// Nobody: a dead peer cannot be told from a slow one, so no `peer_down` or
    /// `peer_up` input ever comes.
    None,
    /// A closed channel: on one machine a crash is seen at once, and a paused peer is
    /// never suspected.
    #[default]
    Perfect,
    /// HEARTBEAT to every peer every `every`; a peer silent for `suspect` is reported
    /// down (perhaps wrongly: a paused peer is only slow), and up again when it is heard.
    Heartbeat {
        /// How often a worker beats.
        every: Duration,
        /// How long a silent peer takes to be suspected.
        suspect: Duration,
    },
}

impl std::fmt::Display for Detector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Detector::None => f.write_str("none"),
            Detector::Perfect => f.write_str("perfect"),
            Detector::Heartbeat { every, suspect } => write!(
                f,
                "heartbeat (every {} ms, suspect after {} ms)",
                every.as_millis(),
                suspect.as_millis()
            ),
        }
    }
}

/// What a worker is told to run instead of a built-in algorithm (part of
/// [`WorkerSettings`]): a program of the user's, driven by `crate::external`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalWorker {
    /// The shell command, run as `sh -c CMD`.
    pub command: String,
    /// How long the program may take over one answer.
    pub timeout: Duration,
    /// The service the program provides.
    pub service: ServiceKind,
    /// The other workers run the built-in algorithm `algo` (`--worker-cmd-for`): speak
    /// its messages (`external::Ref`).
    #[serde(default)]
    pub among_reference: bool,
}

/// The longest worker command (`--worker-cmd`): with the other settings, it must fit
/// in the setup's one frame ([`crate::wire::MAX_FRAME`]).
pub const MAX_COMMAND: usize = 16 * 1024;

impl WorkerSettings {
    /// Where this life listens: [`WorkerSettings::listen`], or its Unix socket's name.
    pub fn listen_on(&self) -> Endpoint {
        self.listen
            .clone()
            .unwrap_or_else(|| Endpoint::Unix(worker_socket(PeerId(self.id), self.incarnation)))
    }

    /// Whether a worker can run with these settings: the one check both the supervisor
    /// (before it spawns) and the worker (when it reads them) apply. `service` is what
    /// the registry says `algo` provides (`mutex`, `election`), `None` if it knows no
    /// such algorithm: the control link sits below the registry and does not ask it.
    pub fn check(&self, service: Option<ServiceKind>) -> Result<(), String> {
        if self.workers == 0 || self.workers > MAX_WORKERS {
            return Err(format!("workers must be between 1 and {MAX_WORKERS}, not {}", self.workers));
        }
        if self.id >= self.workers {
            return Err(format!("worker id {} is not below the worker count {}", self.id, self.workers));
        }
        if let Some(e) = self.external.as_ref().filter(|e| e.command.len() > MAX_COMMAND) {
            // The settings travel in one frame, which has a cap.
            return Err(format!("the worker command is {} bytes; at most {MAX_COMMAND}", e.command.len()));
        }
        if self.external.is_none() && service.is_none() {
            return Err(format!("unknown algorithm {:?}", self.algo));
        }
        let mutex = match &self.external {
            Some(e) => e.service == ServiceKind::Mutex,
            None => service == Some(ServiceKind::Mutex),
        };
        if mutex && self.duration.is_none() && self.entries == 0 {
            return Err("neither entries nor a duration".into());
        }
        if let Detector::Heartbeat { every, suspect } = self.detector {
            if every.is_zero() || suspect <= every {
                return Err(format!(
                    "a heartbeat every {} ms needs a suspicion time above it, not {} ms",
                    every.as_millis(),
                    suspect.as_millis()
                ));
            }
        }
        self.messages.check()?;
        if self.held && self.messages.any() {
            return Err("held delivery takes no message faults".into());
        }
        if self.held && matches!(self.detector, Detector::Heartbeat { .. }) {
            return Err("held delivery takes no heartbeat detector".into());
        }
        if let Some(m) = self.replicas {
            if m == 0 || m > self.workers {
                return Err(format!("replicas must be between 1 and {}, not {m}", self.workers));
            }
        }
        Ok(())
    }
}

/// Make a control link: our end, and the end to hand down with [`hand_down`].
pub fn link_pair() -> io::Result<(UnixStream, UnixStream)> {
    UnixStream::pair()
}

/// Have the process `cmd` spawns find `theirs` as its control link ([`LINK_FD`]). Drop
/// `theirs` after the spawn, so the link closes when the child exits.
pub fn hand_down(cmd: &mut Command, theirs: &UnixStream) {
    let fd = theirs.as_raw_fd();
    // SAFETY: between fork and exec only async-signal-safe calls: dup2 and fcntl.
    unsafe {
        cmd.pre_exec(move || {
            if fd == LINK_FD {
                // dup2 onto itself would keep close-on-exec set.
                if nix::libc::fcntl(fd, nix::libc::F_SETFD, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
            } else if nix::libc::dup2(fd, LINK_FD) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// In a worker: take the control link handed down as [`LINK_FD`]. An error if that
/// descriptor is not an open socket (the worker was not started by a supervisor).
pub fn take_link() -> io::Result<UnixStream> {
    use nix::sys::stat::{fstat, SFlag};
    // SAFETY: only borrowed for the check; ownership is taken below once it is known
    // to be an open socket that nothing else in this process owns.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(LINK_FD) };
    let st =
        fstat(borrowed).map_err(|e| io::Error::other(format!("no control link on fd {LINK_FD}: {e}")))?;
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
        return Err(io::Error::other(format!("fd {LINK_FD} is not a socket, so not a control link")));
    }
    // SAFETY: fd 3 is open, is a socket, and nothing else in this process claims it.
    let link = unsafe { UnixStream::from_raw_fd(LINK_FD) };
    nix::fcntl::fcntl(&link, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))
        .map_err(io::Error::from)?;
    Ok(link)
}

/// Worker → supervisor.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ToSupervisor {
    /// Listening on the mesh socket, ready to start.
    Ready {
        /// The worker's id.
        id: PeerId,
        /// Its process id.
        pid: u32,
        /// Its incarnation.
        incarnation: u32,
        /// What it listens on, as bound (a TCP port 0 asked for is the real port here).
        endpoint: Endpoint,
    },
    /// The worker cannot go on, and says why before it exits.
    Fatal(String),
    /// As `Fatal`, the failure being a write to the resource file that the kernel
    /// refused (a full disk, a file size limit): the line it may have torn is excused.
    WriteRefused(String),
    /// The worker's runtime could not keep the model its node was promised (a message
    /// over the frame cap, a frame refused from a live peer): the run must stop now,
    /// with this line as its failure. The worker stands still, its channels open, until
    /// the supervisor ends it.
    Breach(String),
    /// Done with the entries asked for.
    Done {
        /// Entries completed, in this incarnation and earlier ones.
        entries: u64,
    },
    /// Answer to `Query`.
    Pending(PendingState),
    /// Final counters, sent after `Finish`.
    Stats(WorkerStats),
    /// Held delivery: what arrived, or how an order was carried out.
    Held(Held),
    /// Under an election: the worker accepted `leader`, elected in `term` (the same as
    /// its record in the leader file; the supervisor uses it only to see the run settle
    /// and to find the `leader` a fault plan names).
    Leader {
        /// The leader accepted.
        leader: PeerId,
        /// The term it was elected in.
        term: u64,
    },
    /// The worker's program has not read its input for a while, and the worker waits
    /// to write to it, answering nobody (`Some`); or it reads again (`None`). For the
    /// diagnosis of a stall, which would otherwise find the worker silent.
    InputBlocked(Option<InputBlocked>),
}

/// A worker's program that has not read its stdin (see `crate::external`): since
/// when (monotonic ns, the clock of the run's files), and how many lines wait in its
/// pipe, the one being written included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputBlocked {
    /// When it last read anything, as far as the worker saw.
    pub since_ns: u64,
    /// Lines written and not read (wholly or in part), and the one waiting to go.
    pub lines: u64,
}

/// What the process does when its program's input blocks (`Some`) and when it moves
/// again (`None`).
pub type BlockedHook = Box<dyn Fn(Option<InputBlocked>) + Send + Sync>;
static BLOCKED_HOOK: std::sync::OnceLock<BlockedHook> = std::sync::OnceLock::new();

/// Install what this process does when its program stops reading: the worker runtime
/// tells the supervisor. Set once; a second call is ignored.
pub fn on_input_blocked(hook: BlockedHook) {
    let _ = BLOCKED_HOOK.set(hook);
}

/// Say that this process's program stopped reading (`Some`) or reads again (`None`);
/// nothing without a hook (the simulator).
pub fn input_blocked(note: Option<InputBlocked>) {
    if let Some(hook) = BLOCKED_HOOK.get() {
        hook(note);
    }
}

/// Supervisor → worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ToWorker {
    /// Begin: dial these peers (id and endpoint), then run the application.
    /// `incarnations[i]` is worker i's current incarnation: hellos from any other life
    /// of it are not believed until an [`ToWorker::Incarnation`] announces it.
    Start {
        /// The peers to dial, with where each listens.
        dial: Vec<(PeerId, Endpoint)>,
        /// Every worker's current incarnation, by id.
        incarnations: Vec<u32>,
        /// Where each worker's current life listens, by id (`None`: not ready, or
        /// dead): a lazily connected mesh dials from it when it first writes to a peer.
        listening: Vec<Option<Endpoint>>,
        /// The partition in force, if one is: in force before the node starts, so its
        /// first messages are held as any later ones.
        partition: Option<Partition>,
        /// The link faults in force (`drop`, `delay`): likewise acting on the first
        /// message, as `--drop` does.
        links: Vec<LinkFault>,
    },
    /// A worker was restarted, and its new life is listening.
    Incarnation {
        /// The worker.
        id: PeerId,
        /// Its new incarnation.
        incarnation: u32,
        /// Where the new life listens.
        endpoint: Endpoint,
    },
    /// Everyone is done: report stats and exit.
    Finish,
    /// Say what you are waiting for.
    Query,
    /// The plan's partition in force from now on: hold messages to workers outside your
    /// group. `None`, the heal: deliver everything held by a partition, in order, and
    /// hold nothing more.
    Partition(Option<Partition>),
    /// The plan's `drop` and `delay` steps in force from now on, all of them (none: every
    /// one has ended): lose or hold longer the messages you send on their links.
    Links(Vec<LinkFault>),
    /// Held delivery: do one step of a replay; answered with [`Held::Stepped`].
    Replay(ReplayOrder),
}

/// Held delivery (`mutexlab replay`), worker → supervisor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Held {
    /// A message arrived from `from` and is held: the `seq`-th (from 0) that this life
    /// of `from` sent on the channel, of type `kind`.
    Arrived {
        /// The sender.
        from: PeerId,
        /// Its place on the channel.
        seq: u64,
        /// Its type.
        kind: String,
    },
    /// The runtime learnt that `peer` is down, and holds the news.
    Down {
        /// The peer.
        peer: PeerId,
    },
    /// The runtime learnt that `peer` is up again (a new life dialled), and holds the
    /// news.
    Up {
        /// The peer.
        peer: PeerId,
    },
    /// The order was carried out (`Ok`), or could not be (why, in a few words).
    Stepped(Result<(), String>),
}

/// Held delivery (`mutexlab replay`), supervisor → worker: one step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplayOrder {
    /// Hand the held message `seq` from `from` to the node.
    Release {
        /// The sender.
        from: PeerId,
        /// Its place on the channel ([`Held::Arrived`]).
        seq: u64,
    },
    /// Hand the held news that `peer` is down to the node.
    Down {
        /// The peer.
        peer: PeerId,
    },
    /// Hand the held news that `peer` is up again to the node.
    Up {
        /// The peer.
        peer: PeerId,
    },
    /// The application makes its next call (asks for the section, or leaves it).
    Call,
    /// One of the node's armed timers fires: the `nth` armed (oldest first), or the
    /// earliest due when `None` (a check with `--timers earliest`).
    Fire {
        /// Which, in the order they were armed.
        nth: Option<u32>,
    },
    /// The network loses the held message `seq` from `from`: it is never handed over.
    Lose {
        /// The sender.
        from: PeerId,
        /// Its place on the channel.
        seq: u64,
    },
}

/// What a worker is doing, for stall diagnoses.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PendingState {
    /// `thinking`, `waiting`, `inside`, `done` or `starting`.
    pub app: String,
    /// Monotonic ns when the application entered this state.
    pub since_ns: u64,
    /// The algorithm's own words (`Algorithm::pending`).
    pub algorithm: String,
    /// Entries completed.
    pub entries: u64,
    /// Peers whose channel is closed.
    pub down: Vec<PeerId>,
    /// By peer id (this worker's own place left at zero): the messages on the channel
    /// with each peer as this worker counts them, so that a waits-for cycle is called a
    /// deadlock only when nothing was on its way between its workers.
    #[serde(default)]
    pub channels: Vec<ChannelCount>,
}

/// One worker's count of the messages on its channel with one peer, since it last learnt
/// of a new life of that peer or saw the channel go down: those it sent that were not
/// lost on purpose nor dropped for a peer down (so are on their way, held, or delivered),
/// and those it handed to its node. Heartbeats are not messages here. When two workers'
/// counts agree both ways (each took as many as the other sent, and each counted the
/// other's present life), nothing was on its way between them at the moments they
/// answered, and neither took anything the other sent after answering: a stream carries
/// its frames in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelCount {
    /// The peer's life these counts are of, as this worker knows it.
    pub incarnation: u32,
    /// Messages sent to it.
    pub sent: u64,
    /// Messages from it handed to the node.
    pub taken: u64,
}

/// One worker's counters at the end of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerStats {
    /// The worker.
    pub id: PeerId,
    /// Entries completed, in this incarnation and earlier ones.
    pub entries: u64,
    /// Messages sent, by type.
    pub sent: BTreeMap<String, u64>,
    /// Messages received, by type.
    pub received: BTreeMap<String, u64>,
    /// Frames dropped because they were malformed or misaddressed.
    pub bad_frames: u64,
    /// Connections dropped because their stream could not be trusted.
    pub dropped_connections: u64,
    /// Times the algorithm granted the section when the application had not asked.
    pub unasked_grants: u64,
    /// Messages lost on purpose (`--drop`).
    pub lost: u64,
    /// The same by sender, receiver and type: `w0->w2 REQUEST`.
    #[serde(default)]
    pub lost_by: BTreeMap<String, u64>,
    /// The algorithm's own counters (`Algorithm::counters`).
    pub counters: BTreeMap<String, u64>,
}
