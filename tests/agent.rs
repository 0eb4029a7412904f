//! `mutexlab agent`: two agents in two network namespaces of this machine stand in for
//! two hosts. The supervisor runs in a third namespace, each wired to the `--netns`
//! keeper's bridge (`Keeper::isolate` and `attach`), so the agents reach its listener
//! at its bridge address, and the workers each agent starts live in that agent's
//! namespace and are reached at its address. An election of eight workers, four on
//! each agent, with the leader killed and restarted (another worker paused and one
//! terminated) through its agent, audits clean and counts the same messages as the
//! same run local over TCP. Where user namespaces are refused, the keeper's refusal
//! line is asserted instead (as in `netns.rs`). The flags' refusals need no namespace.
//! Each run is made twice: with the run directory seen by the agents (one file system
//! here), and with `--own-dir`, the agents' workers in directories of their own, their
//! resource and leader records through the agents and their traces and rings sent back.

use std::os::unix::process::CommandExt;
use std::process::{Child, Output, Stdio};

use mutexlab::supervisor::netns::Keeper;

use crate::common::*;

/// The port the supervisor listens on for agents: its namespace is its own.
const PORT: u16 = 7117;

/// A process the test started: killed and reaped on drop, whatever happened.
struct Reaped(Option<Child>);

impl Reaped {
    /// Wait for it to end, with its output.
    fn output(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().expect("waited for")
    }

    /// SIGKILL it, and its output.
    fn killed(mut self) -> Output {
        let _ = self.0.as_mut().unwrap().kill();
        self.output()
    }

    fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Start `args` of the binary in a network namespace of its own, wired to the bridge
/// as slot `slot` (its address is `netns::address(slot)`). It runs only once wired: a
/// fresh namespace has not even its loopback up before that.
fn isolated(keeper: &mut Keeper, slot: u32, args: &[&str]) -> Reaped {
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "read go && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_mutexlab")]).args(args);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    keeper.isolate(&mut cmd);
    // SAFETY: one async-signal-safe system call between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(std::io::Error::from)
        });
    }
    let mut child = Reaped(Some(cmd.spawn().expect("started")));
    keeper.attach(slot, child.0.as_ref().unwrap().id() as i32).expect("wired to the bridge");
    let mut go = child.0.as_mut().unwrap().stdin.take().unwrap();
    std::io::Write::write_all(&mut go, b"go\n").expect("told to go");
    child
}

/// The live worker processes of the run in `dir`.
fn workers_in(dir: &std::path::Path) -> Vec<i32> {
    let worker = |pid: &i32| {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        cmd.split(|&b| b == 0).nth(1) == Some(b"worker")
    };
    processes_mentioning(&dir.display().to_string()).into_iter().filter(worker).collect()
}

/// The directory of its own an agent said it ran its workers in (`--own-dir`).
fn own_dir_of(agent: &Output) -> std::path::PathBuf {
    let err = stderr(agent);
    let line = err.lines().find(|l| l.contains("(own directory; the run's is ")).expect("an own directory");
    let (_, rest) = line.split_once(" in ").expect("in DIR");
    std::path::PathBuf::from(rest.split_once(" (own directory").expect("(own directory").0)
}

/// The agents' arguments: `--own-dir` when `own`.
fn agent_args<'a>(connect: &'a str, secret: &'a str, own: bool) -> Vec<&'a str> {
    let mut args = vec!["agent", "--connect", connect, "--secret-file", secret];
    if own {
        args.push("--own-dir");
    }
    args
}

/// A fresh agents' secret in `dir`.
fn secret_file(dir: &std::path::Path) -> String {
    let path = dir.join("secret");
    let hex: String = (0..32).map(|i| format!("{:02x}", (i * 37 + 11) as u8)).collect();
    std::fs::write(&path, hex).unwrap();
    path.display().to_string()
}

#[test]
fn two_agents_in_two_namespaces_run_an_election_whose_leader_is_killed_and_restarted() {
    election_on_two_agents(false);
}

/// The same with the agents' workers in directories of their own: the leader records
/// through the agents, and the killed leader's sends counted from its flight ring,
/// which its agent sent back.
#[test]
fn an_election_on_two_agents_in_their_own_directories_counts_as_the_local_run() {
    election_on_two_agents(true);
}

fn election_on_two_agents(own: bool) {
    let Some(mut keeper) = crate::netns::keeper() else { return };
    let tmp = tempfile::Builder::new().prefix("mla-").tempdir().unwrap();
    let secret = secret_file(tmp.path());
    let run_dir = tmp.path().join("run");
    // The leader (w7) killed and restarted, w3 paused and continued, w2 terminated:
    // each through its agent. With no detector nobody starts an election of its own, so the counts
    // follow from the plan alone.
    let plan = "stop 3 at 100ms for 100ms; kill leader at 300ms; term 2 at 450ms; restart 7 at 600ms";
    let args = ["--algo", "bully", "-n", "8", "--initiators", "6", "--detector", "none", "--faults", plan];
    let listen = format!("0.0.0.0:{PORT}");
    let mut sup_args = vec!["elect", "--json", "--transport", "tcp", "--run-dir", run_dir.to_str().unwrap()];
    sup_args.extend_from_slice(&["--agents", "2", "--agent-listen", &listen, "--secret-file", &secret]);
    sup_args.extend_from_slice(&args);
    // The supervisor's host is slot 10; the agents' are 0 and 1.
    let supervisor = isolated(&mut keeper, 10, &sup_args);
    let connect = format!("{}:{PORT}", mutexlab::supervisor::netns::address(10));
    let mut agent_args = agent_args(&connect, &secret, own);
    agent_args.extend_from_slice(&["--slots", "4"]);
    let agents = [isolated(&mut keeper, 0, &agent_args), isolated(&mut keeper, 1, &agent_args)];
    let out = supervisor.output();
    let j = json(&out);
    let agents: Vec<Output> = agents.into_iter().map(Reaped::output).collect();
    for (i, a) in agents.iter().enumerate() {
        assert_eq!(a.status.code(), Some(0), "agent {i}: {}", stderr(a));
        assert!(stderr(a).contains("mutexlab agent: joined the run of "), "agent {i}: {}", stderr(a));
    }
    assert_eq!(out.status.code(), Some(0), "{}\n{j}", stderr(&out));
    assert_eq!((&j["ok"], &j["violation_count"]), (&true.into(), &0.into()), "{j}");
    let needle = run_dir.display().to_string();
    assert!(processes_mentioning(&needle).is_empty(), "workers outlived their agents");
    let done: Vec<(&str, u64)> = j["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["action"].as_str().unwrap(), f["worker"].as_u64().unwrap_or(99)))
        .collect();
    assert_eq!(done, [("stop", 3), ("cont", 3), ("kill", 7), ("term", 2), ("restart", 7)], "{j}");
    assert_eq!(j["leader"], 7, "the new life of the highest leads: {j}");
    // The same run on this machine's loopback.
    let (local_out, local) = run_checked("elect", &[&["--transport", "tcp"][..], &args].concat());
    assert_eq!(local_out.status.code(), Some(0), "{}", stderr(&local_out));
    assert_eq!(j["messages"]["by_type"], local["messages"]["by_type"], "agents vs local");
    assert_eq!(j["messages"]["total"], local["messages"]["total"]);
    for key in ["violations_by_kind", "leader", "lost_messages"] {
        assert_eq!(j[key], local[key], "{key}");
    }
    // The killed leader's sends, which only its trace has, are counted alike.
    assert!(j["cost"]["unreported_sent"].as_u64().unwrap() > 0, "{j}");
    assert_eq!(j["cost"]["unreported_by_type"], local["cost"]["unreported_by_type"]);
    let places = j["agents"].as_array().expect("agents in the report");
    assert!(places.iter().all(|p| p["own_dir"].as_bool().unwrap_or(false) == own), "{j}");
    // An election's directory stays with its leader file (and report), as locally: no
    // ring, trace or check is left in it, and every worker's records reached the file.
    let mut names: Vec<String> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.retain(|n| n != "report.html");
    assert_eq!(names, ["leaders.log"], "a clean run leaves nothing else");
    let leaders = std::fs::read_to_string(run_dir.join("leaders.log")).unwrap();
    for w in 0..8 {
        assert!(leaders.contains(&format!("\nLEADER w={w} inc=0 leader=7 ")), "w{w}: {leaders}");
    }
    if own {
        for a in &agents {
            let dir = own_dir_of(a);
            assert!(!dir.exists(), "the agent left {}", dir.display());
        }
    }
}

#[test]
fn a_mutex_run_on_two_agents_survives_a_kill_restart_and_stop_and_a_lost_agent_takes_its_workers() {
    mutex_on_two_agents(false);
}

/// The same with the agents' workers in directories of their own: every resource
/// operation through the agents, applied on the supervisor's host.
#[test]
fn a_mutex_run_on_two_agents_in_their_own_directories_is_clean_and_leaves_nothing() {
    mutex_on_two_agents(true);
}

fn mutex_on_two_agents(own: bool) {
    let Some(mut keeper) = crate::netns::keeper() else { return };
    let tmp = tempfile::Builder::new().prefix("mla-").tempdir().unwrap();
    let secret = secret_file(tmp.path());
    let listen = format!("0.0.0.0:{PORT}");
    let connect = format!("{}:{PORT}", mutexlab::supervisor::netns::address(10));
    let agent_args = agent_args(&connect, &secret, own);
    let on_agents = |keeper: &mut Keeper, run_dir: &str, args: &[&str]| {
        let mut all = vec!["run", "--json", "--transport", "tcp", "--run-dir", run_dir, "--agents", "2"];
        all.extend_from_slice(&[
            "--agent-listen",
            &listen,
            "--secret-file",
            &secret,
            "--algo",
            "ricart-agrawala",
        ]);
        all.extend_from_slice(args);
        let sup = isolated(keeper, 10, &all);
        (sup, [isolated(keeper, 0, &agent_args), isolated(keeper, 1, &agent_args)])
    };
    // Ricart-Agrawala, eight workers, w5 (on the second agent) killed and restarted and
    // w1 (on the first) paused: every entry made, clean.
    let run_dir = tmp.path().join("ra");
    let plan = "kill 5 at 50ms; restart 5 at 150ms; stop 1 at 200ms for 100ms";
    let (sup, agents) =
        on_agents(&mut keeper, run_dir.to_str().unwrap(), &["-n", "8", "-k", "20", "--faults", plan]);
    let out = sup.output();
    let j = json(&out);
    let agents: Vec<Output> = agents.into_iter().map(Reaped::output).collect();
    for a in &agents {
        assert_eq!(a.status.code(), Some(0), "{}", stderr(a));
    }
    assert_eq!(out.status.code(), Some(0), "{}\n{j}", stderr(&out));
    assert_eq!(
        (&j["ok"], &j["violation_count"], &j["entries"]["total"]),
        (&true.into(), &0.into(), &160.into())
    );
    let actions: Vec<&str> =
        j["faults"].as_array().unwrap().iter().map(|f| f["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["kill", "restart", "stop", "cont"], "{j}");
    assert_eq!(j["faults"][0]["signal"], "SIGKILL", "{j}");
    // The report says where the workers ran: a block of four on each agent's address.
    let places = j["agents"].as_array().expect("agents in the report");
    let workers: Vec<&serde_json::Value> = places.iter().map(|p| &p["workers"]).collect();
    assert_eq!(workers, [&serde_json::json!([0, 1, 2, 3]), &serde_json::json!([4, 5, 6, 7])], "{j}");
    let mut addresses: Vec<&str> = places.iter().map(|p| p["address"].as_str().unwrap()).collect();
    addresses.sort();
    assert_eq!(addresses, ["10.0.0.1", "10.0.0.2"], "{j}");
    assert!(workers_in(&run_dir).is_empty(), "workers outlived their agents");
    if own {
        for a in &agents {
            assert!(workers_in(&own_dir_of(a)).is_empty(), "workers outlived their agents");
        }
    }
    // Nothing of the agents' hellos is left in it either.
    assert!(
        !run_dir.exists(),
        "a clean run leaves nothing: {:?}",
        std::fs::read_dir(&run_dir).map(|d| d.count())
    );
    assert!(places.iter().all(|p| p["own_dir"].as_bool().unwrap_or(false) == own), "{j}");
    if own {
        for a in &agents {
            let dir = own_dir_of(a);
            assert!(!dir.exists(), "the agent left {}", dir.display());
        }
    }

    // The second agent killed outright mid-run: the run fails in one line naming the
    // lost connection, and its workers die with it (their parent-death signal).
    let run_dir = tmp.path().join("lost");
    let (sup, [first, second]) =
        on_agents(&mut keeper, run_dir.to_str().unwrap(), &["-n", "8", "-k", "100000"]);
    // Under way: every worker started, and entries made.
    let resource = run_dir.join("resource.log");
    let entered = || std::fs::read_to_string(&resource).is_ok_and(|t| t.contains("\nEXIT "));
    let agent_pids = [first.pid(), second.pid()];
    wait_for("entries", || children_of(&agent_pids).len() == 8 && entered());
    let second = second.killed();
    let out = sup.output();
    let j = json(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let failure = j["failure"].as_str().unwrap();
    // Closed, or reset by the kernel when the agent died with bytes unread.
    assert!(
        failure.contains("died unexpectedly while running: lost: the connection to the agent at 10.0.0.2 "),
        "{failure}"
    );
    // The first agent's workers were stopped by the supervisor in order.
    let first = first.output();
    assert_eq!(first.status.code(), Some(0));
    wait_for("no worker left", || workers_in(&run_dir).is_empty());
    if own {
        wait_for("no worker left", || workers_in(&own_dir_of(&first)).is_empty());
        wait_for("no worker left", || workers_in(&own_dir_of(&second)).is_empty());
        assert!(!own_dir_of(&first).exists());
        // A SIGKILLed agent cannot remove its directory: what it leaves is this.
        let left = own_dir_of(&second);
        assert!(left.exists(), "{}", left.display());
        std::fs::remove_dir_all(&left).unwrap();
    }
}

/// The processes whose parent is one of `parents`.
fn children_of(parents: &[u32]) -> Vec<u32> {
    let parent = |pid: &u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // After the command's closing parenthesis: the state, then the parent's pid.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok())
    };
    let all =
        std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok());
    all.filter(|pid| parent(pid).is_some_and(|p| parents.contains(&p))).collect()
}

#[test]
fn agents_need_tcp_and_a_secret_and_a_bad_secret_file_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad");
    std::fs::write(&bad, "not hex").unwrap();
    let bad = bad.to_str().unwrap();
    let secret = secret_file(tmp.path());
    for (args, line) in [
        (vec!["run", "--agents", "2", "--secret-file", &secret], "--agents needs --transport tcp"),
        (vec!["run", "--agents", "2", "--transport", "tcp"], "--agents needs --secret-file"),
        (
            vec!["run", "--agents", "9", "--transport", "tcp", "--secret-file", &secret],
            "--agents must be between 1 and the 4 workers",
        ),
        (vec!["run", "--secret-file", &secret], "--secret-file is for --agents"),
        // The kernel's lock cannot reach a file on another host (negative control of
        // the resource through the agents: no flock through them).
        (
            vec!["run", "--agents", "1", "--transport", "tcp", "--secret-file", &secret, "--algo", "flock"],
            "--agents: \"flock\" locks the resource file with flock(2), which cannot reach a file on another host",
        ),
        (
            vec!["run", "--agents", "1", "--transport", "tcp", "--secret-file", bad],
            "a secret is 64 hex digits",
        ),
        (vec!["agent", "--connect", "127.0.0.1:1", "--secret-file", bad], "a secret is 64 hex digits"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(line), "{args:?}: {err}");
    }
}
