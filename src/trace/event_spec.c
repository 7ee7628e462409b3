/* event_spec.c - the events a trace is asked for, resolved before it
 * starts: tracepoints by tracefs (their format files read for the fields
 * to copy, globs expanded), uprobes by file (a library by its short name)
 * and function symbol, sampling and off-CPU events. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "base/vec.h"
#include "bpf/bpf_env.h"
#include "symbolize/symbolize.h"
#include "trace/trace_internal.h"

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
int trace_tracepoints_each(const char *cat_glob, const char *name_glob,
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

int trace_resolve_binary(pid_t pid_hint, const char *name, char *out,
			 size_t outlen)
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
	if (pid_hint > 0) {
		FILE *f;

		snprintf(line, sizeof(line), "/proc/%d/maps", (int)pid_hint);
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
int trace_elf_functions(const char *path,
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
	err = trace_resolve_binary(tr->o.pid_hint, file, path, sizeof(path));
	if (err) {
		log_err(LOG(tr), "event '%s': no file or library '%s'%s", spec, file,
			strchr(file, '/') ? "" : " (give its path, or -p a process "
			"that has it loaded)");
		return -ENOENT;
	}
	/* By symbol name, or a C++ function by its name without
	 * parameters ("ns::f" for _ZN2ns1fEv). */
	struct func_lookup fl = { .want = colon + 1 };
	err = trace_elf_functions(path, func_match, &fl);
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

	if (!tr || !spec || tr->bpf.proc)
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
			r = trace_tracepoints_each(cat, colon + 1, tp_add_cb, tr);
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

	if (!tr || !hz || hz > 100000 || tr->bpf.proc)
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
	if (!tr || tr->bpf.proc)
		return fail(-EINVAL);
	for (size_t i = 0; i < tr->nevents; i++)
		if (tr->events[i].kind == EV_OFF_CPU)
			return fail(-EEXIST);
	if (!event_new(tr, EV_OFF_CPU, "off-cpu") || !event_new(tr, EV_WAKEUP, "wakeup"))
		return fail(-ENOMEM);
	return 2;
}
