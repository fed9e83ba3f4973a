/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Writing a chain loader: an XDP (or TC) program attached to an interface that
 * parses each packet once, picks a chain and starts the VM.
 *
 *     #include <hike/loader.h>
 *
 *     HIKE_LOADER_MAP(ip6_sc_map, __u32, struct { __u32 chain; }, 1);
 *
 *     SEC("xdp")
 *     int ip6_sc(struct xdp_md *ctx)
 *     {
 *             struct hike_state *st = hike_state_get();
 *             struct hike_pkt_info *info;
 *             __u32 zero = 0;
 *             ...
 *             if (!st)
 *                     return XDP_PASS;
 *             info = hike_parse(ctx, st);
 *             if (info->l3_proto != ETH_P_IPV6) return XDP_PASS;
 *             v = bpf_map_lookup_elem(&ip6_sc_map, &zero);
 *             if (!v || !v->chain) return XDP_PASS;
 *             return hike_chain_start(ctx, st, v->chain);
 *     }
 *
 * hike_parse() records the offsets of the L2, L3 and L4 headers in the scratch
 * bank (struct hike_pkt_info at offset 0), so later programs do not parse again.
 */
#ifndef HIKE_LOADER_H
#define HIKE_LOADER_H

#include <hike/vm.h>
#include <hike/packet.h>

/* Chain ids to the native programs of chains (docs/NATIVE.md), per hook like the
 * program arrays. Only loaders start chains, so only they declare it. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, HIKE_MAX_CHAINS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} HIKE_NATIVE_CHAINS SEC(".maps");

/* Chain ids 1 .. HIKE_DIRECT_CHAINS - 1 reach their native program with a
 * constant-key tail call (a direct jump the JIT patches when the slot changes),
 * the others with an indirect one, as programs are dispatched (vm.h). An empty
 * slot makes either fall through. */
#ifndef HIKE_DIRECT_CHAINS
#define HIKE_DIRECT_CHAINS 32
#endif
#if HIKE_DIRECT_CHAINS < 1 || HIKE_DIRECT_CHAINS > 32
#error "HIKE_DIRECT_CHAINS must be between 1 (no direct dispatch) and 32 (ids 1..31)"
#endif
#define __HIKE_NATIVE_TAIL(n) __HIKE_TAIL_IN(HIKE_NATIVE_CHAINS, HIKE_DIRECT_CHAINS, n)

__hike_inline void hike_dispatch_native(HIKE_CTX *ctx, __u32 id)
{
#if HIKE_DIRECT_CHAINS > 1
	switch (id) {
	__HIKE_NATIVE_TAIL(1) __HIKE_NATIVE_TAIL(2) __HIKE_NATIVE_TAIL(3) __HIKE_NATIVE_TAIL(4)
	__HIKE_NATIVE_TAIL(5) __HIKE_NATIVE_TAIL(6) __HIKE_NATIVE_TAIL(7) __HIKE_NATIVE_TAIL(8)
	__HIKE_NATIVE_TAIL(9) __HIKE_NATIVE_TAIL(10) __HIKE_NATIVE_TAIL(11) __HIKE_NATIVE_TAIL(12)
	__HIKE_NATIVE_TAIL(13) __HIKE_NATIVE_TAIL(14) __HIKE_NATIVE_TAIL(15) __HIKE_NATIVE_TAIL(16)
	__HIKE_NATIVE_TAIL(17) __HIKE_NATIVE_TAIL(18) __HIKE_NATIVE_TAIL(19) __HIKE_NATIVE_TAIL(20)
	__HIKE_NATIVE_TAIL(21) __HIKE_NATIVE_TAIL(22) __HIKE_NATIVE_TAIL(23) __HIKE_NATIVE_TAIL(24)
	__HIKE_NATIVE_TAIL(25) __HIKE_NATIVE_TAIL(26) __HIKE_NATIVE_TAIL(27) __HIKE_NATIVE_TAIL(28)
	__HIKE_NATIVE_TAIL(29) __HIKE_NATIVE_TAIL(30) __HIKE_NATIVE_TAIL(31)
	default:
		break;
	}
#endif
	bpf_tail_call(ctx, &HIKE_NATIVE_CHAINS, id);
}

/* IPv6 extension headers walked to find the transport header. */
#define HIKE_MAX_EXT_HDRS 8
#define HIKE_MAX_VLANS 2

/* A loader configuration map: pinned per loader, written by the runtime before the
 * loader is attached. */
#define HIKE_LOADER_MAP(name, key_type, value_type, entries) \
	struct {                                              \
		__uint(type, BPF_MAP_TYPE_ARRAY);             \
		__uint(max_entries, entries);                 \
		__type(key, key_type);                        \
		__type(value, value_type);                    \
	} name SEC(".maps")

struct __hike_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* Parses Ethernet, up to two VLAN tags, IPv4 or IPv6 (with extension headers)
 * and records offsets in the scratch bank. Never fails: what is not found is
 * HIKE_NO_OFF, and HIKE_PKT_TRUNCATED says a header was cut short. */
__hike_inline struct hike_pkt_info *hike_parse(HIKE_CTX *ctx, struct hike_state *st)
{
	struct hike_pkt_info *info = hike_pkt_info(st);
	void *data = hike_pkt_data(ctx);
	void *end = hike_pkt_end(ctx);
	struct ethhdr *eth = data;
	__u32 off = sizeof(*eth);
	__u16 proto;

	info->l2_off = 0;
	info->l3_off = HIKE_NO_OFF;
	info->l4_off = HIKE_NO_OFF;
	info->l3_proto = 0;
	info->l4_proto = 0;
	info->vlans = 0;
	info->flags = 0;
	info->reserved = 0;

	if ((void *)(eth + 1) > end) {
		info->flags = HIKE_PKT_TRUNCATED;
		return info;
	}
	proto = bpf_ntohs(eth->h_proto);
#pragma unroll
	for (int i = 0; i < HIKE_MAX_VLANS; i++) {
		struct __hike_vlan_hdr *vh;

		if (proto != ETH_P_8021Q && proto != ETH_P_8021AD)
			break;
		vh = data + off;
		if ((void *)(vh + 1) > end) {
			info->flags = HIKE_PKT_TRUNCATED;
			return info;
		}
		proto = bpf_ntohs(vh->proto);
		off += sizeof(*vh);
		info->vlans++;
	}
	info->l3_proto = proto;

	if (proto == ETH_P_IP) {
		struct iphdr *ip = data + off;

		if ((void *)(ip + 1) > end || ip->ihl < 5) {
			info->flags = HIKE_PKT_TRUNCATED;
			return info;
		}
		info->l3_off = off;
		info->l4_proto = ip->protocol;
		/* Only the first fragment carries the transport header. */
		if (!(ip->frag_off & bpf_htons(0x1fff)) && data + off + ip->ihl * 4 <= end)
			info->l4_off = off + ip->ihl * 4;
		return info;
	}
	if (proto == ETH_P_IPV6) {
		struct ipv6hdr *ip6 = data + off;
		__u8 next;

		if ((void *)(ip6 + 1) > end) {
			info->flags = HIKE_PKT_TRUNCATED;
			return info;
		}
		info->l3_off = off;
		next = ip6->nexthdr;
		off += sizeof(*ip6);
		for (int i = 0; i < HIKE_MAX_EXT_HDRS; i++) {
			__u8 *hdr;

			if (next != IPPROTO_HOPOPTS && next != IPPROTO_ROUTING && next != IPPROTO_FRAGMENT &&
			    next != IPPROTO_DSTOPTS)
				break;
			hdr = data + (off & HIKE_PKT_MAX_OFF);
			if ((void *)(hdr + 2) > end) {
				info->flags = HIKE_PKT_TRUNCATED;
				info->l4_proto = next;
				return info;
			}
			if (next == IPPROTO_FRAGMENT) {
				__u16 frag_off;

				if ((void *)(hdr + 8) > end) {
					info->flags = HIKE_PKT_TRUNCATED;
					info->l4_proto = next;
					return info;
				}
				/* A non-first fragment has no transport header. */
				frag_off = (hdr[2] << 8 | hdr[3]) & 0xfff8;
				next = hdr[0];
				off += 8;
				if (frag_off) {
					info->l4_proto = next;
					return info;
				}
				continue;
			}
			next = hdr[0];
			off += (hdr[1] + 1) * 8;
		}
		info->l4_proto = next;
		if (data + (off & HIKE_PKT_MAX_OFF) <= end)
			info->l4_off = off;
		else
			info->flags = HIKE_PKT_TRUNCATED;
		return info;
	}
	return info;
}

/* Starts `chain_id` for this packet: fresh scratch, the configured budget, the
 * run counted; then its native program if it has one (docs/NATIVE.md), which
 * sets up only what it uses, or the VM with fresh registers and frame. Returns
 * the verdict when the chain ends without a tail call. */
__hike_inline int hike_chain_start(HIKE_CTX *ctx, struct hike_state *st, __u32 chain_id)
{
	struct hike_config *cfg;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&hike_config, &zero);
	st->budget = cfg ? cfg->budget : HIKE_DEFAULT_BUDGET;
	st->pc = 0;
	st->chain = chain_id;
	st->depth = 0;
	st->calls = 0;
	/* In 8-byte stores: through a byte pointer clang writes byte by byte. */
#pragma unroll
	for (int i = HIKE_PKT_INFO_SIZE / 8; i < HIKE_SCRATCH_SIZE / 8; i++)
		((__u64 *)st->scratch)[i] = 0;
	st->chain_runs[chain_id & (HIKE_MAX_CHAINS - 1)]++;
	hike_dispatch_native(ctx, chain_id);
	hike_vm_reset(st);
	return hike_vm_run(ctx, st);
}

#endif /* HIKE_LOADER_H */
