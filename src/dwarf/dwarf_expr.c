/* dwarf_expr.c - the bounded DWARF expression evaluator for CFI: the
 * stack-machine subset (DW_OP_lit/const/breg/deref/stack ops/arithmetic/
 * comparisons/branches) that compilers and hand-written CFI use. */
#include <dwarf.h>
#include <errno.h>

#include "base/cursor.h"
#include "dwarf/dwarf_expr.h"

static int read_mem(const struct dwarf_expr_env *env, uint64_t addr,
		    unsigned size, uint64_t *out)
{
	uint8_t buf[8] = { 0 };
	uint64_t v = 0;

	if (!env->read || env->read(env->user, addr, buf, size))
		return -EFAULT;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)buf[i] << (8 * i);
	*out = v;
	return 0;
}

int dwarf_expr_eval(const uint8_t *expr, size_t len,
		    const struct dwarf_expr_env *env, bool push_one,
		    uint64_t push, uint64_t *out)
{
	uint64_t st[DWARF_EXPR_STACK];
	unsigned n = 0, steps = 0;
	struct cursor c;

	cursor_init(&c, expr, len);
	if (push_one)
		st[n++] = push;
/* Stack access guarded against underflow and overflow. */
#define NEED(k)                                                                \
	do {                                                                   \
		if (n < (k))                                                   \
			return -EINVAL;                                        \
	} while (0)
#define PUSH(v)                                                                \
	do {                                                                   \
		uint64_t pushed_ = (v);                                        \
		if (n >= DWARF_EXPR_STACK)                                     \
			return -EINVAL;                                        \
		st[n] = pushed_;                                               \
		n++;                                                           \
	} while (0)

	while (cursor_left(&c)) {
		uint8_t op = cursor_u8(&c);
		uint64_t a, b, u;
		int64_t s;
		int err;

		if (++steps > DWARF_EXPR_STEPS)
			return -EINVAL;
		if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
			PUSH(op - DW_OP_lit0);
			continue;
		}
		if (op >= DW_OP_breg0 && op <= DW_OP_breg31) {
			unsigned reg = op - DW_OP_breg0;

			s = cursor_sleb(&c);
			if (c.bad || reg >= STACKSNAP_REG_COUNT ||
			    !(env->regs->valid & (1u << reg)))
				return -EINVAL;
			PUSH(env->regs->regs[reg] + (uint64_t)s);
			continue;
		}
		switch (op) {
		case DW_OP_addr:
			PUSH(cursor_u64(&c) + env->bias);
			break;
		case DW_OP_const1u: PUSH(cursor_u8(&c)); break;
		case DW_OP_const1s: PUSH((uint64_t)(int64_t)cursor_s8(&c)); break;
		case DW_OP_const2u: PUSH(cursor_u16(&c)); break;
		case DW_OP_const2s: PUSH((uint64_t)(int64_t)cursor_s16(&c)); break;
		case DW_OP_const4u: PUSH(cursor_u32(&c)); break;
		case DW_OP_const4s: PUSH((uint64_t)(int64_t)cursor_s32(&c)); break;
		case DW_OP_const8u: PUSH(cursor_u64(&c)); break;
		case DW_OP_const8s: PUSH((uint64_t)cursor_s64(&c)); break;
		case DW_OP_constu: PUSH(cursor_uleb(&c)); break;
		case DW_OP_consts: PUSH((uint64_t)cursor_sleb(&c)); break;
		case DW_OP_bregx:
			u = cursor_uleb(&c);
			s = cursor_sleb(&c);
			if (c.bad || u >= STACKSNAP_REG_COUNT ||
			    !(env->regs->valid & (1u << u)))
				return -EINVAL;
			PUSH(env->regs->regs[u] + (uint64_t)s);
			break;
		case DW_OP_dup:
			NEED(1);
			PUSH(st[n - 1]);
			break;
		case DW_OP_drop:
			NEED(1);
			n--;
			break;
		case DW_OP_over:
			NEED(2);
			PUSH(st[n - 2]);
			break;
		case DW_OP_pick:
			u = cursor_u8(&c);
			if (u >= n)
				return -EINVAL;
			PUSH(st[n - 1 - u]);
			break;
		case DW_OP_swap:
			NEED(2);
			a = st[n - 1];
			st[n - 1] = st[n - 2];
			st[n - 2] = a;
			break;
		case DW_OP_rot:
			NEED(3);
			a = st[n - 1];
			st[n - 1] = st[n - 2];
			st[n - 2] = st[n - 3];
			st[n - 3] = a;
			break;
		case DW_OP_deref:
			NEED(1);
			if ((err = read_mem(env, st[n - 1], 8, &st[n - 1])))
				return err;
			break;
		case DW_OP_deref_size:
			NEED(1);
			u = cursor_u8(&c);
			if (u == 0 || u > 8)
				return -EINVAL;
			if ((err = read_mem(env, st[n - 1], (unsigned)u,
					    &st[n - 1])))
				return err;
			break;
		case DW_OP_call_frame_cfa:
			if (!env->have_cfa)
				return -EINVAL;
			PUSH(env->cfa);
			break;
		case DW_OP_plus_uconst:
			NEED(1);
			st[n - 1] += cursor_uleb(&c);
			break;
		case DW_OP_abs:
			NEED(1);
			if ((int64_t)st[n - 1] < 0)
				st[n - 1] = -st[n - 1];
			break;
		case DW_OP_neg:
			NEED(1);
			st[n - 1] = -st[n - 1];
			break;
		case DW_OP_not:
			NEED(1);
			st[n - 1] = ~st[n - 1];
			break;
		case DW_OP_and: case DW_OP_or: case DW_OP_xor:
		case DW_OP_plus: case DW_OP_minus: case DW_OP_mul:
		case DW_OP_div: case DW_OP_mod:
		case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
		case DW_OP_eq: case DW_OP_ne: case DW_OP_lt:
		case DW_OP_le: case DW_OP_gt: case DW_OP_ge:
			NEED(2);
			b = st[--n]; /* top */
			a = st[n - 1];
			switch (op) {
			case DW_OP_and: a &= b; break;
			case DW_OP_or: a |= b; break;
			case DW_OP_xor: a ^= b; break;
			case DW_OP_plus: a += b; break;
			case DW_OP_minus: a -= b; break;
			case DW_OP_mul: a *= b; break;
			case DW_OP_div:
				/* Signed, as the generic type is. */
				if (b == 0)
					return -EINVAL;
				if ((int64_t)a == INT64_MIN && (int64_t)b == -1)
					break; /* overflows: stays INT64_MIN */
				a = (uint64_t)((int64_t)a / (int64_t)b);
				break;
			case DW_OP_mod:
				if (b == 0)
					return -EINVAL;
				a %= b;
				break;
			case DW_OP_shl: a = b >= 64 ? 0 : a << b; break;
			case DW_OP_shr: a = b >= 64 ? 0 : a >> b; break;
			case DW_OP_shra:
				if (b >= 64)
					a = (int64_t)a < 0 ? UINT64_MAX : 0;
				else if ((int64_t)a < 0)
					a = ~(~a >> b);
				else
					a >>= b;
				break;
			case DW_OP_eq: a = a == b; break;
			case DW_OP_ne: a = a != b; break;
			case DW_OP_lt: a = (int64_t)a < (int64_t)b; break;
			case DW_OP_le: a = (int64_t)a <= (int64_t)b; break;
			case DW_OP_gt: a = (int64_t)a > (int64_t)b; break;
			case DW_OP_ge: a = (int64_t)a >= (int64_t)b; break;
			}
			st[n - 1] = a;
			break;
		case DW_OP_skip:
		case DW_OP_bra: {
			int16_t d = cursor_s16(&c);
			size_t at;

			if (c.bad)
				return -EINVAL;
			if (op == DW_OP_bra) {
				NEED(1);
				if (st[--n] == 0)
					break;
			}
			at = cursor_offset(&c);
			if ((d < 0 && (size_t)-(int32_t)d > at) ||
			    (d > 0 && (size_t)d > len - at))
				return -EINVAL;
			c.p = c.start + at + d;
			break;
		}
		case DW_OP_nop:
			break;
		default:
			return -EINVAL;
		}
		if (c.bad)
			return -EINVAL;
	}
#undef NEED
#undef PUSH
	if (c.bad || n == 0)
		return -EINVAL;
	*out = st[n - 1];
	return 0;
}
