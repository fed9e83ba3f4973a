// SPDX-License-Identifier: GPL-2.0-only
/* Plain XDP programs for scenarios: a traffic source and a counting sink.
 *
 * xdp_tx_all: sends every frame back out of its interface. Run with
 *   BPF_PROG_TEST_RUN and live frames on a veth, it injects the test's frames
 *   into the veth's peer, exactly as many as asked for.
 * xdp_count: counts the frames that reach an interface (then drops them). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} counted SEC(".maps");

SEC("xdp")
int xdp_tx_all(struct xdp_md *ctx)
{
	return XDP_TX;
}

SEC("xdp")
int xdp_count(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&counted, &zero);

	if (n)
		*n += 1;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
