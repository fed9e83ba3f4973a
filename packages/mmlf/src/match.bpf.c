// SPDX-License-Identifier: GPL-2.0-only
/* Match: is the packet's source in the blacklist? */
#include <hike/program.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct in6_addr);
	__type(value, __u8);
} mmlf_src6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __be32);
	__type(value, __u8);
} mmlf_src4 SEC(".maps");

HIKE_PROGRAM(ip6_src_match)
{
	struct ipv6hdr *ip6 = hike_ip6(ctx);

	if (!ip6)
		return hike_result(0);
	return hike_result(bpf_map_lookup_elem(&mmlf_src6, &ip6->saddr) != NULL);
}

HIKE_PROGRAM(ip4_src_match)
{
	struct iphdr *ip4 = hike_ip4(ctx);

	if (!ip4)
		return hike_result(0);
	return hike_result(bpf_map_lookup_elem(&mmlf_src4, &ip4->saddr) != NULL);
}

char LICENSE[] SEC("license") = "GPL";
