// SPDX-License-Identifier: GPL-2.0-only
/* monitor(event): per-CPU event counters a chain bumps at its decision points;
 * read them with `ebpkg status --maps` or bpftool (sum the CPUs). */
#include <hike/program.h>

#define MONITOR_EVENTS 1024

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MONITOR_EVENTS);
	__type(key, __u64);
	__type(value, __u64);
} monitor_events SEC(".maps");

HIKE_PROGRAM(monitor, HIKE_ARG(u64, event))
{
	__u64 one = 1, *n = bpf_map_lookup_elem(&monitor_events, &event);

	if (n) {
		/* Per-CPU values: no other CPU writes this one. */
		*n += 1;
		return hike_result(*n);
	}
	/* A new event; when the table is full the event is not counted. */
	if (bpf_map_update_elem(&monitor_events, &event, &one, BPF_NOEXIST))
		return hike_result(0);
	return hike_result(1);
}

char LICENSE[] SEC("license") = "GPL";
