/* hotspot_code.h - names Java code in a live HotSpot JVM from the VM's
 * own structures, laid out as its vmStructs tables say: the code cache
 * (which CodeBlob holds a pc: an nmethod and its Method*, or the
 * interpreter, a stub, an adapter), a Method*'s holder class, name and
 * signature, and the Method* of an interpreter frame. Every read is
 * bounded and checked; what does not read as the structure it should be
 * is reported as not found. */
#ifndef SS_RUNTIME_JAVA_HOTSPOT_CODE_H
#define SS_RUNTIME_JAVA_HOTSPOT_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "runtime/java/hotspot_structs.h"
#include "stacksnap.h"

/* The oldest JDK whose layout is known here (tested: 17 and 25). */
#define HOTSPOT_OLDEST_LAYOUT 17

/* The offsets and statics naming needs, resolved from the tables once.
 * Invariant: every field below was found in the tables (init fails
 * otherwise). */
struct hotspot_code {
	struct stacksnap_mem *mem;	/* not owned */
	uint64_t heaps;			/* &CodeCache::_heaps */
	uint64_t ga_len, ga_data;	/* GrowableArray */
	uint64_t heap_memory, heap_segmap, heap_log2_segment;
	uint64_t vs_low, vs_high;	/* VirtualSpace */
	uint64_t block_size, block_used; /* HeapBlock */
	uint64_t blob_name, blob_size;	/* CodeBlob */
	uint64_t blob_frame_size;	/* CodeBlob::_frame_size; 0 when the
					   table has none (no stepping) */
	uint64_t blob_frame_complete;	/* CodeBlob::_frame_complete_offset;
					   0: none (exact pcs not stepped) */
	unsigned blob_frame_complete_width; /* its bytes: 4 (int, JDK 17), 2
					   (int16_t, JDK 23+): the table's
					   type string */
	/* JDK 23+ (CompiledMethod removed, JDK-8329332; the immutable
	   data out of the code cache, JDK-8331087; tested on 25): the
	   blob's code at start + CodeBlob::_code_offset (not a pointer),
	   the deopt handlers at start + nmethod::_deopt_*handler_offset,
	   PcDescs and scopes in the nmethod's immutable data
	   (nmethod::_immutable_data + _scopes_pcs_offset ..
	   _scopes_data_offset .. _immutable_data_size), its metadata in
	   the blob's mutable data (CodeBlob::_mutable_data +
	   _relocation_size .. _mutable_data_size). Those address rules
	   are nmethod.hpp's/codeBlob.hpp's (JDK 23-25), not the tables';
	   the offsets are the tables'. */
	bool offsets23;
	int vm_major;			/* Abstract_VM_Version::_vm_major_version */
	/* By version (not in the tables; HotSpot's source): UNSIGNED5
	   bytes (line number tables, scope descriptors) exclude 0 since
	   JDK 20 (JDK-8292758, unsigned5.hpp: x = b - 1, 191 one-byte
	   values); JDK 17's are CompressedStream's (192, 0 allowed). */
	bool u5_excludes_zero;
	uint64_t blob_code_offset, blob_mutable_data, blob_mutable_size,
		blob_relocation_size, nm_immutable_data, nm_immutable_size;
	/* Deoptimized frames: their return address is patched to the
	   nmethod's deopt handler, the original pc kept in the frame at sp
	   + _orig_pc_offset. deopt_ok false: not in the tables. */
	bool deopt_ok;
	uint64_t cm_deopt_handler, cm_deopt_mh_handler, nm_orig_pc_offset;
	/* Whether a Method* is still its class's (check_ok false: not in
	   the tables, not checked): Method::_access_flags' IS_OLD and
	   IS_OBSOLETE bits (redefined), InstanceKlass::_methods. */
	bool check_ok;
	uint64_t method_access_flags, ik_methods, array_ptr_data;
	int64_t acc_is_old, acc_is_obsolete;
	/* After a collection (classes may have been unloaded): the class
	   loaders alive now (ClassLoaderDataGraph's list, sorted), which a
	   current method's class must belong to. NULL: not checked. */
	uint64_t cldg_head, cld_next, klass_cld;	/* 0: not in the tables */
	uint64_t *live_clds;
	size_t nlive_clds;
	/* The scope descriptors (inlining); scopes_ok false when the table
	   lacks one of them (compiled frames then name one method). */
	bool scopes_ok;
	uint64_t blob_code_begin;	/* CodeBlob::_code_begin */
	uint64_t nm_scopes_data;	/* CompiledMethod::_scopes_data_begin */
	uint64_t nm_scopes_pcs, nm_dependencies, nm_metadata; /* nmethod::_*_offset */
	uint64_t pcdesc_size, pcdesc_pc, pcdesc_scope; /* PcDesc */
	uint64_t cm_method;		/* CompiledMethod::_method */
	uint64_t method_const;		/* Method::_constMethod */
	uint64_t cm_constants, cm_name_index, cm_signature_index;
	uint64_t cm_size, cm_code_size, cm_flags; /* ConstMethod */
	unsigned cm_flags_width;	/* 2 (u2 _flags, JDK 17) or 4 (u4
					   _flags._flags, JDK 21+) */
	int64_t cm_has_lines;		/* _flags bit: a line number table */
	uint64_t cp_source_file;	/* ConstantPool::_source_file_name_index */
	uint64_t cp_size, cp_holder, cp_length; /* ConstantPool */
	uint64_t klass_name;		/* Klass::_name */
	uint64_t sym_length, sym_body;	/* Symbol */
	int64_t interp_method_slot;	/* words from an interpreter frame's
					   rbp to its Method* */
	int64_t interp_bcp_slot;	/* ... to its bytecode pointer */
	int64_t interp_sender_sp_slot;	/* ... to its caller's sp */
	const struct log_sink *log;
	char missing[96];		/* the first entry init did not find */
};

/* A code blob of the code cache. */
struct hotspot_blob {
	uint64_t start;		/* the blob (its CodeBlob header) */
	uint64_t size;		/* CodeBlob::_size: bytes from start */
	char name[64];		/* CodeBlob::_name: "nmethod", "Interpreter",
				   "StubRoutines (1)", ... */
	uint64_t method;	/* an nmethod's Method*, else 0 */
	int32_t frame_size;	/* CodeBlob::_frame_size, in words: its
				   frame from sp to the caller's sp (return
				   address and saved rbp included) */
	/* An nmethod's deopt handlers (0: unknown) and where its frames
	   keep a deoptimized frame's original pc (bytes from sp; -1:
	   unknown). */
	uint64_t deopt_handler, deopt_mh_handler;
	int32_t orig_pc_offset;
	uint64_t frame_complete; /* the first pc where the frame is built
				    (code begin + _frame_complete_offset);
				    0: unknown or never */
	bool is_interpreter;
};

int hotspot_code__init(struct hotspot_code *hc, const struct hotspot_structs *hs,
		       struct stacksnap_mem *mem, const struct log_sink *log);
/* The blob holding pc. Returns 0, -ENOENT (not in the code cache), or
 * -EFAULT/-EPROTO for what does not read as the cache. */
int hotspot_code__blob(struct hotspot_code *hc, uint64_t pc,
		       struct hotspot_blob *out);
/* The scopes of an nmethod at return address ret (exact: the PcDesc of
 * its call), or, near, at a running frame's pc (the first PcDesc at or
 * after it: the next debug point's, as HotSpot's pc_desc_near),
 * innermost first: the inlined methods and the method compiled, each
 * with its bytecode index, at most max. Returns their count, -ENOENT (no
 * PcDesc at ret, no tables for scopes) or -errno. Bounded: at most max
 * scopes, each offset checked against the nmethod. */
int hotspot_code__scopes(struct hotspot_code *hc, uint64_t nmethod,
			 uint64_t ret, bool near, uint64_t *methods, int *bcis,
			 int max);
/* The address ranges of the code cache's heaps (committed), at most max
 * into ranges ([i][0] start, [i][1] end). Returns their count or -errno. */
int hotspot_code__heap_ranges(struct hotspot_code *hc, uint64_t (*ranges)[2],
			      size_t max);
/* The Method* of the interpreter frame whose rbp is fp, its slot read
 * from slots (the stack as it was captured: the frame's memory holds
 * another frame's slots by the time the thread runs on), or, slots
 * NULL, from the process. */
int hotspot_code__interpreter_method(struct hotspot_code *hc,
				     struct stacksnap_mem *slots, uint64_t fp,
				     uint64_t *method);
/* The bytecode index an interpreter frame (rbp fp) of method is at:
 * from its bcp slot (read from slots as above); -1 when it is not inside
 * the method's bytecodes (a native method's frame). */
int hotspot_code__interpreter_bci(struct hotspot_code *hc,
				  struct stacksnap_mem *slots, uint64_t fp,
				  uint64_t method, int *bci);
/* The source line of bci in method (its compressed line number table),
 * and its class's source file name into file (NUL when none). Returns 0,
 * -ENOENT (no table, or no line for bci) or -errno. */
int hotspot_code__line(struct hotspot_code *hc, uint64_t method, int bci,
		       int *line, char *file, size_t file_len);
/* One UNSIGNED5 number at *at (advanced), as this JVM encodes them. */
int hotspot_code__unsigned5(struct hotspot_code *hc, uint64_t *at, uint32_t *v);
/* A Symbol's text into buf (NUL-terminated). Returns 0, -EPROTO (longer
 * than buf, or not text) or -EFAULT. */
int hotspot_code__symbol(struct hotspot_code *hc, uint64_t sym, char *buf,
			 size_t len);
/* What a Method* read after the thaw is: its class's current method
 * (HOTSPOT_METHOD_CURRENT), an old version its class replaced since
 * (RedefineClasses: the frame runs the old code, the name is right),
 * or no longer its class's (STALE: freed with an unloaded class, or a
 * redefinition's old version freed, its memory perhaps reused: the
 * name read from it cannot be trusted). UNCHECKED: the tables lack
 * what the check needs, or it did not read. */
enum hotspot_method_state {
	HOTSPOT_METHOD_CURRENT,
	HOTSPOT_METHOD_OLD,
	HOTSPOT_METHOD_STALE,
	HOTSPOT_METHOD_UNCHECKED,
};
enum hotspot_method_state hotspot_code__method_check(struct hotspot_code *hc,
						     uint64_t method);
/* Reads the live class loaders now (after a collection): method_check
 * then also calls a method whose class's loader is not among them
 * stale. Returns 0, or -errno (not read: not checked). */
int hotspot_code__read_live_loaders(struct hotspot_code *hc);
void hotspot_code__free(struct hotspot_code *hc);
/* "pkg.Class.method(SIGNATURE)" of method into buf. Returns 0 or -errno. */
int hotspot_code__method_name(struct hotspot_code *hc, uint64_t method,
			      char *buf, size_t len);

#endif
