/* perf_data_reader.h - the reader state of a perf.data file, shared by
 * the header reader (perf_data_header.c: attributes, build-ids, features)
 * and the record reader (perf_data.c: the stream in time order). */
#ifndef SS_PERFDATA_PERF_DATA_READER_H
#define SS_PERFDATA_PERF_DATA_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cursor.h"
#include "stacksnap.h"

#define MAX_ATTRS 4096
#define MAX_NAME 64

/* What a record's layout depends on, for one event (perf_event_attr). */
struct perf_attr {
	uint64_t type, config, sample_type, read_format;
	uint64_t branch_sample_type, regs_user;
	bool sample_id_all;
	char name[MAX_NAME];
};

/* Sample id -> attribute index. Sorted by id once the header is read. */
struct id_attr {
	uint64_t id;
	size_t attr;
};

/* One entry of the build-id table: filename points into the file. */
struct build_id {
	const char *filename;
	uint8_t id[20];
	uint8_t len;
};

/* A record waiting for its turn: sorted by (time, seq). */
struct queued {
	uint64_t time;
	uint64_t seq;
	uint64_t offset;
};

/* Invariants: data[data_off .. data_end) is the record stream and pos
 * (aligned to 8) lies inside it; ready[next_ready .. nready) are sorted
 * and due; pending holds the records read since, unsorted. */
struct stacksnap_perf_data {
	struct stacksnap_ctx *ctx;
	const uint8_t *data;
	size_t len;
	bool mapped;
	/* A recording with PERF_RECORD_COMPRESSED records (perf record -z):
	 * its data section inflated, compressed records replaced by what
	 * they hold; data points here, the file's mapping is kept in
	 * file/file_len (feature sections and build-id names point there). */
	uint8_t *inflated;
	bool compressed;	/* file mode: the COMPRESSED feature is set */
	const uint8_t *file;
	size_t file_len;
	char name[256];		/* file name for messages */
	bool pipe;
	uint64_t data_off, data_end, pos;
	struct perf_attr *attrs;
	size_t nattrs, capattrs;
	struct id_attr *ids;
	size_t nids, capids;
	bool ids_sorted;
	struct build_id *bids;
	size_t nbids, capbids;
	bool sort;		/* every record has a time: sort them */
	bool sort_decided;
	struct queued *pending, *ready;
	size_t npending, cappending, nready, capready, next_ready;
	uint64_t seq, max_time, flush_limit;
	bool eof;
	int err;		/* sticky: the stream ended with it */
	/* A record at an unaligned offset (pipe mode: perf's own records
	 * there need not be multiples of 8) is copied here to decode. */
	uint64_t scratch[65536 / 8];
	char errmsg[704];	/* name + offset + what */
};

/* Records what is wrong at file offset off (pd->errmsg, the log, the
 * sticky pd->err) and returns -EINVAL. */
__attribute__((format(printf, 3, 4)))
int pd_corrupt(struct stacksnap_perf_data *pd, uint64_t off, const char *fmt, ...);
/* Reads a perf_event_attr of attr_len bytes at c; fields past its own
 * size stay 0. */
int pd_parse_attr(struct stacksnap_perf_data *pd, struct cursor *c,
		  size_t attr_len, struct perf_attr *a);
/* Appends attribute a (read at off); then its sample ids with pd_add_id. */
int pd_add_attr(struct stacksnap_perf_data *pd, const struct perf_attr *a,
		uint64_t off);
int pd_add_id(struct stacksnap_perf_data *pd, uint64_t id, size_t attr);
/* One build-id record (feature section or pipe record) at c. */
int pd_read_build_id(struct stacksnap_perf_data *pd, struct cursor *c,
		     uint64_t off, uint16_t misc, uint16_t size);
/* The file header, its attributes and features (file mode). */
int pd_read_header(struct stacksnap_perf_data *pd);

#endif
