// SPDX-License-Identifier: GPL-2.0-only
/* The VM continuation, registered at program id 0: when a chain runs more than
 * HIKE_RESUME_STEPS instructions between two program calls, the running program
 * tail-calls this one, which goes on interpreting. */
/* loader.h rather than vm.h: it also declares the hook's native chain slots
 * (hike_native_<hook>), so loading the continuation creates every map of the
 * instance (the test entry, which declares them too, is loaded only by test runs). */
#include <hike/loader.h>

SEC(HIKE_SEC)
int hike_cont(HIKE_CTX *ctx)
{
	struct hike_state *st = hike_state_get();

	if (!st)
		return HIKE_VERDICT_ABORT;
	return hike_vm_run(ctx, st);
}

char LICENSE[] SEC("license") = "GPL";
