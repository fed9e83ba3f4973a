//! Resolution semantics: what is chosen, and when.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;

use common::{Registry, id, name, request, v};
use ebpkg_resolver::{
    QualifiedName, Resolution, ResolveError, ResolveRequest, SourceError, UpdatePolicy, VersionSource, Versions,
    resolve,
};

fn version_of(r: &Resolution, pkg: &str) -> String {
    r.version(&id(pkg)).map(ToString::to_string).unwrap_or_else(|| format!("{pkg} not resolved"))
}

fn locked(mut req: ResolveRequest, lock: &[(&str, &str)], update: UpdatePolicy) -> ResolveRequest {
    req.locked = lock.iter().map(|(p, ver)| (id(p), v(ver))).collect();
    req.update = update;
    req
}

fn only(names: &[&str]) -> UpdatePolicy {
    UpdatePolicy::Only(names.iter().map(|n| name(n)).collect::<BTreeSet<_>>())
}

#[test]
fn diamond_takes_the_highest_version_both_sides_accept() {
    let mut reg = Registry::new();
    reg.add("a", "1.0.0", &[("b", "^1"), ("c", "^1")]).add("b", "1.0.0", &[("d", "^1.2")]).add(
        "c",
        "1.0.0",
        &[("d", "^1.4")],
    );
    for d in ["1.1.0", "1.2.0", "1.3.5", "1.4.0", "1.4.7", "2.0.0"] {
        reg.add("d", d, &[]);
    }
    let r = resolve(&request(&[("a", "^1")]), &reg).unwrap();
    assert_eq!(version_of(&r, "d"), "1.4.7");
    assert_eq!(r.packages.len(), 4);
    // The dependency edges are recorded with the versions chosen for them.
    assert_eq!(r.dependencies(&id("a")), [(&id("b"), &v("1.0.0")), (&id("c"), &v("1.0.0"))]);
    assert_eq!(r.dependencies(&id("c")), [(&id("d"), &v("1.4.7"))]);
    assert_eq!(r.root_dependencies(), [(&id("a"), &v("1.0.0"))]);
    // Every package is asked for once.
    for p in ["a", "b", "c", "d"] {
        assert_eq!(reg.fetch_count(p), 1, "{p}");
    }
}

#[test]
fn caret_and_tilde_follow_cargo() {
    let mut reg = Registry::new();
    for ver in ["0.2.3", "0.2.9", "0.3.0", "1.2.3", "1.2.8", "1.3.0", "1.9.0", "2.0.0"] {
        reg.add("m", ver, &[]);
    }
    let pick = |text: &str| version_of(&resolve(&request(&[("m", text)]), &reg).unwrap(), "m");
    assert_eq!(pick("^1.2.3"), "1.9.0");
    assert_eq!(pick("1.2.3"), "1.9.0");
    assert_eq!(pick("~1.2.3"), "1.2.8");
    assert_eq!(pick("~1.2"), "1.2.8");
    assert_eq!(pick("^0.2.3"), "0.2.9");
    assert_eq!(pick("1.*"), "1.9.0");
    assert_eq!(pick("*"), "2.0.0");
    assert_eq!(pick(">=1.2, <1.5"), "1.3.0");
    assert_eq!(pick("=1.2.3"), "1.2.3");
}

#[test]
fn pre_releases_are_chosen_only_when_a_requirement_names_one() {
    let mut reg = Registry::new();
    for ver in ["1.2.0", "1.3.0-rc.1"] {
        reg.add("m", ver, &[]);
    }
    let pick = |text: &str| resolve(&request(&[("m", text)]), &reg).map(|r| version_of(&r, "m"));
    assert_eq!(pick("^1").unwrap(), "1.2.0");
    assert_eq!(pick(">=1.0.0").unwrap(), "1.2.0");
    assert_eq!(pick(">=1.3.0-rc.1").unwrap(), "1.3.0-rc.1");
    assert_eq!(pick("=1.3.0-rc.1").unwrap(), "1.3.0-rc.1");
    assert!(matches!(pick("^1.3"), Err(ResolveError::NoSolution(_))));

    // A pre-release between two releases is skipped by a plain range, which still reaches past it.
    let mut reg = Registry::new();
    for ver in ["1.4.0", "1.5.0-rc.1", "1.5.0", "1.6.0-beta.1"] {
        reg.add("m", ver, &[]);
    }
    let r = resolve(&request(&[("m", ">=1.0.0")]), &reg).unwrap();
    assert_eq!(version_of(&r, "m"), "1.5.0");
    let r = resolve(&request(&[("m", ">=1.0.0, <1.5.0")]), &reg).unwrap();
    assert_eq!(version_of(&r, "m"), "1.4.0");
    // A pre-release of the same version as the comparator's does match.
    let r = resolve(&request(&[("m", ">=1.5.0-rc.1, <1.5.0")]), &reg).unwrap();
    assert_eq!(version_of(&r, "m"), "1.5.0-rc.1");
}

#[test]
fn a_transitive_requirement_naming_a_pre_release_allows_it() {
    let mut reg = Registry::new();
    reg.add("a", "1.0.0", &[("m", ">=1.3.0-rc.1")]).add("m", "1.2.0", &[]).add("m", "1.3.0-rc.2", &[]);
    let r = resolve(&request(&[("a", "^1")]), &reg).unwrap();
    assert_eq!(version_of(&r, "m"), "1.3.0-rc.2");
    // Every requirement must match, and `*` does not match pre-releases: as in cargo.
    assert!(matches!(resolve(&request(&[("a", "^1"), ("m", "*")]), &reg), Err(ResolveError::NoSolution(_))));
}

#[test]
fn yanked_versions_are_never_chosen_anew() {
    let mut reg = Registry::new();
    reg.add("m", "1.0.0", &[]).add_yanked("m", "1.1.0", &[]);
    let r = resolve(&request(&[("m", "^1")]), &reg).unwrap();
    assert_eq!(version_of(&r, "m"), "1.0.0");
}

#[test]
fn a_locked_yanked_version_is_kept_until_updated() {
    let mut reg = Registry::new();
    reg.add("m", "1.0.0", &[]).add_yanked("m", "1.1.0", &[]).add("n", "1.0.0", &[]).add("n", "1.1.0", &[]);
    let base = || request(&[("m", "^1"), ("n", "^1")]);
    let lock = [("m", "1.1.0"), ("n", "1.0.0")];

    let r = resolve(&locked(base(), &lock, UpdatePolicy::Nothing), &reg).unwrap();
    assert_eq!((version_of(&r, "m"), version_of(&r, "n")), ("1.1.0".into(), "1.0.0".into()));
    // Updating another package keeps it.
    let r = resolve(&locked(base(), &lock, only(&["n"])), &reg).unwrap();
    assert_eq!((version_of(&r, "m"), version_of(&r, "n")), ("1.1.0".into(), "1.1.0".into()));
    // Updating it, or everything, moves away from it.
    let r = resolve(&locked(base(), &lock, only(&["m"])), &reg).unwrap();
    assert_eq!((version_of(&r, "m"), version_of(&r, "n")), ("1.0.0".into(), "1.0.0".into()));
    let r = resolve(&locked(base(), &lock, UpdatePolicy::All), &reg).unwrap();
    assert_eq!((version_of(&r, "m"), version_of(&r, "n")), ("1.0.0".into(), "1.1.0".into()));
}

#[test]
fn only_yanked_versions_matching_is_an_error_that_says_so() {
    let mut reg = Registry::new();
    reg.add("m", "1.0.0", &[]).add_yanked("m", "2.0.0", &[]);
    let err = resolve(&request(&[("m", "^2")]), &reg).unwrap_err();
    let ResolveError::NoSolution(e) = err else { panic!("{err}") };
    assert!(e.steps[0].contains("m 2.0.0 is yanked"), "{e}");
    assert!(e.help[0].contains("available: 1.0.0"), "{e}");
}

#[test]
fn locked_versions_are_preferred_while_they_still_fit() {
    let mut reg = Registry::new();
    for ver in ["1.0.0", "1.1.0", "1.2.0"] {
        reg.add("x", ver, &[]).add("y", ver, &[]);
    }
    let base = || request(&[("x", "^1"), ("y", "^1")]);
    let lock = [("x", "1.0.0"), ("y", "1.1.0")];

    let r = resolve(&locked(base(), &lock, UpdatePolicy::Nothing), &reg).unwrap();
    assert_eq!((version_of(&r, "x"), version_of(&r, "y")), ("1.0.0".into(), "1.1.0".into()));
    let r = resolve(&locked(base(), &lock, UpdatePolicy::All), &reg).unwrap();
    assert_eq!((version_of(&r, "x"), version_of(&r, "y")), ("1.2.0".into(), "1.2.0".into()));
    let r = resolve(&locked(base(), &lock, only(&["x"])), &reg).unwrap();
    assert_eq!((version_of(&r, "x"), version_of(&r, "y")), ("1.2.0".into(), "1.1.0".into()));
}

#[test]
fn a_lock_that_no_longer_fits_a_changed_requirement_is_re_resolved() {
    let mut reg = Registry::new();
    for ver in ["1.0.0", "1.5.0", "2.0.0", "2.3.0"] {
        reg.add("x", ver, &[]);
    }
    let r = resolve(&locked(request(&[("x", "^2")]), &[("x", "1.5.0")], UpdatePolicy::Nothing), &reg).unwrap();
    assert_eq!(version_of(&r, "x"), "2.3.0");
    // A locked version that is no longer published is simply not available.
    let r = resolve(&locked(request(&[("x", "^1")]), &[("x", "1.2.0")], UpdatePolicy::Nothing), &reg).unwrap();
    assert_eq!(version_of(&r, "x"), "1.5.0");
}

#[test]
fn updating_one_package_moves_others_only_when_it_must() {
    let mut reg = Registry::new();
    reg.add("x", "1.0.0", &[("y", "^1.0")])
        .add("x", "1.1.0", &[("y", "^1.2")])
        .add("y", "1.0.0", &[])
        .add("y", "1.2.0", &[])
        .add("y", "1.3.0", &[])
        .add("z", "1.0.0", &[])
        .add("z", "1.1.0", &[]);
    let lock = [("x", "1.0.0"), ("y", "1.0.0"), ("z", "1.0.0")];
    let r = resolve(&locked(request(&[("x", "^1"), ("z", "^1")]), &lock, only(&["x"])), &reg).unwrap();
    // x moves; y must move for it, but only as far as the lowest-change choice PubGrub reaches from its
    // lock (any 1.2+); z stays.
    assert_eq!(version_of(&r, "x"), "1.1.0");
    assert!(["1.2.0", "1.3.0"].contains(&version_of(&r, "y").as_str()));
    assert_eq!(version_of(&r, "z"), "1.0.0");
}

#[test]
fn the_same_name_in_two_registries_is_two_packages() {
    let mut reg = Registry::new();
    reg.add("meter", "1.0.0", &[])
        .add("meter", "1.4.0", &[])
        .add("meter@https://mirror.example", "2.0.0", &[])
        .add("meter@https://mirror.example", "3.1.0", &[])
        .add("ddos", "1.0.0", &[("meter@https://mirror.example", "^3")]);
    let r = resolve(&request(&[("meter", "^1"), ("ddos", "^1")]), &reg).unwrap();
    assert_eq!(r.packages.len(), 3);
    assert_eq!(version_of(&r, "meter"), "1.4.0");
    assert_eq!(r.version(&id("meter@https://mirror.example")).unwrap().to_string(), "3.1.0");
    assert_eq!(id("meter@https://mirror.example").to_string(), "meter (https://mirror.example/)");
}

#[test]
fn names_differing_in_case_of_dash_or_underscore_are_one_package() {
    let mut reg = Registry::new();
    reg.add("my-pkg", "1.0.0", &[]).add("my-pkg", "1.1.0", &[]).add("a", "1.0.0", &[("my_pkg", "=1.0.0")]);
    let r = resolve(&request(&[("my-pkg", "^1"), ("a", "^1")]), &reg).unwrap();
    assert_eq!(r.packages.len(), 2);
    assert_eq!(version_of(&r, "my_pkg"), "1.0.0");
    assert_eq!(reg.fetch_count("my-pkg"), 1);
}

#[test]
fn backtracks_to_an_older_version_when_the_newest_conflicts() {
    let mut reg = Registry::new();
    reg.add("a", "1.0.0", &[("b", "^1")])
        .add("a", "1.1.0", &[("b", "^2")])
        .add("b", "1.0.0", &[])
        .add("b", "2.0.0", &[])
        .add("c", "1.0.0", &[("b", "^1")]);
    let r = resolve(&request(&[("a", "^1"), ("c", "^1")]), &reg).unwrap();
    assert_eq!((version_of(&r, "a"), version_of(&r, "b")), ("1.0.0".into(), "1.0.0".into()));
}

#[test]
fn a_version_that_depends_on_itself_is_skipped() {
    let mut reg = Registry::new();
    reg.add("m", "1.0.0", &[]).add("m", "1.1.0", &[("m", "^1")]);
    let r = resolve(&request(&[("m", "^1")]), &reg).unwrap();
    assert_eq!(version_of(&r, "m"), "1.0.0");
}

/// A conflict at the end of a chain of single versions is found before the packages around it are read
/// further: neither the walk tried first nor PubGrub reads what the wide packages depend on.
#[test]
fn a_conflict_down_a_chain_of_single_versions_is_found_before_the_wide_packages_are_read() {
    let mut reg = Registry::new();
    let names: Vec<(String, String)> = (0..20).map(|i| (format!("wide{i}"), format!("under{i}"))).collect();
    let mut root: Vec<(&str, &str)> = vec![("x", "^2"), ("chain1", "^1")];
    for (wide, under) in &names {
        for v in ["1.0.0", "1.1.0", "1.2.0"] {
            reg.add(wide, v, &[(under, "^1")]).add(under, v, &[]);
        }
        root.push((wide, "^1"));
    }
    reg.add("x", "1.0.0", &[]).add("x", "2.0.0", &[]);
    reg.add("chain1", "1.0.0", &[("chain2", "^1")]).add("chain2", "1.0.0", &[("x", "=1.0.0")]);
    assert!(matches!(resolve(&request(&root), &reg), Err(ResolveError::NoSolution(_))));
    for (_, under) in &names {
        assert_eq!(reg.fetch_count(under), 0, "{under}");
    }
}

#[test]
fn an_unknown_package_is_reported_with_close_names() {
    let mut reg = Registry::new();
    reg.list_names = true;
    reg.add("meter", "1.0.0", &[]).add("metre", "1.0.0", &[]).add("net", "1.0.0", &[]);
    let err = resolve(&request(&[("metr", "^1")]), &reg).unwrap_err();
    match &err {
        ResolveError::UnknownPackage { pkg, required_by, suggestions } => {
            assert_eq!(*pkg, id("metr"));
            assert_eq!(*required_by, name("app"));
            assert_eq!(*suggestions, vec![name("meter"), name("metre")]);
        }
        other => panic!("{other}"),
    }
    assert_eq!(
        err.to_string(),
        "app depends on `metr`, which is not in the default registry; did you mean `meter` or `metre`?"
    );
    // Without a list of names there is nothing to suggest; another registry is named.
    reg.list_names = false;
    let err = resolve(&request(&[("meter@https://r.example", "^1")]), &reg).unwrap_err();
    assert_eq!(err.to_string(), "app depends on `meter`, which is not in registry https://r.example/");
}

#[test]
fn output_is_deterministic_whatever_order_the_source_lists_versions_in() {
    let mut reg = Registry::new();
    for i in 0..30 {
        let deps: Vec<(String, &str)> =
            (0..i).filter(|j| (i * 7 + j) % 5 == 0).map(|j| (format!("p{j}"), "^1")).collect();
        let deps: Vec<(&str, &str)> = deps.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        for ver in ["1.0.0", "1.1.0", "1.2.0", "2.0.0"] {
            reg.add(&format!("p{i}"), ver, &deps);
        }
    }
    let req = request(&[("p29", "^1"), ("p28", "^1"), ("p27", "^1")]);
    let first = resolve(&req, &reg).unwrap();
    for _ in 0..3 {
        assert_eq!(resolve(&req, &reg).unwrap(), first);
    }
    for list in reg.packages.values_mut() {
        list.reverse();
    }
    assert_eq!(resolve(&req, &reg).unwrap(), first);
    let keys: Vec<String> = first.packages.iter().map(|(id, _)| id.to_string()).collect();
    let mut sorted = keys.clone();
    sorted.sort_by_key(|k| k.replace('-', "_"));
    assert_eq!(keys, sorted);
}

/// Every package but `broken` (which cannot be read) has one version depending on `broken`; counts
/// how often `broken` is asked for.
#[derive(Default)]
struct Failing {
    asked: std::sync::atomic::AtomicUsize,
}

impl VersionSource for Failing {
    fn versions(&self, pkg: &QualifiedName) -> Result<Versions, SourceError> {
        if pkg.name.as_str() == "broken" {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Err("index file is not valid JSON".into());
        }
        Ok(Versions::of([(v("1.0.0"), false, vec![common::req("broken", "^1")].into())]))
    }
}

/// A read that fails ends the walk tried before PubGrub; PubGrub then gets that error rather than
/// asking again (a failing network read would otherwise be waited on twice).
#[test]
fn source_errors_name_the_package_which_is_asked_for_once() {
    let source = Failing::default();
    let err = resolve(&request(&[("fine", "^1")]), &source).unwrap_err();
    assert!(matches!(&err, ResolveError::Source { pkg, .. } if *pkg == id("broken")), "{err:?}");
    assert_eq!(err.to_string(), "could not read the versions of broken: index file is not valid JSON");
    assert_eq!(source.asked.load(std::sync::atomic::Ordering::Relaxed), 1);
    let err = resolve(&request(&[("broken", "^1")]), &Failing::default()).unwrap_err();
    assert!(matches!(&err, ResolveError::Source { pkg, .. } if *pkg == id("broken")), "{err:?}");
}

/// `lib`'s versions 1.0.0–1.3.0 each with its own dependency list (on `dep`, at
/// a different requirement), counting which lists are read; list 3 (of 1.3.0)
/// cannot be read when `damaged`.
struct Lazy {
    read: std::sync::Mutex<Vec<u32>>,
    lists: Vec<std::sync::Arc<[ebpkg_resolver::Requirement]>>,
    damaged: bool,
}

impl ebpkg_resolver::DepLists for Lazy {
    fn list(&self, k: u32) -> Result<&[ebpkg_resolver::Requirement], SourceError> {
        self.read.lock().unwrap().push(k);
        match self.lists.get(k as usize) {
            Some(_) if self.damaged && k == 3 => Err("list 3 is damaged".into()),
            Some(list) => Ok(list),
            None => Err("no such list".into()),
        }
    }
}

struct LazySource(std::sync::Arc<Lazy>);

impl VersionSource for LazySource {
    fn versions(&self, pkg: &QualifiedName) -> Result<Versions, SourceError> {
        Ok(match pkg.name.as_str() {
            "lib" => Versions {
                candidates: std::sync::Arc::new(
                    (0..4u32)
                        .map(|k| ebpkg_resolver::Candidate { version: v(&format!("1.{k}.0")), yanked: false, deps: k })
                        .collect::<Vec<_>>(),
                ),
                deps: self.0.clone(),
                // True, but a source may always say false: the resolver sorts its own list.
                ascending: false,
            },
            "dep" => Versions::of((0..4).map(|k| (v(&format!("1.0.{k}")), false, std::sync::Arc::from([])))),
            _ => Versions::none(),
        })
    }
}

fn lazy(damaged: bool) -> std::sync::Arc<Lazy> {
    let lists = (0..4).map(|k| vec![common::req("dep", &format!(">=1.0.{k}, <2"))].into()).collect();
    std::sync::Arc::new(Lazy { read: Default::default(), lists, damaged })
}

#[test]
fn only_the_dependency_lists_of_versions_tried_are_read() {
    let lists = lazy(false);
    let r = resolve(&request(&[("lib", "^1")]), &LazySource(lists.clone())).unwrap();
    assert_eq!(version_of(&r, "lib"), "1.3.0");
    let read: BTreeSet<u32> = lists.read.lock().unwrap().iter().copied().collect();
    assert_eq!(read, BTreeSet::from([3]), "the newest version's list only");
}

#[test]
fn a_dependency_list_that_cannot_be_read_fails_naming_its_package() {
    let err = resolve(&request(&[("lib", "^1")]), &LazySource(lazy(true))).unwrap_err();
    assert!(matches!(&err, ResolveError::Source { pkg, .. } if *pkg == id("lib")), "{err:?}");
    assert_eq!(err.to_string(), "could not read the versions of lib: list 3 is damaged");
}

#[test]
fn a_project_without_dependencies_resolves_to_nothing() {
    let reg = Registry::new();
    let r = resolve(&request(&[]), &reg).unwrap();
    assert!(r.packages.is_empty() && r.root_deps.is_empty());
}

#[test]
fn two_requirements_on_one_package_both_apply() {
    let mut reg = Registry::new();
    for ver in ["1.0.0", "1.4.0", "1.9.0"] {
        reg.add("m", ver, &[]);
    }
    reg.add("a", "1.0.0", &[("m", ">=1.2"), ("m", "<1.5")]);
    let r = resolve(&request(&[("a", "^1")]), &reg).unwrap();
    assert_eq!(version_of(&r, "m"), "1.4.0");
    assert_eq!(r.dependencies(&id("a")), [(&id("m"), &v("1.4.0"))]);
}

#[test]
fn each_chosen_version_says_where_its_source_listed_it() {
    // Listed out of order, and once in order: the resolver sorts its own view, or uses the list as is.
    for versions in [&["1.0.0", "2.0.0", "1.5.0", "1.2.0"][..], &["1.0.0", "1.2.0", "1.5.0", "2.0.0"][..]] {
        let mut reg = Registry::new();
        for ver in versions {
            reg.add("net", ver, &[("log", "^1")]);
        }
        reg.add("log", "1.0.0", &[]).add("log", "1.1.0", &[]);
        let resolution = resolve(&request(&[("net", "^1")]), &reg).unwrap();
        let net = resolution.get(&id("net")).unwrap();
        assert_eq!(net.version, v("1.5.0"));
        let listed = versions.iter().position(|ver| *ver == "1.5.0").unwrap();
        assert_eq!(net.origin.position as usize, listed, "{versions:?}");
        assert_eq!(resolution.get(&id("log")).unwrap().origin.position, 1);
        // Lists given whole keep no index lines to pin from.
        assert!(net.origin.lists.pin_of(net.origin.position, &net.version).is_none());
    }
}
