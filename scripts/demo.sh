#!/bin/sh
# demo.sh - `make demo`: builds the demo target without frame pointers,
# starts it, prints `stacksnap --stats` of it, and stops it.
set -e
O=${O:-build}
mkdir -p "$O/demo"
cc -O2 -g -fomit-frame-pointer -pthread -o "$O/demo/demo-target" examples/demo-target.c
"$O/demo/demo-target" > "$O/demo/pid" &
target=$!
trap 'kill $target 2>/dev/null; wait $target 2>/dev/null || true' EXIT INT TERM
# Wait until it has started its threads.
i=0
while [ ! -s "$O/demo/pid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.1
echo "\$ stacksnap --stats $target"
"$O/stacksnap" --stats "$target"
echo
echo "\$ stacksnap --lines -t $target $target    # main thread, with file:line"
"$O/stacksnap" --lines -t "$target" "$target"
