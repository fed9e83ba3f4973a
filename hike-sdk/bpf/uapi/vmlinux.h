/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The runtime's own objects (the VM continuation, the test entry, and the
 * programs its tests and benchmarks use) touch only UAPI structures, whose
 * layout does not depend on the kernel: they are built against the kernel's
 * UAPI headers instead of a vmlinux.h generated from the build machine's BTF,
 * so building ebpkg needs neither BTF nor bpftool. Packages are still built
 * CO-RE against the running kernel's vmlinux.h by ebpkg.
 */
#ifndef HIKE_UAPI_VMLINUX_H
#define HIKE_UAPI_VMLINUX_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/icmpv6.h>
#include <linux/pkt_cls.h>

/* The kernel's own names for the fixed-width types, as vmlinux.h has them. */
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s8 s8;
typedef __s16 s16;
typedef __s32 s32;
typedef __s64 s64;

#endif
