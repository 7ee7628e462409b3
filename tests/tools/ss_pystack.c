/* ss_pystack.c - test driver: prints the Python frames of every thread of
 * a live CPython process through src/runtime/python/ (detect, capture
 * during a ptrace freeze of every thread, resolve after the thaw), in a
 * stable line format that tests/integration/python_frames parses.
 *
 *   ss_pystack [--no-stop] [--repeat N] PID
 *
 * Output:
 *   python <note>
 *   runtime addr=0x.. interps=N state=<-|finalizing|not initialized>
 *           gil=<tid|none> end=<-|reason>
 *   capture ns=N reads=N threads=N frames=N batched=<0|1>
 *   thread TID interp=N frames=N gil=<0|1> pyname=<threading name|->
 *          end=<-|reason>
 *   py I entry=<0|1> line=N file=<file> name=<co_name> fn=<qualname>
 * (fn is last and runs to the end of the line; file has spaces escaped as
 * %20). A Python whose layout is unknown prints only its `python` line.
 * With --repeat N the capture runs N times (for timing; the last one is
 * printed; from the second on, the thread states the first found are read
 * in one batch). Exit status: 0, 1 on an error, 2 on bad usage, 3 when the
 * process holds no Python. --layout M.N prints the release layout of
 * version M.N, "field value" a line, and exits. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/python/python.h"
#include "stacksnap.h"

#define MAX_THREADS 4096

static pid_t tids[MAX_THREADS];
static size_t ntids;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void list_threads(pid_t pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir)) && ntids < MAX_THREADS)
		if (d->d_name[0] != '.')
			tids[ntids++] = atoi(d->d_name);
	closedir(dir);
}

static void freeze(void)
{
	for (size_t i = 0; i < ntids; i++)
		if (ptrace(PTRACE_SEIZE, tids[i], NULL, NULL) != 0 ||
		    ptrace(PTRACE_INTERRUPT, tids[i], NULL, NULL) != 0)
			tids[i] = -tids[i];	/* not held */
	for (size_t i = 0; i < ntids; i++) {
		int status;

		if (tids[i] > 0 && waitpid(tids[i], &status, __WALL) < 0)
			tids[i] = -tids[i];
	}
}

static void thaw(void)
{
	for (size_t i = 0; i < ntids; i++)
		if (tids[i] > 0)
			ptrace(PTRACE_DETACH, tids[i], NULL, NULL);
}

static void print_escaped(const char *s)
{
	for (; *s; s++) {
		if (*s == ' ')
			fputs("%20", stdout);
		else if (*s == '%')
			fputs("%25", stdout);
		else
			putchar(*s);
	}
}

/* --layout M.N: the release layout's offsets, "field value" a line, for
 * tests/integration/python_layouts to compare with the build's DWARF. */
static int print_layout(const char *version)
{
	unsigned major, minor;
	const struct py_layout *l;

	if (sscanf(version, "%u.%u", &major, &minor) != 2 ||
	    !(l = py_layout__find(major, minor, false, false))) {
		fprintf(stderr, "ss_pystack: no layout for %s\n", version);
		return 1;
	}
#define F(x) printf("%s %d\n", #x, l->x)
	F(rt_initialized); F(rt_finalizing); F(rt_interpreters_head);
	F(rt_gil_locked); F(rt_gil_holder); F(interp_next); F(interp_id);
	F(interp_threads_head); F(ts_next); F(ts_thread_id);
	F(ts_native_thread_id); F(ts_current_frame); F(ts_size);
	F(frame_previous); F(frame_code); F(frame_lasti); F(lasti_unit);
	F(frame_localsplus); F(frame_size); F(code_filename); F(code_name);
	F(code_qualname); F(code_linetable); F(linetable_kind);
	F(code_firstlineno); F(code_size); F(ob_type); F(type_name);
	F(type_flags); F(type_dictoffset); F(unicode_length);
	F(unicode_state); F(unicode_ascii_size); F(unicode_compact_size);
	F(bytes_size); F(bytes_data); F(dict_keys); F(dict_values);
	F(dictkeys_size); F(dictkeys_nentries); F(dictkeys_indices);
#undef F
	return 0;
}

int main(int argc, char **argv)
{
	struct py_runtime rt;
	struct py_capture cap = { 0 };
	struct py_resolver res;
	struct stacksnap_mem *mem;
	bool stop = true;
	unsigned repeat = 1;
	uint64_t ns = 0;
	pid_t pid;
	int i = 1, err;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--no-stop"))
			stop = false;
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--layout") && i + 1 == argc - 1)
			return print_layout(argv[i + 1]);
		else
			break;
	}
	if (i + 1 != argc || repeat == 0) {
		fprintf(stderr, "usage: ss_pystack [--no-stop] [--repeat N] PID | "
			"--layout M.N\n");
		return 2;
	}
	pid = atoi(argv[i]);
	err = py_runtime__detect_pid(pid, NULL, &rt);
	if (err) {
		fprintf(stderr, "ss_pystack: %s\n", strerror(-err));
		return 1;
	}
	if (!rt.found) {
		printf("python none\n");
		return 3;
	}
	mem = stacksnap_mem__new_pid(pid);
	if (!mem)
		return 1;
	py_runtime__read_layout(&rt, mem);
	printf("python %s\n", rt.note);
	if (!rt.layout) {
		stacksnap_mem__free(mem);
		return 0;
	}
	if (stop)
		list_threads(pid);
	py_capture__reserve(&cap, 64, 1024, 0);
	for (unsigned k = 0; k < repeat; k++) {
		if (stop)
			freeze();
		uint64_t t0 = now_ns();
		err = py_capture__all(&rt, mem, &cap);
		ns += now_ns() - t0;
		if (stop) {
			thaw();
			for (size_t j = 0; j < ntids; j++)
				if (tids[j] < 0)
					tids[j] = -tids[j];
		}
		if (err)
			break;
	}
	if (err) {
		fprintf(stderr, "ss_pystack: capture: %s\n", strerror(-err));
		stacksnap_mem__free(mem);
		return 1;
	}
	const struct py_raw_thread *holder = NULL;
	for (size_t j = 0; j < cap.nthreads; j++)
		if (cap.threads[j].holds_gil)
			holder = &cap.threads[j];
	printf("runtime addr=0x%llx interps=%u state=%s gil=", 
	       (unsigned long long)rt.runtime_addr, cap.ninterps,
	       cap.state ? cap.state : "-");
	if (holder)
		printf("%llu", (unsigned long long)holder->native_tid);
	else
		printf("none");
	printf(" end=%s\n", cap.end ? cap.end : "-");
	printf("capture ns=%llu reads=%u threads=%zu frames=%zu batched=%d\n",
	       (unsigned long long)(ns / repeat), cap.reads, cap.nthreads,
	       cap.nframes, cap.batched);

	py_resolver__init(&res, &rt, mem);
	for (size_t j = 0; j < cap.nthreads; j++) {
		const struct py_raw_thread *t = &cap.threads[j];
		struct py_frame *frames;
		size_t n;
		const char *end;

		if (py_resolve__thread(&res, &cap, t, &frames, &n, &end))
			return 1;
		if (!end)
			end = t->end;
		const char *pyname = py_resolve__thread_name(&res, &cap, t);

		printf("thread %llu interp=%lld frames=%zu gil=%d pyname=",
		       (unsigned long long)t->native_tid, (long long)t->interp_id,
		       n, t->holds_gil);
		print_escaped(pyname ? pyname : "-");
		printf(" end=");
		print_escaped(end ? end : "-");
		putchar('\n');
		for (size_t f = 0; f < n; f++) {
			printf("py %zu entry=%d line=%u file=", f,
			       frames[f].entry, frames[f].line);
			print_escaped(frames[f].file);
			printf(" name=");
			print_escaped(frames[f].name);
			printf(" fn=%s\n", frames[f].function);
		}
		free(frames);
	}
	py_resolver__free(&res);
	py_capture__free(&cap);
	stacksnap_mem__free(mem);
	return 0;
}
