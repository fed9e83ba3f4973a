/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Time for HIKe programs that meter, expire or sample:
 *
 *     #include <hike/time.h>
 *     __u64 now = hike_ktime_ns();
 *
 * It is bpf_ktime_get_ns(), unless the instance's clock says otherwise: tests
 * freeze it at a chosen instant (`time-ns` in `ebpkg test` files) or shift it, so
 * token buckets and expiries can be tested without sleeping. The clock is the
 * pinned map vm/hike_clock, created by the first object that uses it (or by the
 * runtime when a test sets it). Production instances leave it real; `hikectl
 * clock` sets it by hand, e.g. to replay a scenario with exact counts.
 * Programs only read it (BPF_F_RDONLY_PROG, as the VM's chain table).
 */
#ifndef HIKE_TIME_H
#define HIKE_TIME_H

#include <hike/common.h>

struct hike_clock {
	__u64 frozen_ns; /* when not 0, the time is this */
	__s64 offset_ns; /* otherwise added to bpf_ktime_get_ns() */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hike_clock);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} hike_clock SEC(".maps");

static __always_inline __u64 hike_ktime_ns(void)
{
	__u32 zero = 0;
	struct hike_clock *c = bpf_map_lookup_elem(&hike_clock, &zero);

	if (c && c->frozen_ns)
		return c->frozen_ns;
	return bpf_ktime_get_ns() + (c ? c->offset_ns : 0);
}

#endif /* HIKE_TIME_H */
