#!/bin/sh
# java_freeze.sh JAVA_BIN_DIR [THREADS] [RUNS] - the freeze of a JVM with
# THREADS (64) threads asleep 10 Java frames deep, with and without its
# Java frames (--runtime=off), RUNS (30) runs each, alternating: medians
# and p25 of --stats' freeze line, in microseconds (BENCHMARKS.md).
set -e
bin=$1; n=${2:-64}; runs=${3:-30}
here=$(cd "$(dirname "$0")" && pwd); top=$here/..
tmp=$(mktemp -d); trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
"$bin/javac" -d "$tmp" "$here/JavaThreads.java"
"$bin/java" -cp "$tmp" JavaThreads "$n" > "$tmp/out" & pid=$!
while ! grep -q ready "$tmp/out"; do sleep 0.2; done
for i in $(seq "$runs"); do
	for m in merged off; do
		"$top/build/stacksnap" --stats --freeze-all --runtime=$m $pid 2>&1 \
			>/dev/null | sed -n "s/.*freeze[^0-9]*\([0-9.]*\) *us.*/$m \1/p" | head -1
	done
done > "$tmp/r"
for m in merged off; do
	grep "^$m " "$tmp/r" | awk '{print $2}' | sort -n | awk -v m=$m \
		'{a[NR]=$1} END {printf "%s: median %.0f us, p25 %.0f us (%d runs)\n", m, a[int((NR+1)/2)], a[int((NR+3)/4)], NR}'
done
