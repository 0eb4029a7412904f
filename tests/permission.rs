//! The permission-based algorithms through the real binary: clean audits, and message
//! counts measured against what theory says for each N.

mod common;

use common::*;
use serde_json::Value;

const SIZES: [u64; 5] = [2, 3, 5, 8, 16];

fn run_algo(algo: &str, n: u64, k: u64, extra: &[&str]) -> Value {
    let n_s = n.to_string();
    let k_s = k.to_string();
    let mut args =
        vec!["run", "--algo", algo, "-n", &n_s, "-k", &k_s, "--cs-ms", "0.3", "--think-ms", "0.5", "--json"];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{algo} N={n}: {}\n{}", stderr(&out), stdout(&out));
    let j = json(&out);
    assert_eq!(j["ok"], true, "{algo} N={n}");
    assert_eq!(j["entries"]["total"], n * k, "{algo} N={n}");
    assert!(j["theory"].is_object(), "{algo} reports its theory");
    j
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
