#!/bin/sh
# Build a lab's Gradescope autograder bundle: `make gradescope-03-election`, or
#
#   scripts/gradescope/bundle.sh LAB [OUT_DIR]
#
# writes OUT_DIR/LAB/ (default target/gradescope/LAB/) holding setup.sh, run_autograder,
# the lab's crate (lab/) and the mutexlab library it needs (mutexlab/), and zips it into
# OUT_DIR/LAB.zip, the file to upload as the assignment's autograder. setup.sh installs
# a Rust toolchain and builds the lab once; run_autograder copies each submission's
# node.rs into lab/src/ and grades it into /autograder/results/results.json.
#
# MUTEXLAB_LIBRARY=PATH makes the lab depend on the library at PATH instead of a copy in
# the bundle (scripts/gradescope/selftest.sh uses it to reuse this tree's build).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
lab=${1:-}
if [ -z "$lab" ] || [ $# -gt 2 ]; then
    echo "usage: $0 LAB [OUT_DIR]   (LAB: one of $(cd "$repo/labs" && ls -d 0*-* | tr '\n' ' '))" >&2
    exit 2
fi
if [ ! -f "$repo/labs/$lab/Cargo.toml" ]; then
    echo "bundle: labs/$lab is not a lab with a grader (see labs/README.md)" >&2
    exit 2
fi
out=${2:-$repo/target/gradescope}
dest="$out/$lab"
rm -rf "$dest" "$out/$lab.zip"
mkdir -p "$dest/lab/.cargo"

# The lab's crate, its build directory beside it, its library where the bundle has it.
cp -R "$repo/labs/$lab/src" "$dest/lab/src"
cp "$repo/labs/$lab/README.md" "$dest/lab/"
if [ -n "${MUTEXLAB_LIBRARY:-}" ]; then
    library=$(cd "$MUTEXLAB_LIBRARY" && pwd)
else
    library=../mutexlab
    mkdir -p "$dest/mutexlab"
    cp -R "$repo/lib" "$repo/bin" "$dest/mutexlab/"
    cp "$repo/Cargo.toml" "$repo/Cargo.lock" "$dest/mutexlab/"
fi
# Named `autograder`, package and program: a build shared with this tree's labs (the
# self-test's) never puts the bundle's program where `make lab-NAME` finds its own.
sed -e "s|^mutexlab = { path = \"../..\" }|mutexlab = { path = \"$library\" }|" \
    -e "s|^name = \"lab-$lab\"|name = \"autograder\"|" \
    "$repo/labs/$lab/Cargo.toml" >"$dest/lab/Cargo.toml"
sed "s|^name = \"lab-$lab\"|name = \"autograder\"|" "$repo/labs/$lab/Cargo.lock" >"$dest/lab/Cargo.lock"
if ! grep -q "^mutexlab = { path = \"$library\" }" "$dest/lab/Cargo.toml" ||
    [ "$(grep -c '^name = "autograder"' "$dest/lab/Cargo.toml")" != 2 ]; then
    echo "bundle: labs/$lab/Cargo.toml no longer names its package lab-$lab and mutexlab as path \"../..\"" >&2
    exit 1
fi
printf '[build]\ntarget-dir = "../target"\n' >"$dest/lab/.cargo/config.toml"

cp "$here/setup.sh" "$here/run_autograder" "$dest/"
chmod +x "$dest/setup.sh" "$dest/run_autograder"
echo "$lab" >"$dest/lab/NAME"

if command -v zip >/dev/null 2>&1; then
    # The files at the archive's root, as Gradescope wants them.
    (cd "$dest" && zip -qr "../$lab.zip" .)
    echo "bundle: $out/$lab.zip (upload it as the autograder; its files are in $dest)"
else
    echo "bundle: $dest (zip is not installed: zip the files inside it, not the directory)"
fi
