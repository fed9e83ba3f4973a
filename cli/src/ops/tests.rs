//! The resolve, fetch and plan ops called in process, as a library user calls
//! them: against a directory registry in a temporary directory, with settings that
//! read nothing of the user's (`Config::isolated`). No binary is spawned and no
//! privilege is needed (nothing is deployed).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use ebpkg_deploy::ChainMode;
use ebpkg_resolver::UpdatePolicy;
use ebpkg_signing::SigningKey;
use ebpkg_sources::{FileRegistry, PublishSignature, Registry};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::manifest::MANIFEST_FILE;
use tempfile::TempDir;

use crate::Ctx;
use crate::config::Config;
use crate::ctx::Loaded;
use crate::exit::{Failure, failure_of};
use crate::ops::build::BuildOptions;
use crate::ops::fetch::fetch_all;
use crate::ops::install::{InstallOptions, Target, plan};
use crate::ops::resolve::resolve_project;
use crate::ui::Ui;

/// A registry holding `net` 1.0.0, 1.1.0 and 2.0.0 and `meter` 1.0.0 (which
/// needs `net` ^1), all signed by `key`, which the user's trust policy trusts;
/// and a project `app` depending on `meter` ^1.
struct World {
    dir: TempDir,
    registry: FileRegistry,
    key: SigningKey,
    /// The published entries, by `name@version`.
    published: Vec<(String, IndexEntry)>,
    project: PathBuf,
}

fn write_manifest(dir: &Path, name: &str, version: &str, deps: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    let deps: String = deps.iter().map(|(n, r)| format!("{n} = \"{r}\"\n")).collect();
    let text = format!("[package]\nname = \"{name}\"\nversion = \"{version}\"\n\n[dependencies]\n{deps}");
    std::fs::write(dir.join(MANIFEST_FILE), text).unwrap();
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let registry = FileRegistry::at(&dir.path().join("registry")).unwrap();
    let key = SigningKey::generate().unwrap();
    let mut published = Vec::new();
    for (name, version, deps) in
        [("net", "1.0.0", &[][..]), ("net", "1.1.0", &[]), ("net", "2.0.0", &[]), ("meter", "1.0.0", &[("net", "^1")])]
    {
        let src = dir.path().join(format!("src/{name}-{version}"));
        write_manifest(&src, name, version, deps);
        let packed = ebpkg_archive::pack(&src).unwrap();
        let signature =
            PublishSignature { bundle: ebpkg_signing::sign(&key, &packed.bytes).unwrap(), key: key.public().clone() };
        let entry = registry.publish(&packed.archive(), &packed.manifest, Some(&signature)).unwrap();
        published.push((entry.id().to_string(), entry));
    }
    std::fs::write(dir.path().join("trust.toml"), format!("[keys]\n\"*\" = [\"{}\"]\n", key.public().id())).unwrap();
    let project = dir.path().join("app");
    write_manifest(&project, "app", "0.1.0", &[("meter", "^1")]);
    World { dir, registry, key, published, project }
}

impl World {
    /// A command's context: the world's registry as the default, every path in
    /// the world's directory, the project by its ebpkg.toml.
    fn ctx(&self) -> Ctx {
        Ctx {
            ui: Ui::new(false, true, 0, false),
            config: Config::isolated(self.dir.path(), self.registry.url().clone()),
            offline: false,
            locked: false,
            trust_new_keys: false,
            netns: None,
            manifest_path: Some(self.project.join(MANIFEST_FILE)),
            cache_checked: std::sync::OnceLock::new(),
            loaded: Loaded::default(),
        }
    }

    fn entry(&self, id: &str) -> &IndexEntry {
        &self.published.iter().find(|(i, _)| i == id).unwrap().1
    }
}

/// `name@version (source) checksum signer` of each locked package, sorted.
fn locked(lock: &ebpkg_spec::Lockfile) -> Vec<String> {
    let mut out: Vec<String> = lock
        .packages()
        .iter()
        .map(|p| {
            format!("{}@{} ({}) {} {:?}", p.name, p.version, p.source, p.checksum, p.signer.map(|k| k.to_string()))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn resolve_locks_the_newest_versions_allowed_and_saves_them_once() {
    let w = world();
    let ctx = w.ctx();
    let project = ctx.project().unwrap();
    let regs = ctx.registries().unwrap();
    let resolved = resolve_project(&ctx, project, &regs, UpdatePolicy::Nothing).unwrap();
    let url = w.registry.url().to_string();
    let key = Some(w.key.public().id().to_string());
    assert_eq!(
        locked(&resolved.lock),
        [
            format!("meter@1.0.0 ({url}) {} {key:?}", w.entry("meter@1.0.0").cksum),
            format!("net@1.1.0 ({url}) {} {key:?}", w.entry("net@1.1.0").cksum),
        ]
    );
    assert!(!project.lock_path().exists(), "resolving writes nothing");
    assert!(resolved.save(&ctx, project).unwrap().written);
    assert!(project.lock_path().exists());

    // The next command finds the lock up to date: nothing to write.
    let ctx = w.ctx();
    let project = ctx.project().unwrap();
    let again = resolve_project(&ctx, project, &regs, UpdatePolicy::Nothing).unwrap();
    assert!(!again.save(&ctx, project).unwrap().written);
}

/// Fetching brings each locked package into the cache, its signature verified
/// and its tree unpacked, from the index lines the resolution read: the
/// registry's index files are not read again.
#[test]
fn fetch_unpacks_each_locked_package_from_what_the_resolution_read() {
    let w = world();
    let ctx = w.ctx();
    let regs = ctx.registries().unwrap();
    let lock = resolve_project(&ctx, ctx.project().unwrap(), &regs, UpdatePolicy::Nothing).unwrap().lock;
    std::fs::remove_dir_all(w.registry.root().join("index")).unwrap();

    let fetched = fetch_all(&ctx, &regs, &lock).unwrap();
    let mut ids: Vec<String> = fetched.iter().map(|f| f.manifest.id().to_string()).collect();
    ids.sort();
    assert_eq!(ids, ["meter@1.0.0", "net@1.1.0"]);
    let cache = ctx.cache().unwrap();
    for f in &fetched {
        assert_eq!(f.manifest.id(), f.locked.id());
        assert!(f.root.starts_with(cache.root()), "{}", f.root.display());
        assert!(f.root.join(MANIFEST_FILE).is_file());
        assert_eq!(std::fs::read(cache.archive_path(&f.locked.checksum)).unwrap().len() as u64, {
            let entry = w.entry(&f.locked.id().to_string());
            w.registry.download(entry).unwrap().len() as u64
        });
    }

    // A policy that trusts another key refuses them, before anything is unpacked.
    let w = world();
    let ctx = w.ctx();
    let regs = ctx.registries().unwrap();
    let lock = resolve_project(&ctx, ctx.project().unwrap(), &regs, UpdatePolicy::Nothing).unwrap().lock;
    let other = SigningKey::generate().unwrap();
    std::fs::write(w.dir.path().join("trust.toml"), format!("[keys]\n\"*\" = [\"{}\"]\n", other.public().id()))
        .unwrap();
    let ctx = w.ctx();
    let e = fetch_all(&ctx, &ctx.registries().unwrap(), &lock).unwrap_err();
    assert_eq!(failure_of(&e), Failure::Trust, "{e:#}");
    assert!(!ctx.config.cache_dir.join("src").exists(), "nothing unpacked");
}

/// The plan an install would deploy: the resolved packages as fetched, and the
/// project itself, known by its digest; nothing deployed, ebpkg.lock not written.
#[test]
fn plan_deploys_the_project_with_its_resolved_packages() {
    let w = world();
    let ctx = w.ctx();
    let project = ctx.project().unwrap().clone();
    let opts = InstallOptions {
        params: [("DEVNAME".to_owned(), "eth0".to_owned())].into(),
        force: false,
        deployment: None,
        build: BuildOptions::default(),
        chain_mode: ChainMode::Auto,
        reset_state: false,
    };
    let planned = plan(&ctx, &Target::Project(Box::new(project.clone())), &opts).unwrap();
    let plan = &planned.plan;
    assert_eq!(plan.deployment, "app");
    assert_eq!(plan.project.to_string(), "app@0.1.0");
    assert_eq!(plan.params, opts.params);
    let dir = std::fs::canonicalize(&w.project).unwrap();
    assert_eq!(plan.project_dir.as_deref(), Some(dir.as_path()));
    let packages: Vec<(String, String, String)> =
        plan.packages.iter().map(|p| (p.id.to_string(), p.source.to_string(), p.checksum.to_string())).collect();
    let url = w.registry.url().to_string();
    assert_eq!(
        packages,
        [
            ("meter@1.0.0".into(), url.clone(), w.entry("meter@1.0.0").cksum.to_string()),
            ("net@1.1.0".into(), url, w.entry("net@1.1.0").cksum.to_string()),
            ("app@0.1.0".into(), format!("path+file://{}", dir.display()), project.digest().unwrap().to_string()),
        ]
    );
    assert!(plan.packages.iter().all(|p| p.objects.is_empty()), "nothing to build");
    assert_eq!(plan.packages[2].signer, None);
    assert_eq!(plan.packages[0].signer.as_ref(), Some(w.key.public().id()));
    assert!(!project.lock_path().exists(), "ebpkg.lock is written only by a deployed install");
    assert!(planned.resolved.is_some());
}

/// A command reads ebpkg.toml and the trust policy files once, however many of
/// its steps ask: what they say afterwards is what they said then.
#[test]
fn the_project_and_the_trust_policy_are_read_once_per_command() {
    let w = world();
    let ctx = w.ctx();
    let manifest = w.project.join(MANIFEST_FILE);
    assert_eq!(ctx.project().unwrap().manifest.package.name.as_str(), "app");
    let trusted = ctx.trust_policy().unwrap();
    assert_eq!(trusted.trusted_for("net"), [*w.key.public().id()]);

    std::fs::write(&manifest, "not toml [").unwrap();
    std::fs::remove_file(w.dir.path().join("trust.toml")).unwrap();
    assert_eq!(ctx.project().unwrap().manifest.package.name.as_str(), "app", "not read again");
    assert_eq!(ctx.trust_policy().unwrap(), trusted, "not read again");

    // The next command reads them as they are now; a project that failed to load
    // fails alike for every step that asks, without being read again.
    let ctx = w.ctx();
    let first = ctx.project().unwrap_err();
    assert_eq!(failure_of(&first), Failure::Input);
    assert!(ctx.trust_policy().unwrap().trusted_for("net").is_empty());
    write_manifest(&w.project, "app", "0.1.0", &[]);
    let second = ctx.project().unwrap_err();
    assert_eq!(format!("{second:#}"), format!("{first:#}"));
    assert_eq!(failure_of(&second), Failure::Input);
}
