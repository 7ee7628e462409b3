/* table_open.c - the ladder that gives a module its unwind table: table
 * cache, lazy table (header search table, then FDE index), whole compile,
 * and the store of a whole table into the cache. */
#include "table/table_open.h"

#include <stddef.h>

#include "table/table_cache.h"

/* The cache file for src, when it has one and it is valid. */
static bool open_cached(const struct table_source *src,
			struct stacksnap_ctx_stats *st, struct unwind_table **out)
{
	struct table_cache_key key = { src->build_id, src->build_id_len,
				       src->inputs, src->ninputs, &src->file };

	if (!src->ninputs || !src->cache_dir || !key.build_id_len ||
	    table_cache__load(src->cache_dir, &key, src->log, src->sigreturn,
			      src->nsigreturn, out) != 0)
		return false;
	st->tables_cached++;
	log_info(src->log, "%s: unwind table from the table cache", src->name);
	return true;
}

/* One CFI section: lazy, through .eh_frame_hdr's search table or,
 * without one (.debug_frame), an FDE index made in one pass. Small
 * sections are compiled whole only to be stored: without a cache, a whole
 * compile of libc's 150 KB (1.5 ms) was most of a cold walk that reaches
 * a dozen of its FDEs. */
static bool open_lazy(const struct table_source *src,
		      struct stacksnap_ctx_stats *st, struct unwind_table **out)
{
	const struct cfi_input *in = &src->inputs[0];

	if (src->ninputs != 1 || (src->cache_dir && in->size < src->lazy_min_cfi))
		return false;
	if (!((in->is_eh_frame && src->eh_frame_hdr_size &&
	       unwind_table__open_lazy(in, src->eh_frame_hdr,
				       src->eh_frame_hdr_size,
				       src->eh_frame_hdr_vaddr, src->log,
				       out) == 0) ||
	      (!*out && unwind_table__open_lazy_index(in, src->log, out) == 0)))
		return false;
	st->tables_lazy++;
	log_info(src->log, "%s: lazy unwind table (%zu bytes of %s)", src->name,
		 in->size, in->is_eh_frame ? ".eh_frame" : ".debug_frame");
	return true;
}

enum table_origin unwind_table__open(const struct table_source *src,
				     struct stacksnap_ctx_stats *st,
				     struct unwind_table **out, bool *on_disk)
{
	*out = NULL;
	*on_disk = false;
	if (open_cached(src, st, out)) {
		*on_disk = true;
		return TABLE_ORIGIN_CACHE;
	}
	*src->nsigreturn = 0;
	if (!src->ninputs) {
		src->scan_sigreturn(src->user);
		log_info(src->log, "%s: no CFI in the image itself", src->name);
		return TABLE_ORIGIN_NONE;
	}
	if (open_lazy(src, st, out))
		return TABLE_ORIGIN_LAZY;
	src->scan_sigreturn(src->user);
	if (unwind_table__compile(src->inputs, src->ninputs, src->log, out)) {
		*out = NULL;
		return TABLE_ORIGIN_NONE;
	}
	st->tables_whole++;
	unwind_table__store(src, *out, on_disk, st);
	return TABLE_ORIGIN_WHOLE;
}

bool unwind_table__store_due(const struct table_source *src,
			     const struct unwind_table *t, bool on_disk)
{
	/* A table from a file that failed a check was compiled here: the
	 * file is rewritten. */
	return src->cache_dir && src->build_id_len &&
	       !(on_disk && !unwind_table__needs_rewrite(t)) &&
	       !unwind_table__is_lazy(t) && !t->unchecked;
}

void unwind_table__store(const struct table_source *src,
			 struct unwind_table *t, bool *on_disk,
			 struct stacksnap_ctx_stats *st)
{
	struct table_cache_key key = { src->build_id, src->build_id_len,
				       t->inputs, t->ninputs, &src->file };

	if (!unwind_table__store_due(src, t, *on_disk))
		return;
	*on_disk = true;
	t->rewrite = false;
	if (table_cache__store(src->cache_dir, &key, t, src->sigreturn,
			       *src->nsigreturn, src->log) == 0) {
		st->tables_stored++;
		log_info(src->log, "%s: unwind table written to the table cache",
			 src->name);
	}
}
