#!/bin/sh
# run.sh - the lttng-backtrace example end to end: build the traced
# program, trace it with LTTng (user space only: lttng-sessiond runs
# without kernel modules), read the trace back with babeltrace2 and
# symbolize the recorded backtraces with `stacksnap symbolize --maps`.
#   examples/lttng-backtrace/run.sh [OUTDIR]
# Environment: STACKSNAP (the CLI, default build/stacksnap), LIBSTACKSNAP
# (default build/libstacksnap.a), CC. Needs liblttng-ust-dev, lttng-tools,
# babeltrace2 (Debian). Starts a session daemon if none runs, and stops it
# again.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$(mktemp -d /tmp/stacksnap-lttng.XXXXXX)}
STACKSNAP=${STACKSNAP:-$ROOT/build/stacksnap}
LIB=${LIBSTACKSNAP:-$ROOT/build/libstacksnap.a}
CC=${CC:-cc}
mkdir -p "$OUT"
for t in lttng lttng-sessiond babeltrace2; do
	command -v $t >/dev/null || { echo "run.sh: $t not found (apt-get install lttng-tools babeltrace2 liblttng-ust-dev)" >&2; exit 1; }
done

# 1. the traced program (no frame pointers: the backtrace uses the CFI)
$CC -g -O2 -fomit-frame-pointer -I"$HERE" -I"$ROOT/include" -o "$OUT/app" \
	"$HERE/app.c" "$HERE/tp.c" "$LIB" \
	$(pkg-config --cflags --libs lttng-ust libelf libdw liblzma) -lstdc++ -lpthread -ldl

# 2. a user-space tracing session
started=
if ! lttng list >/dev/null 2>&1; then
	lttng-sessiond --no-kernel --daemonize
	started=1
fi
session=stacksnap-example-$$
cleanup() {
	lttng destroy "$session" >/dev/null 2>&1 || true
	if [ -n "$started" ]; then
		pid=$(pgrep -x lttng-sessiond | head -n 1)
		[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT
lttng create "$session" --output="$OUT/trace" >/dev/null
lttng enable-event --userspace 'stacksnap_example:*' >/dev/null
lttng start >/dev/null
LTTNG_UST_REGISTER_TIMEOUT=10000 "$OUT/app" "$OUT/maps.txt"
lttng stop >/dev/null
lttng destroy "$session" >/dev/null

# 3. the events, read back
babeltrace2 "$OUT/trace" > "$OUT/events.txt"
echo "$(wc -l < "$OUT/events.txt") events in $OUT/events.txt"

# 4. one line of addresses per event: where, then the stacksnap backtrace
#    (ips); and glibc's (glibc_ips) on a line of its own, as babeltrace2
#    prints the sequences: ips = [ [0] = 0x55D0..., [1] = ... ]
while IFS= read -r ev; do
	case "$ev" in *stacksnap_example:backtrace*) ;; *) continue ;; esac
	where=$(echo "$ev" | sed 's/.*where = "\([a-z_]*\)".*/\1/')
	ips=$(echo "$ev" | sed 's/.* ips = \[\(.*\)\], _glibc_ips_length.*/\1/' |
		grep -o '0x[0-9A-Fa-f]*' | tr 'A-F\n' 'a-f ')
	glibc=$(echo "$ev" | sed 's/.* glibc_ips = \[\(.*\)\] }$/\1/' |
		grep -o '0x[0-9A-Fa-f]*' | tr 'A-F\n' 'a-f ')
	echo "$where $ips"
	[ -z "$glibc" ] || echo "glibc:$where $glibc"
done < "$OUT/events.txt" > "$OUT/addresses.txt"

# 5. symbolized against the saved mappings (the program has exited):
#    frame 0 of a SIGPROF sample is the interrupted pc (exact)
grep '^example_leaf ' "$OUT/addresses.txt" | cut -d' ' -f2- |
	"$STACKSNAP" symbolize --maps "$OUT/maps.txt" > "$OUT/symbolized.txt"
grep '^sigprof ' "$OUT/addresses.txt" | cut -d' ' -f2- |
	"$STACKSNAP" symbolize --maps "$OUT/maps.txt" --first-exact > "$OUT/symbolized-sigprof.txt"
echo "== a backtrace recorded in an event (example_leaf):"
sed '/^$/q' "$OUT/symbolized.txt"
echo "== a SIGPROF sample:"
sed '/^$/q' "$OUT/symbolized-sigprof.txt"
