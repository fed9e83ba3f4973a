// SPDX-License-Identifier: GPL-2.0-only
/* Destination classifiers: the longest configured prefix containing the packet's
 * destination picks its chain (an LPM trie the chain script writes). */
#include <hike/loader.h>

struct chain_value {
	__u32 chain;
};

struct ip6_prefix {
	__u32 len;
	struct in6_addr addr;
};

struct ip4_prefix {
	__u32 len;
	__be32 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ip6_prefix);
	__type(value, struct chain_value);
} ip6_dst_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ip4_prefix);
	__type(value, struct chain_value);
} ip4_dst_map SEC(".maps");

SEC(HIKE_SEC)
int ip6_dst_classifier(HIKE_CTX *ctx)
{
	struct hike_state *st = hike_state_get();
	struct hike_pkt_info *info;
	struct ip6_prefix key = { .len = 128 };
	struct chain_value *v;
	struct ipv6hdr *ip6;

	if (!st)
		return HIKE_VERDICT_PASS;
	info = hike_parse(ctx, st);
	if (info->l3_proto != ETH_P_IPV6)
		return HIKE_VERDICT_PASS;
	ip6 = hike_pkt_ptr(ctx, info->l3_off, sizeof(*ip6));
	if (!ip6)
		return HIKE_VERDICT_PASS;
	key.addr = ip6->daddr;
	v = bpf_map_lookup_elem(&ip6_dst_map, &key);
	if (!v || !v->chain)
		return HIKE_VERDICT_PASS;
	return hike_chain_start(ctx, st, v->chain);
}

SEC(HIKE_SEC)
int ip4_dst_classifier(HIKE_CTX *ctx)
{
	struct hike_state *st = hike_state_get();
	struct hike_pkt_info *info;
	struct ip4_prefix key = { .len = 32 };
	struct chain_value *v;
	struct iphdr *ip4;

	if (!st)
		return HIKE_VERDICT_PASS;
	info = hike_parse(ctx, st);
	if (info->l3_proto != ETH_P_IP)
		return HIKE_VERDICT_PASS;
	ip4 = hike_pkt_ptr(ctx, info->l3_off, sizeof(*ip4));
	if (!ip4)
		return HIKE_VERDICT_PASS;
	key.addr = ip4->daddr;
	v = bpf_map_lookup_elem(&ip4_dst_map, &key);
	if (!v || !v->chain)
		return HIKE_VERDICT_PASS;
	return hike_chain_start(ctx, st, v->chain);
}

char LICENSE[] SEC("license") = "GPL";
