//! A real registry for tests (feature `testing`): the server in this process on a
//! loopback port, against its own PostgreSQL database (from
//! `ebpkg-registry-testing`) and its own blob directory, stopped on drop.
//!
//! Test code is synchronous: the server runs on a runtime this guard owns, and
//! the admin helpers block on it.

pub mod oidc;

use std::net::SocketAddr;
use std::time::Duration;

use ebpkg_registry_testing::{Database, Postgres};
use ebpkg_spec::registry_api::{NewToken, Scope};
use tempfile::TempDir;
use tokio::sync::oneshot;

use crate::config::{Bucket, Config, StorageUrl};
use crate::{Server, db};

/// A running registry.
pub struct TestRegistry {
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    addr: SocketAddr,
    url: String,
    pool: sqlx::PgPool,
    config: Config,
    // Dropped after the server stops (fields drop in order).
    database: Database,
    blobs: TempDir,
}

/// What a test may change before the server starts.
pub type Tweak = Box<dyn FnOnce(&mut Config) + Send>;

impl TestRegistry {
    /// A registry with default settings, except limits generous enough for tests
    /// and unsigned publishes allowed.
    pub fn start() -> anyhow::Result<TestRegistry> {
        TestRegistry::start_with(Box::new(|_| {}))
    }

    /// A registry whose configuration `tweak` adjusts (storage, limits, …).
    pub fn start_with(tweak: Tweak) -> anyhow::Result<TestRegistry> {
        let postgres = Postgres::shared()?;
        TestRegistry::start_on(postgres.database()?, tweak)
    }

    /// A registry on a given database (a private cluster, for fault tests).
    pub fn start_on(database: Database, tweak: Tweak) -> anyhow::Result<TestRegistry> {
        let blobs = tempfile::tempdir()?;
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let addr = listener.local_addr()?;
        let mut config = Config {
            database_url: database.url(),
            listen: addr,
            storage: StorageUrl::Dir(blobs.path().to_owned()),
            public_url: ebpkg_spec::RegistryId::parse_url(&format!("http://{addr}/"))?,
            dl_template: None,
            max_archive_bytes: 32 * 1024 * 1024,
            request_timeout: Duration::from_secs(60),
            db_pool: 8,
            archive_cache_mib: 64,
            ip_rate_per_minute: 0,
            new_package: Bucket { burst: 1000, interval: Duration::from_secs(1) },
            new_version: Bucket { burst: 1000, interval: Duration::from_secs(1) },
            trusted_proxies: Vec::new(),
            auth_required: false,
            // Most tests are not about signatures; tests/it/signatures.rs turns
            // this back to the production default.
            allow_unsigned: true,
            tuf_online_key: None,
            log_json: false,
            trusted_issuers: Vec::new(),
            trusted_audience: format!("http://{addr}"),
        };
        tweak(&mut config);
        let server = {
            let _inside = runtime.enter();
            Server::new(config.clone())?
        };
        let pool = server.state().db.clone();
        runtime.block_on(db::migrate(&pool))?;
        let (stop, stopped) = oneshot::channel::<()>();
        let handle = runtime.spawn(server.run(listener, async {
            let _ = stopped.await;
        }));
        Ok(TestRegistry {
            runtime: Some(runtime),
            stop: Some(stop),
            server: Some(handle),
            addr,
            url: format!("http://{addr}/"),
            pool,
            config,
            database,
            blobs,
        })
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn database(&self) -> &Database {
        &self.database
    }

    pub fn blob_dir(&self) -> &std::path::Path {
        self.blobs.path()
    }

    /// Runs a future on the server's runtime (for checks against the database).
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        match &self.runtime {
            Some(rt) => rt.block_on(f),
            None => unreachable!("the runtime lives until drop"),
        }
    }

    pub fn pool(&self) -> &sqlx::PgPool {
        &self.pool
    }

    /// Creates a user.
    pub fn user(&self, login: &str) -> anyhow::Result<()> {
        match self.block_on(db::users::create(&self.pool, login))? {
            Some(_) => Ok(()),
            None => anyhow::bail!("user `{login}` exists"),
        }
    }

    /// A token for `login` (created if needed) with these scopes and globs; returns the secret.
    pub fn token(&self, login: &str, scopes: &[Scope], packages: &[&str]) -> anyhow::Result<String> {
        let user = match self.block_on(db::users::by_login(&self.pool, login))? {
            Some(u) => u,
            None => self
                .block_on(db::users::create(&self.pool, login))?
                .ok_or_else(|| anyhow::anyhow!("user `{login}` vanished"))?,
        };
        let request = NewToken {
            name: format!("test token of {login}"),
            scopes: scopes.to_vec(),
            packages: packages.iter().map(|p| (*p).to_owned()).collect(),
            expires_in_days: None,
        };
        let created = self
            .block_on(crate::auth::issue_token(&self.pool, user.id, &request))
            .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
        Ok(created.secret)
    }

    /// Stops the server, letting requests in flight finish.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = match (self.server.take(), &self.runtime) {
            (Some(handle), Some(rt)) => rt.block_on(handle).map_err(anyhow::Error::from).and_then(|r| r),
            _ => Ok(()),
        };
        if let Some(rt) = self.runtime.take() {
            self.block_on_close(rt);
        }
        result
    }

    fn block_on_close(&self, rt: tokio::runtime::Runtime) {
        rt.block_on(self.pool.close());
        rt.shutdown_timeout(Duration::from_secs(5));
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!("test registry at {}: {e:#}", self.url);
        }
    }
}

/// Packs a package directory written here: `[package]` `name`/`version`, then
/// `extra` TOML, and `files` — exactly as `ebpkg publish` packs.
pub fn pack_with(
    scratch: &std::path::Path,
    name: &str,
    version: &str,
    extra: &str,
    files: &[(&str, &str)],
) -> anyhow::Result<ebpkg_archive::Packed> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = scratch.join(format!("{name}-{version}-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("ebpkg.toml"), format!("[package]\nname = \"{name}\"\nversion = \"{version}\"\n{extra}"))?;
    for (path, text) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(ebpkg_archive::pack(&dir)?)
}

/// A package with a description, keywords, a README and one program.
pub fn pack_described(
    scratch: &std::path::Path,
    name: &str,
    version: &str,
    description: &str,
    keywords: &[&str],
    program: &str,
) -> anyhow::Result<ebpkg_archive::Packed> {
    let keywords: Vec<String> = keywords.iter().map(|k| format!("\"{k}\"")).collect();
    let extra = format!(
        "description = \"{description}\"\nkeywords = [{}]\nreadme = \"README.md\"\nlicense = \"MIT\"\n\n\
         [[program]]\nname = \"{program}\"\nsource = \"src/{program}.bpf.c\"\nhook = \"xdp\"\n",
        keywords.join(", ")
    );
    let source = format!("src/{program}.bpf.c");
    let readme = format!("# {name}\n\n{description}\n");
    pack_with(scratch, name, version, &extra, &[(&source, "// a HIKe program\n"), ("README.md", &readme)])
}

/// The publish body for a packed archive.
pub fn publish_body(packed: &ebpkg_archive::Packed, name: &str, version: &str) -> anyhow::Result<Vec<u8>> {
    publish_body_with(packed, name, version, None)
}

fn publish_body_with(
    packed: &ebpkg_archive::Packed,
    name: &str,
    version: &str,
    bundle: Option<serde_json::Value>,
) -> anyhow::Result<Vec<u8>> {
    let metadata = ebpkg_spec::registry_api::PublishMetadata {
        name: ebpkg_spec::PackageName::new(name)?,
        vers: semver::Version::parse(version)?,
        cksum: packed.sha256,
        bundle,
    };
    Ok(ebpkg_spec::registry_api::encode_publish(&metadata, &packed.bytes))
}

/// The publish body for a packed archive, signed with `key`.
pub fn signed_publish_body(
    packed: &ebpkg_archive::Packed,
    name: &str,
    version: &str,
    key: &ebpkg_signing::SigningKey,
) -> anyhow::Result<Vec<u8>> {
    let bundle = ebpkg_signing::sign(key, &packed.bytes)?;
    publish_body_with_bundle(packed, name, version, serde_json::from_str(bundle.json())?)
}

/// The publish body for a packed archive with any bundle JSON (for hostile tests).
pub fn publish_body_with_bundle(
    packed: &ebpkg_archive::Packed,
    name: &str,
    version: &str,
    bundle: serde_json::Value,
) -> anyhow::Result<Vec<u8>> {
    publish_body_with(packed, name, version, Some(bundle))
}

/// The `POST /api/v1/me/keys` body registering `key` for `login`, with the
/// proof of possession `ebpkg owner key add` sends.
pub fn key_registration(
    login: &str,
    key: &ebpkg_signing::SigningKey,
) -> anyhow::Result<ebpkg_spec::registry_api::NewPublisherKey> {
    let message = ebpkg_spec::registry_api::key_proof_message(login, key.public().id());
    let proof = ebpkg_signing::sign(key, message.as_bytes())?;
    Ok(ebpkg_spec::registry_api::NewPublisherKey {
        pem: key.public().to_pem(),
        proof: serde_json::from_str(proof.json())?,
    })
}

/// A kernel observation for tests: every item of `items` verified (programs
/// at the native tier), or, with `refused`, that item refused for that reason.
pub fn kernel_observation(
    release: &str,
    items: &[&str],
    refused: Option<(&str, &str)>,
) -> ebpkg_spec::attestation::KernelObservation {
    use ebpkg_spec::attestation::{
        Digests, ItemKind, ItemObservation, KernelIdentity, KernelObservation, Tier, Verdict,
    };
    let mut observed: Vec<ItemObservation> = items
        .iter()
        .map(|name| ItemObservation {
            kind: ItemKind::Program,
            name: (*name).to_owned(),
            object: None,
            verdict: Verdict::Verified,
            insns_processed: Some(1234),
            verification_micros: Some(800),
            tier: Some(Tier::Native),
            reason: None,
        })
        .collect();
    if let Some((name, reason)) = refused {
        observed.push(ItemObservation {
            kind: ItemKind::Program,
            name: name.to_owned(),
            object: None,
            verdict: Verdict::Refused,
            insns_processed: None,
            verification_micros: None,
            tier: None,
            reason: Some(reason.to_owned()),
        });
    }
    KernelObservation {
        kernel: KernelIdentity {
            release: release.to_owned(),
            architecture: "x86_64".to_owned(),
            btf: Digests { sha256: ebpkg_spec::types::Sha256Digest::of(release.as_bytes()) },
        },
        build: "#1 SMP Debian".to_owned(),
        observed_at: "2026-12-01T10:00:00Z".to_owned(),
        items: observed,
    }
}

/// An attestation of `name@version` (whose archive has SHA-256 `archive`)
/// observing `kernels`, signed with `key`, as `ebpkg attest` makes one.
pub fn attestation(
    key: &ebpkg_signing::SigningKey,
    name: &str,
    version: &str,
    archive: &ebpkg_spec::types::Sha256Digest,
    kernels: Vec<ebpkg_spec::attestation::KernelObservation>,
) -> anyhow::Result<ebpkg_signing::SignedAttestation> {
    use ebpkg_spec::attestation::{AttestedPackage, Attester, Digests, KernelVerification, PREDICATE_TYPE};
    let (name, version) = (ebpkg_spec::PackageName::new(name)?, semver::Version::parse(version)?);
    let predicate = KernelVerification {
        package: AttestedPackage {
            name: name.clone(),
            version: version.clone(),
            archive: Digests { sha256: *archive },
        },
        attester: Attester { tool: "ebpkg test".to_owned() },
        kernels,
    };
    let subject = ebpkg_spec::attestation::archive_subject(&name, &version);
    let statement = ebpkg_signing::Statement::new(
        vec![ebpkg_signing::Subject::sha256(subject, archive)],
        PREDICATE_TYPE,
        serde_json::to_value(&predicate)?,
    );
    Ok(ebpkg_signing::attest(key, &statement)?)
}

/// A rebuild attestation of `name@version` (whose archive has SHA-256
/// `archive`) saying its one shipped object (SHA-256 `[9; 32]`) matched,
/// signed with `key`, as `ebpkg verify --rebuild --sign` makes one.
pub fn rebuild_attestation(
    key: &ebpkg_signing::SigningKey,
    name: &str,
    version: &str,
    archive: &ebpkg_spec::types::Sha256Digest,
) -> anyhow::Result<ebpkg_signing::SignedAttestation> {
    use ebpkg_spec::attestation::rebuild::{REBUILD_PREDICATE_TYPE, Rebuild, RebuildResult, RebuiltObject};
    use ebpkg_spec::attestation::{AttestedPackage, Attester, Digests};
    let (name, version) = (ebpkg_spec::PackageName::new(name)?, semver::Version::parse(version)?);
    let object = ebpkg_spec::types::Sha256Digest([9; 32]);
    let predicate = Rebuild {
        package: AttestedPackage {
            name: name.clone(),
            version: version.clone(),
            archive: Digests { sha256: *archive },
        },
        attester: Attester { tool: "ebpkg test".to_owned() },
        rebuilt_at: "2026-12-02T00:00:00Z".to_owned(),
        objects: vec![RebuiltObject {
            object: "prebuilt/xdp/src/meter.bpf.c.o".into(),
            hook: ebpkg_spec::types::Hook::Xdp,
            source: Some("src/meter.bpf.c".into()),
            digest: Digests { sha256: object },
            compiler: Some("Debian clang version 14.0.6".into()),
            result: RebuildResult::Match,
            rebuilt: Some(Digests { sha256: object }),
            reason: None,
        }],
    };
    let subject = ebpkg_spec::attestation::archive_subject(&name, &version);
    let statement = ebpkg_signing::Statement::new(
        vec![ebpkg_signing::Subject::sha256(subject, archive)],
        REBUILD_PREDICATE_TYPE,
        serde_json::to_value(&predicate)?,
    );
    Ok(ebpkg_signing::attest(key, &statement)?)
}
