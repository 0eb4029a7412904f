//! `mutexlab superpeers`: the table the README shows is what the command prints, and
//! parameters that cannot work are refused in one line with exit 2.

use std::path::Path;

use crate::common::{run, stderr, stdout};

/// The README's table: the lines from the command's heading to the end of its block.
fn readme_table() -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let at = text.find("mutexlab superpeers: seed").expect("the README shows the super-peer table");
    let rest = &text[at..];
    rest[..rest.find("\n```").unwrap_or(rest.len())].to_string() + "\n"
}

#[test]
fn the_readme_s_super_peer_table_is_what_the_command_prints() {
    let out = run(&["superpeers", "--seed", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = stdout(&out);
    assert_eq!(readme_table(), printed, "regenerate the README's table with `mutexlab superpeers --seed 1`");
    // Every requirement held at every size: within the bound and the load, before and
    // after the crashes (the table's columns 3, 5, 10 and 12).
    for row in printed.lines().skip(3) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!((cells[3], cells[10]), ("100.0 %", "100.0 %"), "{row}");
    }
    // The negative control: another seed prints another table.
    let other = stdout(&run(&["superpeers", "--seed", "2", "-n", "100"]));
    assert!(!printed.contains(other.lines().nth(3).unwrap()), "{other}");
}

#[test]
fn parameters_that_cannot_work_are_refused_in_one_line() {
    for (args, says) in [
        (vec!["-n", "1"], "-n must be 2 to"),
        (vec!["-n", "ten"], "'ten' is not a number"),
        (vec!["--share", "1.5"], "--share must be"),
        (vec!["--capacity", "0"], "--capacity must be"),
        (vec!["--bound-ms", "0"], "--bound-ms must be"),
        (vec!["--fail", "1"], "--fail must be"),
        (vec!["-n", "100", "--share", "0.01", "--capacity", "5"], "cannot serve the other 99 of 100 nodes"),
    ] {
        let mut all = vec!["superpeers"];
        all.extend(&args);
        let out = run(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{all:?}: {err}");
        assert!(err.contains(says), "{all:?}: {err}");
    }
}
