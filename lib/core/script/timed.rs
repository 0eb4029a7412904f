//! A timed driver for election tests: N hosts on a machine model with message delays and
//! CPU, for what the zero-time drivers ([`super::elect::Net`], the simulator)
//! cannot show: whether a node's timeouts outlast the replies a loaded machine makes late.
//!
//! Every input a node handles costs `cost` of CPU on one of `cores` cores (the first one
//! free), and a node handles its inputs one at a time, in the order they arrived; what it
//! sends leaves when it is done and arrives up to `delay` later (drawn from the seed,
//! FIFO per channel). Timers fire at their deadline, or when the node is next free. So a
//! burst of N² messages on 2 cores delays every reply by the time the cores take to work
//! through what came before it, as on a real machine running N processes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::algorithm::{Config, Election, ElectionCall, ElectionEvent, Input, Node, PeerId, Timing};
use crate::host::{Effect, Host, Step};

/// The machine the nodes share.
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    /// CPUs.
    pub cores: usize,
    /// CPU time one input takes, its sends included.
    pub cost: Duration,
    /// The longest one-way delay on the wire.
    pub delay: Duration,
}

enum Ev<N: Node> {
    Deliver { from: PeerId, to: usize, msg: N::Msg },
    Timer { node: usize, timer: N::Timer, generation: u64 },
    Elect { node: usize },
}

/// N election nodes on one [`Machine`].
pub struct Timed<N: Node<Service = Election>> {
    hosts: Vec<Host<N>>,
    machine: Machine,
    rng: ChaCha8Rng,
    events: BTreeMap<(Duration, u64), Ev<N>>,
    seq: u64,
    /// When each node, and each core, is next free.
    node_free: Vec<Duration>,
    core_free: Vec<Duration>,
    /// The last arrival on each channel, to keep channels FIFO.
    last_arrival: BTreeMap<(usize, usize), Duration>,
    /// Messages sent.
    pub sent: usize,
    /// Each node's last accepted leader and term.
    pub leader: Vec<Option<(PeerId, u64)>>,
    /// Every term announced, with the leader it named.
    pub terms: BTreeMap<u64, BTreeSet<PeerId>>,
    /// When the last input was handled.
    pub now: Duration,
}

impl<N: Node<Service = Election>> Timed<N> {
    /// `n` nodes given `timing`, on `machine`, started; `seed` draws the delays.
    pub fn new(n: u32, timing: Timing, machine: Machine, seed: u64) -> Self {
        let mut net = Timed {
            hosts: (0..n).map(|i| Host::new(Config { timing, ..Config::new(i, n) })).collect(),
            machine,
            rng: ChaCha8Rng::seed_from_u64(seed),
            events: BTreeMap::new(),
            seq: 0,
            node_free: vec![Duration::ZERO; n as usize],
            core_free: vec![Duration::ZERO; machine.cores.max(1)],
            last_arrival: BTreeMap::new(),
            sent: 0,
            leader: vec![None; n as usize],
            terms: BTreeMap::new(),
            now: Duration::ZERO,
        };
        for i in 0..n as usize {
            let step = net.hosts[i].step(Duration::ZERO, Input::Start);
            net.apply(i, Duration::ZERO, step);
        }
        net
    }

    fn push(&mut self, at: Duration, ev: Ev<N>) {
        self.seq += 1;
        self.events.insert((at, self.seq), ev);
    }

    /// Node `i` gets no core before `until`: a process waiting for its turn on a loaded
    /// machine (at most ⌈N / cores⌉ time slices).
    pub fn stall(&mut self, i: u32, until: Duration) {
        self.node_free[i as usize] = until;
    }

    /// Every node calls `elect` at time 0.
    pub fn elect_all(&mut self) {
        for node in 0..self.hosts.len() {
            self.push(Duration::ZERO, Ev::Elect { node });
        }
    }

    /// Run until nothing is left to happen.
    pub fn run(&mut self) -> Result<(), String> {
        for _ in 0..10_000_000 {
            let Some(((at, _), ev)) = self.events.pop_first() else { return Ok(()) };
            let node = match &ev {
                Ev::Deliver { to, .. } => *to,
                Ev::Timer { node, .. } | Ev::Elect { node } => *node,
            };
            // The node runs when it and a core are free; the input takes `cost`.
            let core = (0..self.core_free.len()).min_by_key(|&k| self.core_free[k]).unwrap_or(0);
            let start = at.max(self.node_free[node]).max(self.core_free[core]);
            let done = start + self.machine.cost;
            self.node_free[node] = done;
            self.core_free[core] = done;
            self.now = done;
            let step = match ev {
                Ev::Deliver { from, msg, .. } => {
                    Some(self.hosts[node].step(done, Input::Message { from, msg }))
                }
                Ev::Timer { timer, generation, .. } => self.hosts[node].fire(done, &timer, generation),
                Ev::Elect { .. } => {
                    Some(self.hosts[node].step(done, Input::Call { call: ElectionCall::Elect }))
                }
            };
            if let Some(step) = step {
                self.apply(node, done, step);
            }
        }
        Err("still busy after 10,000,000 inputs".into())
    }

    fn apply(&mut self, i: usize, now: Duration, step: Step<N>) {
        assert!(step.breaches.is_empty(), "w{i}: {:?}", step.breaches);
        for effect in step.effects {
            match effect {
                Effect::Send { to, msg } => {
                    self.sent += 1;
                    let jitter = self.machine.delay.mul_f64(self.rng.random_range(0.0..=1.0));
                    let last = self.last_arrival.get(&(i, to.index())).copied().unwrap_or_default();
                    let at = (now + jitter).max(last);
                    self.last_arrival.insert((i, to.index()), at);
                    self.push(at, Ev::Deliver { from: PeerId(i as u32), to: to.index(), msg });
                }
                Effect::Arm { timer, generation, after } => {
                    self.push(now + after, Ev::Timer { node: i, timer, generation })
                }
                Effect::Disarm { .. } | Effect::Count { .. } => {}
                Effect::Event { event: ElectionEvent::Leader { id, term } } => {
                    self.leader[i] = Some((id, term));
                    self.terms.entry(term).or_default().insert(id);
                }
            }
        }
    }

    /// Elections held: distinct terms announced, as a run's report counts them.
    pub fn elections(&self) -> usize {
        self.terms.len()
    }

    /// Every node follows the highest id, and no term named two leaders.
    pub fn check(&self) -> Result<(), String> {
        let highest = PeerId(self.hosts.len() as u32 - 1);
        if let Some((term, who)) = self.terms.iter().find(|(_, who)| who.len() > 1) {
            return Err(format!("term {term} named {who:?}"));
        }
        match self.leader.iter().position(|l| l.map(|(id, _)| id) != Some(highest)) {
            Some(w) => Err(format!("w{w} follows {:?}, not {highest}", self.leader[w])),
            None => Ok(()),
        }
    }
}
