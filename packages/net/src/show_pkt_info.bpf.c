// SPDX-License-Identifier: GPL-2.0-only
/* show_pkt_info(): what the loader found in the packet, on the trace pipe. For
 * debugging chains: `cat /sys/kernel/tracing/trace_pipe`. */
#include <hike/program.h>

HIKE_PROGRAM(show_pkt_info)
{
	struct hike_pkt_info *info = hike_info();
	__u64 len = hike_pkt_end(ctx) - hike_pkt_data(ctx);

	bpf_printk("hike: len %llu l3 %x at %u", len, info->l3_proto, info->l3_off);
	bpf_printk("hike: l4 %u at %u vlans %u", info->l4_proto, info->l4_off, info->vlans);
	return hike_result(len);
}

char LICENSE[] SEC("license") = "GPL";
