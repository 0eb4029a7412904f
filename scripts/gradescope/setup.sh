#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image: install a
# Rust toolchain from the distribution's packages, then build the lab once, so that
# grading a submission only compiles its node.rs (offline). AUTOGRADER_ROOT moves
# /autograder elsewhere, for a test.
set -euo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
src="$root/source"
need=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$src/mutexlab/Cargo.toml" 2>/dev/null || true)
need=${need:-1.88}

# `1.88` at least `1.88`?
new_enough() {
    [ "$(printf '%s\n%s\n' "$need" "$1" | sort -V | head -n 1)" = "$need" ]
}

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# A C linker, and python3 (run_autograder writes its own results with it when the
# lab cannot be built).
apt-get install -y -qq build-essential python3 ca-certificates curl >/dev/null

# The distribution's toolchain: plain rustc and cargo if new enough, else the newest
# versioned pair (Ubuntu packages rustc-1.NN and cargo-1.NN beside the default).
toolchain=""
plain=$(apt-cache policy rustc 2>/dev/null | sed -n 's/^ *Candidate: \([0-9]*\.[0-9]*\).*/\1/p')
if [ -n "$plain" ] && new_enough "$plain"; then
    apt-get install -y -qq rustc cargo >/dev/null
    toolchain="rustc $plain from the distribution"
else
    versioned=$(apt-cache search --names-only '^rustc-1\.[0-9]+$' 2>/dev/null | awk '{print $1}' |
        sed 's/^rustc-//' | sort -V | tail -n 1)
    if [ -n "$versioned" ] && new_enough "$versioned" &&
        apt-get install -y -qq "rustc-$versioned" "cargo-$versioned" >/dev/null; then
        echo "export PATH=/usr/lib/rust-$versioned/bin:\$PATH" >"$src/toolchain.env"
        toolchain="rustc-$versioned from the distribution"
    fi
fi
if [ -z "$toolchain" ]; then
    # Too old everywhere in this image's distribution: the Rust project's installer.
    echo "setup: the distribution has no rustc $need or newer (it has ${plain:-none}); installing it with rustup" >&2
    curl -sSf https://sh.rustup.rs | sh -s -- -y -q --profile minimal --default-toolchain stable
    echo "export PATH=\$HOME/.cargo/bin:\$PATH" >"$src/toolchain.env"
    toolchain="rustup's stable"
fi
if [ -f "$src/toolchain.env" ]; then
    # shellcheck disable=SC1091
    . "$src/toolchain.env"
fi
echo "setup: $toolchain: $(rustc --version)"

# Every crate fetched and the lab built once, with the skeleton's node.rs.
(cd "$src/lab" && cargo build -q)
echo "setup: $(cat "$src/lab/NAME") built"
