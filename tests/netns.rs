//! The network keeper of `--netns` on its own: processes in network namespaces of their
//! own, wired to its bridge, reach each other over TCP; a partition cuts them apart in
//! the kernel and a heal mends it. Where user namespaces are not allowed, the keeper's
//! refusal line is asserted instead.
//!
//! The processes are this test binary re-executed as [`helper_process`]: each listens
//! on [`PORT`] of every address and echoes a line, and on a line `ADDR:PORT MS` on its
//! stdin tries a connection and a round trip there, answering `> ok` or `> err WHY`.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use mutexlab::supervisor::netns::{address, Keeper};
use mutexlab::supervisor::RunError;

/// Set in a helper's environment: run as [`helper_process`].
const HELPER_ENV: &str = "MUTEXLAB_NETNS_HELPER";
/// The port every helper listens on (each has a network of its own).
const PORT: u16 = 7070;
/// How long a connection across a partition is given before it counts as cut: a new
/// connection there hangs (SYN unanswered) or finds no host (ARP unanswered).
const CUT: Duration = Duration::from_secs(1);
/// How long a connection that should work may take, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// Start the keeper, or assert its refusal where user namespaces are not allowed.
pub(crate) fn keeper() -> Option<Keeper> {
    match Keeper::start(Path::new(env!("CARGO_BIN_EXE_mutexlab"))) {
        Ok(k) => Some(k),
        Err(RunError::Usage(line)) => {
            assert!(
                line.starts_with("--netns needs a user namespace, and this system refuses one"),
                "{line}"
            );
            assert!(
                line.contains("kernel.unprivileged_userns_clone")
                    || line.contains("user.max_user_namespaces")
            );
            crate::common::skipped(&format!("user namespaces are refused here; checked the refusal: {line}"));
            None
        }
        Err(e) => panic!("the keeper did not start: {e}"),
    }
}

/// A helper process in a network namespace of its own; killed and reaped on drop.
struct Helper {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Helper {
    /// Start one through `keeper` and wait until it listens.
    fn start(keeper: &Keeper) -> Helper {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["netns::helper_process", "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
        cmd.env(HELPER_ENV, "1").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        keeper.isolate(&mut cmd);
        // SAFETY: one async-signal-safe system call between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)
            });
        }
        let mut child = cmd.spawn().expect("a helper starts");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut h = Helper { child, input, output };
        assert_eq!(h.answer(), "listening");
        h
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The helper's next answer (a line `> WHAT`; the test harness's own lines skipped).
    fn answer(&mut self) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.output.read_line(&mut line).unwrap() > 0, "the helper ended");
            if let Some(a) = line.trim_end().strip_prefix("> ") {
                return a.to_string();
            }
        }
    }

    /// Whether a connection to worker `to` and a round trip on it succeed within `wait`;
    /// the helper's answer.
    fn reach(&mut self, to: u32, wait: Duration) -> String {
        writeln!(self.input, "{}:{PORT} {}", address(to), wait.as_millis()).unwrap();
        self.answer()
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Not a test: the body of a helper process, which the tests below start (and which
/// does nothing without [`HELPER_ENV`]).
#[test]
#[ignore = "a helper process of the netns tests, started by them"]
fn helper_process() {
    if std::env::var_os(HELPER_ENV).is_none() {
        return;
    }
    let listener = TcpListener::bind(("0.0.0.0", PORT)).expect("listen");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut line = String::new();
                let mut reader = BufReader::new(&stream);
                if reader.read_line(&mut line).is_ok() {
                    let _ = (&stream).write_all(line.as_bytes());
                }
            });
        }
    });
    // Straight to stdout (the harness captures `println!` in a test), and on a line of
    // its own (the harness leaves its `test NAME ... ` open).
    let say = |what: &str| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "\n> {what}");
        let _ = out.flush();
    };
    say("listening");
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("a request");
        let (addr, ms) = line.split_once(' ').expect("ADDR:PORT MS");
        let addr: SocketAddr = addr.parse().expect("an address");
        let wait = Duration::from_millis(ms.parse().expect("ms"));
        match round_trip(addr, wait) {
            Ok(()) => say("ok"),
            Err(e) => say(&format!("err {e}")),
        }
    }
    std::process::exit(0);
}

/// Connect to `addr` and echo a line there, within `wait`.
fn round_trip(addr: SocketAddr, wait: Duration) -> std::io::Result<()> {
    let stream = TcpStream::connect_timeout(&addr, wait)?;
    stream.set_read_timeout(Some(wait))?;
    (&stream).write_all(b"ping\n")?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    match line.as_str() {
        "ping\n" => Ok(()),
        other => Err(std::io::Error::other(format!("echoed {other:?}"))),
    }
}

#[test]
fn the_keeper_cuts_workers_apart_in_the_kernel_and_heals_them() {
    let Some(mut keeper) = keeper() else { return };
    let mut w: Vec<Helper> = (0..3).map(|_| Helper::start(&keeper)).collect();
    for (i, h) in w.iter().enumerate() {
        assert_eq!(keeper.attach(i as u32, h.pid()), Ok(address(i as u32)));
    }
    // One bridge: everyone reaches everyone.
    assert_eq!(w[0].reach(1, PATIENCE), "ok");
    assert_eq!(w[0].reach(2, PATIENCE), "ok");
    assert_eq!(w[2].reach(1, PATIENCE), "ok");

    keeper.partition(&[0, 0, 1]).unwrap();
    assert_eq!(w[0].reach(1, PATIENCE), "ok", "w0 and w1 are on the same side");
    for (from, to) in [(0, 2), (2, 1)] {
        let said = w[from].reach(to, CUT);
        assert!(said.starts_with("err"), "w{from} reached w{to} across the partition: {said}");
    }

    keeper.heal().unwrap();
    assert_eq!(w[0].reach(2, PATIENCE), "ok", "healed");
    assert_eq!(w[2].reach(1, PATIENCE), "ok", "healed");

    // A worker's next life gets a new namespace and its old address, on the bridge of
    // the partition in force.
    keeper.partition(&[0, 1, 1]).unwrap();
    w[2] = Helper::start(&keeper);
    keeper.attach(2, w[2].pid()).unwrap();
    assert_eq!(w[1].reach(2, PATIENCE), "ok", "the new w2 is on w1's side");
    let said = w[0].reach(2, CUT);
    assert!(said.starts_with("err"), "w0 reached the new w2 across the partition: {said}");
}

#[test]
fn a_process_that_is_not_isolated_cannot_be_attached() {
    let Some(mut keeper) = keeper() else { return };
    // Our own process is in the first network namespace, which the keeper's user
    // namespace does not own: the keeper must refuse, in one line.
    let e = keeper.attach(0, std::process::id() as i32).unwrap_err();
    assert!(!e.is_empty() && !e.contains('\n'), "{e}");
}

/// Not a test: how long making N namespaces and wiring each takes (`MUTEXLAB_NETNS_N`,
/// default 8). Run by hand: `cargo test --test integration -- --ignored
/// netns::measure_wiring --nocapture`.
#[test]
#[ignore = "a measurement, run by hand"]
fn measure_wiring() {
    let n: u32 = std::env::var("MUTEXLAB_NETNS_N").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    let Some(mut keeper) = keeper() else { return };
    struct Reaped(Vec<Child>);
    impl Drop for Reaped {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let mut procs = Reaped(Vec::new());
    let t0 = Instant::now();
    for _ in 0..n {
        let mut cmd = Command::new("sleep");
        cmd.arg("600").stdin(Stdio::null());
        keeper.isolate(&mut cmd);
        procs.0.push(cmd.spawn().expect("sleep starts"));
    }
    let made = t0.elapsed();
    let t1 = Instant::now();
    for (i, c) in procs.0.iter().enumerate() {
        keeper.attach(i as u32, c.id() as i32).unwrap();
    }
    let wired = t1.elapsed();
    let t2 = Instant::now();
    let groups: Vec<usize> = (0..n as usize).map(|i| usize::from(i >= n as usize / 2)).collect();
    keeper.partition(&groups).unwrap();
    let cut = t2.elapsed();
    let t3 = Instant::now();
    keeper.heal().unwrap();
    let healed = t3.elapsed();
    println!(
        "n={n}: namespaces {:.1} ms ({:.2} ms each), wiring {:.1} ms ({:.2} ms each), partition in halves {:.1} ms, heal {:.1} ms",
        made.as_secs_f64() * 1e3,
        made.as_secs_f64() * 1e3 / f64::from(n),
        wired.as_secs_f64() * 1e3,
        wired.as_secs_f64() * 1e3 / f64::from(n),
        cut.as_secs_f64() * 1e3,
        healed.as_secs_f64() * 1e3
    );
}

#[test]
fn netns_without_tcp_is_a_usage_error_in_one_line() {
    let out = crate::common::mutexlab()
        .args(["run", "--netns", "-n", "2", "--entries", "1"])
        .output()
        .expect("mutexlab runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("mutexlab: --netns needs --transport tcp"), "{err}");
    let out =
        crate::common::mutexlab().args(["elect", "--netns", "-n", "2"]).output().expect("mutexlab runs");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A whole run under `--netns` over TCP, through the library: each life isolated and
/// attached (a restarted one too), the run clean inside namespaces, and the record of
/// its partitions the kernel's.
#[test]
fn a_run_under_netns_wires_every_life_and_records_its_partitions_as_the_kernels() {
    use mutexlab::faults::{FaultKind, Plan};
    use mutexlab::registry::Registry;
    use mutexlab::supervisor::RunOpts;

    if keeper().is_none() {
        return;
    }
    let reg = Registry::builtin();
    let plan = Plan::parse("partition 0|1,2 at 100ms; heal at 200ms; kill 0 at 300ms; restart 0 at 400ms", 3)
        .unwrap();
    let opts = RunOpts {
        workers: 3,
        duration: Some(Duration::from_millis(700)),
        plan,
        netns: true,
        transport: mutexlab::supervisor::Transport::Tcp,
        ..RunOpts::new(reg.get("centralized").unwrap(), env!("CARGO_BIN_EXE_mutexlab").into())
    };
    let r = mutexlab::supervisor::run(&opts, &reg).expect("the run ends");
    assert!(r.ok, "{:?}", r.failure);
    let kinds: Vec<(FaultKind, bool)> = r.faults.iter().map(|f| (f.action, f.kernel)).collect();
    assert_eq!(
        kinds,
        [
            (FaultKind::Partition, true),
            (FaultKind::Heal, true),
            (FaultKind::Kill, false),
            (FaultKind::Restart, false)
        ],
        "{:#?}",
        r.faults
    );
    assert!(r.faults[0].note.ends_with("; in the kernel"), "{}", r.faults[0].note);
}

/// A negative control for the refusal: a user namespace whose own limit on user
/// namespaces is 0 stands in for a system that refuses them.
#[test]
fn where_user_namespaces_are_refused_the_keeper_names_the_sysctl() {
    let out = Command::new("unshare")
        .args(["-r", "sh", "-c", "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" netns-keeper"])
        .arg(env!("CARGO_BIN_EXE_mutexlab"))
        .stdin(Stdio::null())
        .output()
        .expect("unshare runs");
    if !out.status.success() {
        // No user namespace at all here: the keeper itself is refused, as it says.
        assert!(keeper().is_none(), "unshare -r failed: {}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        said.lines().collect::<Vec<_>>(),
        ["refused --netns needs a user namespace, and this system refuses one (unshare: No space left on \
          device): sysctl user.max_user_namespaces is 0 (a positive number allows them)"]
    );
}

/// The supervisor's side of a refusal: a keeper that says `refused LINE` is a usage
/// error (exit 2) with that line, and it is reaped.
#[test]
fn a_refusing_keeper_is_a_usage_error_with_its_line() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("keeper");
    std::fs::write(&fake, "#!/bin/sh\necho 'refused no namespaces here'\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    match Keeper::start(&fake) {
        Err(RunError::Usage(line)) => assert_eq!(line, "no namespaces here"),
        Err(e) => panic!("not a usage error: {e}"),
        Ok(_) => panic!("a refusing keeper was taken as ready"),
    }
}

/// The issue's own run, and the split brain of the README's "Split brain" made by the
/// kernel: with the coordinator cut off under the heartbeat detector, both sides grant
/// (the auditor finds the overlaps), and the fencing token and the majority rule each
/// keep the file clean.
#[test]
fn a_partition_in_the_kernel_splits_the_brain_and_fencing_and_majority_hold() {
    if keeper().is_none() {
        return;
    }
    let run = |extra: &[&str]| {
        let tcp = ["run", "--transport", "tcp", "--netns"];
        let out = crate::common::mutexlab().args(tcp).args(extra).output().expect("mutexlab runs");
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let plan = "partition 0,1,2|3,4,5,6,7 at 100ms; heal at 400ms";
    let (code, text) = run(&["-n", "8", "--algo", "ricart-agrawala", "--faults", plan]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("partition 0,1,2|3,4,5,6,7 at 100ms; in the kernel"), "{text}");
    let split = ["--algo", "centralized-bully", "-n", "5", "-k", "60", "--detector", "heartbeat"];
    let cut = ["--faults", "partition 4,0|1,2,3 at 100ms for 1s"];
    let (code, text) = run(&[&split[..], &cut[..]].concat());
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("overlap"), "two coordinators granted: {text}");
    let (code, text) = run(&[&split[..], &["--fenced"], &cut[..]].concat());
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("stale write(s) refused by the resource"), "{text}");
    let (code, text) = run(&[&split[..], &["--majority"], &cut[..]].concat());
    assert_eq!(code, Some(0), "{text}");
}
