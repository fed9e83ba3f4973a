// SPDX-License-Identifier: GPL-2.0-only
/* The VM continuation, registered at program id 0: when a chain runs more than
 * HIKE_RESUME_STEPS instructions between two program calls, the running program
 * tail-calls this one, which goes on interpreting. */
#include <hike/vm.h>

SEC(HIKE_SEC)
int hike_cont(HIKE_CTX *ctx)
{
	struct hike_state *st = hike_state_get();

	if (!st)
		return HIKE_VERDICT_ABORT;
	return hike_vm_run(ctx, st);
}

char LICENSE[] SEC("license") = "GPL";
