/* cfi.h - DWARF call frame information on byte ranges: CIE/FDE parsing of
 * .eh_frame and .debug_frame, and the interpreter that turns an FDE's
 * program into rows of register rules. Nothing here trusts its input. */
#ifndef SS_DWARF_CFI_H
#define SS_DWARF_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CFI bytes: .eh_frame or .debug_frame of an image. */
struct cfi_input {
	const uint8_t *data; /* section bytes; must outlive every user
				(a table compiled from them) */
	size_t size;
	uint64_t vaddr;	     /* sh_addr of the section (for pc-relative) */
	int is_eh_frame;     /* 1: .eh_frame format, 0: .debug_frame */
};

/* Rules are kept for the x86_64 registers 0..16 (rax..r15, return address
 * column); rules for any higher register (vector registers) are parsed
 * and dropped, since nothing we unwind depends on them. */
#define CFI_NREGS 17
/* Depth of DW_CFA_remember_state. Compilers use 1 or 2. */
#define CFI_STATE_DEPTH 16
/* Instructions executed per run of CIE + FDE programs. */
#define CFI_MAX_INSNS 200000

/* One entry header, as found by cfi_entry_read(). For an FDE, cie_off is
 * the section offset its CIE pointer names (already converted from the
 * .eh_frame self-relative form). Invariant: off < body <= next <= size. */
struct cfi_entry {
	size_t off;	 /* section offset of the length field */
	size_t body;	 /* section offset just after the CIE id/pointer */
	size_t next;	 /* section offset of the following entry */
	size_t cie_off;	 /* for an FDE */
	bool is_cie;
	bool is64;	 /* 64-bit DWARF format (initial length 0xffffffff) */
};

/* A parsed CIE. Invariant: insns..insns+insns_len lies inside the input;
 * ra_reg < CFI_NREGS (CIEs naming another column are rejected). */
struct cfi_cie {
	uint64_t code_align;
	int64_t data_align;
	const uint8_t *insns;	/* initial instructions */
	size_t insns_len;
	uint32_t ra_reg;	/* return address column */
	uint8_t version;	/* 1, 3 or 4 */
	uint8_t fde_enc;	/* DW_EH_PE_* of FDE addresses */
	uint8_t addr_size;	/* 8 unless a version 4 CIE says 4 */
	bool aug_data;		/* 'z': FDEs carry augmentation data */
	bool signal_frame;	/* 'S' */
};

/* A parsed FDE. Invariant: pc_begin <= pc_end (pc_end is clamped, never
 * wraps); insns lie inside the input. */
struct cfi_fde {
	uint64_t pc_begin;
	uint64_t pc_end;
	const uint8_t *insns;
	size_t insns_len;
	size_t off;		/* section offset of the FDE */
	size_t cie_off;
};

enum cfi_rule_kind {
	CFI_RULE_UNSET = 0,	/* no rule given: same value by convention */
	CFI_RULE_UNDEFINED,
	CFI_RULE_SAME,
	CFI_RULE_OFFSET,	/* saved at CFA + off */
	CFI_RULE_VAL_OFFSET,	/* value is CFA + off */
	CFI_RULE_REGISTER,	/* value is in register reg */
	CFI_RULE_EXPR,		/* saved at the address expr computes */
	CFI_RULE_VAL_EXPR,	/* value is what expr computes */
};

/* One register's rule. expr points into the input section. */
struct cfi_rule {
	const uint8_t *expr;
	int64_t off;
	uint32_t expr_len;
	uint32_t reg;		/* for CFI_RULE_REGISTER; may be >= CFI_NREGS */
	uint8_t kind;		/* enum cfi_rule_kind */
};

enum cfi_cfa_kind {
	CFI_CFA_UNSET = 0,
	CFI_CFA_REG_OFF,	/* CFA = reg + off */
	CFI_CFA_EXPR,		/* CFA = value of expr */
};

/* The rules in force over one address range of an FDE. */
struct cfi_row {
	uint8_t cfa_kind;	/* enum cfi_cfa_kind */
	uint32_t cfa_reg;	/* may be >= CFI_NREGS (unusable) */
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	uint32_t cfa_expr_len;
	uint64_t args_size;	/* DW_CFA_GNU_args_size */
	struct cfi_rule rules[CFI_NREGS];
};

/* Reads the entry header at section offset off. Returns 1 and *e, 0 at the
 * end of the section (a zero terminator or no bytes left), or -EINVAL for
 * a header that cannot be trusted (the rest of the section is unusable,
 * since its length is what finds the next entry). */
int cfi_entry_read(const struct cfi_input *in, size_t off,
		   struct cfi_entry *e);

/* Parses the CIE at section offset off. Returns 0 or -EINVAL. */
int cfi_cie_parse(const struct cfi_input *in, size_t off,
		  struct cfi_cie *cie);

/* Parses the FDE whose header is e, given its CIE. Returns 0 or -EINVAL. */
int cfi_fde_parse(const struct cfi_input *in, const struct cfi_entry *e,
		  const struct cfi_cie *cie, struct cfi_fde *fde);

/* Parses the FDE at section offset off and its CIE. */
int cfi_fde_at(const struct cfi_input *in, size_t off, struct cfi_cie *cie,
	       struct cfi_fde *fde);

/* Called for every finished row: the rules in row apply to [start, end),
 * a non-empty subrange of the FDE. A non-zero return stops the run and is
 * returned by cfi_run. */
typedef int (*cfi_row_fn)(void *user, uint64_t start, uint64_t end,
			  const struct cfi_row *row);

/* Runs the CIE's initial instructions and then the FDE's program. With
 * emit, every row is passed to it. Without, the run stops at the row that
 * covers pc, left in *row (which must then be in [pc_begin, pc_end)).
 * Returns 0, the callback's value, or -EINVAL for a malformed program. */
int cfi_run(const struct cfi_input *in, const struct cfi_cie *cie,
	    const struct cfi_fde *fde, uint64_t pc, cfi_row_fn emit,
	    void *user, struct cfi_row *row);

#endif
