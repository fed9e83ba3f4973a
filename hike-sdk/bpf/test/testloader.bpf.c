// SPDX-License-Identifier: GPL-2.0-only
/* A loader for the runtime's tests: every packet runs the chain in slot 0 of
 * test_cfg (none when it is 0: the packet passes). */
#include <hike/loader.h>

struct test_cfg_value {
	__u32 chain;
};

HIKE_LOADER_MAP(test_cfg, __u32, struct test_cfg_value, 1);

SEC(HIKE_SEC)
int test_loader(HIKE_CTX *ctx)
{
	struct hike_state *st = hike_state_get();
	struct test_cfg_value *v;
	__u32 zero = 0;

	if (!st)
		return HIKE_VERDICT_PASS;
	hike_parse(ctx, st);
	v = bpf_map_lookup_elem(&test_cfg, &zero);
	if (!v || !v->chain)
		return HIKE_VERDICT_PASS;
	return hike_chain_start(ctx, st, v->chain);
}

char LICENSE[] SEC("license") = "GPL";
