//! The worker runtime through the real binary, with the test playing the supervisor on
//! the control link and, where needed, a peer on the mesh: bad callers, descriptors
//! running out, dials that fail, both sides dialing, garbage frames and SIGTERM.
//!
//! Every wait is on an event (a line on the worker's stderr, a frame, a record in the
//! file, a process state) with a generous deadline; every process started is reaped.

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::*;
use mutexlab::algorithm::PeerId;
use mutexlab::algos::centralized::Msg;
use mutexlab::audit::{self, Crash};
use mutexlab::control::{self, PendingState, ToSupervisor, ToWorker, WorkerStats};
use mutexlab::resource::{self, Record};
use mutexlab::runtime::{max_pending, HELLO_DEADLINE};
use mutexlab::wire::{self, Envelope, Hello};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// A run directory with a resource file and a control socket, as the supervisor makes.
struct Lab {
    dir: tempfile::TempDir,
    control: UnixListener,
    algo: &'static str,
    n: u32,
}

impl Lab {
    fn new(algo: &'static str, n: u32) -> Lab {
        let dir = tempfile::Builder::new().prefix("mlr-").tempdir().unwrap();
        resource::create(&dir.path().join(control::RESOURCE_FILE), algo, n).unwrap();
        let control = UnixListener::bind(dir.path().join(control::CONTROL_SOCKET)).unwrap();
        control.set_nonblocking(true).unwrap();
        Lab { dir, control, algo, n }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Start worker `id` (incarnation `inc`) with these extra worker flags, optionally
    /// under `ulimit -n`, and wait for its Ready.
    fn spawn(&self, id: u32, inc: u32, flags: &[&str], nofile: Option<u32>) -> Worker {
        let exe = mutexlab().get_program().to_owned();
        let stderr = self.path(&format!("w{id}.{inc}.stderr"));
        let mut cmd = match nofile {
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(format!("ulimit -n {n} && exec \"$0\" \"$@\"")).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.arg("worker")
            .args(["--id", &id.to_string(), "--workers", &self.n.to_string(), "--algo", self.algo])
            .arg("--run-dir")
            .arg(self.dir.path())
            .args(["--incarnation", &inc.to_string()])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&stderr).unwrap());
        let child = cmd.spawn().expect("spawn a worker");
        let mut w = Worker { child, control: None, stderr, reaped: false };
        let deadline = Instant::now() + PATIENCE;
        let control = loop {
            match self.control.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Some(st) = w.child.try_wait().unwrap() {
                        w.reaped = true;
                        panic!("worker exited before connecting ({st}):\n{}", w.stderr());
                    }
                    assert!(Instant::now() < deadline, "no control connection");
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        control.set_nonblocking(false).unwrap();
        control.set_read_timeout(Some(PATIENCE)).unwrap();
        w.control = Some(control);
        match w.recv() {
            ToSupervisor::Ready { id: got, incarnation, .. } => {
                assert_eq!((got, incarnation), (PeerId(id), inc));
            }
            other => panic!("expected Ready, got {other:?}"),
        }
        w
    }

    fn socket(&self, id: u32, inc: u32) -> PathBuf {
        self.path(&control::worker_socket(PeerId(id), inc))
    }

    fn records(&self) -> Vec<Record> {
        let text = std::fs::read_to_string(self.path(control::RESOURCE_FILE)).unwrap();
        text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).map(|l| l.parse().unwrap()).collect()
    }
}

/// A worker process under test; killed and reaped on drop if still there.
struct Worker {
    child: Child,
    control: Option<UnixStream>,
    stderr: PathBuf,
    reaped: bool,
}

impl Worker {
    fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    fn send(&mut self, msg: &ToWorker) {
        let mut buf = Vec::new();
        wire::encode(&mut buf, msg);
        self.control.as_mut().unwrap().write_all(&buf).unwrap();
    }

    fn recv(&mut self) -> ToSupervisor {
        match wire::read_blocking::<ToSupervisor, _>(self.control.as_mut().unwrap()) {
            Ok(Some(m)) => m,
            other => panic!("control link: {other:?}\nworker stderr:\n{}", self.stderr()),
        }
    }

    fn start(&mut self, dial: &[(u32, &str)]) {
        let dial = dial.iter().map(|(p, s)| (PeerId(*p), s.to_string())).collect();
        self.send(&ToWorker::Start { dial });
    }

    fn query(&mut self) -> PendingState {
        self.send(&ToWorker::Query);
        loop {
            match self.recv() {
                ToSupervisor::Pending(p) => return p,
                ToSupervisor::Done { .. } => {}
                other => panic!("expected Pending, got {other:?}"),
            }
        }
    }

    /// Ask until `cond` holds for the worker's answer.
    fn query_until(&mut self, what: &str, cond: impl Fn(&PendingState) -> bool) -> PendingState {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let p = self.query();
            if cond(&p) {
                return p;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; last answer {p:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Finish the run: the worker answers with its statistics and exits 0.
    fn finish(&mut self) -> WorkerStats {
        self.send(&ToWorker::Finish);
        let stats = loop {
            match self.recv() {
                ToSupervisor::Stats(s) => break s,
                ToSupervisor::Done { .. } | ToSupervisor::Pending(_) => {}
                other => panic!("expected Stats, got {other:?}"),
            }
        };
        let st = self.wait_exit();
        assert!(st.success(), "worker exit {st}:\n{}", self.stderr());
        stats
    }

    fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                self.reaped = true;
                return st;
            }
            assert!(Instant::now() < deadline, "worker did not exit:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Wait until the worker's stderr holds `needle` at least `times` times.
    fn wait_stderr(&mut self, needle: &str, times: usize) {
        let deadline = Instant::now() + PATIENCE;
        while self.stderr().matches(needle).count() < times {
            assert!(self.alive(), "worker died waiting for {needle:?}:\n{}", self.stderr());
            assert!(Instant::now() < deadline, "no {needle:?} ×{times} on stderr:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Connect to a worker's mesh socket as peer `from`, incarnation `inc`.
fn call(path: &Path, from: u32, inc: u32) -> UnixStream {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut buf = Vec::new();
    wire::encode(&mut buf, &Hello { from: PeerId(from), incarnation: inc });
    s.write_all(&buf).unwrap();
    s
}

fn send_msg(s: &mut UnixStream, from: u32, to: u32, clock: u64, msg: Msg) {
    let mut buf = Vec::new();
    wire::encode(&mut buf, &Envelope { from: PeerId(from), to: PeerId(to), clock, msg });
    s.write_all(&buf).unwrap();
}

fn recv_msg(s: &mut UnixStream) -> Envelope<Msg> {
    match wire::read_blocking::<Envelope<Msg>, _>(s) {
        Ok(Some(env)) => env,
        other => panic!("expected a message, got {other:?}"),
    }
}

/// The first `n` idle connections of a burst may be accepted; they say nothing.
fn idle_connections(path: &Path, n: usize) -> Vec<UnixStream> {
    (0..n).map(|_| UnixStream::connect(path).unwrap()).collect()
}

#[test]
fn running_out_of_descriptors_is_survived() {
    let lab = Lab::new("centralized", 2);
    // Room for the worker's own descriptors and a handful of callers, far below the cap
    // on pending connections: accept must fail with EMFILE.
    let mut w0 = lab.spawn(0, 0, &["--entries", "1", "--think-ms", "0"], Some(20));
    w0.start(&[]);
    let idle = idle_connections(&lab.socket(0, 0), 3 * max_pending(2));
    w0.wait_stderr("Too many open files", 1);
    // Hang up: the worker drops them all, accepts again, and the real peer gets in.
    drop(idle);
    let mut w1 = call(&lab.socket(0, 0), 1, 0);
    let env = recv_msg(&mut w1);
    assert_eq!((env.from, env.to, env.msg), (PeerId(0), PeerId(1), Msg::Request));
    w0.wait_stderr("accepting connections again", 1);
    assert!(w0.query().down.is_empty());
    let stats = w0.finish();
    assert_eq!(stats.dropped_connections, 3 * max_pending(2) as u64, "{}", w0.stderr());
}

#[test]
fn silent_callers_are_capped_and_dropped_after_the_hello_deadline() {
    let lab = Lab::new("centralized", 2);
    let mut w0 = lab.spawn(0, 0, &["--entries", "1", "--think-ms", "0"], None);
    w0.start(&[]);
    let cap = max_pending(2);
    let started = Instant::now();
    // Kept open throughout: only the deadline can rid the worker of them.
    let _idle = idle_connections(&lab.socket(0, 0), cap + 10);
    w0.wait_stderr("refused", 1);
    w0.wait_stderr("sent no hello within", cap);
    assert!(started.elapsed() >= HELLO_DEADLINE);
    let mut w1 = call(&lab.socket(0, 0), 1, 0);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Request);
    let stats = w0.finish();
    assert_eq!(stats.dropped_connections, (cap + 10) as u64, "{}", w0.stderr());
}

#[test]
fn a_failed_dial_leaves_the_peer_down_until_it_calls() {
    let lab = Lab::new("centralized", 2);
    // A restarted w0 is told to dial w1, which is not listening (it just died).
    let mut w0 = lab.spawn(0, 1, &["--entries", "1", "--think-ms", "0", "--cs-ms", "0"], None);
    w0.start(&[(1, "w1.0.sock")]);
    w0.wait_stderr("cannot connect to w1", 1);
    let p = w0.query_until("w0 to ask", |p| p.app == "waiting");
    assert_eq!(p.down, vec![PeerId(1)]);
    assert!(p.algorithm.contains("GRANT from w1"), "{p:?}");
    // w1 comes back and calls: w0's algorithm hears it is up and asks again.
    let mut w1 = call(&lab.socket(0, 1), 1, 0);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Request);
    send_msg(&mut w1, 1, 0, 10, Msg::Grant);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Release);
    assert!(w0.query().down.is_empty());
    let stats = w0.finish();
    assert_eq!(stats.entries, 1);
    assert_eq!(stats.sent.get("REQUEST"), Some(&2), "the first one went to the dead w1");
}

#[test]
fn two_workers_that_dial_each_other_lose_nothing() {
    let lab = Lab::new("centralized", 2);
    // The test is w1, incarnation 1: it listens, and it also dials w0.
    let listener = UnixListener::bind(lab.socket(1, 1)).unwrap();
    let mut w0 = lab.spawn(0, 1, &["--entries", "2", "--think-ms", "0", "--cs-ms", "0"], None);
    w0.start(&[(1, "w1.1.sock")]);
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut theirs = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(w0.alive() && Instant::now() < deadline, "w0 never dialed:\n{}", w0.stderr());
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    theirs.set_nonblocking(false).unwrap();
    theirs.set_read_timeout(Some(PATIENCE)).unwrap();
    let hello: Hello = wire::read_blocking(&mut theirs).unwrap().unwrap();
    assert_eq!(hello, Hello { from: PeerId(0), incarnation: 1 });
    let mut ours = call(&lab.socket(0, 1), 1, 1);
    // Each side writes on the connection it dialed.
    assert_eq!(recv_msg(&mut theirs).msg, Msg::Request);
    send_msg(&mut ours, 1, 0, 10, Msg::Grant);
    assert_eq!(recv_msg(&mut theirs).msg, Msg::Release);
    assert_eq!(recv_msg(&mut theirs).msg, Msg::Request);
    send_msg(&mut ours, 1, 0, 20, Msg::Grant);
    assert_eq!(recv_msg(&mut theirs).msg, Msg::Release);
    assert!(w0.query().down.is_empty());
    assert!(!w0.stderr().contains("dropping"), "{}", w0.stderr());
    // Either connection closing means w1 is gone.
    drop(ours);
    w0.query_until("w1 down", |p| p.down == vec![PeerId(1)]);
    let stats = w0.finish();
    assert_eq!(stats.entries, 2);
    assert_eq!(stats.dropped_connections, 0);
}

#[test]
fn bad_frames_are_counted_and_the_channel_kept_until_the_length_lies() {
    let lab = Lab::new("centralized", 2);
    let mut w0 = lab.spawn(0, 0, &["--entries", "5", "--think-ms", "0", "--cs-ms", "0"], None);
    w0.start(&[]);
    let mut w1 = call(&lab.socket(0, 0), 1, 0);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Request);
    // A body that does not decode, then one addressed to someone else, then a good one.
    w1.write_all(&[0, 0, 0, 3, 0xc1, 0xc1, 0xc1]).unwrap();
    send_msg(&mut w1, 0, 0, 5, Msg::Grant);
    send_msg(&mut w1, 1, 0, 10, Msg::Grant);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Release);
    assert!(w0.query().down.is_empty());
    // A length over the cap: the stream cannot be trusted any more.
    w1.write_all(&u32::MAX.to_be_bytes()).unwrap();
    w0.query_until("w1 dropped", |p| p.down == vec![PeerId(1)]);
    let mut rest = Vec::new();
    // Whatever was still queued for w1, then the end of the stream.
    let _ = w1.read_to_end(&mut rest);
    let err = w0.stderr();
    assert!(err.contains("dropping a frame from w1: malformed frame body"), "{err}");
    assert!(err.contains("dropping a frame on w1's channel addressed w0→w0"), "{err}");
    assert!(err.contains("dropping the connection from w1: frame of 4294967295 bytes"), "{err}");
    let stats = w0.finish();
    assert_eq!((stats.bad_frames, stats.dropped_connections), (2, 1));
}

/// Stop the worker when the last record in the file is of kind `kind`, and still is once
/// it has stopped.
fn stop_at(lab: &Lab, w: &mut Worker, kind: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        assert!(Instant::now() < deadline, "never caught the worker after a {kind}");
        let last_is = |lab: &Lab| {
            lab.records().last().is_some_and(|r| match r {
                Record::Want { .. } => kind == "WANT",
                Record::Enter { .. } => kind == "ENTER",
                Record::Exit { .. } => kind == "EXIT",
            })
        };
        wait_for(&format!("a {kind} record"), || last_is(lab));
        kill(w.pid(), Signal::SIGSTOP).unwrap();
        match waitpid(w.pid(), Some(WaitPidFlag::WUNTRACED)).unwrap() {
            WaitStatus::Stopped(..) => {}
            other => panic!("worker did not stop: {other:?}"),
        }
        if last_is(lab) {
            return;
        }
        kill(w.pid(), Signal::SIGCONT).unwrap();
    }
}

/// SIGTERM a stopped worker and let it run: what does it write after the signal?
fn term_after(kind: &str) -> (Vec<Record>, u64, String) {
    let lab = Lab::new("none", 1);
    let mut w = lab.spawn(0, 0, &["--entries", "1000000", "--think-ms", "20", "--cs-ms", "20"], None);
    w.start(&[]);
    stop_at(&lab, &mut w, kind);
    // While it is stopped its next timer falls due (think and cs are at most 40 ms): a
    // lower bound, so a slow machine only makes the case stronger.
    std::thread::sleep(Duration::from_millis(100));
    let t = resource::monotonic_ns();
    kill(w.pid(), Signal::SIGTERM).unwrap();
    kill(w.pid(), Signal::SIGCONT).unwrap();
    let st = w.wait_exit();
    assert!(st.success(), "exit {st}:\n{}", w.stderr());
    let report = audit::audit_file(&lab.path(control::RESOURCE_FILE), &vec![Crash::at(0, t)].into()).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    (lab.records(), t, w.stderr())
}

#[test]
fn sigterm_outside_the_section_writes_nothing_more() {
    let (records, t, err) = term_after("EXIT");
    let late: Vec<&Record> = records.iter().filter(|r| r.time() > t).collect();
    assert!(late.is_empty(), "records after SIGTERM: {late:?}");
    assert!(err.contains("terminated by signal while thinking"), "{err}");
}

#[test]
fn sigterm_inside_the_section_closes_it_and_nothing_else() {
    let (records, t, err) = term_after("ENTER");
    let late: Vec<&Record> = records.iter().filter(|r| r.time() > t).collect();
    let Some(Record::Enter { e, fence, .. }) = records.iter().rev().nth(1).cloned() else {
        panic!("no ENTER before the EXIT: {records:?}");
    };
    match late.as_slice() {
        [Record::Exit { e: e2, fence: f2, .. }] => assert_eq!((*e2, *f2), (e, fence)),
        other => panic!("expected exactly the EXIT after SIGTERM, got {other:?}"),
    }
    assert!(err.contains("terminated by signal inside the critical section"), "{err}");
}

#[test]
fn a_stopped_then_terminated_worker_is_clean_in_a_real_run() {
    for _ in 0..3 {
        let out = run(&["run", "-n", "3", "--json", "--faults", "stop 0 at 100ms; term 0 at 200ms"]);
        let j = json(&out);
        assert_eq!(j["violation_count"], 0, "{}\n{}", stdout(&out), stderr(&out));
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

#[test]
fn a_peer_that_stops_reading_gets_everything_once_it_reads_again() {
    // The test is the coordinator w1. It grants w0 one entry at a time but reads
    // nothing, so w0's RELEASEs and REQUESTs back up far beyond the socket buffer and
    // sit in w0's own queue. When the test finally reads, w0 must hear that there is
    // room again (it asks only while backed up) and deliver every message, in order.
    const K: usize = 800;
    let lab = Lab::new("centralized", 2);
    let k = K.to_string();
    let mut w0 = lab.spawn(0, 0, &["--entries", &k, "--think-ms", "0", "--cs-ms", "0"], None);
    w0.start(&[]);
    let mut w1 = call(&lab.socket(0, 0), 1, 0);
    let file = lab.path(control::RESOURCE_FILE);
    let count = |want: bool| {
        let text = std::fs::read_to_string(&file).unwrap();
        text.matches(if want { "\nWANT " } else { "\nEXIT " }).count()
    };
    let deadline = Instant::now() + PATIENCE;
    for i in 1..=K {
        // Grant only a request the application has made (its WANT is in the file). A
        // short poll: this waits 800 times on a fast worker.
        while count(true) < i {
            assert!(Instant::now() < deadline, "no WANT {i}:\n{}", w0.stderr());
            std::thread::sleep(Duration::from_micros(200));
        }
        send_msg(&mut w1, 1, 0, 10 * i as u64, Msg::Grant);
    }
    wait_for("the last EXIT", || count(false) >= K);
    let kinds: Vec<Msg> = (0..2 * K).map(|_| recv_msg(&mut w1).msg).collect();
    let expected: Vec<Msg> = (0..K).flat_map(|_| [Msg::Request, Msg::Release]).collect();
    assert!(kinds == expected, "messages out of order or missing");
    let stats = w0.finish();
    assert_eq!(stats.entries, K as u64);
}
