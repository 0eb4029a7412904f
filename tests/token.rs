//! The token-based algorithms through the real binary: clean audits, every entry made,
//! and message counts within what theory says for each N.

use crate::common::*;
use serde_json::Value;

// ---- raymond and neilsen-mizuno (tree-based tokens), and crashes for all of them ----

const TREE_SIZES: [u64; 5] = [2, 3, 5, 8, 16];

/// Run `algo` with N workers, `k` entries each, short sections; check the run is clean.
fn run_tree_algo(algo: &str, n: u64, k: u64) -> Value {
    run_clean(algo, n, k, ["0.3", "0.5"], &[])
}

/// The per-entry message count lies within the theory's range, whose top is `max`.
fn assert_tree_cost_within_theory(algo: &str, max: impl Fn(u64) -> f64) {
    for n in TREE_SIZES {
        let j = run_tree_algo(algo, n, 6);
        let t = &j["theory"];
        let (lo, hi) = (t["per_entry_min"].as_f64().unwrap(), t["per_entry_max"].as_f64().unwrap());
        assert_eq!((lo, hi), (0.0, max(n)), "{algo} N={n}: {t}");
        let m = j["messages"]["per_entry"].as_f64().unwrap();
        assert!(lo <= m && m <= hi + 1e-9, "{algo} N={n}: {m} per entry not in [{lo}, {hi}]");
        assert!(m > 0.0, "{algo} N={n}: {} entries by several workers cost nothing?", n * 6);
        // Only REQUEST and TOKEN are sent; in Raymond's each REQUEST gets one TOKEN back.
        let by_type = j["messages"]["by_type"].as_object().unwrap();
        assert!(by_type.keys().all(|k| k == "REQUEST" || k == "TOKEN"), "{algo} N={n}: {by_type:?}");
        if algo == "raymond" {
            assert_eq!(by_type["REQUEST"], by_type["TOKEN"], "{algo} N={n}");
        }
    }
}

#[test]
fn raymond_is_clean_and_within_two_diameters_per_entry() {
    // Diameters of the binary tree over 2, 3, 5, 8 and 16 nodes.
    assert_tree_cost_within_theory("raymond", |n| match n {
        2 => 2.0,
        3 => 4.0,
        5 => 6.0,
        8 => 10.0,
        16 => 14.0,
        _ => unreachable!(),
    });
}

#[test]
fn neilsen_mizuno_is_clean_and_within_d_plus_one_per_entry() {
    // The initial tree is a chain: D = N-1, so at most N per entry.
    assert_tree_cost_within_theory("neilsen-mizuno", |n| n as f64);
}

#[test]
fn a_killed_token_holder_stalls_every_token_algorithm_with_a_diagnosis() {
    // Crashes are outside the model: the token dies with its holder and nobody makes a
    // new one; the stall diagnosis shows each survivor waiting for the TOKEN.
    for algo in ["token-ring", "suzuki-kasami", "ra-token", "raymond", "neilsen-mizuno"] {
        let mut inside = false;
        for seed in 1..=10 {
            let seed_s = seed.to_string();
            let (out, j) = run_faulty(&[
                "--algo",
                algo,
                "-n",
                "4",
                "-k",
                "30",
                "--cs-ms",
                "0.3",
                "--think-ms",
                "0.5",
                "--seed",
                &seed_s,
                "--stall-ms",
                "500",
                "--faults",
                "kill holder at entry 10",
            ]);
            let note = j["faults"][0]["note"].as_str().unwrap_or_default().to_string();
            if !note.contains("inside") || note.contains("outside") {
                continue;
            }
            let err = stderr(&out);
            if out.status.code() == Some(0) {
                // The note is the file as last read: the holder can leave and pass the
                // token on between that read and the SIGKILL. Then nothing was lost.
                assert_eq!(j["violation_count"], 0, "{algo} seed {seed}: {j}");
                continue;
            }
            inside = true;
            assert_eq!(out.status.code(), Some(1), "{algo} seed {seed}: {err}");
            assert!(err.contains("no progress"), "{algo}: {err}");
            assert!(err.contains("waiting for the TOKEN"), "{algo}: {err}");
            assert!(j["failure"].as_str().unwrap().contains("no progress"), "{algo}");
            break;
        }
        assert!(inside, "{algo}: the holder was never inside when killed, ten runs out of ten");
    }
}

// ---- token-ring, suzuki-kasami and ra-token ----

mod ring_and_broadcast {
    use super::*;

    const SIZES: [u64; 5] = [2, 3, 5, 8, 16];

    fn run_clean(algo: &str, n: u64, k: u64, timing: [&str; 2]) -> Value {
        crate::common::run_clean(algo, n, k, timing, &[])
    }

    fn count(j: &Value, key: &str) -> u64 {
        j["messages"]["by_type"][key].as_u64().unwrap_or(0)
    }

    fn counter(j: &Value, key: &str) -> u64 {
        j["counters"][key].as_u64().unwrap_or(0)
    }

    #[test]
    fn token_ring_is_clean_and_pays_at_least_one_message_per_entry() {
        for n in SIZES {
            let k = 6;
            let j = run_clean("token-ring", n, k, ["0.3", "0.5"]);
            let t = &j["theory"];
            assert_eq!(t["per_entry_min"].as_f64(), Some(1.0), "N={n}: {t}");
            assert!(t.get("per_entry_max").is_none(), "N={n}: unbounded, so left out: {t}");
            let total = j["messages"]["total"].as_u64().unwrap();
            assert_eq!(count(&j, "TOKEN"), total, "N={n}: only TOKENs");
            // Every exit passes the token on.
            let m = j["messages"]["per_entry"].as_f64().unwrap();
            assert!(m >= 1.0, "N={n}: {m} per entry");
            // Fast passes are the exit pass and at most N-1 declines per entry (and the
            // first lap); the rest waited out a 1 ms hold each, one token at a time, so
            // they are bounded by the run's length: the ring never spins hot.
            let idle = counter(&j, "idle_passes");
            assert!(total - idle <= n * (n * k + 1), "N={n}: {total} messages, {idle} after a hold");
            let ms = j["elapsed_s"].as_f64().unwrap() * 1000.0;
            assert!(idle as f64 <= ms + 1.0, "N={n}: {idle} idle passes in {ms:.1} ms");
        }
    }

    #[test]
    fn an_idle_token_ring_does_not_spin() {
        // Long think times: the token is mostly unwanted, and goes round about once per
        // millisecond per hop instead of as fast as the processes can pass it.
        let j = run_clean("token-ring", 3, 5, ["0.3", "20"]);
        let total = j["messages"]["total"].as_u64().unwrap() as f64;
        let ms = j["elapsed_s"].as_f64().unwrap() * 1000.0;
        assert!(ms >= 20.0, "{ms} ms");
        // About one per ms; a spinning ring would pass it every few microseconds, a
        // hundred times more. The slack covers the stretch after the last entry, while
        // the supervisor collects statistics, which `elapsed_s` does not include.
        assert!(total <= 2.0 * ms + 200.0, "{total} messages in {ms:.1} ms");
        assert!(counter(&j, "idle_passes") > 0);
    }

    /// Each entry either found the token at hand (no message) or drew N-1 REQUESTs and
    /// one TOKEN: true of both broadcast algorithms, whatever order they serve in.
    fn assert_n_per_entry_that_moves_the_token(algo: &str) {
        for n in SIZES {
            let k = 6;
            let j = run_clean(algo, n, k, ["0.3", "0.5"]);
            let t = &j["theory"];
            assert_eq!(t["per_entry_min"].as_f64(), Some(0.0), "{algo} N={n}: {t}");
            assert_eq!(t["per_entry_max"].as_f64(), Some(n as f64), "{algo} N={n}: {t}");
            let moved = n * k - counter(&j, "free_entries");
            assert_eq!(count(&j, "TOKEN"), moved, "{algo} N={n}: {}", j["messages"]);
            assert_eq!(count(&j, "REQUEST"), (n - 1) * moved, "{algo} N={n}: {}", j["messages"]);
            assert_eq!(j["messages"]["total"].as_u64(), Some(n * moved), "{algo} N={n}");
            let m = j["messages"]["per_entry"].as_f64().unwrap();
            assert!(m <= n as f64 + 1e-9, "{algo} N={n}: {m} per entry");
        }
    }

    #[test]
    fn suzuki_kasami_costs_exactly_n_per_entry_that_moves_the_token() {
        assert_n_per_entry_that_moves_the_token("suzuki-kasami");
    }

    #[test]
    fn ra_token_costs_exactly_n_per_entry_that_moves_the_token() {
        assert_n_per_entry_that_moves_the_token("ra-token");
    }

    #[test]
    fn at_saturation_the_ring_costs_about_one_per_entry() {
        // No think time: whenever the token comes by, the node wants it. Only the first
        // lap and the end of the run (workers done, the token not yet parked) see nodes
        // declining it.
        let j = run_clean("token-ring", 5, 200, ["0", "0"]);
        let m = j["messages"]["per_entry"].as_f64().unwrap();
        assert!((1.0..1.25).contains(&m), "{m} per entry");
    }

    #[test]
    fn at_saturation_suzuki_kasami_still_costs_n_per_token_move() {
        // How often the token moves depends on timing (a worker may do many entries
        // before the others have even asked); what each move costs does not.
        let (n, k) = (5, 200);
        let j = run_clean("suzuki-kasami", n, k, ["0", "0"]);
        let moved = n * k - counter(&j, "free_entries");
        assert_eq!(count(&j, "TOKEN"), moved, "{}", j["messages"]);
        assert_eq!(j["messages"]["total"].as_u64(), Some(n * moved));
    }
}
