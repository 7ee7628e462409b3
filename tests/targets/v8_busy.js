// v8_busy.js - target of tests/integration/v8_running: a worker runs
// busyMiddle, whose loop calls busyLeaf (small: V8 optimizes busyMiddle,
// on the stack, with busyLeaf inlined), until the main thread, told by a
// line on its stdin (or its end), sets a flag the loop reads; then both
// exit (under --cpu-prof, each writes its profile). Prints "ready" once
// the worker runs.
'use strict';
const { Worker, isMainThread, workerData, parentPort } = require('worker_threads');

function busyLeaf(x) {
	let s = 0;
	for (let i = 0; i < 100; i++) s += (x * i) % 7;
	return s;
}

function busyMiddle(flag) {
	let t = 0;
	for (let k = 1; ; k++) {
		t += busyLeaf(t & 1023);
		if ((k & 0xffff) === 0 && Atomics.load(flag, 0) !== 0)
			return t;
	}
}

if (isMainThread) {
	const sab = new SharedArrayBuffer(4);
	const flag = new Int32Array(sab);
	const w = new Worker(__filename, { workerData: sab });
	w.on('message', () => console.log('ready'));
	w.on('exit', () => process.exit(0));
	const stop = () => Atomics.store(flag, 0, 1);
	process.stdin.on('data', stop);
	process.stdin.on('end', stop);
} else {
	parentPort.postMessage('running');
	busyMiddle(new Int32Array(workerData));
}
