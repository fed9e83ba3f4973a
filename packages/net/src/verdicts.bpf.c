// SPDX-License-Identifier: GPL-2.0-only
/* Verdicts: the last call of a chain, deciding what becomes of the packet. */
#include <hike/program.h>

HIKE_PROGRAM(hike_pass)
{
	return XDP_PASS;
}

HIKE_PROGRAM(hike_drop)
{
	return XDP_DROP;
}

/* Back out of the interface it arrived on, to the host that sent it. */
HIKE_PROGRAM(hike_tx)
{
	struct ethhdr *eth = hike_l2(ctx, struct ethhdr);
	unsigned char tmp[ETH_ALEN];

	if (!eth)
		return XDP_DROP;
	__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
