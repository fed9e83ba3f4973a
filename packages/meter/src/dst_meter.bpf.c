// SPDX-License-Identifier: GPL-2.0-only
/* ip6_dst_meter(): packets and bytes per IPv6 destination, per CPU. */
#include <hike/program.h>

struct dst_counter {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct in6_addr);
	__type(value, struct dst_counter);
} ip6_dst_counters SEC(".maps");

HIKE_PROGRAM(ip6_dst_meter)
{
	struct ipv6hdr *ip6 = hike_ip6(ctx);
	__u64 len = hike_pkt_end(ctx) - hike_pkt_data(ctx);
	struct dst_counter *c, fresh = { 1, len };

	if (!ip6)
		return hike_result(0);
	c = bpf_map_lookup_elem(&ip6_dst_counters, &ip6->daddr);
	if (c) {
		c->packets += 1;
		c->bytes += len;
		return hike_result(c->packets);
	}
	bpf_map_update_elem(&ip6_dst_counters, &ip6->daddr, &fresh, BPF_ANY);
	return hike_result(1);
}

char LICENSE[] SEC("license") = "GPL";
