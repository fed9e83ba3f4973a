//! `ci/publish`, the pipeline's publish step, against a file registry: it
//! orders packages by their dependencies, publishes what the registry lacks,
//! skips what it has with the same checksum, changes nothing in a dry run, and
//! stops with exit 1 on a version whose files changed without a bump; against
//! a registry server, its dry run stops where the token's limits would.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::{Run, Sandbox, copy_dir, first_party};
use ebpkg_registry::testing::TestRegistry;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ci/publish")
}

/// Copies these packages into the sandbox's packages/, in this order: the
/// directories to hand the script.
fn copy_packages<'a>(sb: &Sandbox, packages: impl Iterator<Item = &'a PathBuf>) -> Vec<String> {
    let root = sb.path("packages");
    packages
        .map(|p| {
            let dest = root.join(p.file_name().unwrap());
            copy_dir(p, &dest);
            dest.display().to_string()
        })
        .collect()
}

/// Runs ci/publish with `args` on `dirs`, with this build's ebpkg.
fn run_script(sb: &Sandbox, dirs: &[String], args: &str) -> Run {
    sb.shell(sb.dir.path(), &format!("EBPKG=\"$(command -v ebpkg)\" {} {args} {}", script().display(), dirs.join(" ")))
}

fn index_files(registry: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![registry.join("index")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn ci_publish_orders_publishes_skips_and_stops_on_a_changed_version() {
    let sb = Sandbox::new("cipub");
    // Given dependents first: the script finds the order itself.
    let dirs = copy_packages(&sb, first_party().iter().rev());
    let run = |args: &str| run_script(&sb, &dirs, args);
    let registry = sb.path("registry");

    // The README's pipeline on its first day: a dry run against a registry that
    // has none of the packages (it stopped at the first whose dependency is in the
    // set but not yet published).
    let dry = run("--dry-run --no-verify");
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(dry.stderr.contains("checked against a scratch registry"), "{}", dry.stderr);
    assert!(dry.stderr.contains("publishing ddos@1.0.0 (--dry-run)"), "{}", dry.stderr);
    assert!(dry.stderr.contains("8 package(s) checked; nothing was published (--dry-run)"), "{}", dry.stderr);
    assert!(!registry.join("index").exists() || index_files(&registry).is_empty(), "nothing published");

    let first = run("--no-verify");
    assert_eq!(first.code, 0, "{}", first.stderr);
    // Each after its dependencies: meter, sets and sampler before net; net and basic before ddos.
    let at = |name: &str| {
        first.stderr.find(&format!("Published {name}@1.0.0")).unwrap_or_else(|| panic!("{name}: {}", first.stderr))
    };
    for (dep, dependent) in [("meter", "net"), ("sets", "net"), ("sampler", "net"), ("net", "ddos"), ("basic", "ddos")]
    {
        assert!(at(dep) < at(dependent), "{dep} before {dependent}");
    }
    assert!(first.stderr.contains("8 package(s) published or already there"), "{}", first.stderr);
    let published = index_files(&registry);
    assert_eq!(published.len(), 8);

    // Again: everything is there with the same checksum.
    let again = run("--no-verify");
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.stderr.matches("has it already").count(), 8, "{}", again.stderr);
    assert_eq!(index_files(&registry), published, "nothing changed");

    // A bump, in a dry run: checked, not published.
    let meter = sb.path("packages").join("meter/ebpkg.toml");
    let text = std::fs::read_to_string(&meter).unwrap().replacen("version = \"1.0.0\"", "version = \"1.0.1\"", 1);
    std::fs::write(&meter, text).unwrap();
    let dry = run("--dry-run --no-verify");
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(dry.stderr.contains("publishing meter@1.0.1 (--dry-run)"), "{}", dry.stderr);
    assert!(dry.stderr.contains("8 package(s) checked; nothing was published (--dry-run)"), "{}", dry.stderr);
    assert_eq!(index_files(&registry), published, "a dry run publishes nothing");
    let real = run("--no-verify");
    assert_eq!(real.code, 0, "{}", real.stderr);
    assert!(real.stderr.contains("Published meter@1.0.1"), "{}", real.stderr);
    assert_eq!(real.stderr.matches("has it already").count(), 7, "{}", real.stderr);

    // Files changed without a bump: the run stops, exit 1, saying why.
    std::fs::write(sb.path("packages").join("sets/NOTES.md"), "changed after publishing\n").unwrap();
    let changed = run("--no-verify");
    assert_eq!(changed.code, 1, "{}", changed.stderr);
    assert!(changed.stderr.contains("changed without a version bump"), "{}", changed.stderr);
    assert!(changed.stderr.contains("stopped at"), "{}", changed.stderr);
    assert!(
        changed.stderr.contains("the packages before it are published or were already there"),
        "{}",
        changed.stderr
    );
    // A dry run that stops says that nothing was published (it said "the packages before it are published").
    let dry = run("--dry-run --no-verify");
    assert_eq!(dry.code, 1, "{}", dry.stderr);
    assert!(dry.stderr.contains("nothing was published (--dry-run)"), "{}", dry.stderr);

    let usage = sb.shell(sb.dir.path(), &format!("{} --bogus", script().display()));
    assert_eq!(usage.code, 2, "{}", usage.stderr);
}

/// The line of a refusal that holds the server's words (after its status).
fn refusal(stderr: &str) -> &str {
    stderr
        .lines()
        .find_map(|l| l.split_once("answered 403 Forbidden: ").map(|(_, said)| said))
        .unwrap_or_else(|| panic!("no 403 in {stderr}"))
}

/// Against a registry server, with a token limited to some packages: the dry
/// run asks the server about each package and stops where the real run stops,
/// with the same words, having published nothing.
#[test]
fn ci_publish_dry_run_stops_at_the_first_package_the_token_may_not_publish() {
    let server = TestRegistry::start().unwrap();
    let mut sb = Sandbox::new("cipubtok");
    // The README's recipe: an unrestricted token registers the pipeline's key,
    // a narrow one publishes.
    sb.use_server(server.url(), &server.token("ci", &[], &[]).unwrap()).ok();
    let globs = ["alt_mark", "basic", "meter", "s*", "net"];
    let mut create = vec!["token", "create", "ci-publish", "--scope", "publish-new", "--scope", "publish-update"];
    for glob in &globs {
        create.extend(["--package", glob]);
    }
    let narrow = sb.run(sb.dir.path(), &create).ok().stdout.trim().to_owned();
    assert!(narrow.starts_with("ebpkg_"), "{narrow}");
    let dirs = copy_packages(&sb, first_party().iter());
    let run = |args: &str| {
        let script = format!(
            "EBPKG=\"$(command -v ebpkg)\" EBPKG_REGISTRY_TOKEN={narrow} {} --registry {} --source-only --no-verify {args} {}",
            script().display(),
            server.url(),
            dirs.join(" ")
        );
        sb.shell(sb.dir.path(), &script)
    };

    let dry = run("--dry-run");
    assert_eq!(dry.code, 6, "{}", dry.stderr);
    for allowed in ["alt_mark", "basic", "meter", "sampler", "sets", "net"] {
        assert!(dry.stderr.contains(&format!("Skipped publishing {allowed}@1.0.0 (--dry-run)")), "{}", dry.stderr);
    }
    assert!(dry.stderr.contains("publishing ddos@1.0.0 (--dry-run): POST"), "{}", dry.stderr);
    assert!(dry.stderr.contains("/ddos (exit 6); nothing was published (--dry-run)"), "{}", dry.stderr);
    let said = refusal(&dry.stderr).to_owned();
    assert!(said.contains("is limited to packages matching `alt_mark`"), "{said}");
    assert!(said.contains("`ddos` is not one of them"), "{said}");
    let listed = sb.run(sb.dir.path(), &["search", ""]).ok();
    assert!(listed.stdout.starts_with("no package matches"), "nothing was published: {}", listed.stdout);

    let real = run("");
    assert_eq!(real.code, 6, "{}", real.stderr);
    assert!(real.stderr.contains("Published net@1.0.0"), "{}", real.stderr);
    assert!(!real.stderr.contains("Published ddos"), "{}", real.stderr);
    assert!(real.stderr.contains("/ddos (exit 6); the packages before it are published"), "{}", real.stderr);
    assert_eq!(refusal(&real.stderr), said, "the dry run said what the real run says");
}

/// `--attest-kernels host`: each version published (or already there) is put
/// through this kernel's verifier and the signed result attached; a bad list and
/// a dry run are refused before anything.
#[test]
fn ci_publish_attests_each_version_on_this_kernel() {
    common::require_kernel();
    let sb = Sandbox::new("ciatt");
    let dirs = copy_packages(&sb, first_party().iter().filter(|p| ["sets", "sampler"].iter().any(|n| p.ends_with(n))));
    let run = |args: &str| run_script(&sb, &dirs, args);
    let bad = run("--attest-kernels host,hurd");
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("unknown kernel hurd"), "{}", bad.stderr);
    let dry = run("--dry-run --attest-kernels host");
    assert_eq!(dry.code, 2, "{}", dry.stderr);
    assert!(!sb.path("registry").exists(), "nothing was published");

    let published = run("--no-verify --attest-kernels host");
    assert_eq!(published.code, 0, "{}", published.stderr);
    assert!(published.stderr.contains("2 version(s) attested on host"), "{}", published.stderr);
    for (name, index) in [("sets", "se/ts/sets"), ("sampler", "sa/mp/sampler")] {
        let file = sb.path("registry/attestations").join(index).join("1.0.0.json");
        let attestations: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(attestations["attestations"].as_array().unwrap().len(), 1, "{name}: {attestations}");
        let info = sb.run(sb.dir.path(), &["info", name]).ok();
        assert!(info.stdout.contains("← this kernel"), "{name}: {}", info.stdout);
        assert!(info.stdout.contains("verified (1 item; native tier 1 of 1)"), "{name}: {}", info.stdout);
    }
}
