/* core.c - ELF core dumps as saved captures (stacksnap_saved__open_core):
 * threads from NT_PRSTATUS, memory from PT_LOAD, mappings from NT_FILE. */
#define _GNU_SOURCE
#include "capture/saved.h"

#include <errno.h>
#include <stdlib.h>

#include "base/log.h"

void core__free(void *core)
{
	free(core);
}

struct stacksnap_saved *stacksnap_saved__open_core(struct stacksnap_ctx *ctx,
						   const char *path,
						   const struct stacksnap_saved_opts *opts)
{
	errno = ENOTSUP;
	return NULL;
}
