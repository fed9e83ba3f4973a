// SPDX-License-Identifier: GPL-2.0-only
/* The runtime's test entry: a loader that starts the chain named in
 * hike_entry_map for every packet. `Runtime::test_run_chain` runs packets through
 * it with BPF_PROG_TEST_RUN; it is never attached to an interface. */
#include <hike/loader.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_RDONLY_PROG); /* written by the runtime only (hike/maps.h) */
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} hike_entry_map SEC(".maps");

SEC(HIKE_SEC)
int hike_entry(HIKE_CTX *ctx)
{
	struct hike_state *st = hike_state_get();
	__u32 zero = 0, *chain;

	if (!st)
		return HIKE_VERDICT_ABORT;
	hike_parse(ctx, st);
	chain = bpf_map_lookup_elem(&hike_entry_map, &zero);
	if (!chain || !*chain)
		return HIKE_VERDICT_PASS;
	return hike_chain_start(ctx, st, *chain);
}

char LICENSE[] SEC("license") = "GPL";
