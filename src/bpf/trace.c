/* trace.c - the user side of `stacksnap trace`: event specs resolved
 * (tracepoints by tracefs, uprobes by file and symbol), the BPF objects
 * loaded with one shared ring buffer, filter and counters, attached and
 * detached, the ring buffer drained into the process table (fork, exec,
 * exit) and each event's capture unwound with the common engine. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <linux/types.h>

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/maps_line.h"
#include "base/opts.h"
#include "base/vec.h"
#include "bpf/bpf_env.h"
#include "symbolize/symbolize.h"

/* The BPF side's record, in user-space types. */
#define __u8 uint8_t
#define __u32 uint32_t
#define __u64 uint64_t
#include "bpf/trace_record.h"
#include "ktable/kunwind_layout.h"
#include "base/clock.h"
#include "ktable/ktable.h"
#include "bpf/kunwind_session.h"
#undef __u8
#undef __u32
#undef __u64

#include "trace_proc.skel.h"
#include "trace_tp.skel.h"
#include "trace_uprobe.skel.h"
#include "trace_sample.skel.h"
#include "offcpu.skel.h"

#define MAX_FIELDS 32

/* One field of a tracepoint's format file. */
struct tp_field {
	char name[48];
	unsigned offset, size;
	bool is_signed, is_pointer, is_string, is_data_loc;
};

/* EV_OFF_CPU / EV_WAKEUP: a traced thread leaving a CPU to wait / woken
 * (stacksnap_trace__add_off_cpu; the second carries no stack). */
enum event_kind { EV_TRACEPOINT, EV_UPROBE, EV_URETPROBE, EV_SAMPLE, EV_OFF_CPU,
		  EV_WAKEUP };

/* One event as added. Invariant: raw_len <= TRACE_RAW_MAX; for
 * tracepoints nfields fields, each inside raw_len. */
struct trace_event_spec {
	enum event_kind kind;
	char *name;		/* shown: "syscalls:sys_enter_write" */
	char *target;		/* tracepoint "CAT/NAME"; uprobe file path */
	char *func;		/* uprobe function */
	uint64_t func_off;	/* its file offset */
	unsigned hz;		/* sampling */
	unsigned raw_len;
	struct tp_field fields[MAX_FIELDS];
	unsigned nfields;
};

/* Invariant: after start, proc is loaded and owns the shared maps; tp,
 * uprobe and sample are loaded only when an event needs them; links and
 * perf_fds are what stop() closes. */
struct stacksnap_trace {
	struct stacksnap_ctx *ctx;
	struct stacksnap_trace_opts o;
	bool env_ready;		/* bpf_env__prepare succeeded */
	struct trace_event_spec *events;
	size_t nevents, capevents;
	struct trace_proc_bpf *proc;
	struct trace_tp_bpf *tp;
	struct trace_uprobe_bpf *uprobe;
	struct trace_sample_bpf *sample;
	struct offcpu_bpf *offcpu;
	struct bpf_link **links;
	size_t nlinks, caplinks;
	int *perf_fds;
	size_t nperf;
	struct ring_buffer *rb;
	struct stacksnap_procs *procs;
	struct stacksnap_unwinder *uw;
	struct stacksnap_frame *frames;
	stacksnap_trace_fn fn;	/* during poll */
	void *fn_user;
	int fn_rc;
	struct stacksnap_trace_stats st;
	char strbuf[MAX_FIELDS][64]; /* strings of fields() */
	/* unwind KERNEL/BOTH: the tables in BPF maps, the frames made from
	 * the kernel's pcs, and the last fallback refresh (pid, time) so a
	 * burst of events of not-yet-loaded code reads /proc once. */
	struct ktable *kt;
	struct stacksnap_frame *kframes;
	struct stacksnap_frame *hframes; /* the hybrid walk's (both mode) */
	pid_t last_refresh_pid;
	uint64_t last_refresh_ns;
};

static const struct log_sink *LOG(const struct stacksnap_trace *tr)
{
	return &tr->ctx->log;
}

struct stacksnap_trace *stacksnap_trace__new(struct stacksnap_ctx *ctx,
					     const struct stacksnap_trace_opts *opts)
{
	struct stacksnap_trace *tr;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	tr = calloc(1, sizeof(*tr));
	if (!tr) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts_in(&tr->o, sizeof(tr->o), opts, offsetof(struct stacksnap_trace_opts, pid_hint))) {
		free(tr);
		errno = EINVAL;
		return NULL;
	}
	tr->ctx = ctx;
	if (!tr->o.stack_size)
		tr->o.stack_size = 16384;
	if (!tr->o.ring_size)
		tr->o.ring_size = 1u << 24;
	if (!tr->o.max_frames)
		tr->o.max_frames = 256;
	if (tr->o.unwind > STACKSNAP_TRACE_UNWIND_BOTH) {
		log_err(LOG(tr), "unwind mode %u unknown (user, kernel or both)",
			tr->o.unwind);
		free(tr);
		errno = EINVAL;
		return NULL;
	}
	if (tr->o.stack_size > TRACE_STACK_MAX ||
	    (tr->o.ring_size & (tr->o.ring_size - 1)) || tr->o.ring_size < 4096) {
		log_err(LOG(tr), "stack size %zu (at most %u) or ring buffer size %zu "
			"(a power of two, at least 4096) out of range",
			tr->o.stack_size, TRACE_STACK_MAX, tr->o.ring_size);
		free(tr);
		errno = EINVAL;
		return NULL;
	}
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = tr->o.max_frames);
	tr->procs = stacksnap_procs__new(ctx, NULL);
	tr->uw = stacksnap_unwinder__new(&uo);
	tr->frames = calloc(tr->o.max_frames, sizeof(*tr->frames));
	tr->kframes = calloc(KU_MAX_FRAMES, sizeof(*tr->kframes));
	tr->hframes = calloc(KU_MAX_FRAMES, sizeof(*tr->hframes));
	if (!tr->procs || !tr->uw || !tr->frames || !tr->kframes || !tr->hframes) {
		stacksnap_trace__free(tr);
		errno = ENOMEM;
		return NULL;
	}
	return tr;
}

static struct trace_event_spec *event_new(struct stacksnap_trace *tr,
					  enum event_kind kind, const char *name)
{
	struct trace_event_spec *e;

	e = VEC_PUSH(tr->events, tr->nevents, tr->capevents);
	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->name = strdup(name);
	return e->name ? e : NULL;
}

/* ---- tracepoints ---- */

/* Reads CAT/NAME's format file: the fields after the common ones and the
 * record size to copy. */
static int tp_read_format(struct stacksnap_trace *tr, struct trace_event_spec *e,
			  const char *cat, const char *name)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/events/%s/%s/format", bpf_env__tracefs(), cat, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *fld = strstr(line, "field:"), *semi, *sp;
		unsigned off, size, sgn;
		struct tp_field *t;

		if (!fld || !(semi = strchr(fld, ';')))
			continue;
		*semi = 0;
		if (sscanf(semi + 1, " offset:%u; size:%u; signed:%u;", &off, &size, &sgn) != 3)
			continue;
		fld += 6;
		if (strstr(fld, "common_"))
			continue;
		if (off + size > TRACE_RAW_MAX || e->nfields == MAX_FIELDS)
			continue; /* beyond what is copied: not shown */
		t = &e->fields[e->nfields++];
		memset(t, 0, sizeof(*t));
		/* The name is the last word, before any array bracket. */
		char *br = strchr(fld, '[');
		t->is_string = br && strstr(fld, "char") != NULL;
		if (br)
			*br = 0;
		sp = strrchr(fld, ' ');
		snprintf(t->name, sizeof(t->name), "%s", sp ? sp + 1 : fld);
		t->offset = off;
		t->size = size;
		t->is_signed = sgn;
		t->is_data_loc = strstr(fld, "__data_loc") != NULL;
		t->is_pointer = strchr(fld, '*') || strstr(fld, "unsigned long");
		if (off + size > e->raw_len)
			e->raw_len = off + size;
	}
	fclose(f);
	/* __data_loc strings live after the fixed fields: copy what fits. */
	for (unsigned i = 0; i < e->nfields; i++)
		if (e->fields[i].is_data_loc)
			e->raw_len = TRACE_RAW_MAX;
	e->raw_len = (e->raw_len + 7) & ~7u;
	return 0;
}

static int tp_add(struct stacksnap_trace *tr, const char *cat, const char *name)
{
	char full[256];
	struct trace_event_spec *e;
	int err;

	snprintf(full, sizeof(full), "%s:%s", cat, name);
	e = event_new(tr, EV_TRACEPOINT, full);
	if (!e)
		return -ENOMEM;
	snprintf(full, sizeof(full), "%s/%s", cat, name);
	e->target = strdup(full);
	if (!e->target)
		return -ENOMEM;
	err = tp_read_format(tr, e, cat, name);
	if (err) {
		log_err(LOG(tr), "tracepoint %s: cannot read its format: %s",
			e->name, strerror(-err));
		return err;
	}
	return 0;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Calls fn for every tracepoint CAT:NAME matching the globs. */
static int tp_each(const char *cat_glob, const char *name_glob,
		   int (*fn)(const char *cat, const char *name, void *u), void *u)
{
	char dir[PATH_MAX];
	DIR *d, *sub;
	struct dirent *c, *n;
	int count = 0, r;

	snprintf(dir, sizeof(dir), "%s/events", bpf_env__tracefs());
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((c = readdir(d))) {
		if (c->d_name[0] == '.' || fnmatch(cat_glob, c->d_name, 0))
			continue;
		snprintf(dir, sizeof(dir), "%s/events/%s", bpf_env__tracefs(), c->d_name);
		sub = opendir(dir);
		if (!sub)
			continue;
		while ((n = readdir(sub))) {
			if (n->d_name[0] == '.' || n->d_type != DT_DIR ||
			    fnmatch(name_glob, n->d_name, 0))
				continue;
			count++;
			if ((r = fn(c->d_name, n->d_name, u))) {
				closedir(sub);
				closedir(d);
				return r < 0 ? r : count;
			}
		}
		closedir(sub);
	}
	closedir(d);
	return count;
}

static int tp_add_cb(const char *cat, const char *name, void *u)
{
	return tp_add(u, cat, name);
}

/* ---- uprobes ---- */

/* A library named by its short name ("libc", "c", "libc.so.6"): a file
 * in pid's mappings first, then in the usual library directories. */
static bool lib_name_matches(const char *base, const char *name)
{
	size_t n = strlen(name);
	char lib[128];

	if (!strcmp(base, name))
		return true;
	if (!strncmp(base, name, n) && (base[n] == '.' || base[n] == '-'))
		return true;
	snprintf(lib, sizeof(lib), "lib%s", name);
	n = strlen(lib);
	return strncmp(name, "lib", 3) && !strncmp(base, lib, n) &&
	       (base[n] == '.' || base[n] == '-');
}

/* An ELF file (not a linker script such as /usr/lib/.../libc.so). */
static bool is_elf(const char *path)
{
	unsigned char m[4];
	FILE *f = fopen(path, "re");
	bool ok = f && fread(m, 1, 4, f) == 4 && !memcmp(m, "\177ELF", 4);

	if (f)
		fclose(f);
	return ok;
}

static int resolve_binary(struct stacksnap_trace *tr, const char *name,
			  char *out, size_t outlen)
{
	static const char *const dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
		"/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
	};
	char line[PATH_MAX + 128];

	if (strchr(name, '/')) {
		if (access(name, R_OK))
			return -errno;
		if (!realpath(name, out))
			return -errno;
		return 0;
	}
	if (tr->o.pid_hint > 0) {
		FILE *f;

		snprintf(line, sizeof(line), "/proc/%d/maps", (int)tr->o.pid_hint);
		if ((f = fopen(line, "re"))) {
			while (fgets(line, sizeof(line), f)) {
				char *path = strchr(line, '/'), *nl, *base;

				if (!path)
					continue;
				if ((nl = strchr(path, '\n')))
					*nl = 0;
				base = strrchr(path, '/') + 1;
				if (lib_name_matches(base, name)) {
					snprintf(out, outlen, "%s", path);
					fclose(f);
					return 0;
				}
			}
			fclose(f);
		}
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *de;
		char best[256] = "";

		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (!strstr(de->d_name, ".so") || !lib_name_matches(de->d_name, name) ||
			    (best[0] && strlen(de->d_name) >= strlen(best)))
				continue;
			snprintf(line, sizeof(line), "%s/%s", dirs[i], de->d_name);
			if (is_elf(line))
				snprintf(best, sizeof(best), "%s", de->d_name);
		}
		closedir(d);
		if (best[0]) {
			snprintf(line, sizeof(line), "%s/%s", dirs[i], best);
			return realpath(line, out) ? 0 : -errno;
		}
	}
	return -ENOENT;
}

/* Calls fn for every defined function symbol of the ELF file at path
 * (.symtab and .dynsym) with its name, its demangled name without the
 * parameter list (C++; else the name) and its file offset, until fn
 * returns non-zero (which is returned). -errno when the file is not ELF. */
static int elf_functions(const char *path,
			 int (*fn)(const char *name, const char *plain, uint64_t off,
				   void *u), void *u)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	Elf *elf;
	Elf_Scn *scn = NULL;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		close(fd);
		return -ENOEXEC;
	}
	while (!r && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !(data = elf_getdata(scn, NULL)) || !sh.sh_entsize)
			continue;
		for (size_t i = 0; !r && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			GElf_Shdr tsh;
			Elf_Scn *text;
			const char *name;
			char *dm, *paren;

			if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE ||
			    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)) || !*name ||
			    !(text = elf_getscn(elf, sym.st_shndx)) || !gelf_getshdr(text, &tsh))
				continue;
			dm = demangle(name);
			if (dm && (paren = strchr(dm, '(')))
				*paren = 0;
			r = fn(name, dm ? dm : name, sym.st_value - tsh.sh_addr + tsh.sh_offset, u);
			free(dm);
		}
	}
	elf_end(elf);
	close(fd);
	return r;
}

struct func_lookup {
	const char *want;
	uint64_t off;
	bool found;
};

static int func_match(const char *name, const char *plain, uint64_t off, void *u)
{
	struct func_lookup *fl = u;

	if (strcmp(name, fl->want) && strcmp(plain, fl->want))
		return 0;
	fl->off = off;
	fl->found = true;
	return 1;
}

static int uprobe_add(struct stacksnap_trace *tr, const char *spec, bool ret)
{
	const char *rest = strchr(spec, ':') + 1;
	const char *colon = strrchr(rest, ':');
	char file[PATH_MAX], path[PATH_MAX], name[PATH_MAX + 128];
	struct trace_event_spec *e;
	int err;

	if (!colon || colon == rest || !colon[1]) {
		log_err(LOG(tr), "event '%s': a uprobe is u:FILE:FUNCTION (or ur: "
			"for a uretprobe), e.g. u:libc:malloc", spec);
		return -EINVAL;
	}
	snprintf(file, sizeof(file), "%.*s", (int)(colon - rest), rest);
	err = resolve_binary(tr, file, path, sizeof(path));
	if (err) {
		log_err(LOG(tr), "event '%s': no file or library '%s'%s", spec, file,
			strchr(file, '/') ? "" : " (give its path, or -p a process "
			"that has it loaded)");
		return -ENOENT;
	}
	/* By symbol name, or a C++ function by its name without
	 * parameters ("ns::f" for _ZN2ns1fEv). */
	struct func_lookup fl = { .want = colon + 1 };
	err = elf_functions(path, func_match, &fl);
	if (err < 0) {
		log_err(LOG(tr), "event '%s': %s is not an ELF file", spec, path);
		return -ENOENT;
	}
	if (!fl.found) {
		log_err(LOG(tr), "event '%s': no function '%s' in %s (`stacksnap trace "
			"-l u:%s` lists them)", spec, colon + 1, path, path);
		return -ENOENT;
	}
	snprintf(name, sizeof(name), "%s:%s:%s", ret ? "ur" : "u", path, colon + 1);
	e = event_new(tr, ret ? EV_URETPROBE : EV_UPROBE, name);
	if (!e || !(e->target = strdup(path)) || !(e->func = strdup(colon + 1)))
		return -ENOMEM;
	e->func_off = fl.off;
	return 0;
}

int stacksnap_trace__add_event(struct stacksnap_trace *tr, const char *spec)
{
	size_t before;
	int r;

	if (!tr || !spec || tr->proc)
		return fail(-EINVAL);
	/* Rights first (an event cannot be looked up without them), and
	 * tracefs mounted. */
	if (!tr->env_ready) {
		struct bpf_env env;

		if ((r = bpf_env__prepare(&env, LOG(tr))))
			return r;
		tr->env_ready = true;
	}
	before = tr->nevents;
	if (!strncmp(spec, "u:", 2) || !strncmp(spec, "ur:", 3)) {
		r = uprobe_add(tr, spec, spec[1] == 'r');
	} else {
		const char *colon = strchr(spec, ':');
		char cat[128];

		if (!colon || colon == spec || !colon[1] ||
		    (size_t)(colon - spec) >= sizeof(cat)) {
			log_err(LOG(tr), "event '%s': expected CATEGORY:NAME (a "
				"tracepoint, e.g. syscalls:sys_enter_write), "
				"u:FILE:FUNCTION or ur:FILE:FUNCTION", spec);
			return fail(-EINVAL);
		}
		snprintf(cat, sizeof(cat), "%.*s", (int)(colon - spec), spec);
		if (!has_glob(spec)) {
			char dir[PATH_MAX];

			snprintf(dir, sizeof(dir), "%s/events/%s/%s", bpf_env__tracefs(),
				 cat, colon + 1);
			if (access(dir, F_OK)) {
				log_err(LOG(tr), "unknown event '%s': no such tracepoint "
					"(`stacksnap trace -l` lists them)", spec);
				return fail(-ENOENT);
			}
			r = tp_add(tr, cat, colon + 1);
		} else {
			r = tp_each(cat, colon + 1, tp_add_cb, tr);
			if (r >= 0 && tr->nevents == before) {
				log_err(LOG(tr), "unknown event '%s': no tracepoint "
					"matches (`stacksnap trace -l` lists them)", spec);
				return fail(-ENOENT);
			}
		}
	}
	if (r < 0)
		return fail(r);
	return (int)(tr->nevents - before);
}

int stacksnap_trace__add_sampling(struct stacksnap_trace *tr, unsigned hz)
{
	char name[32];
	struct trace_event_spec *e;

	if (!tr || !hz || hz > 100000 || tr->proc)
		return fail(-EINVAL);
	snprintf(name, sizeof(name), "cpu-clock");
	e = event_new(tr, EV_SAMPLE, name);
	if (!e)
		return fail(-ENOMEM);
	e->hz = hz;
	return 1;
}

int stacksnap_trace__add_off_cpu(struct stacksnap_trace *tr)
{
	if (!tr || tr->proc)
		return fail(-EINVAL);
	for (size_t i = 0; i < tr->nevents; i++)
		if (tr->events[i].kind == EV_OFF_CPU)
			return fail(-EEXIST);
	if (!event_new(tr, EV_OFF_CPU, "off-cpu") || !event_new(tr, EV_WAKEUP, "wakeup"))
		return fail(-ENOMEM);
	return 2;
}

/* ---- loading and attaching ---- */

static int link_add(struct stacksnap_trace *tr, struct bpf_link *l)
{
	struct bpf_link **slot = VEC_PUSH(tr->links, tr->nlinks, tr->caplinks);

	if (!slot) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	*slot = l;
	return 0;
}

/* Settings every object shares, set before its load; maps other than
 * proc's own point at proc's (one ring buffer, filter and counters). */
#define CONFIGURE(tr, skel)                                                    \
	do {                                                                   \
		(skel)->rodata->stack_size = (uint32_t)(tr)->o.stack_size;     \
		(skel)->rodata->filter_tid = (tr)->o.by_tid;                   \
		(skel)->rodata->inherit = !(tr)->o.no_inherit;                 \
		(skel)->rodata->unwind_mode = unwind_mode(tr);                 \
		(skel)->rodata->compact = (tr)->o.compact;                     \
		bpf_map__set_max_entries((skel)->maps.scratch, (uint32_t)ncpu); \
	} while (0)
#define SHARE(tr, skel)                                                        \
	((tr->kt && ktable__reuse_maps(tr->kt, (skel)->obj)) ||                \
	 bpf_map__reuse_fd((skel)->maps.events, bpf_map__fd((tr)->proc->maps.events)) ||   \
	 bpf_map__reuse_fd((skel)->maps.traced, bpf_map__fd((tr)->proc->maps.traced)) ||   \
	 bpf_map__reuse_fd((skel)->maps.stats, bpf_map__fd((tr)->proc->maps.stats)) ||     \
	 bpf_map__reuse_fd((skel)->maps.exec_ranges, bpf_map__fd((tr)->proc->maps.exec_ranges)))

/* Opens, configures, shares proc's maps with, and loads the skeleton
 * NAME_bpf into tr->FIELD (returning from the caller on failure): how a
 * program kind joins the trace (a new capture mode is one more). */
#define LOAD_SHARING(tr, field, name, what)                                    \
	do {                                                                   \
		if (!((tr)->field = name##_bpf__open()))                       \
			return fail(load_error(tr, what, -errno));             \
		CONFIGURE(tr, (tr)->field);                                    \
		if ((err = SHARE(tr, (tr)->field)) ||                          \
		    (err = name##_bpf__load((tr)->field)))                     \
			return fail(load_error(tr, what, err));                \
	} while (0)

static uint32_t unwind_mode(const struct stacksnap_trace *tr)
{
	return tr->o.unwind == STACKSNAP_TRACE_UNWIND_KERNEL ? KU_MODE_KERNEL
	     : tr->o.unwind == STACKSNAP_TRACE_UNWIND_BOTH ? KU_MODE_BOTH
							    : KU_MODE_COPY;
}

/* Writes pid's mapping table for the in-kernel walk from its address
 * space in procs (unwind KERNEL/BOTH). */
static void kernel_maps(struct stacksnap_trace *tr, pid_t pid)
{
	struct stacksnap_addrspace *as;

	if (!tr->kt || !(as = stacksnap_procs__addrspace(tr->procs, pid)))
		return;
	ktable__set_process(tr->kt, pid, as);
}

static int load_error(struct stacksnap_trace *tr, const char *what, int err)
{
	log_err(LOG(tr), "cannot load the %s BPF program: %s%s", what, strerror(-err),
		err == -EPERM ? " (run as root, or grant CAP_BPF and CAP_PERFMON)"
		: err == -EINVAL || err == -ENOTSUP || err == -ESRCH
		? " (this kernel lacks a feature it needs: BTF-enabled tracepoints, "
		  "bpf_task_pt_regs and attach cookies, Linux 5.15 or later; "
		  "-v shows the verifier's words)" : "");
	return err;
}

static int attach_tracepoint(struct stacksnap_trace *tr, struct trace_event_spec *e,
			     size_t idx)
{
	char cat[128];
	const char *slash = strchr(e->target, '/');
	LIBBPF_OPTS(bpf_tracepoint_opts, to, .bpf_cookie = TRACE_COOKIE(idx, e->raw_len));
	struct bpf_link *l;

	snprintf(cat, sizeof(cat), "%.*s", (int)(slash - e->target), e->target);
	l = bpf_program__attach_tracepoint_opts(tr->tp->progs.trace_tp, cat, slash + 1, &to);
	if (!l) {
		int err = -errno;

		log_err(LOG(tr), "cannot attach to tracepoint %s: %s", e->name, strerror(-err));
		return err;
	}
	return link_add(tr, l);
}

static int attach_uprobe(struct stacksnap_trace *tr, struct trace_event_spec *e,
			 size_t idx)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = TRACE_COOKIE(idx, 0),
		    .retprobe = e->kind == EV_URETPROBE);
	struct bpf_link *l;

	l = bpf_program__attach_uprobe_opts(tr->uprobe->progs.trace_uprobe, -1,
					    e->target, e->func_off, &uo);
	if (!l) {
		int err = -errno;

		log_err(LOG(tr), "cannot attach %s: %s", e->name, strerror(-err));
		return err;
	}
	return link_add(tr, l);
}

static int attach_sampling(struct stacksnap_trace *tr, struct trace_event_spec *e,
			   size_t idx, int ncpu)
{
	LIBBPF_OPTS(bpf_perf_event_opts, po, .bpf_cookie = TRACE_COOKIE(idx, 0));

	tr->perf_fds = calloc((size_t)ncpu, sizeof(int));
	if (!tr->perf_fds)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct perf_event_attr a = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(a),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.freq = 1,
			.sample_freq = e->hz,
		};
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		struct bpf_link *l;

		if (fd < 0) {
			if (errno == ENODEV || errno == ENOENT)
				continue; /* an offline CPU */
			log_err(LOG(tr), "cannot open a cpu-clock event on CPU %d: %s",
				cpu, strerror(errno));
			return -errno;
		}
		tr->perf_fds[tr->nperf++] = fd;
		l = bpf_program__attach_perf_event_opts(tr->sample->progs.trace_sample, fd, &po);
		if (!l) {
			int err = -errno;

			log_err(LOG(tr), "cannot attach the sampling program on CPU %d: %s",
				cpu, strerror(-err));
			return err;
		}
		if (link_add(tr, l))
			return -ENOMEM;
	}
	return 0;
}

/* Both programs with the first of the two events: the wakeups first (a
 * wait begun is then always ended). */
static int attach_offcpu(struct stacksnap_trace *tr)
{
	struct bpf_program *progs[2] = { tr->offcpu->progs.trace_wakeup,
					 tr->offcpu->progs.trace_offcpu };

	for (int i = 0; i < 2; i++) {
		struct bpf_link *l = bpf_program__attach(progs[i]);
		int err;

		if (!l) {
			err = -errno;
			log_err(LOG(tr), "cannot attach to %s: %s",
				i ? "sched_switch" : "sched_wakeup", strerror(-err));
			return err;
		}
		if ((err = link_add(tr, l)))
			return err;
	}
	return 0;
}

static int on_record(void *ctx, void *data, size_t len);

int stacksnap_trace__start(struct stacksnap_trace *tr)
{
	struct bpf_env env;
	bool need_tp = false, need_up = false, need_sample = false;
	int off_idx = -1, wake_idx = -1;
	int ncpu, err;

	if (!tr || tr->proc || !tr->nevents)
		return fail(-EINVAL);
	err = bpf_env__prepare(&env, LOG(tr));
	if (err)
		return err;
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return fail(-ENOTSUP);
	for (size_t i = 0; i < tr->nevents; i++) {
		need_tp |= tr->events[i].kind == EV_TRACEPOINT;
		need_up |= tr->events[i].kind == EV_UPROBE || tr->events[i].kind == EV_URETPROBE;
		need_sample |= tr->events[i].kind == EV_SAMPLE;
		if (tr->events[i].kind == EV_OFF_CPU)
			off_idx = (int)i;
		if (tr->events[i].kind == EV_WAKEUP)
			wake_idx = (int)i;
	}
	if (tr->o.unwind != STACKSNAP_TRACE_UNWIND_USER && !tr->kt) {
		tr->kt = ktable__new(tr->ctx);
		if (!tr->kt)
			return fail(-errno);
	}
	tr->proc = trace_proc_bpf__open();
	if (!tr->proc)
		return fail(load_error(tr, "process-following", -errno));
	CONFIGURE(tr, tr->proc);
	if (!tr->o.compact) {
		/* The executable-mapping hooks only keep --compact's ranges. */
		bpf_program__set_autoload(tr->proc->progs.trace_mmap_enter, false);
		bpf_program__set_autoload(tr->proc->progs.trace_mmap_exit, false);
		bpf_program__set_autoload(tr->proc->progs.trace_mprotect_enter, false);
		bpf_program__set_autoload(tr->proc->progs.trace_mprotect_exit, false);
	}
	if (tr->kt && (err = ktable__reuse_maps(tr->kt, tr->proc->obj)))
		return fail(load_error(tr, "process-following", err));
	bpf_map__set_max_entries(tr->proc->maps.events, (uint32_t)tr->o.ring_size);
	if ((err = trace_proc_bpf__load(tr->proc)))
		return fail(load_error(tr, "process-following", err));
	if (need_tp)
		LOAD_SHARING(tr, tp, trace_tp, "tracepoint");
	if (need_up)
		LOAD_SHARING(tr, uprobe, trace_uprobe, "uprobe");
	if (need_sample)
		LOAD_SHARING(tr, sample, trace_sample, "sampling");
	if (off_idx >= 0) {
		if (!(tr->offcpu = offcpu_bpf__open()))
			return fail(load_error(tr, "off-CPU", -errno));
		CONFIGURE(tr, tr->offcpu);
		tr->offcpu->rodata->off_event = (uint32_t)off_idx;
		tr->offcpu->rodata->wake_event = (uint32_t)wake_idx;
		if ((err = SHARE(tr, tr->offcpu)) || (err = offcpu_bpf__load(tr->offcpu)))
			return fail(load_error(tr, "off-CPU", err));
	}
	if ((err = trace_proc_bpf__attach(tr->proc))) {
		log_err(LOG(tr), "cannot attach to the sched_process_fork/exec/exit "
			"tracepoints%s: %s", tr->o.compact ? " (or, for --compact, "
			"sys_enter/exit_mmap/mprotect)" : "", strerror(-err));
		return fail(err);
	}
	for (size_t i = 0; i < tr->nevents; i++) {
		struct trace_event_spec *e = &tr->events[i];

		err = e->kind == EV_TRACEPOINT ? attach_tracepoint(tr, e, i)
		    : e->kind == EV_SAMPLE ? attach_sampling(tr, e, i, ncpu)
		    : e->kind == EV_OFF_CPU ? attach_offcpu(tr)
		    : e->kind == EV_WAKEUP ? 0
		    : attach_uprobe(tr, e, i);
		if (err) {
			stacksnap_trace__stop(tr);
			return fail(err);
		}
	}
	tr->rb = ring_buffer__new(bpf_map__fd(tr->proc->maps.events), on_record, tr, NULL);
	if (!tr->rb) {
		err = -errno;
		stacksnap_trace__stop(tr);
		log_err(LOG(tr), "cannot map the ring buffer: %s", strerror(-err));
		return fail(err);
	}
	return 0;
}

int stacksnap_exec_ranges__from_pid(struct stacksnap_exec_ranges *r, pid_t pid)
{
	char path[64], line[512];
	FILE *f;

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "re")))
		return fail(-ESRCH);
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;

		/* A fragment of a long line is no line: skipped. */
		if (maps_line__parse(line, &ml) || !(ml.prot & PROT_EXEC))
			continue;
		uint64_t a = ml.start, b = ml.end;
		/* /proc lists mappings in address order: sorted already. */
		if (r->n && r->end[r->n - 1] == a) {
			r->end[r->n - 1] = b;
			continue;
		}
		if (r->n == STACKSNAP_EXEC_RANGES) {
			fclose(f);
			return fail(-E2BIG);
		}
		r->start[r->n] = a;
		r->end[r->n++] = b;
	}
	fclose(f);
	return 0;
}

/* pid's executable ranges into the map the compaction reads (with compact
 * only). Without them (gone, too many ranges) its stacks go as they are. */
static void exec_ranges_update(struct stacksnap_trace *tr, pid_t pid)
{
	struct stacksnap_exec_ranges r;
	uint32_t key = (uint32_t)pid;
	int fd;

	if (!tr->o.compact || !tr->proc)
		return;
	fd = bpf_map__fd(tr->proc->maps.exec_ranges);
	if (stacksnap_exec_ranges__from_pid(&r, pid))
		bpf_map_delete_elem(fd, &key);
	else
		bpf_map_update_elem(fd, &key, &r, BPF_ANY);
}

int stacksnap_trace__follow(struct stacksnap_trace *tr, pid_t pid)
{
	uint32_t key = (uint32_t)pid, one = 1;
	char path[64];
	pid_t tgid = pid;
	int err;

	if (!tr || !tr->proc || pid <= 0)
		return fail(-EINVAL);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		log_err(LOG(tr), "pid %d: no such process", (int)pid);
		return fail(-ESRCH);
	}
	char line[128];
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	if (bpf_map_update_elem(bpf_map__fd(tr->proc->maps.traced), &key, &one, BPF_ANY)) {
		err = -errno;
		log_err(LOG(tr), "pid %d: cannot add it to the filter: %s", (int)pid,
			strerror(-err));
		return fail(err);
	}
	err = stacksnap_procs__attach_pid(tr->procs, tgid);
	exec_ranges_update(tr, tgid);
	if (err) {
		log_err(LOG(tr), "pid %d: cannot read its mappings: %s", (int)pid,
			strerror(-err));
		return fail(err);
	}
	kernel_maps(tr, tgid);
	return 0;
}

void stacksnap_trace__stop(struct stacksnap_trace *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->nlinks; i++)
		bpf_link__destroy(tr->links[i]);
	tr->nlinks = 0;
	for (size_t i = 0; i < tr->nperf; i++)
		close(tr->perf_fds[i]);
	tr->nperf = 0;
}

/* ---- draining ---- */

/* The library's end reason for an in-kernel walk's. */
static enum stacksnap_end kernel_end(unsigned kend)
{
	switch (kend) {
	case KU_END_COMPLETE: return STACKSNAP_END_COMPLETE;
	case KU_END_NO_PROC: case KU_END_NO_MAPPING: case KU_END_NOT_LOADED:
		return STACKSNAP_END_NO_MODULE;
	case KU_END_DWARF: case KU_END_BAD_CFI: return STACKSNAP_END_BAD_CFI;
	case KU_END_NO_CFI: return STACKSNAP_END_NO_CFI;
	case KU_END_LOOP: return STACKSNAP_END_LOOP;
	case KU_END_FRAME_LIMIT: return STACKSNAP_END_FRAME_LIMIT;
	case KU_END_BAD_PC: return STACKSNAP_END_BAD_PC;
	default: return STACKSNAP_END_BAD_MEMORY;
	}
}

static bool kernel_fallback(unsigned kend)
{
	return kend == KU_END_NO_PROC || kend == KU_END_NO_MAPPING ||
	       kend == KU_END_NOT_LOADED;
}

/* The in-kernel walk of record r: frames from its pcs (a pc marked exact
 * after frame 0 was interrupted by a signal, and the frame before it is
 * the trampoline), counters, and a refresh of the process's mapping
 * table when the walk met code it did not know (at most every 100 ms per
 * process: a burst of such events reads /proc once). */
static void kernel_event(struct stacksnap_trace *tr, const struct trace_rec *r,
			 size_t raw_off, struct stacksnap_trace_event *ev)
{
	const uint64_t *pcs = (const uint64_t *)((const uint8_t *)r + raw_off +
						  ((r->raw_len + 7u) & ~7u));
	int n = r->kframes;
	uint64_t now;

	ev->kernel_pcs = pcs;
	ev->kernel_nframes = n;
	ev->kernel_end = kunwind_end__str(r->kend);
	ev->first_difference = -1;
	for (int i = 0; i < n; i++) {
		bool exact = pcs[i] & KU_PC_EXACT;

		tr->kframes[i] = (struct stacksnap_frame){
			.pc = pcs[i] & ~KU_PC_EXACT,
			.stepper = i ? STACKSNAP_STEP_TABLE : STACKSNAP_STEP_START,
			.trust = i ? STACKSNAP_TRUST_CFI : STACKSNAP_TRUST_CONTEXT,
			.flags = i && exact ? STACKSNAP_FRAME_SIGNAL : 0,
		};
		if (i && exact)
			tr->kframes[i - 1].flags |= STACKSNAP_FRAME_SIGRETURN;
	}
	tr->st.kernel_walks++;
	tr->st.kernel_complete += r->kend == KU_END_COMPLETE;
	if (!kernel_fallback(r->kend) && r->kend != KU_END_BAD_PC)
		return;
	tr->st.kernel_fallback += kernel_fallback(r->kend);
	now = clock_monotonic_ns();
	if (tr->last_refresh_pid == ev->pid && now - tr->last_refresh_ns < 100000000u)
		return;
	tr->last_refresh_pid = ev->pid;
	tr->last_refresh_ns = now;
	if (!stacksnap_procs__attach_pid(tr->procs, ev->pid))
		kernel_maps(tr, ev->pid);
}

/* BOTH mode: the in-kernel frames against the user-space walk of the
 * copy (n frames in tr->frames). */
static void compare_walks(struct stacksnap_trace *tr,
			  struct stacksnap_trace_event *ev, int n, unsigned kend)
{
	int k = ev->kernel_nframes, m = k < n ? k : n, a;

	ev->first_difference = -1;
	for (int i = 0; i < m && ev->first_difference < 0; i++)
		if (tr->kframes[i].pc != tr->frames[i].pc)
			ev->first_difference = i;
	a = ev->first_difference >= 0 ? STACKSNAP_TRACE_AGREE_DIFFER
	  : kernel_fallback(kend) ? STACKSNAP_TRACE_AGREE_FALLBACK
	  : k == n ? STACKSNAP_TRACE_AGREE_SAME
	  : k < n ? STACKSNAP_TRACE_AGREE_KERNEL_PREFIX
		  : STACKSNAP_TRACE_AGREE_USER_PREFIX;
	ev->agreement = a;
	tr->st.agreement[a]++;
}

/* BOTH mode: where the kernel stopped at something user space can go
 * past, the hybrid walk (the kernel's frames, then the copy's walk from
 * the stop registers the record carries). */
static void hybrid_walk(struct stacksnap_trace *tr, const struct trace_rec *r,
			size_t raw_off, struct stacksnap_trace_event *ev)
{
	const uint8_t *p = (const uint8_t *)r + raw_off + ((r->raw_len + 7u) & ~7u) +
			   r->kframes * 8ull;
	struct ku_end_state es;
	int k = ev->kernel_nframes - 1, c;

	ev->hybrid_nframes = -1;
	if (!(r->kflags & TRACE_KEND_STATE) || k < 0 || !ktable__can_continue(r->kend) ||
	    (r->cap.flags & STACKSNAP_CAPTURE_COMPACT)) /* (a compacted copy: not yet) */
		return;
	memcpy(&es, p, sizeof(es));
	c = ktable__continue_walk(tr->procs, tr->uw, ev->pid, ev->tid, &es, ev->stack,
				  r->cap.data_len, r->cap.stack_start, tr->hframes + k,
				  KU_MAX_FRAMES - (size_t)k, &ev->hybrid_end);
	if (c <= 0)
		return;
	memcpy(tr->hframes, tr->kframes, (size_t)k * sizeof(*tr->hframes));
	tr->hframes[k].flags |= tr->kframes[k].flags;
	ev->hybrid_frames = tr->hframes;
	ev->hybrid_nframes = k + c;
}

static int on_event(struct stacksnap_trace *tr, const struct trace_rec *r, size_t len)
{
	struct stacksnap_trace_event ev;
	size_t stack_off = sizeof(*r), raw_off;
	int n;

	raw_off = stack_off + ((r->cap.data_len + 7u) & ~7u);
	if (r->event >= tr->nevents || raw_off + r->raw_len > len ||
	    raw_off + ((r->raw_len + 7u) & ~7u) + r->kframes * 8ull +
	    (r->kflags & TRACE_KEND_STATE ? sizeof(struct ku_end_state) : 0) > len)
		return 0; /* not ours: ignore */
	memset(&ev, 0, sizeof(ev));
	ev.hybrid_nframes = -1;
	ev.event = r->event;
	ev.name = tr->events[r->event].name;
	ev.time_ns = r->time;
	ev.pid = (pid_t)r->pid;
	ev.tid = (pid_t)r->tid;
	ev.cpu = r->cpu;
	ev.comm = r->comm;
	ev.capture = &r->cap;
	ev.stack = (const uint8_t *)r + stack_off;
	ev.raw = r->raw_len ? (const uint8_t *)r + raw_off : NULL;
	ev.raw_len = r->raw_len;
	ev.record_len = len;
	if (tr->events[r->event].kind == EV_WAKEUP) {
		/* No stack: when and which thread only. */
		ev.end = STACKSNAP_END_NONE;
		ev.as = stacksnap_procs__addrspace(tr->procs, ev.pid);
		return tr->fn ? tr->fn(&ev, tr->fn_user) : 0;
	}
	if (r->kframes || (unwind_mode(tr) & KU_MODE_KERNEL))
		kernel_event(tr, r, raw_off, &ev);
	if (unwind_mode(tr) & KU_MODE_COPY) {
		uint64_t rereads = procs_rereads(tr->procs);

		n = stacksnap_procs__unwind_capture(tr->procs, tr->uw, ev.pid, &r->cap,
						    ev.stack, tr->frames,
						    tr->o.max_frames, &ev.end);
		if (procs_rereads(tr->procs) != rereads)
			exec_ranges_update(tr, ev.pid); /* a library mapped since */
		else if (tr->o.compact && !(r->cap.flags & STACKSNAP_CAPTURE_COMPACT)) {
			struct stacksnap_exec_ranges er;

			if (bpf_map_lookup_elem(bpf_map__fd(tr->proc->maps.exec_ranges),
						&(uint32_t){ r->pid }, &er))
				exec_ranges_update(tr, ev.pid);
		}
		if (n < 0) {
			n = 0;
			ev.end = STACKSNAP_END_BAD_MEMORY;
		}
		if (unwind_mode(tr) == KU_MODE_BOTH) {
			compare_walks(tr, &ev, n, r->kend);
			hybrid_walk(tr, r, raw_off, &ev);
		}
		ev.frames = tr->frames;
	} else {
		n = ev.kernel_nframes;
		ev.end = kernel_end(r->kend);
		ev.frames = tr->kframes;
	}
	ev.nframes = n;
	ev.as = stacksnap_procs__addrspace(tr->procs, ev.pid);
	tr->st.received++;
	tr->st.unwound += n > 0;
	tr->st.complete += ev.end == STACKSNAP_END_COMPLETE;
	return tr->fn ? tr->fn(&ev, tr->fn_user) : 0;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct stacksnap_trace *tr = ctx;
	const struct trace_rec *r = data;
	int rc = 0;

	if (len < sizeof(*r))
		return 0;
	tr->st.bytes += len;
	switch (r->kind) {
	case TRACE_REC_EVENT:
		rc = on_event(tr, r, len);
		break;
	case TRACE_REC_FORK:
		stacksnap_procs__fork(tr->procs, (pid_t)r->ppid, (pid_t)r->ptid,
				      (pid_t)r->pid, (pid_t)r->tid);
		if (r->pid != r->ppid) {
			kernel_maps(tr, (pid_t)r->pid);
			exec_ranges_update(tr, (pid_t)r->pid);
		}
		break;
	case TRACE_REC_EXEC:
		stacksnap_procs__comm(tr->procs, (pid_t)r->pid, (pid_t)r->tid, r->comm, true);
		/* The new image's mappings: those there now (ld.so maps the
		 * libraries later; a miss re-reads them). */
		stacksnap_procs__attach_pid(tr->procs, (pid_t)r->pid);
		kernel_maps(tr, (pid_t)r->pid);
		/* Not yet: ld.so has not mapped the libraries. The first
		 * event (sent as it is) sets them. */
		if (tr->o.compact)
			bpf_map_delete_elem(bpf_map__fd(tr->proc->maps.exec_ranges),
					    &(uint32_t){ r->pid });
		break;
	case TRACE_REC_EXIT:
		stacksnap_procs__exit(tr->procs, (pid_t)r->pid, (pid_t)r->tid);
		break;
	}
	if (rc)
		tr->fn_rc = rc;
	return rc;
}

int stacksnap_trace__poll(struct stacksnap_trace *tr, int timeout_ms,
			  stacksnap_trace_fn fn, void *user)
{
	uint64_t before;
	int r;

	if (!tr || !tr->rb)
		return fail(-EINVAL);
	before = tr->st.received;
	tr->fn = fn;
	tr->fn_user = user;
	tr->fn_rc = 0;
	r = timeout_ms ? ring_buffer__poll(tr->rb, timeout_ms) : ring_buffer__consume(tr->rb);
	tr->fn = NULL;
	if (tr->fn_rc)
		return tr->fn_rc;
	if (r < 0)
		return fail(r);
	return (int)(tr->st.received - before);
}

void stacksnap_trace__stats(const struct stacksnap_trace *tr,
			    struct stacksnap_trace_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!tr)
		return;
	*st = tr->st;
	st->rereads = procs_rereads(tr->procs);
	if (tr->kt) {
		struct ktable_stats ks;

		ktable__stats(tr->kt, &ks);
		st->table_bytes = ks.table_bytes + ks.fixed_bytes;
	}
	if (tr->proc) {
		int ncpu = libbpf_num_possible_cpus();
		uint64_t *vals = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(uint64_t));

		for (uint32_t k = 0; vals && k < TRACE_STAT_NR; k++) {
			uint64_t sum = 0;

			if (bpf_map_lookup_elem(bpf_map__fd(tr->proc->maps.stats), &k, vals))
				continue;
			for (int c = 0; c < ncpu; c++)
				sum += vals[c];
			if (k == TRACE_STAT_EMITTED)
				st->captured = sum;
			else if (k == TRACE_STAT_LOST)
				st->lost = sum;
			else if (k == TRACE_STAT_SHORT)
				st->short_stacks = sum;
		}
		free(vals);
	}
}

int stacksnap_trace__fields(struct stacksnap_trace *tr,
			    const struct stacksnap_trace_event *ev,
			    struct stacksnap_trace_field *out, size_t max)
{
	const struct trace_event_spec *e;
	const uint8_t *raw = ev ? ev->raw : NULL;
	size_t n = 0;

	if (!tr || !ev || ev->event >= tr->nevents)
		return fail(-EINVAL);
	e = &tr->events[ev->event];
	for (unsigned i = 0; raw && i < e->nfields && n < max; i++) {
		const struct tp_field *f = &e->fields[i];
		struct stacksnap_trace_field *o = &out[n];
		char *buf = tr->strbuf[n];

		if (f->offset + f->size > ev->raw_len)
			continue;
		memset(o, 0, sizeof(*o));
		o->name = f->name;
		o->size = f->size;
		o->is_signed = f->is_signed;
		o->is_pointer = f->is_pointer;
		if (f->is_data_loc && f->size == 4) {
			uint32_t loc;

			memcpy(&loc, raw + f->offset, 4);
			unsigned off = loc & 0xffff, len = loc >> 16;
			if (off < ev->raw_len) {
				if (len > ev->raw_len - off)
					len = (unsigned)(ev->raw_len - off);
				snprintf(buf, 64, "%.*s", (int)len, (const char *)raw + off);
				o->str = buf;
			}
		} else if (f->is_string) {
			snprintf(buf, 64, "%.*s", (int)f->size, (const char *)raw + f->offset);
			o->str = buf;
		} else if (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8) {
			uint64_t v = 0;

			memcpy(&v, raw + f->offset, f->size);
			if (f->is_signed && f->size < 8 && (v >> (f->size * 8 - 1)) & 1)
				v |= ~0ull << (f->size * 8);
			o->value = v;
		} else {
			continue;
		}
		n++;
	}
	return (int)n;
}

void stacksnap_trace__free(struct stacksnap_trace *tr)
{
	if (!tr)
		return;
	stacksnap_trace__stop(tr);
	ring_buffer__free(tr->rb);
	trace_sample_bpf__destroy(tr->sample);
	offcpu_bpf__destroy(tr->offcpu);
	trace_uprobe_bpf__destroy(tr->uprobe);
	trace_tp_bpf__destroy(tr->tp);
	trace_proc_bpf__destroy(tr->proc);
	free(tr->perf_fds);
	free(tr->links);
	for (size_t i = 0; i < tr->nevents; i++) {
		free(tr->events[i].name);
		free(tr->events[i].target);
		free(tr->events[i].func);
	}
	free(tr->events);
	free(tr->frames);
	free(tr->kframes);
	free(tr->hframes);
	ktable__free(tr->kt);
	stacksnap_unwinder__free(tr->uw);
	stacksnap_procs__free(tr->procs);
	free(tr);
}

/* ---- listing ---- */

struct list_state {
	int (*fn)(const char *name, void *user);
	void *user;
};

static int list_tp_cb(const char *cat, const char *name, void *u)
{
	struct list_state *ls = u;
	char full[256];

	snprintf(full, sizeof(full), "%s:%s", cat, name);
	return ls->fn(full, ls->user);
}

struct list_funcs {
	const char *glob;
	int (*fn)(const char *name, void *user);
	void *user;
	int count;
};

static int list_func_cb(const char *name, const char *plain, uint64_t off, void *u)
{
	struct list_funcs *lf = u;

	(void)off;
	if (fnmatch(lf->glob, plain, 0) && fnmatch(lf->glob, name, 0))
		return 0;
	lf->count++;
	return lf->fn(plain, lf->user);
}

/* "u:FILE[:GLOB]": the functions of FILE a uprobe can name. */
static int list_functions(struct stacksnap_ctx *ctx, const char *pattern,
			  int (*fn)(const char *name, void *user), void *user)
{
	struct stacksnap_trace tmp = { .ctx = ctx };
	const char *rest = strchr(pattern, ':') + 1, *colon = strchr(rest, ':');
	char file[PATH_MAX], path[PATH_MAX];
	struct list_funcs lf = { colon && colon[1] ? colon + 1 : "*", fn, user, 0 };
	int r;

	snprintf(file, sizeof(file), "%.*s", (int)(colon ? colon - rest : (long)strlen(rest)), rest);
	if (resolve_binary(&tmp, file, path, sizeof(path))) {
		log_err(&ctx->log, "no file or library '%s'", file);
		return fail(-ENOENT);
	}
	r = elf_functions(path, list_func_cb, &lf);
	if (r < 0) {
		log_err(&ctx->log, "%s is not an ELF file", path);
		return fail(r);
	}
	return lf.count;
}

int stacksnap_trace__list(struct stacksnap_ctx *ctx, const char *pattern,
			  int (*fn)(const char *name, void *user), void *user)
{
	struct list_state ls = { fn, user };
	struct bpf_env env;
	char cat[128] = "*";
	const char *name = "*";
	int r;

	if (!ctx || !fn)
		return fail(-EINVAL);
	if ((r = bpf_env__prepare(&env, &ctx->log)))
		return r;
	if (pattern && (!strncmp(pattern, "u:", 2) || !strncmp(pattern, "ur:", 3)))
		return list_functions(ctx, pattern, fn, user);
	if (pattern && *pattern) {
		const char *colon = strchr(pattern, ':');

		if (colon) {
			snprintf(cat, sizeof(cat), "%.*s", (int)(colon - pattern), pattern);
			name = colon[1] ? colon + 1 : "*";
		} else {
			/* A word alone matches either part. */
			char buf[160];

			snprintf(buf, sizeof(buf), "*%s*", pattern);
			r = tp_each("*", buf, list_tp_cb, &ls);
			if (r < 0)
				return fail(r);
			return r;
		}
	}
	r = tp_each(cat, name, list_tp_cb, &ls);
	return r < 0 ? fail(r) : r;
}
