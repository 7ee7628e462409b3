#!/bin/bash
# python_sample_cost.sh - what walking the Python frames adds to one sample
# of the eBPF sampling program (trace_sample), as the kernel counts its run
# time (kernel.bpf_stats_enabled): a Python 3.11 process spinning DEPTH
# Python frames deep (tests/targets/py_deep_spin.py) is sampled at 999 Hz
# for SECONDS with the Python walk (--runtime=merged) and without
# (--runtime=off), alternately, RUNS times each. Prints the program's run
# time per captured sample (the runs of untraced threads, which return at
# once, included). Needs root.
#   usage: bench/python_sample_cost.sh [DEPTH [SECONDS [RUNS]]]
set -e
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SS=${STACKSNAP:-$ROOT/build/stacksnap}
DEPTH=${1:-0}; SECS=${2:-4}; RUNS=${3:-3}
ERR=$(mktemp)
one() {
	/usr/bin/python3.11 "$ROOT/tests/targets/py_deep_spin.py" 60 "$DEPTH" &
	local p=$! s rt cap
	sleep 0.5
	sysctl -q kernel.bpf_stats_enabled=1
	"$SS" trace -F 999 -p $p --duration "$SECS" --count --runtime="$1" >/dev/null 2>"$ERR" &
	local t=$!
	sleep "$(echo "$SECS - 0.3" | bc)"
	s=$(bpftool prog show name trace_sample | head -1)
	wait $t
	kill $p
	sysctl -q kernel.bpf_stats_enabled=0
	rt=$(echo "$s" | sed 's/.*run_time_ns \([0-9]*\).*/\1/')
	cap=$(grep -o "[0-9]* events captured" "$ERR" | cut -d' ' -f1)
	echo "depth $DEPTH $1: $cap samples, $((rt / cap)) ns per sample"
}
for i in $(seq "$RUNS"); do one merged; one off; done
rm -f "$ERR"
