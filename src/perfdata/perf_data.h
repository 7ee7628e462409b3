/* perf_data.h - constants of the perf.data file format and of the
 * perf_event records in it (tools/perf/Documentation/perf.data-file-format.txt,
 * include/uapi/linux/perf_event.h), shared by the reader and the tests that
 * build files by hand. */
#ifndef SS_PERFDATA_PERF_DATA_H
#define SS_PERFDATA_PERF_DATA_H

#define PERF_MAGIC2 0x32454c4946524550ull /* "PERFILE2" little-endian */
#define PERF_FILE_HEADER_SIZE 104	  /* magic .. adds_features[4] */
#define PERF_PIPE_HEADER_SIZE 16	  /* magic, size */

/* perf_event_attr: byte offsets of the fields we read. */
#define PA_TYPE 0
#define PA_SIZE 4
#define PA_CONFIG 8
#define PA_SAMPLE_TYPE 24
#define PA_READ_FORMAT 32
#define PA_FLAGS 40
#define PA_BRANCH_SAMPLE_TYPE 72
#define PA_SAMPLE_REGS_USER 80
#define PA_SAMPLE_STACK_USER 88
#define PA_FLAG_SAMPLE_ID_ALL (1ull << 18)

/* sample_type bits */
#define PS_IP (1ull << 0)
#define PS_TID (1ull << 1)
#define PS_TIME (1ull << 2)
#define PS_ADDR (1ull << 3)
#define PS_READ (1ull << 4)
#define PS_CALLCHAIN (1ull << 5)
#define PS_ID (1ull << 6)
#define PS_CPU (1ull << 7)
#define PS_PERIOD (1ull << 8)
#define PS_STREAM_ID (1ull << 9)
#define PS_RAW (1ull << 10)
#define PS_BRANCH_STACK (1ull << 11)
#define PS_REGS_USER (1ull << 12)
#define PS_STACK_USER (1ull << 13)
#define PS_IDENTIFIER (1ull << 16)

/* read_format bits */
#define PR_TOTAL_TIME_ENABLED (1ull << 0)
#define PR_TOTAL_TIME_RUNNING (1ull << 1)
#define PR_ID (1ull << 2)
#define PR_GROUP (1ull << 3)
#define PR_LOST (1ull << 4)

#define PERF_BRANCH_HW_INDEX (1ull << 17) /* branch_sample_type */

/* Record types */
#define PERF_REC_MMAP 1
#define PERF_REC_LOST 2
#define PERF_REC_COMM 3
#define PERF_REC_EXIT 4
#define PERF_REC_FORK 7
#define PERF_REC_SAMPLE 9
#define PERF_REC_MMAP2 10
#define PERF_REC_USER_START 64 /* records perf itself writes */
#define PERF_REC_HEADER_ATTR 64
#define PERF_REC_HEADER_BUILD_ID 67
#define PERF_REC_FINISHED_ROUND 68
#define PERF_REC_AUXTRACE 71
#define PERF_REC_HEADER_FEATURE 80
#define PERF_REC_COMPRESSED 81

/* header misc bits */
#define PERF_MISC_CPUMODE_MASK 7
#define PERF_MISC_KERNEL 1
#define PERF_MISC_USER_MODE 2
#define PERF_MISC_MMAP_DATA (1u << 13)
#define PERF_MISC_COMM_EXEC (1u << 13)
#define PERF_MISC_MMAP_BUILD_ID (1u << 14)
#define PERF_MISC_BUILD_ID_SIZE (1u << 15)

/* Feature bits (adds_features) */
#define PERF_FEAT_BUILD_ID 2
#define PERF_FEAT_EVENT_DESC 12
#define PERF_FEAT_COMPRESSED 27

/* Callchain context markers */
#define PERF_CONTEXT_MAX ((uint64_t)-4095)
#define PERF_CONTEXT_KERNEL ((uint64_t)-128)
#define PERF_CONTEXT_USER ((uint64_t)-512)

#endif
