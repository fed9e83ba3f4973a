/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* What every HIKe object includes first: the kernel's types (vmlinux.h, generated
 * from the running kernel's BTF by the build) and libbpf's BPF-side helpers. */
#ifndef HIKE_COMMON_H
#define HIKE_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#endif /* HIKE_COMMON_H */
