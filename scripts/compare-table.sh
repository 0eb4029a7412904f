#!/bin/sh
# Regenerate the README's comparison table (make compare-table): what
# `mutexlab compare --markdown` prints on a release build, both tables and the notes
# under them, between the README's compare-table markers, with the date, the machine
# and the settings. ARGS are passed to compare (e.g. ARGS='--repeat 5').
# A test (compare::tests::the_readme_s_table_has_the_shape_compare_markdown_prints)
# keeps the tables' shape in step with compare's.
set -eu
bin=${MUTEXLAB:-target/release/mutexlab}
readme=${README:-README.md}
# Refused before the minutes of measuring: a README without the markers.
if ! grep -q '^<!-- compare-table: written by `make compare-table` -->$' "$readme" ||
    ! grep -q '^<!-- compare-table end -->$' "$readme"; then
    echo "compare-table: $readme has no compare-table markers" >&2
    exit 2
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2086
"$bin" compare --markdown ${ARGS:-} >"$out"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
machine="$(uname -sm), $(nproc) cores${cpu:+ ($cpu)}, load average $(cut -d' ' -f1-3 /proc/loadavg) before the run"
python3 - "$readme" "$out" "$(date -u +%Y-%m-%d)" "$machine" "${ARGS:-}" <<'PY'
import sys
readme, table, day, machine, args = sys.argv[1:6]
begin = "<!-- compare-table: written by `make compare-table` -->"
end = "<!-- compare-table end -->"
text = open(readme, encoding="utf-8").read()
if begin not in text or end not in text:
    sys.exit("compare-table: %s has no compare-table markers" % readme)
settings = "`mutexlab compare --markdown%s`" % (" " + args if args else "")
body = open(table, encoding="utf-8").read().rstrip("\n")
new = "%s\nMeasured by `make compare-table` on %s on %s: %s, release build, default settings\nunless given there.\n\n%s\n" % (begin, day, machine, settings, body)
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(readme, "w", encoding="utf-8").write(head + new + end + tail)
PY
echo "compare-table: wrote the table into $readme"
