/* test_symbolize.c - symbol names and inline chains compared with what gdb
 * and eu-addr2line say for the same addresses of real libraries and of a
 * fixture built here. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_image.h"
#include "harness.h"
#include "symbolize/symbolize.h"

static char tmpdir[] = "/tmp/ss_symtest.XXXXXX";


/* gdb prints, per address: the minimal symbol ("info symbol"), and the
 * name `bt` gives the containing function (find_frame_funname): the
 * outermost DWARF function of the block, else the minimal symbol. */
static const char gdb_script[] =
	"import gdb\n"
	"out = open(OUT, 'w')\n"
	"for line in open(ADDRS):\n"
	"    a = int(line, 16)\n"
	"    ms = gdb.execute('info symbol 0x%x' % a, to_string=True).strip()\n"
	"    mname, mstart = '-', 0\n"
	"    if ' in section ' in ms:\n"
	"        head = ms.split(' in section ')[0]\n"
	"        if ' + ' in head:\n"
	"            mname, off = head.rsplit(' + ', 1)\n"
	"            mstart = a - int(off)\n"
	"        else:\n"
	"            mname, mstart = head, a\n"
	"    b = gdb.block_for_pc(a)\n"
	"    f, fstart = None, 0\n"
	"    while b is not None and not b.is_global and not b.is_static:\n"
	"        if b.function is not None:\n"
	"            f, fstart = b.function, b.start\n"
	"        b = b.superblock\n"
	"    bt = mname\n"
	"    if f is not None:\n"
	"        bt = f.print_name\n"
	"    out.write('%x\\t%s\\t%s\\t%x\\n' % (a, mname, bt, mstart))\n"
	"out.close()\n";

struct gdb_row {
	uint64_t addr;
	char msym[1024];
	char bt[1024];
	uint64_t mstart; /* where gdb's minimal symbol starts */
};

/* Runs gdb once over file for every address in addrs[]; fills rows. */
static size_t ask_gdb(const char *file, const uint64_t *addrs, size_t n,
		      struct gdb_row *rows)
{
	char apath[256], opath[256], spath[256], line[4096];
	FILE *f;
	size_t got = 0;

	snprintf(apath, sizeof(apath), "%s/addrs.txt", tmpdir);
	snprintf(opath, sizeof(opath), "%s/gdb_out.txt", tmpdir);
	snprintf(spath, sizeof(spath), "%s/q.py", tmpdir);
	f = fopen(apath, "w");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%lx\n", (unsigned long)addrs[i]);
	fclose(f);
	f = fopen(spath, "w");
	fprintf(f, "OUT = '%s'\nADDRS = '%s'\n%s", opath, apath, gdb_script);
	fclose(f);
	unlink(opath);
	if (harness_sh("timeout 300 gdb -batch -nx -ex 'source %s' %s >/dev/null 2>&1",
	       spath, file) != 0)
		return 0;
	f = fopen(opath, "r");
	if (!f)
		return 0;
	while (got < n && fgets(line, sizeof(line), f)) {
		char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		char *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;

		if (!t3)
			continue;
		*t1 = *t2 = *t3 = 0;
		line[strcspn(line, "\n")] = 0;
		rows[got].addr = strtoull(line, NULL, 16);
		rows[got].mstart = strtoull(t3 + 1, NULL, 16);
		snprintf(rows[got].msym, sizeof(rows[got].msym), "%s", t1 + 1);
		snprintf(rows[got].bt, sizeof(rows[got].bt), "%s", t2 + 1);
		got++;
	}
	fclose(f);
	return got;
}

/* An address inside every step-th function symbol `nm -S` lists: one
 * byte in, or further where nm gives a size (offsets are compared too). */
static size_t pick_addrs(const char *nm_cmd, size_t step, uint64_t *addrs,
			 size_t n, size_t max)
{
	char line[4096];
	FILE *p = popen(nm_cmd, "r");
	size_t k = 0;

	if (!p)
		return n;
	while (fgets(line, sizeof(line), p) && n < max) {
		char type;
		unsigned long long a, size = 0;

		if (sscanf(line, "%llx %llx %c", &a, &size, &type) != 3 &&
		    (size = 0, sscanf(line, "%llx %c", &a, &type) != 2))
			continue;
		if (!strchr("TtWiI", type))
			continue;
		if (k++ % step == 0)
			addrs[n++] = a + (size > 1 ? 1 + (k * 37) % (size - 1) : 1);
	}
	pclose(p);
	return n;
}

/* Compares our minimal-symbol and bt names for a library with gdb's. */
static void compare_with_gdb(const char *lib, size_t step_dyn, size_t step_dbg)
{
	struct elf_image *img = NULL, *dbg = NULL;
	struct symtab *st = NULL;
	struct line_info *li = NULL;
	static uint64_t addrs[2048];
	static struct gdb_row rows[2048];
	char cmd[1024];
	size_t n = 0, got, msym_bad = 0, bt_bad = 0, off_bad = 0;

	CHECK(elf_image__open(lib, NULL, &img) == 0);
	if (!img)
		return;
	elf_image__open_debug(img, NULL, NULL, &dbg);
	{
		const struct elf_image *imgs[] = { img, dbg };

		CHECK(symtab__build(imgs, 2, NULL, &st) == 0);
	}
	line_info__open(dbg ? dbg : img, NULL, &li);

	snprintf(cmd, sizeof(cmd), "nm -S -D --defined-only %s 2>/dev/null | sort -u", lib);
	n = pick_addrs(cmd, step_dyn, addrs, n, 2048);
	if (dbg) {
		snprintf(cmd, sizeof(cmd), "nm -S %s 2>/dev/null | sort -u", dbg->path);
		n = pick_addrs(cmd, step_dbg, addrs, n, 2048);
	}
	got = ask_gdb(lib, addrs, n, rows);
	CHECKF(got == n && n > 100, "%s: gdb answered %zu of %zu", lib, got, n);
	for (size_t i = 0; i < got; i++) {
		uint64_t start;
		const char *ours = symtab__lookup(st, rows[i].addr, 0, &start);
		struct stacksnap_sym out[16];
		int k = symbolize__lookup(st, li, rows[i].addr, 0, out, 16);
		const char *bt = k > 0 ? out[k - 1].function : NULL;

		/* The offset printed after the name: from the function's
		 * start, where gdb's minimal symbol starts (also for a
		 * function known only by DW_AT_ranges, and in a ".cold" part,
		 * from that part's symbol). */
		if (bt && rows[i].msym[0] != '-' &&
		    out[k - 1].offset != rows[i].addr - rows[i].mstart &&
		    off_bad++ < 10)
			fprintf(stderr, "  %s %#lx: %s+%#lx, gdb %s+%#lx\n", lib,
				(unsigned long)rows[i].addr, bt,
				(unsigned long)out[k - 1].offset, rows[i].msym,
				(unsigned long)(rows[i].addr - rows[i].mstart));

		if (strcmp(ours ? ours : "-", rows[i].msym) != 0) {
			if (msym_bad++ < 10)
				fprintf(stderr, "  %s %#lx: symtab '%s', gdb info symbol '%s'\n",
					lib, (unsigned long)rows[i].addr,
					ours ? ours : "-", rows[i].msym);
		}
		if (strcmp(bt ? bt : "-", rows[i].bt) != 0) {
			if (bt_bad++ < 10)
				fprintf(stderr, "  %s %#lx: symbolize '%s', gdb bt '%s'\n",
					lib, (unsigned long)rows[i].addr,
					bt ? bt : "-", rows[i].bt);
		}
	}
	printf("  %s: %zu addresses, %zu minimal-symbol, %zu bt-name and %zu offset mismatches\n",
	       lib, got, msym_bad, bt_bad, off_bad);
	CHECK(msym_bad == 0);
	CHECK(bt_bad == 0);
	CHECK(off_bad == 0);
	line_info__free(li);
	symtab__free(st);
	elf_image__free(dbg);
	elf_image__free(img);
}

static void gdb_names_libc(void)
{
	compare_with_gdb("/lib/x86_64-linux-gnu/libc.so.6", 7, 23);
}

static void gdb_names_ld_so(void)
{
	compare_with_gdb("/lib64/ld-linux-x86-64.so.2", 1, 3);
}

static void gdb_names_libstdcxx(void)
{
	compare_with_gdb("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 13, 1);
}

/* The fixture for file:line and inlines: -O2 -g with inlined calls. */
static const char inline_src[] =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"static inline __attribute__((always_inline)) int leaf(int x)\n"
	"{\n"
	"\tif (x == 12345) abort();\n"
	"\treturn x * 3 + 1;\n"
	"}\n"
	"static inline __attribute__((always_inline)) int mid(int x)\n"
	"{\n"
	"\tint r = leaf(x + 1);\n"
	"\treturn r ^ 5;\n"
	"}\n"
	"__attribute__((noinline)) int outer(int x)\n"
	"{\n"
	"\tint s = mid(x);\n"
	"\treturn s + mid(s);\n"
	"}\n"
	"namespace ns { template <typename T> __attribute__((noinline)) T twice(T v) { return v + v; } }\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tprintf(\"%d\\n\", outer(argc) + ns::twice<int>(argc));\n"
	"\treturn 0;\n"
	"}\n";

/* Runs eu-addr2line -i -f for addr; returns pairs of (function, file:line)
 * lines, up to max pairs. */
static int addr2line(const char *file, uint64_t addr, char fn[][256],
		     char loc[][512], int max)
{
	char cmd[1024], a[256], b[512];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "eu-addr2line -i -f -C -e %s %#lx", file,
		 (unsigned long)addr);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (n < max && fgets(a, sizeof(a), p) && fgets(b, sizeof(b), p)) {
		a[strcspn(a, "\n")] = 0;
		b[strcspn(b, "\n")] = 0;
		strcpy(fn[n], a);
		strcpy(loc[n], b);
		n++;
	}
	pclose(p);
	return n;
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p;
}

static void inline_chain_vs_addr2line(void)
{
	char src[512], bin[512];
	struct elf_image *img = NULL;
	struct symtab *st = NULL;
	struct line_info *li = NULL;
	size_t checked = 0, with_inlines = 0, bad = 0;

	snprintf(src, sizeof(src), "%s/inl.cc", tmpdir);
	snprintf(bin, sizeof(bin), "%s/inl", tmpdir);
	{
		FILE *f = fopen(src, "w");

		fputs(inline_src, f);
		fclose(f);
	}
	CHECK(harness_sh("g++ -O2 -g -o %s %s", bin, src) == 0);
	CHECK(elf_image__open(bin, NULL, &img) == 0);
	if (!img)
		return;
	{
		const struct elf_image *imgs[] = { img };

		CHECK(symtab__build(imgs, 1, NULL, &st) == 0);
	}
	CHECK(line_info__open(img, NULL, &li) == 0 && li);
	for (uint64_t a = img->text.vaddr; li && a < img->text.vaddr + img->text.size; a++) {
		struct stacksnap_sym out[8];
		char fn[8][256], loc[8][512];
		int k = line_info__lookup(li, a, 0, out, 8);
		int m;
		uint64_t start;
		const char *name = symtab__lookup(st, a, 0, &start);

		if (k <= 0 || !name ||
		    (strncmp(name, "outer", 5) && strncmp(name, "ns::twice", 9) &&
		     strncmp(name, "main", 4)))
			continue;
		m = addr2line(bin, a, fn, loc, 8);
		checked++;
		if (k > 1) {
			struct stacksnap_sym one[1];

			with_inlines++;
			/* Names only, in a one-entry buffer: the containing
			 * function, not the innermost inline. */
			if (symbolize__lookup(st, li, a, SYM_NO_LINES | SYM_FUNCTION_ONLY,
					      one, 1) != 1 ||
			    !one[0].function || !out[k - 1].function ||
			    strcmp(one[0].function, out[k - 1].function)) {
				if (bad++ < 5)
					fprintf(stderr, "  %#lx: function only, one entry: %s, want %s\n",
						(unsigned long)a, one[0].function,
						out[k - 1].function);
			}
		}
		if (m != k) {
			if (bad++ < 5)
				fprintf(stderr, "  %#lx: %d frames, eu-addr2line %d\n",
					(unsigned long)a, k, m);
			continue;
		}
		for (int i = 0; i < k; i++) {
			char mine[600];

			snprintf(mine, sizeof(mine), "%s:%d", base_name(out[i].file),
				 out[i].line);
			/* eu-addr2line adds ":column"; compare file:line. */
			if (!strstr(loc[i], mine) ||
			    strncmp(fn[i], out[i].function ? out[i].function : "??",
				    strlen(out[i].function ? out[i].function : "??"))) {
				if (bad++ < 5)
					fprintf(stderr, "  %#lx frame %d: ours %s %s, eu-addr2line %s %s\n",
						(unsigned long)a, i, out[i].function, mine,
						fn[i], loc[i]);
			}
		}
		if (checked > 400)
			break;
	}
	printf("  %zu addresses checked, %zu with inline frames, %zu mismatches\n",
	       checked, with_inlines, bad);
	CHECK(checked > 20 && with_inlines > 5 && bad == 0);
	line_info__free(li);
	symtab__free(st);
	elf_image__free(img);
}

static void demangle_and_strip(void)
{
	char *d = demangle("_ZN2ns5twiceIiEET_S1_");

	CHECK(d && !strcmp(d, "int ns::twice<int>(int)"));
	free(d);
	CHECK(demangle("main") == NULL);
	CHECK(demangle("_Znotvalid") == NULL);
}

/* Rust symbols as gdb 13 prints them as minimal symbols (checked on live
 * processes, tests/integration/rust_names): legacy with the hash kept,
 * v0 with the crate disambiguators; a C++ name stays the C++ runtime's. */
static void demangle_rust(void)
{
	static const char *const cases[][2] = {
		{ "_ZN8rs_names4main17h089e9077150c930cE",
		  "rs_names::main::h089e9077150c930c" },
		{ "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h2f2877fe38950915E",
		  "std::rt::lang_start::{{closure}}::h2f2877fe38950915" },
		{ "_ZN3std4sync4mpmc4list16Channel$LT$T$GT$4recv17hbd2d3272cd441545E.llvm.123",
		  "std::sync::mpmc::list::Channel<T>::recv::hbd2d3272cd441545" },
		{ "_RINvCs7Z9DjfgVgyr_8rs_names13generic_sleepINtNtCslNYArtu3iFV_5alloc3vec3VechEEB2_",
		  "rs_names[5d05b3d299df4931]::generic_sleep::<alloc[fdfd2bd8633a6659]::vec::Vec<u8>>" },
		{ "_RNCNvCs7Z9DjfgVgyr_8rs_names4main0B3_",
		  "rs_names[5d05b3d299df4931]::main::{closure#0}" },
		{ "_ZN2ns1WIiE3runEi", "ns::W<int>::run(int)" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = demangle(cases[i][0]);

		CHECK(d && !strcmp(d, cases[i][1]));
		free(d);
	}
	CHECK(demangle("_RNvC") == NULL);
}

/* gdb's bt for C++: with DWARF "foo<int>" / "ns::W<int>::run"; from ELF
 * symbols only, the full demangling "int foo<int>(int)" (checked by hand
 * on live processes with gdb 13). */
static void cxx_frame_names(void)
{
	static const char src[] =
		"#include <unistd.h>\n"
		"namespace ns { template <typename T> struct W { __attribute__((noinline)) T run(T v) { pause(); return v; } }; }\n"
		"template <typename T> __attribute__((noinline)) T foo(T v) { ns::W<T> w; return w.run(v) + 1; }\n"
		"int main(int argc, char **) { return foo<int>(argc); }\n";
	static const struct {
		const char *mangled, *dwarf, *elf;
	} want[] = {
		{ "_Z3fooIiET_S0_", "foo<int>", "int foo<int>(int)" },
		{ "_ZN2ns1WIiE3runEi", "ns::W<int>::run", "ns::W<int>::run(int)" },
	};
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cx.cc", tmpdir);
	f = fopen(path, "w");
	fputs(src, f);
	fclose(f);
	CHECK(harness_sh("cd %s && g++ -O1 -g -o cx cx.cc", tmpdir) == 0);
	for (int dbg = 1; dbg >= 0; dbg--) {
		struct elf_image *img = NULL;
		struct symtab *st = NULL;
		struct line_info *li = NULL;

		snprintf(path, sizeof(path), "%s/cx", tmpdir);
		if (!dbg)
			CHECK(harness_sh("strip -g %s", path) == 0);
		CHECK(elf_image__open(path, NULL, &img) == 0);
		if (!img)
			return;
		{
			const struct elf_image *imgs[] = { img };

			CHECK(symtab__build(imgs, 1, NULL, &st) == 0);
		}
		line_info__open(img, NULL, &li);
		CHECK(!li == !dbg);
		for (size_t i = 0; i < 2; i++) {
			char cmd[700], line[256];
			unsigned long long a = 0;
			struct stacksnap_sym out[4];
			FILE *p;
			int k;

			snprintf(cmd, sizeof(cmd), "nm %s | awk '$3==\"%s\"{print $1}'",
				 path, want[i].mangled);
			p = popen(cmd, "r");
			if (p && fgets(line, sizeof(line), p))
				a = strtoull(line, NULL, 16);
			if (p)
				pclose(p);
			k = symbolize__lookup(st, li, a + 1, 0, out, 4);
			CHECKF(k >= 1 && !strcmp(out[k - 1].function,
						 dbg ? want[i].dwarf : want[i].elf),
			       "%s: got '%s'", want[i].mangled,
			       k >= 1 ? out[k - 1].function : "-");
		}
		line_info__free(li);
		symtab__free(st);
		elf_image__free(img);
	}
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* libc's debug file has compressed sections: line_info reads them through
 * its in-memory ELF (names now, line tables on first use). The oracle is
 * libdw reading an uncompressed copy (objcopy --decompress-debug-sections)
 * as it is: every field of the whole inline chain must match, names-only
 * lookups first (so the line tables are inflated late, mid-run), then
 * with lines. */
static void compressed_dwarf_vs_plain(void)
{
	struct elf_image *img = NULL, *dbg = NULL, *plain = NULL;
	struct line_info *a = NULL, *b = NULL;
	static uint64_t addrs[4096];
	char cmd[1024], path[512];
	size_t n, bad = 0, named = 0;

	CHECK(elf_image__open("/lib/x86_64-linux-gnu/libc.so.6", NULL, &img) == 0);
	if (!img)
		return;
	elf_image__open_debug(img, NULL, NULL, &dbg);
	CHECKF(dbg, "no debug file for libc (install libc6-dbg)");
	if (!dbg)
		goto out;
	snprintf(path, sizeof(path), "%s/libc-plain.debug", tmpdir);
	CHECK(harness_sh("objcopy --decompress-debug-sections %s %s", dbg->path,
			 path) == 0);
	CHECK(elf_image__open(path, NULL, &plain) == 0);
	CHECK(line_info__open(dbg, NULL, &a) == 0 && a);
	CHECK(plain && line_info__open(plain, NULL, &b) == 0 && b);
	snprintf(cmd, sizeof(cmd), "nm -S %s 2>/dev/null | sort -u", dbg->path);
	n = pick_addrs(cmd, 3, addrs, 0, 4096);
	CHECKF(n > 1000, "only %zu addresses", n);
	for (int pass = 0; pass < 2 && a && b; pass++) {
		unsigned flags = pass ? 0 : SYM_NO_LINES | SYM_FUNCTION_ONLY;

		for (size_t i = 0; i < n; i++) {
			struct stacksnap_sym x[16], y[16];
			uint64_t ex = 0, ey = 0;
			int kx, ky;

			memset(x, 0, sizeof(x));
			memset(y, 0, sizeof(y));
			kx = line_info__lookup_entry(a, addrs[i], flags, x, 16, &ex);
			ky = line_info__lookup_entry(b, addrs[i], flags, y, 16, &ey);
			bool same = kx == ky && ex == ey;

			for (int k = 0; same && k < kx; k++)
				same = same_str(x[k].function, y[k].function) &&
				       same_str(x[k].file, y[k].file) &&
				       x[k].line == y[k].line &&
				       x[k].column == y[k].column &&
				       x[k].inlined == y[k].inlined;
			named += kx > 0;
			if (!same && bad++ < 10)
				fprintf(stderr, "  %#lx (pass %d): %d entries '%s' vs %d '%s'\n",
					(unsigned long)addrs[i], pass, kx,
					kx > 0 && x[kx - 1].function ? x[kx - 1].function : "-",
					ky, ky > 0 && y[ky - 1].function ? y[ky - 1].function : "-");
		}
	}
	printf("  libc: %zu addresses twice, %zu named, %zu differ\n", n, named, bad);
	CHECK(bad == 0);
	CHECK(named > n);
out:
	line_info__free(a);
	line_info__free(b);
	elf_image__free(plain);
	elf_image__free(dbg);
	elf_image__free(img);
}

static void setup(void)
{
	CHECK(mkdtemp(tmpdir) != NULL);
}

static void cleanup(void)
{
	harness_sh("rm -rf %s", tmpdir);
}

TEST_MAIN("symbolize", TEST(setup), TEST(demangle_and_strip), TEST(demangle_rust), TEST(cxx_frame_names),
	  TEST(inline_chain_vs_addr2line), TEST(gdb_names_libc),
	  TEST(gdb_names_ld_so), TEST(gdb_names_libstdcxx),
	  TEST(compressed_dwarf_vs_plain), TEST(cleanup))
