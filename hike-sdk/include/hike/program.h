/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Writing a HIKe program: an XDP (or, with HIKE_HOOK_TC defined first, a TC)
 * program that chains call like a function.
 *
 *     #include <hike/program.h>
 *
 *     HIKE_PROGRAM(monitor, HIKE_ARG(u64, event))
 *     {
 *             ... the program's work: `ctx` is the packet, `event` the argument ...
 *             return hike_result(count);      // hand `count` back to the chain
 *     }
 *
 * Up to four arguments, read by name; they arrive in the chain's r1..r4 and are
 * truncated to their declared types. hike_info() gives the header offsets the
 * loader found (struct hike_pkt_info), hike_scratch() the per-CPU scratch bank
 * shared with the other programs of the packet. A body ends in one of two ways:
 *   return hike_result(value);  the chain continues, with value in r0
 *   return XDP_DROP;            (any verdict) the packet ends here
 *
 * The argument list is exported in BTF as decl tags on the program's function
 * ("hike.arg1=u64 event", "hike.nargs=1", "hike.ret=u64"), so tools read a
 * program's signature from the object without running it. HIKE_PROGRAM_RET
 * declares a result type other than u64.
 */
#ifndef HIKE_PROGRAM_H
#define HIKE_PROGRAM_H

#include <hike/vm.h>
#include <hike/packet.h>

#define HIKE_ARG(type, name) (type, name)

#define __HIKE_STR_(x) #x
#define __HIKE_STR(x) __HIKE_STR_(x)
#define __HIKE_TYPE_(t, n) t
#define __HIKE_NAME_(t, n) n
#define __HIKE_TYPE(a) __HIKE_TYPE_ a
#define __HIKE_NAME(a) __HIKE_NAME_ a

#define __HIKE_NARGS(...) __HIKE_NARGS_(0, ##__VA_ARGS__, 4, 3, 2, 1, 0)
#define __HIKE_NARGS_(_0, _1, _2, _3, _4, n, ...) n

#define __HIKE_PARAM(i, a) , __HIKE_TYPE(a) __HIKE_NAME(a)
#define __HIKE_PASS(i, a) , (__HIKE_TYPE(a))__hike_st->regs[i]
#define __HIKE_TAG(i, a) \
	__attribute__((btf_decl_tag("hike.arg" #i "=" __HIKE_STR(__HIKE_TYPE(a)) " " __HIKE_STR(__HIKE_NAME(a)))))

#define __HIKE_EACH_0(m)
#define __HIKE_EACH_1(m, a) m(1, a)
#define __HIKE_EACH_2(m, a, b) m(1, a) m(2, b)
#define __HIKE_EACH_3(m, a, b, c) m(1, a) m(2, b) m(3, c)
#define __HIKE_EACH_4(m, a, b, c, d) m(1, a) m(2, b) m(3, c) m(4, d)
#define __HIKE_EACH__(n, m, ...) __HIKE_EACH_##n(m, ##__VA_ARGS__)
#define __HIKE_EACH_(n, m, ...) __HIKE_EACH__(n, m, ##__VA_ARGS__)
#define __HIKE_EACH(m, ...) __HIKE_EACH_(__HIKE_NARGS(__VA_ARGS__), m, ##__VA_ARGS__)

/* Inside a program body: the per-CPU scratch bank shared by the programs of this
 * packet (HIKE_SCRATCH_SIZE bytes, 8-byte aligned), and the packet information
 * the loader's parser left at its start (struct hike_pkt_info: header offsets). */
#define hike_scratch() (__hike_st->scratch)
#define hike_info() hike_pkt_info(__hike_st)

/* Writes the result, converted to the program's result type, into r0 and tells
 * the wrapper to continue the chain. `__hike_rt` only carries that type. */
#define hike_result(value) \
	(__hike_st->regs[0] = (__u64)(__typeof__(*__hike_rt))(value), HIKE_CONTINUE)

#ifdef HIKE_NATIVE_BUILD
/* Native chains (docs/NATIVE.md, built with -DHIKE_NATIVE_BUILD): the body is also a function with one signature
 * for every program, `__hike_native_<name>(ctx, st, args)`, which a native chain
 * links with and inlines. The arguments are truncated to their declared types
 * exactly as the VM's wrapper does; no section program is emitted. */
#include <hike/native.h>
#define __HIKE_NATIVE_PASS(i, a) , (__HIKE_TYPE(a))__hike_args->r[i - 1]
#define HIKE_PROGRAM_RET(ret_type, name, ...)                                                             \
	static __always_inline int __hike_body_##name(HIKE_CTX *ctx __attribute__((unused)),            \
		struct hike_state *__hike_st __attribute__((unused)),                                      \
		ret_type *__hike_rt __attribute__((unused)) __HIKE_EACH(__HIKE_PARAM, ##__VA_ARGS__));     \
	__attribute__((always_inline)) int __hike_native_##name(HIKE_CTX *ctx, struct hike_state *__hike_st, \
		const struct hike_native_args *__hike_args)                                               \
	{                                                                                                 \
		return __hike_body_##name(ctx, __hike_st, 0 __HIKE_EACH(__HIKE_NATIVE_PASS, ##__VA_ARGS__)); \
	}                                                                                                 \
	static __always_inline int __hike_body_##name(HIKE_CTX *ctx __attribute__((unused)),            \
		struct hike_state *__hike_st __attribute__((unused)),                                      \
		ret_type *__hike_rt __attribute__((unused)) __HIKE_EACH(__HIKE_PARAM, ##__VA_ARGS__))
#else
#define HIKE_PROGRAM_RET(ret_type, name, ...)                                                             \
	static __always_inline int __hike_body_##name(HIKE_CTX *ctx __attribute__((unused)),            \
		struct hike_state *__hike_st __attribute__((unused)),                                      \
		ret_type *__hike_rt __attribute__((unused)) __HIKE_EACH(__HIKE_PARAM, ##__VA_ARGS__)); \
	SEC(HIKE_SEC)                                                                                     \
	__attribute__((btf_decl_tag("hike.nargs=" __HIKE_STR(__HIKE_NARGS(__VA_ARGS__)))))                \
	__attribute__((btf_decl_tag("hike.ret=" #ret_type))) __HIKE_EACH(__HIKE_TAG, ##__VA_ARGS__)      \
	int name(HIKE_CTX *ctx)                                                                           \
	{                                                                                                 \
		struct hike_state *__hike_st = hike_state_get();                                          \
		int __hike_rc;                                                                            \
		if (!__hike_st)                                                                           \
			return HIKE_VERDICT_ABORT;                                                        \
		__hike_rc = __hike_body_##name(ctx, __hike_st, 0 __HIKE_EACH(__HIKE_PASS, ##__VA_ARGS__)); \
		if (__hike_rc != HIKE_CONTINUE)                                                           \
			return __hike_rc;                                                                 \
		return hike_vm_run(ctx, __hike_st);                                                       \
	}                                                                                                 \
	static __always_inline int __hike_body_##name(HIKE_CTX *ctx __attribute__((unused)),            \
		struct hike_state *__hike_st __attribute__((unused)),                                      \
		ret_type *__hike_rt __attribute__((unused)) __HIKE_EACH(__HIKE_PARAM, ##__VA_ARGS__))
#endif

#define HIKE_PROGRAM(name, ...) HIKE_PROGRAM_RET(__u64, name, ##__VA_ARGS__)

#endif /* HIKE_PROGRAM_H */
