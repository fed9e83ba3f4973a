/* SPDX-License-Identifier: GPL-2.0-only */
/* What the MMLF programs share: the scratch slot where a FIB lookup leaves the
 * egress interface for fwd_redirect. */
#ifndef __MMLF_H
#define __MMLF_H

/* Scratch bytes 16..19 (0..15 hold the loader's parse). */
#define MMLF_SCRATCH_IFINDEX 16

#endif
