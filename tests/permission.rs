//! The permission-based algorithms through the real binary: clean audits, and message
//! counts measured against what theory says for each N.

use crate::common::*;
use serde_json::Value;

const SIZES: [u64; 5] = [2, 3, 5, 8, 16];

fn run_algo(algo: &str, n: u64, k: u64, extra: &[&str]) -> Value {
    run_clean(algo, n, k, ["0.3", "0.5"], extra)
}

fn per_entry(j: &Value) -> f64 {
    j["messages"]["per_entry"].as_f64().unwrap()
}

#[test]
fn lamport_costs_exactly_3_n_minus_1() {
    for n in SIZES {
        let j = run_algo("lamport", n, 6, &[]);
        let expect = 3.0 * (n - 1) as f64;
        assert_eq!(per_entry(&j), expect, "N={n}: {}", j["messages"]);
        assert_eq!(j["theory"]["per_entry_min"].as_f64().unwrap(), expect);
    }
}

#[test]
fn ricart_agrawala_costs_exactly_2_n_minus_1() {
    for n in SIZES {
        let j = run_algo("ricart-agrawala", n, 6, &[]);
        let expect = 2.0 * (n - 1) as f64;
        assert_eq!(per_entry(&j), expect, "N={n}: {}", j["messages"]);
        assert_eq!(j["theory"]["per_entry_min"].as_f64().unwrap(), expect);
    }
}

#[test]
fn roucairol_carvalho_never_costs_more_than_ricart_agrawala() {
    for n in SIZES {
        let j = run_algo("ricart-agrawala-rc", n, 6, &[]);
        assert!(per_entry(&j) <= 2.0 * (n - 1) as f64, "N={n}: {}", per_entry(&j));
    }
}

#[test]
fn maekawa_stays_within_its_bounds() {
    for n in SIZES {
        let j = run_algo("maekawa", n, 6, &[]);
        let (lo, hi) =
            (j["theory"]["per_entry_min"].as_f64().unwrap(), j["theory"]["per_entry_max"].as_f64().unwrap());
        let m = per_entry(&j);
        assert!(lo <= m + 1e-9 && m <= hi + 1e-9, "N={n}: {m} not in [{lo}, {hi}]");
    }
}

#[test]
fn voting_is_safe_and_reports_its_cost() {
    for n in SIZES {
        let j = run_algo("voting", n, 5, &[]);
        assert!(per_entry(&j) >= j["theory"]["per_entry_min"].as_f64().unwrap() - 1e-9, "N={n}");
    }
    let j = run_algo("voting", 5, 5, &["--replicas", "3"]);
    assert!(per_entry(&j) > 0.0);
}

/// A run of `algo` with short sections and a fault plan, through `common::run_faulty`.
fn run_faulty_algo(
    algo: &str,
    n: u64,
    k: u64,
    seed: u64,
    plan: &str,
    extra: &[&str],
) -> (std::process::Output, Value) {
    let (n_s, k_s, seed_s) = (n.to_string(), k.to_string(), seed.to_string());
    let mut args = vec!["--algo", algo, "-n", &n_s, "-k", &k_s, "--cs-ms", "0.3", "--think-ms", "0.5"];
    args.extend_from_slice(&["--seed", &seed_s, "--faults", plan]);
    args.extend_from_slice(extra);
    run_faulty(&args)
}

/// Run `plan` (which kills w2 at some entry) with seed after seed until w2 was outside
/// the critical section when it died. A plan cannot name a non-holder, and a run where
/// w2 happened to be inside tests something else: the holder's crash, whose section and
/// fence the auditor cannot always excuse.
fn run_killing_a_non_holder(algo: &str, n: u64, k: u64, plan: &str) -> (std::process::Output, Value) {
    for seed in 1..=10 {
        let (out, j) = run_faulty_algo(algo, n, k, seed, plan, &["--stall-ms", "2000"]);
        let note = j["faults"][0]["note"].as_str().unwrap_or_default().to_string();
        if note.contains("outside") {
            return (out, j);
        }
        assert!(note.contains("inside"), "{algo} seed {seed}: {note:?}\n{}", stderr(&out));
    }
    panic!("{algo}: w2 was inside the section whenever it was killed, ten runs out of ten");
}

fn actions(j: &Value) -> Vec<&str> {
    j["faults"].as_array().unwrap().iter().map(|f| f["action"].as_str().unwrap()).collect()
}

fn by_worker(j: &Value) -> Vec<u64> {
    j["entries"]["by_worker"].as_array().unwrap().iter().map(|e| e.as_u64().unwrap()).collect()
}

#[test]
fn killing_a_non_holder_mid_run_is_survived_by_ricart_agrawala_and_voting() {
    for algo in ["ricart-agrawala", "ricart-agrawala-rc", "voting"] {
        let (out, j) = run_killing_a_non_holder(algo, 4, 15, "kill 2 at entry 10");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{algo}: {err}");
        assert_eq!(actions(&j), vec!["kill"], "{algo}: {err}");
        assert_eq!(j["ok"], true, "{algo}: {}", j["violations"]);
        assert_eq!(j["violations"].as_array().unwrap().len(), 0, "{algo}");
        // The survivors do every entry, without waiting for the dead; the dead one
        // stops short, and that is excused.
        let by = by_worker(&j);
        assert_eq!((by[0], by[1], by[3]), (15, 15, 15), "{algo}: {by:?}");
        assert!(by[2] < 15, "{algo}: {by:?}");
        assert_eq!(j["entries"]["total"], 45 + by[2], "{algo}");
    }
}

#[test]
fn a_killed_and_restarted_peer_is_asked_again_under_ricart_agrawala() {
    // The restart comes while the others are still competing, so they must ask the
    // fresh process (and it must ask them) for the run to finish.
    for algo in ["ricart-agrawala", "ricart-agrawala-rc"] {
        let (out, j) = run_killing_a_non_holder(algo, 4, 30, "kill 2 at entry 10; restart 2 at entry 25");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{algo}: {err}");
        assert_eq!(actions(&j), vec!["kill", "restart"], "{algo}: {err}");
        assert_eq!(j["faults"][1]["incarnation"], 1);
        assert_eq!(j["ok"], true, "{algo}: {}", j["violations"]);
        assert_eq!(by_worker(&j), vec![30; 4], "{algo}");
    }
}

#[test]
fn voting_with_a_majority_of_coordinators_dead_stalls_and_says_why() {
    // m = 4 needs 3 votes: with w2 and w3 dead no attempt can succeed, and the survivors
    // say so instead of waiting for answers that will never come.
    let (out, j) =
        run_faulty_algo("voting", 4, 30, 1, "kill 2 at entry 10; kill 3 at entry 14", &["--stall-ms", "500"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(actions(&j), vec!["kill", "kill"], "{err}");
    assert!(err.contains("no progress"), "{err}");
    assert!(err.contains("coordinators w2, w3 are down, a majority of 3 of 4 is out of reach"), "{err}");
}
