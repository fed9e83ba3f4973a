// SPDX-License-Identifier: GPL-2.0-only
/* A HIKe program for the runtime's clock tests: returns hike_ktime_ns(). */
#include <hike/program.h>
#include <hike/time.h>

HIKE_PROGRAM(test_now)
{
	return hike_result(hike_ktime_ns());
}

char LICENSE[] SEC("license") = "GPL";
