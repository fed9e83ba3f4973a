// SPDX-License-Identifier: GPL-2.0-only
/* ip6_sd_dec2zero(n): one packet in n per IPv6 (source, destination) pair, e.g.
 * to send a sample of a dropped flood to a collector. The countdown is shared by
 * all CPUs and decremented atomically, so exactly one packet in n gets 0. */
#include <hike/program.h>

struct sd_key {
	struct in6_addr src;
	struct in6_addr dst;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sd_key);
	__type(value, __u64);
} ip6_sd_countdown SEC(".maps");

HIKE_PROGRAM(ip6_sd_dec2zero, HIKE_ARG(u64, n))
{
	struct ipv6hdr *ip6 = hike_ip6(ctx);
	struct sd_key key;
	__u64 *left, was;

	if (!ip6)
		return hike_result(1);
	if (n <= 1)
		return hike_result(0);
	key.src = ip6->saddr;
	key.dst = ip6->daddr;
	left = bpf_map_lookup_elem(&ip6_sd_countdown, &key);
	if (!left) {
		__u64 start = n - 1;

		/* This is the pair's first packet: n - 1 more until the first 0. */
		if (!bpf_map_update_elem(&ip6_sd_countdown, &key, &start, BPF_NOEXIST))
			return hike_result(start);
		left = bpf_map_lookup_elem(&ip6_sd_countdown, &key);
		if (!left)
			return hike_result(1);
	}
	was = __sync_fetch_and_add(left, -1);
	if (was == 1) {
		/* This packet took it to 0: start the next period. */
		__sync_fetch_and_add(left, n);
		return hike_result(0);
	}
	if (was == 0 || was > n) {
		/* n changed under a running countdown: restart it. */
		*left = n - 1;
		return hike_result(n - 1);
	}
	return hike_result(was - 1);
}

char LICENSE[] SEC("license") = "GPL";
