/* nonstop.c - loader of the non-stop capture's task iterator: loads the
 * program for one target process, maps its stack buffer into ours, and runs
 * it (each run is one read of a fresh iterator) for records and copies. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/bpf_env.h"
#include "bpf/nonstop.h"
#include "nonstop.skel.h"
/* Generated code: bpftool's light skeleton subtracts void pointers. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "nonstop.lskel.h"
#pragma GCC diagnostic pop

/* The two skeletons' global variables are the program's one .bss: the same
 * fields at the same offsets, so the loader reads and writes either through
 * the libbpf skeleton's type. */
#define SAME_BSS_FIELD(f)                                                      \
	_Static_assert(offsetof(struct nonstop_bpf__bss, f) ==                 \
		       offsetof(struct nonstop_lbpf__bss, f), "bss layout")
SAME_BSS_FIELD(settle_run);
SAME_BSS_FIELD(witness_only);
SAME_BSS_FIELD(next_page);
SAME_BSS_FIELD(npages_total);
_Static_assert(sizeof(struct nonstop_bpf__bss) == sizeof(struct nonstop_lbpf__bss),
	       "bss layout");

/* One loaded iterator, by one of two loaders: the light skeleton (lskel:
 * the kernel runs the loader and resolves BTF itself) or, where that fails
 * or STACKSNAP_BPF_LOADER=libbpf asks for it, libbpf's (skel: parses the
 * kernel's BTF in this process). Invariant: exactly one of skel and lskel
 * is set once open succeeded; the fds and bss are that skeleton's; pages
 * reserves npages * NONSTOP_PAGE bytes, of which the first nmapped pages
 * map the stack_pages map's (nmapped <= npages); recs holds nrecs records
 * of the last run. */
struct nonstop {
	struct nonstop_bpf *skel;
	struct nonstop_lbpf *lskel;
	struct nonstop_bpf__bss *bss;	/* the program's globals, mapped */
	int stack_pages_fd, settle_fd;	/* owned by the skeleton */
	int link_fd;			/* ours, -1 before the attach */
	const __u8 *pages;	/* npages reserved; the first nmapped map the
				   buffer, the rest PROT_NONE */
	size_t npages, nmapped;
	struct nonstop_rec *recs;
	size_t nrecs, cap;
	const struct log_sink *log;
	size_t nsettle;		/* entries of the settle map */
};

void nonstop__close(struct nonstop *ns)
{
	if (!ns)
		return;
	if (ns->pages)
		munmap((void *)ns->pages, ns->npages * NONSTOP_PAGE);
	if (ns->link_fd >= 0)
		close(ns->link_fd);
	nonstop_bpf__destroy(ns->skel);
	nonstop_lbpf__destroy(ns->lskel);
	free(ns->recs);
	free(ns);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The light skeleton: the kernel's loader program creates the maps,
 * relocates the program against the kernel's BTF and loads it (~5 ms on
 * the machine measured, against ~55 ms for libbpf's loader, ~50 of them
 * the parse of /sys/kernel/btf/vmlinux). Returns 0 or -errno; *what says
 * which step failed. */
static int load_light(struct nonstop *ns, size_t stack_size, bool fail_test,
		      const char **what)
{
	int err;

	*what = "cannot set up the light loader";
	ns->lskel = nonstop_lbpf__open();
	if (!ns->lskel)
		return -ENOMEM;
	ns->lskel->rodata->stack_size = stack_size;
	ns->lskel->maps.stack_pages.max_entries = (__u32)ns->npages;
	ns->lskel->maps.settle.max_entries = (__u32)ns->nsettle;
	/* A map the kernel refuses: the loader program fails inside the
	 * kernel, as it would where in-kernel CO-RE is missing. */
	if (fail_test)
		ns->lskel->maps.settle.max_entries = UINT32_MAX;
	err = nonstop_lbpf__load(ns->lskel);
	if (err) {
		*what = "the kernel's loader program failed";
		/* The light skeleton returns -errno, or -1 with errno set. */
		return err == -1 ? -errno : err;
	}
	ns->bss = (struct nonstop_bpf__bss *)ns->lskel->bss;
	ns->stack_pages_fd = ns->lskel->maps.stack_pages.map_fd;
	ns->settle_fd = ns->lskel->maps.settle.map_fd;
	return 0;
}

/* libbpf's skeleton: the way that works wherever libbpf does (a kernel
 * without BPF_PROG_TYPE_SYSCALL programs or in-kernel CO-RE, both older
 * than the 6.1 the program needs anyway), at the cost of the BTF parse. */
static int load_libbpf(struct nonstop *ns, size_t stack_size, const char **what)
{
	int err;

	*what = "cannot open the task iterator";
	ns->skel = nonstop_bpf__open();
	if (!ns->skel)
		return -errno;
	ns->skel->rodata->stack_size = stack_size;
	bpf_map__set_max_entries(ns->skel->maps.stack_pages, (__u32)ns->npages);
	bpf_map__set_max_entries(ns->skel->maps.settle, (__u32)ns->nsettle);
	err = nonstop_bpf__load(ns->skel);
	if (err) {
		*what = "the kernel refused the task iterator";
		return err;
	}
	ns->bss = ns->skel->bss;
	ns->stack_pages_fd = bpf_map__fd(ns->skel->maps.stack_pages);
	ns->settle_fd = bpf_map__fd(ns->skel->maps.settle);
	return 0;
}

int nonstop__open(struct nonstop **out, pid_t pid, size_t threads,
		  size_t stack_size, size_t pages, const struct log_sink *log,
		  char *reason, size_t reason_len)
{
	LIBBPF_OPTS(bpf_link_create_opts, lopts);
	union bpf_iter_link_info linfo;
	/* Test hooks: "libbpf" takes libbpf's loader at once, "light-fail"
	 * makes the light loader fail in the kernel (the fallback's test). */
	const char *loader = getenv("STACKSNAP_BPF_LOADER");
	bool fail_test = loader && !strcmp(loader, "light-fail");
	bool light = !loader || strcmp(loader, "libbpf") != 0;
	const char *what = "";
	struct bpf_env env;
	struct nonstop *ns;
	double t0;
	void *m;
	int err;

	*out = NULL;
	err = bpf_env__prepare(&env, log);
	if (err) {
		snprintf(reason, reason_len, "%s", env.reason);
		return err;
	}
	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	ns->log = log;
	ns->link_fd = -1;
	ns->npages = pages ? pages : 1;
	ns->nsettle = 2 * threads + 64;
	t0 = now_ms();
	if (light) {
		err = load_light(ns, stack_size, fail_test, &what);
		if (err) {
			log_info(log, "non-stop: %s (%s): loading with libbpf "
				 "instead", what, strerror(-err));
			nonstop_lbpf__destroy(ns->lskel);
			ns->lskel = NULL;
			light = false;
		}
	}
	if (!light)
		err = load_libbpf(ns, stack_size, &what);
	if (err) {
		snprintf(reason, reason_len, "%s (a kernel >= 6.1 with sleepable "
			 "task iterators, bpf_copy_from_user_task and BTF is "
			 "needed): %s", what, strerror(-err));
		goto fail;
	}
	log_info(log, "non-stop: task iterator loaded in %.1f ms by %s", now_ms() - t0,
		 light ? "the light loader (BTF resolved in the kernel)"
		 : "libbpf (kernel BTF parsed here)");
	ns->bss->npages_total = (__u32)ns->npages;
	memset(&linfo, 0, sizeof(linfo));
	linfo.task.pid = (__u32)pid;
	lopts.iter_info = &linfo;
	lopts.iter_info_len = sizeof(linfo);
	ns->link_fd = bpf_link_create(light ? ns->lskel->progs.capture.prog_fd
				      : bpf_program__fd(ns->skel->progs.capture),
				      0, BPF_TRACE_ITER, &lopts);
	if (ns->link_fd < 0) {
		err = -errno;
		snprintf(reason, reason_len, "cannot attach the task iterator to "
			 "pid %d: %s", (int)pid, strerror(-err));
		goto fail;
	}
	/* Address space for the whole buffer; its pages are mapped as the
	 * runs fill them (nonstop__pages()): mapping a BPF array inserts
	 * every page at once, and at 65 threads the buffer has ~1,200
	 * pages for ~150 used, each also unmapped at the close. */
	m = mmap(NULL, ns->npages * NONSTOP_PAGE, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		snprintf(reason, reason_len, "cannot map the stack buffer: %s",
			 strerror(-err));
		goto fail;
	}
	ns->pages = m;
	*out = ns;
	return 0;
fail:
	log_info(log, "%s", reason);
	nonstop__close(ns);
	return err;
}

int nonstop__settle(struct nonstop *ns, const __u32 *tids,
		    const struct nonstop_settle *vals, size_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bopts);
	__u32 count = (__u32)n;

	if (n > ns->nsettle)
		return -E2BIG;
	if (n && bpf_map_update_batch(ns->settle_fd, tids, vals, &count, &bopts))
		return -errno;
	return 0;
}

/* One read of a fresh iterator, as the bss variables say. */
static int run_once(struct nonstop *ns, const struct nonstop_rec **recs,
		    size_t *n)
{
	size_t used = 0; /* bytes: a read may end inside a record */
	int fd;

	fd = bpf_iter_create(ns->link_fd);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		/* Room for a read of 64 records at least: the kernel fills
		 * as much as its own buffer holds per call. */
		if (ns->cap * sizeof(struct nonstop_rec) - used <
		    64 * sizeof(struct nonstop_rec)) {
			size_t cap = ns->cap ? ns->cap * 2 : 512;
			void *p = realloc(ns->recs, cap * sizeof(struct nonstop_rec));

			if (!p) {
				close(fd);
				return -ENOMEM;
			}
			ns->recs = p;
			ns->cap = cap;
		}
		r = read(fd, (char *)ns->recs + used,
			 ns->cap * sizeof(struct nonstop_rec) - used);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = -errno;
			close(fd);
			return err;
		}
		if (r == 0)
			break;
		used += (size_t)r;
	}
	close(fd);
	ns->nrecs = used / sizeof(struct nonstop_rec);
	*recs = ns->recs;
	*n = ns->nrecs;
	return 0;
}

int nonstop__run(struct nonstop *ns, enum nonstop_run what,
		 const struct nonstop_rec **recs, size_t *n)
{
	ns->bss->witness_only = what == NONSTOP_RUN_WITNESS;
	ns->bss->settle_run = what == NONSTOP_RUN_SETTLE;
	if (what == NONSTOP_RUN_COPY)
		ns->bss->next_page = 0;
	return run_once(ns, recs, n);
}

int nonstop__warm(struct nonstop *ns)
{
	const struct nonstop_rec *r;
	size_t n;
	__u32 used;
	int err = nonstop__run(ns, NONSTOP_RUN_COPY, &r, &n);

	used = ns->bss->next_page;
	if (err || !used || 2 * (size_t)used > ns->npages)
		return err;
	/* The pages after them, where reads again go. */
	ns->bss->witness_only = 0;
	ns->bss->settle_run = 0;
	ns->bss->next_page = used;
	return run_once(ns, &r, &n);
}

const __u8 *nonstop__pages(struct nonstop *ns, __u32 first)
{
	size_t used = ns->bss->next_page;

	if (used > ns->npages)
		used = ns->npages;
	if (first >= used)
		return NULL;
	/* Every page the runs wrote so far, mapped in place (the pointers
	 * handed out before stay valid). */
	if (used > ns->nmapped) {
		size_t off = ns->nmapped * NONSTOP_PAGE;

		if (mmap((void *)(ns->pages + off), (used - ns->nmapped) * NONSTOP_PAGE,
			 PROT_READ, MAP_SHARED | MAP_FIXED, ns->stack_pages_fd,
			 (off_t)off) == MAP_FAILED)
			return NULL;
		ns->nmapped = used;
	}
	return ns->pages + (size_t)first * NONSTOP_PAGE;
}
