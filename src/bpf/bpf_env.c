/* bpf_env.c - rights, BTF and mounts checked and prepared once for the eBPF
 * capture paths; libbpf's own messages sent to the library's log; the
 * build's minimal BTF offered when the running kernel is the build's. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include <bpf/libbpf.h>

#include "bpf/bpf_env.h"

/* Magic numbers of the file systems, as statfs reports them (linux/magic.h). */
#define BPF_FS_MAGIC_ 0xcafe4a11
#define TRACEFS_MAGIC_ 0x74726163
#define DEBUGFS_MAGIC_ 0x64626720

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static const struct log_sink *libbpf_sink;

/* libbpf's print callback has no user pointer: the sink is process-wide. */
static int libbpf_to_log(enum libbpf_print_level level, const char *fmt,
			 va_list ap)
{
	char *msg = NULL, *line, *save = NULL;
	enum stacksnap_log_level ours = level == LIBBPF_WARN ? STACKSNAP_LOG_WARN
		: level == LIBBPF_INFO ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_DEBUG;

	/* libbpf warns on every failure it returns; we report those ourselves
	 * with the context that names the fix, so its words are details. */
	if (ours == STACKSNAP_LOG_WARN)
		ours = STACKSNAP_LOG_INFO;
	/* A verifier log comes as one message of many lines: one each. */
	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		log_msg(libbpf_sink, ours, "%s", line); /* libbpf prefixes its own */
	free(msg);
	return 0;
}

static bool has_caps(const int *caps, size_t n)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(data[caps[i] / 32].effective & (1u << (caps[i] % 32))))
			return false;
	return true;
}

static bool fs_is(const char *dir, long magic)
{
	struct statfs st;

	return !statfs(dir, &st) && (long)st.f_type == magic;
}

/* Mounts fstype at dir unless it is there already; failure is logged, not
 * fatal: only the paths that use the file system will fail, by name. */
static void ensure_mounted(const struct log_sink *log, const char *dir,
			   const char *fstype, long magic)
{
	if (fs_is(dir, magic))
		return;
	mkdir(dir, 0700);
	if (mount(fstype, dir, fstype, 0, NULL) && errno != EBUSY)
		log_warn(log, "cannot mount %s at %s: %s", fstype, dir, strerror(errno));
	else
		log_debug(log, "mounted %s at %s", fstype, dir);
}

int bpf_env__prepare(struct bpf_env *env, const struct log_sink *log)
{
	static const int caps[] = { CAP_BPF, CAP_PERFMON };
	static const int admin[] = { CAP_SYS_ADMIN };

	memset(env, 0, sizeof(*env));
	libbpf_sink = log;
	libbpf_set_print(libbpf_to_log);

	env->have_rights = geteuid() == 0 || has_caps(caps, 2) || has_caps(admin, 1);
	env->have_btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	if (!env->have_rights) {
		snprintf(env->reason, sizeof(env->reason),
			 "not permitted to load BPF programs (run as root, or "
			 "grant CAP_BPF and CAP_PERFMON)");
		log_err(log, "%s", env->reason);
		return fail(-EPERM);
	}
	if (!env->have_btf) {
		snprintf(env->reason, sizeof(env->reason),
			 "this kernel has no BTF (/sys/kernel/btf/vmlinux): "
			 "a kernel built with CONFIG_DEBUG_INFO_BTF=y is needed");
		log_err(log, "%s", env->reason);
		return fail(-ENOTSUP);
	}
	ensure_mounted(log, "/sys/fs/bpf", "bpf", BPF_FS_MAGIC_);
	ensure_mounted(log, "/sys/kernel/debug", "debugfs", DEBUGFS_MAGIC_);
	ensure_mounted(log, "/sys/kernel/tracing", "tracefs", TRACEFS_MAGIC_);
	return 0;
}

const char *bpf_env__tracefs(void)
{
	return fs_is("/sys/kernel/tracing", TRACEFS_MAGIC_) ? "/sys/kernel/tracing"
		: "/sys/kernel/debug/tracing";
}

/* The GNU build-id in a buffer of ELF notes (Elf64_Nhdr: namesz, descsz,
 * type, then name and desc each padded to 4 bytes). */
static int note_build_id(const unsigned char *p, size_t n, char *hex, size_t hex_len)
{
	size_t off = 0;

	while (off + 12 <= n) {
		unsigned namesz, descsz, type;

		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		off += 12;
		/* 64-bit sums of 32-bit sizes: no overflow. */
		size_t desc = off + (((size_t)namesz + 3) & ~(size_t)3);

		if (desc > n || descsz > n - desc)
			break;
		if (type == 3 && namesz == 4 && !memcmp(p + off, "GNU", 4) && descsz &&
		    2 * (size_t)descsz < hex_len) {
			for (unsigned i = 0; i < descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", p[desc + i]);
			return 0;
		}
		off = desc + (((size_t)descsz + 3) & ~(size_t)3);
	}
	return -ENOENT;
}

int bpf_env__kernel_btf_id(char *buf, size_t len)
{
	const char *fake = getenv("STACKSNAP_KERNEL_BTF_ID");
	unsigned char notes[4096];
	char hex[129];
	struct stat st;
	ssize_t n;
	int fd, err;

	if (fake) {
		snprintf(buf, len, "%s", fake);
		return 0;
	}
	fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, notes, sizeof(notes));
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if ((err = note_build_id(notes, (size_t)n, hex, sizeof(hex))))
		return err;
	if (stat("/sys/kernel/btf/vmlinux", &st))
		return -errno;
	snprintf(buf, len, "%s:%lld", hex, (long long)st.st_size);
	return 0;
}

int bpf_env__min_btf(const void *blob, size_t len, const char *built_for,
		     char *path, size_t path_len, const struct log_sink *log)
{
	char running[192];
	int fd, err;

	err = bpf_env__kernel_btf_id(running, sizeof(running));
	if (err || !*built_for || strcmp(running, built_for)) {
		log_info(log, "the running kernel's BTF (%s) is not the build's (%s): "
			 "libbpf parses the full kernel BTF",
			 err ? strerror(-err) : running, *built_for ? built_for : "unknown");
		return -ESTALE;
	}
	fd = memfd_create("stacksnap-min-btf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, blob, len) != (ssize_t)len) {
		err = errno ? -errno : -EIO;
		close(fd);
		return err;
	}
	snprintf(path, path_len, "/proc/self/fd/%d", fd);
	log_info(log, "CO-RE relocations against the build's minimal BTF (%zu bytes, "
		 "kernel %s)", len, running);
	return fd;
}
