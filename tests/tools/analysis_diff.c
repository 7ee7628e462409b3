/* analysis_diff.c - differential check of the analysis stepper's stack
 * heights against the CFI: for every instruction of every FDE of the given
 * ELF files (its range given to the analysis as the caller-provided
 * range), the CFA (register + offset) the analysis finds beside the one the
 * module's compiled table gives. Prints one `file` line per input, the
 * counts by kind, and up to --show examples of each disagreement kind.
 * Usage: analysis_diff [--sample N] [--show N] FILE... */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addrspace/module.h"
#include "symbolize/symbolize.h"
#include "table/unwind_table.h"
#include "unwind/unwind_internal.h"

/* Kinds of outcome at one instruction. */
enum kind {
	K_AGREE = 0,
	K_ORACLE_OTHER,	/* the CFI's rule is not register + offset */
	K_UNKNOWN,	/* + analysis_why: ANALYSIS_WHY_COUNT of them */
	K_PADDING = K_UNKNOWN + ANALYSIS_WHY_COUNT, /* an unreached nop or
					int3: alignment padding */
	K_DIS_NORETURN,	/* after a call that does not return */
	K_DIS_REG,	/* the CFI says rbp, the analysis knows only rsp */
	K_DIS_ENTRY,	/* at the entry the CFI's height is not a call's: a
			   trampoline entered with words pushed (ld.so's
			   _dl_runtime_resolve, after the PLT's pushes) */
	K_DIS_ASM_CFI,	/* the CFI stays at entry's rsp + 8 where the code
			   pushed: hand-written assembly's CFI without them */
	K_DIS_OTHER,	/* none of the known kinds */
	K_COUNT,
};

static const char *kind_name(unsigned k)
{
	static char buf[96];

	switch (k) {
	case K_AGREE: return "agree";
	case K_ORACLE_OTHER: return "skipped: CFI rule not register+offset";
	case K_DIS_NORETURN: return "disagree: code after a call that does not return";
	case K_DIS_REG: return "disagree: CFI via rbp, analysis knows only rsp";
	case K_DIS_ENTRY: return "disagree: CFI's entry height is not a call's (trampoline)";
	case K_DIS_ASM_CFI: return "disagree: CFI says rsp+8 after pushes (assembly whose CFI omits them)";
	case K_PADDING: return "unknown: unreached padding (nop, int3)";
	case K_DIS_OTHER: return "disagree: UNEXPLAINED";
	}
	snprintf(buf, sizeof(buf), "unknown: %s",
		 analysis_why__str((enum analysis_why)(k - K_UNKNOWN)));
	return buf;
}

static unsigned long total[K_COUNT];
static unsigned show = 3, shown[K_COUNT];

struct hdr_entry {
	int32_t loc, fde;
};

/* The FDE starts of .eh_frame_hdr (link-time), when its table is in the
 * usual datarel sdata4 encoding. */
static uint64_t *fde_starts(Elf *elf, size_t *n)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	*n = 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		const uint8_t *p;
		uint32_t count;

		if (!gelf_getshdr(scn, &sh) ||
		    strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".eh_frame_hdr"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || d->d_size < 12)
			return NULL;
		p = d->d_buf;
		if (p[0] != 1 || p[2] != 0x03 || p[3] != 0x3b)
			return NULL;
		memcpy(&count, p + 8, 4);
		if (12 + (size_t)count * 8 > d->d_size)
			return NULL;
		uint64_t *out = calloc(count + 1, sizeof(*out));
		for (uint32_t i = 0; i < count; i++) {
			struct hdr_entry e;

			memcpy(&e, p + 12 + i * 8, 8);
			out[i] = sh.sh_addr + (int64_t)e.loc;
		}
		*n = count;
		return out;
	}
	return NULL;
}

static void note(unsigned k, const char *file, uint64_t a, const char *sym)
{
	total[k]++;
	if (((k >= K_DIS_NORETURN && k <= K_DIS_OTHER) || getenv("AN_SHOW_ALL")) &&
	    shown[k] < show) {
		shown[k]++;
		printf("  example %s: %s 0x%llx %s\n", kind_name(k), file,
		       (unsigned long long)a, sym ? sym : "?");
	}
}

/* Compares every instruction of every FDE of path (every sample-th FDE).
 * A disagreement is "after a call that does not return" when the CFI's
 * height changes across a call (which a returning call never does) and
 * the analysis carried the height over, until the two agree again. */
static int compare_file(struct stacksnap_ctx *ctx, const char *path,
			unsigned sample)
{
	unsigned long cnt[K_COUNT] = { 0 }, nskip = 0;
	struct module *mod = NULL;
	const struct unwind_table *t;
	struct symtab *st;
	uint64_t *starts;
	size_t nstarts;
	Dwarf_CFI *cfi;
	csh cs;
	cs_insn *in;

	if (module__get_file(ctx, path, path, NULL, 0, &mod)) {
		printf("FAIL %s: cannot open\n", path);
		return -1;
	}
	t = module__table_whole(ctx, mod);
	st = module__symtab(ctx, mod);
	starts = fde_starts(mod->img->elf, &nstarts);
	cfi = dwarf_getcfi_elf(mod->img->elf);
	if (!t || !starts || !cfi) {
		printf("FAIL %s: no CFI table / .eh_frame_hdr\n", path);
		return -1;
	}
	cs_open(CS_ARCH_X86, CS_MODE_64, &cs);
	in = cs_malloc(cs);
	for (size_t f = 0; f < nstarts; f += sample) {
		Dwarf_Frame *fr;
		Dwarf_Addr s, e;
		uint64_t ss = 0, se = 0;
		const char *sym;
		struct analysis_fn *fn;
		uint8_t *code;
		bool cold, prev_call = false, in_noreturn = false;
		int prev_off = 0, prev_known = 0, nr_delta = 0, entry_delta = 0;

		/* The FDE's range: libdw's frame info gives only the range of
		 * one row, so the next FDE's start bounds it (padding between
		 * functions is counted as such). */
		if (f + 1 >= nstarts || dwarf_cfi_addrframe(cfi, starts[f], &fr)) {
			nskip++;
			continue;
		}
		free(fr);
		s = starts[f];
		e = starts[f + 1];
		if (e <= s || e - s > (1u << 20)) {
			nskip++;
			continue;
		}
		sym = st ? symtab__lookup_range(st, s, &ss, &se) : NULL;
		cold = sym && analysis__is_cold(sym);
		code = malloc(e - s);
		if (module__read_code(mod, s, code, e - s) ||
		    analysis__function(code, s, e, &fn)) {
			free(code);
			continue;
		}
		const uint8_t *p = code;
		size_t left = e - s;
		uint64_t a = s;
		while (cs_disasm_iter(cs, &p, &left, &a, in)) {
			uint64_t ia = in->address;
			const struct unwind_row *row = unwind_table__lookup(t, ia);
			struct analysis_result r;
			int off = row ? row->cfa_off : 0;
			bool rsp_rule = row && row->cfa_kind == UT_CFA_RSP;
			unsigned k;

			if (ia == s && rsp_rule)
				entry_delta = 8 - off;

			if (!row || (row->cfa_kind != UT_CFA_RSP &&
				     row->cfa_kind != UT_CFA_RBP)) {
				k = K_ORACLE_OTHER;
			} else if (!sym || ss != s) {
				/* the stepper finds functions by symbol */
				k = K_UNKNOWN + ANALYSIS_WHY_NO_SYMBOL;
			} else if (cold) {
				k = K_UNKNOWN + ANALYSIS_WHY_COLD;
			} else if (analysis__query(fn, ia, true, &r)) {
				k = K_UNKNOWN + r.why;
				if (r.why == ANALYSIS_WHY_UNREACHED &&
				    (in->id == X86_INS_NOP || in->id == X86_INS_INT3))
					k = K_PADDING;
			} else if (rsp_rule ? r.rsp_ok && r.cfa_rsp == off
					    : r.cfa_rbp == off) {
				k = K_AGREE;
			} else if (!rsp_rule && !r.cfa_rbp) {
				k = K_DIS_REG;
			} else if (entry_delta &&
				   (rsp_rule ? r.rsp_ok && r.cfa_rsp - off == entry_delta
					     : r.cfa_rbp - off == entry_delta)) {
				k = K_DIS_ENTRY;
			} else if (rsp_rule && off == 8 && r.rsp_ok && r.cfa_rsp > 8) {
				k = K_DIS_ASM_CFI;
			} else if (rsp_rule && r.rsp_ok &&
				   ((prev_call && prev_known && prev_off != off) ||
				    (in_noreturn && r.cfa_rsp - off == nr_delta))) {
				k = K_DIS_NORETURN;
				in_noreturn = true;
				nr_delta = r.cfa_rsp - off;
			} else {
				k = K_DIS_OTHER;
			}
			if (k == K_AGREE)
				in_noreturn = false;
			cnt[k]++;
			note(k, path, ia, sym);
			/* Heights across a call are equal unless the call does
			 * not return: the CFI then describes other code, which
			 * the analysis reaches only by the fall-through. */
			prev_call = in->id == X86_INS_CALL;
			prev_known = rsp_rule;
			prev_off = off;
		}
		if (left) /* the linear decode stopped: Capstone 4 lacks it */
			note(K_UNKNOWN + ANALYSIS_WHY_DECODE, path, a, sym),
				cnt[K_UNKNOWN + ANALYSIS_WHY_DECODE]++;
		analysis__fn_free(fn);
		free(code);
	}
	cs_free(in, 1);
	cs_close(&cs);
	free(starts);
	unsigned long all = 0, definite = 0;
	for (unsigned k = 0; k < K_COUNT; k++)
		if (k != K_ORACLE_OTHER)
			all += cnt[k];
	for (unsigned k = K_DIS_NORETURN; k <= K_DIS_OTHER; k++)
		definite += cnt[k];
	if (nskip)
		printf("  %s: %lu FDEs libdw could not read, skipped\n", path, nskip);
	printf("file %s insns %lu agree %lu unknown %lu disagree %lu agree_pct %.2f\n",
	       path, all, cnt[K_AGREE], all - cnt[K_AGREE] - definite, definite,
	       all ? 100.0 * cnt[K_AGREE] / all : 0.0);
	module__put(mod);
	return 0;
}

int main(int argc, char **argv)
{
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(NULL);
	unsigned sample = 1;
	int i = 1, rc = 0;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--sample") && i + 1 < argc)
			sample = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--show") && i + 1 < argc)
			show = (unsigned)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: analysis_diff [--sample N] [--show N] FILE...\n");
			return 2;
		}
	}
	if (!ctx || i == argc || !sample) {
		fprintf(stderr, "usage: analysis_diff [--sample N] [--show N] FILE...\n");
		return 2;
	}
	elf_version(EV_CURRENT);
	for (; i < argc; i++)
		if (compare_file(ctx, argv[i], sample))
			rc = 1;
	unsigned long all = 0;
	for (unsigned k = 0; k < K_COUNT; k++)
		if (k != K_ORACLE_OTHER)
			all += total[k];
	for (unsigned k = 0; k < K_COUNT; k++)
		if (total[k])
			printf("kind %lu %.2f%% %s\n", total[k],
			       all ? 100.0 * total[k] / all : 0.0, kind_name(k));
	printf("total insns %lu agree %lu agree_pct %.2f\n", all, total[K_AGREE],
	       all ? 100.0 * total[K_AGREE] / all : 0.0);
	stacksnap_ctx__free(ctx);
	return rc;
}
