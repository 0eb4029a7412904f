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
