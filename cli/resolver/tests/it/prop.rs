//! Random small registries: whatever the resolver answers is checked against the requirements, and
//! every "no solution" against a brute-force search over all combinations of versions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::{OnDemand, Registry, id, name, req, v};
use ebpkg_resolver::{ResolveError, ResolveRequest, Shortcut, UpdatePolicy, resolve, resolve_with};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use semver::VersionReq;

const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const VERSIONS: [&str; 7] = ["0.1.0", "1.0.0", "1.1.0", "1.2.0-rc.1", "1.2.0", "2.0.0", "2.1.0-beta.1"];
/// Permissive requirements are listed more than once so that about half the worlds have a solution.
const REQS: [&str; 16] = [
    "^1",
    "^1",
    "^1.1",
    "~1.0",
    ">=1.0.0",
    ">=1.0.0",
    "*",
    "*",
    "^2",
    "=1.2.0-rc.1",
    ">=1.2.0-rc.1",
    "<1.1",
    "^0.1",
    ">=1.1, <2",
    "=2.0.0",
    ">=0.1.0",
];

#[derive(Debug, Clone)]
struct Version {
    version: usize,
    yanked: bool,
    deps: Vec<(usize, usize)>,
}

#[derive(Debug, Clone)]
struct World {
    packages: Vec<Vec<Version>>,
    root: Vec<(usize, usize)>,
    locked: Vec<(usize, usize)>,
    /// 0: keep the lock, 1: update everything, 2: update package `update_one`.
    update: u8,
    update_one: usize,
}

fn arb_version(version: usize) -> impl Strategy<Value = Version> {
    (proptest::bool::weighted(0.1), proptest::collection::vec((0..NAMES.len(), 0..REQS.len()), 0..3))
        .prop_map(move |(yanked, deps)| Version { version, yanked, deps })
}

fn arb_package() -> impl Strategy<Value = Vec<Version>> {
    proptest::sample::subsequence((0..VERSIONS.len()).collect::<Vec<_>>(), 4)
        .prop_flat_map(|vs| vs.into_iter().map(arb_version).collect::<Vec<_>>())
}

fn arb_world() -> impl Strategy<Value = World> {
    (
        proptest::collection::vec(arb_package(), NAMES.len()),
        proptest::collection::vec((0..NAMES.len(), 0..REQS.len()), 1..4),
        proptest::collection::vec((0..NAMES.len(), 0..4usize), 0..4),
        0..3u8,
        0..NAMES.len(),
    )
        .prop_map(|(packages, root, locked, update, update_one)| World {
            packages,
            root,
            locked,
            update,
            update_one,
        })
}

impl World {
    fn registry(&self) -> Registry {
        let mut reg = Registry::new();
        for (p, versions) in self.packages.iter().enumerate() {
            for ver in versions {
                let deps: Vec<(&str, &str)> = ver.deps.iter().map(|&(d, r)| (NAMES[d], REQS[r])).collect();
                if ver.yanked {
                    reg.add_yanked(NAMES[p], VERSIONS[ver.version], &deps);
                } else {
                    reg.add(NAMES[p], VERSIONS[ver.version], &deps);
                }
            }
        }
        reg
    }

    fn locked_versions(&self) -> Vec<(usize, usize)> {
        self.locked.iter().map(|&(p, slot)| (p, self.packages[p][slot].version)).collect()
    }

    fn request(&self) -> ResolveRequest {
        ResolveRequest {
            root: name("app"),
            root_version: v("0.1.0"),
            deps: self.root.iter().map(|&(p, r)| req(NAMES[p], REQS[r])).collect(),
            locked: self.locked_versions().into_iter().map(|(p, ver)| (id(NAMES[p]), v(VERSIONS[ver]))).collect(),
            update: match self.update {
                0 => UpdatePolicy::Nothing,
                1 => UpdatePolicy::All,
                _ => UpdatePolicy::Only(BTreeSet::from([name(NAMES[self.update_one])])),
            },
        }
    }

    fn unlocked(&self, p: usize) -> bool {
        self.update == 1 || (self.update == 2 && self.update_one == p)
    }

    /// Whether version `ver` of package `p` may be chosen: not yanked, or locked and not updated.
    fn choosable(&self, p: usize, ver: &Version) -> bool {
        !ver.yanked || (!self.unlocked(p) && self.locked_versions().contains(&(p, ver.version)))
    }

    /// Every requirement holds for this choice (`None`: package not chosen).
    fn valid(&self, choice: &[Option<usize>]) -> bool {
        let holds = |d: usize, r: usize| {
            choice[d].is_some_and(|slot| {
                VersionReq::parse(REQS[r]).unwrap().matches(&v(VERSIONS[self.packages[d][slot].version]))
            })
        };
        self.root.iter().all(|&(d, r)| holds(d, r))
            && choice.iter().enumerate().all(|(p, slot)| match slot {
                None => true,
                Some(slot) => {
                    let ver = &self.packages[p][*slot];
                    self.choosable(p, ver) && ver.deps.iter().all(|&(d, r)| d != p && holds(d, r))
                }
            })
    }

    /// Tries every combination (5^6 of them).
    fn brute_force_has_solution(&self) -> bool {
        let n = NAMES.len();
        let mut choice = vec![None; n];
        let total = 5usize.pow(n as u32);
        for code in 0..total {
            let mut c = code;
            for slot in choice.iter_mut() {
                *slot = match c % 5 {
                    0 => None,
                    k => Some(k - 1),
                };
                c /= 5;
            }
            if self.valid(&choice) {
                return true;
            }
        }
        false
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn resolutions_are_valid_and_failures_are_real(world in arb_world()) {
        let reg = world.registry();
        let request = world.request();
        match resolve(&request, &reg) {
            Ok(res) => {
                // Same input, same output.
                prop_assert_eq!(&resolve(&request, &reg).unwrap(), &res);
                let slot_of = |p: usize| -> Option<usize> {
                    let chosen = res.version(&id(NAMES[p]))?;
                    world.packages[p].iter().position(|x| v(VERSIONS[x.version]) == *chosen)
                };
                let mut choice = vec![None; NAMES.len()];
                for (pkg, resolved) in &res.packages {
                    let p = NAMES.iter().position(|n| id(n) == *pkg).expect("a package of the registry");
                    let slot = slot_of(p).expect("a published version");
                    choice[p] = Some(slot);
                    let ver = &world.packages[p][slot];
                    prop_assert!(world.choosable(p, ver), "{pkg} {} is yanked and not kept by the lock", resolved.version);
                    // The recorded edges are exactly the dependencies with their chosen versions.
                    let expected: BTreeMap<_, _> = ver.deps.iter()
                        .map(|&(d, _)| (id(NAMES[d]), res.version(&id(NAMES[d])).cloned().expect("dependency resolved")))
                        .collect();
                    let recorded: BTreeMap<_, _> =
                        res.named(&resolved.deps).map(|(id, v)| (id.clone(), v.clone())).collect();
                    prop_assert_eq!(recorded, expected);
                    prop_assert!(resolved.deps.windows(2).all(|w| w[0] < w[1]), "edges sorted by package, each once");
                }
                // Every requirement of the root and of every chosen version holds.
                prop_assert!(world.valid(&choice), "invalid resolution {:?}", res);
                // Nothing unneeded: every package is reachable from the root.
                let mut reached = BTreeSet::new();
                let mut todo: Vec<usize> = world.root.iter().map(|&(p, _)| p).collect();
                while let Some(p) = todo.pop() {
                    if reached.insert(p) {
                        todo.extend(world.packages[p][choice[p].unwrap()].deps.iter().map(|&(d, _)| d));
                    }
                }
                prop_assert_eq!(reached.len(), res.packages.len());
            }
            Err(ResolveError::NoSolution(explanation)) => {
                prop_assert!(!world.brute_force_has_solution(), "a solution exists, yet:\n{}", explanation);
                prop_assert!(!explanation.steps.is_empty() && !explanation.help.is_empty());
                prop_assert!(!explanation.to_string().contains('#'), "index notation leaked:\n{}", explanation);
            }
            Err(ResolveError::UnknownPackage { .. }) => {
                prop_assert!(!world.brute_force_has_solution());
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }

    /// A world whose choices are all settled from the start resolves without PubGrub, to exactly
    /// PubGrub's answer; every other world resolves by PubGrub alone, as if nothing had been tried.
    #[test]
    fn resolving_without_pubgrub_gives_pubgrub_s_answer(world in arb_world()) {
        let reg = world.registry();
        let request = world.request();
        let (by_pubgrub, _) = resolve_with(&request, &reg, Shortcut::Never);
        let (tried, shortcut) = resolve_with(&request, &reg, Shortcut::Try);
        match (&by_pubgrub, &tried) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            _ => prop_assert!(false, "{by_pubgrub:?} against {tried:?}"),
        }
        prop_assert!(!shortcut || tried.is_ok());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Candidates a source makes only when asked (read where it keeps them) give the same
    /// resolutions and explanations as candidates given whole, locked or not, in order or not.
    #[test]
    fn candidates_made_when_asked_resolve_as_candidates_given_whole(world in arb_world()) {
        let reg = world.registry();
        let request = world.request();
        match (resolve(&request, &reg), resolve(&request, &OnDemand(&reg))) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => prop_assert!(false, "{a:?} against {b:?}"),
        }
    }
}

/// The comparison above means something only if both kinds of world are common.
#[test]
fn generated_worlds_often_take_each_path() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut settled, mut not) = (0, 0);
    for _ in 0..300 {
        let world = arb_world().new_tree(&mut runner).unwrap().current();
        match resolve_with(&world.request(), &world.registry(), Shortcut::Try).1 {
            true => settled += 1,
            false => not += 1,
        }
    }
    assert!(settled >= 30 && not >= 30, "{settled} settled, {not} not");
}
