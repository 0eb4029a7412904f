//! Hops per handoff ([`mutexlab::handoff`]) on one real, traced, saturated run per
//! family: the numbers the notes give are exact, whatever the machine's load.

use crate::common::*;
use mutexlab::handoff::{analyse, Handoffs};

/// A traced saturated run of `algo` with `n` workers and sections of 0.2 ms, analysed
/// leaving out `skip`.
fn handoffs(algo: &str, n: &str, skip: Option<u32>) -> Handoffs {
    handoffs_cs(algo, n, skip, "0.2")
}

/// [`handoffs`] with sections of `cs_ms`.
fn handoffs_cs(algo: &str, n: &str, skip: Option<u32>, cs_ms: &str) -> Handoffs {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let d = dir.to_str().unwrap();
    let args = ["run", "--algo", algo, "-n", n, "-k", "15", "--cs-ms", cs_ms, "--think-ms", "0"];
    let out = run(&[&args[..], &["--trace", "--run-dir", d, "--keep"]].concat());
    assert_eq!(out.status.code(), Some(0), "{algo}: {}", stderr(&out));
    analyse(&dir, skip).unwrap()
}

#[test]
fn the_coordinator_s_clients_hand_over_in_two_messages() {
    let h = handoffs("centralized", "4", Some(3));
    assert!(h.handoffs > 0, "{h:?}");
    assert_eq!((h.median(), h.no_path), (Some(2.0), 0), "{h:?}");
    assert!(h.delay_in_messages().unwrap() > 0.0);
}

#[test]
fn a_deferred_reply_and_a_passing_token_are_one_message() {
    for algo in ["ricart-agrawala", "token-ring"] {
        let h = handoffs(algo, "4", None);
        assert!(h.handoffs > 0, "{algo}: {h:?}");
        assert_eq!((h.median(), h.no_path), (Some(1.0), 0), "{algo}: {h:?}");
    }
}

#[test]
fn the_kernel_s_lock_hands_over_with_no_causal_path() {
    // flock sends nothing: no handoff between two workers can have a chain of messages.
    // A section of 1 ms, a timer the worker sleeps through: a spun one keeps the leaver
    // on its CPU, and the kernel's lock, which is not fair, goes back to it before a
    // woken waiter runs, so on a loaded machine no handoff between two workers may come.
    let h = handoffs_cs("flock", "3", None, "1");
    assert!(h.no_path > 0, "{h:?}");
    assert!(h.by_hops.keys().all(|&k| k == 0), "only a worker re-entering has a path: {h:?}");
    assert_eq!(h.message_median_ns, None);
}
