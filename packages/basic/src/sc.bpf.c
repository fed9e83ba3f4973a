// SPDX-License-Identifier: GPL-2.0-only
/* Single-chain loaders: every packet of one IP version runs one chain (ip6_sc,
 * ip4_sc), or each IP version its own chain (l3_sc). */
#include <hike/loader.h>

struct sc_value {
	__u32 chain;
};

HIKE_LOADER_MAP(ip6_sc_map, __u32, struct sc_value, 1);
HIKE_LOADER_MAP(ip4_sc_map, __u32, struct sc_value, 1);
HIKE_LOADER_MAP(l3_sc_map, __u32, struct sc_value, 8);

static __always_inline int single_chain(HIKE_CTX *ctx, __u16 proto, void *map)
{
	struct hike_state *st = hike_state_get();
	struct hike_pkt_info *info;
	struct sc_value *v;
	__u32 zero = 0;

	if (!st)
		return HIKE_VERDICT_PASS;
	info = hike_parse(ctx, st);
	if (info->l3_proto != proto)
		return HIKE_VERDICT_PASS;
	v = bpf_map_lookup_elem(map, &zero);
	if (!v || !v->chain)
		return HIKE_VERDICT_PASS;
	return hike_chain_start(ctx, st, v->chain);
}

SEC(HIKE_SEC)
int ip6_sc(HIKE_CTX *ctx)
{
	return single_chain(ctx, ETH_P_IPV6, &ip6_sc_map);
}

SEC(HIKE_SEC)
int ip4_sc(HIKE_CTX *ctx)
{
	return single_chain(ctx, ETH_P_IP, &ip4_sc_map);
}

SEC(HIKE_SEC)
int l3_sc(HIKE_CTX *ctx)
{
	struct hike_state *st = hike_state_get();
	struct hike_pkt_info *info;
	struct sc_value *v;
	__u32 slot;

	if (!st)
		return HIKE_VERDICT_PASS;
	info = hike_parse(ctx, st);
	if (info->l3_proto == ETH_P_IP)
		slot = 4;
	else if (info->l3_proto == ETH_P_IPV6)
		slot = 6;
	else
		return HIKE_VERDICT_PASS;
	v = bpf_map_lookup_elem(&l3_sc_map, &slot);
	if (!v || !v->chain)
		return HIKE_VERDICT_PASS;
	return hike_chain_start(ctx, st, v->chain);
}

char LICENSE[] SEC("license") = "GPL";
