// jit_busy.js - target of tests/integration/jit_names' perf-script case:
// spins for ARGV[2] seconds (default 2) in a chain of named functions, so
// that `perf record` samples land in JIT code with a known name.
'use strict';
const until = Date.now() + 1000 * Number(process.argv[2] || 2);
let sink = 0;

function busy_leaf(n) {
	let x = 0;
	for (let i = 0; i < n; i++)
		x = (x * 31 + i) | 0;
	return x;
}
function busy_mid(n) {
	return busy_leaf(n) + 1;
}
function busy_top(n) {
	return busy_mid(n) + 1;
}

while (Date.now() < until)
	sink += busy_top(100000);
console.log('done ' + sink);
