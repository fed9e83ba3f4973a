//! The hostile suite for signatures and trust, against a file:// registry the
//! test prepares and tampers with: every forged or untrusted package is refused
//! by a real `ebpkg install` with an error naming the problem (exit 10), before
//! anything is loaded or pinned, and the running deployment stays as it was.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::*;

/// Publishes flow, verdict and classify (signed by the sandbox's key), copies the
/// app project and installs it.
fn installed(tag: &str) -> (Sandbox, PathBuf) {
    let sb = Sandbox::with_netns(tag);
    for p in ["flow", "verdict", "classify"] {
        let dir = sb.package(p);
        sb.publish(&dir);
    }
    let app = sb.package("app");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    (sb, app)
}

/// Publishes flow at `version` as another publisher (their own configuration:
/// what they trust is theirs), with extra `publish` arguments (a key, --no-sign).
fn publish_flow(sb: &Sandbox, version: &str, args: &[&str]) -> PathBuf {
    let dir = sb.path(&format!("flow-{version}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(sb.package("flow"), &dir).unwrap();
    let toml = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap().replace("1.0.0", version);
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
    let mut all = vec!["publish", "--no-verify"];
    all.extend_from_slice(args);
    let theirs = sb.path("another-publisher/config.toml");
    sb.run_with(&dir, &all, &[("EBPKG_CONFIG", theirs.to_str().unwrap())], None).ok();
    dir
}

/// The checksum ebpkg.lock pins for `package`.
fn locked_sum(app: &Path, package: &str) -> String {
    let lock = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    let part = lock.split(&format!("name = \"{package}\"")).nth(1).unwrap();
    part.split("checksum = \"").nth(1).unwrap()[..64].to_owned()
}

fn bundle_path(sb: &Sandbox, sum: &str) -> PathBuf {
    sb.path(&format!("registry/signatures/{}/{sum}.sigstore.json", &sum[..2]))
}

/// Installs and expects a trust refusal mentioning every one of `says`, with
/// nothing changed on the host.
#[track_caller]
fn refused(sb: &Sandbox, app: &Path, before: &[String], says: &[&str]) {
    refused_with(sb, app, before, &[], says)
}

/// [`refused`], with more `install` arguments.
#[track_caller]
fn refused_with(sb: &Sandbox, app: &Path, before: &[String], args: &[&str], says: &[&str]) {
    let run = sb.run(app, &[&["install"], args].concat()).fails(10);
    for s in says {
        assert!(run.stderr.contains(s), "expected `{s}` in:\n{}", run.stderr);
    }
    // Refused at fetch ("…; nothing was installed") or by the cache's check ("…; nothing from it is
    // installed", "…, so the package is not installed").
    let said = ["nothing was installed", "nothing from it is installed", "is not installed"];
    assert!(said.iter().any(|s| run.stderr.contains(s)), "says nothing was installed: {}", run.stderr);
    assert_eq!(sb.pins(), before, "a refused install changed the pins");
    assert_eq!(sb.status()[0]["generation"], 1, "a refused install made a new generation");
}

#[test]
fn forged_untrusted_revoked_and_unsigned_packages_are_refused_and_the_deployment_keeps_running() {
    require_kernel();
    let (sb, app) = installed("sigs");
    let before = sb.pins();
    let lock = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    assert!(lock.contains(&format!("signer = \"{}\"", sb.key_id())), "the lock pins the signer:\n{lock}");

    // A version signed by a key nobody trusts for flow: skipped by the
    // resolution, saying why, rather than locked and then refused by every
    // install (one hostile publish must not block updates).
    let run = sb.run(&app, &["key", "generate", "--name", "other", "--json"]).ok();
    let other: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let other_id = other["id"].as_str().unwrap().to_owned();
    let other_key = sb.path("keys/other.key");
    publish_flow(&sb, "1.1.0", &["--key", other_key.to_str().unwrap()]);
    std::fs::write(
        sb.path("trust.toml"),
        format!("[keys]\n\"flow\" = [\"{}\"]\n\"*\" = [\"{}\"]\n", sb.key_id(), sb.key_id()),
    )
    .unwrap();
    let run = sb.run(&app, &["update", "flow"]).ok();
    for says in ["Skipping", "flow@1.1.0", &other_id, "trusts only"] {
        assert!(run.stderr.contains(says), "`{says}` in:\n{}", run.stderr);
    }
    assert_eq!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap(), lock, "nothing refused is locked");
    // Asked for by name, it is refused with the reason and the way out.
    let exact = sb.run(&app, &["add", "flow@=1.1.0"]).fails(10);
    // The trust policy first (the cause), then what resolving found without the version.
    let said =
        ["error: the trust policy refuses versions that the dependencies of app need", "flow@1.1.0", "trusts only"];
    for says in said.iter().chain(&["Without them, cannot find versions", "ebpkg trust add"]) {
        assert!(exact.stderr.contains(says), "`{says}` in:\n{}", exact.stderr);
    }
    assert_eq!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap(), lock);

    // Trusted: locked and fetched. Then the policy changes under a lock that pins
    // it: an offline install (no resolution) is refused by fetch.
    sb.run(&app, &["trust", "add", "flow", &other_id]).ok();
    sb.run(&app, &["update", "flow"]).ok();
    sb.run(&app, &["fetch"]).ok();
    let sum = locked_sum(&app, "flow");
    std::fs::write(
        sb.path("trust.toml"),
        format!("[keys]\n\"flow\" = [\"{}\"]\n\"*\" = [\"{}\"]\n", sb.key_id(), sb.key_id()),
    )
    .unwrap();
    refused_with(&sb, &app, &before, &["--offline"], &["flow@1.1.0", &other_id, "trusts only", &sb.key_id()]);

    // Trusted, then revoked: a resolution goes back to a version it trusts.
    sb.run(&app, &["trust", "add", "flow", &other_id]).ok();
    sb.run(&app, &["trust", "revoke", &other_id, "--reason", "key leaked"]).ok();
    refused_with(&sb, &app, &before, &["--offline"], &["flow@1.1.0", &other_id, "key leaked"]);
    let run = sb.run(&app, &["install"]).ok();
    assert!(run.stderr.contains("Skipping") && run.stderr.contains("key leaked"), "{}", run.stderr);
    assert_eq!(locked_sum(&app, "flow"), locked_sum_in(&lock, "flow"), "back to the trusted 1.0.0");
    assert_eq!(sb.pins(), before);
    std::fs::write(sb.path("trust.toml"), format!("[keys]\n\"*\" = [\"{}\", \"{other_id}\"]\n", sb.key_id())).unwrap();
    sb.run(&app, &["update", "flow"]).ok();
    // (Verified bundles are cached with their archives: the forgeries below are
    // of a registry this host has not fetched 1.1.0 from yet.)
    sb.run(&app, &["cache", "clean"]).ok();

    // A bundle for another archive (flow 1.0.0's, signed by the trusted key) in
    // place of 1.1.0's; then 1.1.0's bundle with another signature in it.
    let original = std::fs::read(bundle_path(&sb, &sum)).unwrap();
    let lock_before_update = lock.clone();
    let old_sum = locked_sum_in(&lock_before_update, "flow");
    let mut forged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle_path(&sb, &old_sum)).unwrap()).unwrap();
    forged["verificationMaterial"]["publicKey"]["hint"] = other_id.clone().into();
    std::fs::write(bundle_path(&sb, &sum), forged.to_string()).unwrap();
    refused(&sb, &app, &before, &["flow@1.1.0", "for another archive"]);

    let mut tampered: serde_json::Value = serde_json::from_slice(&original).unwrap();
    let other_sig = forged["messageSignature"]["signature"].clone();
    tampered["messageSignature"]["signature"] = other_sig;
    std::fs::write(bundle_path(&sb, &sum), tampered.to_string()).unwrap();
    refused(&sb, &app, &before, &["flow@1.1.0", "does not verify"]);

    // No bundle at all for a version whose index line says it is signed.
    std::fs::remove_file(bundle_path(&sb, &sum)).unwrap();
    refused(&sb, &app, &before, &["flow@1.1.0", "has no bundle"]);
    std::fs::write(bundle_path(&sb, &sum), &original).unwrap();

    // The lock pins 1.1.0 as signed by `other`; the registry's line now names
    // another (trusted) key: a locked version never changes signer.
    let lock = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    assert!(lock.contains(&format!("signer = \"{other_id}\"")), "{lock}");
    let index = sb.path("registry/index/fl/ow/flow");
    let text = std::fs::read_to_string(&index).unwrap();
    let resigned =
        text.replace(&format!("\"signed_by\":\"{other_id}\""), &format!("\"signed_by\":\"{}\"", sb.key_id()));
    assert_ne!(text, resigned, "the index line names the signer");
    std::fs::write(&index, resigned).unwrap();
    let run = sb.run(&app, &["install"]).fails(10);
    assert!(run.stderr.contains(&other_id) && run.stderr.contains(&sb.key_id()), "{}", run.stderr);
    assert!(run.stderr.contains("never changes signer"), "{}", run.stderr);
    assert_eq!(sb.pins(), before);
    std::fs::write(&index, text).unwrap();

    // An unsigned version, with no policy exception for it: skipped; then with one.
    publish_flow(&sb, "1.2.0", &["--no-sign"]);
    let run = sb.run(&app, &["update", "flow"]).ok();
    assert!(run.stderr.contains("flow@1.2.0") && run.stderr.contains("not signed"), "{}", run.stderr);
    assert!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap().contains("version = \"1.1.0\""));
    sb.run(&app, &["trust", "allow-unsigned", "flow", "--project"]).ok();
    assert!(app.join("ebpkg-trust.toml").exists());
    sb.run(&app, &["update", "flow"]).ok();
    sb.run(&app, &["install"]).ok();
    assert_eq!(sb.status()[0]["generation"], 2);
}

fn locked_sum_in(lock: &str, package: &str) -> String {
    let part = lock.split(&format!("name = \"{package}\"")).nth(1).unwrap();
    part.split("checksum = \"").nth(1).unwrap()[..64].to_owned()
}

#[test]
fn trust_on_first_use_happens_only_when_asked_and_never_for_a_changed_key() {
    let sb = Sandbox::new("tofu");
    std::fs::remove_file(sb.path("trust.toml")).unwrap();
    for p in ["flow", "verdict", "classify"] {
        let dir = sb.package(p);
        sb.publish(&dir);
    }
    let app = sb.package("app");
    // The publisher's own publishes recorded their key for each package: they
    // install what they published without a trust step.
    sb.run(&app, &["fetch"]).ok();
    std::fs::remove_dir_all(&sb.cache).unwrap();
    let recorded = std::fs::read_to_string(sb.path("trust.toml")).unwrap();
    assert!(recorded.contains(&format!("\"flow\" = [\"{}\"]", sb.key_id())), "{recorded}");
    std::fs::remove_file(sb.path("trust.toml")).unwrap();
    let run = sb.run(&app, &["fetch"]).fails(10);
    assert!(run.stderr.contains("trusts no key") && run.stderr.contains("--trust-new-keys"), "{}", run.stderr);
    assert!(!sb.path("cache/src").exists() || std::fs::read_dir(sb.path("cache/src")).unwrap().next().is_none());

    let run = sb.run(&app, &["fetch", "--trust-new-keys"]).ok();
    assert!(run.stderr.contains("first use"), "{}", run.stderr);
    let policy = std::fs::read_to_string(sb.path("trust.toml")).unwrap();
    for p in ["flow", "verdict", "classify"] {
        assert!(policy.contains(&format!("\"{p}\" = [\"{}\"]", sb.key_id())), "{policy}");
    }
    let listed = sb.run(&app, &["trust", "list"]).ok();
    assert!(listed.stdout.contains("trust   flow"), "{}", listed.stdout);
    // A directory registry is read offline too: its keys' revocations are checked.
    let offline = sb.run(&app, &["--offline", "fetch"]).ok();
    assert!(!offline.stderr.contains("revoked"), "{}", offline.stderr);
    assert!(offline.stderr.contains("Ready 3 packages in the cache"), "{}", offline.stderr);

    // A new version by another key is a key change, not a first use.
    let run = sb.run(&app, &["key", "generate", "--name", "other", "--json"]).ok();
    let other: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let other_id = other["id"].as_str().unwrap().to_owned();
    let other_key = sb.path("keys/other.key");
    publish_flow(&sb, "1.1.0", &["--key", other_key.to_str().unwrap()]);
    let run = sb.run(&app, &["update", "flow", "--trust-new-keys"]).ok();
    assert!(run.stderr.contains("Skipping flow@1.1.0") && run.stderr.contains("trusts only"), "{}", run.stderr);
    assert!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap().contains("version = \"1.0.0\""));
    let run = sb.run(&app, &["add", "flow@=1.1.0", "--trust-new-keys"]).fails(10);
    assert!(run.stderr.contains("trusts only") && run.stderr.contains("rotated"), "{}", run.stderr);

    // `add` without a requirement takes the newest version the policy accepts, not
    // the newest published (which every resolution would then refuse), and says
    // what it skipped, whose key signed it and how to trust it.
    publish_flow(&sb, "2.0.0", &["--key", other_key.to_str().unwrap()]);
    let run = sb.run(&app, &["add", "flow"]).ok();
    for says in ["Skipping flow@2.0.0", "Skipping flow@1.1.0", &other_id, "trusts only", "ebpkg trust add flow"] {
        assert!(run.stderr.contains(says), "`{says}` in:\n{}", run.stderr);
    }
    let manifest = std::fs::read_to_string(app.join("ebpkg.toml")).unwrap();
    assert!(manifest.contains("flow = \"^1.0.0\""), "{manifest}");
    assert!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap().contains("version = \"1.0.0\""));
    // `update` tells of the untrusted 2.0.0, by whom it is signed, and offers no move to it.
    let run = sb.run(&app, &["update"]).ok();
    assert!(!run.stderr.contains("moves to it"), "{}", run.stderr);
    for says in ["flow 2.0.0", "trust policy refuses it", &other_id] {
        assert!(run.stderr.contains(says), "`{says}` in:\n{}", run.stderr);
    }
    // Trusted, it is a move again.
    sb.run(&app, &["trust", "add", "flow", &other_id]).ok();
    let run = sb.run(&app, &["update"]).ok();
    assert!(run.stderr.contains("`ebpkg add flow@2.0.0` moves to it"), "{}", run.stderr);
}

#[test]
fn key_commands_write_cosign_compatible_files_and_refuse_bad_names() {
    let sb = Sandbox::new("keys");
    let dir = sb.dir.path();
    let run = sb.run(dir, &["key", "generate", "--name", "ci"]).ok();
    assert!(run.stderr.contains("Generated"), "{}", run.stderr);
    let private = sb.path("keys/ci.key");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&private).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&private).unwrap().contains("ENCRYPTED SIGSTORE PRIVATE KEY"));
    sb.run(dir, &["key", "generate", "--name", "ci"]).fails(2);
    let pem = sb.run(dir, &["key", "export", "ci"]).ok().stdout;
    let public = ebpkg_signing::PublicKey::from_pem(&pem).unwrap();
    let shown = sb.run(dir, &["key", "show", "ci"]).ok().stdout;
    assert!(shown.contains(&public.id().to_string()), "{shown}");
    let list = sb.run(dir, &["key", "list"]).ok().stdout;
    assert!(list.contains("ci\t") && list.contains("default\t"), "{list}");
    sb.run(dir, &["key", "generate", "--name", "../x"]).fails(2);
    // No passphrase and no terminal: refused, nothing written.
    let out = sb.cmd(dir, &["key", "generate", "--name", "nopass"]).env_remove("EBPKG_KEY_PASSWORD").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!sb.path("keys/nopass.key").exists());
}
