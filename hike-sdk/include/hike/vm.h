/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The HIKe VM interpreter. Every HIKe program and loader carries a copy: after a
 * program has done its work it keeps interpreting the chain until the next call
 * (a tail call into the next program) or the chain's end. There is no VM program
 * to bounce through, so a program call costs one tail call.
 *
 * Design choices and what they cost are in docs/BYTECODE.md ("Implementation").
 */
#ifndef HIKE_VM_H
#define HIKE_VM_H

#include <hike/maps.h>

/* What a program body returns to hand control back to the chain. No XDP or TC
 * verdict has this value. */
#define HIKE_CONTINUE 0x48494b45

#define __hike_inline static __always_inline

__hike_inline struct hike_state *hike_state_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&hike_state, &zero);
}

/* What the loader's parser recorded about the packet: the start of the scratch bank. */
__hike_inline struct hike_pkt_info *hike_pkt_info(struct hike_state *st)
{
	return (struct hike_pkt_info *)st->scratch;
}

__hike_inline int hike_abort(struct hike_state *st, __u32 reason)
{
	st->aborts[reason & (HIKE_ABORT_MAX - 1)]++;
	return HIKE_VERDICT_ABORT;
}

/* The packet's start and end. Read with one asm load each because newer clangs
 * otherwise fold `ctx->data` and `ctx->data_end` into one load from a computed
 * address (ctx + 0 or ctx + 4), which the verifier refuses ("dereference of
 * modified ctx ptr"); an asm load keeps the constant offset.
 *
 * Volatile, so read afresh at every use rather than kept in a register across a
 * tail call: kernels that count a failed bpf_tail_call() as changing the packet
 * (6.12's stable series does, 6.1, 6.18 and 7.2 do not) turn every packet
 * pointer held across one into a scalar, and the next access through it is
 * refused ("invalid mem access 'scalar'"). A ctx load costs one instruction. */
__hike_inline void *hike_pkt_data(HIKE_CTX *ctx)
{
	void *p;

	asm volatile("%0 = *(u32 *)(%1 + %2)" : "=r"(p) : "r"(ctx), "i"(__builtin_offsetof(HIKE_CTX, data)));
	return p;
}

__hike_inline void *hike_pkt_end(HIKE_CTX *ctx)
{
	void *p;

	asm volatile("%0 = *(u32 *)(%1 + %2)" : "=r"(p) : "r"(ctx), "i"(__builtin_offsetof(HIKE_CTX, data_end)));
	return p;
}

/* A tail call to a constant slot, written in assembly so the compiler cannot merge
 * the call sites of different slots into one with a variable key (it does with
 * plain bpf_tail_call()). The verifier then sees a constant key at each site and
 * the JIT emits a direct jump, patched when the slot changes, instead of an
 * indirect jump through a retpoline. */
#define __HIKE_TAIL_IN(map, limit, n)                                                  \
	case n:                                                                        \
		if ((n) < (limit)) {                                                   \
			asm volatile("r1 = %[c]\n\t"                                    \
				     "r2 = %[m] ll\n\t"                                 \
				     "r3 = %[k]\n\t"                                    \
				     "call 12"                                          \
				     :                                                  \
				     : [c] "r"(ctx), [m] "i"(&(map)), [k] "i"(n)         \
				     : "r0", "r1", "r2", "r3", "r4", "r5", "memory");   \
			return;                                                        \
		}                                                                      \
		break;
#define __HIKE_TAIL(n) __HIKE_TAIL_IN(HIKE_PROGS, HIKE_DIRECT_PROGS, n)

/* Program ids 1 .. HIKE_DIRECT_PROGS - 1 get a direct jump; others an indirect one. */
__hike_inline void hike_dispatch(HIKE_CTX *ctx, __u32 id)
{
#if HIKE_DIRECT_PROGS > 1
	switch (id) {
	__HIKE_TAIL(1) __HIKE_TAIL(2) __HIKE_TAIL(3) __HIKE_TAIL(4) __HIKE_TAIL(5) __HIKE_TAIL(6) __HIKE_TAIL(7)
	__HIKE_TAIL(8) __HIKE_TAIL(9) __HIKE_TAIL(10) __HIKE_TAIL(11) __HIKE_TAIL(12) __HIKE_TAIL(13)
	__HIKE_TAIL(14) __HIKE_TAIL(15) __HIKE_TAIL(16) __HIKE_TAIL(17) __HIKE_TAIL(18) __HIKE_TAIL(19)
	__HIKE_TAIL(20) __HIKE_TAIL(21) __HIKE_TAIL(22) __HIKE_TAIL(23) __HIKE_TAIL(24) __HIKE_TAIL(25)
	__HIKE_TAIL(26) __HIKE_TAIL(27) __HIKE_TAIL(28) __HIKE_TAIL(29) __HIKE_TAIL(30) __HIKE_TAIL(31)
	default:
		break;
	}
#endif
	bpf_tail_call(ctx, &HIKE_PROGS, id);
}

/* Signed division and remainder with eBPF's rules (x / 0 = 0, x % 0 = x,
 * INT64_MIN / -1 = INT64_MIN), built from unsigned ones: BPF before ISA v4 has no
 * signed division. */
__hike_inline __u64 hike_sdiv(__u64 d, __u64 s)
{
	__u64 ad = (__s64)d < 0 ? -d : d;
	__u64 as = (__s64)s < 0 ? -s : s;
	__u64 q;

	if (s == 0)
		return 0;
	q = ad / as;
	return ((__s64)d < 0) != ((__s64)s < 0) ? -q : q;
}

__hike_inline __u64 hike_smod(__u64 d, __u64 s)
{
	__u64 ad = (__s64)d < 0 ? -d : d;
	__u64 as = (__s64)s < 0 ? -s : s;
	__u64 r;

	if (s == 0)
		return d;
	r = ad % as;
	return (__s64)d < 0 ? -r : r;
}

/* Address of `size` bytes at `addr` in `bank`, or NULL when out of bounds. The
 * size is a constant at every call site, so the verifier sees exact bounds. */
__hike_inline void *hike_mem(HIKE_CTX *ctx, struct hike_state *st, __s32 bank, __u64 addr, __u32 size)
{
	if (bank == HIKE_BANK_PACKET) {
		void *p = hike_pkt_data(ctx);

		if (addr > HIKE_PKT_MAX_OFF)
			return 0;
		p += addr;
		if (p + size > hike_pkt_end(ctx))
			return 0;
		return p;
	}
	if (bank == HIKE_BANK_STACK) {
		__u64 off = addr & (HIKE_FRAME_SIZE - 1);

		if (addr > HIKE_FRAME_SIZE - size)
			return 0;
		/* Hidden from the compiler, which would otherwise join the frame's base
		 * and the offset with `|` (their bits do not overlap): older verifiers
		 * (Linux 6.1's) forget every bound through `|` with a register operand. */
		asm volatile("" : "+r"(off));
		return &st->stack[((st->depth & (HIKE_MAX_DEPTH - 1)) * HIKE_FRAME_SIZE) + off];
	}
	if (bank == HIKE_BANK_SCRATCH) {
		if (addr > HIKE_SCRATCH_SIZE - size)
			return 0;
		return &st->scratch[addr & (HIKE_SCRATCH_SIZE - 1)];
	}
	return 0;
}

__hike_inline struct hike_chain *hike_chain_get(__u32 id)
{
	struct hike_chain *c = bpf_map_lookup_elem(&hike_chains, &id);

	if (c && c->len == 0)
		return 0;
	return c;
}

/* The registers and first stack frame a chain starts with in the VM: all zero
 * but r10, the frame pointer. */
__hike_inline void hike_vm_reset(struct hike_state *st)
{
	__builtin_memset(st->regs, 0, HIKE_REG_FP * sizeof(__u64));
	st->regs[HIKE_REG_FP] = HIKE_FRAME_SIZE;
	__builtin_memset(st->stack, 0, HIKE_FRAME_SIZE);
}

#define __HIKE_REG(r) st->regs[(r) & (HIKE_NREGS - 1)]

/* Interprets the current chain from st->pc until it calls a program (a tail call
 * that does not return), ends, or aborts. Returns the packet's verdict when it
 * does not tail-call.
 *
 * Only the step counter, the budget and the current chain's address live in
 * registers from one instruction to the next: pc and the VM's registers are read
 * from the per-CPU state at the top of every iteration. The verifier then sees
 * one state at the top of each iteration and explores the body once per
 * iteration instead of once per path. The chain is looked up again only when a
 * chain call or return changes it. */
__hike_inline int hike_vm_run(HIKE_CTX *ctx, struct hike_state *st)
{
	__u32 budget = st->budget;
	struct hike_chain *c = hike_chain_get(st->chain);

	if (!c)
		return hike_abort(st, HIKE_ABORT_NO_CHAIN);
	for (__u32 step = 0; step < HIKE_RESUME_STEPS; step++) {
		__u32 pc = st->pc;
		__u64 raw, s, d;
		__u8 code, op, dst, src;
		__s16 off;
		__s32 imm;
		void *p;

		if (pc >= c->len)
			return hike_abort(st, HIKE_ABORT_BAD_PC);
		if (step >= budget)
			return hike_abort(st, HIKE_ABORT_BUDGET);

		/* One 8-byte load, decoded with shifts: struct hike_insn is little-endian
		 * code | dst:4 src:4 | off | imm. */
		raw = *(__u64 *)&c->insns[pc & (HIKE_MAX_INSNS - 1)];
		code = raw;
		dst = (raw >> 8) & 0xf;
		src = (raw >> 12) & 0xf;
		off = raw >> 16;
		imm = raw >> 32;
		op = HIKE_OP(code);
		s = HIKE_SRC(code) == HIKE_X ? st->regs[src] : (__u64)(__s64)imm;
		st->pc = pc + 1;

		switch (HIKE_CLASS(code)) {
		case HIKE_ALU64:
			d = st->regs[dst];
			switch (op) {
			case HIKE_ADD: d += s; break;
			case HIKE_SUB: d -= s; break;
			case HIKE_MUL: d *= s; break;
			case HIKE_DIV: d = off ? hike_sdiv(d, s) : (s ? d / s : 0); break;
			case HIKE_MOD: d = off ? hike_smod(d, s) : (s ? d % s : d); break;
			case HIKE_OR: d |= s; break;
			case HIKE_AND: d &= s; break;
			case HIKE_XOR: d ^= s; break;
			case HIKE_LSH: d <<= (s & 63); break;
			case HIKE_RSH: d >>= (s & 63); break;
			case HIKE_ARSH: d = (__u64)((__s64)d >> (s & 63)); break;
			case HIKE_NEG: d = -d; break;
			case HIKE_MOV: d = s; break;
			case HIKE_END:
				if (imm == 16)
					d = __builtin_bswap16((__u16)d);
				else if (imm == 32)
					d = __builtin_bswap32((__u32)d);
				else if (imm == 64)
					d = __builtin_bswap64(d);
				else
					return hike_abort(st, HIKE_ABORT_BAD_INSN);
				break;
			default:
				return hike_abort(st, HIKE_ABORT_BAD_INSN);
			}
			st->regs[dst] = d;
			continue;

		case HIKE_ALU:
			if (op != HIKE_END)
				return hike_abort(st, HIKE_ABORT_BAD_INSN);
			d = st->regs[dst];
			if (imm == 16)
				d = HIKE_SRC(code) == HIKE_TO_BE ? __builtin_bswap16((__u16)d) : (__u16)d;
			else if (imm == 32)
				d = HIKE_SRC(code) == HIKE_TO_BE ? __builtin_bswap32((__u32)d) : (__u32)d;
			else if (imm == 64)
				d = HIKE_SRC(code) == HIKE_TO_BE ? __builtin_bswap64(d) : d;
			else
				return hike_abort(st, HIKE_ABORT_BAD_INSN);
			st->regs[dst] = d;
			continue;

		case HIKE_JMP:
			d = st->regs[dst];
			switch (op) {
			case HIKE_JA: break;
			case HIKE_JEQ: if (d != s) continue; break;
			case HIKE_JNE: if (d == s) continue; break;
			case HIKE_JGT: if (d <= s) continue; break;
			case HIKE_JGE: if (d < s) continue; break;
			case HIKE_JLT: if (d >= s) continue; break;
			case HIKE_JLE: if (d > s) continue; break;
			case HIKE_JSET: if (!(d & s)) continue; break;
			case HIKE_JSGT: if ((__s64)d <= (__s64)s) continue; break;
			case HIKE_JSGE: if ((__s64)d < (__s64)s) continue; break;
			case HIKE_JSLT: if ((__s64)d >= (__s64)s) continue; break;
			case HIKE_JSLE: if ((__s64)d > (__s64)s) continue; break;
			case HIKE_CALL:
				if (src == HIKE_CALL_PROG) {
					__u32 id = (__u32)imm;

					if (st->calls >= HIKE_MAX_TAIL_CALLS)
						return hike_abort(st, HIKE_ABORT_CALL_LIMIT);
					st->calls++;
					st->budget = budget - step - 1;
					st->prog_calls[id & (HIKE_MAX_PROGS - 1)]++;
					hike_dispatch(ctx, id);
					return hike_abort(st, HIKE_ABORT_NO_PROG);
				}
				if (src == HIKE_CALL_CHAIN) {
					__u32 id = (__u32)imm;
					__u32 depth = st->depth;
					struct hike_frame *f;

					if (depth >= HIKE_MAX_DEPTH - 1)
						return hike_abort(st, HIKE_ABORT_DEPTH);
					if (!hike_chain_get(id))
						return hike_abort(st, HIKE_ABORT_NO_CHAIN);
					f = &st->frames[depth & (HIKE_MAX_DEPTH - 1)];
					f->chain = st->chain;
					f->ret_pc = pc + 1;
					__builtin_memcpy(f->saved, &st->regs[1], sizeof(f->saved));
					st->regs[6] = 0;
					st->regs[7] = 0;
					st->regs[8] = 0;
					st->regs[9] = 0;
					depth++;
					st->depth = depth;
					__builtin_memset(&st->stack[(depth & (HIKE_MAX_DEPTH - 1)) * HIKE_FRAME_SIZE], 0,
							 HIKE_FRAME_SIZE);
					st->chain = id;
					st->chain_runs[id & (HIKE_MAX_CHAINS - 1)]++;
					st->pc = 0;
					c = hike_chain_get(id);
					if (!c)
						return hike_abort(st, HIKE_ABORT_NO_CHAIN);
					continue;
				}
				return hike_abort(st, HIKE_ABORT_BAD_INSN);
			case HIKE_EXIT: {
				__u32 depth = st->depth;
				struct hike_frame *f;

				if (depth == 0) {
					st->pc = pc;
					return HIKE_VERDICT_PASS;
				}
				depth--;
				f = &st->frames[depth & (HIKE_MAX_DEPTH - 1)];
				c = hike_chain_get(f->chain);
				if (!c)
					return hike_abort(st, HIKE_ABORT_NO_CHAIN);
				st->depth = depth;
				__builtin_memcpy(&st->regs[1], f->saved, sizeof(f->saved));
				st->chain = f->chain;
				st->pc = f->ret_pc;
				continue;
			}
			default:
				return hike_abort(st, HIKE_ABORT_BAD_INSN);
			}
			st->pc = pc + 1 + off;
			continue;

		case HIKE_LD:
			if (code != (HIKE_LD | HIKE_IMM | HIKE_DW))
				return hike_abort(st, HIKE_ABORT_BAD_INSN);
			if (pc + 1 >= c->len)
				return hike_abort(st, HIKE_ABORT_BAD_PC);
			st->regs[dst] = (__u64)(__u32)imm | ((__u64)(__u32)c->insns[(pc + 1) & (HIKE_MAX_INSNS - 1)].imm << 32);
			st->pc = pc + 2;
			continue;

		case HIKE_LDX:
			if ((code & 0xe0) != HIKE_MEM)
				return hike_abort(st, HIKE_ABORT_BAD_INSN);
			d = st->regs[src] + (__s64)off;
			switch (HIKE_SIZE(code)) {
			case HIKE_B:
				p = hike_mem(ctx, st, imm, d, 1);
				if (!p)
					return hike_abort(st, HIKE_ABORT_BAD_MEM);
				s = *(__u8 *)p;
				break;
			case HIKE_H:
				p = hike_mem(ctx, st, imm, d, 2);
				if (!p)
					return hike_abort(st, HIKE_ABORT_BAD_MEM);
				s = *(__u16 *)p;
				break;
			case HIKE_W:
				p = hike_mem(ctx, st, imm, d, 4);
				if (!p)
					return hike_abort(st, HIKE_ABORT_BAD_MEM);
				s = *(__u32 *)p;
				break;
			default:
				p = hike_mem(ctx, st, imm, d, 8);
				if (!p)
					return hike_abort(st, HIKE_ABORT_BAD_MEM);
				s = *(__u64 *)p;
				break;
			}
			st->regs[dst] = s;
			continue;

		case HIKE_STX:
			if ((code & 0xe0) != HIKE_MEM)
				return hike_abort(st, HIKE_ABORT_BAD_INSN);
			d = st->regs[dst] + (__s64)off;
			s = st->regs[src];
			switch (HIKE_SIZE(code)) {
			case HIKE_B:
				p = hike_mem(ctx, st, imm, d, 1);
				if (!p)
					return hike_abort(st, HIKE_ABORT_BAD_MEM);
				*(__u8 *)p = s;
				break;
			case HIKE_H:
				p = hike_mem(ctx, st, imm, d, 2);
				if (!p)
					return hike_abort(st, HIKE_ABORT_BAD_MEM);
				*(__u16 *)p = s;
				break;
			case HIKE_W:
				p = hike_mem(ctx, st, imm, d, 4);
				if (!p)
					return hike_abort(st, HIKE_ABORT_BAD_MEM);
				*(__u32 *)p = s;
				break;
			default:
				p = hike_mem(ctx, st, imm, d, 8);
				if (!p)
					return hike_abort(st, HIKE_ABORT_BAD_MEM);
				*(__u64 *)p = s;
				break;
			}
			continue;

		default:
			return hike_abort(st, HIKE_ABORT_BAD_INSN);
		}
	}
	/* Out of steps for this run: hand over to the continuation program (id 0). */
	if (st->calls >= HIKE_MAX_TAIL_CALLS)
		return hike_abort(st, HIKE_ABORT_CALL_LIMIT);
	st->calls++;
	st->budget = budget - HIKE_RESUME_STEPS;
	bpf_tail_call(ctx, &HIKE_PROGS, 0);
	return hike_abort(st, HIKE_ABORT_NO_PROG);
}

#endif /* HIKE_VM_H */
