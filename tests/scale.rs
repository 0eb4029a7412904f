//! Scale: workers of an algorithm that talks to few peers hold only the connections
//! they use (a token ring's worker, its successor and its predecessor), where an
//! all-to-all algorithm's hold one per peer; and a run that would need more descriptors
//! than the system allows says so in one line before it starts.

use crate::common::*;

/// Sockets among worker `pid`'s descriptors (0 if it is gone).
fn sockets_of(pid: i32) -> usize {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return 0 };
    rd.flatten()
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.to_string_lossy().starts_with("socket:")))
        .count()
}

/// Run `algo` with `n` workers for `secs` seconds; once every worker has entered
/// twice, count each one's sockets; then check the run was clean. The counts, by pid.
fn sockets_during_a_clean_run(algo: &str, n: usize, secs: &str) -> Vec<usize> {
    let bg = Background::start(&[
        "-n",
        &n.to_string(),
        "--algo",
        algo,
        "--duration",
        secs,
        "--cs-ms",
        "1",
        "--think-ms",
        "1",
        "--json",
    ]);
    bg.wait_for_exits(2 * n);
    let workers = bg.workers();
    assert_eq!(workers.len(), n, "{algo}: workers {workers:?}");
    let counts: Vec<usize> = workers.iter().map(|&p| sockets_of(p)).collect();
    let out = bg.finish();
    assert_eq!(out.status.code(), Some(0), "{algo}: {}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["ok"], true, "{algo}: {j}");
    assert_eq!(j["violations"].as_array().map(Vec::len), Some(0), "{algo}: {}", j["violations"]);
    counts
}

#[test]
fn a_token_ring_worker_holds_only_its_neighbours_connections() {
    let n = 16;
    let ring = sockets_during_a_clean_run("token-ring", n, "2s");
    // Negative control: an all-to-all algorithm holds a connection to every peer.
    let all = sockets_during_a_clean_run("ricart-agrawala", n, "2s");
    let (ring_max, all_min) = (*ring.iter().max().unwrap(), *all.iter().min().unwrap());
    // The same fixed sockets (control link, listener, signal pipe) in both; the ring's
    // two mesh connections against N-1 = 15.
    assert!(ring_max + (n - 1) - 2 <= all_min, "token-ring {ring:?} against ricart-agrawala {all:?}");
    assert!(ring.iter().all(|&c| c > 0), "{ring:?}");
}

/// `mutexlab run ARGS` with its descriptor limits set to `soft` and `hard` before it
/// starts.
fn run_with_nofile(soft: u64, hard: u64, args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = mutexlab();
    cmd.arg("run").args(args).arg("--run-dir").arg(dir.path().join("run"));
    // SAFETY: between fork and exec, one async-signal-safe system call.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, soft, hard)
                .map_err(std::io::Error::from)
        });
    }
    cmd.output().expect("mutexlab runs")
}

#[test]
fn too_few_descriptors_is_one_line_and_exit_3_before_the_run_and_a_soft_limit_is_raised() {
    let args = ["-n", "16", "--algo", "token-ring", "-k", "3", "--json"];
    let out = run_with_nofile(64, 64, &args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("16 workers need 80 file descriptors per process")
            && err.contains("the hard limit (`ulimit -Hn`) is 64"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing ran");
    // Negative controls: the same soft limit under a higher hard one is raised, and a
    // limit that is enough is left alone; both runs are clean.
    for (soft, hard) in [(64, 4096), (256, 256)] {
        let out = run_with_nofile(soft, hard, &args);
        assert_eq!(out.status.code(), Some(0), "soft {soft}, hard {hard}: {}", stderr(&out));
        assert_eq!(json(&out)["ok"], true);
    }
}
