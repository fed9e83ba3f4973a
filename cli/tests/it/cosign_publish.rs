//! A CI pipeline that signs with cosign, not ebpkg: `ebpkg publish --dry-run
//! --out` writes the exact archive, `cosign sign-blob` signs it with a key
//! cosign generated, `ebpkg owner key add cosign.key` registers that key with a
//! registry server, `ebpkg publish --bundle` sends cosign's bundle, and an
//! install that trusts the cosign key verifies it. cosign is built by
//! `ci/setup` (pinned) into /opt/ebpkg-ci/cosign/bin; EBPKG_TEST_COSIGN names
//! another binary. A missing cosign fails the test: it is never skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::{KEY_PASSWORD, Sandbox};
use ebpkg_registry::testing::TestRegistry;
use ebpkg_signing::testing::Cosign;

#[test]
fn a_pipeline_signs_with_cosign_and_the_registry_and_installs_accept_it() {
    let server = TestRegistry::start_with(Box::new(|c| c.allow_unsigned = false)).unwrap();
    let mut sb = Sandbox::new("cosignci");
    sb.use_server(server.url(), &server.token("ci", &[], &[]).unwrap()).ok();
    let ci = sb.path("ci");
    std::fs::create_dir_all(&ci).unwrap();
    // The sandbox's passphrase, so that ebpkg can read cosign's key too.
    let cosign = Cosign::locate(KEY_PASSWORD).unwrap();
    cosign.run(&ci, &["generate-key-pair"]).unwrap();
    let ci_key = ci.join("cosign.key");
    sb.run(&ci, &["owner", "key", "add", ci_key.to_str().unwrap()]).ok();

    // The package beside the key pair, as the README's recipe expects; its
    // first three steps, run as written: pack, make an offline signing
    // configuration, sign.
    let pkg = ci.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("ebpkg.toml"), "[package]\nname = \"cpkg\"\nversion = \"1.0.0\"\n").unwrap();
    let recipe = readme_cosign_recipe();
    assert_eq!(recipe.len(), 4, "{recipe:?}");
    for step in &recipe[..3] {
        let words: Vec<&str> = step.iter().map(String::as_str).collect();
        match words[0] {
            "ebpkg" => {
                let packed = sb.run(&pkg, &words[1..]).ok();
                assert!(packed.stderr.contains("Wrote"), "{}", packed.stderr);
            }
            "cosign" => {
                cosign.run(&pkg, &words[1..]).unwrap();
            }
            other => panic!("the recipe runs {other}"),
        }
    }
    assert_eq!(recipe[3][..2], ["ebpkg", "publish"]);
    let bundle = ci.join("pkg.bundle");
    let public = ci.join("cosign.pub");
    let with_bundle = |dir: &Path| {
        sb.run(
            dir,
            &["publish", "--no-verify", "--bundle", bundle.to_str().unwrap(), "--public-key", public.to_str().unwrap()],
        )
    };

    // The package changed after it was signed: refused here, nothing sent.
    std::fs::write(pkg.join("README.md"), "changed after signing\n").unwrap();
    let stale = with_bundle(&pkg).fails(10);
    assert!(stale.stderr.contains("the bundle must sign this archive"), "{}", stale.stderr);
    std::fs::remove_file(pkg.join("README.md")).unwrap();

    // Packing is reproducible: the archive cosign signed is the one published.
    let last: Vec<&str> = recipe[3].iter().map(String::as_str).collect();
    let published = sb.run(&pkg, &last[1..]).ok();
    assert!(published.stderr.contains("Published"), "{}", published.stderr);

    // An install trusting the cosign key (and only it) for cpkg accepts it.
    let app = sb.app(&[("cpkg", "1")]);
    // The sandbox trusts only its own key, for every package.
    let refused = sb.run(&app, &["fetch"]).fails(10);
    assert!(refused.stderr.contains("cpkg@1.0.0"), "{}", refused.stderr);
    sb.run(&app, &["trust", "add", "cpkg", public.to_str().unwrap()]).ok();
    sb.run(&app, &["fetch"]).ok();
}

/// The README's cosign recipe: the commands of the `sh` block after its marker.
fn readme_cosign_recipe() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let after =
        readme.split("<!-- the cosign recipe: run as written by cli/tests/it/cosign_publish.rs -->").nth(1).unwrap();
    let block = after.split("```sh\n").nth(1).unwrap().split("```").next().unwrap();
    block.lines().filter(|l| !l.trim().is_empty()).map(|l| l.split_whitespace().map(str::to_owned).collect()).collect()
}
