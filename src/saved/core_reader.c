/* core_reader.c - ELF core dumps as saved captures (stacksnap_saved__open_core):
 * threads and registers from NT_PRSTATUS, memory from the PT_LOAD
 * segments, mappings from NT_FILE, the executable's entry and the vDSO
 * from NT_AUXV, build-ids from the ELF headers the kernel (or gcore)
 * dumped at the start of each file mapping. Everything is read through
 * the bounds-checked cursor; errors name the file offset. */
#define _GNU_SOURCE
#include "saved/readers.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/user.h>
#include <unistd.h>

#include "addrspace/module.h"
#include "base/cursor.h"
#include "base/log.h"
#include "base/opts.h"
#include "base/vec.h"
#include "elf/elf_image.h"
#include "runtime/php/php.h"
#include "runtime/ruby/ruby.h"
#include "runtime/v8/v8_layout.h"
#include "saved/saved.h"

#define NT_FILE_TYPE 0x46494c45	/* "FILE" */
#define PRSTATUS_SIZE 336	/* struct elf_prstatus on x86_64 */
#define PRSTATUS_PID 32
#define PRSTATUS_REGS 112	/* pr_reg: struct user_regs_struct */
#define PRPSINFO_SNAME 1
#define PRPSINFO_PID 24
#define PRPSINFO_FNAME 40
#define PRPSINFO_PSARGS 56
#define PRPSINFO_SIZE 136
#define MAX_SEGMENTS (1u << 20) /* more program headers than Linux writes */
#define MAX_NOTE_ENTRIES (1u << 20)

/* A PT_LOAD of the core. Invariant: [offset, offset + filesz) lies inside
 * the file (checked when read); bytes beyond filesz up to memsz were not
 * dumped. */
struct core_seg {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;
};

/* One NT_FILE entry. path points into the core's bytes (NUL-terminated
 * there, checked). */
struct core_file_map {
	uint64_t start, end, offset;
	const char *path;
};

/* Reader state kept for the memory source. Invariant: segs sorted by
 * vaddr. */
struct core {
	const uint8_t *bytes;
	size_t len;
	struct core_seg *segs;
	size_t nsegs, segs_cap;
};

static void core_free(void *core)
{
	struct core *c = core;

	if (!c)
		return;
	free(c->segs);
	free(c);
}

const struct saved_ops core_reader_ops = {
	.name = "core dump",
	.free = core_free,
};

static const struct core_seg *seg_at(const struct core *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nsegs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct core_seg *s = &c->segs[mid];

		if (addr < s->vaddr)
			hi = mid;
		else if (addr - s->vaddr >= s->memsz)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

/* The memory source: dumped bytes of the segments; what was not dumped
 * (beyond filesz) or is in none reads as -EFAULT. */
static int core_read(void *user, uint64_t addr, void *buf, size_t n)
{
	const struct core *c = user;
	uint8_t *out = buf;

	while (n) {
		const struct core_seg *s = seg_at(c, addr);
		uint64_t in, chunk;

		if (!s)
			return -EFAULT;
		in = addr - s->vaddr;
		if (in >= s->filesz)
			return -EFAULT;
		chunk = s->filesz - in < n ? s->filesz - in : n;
		memcpy(out, c->bytes + s->offset + in, chunk);
		out += chunk;
		addr += chunk;
		n -= chunk;
	}
	return 0;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct core_seg *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

#define BAD SAVED_BAD

/* ELF header and program headers: PT_LOADs into c->segs, PT_NOTEs
 * returned as (offset, size) pairs in *notes. */
static int read_headers(struct stacksnap_saved *s, struct core *c,
			uint64_t (**notes)[2], size_t *nnotes)
{
	struct cursor cur;
	size_t notes_cap = 0;

	cursor_init(&cur, c->bytes, c->len);
	const uint8_t *id = cursor_take(&cur, EI_NIDENT);
	if (!id || memcmp(id, ELFMAG, SELFMAG)) {
		BAD(s, 0, "not an ELF file");
		return -EINVAL;
	}
	if (id[EI_CLASS] != ELFCLASS64 || id[EI_DATA] != ELFDATA2LSB) {
		BAD(s, EI_CLASS, "not a 64-bit little-endian ELF file");
		return -EINVAL;
	}
	uint16_t type = cursor_u16(&cur), machine = cursor_u16(&cur);
	cursor_skip(&cur, 4 + 8); /* e_version, e_entry */
	uint64_t phoff = cursor_u64(&cur);
	uint64_t shoff = cursor_u64(&cur);
	cursor_skip(&cur, 4 + 2); /* e_flags, e_ehsize */
	uint16_t phentsize = cursor_u16(&cur);
	uint32_t phnum = cursor_u16(&cur);
	if (cur.bad) {
		BAD(s, c->len, "ELF header truncated");
		return -EINVAL;
	}
	if (type != ET_CORE) {
		BAD(s, 16, "not a core dump (ELF type %u; give the core file, "
			   "and the executable with --exe)", type);
		return -EINVAL;
	}
	if (machine != EM_X86_64) {
		BAD(s, 18, "machine %u is not x86_64", machine);
		return -EINVAL;
	}
	if (phentsize != sizeof(Elf64_Phdr)) {
		BAD(s, 54, "program header size %u, want %zu", phentsize,
		    sizeof(Elf64_Phdr));
		return -EINVAL;
	}
	if (phnum == PN_XNUM) { /* the real count is in section 0's sh_info */
		struct cursor sc;

		cursor_init(&sc, c->bytes, c->len);
		if (shoff > c->len || !cursor_skip(&sc, (size_t)shoff + 44)) {
			BAD(s, 40, "section header 0 (holding the program header "
				   "count) outside the file");
			return -EINVAL;
		}
		phnum = cursor_u32(&sc);
	}
	if (phnum > MAX_SEGMENTS || phoff > c->len ||
	    (uint64_t)phnum * phentsize > c->len - phoff) {
		BAD(s, 32, "%u program headers at offset %" PRIu64
			   " do not fit the file (truncated core?)", phnum, phoff);
		return -EINVAL;
	}
	cursor_init(&cur, c->bytes + phoff, (size_t)phnum * phentsize);
	for (uint32_t i = 0; i < phnum; i++) {
		size_t at = (size_t)phoff + cursor_offset(&cur);
		uint32_t pt = cursor_u32(&cur), flags = cursor_u32(&cur);
		uint64_t off = cursor_u64(&cur), vaddr = cursor_u64(&cur);
		cursor_skip(&cur, 8); /* p_paddr */
		uint64_t filesz = cursor_u64(&cur), memsz = cursor_u64(&cur);
		cursor_skip(&cur, 8); /* p_align */

		if ((pt == PT_LOAD || pt == PT_NOTE) &&
		    (off > c->len || filesz > c->len - off)) {
			/* A core cut short (disk full, ulimit): keep what is
			 * there, say so. */
			log_warn(&s->ctx->log, "%s: offset %zu: segment %u (%#" PRIx64
				 ") extends past the end of the file: the core is "
				 "truncated; its missing bytes read as unavailable",
				 s->path, at, i, vaddr);
			filesz = off > c->len ? 0 : c->len - off;
		}
		if (pt == PT_LOAD && memsz) {
			struct core_seg *sg = VEC_PUSH(c->segs, c->nsegs, c->segs_cap);

			if (!sg)
				return -ENOMEM;
			*sg = (struct core_seg){ vaddr, memsz, off,
						 filesz < memsz ? filesz : memsz, flags };
		} else if (pt == PT_NOTE && filesz) {
			uint64_t (*n)[2] = VEC_PUSH(*notes, *nnotes, notes_cap);

			if (!n)
				return -ENOMEM;
			(*n)[0] = off;
			(*n)[1] = filesz;
		}
	}
	if (c->nsegs)
		qsort(c->segs, c->nsegs, sizeof(*c->segs), seg_cmp);
	return 0;
}

/* What the notes say. */
struct core_notes {
	struct core_file_map *files;
	size_t nfiles, files_cap;
	uint64_t entry, vdso;	/* from NT_AUXV; 0 when absent */
	char fname[17];
	char psargs[81];
	char sname;
	pid_t pid;
};

static int read_prstatus(struct stacksnap_saved *s, const uint8_t *d,
			 size_t len, size_t at, size_t *cap)
{
	struct user_regs_struct u;
	struct stacksnap_thread *th;
	int32_t tid;

	if (len < PRSTATUS_REGS + sizeof(u)) {
		BAD(s, at, "NT_PRSTATUS of %zu bytes, want %d", len, PRSTATUS_SIZE);
		return -EINVAL;
	}
	th = VEC_PUSH(s->threads, s->n, *cap);
	if (!th)
		return -ENOMEM;
	memset(th, 0, sizeof(*th));
	memcpy(&tid, d + PRSTATUS_PID, 4);
	/* pr_reg is the kernel's user_regs_struct: the ptrace layout. */
	memcpy(&u, d + PRSTATUS_REGS, sizeof(u));
	th->tid = tid;
	stacksnap_regs__from_user_regs(&th->regs, &u);
	return 0;
}

static int read_nt_file(struct stacksnap_saved *s, struct core_notes *cn,
			const uint8_t *d, size_t len, size_t at)
{
	struct cursor c;
	uint64_t count, page;
	const uint8_t *names;
	size_t names_len;

	cursor_init(&c, d, len);
	count = cursor_u64(&c);
	page = cursor_u64(&c);
	if (c.bad || count > MAX_NOTE_ENTRIES || count > cursor_left(&c) / 24 ||
	    !page || (page & (page - 1))) {
		BAD(s, at, "NT_FILE note: %s", c.bad ? "truncated"
			   : !page || (page & (page - 1)) ? "bad page size"
							  : "entry count does not fit");
		return -EINVAL;
	}
	names = d + 16 + count * 24;
	names_len = len - 16 - (size_t)count * 24;
	for (uint64_t i = 0; i < count; i++) {
		struct core_file_map *f = VEC_PUSH(cn->files, cn->nfiles, cn->files_cap);
		const uint8_t *nul = memchr(names, 0, names_len);

		if (!f)
			return -ENOMEM;
		f->start = cursor_u64(&c);
		f->end = cursor_u64(&c);
		f->offset = cursor_u64(&c) * page;
		if (!nul || f->end <= f->start) {
			BAD(s, at + 16 + (size_t)i * 24, "NT_FILE entry %" PRIu64 ": %s",
			    i, !nul ? "its file name is missing" : "end not above start");
			return -EINVAL;
		}
		f->path = (const char *)names;
		names_len -= (size_t)(nul + 1 - names);
		names = nul + 1;
	}
	return 0;
}

static int read_notes(struct stacksnap_saved *s, struct core *c,
		      uint64_t (*notes)[2], size_t nnotes, struct core_notes *cn)
{
	size_t threads_cap = 0;

	for (size_t k = 0; k < nnotes; k++) {
		struct cursor cur;

		cursor_init(&cur, c->bytes + notes[k][0], (size_t)notes[k][1]);
		while (cursor_left(&cur) >= 12) {
			size_t at = (size_t)notes[k][0] + cursor_offset(&cur);
			uint32_t namesz = cursor_u32(&cur), descsz = cursor_u32(&cur);
			uint32_t type = cursor_u32(&cur);
			const uint8_t *name = cursor_take(&cur, ((size_t)namesz + 3) & ~(size_t)3);
			const uint8_t *desc = cursor_take(&cur, ((size_t)descsz + 3) & ~(size_t)3);
			int err = 0;

			if (!name || !desc) {
				BAD(s, at, "note truncated (name %u, descriptor %u bytes)",
				    namesz, descsz);
				return -EINVAL;
			}
			/* Linux names its notes "CORE" (and "LINUX" for
			 * register sets we do not need). */
			if (namesz != 5 || memcmp(name, "CORE", 5))
				continue;
			size_t dat = at + 12 + (((size_t)namesz + 3) & ~(size_t)3);
			if (type == NT_PRSTATUS) {
				err = read_prstatus(s, desc, descsz, dat, &threads_cap);
			} else if (type == NT_PRPSINFO && descsz >= PRPSINFO_SIZE) {
				cn->sname = (char)desc[PRPSINFO_SNAME];
				memcpy(&cn->pid, desc + PRPSINFO_PID, 4);
				memcpy(cn->fname, desc + PRPSINFO_FNAME, 16);
				memcpy(cn->psargs, desc + PRPSINFO_PSARGS, 80);
			} else if (type == NT_AUXV) {
				for (size_t i = 0; i + 16 <= descsz; i += 16) {
					uint64_t t, v;

					memcpy(&t, desc + i, 8);
					memcpy(&v, desc + i + 8, 8);
					if (t == AT_ENTRY)
						cn->entry = v;
					else if (t == AT_SYSINFO_EHDR)
						cn->vdso = v;
				}
			} else if (type == NT_FILE_TYPE) {
				err = read_nt_file(s, cn, desc, descsz, dat);
			}
			if (err)
				return err;
		}
	}
	if (!s->n) {
		BAD(s, 0, "no NT_PRSTATUS note: the core has no threads");
		return -EINVAL;
	}
	return 0;
}

/* The build-id of the ELF image whose headers are at base in the core's
 * memory (the kernel dumps the first page of every file mapping that
 * starts at offset 0, for this). Returns its length, 0 when unknown. */
static size_t build_id_at(const struct core *c, uint64_t base, uint8_t *out)
{
	Elf64_Ehdr eh;

	if (core_read((void *)c, base, &eh, sizeof(eh)) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum > 256)
		return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		uint8_t notes[1024];

		if (core_read((void *)c, base + eh.e_phoff + i * sizeof(ph), &ph, sizeof(ph)))
			return 0;
		if (ph.p_type != PT_NOTE || ph.p_filesz > sizeof(notes))
			continue;
		/* p_offset is where the note is in the file, and the first
		 * mapping maps the file from offset 0. */
		if (core_read((void *)c, base + ph.p_offset, notes, ph.p_filesz))
			continue;
		struct cursor cur;
		cursor_init(&cur, notes, ph.p_filesz);
		while (cursor_left(&cur) >= 12) {
			uint32_t namesz = cursor_u32(&cur), descsz = cursor_u32(&cur);
			uint32_t type = cursor_u32(&cur);
			const uint8_t *name = cursor_take(&cur, ((size_t)namesz + 3) & ~(size_t)3);
			const uint8_t *desc = cursor_take(&cur, ((size_t)descsz + 3) & ~(size_t)3);

			if (!name || !desc)
				break;
			if (type == NT_GNU_BUILD_ID && namesz == 4 &&
			    !memcmp(name, "GNU", 4) && descsz && descsz <= ELF_BUILD_ID_MAX) {
				memcpy(out, desc, descsz);
				return descsz;
			}
		}
	}
	return 0;
}

static uint32_t prot_of(const struct core_seg *sg)
{
	return (sg->flags & PF_R ? PROT_READ : 0) | (sg->flags & PF_W ? PROT_WRITE : 0) |
	       (sg->flags & PF_X ? PROT_EXEC : 0);
}

/* Whether path (under the context's sysroot) is a file that does not
 * open as an ELF file does: a data file the program mapped (a locale's
 * LC_CTYPE, gconv-modules.cache), not code, and not worth a warning. A
 * file that cannot be opened is not judged here. */
static bool file_not_elf(const struct stacksnap_saved *s, const char *path)
{
	char full[4096 + 256];
	unsigned char magic[SELFMAG];
	ssize_t n;
	int fd;

	snprintf(full, sizeof(full), "%s%s", s->ctx->sysroot ? s->ctx->sysroot : "", path);
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = pread(fd, magic, sizeof(magic), 0);
	close(fd);
	return n >= 0 && (n < SELFMAG || memcmp(magic, ELFMAG, SELFMAG) != 0);
}

/* Executable mappings: NT_FILE entries whose segment is executable (with
 * the build-id of their file's first mapping) — or, where the core has no
 * segment for them (gcore leaves read-only file mappings out), whose
 * file's PT_LOAD at their offset is (a file that is not ELF is data); the vDSO from the core's memory; and
 * executable segments of no file (JIT) as anonymous code. */
static int add_mappings(struct stacksnap_saved *s, struct core *c,
			const struct core_notes *cn, const char *exe)
{
	const char *exe_path = NULL;
	int err;

	/* The executable is the file mapping holding the entry point. */
	for (size_t i = 0; cn->entry && i < cn->nfiles; i++)
		if (cn->entry >= cn->files[i].start && cn->entry < cn->files[i].end)
			exe_path = cn->files[i].path;
	for (size_t i = 0; i < cn->nfiles; i++) {
		const struct core_file_map *f = &cn->files[i];
		const struct core_seg *sg = seg_at(c, f->start);
		STACKSNAP_OPTS(stacksnap_mapping, mp, .start = f->start, .end = f->end,
			       .offset = f->offset, .prot = PROT_READ | PROT_EXEC);
		uint8_t bid[ELF_BUILD_ID_MAX];
		bool known = sg && sg->vaddr == f->start;

		if (known && !(sg->flags & PF_X))
			continue;
		mp.path = exe && f->path == exe_path ? exe : f->path;
		/* No segment to say (gcore): the file's PT_LOADs will, if it
		   is an ELF file. */
		if (!known && file_not_elf(s, mp.path))
			continue;
		/* The file's first mapping has its ELF headers. */
		for (size_t k = 0; k < cn->nfiles; k++)
			if (!strcmp(cn->files[k].path, f->path) && cn->files[k].offset == 0) {
				mp.build_id_len = build_id_at(c, cn->files[k].start, bid);
				mp.build_id = mp.build_id_len ? bid : NULL;
				break;
			}
		if ((err = saved__add_mapping(s, &mp, !known)))
			return err;
	}
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct core_seg *sg = &c->segs[i];
		STACKSNAP_OPTS(stacksnap_mapping, mp, .start = sg->vaddr,
			       .end = sg->vaddr + sg->memsz, .prot = prot_of(sg));
		bool in_file = false;

		if (!(sg->flags & PF_X) || mp.end <= mp.start)
			continue;
		for (size_t k = 0; k < cn->nfiles && !in_file; k++)
			in_file = cn->files[k].start <= sg->vaddr && sg->vaddr < cn->files[k].end;
		if (in_file)
			continue;
		if (cn->vdso && sg->vaddr == cn->vdso && sg->filesz == sg->memsz) {
			mp.path = "[vdso]";
			err = saved__add_image(s, &mp, c->bytes + sg->offset,
					       (size_t)sg->filesz, "[vdso]");
		} else {
			if (cn->vdso && sg->vaddr == cn->vdso)
				log_warn(&s->ctx->log, "%s: the vDSO was not dumped; "
					 "its frames stay addresses", s->path);
			err = saved__add_mapping(s, &mp, false);
		}
		if (err)
			return err;
	}
	return 0;
}

/* Each thread's stack: the dumped bytes of the segment holding its rsp, as
 * the copy the unwinder reads first; the rest of memory is the fallback. */
static void point_stacks(struct stacksnap_saved *s, const struct core *c,
			 const struct core_notes *cn)
{
	for (size_t i = 0; i < s->n; i++) {
		struct stacksnap_thread *th = &s->threads[i];
		const struct core_seg *sg = seg_at(c, th->regs.regs[STACKSNAP_REG_RSP]);

		if (th->tid == cn->pid || s->n == 1) {
			memcpy(th->name, cn->fname, sizeof(th->name) - 1);
			th->state = cn->sname;
		}
		if (!sg || !sg->filesz) {
			th->error = STACKSNAP_THREAD_NO_STACK;
			continue;
		}
		th->stack = c->bytes + sg->offset;
		th->stack_len = (size_t)sg->filesz;
		th->stack_base = sg->vaddr;
	}
}

/* The interpreter, when the executable (an embedding) or a libpython
 * holds one, or a libruby's VM: its frames read from the core's memory. */
static int python_of_core(struct stacksnap_saved *s, const struct core_notes *cn,
			  const char *exe)
{
	const char *exe_path = NULL;

	for (size_t i = 0; cn->entry && i < cn->nfiles; i++)
		if (cn->entry >= cn->files[i].start && cn->entry < cn->files[i].end)
			exe_path = cn->files[i].path;
	for (size_t i = 0; i < cn->nfiles && !s->runtime; i++) {
		const struct core_file_map *f = &cn->files[i];
		const char *base = strrchr(f->path, '/');

		base = base ? base + 1 : f->path;
		bool is_exe = exe_path && !strcmp(f->path, exe_path);

		if (f->offset == 0 && rb_image_candidate(f->path)) {
			int err = runtime_reader__rb_from_core(s, f->path, f->start,
							       f->offset);
			if (err)
				return err;
			continue;
		}
		if (f->offset != 0 || (!is_exe && strncmp(base, "libpython", 9) != 0))
			continue;
		int err = runtime_reader__from_core(s, exe && is_exe ? exe : f->path,
						    f->start, f->offset);
		if (err)
			return err;
	}
	return 0;
}

/* A PHP engine's core (php, php-fpm, libphp): its frames read from the
 * core's memory, on the main thread. */
static int php_of_core(struct stacksnap_saved *s, const struct core_notes *cn,
		       const char *exe, pid_t tid)
{
	for (size_t i = 0; i < cn->nfiles && !s->runtime; i++) {
		const struct core_file_map *f = &cn->files[i];
		bool is_exe = cn->entry >= f->start && cn->entry < f->end;

		if (f->offset != 0 || !php_image_candidate(f->path))
			continue;
		int err = runtime_reader__php_from_core(s, exe && is_exe ? exe : f->path,
							f->start, f->offset, tid);
		if (err)
			return err;
	}
	return 0;
}

/* A JVM's or node's core: their frames are named from a live process
 * only (HotSpot's code cache and metadata, V8's heap objects are read
 * through its own constants, from /proc), so the core's frames in their
 * JIT code stay [jit]: said in one line, not left for the reader to
 * notice. */
static void say_named_runtime(struct stacksnap_saved *s, const struct core_notes *cn,
			      const char *exe)
{
	const char *exe_path = exe;
	struct v8_layout *l;

	for (size_t i = 0; i < cn->nfiles; i++) {
		const char *base = strrchr(cn->files[i].path, '/');

		if (!exe_path && cn->entry >= cn->files[i].start &&
		    cn->entry < cn->files[i].end)
			exe_path = cn->files[i].path;
		if (base && !strcmp(base, "/libjvm.so")) {
			log_warn(&s->ctx->log, "the core is a JVM's: its Java frames are "
				 "not named from a core (HotSpot's code cache and methods "
				 "are read from the live process) and stay [jit], without "
				 "Java thread names; take `stacksnap PID` or `--save FILE` "
				 "of the running JVM for them");
			return;
		}
	}
	if (!exe_path || !(l = malloc(sizeof(*l))))
		return;
	v8_layout__init(l);
	if (v8_layout__read_elf(exe_path, NULL, l) == 0 && l->nsymbols)
		log_warn(&s->ctx->log, "the core is V8's (%s): its JavaScript frames "
			 "are not named from a core (V8's heap objects are read from "
			 "the live process) and stay [jit]; take `stacksnap PID` or "
			 "`--save FILE` of the running process for them", exe_path);
	free(l);
}

/* Reads the core in s->image into s. */
static int core_parse(struct stacksnap_saved *s, const struct stacksnap_saved_opts *o)
{
	struct core_notes cn = { 0 };
	uint64_t (*notes)[2] = NULL;
	size_t nnotes = 0;
	struct core *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	s->ops = &core_reader_ops;
	s->source = c;
	c->bytes = s->image;
	c->len = s->image_len;
	if ((err = read_headers(s, c, &notes, &nnotes)) ||
	    (err = read_notes(s, c, notes, nnotes, &cn)))
		goto out;
	s->mem = stacksnap_mem__new_callback(core_read, c);
	if (!s->mem) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = add_mappings(s, c, &cn, o->exe)))
		goto out;
	point_stacks(s, c, &cn);
	if ((err = python_of_core(s, &cn, o->exe)) ||
	    (!s->runtime && (err = php_of_core(s, &cn, o->exe,
					       cn.pid ? cn.pid : s->n ? s->threads[0].tid : 0))))
		goto out;
	if (!s->runtime)
		say_named_runtime(s, &cn, o->exe);
	s->info.pid = cn.pid ? cn.pid : s->threads[0].tid;
	cn.psargs[80] = 0;
	if (!(s->cmdline = strdup(cn.psargs))) {
		err = -ENOMEM;
		goto out;
	}
	s->info.cmdline = s->cmdline;
	core_go__read(s, cn.entry);
out:
	free(cn.files);
	free(notes);
	return err;
}

static struct stacksnap_saved *core_open(struct stacksnap_ctx *ctx, const char *path,
					 const void *bytes, size_t len,
					 const struct stacksnap_saved_opts *opts)
{
	struct stacksnap_saved_opts o;
	struct stacksnap_saved *s;
	int err;

	if (opts_in(&o, sizeof(o), opts, 0)) {
		errno = EINVAL;
		return NULL;
	}
	s = saved__new(ctx, path);
	if (!s)
		return NULL;
	if (path) {
		err = saved__map_file(s, path);
	} else {
		s->image = bytes;
		s->image_len = len;
		err = 0;
	}
	if (!err)
		err = core_parse(s, &o);
	if (err) {
		stacksnap_saved__free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

struct stacksnap_saved *stacksnap_saved__open_core(struct stacksnap_ctx *ctx,
						   const char *path,
						   const struct stacksnap_saved_opts *opts)
{
	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	return core_open(ctx, path, NULL, 0, opts);
}

struct stacksnap_saved *core_reader__open_mem(struct stacksnap_ctx *ctx,
					      const void *bytes, size_t len)
{
	return core_open(ctx, NULL, bytes, len, NULL);
}
