// SPDX-License-Identifier: GPL-2.0-only
/* Mark: the IPv6 traffic class or the IPv4 TOS byte. */
#include <hike/program.h>

HIKE_PROGRAM(ip6_set_tclass, HIKE_ARG(u8, tclass))
{
	struct ipv6hdr *ip6 = hike_ip6(ctx);

	if (!ip6)
		return hike_result(1);
	/* The traffic class straddles the version/priority byte and flow_lbl[0]. */
	ip6->priority = tclass >> 4;
	ip6->flow_lbl[0] = (ip6->flow_lbl[0] & 0x0f) | (tclass << 4);
	return hike_result(0);
}

HIKE_PROGRAM(ip4_set_tos, HIKE_ARG(u8, tos))
{
	struct iphdr *ip4 = hike_ip4(ctx);
	__be16 old, new;

	if (!ip4)
		return hike_result(1);
	/* The checksum covers 16-bit words: the TOS shares one with version/IHL.
	 * The new word is computed, not read back: a read through another type
	 * after the byte store may legally be served from the old value. */
	old = *(__be16 *)ip4;
	new = bpf_htons((bpf_ntohs(old) & 0xff00) | tos);
	ip4->tos = tos;
	hike_csum_replace2(&ip4->check, old, new);
	return hike_result(0);
}

char LICENSE[] SEC("license") = "GPL";
