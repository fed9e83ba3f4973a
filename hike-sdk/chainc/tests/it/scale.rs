//! Compile time grows linearly with the script. Each shape that used to take
//! quadratic time (a scan of the script or of a list per definition, per
//! instruction, per map entry) is compiled at a size that took tens of seconds
//! to minutes before, and at a quarter of it: the big one must cost less than 10
//! times the small one's CPU time (linear work gives about 4, quadratic 16).
//!
//! The work is measured as the CPU time of the compiling thread, which load on
//! the machine does not inflate the way it does wall-clock time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use hike_chainc::compile;
use rustix::time::{ClockId, clock_gettime};

const HEAD: &str = "from prog.net import monitor\nfrom loaders.basic import ip6_sc\nip6_sc.attach('eth0', 'xdp')\n";

fn cpu() -> Duration {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// CPU time of one compilation, and what came out: (errors, chains).
fn measure(script: &str) -> (Duration, Vec<String>, usize) {
    let env = common::test_env();
    let start = cpu();
    let out = compile(script, "big.eclat", &env);
    let spent = cpu() - start;
    match out {
        Ok(c) => (spent, Vec::new(), c.artifact.chains.len()),
        Err(d) => (spent, d.errors().map(|e| e.code.id().to_owned()).collect(), 0),
    }
}

/// Compiles `make(n)` and `make(4 n)`; the second must cost less than 10 times
/// the first (the smaller of two tries, against a noisy moment). Returns the
/// big one's result.
fn linear(make: impl Fn(usize) -> String, n: usize) -> (Vec<String>, usize) {
    let (small, big) = (make(n), make(4 * n));
    let mut ratio = f64::MAX;
    let mut result = (Vec::new(), 0);
    for _ in 0..2 {
        let (t_small, _, _) = measure(&small);
        let (t_big, errors, chains) = measure(&big);
        ratio = ratio.min(t_big.as_secs_f64() / t_small.as_secs_f64().max(1e-3));
        result = (errors, chains);
        eprintln!("{:.3}s -> {:.3}s", t_small.as_secs_f64(), t_big.as_secs_f64());
        if ratio < 10.0 {
            break;
        }
    }
    assert!(ratio < 10.0, "4 times the input cost {ratio:.1} times the work: not linear");
    result
}

#[test]
fn many_chains() {
    // 50,000 chains: 140 s before (quadratic in the number of `def`s).
    let make =
        |n: usize| HEAD.to_owned() + &(0..n).map(|i| format!("def f{i}():\n    monitor({i})\n")).collect::<String>();
    let (errors, chains) = linear(make, 12_500);
    assert_eq!((errors.len(), chains), (0, 50_000));
}

#[test]
fn many_lines_in_one_chain() {
    // 100,000 calls: more than a minute before, for "too many instructions".
    let make = |n: usize| format!("{HEAD}def f():\n") + &"    monitor(1)\n".repeat(n);
    let (errors, _) = linear(make, 25_000);
    assert_eq!(errors, ["E303"]);
}

#[test]
fn a_large_loader_map() {
    // 100,000 entries: 26 s before (duplicate keys looked up in a list).
    let make = |n: usize| {
        format!("{HEAD}ip6_sc[ip6_sc_map] = {{\n")
            + &(0..n).map(|i| format!("    ({i}): (f),\n")).collect::<String>()
            + "}\ndef f():\n    monitor(1)\n"
    };
    let (errors, chains) = linear(make, 25_000);
    assert_eq!((errors.len(), chains), (0, 1));
}

#[test]
fn many_errors() {
    // Every diagnostic used to find its line by scanning the script.
    let make =
        |n: usize| format!("{HEAD}def f():\n") + &(0..n).map(|i| format!("    monitor(u{i})\n")).collect::<String>();
    let (errors, _) = linear(make, 5_000);
    assert_eq!(errors.len(), 20_000);
}

#[test]
fn long_call_chains() {
    // 20,000 chains calling each other: 14 s before.
    let make = |n: usize| {
        format!("{HEAD}def f0():\n    monitor(0)\n")
            + &(1..n).map(|i| format!("def f{i}():\n    f{}()\n", i - 1)).collect::<String>()
    };
    let (errors, _) = linear(make, 5_000);
    assert!(errors.contains(&"E306".to_owned()), "{errors:?}");
}
