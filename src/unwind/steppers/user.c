/* user.c - steppers the user registers (stacksnap_unwinder__add_stepper):
 * kept sorted by priority and tried between the built-in ones. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/opts.h"
#include "unwind/unwind_internal.h"

int stacksnap_unwinder__add_stepper(struct stacksnap_unwinder *uw,
				    const struct stacksnap_stepper_opts *opts)
{
	struct stacksnap_stepper_opts o;
	struct user_stepper *u;
	unsigned at;

	if (!uw || opts_in(&o, sizeof(o), opts, offsetof(struct stacksnap_stepper_opts, trust)) ||
	    !o.step || (unsigned)o.trust > STACKSNAP_TRUST_SCAN)
		return fail(-EINVAL);
	if (uw->nusers == MAX_USER_STEPPERS)
		return fail(-E2BIG);
	/* Among equal priorities the earlier registered goes first. */
	for (at = 0; at < uw->nusers && uw->users[at].priority >= o.priority; at++)
		;
	memmove(&uw->users[at + 1], &uw->users[at],
		(uw->nusers - at) * sizeof(uw->users[0]));
	u = &uw->users[at];
	memset(u, 0, sizeof(*u));
	snprintf(u->name, sizeof(u->name), "%s", o.name ? o.name : "user");
	u->step = o.step;
	u->user = o.user;
	u->priority = o.priority;
	u->trust = o.trust ? (uint8_t)o.trust : STACKSNAP_TRUST_CFI;
	u->id = (uint8_t)(uw->nusers + 1);
	uw->nusers++;
	if (o.priority > STACKSNAP_PRIO_CFI)
		uw->nuser_above_cfi++;
	return u->id;
}

const char *stacksnap_unwinder__stepper_name(const struct stacksnap_unwinder *uw,
					     const struct stacksnap_frame *frame)
{
	if (!frame)
		return "unknown";
	if (frame->stepper == STACKSNAP_STEP_USER && uw)
		for (unsigned i = 0; i < uw->nusers; i++)
			if (uw->users[i].id == frame->user_stepper)
				return uw->users[i].name;
	return stacksnap_stepper__str((enum stacksnap_stepper)frame->stepper);
}

enum stacksnap_end step_users(struct stacksnap_unwinder *uw,
			      struct frame_state *st, uint64_t *cfa, bool exact,
			      int lo, int hi)
{
	for (unsigned i = 0; i < uw->nusers; i++) {
		struct user_stepper *u = &uw->users[i];
		struct stacksnap_regs caller = { .valid = 0 };
		int r;

		if (u->priority < lo || u->priority >= hi)
			continue;
		r = u->step(u->user, &st->regs, exact, uw->mem, &caller);
		if (r == STACKSNAP_STEPPER_NOT_MINE)
			continue;
		if (r == STACKSNAP_STEPPER_BOTTOM)
			return STACKSNAP_END_COMPLETE;
		if (r < 0)
			return mem_end(r);
		if (r != STACKSNAP_STEPPER_CALLER ||
		    (caller.valid & (BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP))) !=
			    (BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP)))
			return STACKSNAP_END_BAD_CFI;
		*cfa = caller.regs[STACKSNAP_REG_RSP];
		st->regs = caller;
		st->stepper = STACKSNAP_STEP_USER;
		st->user_stepper = u->id;
		st->trust = u->trust;
		st->flags = 0;
		return STACKSNAP_END_NONE;
	}
	return STACKSNAP_END_NO_CFI;
}
