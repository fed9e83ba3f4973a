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

/* The slot of a removed program holds this one until the slot is given to another
 * program: a chain calling it aborts, as it would on an empty slot. Emptying a slot
 * the VM jumps to directly (ids below HIKE_DIRECT_PROGS) makes the kernel wait for
 * an RCU grace period per slot on x86 (about 100 ms each); replacing the program in
 * it does not. */
SEC(HIKE_SEC)
int hike_gone(HIKE_CTX *ctx __attribute__((unused)))
{
	struct hike_state *st = hike_state_get();

	if (!st)
		return HIKE_VERDICT_ABORT;
	return hike_abort(st, HIKE_ABORT_NO_PROG);
}

char LICENSE[] SEC("license") = "GPL";
