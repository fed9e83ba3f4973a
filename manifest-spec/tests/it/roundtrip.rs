//! Property tests: lockfiles and index lines round-trip, and their text does not
//! depend on the order things were added in.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly on purpose

use std::collections::BTreeMap;

use ebpkg_spec::index::{ArgSignature, ChainSummary, IndexDependency, LoaderSummary, MapLayout, ProgramSummary};
use ebpkg_spec::manifest::{Field, KernelReq};
use ebpkg_spec::types::{EndsPacket, FieldType, Hook, IntType, KernelVersion, KeyId, Sha256Digest};
use ebpkg_spec::{IndexEntry, ItemName, LockedDependency, LockedPackage, Lockfile, PackageName, RegistryId};
use proptest::prelude::*;
use semver::{Version, VersionReq};

fn package_name() -> impl Strategy<Value = PackageName> {
    "[a-z][a-z0-9_-]{0,12}".prop_filter_map("valid package name", |s| PackageName::new(&s).ok())
}

fn item_name() -> impl Strategy<Value = ItemName> {
    "[a-z][a-z0-9_]{0,12}".prop_filter_map("valid item name", |s| ItemName::new(&s).ok())
}

fn version() -> impl Strategy<Value = Version> {
    (0u64..20, 0u64..20, 0u64..20, prop::option::of("(alpha|beta|rc)\\.[1-9][0-9]?")).prop_map(|(a, b, c, pre)| {
        let text = match pre {
            Some(p) => format!("{a}.{b}.{c}-{p}"),
            None => format!("{a}.{b}.{c}"),
        };
        Version::parse(&text).unwrap()
    })
}

fn version_req() -> impl Strategy<Value = VersionReq> {
    (0u64..5, 0u64..10, 0usize..6).prop_map(|(a, b, form)| {
        let text = match form {
            0 => format!("^{a}.{b}"),
            1 => format!("~{a}.{b}.1"),
            2 => format!("{a}.*"),
            3 => format!(">={a}.{b}, <{}", a + 1),
            4 => "*".to_owned(),
            _ => format!("={a}.{b}.0"),
        };
        VersionReq::parse(&text).unwrap()
    })
}

fn digest() -> impl Strategy<Value = Sha256Digest> {
    any::<[u8; 32]>().prop_map(Sha256Digest)
}

fn source() -> impl Strategy<Value = RegistryId> {
    prop_oneof![
        Just("https://registry.ebpkg.dev/".to_owned()),
        "[a-z]{1,8}".prop_map(|s| format!("file:///srv/{s}")),
        // Quotes and backslashes, percent-encoded or read as `/`.
        "[a-z\"\\\\]{1,8}".prop_map(|s| format!("https://example.org/{s}")),
    ]
    .prop_map(|url| RegistryId::parse_url(&url).unwrap())
}

/// A consistent lockfile: every dependency names a package of the file.
fn lockfile_packages() -> impl Strategy<Value = Vec<LockedPackage>> {
    prop::collection::btree_map(
        (package_name(), version()),
        (source(), digest(), prop::option::of(any::<[u8; 32]>().prop_map(KeyId))),
        0..12,
    )
    .prop_flat_map(|pkgs: BTreeMap<(PackageName, Version), (RegistryId, Sha256Digest, Option<KeyId>)>| {
        let keys: Vec<(PackageName, Version)> = pkgs.keys().cloned().collect();
        let n = keys.len();
        let deps = prop::collection::vec(prop::collection::vec(0..n.max(1), 0..4), n);
        (Just(pkgs), Just(keys), deps)
    })
    .prop_map(|(pkgs, keys, deps)| {
        pkgs.into_iter()
            .zip(deps)
            .map(|(((name, version), (source, checksum, signer)), dep_idx)| LockedPackage {
                name,
                version,
                source,
                checksum,
                signer,
                dependencies: dep_idx
                    .into_iter()
                    .filter_map(|i| keys.get(i))
                    .map(|(n, v)| LockedDependency { name: n.clone(), version: v.clone() })
                    .collect(),
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn lockfile_round_trips_byte_for_byte(pkgs in lockfile_packages()) {
        let lock = Lockfile::new(pkgs);
        let text = lock.to_toml_string();
        let parsed = Lockfile::parse(&text, "ebpkg.lock").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&parsed, &lock);
        prop_assert_eq!(parsed.to_toml_string(), text);
    }

    /// Read in the layout ebpkg writes or as a TOML document, any lockfile text gives the
    /// same lockfile or the same diagnostics (spans included), damaged in one place or not.
    #[test]
    fn lockfile_text_reads_the_same_in_its_layout_as_in_toml(
        pkgs in lockfile_packages(),
        at in any::<prop::sample::Index>(),
        damage in prop::sample::select(vec!["", "x", "\"", "0", "-", " ", "\n", "Z", "é", "[", "\\", "#"]),
    ) {
        let mut text = Lockfile::new(pkgs).to_toml_string();
        let mut cut = at.index(text.len() + 1);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.insert_str(cut, damage);
        let (fast, toml) = (Lockfile::parse(&text, "ebpkg.lock"), Lockfile::parse_as_toml(&text, "ebpkg.lock"));
        prop_assert_eq!(fast, toml, "{}", text);
    }

    #[test]
    fn lockfile_text_ignores_insertion_order(pkgs in lockfile_packages(), seed in any::<u64>()) {
        let mut shuffled = pkgs.clone();
        // A deterministic shuffle driven by the seed, dependencies reversed too.
        let n = shuffled.len().max(1) as u64;
        for i in 0..shuffled.len() {
            let j = ((seed.wrapping_mul(6364136223846793005).wrapping_add(i as u64)) % n) as usize;
            shuffled.swap(i, j);
        }
        for p in &mut shuffled {
            p.dependencies.reverse();
        }
        prop_assert_eq!(Lockfile::new(shuffled).to_toml_string(), Lockfile::new(pkgs).to_toml_string());
    }

    #[test]
    fn index_line_round_trips(entry in index_entry()) {
        let line = entry.to_line();
        prop_assert!(!line.contains('\n'));
        let parsed = IndexEntry::parse_line(&line).map_err(TestCaseError::fail)?;
        prop_assert_eq!(parsed.as_ref(), Some(&entry));
        prop_assert_eq!(parsed.map(|p| p.to_line()), Some(line));
    }

    #[test]
    fn only_yanked_may_change(entry in index_entry(), other in digest()) {
        let mut yanked = entry.clone();
        yanked.yanked = !entry.yanked;
        prop_assert!(entry.check_update(&yanked).is_ok());
        let mut changed = entry.clone();
        changed.cksum = other;
        prop_assert_eq!(entry.check_update(&changed).is_err(), other != entry.cksum);
    }
}

fn int_type() -> impl Strategy<Value = IntType> {
    prop::sample::select(IntType::ALL.to_vec())
}

fn field() -> impl Strategy<Value = Field> {
    (item_name(), prop::sample::select(FieldType::ALL.to_vec()), prop::option::of("[ -~]{1,20}"))
        .prop_map(|(name, ty, doc)| Field { name, ty, doc })
}

fn index_entry() -> impl Strategy<Value = IndexEntry> {
    let deps =
        prop::collection::vec(
            (package_name(), version_req(), prop::option::of(source()))
                .prop_map(|(name, req, registry)| IndexDependency { name, req, registry }),
            0..4,
        );
    let programs = prop::collection::vec(
        (
            item_name(),
            prop::bool::ANY,
            prop::collection::vec((item_name(), int_type()).prop_map(|(name, ty)| ArgSignature { name, ty }), 0..=4),
            prop::option::of(int_type()),
            prop::sample::select(vec![EndsPacket::Never, EndsPacket::May, EndsPacket::Always]),
        )
            .prop_map(|(name, tc, args, returns, ends_packet)| ProgramSummary {
                name,
                hook: if tc { Hook::Tc } else { Hook::Xdp },
                args,
                returns,
                ends_packet,
            }),
        0..4,
    );
    let loaders = prop::collection::vec(
        (
            item_name(),
            prop::collection::vec(
                (item_name(), prop::collection::vec(field(), 1..3), prop::collection::vec(field(), 1..3))
                    .prop_map(|(name, key, value)| MapLayout { name, key, value }),
                0..3,
            ),
        )
            .prop_map(|(name, maps)| LoaderSummary { name, hook: Hook::Xdp, maps }),
        0..3,
    );
    let kernel = (
        prop::option::of((4u16..7, 0u16..20, prop::option::of("[a-z (),]{1,40}"))),
        prop::collection::vec("[a-z_]{1,10}", 0..3),
    )
        .prop_map(|(min, helpers)| KernelReq {
            reason: min.as_ref().and_then(|(_, _, reason)| reason.clone()),
            min: min.map(|(major, minor, _)| KernelVersion { major, minor, patch: 0 }),
            program_types: vec![],
            helpers: helpers.into_iter().map(|h| format!("bpf_{h}")).collect(),
            build: Default::default(),
        });
    (
        package_name(),
        version(),
        deps,
        digest(),
        any::<bool>(),
        prop::option::of(version_req()),
        kernel,
        programs,
        loaders,
        prop::collection::vec(item_name().prop_map(|name| ChainSummary { name }), 0..3),
        prop::collection::btree_map(package_name(), prop::collection::vec(item_name(), 1..3), 0..2),
        (
            prop::option::of("[ -~]{1,40}"),
            prop::collection::vec("[a-z0-9][a-z0-9+_-]{0,19}", 0..5),
            prop::option::of(any::<[u8; 32]>().prop_map(KeyId)),
        ),
    )
        .prop_map(
            |(name, vers, deps, cksum, yanked, hike_sdk, kernel, programs, loaders, chains, reexports, meta)| {
                let (description, keywords, signed_by) = meta;
                IndexEntry {
                    v: 1,
                    name,
                    vers,
                    deps,
                    cksum,
                    yanked,
                    signed_by,
                    hike_sdk,
                    kernel,
                    programs,
                    loaders,
                    chains,
                    reexports,
                    description,
                    keywords,
                }
            },
        )
}
