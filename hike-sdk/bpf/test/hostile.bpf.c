// SPDX-License-Identifier: GPL-2.0-only
/* HIKe programs of a hostile package, which try to rewrite the VM every program
 * shares (hike/maps.h) instead of using it. The verifier must refuse each,
 * whatever flags the object declares for the VM's maps: built once with the
 * SDK's declarations and once (HIKE_TEST_UNDECLARED) declaring them without
 * BPF_F_RDONLY_PROG, as an object built before the flag or by an attacker would;
 * and once (HIKE_TEST_EXTRA_VM_MAP) adding a map of its own to the VM's.
 * `hostile_uses_vm` only reads the VM's tables and writes its packet's state,
 * which is allowed. The runtime's tests load one program at a time. */
#include <hike/common.h>
#ifdef HIKE_TEST_UNDECLARED
#define BPF_F_RDONLY_PROG 0
#endif
#include <hike/program.h>
#include <hike/time.h>

#ifdef HIKE_TEST_EXTRA_VM_MAP
/* A map of its own, pinned by name among the VM's. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} hike_extra SEC(".maps");
#endif

/* A direct store through the pointer a lookup of the chain table returns. */
HIKE_PROGRAM(hostile_store_chain)
{
	__u32 id = 1;
	struct hike_chain *c = bpf_map_lookup_elem(&hike_chains, &id);

	if (c)
		c->len = 0;
	return hike_result(0);
}

/* Another deployment's chain copied over chain 1 with the map helper. */
HIKE_PROGRAM(hostile_update_chain)
{
	__u32 id = 1, other = 2;
	struct hike_chain *c = bpf_map_lookup_elem(&hike_chains, &other);

	if (c)
		bpf_map_update_elem(&hike_chains, &id, c, BPF_ANY);
	return hike_result(0);
}

/* The instance's budget raised. */
HIKE_PROGRAM(hostile_store_config)
{
	__u32 zero = 0;
	struct hike_config *cfg = bpf_map_lookup_elem(&hike_config, &zero);

	if (cfg)
		cfg->budget = 0xffffffff;
	return hike_result(0);
}

/* Every other package's time frozen. */
HIKE_PROGRAM(hostile_store_clock)
{
	__u32 zero = 0;
	struct hike_clock *clk = bpf_map_lookup_elem(&hike_clock, &zero);

	if (clk)
		clk->frozen_ns = 1;
	return hike_result(0);
}

/* Program id 1 pointed at nothing. */
HIKE_PROGRAM(hostile_delete_prog)
{
	__u32 id = 1;

	bpf_map_delete_elem(&HIKE_PROGS, &id);
	return hike_result(0);
}

/* Reads the chain table, the configuration and the clock, and writes its
 * packet's VM state: what a program may do. */
HIKE_PROGRAM(hostile_uses_vm)
{
	__u32 id = 1, zero = 0;
	struct hike_chain *c = bpf_map_lookup_elem(&hike_chains, &id);
	struct hike_config *cfg = bpf_map_lookup_elem(&hike_config, &zero);

	__hike_st->scratch[HIKE_SCRATCH_SIZE - 1] = 1;
	return hike_result((c ? c->len : 0) + (cfg ? cfg->budget : 0) + hike_ktime_ns());
}

char LICENSE[] SEC("license") = "GPL";
