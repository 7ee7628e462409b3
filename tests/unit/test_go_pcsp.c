/* test_go_pcsp.c - Go pcsp tables compiled into unwind rows, compared pc
 * by pc over a whole Go 1.19 binary with the rows the CFI compiler makes
 * of the .debug_frame Go emits (the compiler itself is checked against
 * libdw by test_table_vs_libdw): the same CFA everywhere, and the classes
 * where they differ counted (Go's CFI has no rule for rbp). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_image.h"
#include "symbolize/gopclntab.h"
#include "table/go_pcsp.h"
#include "table/unwind_table.h"
#include "go_build.h"
#include "harness.h"

static char dir[4096];
static int built = -2;

struct classes {
	size_t compared, same, rbp_pcsp_only, dwarf_none, pcsp_none, big,
		cfa_differ, rbp_other, neither;
};

static void compare(const char *suffix_cfi, const char *suffix_pcsp)
{
	char path[4200];
	struct elf_image *img = NULL, *simg = NULL;
	struct gopclntab t;
	struct go_pcsp_func *funcs;
	struct go_pcsp_rows rows;
	struct unwind_table *dw = NULL;
	struct cfi_input in;
	struct classes c = { 0 };
	size_t nf;

	snprintf(path, sizeof(path), "%s/go_goroutines%s", dir, suffix_cfi);
	CHECK(elf_image__open(path, NULL, &img) == 0);
	snprintf(path, sizeof(path), "%s/go_goroutines%s", dir, suffix_pcsp);
	CHECK(elf_image__open(path, NULL, &simg) == 0);
	if (!img || !simg)
		return;
	CHECK(img->debug_frame.size > 0);
	in = (struct cfi_input){ img->debug_frame.data, img->debug_frame.size,
				 img->debug_frame.vaddr, 0 };
	CHECK(unwind_table__compile(&in, 1, NULL, &dw) == 0);
	CHECK(gopclntab__open_elf(&t, simg, NULL) == 0);
	CHECK(gopclntab__pcsp_funcs(&t, &funcs, &nf) == 0);
	CHECK(go_pcsp__compile(funcs, nf, t.quantum, NULL, &rows) == 0);
	CHECK(nf == t.nfunc);
	if (!dw || !rows.n)
		goto out;
	for (size_t i = 0; i < nf; i++) {
		for (uint64_t pc = funcs[i].entry; pc < funcs[i].end; pc++) {
			const struct unwind_row *d = unwind_table__lookup(dw, pc);
			const struct unwind_row *g = go_pcsp__lookup(&rows, pc);

			if (!d && !g) {
				c.neither++;
				continue;
			}
			if (!d) {
				c.dwarf_none++;
				continue;
			}
			if (!g && d->cfa_kind == UT_CFA_DWARF) {
				/* A frame beyond 16 bits: the CFI's row
				 * points back to its FDE; pcsp has no FDE
				 * to point to (go_pcsp.h). */
				c.big++;
				continue;
			}
			if (!g) {
				c.pcsp_none++;
				if (c.pcsp_none < 5)
					fprintf(stderr, "  %#llx: no pcsp row\n",
						(unsigned long long)pc);
				continue;
			}
			c.compared++;
			if (d->cfa_kind != g->cfa_kind ||
			    d->cfa_off != g->cfa_off) {
				if (c.cfa_differ++ < 5)
					fprintf(stderr, "  %#llx: cfa %d+%d vs "
						"%d+%d\n",
						(unsigned long long)pc,
						d->cfa_kind, d->cfa_off,
						g->cfa_kind, g->cfa_off);
			} else if (d->rbp_kind == UT_RBP_SAME &&
				   g->rbp_kind == UT_RBP_CFA_OFF &&
				   g->rbp_off == -16) {
				c.rbp_pcsp_only++;
			} else if (d->rbp_kind != g->rbp_kind ||
				   d->rbp_off != g->rbp_off ||
				   d->rbx_kind != g->rbx_kind) {
				c.rbp_other++;
			} else {
				c.same++;
			}
		}
	}
	printf("  %zu functions (%zu save rbp), %zu rows; %zu pcs compared: "
	       "%zu identical, %zu differ only in rbp saved at CFA-16 "
	       "(Go's CFI has no rbp rule), %zu CFA differ, %zu other rbp; "
	       "%zu pcs with a pcsp row and none in the CFI, %zu with CFI "
	       "and no pcsp row, %zu with neither; %zu in frames beyond "
	       "16 bits (CFI: DWARF rows, pcsp: none)\n",
	       rows.funcs, rows.bp_funcs, rows.n, c.compared, c.same,
	       c.rbp_pcsp_only, c.cfa_differ, c.rbp_other, c.dwarf_none,
	       c.pcsp_none, c.neither, c.big);
	CHECK(c.compared > 100000);
	CHECK(c.cfa_differ == 0);
	CHECK(c.rbp_other == 0);
	CHECK(c.pcsp_none == 0);
	CHECK(rows.bad_tables == 0);
	/* The rbp rule: every function it applies to sets BP from the slot
	 * right after the store (LEAQ N-8(SP), BP), as the convention says. */
	{
		size_t checked = 0, lea = 0;

		for (size_t i = 0; i < nf; i++) {
			for (uint64_t pc = funcs[i].entry; pc < funcs[i].end;
			     pc++) {
				const struct unwind_row *g =
					go_pcsp__lookup(&rows, pc);
				const uint8_t *p;

				if (!g || g->rbp_kind != UT_RBP_CFA_OFF)
					continue;
				checked++;
				p = funcs[i].code + (pc - funcs[i].entry);
				if (p[0] == 0x48 && p[1] == 0x8d &&
				    (p[2] == 0x6c || p[2] == 0xac) &&
				    p[3] == 0x24)
					lea++;
				else if (p[0] == 0x48 && p[1] == 0x89 &&
					 p[2] == 0xe5)
					lea++;	/* MOVQ SP, BP after PUSHQ */
				break;
			}
		}
		printf("  %zu of %zu frame-pointer functions set BP right after "
		       "the store\n", lea, checked);
		CHECK(checked == rows.bp_funcs && lea == checked);
	}
out:
	go_pcsp__free(&rows);
	free(funcs);
	if (dw)
		unwind_table__free(dw);
	elf_image__free(img);
	elf_image__free(simg);
}

/* The stripped binary's pcsp rows against the plain binary's CFI (the
 * same code), and the plain binary against itself. */
static void test_pcsp_vs_cfi(void)
{
	if (!go_build_once("go_goroutines", dir, sizeof(dir), &built))
		return;
	compare("", "");
	compare("", "_s");
}

static void test_malformed(void)
{
	/* Truncated varints, a zero pc delta, a frame beyond 16 bits, and
	 * functions out of order: bounded, counted, refused. */
	static const uint8_t trunc[] = { 0x81 };
	static const uint8_t zero_pc[] = { 2, 0 };
	static const uint8_t big[] = { 0x80, 0x80, 0x08, 4, 0 };
	struct go_pcsp_func f[2] = {
		{ 0x1000, 0x1010, trunc, sizeof(trunc), NULL },
		{ 0x1010, 0x1020, zero_pc, sizeof(zero_pc), NULL },
	};
	struct go_pcsp_rows r;

	CHECK(go_pcsp__compile(f, 2, 1, NULL, &r) == 0);
	CHECK(r.bad_tables == 2);
	CHECK(go_pcsp__lookup(&r, 0x1008) == NULL);
	go_pcsp__free(&r);
	f[0].pcsp = big;
	f[0].pcsp_max = sizeof(big);
	CHECK(go_pcsp__compile(f, 1, 1, NULL, &r) == 0);
	CHECK(r.big_frames == 1);
	CHECK(go_pcsp__lookup(&r, 0x1000) == NULL);
	go_pcsp__free(&r);
	f[1].entry = 0x1008;
	CHECK(go_pcsp__compile(f, 2, 1, NULL, &r) == -EINVAL);
}

static void test_zz_cleanup(void)
{
	go_build_cleanup(dir);
}

TEST_MAIN("go_pcsp", TEST(test_pcsp_vs_cfi), TEST(test_malformed),
	  TEST(test_zz_cleanup))
