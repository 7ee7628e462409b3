/* ss_hotspot.c - test driver: reads a live JVM's own layout tables
 * (vmStructs) and names code addresses and interpreter frames with them,
 * so tests can compare with HotSpot's own views (jcmd Compiler.perfmap,
 * jstack).
 *
 *   ss_hotspot PID --fields SUBSTRING   fields/types whose name has it
 *   ss_hotspot PID PC[:FP]...           per address: blob and method
 *
 * Per address, one line, fields separated by tabs:
 *   PC <code blob name|-> <method|-> <FILE:LINE|->
 * where method is "pkg.Class.method(SIGNATURE)" of the nmethod holding
 * PC, or, with :FP for a frame in the interpreter, of the Method* in its
 * frame; FILE:LINE of an interpreter frame's bytecode index. Exit status: 0, 1 when the tables cannot be read, 2 on bad
 * usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/maps_line.h"
#include "runtime/java/hotspot_code.h"
#include "runtime/java/hotspot_structs.h"
#include "stacksnap.h"

static int find_libjvm(int pid, char *path, size_t len, uint64_t *start,
		       uint64_t *offset)
{
	char maps[64], line[4200];
	struct maps_line ml;
	FILE *f;
	int found = 0;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	if (!(f = fopen(maps, "r")))
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *base;

		if (maps_line__parse(line, &ml) || !ml.path ||
		    !(base = strrchr(ml.path, '/')) || strcmp(base, "/libjvm.so"))
			continue;
		snprintf(path, len, "/proc/%d/root%s", pid, ml.path);
		*start = ml.start;
		*offset = ml.offset;
		found = 1;
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

int main(int argc, char **argv)
{
	struct hotspot_structs hs;
	struct hotspot_code hc;
	struct stacksnap_mem *mem;
	char path[4200];
	uint64_t start = 0, offset = 0;
	int pid, err;

	if (argc < 3)
		return 2;
	pid = atoi(argv[1]);
	if ((err = find_libjvm(pid, path, sizeof(path), &start, &offset))) {
		fprintf(stderr, "ss_hotspot: pid %d: no libjvm.so\n", pid);
		return 1;
	}
	mem = stacksnap_mem__new_pid(pid);
	if (!mem)
		return 1;
	err = hotspot_structs__read(mem, path, start, offset, NULL, &hs);
	if (err) {
		fprintf(stderr, "ss_hotspot: %s: %s\n", path, strerror(-err));
		return 1;
	}
	if (!strcmp(argv[2], "--fields") && argc > 3) {
		for (size_t i = 0; i < hs.nfields; i++)
			if (strstr(hs.fields[i].type, argv[3]) ||
			    strstr(hs.fields[i].field, argv[3]))
				printf("field %s::%s %s %s %#llx\n",
				       hs.fields[i].type, hs.fields[i].field,
				       hs.fields[i].type_string ?
				       hs.fields[i].type_string : "-",
				       hs.fields[i].is_static ? "static" : "offset",
				       (unsigned long long)(hs.fields[i].is_static ?
				       hs.fields[i].address : hs.fields[i].offset));
		for (size_t i = 0; i < hs.ntypes; i++)
			if (strstr(hs.types[i].name, argv[3]))
				printf("type %s size %llu\n", hs.types[i].name,
				       (unsigned long long)hs.types[i].size);
		for (size_t i = 0; i < hs.nconstants; i++)
			if (strstr(hs.constants[i].name, argv[3]))
				printf("constant %s %lld\n", hs.constants[i].name,
				       (long long)hs.constants[i].value);
		printf("fields=%zu types=%zu constants=%zu\n", hs.nfields,
		       hs.ntypes, hs.nconstants);
		return 0;
	}
	err = hotspot_code__init(&hc, &hs, mem, NULL);
	if (err) {
		fprintf(stderr, "ss_hotspot: layout: %s\n", strerror(-err));
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		char *colon;
		uint64_t pc = strtoull(argv[i], &colon, 0), fp = 0, method = 0;
		struct hotspot_blob blob;
		char name[1024] = "-";

		if (*colon == ':')
			fp = strtoull(colon + 1, NULL, 0);
		if (hotspot_code__blob(&hc, pc, &blob) != 0) {
			printf("%#llx\t-\t-\t-\n", (unsigned long long)pc);
			continue;
		}
		if (blob.method)
			method = blob.method;
		else if (blob.is_interpreter && fp)
			hotspot_code__interpreter_method(&hc, NULL, fp, &method);
		if (method && hotspot_code__method_name(&hc, method, name,
							sizeof(name)) != 0)
			strcpy(name, "-");
		char where[300] = "-";
		int bci = -1, line = 0;

		if (method && blob.is_interpreter && fp &&
		    hotspot_code__interpreter_bci(&hc, NULL, fp, method, &bci) == 0 &&
		    bci >= 0) {
			char file[256];

			if (hotspot_code__line(&hc, method, bci, &line, file,
					       sizeof(file)) == 0)
				snprintf(where, sizeof(where), "%s:%d",
					 file[0] ? file : "?", line);
		}
		printf("%#llx\t%s\t%s\t%s\n", (unsigned long long)pc, blob.name,
		       name, where);
	}
	hotspot_structs__free(&hs);
	return 0;
}
