// SPDX-License-Identifier: GPL-2.0-only
/* l2_redirect(ifindex): out of another interface, as it is (e.g. to a collector
 * of samples). */
#include <hike/program.h>

HIKE_PROGRAM(l2_redirect, HIKE_ARG(u32, ifindex))
{
	return bpf_redirect(ifindex, 0);
}

char LICENSE[] SEC("license") = "GPL";
