//! The registry: the one place that names each node type together with what drives
//! it (a worker process, the simulator, a program of the user's among its workers), its
//! theory of message cost and the notes' claims.
//!
//! It sits above the drivers (`runtime`, `sim`, `external`) and below the supervisor
//! and the command line: the algorithms ([`crate::algos`]) know nothing of it, and the
//! runtime is handed what to run ([`run_worker`] resolves a worker's settings to a
//! [`NodeRun`]). The registry maps the name a user types (`--algo NAME`) to an
//! [`AlgoInfo`]; adding an algorithm is its file in `algos/` and one entry in
//! [`BUILTIN`], from which every other list (mixed clusters, `compare`'s claims, the
//! state test) is derived. [`Registry`] is open: a crate outside this library adds its
//! own algorithms and runs the whole command line with them
//! (`examples/custom_algorithm.rs` shows how).

use std::path::Path;
use std::sync::OnceLock;

use crate::algorithm::PeerId;
use crate::algorithm::{Node, ServiceKind, Symmetric};
use crate::algos::*;
use crate::check::walk::{Route, Walk};
use crate::check::{CheckOpts, CheckReport, Invariant, Progress};
use crate::control::WorkerSettings;
use crate::external::{External, MessageShape, Ref};
use crate::runtime::{self, NodeRun, RunService};
use crate::sim::{SimService, World};

mod builtin;
mod checks;
mod protocol;
pub use builtin::BUILTIN;
use checks::*;
pub use checks::{CheckFn, WalkFn};
pub use protocol::{
    doc_agrees, doc_messages_agree, messages_markdown, rules_markdown, splice_messages, splice_rules,
    DOC_BEGIN, DOC_END,
};

/// A registry entry.
#[derive(Debug)]
pub struct AlgoInfo {
    /// The name users type.
    pub name: &'static str,
    /// `baseline`, `permission` or `token` for mutual exclusion; `election` or `ring`
    /// for elections.
    pub family: Family,
    /// The service the node type provides (set by [`AlgoInfo::runs`]): `mutexlab run`
    /// runs mutual exclusion, `mutexlab elect` elections.
    pub service: ServiceKind,
    /// Elections: the auditor checks that the agreed leader is the highest live id.
    pub highest_wins: bool,
    /// Elections whose nodes each name a leader of their own, a super-peer
    /// ([`crate::algorithm::Node::OWN_LEADERS`], set by [`AlgoInfo::runs`]): the run
    /// settles when every live worker follows a live one, and the super-peer auditor
    /// ([`crate::audit::superpeers`]) judges it instead of the leaders' agreement.
    pub own_leaders: bool,
    /// One line for `mutexlab algorithms`.
    pub summary: &'static str,
    /// The runtime wraps each critical section in `flock(2)` on the resource file.
    pub kernel_lock: bool,
    /// The node has a majority rule, which `run --majority` turns on
    /// ([`crate::algorithm::Config::majority`]).
    pub majority: bool,
    /// The node takes replicated coordinators, which `run --replicas` counts
    /// ([`crate::algorithm::Config::replicas`]).
    pub replicas: bool,
    /// Expected messages per entry (per election, for elections) for a run of this
    /// shape, where theory gives a number.
    pub theory: fn(Shape) -> Option<Theory>,
    /// What the notes claim for it, for `mutexlab compare` (mutual exclusion only).
    pub claim: Option<Claim>,
    /// Runs the node type as a worker process (set by [`AlgoInfo::runs`]).
    pub worker: WorkerFn,
    /// Runs a program of the user's as one worker among this algorithm's own
    /// (`--worker-cmd-for`), speaking its messages ([`Ref`]); set by [`AlgoInfo::runs`],
    /// `None` where it cannot work (the baselines send nothing).
    pub mixed: Option<WorkerFn>,
    /// Checks that the node type's states are values, as an exhaustive checker needs
    /// them: `n` nodes, a seed, entries per node, as `simulate` (set by
    /// [`AlgoInfo::runs`]; see [`states_are_values`]).
    pub states: fn(u32, u64, u32) -> Result<usize, String>,
    /// Runs the node type in the simulator: `n` nodes, a seed, entries per node (set by
    /// [`AlgoInfo::runs`]).
    pub simulate: fn(u32, u64, u32) -> Result<crate::sim::SimReport, crate::sim::SimError>,
    /// Runs the node type in the simulator with the settings of `mutexlab sim` (set by
    /// [`AlgoInfo::runs`]: [`crate::sim::simulate_with`]).
    pub sim: fn(&crate::sim::SimOpts) -> Result<crate::sim::SimReport, crate::sim::SimError>,
    /// Runs the node type in the simulator with one fault as `mutexlab compare` makes it
    /// (set by [`AlgoInfo::runs`]: [`crate::sim::fault_run`]).
    pub fault_sim: fn(&crate::sim::FaultSim) -> crate::sim::FaultSimReport,
    /// Checks the node type over every interleaving (`mutexlab check`; set by
    /// [`AlgoInfo::runs`]): [`crate::check::check`] for it and its service. An entry
    /// with invariants of its own sets it to [`crate::check::check_with`] and them
    /// (`check_tokens`, `check_centralized` below); run it through
    /// [`AlgoInfo::check_opts`] so that the entry's promises are checked too.
    pub check: CheckFn,
    /// The same check up to symmetry (`check --symmetry`), for a node type whose nodes
    /// are interchangeable up to renaming ([`crate::algorithm::Symmetric`]):
    /// [`crate::check::check_symmetric`] with the entry's invariants. `None`: the
    /// algorithm declares no symmetry, and `--symmetry` is refused.
    pub symmetric: Option<CheckFn>,
    /// How the stepping page and the explorer walk a path of it (set by
    /// [`AlgoInfo::runs`]; an entry with invariants of its own judges them there too).
    pub walk: WalkFn,
    /// Mutual exclusion: the most times others may enter while one node's application
    /// waits, where the algorithm promises a bound (checked by `mutexlab check`).
    pub bypass: Option<Bypass>,
    /// The timer budget `mutexlab check` uses unless told (`--timer-fires`), for an
    /// algorithm whose timers can fire without end (a heartbeat, a retry, a timeout
    /// that starts a new round): with none its search never ends.
    pub timer_fires: Option<u32>,
    /// The counter bound `mutexlab check` uses unless told (`--counter-bound`), for an
    /// algorithm whose clocks, tickets or terms make its space too big to finish from
    /// k = 2 or n = 4 on ([`AlgoInfo::default_counter_bound`]).
    pub counter_bound: Option<u64>,
    /// Each node talks to few peers (a ring's successor, a coordinator, a tree's
    /// neighbours): its workers connect to a peer when they first write to it, not to
    /// every peer at the start, which is what lets a run reach a thousand workers
    /// ([`WorkerSettings::lazy`]). A peer never talked to is then never reported down.
    pub few_peers: bool,
    /// The most workers a release build of it ran clean with when measured (`run -k 1
    /// --cs-ms 0 --think-ms 1` on the two-core machine of the README's "How far it
    /// scales"); `run` warns in one line before starting more. `None`: not measured (the
    /// algorithms that talk to few peers were measured clean at
    /// [`crate::control::MAX_WORKERS`], the most a run takes).
    pub measured_clean: Option<u32>,
    /// The JSON shape of each of its messages as a program among its workers speaks
    /// them (set by [`AlgoInfo::runs`], traced from the message type's serde derive:
    /// [`crate::external::message_shapes`]); `mutexlab algorithms --messages` prints
    /// them and `labs/PROTOCOL.md` holds them as a table ([`messages_markdown`]).
    pub messages: fn() -> Result<Vec<MessageShape>, String>,
    /// Reads one of its messages as the flight recorder keeps it (its wire bytes) for
    /// the trace lines written from the rings (set by [`AlgoInfo::runs`]:
    /// [`crate::trace::decode_body`] of its message type).
    pub body: crate::trace::Decode,
    /// The node type's Rust path (set by [`AlgoInfo::runs`]: `std::any::type_name`): its
    /// module's doc comment is the algorithm's rules, which `labs/PROTOCOL.md` carries
    /// ([`rules_markdown`]).
    pub node_type: fn() -> &'static str,
}

/// A bypass bound an algorithm promises, as data beside the notes' claim: while a
/// node's application waits, the others enter at most `bound(n)` times.
#[derive(Clone, Copy, Debug)]
pub struct Bypass {
    /// The bound for `n` nodes.
    pub bound: fn(u32) -> u32,
    /// Where the promise comes from: the notes' words, and why it holds.
    pub claim: &'static str,
}

impl AlgoInfo {
    /// `opts` with what this entry promises filled in: its bypass bound (unless `opts`
    /// names one already) and, for elections, that the highest live id wins.
    pub fn check_opts(&self, mut opts: CheckOpts) -> CheckOpts {
        if opts.bypass_bound.is_none() {
            opts.bypass_bound = self.bypass.map(|b| (b.bound)(opts.n));
        }
        opts.highest_wins |= self.highest_wins;
        opts
    }
}

/// How a worker process runs a node type: [`runtime::run_node`] for it.
pub type WorkerFn = runtime::RunNode;

impl AlgoInfo {
    /// The counter bound `check` uses at `n` nodes and `k` entries unless told: the
    /// entry's, from k = 2 or n = 4 on. Smaller models finish unbounded and are checked
    /// whole.
    pub fn default_counter_bound(&self, n: u32, k: u32) -> Option<u64> {
        self.counter_bound.filter(|_| k >= 2 || n >= 4)
    }

    /// The parts of an entry that run node type `N` (as a worker, in the simulator, as a
    /// program among its workers, the state check); fill in the rest:
    /// `AlgoInfo { name: "mine", family: Family::Permission, summary: "…", kernel_lock: false,
    /// theory: |_| None, ..AlgoInfo::runs::<Mine>() }`.
    pub const fn runs<N: Node<Service: RunService + SimService>>() -> AlgoInfo {
        AlgoInfo {
            name: "",
            // A default by service: set your own.
            family: match <N::Service as crate::algorithm::Service>::KIND {
                ServiceKind::Mutex => Family::Permission,
                ServiceKind::Election => Family::Election,
            },
            service: <N::Service as crate::algorithm::Service>::KIND,
            highest_wins: false,
            own_leaders: N::OWN_LEADERS,
            timer_fires: None,
            counter_bound: None,
            few_peers: false,
            measured_clean: None,
            summary: "",
            kernel_lock: false,
            majority: false,
            replicas: false,
            theory: |_| None,
            claim: None,
            worker: runtime::run_node::<N>,
            mixed: Some(runtime::run_node::<External<N::Service, Ref<N::Msg>>>),
            states: states_are_values::<N>,
            simulate: crate::sim::simulate::<N>,
            sim: crate::sim::simulate_with::<N>,
            fault_sim: crate::sim::fault_run::<N>,
            check: check_node::<N>,
            symmetric: None,
            walk: walk_node::<N>,
            bypass: None,
            messages: crate::external::message_shapes::<N::Msg>,
            // A program among the reference's workers speaks `Ref<N::Msg>`, the same bytes.
            body: crate::trace::decode_body::<N::Msg>,
            node_type: std::any::type_name::<N>,
        }
    }
}

/// A set of algorithms by name: the built-in ones, and any a crate outside this library
/// adds (see [`Registry::with`]). The command line runs whatever the installed registry
/// holds ([`Registry::install`]); without one, the built-in algorithms.
#[derive(Clone, Debug)]
pub struct Registry {
    algos: Vec<&'static AlgoInfo>,
}

impl Registry {
    /// The algorithms the lab ships.
    pub fn builtin() -> Registry {
        Registry { algos: BUILTIN.iter().collect() }
    }

    /// This registry with `info` added (its `..AlgoInfo::runs::<YourNode>()` names the
    /// type). A name that is already taken is a programming error.
    pub fn with(mut self, info: AlgoInfo) -> Registry {
        assert!(self.get(info.name).is_none(), "algorithm {:?} is registered twice", info.name);
        // Registries live as long as the process: leaking keeps `&'static` lookups simple.
        self.algos.push(Box::leak(Box::new(info)));
        self
    }

    /// Look an algorithm up by name.
    pub fn get(&self, name: &str) -> Option<&'static AlgoInfo> {
        self.algos.iter().copied().find(|a| a.name == name)
    }

    /// Every algorithm, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &'static AlgoInfo> + '_ {
        self.algos.iter().copied()
    }

    /// Look `name` up as a user typed it: exactly, else ignoring case; the error names
    /// the nearest name, if one is near, and lists them all.
    pub fn lookup(&self, name: &str) -> Result<&'static AlgoInfo, UnknownAlgorithm> {
        if let Some(a) = self.get(name).or_else(|| self.iter().find(|a| a.name.eq_ignore_ascii_case(name))) {
            return Ok(a);
        }
        let typed = name.to_ascii_lowercase();
        let nearest = self
            .iter()
            .map(|a| (strsim::damerau_levenshtein(&typed, a.name), a.name))
            .filter(|&(d, n)| d <= 2.max(n.len() / 4))
            .min()
            .map(|(_, n)| n);
        Err(UnknownAlgorithm { name: name.to_string(), nearest, valid: self.names() })
    }

    /// The registry entry for `--worker-cmd` labelled `label` ([`external`]), lent the
    /// family and theory of the algorithm of that name here, if it has one.
    pub fn external(&self, label: &str, service: ServiceKind) -> &'static AlgoInfo {
        external(label, self.get(label), service)
    }

    /// The names, comma-separated, for error messages.
    pub fn names(&self) -> String {
        self.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
    }

    /// Make this the registry of the whole process (the command line and its workers
    /// consult it). Once per process; a second install is refused.
    pub fn install(self) -> Result<&'static Registry, Registry> {
        INSTALLED.set(self)?;
        Ok(registry())
    }
}

static INSTALLED: OnceLock<Registry> = OnceLock::new();

/// The process's registry: the one installed, else the built-in algorithms.
pub fn registry() -> &'static Registry {
    INSTALLED.get_or_init(Registry::builtin)
}

/// Look an algorithm up by name in the process's registry.
pub fn info(name: &str) -> Option<&'static AlgoInfo> {
    registry().get(name)
}

/// Look `name` up in the process's registry as a user typed it ([`Registry::lookup`]).
pub fn lookup(name: &str) -> Result<&'static AlgoInfo, UnknownAlgorithm> {
    registry().lookup(name)
}

/// The names of all algorithms in the process's registry, comma-separated.
pub fn names() -> String {
    registry().names()
}

/// A name no algorithm of the registry has: one line that suggests the nearest name, if
/// one is near, and lists them all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm {name:?}{} (valid: {valid})", .nearest.map(|n| format!("; did you mean {n:?}?")).unwrap_or_default())]
pub struct UnknownAlgorithm {
    /// The name as typed.
    pub name: String,
    /// The registered name nearest to it, if one is near.
    pub nearest: Option<&'static str>,
    /// Every registered name, comma-separated.
    pub valid: String,
}

impl From<UnknownAlgorithm> for String {
    fn from(e: UnknownAlgorithm) -> String {
        e.to_string()
    }
}

/// Whether the states of node type `N` are values: run `n` nodes from `seed` in the
/// simulator, `entries` entries each, and check that every node's clone equals it and
/// that a set of the fresh nodes and the final ones holds them. `Ok` gives how many
/// distinct states the set holds; `Err` says what failed.
pub fn states_are_values<N: Node<Service: SimService>>(
    n: u32,
    seed: u64,
    entries: u32,
) -> Result<usize, String> {
    let mut sim = crate::sim::Sim::<N>::new(n, seed);
    sim.run(entries).map_err(|e| e.to_string())?;
    let fresh: Vec<N> = (0..n).map(|i| N::create(&crate::algorithm::Config::new(i, n))).collect();
    let mut seen: std::collections::HashSet<N> = fresh.iter().cloned().collect();
    for i in 0..n {
        let node = sim.node(i);
        if node.clone() != *node {
            return Err(format!("w{i}'s clone differs from it: {node:?}"));
        }
        seen.insert(node.clone());
    }
    if !fresh.iter().all(|f| seen.contains(f)) {
        return Err("a fresh node is not found in a set that holds it".into());
    }
    Ok(seen.len())
}

/// The registry entry for `--worker-cmd`: node type [`External`] of the service, named
/// `label`. `like`, the algorithm the label names if any, lends its family and theory
/// when of the same service, so a Ricart-Agrawala in Python is compared with 2(N-1);
/// its workers connect to peers as its own do ([`AlgoInfo::few_peers`]), whatever its
/// service.
pub fn external(label: &str, like: Option<&'static AlgoInfo>, service: ServiceKind) -> &'static AlgoInfo {
    let base = match service {
        ServiceKind::Election => AlgoInfo::runs::<External<crate::algorithm::Election>>(),
        ServiceKind::Mutex => AlgoInfo::runs::<External<crate::algorithm::Mutex>>(),
    };
    let few_peers = like.is_some_and(|a| a.few_peers);
    let like = like.filter(|a| a.service == base.service);
    let info = AlgoInfo {
        name: Box::leak(label.to_string().into_boxed_str()),
        family: like.map_or(Family::External, |a| a.family),
        highest_wins: like.is_some_and(|a| a.highest_wins),
        timer_fires: like.and_then(|a| a.timer_fires),
        counter_bound: like.and_then(|a| a.counter_bound),
        few_peers,
        summary: "a node in another program, over JSON lines (labs/PROTOCOL.md)",
        theory: like.map_or(|_| None, |a| a.theory),
        mixed: None,
        // Its messages are whatever the program makes them: any object with a `type`.
        messages: || Ok(Vec::new()),
        ..base
    };
    // One per run or worker: leaking keeps the `&'static` every registry entry has.
    Box::leak(Box::new(info))
}

/// What a worker with these settings runs: the algorithm they name, or a program of
/// the user's standing for it (`--worker-cmd`), or among its workers
/// (`--worker-cmd-for`). `None` for a name `reg` does not know.
pub fn resolve(reg: &Registry, settings: &WorkerSettings) -> Option<NodeRun> {
    let (info, run) = match &settings.external {
        Some(ext) if ext.among_reference => {
            let reference = reg.get(&settings.algo)?;
            (reference, reference.mixed?)
        }
        Some(ext) => {
            let info = reg.external(&settings.algo, ext.service);
            (info, info.worker)
        }
        None => {
            let info = reg.get(&settings.algo)?;
            (info, info.worker)
        }
    };
    Some(NodeRun { run, service: info.service, kernel_lock: info.kernel_lock })
}

/// The worker process's entry point (`mutexlab worker`): read the setup from the
/// control link, find what it names in the process's registry, and run it
/// ([`runtime::run_worker`]).
pub fn run_worker(run_dir: &Path, cmdline_id: Option<u32>, remote_files: bool) -> anyhow::Result<()> {
    // The worker's entry point: the process's registry, as the command line installed it.
    runtime::run_worker(run_dir, cmdline_id, remote_files, |s| resolve(registry(), s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(_: &Progress) {}

    #[test]
    fn voting_carries_a_counter_bound_that_finishes_n3_k2() {
        let voting = info("voting").unwrap();
        // From k = 2 on; n = 3, k = 1 is checked whole (361,082 states).
        assert_eq!((voting.default_counter_bound(3, 1), voting.default_counter_bound(3, 2)), (None, Some(1)));
        let opts = CheckOpts {
            timer_fires: voting.timer_fires,
            counter_bound: voting.default_counter_bound(3, 2),
            max_seconds: 600.0,
            ..voting.check_opts(CheckOpts::new(3, 2))
        };
        let r = (voting.check)(&opts, &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("voting"));
        assert_eq!((r.states, r.at_counter_bound), (123_785, Some(74_064)));
        assert!(r
            .text("voting")
            .contains("counter bound: clocks, tickets and terms at most 1 (--counter-bound)"));
    }

    #[test]
    fn an_entry_adds_its_promises_and_invariants_to_the_check() {
        let ring = info("token-ring").unwrap();
        let opts = ring.check_opts(CheckOpts::new(3, 2));
        assert_eq!(opts.bypass_bound, Some(2), "N-1: the notes' 'starvation cannot occur'");
        let r = (ring.check)(&opts, &mut quiet);
        assert!(r.complete && r.violation.is_none(), "{}", r.text("token-ring"));
        for name in ["bypass bound", "one token at most"] {
            assert!(
                r.properties.iter().any(|p| p.name == name && p.held),
                "{name}: {}",
                r.text("token-ring")
            );
        }
        // A bound given outright wins over the entry's.
        let mut tighter = CheckOpts::new(3, 2);
        tighter.bypass_bound = Some(0);
        assert_eq!(ring.check_opts(tighter).bypass_bound, Some(0));
        for name in ["suzuki-kasami", "ra-token", "raymond", "neilsen-mizuno"] {
            let r = (info(name).unwrap().check)(&CheckOpts::new(3, 1), &mut quiet);
            assert!(r.violation.is_none(), "{}", r.text(name));
            assert!(r.properties.iter().any(|p| p.name == "one token at most"), "{name}");
        }
        let r = (info("centralized").unwrap().check)(&CheckOpts::new(3, 2), &mut quiet);
        assert!(r.properties.iter().any(|p| p.name == "queue holds no one twice" && p.held));
        assert!(info("bully").unwrap().check_opts(CheckOpts::new(3, 1)).highest_wins);
        assert!(info("ricart-agrawala").unwrap().check_opts(CheckOpts::new(3, 1)).bypass_bound.is_none());
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    enum Planted {
        Token,
        Request,
    }

    impl crate::algorithm::Message for Planted {
        fn kind(&self) -> &str {
            match self {
                Planted::Token => "TOKEN",
                Planted::Request => "REQUEST",
            }
        }
    }

    /// Planted bugs. A token ring whose holder passes the token on and keeps one too
    /// (`MINT`), or a coordinator (w1) that queues each request twice (`!MINT`).
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Bug<const MINT: bool> {
        me: u32,
        n: u32,
        holding: bool,
        waiting: bool,
        queue: Vec<PeerId>,
    }

    impl<const MINT: bool> Node for Bug<MINT> {
        type Msg = Planted;
        type Timer = crate::algorithm::NoTimer;
        type Service = crate::algorithm::Mutex;

        fn create(cfg: &crate::algorithm::Config) -> Self {
            // The token starts at w0; the coordinator w1 lets itself in.
            let holding = cfg.id.0 == u32::from(!MINT);
            Bug { me: cfg.id.0, n: cfg.n, holding, waiting: false, queue: Vec::new() }
        }

        fn step(
            &mut self,
            input: crate::algorithm::NodeInput<Self>,
            out: &mut crate::algorithm::NodeOut<Self>,
        ) {
            use crate::algorithm::{Input, MutexCall, MutexEvent};
            match input {
                Input::Call { call: MutexCall::Want } if self.holding => out.emit(MutexEvent::Enter),
                Input::Call { call: MutexCall::Want } => {
                    self.waiting = true;
                    if !MINT {
                        out.send(PeerId(1), Planted::Request);
                    }
                }
                // The bug: the token goes on, and stays.
                Input::Call { call: MutexCall::Done } => {
                    out.send(PeerId((self.me + 1) % self.n), Planted::Token)
                }
                Input::Message { msg: Planted::Token, .. } => {
                    self.holding = true;
                    if std::mem::take(&mut self.waiting) {
                        out.emit(MutexEvent::Enter);
                    }
                }
                // The bug: each request is queued twice.
                Input::Message { from, msg: Planted::Request } => self.queue.extend([from, from]),
                _ => {}
            }
        }
    }

    impl<const MINT: bool> Tokens for Bug<MINT> {
        fn holds(&self) -> bool {
            self.holding
        }
        fn is_token(msg: &Planted) -> bool {
            *msg == Planted::Token
        }
    }

    impl<const MINT: bool> Queue for Bug<MINT> {
        fn queued(&self) -> Vec<PeerId> {
            self.queue.clone()
        }
    }

    #[test]
    fn a_token_ring_that_mints_a_second_token_is_caught() {
        let r = check_tokens::<Bug<true>>(&CheckOpts::new(2, 1), &mut quiet);
        let v = r.violation.clone().expect("w0 keeps the token it passes");
        assert_eq!(v.property, "one token at most");
        assert_eq!(v.failure, "2 tokens: held by [w0], 1 in flight");
        assert_eq!(v.choices.len(), 2, "w0 enters and leaves: {}", r.text("minter"));
    }

    #[test]
    fn a_coordinator_that_queues_a_request_twice_is_caught() {
        let r = check_queue::<Bug<false>>(&CheckOpts::new(2, 1), &mut quiet);
        let v = r.violation.clone().expect("w1 queues w0 twice");
        assert_eq!(
            (v.property, v.failure.as_str()),
            ("queue holds no one twice", "w0 is twice in w1's queue")
        );
    }

    fn theory(name: &str, shape: Shape) -> Theory {
        (info(name).unwrap().theory)(shape).unwrap()
    }

    #[test]
    fn theory_carries_the_shape_and_serializes_without_infinity() {
        let v =
            serde_json::to_value(theory("voting", Shape { n: 5, replicas: Some(3), initiators: 0 })).unwrap();
        assert_eq!(v["replicas"], 3);
        assert!(v.get("per_entry_max").is_none(), "unbounded: left out, not null: {v}");
        assert!(v.get("quorum_size").is_none());
        assert!(v["formula"].as_str().unwrap().contains("unbounded"), "{v}");
        assert_eq!(v["per_entry_min"].as_f64().unwrap(), 9.0 - 9.0 / 5.0);
        // Without --replicas, every worker is a coordinator.
        assert_eq!(theory("voting", Shape { n: 4, replicas: None, initiators: 0 }).replicas, Some(4));

        // N = 5, three columns: w0 and w1 have quorums of 4, w2, w3 and w4 of 3.
        let t = theory("maekawa", Shape { n: 5, replicas: None, initiators: 0 });
        let k = 17.0 / 5.0;
        assert_eq!(t.quorum_size, Some(k));
        assert_eq!((t.per_entry_min, t.per_entry_max), (3.0 * (k - 1.0), 5.0 * (k - 1.0)));
        assert!(t.formula.contains("on average"), "{}", t.formula);
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["quorum_size"].as_f64(), Some(k));
        assert!(v.get("replicas").is_none());

        let v =
            serde_json::to_value(theory("lamport", Shape { n: 3, replicas: None, initiators: 0 })).unwrap();
        assert_eq!(v["per_entry_max"], 6.0, "a finite bound is kept");
    }

    #[test]
    fn every_built_in_algorithm_runs_in_the_simulator_by_name() {
        for a in registry().iter() {
            let run = (a.simulate)(3, 1, 2);
            if a.service == ServiceKind::Election {
                let report = run.unwrap_or_else(|e| panic!("{}: {e}", a.name));
                // Super-peers and those they serve name leaders of their own.
                let highest = (!a.own_leaders).then_some(crate::algorithm::PeerId(2));
                assert_eq!(report.leader.map(|l| l.0), highest, "{}", a.name);
                continue;
            }
            if a.family == Family::Baseline {
                // `none` coordinates nothing and `flock`'s lock is the kernel's, which the
                // simulator does not model: both let two in, which the simulator catches.
                let e = run.expect_err(a.name);
                assert!(matches!(e.failure, crate::sim::Failure::Overlap { .. }), "{}: {e}", a.name);
                continue;
            }
            let report = run.unwrap_or_else(|e| panic!("{}: {e}", a.name));
            assert_eq!(report.entries, 6, "{}", a.name);
        }
        assert!(info("nonsense").is_none());
    }

    #[test]
    fn every_simulator_run_walks_step_by_step_in_the_checkers_world_set_as_the_simulators() {
        // What `sim --out` writes a failing seed with: the same world, so the same path.
        for a in registry().iter().filter(|a| !a.kernel_lock) {
            for (seed, crashes) in [(3, 0), (4, 1)] {
                let sim = crate::sim::SimOpts { n: 3, seed, entries: 2, crashes, ..Default::default() };
                let choices = match (a.sim)(&sim) {
                    Ok(r) => r.choices,
                    Err(e) => e.choices.into_vec(),
                };
                let opts = CheckOpts {
                    crashes,
                    stale_timers: true,
                    timers: crate::check::TimerOrder::Earliest,
                    seed,
                    ..CheckOpts::new(3, 2)
                };
                let w = (a.walk)(&opts, &Route::Choices(choices.clone()))
                    .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", a.name));
                assert_eq!(w.choices, choices, "{}", a.name);
                if a.name == "voting" && crashes == 0 {
                    // Negative control: voting draws its back-off from its seed, so in
                    // another seed's world the same choices do other things, or cannot
                    // all be taken.
                    let other = CheckOpts { seed: seed + 100, ..opts.clone() };
                    let words = |w: &Walk| w.steps.iter().map(|s| s.words.clone()).collect::<Vec<_>>();
                    let differs =
                        (a.walk)(&other, &Route::Choices(choices)).map_or(true, |o| words(&o) != words(&w));
                    assert!(differs, "{} seed {seed}", a.name);
                }
            }
        }
    }

    /// `labs/PROTOCOL.md` with its generated parts made afresh from the code.
    fn protocol_doc_from_the_code(doc: &str) -> String {
        let table = messages_markdown(BUILTIN).unwrap();
        let source = |m: &str| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("lib/algos/{m}.rs"));
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
        };
        let rules = rules_markdown(BUILTIN, source).unwrap();
        let doc = splice_messages(doc, &table).unwrap();
        splice_rules(&doc, &rules).unwrap()
    }

    #[test]
    fn protocol_doc_lists_every_message_as_the_code_has_it() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/PROTOCOL.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let table = messages_markdown(BUILTIN).unwrap();
        // `make protocol-doc` writes the generated parts afresh.
        if std::env::var_os("UPDATE_PROTOCOL_DOC").is_some() {
            std::fs::write(&path, protocol_doc_from_the_code(&doc)).unwrap();
            return;
        }
        if let Err(e) = doc_agrees(&doc, &protocol_doc_from_the_code(&doc)) {
            panic!("labs/PROTOCOL.md disagrees with the code: {e}\n(run `make protocol-doc`)");
        }
        for a in BUILTIN.iter().filter(|a| a.mixed.is_some()) {
            assert!(table.contains(&format!("| `{}` |", a.name)), "{} is missing", a.name);
            assert!(doc.contains(&format!("<code>{}</code>", a.name)), "{}'s rules are missing", a.name);
        }
        // Negative control: the Lamport worker's `ts` for the built-in's `stamp`.
        let wrong = doc.replacen(r#"{"type":"REQUEST","stamp":u64}"#, r#"{"type":"REQUEST","ts":u64}"#, 1);
        assert_ne!(wrong, doc, "lamport's REQUEST is in the doc");
        let e = doc_messages_agree(&wrong, &table).unwrap_err();
        assert!(e.contains(r#""ts":u64"#) && e.contains(r#""stamp":u64"#), "{e}");
        let short = doc.replacen("| `lamport` |", "| `lamport-x` |", 1);
        assert!(doc_messages_agree(&short, &table).is_err());
        assert!(doc_messages_agree("no table here", &table).is_err());
        // And a rule edited in the doc instead of the module's comment.
        let edited =
            doc.replacen("only worker 0's first life makes the token", "worker 0 makes the token", 1);
        assert_ne!(edited, doc, "suzuki-kasami's rule is in the doc");
        assert!(doc_agrees(&edited, &protocol_doc_from_the_code(&edited)).is_err());
    }

    #[test]
    fn a_module_doc_becomes_markdown_a_worker_s_author_reads() {
        let src = "//! Title with `code`.\n//!\n//! Uses [`Config::incarnation`] and rn[j].\n//! # Crashes\nuse x;\n//! not doc\n";
        let a = &BUILTIN.iter().find(|a| a.name == "suzuki-kasami").unwrap();
        let md = rules_markdown([*a], |m| {
            assert_eq!(m, "suzuki_kasami");
            Ok(src.to_string())
        })
        .unwrap();
        assert!(md.starts_with("<details>\n<summary><code>suzuki-kasami</code> (<code>lib/algos/suzuki_kasami.rs</code>): Title with <code>code</code>.</summary>"), "{md}");
        assert!(md.contains("Uses `Config::incarnation` and rn[j]."), "{md}");
        assert!(md.contains("\n#### Crashes\n"), "{md}");
        assert!(!md.contains("not doc"), "{md}");
        assert!(rules_markdown([*a], |_| Ok("use x;\n".into())).is_err(), "a module without a doc");
    }

    #[test]
    fn every_built_in_algorithm_but_the_baselines_can_have_an_external_worker() {
        for a in BUILTIN {
            assert_eq!(a.mixed.is_some(), a.family != Family::Baseline, "{}", a.name);
        }
    }

    /// A toy algorithm, as a crate of its own would write it: its file (this module) and
    /// nothing else of the library's.
    mod toy {
        use std::collections::VecDeque;

        use crate::algorithm::{Algorithm, Config, Message, NoTimer, Out, PeerId};

        /// Ask w0, go when it says so, tell it when done.
        #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum Msg {
            Ask,
            Go,
            Done,
        }

        impl Message for Msg {
            fn kind(&self) -> &str {
                match self {
                    Msg::Ask => "ASK",
                    Msg::Go => "GO",
                    Msg::Done => "DONE",
                }
            }
        }

        /// w0 lets one in at a time, the others wait in its queue.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct Toy {
            me: PeerId,
            queue: VecDeque<PeerId>,
            busy: bool,
        }

        impl Toy {
            fn ask(&mut self, who: PeerId, out: &mut Out<Msg, NoTimer>) {
                if self.busy {
                    self.queue.push_back(who);
                } else {
                    self.busy = true;
                    self.grant(who, out);
                }
            }
            fn grant(&self, who: PeerId, out: &mut Out<Msg, NoTimer>) {
                if who == self.me {
                    out.enter_cs();
                } else {
                    out.send(who, Msg::Go);
                }
            }
            fn release(&mut self, out: &mut Out<Msg, NoTimer>) {
                match self.queue.pop_front() {
                    Some(next) => self.grant(next, out),
                    None => self.busy = false,
                }
            }
        }

        impl Algorithm for Toy {
            type Msg = Msg;
            type Timer = NoTimer;
            fn new(cfg: &Config) -> Self {
                Toy { me: cfg.id, queue: VecDeque::new(), busy: false }
            }
            fn on_want_cs(&mut self, out: &mut Out<Msg, NoTimer>) {
                match self.me {
                    PeerId(0) => self.ask(self.me, out),
                    _ => out.send(PeerId(0), Msg::Ask),
                }
            }
            fn on_message(&mut self, from: PeerId, msg: Msg, out: &mut Out<Msg, NoTimer>) {
                match msg {
                    Msg::Ask => self.ask(from, out),
                    Msg::Done => self.release(out),
                    Msg::Go => out.enter_cs(),
                }
            }
            fn on_cs_done(&mut self, out: &mut Out<Msg, NoTimer>) {
                match self.me {
                    PeerId(0) => self.release(out),
                    _ => out.send(PeerId(0), Msg::Done),
                }
            }
        }
    }

    /// The toy in Python, speaking its messages as a program among its workers would
    /// (`--worker-cmd-for`): `{"type":"ASK"}` and so on.
    const TOY_PY: &str = r#"
import sys, json, collections
me, q, busy = None, collections.deque(), False
def grant(w):
    return [{"type": "enter"}] if w == me else [{"type": "send", "to": w, "msg": {"type": "GO"}}]
def ask(w):
    global busy
    if busy:
        q.append(w)
        return []
    busy = True
    return grant(w)
def release():
    global busy
    if q:
        return grant(q.popleft())
    busy = False
    return []
def to0(kind):
    return [{"type": "send", "to": 0, "msg": {"type": kind}}]
for line in sys.stdin:
    m = json.loads(line)
    t, out = m["type"], []
    if t == "init":
        me = m["id"]
        print(json.dumps({"type": "init_ok"}), flush=True)
        continue
    if t == "call" and m["call"] == "want":
        out = ask(me) if me == 0 else to0("ASK")
    elif t == "call":
        out = release() if me == 0 else to0("DONE")
    elif t == "message":
        k = m["msg"]["type"]
        out = ask(m["from"]) if k == "ASK" else release() if k == "DONE" else [{"type": "enter"}]
    print(json.dumps(out), flush=True)
"#;

    #[test]
    fn a_toy_algorithm_is_its_file_and_one_registry_line() {
        let reg = Registry::builtin().with(AlgoInfo {
            name: "toy",
            family: Family::Permission,
            summary: "w0 lets one in at a time",
            ..AlgoInfo::runs::<toy::Toy>()
        });
        let a = reg.get("toy").expect("registered");
        assert_eq!(a.service, ServiceKind::Mutex);
        // The simulator, the state check and the mixed worker all come with the entry.
        assert_eq!((a.simulate)(3, 1, 2).unwrap_or_else(|e| panic!("{e}")).entries, 6);
        assert!((a.states)(3, 1, 2).unwrap() >= 3);
        assert!(a.mixed.is_some(), "a program may stand among its workers");
        // What that mixed worker drives: a program speaking the toy's own messages, here
        // every node of a simulated run.
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("toy.py");
        std::fs::write(&script, TOY_PY).unwrap();
        let program = crate::algorithm::Spawn {
            command: format!("python3 {}", script.display()),
            timeout: crate::external::DEFAULT_TIMEOUT,
        };
        type Mixed = External<crate::algorithm::Mutex, Ref<toy::Msg>>;
        let report = crate::sim::Sim::<Mixed>::with_config(3, 1, |c| c.program = Some(program.clone()))
            .run(2)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(report.entries, 6);
        assert_eq!(report.count("ASK"), 4, "w1 and w2 ask twice each");
    }

    #[test]
    fn a_registry_given_resolves_names_the_process_s_registry_does_not_know() {
        let reg = Registry::builtin().with(AlgoInfo {
            name: "toy",
            family: Family::Permission,
            summary: "w0 lets one in at a time",
            few_peers: true,
            ..AlgoInfo::runs::<toy::Toy>()
        });
        // The process's registry is the built-in one: it knows no toy.
        assert!(info("toy").is_none() && lookup("toy").is_err());
        assert_eq!(reg.lookup("Toy").map(|a| a.name), Ok("toy"), "in any case");
        // A program labelled `toy` is lent the toy's family and its way of connecting, by
        // the registry given; the process's lends nothing.
        let lent = reg.external("toy", ServiceKind::Mutex);
        assert_eq!((lent.name, lent.family, lent.few_peers), ("toy", Family::Permission, true));
        let unlent = registry().external("toy", ServiceKind::Mutex);
        assert_eq!((unlent.family, unlent.few_peers), (Family::External, false));
        // Of another service it lends its connections only (as a label always has).
        let other = reg.external("toy", ServiceKind::Election);
        assert_eq!((other.family, other.few_peers), (Family::External, true));
    }

    #[test]
    fn an_unknown_name_is_one_line_with_the_nearest_name_and_every_name() {
        let reg = Registry::builtin();
        let e = reg.lookup("lamprot").unwrap_err();
        assert_eq!(e.nearest, Some("lamport"));
        let valid = reg.names();
        assert_eq!(
            e.to_string(),
            format!("unknown algorithm \"lamprot\"; did you mean \"lamport\"? (valid: {valid})")
        );
        // Negative control: nothing near, no suggestion.
        let e = reg.lookup("zzzzzzzzzz").unwrap_err();
        assert_eq!(e.nearest, None);
        assert_eq!(e.to_string(), format!("unknown algorithm \"zzzzzzzzzz\" (valid: {valid})"));
        assert_eq!(String::from(e.clone()), e.to_string());
    }

    #[test]
    fn every_built_in_state_is_clone_eq_and_hash() {
        // Every type the built-in registry names but the baselines' (a unit struct,
        // which `none` and `flock` share, and which cannot pass a simulated run).
        let counts: Vec<usize> = BUILTIN
            .iter()
            .filter(|a| a.family != Family::Baseline)
            .map(|a| (a.states)(3, 1, 2).unwrap_or_else(|e| panic!("{}: {e}", a.name)))
            .collect();
        assert_eq!(counts.len(), BUILTIN.len() - 2);
        // Nodes of different ids differ (they know their id), so a set of three fresh
        // nodes and their states after a run has at least three members.
        assert!(counts.iter().all(|&c| c >= 3), "{counts:?}");
    }

    /// Worker 0's trace file in `dir`, each line with its time taken out (two writers
    /// record the same events at different times).
    fn timeless(dir: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(dir.join(crate::trace::file_name(0))).unwrap();
        text.lines()
            .map(|l| l.split(' ').filter(|f| !f.starts_with("t=")).collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn a_dumped_ring_reads_a_program_s_messages_as_the_trace_file_does() {
        use crate::external::Json;
        use crate::trace::Writer;
        use serde_json::json;
        // A whole cluster of programs (`--worker-cmd`): any JSON object with a type.
        let msgs = [
            Json(json!({"type": "REQUEST", "ticket": 4, "who": "a b", "n": -3, "x": 1.5, "u": "é\n\"q\""})),
            Json(json!({"type": "REPLY"})),
            Json(json!({"type": "STATE", "nested": {"list": [1, null, true], "empty": {}}})),
        ];
        let entry = registry().external("my-ra", ServiceKind::Mutex);
        // A program among Ricart-Agrawala's workers (`--worker-cmd-for`): the
        // reference's messages, which it speaks as `Ref`, decoded by the reference's entry.
        let reference = [Ref(ricart_agrawala::Msg::Request { ticket: 9 }), Ref(ricart_agrawala::Msg::Reply)];
        let ra = info("ricart-agrawala").unwrap();
        fn both<M: crate::algorithm::Message>(msgs: &[M], decode: crate::trace::Decode) {
            let (file, ring) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let mut writers = [
                Writer::open(file.path(), 0, 0, 2, "x").unwrap(),
                Writer::ring(ring.path(), 0, 0, crate::flight::RING_BYTES).unwrap(),
            ];
            for w in &mut writers {
                for (i, m) in msgs.iter().enumerate() {
                    let lc = i as u64;
                    w.send(lc, 1, m);
                    w.recv(lc, 1, 2, lc, m);
                    w.drop(lc, 1, m, "partition");
                }
            }
            drop(writers);
            assert_eq!(crate::trace::from_rings(ring.path(), 2, "x", decode), Vec::<String>::new());
            let (traced, dumped) = (timeless(file.path()), timeless(ring.path()));
            assert_eq!(traced.len(), 1 + 3 * msgs.len());
            assert_eq!(dumped, traced);
        }
        both(&msgs, entry.body);
        both(&reference, ra.body);
    }
}
