//! What to deploy, fully prepared: every package resolved, fetched, built into
//! objects, every chain script compiled. Nothing in a plan has touched the kernel
//! yet, so everything that can fail without the kernel has already failed.

use ebpkg_spec::PackageId;
use ebpkg_spec::types::Sha256Digest;
use std::collections::BTreeMap;
use std::path::PathBuf;

use ebpkg_spec::Manifest;
use hike_bytecode::Hook;
use hike_chainc::Artifact;
use serde::{Deserialize, Serialize};

/// A deployment to install (or to replace the current one with).
#[derive(Debug, Clone)]
pub struct DeployPlan {
    /// The deployment's name (by default the project's package name).
    pub deployment: String,
    /// The package whose chains are deployed.
    pub project: PackageId,
    /// Its directory (canonical) when it is a project, `None` for a package
    /// installed by name: deployments of other projects are not replaced.
    pub project_dir: Option<PathBuf>,
    /// Every package the deployment uses, the project included.
    pub packages: Vec<PlannedPackage>,
    /// The project's chain scripts, compiled.
    pub scripts: Vec<PlannedScript>,
    /// Values of script parameters (`--set NAME=VALUE`).
    pub params: BTreeMap<String, String>,
    /// Deploy even when the current deployment has the same inputs.
    pub force: bool,
    /// How chains run (`--chain-mode`).
    pub chain_mode: ChainMode,
    /// Start empty the maps whose layout changed, instead of refusing the
    /// upgrade (`--reset-state`).
    pub reset_state: bool,
    /// The earlier generation this plan installs again (`ebpkg rollback`).
    pub restores: Option<u64>,
}

/// One package, with its built objects.
#[derive(Debug, Clone)]
pub struct PlannedPackage {
    pub id: PackageId,
    /// The registry it came from, or the project's directory.
    pub source: crate::source::PackageSource,
    /// The archive's SHA-256, or the digest of the local directory's archive.
    pub checksum: Sha256Digest,
    /// Where its files are (for printing source lines of verifier failures).
    pub root: PathBuf,
    pub manifest: Manifest,
    pub objects: Vec<PlannedObject>,
    /// The key its archive's signature was verified with (`None`: unsigned, or
    /// the project itself).
    pub signer: Option<ebpkg_spec::types::KeyId>,
}

impl PlannedPackage {
    /// Its name, as the runtime's pins and the records spell it.
    pub fn name(&self) -> &str {
        self.id.name.as_str()
    }

    /// Its version, as the runtime's pins and the records spell it.
    pub fn version(&self) -> String {
        self.id.version.to_string()
    }
}

/// A built BPF object and what it provides.
#[derive(Debug, Clone)]
pub struct PlannedObject {
    /// The object file.
    pub path: PathBuf,
    /// The source it was built from, as the package names it (`src/tb.bpf.c`).
    pub object_name: String,
    pub hook: Hook,
    /// HIKe programs of the manifest this object provides.
    pub programs: Vec<String>,
    /// Loaders of the manifest this object provides.
    pub loaders: Vec<String>,
    /// The SHA-256 the build checked the object's bytes against: the deployer
    /// loads only bytes with this digest (`None`: a plan made without a build,
    /// by tests).
    pub sha256: Option<Sha256Digest>,
    /// Where the object came from (`None`: not known, for generations saved
    /// before origins were recorded).
    pub origin: Option<ebpkg_spec::types::ObjectOrigin>,
    /// The compiler the object names.
    pub compiler: Option<String>,
}

impl PlannedObject {
    /// The object's bytes, when they are the bytes the build checked: a file
    /// changed since (a cache entry swapped after its digest was verified) is
    /// refused, never loaded. Every reader that hands an object to the kernel
    /// reads it here.
    pub fn read(&self) -> crate::Result<Vec<u8>> {
        let elf = ebpkg_fs::read(&self.path, ebpkg_spec::MAX_OBJECT_BYTES)
            .map_err(|cause| crate::DeployError::Read { what: "cannot read the object", cause })?;
        if let Some(expected) = self.sha256 {
            let found = Sha256Digest::of(&elf);
            if found != expected {
                return Err(crate::DeployError::ObjectChanged { path: self.path.clone(), expected, found });
            }
        }
        Ok(elf)
    }
}

/// A compiled chain script of the project.
#[derive(Debug, Clone)]
pub struct PlannedScript {
    /// The script's package path (`chains/ddos.eclat`).
    pub file: String,
    pub source: String,
    pub artifact: Artifact,
}

impl DeployPlan {
    /// A digest of everything that determines what gets deployed: when it equals
    /// the current deployment's, an install has nothing to do.
    pub fn inputs_digest(&self, bpffs_root: &std::path::Path) -> String {
        #[derive(Serialize)]
        struct Inputs<'a> {
            format: u32,
            // A string, as before, for every root a person can name; lossy only
            // for bytes that are not UTF-8 (which serde_json refuses in paths).
            root: std::borrow::Cow<'a, str>,
            project: &'a PackageId,
            packages: Vec<(&'a str, String, String, String)>,
            scripts: Vec<(&'a str, &'a str)>,
            params: &'a BTreeMap<String, String>,
            chain_mode: ChainMode,
        }
        let mut packages: Vec<_> =
            self.packages.iter().map(|p| (p.name(), p.version(), p.source.to_string(), p.checksum.to_hex())).collect();
        packages.sort();
        let mut scripts: Vec<_> = self.scripts.iter().map(|s| (s.file.as_str(), s.source.as_str())).collect();
        scripts.sort();
        let inputs = Inputs {
            format: 1,
            root: bpffs_root.to_string_lossy(),
            project: &self.project,
            packages,
            scripts,
            params: &self.params,
            chain_mode: self.chain_mode,
        };
        match serde_json::to_vec(&inputs) {
            Ok(bytes) => ebpkg_spec::types::Sha256Digest::of(&bytes).to_hex(),
            // Never equal to a recorded digest (hex), so the plan is installed:
            // a plan that cannot be described is never taken as "up to date".
            Err(e) => format!("not comparable: {e}"),
        }
    }
}

/// How `ebpkg install` runs chains (`--chain-mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ChainMode {
    /// The VM only.
    Interpreted,
    /// Native, or the install fails (and is undone).
    Native,
    /// Native where the kernel accepts it, interpreted (with the reason recorded) elsewhere.
    #[default]
    Auto,
}

impl ChainMode {
    pub fn name(self) -> &'static str {
        match self {
            ChainMode::Interpreted => "interpreted",
            ChainMode::Native => "native",
            ChainMode::Auto => "auto",
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    fn plan(params: &[(&str, &str)]) -> DeployPlan {
        DeployPlan {
            deployment: "app".into(),
            project: PackageId::new(ebpkg_spec::PackageName::new("app").unwrap(), semver::Version::new(0, 1, 0)),
            project_dir: None,
            packages: Vec::new(),
            scripts: Vec::new(),
            params: params.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            force: false,
            chain_mode: ChainMode::default(),
            reset_state: false,
            restores: None,
        }
    }

    /// An object changed between the build's check and the load (a cache entry
    /// swapped after it was verified) is refused with both digests, not read.
    #[test]
    fn an_object_changed_since_the_build_checked_it_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.o");
        std::fs::write(&path, b"genuine").unwrap();
        let mut obj = PlannedObject {
            path: path.clone(),
            object_name: "src/a.bpf.c".into(),
            hook: Hook::Xdp,
            programs: vec![],
            loaders: vec![],
            sha256: Some(Sha256Digest::of(b"genuine")),
            origin: Some(ebpkg_spec::types::ObjectOrigin::BuildCache),
            compiler: None,
        };
        assert_eq!(obj.read().unwrap(), b"genuine");
        std::fs::write(&path, b"swapped").unwrap();
        let e = obj.read().unwrap_err();
        assert!(matches!(e, crate::DeployError::ObjectChanged { .. }), "{e}");
        assert!(e.to_string().contains(&Sha256Digest::of(b"swapped").to_hex()), "{e}");
        obj.sha256 = None;
        assert_eq!(obj.read().unwrap(), b"swapped", "no digest, no check (plans made without a build)");
    }

    /// A root that is not UTF-8 once made every plan's digest the digest of
    /// nothing, so any plan looked "up to date" with any other.
    #[test]
    fn plans_differ_in_digest_whatever_the_root_is_named() {
        let odd = std::path::Path::new(std::ffi::OsStr::from_bytes(b"/sys/fs/bpf/h\xffk"));
        let a = plan(&[("DEVNAME", "eth0")]).inputs_digest(odd);
        let b = plan(&[("DEVNAME", "eth1")]).inputs_digest(odd);
        assert_ne!(a, b);
        assert_eq!(a.len(), 64, "{a}");
        let normal = plan(&[]).inputs_digest(std::path::Path::new("/sys/fs/bpf/hike"));
        assert!(normal.bytes().all(|c| c.is_ascii_hexdigit()) && normal.len() == 64, "{normal}");
    }
}
