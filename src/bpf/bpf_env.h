/* bpf_env.h - what every eBPF capture path needs before it loads a program:
 * the rights and kernel features it relies on, the pseudo file systems it
 * uses, and libbpf's messages routed to the library's log. */
#ifndef SS_BPF_ENV_H
#define SS_BPF_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "base/log.h"

/* What bpf_env__prepare found; `reason` names what is missing and the fix
 * when prepare fails (e.g. "not permitted to load BPF programs (run as
 * root, or grant CAP_BPF and CAP_PERFMON)"). */
struct bpf_env {
	bool have_btf;		/* /sys/kernel/btf/vmlinux is readable (CO-RE) */
	bool have_rights;	/* root, or CAP_BPF + CAP_PERFMON */
	char reason[192];	/* empty on success */
};

/* Checks rights and BTF, mounts bpffs (/sys/fs/bpf), tracefs
 * (/sys/kernel/tracing) and debugfs (/sys/kernel/debug) where they are
 * not mounted, and routes libbpf's messages to `log` (libbpf keeps one
 * print callback per process: the last caller's sink wins, so `log` must
 * outlive every BPF object). Returns 0 or -errno (EPERM: no rights,
 * ENOTSUP: no BTF; env->reason says which) and logs the reason. */
int bpf_env__prepare(struct bpf_env *env, const struct log_sink *log);

/* The identity of the running kernel's BTF, as scripts/min-core-btf.py
 * records it beside the minimal BTF it cuts at build time:
 * "BUILDID:SIZE", the GNU build-id note of /sys/kernel/notes in hex and
 * the size of /sys/kernel/btf/vmlinux (the BTF is part of the image the
 * build-id covers). STACKSNAP_KERNEL_BTF_ID, when set, stands for it (a
 * test's fake identity). Returns 0, or -errno (ENOENT: no build-id note,
 * then no minimal BTF is ever used). */
int bpf_env__kernel_btf_id(char *buf, size_t len);

/* A minimal BTF cut at build time for the kernel `built_for` (an identity
 * as above), for libbpf's btf_custom_path (CO-RE relocations without the
 * parse of the kernel's 5.5 MB BTF) when the running kernel is that one:
 * writes blob into a memfd and its /proc/self/fd path into path. Returns
 * the fd, which the caller closes once the objects are loaded, or -errno:
 * ESTALE when the running kernel is another (then libbpf must parse its
 * full BTF: the reason is logged at info level). */
int bpf_env__min_btf(const void *blob, size_t len, const char *built_for,
		     char *path, size_t path_len, const struct log_sink *log);

/* The tracefs directory (mounted by prepare), e.g. for reading a
 * tracepoint's format file: "/sys/kernel/tracing". */
const char *bpf_env__tracefs(void);

#endif
