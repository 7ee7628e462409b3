/* test_go_runtime.c - the Go runtime's static facts: the Go 1.19 layout
 * table equals the layout read from the DWARF of a program built here,
 * runtime.allgs found in the stripped binary's code equals the symbol, the
 * wait-reason names equal the installed runtime's source, and a binary
 * without section headers still has its pclntab found by magic. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	t.source = d.source = NULL;
	CHECK(memcmp(&d, &t, sizeof(d)) == 0);
#define F(x) CHECKF(d.x == t.x, #x ": DWARF %u, table %u", d.x, t.x)
	F(g_size); F(m_size); F(g_stack_lo); F(g_stack_hi); F(g_m);
	F(g_sched_sp); F(g_sched_pc); F(g_sched_bp); F(g_syscallsp);
	F(g_syscallpc); F(g_atomicstatus); F(g_goid); F(g_waitsince);
	F(g_waitreason); F(g_lockedm); F(g_gopc); F(g_startpc); F(m_procid);
	F(m_curg);
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

static void test_zz_cleanup(void)
{
	go_build_cleanup(dir);
}

TEST_MAIN("go_runtime", TEST(test_layout_table_vs_dwarf),
	  TEST(test_allgs_from_code), TEST(test_wait_reasons_vs_source),
	  TEST(test_no_section_headers), TEST(test_zz_cleanup))
