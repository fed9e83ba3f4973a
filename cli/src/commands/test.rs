//! `ebpkg test`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use ebpkg::Ctx;
use ebpkg::exit::{Failure, fail};

const HELP: &str = "Test files are tests/*.test.toml in the package:

  [[case]]
  name = \"counts the packet\"
  program = \"count_packets\"        # a program of this package
  args = [1]                       # up to 4 integers
  packet = \"02 00 00 00 00 02 ...\" # hex, or pcap = \"tests/x.pcap\" (and pcap-index = N)
  repeat = 1                       # rewrites of the packet accumulate over repeats
  time-ns = 5000000000             # hike_ktime_ns() during the run (default 1000 s, frozen)

  [[case.setup]]                   # map entries written before the run
  map = \"counters\"
  key = \"00000000\"
  value = \"0500000000000000\"

  [case.expect]
  verdict = \"pass\"                 # xdp: aborted drop pass tx redirect; tc: ok shot redirect
  returned = true                  # returned to the chain (false: ended the packet)
  result = 6
  packet = \"...\"

  [[case.expect.map]]
  map = \"counters\"
  key = \"00000000\"
  value = \"0600000000000000\"       # or absent = true

  [[case.then]]                    # a further run of the case, maps kept; args and packet
  advance-ns = 1000000000          # default to the case's, repeat to 1 (or time-ns = ...)
  [case.then.expect]
  result = 7

Every case starts with empty maps. Per-CPU maps are written on every CPU and read
on the CPU the run used. Every case runs twice: with the chain interpreted by the
VM, and compiled natively with the program's body (what `ebpkg install` does);
a difference fails as `native tier: ...`, a program that cannot be inlined (no C
source, global variables) is a warning.

Examples:
  sudo ebpkg test
  sudo ebpkg test drop              only cases whose file or name contains `drop`";

#[derive(Args)]
#[command(after_help = HELP)]
pub struct TestArgs {
    /// Run only cases whose `file: name` contains this.
    filter: Option<String>,
}

pub fn run(ctx: &Ctx, args: TestArgs) -> Result<ExitCode> {
    let project = ctx.project()?;
    let report = ebpkg::ops::test::run_tests(ctx, project, args.filter.as_deref())?;
    if ctx.ui.json {
        ctx.ui.json(&report)?;
    } else {
        ctx.ui.status(
            "Tested",
            format!(
                "{} passed, {} failed{}",
                report.passed.len(),
                report.failed.len(),
                if report.filtered > 0 { format!(", {} filtered out", report.filtered) } else { String::new() }
            ),
        );
    }
    if report.failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(fail(Failure::TestsFailed, format!("{} test case(s) failed", report.failed.len())))
    }
}
