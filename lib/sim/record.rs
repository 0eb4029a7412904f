//! A run of the world written as a run directory, in the files a real run leaves, so
//! that the tools made for real runs read it: `mutexlab audit DIR` judges it from its
//! resource or leader file, `mutexlab report DIR` draws it, `mutexlab trace DIR` lists
//! its messages. `mutexlab check --out DIR` writes its counterexample so.
//!
//! A [`Recorder`] takes the world's events ([`WorldEvent`]) as a replay makes them and
//! keeps the lines each file gets; [`RunFiles::write`] writes them:
//! - `trace-w<ID>.log`, one per node, in the runtime's trace format ([`crate::trace`]):
//!   SEND, RECV, DROP and APP lines with Lamport clocks kept as a worker keeps them (a
//!   send ticks, a receive takes the larger clock plus one, an entry ticks). SEND, RECV
//!   and DROP lines end with `body=`, the message's contents as JSON, exactly as a
//!   worker's trace has them ([`trace::push_body`]); readers ignore fields after the
//!   documented ones, so `mutexlab trace` shows types only and the file has the contents.
//! - `resource.log` (mutual exclusion, [`crate::resource`]): WANT, ENTER, EXIT as the
//!   runtime's workload writes them: entry numbers from 1 that go on across lives, the
//!   fence the holder's clock at entry, the counter read and written. A restarted node
//!   takes its clock up from the highest fence in the file, as a restarted worker does.
//! - `leaders.log` (elections): the `START` line, then a LEADER record for every leader
//!   a node accepts.
//! - `faults.log`, when a node crashed or the run was cut short: a `kill` line for each
//!   crash (dead at once), a `restart` line for each restart, and a `teardown` line when
//!   the replay stopped at a violation with sections or requests still open, so that the
//!   auditor lists them as cut short, not as violations. A replay that ends because
//!   nothing more can happen (a deadlock) has no teardown: its unserved requests are the
//!   finding.
//!
//! Time: no file holds the world's virtual time (only timers move it, so most events
//! would share one instant). Every record's `t` is logical instead: step `k` of the
//! replay (0 being the start) is at `k` ms, and its events follow each other a
//! microsecond apart. The report's time axis, in ms from the first event, counts steps.
//! The event that broke the promise (the second ENTER of an overlap) is written: the
//! real file would have it.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::path::Path;

use super::event::{AppAct, Lost, WorldEvent};
use crate::algorithm::{Message, ServiceKind};
use crate::control::{FAULT_LOG, LEADERS_FILE, RESOURCE_FILE};
use crate::resource::{self, Fence, Record};
use crate::trace::{self, Event, EventKind};

/// Nanoseconds between two steps: a step is a millisecond.
const STEP_NS: u64 = 1_000_000;
/// Nanoseconds between two events of one step.
const EVENT_NS: u64 = 1_000;

/// What a node's worker would know of itself.
#[derive(Clone, Debug, Default)]
struct Node {
    inc: u32,
    /// Its Lamport clock.
    lc: u64,
    /// Entries completed, over all its lives.
    entries: u64,
    /// Inside: its fence and the counter it read.
    inside: Option<(Fence, u64)>,
}

/// Turns the world's events into the lines of a run directory's files (see the module
/// doc). Feed it a replay's events in order, calling [`Recorder::step`] before each
/// choice, then [`Recorder::finish`].
#[derive(Clone, Debug)]
pub struct Recorder {
    n: usize,
    service: ServiceKind,
    step: u64,
    /// Events recorded in this step.
    seq: u64,
    nodes: Vec<Node>,
    /// Messages in flight, `from * n + to`: the sender's incarnation and clock.
    links: Vec<VecDeque<(u32, u64)>>,
    /// The counter as the last EXIT left it.
    committed: u64,
    /// The highest fence clock written.
    highest: u64,
    traces: Vec<String>,
    resource: String,
    leaders: String,
    faults: String,
}

impl Recorder {
    /// A recorder for `n` nodes of a `service`, at step 0 (the start).
    pub fn new(n: u32, service: ServiceKind) -> Recorder {
        let n = n as usize;
        Recorder {
            n,
            service,
            step: 0,
            seq: 0,
            nodes: vec![Node::default(); n],
            links: vec![VecDeque::new(); n * n],
            committed: 0,
            highest: 0,
            traces: vec![String::new(); n],
            resource: String::new(),
            leaders: String::new(),
            faults: String::new(),
        }
    }

    /// The next step begins.
    pub fn step(&mut self) {
        self.step += 1;
        self.seq = 0;
    }

    /// The time of the next record (see the module doc).
    fn t(&mut self) -> u64 {
        // A step with more events than a millisecond holds keeps the order in each file.
        let t = self.step * STEP_NS + self.seq.min(STEP_NS / EVENT_NS - 1) * EVENT_NS;
        self.seq += 1;
        t
    }

    /// A trace line of node `w`, its current life.
    fn trace(&mut self, w: usize, lc: u64, kind: EventKind) -> Event {
        let (t, inc) = (self.t(), self.nodes[w].inc);
        Event { w: w as u32, inc, t, lc, kind }
    }

    /// A SEND, RECV or DROP line of node `w`, with its message's contents.
    fn line<M: Message>(&mut self, w: usize, e: &Event, msg: &M) {
        let out = &mut self.traces[w];
        let _ = write!(out, "{e}");
        trace::push_body(out, msg);
        out.push('\n');
    }

    /// Record one event of the world.
    pub fn event<M: Message, T>(&mut self, event: &WorldEvent<'_, M, T>) {
        match *event {
            WorldEvent::Sent { from, to, msg } => {
                let (i, j) = (from.index(), to.index());
                self.nodes[i].lc += 1;
                let lc = self.nodes[i].lc;
                let e = self.trace(i, lc, EventKind::Send { to: to.0, msg: msg.kind().to_string() });
                self.line(i, &e, msg);
                self.links[i * self.n + j].push_back((self.nodes[i].inc, lc));
            }
            WorldEvent::Lost { from, to, msg, why } => {
                let (i, j) = (from.index(), to.index());
                let link = &mut self.links[i * self.n + j];
                let taken = match why {
                    Lost::ReceiverDead => link.pop_back(),
                    Lost::Network { index } => link.remove(index as usize),
                    Lost::ReceiverCrashed | Lost::SenderRestarted => link.pop_front(),
                };
                let Some((inc, lc)) = taken else { return };
                // The runtime's words: `drop` is the network's loss (as `--drop`).
                let why = match why {
                    Lost::ReceiverDead => "down",
                    Lost::Network { .. } => "drop",
                    Lost::ReceiverCrashed | Lost::SenderRestarted => "peer-down",
                };
                let kind = EventKind::Drop { to: to.0, msg: msg.kind().to_string(), why: why.into() };
                let t = self.t();
                self.line(i, &Event { w: from.0, inc, t, lc, kind }, msg);
            }
            WorldEvent::Delivered { from, to, index, msg } => {
                let (i, j) = (from.index(), to.index());
                let Some((from_inc, sent_lc)) = self.links[i * self.n + j].remove(index as usize) else {
                    return;
                };
                let node = &mut self.nodes[j];
                node.lc = node.lc.max(sent_lc) + 1;
                let (lc, kind) = (node.lc, msg.kind().to_string());
                let e = self.trace(j, lc, EventKind::Recv { from: from.0, from_inc, sent_lc, msg: kind });
                self.line(j, &e, msg);
            }
            WorldEvent::App { node, act } | WorldEvent::Broke { node, act } => self.app(node.index(), act),
            WorldEvent::Crashes { node } => {
                let w = node.index();
                self.nodes[w].inside = None;
                let (t, inc) = (self.t(), self.nodes[w].inc);
                let ms = t as f64 / 1e6;
                let step = self.step;
                let _ = writeln!(
                    self.faults,
                    "t={t} at={ms:.3}ms kill w={w} inc={inc} dead={t} # crashes at step {step}"
                );
            }
            WorldEvent::Restarts { node, incarnation } => {
                let w = node.index();
                let lc = if self.service == ServiceKind::Mutex { self.highest } else { 0 };
                let life = &mut self.nodes[w];
                (life.inc, life.lc) = (incarnation, lc);
                let t = self.t();
                let (ms, step) = (t as f64 / 1e6, self.step);
                let _ = writeln!(
                    self.faults,
                    "t={t} at={ms:.3}ms restart w={w} inc={incarnation} # restarts at step {step}"
                );
            }
            WorldEvent::HearsDown { .. } | WorldEvent::HearsUp { .. } | WorldEvent::TimerFires { .. } => {}
        }
    }

    /// What application `w` did or was told, in the resource or leader file and the
    /// trace, both at one time.
    fn app(&mut self, w: usize, act: AppAct) {
        if act == AppAct::CallsElection {
            return; // no file has a line for it
        }
        let (id, t) = (w as u32, self.t());
        let e = self.nodes[w].entries + 1;
        let (ev, leader) = match act {
            AppAct::Wants => {
                let _ = writeln!(self.resource, "{}", Record::Want { w: id, e, t });
                ("want", None)
            }
            AppAct::Enters => {
                let node = &mut self.nodes[w];
                node.lc += 1;
                let fence = Fence { clock: node.lc, id };
                node.inside = Some((fence, self.committed));
                self.highest = self.highest.max(fence.clock);
                let _ = writeln!(self.resource, "{}", Record::Enter { w: id, e, fence, t });
                ("enter", None)
            }
            AppAct::Leaves => {
                let Some((fence, read)) = self.nodes[w].inside.take() else { return };
                let value = read + 1;
                let _ = writeln!(self.resource, "{}", Record::Exit { w: id, e, fence, read, value, t });
                self.committed = value;
                self.nodes[w].entries += 1;
                ("leave", None)
            }
            AppAct::CallsElection => return,
            AppAct::AcceptsLeader { leader, term } => {
                let inc = self.nodes[w].inc;
                let leader = leader.0;
                let _ = writeln!(self.leaders, "LEADER w={id} inc={inc} leader={leader} term={term} t={t}");
                ("leader", Some((leader, term)))
            }
        };
        let kind = EventKind::App { ev: ev.into(), leader: leader.map(|l| l.0), term: leader.map(|l| l.1) };
        let (lc, inc) = (self.nodes[w].lc, self.nodes[w].inc);
        let _ = writeln!(self.traces[w], "{}", Event { w: id, inc, t, lc, kind });
    }

    /// The replay is over: `cut_short` says why, when it stopped at a violation before
    /// the run could end (sections and requests open then are cut short, not unserved);
    /// `None` when nothing more could happen.
    pub fn finish(mut self, cut_short: Option<&str>) -> RunFiles {
        if let Some(why) = cut_short {
            self.step();
            let t = self.t();
            let why = why.lines().next().unwrap_or_default();
            let ms = t as f64 / 1e6;
            // The window covers the whole replay: whatever is open was cut by its end.
            let _ = writeln!(self.faults, "t={t} at={ms:.3}ms teardown ended={t} window={t} # {why}");
        }
        RunFiles {
            n: self.n as u32,
            service: self.service,
            traces: self.traces,
            resource: self.resource,
            leaders: self.leaders,
            faults: self.faults,
        }
    }
}

/// The files of a recorded run, in memory (a counterexample's are a few kilobytes), to
/// be written with [`RunFiles::write`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFiles {
    n: u32,
    service: ServiceKind,
    /// Each node's trace lines, without the header.
    traces: Vec<String>,
    resource: String,
    leaders: String,
    faults: String,
}

impl RunFiles {
    /// Each file's name and whole contents, headers included, naming `algo`.
    pub fn files(&self, algo: &str) -> Vec<(String, String)> {
        let n = self.n;
        let mut files = Vec::new();
        for (w, lines) in self.traces.iter().enumerate() {
            let head = format!("{} w={w} workers={n} algo={algo}\n", trace::HEADER);
            files.push((trace::file_name(w as u32), head + lines));
        }
        match self.service {
            ServiceKind::Mutex => {
                let head = format!("{} algo={algo} workers={n}\n", resource::HEADER);
                files.push((RESOURCE_FILE.to_string(), head + &self.resource));
            }
            ServiceKind::Election => {
                // The supervisor's header and START line (`crate::audit::leaders`).
                let head = format!("# mutexlab leaders v1 algo={algo} workers={n}\nSTART t=0\n");
                files.push((LEADERS_FILE.to_string(), head + &self.leaders));
            }
        }
        if !self.faults.is_empty() {
            files.push((FAULT_LOG.to_string(), self.faults.clone()));
        }
        files
    }

    /// Write the files into `dir` (made if need be), each a new file: nothing that is
    /// there already is overwritten. Returns the names written.
    pub fn write(&self, dir: &Path, algo: &str) -> io::Result<Vec<String>> {
        std::fs::create_dir_all(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display())))?;
        let mut names = Vec::new();
        for (name, text) in self.files(algo) {
            let path = dir.join(&name);
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|mut f| f.write_all(text.as_bytes()));
            written.map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))?;
            names.push(name);
        }
        Ok(names)
    }
}

/// Whether `dir` can take a run's files: absent (it will be made), or an empty
/// directory. The error is one line, as `run --run-dir` words it.
pub fn new_or_empty(dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot read {shown}: {e}")),
        Ok(m) if !m.is_dir() => Err(format!("{shown} is not a directory; choose a new or empty directory")),
        Ok(_) => match std::fs::read_dir(dir).map(|mut entries| entries.next().is_none()) {
            Err(e) => Err(format!("cannot read {shown}: {e}")),
            Ok(false) => Err(format!("{shown} is not empty; choose a new or empty directory")),
            Ok(true) => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::algorithm::{
        Algorithm, Config, Election, ElectionCall, ElectionEvent, Input, NodeInput, NodeOut, Out, PeerId,
    };
    use crate::audit::{self, FaultLog};
    use crate::check::{check, CheckOpts};
    use crate::sim::{Choice, World};

    /// The files of `files`, written to a fresh directory.
    fn written(files: &RunFiles, algo: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        files.write(dir.path(), algo).unwrap();
        dir
    }

    fn kinds(v: &[audit::Violation]) -> Vec<&str> {
        v.iter().map(|v| v.kind).collect()
    }

    #[test]
    fn an_overlap_found_by_the_checker_is_one_the_auditor_finds_in_the_file() {
        let r = check::<crate::algos::lamport::Lamport>(
            ServiceKind::Mutex,
            &CheckOpts { non_fifo: true, ..CheckOpts::new(2, 1) },
            &mut |_| {},
        );
        let v = r.violation.expect("Lamport needs FIFO channels");
        let dir = written(&v.run, "lamport");
        let faults = FaultLog::load(&dir.path().join(FAULT_LOG)).unwrap();
        assert!(faults.teardown.is_some(), "the replay stopped at the violation");
        let a = audit::audit_file(&dir.path().join(RESOURCE_FILE), &faults).unwrap();
        assert_eq!(kinds(&a.violations), ["overlap"], "{:?}", a.violations);
        assert_eq!(a.cut_short.len(), 2, "both sections were open when the replay stopped");
        // The trace reads whole, each send paired with its receipt by the reader, and the
        // SEND lines carry the contents the checker printed.
        let t = trace::load(dir.path()).unwrap();
        t.check().unwrap();
        let arrows = t.arrows();
        assert_eq!(arrows.len(), 3, "{arrows:?}");
        assert_eq!(arrows.iter().filter(|a| a.received.is_some()).count(), 2, "the first REQUEST overtaken");
        let w0 = std::fs::read_to_string(dir.path().join(trace::file_name(0))).unwrap();
        assert!(w0.contains(r#" type=REQUEST body={"type":"REQUEST","stamp":1}"#), "{w0}");
        let steps = v.steps.concat().join("\n");
        assert!(steps.contains(r#"REQUEST {"stamp":1}"#), "{steps}");
    }

    #[test]
    fn a_crash_and_a_restart_are_in_the_fault_log_and_a_lost_message_is_a_drop() {
        use crate::algos::centralized::Centralized;
        // w0 asks the coordinator w1, which crashes with the REQUEST in flight, then comes
        // back; w0 asks again and is let in.
        let configs = (0..2).map(|i| Config::new(i, 2)).collect();
        let mut world = World::<Centralized>::new(configs, 1).crashes(1, |_| true);
        let mut rec = Recorder::new(2, ServiceKind::Mutex);
        world.start(&mut |_, e| rec.event(e)).unwrap();
        let mut lines = Vec::new();
        for c in [Choice::Call { node: 0, index: 0 }, Choice::Crash { node: 1 }, Choice::Restart { node: 1 }]
        {
            rec.step();
            world
                .apply(c, &mut |_, e| {
                    rec.event(e);
                    lines.push(e.to_string());
                })
                .unwrap();
        }
        while !world.done() {
            let c = world.enabled()[0];
            rec.step();
            world.apply(c, &mut |_, e| rec.event(e)).unwrap();
        }
        let files = rec.finish(None);
        let dir = written(&files, "centralized");
        let log = std::fs::read_to_string(dir.path().join(FAULT_LOG)).unwrap();
        assert!(log.contains(" kill w=1 inc=0 dead="), "{log}");
        assert!(log.contains(" restart w=1 inc=1 "), "{log}");
        assert!(!log.contains("teardown"), "the run ended by itself: {log}");
        let faults = FaultLog::load(&dir.path().join(FAULT_LOG)).unwrap();
        assert_eq!((faults.crashes.len(), faults.restarts.len()), (1, 1), "{log}");
        let a = audit::audit_file(&dir.path().join(RESOURCE_FILE), &faults).unwrap();
        assert!(a.ok, "{:?}", a.violations);
        assert_eq!(a.entries, 2, "each node entered once");
        let t = trace::load(dir.path()).unwrap();
        t.check().unwrap();
        let dropped: Vec<_> = t.arrows().into_iter().filter(|a| a.dropped.is_some()).collect();
        assert_eq!(dropped.len(), 1, "the REQUEST lost with its receiver: {:?}", t.arrows());
        assert_eq!(dropped[0].dropped.as_deref(), Some("peer-down"));
        assert!(t.events.iter().any(|e| e.w == 1 && e.inc == 1), "the new life's lines are its own");
        assert!(lines.iter().any(|l| l == "w0 -> w1: REQUEST is lost (its receiver crashed)"), "{lines:?}");
    }

    /// Never lets anyone in: every request waits for ever.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Stuck;

    impl Algorithm for Stuck {
        type Msg = crate::algos::baseline::Msg;
        type Timer = crate::algorithm::NoTimer;
        fn new(_: &Config) -> Self {
            Stuck
        }
        fn on_want_cs(&mut self, _: &mut Out<Self::Msg, Self::Timer>) {}
        fn on_message(&mut self, _: PeerId, msg: Self::Msg, _: &mut Out<Self::Msg, Self::Timer>) {
            match msg {}
        }
        fn on_cs_done(&mut self, _: &mut Out<Self::Msg, Self::Timer>) {}
    }

    #[test]
    fn a_deadlock_ends_the_run_and_its_requests_are_unserved_not_cut_short() {
        let r = check::<Stuck>(ServiceKind::Mutex, &CheckOpts::new(2, 1), &mut |_| {});
        let v = r.violation.expect("nobody is ever let in");
        assert_eq!(v.property, "no deadlock");
        let dir = written(&v.run, "stuck");
        assert!(!dir.path().join(FAULT_LOG).exists(), "no teardown: nothing more could happen");
        let a = audit::audit_file(&dir.path().join(RESOURCE_FILE), &FaultLog::default()).unwrap();
        assert_eq!(kinds(&a.violations), ["unserved", "unserved"], "{:?}", a.violations);
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    struct Claim;

    impl crate::algorithm::Message for Claim {
        fn kind(&self) -> &str {
            "CLAIM"
        }
    }

    /// Each initiator declares itself leader of term 1 and tells the others, who accept.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Selfish(PeerId);

    impl crate::algorithm::Node for Selfish {
        type Msg = Claim;
        type Timer = crate::algorithm::NoTimer;
        type Service = Election;

        fn create(cfg: &Config) -> Self {
            Selfish(cfg.id)
        }

        fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
            match input {
                Input::Call { call: ElectionCall::Elect } => {
                    out.emit(ElectionEvent::Leader { id: self.0, term: 1 });
                    out.broadcast(Claim);
                }
                Input::Message { from, .. } => out.emit(ElectionEvent::Leader { id: from, term: 1 }),
                _ => {}
            }
        }
    }

    #[test]
    fn a_split_brain_is_in_the_leader_file_and_its_auditor_finds_it() {
        let r = check::<Selfish>(ServiceKind::Election, &CheckOpts::new(2, 1), &mut |_| {});
        let v = r.violation.expect("two leaders for term 1");
        assert_eq!(v.property, "one leader per term");
        let dir = written(&v.run, "selfish");
        let leaders = std::fs::read_to_string(dir.path().join(LEADERS_FILE)).unwrap();
        assert!(
            leaders.starts_with(&format!("{} algo=selfish workers=2\nSTART t=0\n", audit::LEADERS_HEADER))
        );
        let faults = FaultLog::load(&dir.path().join(FAULT_LOG)).unwrap();
        let a = audit::audit_leaders_file(&dir.path().join(LEADERS_FILE), &faults, audit::Rules::default())
            .unwrap();
        assert!(kinds(&a.violations).contains(&"split-brain"), "{:?}\n{leaders}", a.violations);
        trace::check(dir.path()).unwrap();
    }

    #[test]
    fn only_a_new_or_empty_directory_takes_the_files_and_nothing_is_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let (new, file) = (tmp.path().join("new"), tmp.path().join("file"));
        std::fs::write(&file, "x").unwrap();
        assert_eq!(new_or_empty(&new), Ok(()));
        assert!(new_or_empty(tmp.path())
            .unwrap_err()
            .ends_with("is not empty; choose a new or empty directory"));
        assert!(new_or_empty(&file)
            .unwrap_err()
            .ends_with("is not a directory; choose a new or empty directory"));
        std::fs::create_dir(&new).unwrap();
        assert_eq!(new_or_empty(&new), Ok(()));
        let r = check::<crate::algos::baseline::Immediate>(
            ServiceKind::Mutex,
            &CheckOpts::new(2, 1),
            &mut |_| {},
        );
        let files = r.violation.unwrap().run;
        let names = files.write(&new, "none").unwrap();
        assert_eq!(names, ["trace-w0.log", "trace-w1.log", RESOURCE_FILE, FAULT_LOG]);
        assert!(new_or_empty(&new).unwrap_err().ends_with("is not empty; choose a new or empty directory"));
        let e = files.write(&new, "none").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
    }
}
