//! Explanations of failed resolutions, compared word for word so that the wording cannot rot unseen.
//! After an intended change, update the expected texts here (and the example in README.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Registry, id, request, v};
use ebpkg_resolver::{Explanation, ResolveError, ResolveRequest, UpdatePolicy, resolve};

fn explain(reg: &Registry, req: &ResolveRequest) -> Explanation {
    match resolve(req, reg) {
        Err(ResolveError::NoSolution(e)) => e,
        other => panic!("expected no solution, got {other:?}"),
    }
}

#[track_caller]
fn assert_text(e: &Explanation, expected: &str) {
    let actual = e.to_string();
    assert!(actual == expected, "explanation differs.\n--- actual ---\n{actual}\n--- expected ---\n{expected}\n");
}

#[test]
fn project_requirement_against_a_dependency_requirement() {
    let mut reg = Registry::new();
    reg.add("ddos", "1.4.0", &[("meter", "^1")]).add("meter", "1.0.0", &[]).add("meter", "1.2.0", &[]).add(
        "meter",
        "2.0.0",
        &[],
    );
    let e = explain(&reg, &request(&[("ddos", "^1.4"), ("meter", "^2")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because app depends on ddos ^1.4 and ddos 1.4.0 depends on meter ^1, app requires meter ^1.
  2. And because app depends on meter ^2, app's requirements cannot all be met.
help: relax app's requirement on meter (^2) to one that ddos 1.4.0 also accepts (^1), or use a version of ddos that works with meter ^2 (none is published)",
    );
    assert_eq!(e.steps.len(), 2);
    assert_eq!(e.help.len(), 1);
}

#[test]
fn suggests_a_newer_dependent_outside_the_project_requirement() {
    let mut reg = Registry::new();
    for ddos in ["1.0.0", "1.2.0", "1.4.0"] {
        reg.add("ddos", ddos, &[("meter", "^1")]);
    }
    reg.add("ddos", "2.0.0", &[("meter", "^2")]).add("meter", "1.0.0", &[]).add("meter", "2.0.0", &[]);
    let e = explain(&reg, &request(&[("ddos", "^1"), ("meter", "^2")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because app depends on ddos ^1 and ddos 1.0.0..=1.4.0 depends on meter ^1, app requires meter ^1.
  2. And because app depends on meter ^2, app's requirements cannot all be met.
help: relax app's requirement on meter (^2) to one that ddos 1.0.0..=1.4.0 also accepts (^1), or use a version of ddos that works with meter ^2 (ddos 2.0.0 does, but app requires ddos ^1, so change that too)",
    );
}

#[test]
fn only_yanked_versions_match() {
    let mut reg = Registry::new();
    reg.add("meter", "1.0.0", &[]).add_yanked("meter", "2.0.0", &[]);
    let e = explain(&reg, &request(&[("meter", "^2")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because app depends on meter ^2 and meter 2.0.0 is yanked, app's requirements cannot all be met.
help: meter 2.0.0 is yanked: new resolutions never choose a yanked version (a lockfile that already names one keeps it); require a version that is not yanked (available: 1.0.0)",
    );
}

#[test]
fn updating_away_from_a_locked_yanked_version() {
    let mut reg = Registry::new();
    reg.add("meter", "1.0.0", &[]).add_yanked("meter", "1.1.0", &[]);
    let mut req = request(&[("meter", "=1.1.0")]);
    req.locked = vec![(id("meter"), v("1.1.0"))];
    assert!(resolve(&req, &reg).is_ok());
    req.update = UpdatePolicy::All;
    let e = explain(&reg, &req);
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because app depends on meter =1.1.0 and meter 1.1.0 is yanked, app's requirements cannot all be met.
help: meter 1.1.0 is yanked: new resolutions never choose a yanked version (a lockfile that already names one keeps it); require a version that is not yanked (available: 1.0.0)",
    );
}

#[test]
fn nothing_matches_but_a_pre_release_would() {
    let mut reg = Registry::new();
    reg.add("meter", "1.2.0", &[]).add("meter", "1.3.0-rc.1", &[]);
    let e = explain(&reg, &request(&[("meter", "^1.3")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because app depends on meter ^1.3 (no published version matches), app's requirements cannot all be met.
help: no version of meter matches ^1.3 (available: 1.2.0, 1.3.0-rc.1)
help: meter 1.3.0-rc.1 exists but is a pre-release, and pre-releases are only chosen when the requirement names one (e.g. `>=1.3.0-rc.1` instead of `^1.3`)",
    );
}

#[test]
fn two_dependencies_disagree() {
    let mut reg = Registry::new();
    reg.add("ddos", "1.0.0", &[("meter", "^1")])
        .add("ddos", "1.1.0", &[("meter", "^1")])
        .add("shaper", "1.0.0", &[("meter", "^1")])
        .add("shaper", "2.0.0", &[("meter", "^2")])
        .add("meter", "1.0.0", &[])
        .add("meter", "2.0.0", &[]);
    let e = explain(&reg, &request(&[("ddos", "^1"), ("shaper", "^2")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because every version of ddos depends on meter ^1 and shaper 2.0.0 depends on meter ^2, ddos and shaper 2.0.0 cannot be used together.
  2. And because app depends on ddos ^1 and shaper ^2, app's requirements cannot all be met.
help: every version of ddos needs meter ^1 but shaper 2.0.0 needs meter ^2, and no version of meter satisfies both; ddos 1.1.0 and shaper 1.0.0 agree on meter, but app's requirements exclude that pair, so relax them to allow it",
    );
}

#[test]
fn branching_derivation_refers_back_to_earlier_steps() {
    let mut reg = Registry::new();
    reg.add("foo", "1.0.0", &[("a", "^1"), ("b", "^1")])
        .add("foo", "1.1.0", &[("x", "^1"), ("y", "^1")])
        .add("a", "1.0.0", &[("b", "^2")])
        .add("b", "1.0.0", &[])
        .add("b", "2.0.0", &[])
        .add("x", "1.0.0", &[("y", "^2")])
        .add("y", "1.0.0", &[])
        .add("y", "2.0.0", &[]);
    let e = explain(&reg, &request(&[("foo", "^1")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because foo 1.0.0 depends on a ^1 and a 1.0.0 depends on b ^2, foo 1.0.0 requires b ^2.
  2. And because foo 1.0.0 depends on b ^1, foo 1.0.0 cannot be used.
  3. Because foo 1.1.0 depends on x ^1 and x 1.0.0 depends on y ^2, foo 1.1.0 requires y ^2.
  4. And because foo 1.1.0 depends on y ^1, foo 1.1.0 cannot be used.
  5. And because foo 1.0.0 cannot be used (step 2), no version of foo can be used.
  6. And because app depends on foo ^1, app's requirements cannot all be met.
help: a 1.0.0 needs b ^2 but foo 1.0.0 needs b ^1, and no version of b satisfies both
help: x 1.0.0 needs y ^2 but foo 1.1.0 needs y ^1, and no version of y satisfies both",
    );
}

#[test]
fn a_chain_of_dependencies_ends_in_a_conflict_with_the_project() {
    let mut reg = Registry::new();
    reg.add("a", "1.0.0", &[("b", "^1")])
        .add("b", "1.0.0", &[("c", "^1")])
        .add("b", "1.1.0", &[("c", "^1")])
        .add("c", "1.0.0", &[("d", "^1")])
        .add("d", "1.0.0", &[])
        .add("d", "2.0.0", &[]);
    let e = explain(&reg, &request(&[("a", "^1"), ("d", "^2")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because every version of b depends on c ^1 and c 1.0.0 depends on d ^1, every version of b requires d ^1.
  2. And because a 1.0.0 depends on b ^1, a 1.0.0 requires d ^1.
  3. And because app depends on a ^1 and d ^2, app's requirements cannot all be met.
help: relax app's requirement on d (^2) to one that c 1.0.0 also accepts (^1), or use a version of c that works with d ^2 (none is published)",
    );
}

#[test]
fn ranges_of_versions_are_shown_as_written_or_as_version_runs() {
    let mut reg = Registry::new();
    for minor in 0..12 {
        reg.add("meter", &format!("1.{minor}.0"), &[]);
    }
    for minor in 0..3 {
        reg.add("ddos", &format!("1.{minor}.0"), &[("meter", "~1.2")]);
    }
    reg.add("ddos", "1.3.0", &[("meter", ">=1.4, <1.9")]);
    let e = explain(&reg, &request(&[("ddos", "^1"), ("meter", ">=1.10")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because ddos 1.0.0..=1.2.0 depends on meter ~1.2 and ddos 1.3.0 depends on meter >=1.4, <1.9, every version of ddos requires meter 1.2.0 | 1.4.0..=1.8.0.
  2. And because app depends on ddos ^1 and meter >=1.10, app's requirements cannot all be met.
help: relax app's requirement on meter (>=1.10) to one that ddos 1.0.0..=1.2.0 also accepts (~1.2), or use a version of ddos that works with meter >=1.10 (none is published)
help: relax app's requirement on meter (>=1.10) to one that ddos 1.3.0 also accepts (>=1.4, <1.9), or use a version of ddos that works with meter >=1.10 (none is published)",
    );
}

#[test]
fn a_transitive_dependency_that_does_not_exist() {
    let mut reg = Registry::new();
    reg.list_names = true;
    reg.add("ddos", "1.0.0", &[("metr", "^1")]).add("meter", "1.0.0", &[]);
    let e = explain(&reg, &request(&[("ddos", "^1")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because app depends on ddos ^1 and ddos 1.0.0 depends on metr ^1 (no version of metr is published), app's requirements cannot all be met.
help: no package named `metr` is published in the default registry; did you mean `meter`?",
    );
}

#[test]
fn a_version_that_depends_on_itself() {
    let mut reg = Registry::new();
    reg.add("meter", "1.0.0", &[("meter", "^1")]);
    let e = explain(&reg, &request(&[("meter", "^1")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because app depends on meter ^1 and meter 1.0.0 depends on itself, app's requirements cannot all be met.
help: meter 1.0.0 lists itself as a dependency and can never be chosen; ask its maintainers for a fixed release",
    );
}

#[test]
fn a_package_of_another_registry() {
    let mut reg = Registry::new();
    reg.add("meter@https://r.example", "1.0.0", &[]).add("ddos", "1.0.0", &[("meter@https://r.example", "^2")]);
    let e = explain(&reg, &request(&[("ddos", "^1")]));
    assert_text(
        &e,
        "\
cannot find versions for the dependencies of app:
  1. Because app depends on ddos ^1 and ddos 1.0.0 depends on meter (https://r.example/) ^2 (no published version matches), app's requirements cannot all be met.
help: no version of meter (https://r.example/) matches ^2 (available: 1.0.0)",
    );
}

#[test]
fn explanations_are_deterministic() {
    let mut reg = Registry::new();
    reg.add("foo", "1.0.0", &[("a", "^1"), ("b", "^1")])
        .add("foo", "1.1.0", &[("x", "^1"), ("y", "^1")])
        .add("a", "1.0.0", &[("b", "^2")])
        .add("b", "1.0.0", &[])
        .add("b", "2.0.0", &[])
        .add("x", "1.0.0", &[("y", "^2")])
        .add("y", "1.0.0", &[])
        .add("y", "2.0.0", &[]);
    let req = request(&[("foo", "^1")]);
    let first = explain(&reg, &req);
    for _ in 0..5 {
        assert_eq!(explain(&reg, &req), first);
    }
}
