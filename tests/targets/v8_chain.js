// v8_chain.js - target of tests/integration/v8_frames: the main thread
// and a worker each call a known chain of named functions whose leaf
// records its own stack (new Error().stack, every frame) on stdout, then
// blocks in Atomics.wait until killed. The main thread's leaf and its
// caller are hot: called often enough first (without blocking) that V8
// optimizes the caller with the leaf inlined, so both are one compiled
// frame; the worker's chain runs interpreted and
// includes a class method and an arrow function. Each call is on its own
// line, and the leaves record and block on one line. With
// V8_CHAIN_NO_STACK=1 in the environment the leaves record `null`: the
// Error is made but its stack never formatted, so V8 never computes the
// scripts' line ends (lines then come from the sources). With
// V8_CHAIN_BUSY=1 a second worker records its stack in busy_spin and
// then spins there for ever (a thread that profile and trace sample).
'use strict';
const fs = require('fs');
const { Worker, isMainThread, workerData } = require('worker_threads');

Error.stackTraceLimit = 100;
// Where a leaf's record goes: fd 1 for the blocking call, /dev/null while
// warming up (an index, not a branch, so the optimized code has no
// deoptimizing branch for the last call).
const sinks = [1, fs.openSync('/dev/null', 'w')];

const NO_STACK = process.env.V8_CHAIN_NO_STACK === '1';

function record(tag, error, sink) {
	// Synchronous: the thread blocks right after.
	fs.writeSync(sinks[sink], tag + ' ' +
		     JSON.stringify(NO_STACK ? null : error.stack) + '\n');
}

// expect 1: returns at once ("not-equal"); 0: blocks (the cell stays 0).
// Small: V8 inlines it into hot_leaf's optimized code.
function hot_blocker(sab, expect) {
	record('main', new Error(), expect); Atomics.wait(new Int32Array(sab), 0, expect);
}
function hot_leaf(sab, expect) {
	let sum = 0;
	for (let i = 0; i < 200; i++) sum += i * expect;
	hot_blocker(sab, expect);
	return sum;
}
function main_gamma(sab) {
	hot_leaf(sab, 0);
}
function main_beta(sab) {
	main_gamma(sab);
}
function main_alpha(sab) {
	main_beta(sab);
}
// V8 optimizes on a background thread: a pause lets it install the code
// the last calls then run.
function warm(sab) {
	for (let i = 0; i < 30000; i++)
		hot_leaf(sab, 1);
	Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
	for (let i = 0; i < 1000; i++)
		hot_leaf(sab, 1);
}

function worker_leaf(sab) {
	record('worker', new Error(), 0); Atomics.wait(new Int32Array(sab), 0, 0);
}
const arrow_step = (sab) => {
	worker_leaf(sab);
};
class Box {
	wait_in(sab) {
		arrow_step(sab);
	}
}
function worker_alpha(sab) {
	new Box().wait_in(sab);
}

// A loop without calls: V8 compiles it on stack (OSR) and it stays in
// that one frame.
function busy_spin() {
	record('busy', new Error(), 0);
	let x = 1;
	for (;;)
		x = (x * 1103515245 + 12345) | 0;
}
function busy_beta() {
	busy_spin();
}
function busy_alpha() {
	busy_beta();
}

if (isMainThread) {
	const sab = new SharedArrayBuffer(4);

	warm(sab);
	new Worker(__filename);
	if (process.env.V8_CHAIN_BUSY === '1')
		new Worker(__filename, { workerData: 'busy' });
	main_alpha(sab);
} else if (workerData === 'busy') {
	busy_alpha();
} else {
	worker_alpha(new SharedArrayBuffer(4));
}
