//! Golden tests: one script per kind of diagnostic, rendered with its source line
//! and caret, compared with tests/golden/<code>.txt. After an intended change to a
//! message, regenerate with `EBPKG_BLESS=1 cargo test -p hike-chainc --test it diagnostics::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use hike_chainc::compile;

const NET: &str = "from prog.net import monitor\n";

fn cases() -> Vec<(&'static str, String)> {
    let long_body: String = (0..140).map(|i| format!("    monitor({i})\n")).collect();
    let many_vars: String = (0..13).map(|i| format!("    v{i} = monitor({i})\n")).collect::<String>()
        + &(0..13).map(|i| format!("    monitor(v{i})\n")).collect::<String>();
    let deep_calls: String = (1..9).map(|i| format!("def c{i}():\n    c{}()\n", i - 1)).collect();
    vec![
        ("E001", format!("{NET}def f():\n    x = 1 $ 2\n    monitor(x)\n")),
        ("E002", format!("{NET}def f():\n    monitor(99999999999999999999)\n")),
        (
            "E003",
            format!("{NET}from loaders.basic import ip6_sc\nip6_sc.attach('eth0', 'xdp)\ndef f():\n    monitor(1)\n"),
        ),
        ("E004", format!("{NET}def f():\n        monitor(1)\n    monitor(2)\n")),
        ("E005", format!("{NET}def f():\n    x = = 1\n")),
        ("E006", format!("{NET}def f():\n    x = monitor(1)\n    monitor({}x)\n", "-".repeat(120))),
        ("E007", format!("{NET}def f():\n    x = true\n    monitor(x)\n")),
        ("E101", format!("{NET}def f():\n    result = monitor(1)\n    monitor(reslut)\n")),
        ("E102", format!("{NET}def f():\n    monitor(1)\n\ndef f():\n    monitor(2)\n")),
        ("E103", "from prog.nett import monitor\ndef f():\n    monitor(1)\n".to_owned()),
        ("E104", "from prog.net import monitor, hike_dorp\ndef f():\n    monitor(1)\n".to_owned()),
        ("E105", format!("{NET}x = 1\ndef f():\n    monitor(1)\n")),
        ("E106", format!("{NET}def f():\n    packet = monitor(1)\n")),
        ("E201", format!("{NET}def f():\n    monitor()\n")),
        ("E202", format!("{NET}def f():\n    x: u8 = 300\n    monitor(x)\n")),
        ("E203", format!("{NET}def f():\n    n = monitor(1)\n    for i in range(n):\n        monitor(i)\n")),
        ("E204", format!("{NET}def f():\n    DROP = 1\n    DROP = 2\n    monitor(DROP)\n")),
        (
            "E205",
            format!(
                "{NET}from loaders.basic import ip6_sc\nip6_sc[ip6_sc_map] = {{ (0, 1): (f) }}\ndef f():\n    monitor(1)\n"
            ),
        ),
        (
            "E206",
            format!("{NET}from loaders.basic import ip6_sc\nip6_sc.attach('eth0', 'xpd')\ndef f():\n    monitor(1)\n"),
        ),
        (
            "E207",
            "from prog.net import monitor\nfrom prog.tcpkg import tcprog\ndef f():\n    monitor(tcprog())\n".to_owned(),
        ),
        ("E208", format!("{NET}def a():\n    monitor(1)\n    b()\n\ndef b():\n    a()\n")),
        ("E209", format!("{NET}def f():\n    monitor(packet.read_u17(12))\n")),
        ("E210", format!("{NET}def f():\n    monitor(1)\n    break\n")),
        ("E301", format!("{NET}def f():\n    while True:\n        monitor(1)\n")),
        ("E302", format!("{NET}def f():\n    for i in range(100000):\n        x = i\n    monitor(1)\n")),
        ("E303", format!("{NET}def f():\n{long_body}")),
        ("E304", format!("{NET}def f():\n{many_vars}")),
        ("E305", format!("{NET}def f(a, b, c, d, e):\n    monitor(a)\n")),
        ("E306", format!("{NET}def c0():\n    monitor(0)\n{deep_calls}")),
        ("W001", format!("{NET}def f():\n    return 1\n    monitor(2)\n")),
        ("W002", format!("{NET}def f():\n    unused = 3\n    monitor(1)\n")),
        ("W003", "from prog.net import monitor, hike_drop\ndef f():\n    monitor(1)\n".to_owned()),
        ("W004", format!("{NET}def f():\n    n = monitor(1)\n    while n > 0:\n        n -= 1\n")),
    ]
}

#[test]
fn every_kind_of_diagnostic_matches_its_golden_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("EBPKG_BLESS").is_some();
    let env = common::test_env();
    let mut mismatches = Vec::new();
    for (code, script) in cases() {
        let diags = match compile(&script, "chain.eclat", &env) {
            Ok(c) => c.warnings,
            Err(d) => d,
        };
        assert!(
            diags.items.iter().any(|d| d.code.id() == code),
            "{code}: the script did not produce a {code} diagnostic:\n{}",
            diags.render()
        );
        let rendered = format!("{script}---\n{}---\n{diags}\n", diags.render());
        let path = dir.join(format!("{code}.txt"));
        if bless {
            std::fs::write(&path, &rendered).unwrap();
        } else if std::fs::read_to_string(&path).unwrap_or_default() != rendered {
            mismatches.push(format!("{code}:\n{rendered}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "output differs from tests/golden (EBPKG_BLESS=1 regenerates after an intended change):\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn several_errors_are_reported_in_one_run() {
    let script = format!("{NET}def f():\n    monitor(undefined_a)\n    x: u8 = 256\n    monitor()\n    monitor(x)\n");
    let err = compile(&script, "chain.eclat", &common::test_env()).unwrap_err();
    let codes: Vec<&str> = err.errors().map(|d| d.code.id()).collect();
    assert_eq!(codes, ["E101", "E202", "E201"]);
}

#[test]
fn disassembly_of_the_paper_script_matches_its_golden_file() {
    let script = include_str!("../scripts/ddos.eclat");
    let compiled = compile(script, "ddos.eclat", &common::paper_env()).unwrap();
    let listing = compiled.artifact.chains[0].disassemble(script);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/ddos.asm");
    if std::env::var_os("EBPKG_BLESS").is_some() {
        std::fs::write(&path, &listing).unwrap();
    }
    assert_eq!(listing, std::fs::read_to_string(&path).unwrap_or_default());
}
