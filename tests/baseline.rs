//! `mutexlab-baseline`, the bare ring, centralized lock and Ricart-Agrawala `mutexlab bench` measures
//! beside its runs: a few entries at N = 2 and 3, its one line of JSON, its children all
//! reaped, the file's counter equal to the entries (the lock held), and bad input.

use std::process::Command;

fn baseline(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mutexlab-baseline")).args(args).output().unwrap()
}

fn parsed(args: &[&str]) -> serde_json::Value {
    let out = baseline(args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn the_ring_the_coordinator_and_ricart_agrawala_make_every_entry_and_reap_every_child() {
    let modes = [
        ("ring", 2u64, 2 * 5 - 1),
        ("central", 2, 3 * 5),
        ("central", 3, 3 * 2 * 5),
        // 2(N-1) messages an entry: a REQUEST to each peer and a REPLY from each.
        ("ra", 2, 2 * 2 * 5),
        ("ra", 3, 2 * 2 * 3 * 5),
    ];
    for (mode, n, messages) in modes {
        let j = parsed(&[mode, "-n", &n.to_string(), "-k", "5"]);
        let says = |f: &str| j[f].as_u64().unwrap_or_else(|| panic!("{f} in {j}"));
        assert_eq!(j["mode"], mode, "{j}");
        assert_eq!(says("workers"), n, "{j}");
        assert_eq!(says("reaped"), n, "{j}");
        assert_eq!(says("entries"), n * 5, "{j}");
        assert_eq!(says("messages"), messages, "{j}");
        assert_eq!(says("frame_bytes"), 16, "{j}");
        // Each entry added one to the counter it read: none was lost to an overlap.
        assert_eq!(says("counter"), n * 5, "{j}");
        for f in ["cpu_us", "wall_us", "cpu_us_per_entry", "wall_us_per_entry", "cpu_us_per_message"] {
            assert!(j[f].as_f64().unwrap() > 0.0, "{f} in {j}");
        }
    }
}

#[test]
fn without_file_work_only_messages_are_made() {
    let j = parsed(&["ring", "-n", "2", "-k", "3", "--no-file"]);
    assert_eq!(j["file_work"], false, "{j}");
    assert_eq!(j["counter"], 0, "{j}");
    assert_eq!(j["reaped"], 2, "{j}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [&["ring", "-n", "1"][..], &["star"], &["central", "-k", "0"]] {
        let out = baseline(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("mutexlab-baseline: ") && err.lines().count() == 1, "{args:?}: {err}");
    }
}
