//! The node interface: every algorithm is a sans-IO state machine.
//!
//! A node never touches sockets, clocks, files, threads or randomness of its own. It is
//! told [`Input`]s (it started, a message arrived from a peer, a timer fired, a peer went
//! down or came back, its application called it) and answers by pushing [`Output`]s
//! into an [`Out`] box (send, broadcast, set or cancel a timer, tell the application
//! something, count something for the report). Both are plain values that serialise
//! with a `type` tag. What a node offers its application is its [`Service`]: mutual
//! exclusion ([`Mutex`]: calls `want` and `done`, event `enter`) or leader election
//! ([`Election`]: call `elect`, event `leader`).
//!
//! [`Node`] is the general interface; [`Algorithm`] is the handler-per-input way the
//! mutual-exclusion algorithms are written (`on_want_cs`, `on_message`, …), and every
//! `Algorithm` is a `Node` of the mutex service. Drivers carry the outputs out: the
//! worker runtime (real processes and Unix sockets), the in-process simulator, and the
//! unit tests' script ([`crate::script`]). All of them drive a node through one
//! [`crate::host::Host`], which alone keeps the driver contract:
//!
//! - `Start` comes once, before any other input.
//! - The application's calls follow its service's rules (a mutex application calls
//!   `want` only while neither waiting nor inside, and `done` only when inside), and so
//!   do the node's events (`enter` only for an application that is waiting); an event
//!   that breaks them is a breach the host reports and does not pass on.
//! - `PeerDown` and `PeerUp` strictly alternate for each peer, starting with down.
//! - Channels are reliable and FIFO per ordered pair of peers unless a fault plan says
//!   otherwise.
//! - Time only enters as the value [`Out::now`]; timers may fire late, and a timer that
//!   was cancelled or reset may still be delivered once (the simulator does so on
//!   purpose), so handlers must check that the timer still means something.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use crate::peer::{PeerId, MAX_WORKERS};
pub use crate::service::{
    Election, ElectionCall, ElectionEvent, Mutex, MutexApp, MutexCall, MutexEvent, Service, ServiceKind,
};

/// The smallest number of votes out of `n` that is more than half.
pub fn majority(n: u32) -> u32 {
    n / 2 + 1
}

/// Fixed configuration of one node. It never changes while the node runs, so it is kept
/// apart from the algorithm's mutable state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// This node.
    pub id: PeerId,
    /// Number of nodes; ids are `0..n`.
    pub n: u32,
    /// Seed for any pseudo-randomness the algorithm needs (back-off, for one). An
    /// algorithm must draw only from a generator seeded with this, so runs replay.
    pub seed: u64,
    /// Number of replicated coordinators, for algorithms that use them (`voting`).
    pub replicas: Option<u32>,
    /// 0 for a node's first life, more after each restart. A restarted node has
    /// forgotten everything else, but it knows it is not starting the system: a token
    /// algorithm must not make the initial token again.
    pub incarnation: u32,
    /// The majority rule, for algorithms that offer it (`run --majority`): a coordinator
    /// grants only what a majority has acknowledged.
    pub majority: bool,
    /// The program that is this node, for a node whose state lives in another process
    /// (`external.rs`); `None` for every other node, which ignores it.
    pub program: Option<Spawn>,
    /// The run's time bounds, from which a node derives its timeouts (no clock inside).
    pub timing: Timing,
}

/// The bounds of the notes' synchronous model, as the driver knows them for this run:
/// every message arrives within `message` (Tm), and a node replies within `processing`
/// (Tp) of a message's arrival. A node that waits for a reply waits [`Timing::reply`],
/// 2·Tm + Tp; beyond it the peer is taken for dead. The worker runtime takes Tm from the
/// run's `--latency` and `--jitter`, and Tp from the machine's load (as the heartbeat
/// detector does); tests and the simulator use [`Timing::DEFAULT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Timing {
    /// Tm: the longest one-way message time.
    pub message: Duration,
    /// Tp: the longest time from a message's arrival to the reply's dispatch.
    pub processing: Duration,
}

impl Timing {
    /// Tm = 0, Tp = 50 ms: a reply within 50 ms, what the worker runtime derives for a
    /// run of a few workers with no added latency.
    pub const DEFAULT: Timing = Timing { message: Duration::ZERO, processing: Duration::from_millis(50) };

    /// 2·Tm + Tp: the longest a request's reply can take, there and back, when the peer
    /// is alive.
    pub fn reply(&self) -> Duration {
        self.message.saturating_mul(2).saturating_add(self.processing)
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing::DEFAULT
    }
}

/// `2·Tm + Tp = 2×60 ms + 50 ms = 170 ms`: the derivation, as a run shows it.
impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: Duration| {
            let ms = d.as_secs_f64() * 1e3;
            if ms.fract() == 0.0 {
                format!("{ms:.0} ms")
            } else {
                format!("{ms:.1} ms")
            }
        };
        write!(f, "2·Tm + Tp = 2×{} + {} = {}", ms(self.message), ms(self.processing), ms(self.reply()))
    }
}

// By hand: only what tells two nodes of one run apart. A node that keeps its `Config`
// hashes it with every state a search meets, and the rest never differs within a run
// (equal values still hash alike: equality compares it all).
impl Hash for Config {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.id, self.incarnation).hash(state);
    }
}

/// A program that stands for a node (`external.rs`): the command it is started with
/// (`sh -c COMMAND`), and how long it may take over one answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Spawn {
    /// The shell command.
    pub command: String,
    /// The deadline for one answer.
    pub timeout: Duration,
}

impl Config {
    /// A configuration with the given id and size, seed 0 and no extra parameters.
    pub fn new(id: u32, n: u32) -> Self {
        Config {
            id: PeerId(id),
            n,
            seed: 0,
            replicas: None,
            incarnation: 0,
            majority: false,
            program: None,
            timing: Timing::DEFAULT,
        }
    }

    /// Every node, this one included, in id order.
    pub fn all(&self) -> impl Iterator<Item = PeerId> {
        (0..self.n).map(PeerId)
    }

    /// Every node but this one, in id order.
    pub fn others(&self) -> impl Iterator<Item = PeerId> {
        let me = self.id;
        self.all().filter(move |p| *p != me)
    }

    /// The node with the highest id: the one a bully election would pick.
    pub fn highest(&self) -> PeerId {
        PeerId(self.n.saturating_sub(1))
    }

    /// The next node round the ring `0 → 1 → … → n-1 → 0` for which `up` holds;
    /// `None` when there is no other.
    pub fn successor(&self, up: impl Fn(PeerId) -> bool) -> Option<PeerId> {
        let (me, n) = (self.id.0, self.n);
        (1..n).map(|k| PeerId((me + k) % n)).find(|&p| up(p))
    }

    /// The previous node round the ring for which `up` holds: messages come from there.
    pub fn predecessor(&self, up: impl Fn(PeerId) -> bool) -> Option<PeerId> {
        let (me, n) = (self.id.0, self.n);
        (1..n).map(|k| PeerId((me + n - k) % n)).find(|&p| up(p))
    }
}

/// What a message must be to travel between workers: serialisable, and able to name its
/// own type for the per-type message statistics.
pub trait Message:
    Serialize + DeserializeOwned + Clone + PartialEq + Eq + Hash + fmt::Debug + Send + 'static
{
    /// A short upper-case name of the message type, e.g. `"REQUEST"`. Borrowed from the
    /// message, so a kind can come from outside Rust (a worker in another language).
    fn kind(&self) -> &str;

    /// The message as JSON, as the JSON-lines protocol (`labs/PROTOCOL.md`) writes it:
    /// serde's form flattened into one object with a `type` tag (`Request { ticket: 4 }`
    /// of kind `REQUEST` is `{"type":"REQUEST","ticket":4}`, a unit variant `Reply` is
    /// `{"type":"REPLY"}`, a variant holding one value that is not a struct carries it
    /// as `value`). The tag is the kind where it is the variant's name in other letters,
    /// else the variant's name. The message trace records it ([`crate::trace`]).
    fn json(&self) -> serde_json::Value {
        use serde_json::Value;
        let tag = |variant: &str| {
            let kind = self.kind();
            Value::from(if fold(kind) == fold(variant) { kind } else { variant })
        };
        match serde_json::to_value(self) {
            Ok(Value::String(variant)) => serde_json::json!({ "type": tag(&variant) }),
            Ok(Value::Object(one)) if one.len() == 1 => {
                let (variant, inner) = one.into_iter().next().expect("one entry");
                let mut obj = serde_json::Map::new();
                obj.insert("type".into(), tag(&variant));
                match inner {
                    Value::Object(fields) => obj.extend(fields),
                    other => {
                        obj.insert("value".into(), other);
                    }
                }
                Value::Object(obj)
            }
            Ok(other) => other,
            Err(e) => Value::String(format!("unserialisable message: {e}")),
        }
    }

    /// The message in the words every list of steps uses, the terminal's and the
    /// stepping page's alike: its kind, then its fields as JSON (`REQUEST {"stamp":1}`,
    /// `REPLY`).
    fn words(&self) -> String {
        match self.json() {
            serde_json::Value::Object(mut fields) => {
                fields.remove("type");
                if fields.is_empty() {
                    self.kind().to_string()
                } else {
                    format!("{} {}", self.kind(), serde_json::Value::Object(fields))
                }
            }
            other => format!("{} {other}", self.kind()),
        }
    }

    /// [`Message::json`] as compact text, made from serde's own text without building a
    /// JSON value: the same object, its `type` first and then the fields in their
    /// declared order. The trace writes it for every message, where building the value
    /// costs a saturated run several times more.
    fn json_text(&self) -> String {
        match serde_json::to_string(self) {
            Ok(text) => flat_json(&text, self.kind()).unwrap_or_else(|| self.json().to_string()),
            Err(_) => self.json().to_string(),
        }
    }
}

/// serde's externally tagged text of an enum value (`"Reply"`, `{"Request":{"ticket":4}}`,
/// `{"Vote":3}`) flattened as [`Message::json`] does, or `None` if it is not that shape.
fn flat_json(text: &str, kind: &str) -> Option<String> {
    let plain = |v: &str| !v.is_empty() && !v.contains(['"', '\\']);
    let tag = |variant: &str| {
        let t = if fold(kind) == fold(variant) { kind } else { variant };
        serde_json::to_string(t).unwrap_or_default()
    };
    if let Some(variant) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).filter(|v| plain(v)) {
        return Some(format!("{{\"type\":{}}}", tag(variant)));
    }
    let inner = text.strip_prefix("{\"")?.strip_suffix('}')?;
    let (variant, value) = inner.split_once("\":")?;
    if !plain(variant) {
        return None;
    }
    let tag = tag(variant);
    Some(match value.strip_prefix('{') {
        Some("}") => format!("{{\"type\":{tag}}}"),
        Some(fields) => format!("{{\"type\":{tag},{fields}"),
        None => format!("{{\"type\":{tag},\"value\":{value}}}"),
    })
}

/// A variant name or tag reduced for comparison: `REQUEST_ACK`, `RequestAck` and
/// `request-ack` are one.
pub fn fold(tag: &str) -> String {
    tag.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect()
}

/// A timer tag. Algorithms without timers use [`NoTimer`]. Not `Copy`, so tags can come
/// from outside Rust too.
pub trait Timer: Clone + Eq + Hash + fmt::Debug + Send + 'static {}
impl<T: Clone + Eq + Hash + fmt::Debug + Send + 'static> Timer for T {}

/// The timer type of algorithms that set no timers. It has no values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum NoTimer {}

/// Everything a node can be told, as a value: the same value is a step in a test, a line
/// of a simulator trace, and (serialised with its `type` tag) a JSON line to a worker in
/// another language. `C` is the service's call type ([`Service::Call`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Input<M, T, C> {
    /// The node starts: once, before anything else.
    Start,
    /// A message arrived from `from`.
    Message {
        /// The sender.
        from: PeerId,
        /// What it sent.
        msg: M,
    },
    /// A timer set earlier fired (possibly late, possibly after being reset).
    Timer {
        /// The timer, as the node set it.
        timer: T,
    },
    /// The channel to `peer` closed. On one machine a crashed process's socket gives
    /// EOF, so this is a perfect crash detector; a paused peer gives no such event.
    PeerDown {
        /// The peer whose channel closed.
        peer: PeerId,
    },
    /// `peer` came back as a new incarnation with fresh state.
    PeerUp {
        /// The peer that came back.
        peer: PeerId,
    },
    /// The node's application calls it (`want`, `done`, `elect`…).
    Call {
        /// The call.
        call: C,
    },
}

/// Everything a node can ask for, as a value (see [`Input`]). `E` is the service's
/// event type ([`Service::Event`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Output<M, T, E> {
    /// Send `msg` to one peer.
    Send {
        /// The peer.
        to: PeerId,
        /// The message.
        msg: M,
    },
    /// Send `msg` to every other node (not to this one).
    Broadcast {
        /// The message.
        msg: M,
    },
    /// Fire `timer` after `after`; setting a timer that is already set resets it.
    SetTimer {
        /// The timer: any value of the node's timer type.
        timer: T,
        /// How long from now.
        after: Duration,
    },
    /// Forget `timer`; cancelling one that is not set is harmless.
    CancelTimer {
        /// The timer.
        timer: T,
    },
    /// Tell the node's application something (`enter`, `leader`…).
    Event {
        /// What to tell it.
        event: E,
    },
    /// Add `by` to the report's counter `name` (e.g. `attempts`): counts for reports
    /// go out, so they do not make equal states look different.
    Count {
        /// The counter's name in the report.
        name: Cow<'static, str>,
        /// How much to add.
        by: u64,
    },
}

/// What a mutual-exclusion node asks for: its outputs under the [`Mutex`] service.
pub type Action<M, T> = Output<M, T, MutexEvent>;

impl<M, T> Output<M, T, MutexEvent> {
    /// Let the waiting application into the critical section.
    pub fn enter() -> Self {
        Output::Event { event: MutexEvent::Enter }
    }
}

/// The outbox handed to every handler, with the current time.
#[derive(Debug)]
pub struct Out<M, T, E = MutexEvent> {
    now: Duration,
    actions: Vec<Output<M, T, E>>,
}

impl<M, T, E> Out<M, T, E> {
    /// An empty outbox at time `now` (time since the node started).
    pub fn new(now: Duration) -> Self {
        Out { now, actions: Vec::new() }
    }

    /// Time since this node started, as the driver measures it.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// Send `msg` to `to`.
    pub fn send(&mut self, to: PeerId, msg: M) {
        self.actions.push(Output::Send { to, msg });
    }

    /// Send `msg` to every other node.
    pub fn broadcast(&mut self, msg: M) {
        self.actions.push(Output::Broadcast { msg });
    }

    /// Fire `timer` after `after` (resets it if already set).
    pub fn set_timer(&mut self, timer: T, after: Duration) {
        self.actions.push(Output::SetTimer { timer, after });
    }

    /// Forget `timer`.
    pub fn cancel_timer(&mut self, timer: T) {
        self.actions.push(Output::CancelTimer { timer });
    }

    /// Tell the application `event`.
    pub fn emit(&mut self, event: E) {
        self.actions.push(Output::Event { event });
    }

    /// Add `by` to the report's counter `name`.
    pub fn count(&mut self, name: &'static str, by: u64) {
        self.actions.push(Output::Count { name: Cow::Borrowed(name), by });
    }

    /// Push an output as it is (a layer around a node passes on what the node did).
    pub fn push(&mut self, action: Output<M, T, E>) {
        self.actions.push(action);
    }

    /// The outputs pushed so far, in order.
    pub fn actions(&self) -> &[Output<M, T, E>] {
        &self.actions
    }

    /// Take the outputs out, leaving the box empty (the time stays).
    pub fn drain(&mut self) -> std::vec::Drain<'_, Output<M, T, E>> {
        self.actions.drain(..)
    }

    /// Move to a new time, keeping no outputs.
    pub fn reset(&mut self, now: Duration) {
        self.now = now;
        self.actions.clear();
    }
}

impl<M, T> Out<M, T, MutexEvent> {
    /// Let the application into the critical section.
    pub fn enter_cs(&mut self) {
        self.emit(MutexEvent::Enter);
    }
}

/// A node of any service: a state machine that takes [`Input`]s and pushes [`Output`]s.
/// Its state is a value (`Clone + Eq + Hash`), so drivers can copy, compare and store it.
pub trait Node: Clone + PartialEq + Eq + Hash + fmt::Debug + Send + 'static {
    /// The node's messages.
    type Msg: Message;
    /// The node's timer tags.
    type Timer: Timer;
    /// What the node offers its application.
    type Service: Service;

    /// A fresh node with this configuration and no history (a restarted node gets a
    /// fresh one too: it has forgotten everything).
    fn create(cfg: &Config) -> Self;

    /// An election whose nodes each name a leader of their own rather than all one (a
    /// super-peer and the normal nodes it serves, `algos/superpeer.rs`): drivers take it
    /// as settled when every live node follows a live node, and do not ask that they
    /// agree or that a term names one leader.
    const OWN_LEADERS: bool = false;

    /// Handle one input.
    fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>);

    /// What this node is waiting for, in a few words, for stall diagnoses.
    fn waiting_for(&self) -> String {
        String::new()
    }

    /// Why this node can go on no longer, if it cannot: it stands for something outside
    /// the driver's process that failed (a program that died, answered garbage or broke
    /// a rule, `external.rs`). The host asks after every step and reports it as a
    /// breach (`Breach::Failed`), so every driver sees it alike. A node of this library's
    /// own never fails this way: its bugs are panics or breaches of their own.
    fn failure(&self) -> Option<String> {
        None
    }

    /// The host found that a step of this node broke the driver contract (`breach`, in
    /// words). A node that stands for a program takes it as its failure ([`Node::failure`]),
    /// since its author wants to hear of it; any other ignores it (the breach is
    /// reported anyway).
    fn breached(&mut self, _breach: &str) {}

    /// For the checker, when asked (`mutexlab check --forget`): clear the fields whose
    /// values no later step reads (a ticket once its request is over), so that states
    /// differing only there compare equal. It must not change anything the node does
    /// afterwards; real runs and the simulator never call it. The default forgets nothing.
    fn forget(&mut self) {}

    /// The largest counter in this node's state that only grows (a Lamport clock, a
    /// ticket, a term), for the checker's state constraint (`check --counter-bound B`):
    /// a search expands no state where a node's is above B, as TLC's state constraints
    /// bound such models. The default, 0, has nothing to bound.
    fn counter(&self) -> u64 {
        0
    }

    /// The node's state as readable data, for the stepping page and the explorer: by
    /// default its fields by their own names, read from its `Debug` text
    /// ([`crate::fields::from_debug`]). A node that stands for a program says what it
    /// can of that program instead.
    fn state(&self) -> serde_json::Value {
        crate::fields::from_debug(self)
    }
}

/// The inputs of node type `N`.
pub type NodeInput<N> = Input<<N as Node>::Msg, <N as Node>::Timer, <<N as Node>::Service as Service>::Call>;
/// The outputs of node type `N`.
pub type NodeOutput<N> =
    Output<<N as Node>::Msg, <N as Node>::Timer, <<N as Node>::Service as Service>::Event>;
/// The outbox of node type `N`.
pub type NodeOut<N> = Out<<N as Node>::Msg, <N as Node>::Timer, <<N as Node>::Service as Service>::Event>;

/// A mutual-exclusion algorithm as a set of event handlers: the way the lab's mutex
/// algorithms are written, one handler per input, beside the course notes' pseudo-code.
/// Every `Algorithm` is a [`Node`] of the [`Mutex`] service.
///
/// Only `new`, `on_want_cs`, `on_message` and `on_cs_done` must be written; the other
/// handlers default to doing nothing. See `algos/centralized.rs` for a complete example.
pub trait Algorithm: Clone + PartialEq + Eq + Hash + fmt::Debug + Send + 'static {
    /// The algorithm's messages: usually an enum with named fields.
    type Msg: Message;
    /// The algorithm's timer tags: usually an enum, or [`NoTimer`].
    type Timer: Timer;

    /// A fresh node with this configuration and no history (a restarted node gets a
    /// fresh one too: it has forgotten everything).
    fn new(cfg: &Config) -> Self
    where
        Self: Sized;

    /// The node starts. Peers may not have started yet; messages to them are queued.
    fn on_start(&mut self, _out: &mut Out<Self::Msg, Self::Timer>) {}

    /// The application asks for the critical section.
    fn on_want_cs(&mut self, out: &mut Out<Self::Msg, Self::Timer>);

    /// A message arrived from `from`.
    fn on_message(&mut self, from: PeerId, msg: Self::Msg, out: &mut Out<Self::Msg, Self::Timer>);

    /// The application left the critical section.
    fn on_cs_done(&mut self, out: &mut Out<Self::Msg, Self::Timer>);

    /// A timer set earlier fired (possibly late, possibly after being reset).
    fn on_timer(&mut self, _timer: Self::Timer, _out: &mut Out<Self::Msg, Self::Timer>) {}

    /// The channel to `peer` closed: on one machine, a crashed process's socket gives
    /// EOF, so this is a perfect crash detector. A paused peer gives no such event.
    fn on_peer_down(&mut self, _peer: PeerId, _out: &mut Out<Self::Msg, Self::Timer>) {}

    /// `peer` came back as a new incarnation with fresh state.
    fn on_peer_up(&mut self, _peer: PeerId, _out: &mut Out<Self::Msg, Self::Timer>) {}

    /// What this node is waiting for, in a few words, for stall diagnoses
    /// (e.g. `"waiting for GRANT from w3"`). Empty when it waits for nothing.
    fn pending(&self) -> String {
        String::new()
    }

    /// For the checker only: clear the fields no later step reads (see [`Node::forget`]).
    fn forget(&mut self) {}

    /// For the checker only: the largest counter that only grows (see [`Node::counter`]).
    fn counter(&self) -> u64 {
        0
    }
}

impl<A: Algorithm> Node for A {
    type Msg = A::Msg;
    type Timer = A::Timer;
    type Service = Mutex;

    fn create(cfg: &Config) -> Self {
        A::new(cfg)
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
        match input {
            Input::Start => self.on_start(out),
            Input::Message { from, msg } => self.on_message(from, msg, out),
            Input::Timer { timer } => self.on_timer(timer, out),
            Input::PeerDown { peer } => self.on_peer_down(peer, out),
            Input::PeerUp { peer } => self.on_peer_up(peer, out),
            Input::Call { call: MutexCall::Want } => self.on_want_cs(out),
            Input::Call { call: MutexCall::Done } => self.on_cs_done(out),
        }
    }

    fn waiting_for(&self) -> String {
        self.pending()
    }

    fn forget(&mut self) {
        Algorithm::forget(self)
    }

    fn counter(&self) -> u64 {
        Algorithm::counter(self)
    }
}

/// A renaming of nodes: node `i` is called `to[i]`, a permutation of `0..n`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Renaming {
    to: Vec<PeerId>,
}

impl Renaming {
    /// The renaming that sends node `i` to `to[i]`; `None` unless `to` is a permutation
    /// of `0..to.len()`.
    pub fn new(to: Vec<u32>) -> Option<Renaming> {
        let mut seen = vec![false; to.len()];
        for &t in &to {
            let slot = seen.get_mut(t as usize)?;
            if std::mem::replace(slot, true) {
                return None;
            }
        }
        Some(Renaming { to: to.into_iter().map(PeerId).collect() })
    }

    /// The rotations of a ring of `n` nodes (node `i` called `i + s mod n`), the identity
    /// first: the symmetries of an algorithm that orders nodes only round the ring.
    pub fn rotations(n: u32) -> Vec<Renaming> {
        (0..n.max(1)).map(|s| Renaming { to: (0..n).map(|i| PeerId((i + s) % n)).collect() }).collect()
    }

    /// Every permutation of the nodes `movable` among themselves, the other nodes of
    /// `0..n` keeping their ids: the identity first.
    pub fn all_of(n: u32, movable: &[u32]) -> Vec<Renaming> {
        let mut orders = vec![movable.to_vec()];
        // Heap's algorithm, iteratively: every order of `movable` once.
        let mut order = movable.to_vec();
        let mut c = vec![0usize; order.len()];
        let mut i = 1;
        while i < order.len() {
            if c[i] < i {
                order.swap(if i % 2 == 0 { 0 } else { c[i] }, i);
                orders.push(order.clone());
                c[i] += 1;
                i = 1;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        orders
            .into_iter()
            .map(|o| {
                let mut to: Vec<u32> = (0..n).collect();
                for (&from, &into) in movable.iter().zip(&o) {
                    to[from as usize] = into;
                }
                Renaming { to: to.into_iter().map(PeerId).collect() }
            })
            .collect()
    }

    /// What node `p` is called after the renaming.
    pub fn of(&self, p: PeerId) -> PeerId {
        self.to[p.index()]
    }

    /// The renaming of nothing: every node keeps its id.
    pub fn is_identity(&self) -> bool {
        self.to.iter().enumerate().all(|(i, p)| p.index() == i)
    }

    /// `items`, one per node, moved to where the renaming puts their nodes.
    pub fn permute<T: Clone>(&self, items: &[T]) -> Vec<T> {
        let mut out = items.to_vec();
        for (i, item) in items.iter().enumerate() {
            out[self.to[i].index()] = item.clone();
        }
        out
    }
}

/// A node type whose nodes are interchangeable up to renaming (`mutexlab check
/// --symmetry`, as Stateright's `Representative`): for every renaming `r` it lists, a
/// world renamed by `r` (each node's state, message and timer with its ids renamed, the
/// nodes, channels and timers moved to their new names) behaves as the world does with
/// every id renamed by `r`. That is false of an algorithm that orders nodes by id (a
/// tie-break by id, a ring by id, a coordinator chosen as the highest id): a renaming
/// must then fix those ids, or it is no symmetry. The checker keys each state by the
/// least fingerprint of its renamings, so a state and its renamed twins count once.
pub trait Symmetric: Node {
    /// The renamings of `n` nodes under which the algorithm is the same, the identity
    /// among them (a group: [`Renaming::all_of`] of the nodes that are interchangeable).
    fn renamings(n: u32) -> Vec<Renaming>;
    /// This node's state with every node id in it renamed by `r`.
    fn renamed(&self, r: &Renaming) -> Self;
    /// `msg` with every node id in it renamed by `r`.
    fn msg_renamed(msg: &Self::Msg, r: &Renaming) -> Self::Msg;
    /// `timer` with every node id in it renamed by `r`.
    fn timer_renamed(timer: &Self::Timer, r: &Renaming) -> Self::Timer;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majority_is_more_than_half() {
        assert_eq!(majority(1), 1);
        assert_eq!(majority(2), 2);
        assert_eq!(majority(3), 2);
        assert_eq!(majority(4), 3);
        assert_eq!(majority(5), 3);
    }

    #[test]
    fn ring_neighbours_skip_those_that_are_not_up() {
        let cfg = Config::new(1, 4);
        assert_eq!(cfg.successor(|_| true), Some(PeerId(2)));
        assert_eq!(cfg.successor(|p| p != PeerId(2)), Some(PeerId(3)));
        assert_eq!(cfg.predecessor(|p| p != PeerId(0)), Some(PeerId(3)), "round the ring");
        assert_eq!(cfg.successor(|_| false), None, "alone");
    }

    #[test]
    fn renamings_are_every_permutation_of_the_movable_nodes_once() {
        let all = Renaming::all_of(4, &[0, 1, 2]);
        assert_eq!(all.len(), 6);
        assert!(all[0].is_identity());
        assert!(all.iter().all(|r| r.of(PeerId(3)) == PeerId(3)), "w3 is not movable");
        let distinct: std::collections::HashSet<_> = all.iter().collect();
        assert_eq!(distinct.len(), 6);
        let r = Renaming::new(vec![1, 2, 0]).unwrap();
        assert_eq!(r.permute(&['a', 'b', 'c']), ['c', 'a', 'b']);
        assert!(Renaming::new(vec![0, 0]).is_none() && Renaming::new(vec![2, 0]).is_none());
    }

    #[test]
    fn others_skips_self() {
        let cfg = Config::new(1, 4);
        let ids: Vec<u32> = cfg.others().map(|p| p.0).collect();
        assert_eq!(ids, vec![0, 2, 3]);
        assert_eq!(cfg.highest(), PeerId(3));
    }
}
