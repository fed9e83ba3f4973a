//! `ebpkg chain check` and `ebpkg chain compile` on the eCLAT paper's script, with
//! the packages it imports given as directories.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn ebpkg(args: &[&str], script: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ebpkg"));
    cmd.args(args).arg(fixtures().join(script));
    for p in ["net", "basic", "sets", "meter", "sampler"] {
        cmd.arg("--package").arg(fixtures().join("packages").join(p));
    }
    cmd.output().unwrap()
}

#[test]
fn check_accepts_the_paper_script() {
    let out = ebpkg(&["chain", "check"], "ddos.eclat");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.ends_with("ddos.eclat: 1 chain(s), no errors\n"), "{stderr}");
}

#[test]
fn compile_emits_a_disassembly_with_source_lines() {
    let out = ebpkg(&["chain", "compile", "--emit", "asm"], "ddos.eclat");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let asm = String::from_utf8_lossy(&out.stdout);
    assert!(asm.starts_with("chain ddos_tb_2_lev (0 argument(s), 37 instructions)\n"), "{asm}");
    assert!(asm.contains("  ;  18 | u64 : res = ip6_hset_srcdst(LOOKUP)\n     0: r1 = 2\n     1: call prog 0, 1  ; sets::ip6_hset_srcdst\n"), "{asm}");
    assert!(
        asm.contains("loader basic::ip6_sc map ip6_sc_map: 1 entry\nattach basic::ip6_sc to $DEVNAME (xdp)\n"),
        "{asm}"
    );
}

#[test]
fn compile_emits_the_artifact_as_json() {
    let out = ebpkg(&["chain", "compile"], "ddos.eclat");
    assert!(out.status.success());
    let art: hike_chainc::Artifact = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(art.chains[0].name, "ddos_tb_2_lev");
    assert_eq!(art.params, ["DEVNAME"]);
}

#[test]
fn errors_are_reported_with_their_place_and_exit_1() {
    let dir = std::env::temp_dir().join(format!("ebpkg-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("bad.eclat");
    std::fs::write(&script, "from prog.net import monitor\ndef f():\n    monitor(1, 2)\n    x: u8 = 256\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ebpkg"));
    cmd.args(["chain", "check"]).arg(&script).arg("--package").arg(fixtures().join("packages/net"));
    for p in ["sets", "meter", "sampler"] {
        cmd.arg("--package").arg(fixtures().join("packages").join(p));
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error[E201]: program `monitor` takes 1 argument(s) but is given 2"), "{stderr}");
    assert!(stderr.contains("bad.eclat:3:5"), "{stderr}");
    assert!(stderr.contains("error[E202]: 256 does not fit in u8 (0..=255)"), "{stderr}");
    // The same as JSON.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ebpkg"));
    cmd.args(["--json", "chain", "check"]).arg(&script).arg("--package").arg(fixtures().join("packages/net"));
    for p in ["sets", "meter", "sampler"] {
        cmd.arg("--package").arg(fixtures().join("packages").join(p));
    }
    let out = cmd.output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["diagnostics"][0]["code"], "ArgCount");
    assert_eq!(v["diagnostics"][0]["line"], 3);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_reexport_of_a_missing_program_is_an_error() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ebpkg"));
    cmd.args(["chain", "check"])
        .arg(fixtures().join("ddos.eclat"))
        .arg("--package")
        .arg(fixtures().join("packages/net"));
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("net re-exports `ip6_dst_tbmon` from meter, which is not among the packages given"),
        "{stderr}"
    );
}
