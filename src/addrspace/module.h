/* module.h - a module is one ELF image as the unwinder and symbolizer see
 * it: the image, its separate debug files, its compiled unwind table and
 * its symbols, each made on first use and cached in the context, shared by
 * every address space that maps the same file (keyed by build-id, or by
 * device + inode + mtime when the file has none). */
#ifndef SS_ADDRSPACE_MODULE_H
#define SS_ADDRSPACE_MODULE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/log.h"
#include "elf/elf_image.h"
#include "stacksnap.h"

struct unwind_table;
struct symtab;
struct line_info;
struct gopclntab;

#define MODULE_MAX_SIGRETURN 4

/* Invariant: img is never NULL. Each *_tried flag is set once the lazy
 * member was attempted, so a failure is not retried on every frame. refs
 * counts the address-space mappings using the module; the cache keeps
 * modules with refs == 0 until the context is freed. */
struct module {
	struct module *next;	   /* in the context's cache list */
	unsigned refs;
	char *name;		   /* path as the target names it, or [vdso] */
	struct elf_image *img;
	struct elf_image *debug;   /* separate debug file, may be NULL */
	struct elf_image *minidebug; /* .gnu_debugdata, may be NULL */
	struct unwind_table *table;	  /* the image's own CFI */
	struct unwind_table *debug_table; /* the debug file's .debug_frame */
	struct symtab *symtab;
	struct line_info *lines;
	bool debug_tried, table_tried, symtab_tried, lines_tried;
	bool debug_table_tried;
	bool is_vdso;
	bool table_on_disk;	/* table mapped from, or written to, the cache */
	bool debug_copy_pending; /* debug file to copy into the cache later */
	/* Link-time addresses of rt_sigreturn trampolines in the image's
	 * code, found once with the table (a module rarely has more than
	 * one: glibc's __restore_rt). */
	uint64_t sigreturn[MODULE_MAX_SIGRETURN];
	unsigned nsigreturn;
	/* A module with a lazy table scans its code for trampolines a page
	 * at a time, when a frame's pc first falls in the page: bit p of
	 * sig_scanned is page (sig_lo >> 12) + p. */
	bool sig_lazy;
	bool sig_check;		/* nsigreturn || sig_lazy: the fast path's one test */
	uint64_t sig_lo;
	size_t sig_pages;
	uint64_t *sig_scanned;
	/* Memo of default symbolization results by link-time address:
	 * open addressing, at most half full, cap a power of two or 0. */
	struct sym_memo *memo;
	size_t memo_n, memo_cap;
	/* A Go program's pclntab (module_go.c): its symbol source, and its
	 * pcsp rows make the table when the image has no CFI. */
	struct gopclntab *go;
	bool go_tried;
	bool table_from_go;	/* table made of pcsp rows (never cached) */
};

/* One memoized name: key is module__memo_key(); function may be NULL. */
struct sym_memo {
	uint64_t key;		/* 0: empty slot */
	const char *function;
	uint64_t offset;	/* vaddr - function start */
};

static inline uint64_t module__memo_key(uint64_t vaddr, bool no_demangle)
{
	return (vaddr << 1 | no_demangle) + 1;
}

/* The memoized name at key, if any (returns false when not memoized). */
bool module__memo_get(const struct module *m, uint64_t key,
		      const char **function, uint64_t *offset);
/* Remembers a name; silently does nothing when out of memory. */
void module__memo_put(struct module *m, uint64_t key, const char *function,
		      uint64_t offset);

struct stacksnap_ctx {
	struct log_sink log;
	char **debug_dirs;	/* NULL-terminated */
	char *sysroot;		/* may be NULL */
	bool ignore_deleted;	/* from_pid may open "(deleted)" files by path */
	char *cache_dir;	/* uncompressed debug files; NULL: none */
	bool debuginfod;	/* ask $DEBUGINFOD_URLS for what is missing */
	struct module *modules; /* the module cache */
	size_t nmodules;
	struct stacksnap_ctx_stats stats; /* counts and times, for --stats */
	bool defer_cache_writes; /* note debug-file copies, make them later */
	size_t lazy_min_cfi;	/* .eh_frame bytes from which tables are lazy;
				   tests set 0 (all) or SIZE_MAX (none) */
	unsigned root_fds;	/* descriptors of targets' roots held by
				   address spaces: at most AS_MAX_ROOT_FDS */
	pid_t checked_pid;	/* the last pid stacksnap_snapshot__check()
				   passed: gone at the capture, it exited
				   during the caller's capture */
};

/* Finds or opens the module for the file at path (opened at open_path,
 * which may differ: /proc/PID/root/..., map_files). A build-id given by the
 * caller is looked up in the cache first, among modules opened from the
 * same path; once the file is opened, a module of another file is shared
 * only when its bytes are the same (a build-id is only a name). Takes a
 * reference. */
int module__get_file(struct stacksnap_ctx *ctx, const char *path,
		     const char *open_path, const uint8_t *build_id,
		     size_t build_id_len, struct module **out);
/* module__get_file opening rel relative to the directory dirfd (a
 * descriptor of the target's root: no walk through /proc/PID/root for
 * each file); open_path still names the file (messages, the image's path,
 * its debug link's directory). */
int module__get_file_at(struct stacksnap_ctx *ctx, const char *path,
			int dirfd, const char *rel, const char *open_path,
			const uint8_t *build_id, size_t build_id_len,
			struct module **out);
/* Is a module with this build-id in the cache (module__get_file with the
 * build-id then opens no file)? */
bool module__cached(struct stacksnap_ctx *ctx, const uint8_t *id, size_t len);
/* The same for an image read from memory (the vDSO). Takes ownership of
 * img on success and on failure. */
int module__get_image(struct stacksnap_ctx *ctx, const char *name,
		      struct elf_image *img, struct module **out);
void module__put(struct module *m);

/* Lazy members; NULL when the module has none. */
const struct unwind_table *module__table_slow(struct stacksnap_ctx *ctx,
					      struct module *m);
/* The module's Go pclntab, opened on first use; NULL when the image is
 * not a Go program (module_go.c). */
struct gopclntab *module__go(struct stacksnap_ctx *ctx, struct module *m);
/* The table of a Go module made of its pcsp rows, or NULL. */
struct unwind_table *module__go_table(struct stacksnap_ctx *ctx,
				      struct module *m);
/* Names pc (link-time vaddr; is_return: the lookup is at vaddr already
 * backed up) from the pclntab as Go's traceback does: with lines, the
 * inlined calls innermost first, then the function. 0 when the pclntab
 * does not cover vaddr. */
int module__go_symbolize(struct stacksnap_ctx *ctx, struct module *m,
			 uint64_t vaddr, bool lines, struct stacksnap_sym *out,
			 size_t max);
/* Is the call at link-time address call (a return address less one) in a
 * Go function that is the bottom of the stack it is on: runtime.mcall,
 * morestack, systemstack, asmcgocall (the stack switched to g0 there),
 * goexit, clone (a thread's start)? False for other modules. */
bool module__go_is_bottom(struct stacksnap_ctx *ctx, struct module *m,
			  uint64_t call);
void module__go_free(struct module *m);

static inline const struct unwind_table *module__table(struct stacksnap_ctx *ctx,
						       struct module *m)
{
	return m->table_tried ? m->table : module__table_slow(ctx, m);
}
/* The module's whole table: a lazy one compiles the rest first (and is
 * then kept in the table cache). For callers that need every row, such as
 * an export of whole tables into BPF maps. NULL when the module has none
 * or memory ran out. */
const struct unwind_table *module__table_whole(struct stacksnap_ctx *ctx,
					       struct module *m);
const struct unwind_table *module__debug_table(struct stacksnap_ctx *ctx,
					       struct module *m);
struct symtab *module__symtab(struct stacksnap_ctx *ctx, struct module *m);
struct line_info *module__lines(struct stacksnap_ctx *ctx, struct module *m);
/* The default name of link-time vaddr (demangled, function only) from the
 * function index of the module's symbol cache file, memoized under key:
 * no DWARF read. false when the cache does not cover vaddr. */
bool module__function(struct stacksnap_ctx *ctx, struct module *m,
		      uint64_t vaddr, uint64_t key, const char **function,
		      uint64_t *offset);

bool module__is_sigreturn_lazy(struct module *m, uint64_t vaddr);

/* Is link-time vaddr the start of a signal-return trampoline? Valid after
 * module__table() was called. The callers' shortcut sig_check says
 * whether the question needs asking. */
static inline bool module__is_sigreturn(struct module *m, uint64_t vaddr)
{
	/* A page scanned already needs only the list below: the call (which
	 * scans) is for a page's first frame, not every frame of a warm
	 * walk through a lazy table. */
	if (m->sig_lazy) {
		size_t p = (size_t)((vaddr - m->sig_lo) >> 12);

		if (vaddr >= m->sig_lo && p < m->sig_pages &&
		    !(m->sig_scanned[p / 64] & (1ull << (p % 64))))
			return module__is_sigreturn_lazy(m, vaddr);
	}
	for (unsigned i = 0; i < m->nsigreturn; i++)
		if (m->sigreturn[i] == vaddr)
			return true;
	return false;
}

/* Copies up to len code bytes at link-time address vaddr from the image
 * (for recognising signal trampolines and call instructions without
 * touching the target). Returns 0 or -EFAULT when not in a file-backed
 * part of a PT_LOAD. */
int module__read_code(const struct module *m, uint64_t vaddr, void *buf,
		      size_t len);

#endif
