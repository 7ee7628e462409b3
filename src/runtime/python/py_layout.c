/* py_layout.c - the table of CPython structure offsets per build, and the
 * reader of the _Py_DebugOffsets table 3.13+ keeps at the start of
 * _PyRuntime. */
#include "runtime/python/py_layout.h"

#include <errno.h>
#include <string.h>

/* CPython 3.11 (x86_64), derived from the debug information of Debian 12's
 * builds 3.11.2-6+deb12u9 with gdb, e.g.
 *
 *   gdb -batch -ex 'set max-value-size unlimited' \
 *       -ex 'ptype/o struct _ts' -ex 'ptype/o struct _PyInterpreterFrame' \
 *       -ex 'ptype/o struct _PyCFrame' -ex 'ptype/o PyCodeObject' \
 *       -ex 'ptype/o PyASCIIObject' -ex 'ptype/o PyCompactUnicodeObject' \
 *       -ex 'print &((struct pyruntimestate *)0)->interpreters.head' \
 *       -ex 'print &((struct pyruntimestate *)0)->ceval.gil.locked' \
 *       -ex 'print &((struct pyruntimestate *)0)->ceval.gil.last_holder' \
 *       -ex 'print &((struct pyruntimestate *)0)->_finalizing' \
 *       -ex 'print &((struct _is *)0)->threads.head' \
 *       -ex 'print &((PyTypeObject *)0)->tp_name' \
 *       -ex 'print &((PyBytesObject *)0)->ob_sval' /usr/bin/python3.11
 *
 * (the release build's debug info is in python3.11-dbg's
 * /usr/lib/debug/.build-id/c5/61f3...debug), and the same commands on
 * /usr/bin/python3.11d, the Py_DEBUG build, which carries its own. Every
 * offset came out equal: since 3.8 Py_DEBUG no longer implies
 * Py_TRACE_REFS, so the object header stays 16 bytes (python3.11d has no
 * sys.getobjects), and none of these structures has Py_DEBUG-only fields
 * before the fields read here. The debug build is still its own entry, so
 * a later version where they differ has a place to say so, and the tests
 * (tests/integration/python_frames) run both. */
static const struct py_layout py311 = {
	.name = "3.11",
	.major = 3, .minor = 11,
	.rt_initialized = 0x10,
	.rt_finalizing = 0x18,
	.rt_interpreters_head = 0x28,
	.rt_gil_locked = 0x178,
	.rt_gil_holder = 0x170,
	.interp_next = 0x0,
	.interp_id = 0x30,
	.interp_threads_head = 0x10,
	.interp_gil_locked = PY_OFF_NONE,
	.interp_gil_holder = PY_OFF_NONE,
	.interp_size = 0x38,
	.ts_next = 8,
	.ts_thread_id = 152,
	.ts_native_thread_id = 160,
	.ts_cframe = 56,
	.cframe_current_frame = 8,
	.ts_current_frame = PY_OFF_NONE,
	.ts_datastack_chunk = 296,
	.ts_datastack_top = 304,
	.ts_size = 360,
	.frame_previous = 48,
	.frame_code = 32,
	.frame_instr = 56,
	.frame_is_entry = 68,
	.frame_owner = 69,
	.frame_size = 80,
	.frame_localsplus = 72,
	.owner_generator = 1,
	.owner_cstack = PY_OFF_NONE,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_firstlineno = 72,
	.code_firsttraceable = 168,
	.code_adaptive = 184,
	.code_size = 184,
	.ob_type = 8,
	.type_name = 24,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 48,
	.unicode_compact_size = 72,
	.bytes_size = 16,
	.bytes_data = 32,
	/* `print &((PyHeapTypeObject *)0)->ht_cached_keys`, `ptype/o
	   PyDictObject`; the managed dict's two pointers sit before the GC
	   header (16 bytes): values at -32, dict at -24 (_PyObject_ValuesPointer,
	   _PyObject_ManagedDictPointer). */
	.type_flags = 0xa8,
	.type_cached_keys = 0x368,
	.managed_values = -32,
	.managed_dict = -24,
	.dict_keys = 32,
	.dict_values = 40,
	.frame_lasti = PY_OFF_NONE,
	.type_dictoffset = PY_OFF_NONE,
	.dictkeys_size = PY_OFF_NONE,
	.dictkeys_nentries = PY_OFF_NONE,
	.dictkeys_indices = PY_OFF_NONE,
};

/* CPython 3.12 (x86_64), derived the same way from the debug information
 * of pyenv's 3.12.1 build on this machine
 * (/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0, built with -g):
 * `print &((struct _is *)0)->_gil.locked`, `ptype/o struct
 * _PyInterpreterFrame`, ... as above. 3.12 keeps the _PyCFrame
 * indirection and prev_instr, moves f_code first in the frame, drops
 * is_entry for the C-stack shim frame (FRAME_OWNED_BY_CSTACK = 3), gives
 * each interpreter its own GIL, and drops the string's wstr (PyASCIIObject
 * is 40 bytes). No debug build of 3.12 is at hand: a Py_DEBUG 3.12 gets
 * "layout unknown". */
static const struct py_layout py312 = {
	.name = "3.12",
	.major = 3, .minor = 12,
	.rt_initialized = 0x10,
	.rt_finalizing = 0x18,
	.rt_interpreters_head = 0x28,
	.rt_gil_locked = PY_OFF_NONE,
	.rt_gil_holder = PY_OFF_NONE,
	.interp_next = 0x0,
	.interp_id = 0x8,
	.interp_threads_head = 0x48,
	.interp_gil_locked = 0x420,
	.interp_gil_holder = 0x418,
	.interp_size = 0x50,
	.ts_next = 0x8,
	.ts_thread_id = 0x88,
	.ts_native_thread_id = 0x90,
	.ts_cframe = 0x38,
	.cframe_current_frame = 0,
	.ts_current_frame = PY_OFF_NONE,
	.ts_datastack_chunk = 0xe8,
	.ts_datastack_top = 0xf0,
	.ts_size = 288,
	.frame_previous = 8,
	.frame_code = 0,
	.frame_instr = 56,
	.frame_is_entry = PY_OFF_NONE,
	.frame_owner = 70,
	.frame_size = 80,
	.frame_localsplus = 72,
	.owner_generator = 1,
	.owner_cstack = 3,
	.code_filename = 0x70,
	.code_name = 0x78,
	.code_qualname = 0x80,
	.code_linetable = 0x88,
	.code_firstlineno = 0x44,
	.code_firsttraceable = 0xb0,
	.code_adaptive = 0xc0,
	.code_size = 0xc0,
	.ob_type = 8,
	.type_name = 24,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 40,
	.unicode_compact_size = 56,
	.bytes_size = 16,
	.bytes_data = 32,
	/* `print &((PyHeapTypeObject *)0)->ht_cached_keys`, `ptype
	   PyDictOrValues`: 3.12 keeps one word before the GC header, the
	   dict or (tagged odd) the values array - 1. */
	.type_flags = 0xa8,
	.type_cached_keys = 0x370,
	.managed_values = PY_OFF_NONE,
	.managed_dict = -24,
	.dict_keys = 32,
	.dict_values = 40,
	.frame_lasti = PY_OFF_NONE,
	.type_dictoffset = PY_OFF_NONE,
	.dictkeys_size = PY_OFF_NONE,
	.dictkeys_nentries = PY_OFF_NONE,
	.dictkeys_indices = PY_OFF_NONE,
};

/* CPython 3.7 to 3.10 (x86_64), release builds: derived from the debug
 * information of pyenv's builds on this machine (3.7.16, 3.8.18, 3.9.18,
 * 3.10.13: ~/.pyenv/versions/3.X.Y/lib/libpython3.X*.so.1.0, built with
 * -g -O3), with gdb:
 *
 *   gdb -batch -ex 'print &((struct pyruntimestate *)0)->interpreters.head' \
 *       -ex 'print &((struct pyruntimestate *)0)->ceval.gil.locked' \
 *       -ex 'print &((struct pyruntimestate *)0)->ceval.gil.last_holder' \
 *       -ex 'print &((struct pyruntimestate *)0)->_finalizing' \
 *       -ex 'print &((struct _is *)0)->tstate_head' \
 *       -ex 'print &((struct _ts *)0)->frame' \
 *       -ex 'print &((struct _frame *)0)->f_lasti' \
 *       -ex 'print &((PyCodeObject *)0)->co_lnotab' \
 *       -ex 'print &((PyTypeObject *)0)->tp_dictoffset' \
 *       -ex 'print &((PyDictKeysObject *)0)->dk_indices' ... libpython3.9.so.1.0
 *
 * (the full list: tests/integration/python_layouts asks gdb again on each
 * installed build and compares every field). Before 3.11 every Python call is a
 * heap PyFrameObject run by its own C call of _PyEval_EvalFrameDefault:
 * tstate->frame, f_back, f_code, and f_lasti, the last instruction's
 * offset in bytes (3.7-3.9) or in 2-byte code units (3.10). The thread
 * state has no kernel tid (native_thread_id came in 3.11): the capture
 * reads it from the thread's pthread (thread_id is pthread_self()). The
 * GIL is the runtime's one (ceval.gil), its last_holder the holder while
 * locked. Strings still carry wstr (PyASCIIObject 48 bytes). Instance
 * attributes live in an ordinary dict at tp_dictoffset. Debug builds of
 * these versions are not at hand (before 3.8 Py_DEBUG also implied
 * Py_TRACE_REFS): they get "layout unknown". */
#define PY_OLD_COMMON \
	.interp_next = 0x0, \
	.interp_threads_head = 0x8, \
	.interp_gil_locked = PY_OFF_NONE, \
	.interp_gil_holder = PY_OFF_NONE, \
	.ts_next = 0x8, \
	.ts_current_frame = 0x18, /* tstate->frame */ \
	.ts_thread_id = 0xb0, \
	.ts_native_thread_id = PY_OFF_NONE, \
	.ts_cframe = PY_OFF_NONE, \
	.cframe_current_frame = PY_OFF_NONE, \
	.ts_datastack_chunk = PY_OFF_NONE, \
	.ts_datastack_top = PY_OFF_NONE, \
	.frame_previous = 0x18, /* f_back */ \
	.frame_code = 0x20, \
	.frame_instr = PY_OFF_NONE, \
	.frame_is_entry = PY_OFF_NONE, \
	.frame_owner = PY_OFF_NONE, \
	.owner_generator = PY_OFF_NONE, \
	.owner_cstack = PY_OFF_NONE, \
	.code_qualname = PY_OFF_NONE, \
	.code_firsttraceable = PY_OFF_NONE, \
	.code_adaptive = 0, \
	.ob_type = 8, \
	.type_name = 0x18, \
	.unicode_length = 0x10, \
	.unicode_state = 0x20, \
	.unicode_ascii_size = 48, \
	.unicode_compact_size = 72, \
	.bytes_size = 0x10, \
	.bytes_data = 0x20, \
	.type_flags = 0xa8, \
	.type_cached_keys = PY_OFF_NONE, \
	.managed_values = PY_OFF_NONE, \
	.managed_dict = PY_OFF_NONE, \
	.dict_keys = 0x20, \
	.dict_values = 0x28, \
	.type_dictoffset = 0x120, \
	.dictkeys_size = 0x8, \
	.dictkeys_nentries = 0x20, \
	.dictkeys_indices = 0x28

/* _PyRuntime and the interpreter state: the same in 3.9 and 3.10. */
#define PY_RT_39_310 \
	.rt_initialized = 0xc, \
	.rt_finalizing = 0x10, /* _finalizing */ \
	.rt_interpreters_head = 0x20, \
	.rt_gil_locked = 0x170, \
	.rt_gil_holder = 0x168, \
	.interp_id = 0x18, \
	.interp_size = 0x20

/* PyCodeObject: the same offsets in 3.8 to 3.10 (3.7's differ). */
#define PY_CODE_38_310 \
	.code_filename = 0x68, \
	.code_name = 0x70, \
	.code_firstlineno = 0x28, \
	.code_linetable = 0x78, /* co_lnotab, 3.10: co_linetable */ \
	.code_size = 0x80

/* PyFrameObject: the same in 3.7 to 3.9 (f_lasti in bytes). */
#define PY_FRAME_37_39 \
	.frame_lasti = 0x68, \
	.lasti_unit = 1, \
	.frame_localsplus = 0x168, \
	.frame_size = 0x170

static const struct py_layout py37 = {
	.name = "3.7",
	.major = 3, .minor = 7,
	.tested_micro = 16,
	PY_OLD_COMMON,
	.rt_initialized = 0x0,
	.rt_finalizing = 0x8,		/* finalizing */
	.rt_interpreters_head = 0x18,
	.rt_gil_locked = 0x500,
	.rt_gil_holder = 0x4f8,
	.interp_id = 0x10,
	.interp_size = 0x18,
	.ts_size = 280,
	PY_FRAME_37_39,
	.code_filename = 0x60,
	.code_name = 0x68,
	.code_firstlineno = 0x24,
	.code_linetable = 0x70,		/* co_lnotab */
	.linetable_kind = PY_LINES_LNOTAB,
	.code_size = 0x78,
};

static const struct py_layout py38 = {
	.name = "3.8",
	.major = 3, .minor = 8,
	.tested_micro = 18,
	PY_OLD_COMMON,
	.rt_initialized = 0xc,
	.rt_finalizing = 0x10,		/* finalizing */
	.rt_interpreters_head = 0x20,
	.rt_gil_locked = 0x490,
	.rt_gil_holder = 0x488,
	.interp_id = 0x10,
	.interp_size = 0x18,
	.ts_size = 264,
	PY_FRAME_37_39,
	PY_CODE_38_310,		/* the line table: co_lnotab */
	.linetable_kind = PY_LINES_LNOTAB,
};

static const struct py_layout py39 = {
	.name = "3.9",
	.major = 3, .minor = 9,
	.tested_micro = 18,
	PY_OLD_COMMON,
	PY_RT_39_310,
	.ts_size = 264,
	PY_FRAME_37_39,
	PY_CODE_38_310,		/* the line table: co_lnotab */
	.linetable_kind = PY_LINES_LNOTAB,
};

static const struct py_layout py310 = {
	.name = "3.10",
	.major = 3, .minor = 10,
	.tested_micro = 13,
	PY_OLD_COMMON,
	PY_RT_39_310,
	.ts_size = 280,
	.frame_lasti = 0x60,
	.lasti_unit = 2,
	.frame_localsplus = 0x160,
	.frame_size = 0x168,
	PY_CODE_38_310,		/* the line table: co_linetable */
	.linetable_kind = PY_LINES_310,
};

static struct py_layout py311_debug;
static struct py_layout py311_trace_refs;

/* Py_TRACE_REFS puts _ob_next and _ob_prev before every object's refcount:
 * every offset inside an object moves by 16, the interpreter's own
 * structures (runtime, interpreter, thread state, frame) do not. No such
 * build is packaged here, so this entry is derived, not measured. */
static void widen_objects(struct py_layout *l)
{
	int *fields[] = {
		&l->code_filename, &l->code_name, &l->code_qualname,
		&l->code_linetable, &l->code_firstlineno,
		&l->code_firsttraceable, &l->code_adaptive, &l->code_size,
		&l->ob_type, &l->type_name, &l->unicode_length,
		&l->unicode_state, &l->unicode_ascii_size,
		&l->unicode_compact_size, &l->bytes_size, &l->bytes_data,
		&l->type_flags, &l->type_cached_keys, &l->dict_keys,
		&l->dict_values,
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (*fields[i] != PY_OFF_NONE)
			*fields[i] += 16;
}

const struct py_layout *py_layout__find(unsigned major, unsigned minor,
					bool debug, bool trace_refs)
{
	static const struct py_layout *const release[] = {
		&py37, &py38, &py39, &py310, NULL, &py312,
	};

	if (major == 3 && minor >= 7 && minor <= 12 && minor != 11)
		return debug || trace_refs ? NULL : release[minor - 7];
	if (major != 3 || minor != 11)
		return NULL;
	if (trace_refs) {
		if (!py311_trace_refs.name) {
			py311_trace_refs = py311;
			widen_objects(&py311_trace_refs);
			py311_trace_refs.name = "3.11 trace-refs (derived)";
		}
		return &py311_trace_refs;
	}
	if (debug) {
		if (!py311_debug.name) {
			py311_debug = py311;
			py311_debug.name = "3.11 debug";
		}
		return &py311_debug;
	}
	return &py311;
}

/* Field indexes (in uint64_t words) of the 3.13 _Py_DebugOffsets table
 * (Include/internal/pycore_runtime.h of 3.13): each sub-struct opens with
 * its own size. 3.14 inserted fields (interpreter_state.threads_main,
 * interpreter_frame.stackpointer, ...), so only 3.13 is read by these
 * indexes. No 3.13 is installed on this machine: this path is written
 * from the header and exercised by the unit test's synthetic table only. */
enum {
	DO_VERSION = 1, DO_FREE_THREADED = 2,
	DO_RT_FINALIZING = 4, DO_RT_INTERPRETERS_HEAD = 5,
	DO_IS_SIZE = 6, DO_IS_ID = 7, DO_IS_NEXT = 8, DO_IS_THREADS_HEAD = 9,
	DO_IS_GIL_LOCKED = 17, DO_IS_GIL_HOLDER = 18,
	DO_TS_SIZE = 19, DO_TS_NEXT = 21, DO_TS_CURRENT_FRAME = 23,
	DO_TS_THREAD_ID = 24, DO_TS_NATIVE_THREAD_ID = 25,
	DO_TS_DATASTACK_CHUNK = 26,
	DO_IF_SIZE = 28, DO_IF_PREVIOUS = 29, DO_IF_EXECUTABLE = 30,
	DO_IF_INSTR_PTR = 31, DO_IF_OWNER = 33,
	DO_CO_SIZE = 34, DO_CO_FILENAME = 35, DO_CO_NAME = 36,
	DO_CO_QUALNAME = 37, DO_CO_LINETABLE = 38, DO_CO_FIRSTLINENO = 39,
	DO_CO_ADAPTIVE = 43,
	DO_OB_TYPE = 45, DO_TP_NAME = 47,
	DO_BYTES_OB_SIZE = 65, DO_BYTES_OB_SVAL = 66,
	DO_UNI_STATE = 68, DO_UNI_LENGTH = 69, DO_UNI_ASCII_SIZE = 70,
	DO_WORDS = 73,
};

/* Offsets larger than any of these structures are corrupt input. */
#define DO_MAX_OFFSET (1u << 20)

int py_layout__from_debug_offsets(const uint8_t *bytes, size_t len,
				  struct py_layout *out)
{
	uint64_t w[DO_WORDS];
	int *dst;

	if (len < sizeof(w) || memcmp(bytes, "xdebugpy", 8) != 0)
		return -ENOENT;
	memcpy(w, bytes, sizeof(w));
	if ((w[DO_VERSION] >> 24) != 3 || ((w[DO_VERSION] >> 16) & 0xff) != 13)
		return -ENOTSUP;
	if (w[DO_FREE_THREADED])
		return -ENOTSUP;

	static const struct {
		size_t field;	/* offsetof(struct py_layout, ...) */
		unsigned word;
	} map[] = {
		{ offsetof(struct py_layout, rt_finalizing), DO_RT_FINALIZING },
		{ offsetof(struct py_layout, rt_interpreters_head), DO_RT_INTERPRETERS_HEAD },
		{ offsetof(struct py_layout, interp_next), DO_IS_NEXT },
		{ offsetof(struct py_layout, interp_id), DO_IS_ID },
		{ offsetof(struct py_layout, interp_threads_head), DO_IS_THREADS_HEAD },
		{ offsetof(struct py_layout, interp_gil_locked), DO_IS_GIL_LOCKED },
		{ offsetof(struct py_layout, interp_gil_holder), DO_IS_GIL_HOLDER },
		{ offsetof(struct py_layout, ts_next), DO_TS_NEXT },
		{ offsetof(struct py_layout, ts_thread_id), DO_TS_THREAD_ID },
		{ offsetof(struct py_layout, ts_native_thread_id), DO_TS_NATIVE_THREAD_ID },
		{ offsetof(struct py_layout, ts_current_frame), DO_TS_CURRENT_FRAME },
		{ offsetof(struct py_layout, ts_datastack_chunk), DO_TS_DATASTACK_CHUNK },
		{ offsetof(struct py_layout, frame_previous), DO_IF_PREVIOUS },
		{ offsetof(struct py_layout, frame_code), DO_IF_EXECUTABLE },
		{ offsetof(struct py_layout, frame_instr), DO_IF_INSTR_PTR },
		{ offsetof(struct py_layout, frame_owner), DO_IF_OWNER },
		{ offsetof(struct py_layout, code_filename), DO_CO_FILENAME },
		{ offsetof(struct py_layout, code_name), DO_CO_NAME },
		{ offsetof(struct py_layout, code_qualname), DO_CO_QUALNAME },
		{ offsetof(struct py_layout, code_linetable), DO_CO_LINETABLE },
		{ offsetof(struct py_layout, code_firstlineno), DO_CO_FIRSTLINENO },
		{ offsetof(struct py_layout, code_adaptive), DO_CO_ADAPTIVE },
		{ offsetof(struct py_layout, ob_type), DO_OB_TYPE },
		{ offsetof(struct py_layout, type_name), DO_TP_NAME },
		{ offsetof(struct py_layout, bytes_size), DO_BYTES_OB_SIZE },
		{ offsetof(struct py_layout, bytes_data), DO_BYTES_OB_SVAL },
		{ offsetof(struct py_layout, unicode_state), DO_UNI_STATE },
		{ offsetof(struct py_layout, unicode_length), DO_UNI_LENGTH },
		{ offsetof(struct py_layout, unicode_ascii_size), DO_UNI_ASCII_SIZE },
	};

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (w[map[i].word] >= DO_MAX_OFFSET)
			return -EINVAL;
		dst = (int *)((char *)out + map[i].field);
		*dst = (int)w[map[i].word];
	}
	out->name = "3.13 (from _Py_DebugOffsets)";
	out->major = 3;
	out->minor = 13;
	out->rt_initialized = PY_OFF_NONE;
	out->rt_gil_locked = PY_OFF_NONE;
	out->rt_gil_holder = PY_OFF_NONE;
	out->ts_cframe = PY_OFF_NONE;
	out->cframe_current_frame = PY_OFF_NONE;
	out->ts_datastack_top = PY_OFF_NONE; /* not in the table */
	out->frame_is_entry = PY_OFF_NONE;
	out->owner_generator = 1;	/* FRAME_OWNED_BY_GENERATOR */
	out->owner_cstack = 3;		/* FRAME_OWNED_BY_CSTACK */
	out->code_firsttraceable = PY_OFF_NONE;
	out->frame_localsplus = PY_OFF_NONE;	/* no thread names */
	out->type_flags = out->type_cached_keys = PY_OFF_NONE;
	out->managed_values = out->managed_dict = PY_OFF_NONE;
	out->dict_keys = out->dict_values = PY_OFF_NONE;
	out->frame_lasti = PY_OFF_NONE;
	out->type_dictoffset = PY_OFF_NONE;
	out->dictkeys_size = out->dictkeys_nentries = PY_OFF_NONE;
	out->dictkeys_indices = PY_OFF_NONE;
	/* 3.12+ PyCompactUnicodeObject: the ASCII header, utf8_length,
	   utf8. */
	out->unicode_compact_size = out->unicode_ascii_size + 16;

	/* The sizes to read: each structure's size as the table gives it,
	   capped (the interpreter state is ~100 KiB; only its head matters)
	   and at least covering the offsets used. */
	int is_max = out->interp_next;
	if (out->interp_id > is_max) is_max = out->interp_id;
	if (out->interp_threads_head > is_max) is_max = out->interp_threads_head;
	out->interp_size = is_max + 8;
	int ts_max = out->ts_next;
	if (out->ts_native_thread_id > ts_max) ts_max = out->ts_native_thread_id;
	if (out->ts_thread_id > ts_max) ts_max = out->ts_thread_id;
	if (out->ts_current_frame > ts_max) ts_max = out->ts_current_frame;
	if (out->ts_datastack_chunk > ts_max) ts_max = out->ts_datastack_chunk;
	out->ts_size = ts_max + 8;
	int f_max = out->frame_previous;
	if (out->frame_code > f_max) f_max = out->frame_code;
	if (out->frame_instr > f_max) f_max = out->frame_instr;
	if (out->frame_owner > f_max) f_max = out->frame_owner;
	out->frame_size = f_max + 8;
	int c_max = out->code_filename;
	if (out->code_name > c_max) c_max = out->code_name;
	if (out->code_qualname > c_max) c_max = out->code_qualname;
	if (out->code_linetable > c_max) c_max = out->code_linetable;
	if (out->code_firstlineno > c_max) c_max = out->code_firstlineno;
	if (out->ob_type > c_max) c_max = out->ob_type;
	out->code_size = c_max + 8;
	if (w[DO_IS_SIZE] == 0 || w[DO_TS_SIZE] == 0 || w[DO_IF_SIZE] == 0 ||
	    w[DO_CO_SIZE] == 0)
		return -EINVAL;
	return 0;
}
