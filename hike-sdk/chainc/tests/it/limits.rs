//! The VM's limits checked when compiling (CHAINS.md §5, BYTECODE.md §5, §7):
//! what provably cannot fit in 33 tail calls or the instruction budget is refused
//! (E302) over the whole call graph — loops in loops, chains called in loops,
//! continuations — a loop without a bound gets a warning (W004) that says how
//! many iterations can fit, and chain calls nested deeper than the VM's frames
//! are refused (E306) rather than at install.
//!
//! The bounds are checked against the reference interpreter, which counts
//! exactly as the kernel VM does: every chain's least cost is at most what a run
//! costs, and a loop run one iteration beyond what the warning says can fit is
//! dropped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{run_with_budget, test_env};
use hike_bytecode::interp::{AbortReason, Ending};
use hike_bytecode::limits::{DEFAULT_BUDGET, MAX_DEPTH, MAX_TAIL_CALLS};
use hike_chainc::{Diagnostics, compile};

const T: &str = "from programs.t import add, echo, tick, drop, verdict\nfrom prog.net import monitor\n";

fn script(body: &str) -> String {
    let body: String = body.lines().map(|l| format!("    {l}\n")).collect();
    format!("{T}def f():\n{body}")
}

fn refused(script: &str) -> Diagnostics {
    compile(script, "limits.eclat", &test_env()).expect_err("compiled")
}

/// The script compiles; its warnings' codes (but unused imports: the scripts
/// share one import line).
fn accepted(script: &str) -> Vec<&'static str> {
    match compile(script, "limits.eclat", &test_env()) {
        Ok(c) => c.warnings.items.iter().map(|d| d.code.id()).filter(|c| *c != "W003").collect(),
        Err(d) => panic!("{}\n{script}", d.render()),
    }
}

/// Exactly one E302, at `line`; its message.
fn e302_at(d: &Diagnostics, line: usize) -> String {
    let errors: Vec<(&str, usize)> = d.errors().map(|e| (e.code.id(), e.line)).collect();
    assert_eq!(errors, [("E302", line)], "{}", d.render());
    d.errors().next().unwrap().message.clone()
}

#[test]
fn nested_loops_that_cannot_fit_are_refused() {
    // 900 iterations of the inner body: thousands of instructions, hence far more
    // than 33 continuations (every 32 instructions without a program call).
    let d = refused(&script("t = 0\nfor i in range(30):\n    for j in range(30):\n        t += j\nreturn t"));
    let m = e302_at(&d, 5);
    assert!(m.starts_with("this loop cannot finish within the VM's limits"), "{m}");
    assert!(m.contains("tail calls"), "{m}");
    assert_eq!(d.errors().next().unwrap().column, 14, "at the outer loop's range()");
    // Each loop alone fits.
    assert_eq!(accepted(&script("t = 0\nfor j in range(30):\n    t += j\nreturn t")), [] as [&str; 0]);
}

#[test]
fn a_chain_called_in_a_loop_brings_its_program_calls() {
    let sub = "\ndef sub(x):\n    monitor(x)\n    monitor(x + 1)\n";
    let d = refused(&(script("for i in range(20):\n    sub(i)") + sub));
    let m = e302_at(&d, 4);
    assert!(m.contains("at least 40 program calls"), "{m}");
    assert!(m.contains(&format!("at most {MAX_TAIL_CALLS}")), "{m}");
    // 16 × 2 = 32 calls fit, and run to the end on the VM.
    let ok = script("for i in range(16):\n    sub(i)\nreturn 7") + sub;
    assert_eq!(accepted(&ok), [] as [&str; 0]);
    let r = run_with_budget(&ok, "f", vec![0; 64], DEFAULT_BUDGET);
    assert_eq!(r.ending, Ending::Returned);
}

#[test]
fn the_call_limit_is_exact_for_program_calls() {
    let calls = |n: usize| script(&format!("for i in range({n}):\n    monitor(i)"));
    assert_eq!(accepted(&calls(33)), [] as [&str; 0]);
    let r = run_with_budget(&calls(33), "f", vec![0; 64], DEFAULT_BUDGET);
    assert_eq!(r.ending, Ending::Returned, "33 program calls run");
    assert!(e302_at(&refused(&calls(34)), 4).contains("at least 34 program calls"));
    // Without loops: calls in a row, across chains.
    let row = "\ndef seventeen():\n".to_owned() + &"    monitor(1)\n".repeat(17);
    let d = refused(&(script("seventeen()\nseventeen()") + &row));
    assert_eq!(d.errors().next().unwrap().column, 5);
    e302_at(&d, 5);
    // In one branch only: refused there, the other branch is fine.
    let d = refused(&(script("if tick():\n    seventeen()\n    seventeen()\nreturn 1") + &row));
    e302_at(&d, 6);
}

#[test]
fn calls_that_end_the_packet_are_not_a_way_through() {
    // Every iteration drops the packet: the loop never runs twice.
    assert_eq!(accepted(&script("for i in range(1000):\n    drop()")), [] as [&str; 0]);
    // A loop that can only finish if a program drops the packet first is broken
    // for every packet the program lets through.
    let d = refused(&script("for i in range(1000):\n    if tick() == 5:\n        drop()\nreturn 0"));
    e302_at(&d, 4);
    let d = refused(&script("for i in range(100):\n    verdict(i)\nreturn 0"));
    assert!(e302_at(&d, 4).contains("at least 100 program calls"));
}

#[test]
fn a_loop_that_may_leave_early_is_warned_about_not_refused() {
    let s = script("for i in range(100):\n    if tick() == 3:\n        break\nreturn 0");
    assert_eq!(accepted(&s), ["W004"]);
    let w = compile(&s, "w.eclat", &test_env()).unwrap().warnings;
    let d = w.items.iter().find(|d| d.code.id() == "W004").unwrap();
    assert!(d.message.contains("may not finish"), "{}", d.message);
    assert!(d.help.as_deref().unwrap_or("").contains("of its 100 iterations fit"), "{:?}", d.help);
    // It breaks on the third call: fine at run time.
    assert_eq!(run_with_budget(&s, "f", vec![0; 64], DEFAULT_BUDGET).ending, Ending::Returned);
}

/// The number in "at most K iteration(s) fit" of the only W004.
fn fits(script: &str) -> u64 {
    let w = compile(script, "w.eclat", &test_env()).unwrap_or_else(|d| panic!("{}", d.render())).warnings;
    let d: Vec<_> = w.items.iter().filter(|d| d.code.id() == "W004").collect();
    assert_eq!(d.len(), 1, "{}", w.render());
    let help = d[0].help.clone().unwrap_or_default();
    let k = help.strip_prefix("at most ").and_then(|h| h.split(' ').next()).expect("a count");
    k.parse().unwrap()
}

#[test]
fn while_loops_are_warned_about_with_how_many_iterations_can_fit() {
    // Without program calls (continuations bound it), with one per iteration,
    // and calling a chain that calls two.
    let shapes = [
        ("n = echo(N)\nwhile n > 0:\n    n -= 1\nreturn 9", ""),
        ("n = echo(N)\nwhile n > 0:\n    n = add(n, 0 - 1)\nreturn 9", ""),
        (
            "n = echo(N)\nwhile True:\n    if n == 0:\n        break\n    n = sub(n)\nreturn 9",
            "\ndef sub(x):\n    monitor(x)\n    return add(x, 0 - 1)\n",
        ),
    ];
    for (body, more) in shapes {
        let with = |n: u64| script(&body.replace('N', &n.to_string())) + more;
        let k = fits(&with(1));
        assert!(k > 0, "{body}");
        // One iteration more than can fit: the VM drops the packet, as it must
        // for any count above the bound.
        let r = run_with_budget(&with(k + 1), "f", vec![0; 64], DEFAULT_BUDGET);
        assert!(
            matches!(r.ending, Ending::Aborted(AbortReason::CallLimit | AbortReason::Budget)),
            "{body}: {k} + 1 iterations: {:?}",
            r.ending
        );
        assert_eq!(run_with_budget(&with(1), "f", vec![0; 64], DEFAULT_BUDGET).ending, Ending::Returned);
    }
    // A loop that cannot run twice needs no warning.
    assert_eq!(accepted(&script("while tick() < 3:\n    drop()")), [] as [&str; 0]);
    assert_eq!(accepted(&script("while True:\n    return 9")), [] as [&str; 0]);
}

#[test]
fn the_budget_is_the_instances() {
    // 100 calls to a chain of 10 cheap statements: within 33 program calls
    // (none) but not within the continuations, nor a small budget.
    let mut env = test_env();
    env.budget = 200;
    let s = script("t = 0\nfor i in range(60):\n    t += i\nreturn t");
    let d = compile(&s, "b.eclat", &env).expect_err("compiled");
    assert!(e302_at(&d, 5).contains("the VM's budget is 200"));
    assert_eq!(accepted(&s), [] as [&str; 0]);
}

/// `depth` chains, each calling the next: `c0` on top.
fn nested_chains(depth: usize) -> String {
    let mut s = T.to_owned();
    for i in 0..depth - 1 {
        s += &format!("def c{i}():\n    return c{}() + 1\n", i + 1);
    }
    s + &format!("def c{}():\n    return monitor(1)\n", depth - 1)
}

#[test]
fn chain_calls_deeper_than_the_vm_s_frames_are_refused() {
    // As deep as the VM goes: compiles, and the runtime's validator agrees.
    let art = compile(&nested_chains(MAX_DEPTH), "d.eclat", &test_env()).unwrap().artifact;
    let mut ids = hike_chainc::link::Ids::default();
    let mut vm = hike_bytecode::Env::default();
    ids.programs.insert(hike_chainc::link::ProgramRef::new("net", "monitor"), hike_bytecode::ProgId(1));
    vm.programs.insert(1, hike_bytecode::ProgramSig { name: "monitor".into(), nargs: 1 });
    for (i, chain) in art.chains.iter().enumerate() {
        let id = i as u32 + 1;
        let insns = hike_chainc::link::link_chain(chain, &ids).unwrap();
        let facts = hike_bytecode::validate(&insns, &vm).unwrap_or_else(|e| panic!("{}: {e}", chain.name));
        vm.chains.insert(id, hike_bytecode::ChainSig { name: chain.name.clone(), nargs: 0, depth: facts.depth });
        ids.chains.insert(chain.name.clone(), hike_bytecode::ChainId(id));
    }
    // One frame more is what the validator refuses at install...
    let top = ids.chains["c0"].0;
    let over = [hike_bytecode::build::call_chain(top, 0), hike_bytecode::build::exit()];
    assert!(hike_bytecode::validate(&over, &vm).is_err(), "the validator allows {} frames", MAX_DEPTH + 1);
    // ...and the compiler, at the call that makes it, naming the whole path.
    let d = refused(&nested_chains(MAX_DEPTH + 1));
    let e: Vec<_> = d.errors().collect();
    assert_eq!(e.len(), 1, "{}", d.render());
    assert_eq!((e[0].code.id(), e[0].line, e[0].column), ("E306", 4, 12), "{}", d.render());
    assert!(e[0].message.contains("c0 → c1 → c2 → c3 → c4 → c5 → c6 → c7 → c8"), "{}", e[0].message);
    assert!(e[0].message.contains(&format!("at most {MAX_DEPTH} chain frames")), "{}", e[0].message);
}

#[test]
fn least_costs_never_exceed_what_runs_cost() {
    // Chains of every shape the analysis follows; each run on the interpreter
    // costs at least what the compiler says the chain costs at least.
    let bodies = [
        "return 1",
        "x = tick()\nif x:\n    return 1\nelif x == 2:\n    return add(x, 1)\nreturn 3",
        "t = 0\nfor i in range(7):\n    if i == 3:\n        continue\n    t += add(i, 1)\nreturn t",
        "t = 0\nfor i in range(5):\n    for j in range(3):\n        t += i * j\n    t += monitor(i)\nreturn t",
        "t = 0\nfor i in range(9):\n    if t > 10:\n        break\n    t += echo(i)\nreturn t",
        "n = echo(5)\nwhile n > 0:\n    n -= 1\nreturn n",
        "x = echo(3)\ny = x and tick() or echo(2)\nz = not x == 3 < y\nreturn -x + ~y + z + packet.read_u8(x)",
        "t = 0\nfor i in range(4):\n    t += helper(i)\nreturn t",
        "if echo(0):\n    return helper(1)\nelse:\n    x = helper(2)\nreturn x + 1",
    ];
    let helper = "\ndef helper(v):\n    if v > 1:\n        return add(v, v)\n    for k in range(3):\n        v += k\n    return v\n";
    for body in bodies {
        let s = script(body) + helper;
        let compiled = compile(&s, "c.eclat", &test_env()).unwrap_or_else(|d| panic!("{}", d.render()));
        for entry in ["f", "helper"] {
            let Some(least) = compiled.least.get(entry) else { continue };
            let packet = vec![0u8; 64];
            let r = if entry == "helper" {
                let call = script("return helper(1)\n") + helper;
                run_with_budget(&call, "f", packet, DEFAULT_BUDGET)
            } else {
                run_with_budget(&s, entry, packet, DEFAULT_BUDGET)
            };
            assert_eq!(r.ending, Ending::Returned, "{body}");
            let calls: u64 = r.prog_calls.values().sum();
            assert!(u64::from(r.executed) >= least.insns, "{entry} in\n{body}\nruns {} < {least:?}", r.executed);
            assert!(calls >= least.calls, "{entry} in\n{body}\ncalls {calls} < {least:?}");
        }
    }
}
