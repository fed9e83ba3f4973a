// SPDX-License-Identifier: GPL-2.0-only
/* ip6_alt_mark(): the Alternate-Marking method for IPv6 (RFC 9343). The option
 * travels in the Hop-by-Hop Options header:
 *
 *     option type 0x12, length 4, then 32 bits:
 *     | FlowMonID (20) | L (1) | D (1) | reserved (10) |
 *
 * L is the loss color, alternating per marking period; D marks packets for delay
 * measurement. Counting packets per (flow, color) on two nodes gives the loss
 * between them for each period. */
#include <hike/program.h>

#define IPPROTO_HOPOPTS_ 0
#define OPT_PAD1 0
#define OPT_ALT_MARK 0x12
#define ALT_MARK_LEN 4
/* Options scanned: enough for padding plus a few others before the mark. */
#define MAX_OPTS 8
/* The longest Hop-by-Hop header scanned, bytes. */
#define MAX_HBH_LEN 256

struct flow_color {
	__u32 flow;
	__u32 color;
};

struct counter {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_color);
	__type(value, struct counter);
} alt_mark_counters SEC(".maps");

HIKE_PROGRAM(ip6_alt_mark)
{
	struct ipv6hdr *ip6 = hike_ip6(ctx);
	__u32 hbh_off, len, off;
	__u8 *hbh;

	if (!ip6 || ip6->nexthdr != IPPROTO_HOPOPTS_)
		return hike_result(0);
	hbh_off = hike_info()->l3_off + sizeof(struct ipv6hdr);
	hbh = hike_pkt_ptr(ctx, hbh_off, 2);
	if (!hbh)
		return hike_result(0);
	len = ((__u32)hbh[1] + 1) * 8;
	/* A header longer than the packet is malformed: ignore the packet. */
	if (len > MAX_HBH_LEN || hbh_off + len > (__u64)(hike_pkt_end(ctx) - hike_pkt_data(ctx)))
		return hike_result(0);
	off = 2;
	for (int i = 0; i < MAX_OPTS; i++) {
		__u8 *opt;

		if (off + 2 > len)
			break;
		opt = hike_pkt_ptr(ctx, hbh_off + off, 2);
		if (!opt)
			break;
		if (opt[0] == OPT_PAD1) {
			off += 1;
			continue;
		}
		if (opt[0] == OPT_ALT_MARK && opt[1] == ALT_MARK_LEN && off + 2 + ALT_MARK_LEN <= len) {
			__u8 *d = hike_pkt_ptr(ctx, hbh_off + off + 2, ALT_MARK_LEN);
			__u32 v;
			struct flow_color key;
			struct counter *c;
			__u64 bytes = hike_pkt_end(ctx) - hike_pkt_data(ctx);

			if (!d)
				break;
			v = (__u32)d[0] << 24 | (__u32)d[1] << 16 | (__u32)d[2] << 8 | d[3];
			key.flow = v >> 12;
			key.color = (v >> 11) & 1;
			c = bpf_map_lookup_elem(&alt_mark_counters, &key);
			if (c) {
				c->packets += 1;
				c->bytes += bytes;
			} else {
				struct counter fresh = { 1, bytes };

				bpf_map_update_elem(&alt_mark_counters, &key, &fresh, BPF_ANY);
			}
			return hike_result(1ULL << 32 | (__u64)key.flow << 2 | key.color << 1 | ((v >> 10) & 1));
		}
		off += 2 + opt[1];
	}
	return hike_result(0);
}

char LICENSE[] SEC("license") = "GPL";
