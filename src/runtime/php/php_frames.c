/* php_frames.c - the chain of zend_execute_data of a PHP process: copied
 * in the freeze (EG(current_execute_data), then prev_execute_data to the
 * end: each frame's function, opline and call flags), named after the
 * thaw from the functions (name, class, file) and the opline's line, as
 * PHP's own backtraces name them, and merged into the native frames of
 * execute_ex. Every read of the target is bounded. */
#include "runtime/php/php.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"

#define ZEND_CALL_TOP (1u << 17)
#define ZEND_INTERNAL_FUNCTION 1
#define ZEND_USER_FUNCTION 2
#define ZEND_EVAL_CODE 4
#define ZEND_INCLUDE_OR_EVAL 73
#define IS_STRING 6
#define PHP_MAX_STR 4096	/* longest name or path read */
#define PHP_MAX_OPS (1u << 24)	/* opcodes of one function */
#define PHP_MAX_VM_STACK (1ull << 32)	/* bytes of one VM stack page */

static int rd(struct stacksnap_mem *mem, unsigned *reads, uint64_t addr,
	      void *buf, size_t len)
{
	(*reads)++;
	return stacksnap_mem__read(mem, addr, buf, len);
}

static uint64_t u64_at(const uint8_t *b, unsigned off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

static uint32_t u32_at(const uint8_t *b, unsigned off)
{
	uint32_t v;

	memcpy(&v, b + off, 4);
	return v;
}

/* A pointer into user space, aligned to align. */
static bool user_ptr(uint64_t v, unsigned align)
{
	return v && !(v & (align - 1)) && v < (1ull << 47);
}

int php_capture__reserve(struct php_capture *cap, size_t nframes)
{
	return vec_reserve((void **)&cap->frames, &cap->cap_frames, nframes,
			   sizeof(*cap->frames));
}

void php_capture__free(struct php_capture *cap)
{
	free(cap->frames);
	memset(cap, 0, sizeof(*cap));
}

int php_capture__take(const struct php_runtime *rt, struct stacksnap_mem *mem,
		      struct php_capture *cap)
{
	const struct php_layout *l = rt->layout;
	uint8_t eg[64], ex[64];
	uint64_t top, end, page, at, page_end;
	unsigned span;

	cap->nframes = 0;
	cap->end = NULL;
	cap->reads = 0;
	if (!l)
		return 0;
	span = l->eg_current_execute_data + 8 - l->eg_vm_stack_top;
	if (span > sizeof(eg) || l->ex_size > sizeof(ex) ||
	    rd(mem, &cap->reads, rt->eg + l->eg_vm_stack_top, eg, span)) {
		cap->end = "executor globals unreadable";
		return 0;
	}
	top = u64_at(eg, l->eg_vm_stack_top - l->eg_vm_stack_top);
	end = u64_at(eg, l->eg_vm_stack_end - l->eg_vm_stack_top);
	page = u64_at(eg, l->eg_vm_stack - l->eg_vm_stack_top);
	at = u64_at(eg, l->eg_current_execute_data - l->eg_vm_stack_top);
	if (!at)
		return 0;		/* no script runs */
	/* The executor globals read as this layout says: the current VM
	   stack page holds its top, and its header's end is EG's. */
	if (!user_ptr(page, 8) || top < page || top > end ||
	    end - page > PHP_MAX_VM_STACK ||
	    rd(mem, &cap->reads, page + l->vm_page_end, &page_end, 8) ||
	    page_end != end) {
		cap->end = "executor globals do not read as PHP's (VM stack out of order)";
		return 0;
	}
	if (php_capture__reserve(cap, 64))
		return -ENOMEM;
	while (at) {
		struct php_raw_frame *f;

		if (!user_ptr(at, 8)) {
			cap->end = "frame pointer out of range";
			break;
		}
		if (cap->nframes == PHP_MAX_FRAMES) {
			cap->end = "too many frames";
			break;
		}
		if (rd(mem, &cap->reads, at, ex, l->ex_size)) {
			cap->end = "frame unreadable";
			break;
		}
		if (php_capture__reserve(cap, cap->nframes + 1))
			return -ENOMEM;
		f = &cap->frames[cap->nframes++];
		f->ex = at;
		f->func = u64_at(ex, l->ex_func);
		f->opline = u64_at(ex, l->ex_opline);
		f->call_info = u32_at(ex, l->ex_call_info);
		at = u64_at(ex, l->ex_prev);
		if (at == f->ex) {
			cap->end = "frame chain loops";
			break;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Naming */

/* What one zend_function says, read once. ok: it read as a function;
 * then name (NULL for a file's top-level code) and for user code file
 * and the opcodes' range. */
struct php_function_names {
	uint64_t func;
	bool ok, user;
	char *name;		/* "Class::method", "function", or NULL */
	char *file;
	uint64_t opcodes;
	uint32_t last;
};

/* A zend_string's bytes, NUL-terminated, malloc'ed; NULL when v is not
 * one. */
static char *read_string(struct php_resolver *r, uint64_t v)
{
	const struct php_layout *l = r->rt->layout;
	uint8_t b[32];
	uint64_t len;
	char *s;

	if (!user_ptr(v, 8) || l->str_val > sizeof(b) ||
	    rd(r->mem, &r->reads, v, b, l->str_val))
		return NULL;
	len = u64_at(b, l->str_len);
	if ((u32_at(b, l->str_type_info) & 0xf) != IS_STRING || len > PHP_MAX_STR ||
	    !(s = malloc(len + 1)))
		return NULL;
	if (rd(r->mem, &r->reads, v + l->str_val, s, len)) {
		free(s);
		return NULL;
	}
	s[len] = '\0';
	if (strlen(s) != len) {		/* a name has no NUL in it */
		free(s);
		return NULL;
	}
	return s;
}

static void read_function(struct php_resolver *r, struct php_function_names *fn)
{
	const struct php_layout *l = r->rt->layout;
	uint8_t b[256];
	uint64_t name, scope, cname;
	char *cls = NULL, *fname = NULL;
	uint8_t type;

	if (l->op_size > sizeof(b) || !user_ptr(fn->func, 8) ||
	    rd(r->mem, &r->reads, fn->func, b, l->fn_common_size))
		return;
	type = b[l->fn_type];
	if (type != ZEND_INTERNAL_FUNCTION && type != ZEND_USER_FUNCTION &&
	    type != ZEND_EVAL_CODE)
		return;
	fn->user = type != ZEND_INTERNAL_FUNCTION;
	if (fn->user) {
		if (rd(r->mem, &r->reads, fn->func, b, l->op_size) ||
		    !(fn->file = read_string(r, u64_at(b, l->op_filename))))
			return;
		fn->opcodes = u64_at(b, l->op_opcodes);
		fn->last = u32_at(b, l->op_last);
		if (!user_ptr(fn->opcodes, 8) || fn->last > PHP_MAX_OPS)
			fn->last = 0;
	}
	name = u64_at(b, l->fn_name);
	scope = u64_at(b, l->fn_scope);
	if (name && !(fname = read_string(r, name)))
		return;
	if (!name && !fn->user)
		return;		/* an internal function has a name */
	if (fname && scope) {
		if (rd(r->mem, &r->reads, scope + l->ce_name, &cname, 8) ||
		    !(cls = read_string(r, cname))) {
			free(fname);
			return;
		}
		fn->name = malloc(strlen(cls) + 2 + strlen(fname) + 1);
		if (fn->name) {
			strcpy(fn->name, cls);
			strcat(fn->name, "::");
			strcat(fn->name, fname);
		}
		free(cls);
		free(fname);
		if (!fn->name)
			return;
	} else {
		fn->name = fname;
	}
	fn->ok = true;
}

static const struct php_function_names *function_names(struct php_resolver *r,
							 uint64_t func)
{
	struct php_function_names *fn;

	for (size_t i = 0; i < r->nfns; i++)
		if (r->fns[i].func == func)
			return &r->fns[i];
	if (!(fn = VEC_PUSH(r->fns, r->nfns, r->cap_fns)))
		return NULL;
	memset(fn, 0, sizeof(*fn));
	fn->func = func;
	read_function(r, fn);
	return fn;
}

void php_resolver__init(struct php_resolver *r, const struct php_runtime *rt,
			struct stacksnap_mem *mem)
{
	memset(r, 0, sizeof(*r));
	r->rt = rt;
	r->mem = mem;
}

void php_resolver__free(struct php_resolver *r)
{
	for (size_t i = 0; i < r->nfns; i++) {
		free(r->fns[i].name);
		free(r->fns[i].file);
	}
	free(r->fns);
	memset(r, 0, sizeof(*r));
}

/* The opline of a frame of fn, read whole when it lies among fn's
 * opcodes (the register-held opline of a running frame may be stale in
 * memory, never outside its function). */
static bool read_opline(struct php_resolver *r, const struct php_function_names *fn,
			uint64_t opline, uint8_t *op)
{
	const struct php_layout *l = r->rt->layout;

	return fn->ok && fn->user && fn->last && opline >= fn->opcodes &&
	       (opline - fn->opcodes) % l->opline_size == 0 &&
	       (opline - fn->opcodes) / l->opline_size < fn->last &&
	       l->opline_size <= 32 &&
	       !rd(r->mem, &r->reads, opline, op, l->opline_size);
}

/* The name PHP's backtrace gives a file's top-level code: the include
 * or eval its caller runs, else the script's own "{main}". */
static const char *code_name(struct php_resolver *r, const struct php_capture *cap,
			     size_t i)
{
	const struct php_layout *l = r->rt->layout;
	const struct php_function_names *caller;
	uint8_t op[32];

	if (i + 1 >= cap->nframes ||
	    !(caller = function_names(r, cap->frames[i + 1].func)) ||
	    !read_opline(r, caller, cap->frames[i + 1].opline, op) ||
	    op[l->opline_opcode] != ZEND_INCLUDE_OR_EVAL)
		return "{main}";
	switch (u32_at(op, l->opline_extended_value)) {
	case 1 << 0: return "eval";
	case 1 << 1: return "include";
	case 1 << 2: return "include_once";
	case 1 << 3: return "require";
	case 1 << 4: return "require_once";
	}
	return "{main}";
}

int php_resolve(struct php_resolver *r, const struct php_capture *cap,
		struct php_frame **out, size_t *n)
{
	const struct php_layout *l = r->rt->layout;
	struct php_frame *fr;

	*out = NULL;
	*n = 0;
	if (!cap->nframes || !l)
		return 0;
	if (!(fr = calloc(cap->nframes, sizeof(*fr))))
		return -ENOMEM;
	for (size_t i = 0; i < cap->nframes; i++) {
		const struct php_raw_frame *rf = &cap->frames[i];
		const struct php_function_names *fn = function_names(r, rf->func);
		uint8_t op[32];

		if (!fn) {
			free(fr);
			return -ENOMEM;
		}
		fr[i].function = "<unknown function>";
		if (!fn->ok)
			continue;
		fr[i].top = fn->user && (rf->call_info & ZEND_CALL_TOP);
		fr[i].function = fn->name ? fn->name : code_name(r, cap, i);
		if (!fn->user)
			continue;
		fr[i].file = fn->file;
		if (read_opline(r, fn, rf->opline, op))
			fr[i].line = u32_at(op, l->opline_lineno);
	}
	*out = fr;
	*n = cap->nframes;
	return 0;
}

/* ------------------------------------------------------------------ */

static void put(struct stacksnap_runtime_frame *out, size_t max, size_t *n,
		const struct php_frame *f, size_t native_index)
{
	if (*n < max) {
		memset(&out[*n], 0, sizeof(out[*n]));
		out[*n].sz = sizeof(out[*n]);
		out[*n].runtime = STACKSNAP_RUNTIME_PHP;
		out[*n].native_index = (uint32_t)native_index;
		out[*n].function = f->function;
		out[*n].file = f->file;
		out[*n].line = f->line;
	}
	(*n)++;
}

static bool in_exec(uint64_t pc, const uint64_t (*exec)[2], size_t nexec)
{
	for (size_t i = 0; i < nexec; i++)
		if (exec[i][0] && pc > exec[i][0] && pc <= exec[i][1])
			return true;
	return false;
}

size_t php_merge(const struct php_frame *pf, size_t npf,
		 const struct stacksnap_frame *native, size_t nnative,
		 const uint64_t (*exec)[2], size_t nexec,
		 struct stacksnap_runtime_frame *out, size_t max)
{
	size_t p = 0, n = 0, k;

	for (k = 0; k < nnative && !in_exec(native[k].pc, exec, nexec); k++)
		;
	if (k == nnative)
		return 0;
	for (; k < nnative && p < npf; k++) {
		if (!in_exec(native[k].pc, exec, nexec))
			continue;
		do
			put(out, max, &n, &pf[p], k);
		while (!pf[p++].top && p < npf);
	}
	for (; p < npf; p++)
		put(out, max, &n, &pf[p], nnative);
	/* No callee frame: the thread runs this frame's opcodes (on CPU,
	   or in a helper of the VM). The hybrid VM keeps the current
	   opline in a register and stores it into the frame only before
	   calls out, so the line in memory may be an earlier statement's:
	   unknown, not wrong. */
	if (n && max && pf[0].file)
		out[0].line = 0;
	return n;
}
