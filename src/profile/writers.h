/* writers.h - the profile writers, one per format file, each writing the
 * aggregated stacks (stacks.h) to f; the dispatcher (profile_write.c)
 * picks one. Writers never unwind nor symbolize: the frames are in st. */
#ifndef SS_PROFILE_WRITERS_H
#define SS_PROFILE_WRITERS_H

#include <stdio.h>

#include "profile/stacks.h"

int folded_write(const struct stacksnap_stacks *st, FILE *f);
int pprof_write(const struct stacksnap_stacks *st, FILE *f,
		const struct stacksnap_stacks_write_opts *o);
int speedscope_write(const struct stacksnap_stacks *st, FILE *f,
		     const struct stacksnap_stacks_write_opts *o);
int flamegraph_svg_write(const struct stacksnap_stacks *st, FILE *f,
			 const struct stacksnap_stacks_write_opts *o);

/* JSON and XML string escaping onto f (UTF-8 passes through). */
void json_string(FILE *f, const char *s); /* stacksnap_json_string, "" for NULL */
void xml_text(FILE *f, const char *s);

#endif
