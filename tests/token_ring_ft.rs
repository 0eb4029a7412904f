//! `token-ring-ft` through real processes: the supervisor kills the worker inside the
//! critical section, the survivors make one new token and finish their entries, and the
//! audit is clean. Plain `token-ring` under the same plan loses its token and stalls,
//! which is the negative control.

use std::process::Output;

use crate::common::*;
use serde_json::Value;

const ENTRIES: u64 = 40;

/// `mutexlab run --algo ALGO -n 5 --entries 40 --faults 'kill holder at entry 10'`.
fn kill_the_holder(algo: &str, seed: u64, stall_ms: &str) -> (Output, Value) {
    let (seed, entries) = (seed.to_string(), ENTRIES.to_string());
    run_faulty(&[
        "--algo",
        algo,
        "-n",
        "5",
        "--entries",
        &entries,
        "--seed",
        &seed,
        "--stall-ms",
        stall_ms,
        "--faults",
        "kill holder at entry 10",
    ])
}

/// The worker the plan killed, and whether the supervisor saw it inside the critical
/// section. Best effort: between that look and the signal it may have left and passed
/// the token on.
fn victim(j: &Value) -> (usize, bool) {
    let faults = j["faults"].as_array().expect("a fault list");
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert_eq!(faults[0]["action"], "kill");
    let note = faults[0]["note"].as_str().unwrap();
    let w = faults[0]["worker"].as_u64().unwrap() as usize;
    (w, note.contains(&format!("w{w} inside")))
}

#[test]
fn token_ring_ft_survives_the_holder_killed_inside_with_a_clean_audit() {
    let mut killed_inside = 0;
    for seed in 1..=3 {
        let (out, j) = kill_the_holder("token-ring-ft", seed, "3000");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "seed {seed}: {err}");
        assert_eq!(j["ok"], true, "seed {seed}: {err}");
        assert_eq!(j["violations"].as_array().map(Vec::len), Some(0), "seed {seed}: {}", j["violations"]);
        let (dead, inside) = victim(&j);
        for (w, made) in j["entries"]["by_worker"].as_array().unwrap().iter().enumerate() {
            let made = made.as_u64().unwrap();
            if w == dead {
                assert!(made < ENTRIES, "seed {seed}: w{w} was killed at entry 10, yet made {made}");
            } else {
                assert_eq!(made, ENTRIES, "seed {seed}: survivor w{w}");
            }
        }
        // Whether the token died with it depends on timing (see `victim`); when it did,
        // the plain ring stalls (the test below), so finishing is the recovery.
        killed_inside += u32::from(inside);
    }
    assert!(killed_inside > 0, "the holder was never inside when killed, three runs out of three");
}

#[test]
fn plain_token_ring_under_the_same_plan_stalls_with_a_diagnosis() {
    for seed in 1..=10 {
        let (out, j) = kill_the_holder("token-ring", seed, "500");
        let (dead, inside) = victim(&j);
        if !inside {
            continue; // It may have passed the token on before it died: try another seed.
        }
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "seed {seed}: {err}");
        assert_eq!(j["ok"], false);
        assert!(j["failure"].as_str().unwrap().contains("no progress"), "{}", j["failure"]);
        assert!(err.contains("no progress for"), "{err}");
        assert!(err.contains("waiting for the TOKEN"), "{err}");
        assert!(err.contains(&format!("w{dead}: dead for")), "{err}");
        // The survivors' requests are left hanging; nothing worse.
        let kinds: Vec<&str> =
            j["violations"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap()).collect();
        assert!(!kinds.is_empty() && kinds.iter().all(|k| *k == "unserved"), "{kinds:?}");
        return;
    }
    panic!("the holder was never inside when killed, ten runs out of ten");
}
