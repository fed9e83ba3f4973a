/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The VM's maps. Every program and loader declares them identically and libbpf
 * reuses the instance pinned under <root>/vm (LIBBPF_PIN_BY_NAME with the object's
 * pin_root_path), so all of them share one VM. BTF-defined maps only.
 */
#ifndef __HIKE_MAPS_H
#define __HIKE_MAPS_H

#include <hike/common.h>
#include <hike/defs.h>

/* Program ids to programs, one array per hook: a tail call only reaches programs
 * of the caller's type. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, HIKE_MAX_PROGS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} hike_progs_xdp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, HIKE_MAX_PROGS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} hike_progs_tc SEC(".maps");

/* Chain ids to bytecode. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HIKE_MAX_CHAINS);
	__type(key, __u32);
	__type(value, struct hike_chain);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} hike_chains SEC(".maps");

/* The packet's VM state and the counters, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hike_state);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} hike_state SEC(".maps");

/* Instance configuration, written by the runtime at init. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hike_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} hike_config SEC(".maps");

#endif /* __HIKE_MAPS_H */
