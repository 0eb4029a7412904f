//! A simulated or checked run's files (`sim::record`) read by the auditor: what the
//! checker found, the auditor finds in the file. Here, above both, since the simulator
//! knows nothing of the auditor.

use serde::{Deserialize, Serialize};

use mutexlab_sim::record::*;

use crate::algorithm::ServiceKind;
use crate::algorithm::{
    Algorithm, Config, Election, ElectionCall, ElectionEvent, Input, NodeInput, NodeOut, Out, PeerId,
};
use crate::audit::{self, FaultLog};
use crate::check::{check, CheckOpts};
use crate::control::{FAULT_LOG, LEADERS_FILE, RESOURCE_FILE};
use crate::sim::{Choice, World};
use crate::trace;

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
    for c in [Choice::Call { node: 0, index: 0 }, Choice::Crash { node: 1 }, Choice::Restart { node: 1 }] {
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
    let r = check::<Stuck>(&CheckOpts::new(2, 1), &mut |_| {});
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
    let r = check::<Selfish>(&CheckOpts::new(2, 1), &mut |_| {});
    let v = r.violation.expect("two leaders for term 1");
    assert_eq!(v.property, "one leader per term");
    let dir = written(&v.run, "selfish");
    let leaders = std::fs::read_to_string(dir.path().join(LEADERS_FILE)).unwrap();
    assert!(leaders.starts_with(&format!("{} algo=selfish workers=2\nSTART t=0\n", audit::LEADERS_HEADER)));
    let faults = FaultLog::load(&dir.path().join(FAULT_LOG)).unwrap();
    let a =
        audit::audit_leaders_file(&dir.path().join(LEADERS_FILE), &faults, audit::Rules::default()).unwrap();
    assert!(kinds(&a.violations).contains(&"split-brain"), "{:?}\n{leaders}", a.violations);
    trace::check(dir.path()).unwrap();
}

#[test]
fn only_a_new_or_empty_directory_takes_the_files_and_nothing_is_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let (new, file) = (tmp.path().join("new"), tmp.path().join("file"));
    std::fs::write(&file, "x").unwrap();
    assert_eq!(new_or_empty(&new), Ok(()));
    assert!(new_or_empty(tmp.path()).unwrap_err().ends_with("is not empty; choose a new or empty directory"));
    assert!(new_or_empty(&file)
        .unwrap_err()
        .ends_with("is not a directory; choose a new or empty directory"));
    std::fs::create_dir(&new).unwrap();
    assert_eq!(new_or_empty(&new), Ok(()));
    let r = check::<crate::algos::baseline::Immediate>(&CheckOpts::new(2, 1), &mut |_| {});
    let files = r.violation.unwrap().run;
    let names = files.write(&new, "none").unwrap();
    assert_eq!(names, ["trace-w0.log", "trace-w1.log", RESOURCE_FILE, FAULT_LOG]);
    assert!(new_or_empty(&new).unwrap_err().ends_with("is not empty; choose a new or empty directory"));
    let e = files.write(&new, "none").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
}
