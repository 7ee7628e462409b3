/* bench_table.c - micro-benchmark of the unwind table: compile time, size
 * against the CFI it came from, warm lookup and eval_dwarf cost. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "table/unwind_table.h"

#define COMPILE_RUNS 21
#define BATCHES 9
/* Random addresses per batch: few enough that the address list does not
 * push the table out of the cache (this measures warm lookups). */
#define LOOKUPS (1u << 14)
#define LOOKUP_REPS 64

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int fake_read(void *user, uint64_t addr, void *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = (uint8_t)((addr + i) * 131);
	return 0;
}

/* The .eh_frame of path, read with libelf; the Elf stays open. */
static int load_eh_frame(const char *path, Elf **elfp, struct cfi_input *in)
{
	int fd = open(path, O_RDONLY);
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, ".eh_frame"))
			continue;
		d = elf_rawdata(scn, NULL);
		if (!d)
			return -1;
		*in = (struct cfi_input){ .data = d->d_buf, .size = d->d_size,
					  .vaddr = sh.sh_addr,
					  .is_eh_frame = 1 };
		*elfp = elf;
		return 0;
	}
	return -1;
}

static void bench_file(const char *path)
{
	struct cfi_input in;
	struct unwind_table *t = NULL;
	struct unwind_table_stats st;
	double compile[COMPILE_RUNS], lookup[BATCHES], eval[BATCHES];
	uint64_t lo, hi, seed = 0x9e3779b97f4a7c15ull, sink = 0;
	uint64_t *addrs, dwarf_addrs[4096];
	size_t ndwarf = 0;
	Elf *elf = NULL;

	if (load_eh_frame(path, &elf, &in)) {
		printf("%-40s (no .eh_frame)\n", path);
		return;
	}
	for (int i = 0; i < COMPILE_RUNS; i++) {
		double t0 = now_ns();

		if (unwind_table__compile(&in, 1, NULL, &t))
			return;
		compile[i] = (now_ns() - t0) / 1e6;
		if (i + 1 < COMPILE_RUNS)
			unwind_table__free(t);
	}
	unwind_table__stats(t, &st);
	unwind_table__range(t, &lo, &hi);
	addrs = malloc(sizeof(*addrs) * LOOKUPS);
	for (size_t i = 0; i < LOOKUPS; i++)
		addrs[i] = lo + rng(&seed) % (hi - lo);
	for (int b = 0; b < BATCHES; b++) {
		double t0 = now_ns();

		for (size_t rep = 0; rep < LOOKUP_REPS; rep++) {
			for (size_t i = 0; i < LOOKUPS; i++) {
				const struct unwind_row *r =
					unwind_table__lookup(t, addrs[i]);
				sink += r ? (uint64_t)r->cfa_off : 1;
			}
		}
		lookup[b] = (now_ns() - t0) / ((double)LOOKUPS * LOOKUP_REPS);
	}
	for (uint64_t a = lo; a < hi && ndwarf < 4096; a++) {
		const struct unwind_row *r = unwind_table__lookup(t, a);

		if (r && r->cfa_kind == UT_CFA_DWARF)
			dwarf_addrs[ndwarf++] = a;
	}
	for (int b = 0; b < BATCHES && ndwarf; b++) {
		struct stacksnap_regs regs = { .valid = (1u << 17) - 1 };
		struct stacksnap_regs caller;
		uint64_t cfa;
		size_t n = 0;
		double t0 = now_ns();

		for (unsigned k = 0; k < 17; k++)
			regs.regs[k] = 0x7ffd00000000ull + k * 0x100;
		for (size_t rep = 0; rep < 20000 / ndwarf + 1; rep++) {
			for (size_t i = 0; i < ndwarf; i++, n++) {
				regs.regs[16] = dwarf_addrs[i];
				unwind_table__eval_dwarf(
					t, unwind_table__lookup(t,
								dwarf_addrs[i]),
					dwarf_addrs[i], 0, &regs, fake_read,
					NULL, &caller, &cfa);
				sink += cfa;
			}
		}
		eval[b] = (now_ns() - t0) / n;
	}
	char ev[32] = "-";

	if (ndwarf)
		snprintf(ev, sizeof(ev), "%.1f", median(eval, BATCHES));
	printf("%-38s %9.3f %9zu %9zu %6.1f%% %7zu %6zu %8.1f %9s\n", path,
	       median(compile, COMPILE_RUNS), in.size, st.bytes,
	       100.0 * st.bytes / in.size, st.rows, st.dwarf_rows,
	       median(lookup, BATCHES), ev);
	if (sink == 42)
		puts("");
	free(addrs);
	unwind_table__free(t);
	elf_end(elf);
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/lib64/ld-linux-x86-64.so.2",
	};

	elf_version(EV_CURRENT);
	printf("%-38s %9s %9s %9s %7s %7s %6s %8s %9s\n", "file",
	       "compile", "eh_frame", "table", "ratio", "rows", "dwarf",
	       "lookup", "eval");
	printf("%-38s %9s %9s %9s %7s %7s %6s %8s %9s\n", "", "ms(med)",
	       "bytes", "bytes", "", "", "rows", "ns(med)", "ns(med)");
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			bench_file(argv[i]);
	} else {
		for (size_t i = 0; i < sizeof(defaults) / sizeof(*defaults);
		     i++)
			bench_file(defaults[i]);
	}
	return 0;
}
