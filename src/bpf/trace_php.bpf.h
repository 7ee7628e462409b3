/* trace_php.bpf.h - the in-kernel walk of a PHP process's frames, for
 * trace_common.bpf.h (after its maps and scratch): the chain of
 * zend_execute_data from EG(current_execute_data), as php_capture__take
 * reads it (src/runtime/php/php_frames.c), into the Python frames'
 * slots; src/trace/trace_php.c names and merges them. */
#ifndef SS_BPF_TRACE_PHP_BPF_H
#define SS_BPF_TRACE_PHP_BPF_H

#include "bpf/trace_php_record.h"

#define PHP_ZEND_CALL_TOP (1u << 17)

/* The Zend engines of the traced processes (key: tgid); written by the
 * user side. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct trace_php_proc);
} php_procs SEC(".maps");

/* The chain of the current process's engine into s->py, innermost
 * first, bounded by TRACE_PY_MAX_FRAMES: one read per frame (its
 * zend_execute_data), the offsets masked into the buffer (the user side
 * checked them). A non-ZTS engine runs PHP on one thread: another
 * thread's event gets its frames too, and the merge gives them to none
 * (no execute_ex among its native frames). A global function: verified
 * once. */
__attribute__((noinline)) int trace_php_walk(struct ss_scratch *s)
{
	const struct trace_php_proc *c;
	__u32 tgid;
	__u64 ex;
	__u16 n = 0;

	if (!s)
		return 0;
	tgid = s->rec.pid;
	if (!(c = bpf_map_lookup_elem(&php_procs, &tgid)))
		return 0;
	ex = read_u64(c->eg + c->eg_current_execute_data);
	s->rec.pyend = TRACE_PY_FRAME_LIMIT;
	__u32 span = c->ex_size;
	__u32 o_func = c->ex_func & (TRACE_PHP_SPAN - 8);
	__u32 o_opline = c->ex_opline & (TRACE_PHP_SPAN - 8);
	__u32 o_prev = c->ex_prev & (TRACE_PHP_SPAN - 8);
	__u32 o_info = c->ex_call_info & (TRACE_PHP_SPAN - 4);

	if (span > TRACE_PHP_SPAN)
		span = TRACE_PHP_SPAN;
	for (int i = 0; i < TRACE_PY_MAX_FRAMES; i++) {
		__u64 func, opline, prev;
		__u32 info;

		if (!ex) {
			s->rec.pyend = TRACE_PY_COMPLETE;
			break;
		}
		if ((ex & 7) || bpf_probe_read_user(s->pyf, span, (const void *)ex)) {
			s->rec.pyend = TRACE_PY_BAD_MEMORY;
			break;
		}
		func = *(__u64 *)(s->pyf + o_func);
		opline = *(__u64 *)(s->pyf + o_opline);
		info = *(__u32 *)(s->pyf + o_info);
		prev = *(__u64 *)(s->pyf + o_prev);
		s->py[i & (TRACE_PY_MAX_FRAMES - 1)] = (struct trace_py_frame){
			.code = (func & ~7ull) |
				(info & PHP_ZEND_CALL_TOP ? TRACE_PHP_TOP : 0),
			.instr = opline,
		};
		n++;
		if (prev == ex) {
			s->rec.pyend = TRACE_PY_BAD_MEMORY;
			break;
		}
		ex = prev;
	}
	s->rec.pyframes = n;
	return 0;
}

#endif
