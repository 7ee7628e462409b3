// jit_chain.js - target of tests/integration/jit_names: the main thread
// and a worker each call a known chain of named functions whose leaf
// records its own stack (new Error().stack) on stdout, then blocks in
// Atomics.wait until killed. Each call is on its own line, so a frame's
// line says which call it is in.
'use strict';
const fs = require('fs');
const { Worker, isMainThread } = require('worker_threads');

function record(tag, stack) {
	// Synchronous: the thread blocks right after, and a worker's
	// console.log would wait for the blocked main thread.
	fs.writeSync(1, tag + ' ' + JSON.stringify(stack) + '\n');
}

// The stack is recorded on the line that blocks: the leaf's line is the
// same in both views.
function main_leaf(sab) {
	record('main', new Error().stack); Atomics.wait(new Int32Array(sab), 0, 0);
}
function main_gamma(sab) {
	main_leaf(sab);
}
function main_beta(sab) {
	main_gamma(sab);
}
function main_alpha(sab) {
	main_beta(sab);
}

function worker_leaf(sab) {
	record('worker', new Error().stack); Atomics.wait(new Int32Array(sab), 0, 0);
}
function worker_beta(sab) {
	worker_leaf(sab);
}
function worker_alpha(sab) {
	worker_beta(sab);
}

if (isMainThread) {
	new Worker(__filename);
	main_alpha(new SharedArrayBuffer(4));
} else {
	worker_alpha(new SharedArrayBuffer(4));
}
