//! Workers in any language (`--worker-cmd`, `labs/PROTOCOL.md`): the Python
//! Ricart-Agrawala runs clean with the textbook message count, in real processes and
//! in the simulator; programs that misbehave (garbage, silence, an early exit, a
//! message to themselves, a wrong answer) each end the run with one line naming the
//! worker, what it was sent and what came back, and leave no process behind.

use std::path::{Path, PathBuf};

use crate::common::*;
use mutexlab::algorithm::Mutex;
use mutexlab::external::{self, External, Spawn};
use mutexlab::sim::Sim;

/// The example node, by absolute path (tests run from the crate's root).
fn example() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/examples/ricart_agrawala.py");
    format!("python3 {}", path.display())
}

/// A Python program in a fresh directory: the directory's unique path in its command
/// line is how the test finds any copy of it still alive.
struct Script {
    dir: tempfile::TempDir,
}

impl Script {
    fn new(body: &str) -> Script {
        let dir = tempfile::Builder::new().prefix("mlx-").tempdir().unwrap();
        std::fs::write(dir.path().join("node.py"), body).unwrap();
        Script { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("node.py")
    }

    fn command(&self) -> String {
        format!("python3 {}", self.path().display())
    }

    /// No copy of the program outlives the run.
    fn assert_gone(&self) {
        // A program killed with its worker may take a moment to be gone.
        let needle = self.path().display().to_string();
        wait_for("the programs to be gone", || processes_mentioning(&needle).is_empty());
    }
}

impl Drop for Script {
    /// A failing test still leaves nothing behind: any copy of the program is killed.
    fn drop(&mut self) {
        for pid in processes_mentioning(&self.path().display().to_string()) {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Answers `init`, then hands every other input to `on(line)`, a Python expression
/// that gives the answer's text.
fn node(on: &str) -> Script {
    Script::new(&format!(
        "import json, sys\n\
         for text in sys.stdin:\n\
         \x20   line = json.loads(text)\n\
         \x20   if line['type'] == 'init':\n\
         \x20       me = line['id']\n\
         \x20       print(json.dumps({{'type': 'init_ok'}}), flush=True)\n\
         \x20       continue\n\
         \x20   print({on}, flush=True)\n"
    ))
}

/// Run `mutexlab run --worker-cmd` with `node` and the extra flags; the run must fail
/// with exit 1 and one `run failed` line, which is returned.
fn failing_run(node: &Script, extra: &[&str]) -> String {
    let cmd = node.command();
    let mut args = vec!["--worker-cmd", &cmd, "-n", "3", "-k", "3"];
    args.extend_from_slice(extra);
    let (out, j) = run_faulty(&args);
    node.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(j["ok"], false);
    let err = stderr(&out);
    let failed: Vec<&str> = err.lines().filter(|l| l.starts_with("mutexlab: run failed:")).collect();
    assert_eq!(failed.len(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    failed[0].to_string()
}

#[test]
fn the_python_ricart_agrawala_runs_clean_with_2_n_minus_1_messages_per_entry() {
    let cmd = example();
    let (out, j) = run_faulty(&["--worker-cmd", &cmd, "-n", "4", "-k", "20"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["ok"], true);
    assert_eq!(j["algorithm"], "external");
    assert_eq!(j["entries"]["total"], 80);
    assert_eq!(j["violations"].as_array().map(Vec::len), Some(0));
    // N-1 REQUESTs and N-1 REPLYs for each of the 80 entries.
    assert_eq!(j["messages"]["by_type"]["REQUEST"], 3 * 80, "{}", j["messages"]);
    assert_eq!(j["messages"]["by_type"]["REPLY"], 3 * 80, "{}", j["messages"]);
    // The program's stderr is shown, prefixed with its worker.
    assert!(stderr(&out).lines().any(|l| l == "w3| ready: node 3 of 4"), "{}", stderr(&out));
}

#[test]
fn a_built_in_name_labels_the_program_and_lends_its_theory() {
    let cmd = example();
    let (out, j) = run_faulty(&["--algo", "ricart-agrawala", "--worker-cmd", &cmd, "-n", "3", "-k", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["algorithm"], "ricart-agrawala");
    assert_eq!(j["theory"]["formula"], "2(N-1)");
    assert_eq!(j["theory"]["per_entry_min"], 4.0);
}

#[test]
fn the_default_algorithm_s_name_given_on_purpose_labels_the_program_too() {
    // `--algo centralized` was taken for the default left alone: `external`, no theory.
    let cmd = example();
    let (out, j) = run_faulty(&["--algo", "centralized", "--worker-cmd", &cmd, "-n", "3", "-k", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["algorithm"], "centralized");
    assert!(j["theory"]["formula"].as_str().is_some_and(|f| f.starts_with("3(N-1)/N")), "{}", j["theory"]);
    // The negative control: no --algo at all is the program's own, `external`, no theory.
    let (out, j) = run_faulty(&["--worker-cmd", &cmd, "-n", "3", "-k", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["algorithm"], "external");
    assert!(j["theory"].is_null(), "{}", j["theory"]);
}

#[test]
fn a_program_that_writes_garbage_fails_its_worker_with_the_line() {
    let line = failing_run(&node("'garbage'"), &[]);
    assert!(line.contains("worker w"), "{line}");
    assert!(line.contains("answered `garbage`, which is not JSON"), "{line}");
    assert!(line.contains(r#"was sent `{"type":"start"}`"#), "{line}");
}

#[test]
fn a_program_that_never_answers_fails_at_the_deadline() {
    let silent = Script::new("import sys\nfor text in sys.stdin:\n    pass\n");
    let line = failing_run(&silent, &["--worker-timeout-ms", "300"]);
    assert!(line.contains("did not answer within 300 ms"), "{line}");
    assert!(line.contains(r#""type":"init""#), "the init line is quoted: {line}");
}

#[test]
fn a_program_slow_to_start_is_not_failed_by_the_answer_deadline_and_says_so() {
    // An interpreter's start under load is not an answer's work: the deadline for the
    // `init` answer counts from when the program has read it. Before, a start of 1 s
    // against a 300 ms deadline failed the run.
    let cmd = format!("sleep 1 && {}", example());
    let (out, j) = run_faulty(&["--worker-cmd", &cmd, "-n", "2", "-k", "2", "--worker-timeout-ms", "300"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(j["violation_count"], 0);
    assert!(err.contains("ms to start (to read its first input); a start may take 10 s"), "{err}");
}

#[test]
fn a_program_that_exits_at_once_fails_its_worker() {
    let quitter = Script::new("import sys\nsys.exit(3)\n");
    let line = failing_run(&quitter, &[]);
    assert!(line.contains("exit status: 3"), "{line}");
}

#[test]
fn a_program_that_sends_to_itself_breaks_the_contract() {
    let selfish = node(
        "json.dumps([{'type': 'send', 'to': me, 'msg': {'type': 'HELLO'}}] if line['type'] == 'call' else [])",
    );
    let line = failing_run(&selfish, &[]);
    assert!(line.contains("` broke the contract: the algorithm sent HELLO to itself"), "{line}");
    assert!(line.contains(r#"was sent `{"type":"call","call":"want"}`"#), "{line}");
}

#[test]
fn answers_that_are_not_lists_of_outputs_are_refused() {
    let object = failing_run(&node("json.dumps({'type': 'send'})"), &[]);
    assert!(object.contains("which is not a list of outputs"), "{object}");
    let unknown = failing_run(&node("json.dumps([{'type': 'teleport'}])"), &[]);
    assert!(unknown.contains("with the output `{\"type\":\"teleport\"}`, which is not one"), "{unknown}");
    let untyped = node(
        "json.dumps([{'type': 'send', 'to': (me + 1) % 3, 'msg': 5}] if line['type'] == 'call' else [])",
    );
    let untyped = failing_run(&untyped, &[]);
    assert!(untyped.contains("a message must be an object with a string \"type\""), "{untyped}");
}

#[test]
fn an_election_can_be_an_external_program_too() {
    // Everyone names the highest id at once: enough to show the election path works.
    let fixed =
        node("json.dumps([{'type': 'leader', 'id': 2, 'term': 1}] if line['type'] == 'call' else [])");
    let cmd = fixed.command();
    let (out, j) = run_checked("elect", &["--worker-cmd", &cmd, "-n", "3", "--settle-ms", "100"]);
    fixed.assert_gone();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["ok"], true, "{j}");
}

#[test]
fn a_leader_nobody_can_be_fails_the_run_in_one_line_and_json_still_comes() {
    // Everyone accepts w99 in a 4-worker run: once a panic (exit 101, a backtrace, no
    // JSON) when the supervisor looked w99 up.
    let bogus =
        node("json.dumps([{'type': 'leader', 'id': 99, 'term': 1}] if line['type'] == 'call' else [])");
    let cmd = bogus.command();
    let (out, j) = run_checked("elect", &["--worker-cmd", &cmd, "-n", "4", "--settle-ms", "100"]);
    bogus.assert_gone();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(j["ok"], false, "{j}");
    let failure = j["failure"].as_str().unwrap_or_default();
    assert!(failure.contains("naming w99, which is not one of the 4 nodes"), "{j}");
    assert_eq!(failure.lines().count(), 1, "{failure}");
    let failed: Vec<&str> = err.lines().filter(|l| l.starts_with("mutexlab: run failed:")).collect();
    assert_eq!(failed.len(), 1, "{err}");
}

#[test]
fn a_count_of_any_size_saturates_instead_of_overflowing() {
    // Two counts of 2^64-1 per worker: once an overflow panic in the worker (and in the
    // supervisor summing two workers), in a build with overflow checks.
    let big = "{'type': 'count', 'name': 'big', 'by': 18446744073709551615}";
    let counter = node(&format!(
        "json.dumps([{big}, {big}, {{'type': 'leader', 'id': 1, 'term': 1}}] if line['type'] == 'call' else [])"
    ));
    let cmd = counter.command();
    let (out, j) = run_checked("elect", &["--worker-cmd", &cmd, "-n", "2", "--settle-ms", "100"]);
    counter.assert_gone();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["counters"]["big"], u64::MAX, "{j}");
}

#[test]
fn statistics_too_big_for_a_frame_fail_their_worker_at_once_in_its_own_words() {
    // 200 counter names of 1 KB: the statistics answering Finish would be 200 KB. The
    // worker once stood still after failing to send them, for a Finish already read,
    // and the run ended 10 s past the stall window as "did not respond while finishing".
    let counter = node(
        "json.dumps([{'type': 'count', 'name': 'n%03d' % i + 'x' * 1000, 'by': 1} for i in range(200)] \
         + [{'type': 'leader', 'id': 1, 'term': 1}] if line['type'] == 'call' else [])",
    );
    let cmd = counter.command();
    let (out, j) = run_checked("elect", &["--worker-cmd", &cmd, "-n", "2", "--settle-ms", "100"]);
    counter.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let failure = j["failure"].as_str().unwrap_or_else(|| panic!("no failure: {j}"));
    assert!(failure.contains("while finishing"), "{failure}");
    assert!(failure.contains("its statistics (2 message types, 200 counters) would be"), "{failure}");
    assert!(failure.contains("over the 65536-byte frame cap"), "{failure}");
}

#[test]
fn a_program_inventing_message_types_costs_its_worker_a_bounded_count() {
    // 5,000 messages, each of a type of its own: the counts by type once grew with
    // them, past what the statistics' frame can hold.
    let sends = "[{'type': 'send', 'to': 1 - me, 'msg': {'type': 'T%020d' % i}} for i in range(5000)]";
    let inventor = node(&format!(
        "json.dumps({sends} + [{{'type': 'leader', 'id': 1, 'term': 1}}] if line['type'] == 'call' else [])"
    ));
    let cmd = inventor.command();
    let (out, j) = run_checked("elect", &["--worker-cmd", &cmd, "-n", "2", "--settle-ms", "100"]);
    inventor.assert_gone();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let by_type = j["messages"]["by_type"].as_object().unwrap_or_else(|| panic!("{j}"));
    assert!(by_type.len() <= mutexlab::trace::MAX_TYPES + 2, "{} types", by_type.len());
    assert_eq!(j["messages"]["total"], 10_000, "{j}");
}

#[test]
fn the_simulator_drives_the_python_node_through_the_host() {
    let program = Spawn { command: example(), timeout: external::DEFAULT_TIMEOUT };
    let report = Sim::<External<Mutex>>::with_config(3, 7, |c| c.program = Some(program.clone())).run(5);
    let report = report.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.entries, 15);
    assert_eq!(report.count("REQUEST"), 2 * 15);
    assert_eq!(report.count("REPLY"), 2 * 15);
}

#[test]
fn a_worker_killed_outright_takes_its_program_with_it() {
    // Without failure detection the example cannot get past the dead worker, so the
    // run stalls; what matters here is that the killed worker's program is gone too.
    // This copy outlives its stdin, so only the kernel's death signal can end it.
    let text = std::fs::read_to_string(example().trim_start_matches("python3 ")).unwrap();
    let copy = Script::new(&format!("{text}\nimport time\ntime.sleep(3600)\n"));
    let cmd = copy.command();
    let (out, j) = run_faulty(&[
        "--worker-cmd",
        &cmd,
        "--detector",
        "none",
        "-n",
        "3",
        "-k",
        "100000",
        "--faults",
        "kill 1 at 200ms",
        "--stall-ms",
        "1000",
        // The stall window outlasts a program's deadline (a second more): keep it short.
        "--worker-timeout-ms",
        "1000",
    ]);
    copy.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(j["ok"], false);
}

#[test]
fn timers_and_counts_reach_the_runtime_in_their_short_forms() {
    // A lone node that waits 5 ms on a timer before each entry, and counts its waits.
    let waiter = node(
        "json.dumps({'call': [{'type': 'set_timer', 'timer': {'type': 'go'}, 'after_ms': 5}, \
                              {'type': 'count', 'name': 'waits', 'by': 1}], \
                     'timer': [{'type': 'enter'}]}.get(line['type'], []) \
                    if line.get('call') != 'done' else [])",
    );
    let cmd = waiter.command();
    let (out, j) = run_faulty(&["--worker-cmd", &cmd, "-n", "1", "-k", "3"]);
    waiter.assert_gone();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["entries"]["total"], 3);
    assert_eq!(j["counters"]["waits"], 3, "{j}");
}

/// The example with its deferral taken out: it answers every REQUEST at once, even
/// from inside the section.
fn never_defers() -> Script {
    let text = std::fs::read_to_string(example().trim_start_matches("python3 ")).unwrap();
    let broken = text.replace("ours_first = (self.asking or self.inside) and", "ours_first = False and");
    assert_ne!(broken, text, "the example still has the line this test breaks");
    Script::new(&broken)
}

#[test]
fn the_python_node_runs_among_the_reference_workers_and_a_broken_one_is_caught() {
    let cmd = format!("2={}", example());
    let (out, j) =
        run_faulty(&["--algo", "ricart-agrawala", "--worker-cmd-for", &cmd, "-n", "4", "-k", "20"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["algorithm"], "ricart-agrawala");
    assert_eq!(j["entries"]["total"], 80);
    assert_eq!(j["messages"]["by_type"]["REQUEST"], 3 * 80, "{}", j["messages"]);
    assert_eq!(j["messages"]["by_type"]["REPLY"], 3 * 80, "{}", j["messages"]);
    assert!(stderr(&out).lines().any(|l| l.starts_with("w2| ")), "only w2 is the program");
    assert!(!stderr(&out).lines().any(|l| l.starts_with("w1| ")), "only w2 is the program");

    // The negative control: the same run with a node that never defers lets two in.
    let broken = never_defers();
    let cmd = format!("1={}", broken.command());
    let (out, j) = run_faulty(&[
        "--algo",
        "ricart-agrawala",
        "--worker-cmd-for",
        &cmd,
        "-n",
        "4",
        "-k",
        "40",
        "--cs-ms",
        "5",
    ]);
    broken.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let kinds: Vec<&str> =
        j["violations"].as_array().unwrap().iter().filter_map(|v| v["kind"].as_str()).collect();
    assert!(kinds.contains(&"overlap"), "{kinds:?}");
}

#[test]
fn a_message_the_reference_cannot_read_is_refused_with_its_fields() {
    let typo = node(
        "json.dumps([{'type': 'send', 'to': 0, 'msg': {'type': 'REQUEST', 'tiket': 1}}] \
                    if line['type'] == 'call' else [])",
    );
    let cmd = format!("1={}", typo.command());
    let (out, _) = run_faulty(&["--algo", "ricart-agrawala", "--worker-cmd-for", &cmd, "-n", "2", "-k", "2"]);
    typo.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("whose message is wrong: a `REQUEST` of this algorithm cannot be made of it: missing field `ticket`"),
        "{err}"
    );
    let line = err.lines().find(|l| l.starts_with("mutexlab: run failed:")).unwrap();
    assert!(line.contains("worker w1"), "{line}");
}

#[test]
fn worker_cmd_for_is_refused_where_it_cannot_work() {
    for (args, why) in [
        (vec!["--algo", "none", "--worker-cmd-for", "1=true"], "cannot have an external worker"),
        (vec!["--algo", "ricart-agrawala", "--worker-cmd-for", "9=true"], "names w9, but there are only 4"),
        (vec!["--worker-cmd-for", "one=true"], "is not a worker id"),
        (vec!["--worker-cmd", "true", "--worker-cmd-for", "1=true"], "cannot be used with"),
        (vec!["--worker-cmd", " "], "must name a program"),
        (vec!["--worker-cmd", "true", "--worker-timeout-ms", "0"], "--worker-timeout-ms"),
    ] {
        let mut all = vec!["run"];
        all.extend(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{all:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{all:?}: {}", stderr(&out));
    }
}

#[test]
fn the_simulator_names_a_failed_program_in_its_diagnosis() {
    let garbage = node("'garbage'");
    let program = Spawn { command: garbage.command(), timeout: external::DEFAULT_TIMEOUT };
    let run = Sim::<External<Mutex>>::with_config(2, 1, |c| c.program = Some(program.clone())).run(1);
    let e = run.expect_err("a node that answers garbage cannot serve anyone");
    assert!(e.to_string().contains("answered `garbage`, which is not JSON"), "{e}");
    garbage.assert_gone();
}

#[test]
fn a_program_that_cannot_start_says_so_with_its_last_words() {
    // Python's own line for a file that is not there, as a student mistypes it.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.py");
    let program =
        Spawn { command: format!("python3 {}", missing.display()), timeout: external::DEFAULT_TIMEOUT };
    let run = Sim::<External<Mutex>>::with_config(2, 1, |c| c.program = Some(program.clone())).run(1);
    let e = run.expect_err("a program that never starts serves no one").to_string();
    let line = e.lines().next().unwrap_or_default();
    assert!(line.contains("failed to start: exited without answering its `init` (exit status: 2)"), "{e}");
    assert!(line.contains("can't open file") && line.contains("missing.py"), "{e}");
    assert!(!line.contains("deadlock"), "{e}");
    // One that started and then died is not "failed to start".
    let quitter = Script::new(
        "import sys\nsys.stdin.readline()\nprint('{\"type\":\"init_ok\"}', flush=True)\nsys.exit('bye')\n",
    );
    let program = Spawn { command: quitter.command(), timeout: external::DEFAULT_TIMEOUT };
    let e = Sim::<External<Mutex>>::with_config(2, 1, |c| c.program = Some(program.clone()))
        .run(1)
        .expect_err("it dies at its first input")
        .to_string();
    assert!(!e.contains("failed to start") && e.contains("its stderr ended `bye`"), "{e}");
    // One that answers `init` with words that say "exited" did not exit: told as it is.
    let liar =
        Script::new("import sys\nsys.stdin.readline()\nprint('exited', flush=True)\nsys.stdin.read()\n");
    let program = Spawn { command: liar.command(), timeout: external::DEFAULT_TIMEOUT };
    let e = Sim::<External<Mutex>>::with_config(2, 1, |c| c.program = Some(program.clone()))
        .run(1)
        .expect_err("it answers garbage")
        .to_string();
    assert!(!e.contains("failed to start") && e.contains("answered `exited`, which is not JSON"), "{e}");
    liar.assert_gone();
}

/// Asks w1 for the section and never enters, saying what it waits for: first a
/// malformed statement (dropped with a note), then a good one.
fn waits_for_a_grant() -> Script {
    node(
        "json.dumps([{'type': 'waiting', 'for': 7}, {'type': 'waiting', 'for': 'GRANT', 'from': [1]}] \
         if line.get('call') == 'want' and me == 0 else [])",
    )
}

#[test]
fn the_simulator_names_what_a_program_says_it_waits_for() {
    let waiting = waits_for_a_grant();
    let program = Spawn { command: waiting.command(), timeout: external::DEFAULT_TIMEOUT };
    let run = Sim::<External<Mutex>>::with_config(2, 1, |c| c.program = Some(program.clone())).run(1);
    let e = run.expect_err("w0 never enters").to_string();
    assert!(e.contains("w0 (waiting for GRANT from w1)"), "{e}");
    drop(e);
    waiting.assert_gone();
}

#[test]
fn a_stalled_program_is_diagnosed_with_what_it_says_it_waits_for() {
    let waiting = waits_for_a_grant();
    let cmd = waiting.command();
    let (out, _) = run_faulty(&[
        "--worker-cmd",
        &cmd,
        "-n",
        "2",
        "-k",
        "1",
        "--stall-ms",
        "1000",
        "--worker-timeout-ms",
        "2000",
    ]);
    waiting.assert_gone();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.lines().any(|l| l.contains("w0: waiting for") && l.contains("; waiting for GRANT from w1")),
        "{err}"
    );
    // The malformed statement was dropped with a note, and nothing broke.
    assert!(
        err.contains("dropped the statement `{\"for\":7,\"type\":\"waiting\"}`: `for` must be a string"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// Processes a test's programs started, by the pids they wrote to a file: whatever is
/// still alive when the guard goes (the test failed) is killed.
struct Strays {
    file: PathBuf,
}

impl Strays {
    /// The recorded pids that still name one of our sleepers (a pid given to another
    /// process since is not ours).
    fn alive(&self) -> Vec<i32> {
        let pids = std::fs::read_to_string(&self.file).unwrap_or_default();
        pids.lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
            .filter(|pid| {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                cmd == b"sleep\x003601\x00"
            })
            .collect()
    }
}

impl Drop for Strays {
    fn drop(&mut self) {
        for pid in self.alive() {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

#[test]
fn a_compound_command_and_all_it_started_die_with_a_worker_killed_outright() {
    if std::process::Command::new("python3").arg("-c").arg("").status().is_err() {
        skipped("python3 is not installed");
        return;
    }
    // Each worker's shell starts two sleepers that would outlive everything, one of
    // them in a session of its own (out of the program's group), records their pids,
    // then becomes the Python node; w1 is killed outright early on.
    let tmp = tempfile::Builder::new().prefix("mlx-").tempdir().unwrap();
    let strays = Strays { file: tmp.path().join("pids") };
    let pids = strays.file.display().to_string();
    let cmd =
        format!("sleep 3601 & echo $! >> {pids}; setsid sleep 3601 & echo $! >> {pids}; exec {}", example());
    let (out, j) =
        run_faulty(&["--worker-cmd", &cmd, "-n", "3", "-k", "20", "--faults", "kill 1 at entry 5"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(j["faults"][0]["action"], "kill", "{j}");
    let recorded = std::fs::read_to_string(&strays.file).unwrap().lines().count();
    assert_eq!(recorded, 6, "every worker's shell records two sleepers");
    // A killed process is gone only once its keeper has reaped it: a moment, at most.
    wait_for("every sleeper to be gone", || strays.alive().is_empty());
}

/// The example, but worker 1 pads the first REPLY it sends to 70,000 bytes: a correct
/// node with one message the runtime cannot carry in a frame.
fn one_oversized_reply() -> Script {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/examples");
    Script::new(&format!(
        "import sys\n\
         sys.path.insert(0, {examples:?})\n\
         import ricart_agrawala as ra\n\
         class Padded(ra.RicartAgrawala):\n\
         \x20   padded = False\n\
         \x20   def pad(self, outputs):\n\
         \x20       for o in outputs:\n\
         \x20           if self.me == 1 and not Padded.padded and o['msg']['type'] == 'REPLY':\n\
         \x20               o['msg']['pad'] = 'x' * 70000\n\
         \x20               Padded.padded = True\n\
         \x20       return outputs\n\
         \x20   def on_request(self, sender, ticket):\n\
         \x20       return self.pad(super().on_request(sender, ticket))\n\
         \x20   def done(self):\n\
         \x20       return self.pad(super().done())\n\
         ra.RicartAgrawala = Padded\n\
         ra.main()\n",
        examples = examples.display().to_string()
    ))
}

#[test]
fn a_message_over_the_frame_cap_fails_the_run_and_blames_no_algorithm() {
    let node = one_oversized_reply();
    let cmd = node.command();
    let (out, j) = run_faulty(&["--worker-cmd", &cmd, "-n", "3", "-k", "5"]);
    node.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(j["ok"], false);
    // The failure is the sender's breach, with the message's type and size.
    let failure = j["failure"].as_str().unwrap_or_else(|| panic!("no failure: {j}"));
    let (head, tail) = failure.split_once(" bytes, over the 65536-byte frame cap").expect(failure);
    let (who, size) = head.rsplit_once(" is ").expect(failure);
    assert!(who.starts_with("w1: message REPLY to w"), "{failure}");
    assert!(size.parse::<u64>().is_ok_and(|n| n > 70_000), "{failure}");
    assert!(tail.contains("no verdict on the algorithm"), "{failure}");
    assert_eq!(j["model_broken"], true);
    // The message never left, so no peer was told a live worker was dead: nothing to
    // find, and certainly no overlap pinned on a correct algorithm.
    assert_eq!(j["violation_count"], 0, "{}", j["violations"]);
    let err = stderr(&out);
    let failed: Vec<&str> = err.lines().filter(|l| l.starts_with("mutexlab: run failed:")).collect();
    assert_eq!(failed, [format!("mutexlab: run failed: {failure}")], "{err}");
    assert!(!err.contains("dropping the connection"), "{err}");

    // The summary for people says so where the verdict would be.
    let tmp = tempfile::Builder::new().prefix("mlx-").tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = run(&["run", "--worker-cmd", &cmd, "-n", "3", "-k", "5", "--run-dir", dir.to_str().unwrap()]);
    node.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let summary = stdout(&out);
    assert!(summary.contains("run FAILED  w1: message REPLY to w"), "{summary}");
    assert!(summary.contains("audit       NO VERDICT: the run broke the algorithm's model"), "{summary}");
    // And so does the page the failed run left: its headline is no audit verdict.
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(!page.contains("audit OK"), "the page calls a broken run's audit OK");
    assert!(page.contains("no verdict: the run broke the algorithm's model"), "no verdict on the page");
}

/// w0 broadcasts ten messages of 60 KB every time it is called or its timer fires, at
/// once again; its peers' programs never answer the first of them, so their workers
/// read no more.
fn flood_of_unread_messages() -> Script {
    Script::new(
        "import json, sys, time\n\
         pad = 'x' * 60000\n\
         for text in sys.stdin:\n\
         \x20   line = json.loads(text)\n\
         \x20   if line['type'] == 'init':\n\
         \x20       me = line['id']\n\
         \x20       print(json.dumps({'type': 'init_ok'}), flush=True)\n\
         \x20       continue\n\
         \x20   if me == 0 and line['type'] in ('start', 'timer', 'call'):\n\
         \x20       out = [{'type': 'broadcast', 'msg': {'type': 'FLOOD', 'pad': pad}}] * 10\n\
         \x20       out.append({'type': 'set_timer', 'timer': {'type': 'again'}, 'after_ms': 0})\n\
         \x20       print(json.dumps(out), flush=True)\n\
         \x20   elif line['type'] == 'message':\n\
         \x20       time.sleep(3600)\n\
         \x20   else:\n\
         \x20       print('[]', flush=True)\n",
    )
}

#[test]
fn a_sender_that_outruns_its_peers_fails_at_a_bounded_queue_and_blames_no_algorithm() {
    // Before: w0's queues grew by tens of MB a second until the workers' deadline.
    let node = flood_of_unread_messages();
    let cmd = node.command();
    let args = ["--worker-cmd", &cmd, "-n", "3", "-k", "1", "--worker-timeout-ms", "30000"];
    let (out, j) = run_faulty(&args);
    node.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let failure = j["failure"].as_str().unwrap_or_else(|| panic!("no failure: {j}"));
    assert!(failure.starts_with("w0: message FLOOD to w"), "{failure}");
    assert!(failure.contains("over the 67108864-byte cap"), "{failure}");
    assert_eq!(j["model_broken"], true);
}

#[test]
fn a_worker_command_too_long_for_the_setup_frame_is_a_usage_error() {
    let long = format!("true {}", "x".repeat(70_000));
    let out = run(&["run", "--worker-cmd", &long, "-n", "2", "-k", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("the worker command is 70005 bytes; at most 16384"), "{err}");
}

#[test]
fn a_program_that_writes_more_than_it_is_asked_fails_in_one_line() {
    // 100,000 answers to the first input: bounded here, so that the unbounded queue of
    // old grows by no more than a few megabytes before the run stalls.
    let flood = node("'\\n'.join(['[]'] * 100000) if line['type'] == 'start' else '[]'");
    let line = failing_run(&flood, &["--worker-timeout-ms", "2000"]);
    assert!(line.contains("external node `python3 "), "{line}");
    assert!(line.contains("wrote `[]` when nothing was asked of it"), "{line}");
    assert!(line.contains(r#"it had answered `{"type":"start"}` with `[]`"#), "{line}");
}

#[test]
fn a_log_line_without_an_end_is_cut_and_the_log_goes_on() {
    // 8 MiB on stderr without a newline, then a line of its own, then garbage.
    let chatty = Script::new(
        "import os, sys\n\
         block = b'x' * (1 << 20)\n\
         for _ in range(8):\n\
         \x20   os.write(2, block)\n\
         os.write(2, b'\\nafter the long line\\n')\n\
         for text in sys.stdin:\n\
         \x20   print('garbage', flush=True)\n",
    );
    let cmd = chatty.command();
    let (out, _) = run_faulty(&["--worker-cmd", &cmd, "-n", "1", "-k", "1"]);
    chatty.assert_gone();
    assert_eq!(out.status.code(), Some(1), "the garbage fails the run");
    let err = stderr(&out);
    let cut: Vec<&str> = err.lines().filter(|l| l.starts_with("w0| xxx")).collect();
    assert_eq!(cut.len(), 1, "one cut line, not the 8 MiB");
    let marker = "… (line cut at 4096 bytes)";
    assert!(cut[0].ends_with(marker), "{}", &cut[0][cut[0].len().saturating_sub(80)..]);
    assert_eq!(cut[0].len(), "w0| ".len() + 4096 + marker.len());
    assert!(err.lines().any(|l| l == "w0| after the long line"), "the log goes on after the cut");
}

#[test]
fn a_program_silent_past_its_deadline_fails_as_itself_not_as_a_stall() {
    // The deadline is longer than the stall window asked for: the program's silence is
    // still its failure, named as such, never "no progress".
    let silent = Script::new(
        "import json, sys\n\
         for text in sys.stdin:\n\
         \x20   if json.loads(text)['type'] == 'init':\n\
         \x20       print(json.dumps({'type': 'init_ok'}), flush=True)\n",
    );
    let line = failing_run(&silent, &["--stall-ms", "1000", "--worker-timeout-ms", "1500"]);
    assert!(line.contains(r#"was sent `{"type":"start"}` and did not answer within 1500 ms"#), "{line}");
    assert!(!line.contains("no progress"), "{line}");
}

/// Poll `cond` until it holds (`true`) or `patience` runs out (`false`).
fn holds_within(patience: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + patience;
    while !cond() {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    true
}

#[test]
fn a_program_whose_keeper_is_killed_leaves_no_daemon_behind() {
    // The program starts a daemon in a session of its own, records it and its keeper
    // (its parent, read from /proc), kills its keeper, then runs the example.
    let tmp = tempfile::Builder::new().prefix("mlx-").tempdir().unwrap();
    let strays = Strays { file: tmp.path().join("pids") };
    let keeper = tmp.path().join("keeper");
    let (pids, keeper_s) = (strays.file.display(), keeper.display());
    let cmd = format!(
        "setsid sleep 3601 & echo $! >> {pids}; \
         read -r _ _ _ ppid _ < /proc/self/stat; echo $ppid > {keeper_s}.tmp; mv {keeper_s}.tmp {keeper_s}; \
         kill -9 $ppid; exec {}",
        example()
    );
    let run = Background::start(&["--worker-cmd", &cmd, "-n", "1", "-k", "1000000"]);
    wait_for("the program to record its keeper", || keeper.exists());
    // Inside a PID namespace the program cannot reach its keeper, so it is killed from
    // here too, as the OOM killer might; only while it is still the run's (a fork of
    // the worker, with the run directory on its command line), never a reused pid.
    let pid: i32 = std::fs::read_to_string(&keeper).unwrap().trim().parse().unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if String::from_utf8_lossy(&cmdline).contains(&run.run_dir().display().to_string()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    let gone = holds_within(std::time::Duration::from_secs(20), || strays.alive().is_empty());
    // The program is dead either way, so the run ends.
    let out = run.finish();
    if !gone && stderr(&out).contains("no PID namespace for worker programs here") {
        skipped("no PID namespace here, and a child subreaper cannot outlive its keeper");
        return;
    }
    assert!(gone, "the daemon outlived the keeper: {}", stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Killed before or after it read its first input: either line is the truth.
    let err = stderr(&out);
    assert!(err.contains("exited without answering") || err.contains("): it has exited"), "{err}");
}

/// The example, but worker 0 sets itself a timer as it enters and, when the timer
/// fires inside the section, never answers: a program that fails while inside.
fn silent_inside() -> Script {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/examples");
    Script::new(&format!(
        "import sys, time\n\
         sys.path.insert(0, {examples:?})\n\
         import ricart_agrawala as ra\n\
         class Poked(ra.RicartAgrawala):\n\
         \x20   def try_enter(self):\n\
         \x20       out = super().try_enter()\n\
         \x20       if self.me == 0 and out:\n\
         \x20           out.append({{'type': 'set_timer', 'timer': {{'type': 'poke'}}, 'after_ms': 1}})\n\
         \x20       return out\n\
         plain = ra.handle\n\
         def handle(node, line):\n\
         \x20   if line['type'] == 'timer':\n\
         \x20       time.sleep(3600)\n\
         \x20   return plain(node, line)\n\
         ra.RicartAgrawala = Poked\n\
         ra.handle = handle\n\
         ra.main()\n",
        examples = examples.display().to_string()
    ))
}

#[test]
fn a_program_that_fails_inside_the_section_is_its_failure_and_no_overlap() {
    // Its worker gave up; closing its channels on the way out would have told the
    // peers it was dead, and they would have entered the section it still held.
    let node = silent_inside();
    let cmd = node.command();
    // The deadline is generous: a loaded machine may take a second to start Python, and
    // only w0's silence inside the section may be the failure here.
    let args = ["--worker-cmd", &cmd, "-n", "3", "-k", "3", "--cs-ms", "200", "--worker-timeout-ms", "4000"];
    let (out, j) = run_faulty(&args);
    node.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let failure = j["failure"].as_str().unwrap_or_else(|| panic!("no failure: {j}"));
    assert!(failure.starts_with("worker w0 gave up while running: external node `python3 "), "{failure}");
    assert!(
        failure.contains(r#"was sent `{"type":"timer","timer":{"type":"poke"}}` and did not answer"#),
        "{failure}"
    );
    assert_eq!(j["violation_count"], 0, "{}", j["violations"]);
}

/// Answers `init`, reads and answers its input for 3.5 s, then stops reading: it answers
/// each input without reading it (it sees one come by the pipe's unread bytes growing),
/// each time with a 1 ms timer, so inputs keep coming until its (shrunk, 4 KiB) pipe is
/// full and the worker's next write waits.
const STOPS_READING: &str = "\
import array, fcntl, json, os, termios, time
def line():
    text = b''
    while not text.endswith(b'\\n'):
        text += os.read(0, 1)
    return text
line()
fcntl.fcntl(0, 1031, 4096)  # F_SETPIPE_SZ: a small pipe fills at once
print(json.dumps({'type': 'init_ok'}), flush=True)
again = json.dumps([{'type': 'set_timer', 'timer': {'type': 'again'}, 'after_ms': 1}])
until = time.monotonic() + 3.5
while time.monotonic() < until:
    line()
    print(again, flush=True)
seen = 0
while True:
    n = array.array('i', [0])
    fcntl.ioctl(0, termios.FIONREAD, n, True)
    if n[0] > seen:
        seen = n[0]
        print(again, flush=True)
    else:
        time.sleep(0.001)
";

/// A program that stops reading its input holds its worker inside a step, writing to
/// a full pipe, so it answers no query: the stall's diagnosis said only "did not answer
/// (wedged?)". It names the program that does not read, and how much waits for it.
/// Timing: the stall window is the program's deadline and a second (5 s); the program
/// stops reading after 3.5 s, its worker is blocked from about 3.7 s, asked at 5 s and
/// waited for until 6 s, before its own deadline (about 7.7 s) could end it.
#[test]
fn a_program_that_does_not_read_its_input_is_named_by_the_stall_diagnosis() {
    let script = Script::new(STOPS_READING);
    let cmd = script.command();
    let args =
        ["--worker-cmd", &cmd, "-n", "2", "-k", "1", "--worker-timeout-ms", "4000", "--stall-ms", "1000"];
    let (out, j) = run_faulty(&args);
    script.assert_gone();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let failure = j["failure"].as_str().unwrap_or_default();
    assert!(failure.starts_with("no progress for 5.0s"), "{failure}");
    for w in ["w0", "w1"] {
        let line =
            failure.lines().map(str::trim).find(|l| l.starts_with(&format!("{w}: "))).unwrap_or_default();
        assert!(line.contains(": its program has not read its input for "), "{failure}");
        // 4 KiB of `{"type":"timer",…}` lines, some 40 bytes each.
        let waiting: u64 = line
            .rsplit_once(" (")
            .and_then(|(_, n)| n.strip_suffix(" lines waiting)")?.parse().ok())
            .unwrap_or(0);
        assert!((20..=200).contains(&waiting), "{line}");
    }
    assert!(!failure.contains("did not answer"), "{failure}");
}

/// The same program with the worker's own deadline short: the worker gives up on it,
/// saying how many lines wait in its input.
#[test]
fn a_program_past_its_deadline_to_read_is_failed_with_what_waits() {
    let script = Script::new(STOPS_READING);
    let line = failing_run(&script, &["--worker-timeout-ms", "1000", "--stall-ms", "20000"]);
    assert!(line.contains("and did not read it within 1000 ms ("), "{line}");
    assert!(line.contains(" lines waiting in its input)"), "{line}");
}
