// SPDX-License-Identifier: GPL-2.0-only
/* MMLF as the same four steps chained with plain tail calls, without the HIKe VM:
 * what composing programs costs without a chain language (./ci/bench). The entry
 * parses the packet into a per-CPU scratch; match, mark, lookup and forward each
 * do their step and tail-call the next through mmlf_tail_progs. IPv6 only, like
 * the benchmark's packets. Not part of the package's interface. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_ALEN 6
#define ETH_P_IPV6 0x86dd
#define AF_INET6 10
#define MARK 0xb8

enum { STEP_MATCH, STEP_MARK, STEP_LOOKUP, STEP_FORWARD, STEPS };

struct scratch {
	__u32 l3_off;
	__u32 ifindex;
};

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, STEPS);
	__type(key, __u32);
	__type(value, __u32);
} mmlf_tail_progs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} mmlf_tail_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct in6_addr);
	__type(value, __u8);
} tail_src6 SEC(".maps");

static __always_inline struct scratch *scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&mmlf_tail_scratch, &zero);
}

static __always_inline struct ipv6hdr *ip6_of(struct xdp_md *ctx, struct scratch *s)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 off = s->l3_off;
	struct ipv6hdr *ip6;

	if (off > 64)
		return NULL;
	ip6 = data + off;
	if ((void *)(ip6 + 1) > end)
		return NULL;
	return ip6;
}

SEC("xdp")
int mmlf_tail_entry(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct scratch *s = scratch();

	if (!s || (void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IPV6))
		return XDP_PASS;
	s->l3_off = sizeof(*eth);
	s->ifindex = 0;
	bpf_tail_call(ctx, &mmlf_tail_progs, STEP_MATCH);
	return XDP_PASS;
}

SEC("xdp")
int mmlf_tail_match(struct xdp_md *ctx)
{
	struct scratch *s = scratch();
	struct ipv6hdr *ip6 = s ? ip6_of(ctx, s) : NULL;

	if (!ip6 || !bpf_map_lookup_elem(&tail_src6, &ip6->saddr))
		return XDP_PASS;
	bpf_tail_call(ctx, &mmlf_tail_progs, STEP_MARK);
	return XDP_PASS;
}

SEC("xdp")
int mmlf_tail_mark(struct xdp_md *ctx)
{
	struct scratch *s = scratch();
	struct ipv6hdr *ip6 = s ? ip6_of(ctx, s) : NULL;

	if (!ip6)
		return XDP_PASS;
	ip6->priority = MARK >> 4;
	ip6->flow_lbl[0] = (ip6->flow_lbl[0] & 0x0f) | (MARK << 4);
	bpf_tail_call(ctx, &mmlf_tail_progs, STEP_LOOKUP);
	return XDP_PASS;
}

SEC("xdp")
int mmlf_tail_lookup(struct xdp_md *ctx)
{
	struct scratch *s = scratch();
	struct ipv6hdr *ip6 = s ? ip6_of(ctx, s) : NULL;
	struct ethhdr *eth = (void *)(long)ctx->data;
	struct bpf_fib_lookup p = {};

	if (!ip6 || (void *)(eth + 1) > (void *)(long)ctx->data_end || ip6->hop_limit <= 1)
		return XDP_PASS;
	p.family = AF_INET6;
	p.flowinfo = *(__be32 *)ip6 & bpf_htonl(0x0fffffff);
	p.l4_protocol = ip6->nexthdr;
	p.tot_len = bpf_ntohs(ip6->payload_len);
	__builtin_memcpy(p.ipv6_src, &ip6->saddr, sizeof(p.ipv6_src));
	__builtin_memcpy(p.ipv6_dst, &ip6->daddr, sizeof(p.ipv6_dst));
	p.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &p, sizeof(p), 0) != BPF_FIB_LKUP_RET_SUCCESS)
		return XDP_PASS;
	ip6->hop_limit--;
	__builtin_memcpy(eth->h_dest, p.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p.smac, ETH_ALEN);
	s->ifindex = p.ifindex;
	bpf_tail_call(ctx, &mmlf_tail_progs, STEP_FORWARD);
	return XDP_PASS;
}

SEC("xdp")
int mmlf_tail_forward(struct xdp_md *ctx)
{
	struct scratch *s = scratch();

	if (!s || !s->ifindex)
		return XDP_PASS;
	return bpf_redirect(s->ifindex, 0);
}

char LICENSE[] SEC("license") = "GPL";
