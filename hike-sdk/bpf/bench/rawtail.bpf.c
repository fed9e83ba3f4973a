// SPDX-License-Identifier: GPL-2.0-only
/*
 * The baseline the VM's per-call cost is measured against: null programs chained
 * with plain tail calls, no VM, in the same two shapes as the VM's chains:
 *  - raw_self: one program tail-calling itself through the constant slot 1 (the
 *    shape of a chain calling one program N times);
 *  - raw_k<N>: hop N tail-calls the constant slot N+1 (N distinct programs); the
 *    JIT turns constant keys into patched direct jumps;
 *  - raw_dyn: every hop tail-calls slot `next` read from a per-CPU counter, the way
 *    a runtime-configured pipeline must (an indirect jump).
 * Each stops after `hops` hops and returns XDP_PASS; with hops = 0 the entry
 * returns at once (the floor: a test run of a program that does nothing per hop).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} raw_progs SEC(".maps");

struct raw_state {
	__u32 left;
	__u32 next;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct raw_state);
} raw_st SEC(".maps");

/* hops to make per packet */
const volatile __u32 hops = 1;

SEC("xdp")
int raw_entry(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct raw_state *s = bpf_map_lookup_elem(&raw_st, &zero);

	if (!s)
		return XDP_ABORTED;
	if (hops == 0)
		return XDP_PASS;
	s->left = hops;
	s->next = 1;
	bpf_tail_call(ctx, &raw_progs, s->next);
	return XDP_PASS;
}

/* A hop: counts down, then tail-calls slot `slot`: a constant (a direct jump once
 * JITed) or, for raw_dyn, the next slot read from the per-CPU state. */
#define RAW_HOP(name, slot)                                          \
	SEC("xdp") int name(struct xdp_md *ctx)                      \
	{                                                            \
		__u32 zero = 0;                                      \
		struct raw_state *s = bpf_map_lookup_elem(&raw_st, &zero); \
		if (!s)                                              \
			return XDP_ABORTED;                          \
		if (--s->left == 0)                                  \
			return XDP_PASS;                             \
		bpf_tail_call(ctx, &raw_progs, slot);                \
		return XDP_ABORTED;                                  \
	}
RAW_HOP(raw_self, 1)
RAW_HOP(raw_dyn, ++s->next)
#define RAW_K(n) RAW_HOP(raw_k##n, n + 1)
RAW_K(1) RAW_K(2) RAW_K(3) RAW_K(4) RAW_K(5) RAW_K(6) RAW_K(7) RAW_K(8)
RAW_K(9) RAW_K(10) RAW_K(11) RAW_K(12) RAW_K(13) RAW_K(14) RAW_K(15) RAW_K(16)
RAW_K(17) RAW_K(18) RAW_K(19) RAW_K(20) RAW_K(21) RAW_K(22) RAW_K(23) RAW_K(24)
RAW_K(25) RAW_K(26) RAW_K(27) RAW_K(28) RAW_K(29) RAW_K(30)

char LICENSE[] SEC("license") = "GPL";
