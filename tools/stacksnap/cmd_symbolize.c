/* cmd_symbolize.c - `stacksnap symbolize`: names addresses recorded in
 * another process (an in-process backtrace in a trace event, a crash
 * log), against that process's mappings: live (--pid) or a saved copy of
 * its /proc/PID/maps (--maps), written by the program at start-up. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "options.h"
#include "help.h"
#include "stacksnap.h"
#include "subcommands.h"

#define MAX_SYMS 16	/* inline chain entries per address with --lines */

struct sym_options {
	pid_t pid;
	const char *maps;
	bool exact, first_exact, lines, no_demangle;
};


static int parse_args(struct sym_options *o, int argc, char **argv, int *first)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "maps", required_argument, NULL, 'm' },
		{ "exact", no_argument, NULL, 'e' },
		{ "first-exact", no_argument, NULL, 'f' },
		{ "lines", no_argument, NULL, 'l' },
		{ "no-demangle", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:m:eflh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			o->pid = (pid_t)strtol(optarg, &end, 10);
			if (errno || *end || o->pid <= 0) {
				fprintf(stderr, "stacksnap symbolize: bad pid '%s' "
					"(a positive number)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'm': o->maps = optarg; break;
		case 'e': o->exact = true; break;
		case 'f': o->first_exact = true; break;
		case 'l': o->lines = true; break;
		case 'D': o->no_demangle = true; break;
		case 'h': fputs(help_text("symbolize"), stdout); return -1;
		default: /* getopt said which */
			return EXIT_USAGE;
		}
	}
	if (!o->pid == !o->maps) {
		fprintf(stderr, "stacksnap symbolize: give the process the addresses "
			"come from: --pid PID or --maps FILE (see --help)\n");
		return EXIT_USAGE;
	}
	*first = optind;
	return 0;
}

/* The mappings of a saved /proc/PID/maps: its code mappings, each added
 * as the process had it (the vDSO, whose image is not in a file, is left
 * out: its addresses stay unknown). */
static struct stacksnap_addrspace *from_maps_file(struct stacksnap_ctx *ctx,
						  const char *path)
{
	struct stacksnap_addrspace *as;
	char line[4096 + 256];
	FILE *f = fopen(path, "re");
	unsigned lineno = 0, used = 0;

	if (!f) {
		fprintf(stderr, "stacksnap symbolize: cannot read maps file %s: %s\n",
			path, strerror(errno));
		return NULL;
	}
	as = stacksnap_addrspace__new(ctx);
	if (!as) {
		fclose(f);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		STACKSNAP_OPTS(stacksnap_mapping, mp);

		lineno++;
		if (stacksnap_mapping__parse_line(line, &mp)) {
			fprintf(stderr, "stacksnap symbolize: %s:%u: not a /proc/PID/maps "
				"line (start-end perms offset dev inode [path]): '%.60s'\n",
				path, lineno, line);
			stacksnap_addrspace__free(as);
			fclose(f);
			errno = EINVAL;
			return NULL;
		}
		if (!(mp.prot & PROT_EXEC) || !mp.path || mp.path[0] != '/')
			continue; /* only code from files */
		mp.prot = PROT_READ | PROT_EXEC;
		mp.dev = 0; /* a saved file's device says nothing here */
		if (stacksnap_addrspace__add_mapping(as, &mp) == 0)
			used++;
	}
	fclose(f);
	if (!used) {
		fprintf(stderr, "stacksnap symbolize: %s: no code mapping of a file "
			"(is it a copy of /proc/PID/maps?)\n", path);
		stacksnap_addrspace__free(as);
		errno = EINVAL;
		return NULL;
	}
	return as;
}

static void print_addr(struct stacksnap_addrspace *as, const struct sym_options *o,
		       uint64_t addr, bool is_return, int index)
{
	struct stacksnap_sym syms[MAX_SYMS];
	unsigned flags = (o->lines ? STACKSNAP_SYM_LINES : 0) |
			 (o->no_demangle ? STACKSNAP_SYM_NO_DEMANGLE : 0);
	int n = stacksnap_addrspace__symbolize(as, addr, is_return, flags, syms,
					       MAX_SYMS);

	if (index >= 0)
		printf("#%-3d ", index);
	printf("0x%016" PRIx64, addr);
	if (n <= 0) {
		printf(" ??\n");
		return;
	}
	for (int i = 0; i < n; i++) {
		const struct stacksnap_sym *s = &syms[i];

		if (i)
			printf("%s%18s", index >= 0 ? "     " : "", "");
		if (s->function)
			printf(" %s+0x%" PRIx64, s->function, s->offset);
		else
			printf(" ??");
		printf(" (%s+0x%" PRIx64 ")", s->module ? s->module : "??",
		       s->module_offset);
		if (s->file)
			printf(" %s:%d", s->file, s->line);
		if (s->inlined)
			printf(" [inlined]");
		printf("\n");
	}
}

/* One address token: hex with or without 0x. */
static bool parse_addr(const char *tok, uint64_t *addr)
{
	char *end;

	errno = 0;
	*addr = strtoull(tok, &end, 16);
	return !errno && end != tok && !*end;
}

int symbolize_main(int argc, char **argv)
{
	struct sym_options o;
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	int first, rc = EXIT_OK;

	rc = parse_args(&o, argc, argv, &first);
	if (rc)
		return rc < 0 ? EXIT_OK : cli_usage_error();
	/* A zombie's or kernel thread's maps are empty: every address would
	 * print as ?? with exit 0. Said and refused as in every subcommand. */
	if (o.pid && (rc = cli_check_target(o.pid, false)))
		return rc;
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = cli_log,
		       .cache_dir = default_cache_dir());
	ctx = stacksnap_ctx__new(&copts);
	if (!ctx) {
		fprintf(stderr, "stacksnap symbolize: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	as = o.pid ? stacksnap_addrspace__from_pid(ctx, o.pid)
		   : from_maps_file(ctx, o.maps);
	if (!as) {
		int e = errno;

		if (o.pid && e != EACCES && e != EPERM) /* those: the log said why */
			fprintf(stderr, "stacksnap symbolize: pid %d: %s\n", (int)o.pid,
				strerror(e));
		stacksnap_ctx__free(ctx);
		return e == ESRCH || e == ENOENT ? (o.pid ? EXIT_NO_PROCESS : EXIT_ERROR)
		       : e == EPERM || e == EACCES ? EXIT_NOT_PERMITTED
		       : EXIT_ERROR;
	}
	if (first < argc) {
		for (int i = first; i < argc; i++) {
			uint64_t a;

			if (!parse_addr(argv[i], &a)) {
				fprintf(stderr, "stacksnap symbolize: '%s' is not a hex "
					"address\n", argv[i]);
				rc = EXIT_USAGE;
				break;
			}
			print_addr(as, &o, a, !o.exact && !(o.first_exact && i == first), -1);
		}
	} else {
		char *line = NULL;
		size_t cap = 0;
		unsigned traces = 0, lineno = 0;

		while (getline(&line, &cap, stdin) > 0) {
			char *save = NULL, *tok;
			int k = 0;

			lineno++;
			line[strcspn(line, "#")] = 0;
			for (tok = strtok_r(line, " \t,\n", &save); tok;
			     tok = strtok_r(NULL, " \t,\n", &save)) {
				uint64_t a;

				if (!parse_addr(tok, &a)) {
					fprintf(stderr, "stacksnap symbolize: stdin line %u: "
						"'%s' is not a hex address\n", lineno, tok);
					rc = EXIT_USAGE;
					break;
				}
				if (k == 0 && traces++)
					printf("\n");
				print_addr(as, &o, a, !o.exact && !(o.first_exact && k == 0), k);
				k++;
			}
			if (rc)
				break;
		}
		free(line);
	}
	rc = cli_close_output(stdout, NULL, rc);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	return rc;
}
