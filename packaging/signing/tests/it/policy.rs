//! Trust policies: parsing, the canonical file, merging, and every decision.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebpkg_signing::{Decision, PrebuiltObjects, TrustPolicy, Unattested};
use ebpkg_spec::names::PackageGlob;
use ebpkg_spec::types::KeyId;

fn key(n: u8) -> KeyId {
    KeyId([n; 32])
}

fn glob(s: &str) -> PackageGlob {
    PackageGlob::new(s).unwrap()
}

#[test]
fn decisions_cover_trust_unsigned_revocation_and_first_use() {
    let text = format!(
        "[keys]\n\"hike-*\" = [\"{}\"]\n\"ddos-guard\" = [\"{}\", \"{}\"]\n[unsigned]\nallow = [\"local-*\"]\n[revoked]\n\"{}\" = \"stolen\"\n",
        key(1),
        key(2),
        key(3),
        key(3)
    );
    let policy = TrustPolicy::parse(&text).unwrap();
    assert_eq!(policy.decide("hike_net", Some(&key(1))), Decision::Trusted { key: key(1), by: glob("hike-*") });
    assert_eq!(policy.decide("ddos-guard", Some(&key(2))), Decision::Trusted { key: key(2), by: glob("ddos-guard") });
    assert_eq!(policy.decide("ddos-guard", Some(&key(3))), Decision::Revoked { key: key(3), reason: "stolen".into() });
    assert_eq!(
        policy.decide("ddos-guard", Some(&key(1))),
        Decision::Untrusted { key: key(1), trusted: vec![key(2), key(3)] }
    );
    assert_eq!(policy.decide("other", Some(&key(1))), Decision::Untrusted { key: key(1), trusted: vec![] });
    assert_eq!(policy.decide("local-x", None), Decision::UnsignedAllowed { by: glob("local-*") });
    assert_eq!(policy.decide("hike-net", None), Decision::Unsigned);
}

#[test]
fn the_canonical_file_reads_back_the_same_policy() {
    let mut policy = TrustPolicy::default();
    assert!(policy.trust(glob("a-*"), key(1)));
    assert!(!policy.trust(glob("a-*"), key(1)));
    assert!(policy.trust(glob("b"), key(2)));
    assert!(policy.allow_unsigned(glob("dev-*")));
    assert!(policy.revoke(key(9), "rotated \"out\"".into()));
    assert!(policy.set_unattested(Unattested::Refuse));
    assert!(!policy.set_unattested(Unattested::Refuse));
    let text = policy.to_toml_string();
    assert!(text.contains("[kernels]\nunattested = \"refuse\""), "{text}");
    assert_eq!(TrustPolicy::parse(&text).unwrap(), policy, "{text}");
    assert!(!text.contains("[objects]"), "the default is not written: {text}");
    assert!(policy.set_prebuilt(PrebuiltObjects::Rebuilt));
    assert!(!policy.set_prebuilt(PrebuiltObjects::Rebuilt));
    let text = policy.to_toml_string();
    assert!(text.contains("[objects]\nprebuilt = \"rebuilt\""), "{text}");
    assert_eq!(TrustPolicy::parse(&text).unwrap(), policy, "{text}");

    assert!(policy.untrust(&glob("a-*"), Some(&key(1))));
    assert!(!policy.keys().contains_key(&glob("a-*")));
    assert!(!policy.untrust(&glob("a-*"), None));
    assert!(policy.disallow_unsigned(&glob("dev-*")));
    assert_eq!(TrustPolicy::parse("").unwrap(), TrustPolicy::default());
}

#[test]
fn merging_unions_trust_and_revocations() {
    let mut user = TrustPolicy::default();
    user.trust(glob("*"), key(1));
    let mut project = TrustPolicy::default();
    project.trust(glob("p"), key(2));
    project.revoke(key(1), "compromised".into());
    project.allow_unsigned(glob("p-dev"));
    user.merge(&project);
    assert!(matches!(user.decide("p", Some(&key(1))), Decision::Revoked { .. }));
    assert!(matches!(user.decide("p", Some(&key(2))), Decision::Trusted { .. }));
    assert!(matches!(user.decide("p-dev", None), Decision::UnsignedAllowed { .. }));

    // The stricter rule for unattested kernels wins, whichever file says it.
    assert_eq!(user.unattested(), Unattested::Note);
    let refusing = TrustPolicy::parse("[kernels]\nunattested = \"refuse\"\n").unwrap();
    user.merge(&refusing);
    assert_eq!(user.unattested(), Unattested::Refuse);
    let mut refused_first = refusing.clone();
    refused_first.merge(&TrustPolicy::default());
    assert_eq!(refused_first.unattested(), Unattested::Refuse);

    // So does the stricter rule for shipped objects: never > rebuilt > signer.
    assert_eq!(user.prebuilt(), PrebuiltObjects::Signer);
    let rebuilt = TrustPolicy::parse("[objects]\nprebuilt = \"rebuilt\"\n").unwrap();
    let never = TrustPolicy::parse("[objects]\nprebuilt = \"never\"\n").unwrap();
    user.merge(&rebuilt);
    assert_eq!(user.prebuilt(), PrebuiltObjects::Rebuilt);
    user.merge(&never);
    assert_eq!(user.prebuilt(), PrebuiltObjects::Never);
    user.merge(&rebuilt);
    assert_eq!(user.prebuilt(), PrebuiltObjects::Never);
}

#[test]
fn rebuild_attestations_vouch_only_from_listed_rebuilders_other_than_the_signer() {
    let text = format!("[objects]\nprebuilt = \"rebuilt\"\nrebuilders = [\"{}\", \"{}\"]\n", key(4), key(5));
    let mut policy = TrustPolicy::parse(&text).unwrap();
    assert_eq!(policy.rebuilders(), [key(4), key(5)]);
    assert_eq!(TrustPolicy::parse(&policy.to_toml_string()).unwrap(), policy, "{}", policy.to_toml_string());
    // A listed rebuilder that did not sign the version vouches.
    assert_eq!(policy.judge_rebuilder(&key(4), Some(&key(1))), Ok(()));
    assert_eq!(policy.judge_rebuilder(&key(4), None), Ok(()));
    // The version's own signer never does, even when listed.
    let own = policy.judge_rebuilder(&key(4), Some(&key(4))).unwrap_err();
    assert!(own.contains("signed the version itself"), "{own}");
    // Nor a key trusted to publish that is not listed.
    policy.trust(glob("*"), key(1));
    let publisher = policy.judge_rebuilder(&key(1), Some(&key(2))).unwrap_err();
    assert!(publisher.contains("does not list as a rebuilder"), "{publisher}");
    // Nor a revoked one.
    policy.revoke(key(5), "leaked".into());
    assert!(policy.judge_rebuilder(&key(5), None).unwrap_err().contains("revokes (leaked)"));

    assert!(!policy.add_rebuilder(key(4)));
    assert!(policy.remove_rebuilder(&key(4)));
    assert!(!policy.remove_rebuilder(&key(4)));
    assert!(policy.judge_rebuilder(&key(4), None).is_err());

    // Merged like trusted keys: listed by either file.
    let mut user = TrustPolicy::default();
    user.add_rebuilder(key(6));
    let mut project = TrustPolicy::default();
    project.add_rebuilder(key(7));
    user.merge(&project);
    assert_eq!(user.rebuilders(), [key(6), key(7)]);
}

#[test]
fn bad_files_are_refused_with_the_reason() {
    for (text, reason) in [
        ("[keys]\n\"../x\" = []\n", "not a package name or glob"),
        ("[keys]\n\"a\" = [\"short\"]\n", "not a key id"),
        ("[unsigned]\nallow = [\"A B\"]\n", "not a package name or glob"),
        ("[trusted]\n", "unknown field"),
        ("[kernels]\nunattested = \"ignore\"\n", "unknown variant"),
        ("[kernels]\nuntested = \"note\"\n", "unknown field"),
        ("[objects]\nprebuilt = \"always\"\n", "unknown variant"),
        ("[objects]\nshipped = \"never\"\n", "unknown field"),
        ("[keys\n", "expected"),
    ] {
        let err = TrustPolicy::parse(text).unwrap_err();
        assert!(err.to_string().contains(reason), "{text:?}: {err}");
    }
}

/// `manifest-spec/schemas/trust.toml.schema.json`, compiled with formats asserted.
fn trust_schema() -> (boon::Schemas, boon::SchemaIndex) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifest-spec/schemas/trust.toml.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.enable_format_assertions();
    compiler.add_resource("trust.toml.schema.json", schema).unwrap();
    let index = compiler.compile("trust.toml.schema.json", &mut schemas).unwrap();
    (schemas, index)
}

/// The checked-in schema is what the type that reads the file generates;
/// regenerate it with `EBPKG_BLESS=1 cargo test -p ebpkg-signing --test it policy::`.
#[test]
fn the_trust_policy_schema_is_up_to_date_and_holds_every_policy_ebpkg_writes() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifest-spec/schemas/trust.toml.schema.json");
    let generated = ebpkg_signing::policy::schema();
    if std::env::var_os("EBPKG_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap_or_default(),
        generated,
        "trust.toml.schema.json is out of date: run `EBPKG_BLESS=1 cargo test -p ebpkg-signing --test it policy::`"
    );
    let (schemas, index) = trust_schema();
    let valid = |text: &str| {
        let value: serde_json::Value = toml::from_str(text).unwrap();
        schemas.validate(&value, index).map_err(|e| format!("{e:#}"))
    };
    // Every section, as ebpkg writes it back.
    let full = format!(
        "[keys]\n\"hike-*\" = [\"{}\"]\nnet = [\"{}\"]\n[unsigned]\nallow = [\"local-*\"]\n[revoked]\n\"{}\" = \"stolen\"\n\
         [kernels]\nunattested = \"refuse\"\n[objects]\nprebuilt = \"rebuilt\"\nrebuilders = [\"{}\"]\n",
        key(1),
        key(2),
        key(3),
        key(4)
    );
    for text in
        [full.clone(), TrustPolicy::parse(&full).unwrap().to_toml_string(), TrustPolicy::default().to_toml_string()]
    {
        TrustPolicy::parse(&text).unwrap();
        valid(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
    // What ebpkg refuses, the schema refuses.
    for wrong in [
        "[keys]\nnet = [\"not a key id\"]\n",
        "[keys]\n\"Net!\" = []\n",
        "[unsigned]\nallow = [\"UPPER\"]\n",
        "[kernels]\nunattested = \"maybe\"\n",
        "[objects]\nprebuilt = \"always\"\n",
        "[objects]\nrebuilder = []\n",
        "[trust]\n",
    ] {
        assert!(TrustPolicy::parse(wrong).is_err(), "ebpkg reads {wrong:?}");
        assert!(valid(wrong).is_err(), "the schema accepts {wrong:?}");
    }
}
