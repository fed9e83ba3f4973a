//! Every feature of the language (hike-sdk/docs/CHAINS.md), compiled and run on the
//! reference interpreter.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{result, run, test_env};
use hike_bytecode::Ending;
use hike_chainc::{Device, FieldValue, compile};

const IMPORTS: &str = "from programs.t import add, echo, neg8, small, drop, verdict, tick, args4\n";

fn f(body: &str) -> String {
    let body: String = body.lines().map(|l| format!("    {l}\n")).collect();
    format!("{IMPORTS}def f():\n{body}")
}

#[test]
fn arithmetic_follows_pythons_precedence_with_u64_wraparound() {
    assert_eq!(result(&f("return 1 + 2 * 3 - 4 // 2")), 5);
    assert_eq!(result(&f("x = 7\nreturn x + 2 * x * 3 ** 1 << 1 | 1")), 99, "`**` on constants");
    assert_eq!(result(&f("x = 0\nreturn x - 1")), u64::MAX, "wraps");
    assert_eq!(result(&f("x = 3\nreturn -x")), 3u64.wrapping_neg());
    assert_eq!(result(&f("x = 0xf0\nreturn ~x & 0xff ^ 1")), 0x0e);
    assert_eq!(result(&f("x = 1\nreturn x << 65")), 2, "shift amounts are taken modulo 64");
    assert_eq!(result(&f("x = 2 ** 10\nreturn x")), 1024);
    assert_eq!(result(&f("return 0x10 + 0o10 + 0b10 + 1_000")), 16 + 8 + 2 + 1000);
}

#[test]
fn division_by_zero_is_defined() {
    assert_eq!(result(&f("x = 7\ny = 0\nreturn x / y")), 0);
    assert_eq!(result(&f("x = 7\ny = 0\nreturn x % y")), 7);
    assert_eq!(result(&f("return 7 // 0")), 0, "folded the same way");
    assert_eq!(result(&f("x = 7\nreturn x // 2 + x % 2")), 4);
}

#[test]
fn comparisons_and_booleans_short_circuit() {
    assert_eq!(result(&f("x = 5\nreturn 1 < x < 10")), 1, "chained");
    assert_eq!(result(&f("x = 5\nreturn 1 < x > 10")), 0);
    assert_eq!(result(&f("x = 0\nreturn x or 7")), 7, "`or` gives its operand, as in Python");
    assert_eq!(result(&f("x = 3\nreturn x and 9")), 9);
    assert_eq!(result(&f("x = 0\nreturn not x")), 1);
    // Short-circuit: tick() is not called when the left side decides.
    assert_eq!(result(&f("x = 0\nif x and tick():\n    return 1\nreturn tick()")), 1);
    assert_eq!(result(&f("x = 1\nif x or tick():\n    pass\nreturn tick()")), 1);
    assert_eq!(result(&f("x = 2\nif x == 1 or x == 2 and not x == 3:\n    return 1\nreturn 0")), 1);
}

#[test]
fn typed_locals_truncate_and_sign_extend() {
    assert_eq!(result(&f("u8 : x = 300 - 100\nx = x + 100\nreturn x")), 44, "eCLAT form, truncated to u8");
    assert_eq!(result(&f("x: u16 = 0\nx = x + 65536 + 7\nreturn x")), 7);
    assert_eq!(result(&f("x: s8 = 0\nx = x + 200\nreturn x")), (-56i64) as u64, "sign-extended");
    assert_eq!(result(&f("x: s64 = -7\nreturn x // 2")), (-3i64) as u64, "signed division for signed types");
    assert_eq!(result(&f("x: s32 = -1\nif x < 0:\n    return 1\nreturn 0")), 1, "signed comparison");
    assert_eq!(result(&f("x: u64 = 0\nx -= 1\nif x < 0:\n    return 1\nreturn 0")), 0, "unsigned comparison");
    assert_eq!(result(&f("x = neg8(200)\nif x < 0:\n    return 1\nreturn 0")), 1, "results keep their type");
    assert_eq!(result(&f("x: u32 = 0xffffffff\nx += 1\nreturn x")), 0);
}

#[test]
fn constants_are_folded_and_semicolons_separate() {
    let r = result(&format!("{IMPORTS}BASE = 100\ndef f():\n    A=1; B=2; C = A + B * BASE;\n    return C\n"));
    assert_eq!(r, 201);
}

#[test]
fn control_flow() {
    let body = "total = 0
for i in range(10):
    if i == 3:
        continue
    elif i == 7:
        break
    else:
        total += i
n = 5
while n > 0:
    n -= 1
    if n == 2:
        pass
return total * 100 + n";
    assert_eq!(result(&f(body)), (1 + 2 + 4 + 5 + 6) * 100);
    assert_eq!(result(&f("t = 0\nfor i in range(2, 10, 3):\n    t = t * 10 + i\nreturn t")), 258);
    assert_eq!(result(&f("t = 0\nfor i in range(5, 0, -2):\n    t = t * 10 + i\nreturn t")), 531);
    assert_eq!(result(&f("while True:\n    return 9")), 9);
}

#[test]
fn calls_to_programs_and_chains_defined_before_or_after() {
    let script = format!(
        "{IMPORTS}def f():\n    return later(3, 4) + earlier(1) + add(echo(10), args4(1, 2, 3, 4))\n\ndef later(a, b):\n    return a * b\n"
    );
    let script = script.replace("def f():", "def earlier(x: u8):\n    return x + 1\n\ndef f():");
    assert_eq!(result(&script), 12 + 2 + 10 + 1234);
    // Nested calls keep pending values: each argument is computed before the call.
    assert_eq!(result(&f("x = 5\nreturn x + add(add(1, 2), add(x, add(3, 4))) * 2")), 5 + 2 * 15);
    // Argument values cycle between registers without losing one.
    assert_eq!(result(&f("a = 1\nb = 2\nreturn args4(add(b, 0), add(a, 0), echo(4), echo(3))")), 2143);
}

#[test]
fn program_verdicts_end_the_packet() {
    let r = run(&f("verdict(3)\nreturn 1"), "f", vec![0; 64]);
    assert_eq!(r.ending, Ending::Verdict(3));
    let r = run(&f("drop()\nreturn 0"), "f", vec![0; 64]);
    assert_eq!(r.ending, Ending::Verdict(1));
}

#[test]
fn packet_and_scratch_built_ins() {
    let mut pkt = vec![0u8; 64];
    pkt[12] = 0x86;
    pkt[13] = 0xdd;
    pkt[20] = 17;
    let body = "t = packet.read_u16(12)
if t != 0x86dd:
    return 1
packet.write_u32(30, 0x01020304)
scratch.write_u64(16, 99)
x = scratch.read_u64(16)
off = 20
return packet.read_u8(off) * 1000 + x";
    let r = run(&f(body), "f", pkt);
    assert_eq!(r.ending, Ending::Returned);
    assert_eq!(r.regs[0], 17 * 1000 + 99);
    assert_eq!(&r.memory.packet[30..34], &[1, 2, 3, 4], "written in network order");
    let mut info = vec![0u8; 64];
    info[12] = 0x08;
    let mut m = run(&f("return packet.l3_off() + packet.l4_proto()"), "f", info);
    assert_eq!(m.ending, Ending::Returned);
    m.regs[0] = 0;
}

#[test]
fn keywords_are_whole_tokens() {
    assert_eq!(
        result(&f("format = 1\nifindex = 2\nnot_ok = 3\nform = 4\nreturn format + ifindex + not_ok + form")),
        10
    );
}

#[test]
fn imports_loaders_and_attach() {
    let script = "from prog.net import monitor
from programs.tcpkg import tcprog
from loaders.tcpkg import tcl

tcl[cfg] = { ('2001:db8::/32'): (main, 7), ('2001:db8:1::/48',): (main, 8) }
tcl.attach('eth0', 'tc')

def main():
    x = tcprog()
    return x
";
    let mut env = test_env();
    // An XDP program in a TC script is a mismatch: drop `monitor` from the import first.
    let err = compile(script, "s.eclat", &env).unwrap_err();
    assert!(err.to_string().contains("error[E207]: `tcprog` runs at tc, but `monitor` runs at xdp"), "{err}");
    let script = script.replace("from prog.net import monitor\n", "");
    let art = compile(&script, "s.eclat", &env).unwrap().artifact;
    assert_eq!(art.hook, hike_bytecode::Hook::Tc);
    assert_eq!(art.attaches[0].device, Device::Name("eth0".into()));
    assert_eq!(art.attaches[0].mode.name(), "tc");
    let e = &art.loader_configs[0].entries;
    let mut key = 32u32.to_le_bytes().to_vec();
    key.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(e[0].key, [FieldValue::Bytes(key)]);
    assert_eq!(e[1].value, [FieldValue::Chain("main".into()), FieldValue::Int { value: 8, size: 1 }]);
    assert!(art.params.is_empty());
    env.packages.remove("net");
}

#[test]
fn chains_ending_in_a_verdict_program_are_still_well_formed() {
    // Found by the `compile` fuzz target: no `return` after a program that always
    // ends the packet left the chain without a final `exit`.
    for body in ["drop()", "x = tick()\nif x:\n    drop()\nelse:\n    drop()", "while tick() < 3:\n    drop()"] {
        let script = f(body);
        let r = run(&script, "f", vec![0; 64]);
        assert_eq!(r.ending, Ending::Verdict(1), "{script}");
        let art = compile(&script, "t.eclat", &test_env()).unwrap().artifact;
        let mut env = hike_bytecode::Env::default();
        let mut ids = hike_chainc::link::Ids::default();
        for (i, n) in ["drop", "tick"].iter().enumerate() {
            ids.programs.insert(hike_chainc::link::ProgramRef::new("t", *n), hike_bytecode::ProgId(i as u32 + 1));
            let nargs = test_env().packages["t"].programs[*n].args.len() as u8;
            env.programs.insert(i as u32 + 1, hike_bytecode::ProgramSig { name: n.to_string(), nargs });
        }
        let insns = hike_chainc::link::link_chain(&art.chains[0], &ids).unwrap();
        hike_bytecode::validate(&insns, &env).unwrap_or_else(|e| panic!("{e}\n{script}"));
    }
}
