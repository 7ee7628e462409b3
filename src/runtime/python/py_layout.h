/* py_layout.h - where CPython keeps what a stack walk needs, as data: one
 * table of structure offsets per interpreter build (minor version and
 * flavour), found by version, or read from the process itself where the
 * runtime carries a _Py_DebugOffsets table (3.13+). One walker
 * (py_capture.c, py_resolve.c) reads every build through these numbers. */
#ifndef SS_RUNTIME_PYTHON_PY_LAYOUT_H
#define SS_RUNTIME_PYTHON_PY_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An offset the build does not have. */
#define PY_OFF_NONE (-1)

/* The offsets of one CPython build, in bytes from the start of the named
 * structure. Invariant: every field the walker needs is >= 0; the fields
 * documented "or PY_OFF_NONE" pick between two ways of reading (3.11's
 * _PyCFrame indirection vs 3.12+'s tstate->current_frame, 3.11's is_entry
 * flag vs 3.12+'s C-stack shim frames). The *_size fields are how many
 * bytes the walker reads in one go from such a structure: at least the
 * largest offset used + 8. */
struct py_layout {
	const char *name;		/* "3.11", "3.11 debug", ... */
	unsigned major, minor;
	unsigned tested_micro;		/* the micro version its offsets were
					   measured and tested on (0: not
					   recorded); another one is said to
					   be untested when met */

	/* _PyRuntimeState (_PyRuntime) */
	int rt_initialized;		/* int, or PY_OFF_NONE */
	int rt_finalizing;		/* PyThreadState *, or PY_OFF_NONE */
	int rt_interpreters_head;	/* PyInterpreterState * */
	int rt_gil_locked;		/* int (3.11: one GIL in the runtime),
					   or PY_OFF_NONE */
	int rt_gil_holder;		/* PyThreadState *, or PY_OFF_NONE */

	/* PyInterpreterState */
	int interp_next;
	int interp_id;			/* int64 */
	int interp_threads_head;
	int interp_gil_locked;		/* int in the interpreter's own GIL
					   (3.12+), or PY_OFF_NONE */
	int interp_gil_holder;		/* PyThreadState *, or PY_OFF_NONE */
	int interp_size;

	/* PyThreadState */
	int ts_next;
	int ts_thread_id;		/* pthread_t */
	int ts_native_thread_id;	/* the kernel tid */
	int ts_cframe;			/* _PyCFrame *, or PY_OFF_NONE */
	int cframe_current_frame;	/* in _PyCFrame */
	int ts_current_frame;		/* _PyInterpreterFrame *, or
					   PY_OFF_NONE (through cframe) */
	int ts_datastack_chunk;		/* _PyStackChunk *, or PY_OFF_NONE */
	int ts_datastack_top;		/* PyObject **, or PY_OFF_NONE */
	int ts_size;

	/* _PyInterpreterFrame (3.11+), or PyFrameObject (3.7-3.10: f_back,
	 * f_code, f_lasti; every frame is run by its own C call of the
	 * eval loop, so every frame is an entry frame) */
	int frame_previous;
	int frame_code;			/* f_code (3.11), f_executable */
	int frame_instr;		/* prev_instr (3.11), instr_ptr, or
					   PY_OFF_NONE (f_lasti instead) */
	int frame_lasti;		/* int f_lasti (3.7-3.10), or
					   PY_OFF_NONE */
	int lasti_unit;			/* bytes per f_lasti unit: 1 (3.7-3.9),
					   2 (3.10); 0 with frame_instr */
	int frame_is_entry;		/* bool, or PY_OFF_NONE */
	int frame_owner;		/* char, or PY_OFF_NONE */
	int frame_size;
	int frame_localsplus;		/* localsplus[0] (a method's self), or
					   PY_OFF_NONE: no thread names */
	int owner_generator;		/* FRAME_OWNED_BY_GENERATOR */
	int owner_cstack;		/* FRAME_OWNED_BY_CSTACK, or
					   PY_OFF_NONE */

	/* PyCodeObject */
	int code_filename;
	int code_name;
	int code_qualname;		/* or PY_OFF_NONE (before 3.11:
					   co_name stands for it) */
	int code_linetable;		/* co_linetable, or co_lnotab */
	int linetable_kind;		/* enum py_lines */
	int code_firstlineno;		/* int */
	int code_firsttraceable;	/* int, or PY_OFF_NONE */
	int code_adaptive;		/* co_code_adaptive: the instructions
					   (unused with frame_lasti) */
	int code_size;

	/* objects */
	int ob_type;			/* in PyObject */
	int type_name;			/* tp_name in PyTypeObject */
	int unicode_length;
	int unicode_state;
	int unicode_ascii_size;		/* data of a compact ASCII string */
	int unicode_compact_size;	/* data of other compact strings */
	int bytes_size;
	int bytes_data;

	/* Instance attributes, for threading.Thread's _name (3.11, 3.12;
	 * PY_OFF_NONE elsewhere): tp_flags, the heap type's shared keys,
	 * the managed dict's pointers before the object (negative), and
	 * dict objects. */
	int type_flags;
	int type_cached_keys;
	int managed_values;		/* PyDictValues * at obj + this, or
					   PY_OFF_NONE: 3.12's union */
	int managed_dict;		/* PyDictObject * at obj + this (3.12:
					   the dict, or the values pointer - 1,
					   odd) */
	int dict_keys;			/* ma_keys */
	int dict_values;		/* ma_values */

	/* Instance attributes before 3.11: the instance dict at obj +
	 * tp_dictoffset (type_dictoffset, or PY_OFF_NONE), a PyDictKeysObject
	 * with dk_size, dk_nentries and dk_indices (then 24-byte entries:
	 * hash, key, value). */
	int type_dictoffset;
	int dictkeys_size;
	int dictkeys_nentries;
	int dictkeys_indices;
};

/* How a code object maps instructions to lines. */
enum py_lines {
	PY_LINES_LOCATIONS = 0,	/* 3.11+ co_linetable (PEP 657) */
	PY_LINES_LNOTAB,	/* 3.7-3.9 co_lnotab: (bytes, line) deltas */
	PY_LINES_310,		/* 3.10 co_linetable: (bytes, line) deltas,
				   -128 for no line */
};

/* The known layout for version major.minor of the given flavour (debug:
 * Py_DEBUG; trace_refs: Py_TRACE_REFS, which widens every object header),
 * or NULL. Layouts of versions before 3.11 exist for release builds only
 * (the ones measured). */
const struct py_layout *py_layout__find(unsigned major, unsigned minor,
					bool debug, bool trace_refs);

/* The size of a 3.13 _Py_DebugOffsets table, the bytes to read from the
 * start of _PyRuntime for py_layout__from_debug_offsets. */
#define PY_DEBUG_OFFSETS_SIZE (73 * 8)

/* Fills *out from the _Py_DebugOffsets table at the start of a 3.13
 * _PyRuntime (bytes: PY_DEBUG_OFFSETS_SIZE of them). Returns 0, -ENOENT
 * when the cookie is not there, -ENOTSUP for a version whose table shape
 * is unknown (3.14 added fields in the middle) or a free-threaded build,
 * -EINVAL for offsets out of any sane range. */
int py_layout__from_debug_offsets(const uint8_t *bytes, size_t len,
				  struct py_layout *out);

#endif
