/* ruby.h - CRuby's (MRI's) frames in another process: find the VM in
 * libruby (rb_detect.c), copy each thread's control frames during the
 * freeze (rb_frames.c: pointers and pcs only), and after the thaw name
 * them from the immutable instruction sequences and merge them into the
 * native frames of rb_vm_exec (docs/ruby.md). */
#ifndef SS_RUNTIME_RUBY_RUBY_H
#define SS_RUNTIME_RUBY_RUBY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stacksnap.h"

/* Offsets of one Ruby version's structures (x86_64; docs/ruby.md says
 * where each comes from). All reads of target memory are bounded by the
 * sizes below. */
struct rb_layout {
	const char *version;		/* "3.1" */
	/* rb_execution_context_t */
	unsigned ec_vm_stack, ec_vm_stack_size, ec_cfp;
	/* rb_control_frame_t */
	unsigned cfp_size, cfp_pc, cfp_iseq, cfp_ep;
	/* rb_iseq_t, rb_iseq_constant_body */
	unsigned iseq_body;
	unsigned body_iseq_size, body_iseq_encoded;
	unsigned body_pathobj, body_label, body_first_lineno;
	unsigned body_insns_body, body_insns_positions, body_insns_size,
		 body_insns_succ;
	unsigned insn_entry_size;	/* iseq_insn_info_entry, line_no at 0 */
	/* RString, RArray (no variable-width allocation) */
	unsigned str_embed_ary, str_heap_len, str_heap_ptr;
	uint64_t str_noembed;		/* flag bit */
	unsigned str_embed_len_shift;
	uint64_t str_embed_len_mask;	/* after the shift */
	unsigned ary_embed_ary, ary_heap_ptr;
	uint64_t ary_embed;		/* flag bit */
	/* rb_vm_t, rb_thread_t: the VM's thread list */
	unsigned vm_main_thread;	/* vm->ractor.main_thread */
	unsigned th_vm, th_thread_id;	/* thread->vm, ->thread_id */
	unsigned pthread_tid;		/* glibc's struct pthread: tid */
	/* C methods: the method entry at ep - ep_me_cref, its definition,
	   the definition's original_id (the name Ruby's backtrace gives) */
	unsigned ep_me_cref, me_def, def_original_id;
	/* IDs to names: ruby_global_symbols.ids, an Array of Arrays of
	   id_entry_unit [String, Symbol] pairs, by the ID's serial */
	unsigned id_last_op, id_scope_shift, id_entry_unit;
	unsigned ary_heap_len, ary_embed_len_shift;
	uint64_t ary_embed_len_mask;
};

/* One VM found in a process. Invariant: found implies layout, or note
 * says why frames cannot be read ("Ruby 3.2.0: layout unknown, native
 * frames only", "VM not started"). Addresses are run-time. */
struct rb_runtime {
	bool found;
	const struct rb_layout *layout;
	uint64_t vm_ptr_addr;		/* ruby_current_vm_ptr */
	uint64_t tls_modid;		/* libruby's TLS module id */
	uint64_t ec_tls_off;		/* ruby_current_ec in its TLS block */
	uint64_t exec_start, exec_end;	/* rb_vm_exec [start, end) */
	uint64_t symbols;		/* ruby_global_symbols (last_id; ids
					   at +16), 0: unknown */
	char version[16];
	char path[256];
	char note[160];
};

/* The layout of version ("3.1.2"), or NULL (unknown). */
const struct rb_layout *rb_layout__find(const char *version);

/* Whether a mapped file may be libruby ("libruby-3.1.so..."). */
bool rb_image_candidate(const char *path);

struct elf_image;
/* Looks for the VM in an image open at load bias: 0 (rt->found set;
 * rt->layout NULL for an unknown version), -ENOENT (not libruby). Reads
 * through mem what the dynamic linker filled in (the TLS module id) and
 * whether the VM has started. */
int rb_runtime__detect_elf(const struct elf_image *img, const char *path,
			   uint64_t bias, struct stacksnap_mem *mem,
			   struct rb_runtime *rt);

/* Decoding libruby's code for the unexported symbol table: the target of
 * the first jmp rel32 in rb_id2str's code (0: none), and the address of
 * ruby_global_symbols from get_id_serial_entry's code (0: not found).
 * Bounded by len; addresses are the code's (vaddr its first byte's). */
uint64_t rb_code_jmp(const uint8_t *code, size_t len, uint64_t vaddr);
uint64_t rb_code_symbols(const uint8_t *code, size_t len, uint64_t vaddr);

struct log_sink;
/* The same for a live process: the first libruby of /proc/PID/maps.
 * Returns 0 (rt->found), -ENOENT (none) or -errno. */
int rb_runtime__detect_pid(pid_t pid, struct stacksnap_mem *mem,
			   const struct log_sink *log, struct rb_runtime *rt);

/* ------------------------------------------------------------------ */
/* Capture: during the freeze. */

#define RB_MAX_THREADS 4096
#define RB_MAX_FRAMES 4096	/* control frames per thread */

#define RB_FRAME_FINISH 0x1	/* VM_FRAME_FLAG_FINISH: the outermost
				   frame of one rb_vm_exec call */
#define RB_FRAME_RUBY 0x2	/* an iseq frame with a pc, or a C
				   method's (Ruby's backtrace shows it) */
#define RB_FRAME_CFUNC 0x4	/* a C method's frame: iseq holds its
				   method entry */

struct rb_raw_frame {
	uint64_t pc, iseq;
	uint8_t flags;			/* RB_FRAME_* */
};

/* One Ruby thread (the fiber its native thread runs). frames[first,
 * first + n) of the capture are its frames, innermost first; end (static)
 * says why they were cut, NULL when read whole. */
struct rb_raw_thread {
	uint64_t tid;
	uint64_t ec;
	size_t first, n;
	const char *end;
};

/* A Ruby thread of the VM's list: its kernel tid and pthread_t (on
 * x86_64 glibc, its thread pointer). */
struct rb_listed {
	uint64_t tid, tp;
};

struct rb_pending;
struct mem_iov;

struct rb_capture {
	struct rb_raw_thread *threads;
	size_t nthreads, cap_threads;
	struct rb_raw_frame *frames;
	size_t nframes, cap_frames;
	uint8_t *buf;			/* the control frames of one thread */
	size_t buf_cap;
	struct rb_listed *listed;	/* rb_capture__list's */
	size_t nlisted, cap_listed;
	unsigned reads;			/* ranges read */
	/* rb_capture__threads' work: per thread, the batch's ranges, the
	   frames' env words (3 a frame) */
	struct rb_pending *pend;
	size_t cap_pend;
	struct mem_iov *iov;
	size_t cap_iov;
	uint64_t *env;
	size_t cap_env;
	uint8_t *sbuf;			/* the VM stacks' values */
	size_t cap_sbuf;
};

/* Makes room so that the freeze does not allocate (-ENOMEM). */
int rb_capture__reserve(struct rb_capture *cap, size_t nthreads,
			size_t nframes);
void rb_capture__clear(struct rb_capture *cap);
void rb_capture__free(struct rb_capture *cap);
/* Reads the control frames of the Ruby thread native thread tid (thread
 * pointer fs_base) runs, if any, and appends them. Returns 0 (a thread
 * that runs no Ruby adds nothing), -ENOMEM. */
int rb_capture__thread(const struct rb_runtime *rt, struct stacksnap_mem *mem,
		       uint64_t tid, uint64_t fs_base, struct rb_capture *cap);
/* The same for n threads (who[i]: tid and thread pointer, 0: unknown, the
 * thread is skipped), level by level: each level's reads of every thread
 * in one batch (the DTV, the TLS block, the execution context, its
 * fields, the control frames, their envs: six system calls for up to 64
 * threads; a thread's envs on its VM stack are one range). Returns 0,
 * -ENOMEM. */
int rb_capture__threads(const struct rb_runtime *rt, struct stacksnap_mem *mem,
			const struct rb_listed *who, size_t n,
			struct rb_capture *cap);
/* The threads of the VM's list (the main ractor's: from
 * vm->ractor.main_thread around the circular list), for native threads
 * whose thread pointer the capture does not know (read without stopping
 * them): cap->listed. Bounded by RB_MAX_THREADS; returns 0 or -ENOMEM. */
int rb_capture__list(const struct rb_runtime *rt, struct stacksnap_mem *mem,
		     struct rb_capture *cap);
/* The thread pointer of thread tid from cap->listed, 0 when not there. */
uint64_t rb_capture__listed_tp(const struct rb_capture *cap, uint64_t tid);
const struct rb_raw_thread *rb_capture__find(const struct rb_capture *cap,
					     uint64_t tid);

/* ------------------------------------------------------------------ */
/* Resolve after the thaw, and merge. */

/* One named frame: function is the iseq's label ("take", "block in
 * <main>"), or a C method's name ("sleep"), file its path (a C method's:
 * its caller's); both owned by the resolver. */
struct rb_frame {
	const char *function, *file;
	unsigned line;
	bool finish;
	bool ruby;			/* shown (RB_FRAME_RUBY) */
	bool cfunc;			/* a C method: file and line are its
					   caller's */
};

struct rb_iseq_names;
struct rb_resolver {
	const struct rb_runtime *rt;
	struct stacksnap_mem *mem;
	struct rb_iseq_names *iseqs;	/* a cache by iseq address */
	size_t niseqs, cap_iseqs;
	unsigned reads;
	/* A cache kept while the process runs (a trace): each hit checks
	   the object's body pointer again (one read). */
	bool recheck;
};

void rb_resolver__init(struct rb_resolver *r, const struct rb_runtime *rt,
		       struct stacksnap_mem *mem);
void rb_resolver__free(struct rb_resolver *r);
/* Names the frames of t (all of them, shown or not: merge needs the
 * finish flags). *out malloc'ed. An iseq that cannot be read gives
 * "<unknown iseq>". Returns 0 or -ENOMEM. */
int rb_resolve__thread(struct rb_resolver *r, const struct rb_capture *cap,
		       const struct rb_raw_thread *t, struct rb_frame **out,
		       size_t *n);
/* The line of the instruction at index pos (pc's slot index minus one,
 * as Ruby counts) from an iseq's insns_info: entries (size of them,
 * entry_size bytes each), positions (may be NULL) or the succinct index
 * table succ (succ_len bytes, may be NULL). 0: unknown. */
unsigned rb_insn_line(const uint8_t *entries, size_t size, unsigned entry_size,
		      const uint32_t *positions, const uint8_t *succ,
		      size_t succ_len, unsigned pos);

/* Replaces each native frame of rb_vm_exec by the shown Ruby frames its
 * call runs (up to and including the next finish frame); Ruby frames left
 * over get native_index = nnative. Returns how many (at most max
 * written). */
size_t rb_merge(const struct rb_frame *rf, size_t nrf,
		const struct stacksnap_frame *native, size_t nnative,
		uint64_t exec_start, uint64_t exec_end,
		struct stacksnap_runtime_frame *out, size_t max);

#endif
