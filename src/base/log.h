/* log.h - where library messages go: the user's callback, never stdout. */
#ifndef SS_BASE_LOG_H
#define SS_BASE_LOG_H

#include "stacksnap.h"

/* A destination for messages. A NULL sink or a NULL fn drops them.
 * Invariant: level is the most verbose level delivered. */
struct log_sink {
	stacksnap_log_fn fn;	/* may be NULL */
	void *user;		/* passed to fn */
	enum stacksnap_log_level level;
};

void log_msg(const struct log_sink *sink, enum stacksnap_log_level level,
	     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_err(s, ...) log_msg((s), STACKSNAP_LOG_ERROR, __VA_ARGS__)
#define log_warn(s, ...) log_msg((s), STACKSNAP_LOG_WARN, __VA_ARGS__)
#define log_info(s, ...) log_msg((s), STACKSNAP_LOG_INFO, __VA_ARGS__)
#define log_debug(s, ...) log_msg((s), STACKSNAP_LOG_DEBUG, __VA_ARGS__)

/* Sets errno to -err and returns err (a negative errno): `return fail(-EINVAL);` */
int fail(int err);

#endif
