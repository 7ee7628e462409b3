/* trace_php_record.h - what the trace's in-kernel PHP walk
 * (trace_php.bpf.h) reads of one traced process's Zend engine, written
 * by the user side (src/trace/trace_php.c) from the layout of
 * src/runtime/php/, and how its frames come back in a record. */
#ifndef SS_BPF_TRACE_PHP_RECORD_H
#define SS_BPF_TRACE_PHP_RECORD_H

/* Key: tgid. The chain starts at EG(current_execute_data), the word at
 * eg + eg_current_execute_data (a non-ZTS engine: executor_globals is
 * one global); each zend_execute_data read whole (ex_size bytes) gives
 * its func, opline, call info and prev_execute_data. Offsets in bytes. */
struct trace_php_proc {
	__u64 eg;
	__u32 eg_current_execute_data;
	__u32 ex_opline, ex_func, ex_call_info, ex_prev, ex_size;
};

/* A PHP frame goes in a record's trace_py_frame slots (one process runs
 * one runtime): code the zend_function's address with TRACE_PHP_TOP in
 * bit 0 (the frame's call info has ZEND_CALL_TOP: entered from C), instr
 * its opline. pyend TRACE_PY_COMPLETE: the chain's end was reached. */
#define TRACE_PHP_TOP 1ull
#define TRACE_PHP_SPAN 64	/* bytes read of one zend_execute_data */

#endif
