/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Native chains (docs/NATIVE.md): what the C that hike-native generates from a
 * chain uses, and the calling convention of program bodies built with
 * -DHIKE_NATIVE_BUILD. Not for hand-written programs.
 */
#ifndef HIKE_NATIVE_H
#define HIKE_NATIVE_H

#include <hike/vm.h>

/* A program's arguments, r1..r4: eBPF functions take at most five arguments,
 * and the body is inlined, so the struct never reaches memory. */
struct hike_native_args {
	__u64 r[4];
};

/* Address of `size` bytes at `addr` in the stack frame starting at byte `base`
 * of the state's stack, or NULL where the VM would abort the access. */
__hike_inline void *hike_native_stack(struct hike_state *st, __u32 base, __u64 addr, __u32 size)
{
	if (addr > HIKE_FRAME_SIZE - size)
		return 0;
	return &st->stack[base + (addr & (HIKE_FRAME_SIZE - 1))];
}

/* The chain needs more budget than this packet has: the VM interprets it from
 * the start (the loader set pc, chain and budget; the VM's registers and frame
 * are reset here) and aborts it where the budget ends.
 * Two tail calls are spent on the way: the loader's into the native program and
 * this one, so the VM counts them and still stops at the kernel's limit. */
__hike_inline int hike_native_fallback(HIKE_CTX *ctx, struct hike_state *st)
{
	hike_vm_reset(st);
	st->calls = 2;
	bpf_tail_call(ctx, &HIKE_PROGS, 0);
	return hike_abort(st, HIKE_ABORT_NO_PROG);
}

#endif /* HIKE_NATIVE_H */
