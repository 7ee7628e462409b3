/* jit_symbols.c - a live process's perf map and jitdump file as one symbol
 * source, opened lazily and re-read as they grow. */
#include "symbolize/jit_symbols.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symbolize/jitdump.h"
#include "symbolize/perf_map.h"

/* Invariant: opened once the files were looked for; map and dump are
 * NULL while the process has none (looked for again on a re-read); pid 0:
 * names from a saved snapshot, never read again. */
struct jit_symbols {
	pid_t pid;
	const struct log_sink *log;
	bool opened;
	bool recorded;		/* /tmp/perf-<pid>.map of our /tmp only */
	struct perf_map *map;
	struct jitdump *dump;
	uint64_t last_read_ms;	/* CLOCK_MONOTONIC of the last (re-)read */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct jit_symbols *jit_symbols__new(pid_t pid, const struct log_sink *log)
{
	struct jit_symbols *js = calloc(1, sizeof(*js));

	if (!js) {
		errno = ENOMEM;
		return NULL;
	}
	js->pid = pid;
	js->log = log;
	return js;
}

/* Opens what is not open, refreshes what is. */
static void read_files(struct jit_symbols *js)
{
	int err;

	js->last_read_ms = now_ms();
	if (js->map) {
		perf_map__refresh(js->map);
	} else if (js->recorded) {
		char path[64];

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)js->pid);
		perf_map__open_path(path, js->log, &js->map);
	} else {
		err = perf_map__open_pid(js->pid, js->log, &js->map);
		if (err && err != -ENOENT)
			log_info(js->log, "pid %d: perf map: %s", (int)js->pid,
				 strerror(-err));
	}
	if (js->dump) {
		jitdump__refresh(js->dump);
	} else if (!js->recorded) {
		err = jitdump__open_pid(js->pid, js->log, &js->dump);
		if (err && err != -ENOENT)
			log_info(js->log, "pid %d: jitdump: %s", (int)js->pid,
				 strerror(-err));
	}
	js->opened = true;
}

/* A path read through /proc/PID/root as the process names it. NULL for
 * a saved snapshot's names. */
static const char *as_seen(const char *path)
{
	const char *root;

	if (path && !strncmp(path, "/proc/", 6) &&
	    (root = strstr(path, "/root/")))
		return root + 5;
	return path;
}

static bool find(struct jit_symbols *js, uint64_t pc, struct jit_symbol *out)
{
	const struct perf_map_entry *e = js->map ? perf_map__lookup(js->map, pc)
						 : NULL;
	const struct jitdump_code *c = NULL;
	const struct jitdump_line *line = NULL;

	if (js->dump)
		c = jitdump__lookup(js->dump, pc, &line);
	if (!e && !c)
		return false;
	/* Both name the code the same way; the dump adds file:line. */
	out->name = e ? e->name : c->name;
	out->start = e ? e->start : c->start;
	out->end = e ? e->end : c->end;
	out->file = line ? line->file : NULL;
	out->line = line ? line->line : 0;
	out->source = as_seen(e ? perf_map__path(js->map)
				: jitdump__path(js->dump));
	return true;
}

bool jit_symbols__lookup(struct jit_symbols *js, uint64_t pc,
			 struct jit_symbol *out)
{
	if (!js->opened)
		read_files(js);
	else if (find(js, pc, out))
		return true;
	else if (js->pid && now_ms() - js->last_read_ms >= JIT_SYMBOLS_REREAD_MS)
		read_files(js);
	return find(js, pc, out);
}

struct jit_symbols *jit_symbols__new_recorded(pid_t pid,
					      const struct log_sink *log)
{
	struct jit_symbols *js = jit_symbols__new(pid, log);

	if (js)
		js->recorded = true;
	return js;
}

struct jit_symbols *jit_symbols__from_map(struct perf_map *pm)
{
	struct jit_symbols *js = jit_symbols__new(0, NULL);

	if (!js) {
		perf_map__free(pm);
		return NULL;
	}
	js->map = pm;
	js->opened = true;
	return js;
}

void jit_symbols__free(struct jit_symbols *js)
{
	if (!js)
		return;
	perf_map__free(js->map);
	jitdump__free(js->dump);
	free(js);
}
