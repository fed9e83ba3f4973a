/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * HIKe VM: constants and data layouts shared by the VM, programs, loaders and
 * user space. docs/BYTECODE.md is the normative description; the Rust crates
 * hike-bytecode and hike-runtime mirror these values and a test compares them
 * with the BTF of a compiled object.
 */
#ifndef HIKE_DEFS_H
#define HIKE_DEFS_H

/* Layout version of the pinned maps. A root created with another value is refused. */
#define HIKE_ABI_VERSION 2
#define HIKE_MAGIC 0x454b4948 /* "HIKE" */

/* ---- limits --------------------------------------------------------------- */
#define HIKE_NREGS 16          /* r0..r10 used; 16 so a 4-bit register index is always in bounds */
#define HIKE_REG_FP 10         /* r10: frame pointer, read-only, holds HIKE_FRAME_SIZE */
#define HIKE_MAX_INSNS 256     /* instructions per chain (power of two) */
#define HIKE_MAX_CHAINS 1024   /* chain ids 0..1023; 0 is never allocated (power of two) */
#define HIKE_MAX_PROGS 1024    /* program ids 0..1023; 0 is the VM continuation (power of two) */
#define HIKE_MAX_DEPTH 8       /* chain frames: the top chain plus 7 nested chain calls */
#define HIKE_FRAME_SIZE 64     /* stack bytes of one chain frame (power of two) */
#define HIKE_SCRATCH_SIZE 64   /* per-CPU scratch shared by the programs of one packet */
#define HIKE_MAX_TAIL_CALLS 33 /* tail calls per packet (program calls + continuations): the kernel's limit */
#define HIKE_DEFAULT_BUDGET 2048
#define HIKE_PKT_MAX_OFF 0x3fff   /* highest packet offset the VM addresses; leaves the verifier room for +size */

/* Instructions interpreted per run of a program before the VM hands over to the
 * continuation program (id 0) with a tail call. Bounds the verifier's work. */
#ifndef HIKE_RESUME_STEPS
#define HIKE_RESUME_STEPS 32
#endif

/* Program ids 1 .. HIKE_DIRECT_PROGS - 1 are dispatched with constant-key tail
 * calls, which the JIT turns into direct jumps (no retpoline); every other id uses
 * an indirect tail call. 1 turns direct dispatch off; 32 (the default) is the most:
 * each direct id costs a few instructions in every program. */
#ifndef HIKE_DIRECT_PROGS
#define HIKE_DIRECT_PROGS 32
#endif
#if HIKE_DIRECT_PROGS < 1 || HIKE_DIRECT_PROGS > 32
#error "HIKE_DIRECT_PROGS must be between 1 (no direct dispatch) and 32 (ids 1..31)"
#endif

/* ---- instruction encoding (the eBPF instruction format) ------------------- */
struct hike_insn {
	__u8 code;
	__u8 dst_reg : 4;
	__u8 src_reg : 4;
	__s16 off;
	__s32 imm;
} __attribute__((aligned(8))); /* so the VM fetches an instruction in one 8-byte load */

/* classes */
#define HIKE_CLASS(code) ((code) & 0x07)
#define HIKE_LD 0x00
#define HIKE_LDX 0x01
#define HIKE_STX 0x03
#define HIKE_ALU 0x04 /* only END (byte swaps) */
#define HIKE_JMP 0x05
#define HIKE_ALU64 0x07

/* operand source */
#define HIKE_SRC(code) ((code) & 0x08)
#define HIKE_K 0x00
#define HIKE_X 0x08

/* ALU64 operations */
#define HIKE_OP(code) ((code) & 0xf0)
#define HIKE_ADD 0x00
#define HIKE_SUB 0x10
#define HIKE_MUL 0x20
#define HIKE_DIV 0x30
#define HIKE_OR 0x40
#define HIKE_AND 0x50
#define HIKE_LSH 0x60
#define HIKE_RSH 0x70
#define HIKE_NEG 0x80
#define HIKE_MOD 0x90
#define HIKE_XOR 0xa0
#define HIKE_MOV 0xb0
#define HIKE_ARSH 0xc0
#define HIKE_END 0xd0
#define HIKE_TO_LE 0x00 /* with HIKE_ALU: zero-extend the low imm bits (host is little endian) */
#define HIKE_TO_BE 0x08 /* with HIKE_ALU: byte-swap the low imm bits */
/* HIKE_ALU64 | HIKE_END: unconditional byte swap of the low imm bits */

/* jumps */
#define HIKE_JA 0x00
#define HIKE_JEQ 0x10
#define HIKE_JGT 0x20
#define HIKE_JGE 0x30
#define HIKE_JSET 0x40
#define HIKE_JNE 0x50
#define HIKE_JSGT 0x60
#define HIKE_JSGE 0x70
#define HIKE_CALL 0x80
#define HIKE_EXIT 0x90
#define HIKE_JLT 0xa0
#define HIKE_JLE 0xb0
#define HIKE_JSLT 0xc0
#define HIKE_JSLE 0xd0

/* call kinds (src_reg of a call); off holds the number of arguments */
#define HIKE_CALL_PROG 0
#define HIKE_CALL_CHAIN 1

/* loads and stores */
#define HIKE_SIZE(code) ((code) & 0x18)
#define HIKE_W 0x00
#define HIKE_H 0x08
#define HIKE_B 0x10
#define HIKE_DW 0x18
#define HIKE_MEM 0x60
#define HIKE_IMM 0x00 /* HIKE_LD | HIKE_IMM | HIKE_DW: 64-bit immediate in two slots */

/* memory banks (imm of a load or store) */
#define HIKE_BANK_STACK 0
#define HIKE_BANK_PACKET 1
#define HIKE_BANK_SCRATCH 2

/* ---- why a packet was aborted --------------------------------------------- */
enum hike_abort {
	HIKE_ABORT_NONE = 0,
	HIKE_ABORT_BUDGET = 1,     /* executed-instruction budget exhausted */
	HIKE_ABORT_BAD_INSN = 2,   /* undefined opcode (only reachable if a chain bypassed validation) */
	HIKE_ABORT_BAD_PC = 3,     /* pc outside the chain */
	HIKE_ABORT_BAD_MEM = 4,    /* load or store outside its bank */
	HIKE_ABORT_NO_PROG = 5,    /* tail call to an empty program slot */
	HIKE_ABORT_CALL_LIMIT = 6, /* more than HIKE_MAX_TAIL_CALLS tail calls */
	HIKE_ABORT_DEPTH = 7,      /* chain call deeper than HIKE_MAX_DEPTH */
	HIKE_ABORT_NO_CHAIN = 8,   /* chain id not installed */
	HIKE_ABORT_NO_STATE = 9,   /* per-CPU state missing (cannot happen with an initialized root) */
	HIKE_ABORT_MAX = 16,
};

/* ---- chains --------------------------------------------------------------- */
struct hike_chain {
	__u32 len;   /* instructions; 0 means no chain is installed at this id */
	__u16 nargs; /* parameters it takes (r1..) */
	__u16 flags;
	struct hike_insn insns[HIKE_MAX_INSNS];
};

/* ---- per-CPU state -------------------------------------------------------- */
struct hike_frame {
	__u32 chain;    /* caller's chain id */
	__u32 ret_pc;   /* caller's pc after the call */
	__u64 saved[9]; /* caller's r1..r9 */
};

/* Offsets (in the scratch bank) of what a loader's parser found. */
struct hike_pkt_info {
	__u16 l2_off;   /* Ethernet header */
	__u16 l3_off;   /* IPv4/IPv6 header, 0xffff when none */
	__u16 l4_off;   /* transport header after IPv6 extension headers, 0xffff when none */
	__u16 l3_proto; /* ethertype of the L3 header (host order) */
	__u8 l4_proto;  /* IPPROTO_* of the L4 header */
	__u8 vlans;     /* VLAN tags skipped */
	__u16 flags;    /* HIKE_PKT_* */
	__u32 reserved;
};
#define HIKE_PKT_INFO_SIZE 16
#define HIKE_NO_OFF 0xffff
#define HIKE_PKT_TRUNCATED 0x1 /* a header was cut short; offsets past it are HIKE_NO_OFF */

struct hike_state {
	__u64 regs[HIKE_NREGS];
	__u32 pc;
	__u32 chain;
	__u32 budget; /* instructions left for this packet */
	__u16 depth;  /* current frame: 0 is the chain the loader started */
	__u16 calls;  /* tail calls made for this packet: program calls and continuations */
	struct hike_frame frames[HIKE_MAX_DEPTH];
	/* 8-byte aligned so clearing them takes 8-byte stores, not byte stores */
	__u8 stack[HIKE_MAX_DEPTH * HIKE_FRAME_SIZE] __attribute__((aligned(8)));
	__u8 scratch[HIKE_SCRATCH_SIZE] __attribute__((aligned(8))); /* starts with struct hike_pkt_info */
	/* counters, per CPU; user space sums them */
	__u64 prog_calls[HIKE_MAX_PROGS];
	__u64 chain_runs[HIKE_MAX_CHAINS];
	__u64 aborts[HIKE_ABORT_MAX];
};

/* ---- instance configuration (array map, one entry) ------------------------ */
struct hike_config {
	__u32 magic;       /* HIKE_MAGIC */
	__u32 abi_version; /* HIKE_ABI_VERSION */
	__u32 budget;      /* executed-instruction budget per packet */
	__u32 flags;
};

#endif /* HIKE_DEFS_H */
