/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Reaching packet headers from a HIKe program without parsing again: the loader
 * recorded where they are (hike_info()), and these return a pointer the verifier
 * accepts, or NULL when the header is absent or cut short.
 *
 *     struct ipv6hdr *ip6 = hike_ip6(ctx);               // NULL unless IPv6 and complete
 *     struct udphdr *udp = hike_l4(ctx, struct udphdr);  // NULL unless the L4 header is there
 *
 * Also: the ethertypes, and the incremental checksum update of RFC 1624 for
 * programs that rewrite IPv4 headers.
 */
#ifndef HIKE_PACKET_H
#define HIKE_PACKET_H

#include <hike/vm.h>
#include <bpf/bpf_endian.h>

#ifndef ETH_ALEN
#define ETH_ALEN 6
#endif
#ifndef ETH_P_8021Q
#define ETH_P_8021Q 0x8100
#endif
#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88a8
#endif
#ifndef ETH_P_IP
#define ETH_P_IP 0x0800
#endif
#ifndef ETH_P_IPV6
#define ETH_P_IPV6 0x86dd
#endif

/* IPv6 extension headers (RFC 8200 §4, RFC 7045), by their UAPI names.
 *
 * hike_parse() steps over hop-by-hop options, routing, fragment and destination
 * options headers: they share one length format. It stops at any other next
 * header, extension or not (AH's length is counted differently, ESP hides what
 * follows), and records that one as l4_proto, with l4_off pointing at it.
 *
 * The kernel's UAPI headers define these as macros (<linux/in6.h>), which vmlinux.h
 * does not carry: they are defined here when missing. IPPROTO_ESP (50) and
 * IPPROTO_AH (51) need nothing: both vmlinux.h and <linux/in.h> have them in the
 * kernel's IPPROTO enum. */
#ifndef IPPROTO_HOPOPTS
#define IPPROTO_HOPOPTS 0 /* hop-by-hop options */
#endif
#ifndef IPPROTO_ROUTING
#define IPPROTO_ROUTING 43 /* routing */
#endif
#ifndef IPPROTO_FRAGMENT
#define IPPROTO_FRAGMENT 44 /* fragment */
#endif
#ifndef IPPROTO_NONE
#define IPPROTO_NONE 59 /* no next header: nothing follows */
#endif
#ifndef IPPROTO_DSTOPTS
#define IPPROTO_DSTOPTS 60 /* destination options */
#endif
#ifndef IPPROTO_MH
#define IPPROTO_MH 135 /* mobility (RFC 6275) */
#endif

/* `size` bytes at packet offset `off`, or NULL. Offsets past HIKE_PKT_MAX_OFF
 * (HIKE_NO_OFF among them) are refused before any pointer is made, which also
 * bounds the offset for the verifier. */
__hike_inline void *hike_pkt_ptr(HIKE_CTX *ctx, __u32 off, __u32 size)
{
	void *data = hike_pkt_data(ctx);
	void *end = hike_pkt_end(ctx);
	void *p;

	if (off > HIKE_PKT_MAX_OFF)
		return NULL;
	p = data + off;
	if (p + size > end)
		return NULL;
	return p;
}

/* Inside a HIKE_PROGRAM body, given its `ctx`: the headers the loader found,
 * typed. hike_l4 does not check the protocol: compare hike_info()->l4_proto first. */
#define hike_l2(ctx, type) ((type *)hike_pkt_ptr((ctx), hike_info()->l2_off, sizeof(type)))
#define hike_l4(ctx, type) ((type *)hike_pkt_ptr((ctx), hike_info()->l4_off, sizeof(type)))

/* The IPv6 header, or NULL when the packet is not IPv6 (or is truncated). */
#define hike_ip6(ctx) ((struct ipv6hdr *)(hike_info()->l3_proto == ETH_P_IPV6                      \
					       ? hike_pkt_ptr((ctx), hike_info()->l3_off, sizeof(struct ipv6hdr)) \
					       : NULL))
/* The IPv4 header, or NULL when the packet is not IPv4 (or is truncated). */
#define hike_ip4(ctx) ((struct iphdr *)(hike_info()->l3_proto == ETH_P_IP                          \
					     ? hike_pkt_ptr((ctx), hike_info()->l3_off, sizeof(struct iphdr)) \
					     : NULL))

/* Updates a 16-bit one's complement checksum for a 16-bit field changing from
 * `old` to `new` (RFC 1624, eqn. 3). */
__hike_inline void hike_csum_replace2(__sum16 *sum, __be16 old, __be16 new)
{
	__u32 c = (__u16)~*sum;

	c += (__u16)~old;
	c += new;
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	*sum = (__sum16)~c;
}

#endif /* HIKE_PACKET_H */
