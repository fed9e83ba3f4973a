// SPDX-License-Identifier: GPL-2.0-only
/* Lookup and Forward: the kernel's FIB chooses the next hop (bpf_fib_lookup); the
 * packet is rewritten for it and redirected out of its interface. */
#include <hike/program.h>
#include "mmlf.h"

#define AF_INET 2
#define AF_INET6 10
#define NOT_FORWARDED 255

static __always_inline void set_macs(struct ethhdr *eth, struct bpf_fib_lookup *p)
{
	__builtin_memcpy(eth->h_dest, p->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p->smac, ETH_ALEN);
}

HIKE_PROGRAM(ip6_fib_lookup)
{
	struct ipv6hdr *ip6 = hike_ip6(ctx);
	struct ethhdr *eth = hike_l2(ctx, struct ethhdr);
	struct bpf_fib_lookup p = {};
	long rc;

	if (!ip6 || !eth || ip6->hop_limit <= 1)
		return hike_result(NOT_FORWARDED);
	p.family = AF_INET6;
	p.flowinfo = *(__be32 *)ip6 & bpf_htonl(0x0fffffff);
	p.l4_protocol = ip6->nexthdr;
	p.tot_len = bpf_ntohs(ip6->payload_len);
	__builtin_memcpy(p.ipv6_src, &ip6->saddr, sizeof(p.ipv6_src));
	__builtin_memcpy(p.ipv6_dst, &ip6->daddr, sizeof(p.ipv6_dst));
	p.ifindex = ctx->ingress_ifindex;
	rc = bpf_fib_lookup(ctx, &p, sizeof(p), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return hike_result(rc < 0 ? NOT_FORWARDED : rc);
	ip6->hop_limit--;
	set_macs(eth, &p);
	*(__u32 *)(hike_scratch() + MMLF_SCRATCH_IFINDEX) = p.ifindex;
	return hike_result(0);
}

HIKE_PROGRAM(ip4_fib_lookup)
{
	struct iphdr *ip4 = hike_ip4(ctx);
	struct ethhdr *eth = hike_l2(ctx, struct ethhdr);
	struct bpf_fib_lookup p = {};
	__be16 old, new;
	long rc;

	if (!ip4 || !eth || ip4->ttl <= 1)
		return hike_result(NOT_FORWARDED);
	p.family = AF_INET;
	p.tos = ip4->tos;
	p.l4_protocol = ip4->protocol;
	p.tot_len = bpf_ntohs(ip4->tot_len);
	p.ipv4_src = ip4->saddr;
	p.ipv4_dst = ip4->daddr;
	p.ifindex = ctx->ingress_ifindex;
	rc = bpf_fib_lookup(ctx, &p, sizeof(p), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return hike_result(rc < 0 ? NOT_FORWARDED : rc);
	/* TTL and protocol share a 16-bit word of the checksum (TTL first). */
	old = *(__be16 *)&ip4->ttl;
	new = bpf_htons(bpf_ntohs(old) - 0x0100);
	ip4->ttl--;
	hike_csum_replace2(&ip4->check, old, new);
	set_macs(eth, &p);
	*(__u32 *)(hike_scratch() + MMLF_SCRATCH_IFINDEX) = p.ifindex;
	return hike_result(0);
}

HIKE_PROGRAM(fwd_redirect)
{
	__u32 ifindex = *(__u32 *)(hike_scratch() + MMLF_SCRATCH_IFINDEX);

	if (!ifindex)
		return XDP_PASS;
	return bpf_redirect(ifindex, 0);
}

char LICENSE[] SEC("license") = "GPL";
