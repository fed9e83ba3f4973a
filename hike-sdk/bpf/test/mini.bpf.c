// SPDX-License-Identifier: GPL-2.0-only
/* The two HIKe programs deployment tests need, alone in their object: every
 * registration verifies each program of an object, and the crash tests register
 * hundreds of times. */
#include <hike/program.h>

/* Does nothing and continues. */
HIKE_PROGRAM(test_nop)
{
	return hike_result(0);
}

/* Ends the packet with the verdict it is given. */
HIKE_PROGRAM(test_verdict, HIKE_ARG(u32, verdict))
{
	return verdict;
}

char LICENSE[] SEC("license") = "GPL";
