#!/bin/sh
# Regenerate the README's table of `mutexlab check` counts (make check-table): every
# built-in algorithm at n = 2 and 3 with k = 1, plus n = 3, k = 2 and n = 4 for the ones
# named in `more` and n = 3, k = 2 for those in `k2`, on a release build; the algorithms
# whose timers fire without end run within their registry's timer budget (1 firing), and
# at n = 2 also within 3.
# MAX_SECONDS caps each check (default 60); ALGOS="a b" makes only those algorithms' rows.
set -eu
bin=${MUTEXLAB:-target/release/mutexlab}
secs=${MAX_SECONDS:-60}
timed="centralized-bully voting token-ring-ft bully bully-gm hirschberg-sinclair"
k2="none lamport centralized-bully voting token-ring-ft bully-gm hirschberg-sinclair superpeer superpeer-cells"
more="centralized maekawa ricart-agrawala ricart-agrawala-rc token-ring suzuki-kasami ra-token raymond neilsen-mizuno chang-roberts chang-roberts-down ring-list bully"
algos=${ALGOS:-$("$bin" algorithms | awk '/^  / && $1 != "flock" { print $1 }')}
echo "| algorithm | n | k | timer firings | states | transitions | time (s) | memory (MB) | search |"
echo "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |"
row() {
    a=$1 n=$2 k=$3
    shift 3
    "$bin" check --algo "$a" -n "$n" -k "$k" --max-seconds "$secs" --max-states 100000000 --json "$@" |
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
if r.get("counter_bound") is not None:
    how += " (counters at most %d)" % r["counter_bound"]
mb = (r.get("peak_memory_bytes") or 0) / 1e6
fires = "no bound" if r.get("timer_fires") is None else "at most %d" % r["timer_fires"]
print("| %s | %s | %s | %s | %s | %s | %.2f | %.0f | %s |" % (a, n, k, fires, format(r["states"], ","), format(r["transitions"], ","), r["seconds"], mb, how))
' "$a" "$n" "$k" || true
}
for a in $algos; do
    row "$a" 2 1
    case " $timed " in
    *" $a "*) row "$a" 2 1 --timer-fires 3 ;;
    esac
    row "$a" 3 1
    case " $more " in
    *" $a "*) row "$a" 3 2; row "$a" 4 1 ;;
    esac
    case " $k2 " in
    *" $a "*) row "$a" 3 2 ;;
    esac
done
