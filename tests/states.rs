//! Real processes' node states (`run --states`): each worker records its node's state
//! as STATE lines in its trace, or in its flight recorder's ring (so a SIGKILLed
//! worker's survive), and the report shows them at a clicked arrow; without the flag
//! there are none, and the page says so.

use std::path::Path;

use crate::common::*;
use mutexlab::trace;

/// Every worker's STATE lines in `dir`, as states.
fn states_in(dir: &Path, workers: u32) -> Vec<trace::State> {
    (0..workers)
        .flat_map(|w| {
            let text = std::fs::read_to_string(dir.join(trace::file_name(w))).unwrap();
            text.lines()
                .filter(|l| l.starts_with("STATE "))
                .map(|l| l.parse::<trace::State>().unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `run --algo ricart-agrawala -n 3 -k 2 --trace --keep` with `extra`, in `dir`.
fn kept(dir: &Path, extra: &[&str]) {
    let d = dir.to_str().unwrap();
    let mut args =
        vec!["run", "--algo", "ricart-agrawala", "-n", "3", "-k", "2", "--trace", "--keep", "--run-dir", d];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_run_with_states_traces_its_nodes_fields_and_its_report_shows_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    kept(&dir, &["--states"]);
    let states = states_in(&dir, 3);
    for w in 0..3 {
        let mine: Vec<&trace::State> = states.iter().filter(|s| s.w == w).collect();
        assert!(mine.len() >= 2, "w{w} recorded {} states", mine.len());
        // Ricart-Agrawala's own field names, as the node's Debug has them.
        for st in &mine {
            let v: serde_json::Value = serde_json::from_str(&st.json).unwrap();
            for field in ["requesting", "deferred", "ticket", "awaiting"] {
                assert!(v.get(field).is_some(), "no {field} in {}", st.json);
            }
        }
        // A state is recorded only when it changed.
        assert!(mine.windows(2).all(|p| p[0].json != p[1].json), "w{w} recorded a state twice in a row");
        // Some step asked to enter: a state with `requesting` true.
        assert!(mine.iter().any(|s| s.json.contains(r#""requesting":true"#)), "w{w}");
    }
    // The readers take the trace as before; STATE lines are no events.
    let t = trace::load(&dir).unwrap();
    assert!(!t.events.is_empty());
    let listed = run(&["trace", dir.to_str().unwrap()]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert!(!stdout(&listed).contains("STATE"));
    let note = format!("left out the {} node states the run recorded", states.len());
    assert!(stderr(&listed).contains(&note), "{}", stderr(&listed));
    let shiviz = run(&["trace", "--shiviz", dir.to_str().unwrap()]);
    assert!(!stdout(&shiviz).contains("STATE") && !stdout(&shiviz).contains("requesting"));
    // The page: the states as tables of their fields, and arrows that name them.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains(r#"<div id="node-states" hidden"#), "no state store");
    assert!(html.contains("<th>requesting</th>") && html.contains("<th>deferred</th>"));
    assert!(html.contains(" data-sst=\"0\""), "no arrow names a state");
    assert!(html.contains(" data-rst=\""), "no arrow names its receiver's state");
    assert!(!html.contains("This run recorded no node states"));
}

#[test]
fn a_run_without_states_records_none_and_its_page_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    kept(&dir, &[]);
    assert!(states_in(&dir, 3).is_empty());
    let listed = run(&["trace", dir.to_str().unwrap()]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert!(!stderr(&listed).contains("node states"), "{}", stderr(&listed));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("This run recorded no node states (run --states records them)."));
    assert!(!html.contains("id=\"node-states\"") && !html.contains(" data-sst=\""));
}

#[test]
fn a_killed_worker_s_states_survive_in_its_flight_recorder() {
    // w1 is SIGKILLed; the others wait for its REPLY until the stall
    // window ends the run, which fails and writes the rings out.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = ["run", "--json", "--algo", "ricart-agrawala", "-n", "3", "--detector", "none", "-k", "1000"];
    let rest = [
        "--faults",
        "kill 1 at entry 3",
        "--stall-ms",
        "500",
        "--states",
        "--run-dir",
        dir.to_str().unwrap(),
    ];
    let out = run(&[&args[..], &rest[..]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(json(&out)["trace_complete"], false, "the trace came from the rings");
    let states = states_in(&dir, 3);
    assert!(states.iter().any(|s| s.w == 1), "the killed w1's states are lost");
    // Whole states of its one life, read back from the ring it left at its death.
    for st in states.iter().filter(|s| s.w == 1) {
        assert_eq!(st.inc, 0);
        let v: serde_json::Value = serde_json::from_str(&st.json).unwrap();
        assert!(v["ticket"].is_u64() && v["requesting"].is_boolean(), "{}", st.json);
    }
    let page = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(page.status.code(), Some(0), "{}", stderr(&page));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<th>inside</th>"));
}

#[test]
fn states_with_nothing_to_record_into_is_refused() {
    let out =
        run(&["run", "--algo", "ricart-agrawala", "-n", "2", "-k", "1", "--states", "--no-flight-recorder"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--states records into the trace or the flight recorder") && err.lines().count() == 1,
        "{err}"
    );
}

/// A page is a function of its run directory: rendered again, byte for byte the same,
/// here for a stalled run whose workers are left waiting and inside at the end (drawn
/// in worker order, where a hash map's order once made each rendering differ).
#[test]
fn the_same_run_directory_renders_the_same_page_every_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let d = dir.to_str().unwrap();
    let out = run(&[
        "run",
        "--algo",
        "centralized",
        "-n",
        "5",
        "-k",
        "4",
        "--trace",
        "--keep",
        "--run-dir",
        d,
        "--stall-ms",
        "1500",
        "--faults",
        "kill coordinator at entry 2",
    ]);
    assert_eq!(out.status.code(), Some(1), "the clients stall: {}", stderr(&out));
    let pages: Vec<String> = (0..4)
        .map(|i| {
            let page = tmp.path().join(format!("page{i}.html"));
            let out = run(&["report", d, "-o", page.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            std::fs::read_to_string(&page).unwrap()
        })
        .collect();
    assert!(pages[0].contains("waited"), "the page draws the waits left open");
    for (i, p) in pages.iter().enumerate().skip(1) {
        assert!(*p == pages[0], "rendering {i} differs from the first");
    }
}
