/* capstone_dl.h - Capstone's decoder entry points, from libcapstone opened
 * on first use rather than linked: its 77,000 relocations cost every run
 * of the CLI ~6 ms at start-up, and only the analysis stepper and the
 * wanderer's tail-call check, which few walks reach, decode code. */
#ifndef SS_UNWIND_CAPSTONE_DL_H
#define SS_UNWIND_CAPSTONE_DL_H

#include <capstone/capstone.h>

/* Invariant: every member is set, or capstone_dl() returned NULL. */
struct capstone_dl {
	cs_err (*open)(cs_arch arch, cs_mode mode, csh *handle);
	cs_err (*option)(csh handle, cs_opt_type type, size_t value);
	cs_insn *(*malloc)(csh handle);
	bool (*disasm_iter)(csh handle, const uint8_t **code, size_t *size,
			    uint64_t *address, cs_insn *insn);
	bool (*insn_group)(csh handle, const cs_insn *insn, unsigned group);
	cs_err (*regs_access)(csh handle, const cs_insn *insn,
			      cs_regs regs_read, uint8_t *nread,
			      cs_regs regs_write, uint8_t *nwrite);
	void (*free)(cs_insn *insn, size_t count);
	cs_err (*close)(csh *handle);
};

/* The entry points, loaded once (thread-safe), or NULL when
 * libcapstone.so.4 cannot be opened (then nothing is decoded). */
const struct capstone_dl *capstone_dl(void);

#endif
