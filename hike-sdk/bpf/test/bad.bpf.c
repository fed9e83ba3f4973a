// SPDX-License-Identifier: GPL-2.0-only
/* A HIKe program the verifier must reject: it reads the packet without checking
 * its length. The runtime's tests check that the rejection names this line. */
#include <hike/program.h>

HIKE_PROGRAM(test_unchecked_read)
{
	__u8 *data = hike_pkt_data(ctx);

	return hike_result(data[40]); /* no bounds check: rejected */
}

char LICENSE[] SEC("license") = "GPL";
