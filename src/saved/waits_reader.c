/* waits_reader.c - a snapshot file's WAITS section read back
 * (docs/snapshot-format.md): what each thread waited for and the
 * deadlocks, as the dump that saved the file found them
 * (stacksnap_saved__wait, stacksnap_saved__deadlocks). Every count is
 * bounded by the section's bytes before it is used. */
#include "saved/readers.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/module.h" /* struct stacksnap_ctx: its log */
#include "base/log.h"
#include "base/vec.h"
#include "snapfile/snapshot_file.h"

#define BAD SAVED_BAD

/* Invariant: w[i] is thread tids[i]'s; its owners point into owners, its
 * kernel frames into kframes, its strings into arena; cycle i is
 * members[start[i], start[i + 1]). */
struct saved_waits {
	pid_t *tids;
	struct stacksnap_wait *w;
	size_t n, cap;
	/* Where thread i's owners and kernel frames start (the arrays grow
	 * while reading: pointers are set at the end). */
	size_t *owner_at, *kframe_at;
	size_t at_cap;
	struct stacksnap_wait_owner *owners;
	size_t nowners, owners_cap;
	const char **kframes;
	size_t nkframes, kframes_cap;
	/* Java monitors held: thread i's from held_at[i]. */
	size_t *held_at;
	struct stacksnap_wait_held *held;
	size_t nheld, held_cap;
	char *arena;
	size_t arena_at;
	struct stacksnap_wait_owner *members;
	size_t nmembers, members_cap;
	size_t *start;
	size_t ncycles;
};

void waits_reader__free(struct saved_waits *sw)
{
	if (!sw)
		return;
	free(sw->tids);
	free(sw->w);
	free(sw->owner_at);
	free(sw->kframe_at);
	free(sw->owners);
	free(sw->kframes);
	free(sw->held_at);
	free(sw->held);
	free(sw->arena);
	free(sw->members);
	free(sw->start);
	free(sw);
}

static const char *take_str(struct saved_waits *sw, struct cursor *c)
{
	return readers__arena_str(c, sw->arena, &sw->arena_at);
}

/* n holders or deadlock members (u32 pid, u32 tid each) appended to
 * *v. 0, -EINVAL (cut, or not a process) or -ENOMEM. */
static int take_owners(struct cursor *c, uint32_t n, struct stacksnap_wait_owner **v,
		       size_t *len, size_t *cap)
{
	for (uint32_t k = 0; k < n; k++) {
		struct stacksnap_wait_owner *o = VEC_PUSH(*v, *len, *cap);

		if (!o)
			return -ENOMEM;
		o->pid = (pid_t)cursor_u32(c);
		o->tid = (pid_t)cursor_u32(c);
		if (c->bad || o->pid <= 0 || o->tid < 0)
			return -EINVAL;
	}
	return 0;
}

/* One thread's record (its length already taken: rc holds just it). */
static int read_one(struct saved_waits *sw, struct cursor *rc, size_t i)
{
	struct stacksnap_wait *w = &sw->w[i];
	uint32_t kind, nown, nk;
	int err;

	memset(w, 0, sizeof(*w));
	sw->tids[i] = (pid_t)cursor_u32(rc);
	kind = cursor_u32(rc);
	/* A kind of a newer writer: said as "other". */
	w->kind = kind <= STACKSNAP_WAIT_JAVA_LOCK ? (enum stacksnap_wait_kind)kind
						   : STACKSNAP_WAIT_OTHER;
	w->syscall = (long)(int64_t)cursor_u64(rc);
	if (w->syscall < -1)
		w->syscall = -1;
	w->object = cursor_u64(rc);
	w->object_name = take_str(sw, rc);
	w->fd = (int)cursor_u32(rc);
	if (w->fd < -1)
		w->fd = -1;
	w->file = take_str(sw, rc);
	w->detail = take_str(sw, rc);
	w->no_owner = take_str(sw, rc);
	w->stale = cursor_u8(rc) != 0;
	w->frame = (int)cursor_u32(rc);
	if (w->frame < -1)
		w->frame = -1;
	nown = cursor_u32(rc);
	if (rc->bad || nown > SNAPFILE_MAX_WAIT_OWNERS || nown > cursor_left(rc) / 8)
		return -EINVAL;
	sw->owner_at[i] = sw->nowners;
	w->nowners = nown;
	if ((err = take_owners(rc, nown, &sw->owners, &sw->nowners, &sw->owners_cap)))
		return err;
	nk = cursor_u32(rc);
	if (rc->bad || nk > SNAPFILE_MAX_WAIT_KFRAMES || nk > cursor_left(rc) / 4)
		return -EINVAL;
	sw->kframe_at[i] = sw->nkframes;
	w->nkernel_frames = nk;
	for (uint32_t k = 0; k < nk; k++) {
		const char **f = VEC_PUSH(sw->kframes, sw->nkframes, sw->kframes_cap);

		if (!f)
			return -ENOMEM;
		*f = take_str(sw, rc);
		if (!*f)
			*f = "?";
	}
	if (rc->bad)
		return -EINVAL;
	/* Appended by later writers: the object's class, a Java thread's
	   monitors held (a record without them has none). */
	sw->held_at[i] = sw->nheld;
	if (cursor_left(rc)) {
		uint32_t nh;

		w->object_type = take_str(sw, rc);
		w->held_known = cursor_u8(rc) != 0;
		nh = cursor_u32(rc);
		if (rc->bad || nh > SNAPFILE_MAX_WAIT_HELD || nh > cursor_left(rc) / 12)
			return -EINVAL;
		w->nheld = nh;
		for (uint32_t k = 0; k < nh; k++) {
			struct stacksnap_wait_held *h =
				VEC_PUSH(sw->held, sw->nheld, sw->held_cap);

			if (!h)
				return -ENOMEM;
			h->object = cursor_u64(rc);
			h->object_type = take_str(sw, rc);
		}
	}
	/* Fields a newer version appended: skipped with the record. */
	return rc->bad ? -EINVAL : 0;
}

static int read_cycles(struct saved_waits *sw, struct cursor *c)
{
	uint32_t n = cursor_u32(c);

	/* A cycle takes at least its count and one member (a thread that
	 * waits for a lock it holds). */
	if (c->bad || n > cursor_left(c) / 12)
		return -EINVAL;
	sw->start = calloc((size_t)n + 1, sizeof(*sw->start));
	if (!sw->start)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t m = cursor_u32(c);
		int err;

		if (c->bad || m < 1 || m > cursor_left(c) / 8)
			return -EINVAL;
		if ((err = take_owners(c, m, &sw->members, &sw->nmembers, &sw->members_cap)))
			return err;
		sw->start[i + 1] = sw->nmembers;
	}
	sw->ncycles = n;
	return 0;
}

static int parse(struct saved_waits *sw, struct cursor *c, size_t *bad_at)
{
	uint32_t n = cursor_u32(c);
	int err;

	/* A record takes at least its length and 4+4+8+8+4+4+4+4+4+1+4+4+4
	 * bytes. */
	if (c->bad || n > SNAPFILE_MAX_WAITS || n > cursor_left(c) / 61) {
		*bad_at = cursor_offset(c);
		return -EINVAL;
	}
	/* Strings are copied once each, with a NUL: at most the section's
	 * bytes again. */
	sw->arena = malloc(2 * cursor_left(c) + 1);
	sw->tids = calloc(n ? n : 1, sizeof(*sw->tids));
	sw->w = calloc(n ? n : 1, sizeof(*sw->w));
	sw->owner_at = calloc(n ? n : 1, sizeof(*sw->owner_at));
	sw->kframe_at = calloc(n ? n : 1, sizeof(*sw->kframe_at));
	sw->held_at = calloc(n ? n : 1, sizeof(*sw->held_at));
	if (!sw->arena || !sw->tids || !sw->w || !sw->owner_at || !sw->kframe_at ||
	    !sw->held_at)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = cursor_u32(c);
		const uint8_t *p = cursor_take(c, len);
		struct cursor rc;

		*bad_at = cursor_offset(c);
		if (!p)
			return -EINVAL;
		cursor_init(&rc, p, len);
		if ((err = read_one(sw, &rc, i)))
			return err;
		sw->n = i + 1;
	}
	*bad_at = cursor_offset(c);
	if ((err = read_cycles(sw, c)))
		return err;
	for (size_t i = 0; i < sw->n; i++) {
		sw->w[i].owners = sw->w[i].nowners ? sw->owners + sw->owner_at[i] : NULL;
		sw->w[i].kernel_frames = sw->w[i].nkernel_frames
			? sw->kframes + sw->kframe_at[i] : NULL;
		sw->w[i].held = sw->w[i].nheld ? sw->held + sw->held_at[i] : NULL;
	}
	return 0;
}

int waits_reader__read_section(struct stacksnap_saved *s, struct cursor *c, size_t base)
{
	struct saved_waits *sw;
	size_t bad_at = 0;
	int err;

	if (s->waits) {
		BAD(s, base, "a second waits section");
		return -EINVAL;
	}
	sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	err = parse(sw, c, &bad_at);
	if (err) {
		waits_reader__free(sw);
		if (err == -EINVAL)
			BAD(s, base + bad_at, "waits section: a count or record does "
					      "not fit the section");
		return err;
	}
	s->waits = sw;
	return 0;
}

const struct stacksnap_wait *stacksnap_saved__wait(const struct stacksnap_saved *s,
						   pid_t tid)
{
	for (size_t i = 0; s && s->waits && i < s->waits->n; i++)
		if (s->waits->tids[i] == tid)
			return &s->waits->w[i];
	return NULL;
}

int stacksnap_saved__deadlocks(const struct stacksnap_saved *s,
			       const struct stacksnap_wait_owner **members,
			       const size_t **start, size_t *n)
{
	if (!s || !s->waits)
		return fail(-ENOENT);
	*members = s->waits->members;
	*start = s->waits->start;
	*n = s->waits->ncycles;
	return 0;
}
