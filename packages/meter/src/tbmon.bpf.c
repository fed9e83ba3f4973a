// SPDX-License-Identifier: GPL-2.0-only
/* Token-bucket rate monitors, per IPv6 destination and per (source, destination).
 *
 * A bucket of `burst` tokens refilled at `rate` tokens per second, kept as GCRA
 * (the generic cell rate algorithm): one timestamp per key, the theoretical
 * arrival time (tat) of the next packet. A packet at time t is in profile when
 * tat - t <= (burst - 1) * T, with T = 1e9 / rate ns, and then pushes tat by T.
 * So `burst` back-to-back packets pass, then one every T.
 *
 * Buckets are shared by all CPUs; tat is advanced with compare-and-swap. Time is
 * hike_ktime_ns(), which tests freeze. */
#include <hike/program.h>
#include <hike/time.h>

#define NSEC_PER_SEC 1000000000ULL
#define CAS_TRIES 4

struct tb_cfg {
	__u64 rate;  /* packets per second */
	__u64 burst; /* packets */
};

struct tb_state {
	__u64 tat;
};

struct sd_key {
	struct in6_addr src;
	struct in6_addr dst;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_cfg);
} ip6_dst_tb_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_cfg);
} ip6_sd_tb_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct in6_addr);
	__type(value, struct tb_state);
} ip6_dst_tb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sd_key);
	__type(value, struct tb_state);
} ip6_sd_tb SEC(".maps");

/* 0 in profile, 1 out of profile. */
static __always_inline __u64 tb_take(void *buckets, void *key, void *cfg_map, __u64 def_rate, __u64 def_burst)
{
	__u32 zero = 0;
	struct tb_cfg *cfg = bpf_map_lookup_elem(cfg_map, &zero);
	__u64 rate = cfg && cfg->rate ? cfg->rate : def_rate;
	__u64 burst = cfg && cfg->burst ? cfg->burst : def_burst;
	__u64 now = hike_ktime_ns();
	__u64 t = NSEC_PER_SEC / rate;
	__u64 tolerance = (burst - 1) * t;
	struct tb_state *s = bpf_map_lookup_elem(buckets, key);

	if (!s) {
		struct tb_state fresh = { now + t };

		/* Another CPU may have made it meanwhile: then count on its entry. */
		if (!bpf_map_update_elem(buckets, key, &fresh, BPF_NOEXIST))
			return 0;
		s = bpf_map_lookup_elem(buckets, key);
		if (!s)
			return 0;
	}
	for (int i = 0; i < CAS_TRIES; i++) {
		__u64 old = s->tat;
		__u64 tat = old > now ? old : now;

		if (tat - now > tolerance)
			return 1;
		if (__sync_val_compare_and_swap(&s->tat, old, tat + t) == old)
			return 0;
	}
	/* Lost every race to other CPUs taking tokens: this one is over the rate. */
	return 1;
}

HIKE_PROGRAM(ip6_dst_tbmon)
{
	struct ipv6hdr *ip6 = hike_ip6(ctx);
	struct in6_addr dst;

	if (!ip6)
		return hike_result(0);
	dst = ip6->daddr;
	return hike_result(tb_take(&ip6_dst_tb, &dst, &ip6_dst_tb_cfg, 1000, 64));
}

HIKE_PROGRAM(ip6_sd_tbmon)
{
	struct ipv6hdr *ip6 = hike_ip6(ctx);
	struct sd_key key;

	if (!ip6)
		return hike_result(0);
	key.src = ip6->saddr;
	key.dst = ip6->daddr;
	return hike_result(tb_take(&ip6_sd_tb, &key, &ip6_sd_tb_cfg, 100, 16));
}

char LICENSE[] SEC("license") = "GPL";
