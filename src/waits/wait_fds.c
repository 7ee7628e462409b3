/* wait_fds.c - waits on file descriptors: a read or write on a pipe, FIFO
 * or socket names the processes holding the other end (pipes and FIFOs by
 * inode across /proc/PID/fd; Unix sockets by their peer's inode from
 * sock_diag); a poll, select or epoll_wait names the fds it watches. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

#include "waits_internal.h"
#include "base/vec.h"

#define MAX_WATCHED 32

static bool is_io(long nr)
{
	return nr == NR_READ || nr == NR_WRITE || nr == NR_READV || nr == NR_WRITEV ||
	       nr == NR_PREAD64 || nr == NR_RECVFROM || nr == NR_RECVMSG ||
	       nr == NR_RECVMMSG || nr == NR_SENDTO || nr == NR_SENDMSG ||
	       nr == NR_ACCEPT || nr == NR_ACCEPT4 || nr == NR_CONNECT;
}

static bool is_poll(long nr)
{
	return nr == NR_POLL || nr == NR_PPOLL || nr == NR_SELECT ||
	       nr == NR_PSELECT6 || nr == NR_EPOLL_WAIT || nr == NR_EPOLL_PWAIT ||
	       nr == NR_EPOLL_PWAIT2;
}

/* What fd of pid is (readlink of /proc/PID/fd/FD) into buf; NULL gone. */
static const char *fd_link(pid_t pid, int fd, char *buf, size_t size)
{
	char path[64];
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	r = readlink(path, buf, size - 1);
	if (r < 0)
		return NULL;
	buf[r] = 0;
	return buf;
}

/* The access mode (O_RDONLY, O_WRONLY, O_RDWR) of fd of pid, -1 unknown. */
static int fd_mode(pid_t pid, const char *fd)
{
	char path[96], buf[256];
	const char *p;
	int f, mode = -1;
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, fd);
	if ((f = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	r = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (r > 0) {
		buf[r] = 0;
		if ((p = strstr(buf, "flags:")))
			mode = (int)(strtol(p + 6, NULL, 8) & O_ACCMODE);
	}
	return mode;
}

static bool fds_classify(struct stacksnap_waits *w, struct wait_thread *t)
{
	if (is_poll(t->nr)) {
		t->pub.kind = STACKSNAP_WAIT_POLL;
		t->pub.no_owner = "a poll waits for any of its fds";
		if (t->nr == NR_EPOLL_WAIT || t->nr == NR_EPOLL_PWAIT ||
		    t->nr == NR_EPOLL_PWAIT2)
			t->pub.fd = (int)t->args[0];
		return true;
	}
	if (!is_io(t->nr))
		return false;
	t->pub.fd = (int)t->args[0];
	t->pub.kind = STACKSNAP_WAIT_OTHER;
	if (w->o.saved)
		t->pub.no_owner = "a saved capture holds no file descriptors";
	return true;
}

/* One pipe or socket fd of some process. */
struct fd_entry {
	pid_t pid;
	int fd;
	char link[32];		/* "pipe:[123]", "socket:[456]" */
};

/* Every process's pipe and socket fds (/proc/PID/fd) and the target's
 * TCP sockets, each read at the first wait that needs them, then shared
 * by all. Invariant: entries[0, n), tcp[0, ntcp). */
struct tcp_sock;
struct fd_table {
	struct fd_entry *entries;
	size_t n, cap;
	bool entries_read, tcp_read;
	struct tcp_sock *tcp;
	size_t ntcp, tcp_cap;
};

/* Calls fn for every fd of every process (/proc/PID/fd), with what it
 * is (its link); stops at the first nonzero return, which it returns. */
static int each_fd(int (*fn)(void *user, pid_t pid, int fd, const char *link),
		   void *user)
{
	DIR *proc = opendir("/proc");
	struct dirent *p;
	int r = 0;

	if (!proc)
		return 0;
	while (!r && (p = readdir(proc))) {
		char dpath[64], buf[4096];
		DIR *fds;
		struct dirent *f;
		pid_t pid = (pid_t)atoi(p->d_name);

		if (pid <= 0)
			continue;
		snprintf(dpath, sizeof(dpath), "/proc/%d/fd", (int)pid);
		if (!(fds = opendir(dpath)))
			continue;
		/* Each link read relative to the directory (no walk through
		 * /proc and the pid per fd); a process whose fds may not be
		 * read (the ptrace check, the same for all its fds) is left
		 * at its first: a third of a dump's reads on a shared host. */
		while (!r && (f = readdir(fds))) {
			ssize_t len;

			if (f->d_name[0] == '.')
				continue;
			len = readlinkat(dirfd(fds), f->d_name, buf, sizeof(buf) - 1);
			if (len < 0) {
				if (errno == EACCES || errno == EPERM)
					break;
				continue;
			}
			buf[len] = 0;
			r = fn(user, pid, atoi(f->d_name), buf);
		}
		closedir(fds);
	}
	closedir(proc);
	return r;
}

static int table_add(void *user, pid_t pid, int fd, const char *link)
{
	struct fd_table *tab = user;
	struct fd_entry *e;

	if (strncmp(link, "pipe:", 5) && strncmp(link, "socket:", 7))
		return 0;
	if (!(e = VEC_PUSH(tab->entries, tab->n, tab->cap)))
		return -ENOMEM;
	e->pid = pid;
	e->fd = fd;
	snprintf(e->link, sizeof(e->link), "%.31s", link);
	return 0;
}

static struct fd_table *fd_table(struct stacksnap_waits *w)
{
	if (!w->fds && !(w->fds = calloc(1, sizeof(*w->fds))))
		return NULL;
	if (!w->fds->entries_read) {
		w->fds->entries_read = true;
		if (each_fd(table_add, w->fds))
			return NULL;
	}
	return w->fds;
}

static void fds_free(struct stacksnap_waits *w)
{
	if (w->fds) {
		free(w->fds->entries);
		free(w->fds->tcp);
	}
	free(w->fds);
	w->fds = NULL;
}

/* What holders() looks for, and where it puts what it finds. */
struct holder_search {
	struct wait_thread *t;
	const char *link;
	int mode;
};

/* One fd of some process: a holder when it is the one searched for (and,
 * when mode >= 0, opened with that access mode or O_RDWR). */
static int holder_check(void *user, pid_t pid, int fd, const char *link)
{
	const struct holder_search *h = user;
	char fdname[16];
	int m;

	if (strcmp(link, h->link))
		return 0;
	snprintf(fdname, sizeof(fdname), "%d", fd);
	if (h->mode >= 0 && (m = fd_mode(pid, fdname)) != h->mode && m != O_RDWR)
		return 0;
	return waits__add_owner(h->t, pid, 0);
}

/* Every process holding an fd whose link is link, added as holders:
 * pipes and sockets from the table, a FIFO (a path) by a scan of its
 * own. */
static int holders(struct stacksnap_waits *w, struct wait_thread *t,
		   const char *link, int mode)
{
	struct holder_search h = { t, link, mode };
	const struct fd_table *tab;
	int err = 0;

	if (strncmp(link, "pipe:", 5) && strncmp(link, "socket:", 7))
		return each_fd(holder_check, &h);
	if (!(tab = fd_table(w)))
		return -ENOMEM;
	for (size_t i = 0; !err && i < tab->n; i++)
		err = holder_check(&h, tab->entries[i].pid, tab->entries[i].fd,
				   tab->entries[i].link);
	return err;
}

/* The inode of a Unix socket's peer (sock_diag, UNIX_DIAG_PEER); 0 none. */
static unsigned unix_peer(unsigned ino)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req req;
	} msg;
	char buf[8192];
	unsigned peer = 0;
	int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	ssize_t r;

	if (s < 0)
		return 0;
	memset(&msg, 0, sizeof(msg));
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST;
	msg.req.sdiag_family = AF_UNIX;
	msg.req.udiag_states = ~0u;
	msg.req.udiag_ino = ino;
	msg.req.udiag_show = UDIAG_SHOW_PEER;
	msg.req.udiag_cookie[0] = msg.req.udiag_cookie[1] = ~0u;
	if (send(s, &msg, sizeof(msg), 0) != (ssize_t)sizeof(msg) ||
	    (r = recv(s, buf, sizeof(buf), 0)) <= 0) {
		close(s);
		return 0;
	}
	close(s);
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)r);
	     h = NLMSG_NEXT(h, r)) {
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
			break;
		struct unix_diag_msg *m = NLMSG_DATA(h);
		struct rtattr *a = (struct rtattr *)(m + 1);
		int left = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*m));

		for (; RTA_OK(a, left); a = RTA_NEXT(a, left))
			if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= 4)
				memcpy(&peer, RTA_DATA(a), 4);
		break;
	}
	return peer;
}

/* One TCP socket of the target's network namespace (/proc/PID/net/tcp,
 * tcp6: "sl local rem st ... inode", addresses as hex ADDR:PORT). */
struct tcp_sock {
	char local[40], remote[40];
	unsigned state;
	unsigned long inode;
};

/* The target's TCP sockets, read once for all the waits on them (into
 * w->fds, beside the fd table). */
static const struct fd_table *tcp_table(struct stacksnap_waits *w, pid_t pid)
{
	static const char *const files[] = { "tcp", "tcp6" };

	if (!w->fds && !(w->fds = calloc(1, sizeof(*w->fds))))
		return NULL;
	if (w->fds->tcp_read)
		return w->fds;
	w->fds->tcp_read = true;
	for (int k = 0; k < 2; k++) {
		char path[64], line[512];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, files[k]);
		if (!(f = fopen(path, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			struct tcp_sock e, *slot;

			if (sscanf(line, " %*u: %39s %39s %x %*s %*s %*s %*u %*u %lu",
				   e.local, e.remote, &e.state, &e.inode) != 4 ||
			    !(slot = VEC_PUSH(w->fds->tcp, w->fds->ntcp, w->fds->tcp_cap)))
				continue;
			*slot = e;
		}
		fclose(f);
	}
	return w->fds;
}

/* The inode of the socket at a TCP connection's other end on this machine
 * (its endpoints swapped), 0 when none is; *listening when ino listens. */
static unsigned tcp_peer(struct stacksnap_waits *w, unsigned ino, bool *listening)
{
	const struct fd_table *tab = tcp_table(w, w->pid);
	const struct tcp_sock *me = NULL;

	*listening = false;
	for (size_t i = 0; tab && i < tab->ntcp && !me; i++)
		if (tab->tcp[i].inode == ino)
			me = &tab->tcp[i];
	if (!me)
		return 0;
	if (me->state == 10 /* TCP_LISTEN */) {
		*listening = true;
		return 0;
	}
	for (size_t i = 0; i < tab->ntcp; i++)
		if (!strcmp(tab->tcp[i].local, me->remote) &&
		    !strcmp(tab->tcp[i].remote, me->local))
			return (unsigned)tab->tcp[i].inode;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The fds a poll watches, in order, as "3 (pipe:[12]), 4 (socket:[13])". */
static int poll_fds(struct stacksnap_waits *w, struct wait_thread *t)
{
	int fds[MAX_WATCHED], n = 0;
	char list[1024] = "", link[128];
	size_t len = 0;

	if (t->nr == NR_POLL || t->nr == NR_PPOLL) {
		struct pollfd p[MAX_WATCHED];
		size_t np = t->args[1] < MAX_WATCHED ? t->args[1] : MAX_WATCHED;

		if (!np || waits__read(w, t->args[0], p, np * sizeof(p[0])))
			return 0;
		for (size_t i = 0; i < np; i++)
			if (p[i].fd >= 0)
				fds[n++] = p[i].fd;
	} else if (t->nr == NR_SELECT || t->nr == NR_PSELECT6) {
		uint64_t bits[4] = { 0 };
		unsigned nfds = t->args[0] < 256 ? (unsigned)t->args[0] : 256;

		if (t->args[1] && !waits__read(w, t->args[1], bits, (nfds + 63) / 64 * 8))
			for (unsigned i = 0; i < nfds && n < MAX_WATCHED; i++)
				if (bits[i / 64] >> (i % 64) & 1)
					fds[n++] = (int)i;
	} else {
		char path[96], buf[4096], *p;
		int f;
		ssize_t r;

		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)w->pid, t->pub.fd);
		if ((f = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return 0;
		r = read(f, buf, sizeof(buf) - 1);
		close(f);
		buf[r > 0 ? r : 0] = 0;
		for (p = buf; n < MAX_WATCHED && (p = strstr(p, "tfd:")); p += 4)
			fds[n++] = atoi(p + 4);
	}
	qsort(fds, (size_t)n, sizeof(fds[0]), cmp_int);
	for (int i = 0; i < n && len < sizeof(list) - 1; i++) {
		const char *what = fd_link(w->pid, fds[i], link, sizeof(link));

		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d (%s)",
					i ? ", " : "", fds[i], what ? what : "closed");
	}
	if (n)
		t->pub.file = waits__strf(w, "%s", list);
	return 0;
}

static int fds_owners(struct stacksnap_waits *w, struct wait_thread *t)
{
	char link[128], peer_link[64];
	struct stat st;
	char path[64];
	unsigned ino;
	int mode, want;

	if (w->o.saved)
		return 0;
	if (t->pub.kind == STACKSNAP_WAIT_POLL)
		return poll_fds(w, t);
	if (!fd_link(w->pid, t->pub.fd, link, sizeof(link))) {
		t->pub.no_owner = "the fd is closed since the capture";
		t->pub.stale = true;
		return 0;
	}
	t->pub.file = waits__strf(w, "%s", link);
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)w->pid, t->pub.fd);
	if (!strncmp(link, "pipe:", 5) || (!stat(path, &st) && S_ISFIFO(st.st_mode))) {
		char fdname[16];

		t->pub.kind = STACKSNAP_WAIT_PIPE;
		snprintf(fdname, sizeof(fdname), "%d", t->pub.fd);
		mode = fd_mode(w->pid, fdname);
		/* A reader waits for the writers, a writer for the readers. */
		want = mode == O_RDONLY ? O_WRONLY : mode == O_WRONLY ? O_RDONLY : -1;
		int err = holders(w, t, link, want);

		if (!err && !t->pub.nowners)
			t->pub.no_owner = "no process holds the other end";
		return err;
	}
	if (sscanf(link, "socket:[%u]", &ino) == 1) {
		unsigned peer = unix_peer(ino);
		bool listening = false;

		t->pub.kind = STACKSNAP_WAIT_SOCKET;
		if (peer) {
			snprintf(peer_link, sizeof(peer_link), "socket:[%u]", peer);
			t->pub.detail = waits__strf(w, "Unix socket, peer %s", peer_link);
		} else if ((peer = tcp_peer(w, ino, &listening))) {
			snprintf(peer_link, sizeof(peer_link), "socket:[%u]", peer);
			t->pub.detail = waits__strf(w, "TCP, local peer %s", peer_link);
		} else {
			t->pub.no_owner = listening
				? "a listening socket: a connection wakes it"
				: "no peer on this machine (not a connected Unix or "
				  "local TCP socket)";
			return 0;
		}
		int err = holders(w, t, peer_link, -1);

		if (!err && !t->pub.nowners)
			t->pub.no_owner = "no process holds the peer";
		return err;
	}
	t->pub.no_owner = "a file: no other end";
	return 0;
}

const struct wait_source_ops wait_fds_ops = {
	.name = "fds and peers",
	.classify = fds_classify,
	.owners = fds_owners,
	.free = fds_free,
};
