//! `bench-summary`: the last step of `./ci/bench`. Gathers the target rows of
//! every benchmark's report (results.md, registry.md, resolve.md, install.md, upgrade.md; each
//! has a `## Targets` table of `| what | measured | target | met |` rows) into one
//! table at the top of results.md, so that one page says how every target
//! fared. With `--check`, exits 1 when any row says missed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

const SECTION: &str = "## Every target of `./ci/bench`";

/// The reports, and what each measures.
const REPORTS: [(&str, &str); 5] = [
    ("results.md", "data plane"),
    ("registry.md", "registry server"),
    ("resolve.md", "resolution"),
    ("install.md", "install"),
    ("upgrade.md", "upgrade"),
];

fn main() -> ExitCode {
    let mut out = PathBuf::from("bench");
    let mut check = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = args.next().map(PathBuf::from).unwrap_or(out),
            "--check" => check = true,
            "--quick" => {}
            other => {
                eprintln!("bench-summary: unknown argument `{other}` (--out DIR, --check)");
                return ExitCode::from(2);
            }
        }
    }
    match run(&out) {
        Ok(missed) if missed == 0 || !check => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("bench-summary: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The rows of the first table after a `## Targets` heading.
fn target_rows(report: &str) -> Vec<String> {
    let mut rows = Vec::new();
    let mut in_section = false;
    let mut in_table = false;
    for line in report.lines() {
        if line.starts_with("## ") {
            if in_table {
                break;
            }
            in_section = line.starts_with("## Target");
            continue;
        }
        if !in_section {
            continue;
        }
        if line.starts_with('|') {
            in_table = true;
            // The header and its separator.
            if line.starts_with("| |") || line.starts_with("|---") {
                continue;
            }
            rows.push(line.to_owned());
        } else if in_table {
            break;
        }
    }
    rows
}

fn run(out: &Path) -> Result<usize> {
    let mut table = format!(
        "{SECTION}\n\nGathered from each report by `bench-summary`; a report missing from this run is said so.\n\n\
         | benchmark | target | measured | limit | |\n|---|---|---:|---:|---|\n"
    );
    let mut missed = 0;
    for (file, what) in REPORTS {
        let Ok(text) = std::fs::read_to_string(out.join(file)) else {
            table.push_str(&format!("| {what} | (no {file} in this run) | | | |\n"));
            continue;
        };
        let rows = target_rows(&text);
        if rows.is_empty() {
            table.push_str(&format!("| {what} | ({file} has no targets: a `--quick` run) | | | |\n"));
        }
        for row in rows {
            missed += usize::from(row.contains("missed"));
            table.push_str(&format!("| [{what}]({file}) {row}\n"));
        }
    }
    let path = out.join("results.md");
    let results = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    // Replaces the section of an earlier run; it goes after the title and the
    // paragraphs before the first heading.
    let mut kept = String::new();
    let mut skipping = false;
    for line in results.lines() {
        if line == SECTION {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with("## ") {
            skipping = false;
        }
        if !skipping {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    let at = kept.find("\n## ").map_or(kept.len(), |i| i + 1);
    let text = format!("{}{table}\n{}", &kept[..at], &kept[at..]);
    std::fs::write(&path, text)?;
    print!("{table}");
    Ok(missed)
}
