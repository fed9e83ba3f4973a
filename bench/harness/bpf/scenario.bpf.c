// SPDX-License-Identifier: GPL-2.0-only
/* A plain XDP program for scenarios: a counting sink. (Scenarios send their
 * frames through a packet socket: harness/src/netns.rs send_frames.)
 *
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
int xdp_count(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&counted, &zero);

	if (n)
		*n += 1;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
