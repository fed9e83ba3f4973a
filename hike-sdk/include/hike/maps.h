/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The VM's maps. Every program and loader declares them identically and libbpf
 * reuses the instance pinned under <root>/vm (LIBBPF_PIN_BY_NAME with the object's
 * pin_root_path), so all of them share one VM. BTF-defined maps only.
 *
 * Every program of every package gets these maps, so the ones that decide what
 * runs (the chain table, the configuration) are created BPF_F_RDONLY_PROG: the
 * verifier refuses any program that writes them ("write into map forbidden"),
 * and only the runtime writes them, from user space. The program arrays need no
 * flag: programs can only tail-call through them. hike_state stays writable: it
 * is the packet's own VM state. What the kernel enforces is the flag of the
 * pinned map, whatever an object declares (the runtime loads every object with
 * the pinned maps' flags).
 */
#ifndef HIKE_MAPS_H
#define HIKE_MAPS_H

#include <hike/common.h>
#include <hike/defs.h>

#ifdef HIKE_HOOK_TC
#define HIKE_CTX struct __sk_buff
#define HIKE_PROGS hike_progs_tc
#define HIKE_NATIVE_CHAINS hike_native_tc
#define HIKE_SEC "tc"
#define HIKE_VERDICT_PASS 0  /* TC_ACT_OK */
#define HIKE_VERDICT_ABORT 2 /* TC_ACT_SHOT */
#else
#define HIKE_CTX struct xdp_md
#define HIKE_PROGS hike_progs_xdp
#define HIKE_NATIVE_CHAINS hike_native_xdp
#define HIKE_SEC "xdp"
#define HIKE_VERDICT_PASS XDP_PASS
#define HIKE_VERDICT_ABORT XDP_ABORTED
#endif

/* Program ids to programs. One array per hook (hike_progs_xdp, hike_progs_tc): a
 * tail call only reaches programs of the caller's type, and an object only
 * declares the array of its own hook. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, HIKE_MAX_PROGS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} HIKE_PROGS SEC(".maps");

/* Chain ids to bytecode. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_RDONLY_PROG);
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
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hike_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} hike_config SEC(".maps");

#endif /* HIKE_MAPS_H */
