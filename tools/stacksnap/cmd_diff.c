/* cmd_diff.c - `stacksnap diff BASE NEW`: reads two profiles written as
 * folded stacks and draws the differential flame graph of NEW against
 * BASE (the library's SVG writer with a base profile). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "help.h"
#include "options.h"
#include "subcommands.h"

/* The whole of path ("-": standard input). NULL with a message. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	size_t cap = 1 << 16, n = 0, r;
	char *buf = NULL;

	if (!f) {
		fprintf(stderr, "stacksnap diff: cannot open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	while ((buf = buf ? buf : malloc(cap)) && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	if (buf && ferror(f)) {
		fprintf(stderr, "stacksnap diff: cannot read %s: %s\n", path, strerror(errno));
		free(buf);
		buf = NULL;
	}
	if (f != stdin)
		fclose(f);
	*len = n;
	return buf;
}

/* The folded reader's error, kept to be said once with the file's name. */
static char folded_error[256];

static void diff_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	if (level <= STACKSNAP_LOG_ERROR)
		snprintf(folded_error, sizeof(folded_error), "%s", msg);
	else
		cli_log(level, msg, user);
}

static struct stacksnap_stacks *load(struct stacksnap_ctx *ctx, const char *path)
{
	size_t len;
	char *text = slurp(path, &len);
	struct stacksnap_stacks *st = text ? stacksnap_stacks__new(NULL) : NULL;

	folded_error[0] = 0;
	if (st && stacksnap_stacks__add_folded(st, ctx, text, len) < 0) {
		fprintf(stderr, "stacksnap diff: %s: %s\n", path,
			folded_error[0] ? folded_error : "not folded stacks");
		stacksnap_stacks__free(st);
		st = NULL;
	}
	free(text);
	return st;
}

int diff_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "title", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *output = NULL, *title = NULL;
	struct stacksnap_stacks *base = NULL, *cur = NULL;
	struct stacksnap_ctx *ctx = NULL;
	FILE *out = stdout;
	int c, rc = EXIT_ERROR;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 't': title = optarg; break;
		case 'f':
			if (strcmp(optarg, "svg")) {
				fprintf(stderr, "stacksnap diff: --format '%s': only svg is written\n",
					optarg);
				return cli_usage_error();
			}
			break;
		case 'h': fputs(help_text("diff"), stdout); return EXIT_OK;
		default: return cli_usage_error(); /* getopt said which */
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "stacksnap diff: expected two folded-stack files: BASE NEW\n");
		return cli_usage_error();
	}
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = diff_log);
	ctx = stacksnap_ctx__new(&copts);
	if (!ctx || !(base = load(ctx, argv[optind])) || !(cur = load(ctx, argv[optind + 1])))
		goto out;
	if (output && !(out = fopen(output, "w"))) {
		fprintf(stderr, "stacksnap diff: cannot write %s: %s\n", output, strerror(errno));
		out = stdout;
		goto out;
	}
	STACKSNAP_OPTS(stacksnap_stacks_write_opts, wo, .base = base, .title = title);
	if (!stacksnap_stacks__write(cur, out, STACKSNAP_FORMAT_SVG, &wo))
		rc = EXIT_OK;
	else {
		/* The write's own cause (ENOSPC); said once: closing out would
		 * say the stream's error again, as EIO. */
		fprintf(stderr, "stacksnap diff: writing %s: %s\n",
			output ? output : "standard output", strerror(errno));
		clearerr(out);
	}
out:
	rc = cli_close_output(out, out == stdout ? NULL : output, rc);
	stacksnap_stacks__free(base);
	stacksnap_stacks__free(cur);
	stacksnap_ctx__free(ctx);
	return rc;
}
