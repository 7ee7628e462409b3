/* waits_writer.c - the WAITS section of a snapshot file
 * (docs/snapshot-format.md): what each thread waited for and the
 * deadlocks, as the dump that saved the file found them after the thaw,
 * so that `show` prints them without the process. Written from the plain
 * records the caller hands in (stacksnap_save_opts): the graph itself
 * lives above this layer. */
#include "save/waits_writer.h"

#include <string.h>

static void put_str(struct byte_buf *b, const char *s)
{
	size_t len = s ? strlen(s) : 0;

	byte_buf__u32(b, (uint32_t)len);
	byte_buf__put(b, s, len);
}

static void put_owner(struct byte_buf *b, const struct stacksnap_wait_owner *o)
{
	byte_buf__u32(b, (uint32_t)o->pid);
	byte_buf__u32(b, (uint32_t)o->tid);
}

static void put_wait(struct byte_buf *b, pid_t tid, const struct stacksnap_wait *w)
{
	size_t rec = b->n, nown = w->nowners, nk = w->nkernel_frames, nheld = w->nheld;

	if (nown > SNAPFILE_MAX_WAIT_OWNERS)
		nown = SNAPFILE_MAX_WAIT_OWNERS;
	if (nk > SNAPFILE_MAX_WAIT_KFRAMES)
		nk = SNAPFILE_MAX_WAIT_KFRAMES;
	byte_buf__u32(b, 0); /* record length */
	byte_buf__u32(b, (uint32_t)tid);
	byte_buf__u32(b, (uint32_t)w->kind);
	byte_buf__u64(b, (uint64_t)(int64_t)w->syscall);
	byte_buf__u64(b, w->object);
	put_str(b, w->object_name);
	byte_buf__u32(b, (uint32_t)w->fd);
	put_str(b, w->file);
	put_str(b, w->detail);
	put_str(b, w->no_owner);
	byte_buf__u8(b, w->stale);
	byte_buf__u32(b, (uint32_t)w->frame);
	byte_buf__u32(b, (uint32_t)nown);
	for (size_t i = 0; i < nown; i++)
		put_owner(b, &w->owners[i]);
	byte_buf__u32(b, (uint32_t)nk);
	for (size_t i = 0; i < nk; i++)
		put_str(b, w->kernel_frames[i]);
	/* Appended: the object's class, a Java thread's monitors held. */
	put_str(b, w->object_type);
	byte_buf__u8(b, w->held_known);
	if (nheld > SNAPFILE_MAX_WAIT_HELD)
		nheld = SNAPFILE_MAX_WAIT_HELD;
	byte_buf__u32(b, (uint32_t)nheld);
	for (size_t i = 0; i < nheld; i++) {
		byte_buf__u64(b, w->held[i].object);
		put_str(b, w->held[i].object_type);
	}
	byte_buf__patch_u32(b, rec, (uint32_t)(b->n - rec - 4));
}

void waits_writer__put(struct snapfile_writer *w, const struct stacksnap_save_opts *o)
{
	size_t n = 0;

	if (!o->waits || !o->wait_tids)
		return;
	for (size_t i = 0; i < o->nwaits; i++)
		n += o->waits[i] != NULL;
	snapfile_writer__begin_section(w, SNAPFILE_SEC_WAITS, SNAPFILE_WAITS_VERSION, 0);
	byte_buf__u32(&w->buf, (uint32_t)n);
	for (size_t i = 0; i < o->nwaits; i++)
		if (o->waits[i])
			put_wait(&w->buf, o->wait_tids[i], o->waits[i]);
	byte_buf__u32(&w->buf, (uint32_t)(o->deadlock_start ? o->ndeadlocks : 0));
	for (size_t i = 0; o->deadlock_start && i < o->ndeadlocks; i++) {
		size_t a = o->deadlock_start[i], z = o->deadlock_start[i + 1];

		byte_buf__u32(&w->buf, (uint32_t)(z - a));
		for (size_t k = a; k < z; k++)
			put_owner(&w->buf, &o->deadlock_members[k]);
	}
	snapfile_writer__end_section(w);
}
