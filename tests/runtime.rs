//! The worker runtime through the real binary, with the test playing the supervisor on
//! the control link (it hands the worker its setup and the run's secret, as the
//! supervisor does) and, where needed, a peer on the mesh: bad callers, descriptors
//! running out, dials that fail, hellos from lives the supervisor did not announce,
//! second connections, garbage frames and SIGTERM.
//!
//! Every wait is on an event (a line on the worker's stderr, a frame, a record in the
//! file, a process state) with a generous deadline; every process started is reaped.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use mutexlab::algorithm::PeerId;
use mutexlab::algos::centralized::Msg;
use mutexlab::audit::{self, Crash};
use mutexlab::auth::{Hello, Secret};
use mutexlab::control::{
    self, Endpoint, PendingState, ToSupervisor, ToWorker, WorkerSettings, WorkerSetup, WorkerStats,
};
use mutexlab::resource::{self, Record};
use mutexlab::runtime::{max_pending, HELLO_DEADLINE};
use mutexlab::wire::{self, Envelope};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// A run directory with a resource file and a secret, as the supervisor makes.
struct Lab {
    dir: tempfile::TempDir,
    secret: Secret,
    algo: &'static str,
    n: u32,
}

impl Lab {
    fn new(algo: &'static str, n: u32) -> Lab {
        let dir = tempfile::Builder::new().prefix("mlr-").tempdir().unwrap();
        resource::create(&dir.path().join(control::RESOURCE_FILE), algo, n, false).unwrap();
        Lab { dir, secret: Secret::generate().unwrap(), algo, n }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Settings for worker `id`, life `inc`: one entry, no thinking, no section time.
    fn settings(&self, id: u32, inc: u32) -> WorkerSettings {
        WorkerSettings {
            id,
            workers: self.n,
            algo: self.algo.to_string(),
            incarnation: inc,
            entries: 1,
            duration: None,
            cs: Duration::ZERO,
            think: Duration::ZERO,
            seed: 0,
            replicas: None,
            parent: None,
            start_entry: 0,
            messages: Default::default(),
            initiator: false,
            detector: Default::default(),
            fenced: false,
            majority: false,
            trace: false,
            flight: false,
            states: false,
            external: None,
            held: false,
            lazy: false,
            timing: Default::default(),
            listen: None,
        }
    }

    /// Start worker `id` (incarnation `inc`) with these settings changed, optionally
    /// under `ulimit -n`, and wait for its Ready.
    fn spawn(
        &self,
        id: u32,
        inc: u32,
        tweak: impl FnOnce(&mut WorkerSettings),
        nofile: Option<u32>,
    ) -> Worker {
        let mut settings = self.settings(id, inc);
        tweak(&mut settings);
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
            .args(["--id", &id.to_string()])
            .arg("--run-dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&stderr).unwrap());
        let (mut control, theirs) = control::link_pair().unwrap();
        control::hand_down(&mut cmd, &theirs);
        let child = cmd.spawn().expect("spawn a worker");
        drop(theirs);
        let mut setup = Vec::new();
        wire::encode(&mut setup, &WorkerSetup { settings, secret: self.secret.clone() });
        control.write_all(&setup).unwrap();
        control.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut w = Worker { child, control: Some(control), stderr, reaped: false, n: self.n };
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

    /// Connect to worker `to`'s life `to_inc` as peer `from`, life `inc`, with a hello
    /// that proves the run's secret.
    fn call(&self, to: u32, to_inc: u32, from: u32, inc: u32) -> UnixStream {
        call_with(&self.socket(to, to_inc), &Hello::new(&self.secret, PeerId(from), PeerId(to), inc))
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
    /// Workers in the run.
    n: u32,
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

    /// Start with every worker in its first life.
    fn start(&mut self, dial: &[(u32, &str)]) {
        self.start_with(dial, &vec![0; self.n as usize]);
    }

    fn start_with(&mut self, dial: &[(u32, &str)], incarnations: &[u32]) {
        let dial = dial.iter().map(|(p, s)| (PeerId(*p), Endpoint::Unix(s.to_string()))).collect();
        self.send(&ToWorker::Start {
            dial,
            incarnations: incarnations.to_vec(),
            listening: Vec::new(),
            partition: None,
            links: Vec::new(),
        });
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

/// Connect to a mesh socket and say this hello.
fn call_with(path: &Path, hello: &Hello) -> UnixStream {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut buf = Vec::new();
    wire::encode(&mut buf, hello);
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
    let mut w0 = lab.spawn(0, 0, |_| {}, Some(20));
    w0.start(&[]);
    let idle = idle_connections(&lab.socket(0, 0), 3 * max_pending(2));
    w0.wait_stderr("Too many open files", 1);
    // Hang up: the worker drops them all, accepts again, and the real peer gets in.
    drop(idle);
    let mut w1 = lab.call(0, 0, 1, 0);
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
    let mut w0 = lab.spawn(0, 0, |_| {}, None);
    w0.start(&[]);
    let cap = max_pending(2);
    let started = Instant::now();
    // Kept open throughout: only the deadline can rid the worker of them.
    let _idle = idle_connections(&lab.socket(0, 0), cap + 10);
    w0.wait_stderr("to make room for new callers", 1);
    w0.wait_stderr("sent no hello within", cap);
    assert!(started.elapsed() >= HELLO_DEADLINE);
    let mut w1 = lab.call(0, 0, 1, 0);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Request);
    let stats = w0.finish();
    assert_eq!(stats.dropped_connections, (cap + 10) as u64, "{}", w0.stderr());
}

#[test]
fn a_failed_dial_leaves_the_peer_down_until_its_next_life_calls() {
    let lab = Lab::new("centralized", 2);
    // A restarted w0 is told to dial w1, which is not listening (it just died).
    let mut w0 = lab.spawn(0, 1, |_| {}, None);
    w0.start_with(&[(1, "w1.0.sock")], &[1, 0]);
    w0.wait_stderr("cannot connect to w1", 1);
    let p = w0.query_until("w0 to ask", |p| p.app == "waiting");
    assert_eq!(p.down, vec![PeerId(1)]);
    assert!(p.algorithm.contains("GRANT from w1"), "{p:?}");
    // w1 is restarted: the supervisor announces it, and it calls. w0's algorithm hears
    // it is up and asks again.
    w0.send(&ToWorker::Incarnation {
        id: PeerId(1),
        incarnation: 1,
        endpoint: Endpoint::Unix(control::worker_socket(PeerId(1), 1)),
    });
    let mut w1 = lab.call(0, 1, 1, 1);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Request);
    send_msg(&mut w1, 1, 0, 10, Msg::Grant);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Release);
    assert!(w0.query().down.is_empty());
    let stats = w0.finish();
    assert_eq!(stats.entries, 1);
    assert_eq!(stats.sent.get("REQUEST"), Some(&2), "the first one went to the dead w1");
}

/// w0 in its first life with w1's channel open (the test is w1), for the tests that
/// play impostors with the run's secret.
fn w0_with_w1(lab: &Lab, incarnations: &[u32]) -> (Worker, UnixStream) {
    let mut w0 = lab.spawn(0, 0, |s| s.entries = 3, None);
    w0.start_with(&[], incarnations);
    let mut w1 = lab.call(0, 0, 1, incarnations[1]);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Request);
    (w0, w1)
}

/// Send a forged GRANT from `w1` on `conn`, which may already be closed.
fn forge_grant(conn: &mut UnixStream) {
    let mut buf = Vec::new();
    wire::encode(&mut buf, &Envelope { from: PeerId(1), to: PeerId(0), clock: 99, msg: Msg::Grant });
    let _ = conn.write_all(&buf);
}

/// The connection is closed by the far end (whatever it sent first is read and
/// discarded).
fn closed(conn: &mut UnixStream) -> bool {
    let mut rest = Vec::new();
    match conn.read_to_end(&mut rest) {
        Ok(_) => true,
        // Closed with our forged frames unread: a reset, not a timeout.
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

#[test]
fn a_second_connection_for_an_open_channel_is_refused_and_carries_nothing() {
    let lab = Lab::new("centralized", 2);
    let (mut w0, mut w1) = w0_with_w1(&lab, &[0, 0]);
    // The right secret, the right life, but w1's channel is open: refused, and the
    // GRANT forged behind the hello never reaches the algorithm.
    let mut second = lab.call(0, 0, 1, 0);
    forge_grant(&mut second);
    w0.wait_stderr(
        "refusing a connection whose hello claims w1 (incarnation 0), whose channel is already open",
        1,
    );
    assert!(closed(&mut second));
    assert_eq!(w0.query().app, "waiting", "the forged GRANT let w0 in");
    // The real channel is untouched: it carries the real GRANT.
    send_msg(&mut w1, 1, 0, 10, Msg::Grant);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Release);
    // Once it has closed, that life cannot come back either.
    assert_eq!(recv_msg(&mut w1).msg, Msg::Request);
    drop(w1);
    w0.query_until("w1 down", |p| p.down == vec![PeerId(1)]);
    let mut again = lab.call(0, 0, 1, 0);
    w0.wait_stderr("whose channel is already closed", 1);
    assert!(closed(&mut again));
    let stats = w0.finish();
    assert_eq!(stats.received.get("GRANT"), Some(&1));
    assert_eq!(stats.dropped_connections, 2);
}

#[test]
fn hellos_from_lives_the_supervisor_did_not_announce_are_not_believed() {
    let lab = Lab::new("centralized", 2);
    // The supervisor says w1 is in its second life (incarnation 1).
    let (mut w0, mut w1) = w0_with_w1(&lab, &[0, 1]);
    // A stale life: refused, its forged GRANT goes nowhere.
    let mut stale = lab.call(0, 0, 1, 0);
    forge_grant(&mut stale);
    w0.wait_stderr(
        "refusing a connection whose hello claims w1's incarnation 0, but the supervisor announced 1",
        1,
    );
    assert!(closed(&mut stale));
    // A future life nobody announced: held, never adopted, dropped at its deadline.
    let started = Instant::now();
    let mut future = lab.call(0, 0, 1, 5);
    forge_grant(&mut future);
    w0.wait_stderr("claims w1's incarnation 5, which the supervisor did not announce within", 1);
    assert!(started.elapsed() >= HELLO_DEADLINE);
    assert!(closed(&mut future));
    assert!(w0.query().down.is_empty(), "the real channel must survive");
    assert_eq!(w0.query().app, "waiting", "a forged GRANT let w0 in");
    send_msg(&mut w1, 1, 0, 10, Msg::Grant);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Release);
    let stats = w0.finish();
    assert_eq!(stats.received.get("GRANT"), Some(&1));
}

#[test]
fn a_restarted_peer_s_hello_waits_for_the_notice_that_may_come_after_it() {
    let lab = Lab::new("centralized", 2);
    let (mut w0, mut old) = w0_with_w1(&lab, &[0, 0]);
    // w1 is restarted. Its new life's hello, and a GRANT behind it, reach w0 before the
    // supervisor's notice does: they wait, and nothing is lost.
    let mut new = lab.call(0, 0, 1, 1);
    send_msg(&mut new, 1, 0, 10, Msg::Grant);
    // The old life's channel is still open: the new one has not replaced it yet.
    assert!(w0.query().down.is_empty());
    w0.send(&ToWorker::Incarnation {
        id: PeerId(1),
        incarnation: 1,
        endpoint: Endpoint::Unix(control::worker_socket(PeerId(1), 1)),
    });
    // The old channel is replaced. w0's algorithm hears its coordinator has fresh
    // state and asks again; then the waiting GRANT is delivered and w0 enters and leaves.
    assert!(closed(&mut old));
    assert_eq!(recv_msg(&mut new).msg, Msg::Request);
    assert_eq!(recv_msg(&mut new).msg, Msg::Release);
    assert!(!w0.stderr().contains("dropping"), "{}", w0.stderr());
    assert!(!w0.stderr().contains("refusing"), "{}", w0.stderr());
    let stats = w0.finish();
    assert_eq!(stats.dropped_connections, 0);
}

#[test]
fn hellos_without_the_secret_or_for_someone_else_are_dropped_with_a_line_each() {
    let lab = Lab::new("centralized", 3);
    let mut w0 = lab.spawn(0, 0, |_| {}, None);
    w0.start(&[]);
    let sock = lab.socket(0, 0);
    // A wrong secret, claiming the live worker w1.
    let wrong = Secret::generate().unwrap();
    let mut c1 = call_with(&sock, &Hello::new(&wrong, PeerId(1), PeerId(0), 0));
    forge_grant(&mut c1);
    // The right secret, but made for w2.
    let mut c2 = call_with(&sock, &Hello::new(&lab.secret, PeerId(1), PeerId(2), 0));
    forge_grant(&mut c2);
    // No secret at all: an old-style hello.
    #[derive(serde::Serialize)]
    struct OldHello {
        from: PeerId,
        incarnation: u32,
    }
    let mut c3 = UnixStream::connect(&sock).unwrap();
    let mut buf = Vec::new();
    wire::encode(&mut buf, &OldHello { from: PeerId(1), incarnation: 0 });
    c3.write_all(&buf).unwrap();
    forge_grant(&mut c3);
    // A stranger's id, with the secret.
    let mut c4 = call_with(&sock, &Hello::new(&lab.secret, PeerId(7), PeerId(0), 0));
    w0.wait_stderr("claims to be w1 (incarnation 0) without the run's secret", 1);
    w0.wait_stderr("hello from w1 is addressed to w2", 1);
    w0.wait_stderr("its first frame is not a hello", 1);
    w0.wait_stderr("names w7, which is not a peer", 1);
    for c in [&mut c1, &mut c2, &mut c3, &mut c4] {
        assert!(closed(c));
    }
    let p = w0.query();
    assert_eq!(p.app, "waiting", "a forged GRANT let w0 in: {p:?}");
    // The real w1 and w2 still get in: no impostor used up their lives.
    let mut w2 = lab.call(0, 0, 2, 0);
    let _w1 = lab.call(0, 0, 1, 0);
    assert_eq!(recv_msg(&mut w2).msg, Msg::Request);
    send_msg(&mut w2, 2, 0, 10, Msg::Grant);
    assert_eq!(recv_msg(&mut w2).msg, Msg::Release);
    w0.query_until("w1 and w2 connected", |p| p.down.is_empty());
    let stats = w0.finish();
    assert_eq!((stats.entries, stats.dropped_connections), (1, 4));
}

#[test]
fn bad_frames_are_counted_and_a_lying_length_stops_the_run_without_calling_the_peer_dead() {
    let lab = Lab::new("centralized", 2);
    let mut w0 = lab.spawn(0, 0, |s| s.entries = 5, None);
    w0.start(&[]);
    let mut w1 = lab.call(0, 0, 1, 0);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Request);
    // A body that does not decode, then one addressed to someone else, then a good one.
    w1.write_all(&[0, 0, 0, 3, 0xc1, 0xc1, 0xc1]).unwrap();
    send_msg(&mut w1, 0, 0, 5, Msg::Grant);
    send_msg(&mut w1, 1, 0, 10, Msg::Grant);
    assert_eq!(recv_msg(&mut w1).msg, Msg::Release);
    assert!(w0.query().down.is_empty());
    // A length over the cap: the stream cannot be read past it, but w1 is alive. Its
    // channel is not closed nor w1 reported down (the algorithm would believe a live
    // peer dead): the worker tells the supervisor, and stands still.
    w1.write_all(&u32::MAX.to_be_bytes()).unwrap();
    match w0.recv() {
        ToSupervisor::Breach(line) => {
            assert!(line.starts_with("w0: the runtime refused a frame from w1, which is alive"), "{line}");
            assert!(line.contains("frame of 4294967295 bytes exceeds the 65536-byte cap"), "{line}");
        }
        other => panic!("expected a Breach, got {other:?}\n{}", w0.stderr()),
    }
    // It answers the supervisor's Finish with its statistics, then leaves (status 1, with
    // the line): the channel was open till then, and nothing was dropped.
    w0.send(&ToWorker::Finish);
    let stats = loop {
        match w0.recv() {
            ToSupervisor::Stats(s) => break s,
            ToSupervisor::Done { .. } => {}
            other => panic!("expected Stats, got {other:?}"),
        }
    };
    assert_eq!((stats.bad_frames, stats.dropped_connections), (2, 0));
    assert_eq!(w0.wait_exit().code(), Some(1));
    let err = w0.stderr();
    assert!(err.contains("dropping a frame from w1: malformed frame body"), "{err}");
    assert!(err.contains("dropping a frame on w1's channel addressed w0→w0"), "{err}");
    assert!(!err.contains("dropping the connection"), "{err}");
    assert!(err.contains("w0: the runtime refused a frame from w1"), "{err}");
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
                Record::Refused { .. } => false,
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
    let mut w = lab.spawn(
        0,
        0,
        |s| {
            s.entries = 1_000_000;
            s.think = Duration::from_millis(20);
            s.cs = Duration::from_millis(20);
        },
        None,
    );
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
    let mut w0 = lab.spawn(0, 0, |s| s.entries = K as u64, None);
    w0.start(&[]);
    let mut w1 = lab.call(0, 0, 1, 0);
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
