/* capstone_dl.c - libcapstone opened with dlopen on the first decode (see
 * capstone_dl.h for why it is not linked). */
#include <dlfcn.h>
#include <pthread.h>

#include "unwind/steppers/capstone_dl.h"

static struct capstone_dl cs_fns;
static const struct capstone_dl *cs_loaded;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;

/* The soname the package installs and the headers we build against
 * describe (Capstone 4: cs_insn's layout is that version's). */
static void cs_load(void)
{
	void *h = dlopen("libcapstone.so.4", RTLD_LAZY | RTLD_LOCAL);
	struct capstone_dl f;

	if (!h)
		return;
#define SYM(field, name) (*(void **)&f.field = dlsym(h, name))
	if (!SYM(open, "cs_open") || !SYM(option, "cs_option") ||
	    !SYM(malloc, "cs_malloc") || !SYM(disasm_iter, "cs_disasm_iter") ||
	    !SYM(insn_group, "cs_insn_group") ||
	    !SYM(regs_access, "cs_regs_access") || !SYM(free, "cs_free") ||
	    !SYM(close, "cs_close")) {
		dlclose(h);
		return;
	}
#undef SYM
	cs_fns = f;
	cs_loaded = &cs_fns;
}

const struct capstone_dl *capstone_dl(void)
{
	pthread_once(&cs_once, cs_load);
	return cs_loaded;
}
