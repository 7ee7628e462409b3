/* test_go_runtime.c - the Go runtime's static facts: the Go 1.19 layout
 * table equals the layout read from the DWARF of a program built here,
 * runtime.allgs found in the stripped binary's code equals the symbol, the
 * wait-reason names equal the installed runtime's source, wait objects
 * are read from memory laid out as Go 1.19's (and fail soft), and a binary
 * without section headers still has its pclntab found by magic. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf/elf_image.h"
#include "runtime/go/go_runtime.h"
#include "go_build.h"
#include "harness.h"

static char dir[4096];
static int built = -2;

static struct elf_image *open_bin(const char *suffix)
{
	char path[4200];
	struct elf_image *img = NULL;

	snprintf(path, sizeof(path), "%s/go_goroutines%s", dir, suffix);
	CHECK(elf_image__open(path, NULL, &img) == 0);
	return img;
}

static void test_layout_table_vs_dwarf(void)
{
	struct elf_image *img;
	struct go_layout d, t;
	struct go_runtime rt;

	if (!go_build_once("go_goroutines", dir, sizeof(dir), &built))
		return;
	img = open_bin("");
	if (!img)
		return;
	CHECK(go_runtime__open(&rt, img, NULL) == 0);
	CHECK(go_layout__from_dwarf(img, &d, NULL) == 0);
	CHECKF(go_layout__for_version(rt.version, &t) == 0, "%s", rt.version);
	/* Every offset, not the padding before source (a struct copy
	   leaves it as it was: the sanitizer build's differs). */
	CHECK(memcmp(&d, &t, offsetof(struct go_layout, type_str) +
			     sizeof(t.type_str)) == 0);
#define F(x) CHECKF(d.x == t.x, #x ": DWARF %u, table %u", d.x, t.x)
	F(g_size); F(m_size); F(g_stack_lo); F(g_stack_hi); F(g_m);
	F(g_sched_sp); F(g_sched_pc); F(g_sched_bp); F(g_syscallsp);
	F(g_syscallpc); F(g_atomicstatus); F(g_goid); F(g_waitsince);
	F(g_waitreason); F(g_lockedm); F(g_gopc); F(g_startpc); F(g_labels);
	F(m_procid);
	F(m_curg);
	F(g_waiting); F(sudog_size); F(sudog_g); F(sudog_next); F(sudog_prev);
	F(sudog_elem); F(sudog_waitlink); F(sudog_c); F(hchan_size);
	F(hchan_qcount); F(hchan_dataqsiz); F(hchan_closed); F(hchan_recvq);
	F(hchan_sendq); F(semroot_treap); F(waits); F(hchan_elemtype);
	F(type_tflag); F(type_str);
#undef F
	CHECK(go_layout__for_version("go1.18", &t) == -ENOTSUP);
	CHECK(go_layout__for_version("go1.190", &t) == -ENOTSUP);
	go_runtime__close(&rt);
	elf_image__free(img);
}

static void test_allgs_from_code(void)
{
	struct elf_image *img, *simg;
	struct go_runtime rt, srt;

	if (!go_build_once("go_goroutines", dir, sizeof(dir), &built))
		return;
	img = open_bin("");
	simg = open_bin("_s");
	if (!img || !simg)
		return;
	CHECK(go_runtime__open(&rt, img, NULL) == 0);
	CHECK(go_runtime__open(&srt, simg, NULL) == 0);
	CHECK(strcmp(rt.allgs_source, "symtab") == 0);
	CHECK(strcmp(srt.allgs_source, "runtime.forEachG") == 0);
	CHECKF(rt.allgs != 0 && go_runtime__allgs_from_code(&rt) == rt.allgs,
	       "%#llx vs %#llx", (unsigned long long)rt.allgs,
	       (unsigned long long)go_runtime__allgs_from_code(&rt));
	CHECK(srt.allgs != 0);
	CHECK(srt.have_layout && strcmp(srt.layout.source, "go1.19 table") == 0);
	/* runtime.semtable (sync objects): the symbol, and without symbols
	 * the address semacquire1 and semrelease1 share, the same. */
	CHECK(rt.semtable != 0 && rt.semtable_size == 251 * 64);
	CHECKF(go_runtime__semtable_from_code(&rt) == rt.semtable, "%#llx vs %#llx",
	       (unsigned long long)go_runtime__semtable_from_code(&rt),
	       (unsigned long long)rt.semtable);
	CHECK(srt.semtable != 0 && srt.semtable_size == 251 * 64);
	CHECK(rt.layout.waits && srt.layout.waits);
	go_runtime__close(&rt);
	go_runtime__close(&srt);
	elf_image__free(img);
	elf_image__free(simg);
}

/* The names, in order, from the waitReasonStrings of the go installed. */
static void test_wait_reasons_vs_source(void)
{
	FILE *p = popen("f=$(go env GOROOT)/src/runtime/runtime2.go; "
			"sed -n '/^var waitReasonStrings/,/^}/p' $f | "
			"sed -n 's/.*: *\"\\(.*\\)\",$/\\1/p'", "r");
	char line[256];
	unsigned i = 0;

	if (!go_build_once("go_goroutines", dir, sizeof(dir), &built))
		return;
	CHECK(p != NULL);
	while (p && fgets(line, sizeof(line), p)) {
		const char *mine = go_wait_reason((uint8_t)i);

		line[strcspn(line, "\n")] = 0;
		CHECKF(mine && strcmp(mine, line) == 0, "%u: %s vs %s", i,
		       mine ? mine : "(none)", line);
		i++;
	}
	if (p)
		pclose(p);
	CHECKF(i >= 20 && go_wait_reason((uint8_t)i) == NULL, "%u", i);
	CHECK(strcmp(go_status_name(GO_GWAITING, 14), "chan receive") == 0);
	CHECK(strcmp(go_status_name(GO_GRUNNABLE, 0), "runnable") == 0);
	CHECK(strcmp(go_status_name(GO_GRUNNING | GO_GSCAN, 0), "running") == 0);
}

/* Section headers gone (as some packers leave a binary): found by the
 * header's magic in the read-only segments, with the same functions. */
static void test_no_section_headers(void)
{
	char path[4200];
	struct elf_image *img, *mimg = NULL;
	struct gopclntab t, mt;
	unsigned char *b;
	size_t len;

	if (!go_build_once("go_goroutines", dir, sizeof(dir), &built))
		return;
	img = open_bin("_s");
	snprintf(path, sizeof(path), "%s/go_goroutines_s", dir);
	b = harness_slurp(path, &len);
	CHECK(b != NULL && len > 64);
	if (!img || !b)
		return;
	memset(b + 0x28, 0, 8);	/* e_shoff */
	memset(b + 0x3c, 0, 4);	/* e_shnum, e_shstrndx */
	CHECK(elf_image__open_mem(b, len, "no-sections", NULL, &mimg) == 0);
	CHECK(gopclntab__open_elf(&t, img, NULL) == 0);
	if (mimg) {
		CHECK(gopclntab__open_elf(&mt, mimg, NULL) == 0);
		CHECK(mt.vaddr == t.vaddr && mt.nfunc == t.nfunc);
		CHECK(mt.gofunc == t.gofunc && mt.gofunc != 0);
		elf_image__free(mimg);
	}
	free(b);
	elf_image__free(img);
}

/* ---- a made-up process: bad lists and stacks end cleanly -------------- */

#define FAKE_ARRAY 0x100000ull
#define FAKE_G 0x200000ull
#define FAKE_STACK 0x300000ull
#define FAKE_STACK_SIZE 4096

struct fake {
	uint64_t allgs;
	uint64_t slice[3];
	uint64_t ptrs[4];
	uint8_t g[4][512];
	uint8_t stack[FAKE_STACK_SIZE];
};

static int fake_read(void *user, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = user;
	struct { uint64_t at; void *p; size_t n; } r[] = {
		{ f->allgs, f->slice, sizeof(f->slice) },
		{ FAKE_ARRAY, f->ptrs, sizeof(f->ptrs) },
		{ FAKE_G, f->g, sizeof(f->g) },
		{ FAKE_STACK, f->stack, sizeof(f->stack) },
	};

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (addr >= r[i].at && addr - r[i].at <= r[i].n &&
		    len <= r[i].n - (addr - r[i].at)) {
			memcpy(buf, (uint8_t *)r[i].p + (addr - r[i].at), len);
			return 0;
		}
	return -EFAULT;
}

static void set_u64(uint8_t *b, uint32_t off, uint64_t v) { memcpy(b + off, &v, 8); }
static void set_u32(uint8_t *b, uint32_t off, uint32_t v) { memcpy(b + off, &v, 4); }

static void test_bad_lists(void)
{
	struct elf_image *img;
	struct go_runtime rt;
	struct fake *f = calloc(1, sizeof(*f));
	struct stacksnap_mem *mem = stacksnap_mem__new_callback(fake_read, f);
	struct goroutine *gs;
	size_t n;
	uint64_t pc = 0;
	const struct go_layout *l;

	if (!go_build_once("go_goroutines", dir, sizeof(dir), &built))
		return;
	img = open_bin("_s");
	if (!img)
		return;
	CHECK(go_runtime__open(&rt, img, NULL) == 0);
	l = &rt.layout;
	CHECK(l->g_size <= sizeof(f->g[0]));
	f->allgs = rt.allgs;
	/* A length beyond the capacity, or beyond any real program. */
	f->slice[0] = FAKE_ARRAY, f->slice[1] = 3, f->slice[2] = 2;
	CHECK(go_goroutines__read(&rt, mem, 0, 100, &gs, &n, NULL) == -EINVAL);
	f->slice[1] = f->slice[2] = GO_MAX_GOROUTINES + 1;
	CHECK(go_goroutines__read(&rt, mem, 0, 100, &gs, &n, NULL) == -EINVAL);
	/* The array unreadable. */
	f->slice[0] = 0x900000, f->slice[1] = 2, f->slice[2] = 4;
	CHECK(go_goroutines__read(&rt, mem, 0, 100, &gs, &n, NULL) == -EFAULT);
	/* One dead, one misaligned, one unreadable, one waiting whose stack
	 * returns to itself forever: bounded by the stack's end. */
	for (uint64_t i = 0; i < rt.pcln.nfunc; i++) {
		struct go_func fn;
		const char *nm;

		if (gopclntab__func_at(&rt.pcln, i, &fn) == 0 &&
		    (nm = gopclntab__func_name(&rt.pcln, &fn)) &&
		    strcmp(nm, "main.recurse") == 0)
			pc = fn.entry + 0x20;
	}
	CHECK(pc != 0);
	f->slice[0] = FAKE_ARRAY, f->slice[1] = 4, f->slice[2] = 4;
	f->ptrs[0] = FAKE_G;
	f->ptrs[1] = FAKE_G + 512 + 4;
	f->ptrs[2] = 0x800000;
	f->ptrs[3] = FAKE_G + 3 * 512;
	set_u32(f->g[0], l->g_atomicstatus, GO_GDEAD);
	set_u32(f->g[3], l->g_atomicstatus, GO_GWAITING);
	set_u64(f->g[3], l->g_goid, 42);
	f->g[3][l->g_waitreason] = 14;
	set_u64(f->g[3], l->g_sched_pc, pc);
	set_u64(f->g[3], l->g_sched_sp, FAKE_STACK);
	set_u64(f->g[3], l->g_stack_lo, FAKE_STACK);
	set_u64(f->g[3], l->g_stack_hi, FAKE_STACK + FAKE_STACK_SIZE);
	for (size_t k = 0; k + 8 <= FAKE_STACK_SIZE; k += 8)
		memcpy(f->stack + k, &pc, 8);
	CHECK(go_goroutines__read(&rt, mem, 0, 100, &gs, &n, NULL) == 0);
	CHECK(n == 1);
	if (n == 1) {
		CHECK(gs[0].goid == 42);
		CHECK(strcmp(go_status_name(gs[0].status, gs[0].waitreason),
			     "chan receive") == 0);
		CHECK(go_goroutine__unwind(&rt, mem, 0, &gs[0], NULL, 0) == 0);
		CHECKF(gs[0].end && strstr(gs[0].end, "outside"), "%s",
		       gs[0].end ? gs[0].end : "(none)");
		CHECK(gs[0].nframes > 10 && gs[0].nframes < FAKE_STACK_SIZE / 8);
		/* A running goroutine whose thread is not known: no stack. */
		gs[0].status = GO_GRUNNING;
		free(gs[0].frames);
		gs[0].frames = NULL;
		gs[0].nframes = 0;
		CHECK(go_goroutine__unwind(&rt, mem, 0, &gs[0], NULL, 0) == 0);
		CHECK(gs[0].nframes == 0 && gs[0].end != NULL);
		/* Read again after a non-stop read: unchanged, then parked
		 * elsewhere (its frames dropped, its end says why); the list
		 * grew by one meanwhile. */
		CHECK(go_goroutine__unwind(&rt, mem, 0, &gs[0], NULL, 0) == 0);
		gs[0].status = GO_GWAITING;
		CHECK(go_goroutines__list_len(&rt, mem, 0) == 4);
		CHECK(go_goroutines__recheck(&rt, mem, gs, n) == 0);
		set_u64(f->g[3], l->g_sched_pc, pc + 1);
		f->slice[1] = 5;
		CHECK(go_goroutines__recheck(&rt, mem, gs, n) == 1);
		CHECK(gs[0].nframes == 0 && gs[0].end &&
		      strcmp(gs[0].end, GO_END_CHANGED) == 0);
		CHECK(go_goroutines__list_len(&rt, mem, 0) == 5);
	}
	go_goroutines__free(gs, n);
	stacksnap_mem__free(mem);
	free(f);
	go_runtime__close(&rt);
	elf_image__free(img);
}

/* Profiler labels (pprof.Do) from a map laid out as Go 1.19's
 * map[string]string: two buckets chained, cells out of order, one
 * evacuated; then maps that make no sense give none, boundedly. */
#define LBASE 0x100000u
static void put_str(uint8_t *m, uint32_t hdr, uint32_t text, const char *s)
{
	memcpy(m + text, s, strlen(s));
	set_u64(m, hdr, LBASE + text);
	set_u64(m, hdr + 8, strlen(s));
}

static void test_labels(void)
{
	static uint8_t m[0x1000];
	struct go_runtime rt;
	struct goroutine g;
	struct stacksnap_mem *mem;

	memset(&rt, 0, sizeof(rt));
	snprintf(rt.version, sizeof(rt.version), "go1.19.8");
	set_u64(m, 0, LBASE + 0x100);		/* *labelMap -> hmap */
	set_u64(m, 0x100, 3);			/* count */
	m[0x109] = 0;				/* B */
	set_u64(m, 0x110, LBASE + 0x200);	/* buckets */
	m[0x200] = 9, m[0x201] = 0, m[0x202] = 7, m[0x203] = 2;
	put_str(m, 0x200 + 8, 0x800, "worker");
	put_str(m, 0x200 + 136, 0x810, "w1");
	put_str(m, 0x200 + 8 + 2 * 16, 0x820, "app");
	put_str(m, 0x200 + 136 + 2 * 16, 0x830, "api");
	put_str(m, 0x200 + 8 + 3 * 16, 0x840, "moved");	/* evacuated */
	set_u64(m, 0x200 + 264, LBASE + 0x400);	/* overflow */
	m[0x400 + 5] = 200;
	put_str(m, 0x400 + 8 + 5 * 16, 0x850, "zone");
	put_str(m, 0x400 + 136 + 5 * 16, 0x860, "");
	mem = stacksnap_mem__new_copy(m, sizeof(m), LBASE);
	memset(&g, 0, sizeof(g));
	g.labels_ptr = LBASE;
	CHECK(go_goroutine__read_labels(&rt, mem, &g) == 0);
	CHECKF(g.nlabels == 3, "%zu", g.nlabels);
	if (g.nlabels == 3) {
		CHECK(strcmp(g.labels[0], "app") == 0 && strcmp(g.labels[1], "api") == 0);
		CHECK(strcmp(g.labels[2], "worker") == 0 && strcmp(g.labels[3], "w1") == 0);
		CHECK(strcmp(g.labels[4], "zone") == 0 && g.labels[5][0] == 0);
	}
	go_goroutine__free_labels(&g);
	/* Go 1.24's maps are not read; a nil map is no labels. */
	snprintf(rt.version, sizeof(rt.version), "go1.24.1");
	CHECK(go_goroutine__read_labels(&rt, mem, &g) == 0 && g.nlabels == 0);
	snprintf(rt.version, sizeof(rt.version), "go1.19");
	stacksnap_mem__free(mem);
	/* A chain that loops: bounded by the count. */
	set_u64(m, 0x200 + 264, LBASE + 0x200);
	set_u64(m, 0x100, 1000);
	m[0x109] = 6;
	mem = stacksnap_mem__new_copy(m, sizeof(m), LBASE);
	g.labels_ptr = LBASE;
	CHECK(go_goroutine__read_labels(&rt, mem, &g) != -ENOMEM);
	CHECK(g.nlabels <= GO_MAX_LABELS);
	go_goroutine__free_labels(&g);
	stacksnap_mem__free(mem);
	/* Too many buckets; a string too long; the map unreadable. */
	set_u64(m, 0x100, 3);
	m[0x109] = 40;
	mem = stacksnap_mem__new_copy(m, sizeof(m), LBASE);
	CHECK(go_goroutine__read_labels(&rt, mem, &g) == -EINVAL && !g.nlabels);
	stacksnap_mem__free(mem);
	m[0x109] = 0;
	set_u64(m, 0x200 + 264, 0);
	set_u64(m, 0x200 + 8 + 8, GO_MAX_LABEL_LEN + 1);
	mem = stacksnap_mem__new_copy(m, sizeof(m), LBASE);
	CHECK(go_goroutine__read_labels(&rt, mem, &g) == -EINVAL && !g.labels);
	stacksnap_mem__free(mem);
	set_u64(m, 0, LBASE + 0x5000);
	mem = stacksnap_mem__new_copy(m, sizeof(m), LBASE);
	CHECK(go_goroutine__read_labels(&rt, mem, &g) == -EFAULT && !g.labels);
	stacksnap_mem__free(mem);
}

/* The library's capture lists the goroutines of a live Go program (the
 * stripped build): the parked ones where the program parks them. */
static void test_capture_goroutines(void)
{
	STACKSNAP_OPTS(stacksnap_snapshot_opts, so, .goroutines = true);
	struct stacksnap_ctx *ctx;
	struct stacksnap_snapshot *snap;
	char cmd[4200], line[128];
	FILE *p;
	pid_t pid = 0;
	size_t n;
	bool recv = false, wg = false;

	if (!go_build_once("go_goroutines", dir, sizeof(dir), &built))
		return;
	snprintf(cmd, sizeof(cmd), "exec %s/go_goroutines_s", dir);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p || !fgets(line, sizeof(line), p) ||
	    sscanf(line, "ready %d", &pid) != 1) {
		CHECK(0);
		return;
	}
	usleep(300000);
	ctx = stacksnap_ctx__new(NULL);
	snap = stacksnap_snapshot__capture(ctx, pid, &so);
	CHECK(snap != NULL);
	n = stacksnap_snapshot__goroutine_count(snap);
	CHECKF(n >= 10, "%zu", n);
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_goroutine *g =
			stacksnap_snapshot__goroutine(snap, i);
		size_t deep = 0;

		CHECK(g->sz == sizeof(*g) && g->status && g->goid > 0);
		for (size_t k = 0; k < g->nframes; k++) {
			const struct stacksnap_runtime_frame *f = &g->frames[k];

			CHECK(f->runtime == STACKSNAP_RUNTIME_GO && f->function);
			if (!strcmp(f->function, "main.recvDeep") &&
			    k + 1 < g->nframes &&
			    !strcmp(g->frames[k + 1].function, "main.recvOuter") &&
			    !strcmp(g->status, "chan receive") &&
			    g->created_by && !strcmp(g->created_by, "main.main"))
				recv = true;
			deep += !strcmp(f->function, "main.recurse");
		}
		if (deep == 21 && !strcmp(g->status, "semacquire") && !g->end)
			wg = true;
	}
	CHECK(recv && wg);
	CHECK(stacksnap_snapshot__goroutine(snap, n) == NULL);
	/* The stripped program's module is named from its pclntab whatever
	 * the flags (perf-script's symbol-table-only naming too), with the
	 * inlined calls under LINES: as the goroutines' frames say. */
	{
		struct stacksnap_addrspace *as =
			stacksnap_addrspace__from_pid(ctx, pid);
		const struct stacksnap_goroutine *g = NULL;
		size_t inl = 0;

		for (size_t i = 0; i < n && !g; i++) {
			const struct stacksnap_goroutine *c =
				stacksnap_snapshot__goroutine(snap, i);

			for (size_t k = 0; k < c->nframes; k++)
				if (c->frames[k].flags & STACKSNAP_RFRAME_INLINED &&
				    !strcmp(c->frames[k].function, "main.inlinedRecv")) {
					g = c;
					inl = k;
				}
		}
		CHECK(as && g);
		if (as && g) {
			struct stacksnap_sym sym[8];
			uint64_t pc = g->frames[inl].pc;
			int k;

			/* Inlined calls are frames without --lines too (issue
			 * 32), without file:line. */
			k = stacksnap_addrspace__symbolize(as, pc, true, 0, sym, 8);
			CHECK(k == 2 && sym[0].inlined && !sym[1].inlined &&
			      !strcmp(sym[0].function, "main.inlinedRecv") &&
			      !strcmp(sym[1].function, "main.recvViaInline") &&
			      !sym[0].file && !sym[1].file);
			k = stacksnap_addrspace__symbolize(as, pc, true,
							   STACKSNAP_SYM_SYMTAB,
							   sym, 8);
			CHECK(k == 1 && sym[0].function &&
			      !strcmp(sym[0].function, "main.recvViaInline"));
			k = stacksnap_addrspace__symbolize(as, pc, true,
							   STACKSNAP_SYM_LINES,
							   sym, 8);
			CHECK(k == 2 && sym[0].inlined && !sym[1].inlined &&
			      !strcmp(sym[0].function, "main.inlinedRecv") &&
			      !strcmp(sym[1].function, "main.recvViaInline") &&
			      sym[0].file && sym[0].line ==
				      (int)g->frames[inl].line);
		}
		stacksnap_addrspace__free(as);
	}
	stacksnap_snapshot__free(snap);
	stacksnap_ctx__free(ctx);
	kill(pid, SIGKILL);
	pclose(p);
}

/* Wait objects (go_waits.c) from memory laid out as Go 1.19's: a
 * receive on a channel with two receivers queued, a select over two
 * channels, a semaphore found in runtime.semtable (a sync.Mutex by its
 * frame); then what makes no sense or cannot be read says "object not
 * known", boundedly. */
#define WBASE 0x200000u
static void test_wait_objects(void)
{
	static uint8_t m[32768];
	struct go_runtime rt;
	struct goroutine g[4];
	struct go_gframe fr = { .function = "sync.(*Mutex).lockSlow" };
	const uint32_t tab = 16384, s0 = 0, s1 = 128, s2 = 256, s3 = 384,
		       c1 = 1024, c2 = 1280, sem = 2048;
	struct stacksnap_mem *mem;

	memset(&rt, 0, sizeof(rt));
	memset(m, 0, sizeof(m));
	memset(g, 0, sizeof(g));
	CHECK(go_layout__for_version("go1.19.8", &rt.layout) == 0);
	rt.have_layout = true;
	rt.semtable = WBASE + tab;
	rt.semtable_size = 251 * 64;
	/* g[0] receives on c1 (sudog s0), s1 queued behind it */
	set_u64(m, s0 + 80, WBASE + c1);
	set_u64(m, s0 + 8, WBASE + s1);
	set_u64(m, c1 + 8, 0);			/* unbuffered */
	set_u64(m, c1 + 56, WBASE + s0);	/* recvq.first */
	/* g[1] selects on c1 and c2 (s2 -> waitlink s3) */
	set_u64(m, s2 + 80, WBASE + c1);
	set_u64(m, s2 + 64, WBASE + s3);
	set_u64(m, s3 + 80, WBASE + c2);
	set_u64(m, c2 + 0, 2);			/* 2 queued of 4, closed */
	set_u64(m, c2 + 8, 4);
	set_u32(m, c2 + 28, 1);
	/* g[2] on a semaphore: root 7's treap, its sudog at 512 */
	set_u64(m, tab + 7 * 64 + 8, WBASE + 512);
	set_u64(m, 512 + 0, WBASE + 0x8000);	/* its g */
	set_u64(m, 512 + 24, WBASE + sem + 4);	/* elem: &mutex.sema */
	/* c1's element type at 3072 (tflagExtraStar, its name "*string" at
	 * 4096); c2's outside the types: not named */
	rt.types = WBASE + 3072;
	rt.etypes = WBASE + 8192;
	set_u64(m, c1 + 32, WBASE + 3072);
	m[3072 + 20] = 2;			/* tflagExtraStar */
	set_u32(m, 3072 + 40, 1024);		/* its name at 4096 */
	memcpy(m + 4096, "\x01\x07*string", 10);
	set_u64(m, c2 + 32, WBASE + 0x7000);	/* outside the types */
	for (int i = 0; i < 4; i++)
		g[i].status = GO_GWAITING;
	g[0].waitreason = 14, g[0].waiting = WBASE + s0;
	g[1].waitreason = 9, g[1].waiting = WBASE + s2;
	g[2].waitreason = 18, g[2].g = WBASE + 0x8000;
	g[2].frames = &fr, g[2].nframes = 1;
	g[3].waitreason = 18, g[3].g = WBASE + 0x9000;	/* in no treap */
	mem = stacksnap_mem__new_copy(m, sizeof(m), WBASE);
	CHECK(go_goroutines__read_waits(&rt, mem, 0, g, 4) == 0);
	CHECK(g[0].nobjs == 1 && g[0].objs[0].addr == WBASE + c1 &&
	      g[0].objs[0].capacity == 0 && g[0].objs[0].receivers == 2 &&
	      g[0].objs[0].senders == 0 && !g[0].obj_unknown);
	CHECKF(strcmp(g[0].objs[0].elem_type, "string") == 0, "%s",
	       g[0].objs[0].elem_type);
	CHECK(g[1].nobjs == 2 && g[1].objs[0].addr == WBASE + c1 &&
	      g[1].objs[1].addr == WBASE + c2 && g[1].objs[1].capacity == 4 &&
	      g[1].objs[1].queued == 2 && g[1].objs[1].closed &&
	      !g[1].objs[1].elem_type[0]);
	CHECK(g[2].nobjs == 1 && g[2].objs[0].addr == WBASE + sem &&
	      strcmp(g[2].objs[0].type, "sync.Mutex") == 0);
	CHECK(g[3].nobjs == 0 && g[3].obj_unknown &&
	      strstr(g[3].obj_unknown, "object not known"));
	/* A queue beyond its capacity; a queue looping on itself (counted
	 * up to the cap); no semtable; no wait layout. */
	set_u64(m, c1 + 0, 3);
	set_u64(m, s1 + 8, WBASE + s0);
	set_u64(m, c2 + 72, WBASE + s1);	/* sendq: s1 -> s0 -> s1... */
	stacksnap_mem__free(mem);
	mem = stacksnap_mem__new_copy(m, sizeof(m), WBASE);
	rt.semtable = 0;
	CHECK(go_goroutines__read_waits(&rt, mem, 0, g, 4) == 0);
	CHECKF(g[0].nobjs == 0 && g[0].obj_unknown &&
	       strstr(g[0].obj_unknown, "makes no sense"), "%s",
	       g[0].obj_unknown ? g[0].obj_unknown : "(none)");
	CHECK(g[2].nobjs == 0 && g[2].obj_unknown &&
	      strstr(g[2].obj_unknown, "runtime.semtable"));
	set_u64(m, c1 + 0, 0);
	stacksnap_mem__free(mem);
	mem = stacksnap_mem__new_copy(m, sizeof(m), WBASE);
	CHECK(go_goroutines__read_waits(&rt, mem, 0, g, 2) == 0);
	CHECK(g[1].nobjs == 2 && g[1].objs[1].counts_cut &&
	      g[1].objs[1].senders == GO_MAX_WAITQ);
	rt.layout.waits = 0;
	CHECK(go_goroutines__read_waits(&rt, mem, 0, g, 4) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(g[i].nobjs == 0 && g[i].obj_unknown &&
		      strstr(g[i].obj_unknown, "no layout"));
	for (int i = 0; i < 4; i++)
		free(g[i].objs);
	stacksnap_mem__free(mem);
}

static void test_zz_cleanup(void)
{
	go_build_cleanup(dir);
}

TEST_MAIN("go_runtime", TEST(test_layout_table_vs_dwarf),
	  TEST(test_allgs_from_code), TEST(test_wait_reasons_vs_source),
	  TEST(test_no_section_headers), TEST(test_bad_lists), TEST(test_labels),
	  TEST(test_capture_goroutines), TEST(test_wait_objects),
	  TEST(test_zz_cleanup))
