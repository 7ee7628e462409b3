/* log.c - formats library messages and hands them to the user's callback. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

void log_msg(const struct log_sink *sink, enum stacksnap_log_level level,
	     const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int saved = errno; /* messages must not disturb the caller's errno */

	if (!sink || !sink->fn || level > sink->level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sink->fn(level, buf, sink->user);
	errno = saved;
}

int fail(int err)
{
	errno = -err;
	return err;
}
