// SPDX-License-Identifier: GPL-2.0-only
/* HIKe programs for the runtime's kernel tests. */
#include <hike/program.h>

/* r0 = a + 2b + 3c + 4d: shows each argument arrived in its place. */
HIKE_PROGRAM(test_args4, HIKE_ARG(u64, a), HIKE_ARG(u64, b), HIKE_ARG(u64, c), HIKE_ARG(u64, d))
{
	return hike_result(a + 2 * b + 3 * c + 4 * d);
}

HIKE_PROGRAM(test_args0)
{
	return hike_result(42);
}

HIKE_PROGRAM(test_args1, HIKE_ARG(u32, a))
{
	return hike_result(a + 1);
}

HIKE_PROGRAM(test_args2, HIKE_ARG(u64, a), HIKE_ARG(u64, b))
{
	return hike_result(a * b);
}

HIKE_PROGRAM(test_args3, HIKE_ARG(u64, a), HIKE_ARG(u64, b), HIKE_ARG(u64, c))
{
	return hike_result(a - b - c);
}

/* Does nothing and continues: the unit of per-call overhead. */
HIKE_PROGRAM(test_nop)
{
	return hike_result(0);
}

/* Ends the packet with the verdict it is given. */
HIKE_PROGRAM(test_verdict, HIKE_ARG(u32, verdict))
{
	return verdict;
}

/* Writes `value` at scratch offset `off` (8 bytes) and returns what was there. */
HIKE_PROGRAM(test_scratch_swap, HIKE_ARG(u32, off), HIKE_ARG(u64, value))
{
	__u64 *slot, old;

	if (off > HIKE_SCRATCH_SIZE - 8)
		return hike_result(~0ULL);
	slot = (__u64 *)&hike_scratch()[off & (HIKE_SCRATCH_SIZE - 1)];
	old = *slot;
	*slot = value;
	return hike_result(old);
}

/* Returns the u8 result type's truncation of its argument. */
HIKE_PROGRAM_RET(u8, test_ret_u8, HIKE_ARG(u64, v))
{
	return hike_result(v);
}


/* Returns the L4 offset the loader's parser recorded (0xffff when none). */
HIKE_PROGRAM(test_l4_off)
{
	return hike_result(hike_info()->l4_off);
}

char LICENSE[] SEC("license") = "GPL";
