#!/bin/sh
# Regenerate the README's table of `mutexlab check` counts (make check-table): every
# built-in algorithm at n = 2 and 3 with k = 1, plus n = 4 and n = 3, k = 2 for the ones
# named below, on a release build. MAX_SECONDS caps each check (default 60).
set -eu
bin=${MUTEXLAB:-target/release/mutexlab}
secs=${MAX_SECONDS:-60}
more="centralized maekawa ricart-agrawala ricart-agrawala-rc token-ring suzuki-kasami ra-token raymond neilsen-mizuno chang-roberts chang-roberts-down ring-list bully"
algos=$("$bin" algorithms | awk '/^  / && $1 != "flock" { print $1 }')
echo "| algorithm | n | k | states | transitions | time (s) | memory (MB) | search |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"
row() {
    "$bin" check --algo "$1" -n "$2" -k "$3" --max-seconds "$secs" --max-states 100000000 --json |
        python3 -c '
import json, sys
r = json.load(sys.stdin)
a, n, k = sys.argv[1:4]
if r["violation"]:
    how = "violation: " + r["violation"]["property"] + " (%d steps)" % len(r["violation"]["choices"])
elif r["complete"]:
    how = "complete"
else:
    how = "cut short"
mb = (r.get("peak_memory_bytes") or 0) / 1e6
print("| %s | %s | %s | %s | %s | %.2f | %.0f | %s |" % (a, n, k, format(r["states"], ","), format(r["transitions"], ","), r["seconds"], mb, how))
' "$1" "$2" "$3" || true
}
for a in $algos; do
    row "$a" 2 1
    row "$a" 3 1
    case " $more " in
    *" $a "*) row "$a" 3 2; row "$a" 4 1 ;;
    esac
done
