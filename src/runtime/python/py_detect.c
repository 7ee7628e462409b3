/* py_detect.c - finds a CPython interpreter in a process: _PyRuntime in
 * the dynamic symbols of the executable or of libpython3.X.so, the version
 * from the image's own Py_Version, and the layout for it. */
#define _GNU_SOURCE
#include "runtime/python/python.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/maps_line.h"
#include "elf/elf_image.h"
#include "mem/mem.h"

/* The symbols detection wants, looked up in one pass over the image's
 * symbol tables. */
struct py_syms {
	GElf_Sym runtime, version, eval, code_type;
	bool has_runtime, has_version, has_eval, has_code_type;
	bool old_tstate;	/* _PyThreadState_Current: CPython <= 3.6 */
	bool initialize;	/* Py_Initialize */
	bool debug;		/* _Py_RefTotal or _Py_NegativeRefcount */
	bool trace_refs;	/* _Py_PrintReferenceAddresses */
};

static void scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			struct py_syms *s)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data && i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    !(name = elf_strptr(elf, sh->sh_link, sym.st_name)))
			continue;
		if (name[0] == '_' && name[1] == 'P' && !strcmp(name, "_PyRuntime")) {
			s->runtime = sym;
			s->has_runtime = true;
		} else if (!strcmp(name, "Py_Version")) {
			s->version = sym;
			s->has_version = true;
		} else if (!strcmp(name, "PyCode_Type")) {
			s->code_type = sym;
			s->has_code_type = true;
		} else if (!strcmp(name, "_PyEval_EvalFrameDefault")) {
			s->eval = sym;
			s->has_eval = true;
		} else if (!strcmp(name, "_Py_RefTotal") ||
			   !strcmp(name, "_Py_NegativeRefcount")) {
			s->debug = true;
		} else if (!strcmp(name, "_Py_PrintReferenceAddresses")) {
			s->trace_refs = true;
		} else if (!strcmp(name, "_PyThreadState_Current")) {
			s->old_tstate = true;
		} else if (!strcmp(name, "Py_Initialize")) {
			s->initialize = true;
		}
	}
}

/* .dynsym first (an interpreter exports _PyRuntime there: extension
 * modules link against it), then, only for an image named like one
 * (python3.X, libpython3.X.so), .symtab: every dump of any process looks
 * at its executable, and a large .symtab costs milliseconds to scan. */
static void find_syms(const struct elf_image *img, struct py_syms *s)
{
	const char *base = strrchr(img->path, '/');
	int passes = strstr(base ? base + 1 : img->path, "python") ? 2 : 1;

	for (int pass = 0; pass < passes; pass++) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;
		Elf64_Word want = pass == 0 ? SHT_DYNSYM : SHT_SYMTAB;

		while ((scn = elf_nextscn(img->elf, scn)))
			if (gelf_getshdr(scn, &sh) && sh.sh_type == want)
				scan_symtab(img->elf, scn, &sh, s);
		if (s->has_runtime && s->has_version && s->has_eval &&
		    s->has_code_type)
			break;
	}
}

/* The bytes of a link-time address range from the file itself. */
static int file_bytes(const struct elf_image *img, uint64_t vaddr,
		      void *buf, size_t len)
{
	for (size_t i = 0; i < img->nsegs; i++) {
		const struct elf_segment *sg = &img->segs[i];

		if (vaddr >= sg->vaddr && vaddr - sg->vaddr + len <= sg->filesz) {
			uint64_t off = sg->offset + (vaddr - sg->vaddr);

			if (off + len > img->size)
				return -EINVAL;
			memcpy(buf, img->bytes + off, len);
			return 0;
		}
	}
	return -ENOENT;
}

/* "python3.X", "libpython3.X.so", "python3.Xd": the version a file name
 * says, for interpreters older than Py_Version (3.11). */
static bool version_from_name(const char *path, unsigned *major,
			      unsigned *minor)
{
	const char *base = strrchr(path, '/');
	const char *p;

	base = base ? base + 1 : path;
	p = strstr(base, "python");
	if (!p)
		return false;
	return sscanf(p, "python%u.%u", major, minor) == 2 && *major >= 2 &&
	       *major <= 3 && *minor < 100;
}

/* The micro version from the PY_VERSION string "M.N.P" the image carries
 * as read-only data (Py_GetVersion's; the linker may share it as the tail
 * of a longer string, such as the build directory's ".../Python-3.9.18"):
 * the first NUL-terminated "major.minor.P", not inside a longer number,
 * in a read-only segment. Returns whether one was found. */
static bool version_from_string(const struct elf_image *img, unsigned major,
				unsigned minor, unsigned *micro)
{
	char want[16];
	int wl = snprintf(want, sizeof(want), "%u.%u.", major, minor);

	for (size_t i = 0; i < img->nsegs; i++) {
		const struct elf_segment *sg = &img->segs[i];
		const uint8_t *b, *end, *p;

		if ((sg->flags & (PF_W | PF_X)) || sg->offset > img->size ||
		    sg->filesz > img->size - sg->offset)
			continue;
		b = img->bytes + sg->offset;
		end = b + sg->filesz;
		for (p = b; (p = memmem(p, (size_t)(end - p), want, (size_t)wl));
		     p++) {
			const uint8_t *q = p + wl;
			unsigned v = 0, nd = 0;

			if (p > b && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.'))
				continue;
			while (q < end && *q >= '0' && *q <= '9' && nd < 3)
				v = v * 10 + (unsigned)(*q++ - '0'), nd++;
			if (!nd || nd > 2)
				continue;
			/* a release level (a1, b2, rc1) and a '+' may follow */
			while (q < end && q - p < 24 && *q &&
			       ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') ||
				*q == '+'))
				q++;
			if (q < end && *q == '\0') {
				*micro = v;
				return true;
			}
		}
	}
	return false;
}

/* The version of an interpreter without Py_Version (before 3.11): from the
 * file name, the micro from its PY_VERSION string; the note says where it
 * came from. */
static void old_version(const struct elf_image *img, const char *path,
			struct py_runtime *rt)
{
	if (version_from_name(path, &rt->major, &rt->minor)) {
		rt->version_from_path = true;
		rt->micro_known = version_from_string(img, rt->major, rt->minor,
						      &rt->micro);
	}
}

/* "Python 3.9.18" or "Python 3.9" (micro unknown), for the notes. */
static const char *version_str(const struct py_runtime *rt, char *buf,
			       size_t len)
{
	if (!rt->major)
		snprintf(buf, len, "Python (version unknown)");
	else if (rt->micro_known)
		snprintf(buf, len, "Python %u.%u.%u", rt->major, rt->minor,
			 rt->micro);
	else
		snprintf(buf, len, "Python %u.%u", rt->major, rt->minor);
	return buf;
}

/* What the note adds when the micro version is not the one the layout
 * was measured and tested on. */
static const char *untested(const struct py_runtime *rt, char *buf,
			    size_t len)
{
	const struct py_layout *l = rt->layout;

	if (!l || !l->tested_micro || (rt->micro_known &&
				       rt->micro == l->tested_micro))
		return "";
	snprintf(buf, len, "; untested: measured on %u.%u.%u",
		 l->major, l->minor, l->tested_micro);
	return buf;
}

int py_runtime__detect_elf(const struct elf_image *img, const char *path,
			   uint64_t bias, struct py_runtime *rt)
{
	struct py_syms s = { 0 };

	memset(rt, 0, sizeof(*rt));
	find_syms(img, &s);
	if (!s.has_runtime && s.old_tstate && s.initialize) {
		/* CPython 3.6 and older: no _PyRuntime, no layout here. */
		char v[48];

		rt->found = true;
		snprintf(rt->path, sizeof(rt->path), "%s", path);
		old_version(img, path, rt);
		snprintf(rt->note, sizeof(rt->note),
			 "%s (before 3.7, no _PyRuntime): no layout, native "
			 "frames only", version_str(rt, v, sizeof(v)));
		return 0;
	}
	if (!s.has_runtime)
		return -ENOENT;
	rt->found = true;
	snprintf(rt->path, sizeof(rt->path), "%s", path);
	rt->runtime_addr = s.runtime.st_value + bias;
	rt->debug = s.debug;
	rt->trace_refs = s.trace_refs;
	if (s.has_code_type)
		rt->code_type = s.code_type.st_value + bias;
	if (s.has_eval) {
		rt->eval_start = s.eval.st_value + bias;
		rt->eval_end = rt->eval_start + (s.eval.st_size ? s.eval.st_size : 1);
	}

	/* Py_Version (3.11+) is PY_VERSION_HEX as read-only data of the
	   image: the binary's own statement, right whatever the file is
	   called. Older interpreters have only their file name to go by, and
	   no layout here either: the name serves only to say which version
	   is unknown. */
	uint32_t hex = 0;
	if (s.has_version && file_bytes(img, s.version.st_value, &hex, 4) == 0 &&
	    (hex >> 24) == 3) {
		rt->major = hex >> 24;
		rt->minor = (hex >> 16) & 0xff;
		rt->micro = (hex >> 8) & 0xff;
		rt->micro_known = true;
	} else {
		old_version(img, path, rt);
	}

	rt->layout = py_layout__find(rt->major, rt->minor, rt->debug,
				     rt->trace_refs);
	if (rt->layout && rt->layout->ts_native_thread_id == PY_OFF_NONE)
		rt->pthread_tid = GLIBC_PTHREAD_TID;
	char v[48], u[48];
	version_str(rt, v, sizeof(v));
	if (!rt->layout && !(rt->major == 3 && rt->minor >= 13))
		snprintf(rt->note, sizeof(rt->note),
			 "%s%s: layout unknown, native frames only", v,
			 rt->debug ? " debug build" : "");
	else if (rt->layout && rt->version_from_path)
		snprintf(rt->note, sizeof(rt->note),
			 "%s: layout %s (version from the file name%s)%s", v,
			 rt->layout->name,
			 rt->micro_known ? " and its PY_VERSION string" : "",
			 untested(rt, u, sizeof(u)));
	else if (!rt->layout)
		snprintf(rt->note, sizeof(rt->note),
			 "Python %u.%u: layout to be read from _Py_DebugOffsets",
			 rt->major, rt->minor);
	else
		snprintf(rt->note, sizeof(rt->note), "Python %u.%u.%u: layout %s",
			 rt->major, rt->minor, rt->micro, rt->layout->name);
	return 0;
}

int py_runtime__detect_image(const char *path, uint64_t map_start,
			     uint64_t map_offset, const struct log_sink *log,
			     struct py_runtime *rt)
{
	struct elf_image *img = NULL;
	uint64_t bias;
	int err;

	memset(rt, 0, sizeof(*rt));
	err = elf_image__open(path, log, &img);
	if (err)
		return err;
	err = elf_image__load_bias(img, map_start, map_offset, 0, &bias);
	if (!err)
		err = py_runtime__detect_elf(img, path, bias, rt);
	elf_image__free(img);
	return err;
}

bool py_image_candidate(const char *path, const char *exe)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return (exe && !strcmp(path, exe)) || strncmp(base, "libpython", 9) == 0;
}

int py_runtime__detect_pid(pid_t pid, const struct log_sink *log,
			   struct py_runtime *rt)
{
	char maps_path[64], exe_link[64], exe[4096], line[4096 + 256];
	char tried[4][4096];
	unsigned ntried = 0;
	ssize_t n;
	FILE *f;

	memset(rt, 0, sizeof(*rt));
	snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", (int)pid);
	n = readlink(exe_link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)pid);
	f = fopen(maps_path, "re");
	if (!f)
		return -errno;
	/* The first mapping of a file is its lowest: the one load_bias
	   wants. Only the executable (an embedding links the interpreter
	   statically) and libpython are candidates: opening every library
	   of a large process would cost more than the capture. */
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;
		bool seen = false;

		if (maps_line__parse(line, &ml) || !ml.path || ml.path[0] != '/')
			continue;
		if (!py_image_candidate(ml.path, exe))
			continue;
		for (unsigned i = 0; i < ntried; i++)
			seen |= !strcmp(tried[i], ml.path);
		if (seen || ntried == 4)
			continue;
		snprintf(tried[ntried++], sizeof(tried[0]), "%s", ml.path);
		/* /proc/PID/root keeps the target's view of the file (other
		   mount namespaces). */
		char full[4096 + 32];
		snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, ml.path);
		int err = py_runtime__detect_image(full, ml.start, ml.offset,
						   log, rt);
		if (err == 0) {
			snprintf(rt->path, sizeof(rt->path), "%s", ml.path);
			break;
		}
		memset(rt, 0, sizeof(*rt));
	}
	fclose(f);
	return 0;
}

int py_runtime__read_layout(struct py_runtime *rt, struct stacksnap_mem *mem)
{
	uint8_t bytes[PY_DEBUG_OFFSETS_SIZE];
	int err;

	if (!rt->found || rt->layout)
		return 0;
	if (!(rt->major == 3 && rt->minor >= 13))
		return -ENOTSUP;
	err = mem_read(mem, rt->runtime_addr, bytes, sizeof(bytes));
	if (!err)
		err = py_layout__from_debug_offsets(bytes, sizeof(bytes), &rt->own);
	if (err) {
		snprintf(rt->note, sizeof(rt->note),
			 "Python %u.%u: layout unknown, native frames only",
			 rt->major, rt->minor);
		return err;
	}
	rt->layout = &rt->own;
	snprintf(rt->note, sizeof(rt->note), "Python %u.%u.%u: layout %s",
		 rt->major, rt->minor, rt->micro, rt->own.name);
	return 0;
}
