/* wanderer.c - the stack-scan stepper (StepperWanderer): the first word up
 * the stack that is a return address, i.e. points just after a call. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "unwind/unwind_internal.h"

#define SCAN_MAX_WORDS 1024 /* how far a stack scan looks, in words */

/* Does the code just before ret look like a call instruction? */
static bool follows_call(struct stacksnap_unwinder *uw, const struct as_map *m,
			 uint64_t ret)
{
	uint8_t c[8];
	int err;

	if (ret - m->start < sizeof(c))
		return false;
	if (m->mod)
		err = module__read_code(m->mod, ret - m->bias - sizeof(c), c,
					sizeof(c));
	else
		err = mem_read(uw->mem, ret - sizeof(c), c, sizeof(c));
	if (err)
		return false;
	/* c[7] is the byte before ret. call rel32: e8 + 4 bytes. */
	if (c[3] == 0xe8)
		return true;
	/* call r/m64 (ff /2), by length: 2 (ff d0+r / ff 10+r), 3 (ff 50+r
	 * disp8, ff 14 sib), 6 (ff 15 rip+disp32, ff 90+r disp32), 7 (ff 94
	 * sib disp32); a REX prefix before ff does not change the check. */
	if (c[6] == 0xff && ((c[7] & 0xf8) == 0xd0 || (c[7] & 0xf8) == 0x10))
		return true;
	if (c[5] == 0xff && ((c[6] & 0xf8) == 0x50 || c[6] == 0x14))
		return true;
	if (c[2] == 0xff && (c[3] == 0x15 || (c[3] & 0xf8) == 0x90))
		return true;
	return c[1] == 0xff && c[2] == 0x94;
}

/* Looks up the stack for a word that is a plausible return address. A
 * guess: frames found this way are marked low trust. */
enum stacksnap_end step_scan(struct stacksnap_unwinder *uw,
				    struct frame_state *st, uint64_t *cfa)
{
	uint64_t sp = st->regs.regs[STACKSNAP_REG_RSP], words[64];

	for (unsigned base = 0; base < SCAN_MAX_WORDS; base += 64) {
		uint64_t at = sp + base * 8;

		if (mem_read(uw->mem, at, words, sizeof(words)))
			return STACKSNAP_END_NO_CFI;
		for (unsigned i = 0; i < 64; i++) {
			const struct as_map *m = addrspace__find(uw->as, words[i]);

			if (!m || !(m->prot & PROT_EXEC) ||
			    !follows_call(uw, m, words[i]))
				continue;
			*cfa = at + i * 8 + 8;
			st->regs.valid = BIT(STACKSNAP_REG_RIP) |
					 BIT(STACKSNAP_REG_RSP);
			st->regs.regs[STACKSNAP_REG_RIP] = words[i];
			st->regs.regs[STACKSNAP_REG_RSP] = *cfa;
			st->stepper = STACKSNAP_STEP_SCAN;
			st->trust = STACKSNAP_TRUST_SCAN;
			st->flags = 0;
			return STACKSNAP_END_NONE;
		}
	}
	return STACKSNAP_END_NO_CFI;
}
