// SPDX-License-Identifier: GPL-2.0-only
/* MMLF as one hand-written XDP program: the baseline the `mmlf` chain is compared
 * with (./ci/bench, cli/tests/it/mmlf.rs). Same work, same results: parse Ethernet
 * and up to two VLAN tags, match the source against the blacklist, mark
 * (traffic class / TOS 0xb8), look the destination up in the FIB, rewrite and
 * redirect; anything else passes to the kernel.
 *
 * Not part of the package's interface: built by the benchmark and the tests with
 * `clang -O2 -g -target bpf -I <dir of vmlinux.h>`. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_ALEN 6
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88a8
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86dd
#define AF_INET 2
#define AF_INET6 10
#define MARK 0xb8

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct in6_addr);
	__type(value, __u8);
} mono_src6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __be32);
	__type(value, __u8);
} mono_src4 SEC(".maps");

struct mono_vlan {
	__be16 tci;
	__be16 proto;
};

static __always_inline void csum_replace2(__sum16 *sum, __be16 old, __be16 new)
{
	__u32 c = (__u16)~*sum;

	c += (__u16)~old;
	c += new;
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	*sum = (__sum16)~c;
}

static __always_inline int forward(struct xdp_md *ctx, struct ethhdr *eth, struct bpf_fib_lookup *p)
{
	if (bpf_fib_lookup(ctx, p, sizeof(*p), 0) != BPF_FIB_LKUP_RET_SUCCESS)
		return -1;
	__builtin_memcpy(eth->h_dest, p->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p->smac, ETH_ALEN);
	return 0;
}

SEC("xdp")
int mmlf_mono(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct bpf_fib_lookup p = {};
	__u32 off = sizeof(*eth);
	__u16 proto;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	proto = bpf_ntohs(eth->h_proto);
#pragma unroll
	for (int i = 0; i < 2; i++) {
		struct mono_vlan *vh;

		if (proto != ETH_P_8021Q && proto != ETH_P_8021AD)
			break;
		vh = data + off;
		if ((void *)(vh + 1) > end)
			return XDP_PASS;
		proto = bpf_ntohs(vh->proto);
		off += sizeof(*vh);
	}
	if (proto == ETH_P_IPV6) {
		struct ipv6hdr *ip6 = data + off;

		if ((void *)(ip6 + 1) > end || !bpf_map_lookup_elem(&mono_src6, &ip6->saddr))
			return XDP_PASS;
		ip6->priority = MARK >> 4;
		ip6->flow_lbl[0] = (ip6->flow_lbl[0] & 0x0f) | (MARK << 4);
		if (ip6->hop_limit <= 1)
			return XDP_PASS;
		p.family = AF_INET6;
		p.flowinfo = *(__be32 *)ip6 & bpf_htonl(0x0fffffff);
		p.l4_protocol = ip6->nexthdr;
		p.tot_len = bpf_ntohs(ip6->payload_len);
		__builtin_memcpy(p.ipv6_src, &ip6->saddr, sizeof(p.ipv6_src));
		__builtin_memcpy(p.ipv6_dst, &ip6->daddr, sizeof(p.ipv6_dst));
		p.ifindex = ctx->ingress_ifindex;
		if (forward(ctx, eth, &p))
			return XDP_PASS;
		ip6->hop_limit--;
		return bpf_redirect(p.ifindex, 0);
	}
	if (proto == ETH_P_IP) {
		struct iphdr *ip4 = data + off;
		__be16 old, new;

		if ((void *)(ip4 + 1) > end || !bpf_map_lookup_elem(&mono_src4, &ip4->saddr))
			return XDP_PASS;
		old = *(__be16 *)ip4;
		new = bpf_htons((bpf_ntohs(old) & 0xff00) | MARK);
		ip4->tos = MARK;
		csum_replace2(&ip4->check, old, new);
		if (ip4->ttl <= 1)
			return XDP_PASS;
		p.family = AF_INET;
		p.tos = ip4->tos;
		p.l4_protocol = ip4->protocol;
		p.tot_len = bpf_ntohs(ip4->tot_len);
		p.ipv4_src = ip4->saddr;
		p.ipv4_dst = ip4->daddr;
		p.ifindex = ctx->ingress_ifindex;
		if (forward(ctx, eth, &p))
			return XDP_PASS;
		old = *(__be16 *)&ip4->ttl;
		new = bpf_htons(bpf_ntohs(old) - 0x0100);
		ip4->ttl--;
		csum_replace2(&ip4->check, old, new);
		return bpf_redirect(p.ifindex, 0);
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
