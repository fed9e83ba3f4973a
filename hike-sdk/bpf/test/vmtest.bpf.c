// SPDX-License-Identifier: GPL-2.0-only
/* Programs for the runtime's kernel tests. */
#include <hike/program.h>
#include <hike/loader.h>

/* The chain a test runs: the test writes it before each run. */
HIKE_LOADER_MAP(test_entry_map, __u32, __u32, 1);

SEC(HIKE_SEC)
int test_entry(HIKE_CTX *ctx)
{
	struct hike_state *st = hike_state_get();
	__u32 zero = 0, *chain;

	if (!st)
		return HIKE_VERDICT_ABORT;
	hike_parse(ctx, st);
	chain = bpf_map_lookup_elem(&test_entry_map, &zero);
	if (!chain || !*chain)
		return HIKE_VERDICT_PASS;
	return hike_chain_start(ctx, st, *chain);
}

/* Returns its argument count's worth: r0 = a + 2b + 3c + 4d. */
HIKE_PROGRAM(test_args4, HIKE_ARG(u64, a), HIKE_ARG(u64, b), HIKE_ARG(u64, c), HIKE_ARG(u64, d))
{
	return hike_result(a + 2 * b + 3 * c + 4 * d);
}

HIKE_PROGRAM(test_nop)
{
	return hike_result(0);
}

HIKE_PROGRAM(test_verdict, HIKE_ARG(u32, verdict))
{
	return verdict;
}

char LICENSE[] SEC("license") = "GPL";
