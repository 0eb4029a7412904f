#!/usr/bin/env bash
# Lab 03's Gradescope autograder, run as Gradescope runs it: the bundle unpacked into
# AUTOGRADER_ROOT/source, a submission in AUTOGRADER_ROOT/submission, run_autograder
# from AUTOGRADER_ROOT, and the results read back from AUTOGRADER_ROOT/results. The
# reference must score full marks, the skeleton 0, a planted bug (a node that starts no
# election when it restarts) part, and a submission without node.rs or one that does
# not compile 0 with a line that says so. Two hostile ones: a node that writes the
# results file itself and exits scores 0 (it scored 63/63 when the tests ran in the
# grader's process), and one that loops forever gets its honest score and a results
# file within the time budget (it used to hang the grader); signalled while it loops, the
# grader stops, cleans up, writes its results and exits 130. Every results file has the
# fields the project's schema requires, and no run leaves a temporary directory behind:
# a failed run is kept in the results store. setup.sh is not run (it installs system
# packages); its build step is. The bundle's lab depends on this tree's library and
# builds into this tree's target/, so only the lab's crate is compiled.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
lab=03-election
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CARGO_TARGET_DIR="$repo/target"
# Reachable by the unprivileged user the tests run as when this runs as root, as
# /autograder is in Gradescope's containers; the grader's temporary files in a folder
# of their own, to see that none is left.
chmod 755 "$tmp"
mkdir -m 755 "$tmp/tmpdir"

MUTEXLAB_LIBRARY="$repo" sh "$repo/scripts/gradescope/bundle.sh" "$lab" "$tmp/out" >/dev/null
root="$tmp/autograder"
mkdir -p "$root/source" "$root/submission" "$root/results"
cp -R "$tmp/out/$lab/." "$root/source/"
cp "$root/source/run_autograder" "$root/run_autograder"
(cd "$root/source/lab" && cargo build -q)

# The reference behind the lab's names, as a student's node.rs; PLANTED marks where the
# planted bug goes.
cat >"$tmp/reference.rs" <<'EOF'
use std::borrow::Cow;

use mutexlab::algorithm::{Config, Election, Input, Node as MutexlabNode, NodeInput, NodeOut, Output};
use mutexlab::algos::chang_roberts::ChangRoberts;
pub use mutexlab::algos::chang_roberts::Msg;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node(ChangRoberts);

impl MutexlabNode for Node {
    type Msg = Msg;
    type Timer = <ChangRoberts as MutexlabNode>::Timer;
    type Service = Election;

    fn create(cfg: &Config) -> Self {
        Node(ChangRoberts::create(cfg))
    }

    fn step(&mut self, input: NodeInput<Self>, out: &mut NodeOut<Self>) {
        let _start = matches!(input, Input::Start);
        // PLANTED
        let mut inner = NodeOut::<ChangRoberts>::new(out.now());
        self.0.step(input, &mut inner);
        for action in inner.drain() {
            match action {
                Output::Send { to, msg } => out.send(to, msg),
                Output::Broadcast { msg } => out.broadcast(msg),
                Output::Event { event } => out.emit(event),
                Output::Count { name: Cow::Borrowed(name), by } => out.count(name, by),
                Output::Count { .. } => {}
                Output::SetTimer { timer, .. } | Output::CancelTimer { timer } => match timer {},
            }
        }
    }

    fn waiting_for(&self) -> String {
        self.0.waiting_for()
    }
}

impl Node {
    // The lab's grader names this handler (task 4), so that a node.rs from before it
    // fails to compile; the wrapped node starts its election on `Input::Start` itself.
    pub(crate) fn on_restart(&mut self, _out: &mut NodeOut<Self>) {}
}
EOF
sed 's|// PLANTED|if _start { return; } // a restart starts no election|' "$tmp/reference.rs" >"$tmp/planted.rs"
printf 'this is not Rust\n' >"$tmp/broken.rs"
# The forger: its first node writes full marks where the grader writes its results (as
# the command line and AUTOGRADER_ROOT say) and ends the process before anything else.
sed 's|        Node(ChangRoberts::create(cfg))|        forge();\n        Node(ChangRoberts::create(cfg))|' \
    "$tmp/reference.rs" >"$tmp/forger.rs"
cat >>"$tmp/forger.rs" <<'EOF'

fn forge() {
    let full = r#"{"execution_time": 1, "score": 63.0, "output": "forged", "tests": []}"#;
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--gradescope") {
        let _ = std::fs::write(&args[i + 1], full);
    }
    if let Ok(root) = std::env::var("AUTOGRADER_ROOT") {
        let _ = std::fs::write(format!("{root}/results/results.json"), full);
    }
    std::process::exit(0);
}
EOF
# The looper: a node that never returns from a message.
sed 's|// PLANTED|if matches!(input, Input::Message { .. }) { loop { std::thread::sleep(std::time::Duration::from_secs(1)); } }|' \
    "$tmp/reference.rs" >"$tmp/looper.rs"

# Grade one submission ($1: a node.rs to upload, or "" for none, under $2 in the
# submission); print "SCORE MAX" from results.json and keep its text in $tmp/results.
grade() {
    rm -rf "$root/submission" "$root/results"
    mkdir -p "$root/submission/$2" "$root/results"
    if [ -n "$1" ]; then cp "$1" "$root/submission/$2/node.rs"; fi
    (cd "$root" && TMPDIR="$tmp/tmpdir" AUTOGRADER_ROOT="$root" ./run_autograder >"$tmp/stdout" 2>&1) || {
        cat "$tmp/stdout"; echo "selftest: run_autograder failed" >&2; exit 1
    }
    cp "$root/results/results.json" "$tmp/results"
    if [ -n "$(ls -A "$tmp/tmpdir")" ]; then
        ls -la "$tmp/tmpdir" >&2; echo "selftest: grading $1 left temporary files behind" >&2; exit 1
    fi
    python3 - "$tmp/results" "$repo/schemas/gradescope-results.schema.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
missing = [k for k in json.load(open(sys.argv[2])).get("required", []) if k not in r]
if missing:
    sys.exit(f"selftest: results.json lacks {missing}, which the schema requires")
print(r["score"], sum(t["max_score"] for t in r["tests"]))
EOF
}

expect() { # what, got, want
    if [ "$2" != "$3" ]; then
        cat "$tmp/results" >&2
        echo "selftest: $1 scored $2 (score, max), not $3" >&2
        exit 1
    fi
    echo "selftest: $1: $2"
}

SECONDS=0
expect "the reference" "$(grade "$tmp/reference.rs" .)" "63.0 63.0"
expect "the skeleton" "$(grade "$repo/labs/$lab/src/node.rs" src)" "0.0 63.0"
grep -q '"output": "on_elect is not written yet' "$tmp/results" ||
    { cat "$tmp/results"; echo "selftest: the skeleton's tests do not say why" >&2; exit 1; }
expect "the planted bug" "$(grade "$tmp/planted.rs" labs/$lab/src)" "48.0 63.0"
grep -q 'hint: a restarted node' "$tmp/results" ||
    { cat "$tmp/results"; echo "selftest: the planted bug's failures name no rule" >&2; exit 1; }
# Its failed real run is kept in the results store, and the student is told how to see
# it on their machine instead of a path in the autograder's.
if grep -q 'run directory kept: \|/tmp/' "$tmp/results" ||
    ! grep -q 'out of your reach: `cargo run -- grade 3.3`' "$tmp/results"; then
    cat "$tmp/results"; echo "selftest: the planted bug's results name the autograder's paths" >&2; exit 1
fi
if [ -z "$(ls -A "$root/source/lab/mutexlab-runs" 2>/dev/null)" ]; then
    echo "selftest: the planted bug's failed run was not kept in the results store" >&2; exit 1
fi
expect "a node that forges its results and exits" "$(grade "$tmp/forger.rs" .)" "0.0 63.0"
grep -q 'the test.s process ended (exit status 0) before the test did' "$tmp/results" ||
    { cat "$tmp/results"; echo "selftest: the forger's failures do not say why" >&2; exit 1; }
# 25 s: 1.1 passes, 1.2 and 1.3 loop for their 10 s each, 1.4 for what is left, and the
# rest are not run; the results are written all the same, within the budget.
started=$SECONDS
looped=$(AUTOGRADER_TIME_BUDGET=25 grade "$tmp/looper.rs" .)
took=$((SECONDS - started))
expect "a node that loops forever (25 s budget; run_autograder took ${took}s)" "$looped" "2.0 63.0"
if ! grep -q '"output": "no answer in 10 s: the test was stopped' "$tmp/results" ||
    ! grep -q '"output": "not run: the grader.s time budget of 25 s ran out' "$tmp/results"; then
    cat "$tmp/results"; echo "selftest: the looper's failures do not say why" >&2; exit 1
fi
if [ "$took" -gt 120 ]; then
    echo "selftest: grading the looper took ${took}s, its budget 25 s (and the build)" >&2; exit 1
fi
# A signal to the grader (Gradescope's own timeout, a Ctrl-C) while the looper's 1.2 runs:
# that test is stopped at once, its processes and temporary files removed, the rest
# marked not run, the results written, exit 130 (the grader used to die at once and
# leave its temporary directories behind). The lab's program still holds the looper.
(cd "$root/source/lab" && TMPDIR="$tmp/tmpdir" exec "$repo/target/debug/autograder" grade \
    --gradescope "$tmp/signalled.json" >"$tmp/stdout" 2>&1) &
grader=$!
waited=0
until grep -q 'TEST 1.2' "$tmp/stdout" 2>/dev/null; do
    sleep 0.1; waited=$((waited + 1))
    if [ $waited -gt 1200 ]; then kill -KILL $grader; echo "selftest: the grader never reached 1.2" >&2; exit 1; fi
done
sleep 0.5
kill -TERM $grader
started=$SECONDS
status=0; wait $grader || status=$?
if [ $status != 130 ] || [ $((SECONDS - started)) -gt 5 ]; then
    cat "$tmp/stdout"; echo "selftest: a signalled grader exited $status after $((SECONDS - started)) s, not 130 at once" >&2; exit 1
fi
if [ -n "$(ls -A "$tmp/tmpdir")" ] || pgrep -f signalled.json >/dev/null; then
    ls -la "$tmp/tmpdir" >&2; echo "selftest: a signalled grader left temporary files or processes behind" >&2; exit 1
fi
if ! grep -q 'not run: the grader was interrupted and stopped it' "$tmp/signalled.json" ||
    ! grep -q '"output": "not run: the grader was interrupted"' "$tmp/signalled.json"; then
    cat "$tmp/signalled.json"; echo "selftest: a signalled grader's results do not say so" >&2; exit 1
fi
echo "selftest: a grader signalled during 1.2 stopped it, cleaned up, wrote its results and exited 130"
expect "no node.rs" "$(grade "" .)" "0.0 0"
grep -q 'No node.rs in your submission' "$tmp/results" || { cat "$tmp/results"; exit 1; }
expect "a node.rs that does not compile" "$(grade "$tmp/broken.rs" .)" "0.0 0"
grep -q 'does not compile' "$tmp/results" || { cat "$tmp/results"; exit 1; }
echo "selftest: lab $lab's Gradescope autograder graded seven submissions in ${SECONDS}s"
