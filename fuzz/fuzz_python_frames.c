/* fuzz_python_frames.c - libFuzzer target for the Python frame-chain
 * reader over corrupt memory: the input is the target's memory from
 * _PyRuntime on (first byte: which layout: 3.11 and its flavours, 3.12,
 * 3.7-3.10's PyFrameObject chains), read through a copy source;
 * capture and resolve must end every chain (loops, wild pointers, huge
 * lengths) within their bounds and never read outside the input. The
 * rest of the input also goes to the _Py_DebugOffsets reader. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/python/python.h"
#include "stacksnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x100000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct { unsigned minor; bool debug, trace_refs; } pick[] = {
		{ 11, false, false }, { 11, true, false }, { 11, false, true },
		{ 12, false, false }, { 7, false, false }, { 8, false, false },
		{ 9, false, false }, { 10, false, false },
	};
	struct py_runtime rt = { 0 };
	struct py_capture cap = { 0 };
	struct py_resolver res;
	struct stacksnap_mem *mem;
	struct py_layout dl;

	if (size < 1)
		return 0;
	if (py_layout__from_debug_offsets(data + 1, size - 1, &dl) == 0) {
		rt.own = dl;
		rt.layout = &rt.own;
	} else {
		unsigned k = data[0] % (sizeof(pick) / sizeof(pick[0]));
		rt.layout = py_layout__find(3, pick[k].minor, pick[k].debug,
					    pick[k].trace_refs);
	}
	rt.found = true;
	rt.runtime_addr = BASE + 1;
	/* Before 3.11: the tid from the struct pthread (glibc's offset). */
	if (rt.layout && rt.layout->ts_native_thread_id == PY_OFF_NONE)
		rt.pthread_tid = 0x2d0;
	mem = stacksnap_mem__new_copy(data, size, BASE);
	if (!mem || !rt.layout)
		goto out;
	/* Twice: the second capture reads the thread states the first
	   found in one batch. */
	if (py_capture__all(&rt, mem, &cap) == 0 &&
	    py_capture__all(&rt, mem, &cap) == 0) {
		if (cap.nthreads > PY_MAX_THREADS)
			abort();
		py_resolver__init(&res, &rt, mem);
		for (size_t i = 0; i < cap.nthreads; i++) {
			struct py_frame *frames;
			size_t n;
			const char *end;

			if (cap.threads[i].nframes > PY_MAX_FRAMES)
				abort();
			py_resolve__thread_name(&res, &cap, &cap.threads[i]);
			if (py_resolve__thread(&res, &cap, &cap.threads[i],
					       &frames, &n, &end) == 0) {
				for (size_t f = 0; f < n; f++)
					if (!frames[f].function || !frames[f].file)
						abort();
				free(frames);
			}
		}
		py_resolver__free(&res);
	}
out:
	py_capture__free(&cap);
	stacksnap_mem__free(mem);
	return 0;
}
