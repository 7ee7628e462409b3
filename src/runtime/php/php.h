/* php.h - the Zend engine's (PHP's) frames in another process: find
 * executor_globals and execute_ex in the PHP binary (php_detect.c), copy
 * the chain of zend_execute_data from EG(current_execute_data) during the
 * freeze (php_frames.c: pointers only), and after the thaw name each
 * frame from the immutable functions, classes and opcodes and merge them
 * into the native frames of execute_ex (docs/php.md). */
#ifndef SS_RUNTIME_PHP_PHP_H
#define SS_RUNTIME_PHP_PHP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stacksnap.h"

/* Offsets of one PHP version's structures (x86_64, non-ZTS; docs/php.md
 * says where each comes from). All reads of target memory are bounded
 * by the sizes below. */
struct php_layout {
	const char *version;		/* "8.2" */
	/* zend_executor_globals */
	unsigned eg_vm_stack_top, eg_vm_stack_end, eg_vm_stack,
		 eg_current_execute_data;
	unsigned vm_page_end;		/* zend_vm_stack page header: end */
	/* zend_execute_data */
	unsigned ex_opline, ex_func, ex_call_info, ex_prev, ex_size;
	/* zend_function: the common part, then zend_op_array's */
	unsigned fn_common_size;
	unsigned fn_type, fn_name, fn_scope;
	unsigned op_last, op_opcodes, op_filename, op_size;
	/* zend_op */
	unsigned opline_size, opline_extended_value, opline_lineno,
		 opline_opcode;
	/* zend_class_entry, zend_string */
	unsigned ce_name;
	unsigned str_type_info, str_len, str_val;
};

/* One PHP engine found in a process. Invariant: found implies layout, or
 * note says why frames cannot be read ("PHP 8.3.1: layout unknown,
 * native frames only"). Addresses are run-time. */
struct php_runtime {
	bool found;
	const struct php_layout *layout;
	uint64_t eg;			/* executor_globals */
	/* The VM's code: execute_ex [start, end), and the part GCC split
	   out of it for cold paths ([0] [1] of cold; 0, 0: none found). */
	uint64_t exec_start, exec_end;
	uint64_t cold[2];
	char version[32];		/* "8.2.36" */
	char path[256];
	char note[160];
};

/* The layout of version ("8.2.36"), or NULL (unknown). */
const struct php_layout *php_layout__find(const char *version);

/* Whether a mapped file may hold the engine: the php binary of a SAPI
 * ("php8.2", "php-fpm8.2", "php-cgi") or libphp ("libphp8.2.so"). */
bool php_image_candidate(const char *path);

struct elf_image;
/* Looks for the engine in an image open at load bias: 0 (rt->found set;
 * rt->layout NULL for an unknown version or a thread-safe build, note
 * says which), -ENOENT (no engine there). */
int php_runtime__detect_elf(const struct elf_image *img, const char *path,
			    uint64_t bias, struct php_runtime *rt);

struct log_sink;
/* The same for a live process: the first candidate of /proc/PID/maps.
 * Returns 0 (rt->found), -ENOENT (none) or -errno. */
int php_runtime__detect_pid(pid_t pid, const struct log_sink *log,
			    struct php_runtime *rt);

/* ------------------------------------------------------------------ */
/* Capture: during the freeze. */

#define PHP_MAX_FRAMES 4096

struct php_raw_frame {
	uint64_t ex, func, opline;
	uint32_t call_info;		/* This.u1.type_info: ZEND_CALL_* */
};

/* The chain of one capture, innermost first. end (static) says why it
 * was cut, NULL when read whole. */
struct php_capture {
	struct php_raw_frame *frames;
	size_t nframes, cap_frames;
	const char *end;
	unsigned reads;
};

/* Makes room so that the freeze does not allocate (-ENOMEM). */
int php_capture__reserve(struct php_capture *cap, size_t nframes);
void php_capture__free(struct php_capture *cap);
/* Reads EG(current_execute_data) and the chain of prev_execute_data
 * from it (PHP_MAX_FRAMES at most) into cap, replacing what it held.
 * 0 frames: no script runs (an FPM master, an idle worker). A layout the
 * executor globals contradict (the VM stack's pointers out of order)
 * gives no frames and cap->end says so. Returns 0 or -ENOMEM. */
int php_capture__take(const struct php_runtime *rt, struct stacksnap_mem *mem,
		      struct php_capture *cap);

/* ------------------------------------------------------------------ */
/* Resolve after the thaw, and merge. */

/* One named frame, as PHP's backtraces name it ("Handler::handle",
 * "{closure}", "include", "{main}", "sleep"); file and line for user
 * code (NULL, 0 for internal functions). Strings owned by the resolver. */
struct php_frame {
	const char *function, *file;
	unsigned line;
	bool top;		/* the outermost frame of one execute_ex call */
};

struct php_function_names;
struct php_resolver {
	const struct php_runtime *rt;
	struct stacksnap_mem *mem;
	struct php_function_names *fns;	/* a cache by function address */
	size_t nfns, cap_fns;
	unsigned reads;
};

void php_resolver__init(struct php_resolver *r, const struct php_runtime *rt,
			struct stacksnap_mem *mem);
void php_resolver__free(struct php_resolver *r);
/* Names the frames of cap. *out malloc'ed. A function that cannot be
 * read gives "<unknown function>" without a file, never a guessed name.
 * Returns 0 or -ENOMEM. */
int php_resolve(struct php_resolver *r, const struct php_capture *cap,
		struct php_frame **out, size_t *n);

/* Replaces each native frame of execute_ex (a pc in one of the nexec
 * [start, end) ranges of its code) by the PHP frames its call runs (up to
 * and including the next user frame entered from C, flagged top); frames
 * left over get native_index = nnative. A thread with no native frame in
 * execute_ex runs no PHP: 0. An innermost PHP frame of user code gets no
 * line: it runs VM code, whose current opline the hybrid VM keeps in a
 * register (stored into the frame only before calls out). Returns how
 * many (at most max written). */
size_t php_merge(const struct php_frame *pf, size_t npf,
		 const struct stacksnap_frame *native, size_t nnative,
		 const uint64_t (*exec)[2], size_t nexec,
		 struct stacksnap_runtime_frame *out, size_t max);

#endif
