/* nonstop.c - loader of the non-stop capture's task iterator: loads the
 * program for one target process, maps its stack buffer into ours, and runs
 * it (each run is one read of a fresh iterator) for records and copies. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/bpf_env.h"
#include "bpf/nonstop.h"
#include "nonstop.skel.h"

/* One loaded iterator. Invariant: pages maps npages * NONSTOP_PAGE bytes
 * of the stack_pages map; recs holds nrecs records of the last run. */
struct nonstop {
	struct nonstop_bpf *skel;
	struct bpf_link *link;
	const __u8 *pages;
	size_t npages;
	struct nonstop_rec *recs;
	size_t nrecs, cap;
	const struct log_sink *log;
	__u32 gen;		/* retry_gen of the next retry run */
	size_t nretry;		/* entries of the retry map */
	__u32 *vals;		/* nretry copies of gen, for batch updates */
};

void nonstop__close(struct nonstop *ns)
{
	if (!ns)
		return;
	if (ns->pages)
		munmap((void *)ns->pages, ns->npages * NONSTOP_PAGE);
	bpf_link__destroy(ns->link);
	nonstop_bpf__destroy(ns->skel);
	free(ns->recs);
	free(ns->vals);
	free(ns);
}

int nonstop__open(struct nonstop **out, pid_t pid, size_t threads,
		  size_t stack_size, size_t pages, const struct log_sink *log,
		  char *reason, size_t reason_len)
{
	LIBBPF_OPTS(bpf_iter_attach_opts, aopts);
	union bpf_iter_link_info linfo;
	struct bpf_env env;
	struct nonstop *ns;
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
	ns->npages = pages ? pages : 1;
	ns->skel = nonstop_bpf__open();
	if (!ns->skel) {
		err = -errno;
		snprintf(reason, reason_len, "cannot open the task iterator: %s",
			 strerror(-err));
		goto fail;
	}
	ns->skel->rodata->stack_size = stack_size;
	bpf_map__set_max_entries(ns->skel->maps.stack_pages, (__u32)ns->npages);
	ns->nretry = 2 * threads + 64;
	bpf_map__set_max_entries(ns->skel->maps.retry, (__u32)ns->nretry);
	err = nonstop_bpf__load(ns->skel);
	if (err) {
		snprintf(reason, reason_len, "the kernel refused the task iterator "
			 "(a kernel >= 6.1 with sleepable task iterators, "
			 "bpf_copy_from_user_task and BTF is needed): %s",
			 strerror(-err));
		goto fail;
	}
	ns->skel->bss->npages_total = (__u32)ns->npages;
	memset(&linfo, 0, sizeof(linfo));
	linfo.task.pid = (__u32)pid;
	aopts.link_info = &linfo;
	aopts.link_info_len = sizeof(linfo);
	ns->link = bpf_program__attach_iter(ns->skel->progs.capture, &aopts);
	if (!ns->link) {
		err = -errno;
		snprintf(reason, reason_len, "cannot attach the task iterator to "
			 "pid %d: %s", (int)pid, strerror(-err));
		goto fail;
	}
	m = mmap(NULL, ns->npages * NONSTOP_PAGE, PROT_READ, MAP_SHARED,
		 bpf_map__fd(ns->skel->maps.stack_pages), 0);
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

int nonstop__retry(struct nonstop *ns, const __u32 *tids, size_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bopts);
	__u32 count = (__u32)n;

	if (n > ns->nretry)
		return -E2BIG;
	if (!ns->vals && !(ns->vals = calloc(ns->nretry, sizeof(*ns->vals))))
		return -ENOMEM;
	/* A new generation: entries of earlier rounds need no delete. */
	ns->gen++;
	for (size_t i = 0; i < n; i++)
		ns->vals[i] = ns->gen;
	if (n && bpf_map_update_batch(bpf_map__fd(ns->skel->maps.retry), tids,
				      ns->vals, &count, &bopts))
		return -errno;
	return 0;
}

/* One read of a fresh iterator, as the bss variables say. */
static int run_once(struct nonstop *ns, const struct nonstop_rec **recs,
		    size_t *n)
{
	size_t used = 0; /* bytes: a read may end inside a record */
	int fd;

	fd = bpf_iter_create(bpf_link__fd(ns->link));
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
	ns->skel->bss->witness_only = what == NONSTOP_RUN_WITNESS;
	ns->skel->bss->retry_gen = what == NONSTOP_RUN_RETRY ? ns->gen : 0;
	if (what == NONSTOP_RUN_COPY)
		ns->skel->bss->next_page = 0;
	return run_once(ns, recs, n);
}

int nonstop__warm(struct nonstop *ns)
{
	const struct nonstop_rec *r;
	size_t n;
	__u32 used;
	int err = nonstop__run(ns, NONSTOP_RUN_COPY, &r, &n);

	used = ns->skel->bss->next_page;
	if (err || !used || 2 * (size_t)used > ns->npages)
		return err;
	/* The pages after them, where reads again go. */
	ns->skel->bss->witness_only = 0;
	ns->skel->bss->retry_gen = 0;
	ns->skel->bss->next_page = used;
	return run_once(ns, &r, &n);
}

const __u8 *nonstop__pages(const struct nonstop *ns, __u32 first)
{
	return first < ns->npages ? ns->pages + (size_t)first * NONSTOP_PAGE : NULL;
}
