/* test_elf.c - ELF images: build-id, sections, load bias against real
 * mappings, separate debug files (build-id, .gnu_debuglink with CRC,
 * MiniDebugInfo) and hostile input, on fixtures built at run time. */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_image.h"
#include "harness.h"
#include "symbolize/symbolize.h"

static char tmpdir[] = "/tmp/ss_elftest.XXXXXX";


static const char prog_src[] =
	"#include <stdio.h>\n"
	"#include <string.h>\n"
	"#include <unistd.h>\n"
	"int fixture_func(int x) { return x * 7; }\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tchar self[4096], line[8192];\n"
	"\tssize_t n = readlink(\"/proc/self/exe\", self, sizeof(self) - 1);\n"
	"\tFILE *f = fopen(\"/proc/self/maps\", \"r\");\n"
	"\tself[n > 0 ? n : 0] = 0;\n"
	"\tprintf(\"main %lx\\n\", (unsigned long)&main);\n"
	"\twhile (fgets(line, sizeof(line), f))\n"
	"\t\tif (strstr(line, self)) fputs(line, stdout);\n"
	"\treturn fixture_func(argc) == 0;\n"
	"}\n";

static char *fixture(const char *name)
{
	static char path[8][512];
	static int k;
	char *p = path[k++ % 8];

	snprintf(p, 512, "%s/%s", tmpdir, name);
	return p;
}

static uint64_t nm_addr(const char *file, const char *sym)
{
	char cmd[1024], line[512];
	unsigned long long a = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s | awk '$3==\"%s\"{print $1}'", file, sym);
	p = popen(cmd, "r");
	if (p && fgets(line, sizeof(line), p))
		a = strtoull(line, NULL, 16);
	if (p)
		pclose(p);
	return a;
}

/* Runs the fixture, and checks elf_image__load_bias for each of its
 * mappings against the address main really got. */
static void check_bias_live(const char *bin)
{
	char cmd[1024], line[8192];
	struct elf_image *img = NULL;
	uint64_t main_vaddr = nm_addr(bin, "main"), main_rt = 0;
	int maps = 0;
	FILE *p;

	CHECK(elf_image__open(bin, NULL, &img) == 0);
	if (!img)
		return;
	snprintf(cmd, sizeof(cmd), "%s", bin);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		unsigned long long start, end, off;
		char perms[8];
		uint64_t bias = 0;

		if (sscanf(line, "main %llx", &start) == 1) {
			main_rt = start;
			continue;
		}
		if (sscanf(line, "%llx-%llx %7s %llx", &start, &end, perms, &off) != 4)
			continue;
		maps++;
		CHECKF(elf_image__load_bias(img, start, off, 0, &bias) == 0,
		       "%s: mapping at offset %#llx", bin, off);
		/* A read-only piece can be ambiguous: the RELRO head of the
		 * data segment and .rodata may start on the same file page.
		 * The protection tells executable and writable pieces apart. */
		if (!strchr(perms, 'x') && !strchr(perms, 'w'))
			continue;
		CHECK(elf_image__load_bias(img, start, off,
					   strchr(perms, 'x') ? PF_X : PF_W,
					   &bias) == 0);
		CHECKF(bias == main_rt - main_vaddr,
		       "%s: mapping %s at offset %#llx: bias %#lx, real %#lx", bin,
		       perms, off, (unsigned long)bias,
		       (unsigned long)(main_rt - main_vaddr));
	}
	if (p)
		pclose(p);
	CHECKF(maps >= 2 && main_rt, "%s: %d mappings seen", bin, maps);
	elf_image__free(img);
}

static void build_id_matches_readelf(const char *bin)
{
	char cmd[1024], line[512], ours[2 * ELF_BUILD_ID_MAX + 1] = "";
	struct elf_image *img = NULL;
	FILE *p;

	CHECK(elf_image__open(bin, NULL, &img) == 0);
	if (!img)
		return;
	for (size_t i = 0; i < img->build_id_len; i++)
		sprintf(ours + 2 * i, "%02x", img->build_id[i]);
	snprintf(cmd, sizeof(cmd), "readelf -n %s | awk '/Build ID/{print $3}'", bin);
	p = popen(cmd, "r");
	CHECK(p && fgets(line, sizeof(line), p));
	if (p)
		pclose(p);
	line[strcspn(line, "\n")] = 0;
	CHECKF(!strcmp(ours, line), "%s: build-id %s, readelf %s", bin, ours, line);
	elf_image__free(img);
}

static void layouts(void)
{
	static const struct {
		const char *name, *flags;
		uint16_t type;
	} v[] = {
		{ "pie", "-fPIE -pie", ET_DYN },
		{ "pie_sep", "-fPIE -pie -Wl,-z,separate-code", ET_DYN },
		{ "pie_nosep", "-fPIE -pie -Wl,-z,noseparate-code", ET_DYN },
		{ "nopie", "-fno-PIE -no-pie", ET_EXEC },
		{ "nopie_nosep", "-fno-PIE -no-pie -Wl,-z,noseparate-code", ET_EXEC },
		{ "static", "-static ", ET_EXEC },
		{ "static_pie", "-static-pie -fPIE", ET_DYN },
	};
	char *src = fixture("prog.c");
	FILE *f = fopen(src, "w");

	fputs(prog_src, f);
	fclose(f);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *bin = fixture(v[i].name);
		struct elf_image *img = NULL;

		if (harness_sh("gcc -O1 -g -Wl,--build-id %s -o %s %s 2>/dev/null",
		       v[i].flags, bin, src) != 0) {
			printf("  %s: cannot build, skipped\n", v[i].name);
			continue;
		}
		CHECK(elf_image__open(bin, NULL, &img) == 0);
		if (!img)
			continue;
		CHECKF(img->e_type == v[i].type, "%s: e_type %u", v[i].name, img->e_type);
		CHECK(img->nsegs >= 2);
		CHECK(img->text.data && img->text.size > 0);
		/* gcc passes --eh-frame-hdr only for dynamic links. */
		CHECKF(img->eh_frame.data &&
			       (img->eh_frame_hdr.data || strstr(v[i].flags, "-static ")),
		       "%s", v[i].name);
		CHECK(img->has_symtab && img->has_dwarf_info);
		CHECK(img->ino != 0);
		elf_image__free(img);
		build_id_matches_readelf(bin);
		check_bias_live(bin);
	}
}

/* A shared library dlopen'ed by nothing: the test's own libc mapping. */
/* A shell command's output as a number (0: none). */
static unsigned long long sh_number(const char *cmd, int base)
{
	char line[512];
	unsigned long long v = 0;
	FILE *p = popen(cmd, "r");

	if (p && fgets(line, sizeof(line), p))
		v = strtoull(line, NULL, base);
	if (p)
		pclose(p);
	return v;
}

/* The symbol named name among img's tables of type sh_type: its value
 * (0: none); *n counts the tables' entries. */
static uint64_t find_symbol(const struct elf_image *img, uint32_t sh_type,
			    const char *name, size_t *n)
{
	struct elf_symbols it;
	struct elf_symbol sym;
	uint64_t v = 0;
	const char *s;

	*n = 0;
	elf_symbols__init(&it, img, sh_type);
	while (elf_symbols__next(&it, &sym)) {
		++*n;
		if ((s = elf_symbols__name(&it, &sym)) && !strcmp(s, name))
			v = sym.value;
	}
	return v;
}

/* elf_symbols walks .symtab and .dynsym as nm and readelf read them. */
static void symbol_tables(void)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	char *bin = fixture("pie"), cmd[1024];
	struct elf_image *img = NULL;
	size_t n;
	uint64_t v;

	CHECK(elf_image__open(bin, NULL, &img) == 0);
	if (img) {
		v = find_symbol(img, SHT_SYMTAB, "fixture_func", &n);
		CHECK(v && v == nm_addr(bin, "fixture_func"));
		snprintf(cmd, sizeof(cmd), "readelf -sW %s | awk '/^Symbol table .\\.symtab/{t=1;next} "
			 "/^Symbol table/{t=0} t && $1 ~ /^[0-9]+:$/{n++} END{print n}'", bin);
		CHECK_EQ_U64(n, sh_number(cmd, 10));
		CHECK(!find_symbol(img, SHT_DYNSYM, "fixture_func", &n) && n > 1);
	}
	elf_image__free(img);
	img = NULL;
	CHECK(elf_image__open(libc, NULL, &img) == 0);
	if (!img)
		return;
	v = find_symbol(img, SHT_DYNSYM, "malloc", &n);
	snprintf(cmd, sizeof(cmd), "nm -D %s | awk '$3==\"malloc\" || $3 ~ /^malloc@@/{print $1}'",
		 libc);
	CHECK(v && v == sh_number(cmd, 16));
	snprintf(cmd, sizeof(cmd), "readelf --dyn-syms -W %s | awk '$1 ~ /^[0-9]+:$/{n++} END{print n}'",
		 libc);
	CHECK_EQ_U64(n, sh_number(cmd, 10));
	/* A symbol's file bytes: malloc's code; none for __environ (.bss);
	   an address no segment covers. */
	{
		const uint8_t *p = NULL;
		uint64_t env = find_symbol(img, SHT_DYNSYM, "__environ", &n);

		CHECK(elf_image__vaddr_bytes(img, v, 16, &p) == 0 && p &&
		      p > img->bytes && p + 16 <= img->bytes + img->size);
		CHECK(env && elf_image__vaddr_bytes(img, env, 8, &p) == 0 && !p);
		CHECK(elf_image__vaddr_bytes(img, ~0ull - 64, 8, &p) == -ENOENT);
	}
	elf_image__free(img);
}

static void bias_of_libc_in_self(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[8192], path[512];
	struct elf_image *img = NULL;
	uint64_t real = (uint64_t)(uintptr_t)&getpid, vaddr, got;
	int seen = 0;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %511s", &start, &end,
			   perms, &off, path) != 5 || !strstr(path, "/libc.so"))
			continue;
		if (!img && elf_image__open(path, NULL, &img) != 0)
			break;
		vaddr = 0;
		if (!vaddr) {
			char cmd[600], l2[256];
			FILE *p;

			snprintf(cmd, sizeof(cmd), "nm -D %s | awk '$3==\"getpid@@GLIBC_2.2.5\"||$3==\"getpid\"{print $1}'", path);
			p = popen(cmd, "r");
			if (p && fgets(l2, sizeof(l2), p))
				vaddr = strtoull(l2, NULL, 16);
			if (p)
				pclose(p);
		}
		CHECK(elf_image__load_bias(img, start, off, 0, &got) == 0);
		CHECKF(got + vaddr == real, "libc %s at %#llx: bias %#lx", perms, off,
		       (unsigned long)got);
		seen++;
	}
	if (f)
		fclose(f);
	CHECK(seen >= 3);
	elf_image__free(img);
}

static void libc_debug_by_build_id(void)
{
	struct elf_image *img = NULL, *dbg = NULL;

	CHECK(elf_image__open("/lib/x86_64-linux-gnu/libc.so.6", NULL, &img) == 0);
	if (!img)
		return;
	CHECK(img->build_id_len == 20);
	CHECK(elf_image__open_debug(img, NULL, NULL, &dbg) == 0);
	CHECK(dbg != NULL);
	if (dbg) {
		CHECK(strstr(dbg->path, "/.build-id/") != NULL);
		CHECK(dbg->has_symtab && dbg->has_dwarf_info);
		CHECK(!memcmp(dbg->build_id, img->build_id, img->build_id_len));
	}
	elf_image__free(dbg);
	elf_image__free(img);
}

static void debuglink_crc(void)
{
	char *src = fixture("prog.c"), *bin = fixture("linked"),
	     *dbgf = fixture("linked.debug");
	struct elf_image *img = NULL, *dbg = NULL;
	struct symtab *st = NULL;
	uint32_t crc = 0;
	const char *dirs[] = { fixture("nodebug"), NULL };

	CHECK(harness_sh("gcc -O1 -g -Wl,--build-id=none -o %s %s && "
		 "objcopy --only-keep-debug %s %s && strip --strip-debug --strip-unneeded %s && "
		 "cd %s && objcopy --add-gnu-debuglink=linked.debug linked",
		 bin, src, bin, dbgf, bin, tmpdir) == 0);
	CHECK(elf_image__open(bin, NULL, &img) == 0);
	if (!img)
		return;
	CHECK(!img->has_symtab && !img->has_dwarf_info);
	CHECK(img->debuglink && !strcmp(img->debuglink, "linked.debug"));
	CHECK(elf_file_crc32(dbgf, &crc) == 0);
	CHECK_EQ_U64(crc, img->debuglink_crc);
	CHECK(elf_image__open_debug(img, dirs, NULL, &dbg) == 0 && dbg);
	if (dbg) {
		const struct elf_image *imgs[] = { img, dbg };
		uint64_t start;
		const char *name;

		CHECK(dbg->has_symtab && dbg->has_dwarf_info);
		CHECK(symtab__build(imgs, 2, NULL, &st) == 0);
		name = symtab__lookup(st, nm_addr(dbgf, "fixture_func") + 2, 0, &start);
		CHECK(name && !strcmp(name, "fixture_func"));
		symtab__free(st);
		elf_image__free(dbg);
		dbg = NULL;
	}
	/* In .debug/ too, and a changed debug file is refused. */
	CHECK(harness_sh("mkdir -p %s/.debug && mv %s %s/.debug/", tmpdir, dbgf, tmpdir) == 0);
	CHECK(elf_image__open_debug(img, dirs, NULL, &dbg) == 0 && dbg);
	elf_image__free(dbg);
	dbg = NULL;
	CHECK(harness_sh("printf x >> %s/.debug/linked.debug", tmpdir) == 0);
	CHECK(elf_image__open_debug(img, dirs, NULL, &dbg) == 0 && !dbg);
	elf_image__free(img);
}

static void debug_frame_only(void)
{
	char *src = fixture("prog.c"), *bin = fixture("dframe");
	struct elf_image *img = NULL;

	CHECK(harness_sh("gcc -O1 -g -fno-asynchronous-unwind-tables -fno-unwind-tables "
		 "-Wl,--no-eh-frame-hdr -o %s %s", bin, src) == 0);
	CHECK(elf_image__open(bin, NULL, &img) == 0);
	if (!img)
		return;
	CHECK(img->debug_frame.data && img->debug_frame.size > 0);
	elf_image__free(img);
	/* Compressed .debug_frame (debug files often are): inflated. */
	CHECK(harness_sh("objcopy --compress-debug-sections=zlib %s %s.z", bin, bin) == 0);
	strcat(bin, ".z");
	CHECK(elf_image__open(bin, NULL, &img) == 0);
	if (img) {
		CHECK(img->debug_frame.data && img->debug_frame.size > 4);
		elf_image__free(img);
	}
}

static void minidebuginfo(void)
{
	char *src = fixture("prog.c"), *bin = fixture("mini");
	struct elf_image *img = NULL, *mini = NULL;
	struct symtab *st = NULL;
	uint64_t fvaddr;

	CHECK(harness_sh("cd %s && gcc -O1 -g -o mini prog.c && "
		 "nm -D mini --format=posix --defined-only | awk '{print $1}' | sort > dynsyms && "
		 "nm mini --format=posix --defined-only | awk '$2 ~ /[TtD]/ {print $1}' | sort > funcsyms && "
		 "comm -13 dynsyms funcsyms > keep_symbols && "
		 "objcopy --only-keep-debug mini mini.dbg && "
		 "objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep_symbols mini.dbg mini-debuginfo && "
		 "strip --strip-all mini && xz -f mini-debuginfo && "
		 "objcopy --add-section .gnu_debugdata=mini-debuginfo.xz mini",
		 tmpdir) == 0);
	(void)src;
	fvaddr = nm_addr(fixture("mini.dbg"), "fixture_func");
	CHECK(elf_image__open(bin, NULL, &img) == 0);
	if (!img)
		return;
	CHECK(!img->has_symtab && img->gnu_debugdata.data);
	CHECK(elf_image__open_minidebug(img, NULL, &mini) == 0 && mini);
	if (mini) {
		const struct elf_image *imgs[] = { img, mini };
		uint64_t start = 0;
		const char *name;

		CHECK(mini->has_symtab);
		CHECK(symtab__build(imgs, 2, NULL, &st) == 0);
		name = symtab__lookup(st, fvaddr + 1, 0, &start);
		CHECKF(name && !strcmp(name, "fixture_func"), "got %s", name);
		CHECK_EQ_U64(start, fvaddr);
		symtab__free(st);
	}
	elf_image__free(mini);
	elf_image__free(img);
}

static void not_elf_or_wrong_arch(void)
{
	struct elf_image *img = (void *)1;
	static const char junk[] = "#!/bin/sh\necho hi\n";
	Elf64_Ehdr eh;

	CHECK(elf_image__open_mem(junk, sizeof(junk), "junk", NULL, &img) == -ENOEXEC);
	CHECK(img == NULL);
	CHECK(elf_image__open("/nonexistent/file", NULL, &img) == -ENOENT);
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_machine = EM_AARCH64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	CHECK(elf_image__open_mem(&eh, sizeof(eh), "arm", NULL, &img) == -ENOEXEC);
	eh.e_ident[EI_CLASS] = ELFCLASS32;
	CHECK(elf_image__open_mem(&eh, sizeof(eh), "elf32", NULL, &img) == -ENOEXEC);
}

/* Exercises everything an image offers; must never crash. */
static void poke(struct elf_image *img)
{
	struct elf_image *mini = NULL;
	struct symtab *st = NULL;
	struct line_info *li = NULL;
	const struct elf_image *imgs[2] = { img, NULL };
	uint64_t bias, start;

	for (size_t i = 0; i < img->nsegs; i++)
		elf_image__load_bias(img, 0x7f0000000000ull, img->segs[i].offset, 0, &bias);
	elf_image__open_minidebug(img, NULL, &mini);
	imgs[1] = mini;
	if (symtab__build(imgs, 2, NULL, &st) == 0) {
		for (uint64_t a = img->text.vaddr; a < img->text.vaddr + 256; a += 7)
			symtab__lookup(st, a, 0, &start);
	}
	if (line_info__open(img, NULL, &li) == 0 && li) {
		struct stacksnap_sym out[8];

		symbolize__lookup(st, li, img->text.vaddr + 16, 0, out, 8);
	}
	line_info__free(li);
	symtab__free(st);
	elf_image__free(mini);
}

static void truncated_and_flipped(void)
{
	char *bin = fixture("pie");
	FILE *f = fopen(bin, "rb");
	uint8_t *buf;
	long len;
	unsigned seed = 12345;
	int ok = 0, bad = 0;

	if (!f) {
		CHECK(f != NULL);
		return;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len);
	CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
	fclose(f);
	for (long cut = 0; cut < len; cut += cut < 256 ? 1 : 97) {
		struct elf_image *img = NULL;
		int r = elf_image__open_mem(buf, (size_t)cut, "cut", NULL, &img);

		if (r == 0) {
			poke(img);
			elf_image__free(img);
			ok++;
		} else {
			CHECK(r < 0 && !img);
			bad++;
		}
	}
	for (int round = 0; round < 300; round++) {
		uint8_t *copy = malloc((size_t)len);
		struct elf_image *img = NULL;

		memcpy(copy, buf, (size_t)len);
		for (int k = 0; k < 8; k++) {
			seed = seed * 1103515245u + 12345u;
			/* Mostly the headers, where damage matters most. */
			size_t at = (seed >> 8) % (k < 4 ? 512 : (unsigned)len);

			copy[at] ^= (uint8_t)(1u << ((seed >> 4) & 7));
		}
		if (elf_image__open_mem(copy, (size_t)len, "flipped", NULL, &img) == 0) {
			poke(img);
			elf_image__free(img);
		}
		free(copy);
	}
	printf("  truncations: %d opened, %d refused\n", ok, bad);
	CHECK(bad > 0);
	free(buf);
}

static void setup(void)
{
	CHECK(mkdtemp(tmpdir) != NULL);
}

static void cleanup(void)
{
	harness_sh("rm -rf %s", tmpdir);
}

TEST_MAIN("elf", TEST(setup), TEST(not_elf_or_wrong_arch), TEST(layouts), TEST(symbol_tables),
	  TEST(bias_of_libc_in_self), TEST(libc_debug_by_build_id),
	  TEST(debuglink_crc), TEST(debug_frame_only), TEST(minidebuginfo),
	  TEST(truncated_and_flipped), TEST(cleanup))
