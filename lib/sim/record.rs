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
