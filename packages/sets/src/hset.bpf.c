// SPDX-License-Identifier: GPL-2.0-only
/* ip6_hset_srcdst(op): a set of IPv6 (source, destination) pairs whose entries
 * expire, e.g. a blacklist a chain fills when a flow misbehaves (the eCLAT
 * paper's DDoS chain). LOOKUP returns 0 for a listed pair, like the paper's. */
#include <hike/program.h>
#include <hike/time.h>

#define HSET_ADD 1
#define HSET_LOOKUP 2
#define HSET_DEL 3
#define DEFAULT_TTL_NS 10000000000ULL

struct sd_key {
	struct in6_addr src;
	struct in6_addr dst;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ip6_hset_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sd_key);
	__type(value, __u64);
} ip6_hset SEC(".maps");

HIKE_PROGRAM(ip6_hset_srcdst, HIKE_ARG(u64, op))
{
	struct ipv6hdr *ip6 = hike_ip6(ctx);
	__u64 now = hike_ktime_ns();
	struct sd_key key;
	__u64 *expires;
	__u32 zero = 0;

	if (!ip6)
		return hike_result(1);
	key.src = ip6->saddr;
	key.dst = ip6->daddr;
	switch (op) {
	case HSET_ADD: {
		__u64 *ttl = bpf_map_lookup_elem(&ip6_hset_cfg, &zero);
		__u64 until = now + (ttl && *ttl ? *ttl : DEFAULT_TTL_NS);

		bpf_map_update_elem(&ip6_hset, &key, &until, BPF_ANY);
		return hike_result(0);
	}
	case HSET_LOOKUP:
		expires = bpf_map_lookup_elem(&ip6_hset, &key);
		if (!expires)
			return hike_result(1);
		if (*expires <= now) {
			bpf_map_delete_elem(&ip6_hset, &key);
			return hike_result(1);
		}
		return hike_result(0);
	case HSET_DEL:
		return hike_result(bpf_map_delete_elem(&ip6_hset, &key) ? 1 : 0);
	default:
		return hike_result(1);
	}
}

char LICENSE[] SEC("license") = "GPL";
