/* fields.c - a tracepoint event's fields decoded from its raw record by
 * the layout its format file gave (numbers, strings, __data_loc
 * strings). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "trace/trace_internal.h"

int stacksnap_trace__fields(struct stacksnap_trace *tr,
			    const struct stacksnap_trace_event *ev,
			    struct stacksnap_trace_field *out, size_t max)
{
	const struct trace_event_spec *e;
	const uint8_t *raw = ev ? ev->raw : NULL;
	size_t n = 0;

	if (!tr || !ev || ev->event >= tr->nevents)
		return fail(-EINVAL);
	e = &tr->events[ev->event];
	for (unsigned i = 0; raw && i < e->nfields && n < max; i++) {
		const struct tp_field *f = &e->fields[i];
		struct stacksnap_trace_field *o = &out[n];
		char *buf = tr->strbuf[n];

		if (f->offset + f->size > ev->raw_len)
			continue;
		memset(o, 0, sizeof(*o));
		o->name = f->name;
		o->size = f->size;
		o->is_signed = f->is_signed;
		o->is_pointer = f->is_pointer;
		if (f->is_data_loc && f->size == 4) {
			uint32_t loc;

			memcpy(&loc, raw + f->offset, 4);
			unsigned off = loc & 0xffff, len = loc >> 16;
			if (off < ev->raw_len) {
				if (len > ev->raw_len - off)
					len = (unsigned)(ev->raw_len - off);
				snprintf(buf, 64, "%.*s", (int)len, (const char *)raw + off);
				o->str = buf;
			}
		} else if (f->is_string) {
			snprintf(buf, 64, "%.*s", (int)f->size, (const char *)raw + f->offset);
			o->str = buf;
		} else if (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8) {
			uint64_t v = 0;

			memcpy(&v, raw + f->offset, f->size);
			if (f->is_signed && f->size < 8 && (v >> (f->size * 8 - 1)) & 1)
				v |= ~0ull << (f->size * 8);
			o->value = v;
		} else {
			continue;
		}
		n++;
	}
	return (int)n;
}
