//! `mutexlab compare` end to end: real runs of two algorithms, the JSON's shape, and the
//! one figure theory fixes exactly (centralized: REQUEST, GRANT, RELEASE per entry); and
//! `mutexlab bench --json`, which `make bench ARGS=--json` relies on; and the page
//! `compare --html` writes.

use crate::common::*;

#[test]
fn compare_measures_centralized_and_token_ring_and_reports_them_as_json() {
    let out = run(&[
        "compare",
        "--algos",
        "centralized,token-ring",
        "-n",
        "3",
        "-k",
        "10",
        "--repeat",
        "1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["schema"], 1);
    assert_eq!(j["workers"], 3);
    assert!(j["message_time_us"].as_f64().unwrap() > 0.0, "{j}");
    let rows = j["algorithms"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["algorithm"].as_str().unwrap()).collect();
    assert_eq!(names, ["centralized", "token-ring"]);
    // Two progress lines per algorithm on stderr (its timing runs, then its row), none
    // on stdout (which is the JSON).
    let err = stderr(&out);
    assert_eq!(err.lines().filter(|l| l.starts_with("compare: ")).count(), 4, "{err}");
    assert_eq!(err.lines().filter(|l| l.contains("timing runs done")).count(), 2, "{err}");

    for r in rows {
        let name = r["algorithm"].as_str().unwrap();
        assert_eq!(r["clean"], true, "{name}: {r}");
        let m = &r["messages_per_entry"];
        assert!(m["saturation"].as_f64().unwrap() > 0.0, "{name}: {m}");
        assert!(m["notes"].as_str().unwrap().contains("(notes)"), "{name}: {m}");
        assert!(m["theory"]["formula"].is_string(), "{name}: {m}");
        // At saturation somebody is always waiting: the sync delay has samples.
        let sync = &r["sync_delay"];
        assert!(sync["samples"].as_u64().unwrap() > 0, "{name}: {sync}");
        assert!(sync["ms"].as_f64().unwrap() > 0.0 && sync["t"].as_f64().unwrap() > 0.0, "{name}");
        assert!(r["entry_delay"]["t"].as_f64().unwrap() > 0.0, "{name}: {r}");
        let runs = r["problems"]["runs"].as_array().unwrap();
        let faults: Vec<&str> = runs.iter().map(|f| f["fault"].as_str().unwrap()).collect();
        assert_eq!(faults, ["non-holder crash", "holder crash", "coordinator crash", "lost messages"]);
        for f in runs {
            let o = f["outcome"].as_str().unwrap();
            assert!(["survives", "stalls", "unsafe"].contains(&o), "{name}: {f}");
        }
    }

    let central = &rows[0];
    assert_eq!(central["messages_per_entry"]["light"].as_f64(), Some(3.0), "{central}");
    // Handoffs in message hops, from the saturated run's trace: RELEASE then GRANT for
    // the coordinator's clients, the TOKEN's one pass for the ring.
    assert_eq!(central["sync_hops"]["median"].as_f64(), Some(2.0), "{central}");
    assert_eq!(central["sync_hops"]["notes"], "2: RELEASE, GRANT");
    assert!(central["sync_hops"]["in_message_times"].as_f64().unwrap() > 0.0, "{central}");
    let u = &central["sync_hops"]["utilisation"];
    assert!(u["measured"].as_f64().unwrap() > 0.0 && u["predicted"].as_f64().unwrap() < 1.0, "{u}");
    assert_eq!(rows[1]["sync_hops"]["median"].as_f64(), Some(1.0), "{}", rows[1]);
    // The notes' own problem: with its coordinator dead, nobody is served again.
    let coord = &central["problems"]["runs"][2];
    assert_eq!(coord["outcome"], "stalls", "{coord}");
    assert_eq!(coord["as_intended"], true, "{coord}");
}

#[test]
fn compare_counts_the_delay_before_entry_in_the_notes_message_times() {
    // The 002 notes' table: centralized 2, Ricart-Agrawala 2(n-1), "in message times",
    // assuming messages go one after another. At light load most requests find nobody
    // ahead (quiet), and for those the count is exact; a busier entry's causal past holds
    // its own request and replies too, so no entry has fewer.
    let out = run(&[
        "compare",
        "--algos",
        "centralized,ricart-agrawala",
        "-n",
        "4",
        "-k",
        "12",
        "--repeat",
        "1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    crate::schemas::assert_valid("compare.schema.json", &j);
    for (r, formula, exact) in [(&j["algorithms"][0], "2", 2), (&j["algorithms"][1], "2(n-1) = 6", 6)] {
        let e = &r["entry_messages"];
        let c = &e["counts"];
        assert_eq!(e["notes"]["formula"], formula, "{e}");
        assert_eq!(e["notes"]["min"].as_f64(), Some(f64::from(exact)), "{e}");
        let quiet = c["quiet"].as_u64().unwrap();
        assert!(quiet > 0, "a light-load run with no quiet entry: {e}");
        // Every quiet entry: exactly the formula in messages, on a chain of two.
        let only = |k: u32, n: u64| serde_json::json!({ k.to_string(): n });
        assert_eq!(c["sequential_quiet"], only(exact, quiet), "{e}");
        assert_eq!(c["chain_quiet"], only(2, quiet), "{e}");
        assert_eq!(e["quiet_within_notes"], true, "{e}");
        // No entry at all below it.
        let least = c["sequential"].as_object().unwrap().keys().map(|k| k.parse::<u32>().unwrap()).min();
        assert_eq!(least, Some(exact), "{e}");
        assert!(e["wall_in_message_times"]["median"].as_f64().unwrap() > 0.0, "{e}");
    }
    // The coordinator's own entries cost nothing and are left out, as for the counts.
    assert!(j["algorithms"][0]["entry_messages"]["counts"]["skipped"].as_u64().unwrap() > 0);
    // The table says which claim is whose.
    let md =
        run(&["compare", "--algos", "ricart-agrawala", "-n", "3", "-k", "4", "--repeat", "1", "--markdown"]);
    assert_eq!(md.status.code(), Some(0), "{}", stderr(&md));
    let md = stdout(&md);
    let row = md.lines().find(|l| l.starts_with("| ricart-agrawala |")).unwrap();
    assert!(row.contains("| 2(N-1) = 4 (notes) |"), "the notes' claim, marked: {md}");
    assert!(row.contains("| notes (Distributed): 2(n-1) = 4; quiet entries "), "{md}");
    assert!(md.contains("| sync hops (registry's claim) |"), "{md}");

    // The manager (003 notes): a quiet request's W+3T, and utilisation at three loads.
    let m = &j["manager"];
    assert_eq!(m["algorithm"], "centralized", "{m}");
    let cost = &m["cost"];
    let (w, t) = (cost["w_us"].as_f64().unwrap(), cost["t_us"].as_f64().unwrap());
    // The JSON gives µs to three decimals: equal within their rounding.
    assert!((cost["predicted_us"].as_f64().unwrap() - (w + 3.0 * t)).abs() < 0.005, "{cost}");
    // A request holds the section, so it costs more than W.
    assert!(cost["measured_us"]["median"].as_f64().unwrap() > w, "{cost}");
    let loads = m["utilisation"].as_array().unwrap();
    assert_eq!(loads.len(), 3, "{m}");
    for u in loads {
        let measured = u["measured"]["median"].as_f64().unwrap();
        assert!(measured > 0.0 && measured <= 1.0, "{u}");
        let (w, t) = (u["w_us"].as_f64().unwrap(), u["t_us"].as_f64().unwrap());
        // w_us and t_us are rounded to three decimals in the JSON, the prediction is not.
        assert!((u["predicted"].as_f64().unwrap() - w / (w + 2.0 * t)).abs() < 1e-5, "{u}");
    }
    // The sections were chosen against a T: W ≈ T, 10 T and 100 T of it, and each
    // light-load run's quiet requests stand beside W+3T.
    let against = m["chosen_against_t_us"].as_f64().unwrap();
    for (u, times) in loads.iter().zip([1.0, 10.0, 100.0]) {
        assert_eq!(u["times_t"].as_f64(), Some(times), "{u}");
        let asked_us = u["cs_ms"].as_f64().unwrap() * 1e3;
        assert!((asked_us - times * against).abs() < 0.01 * asked_us, "{u}");
        let k = &u["cost"];
        let (w, t) = (k["w_us"].as_f64().unwrap(), k["t_us"].as_f64().unwrap());
        assert!((k["predicted_us"].as_f64().unwrap() - (w + 3.0 * t)).abs() < 0.005, "{k}");
        // A spun or timed section lasts at least what was asked (µs rounded to three decimals).
        assert!(w >= asked_us - 0.001, "{u}");
    }
    // Longer sections use the resource more of the time, as W/(W+2T) says.
    let share = |i: usize| loads[i]["measured"]["median"].as_f64().unwrap();
    assert!(share(0) < share(2), "{m}");

    // Under the notes' model (no detector, the default) Ricart-Agrawala stalls on a
    // crash; the perfect detector's rescue is a column of its own.
    assert_eq!(j["fault_runs"]["detector"], "none");
    assert_eq!(j["fault_runs"]["rescue_detector"], "perfect");
    let ra = &j["algorithms"][1]["problems"];
    assert_eq!(ra["runs"][0]["outcome"], "stalls", "{ra}");
    let rescue = ra["rescue"].as_array().unwrap();
    let faults: Vec<&str> = rescue.iter().map(|f| f["fault"].as_str().unwrap()).collect();
    assert_eq!(faults, ["non-holder crash", "holder crash", "coordinator crash"], "{ra}");
    assert_eq!(rescue[0]["repeats"][0]["outcome"], "survives", "{ra}");
}

#[test]
fn compare_repeat_shows_each_figure_with_its_range_and_each_fault_over_the_repeats() {
    let out = run(&["compare", "--algos", "centralized", "-n", "3", "-k", "5", "--repeat", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!((j["schema"].as_u64(), j["repeat"].as_u64()), (Some(1), Some(2)), "{j}");
    let r = &j["algorithms"][0];
    let sp = &r["spread"];
    assert_eq!(sp["repeats"], 2, "{sp}");
    let light = &sp["messages_light"];
    assert_eq!(light["runs"], 2, "{sp}");
    // The figure in the old field is the median of the two.
    let (lo, hi) = (light["min"].as_f64().unwrap(), light["max"].as_f64().unwrap());
    assert_eq!(r["messages_per_entry"]["light"].as_f64(), Some((lo + hi) / 2.0), "{r}");
    assert!(sp["sync_delay_ms"]["min"].as_f64().unwrap() <= sp["sync_delay_ms"]["max"].as_f64().unwrap());
    let faults = r["problems"]["by_fault"].as_array().unwrap();
    assert_eq!(faults.len(), 4, "{r}");
    for f in faults {
        assert_eq!(f["repeats"].as_array().unwrap().len(), 2, "{f}");
        let t = &f["tally"];
        let counted: u64 =
            ["survives", "stalls", "unsafe", "missed"].iter().map(|k| t[k].as_u64().unwrap()).sum();
        assert_eq!(counted, 2, "{f}");
        // No detector is modelled: every fault has the simulator's decision.
        assert_eq!(f["sim"]["seeds"], "0..50", "{f}");
    }
    // Its coordinator's crash stalls it in the simulator on every seed.
    assert_eq!(faults[2]["sim"]["tally"]["stalls"], 50, "{}", faults[2]);

    // The same spread in the Markdown table.
    let out =
        run(&["compare", "--algos", "centralized", "-n", "2", "-k", "3", "--repeat", "2", "--markdown"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = stdout(&out);
    let row = md.lines().find(|l| l.starts_with("| centralized |")).unwrap();
    assert!(row.contains(" [") && row.contains("–"), "a figure with its range: {md}");
    let faults = md.lines().filter(|l| l.starts_with("| centralized |")).nth(1).unwrap();
    assert!(faults.contains("/2") && faults.contains("sim: always stalls (seeds 0..50)"), "{md}");
    assert!(md.contains("Every run made 2 times"), "{md}");
}

#[test]
fn compare_html_writes_the_page_beside_the_text_table_and_names_it_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("compare.html");
    let p = page.to_str().unwrap();
    let out = run(&["compare", "--algos", "centralized", "-n", "2", "-k", "2", "--repeat", "1", "--html", p]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The text table still goes to stdout, the page's path to stderr.
    assert!(stdout(&out).starts_with("algorithm "), "{}", stdout(&out));
    let shown = page.canonicalize().unwrap();
    assert!(stderr(&out).contains(&format!("report: {}", shown.display())), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches(r#"<rect data-bar="light""#).count(), 1, "{html}");
    assert_eq!(html.matches(r#"<rect data-bar="saturation""#).count(), 1);
    assert_eq!(html.matches("<rect data-cell=").count(), 4, "one cell per fault");
    // The delay before entry in the notes' message times, over their formula (2); two
    // entries of one client may both meet the coordinator's own request (none quiet).
    let bars = html.matches(r#"<rect data-bar="sequential""#).count();
    assert_eq!(bars + html.matches("delay before entry: no quiet entry").count(), 1, "{html}");
    assert_eq!(html.matches(r#"<rect data-bar="chain""#).count(), bars, "{html}");
    assert!(html.contains(r#"<rect data-formula="2" class="band exact""#), "{html}");
    // At N = 2 every handoff touches the coordinator, whose own are left out.
    let hops = html.matches(r#"<rect data-bar="hops""#).count();
    assert_eq!(hops + html.matches("synchronisation delay: no handoff traced").count(), 1, "{html}");
    assert!(html.contains("<td>centralized</td>"), "the table's row");
    assert!(html.contains("<title>mutexlab compare: 1 algorithm, N = 2</title>"), "{html}");

    // A page that cannot be written is refused before anything is measured.
    let nowhere = tmp.path().join("absent").join("c.html");
    let out = run(&["compare", "--algos", "centralized", "--html", nowhere.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write") && err.lines().count() == 1, "{err}");
    assert!(stdout(&out).is_empty(), "nothing was measured");
}

/// Kills and reaps a background `compare` even when the test fails.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_interrupted_compare_leaves_an_existing_page_as_it_was() {
    use std::io::BufRead as _;
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("notes.html");
    std::fs::write(&page, "my own notes").unwrap();
    let mut child = Reaped(
        mutexlab()
            .args(["compare", "--algos", "centralized,token-ring,raymond", "-n", "2", "-k", "2", "--html"])
            .arg(&page)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Measuring has begun once the first algorithm's line is out.
    let mut err = std::io::BufReader::new(child.0.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("compare: ") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "compare ended before measuring anything");
    }
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "my own notes", "truncated while measuring");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.0.id() as i32), nix::sys::signal::Signal::SIGINT)
        .unwrap();
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "my own notes", "an interrupted compare touched it");
}

#[test]
fn compare_refuses_an_election_and_a_one_worker_table_with_exit_2() {
    for (args, says) in [
        (vec!["compare", "--algos", "bully"], "is an election"),
        (vec!["compare", "--algos", "centralized,lamprey"], "unknown algorithm \"lamprey\""),
        (vec!["compare", "-n", "1"], "-n must be between 2 and 32"),
        (vec!["compare", "--repeat", "0"], "--repeat must be between 1 and 50"),
        (vec!["compare", "--cs-ms", "0"], "--cs-ms must be above 0 and at most 100"),
        (vec!["compare", "--cs-ms", "NaN"], "--cs-ms must be above 0"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
    }
}

#[test]
fn bench_json_is_one_object_with_t_and_a_row_per_mutex_run() {
    // Some thirty runs of a debug build: on a loaded machine more than PATIENCE.
    let mut c = assert_cmd::Command::cargo_bin("mutexlab").unwrap();
    let out = c.args(["bench", "--quick", "--json"]).timeout(PATIENCE * 5).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["schema"], 1);
    crate::schemas::assert_valid("bench.schema.json", &j);
    assert!(j["message_time_us"].as_f64().unwrap() > 0.0, "{j}");
    let sat = j["saturation"].as_array().unwrap();
    // Every row is a mutual-exclusion run that was made: elections are not benched.
    assert!(sat.iter().any(|r| r["algorithm"] == "centralized" && r["workers"] == 8), "{j}");
    for r in sat.iter().chain(j["light"].as_array().unwrap()) {
        assert!(r.get("error").is_none(), "{r}");
        assert!(r["entries"].as_u64().unwrap() > 0, "{r}");
    }
    assert!(!sat.iter().any(|r| r["algorithm"] == "bully"), "{j}");
    // C, and each row's k and share of 1/(C+kT): hops counted on a traced run.
    assert!(j["resource_cost_us"].as_f64().unwrap() > 0.0, "{j}");
    let row = |algo: &str, n: u32| sat.iter().find(|r| r["algorithm"] == algo && r["workers"] == n).unwrap();
    let central = row("centralized", 8);
    assert_eq!(central["k_from"], "trace", "{central}");
    let k = central["k"].as_f64().unwrap();
    // Its clients hand over in two messages; the coordinator's own entries in fewer.
    assert!(k > 0.0 && k <= 2.0, "{central}");
    assert!(central["limit_cs_per_s"].as_f64().unwrap() > 0.0, "{central}");
    // One TOKEN pass, more where a worker between declines it.
    let ring = row("token-ring", 8)["k"].as_f64().unwrap();
    assert!((1.0..=7.0).contains(&ring), "{j}");
    // flock sends nothing: k is 0, its limit 1/C.
    assert_eq!(row("flock", 2)["k"].as_f64(), Some(0.0), "{j}");
    // What recording costs, measured in the same run: three ways, against the first.
    let ways = j["recording"]["ways"].as_array().unwrap();
    let names: Vec<&str> = ways.iter().map(|w| w["way"].as_str().unwrap()).collect();
    assert_eq!(names, ["off", "flight recorder", "trace"], "{j}");
    for w in ways {
        assert_eq!(w["failed"], 0, "{w}");
        assert!(
            w["cpu_us_per_entry"].as_f64().unwrap() > 0.0 && w["throughput_per_s"].as_f64().unwrap() > 0.0
        );
    }
    assert_eq!(ways[0]["cpu_vs_off"].as_f64(), Some(1.0), "{j}");
    // The baseline beside mutexlab's runs: the ring and the lock at N = 8, each round
    // measured on both sides, every share a result (at most 100 %) or counted as an error.
    let base = &j["baseline"];
    assert_eq!(base["rounds"], 2, "{base}");
    assert_eq!(base["frame_bytes"], 16, "{base}");
    assert!(base["load_before"]["one"].as_f64().is_some(), "{base}");
    let pairs = base["pairs"].as_array().unwrap();
    let found: Vec<(&str, u64, &str)> = pairs
        .iter()
        .map(|p| {
            (
                p["algorithm"].as_str().unwrap(),
                p["workers"].as_u64().unwrap(),
                p["baseline"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(found, [("token-ring", 8, "ring"), ("centralized", 8, "central")], "{base}");
    for p in pairs {
        assert_eq!(p["failed"], 0, "{p}");
        assert!(p["bare"]["cpu_us_per_entry"]["median"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["mutexlab"]["wall_us_per_entry"]["median"].as_f64().unwrap() > 0.0, "{p}");
        for share in ["cpu_share", "wall_share"] {
            let s = &p[share];
            assert_eq!(s["rounds"].as_u64().unwrap() + s["measuring_errors"].as_u64().unwrap(), 2, "{p}");
            if let Some(m) = s["max_percent"].as_f64() {
                assert!(m <= 100.0, "{p}");
            }
        }
    }
    // Each entry of the bare centralized lock at N = 8 takes 3 messages from 7 of 8.
    assert_eq!(pairs[1]["bare"]["messages_per_entry"].as_f64(), Some(2.625), "{base}");
}

#[test]
fn compare_takes_the_heartbeat_flags_its_help_offers() {
    // `--help` offered --heartbeat-ms under --detector, and compare refused it.
    let help = stdout(&run(&["compare", "--help"]));
    assert!(help.contains("--heartbeat-ms") && help.contains("--suspect-ms"), "{help}");
    let out = run(&[
        "compare",
        "--algos",
        "centralized",
        "-n",
        "2",
        "-k",
        "2",
        "--detector",
        "heartbeat",
        "--heartbeat-ms",
        "20",
        "--repeat",
        "1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("heartbeat (every 20 ms, suspect after 70 ms)"), "{text}");
    // Checked as `run` checks them, before anything is measured.
    for (args, says) in [
        (["--heartbeat-ms", "0"], "--heartbeat-ms must be between 1 and 60000, not 0"),
        (["--suspect-ms", "10"], "--suspect-ms must be above --heartbeat-ms (50)"),
    ] {
        let mut all = vec!["compare", "--algos", "centralized", "--detector", "heartbeat"];
        all.extend(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        assert!(stderr(&out).contains(says) && stderr(&out).lines().count() == 1, "{}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }
}
