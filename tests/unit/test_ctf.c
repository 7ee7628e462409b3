/* test_ctf.c - the CTF writer, read back by babeltrace2: every event, its
 * contexts, fields and frames in babeltrace2's text, discarded-event
 * counts, packets, event classes that change, a directory reused; the
 * public writer's symbolized frames and uprobe fields. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock_offset.h"
#include "ctf/ctf_writer.h"
#include "harness.h"

/* 2023-11-14 22:13:20.123456789 UTC minus CLOCK_MONOTONIC 0. */
#define OFFSET_NS 1700000000123456789LL

static char tmpdir[64];

/* tmpdir/name (tmpdir made at the first call); valid until the next call. */
static const char *trace_dir(const char *name)
{
	static char p[128];

	if (!tmpdir[0]) {
		strcpy(tmpdir, "/tmp/test_ctf.XXXXXX");
		if (!mkdtemp(tmpdir))
			abort();
	}
	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	return p;
}

/* Runs babeltrace2 on dir (UTC dates, no deltas); its stdout and stderr
 * in malloc'ed strings. Returns its exit status. */
static int babeltrace(const char *dir, char **out, char **err)
{
	char o[160], e[160];
	size_t n;
	int rc;

	snprintf(o, sizeof(o), "%s/bt.out", tmpdir);
	snprintf(e, sizeof(e), "%s/bt.err", tmpdir);
	rc = harness_sh("babeltrace2 --clock-gmt --clock-date --no-delta '%s' >'%s' 2>'%s'",
			dir, o, e);
	*out = (char *)harness_slurp(o, &n);
	*out = *out ? realloc(*out, n + 1) : calloc(1, 1);
	(*out)[n] = 0;
	*err = (char *)harness_slurp(e, &n);
	*err = *err ? realloc(*err, n + 1) : calloc(1, 1);
	(*err)[n] = 0;
	return rc;
}

/* Line i (from 0) of s, in buf; "" past the end. */
static const char *line(const char *s, int i, char *buf, size_t len)
{
	const char *nl;

	for (; i > 0 && s; i--)
		s = (nl = strchr(s, '\n')) ? nl + 1 : NULL;
	if (!s || !*s)
		return "";
	nl = strchr(s, '\n');
	snprintf(buf, len, "%.*s", (int)(nl ? nl - s : (long)strlen(s)), s);
	return buf;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static bool have_babeltrace(void)
{
	if (harness_sh("babeltrace2 --version >/dev/null 2>&1") == 0)
		return true;
	fprintf(stderr, "  babeltrace2 is missing (scripts/install-deps.sh installs it)\n");
	harness_failed_checks++;
	return false;
}

static const uint64_t chain_ips[] = { 0x7f1234561350, 0x555500001459, 0x555500001520 };
static const struct ctf_frame chain_frames[] = {
	{ "__GI___libc_write+0x10", "/usr/lib/x86_64-linux-gnu/libc.so.6" },
	{ "tc_write+0x19", "/work/tests/trace_chains" },
	{ "main+0x30", "/work/tests/trace_chains" },
};
#define CHAIN_CTX                                                              \
	"callstack_user_length = 3, callstack_user = [ [0] = 0x7F1234561350, "  \
	"[1] = 0x555500001459, [2] = 0x555500001520 ], frames_length = 3, "      \
	"frames = [ [0] = { symbol = \"__GI___libc_write+0x10\", module = "      \
	"\"/usr/lib/x86_64-linux-gnu/libc.so.6\" }, [1] = { symbol = "           \
	"\"tc_write+0x19\", module = \"/work/tests/trace_chains\" }, [2] = { "   \
	"symbol = \"main+0x30\", module = \"/work/tests/trace_chains\" } ]"

/* Every kind of event the trace writes, on two CPUs, read back field by
 * field and frame by frame, in time order across the streams. */
static void events_fields_frames(void)
{
	const char *dir = trace_dir("events");
	struct ctf_writer_opts o = { .clock_offset_ns = OFFSET_NS, .clock_absolute = true,
				     .hostname = "hostA",
				     .kernel_release = "6.1.0-test",
				     .clock_uuid = "0b5c2e59-6a4f-4f3e-9d3a-1f2e3d4c5b6a" };
	struct ctf_writer *w;
	struct stacksnap_trace_field write_f[] = {
		{ .name = "__syscall_nr", .value = 1, .size = 4, .is_signed = true },
		{ .name = "fd", .value = 3, .size = 8 },
		{ .name = "buf", .value = 0x55aa55aa00e0, .size = 8, .is_pointer = true },
		{ .name = "count", .value = 101, .size = 8 },
	};
	struct stacksnap_trace_field exit_f[] = {
		{ .name = "__syscall_nr", .value = 1, .size = 4, .is_signed = true },
		{ .name = "ret", .value = (uint64_t)-11, .size = 8, .is_signed = true },
	};
	struct stacksnap_trace_field small_f[] = {
		{ .name = "prev_comm", .str = "kworker/0:1", .size = 16 },
		{ .name = "prio", .value = (uint64_t)-3, .size = 1, .is_signed = true },
		{ .name = "flags", .value = 0xbeef, .size = 2 },
		{ .name = "state", .value = 0x80000001, .size = 4 },
	};
	struct ctf_event ev = {
		.name = "syscalls:sys_enter_write", .time_ns = 1000, .cpu = 1,
		.pid = 4242, .tid = 4243, .comm = "trace_chains",
		.fields = write_f, .nfields = 4,
		.ips = chain_ips, .nips = 3, .frames = chain_frames, .nframes = 3,
		.complete = true, .end = "reached the bottom of the stack",
	};
	char *out, *err, b[2048];

	if (!have_babeltrace())
		return;
	w = ctf_writer__open(dir, &o);
	CHECK(w);
	if (!w)
		return;
	CHECK(ctf_writer__add(w, &ev) == 0);
	ev.name = "syscalls:sys_exit_write";
	ev.time_ns = 2500;
	ev.fields = exit_f;
	ev.nfields = 2;
	ev.complete = false;
	ev.end = "stack copy too small";
	ev.nips = ev.nframes = 2;
	CHECK(ev.cpu == 1 && ctf_writer__add(w, &ev) == 0);
	ev.name = "sched:sched_switch";
	ev.time_ns = 2000; /* earlier, on another CPU: merged in time order */
	ev.cpu = 0;
	ev.pid = ev.tid = 7;
	ev.comm = "kworker/0:1";
	ev.fields = small_f;
	ev.nfields = 4;
	ev.nips = ev.nframes = 0;
	ev.end = "pc is not in any known mapping";
	CHECK(ctf_writer__add(w, &ev) == 0);
	/* A uprobe: its name and the function it names as string fields; a
	 * sample: no fields at all. */
	struct stacksnap_trace_field up_f[] = {
		{ .name = "file", .str = "/work/tests/trace_chains" },
		{ .name = "function", .str = "tc_write" },
	};
	ev = (struct ctf_event){
		.name = "u:/work/tests/trace_chains:tc_write", .time_ns = 3000, .cpu = 0,
		.pid = 4242, .tid = 4244, .comm = "tc \"worker\"", .fields = up_f,
		.nfields = 2, .ips = chain_ips + 1, .nips = 2, .frames = chain_frames + 1,
		.nframes = 2, .complete = true, .end = "reached the bottom of the stack",
	};
	CHECK(ctf_writer__add(w, &ev) == 0);
	ev.name = "cpu-clock";
	ev.time_ns = 1000004000ull; /* a second later */
	ev.fields = NULL;
	ev.nfields = 0;
	ev.cpu = 3;
	CHECK(ctf_writer__add(w, &ev) == 0);
	CHECK(ctf_writer__close(w) == 0);

	CHECK(babeltrace(dir, &out, &err) == 0);
	CHECKF(!*err, "%s", err);
	CHECK(count_lines(out) == 5);
	CHECKF(!strcmp(line(out, 0, b, sizeof(b)),
		"[2023-11-14 22:13:20.123457789] hostA syscalls:sys_enter_write: "
		"{ cpu_id = 1 }, { pid = 4242, tid = 4243, procname = \"trace_chains\", "
		CHAIN_CTX ", complete = 1, end = \"reached the bottom of the stack\" }, "
		"{ __syscall_nr = 1, fd = 3, buf = 0x55AA55AA00E0, count = 101 }"), "%s", b);
	CHECKF(!strcmp(line(out, 1, b, sizeof(b)),
		"[2023-11-14 22:13:20.123458789] hostA sched:sched_switch: "
		"{ cpu_id = 0 }, { pid = 7, tid = 7, procname = \"kworker/0:1\", "
		"callstack_user_length = 0, callstack_user = [ ], frames_length = 0, "
		"frames = [ ], complete = 0, end = \"pc is not in any known mapping\" }, "
		"{ prev_comm = \"kworker/0:1\", prio = -3, flags = 48879, state = 2147483649 }"),
	       "%s", b);
	CHECKF(!strcmp(line(out, 2, b, sizeof(b)),
		"[2023-11-14 22:13:20.123459289] hostA syscalls:sys_exit_write: "
		"{ cpu_id = 1 }, { pid = 4242, tid = 4243, procname = \"trace_chains\", "
		"callstack_user_length = 2, callstack_user = [ [0] = 0x7F1234561350, "
		"[1] = 0x555500001459 ], frames_length = 2, frames = [ [0] = { symbol = "
		"\"__GI___libc_write+0x10\", module = \"/usr/lib/x86_64-linux-gnu/libc.so.6\" }, "
		"[1] = { symbol = \"tc_write+0x19\", module = \"/work/tests/trace_chains\" } ], "
		"complete = 0, end = \"stack copy too small\" }, { __syscall_nr = 1, ret = -11 }"),
	       "%s", b);
	CHECKF(!strcmp(line(out, 3, b, sizeof(b)),
		"[2023-11-14 22:13:20.123459789] hostA u:/work/tests/trace_chains:tc_write: "
		"{ cpu_id = 0 }, { pid = 4242, tid = 4244, procname = \"tc \\\"worker\\\"\", "
		"callstack_user_length = 2, callstack_user = [ [0] = 0x555500001459, "
		"[1] = 0x555500001520 ], frames_length = 2, frames = [ [0] = { symbol = "
		"\"tc_write+0x19\", module = \"/work/tests/trace_chains\" }, [1] = { symbol = "
		"\"main+0x30\", module = \"/work/tests/trace_chains\" } ], complete = 1, "
		"end = \"reached the bottom of the stack\" }, "
		"{ file = \"/work/tests/trace_chains\", function = \"tc_write\" }"), "%s", b);
	CHECKF(!strcmp(line(out, 4, b, sizeof(b)),
		"[2023-11-14 22:13:21.123460789] hostA cpu-clock: { cpu_id = 3 }, "
		"{ pid = 4242, tid = 4244, procname = \"tc \\\"worker\\\"\", "
		"callstack_user_length = 2, callstack_user = [ [0] = 0x555500001459, "
		"[1] = 0x555500001520 ], frames_length = 2, frames = [ [0] = { symbol = "
		"\"tc_write+0x19\", module = \"/work/tests/trace_chains\" }, [1] = { symbol = "
		"\"main+0x30\", module = \"/work/tests/trace_chains\" } ], complete = 1, "
		"end = \"reached the bottom of the stack\" }, { }"), "%s", b);
	free(out);
	free(err);

	/* The clock as the metadata describes it, the environment. */
	char meta[160];
	size_t n;

	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	out = (char *)harness_slurp(meta, &n);
	CHECK(out && n);
	if (out) {
		out = realloc(out, n + 1);
		out[n] = 0;
		CHECK(strstr(out, "/* CTF 1.8 */"));
		CHECK(strstr(out, "\tname = \"monotonic\";\n"));
		CHECK(strstr(out, "\tfreq = 1000000000;\n"));
		CHECK(strstr(out, "\tabsolute = true;\n"));
		CHECK(strstr(out, "\tname = \"monotonic\";\n\tuuid = "
				  "\"0b5c2e59-6a4f-4f3e-9d3a-1f2e3d4c5b6a\";\n"));
		CHECK(strstr(out, "\toffset_s = 1700000000;\n"));
		CHECK(strstr(out, "\toffset = 123456789;\n"));
		CHECK(strstr(out, "\tkernel_release = \"6.1.0-test\";\n"));
		free(out);
	}
}

static int count_str(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

/* Lost events as CTF's discarded-events counters: on a packet after
 * others, on a stream's first packet, and on an empty packet for a
 * stream that had no events since (or none at all). babeltrace2 warns
 * once per change of a stream's count, with no "may have discarded". */
static void discarded_events(void)
{
	const char *dir = trace_dir("discarded");
	struct ctf_writer_opts o = { .clock_offset_ns = OFFSET_NS };
	struct ctf_writer *w;
	struct ctf_event ev = { .name = "syscalls:sys_enter_getpid", .cpu = 0,
				.pid = 1, .tid = 1, .comm = "a", .end = "" };
	char *out, *err;

	if (!have_babeltrace())
		return;
	w = ctf_writer__open(dir, &o);
	CHECK(w);
	if (!w)
		return;
	for (int i = 0; i < 3; i++) {
		ev.time_ns = 1000 + (uint64_t)i;
		CHECK(ctf_writer__add(w, &ev) == 0);
	}
	CHECK(ctf_writer__flush(w) == 0);
	CHECK(ctf_writer__discarded(w, 0, 7) == 0);
	ev.time_ns = 5000;
	CHECK(ctf_writer__add(w, &ev) == 0);
	CHECK(ctf_writer__flush(w) == 0);
	/* cpu 0 loses 4 more after its last event; cpu 2 loses 9 events and
	 * has none. */
	CHECK(ctf_writer__discarded(w, 0, 11) == 0);
	CHECK(ctf_writer__discarded(w, 2, 9) == 0);
	ev.cpu = 1;
	ev.time_ns = 6000;
	CHECK(ctf_writer__add(w, &ev) == 0);
	CHECK(ctf_writer__flush(w) == 0);
	CHECK(ctf_writer__discarded(w, 1, 2) == 0);
	ev.time_ns = 7000;
	CHECK(ctf_writer__add(w, &ev) == 0);
	CHECK(ctf_writer__close(w) == 0);

	CHECK(babeltrace(dir, &out, &err) == 0);
	CHECK(count_lines(out) == 6);
	CHECKF(count_str(err, "WARNING: Tracer discarded") == 4, "%s", err);
	CHECKF(!strstr(err, "may have"), "%s", err);
	/* Each count closes the packet open when it was given: what was lost
	 * lies between the end of the packet before and the last event. */
	CHECKF(strstr(err, "Tracer discarded 7 events between [2023-11-14 22:13:20.123457789] "
			   "and [2023-11-14 22:13:20.123457791]"), "%s", err);
	CHECKF(strstr(err, "Tracer discarded 4 events between [2023-11-14 22:13:20.123457791] "
			   "and [2023-11-14 22:13:20.123461789]"), "%s", err);
	CHECKF(strstr(err, "Tracer discarded 2 events between [2023-11-14 22:13:20.123462789] "
			   "and [2023-11-14 22:13:20.123462789]"), "%s", err);
	CHECKF(strstr(err, "Tracer discarded 9 events between [2023-11-14 22:13:20.123461789] "
			   "and [2023-11-14 22:13:20.123461789]"), "%s", err);
	CHECK(strstr(err, "stream_0"));
	CHECK(strstr(err, "stream_1"));
	CHECK(strstr(err, "stream_2"));
	free(out);
	free(err);
}

/* Many small packets: every event comes back, in order; a timestamp
 * earlier than its stream's last is raised to it. */
static void packets_and_order(void)
{
	const char *dir = trace_dir("packets");
	struct ctf_writer_opts o = { .clock_offset_ns = 0, .packet_bytes = 200 };
	struct stacksnap_trace_field f = { .name = "seq", .size = 4 };
	struct ctf_event ev = { .name = "seq", .pid = 1, .tid = 1, .comm = "a",
				.fields = &f, .nfields = 1, .ips = chain_ips, .nips = 3,
				.end = "" };
	struct ctf_writer *w;
	char *out, *err, b[512], want[64];
	int bad = 0;

	if (!have_babeltrace())
		return;
	w = ctf_writer__open(dir, &o);
	CHECK(w);
	if (!w)
		return;
	for (unsigned i = 0; i < 1000; i++) {
		f.value = i;
		ev.time_ns = 1000000000ull + i * 10ull;
		if (i == 500)
			ev.time_ns -= 15; /* raised to event 499's time */
		CHECK(ctf_writer__add(w, &ev) == 0);
	}
	CHECK(ctf_writer__close(w) == 0);
	CHECK(babeltrace(dir, &out, &err) == 0);
	CHECKF(!*err, "%s", err);
	CHECK(count_lines(out) == 1000);
	for (int i = 0; i < 1000; i++) {
		snprintf(want, sizeof(want), "{ seq = %d }", i);
		if (!strstr(line(out, i, b, sizeof(b)), want))
			bad++;
	}
	CHECKF(!bad, "%d lines out of order", bad);
	CHECKF(strstr(line(out, 500, b, sizeof(b)), "[1970-01-01 00:00:01.000004990]"),
	       "%s", b);
	free(out);
	free(err);
}

/* The warnings without what differs between two traces of the same
 * events (their uuid and directory). */
static void strip_ids(char *s, const char *dir)
{
	char *p;

	while ((p = strstr(s, "UUID: ")))
		memset(p, '-', 6 + 36);
	while ((p = strstr(s, dir)))
		memset(p, '-', strlen(dir));
}

/* Where packets end does not depend on when the trace was flushed: the
 * same events and counts, flushed after every event or never, read
 * back the same (events, and the discarded counts with their times). */
static void flush_independent(void)
{
	char d[2][128], *out[2], *err[2];
	struct stacksnap_trace_field f = { .name = "seq", .size = 4 };
	struct ctf_event ev = { .name = "seq", .pid = 1, .tid = 1, .comm = "a",
				.fields = &f, .nfields = 1, .end = "" };

	if (!have_babeltrace())
		return;
	for (int k = 0; k < 2; k++) {
		struct ctf_writer_opts o = { .packet_bytes = 300 };
		struct ctf_writer *w;

		snprintf(d[k], sizeof(d[k]), "%s", trace_dir(k ? "flush1" : "flush0"));
		w = ctf_writer__open(d[k], &o);
		CHECK(w);
		if (!w)
			return;
		for (unsigned i = 0; i < 200; i++) {
			f.value = i;
			ev.cpu = i % 3;
			ev.time_ns = 1000 + i;
			CHECK(ctf_writer__add(w, &ev) == 0);
			if (i % 17 == 5)
				CHECK(ctf_writer__discarded(w, i % 4, i) == 0);
			if (k)
				CHECK(ctf_writer__flush(w) == 0);
		}
		CHECK(ctf_writer__close(w) == 0);
		CHECK(babeltrace(d[k], &out[k], &err[k]) == 0);
		strip_ids(err[k], d[k]);
	}
	CHECK(count_lines(out[0]) == 200);
	CHECK(count_str(err[0], "Tracer discarded") == 12);
	CHECK(!strcmp(out[0], out[1]));
	CHECKF(!strcmp(err[0], err[1]), "never flushed:\n%s\nflushed:\n%s", err[0], err[1]);
	for (int k = 0; k < 2; k++) {
		free(out[k]);
		free(err[k]);
	}
}

/* One event name whose fields change kind (a string field that was an
 * integer): a second event class of the same name; and a directory
 * written again by a trace with fewer CPUs holds only the new trace. */
static void classes_and_reuse(void)
{
	const char *dir = trace_dir("reuse");
	struct ctf_writer_opts o = { 0 };
	struct stacksnap_trace_field f = { .name = "name", .value = 5, .size = 8 };
	struct ctf_event ev = { .name = "ev", .pid = 1, .tid = 1, .comm = "a",
				.fields = &f, .nfields = 1, .end = "" };
	struct ctf_writer *w;
	char *out, *err, b[512];

	if (!have_babeltrace())
		return;
	w = ctf_writer__open(dir, &o);
	CHECK(w);
	if (!w)
		return;
	for (unsigned cpu = 0; cpu < 4; cpu++) {
		ev.cpu = cpu;
		ev.time_ns = 100 + cpu;
		CHECK(ctf_writer__add(w, &ev) == 0);
	}
	CHECK(ctf_writer__close(w) == 0);

	w = ctf_writer__open(dir, &o);
	CHECK(w);
	if (!w)
		return;
	ev.cpu = 0;
	ev.time_ns = 100;
	CHECK(ctf_writer__add(w, &ev) == 0);
	f.str = "text";
	ev.time_ns = 200;
	CHECK(ctf_writer__add(w, &ev) == 0);
	f.str = NULL;
	ev.time_ns = 300;
	CHECK(ctf_writer__add(w, &ev) == 0);
	CHECK(ctf_writer__close(w) == 0);
	CHECK(access(trace_dir("reuse/stream_3"), F_OK) != 0);
	dir = trace_dir("reuse");

	CHECK(babeltrace(dir, &out, &err) == 0);
	CHECKF(!*err, "%s", err);
	CHECK(count_lines(out) == 3);
	CHECK(strstr(line(out, 0, b, sizeof(b)), " ev: ") && strstr(b, "{ name = 5 }"));
	CHECK(strstr(line(out, 1, b, sizeof(b)), " ev: ") && strstr(b, "{ name = \"text\" }"));
	CHECK(strstr(line(out, 2, b, sizeof(b)), " ev: ") && strstr(b, "{ name = 5 }"));
	free(out);
	free(err);
}

/* A function of this program the public writer must name. */
static __attribute__((noinline, used)) int ctf_known_function(int x)
{
	return x * 3 + 1;
}

/* The public writer (stacksnap_ctf_writer__*): frames symbolized against
 * a real address space (this process), the signal trampoline, a pc in no
 * module, completeness and the end reason from enum stacksnap_end, a
 * uprobe's file and function (C++ names keep their "::"), the clock
 * offset and boot id as given. */
static void public_writer(void)
{
	const char *dir = trace_dir("public");
	char d[128], *out, *err, b[2048], want[512];
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log_level = STACKSNAP_LOG_ERROR);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&copts);
	struct stacksnap_addrspace *as = ctx ? stacksnap_addrspace__from_pid(ctx, getpid())
					     : NULL;
	uint64_t fn = (uint64_t)(uintptr_t)&ctf_known_function;
	struct stacksnap_frame frames[3] = {
		{ .pc = fn + 2 },			/* frame 0: exact */
		{ .pc = 0x10, .flags = STACKSNAP_FRAME_SIGRETURN },
		{ .pc = 0x20 },				/* in no module */
	};
	struct stacksnap_ctf_writer *w;

	snprintf(d, sizeof(d), "%s", dir);
	CHECK(ctx && as);
	if (!have_babeltrace() || !ctx || !as)
		goto out;
	STACKSNAP_OPTS(stacksnap_ctf_writer_opts, wo, .clock_offset_ns = OFFSET_NS,
		       .boot_id = "0b5c2e59-6a4f-4f3e-9d3a-1f2e3d4c5b6a",
		       .hostname = "hostB");
	w = stacksnap_ctf_writer__new(ctx, d, &wo);
	CHECK(w);
	if (!w)
		goto out;
	STACKSNAP_OPTS(stacksnap_ctf_event, ev, .name = "ur:/opt/lib/libx.so:ns::Class::method",
		       .time_ns = 5, .pid = 3, .tid = 4, .cpu = 2, .comm = "x",
		       .frames = frames, .nframes = 3, .end = STACKSNAP_END_NO_MODULE,
		       .as = as);
	CHECK(stacksnap_ctf_writer__add(w, &ev) == 0);
	ev.name = "cpu-clock";
	ev.time_ns = 6;
	ev.nframes = 1;
	ev.end = STACKSNAP_END_COMPLETE;
	ev.as = NULL;	/* nothing to symbolize with */
	CHECK(stacksnap_ctf_writer__add(w, &ev) == 0);
	CHECK(stacksnap_ctf_writer__close(w) == 0);

	CHECK(babeltrace(d, &out, &err) == 0);
	CHECKF(!*err, "%s", err);
	CHECK(count_lines(out) == 2);
	snprintf(want, sizeof(want),
		 "callstack_user_length = 3, callstack_user = [ [0] = 0x%" PRIX64 ", "
		 "[1] = 0x10, [2] = 0x20 ], frames_length = 3, frames = [ [0] = { symbol = "
		 "\"ctf_known_function+0x2\", module = \"", fn + 2);
	CHECKF(strstr(line(out, 0, b, sizeof(b)), want), "%s\nwant %s", b, want);
	CHECKF(strstr(b, "[2023-11-14 22:13:20.123456794] hostB "
			 "ur:/opt/lib/libx.so:ns::Class::method: { cpu_id = 2 }, "
			 "{ pid = 3, tid = 4, procname = \"x\""), "%s", b);
	CHECKF(strstr(b, "test_ctf\" }, [1] = { symbol = \"<signal handler called>\", "
			 "module = \"\" }, [2] = { symbol = \"[unknown]\", module = \"\" } ], "
			 "complete = 0, end = \"pc outside any mapping\" }, "
			 "{ file = \"/opt/lib/libx.so\", function = \"ns::Class::method\" }"),
	       "%s", b);
	snprintf(want, sizeof(want),
		 "cpu-clock: { cpu_id = 2 }, { pid = 3, tid = 4, procname = \"x\", "
		 "callstack_user_length = 1, callstack_user = [ [0] = 0x%" PRIX64 " ], "
		 "frames_length = 1, frames = [ [0] = { symbol = \"[unknown]\", module = \"\" } ], "
		 "complete = 1, end = \"complete\" }, { }", fn + 2);
	CHECKF(strstr(line(out, 1, b, sizeof(b)), want), "%s\nwant %s", b, want);
	free(out);
	free(err);
out:
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
}

/* Events files keep what a CTF trace needs (no BPF here: events made up
 * as a trace would deliver them, without a stack copy): the clock offset
 * given, the boot id and host name, and the lost counts at their places
 * among the events; a file read back gives them in order. */
static void events_file_keeps_ctf(void)
{
	char path[160], boot[40] = "", host[256] = "";
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log_level = STACKSNAP_LOG_ERROR);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&copts);
	struct stacksnap_capture cap = { 0 };
	struct stacksnap_frame fr = { .pc = 0x1234 };
	struct stacksnap_trace_event ev = { .name = "cpu-clock", .comm = "a", .pid = 5,
					    .tid = 5, .frames = &fr, .nframes = 1,
					    .end = STACKSNAP_END_COMPLETE, .capture = &cap };
	struct stacksnap_trace_writer *tw;
	struct stacksnap_saved *s;
	FILE *f;

	CHECK(ctx);
	if (!ctx)
		return;
	snprintf(path, sizeof(path), "%s", trace_dir("events.ss"));
	STACKSNAP_OPTS(stacksnap_trace_writer_opts, wo, .clock_offset_ns = OFFSET_NS,
		       .unwind = STACKSNAP_TRACE_UNWIND_KERNEL);
	tw = stacksnap_trace_writer__new(ctx, path, &wo);
	CHECK(tw);
	if (!tw)
		goto out;
	ev.time_ns = 10;
	CHECK(stacksnap_trace_writer__add(tw, &ev, NULL, 0) == 0);
	CHECK(stacksnap_trace_writer__lost(tw, 1, 7) == 0);
	CHECK(stacksnap_trace_writer__lost(tw, 0, 3) == 0);
	ev.time_ns = 20;
	CHECK(stacksnap_trace_writer__add(tw, &ev, NULL, 0) == 0);
	ev.time_ns = 30;
	CHECK(stacksnap_trace_writer__add(tw, &ev, NULL, 0) == 0);
	CHECK(stacksnap_trace_writer__lost(tw, 1, 9) == 0);
	CHECK(stacksnap_trace_writer__close(tw) == 0);

	if ((f = fopen("/proc/sys/kernel/random/boot_id", "r"))) {
		CHECK(fgets(boot, sizeof(boot), f));
		boot[strcspn(boot, "\n")] = 0;
		fclose(f);
	}
	gethostname(host, sizeof(host) - 1);
	s = stacksnap_saved__open(ctx, path, NULL);
	CHECK(s);
	if (!s)
		goto out;
	STACKSNAP_OPTS(stacksnap_saved_info, info);
	CHECK(stacksnap_saved__info(s, &info) == 0);
	CHECK(info.clock_offset_ns == OFFSET_NS);
	CHECKF(info.boot_id && !strcmp(info.boot_id, boot), "%s vs %s", info.boot_id, boot);
	CHECKF(info.hostname && !strcmp(info.hostname, host), "%s vs %s", info.hostname, host);
	CHECK(stacksnap_saved__event_count(s) == 3);
	CHECK(stacksnap_saved__lost_count(s) == 3);
	static const struct { unsigned cpu; uint64_t total; size_t before; } want[] = {
		{ 1, 7, 1 }, { 0, 3, 1 }, { 1, 9, 3 },
	};
	for (size_t i = 0; i < 3; i++) {
		STACKSNAP_OPTS(stacksnap_saved_lost, l);

		CHECK(stacksnap_saved__lost(s, i, &l) == 0);
		CHECKF(l.cpu == want[i].cpu && l.total == want[i].total &&
		       l.before_event == want[i].before, "record %zu: cpu %u, %llu, before %zu",
		       i, l.cpu, (unsigned long long)l.total, l.before_event);
	}
	STACKSNAP_OPTS(stacksnap_saved_lost, l);
	CHECK(stacksnap_saved__lost(s, 3, &l) == -EINVAL);
	stacksnap_saved__free(s);
out:
	stacksnap_ctx__free(ctx);
}

/* The measured offset is CLOCK_REALTIME - CLOCK_MONOTONIC. */
static void clock_offset(void)
{
	struct timespec m, r;
	int64_t off = clock_realtime_offset_ns(), want;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	want = ((int64_t)r.tv_sec - m.tv_sec) * 1000000000 + (r.tv_nsec - m.tv_nsec);
	CHECKF(llabs(off - want) < 10000000, "%lld vs %lld", (long long)off,
	       (long long)want);
}

/* Last: removes the traces (kept when a test failed, to look at). */
static void cleanup(void)
{
	if (tmpdir[0] && !harness_failed_checks)
		harness_sh("rm -rf '%s'", tmpdir);
}

TEST_MAIN("ctf", TEST(events_fields_frames), TEST(discarded_events),
	  TEST(packets_and_order), TEST(flush_independent), TEST(classes_and_reuse),
	  TEST(public_writer), TEST(events_file_keeps_ctf),
	  TEST(clock_offset),
	  TEST(cleanup))
