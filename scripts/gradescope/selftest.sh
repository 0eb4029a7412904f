#!/usr/bin/env bash
# Lab 03's Gradescope autograder, run as Gradescope runs it: the bundle unpacked into
# AUTOGRADER_ROOT/source, a submission in AUTOGRADER_ROOT/submission, run_autograder
# from AUTOGRADER_ROOT, and the results read back from AUTOGRADER_ROOT/results. The
# reference must score full marks, the skeleton 0, a planted bug (a node that starts no
# election when it restarts) part, and a submission without node.rs or one that does
# not compile 0 with a line that says so. setup.sh is not run (it installs system
# packages); its build step is. The bundle's lab depends on this tree's library and
# builds into this tree's target/, so only the lab's crate is compiled.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
lab=03-election
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CARGO_TARGET_DIR="$repo/target"

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
EOF
sed 's|// PLANTED|if _start { return; } // a restart starts no election|' "$tmp/reference.rs" >"$tmp/planted.rs"
printf 'this is not Rust\n' >"$tmp/broken.rs"

# Grade one submission ($1: a node.rs to upload, or "" for none, under $2 in the
# submission); print "SCORE MAX" from results.json and keep its text in $tmp/results.
grade() {
    rm -rf "$root/submission" "$root/results"
    mkdir -p "$root/submission/$2" "$root/results"
    if [ -n "$1" ]; then cp "$1" "$root/submission/$2/node.rs"; fi
    (cd "$root" && AUTOGRADER_ROOT="$root" ./run_autograder >"$tmp/stdout" 2>&1) || {
        cat "$tmp/stdout"; echo "selftest: run_autograder failed" >&2; exit 1
    }
    cp "$root/results/results.json" "$tmp/results"
    python3 - "$tmp/results" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
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
expect "no node.rs" "$(grade "" .)" "0.0 0"
grep -q 'No node.rs in your submission' "$tmp/results" || { cat "$tmp/results"; exit 1; }
expect "a node.rs that does not compile" "$(grade "$tmp/broken.rs" .)" "0.0 0"
grep -q 'does not compile' "$tmp/results" || { cat "$tmp/results"; exit 1; }
echo "selftest: lab $lab's Gradescope autograder graded five submissions in ${SECONDS}s"
