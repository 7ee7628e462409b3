/* wait_go.c - what a goroutine waits for, from the wait reason the
 * capture read (g.waitreason, as the runtime's own dump prints it) and
 * its frames (Go 1.19 says "semacquire" for sync.Mutex, RWMutex and
 * WaitGroup alike: the sync frame tells them apart); and Go's own "all
 * goroutines are asleep" case. Goroutines are not threads: no edge of the
 * thread graph comes from here. */
#include <stdbool.h>
#include <string.h>

#include "stacksnap.h"

/* The sync frames that tell a semacquire apart, innermost first. */
static const struct {
	const char *fn, *kind, *no_owner;
} sema_fns[] = {
	{ "sync.(*WaitGroup).Wait", "go-waitgroup",
	  "a sync.WaitGroup has no owner: the goroutines that call Done wake it" },
	{ "sync.(*RWMutex).", "go-rwmutex",
	  "a sync.RWMutex keeps no owner field: Go records no holder, none is guessed" },
	{ "sync.(*Mutex).", "go-mutex",
	  "a sync.Mutex keeps no owner field: Go records no holder, none is guessed" },
	{ "sync.(*Cond).Wait", "go-cond",
	  "a sync.Cond has no owner: a Signal or Broadcast wakes it" },
};

static const struct {
	const char *reason, *kind, *no_owner;
} reasons[] = {
	{ "chan receive", "go-chan", "a channel has no owner: another goroutine's "
	  "send or close wakes it" },
	{ "chan send", "go-chan", "a channel has no owner: another goroutine's "
	  "receive wakes it" },
	{ "chan receive (nil chan)", "go-chan", "a nil channel: nothing ever wakes it" },
	{ "chan send (nil chan)", "go-chan", "a nil channel: nothing ever wakes it" },
	{ "select", "go-select", "a select has no owner: another goroutine's "
	  "channel operation wakes it" },
	{ "select (no cases)", "go-select", "select {}: nothing ever wakes it" },
	{ "sync.Mutex.Lock", "go-mutex", NULL },
	{ "sync.RWMutex.Lock", "go-rwmutex", NULL },
	{ "sync.RWMutex.RLock", "go-rwmutex", NULL },
	{ "sync.WaitGroup.Wait", "go-waitgroup", NULL },
	{ "sync.Cond.Wait", "go-cond", NULL },
	{ "semacquire", "go-sema", "a semaphore has no owner: a release wakes it" },
	{ "IO wait", "go-net", "the network (the runtime's netpoller) wakes it" },
	{ "sleep", "sleep", "a sleep has no owner: time wakes it" },
};

/* The runtime's own goroutines, idle (Go's dump hides them). */
static const char *const runtime_idle[] = {
	"GC worker (idle)", "finalizer wait", "force gc (idle)", "GC sweep wait",
	"GC scavenge wait", "timer goroutine (idle)", "trace reader (blocked)",
	"wait for GC cycle",
};

static bool has_frame(const struct stacksnap_goroutine *g, const char *prefix)
{
	for (size_t i = 0; i < g->nframes; i++)
		if (g->frames[i].function &&
		    !strncmp(g->frames[i].function, prefix, strlen(prefix)))
			return true;
	return false;
}

/* The innermost frame of sync naming a wait (its sema_fns index), -1. */
static int sync_frame(const struct stacksnap_goroutine *g)
{
	for (size_t i = 0; i < g->nframes; i++)
		for (size_t k = 0; g->frames[i].function &&
				   k < sizeof(sema_fns) / sizeof(sema_fns[0]); k++)
			if (!strncmp(g->frames[i].function, sema_fns[k].fn,
				     strlen(sema_fns[k].fn)))
				return (int)k;
	return -1;
}

const char *stacksnap_goroutine__wait_kind(const struct stacksnap_goroutine *g,
					   const char **no_owner)
{
	const char *r = g ? g->wait_reason : NULL, *why = NULL, *kind = NULL;

	if (no_owner)
		*no_owner = NULL;
	if (!r || !*r)
		return NULL;
	for (size_t i = 0; i < sizeof(runtime_idle) / sizeof(runtime_idle[0]); i++)
		if (!strcmp(r, runtime_idle[i])) {
			if (no_owner)
				*no_owner = "the runtime's own goroutine, idle";
			return "go-runtime";
		}
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]) && !kind; i++)
		if (!strcmp(r, reasons[i].reason)) {
			kind = reasons[i].kind;
			why = reasons[i].no_owner;
		}
	if (!kind) {
		kind = "go-other";
		why = "a wait this version of stacksnap does not know";
	}
	/* A semaphore of sync (every one of them before Go 1.20), or a
	 * sync reason: the sync frame's words. */
	if (!why || !strcmp(kind, "go-sema")) {
		int at = sync_frame(g);

		if (at >= 0) {
			kind = sema_fns[at].kind;
			why = sema_fns[at].no_owner;
		}
	}
	if (!why)
		why = "Go records no holder";
	if (no_owner)
		*no_owner = why;
	return kind;
}

/* Kinds only another goroutine can end. */
static bool waits_for_goroutine(const char *kind)
{
	static const char *const k[] = { "go-chan", "go-select", "go-mutex",
					 "go-rwmutex", "go-waitgroup", "go-cond",
					 "go-sema" };

	for (size_t i = 0; kind && i < sizeof(k) / sizeof(k[0]); i++)
		if (!strcmp(kind, k[i]))
			return true;
	return false;
}

bool stacksnap_goroutines__all_asleep(const struct stacksnap_goroutine *gs, size_t n,
				      const char **note)
{
	size_t asleep = 0;
	bool signal_loop = false;

	if (note)
		*note = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *kind = stacksnap_goroutine__wait_kind(&gs[i], NULL);

		if (kind && !strcmp(kind, "go-runtime"))
			continue;
		/* os/signal's loop waits in a system call for a signal: Go's
		 * own check does not call that a deadlock; it is said. */
		if (has_frame(&gs[i], "os/signal.signal_recv")) {
			signal_loop = true;
			continue;
		}
		if (!waits_for_goroutine(kind))
			return false;
		asleep++;
	}
	if (!asleep)
		return false;
	if (note && signal_loop)
		*note = "but os/signal's loop, which only a signal wakes (Go's own "
			"check does not fire then)";
	return true;
}
