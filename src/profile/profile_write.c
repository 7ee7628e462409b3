/* profile_write.c - the profile dispatcher above the writers: a format's
 * name, and writing the aggregated stacks in a format through its writer. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/opts.h"
#include "profile/stacks.h"
#include "profile/writers.h"

int stacksnap_stacks_format__parse(const char *name, enum stacksnap_stacks_format *fmt)
{
	static const char *const names[] = { "folded", "pprof", "speedscope", "svg" };

	for (size_t i = 0; name && i < 4; i++)
		if (!strcmp(name, names[i])) {
			*fmt = (enum stacksnap_stacks_format)i;
			return 0;
		}
	return fail(-EINVAL);
}

int stacksnap_stacks__write(const struct stacksnap_stacks *st, FILE *f,
			    enum stacksnap_stacks_format fmt,
			    const struct stacksnap_stacks_write_opts *opts)
{
	struct stacksnap_stacks_write_opts o;
	int err;

	if (!st || !f || opts_in(&o, sizeof(o), opts, 0))
		return fail(-EINVAL);
	errno = 0;
	switch (fmt) {
	case STACKSNAP_FORMAT_FOLDED: err = folded_write(st, f); break;
	case STACKSNAP_FORMAT_PPROF: err = pprof_write(st, f, &o); break;
	case STACKSNAP_FORMAT_SPEEDSCOPE: err = speedscope_write(st, f, &o); break;
	case STACKSNAP_FORMAT_SVG: err = flamegraph_svg_write(st, f, &o); break;
	default: return fail(-EINVAL);
	}
	/* A write that failed left its cause in errno (ENOSPC on a full disk
	 * or /dev/full, EFBIG, EPIPE): the caller names it, EIO only when the
	 * stream did not say. */
	if (!err && (fflush(f) || ferror(f)))
		err = errno ? -errno : -EIO;
	return err ? fail(err) : 0;
}
