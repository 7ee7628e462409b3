/* ss_jit_names.c - test driver: names addresses of a live process's JIT
 * code from its perf map (/tmp/perf-<nspid>.map through /proc/PID/root)
 * and its jitdump file (found from its mapping), with the readers the
 * library uses, so tests can compare the names of unwound JIT frames with
 * what the program recorded itself.
 *
 *   ss_jit_names [--map PATH] [--jitdump PATH] PID ADDR...
 *
 * Prints one line per address, fields separated by tabs:
 *   ADDR <perf map name|-> <jitdump name|-> <file:line from jitdump|->
 * and a last line `map=<path|-> entries=N jitdump=<path|-> codes=N`.
 * Exit status: 0, 1 on an error reading a file that exists, 2 on bad
 * usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/jitdump.h"
#include "symbolize/perf_map.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: ss_jit_names [--map PATH] [--jitdump PATH] PID ADDR...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *map_path = NULL, *dump_path = NULL;
	struct perf_map *pm = NULL;
	struct jitdump *jd = NULL;
	size_t nmap = 0, ndump = 0;
	int i = 1, err, pid;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--map") && i + 1 < argc)
			map_path = argv[++i];
		else if (!strcmp(argv[i], "--jitdump") && i + 1 < argc)
			dump_path = argv[++i];
		else
			usage();
	}
	if (i >= argc)
		usage();
	pid = atoi(argv[i++]);
	err = map_path ? perf_map__open_path(map_path, NULL, &pm)
		       : perf_map__open_pid(pid, NULL, &pm);
	if (err && err != -ENOENT) {
		fprintf(stderr, "ss_jit_names: perf map: %s\n", strerror(-err));
		return 1;
	}
	err = dump_path ? jitdump__open_path(dump_path, NULL, &jd)
			: jitdump__open_pid(pid, NULL, &jd);
	if (err && err != -ENOENT) {
		fprintf(stderr, "ss_jit_names: jitdump: %s\n", strerror(-err));
		return 1;
	}
	for (; i < argc; i++) {
		unsigned long long addr = strtoull(argv[i], NULL, 0);
		const struct perf_map_entry *e = pm ? perf_map__lookup(pm, addr)
						    : NULL;
		const struct jitdump_code *c = NULL;
		const struct jitdump_line *l = NULL;

		if (jd)
			c = jitdump__lookup(jd, addr, &l);
		printf("%#llx\t%s\t%s\t", addr, e ? e->name : "-",
		       c ? c->name : "-");
		if (l)
			printf("%s:%u\n", l->file, l->line);
		else
			printf("-\n");
	}
	if (pm)
		perf_map__entries(pm, &nmap);
	if (jd)
		jitdump__codes(jd, &ndump);
	printf("map=%s entries=%zu jitdump=%s codes=%zu\n",
	       pm ? perf_map__path(pm) : "-", nmap,
	       jd ? jitdump__path(jd) : "-", ndump);
	perf_map__free(pm);
	jitdump__free(jd);
	return 0;
}
