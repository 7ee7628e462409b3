/* kallsyms.c - kernel symbols: for the kernel frames of perf samples and
 * the kernel stacks of the waits (src/waits/), from /proc/kallsyms of the
 * machine running the command (what perf script uses too when the
 * recording has no kallsyms copy), kept parsed
 * in the cache directory for the rest of the boot: the kernel spends
 * ~20 ms formatting /proc/kallsyms at every read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "stacksnap.h"
#include "base/log.h"

/* Invariant: syms sorted by addr; names point into text (a copy of
 * /proc/kallsyms). Or, for a table from the cache file, syms NULL and the
 * file mapped: addrs[] sorted, offs[] each below strsize, strs ending in
 * a NUL (checked at load), all inside map. */
struct stacksnap_kallsyms {
	struct ksym { uint64_t addr; const char *name; } *syms;
	size_t n;
	char *text;
	const uint64_t *addrs;
	const uint32_t *offs;
	const char *strs;
	void *map;
	size_t map_len;
};

static char *slurp(const char *path, size_t *len);

/* The cache file: "SSKSYM01", u64 n, u64 strsize, then n u64 addresses
 * (sorted), n u32 name offsets, then strsize bytes of NUL-terminated names;
 * little-endian, as the machine that wrote it for itself. */
static const char cache_magic[8] = "SSKSYM01";

/* The cache file's name for this boot and this set of modules: symbols
 * move when modules load or unload. */
static int cache_path(const char *dir, char *buf, size_t size)
{
	char boot[64] = "", *mods;
	size_t mlen = 0;
	uint64_t h = 1469598103934665603ull; /* FNV-1a of /proc/modules */
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (!dir || !*dir || !f || !fgets(boot, sizeof(boot), f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	boot[strcspn(boot, "\n")] = 0;
	if ((mods = slurp("/proc/modules", &mlen))) {
		for (size_t i = 0; i < mlen; i++)
			h = (h ^ (uint8_t)mods[i]) * 1099511628211ull;
		free(mods);
	}
	snprintf(buf, size, "%s/kallsyms-%s-%016llx", dir, boot,
		 (unsigned long long)h);
	return 0;
}

/* Loads the cache file, checking every offset; NULL when absent or not
 * exactly well-formed. */
static struct stacksnap_kallsyms *cache_load(const char *path, const struct log_sink *log)
{
	size_t len, n, strsize;
	struct stacksnap_kallsyms *ks;
	const char *why = NULL;
	int fd = stacksnap_cache__open(path, &why);
	struct stat st;
	uint64_t hdr[2];
	const char *b;
	void *map;

	if (fd < 0) {
		if (why)
			log_info(log, "%s: cache file %s; ignored", path, why);
		return NULL;
	}
	/* Mapped, used in place: a copy and a parse of its ~100,000
	 * symbols at every replay cost more than the samples of a small
	 * recording (the directory is ours, 0700: the file stays the one
	 * checked). */
	if (fstat(fd, &st) || st.st_size < 24 || (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		return NULL;
	}
	len = (size_t)st.st_size;
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	b = map;
	if (memcmp(b, cache_magic, 8))
		goto bad;
	memcpy(hdr, b + 8, sizeof(hdr));
	n = hdr[0];
	strsize = hdr[1];
	if (n > len / 12 || strsize > len || 24 + n * 12 + strsize != len ||
	    !strsize || b[len - 1])
		goto bad;
	const uint64_t *addrs = (const uint64_t *)(const void *)(b + 24);
	const uint32_t *offs = (const uint32_t *)(const void *)(b + 24 + n * 8);
	uint32_t bad_off = 0;
	uint64_t unsorted = 0;

	/* Every offset inside the strings, the addresses in order: one
	 * pass without branches to mispredict. */
	for (size_t i = 0; i < n; i++) {
		bad_off |= offs[i] >= strsize;
		unsorted |= i && addrs[i] < addrs[i - 1];
	}
	if (bad_off || unsorted)
		goto bad;
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		goto bad;
	ks->n = n;
	ks->addrs = addrs;
	ks->offs = offs;
	ks->strs = b + 24 + n * 12;
	ks->map = map;
	ks->map_len = len;
	return ks;
bad:
	munmap(map, len);
	return NULL;
}

/* Writes ks to the cache (to a temporary name, then renamed: readers see
 * a whole file or none). Failure only costs the next run the slow path. */
static void cache_store(const struct stacksnap_kallsyms *ks, const char *path,
			const struct log_sink *log)
{
	uint64_t hdr[2] = { ks->n, 0 };
	size_t len, at;
	char *b;

	for (size_t i = 0; i < ks->n; i++)
		hdr[1] += strlen(ks->syms[i].name) + 1;
	if (hdr[1] > UINT32_MAX)
		return;
	len = 24 + ks->n * 12 + hdr[1];
	if (!(b = malloc(len)))
		return;
	memcpy(b, cache_magic, 8);
	memcpy(b + 8, hdr, sizeof(hdr));
	at = 24;
	for (size_t i = 0; i < ks->n; i++, at += 8)
		memcpy(b + at, &ks->syms[i].addr, 8);
	uint32_t off = 0;
	for (size_t i = 0; i < ks->n; i++, at += 4) {
		memcpy(b + at, &off, 4);
		off += (uint32_t)strlen(ks->syms[i].name) + 1;
	}
	for (size_t i = 0; i < ks->n; i++) {
		size_t l = strlen(ks->syms[i].name) + 1;

		memcpy(b + at, ks->syms[i].name, l);
		at += l;
	}
	if (stacksnap_cache__write(path, b, len))
		log_info(log, "%s: cannot write the cache file: %s", path,
			 strerror(errno));
	free(b);
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Reads all of path (a /proc file: its size is not known in advance). */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 1 << 20, n = 0;
	char *buf = NULL;
	ssize_t r;

	if (fd < 0)
		return NULL;
	for (;;) {
		if (!buf || n + 65536 > cap) {
			char *b = realloc(buf, cap *= 2);

			if (!b)
				break;
			buf = b;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf)
		buf[n] = 0;
	*len = n;
	return buf;
}

/* Lines are "ADDR TYPE NAME[\t[module]]": parsed in place (sscanf would
 * cost more than the rest of a perf-script run). Only text symbols. */
static struct stacksnap_kallsyms *proc_load(const char *path)
{
	struct stacksnap_kallsyms *ks = calloc(1, sizeof(*ks));
	size_t len = 0, ncap = 0;
	bool sorted = true;

	if (!ks || !(ks->text = slurp(path, &len)))
		return ks;
	for (char *p = ks->text, *end = ks->text + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		uint64_t addr = 0;
		char *q = p;

		if (!nl)
			nl = end;
		*nl = 0;
		for (; *q && *q != ' '; q++)
			addr = addr << 4 | (uint64_t)(*q <= '9' ? *q - '0' : (*q | 32) - 'a' + 10);
		if (q[0] == ' ' && q[1] && q[2] == ' ' && addr &&
		    strchr("tTwW", q[1])) {
			char *name = q + 3, *tab = strchr(name, '\t');

			if (tab)
				*tab = 0;
			if (ks->n == ncap) {
				struct ksym *ns = realloc(ks->syms, (ncap = ncap ? ncap * 2 : 65536) *
								      sizeof(*ns));
				if (!ns)
					break;
				ks->syms = ns;
			}
			if (ks->n && ks->syms[ks->n - 1].addr > addr)
				sorted = false;
			ks->syms[ks->n].addr = addr;
			ks->syms[ks->n++].name = name;
		}
		p = nl + 1;
	}
	if (!sorted)
		qsort(ks->syms, ks->n, sizeof(*ks->syms), cmp_ksym);
	return ks;
}

/* The kernel's build-id from its ELF notes (/sys/kernel/notes), as hex;
 * false when it cannot be read. */
static bool running_kernel_build_id(char *hex, size_t size)
{
	size_t len = 0;
	char *notes = slurp("/sys/kernel/notes", &len);
	bool found = false;

	for (size_t off = 0; notes && off + 12 <= len && !found;) {
		uint32_t namesz, descsz, type;

		memcpy(&namesz, notes + off, 4);
		memcpy(&descsz, notes + off + 4, 4);
		memcpy(&type, notes + off + 8, 4);
		size_t name_off = off + 12, desc_off = name_off + ((namesz + 3) & ~3u);

		if (desc_off + descsz > len || desc_off < name_off)
			break;
		if (type == 3 && namesz == 4 && !memcmp(notes + name_off, "GNU", 4) &&
		    descsz * 2 < size) {
			for (uint32_t i = 0; i < descsz; i++)
				sprintf(hex + 2 * i, "%02x", (uint8_t)notes[desc_off + i]);
			found = true;
		}
		off = desc_off + ((descsz + 3) & ~3u);
	}
	free(notes);
	return found;
}

STACKSNAP_API struct stacksnap_kallsyms *stacksnap_kallsyms__load(const char *cache_dir, const char *kernel_build_id,
			 stacksnap_log_fn log_fn, void *log_user)
{
	struct log_sink log = { log_fn, log_user, STACKSNAP_LOG_DEBUG };
	char path[4096], running[128];
	struct stacksnap_kallsyms *ks = NULL;
	bool cacheable;

	/* The recording names its kernel: perf record keeps a copy of
	 * that kernel's symbols in its build-id cache, which is right even
	 * when the recording comes from another boot or machine. */
	if (kernel_build_id && *kernel_build_id) {
		const char *dir = getenv("PERF_BUILDID_DIR");
		const char *home = getenv("HOME");

		if (dir && *dir)
			snprintf(path, sizeof(path), "%s/[kernel.kallsyms]/%s/kallsyms",
				 dir, kernel_build_id);
		else
			snprintf(path, sizeof(path), "%s/.debug/[kernel.kallsyms]/%s/kallsyms",
				 home ? home : "", kernel_build_id);
		struct stat st;

		if (stat(path, &st) == 0 && access(path, R_OK) == 0) {
			/* Parsed once, kept in the cache directory under the
			 * copy's build-id, size and time (perf refreshes the
			 * copy in place): parsing 10 MB of text took an eighth
			 * of a replay's CPU. */
			char cpath[4096];
			bool cache_it = cache_dir && *cache_dir &&
				snprintf(cpath, sizeof(cpath), "%s/kallsyms-%s-%llx-%llx",
					 cache_dir, kernel_build_id,
					 (unsigned long long)st.st_size,
					 (unsigned long long)st.st_mtime) < (int)sizeof(cpath);

			if (cache_it && (ks = cache_load(cpath, &log)))
				return ks;
			if ((ks = proc_load(path)) && ks->n) {
				if (cache_it)
					cache_store(ks, cpath, &log);
				return ks;
			}
		}
		stacksnap_kallsyms__free(ks);
		ks = NULL;
		/* Another kernel than the one running, and no copy of its
		 * symbols: none (perf prints [unknown] too). */
		if (running_kernel_build_id(running, sizeof(running)) &&
		    strcmp(running, kernel_build_id))
			return NULL;
	}
	cacheable = cache_path(cache_dir, path, sizeof(path)) == 0;
	if (cacheable && (ks = cache_load(path, &log)))
		return ks;
	ks = proc_load("/proc/kallsyms");
	/* Addresses hidden by kptr_restrict read as 0 and are left out:
	 * an empty table is not worth keeping. */
	if (cacheable && ks && ks->n)
		cache_store(ks, path, &log);
	return ks;
}

STACKSNAP_API const char *stacksnap_kallsyms__lookup(struct stacksnap_kallsyms *ks, uint64_t addr, uint64_t *off)
{
	size_t lo = 0, hi = ks ? ks->n : 0;

	if (ks && ks->addrs) { /* from the cache file, in place */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (ks->addrs[mid] <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo)
			return NULL;
		*off = addr - ks->addrs[lo - 1];
		return ks->strs + ks->offs[lo - 1];
	}

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	*off = addr - ks->syms[lo - 1].addr;
	return ks->syms[lo - 1].name;
}

STACKSNAP_API void stacksnap_kallsyms__free(struct stacksnap_kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->text);
	if (ks->map)
		munmap(ks->map, ks->map_len);
	free(ks);
}
