//! Deployments of the runtime's own test objects (vmtest programs, the test
//! loader) into a HIKe root and state directory of the test's own, removed by a
//! guard even when the test fails.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod kernel;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ebpkg_deploy::{DeployPlan, Deployer, PlannedObject, PlannedPackage, PlannedScript};
use ebpkg_spec::Manifest;
use ebpkg_spec::PackageId;
use ebpkg_spec::types::Sha256Digest;
use hike_bytecode::Hook;
use hike_runtime::{Runtime, ScratchPath, objects};

pub use hike_runtime::testing::require_kernel;

/// A HIKe root, a state directory and an object directory of the test's own.
pub struct Env {
    pub root: PathBuf,
    pub state: tempfile::TempDir,
    pub files: tempfile::TempDir,
    _root: ScratchPath,
    // Last: released once the root is gone.
    _kernel_work: kernel::Shared,
}

impl Env {
    pub fn new(tag: &str) -> Env {
        require_kernel();
        let kernel_work = kernel::shared();
        let guard = ScratchPath::unique(Path::new("/sys/fs/bpf"), &format!("ebpkg-deploy-{tag}"));
        Env {
            root: guard.path().to_owned(),
            state: tempfile::tempdir().unwrap(),
            files: tempfile::tempdir().unwrap(),
            _root: guard,
            _kernel_work: kernel_work,
        }
    }

    pub fn deployer(&self) -> Deployer {
        Deployer::new(self.state.path(), &self.root, None).unwrap()
    }

    pub fn deployer_in(&self, netns: &str) -> Deployer {
        Deployer::new(self.state.path(), &self.root, Some(netns.to_owned())).unwrap()
    }

    /// Every path under the root: what "nothing new pinned" is checked against.
    pub fn pins(&self) -> Vec<String> {
        pins_under(&self.root)
    }

    /// Package `progs@version` with the runtime's test programs.
    pub fn progs(&self, version: &str) -> PlannedPackage {
        progs_in(self.files.path(), version)
    }

    /// `name@version`.
    pub fn id(name: &str, version: &str) -> PackageId {
        PackageId::new(ebpkg_spec::PackageName::new(name).unwrap(), version.parse().unwrap())
    }

    /// Package `tl@1.0.0` with the runtime's test loader.
    pub fn loader_pkg(&self) -> PlannedPackage {
        loader_pkg_in(self.files.path())
    }

    /// A plan deploying `script` with package `progs@version` and the test loader.
    pub fn plan(&self, version: &str, script: &str, params: &[(&str, &str)]) -> DeployPlan {
        plan_in(self.files.path(), "app", version, script, params)
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Package `progs@version` with two test programs, objects written to `files`.
pub fn progs_in(files: &Path, version: &str) -> PlannedPackage {
    let manifest = format!(
        r#"[package]
name = "progs"
version = "{version}"

[[program]]
name = "test_verdict"
source = "src/vmtest.bpf.c"
hook = "xdp"
ends-packet = "may"
[[program.arg]]
name = "verdict"
type = "u32"
doc = "the XDP action"

[[program]]
name = "test_nop"
source = "src/vmtest.bpf.c"
hook = "xdp"
ends-packet = "never"
"#
    );
    PlannedPackage {
        id: id("progs", version),
        source: ebpkg_deploy::PackageSource::Registry(ebpkg_spec::RegistryId::parse_url("file:///test/").unwrap()),
        checksum: Sha256Digest::from_hex(&format!("{:0>64}", version.replace('.', ""))).unwrap(),
        root: files.to_owned(),
        manifest: Manifest::parse(&manifest, "progs/ebpkg.toml").unwrap(),
        objects: vec![PlannedObject {
            path: write(files, &format!("mini-{version}.o"), objects::mini()),
            object_name: "src/vmtest.bpf.c".into(),
            hook: Hook::Xdp,
            programs: vec!["test_verdict".into(), "test_nop".into()],
            loaders: vec![],
            sha256: None,
            origin: None,
            compiler: None,
        }],
        signer: None,
    }
}

/// `name@version`.
pub fn id(name: &str, version: &str) -> PackageId {
    PackageId::new(ebpkg_spec::PackageName::new(name).unwrap(), version.parse().unwrap())
}

/// Package `tl@1.0.0` with the runtime's test loader.
pub fn loader_pkg_in(files: &Path) -> PlannedPackage {
    let manifest = r#"[package]
name = "tl"
version = "1.0.0"

[[loader]]
name = "test_loader"
source = "src/testloader.bpf.c"
hook = "xdp"

[[loader.map]]
name = "test_cfg"
doc = "the chain every packet runs"
key = [{ name = "slot", type = "u32" }]
value = [{ name = "chain", type = "chain" }]
"#;
    PlannedPackage {
        id: id("tl", "1.0.0"),
        source: ebpkg_deploy::PackageSource::Registry(ebpkg_spec::RegistryId::parse_url("file:///test/").unwrap()),
        checksum: Sha256Digest([0x11; 32]),
        root: files.to_owned(),
        manifest: Manifest::parse(manifest, "tl/ebpkg.toml").unwrap(),
        objects: vec![PlannedObject {
            path: write(files, "testloader.o", objects::testloader(Hook::Xdp)),
            object_name: "src/testloader.bpf.c".into(),
            hook: Hook::Xdp,
            programs: vec![],
            loaders: vec!["test_loader".into()],
            sha256: None,
            origin: None,
            compiler: None,
        }],
        signer: None,
    }
}

/// A plan deploying `script` as `deployment` with `progs@version` and the test loader.
pub fn plan_in(files: &Path, deployment: &str, version: &str, script: &str, params: &[(&str, &str)]) -> DeployPlan {
    let packages = vec![progs_in(files, version), loader_pkg_in(files)];
    let manifests: Vec<Manifest> = packages.iter().map(|p| p.manifest.clone()).collect();
    let env = ebpkg_deploy::signatures::env_from_manifests(&manifests).unwrap();
    let compiled = hike_chainc::compile(script, "chains/main.eclat", &env).unwrap_or_else(|d| panic!("{}", d.render()));
    DeployPlan {
        deployment: deployment.into(),
        project: id("app", "0.1.0"),
        project_dir: None,
        packages,
        scripts: vec![PlannedScript {
            file: "chains/main.eclat".into(),
            source: script.into(),
            artifact: compiled.artifact,
        }],
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        force: false,
        chain_mode: ebpkg_deploy::ChainMode::Auto,
        reset_state: false,
        restores: None,
    }
}

/// Every path under `root`, relative, sorted.
pub fn pins_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// A network namespace holding one veth pair per `(a, b)`, both ends up;
/// removed when dropped.
pub struct Netns(pub String);

impl Netns {
    pub fn new(tag: &str, pairs: &[(&str, &str)]) -> Netns {
        let ns = format!("ebd{tag}{}", std::process::id());
        let ip = |args: &[&str]| {
            let out = std::process::Command::new("ip").args(args).output().expect("ip (iproute2)");
            assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        };
        let _ = std::process::Command::new("ip").args(["netns", "del", &ns]).output();
        ip(&["netns", "add", &ns]);
        for (a, b) in pairs {
            ip(&["-n", &ns, "link", "add", a, "type", "veth", "peer", "name", b]);
            ip(&["-n", &ns, "link", "set", a, "up"]);
            ip(&["-n", &ns, "link", "set", b, "up"]);
        }
        Netns(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        out.push(p.strip_prefix(base).unwrap().display().to_string());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(base, &p, out);
        }
    }
}

/// A chain that ends every packet with `verdict` through `test_verdict`.
pub fn verdict_script(verdict: u32) -> String {
    format!(
        "from prog.progs import test_verdict, test_nop
from loaders.tl import test_loader

test_loader[test_cfg] = {{ (0): (main) }}

def main():
    test_nop()
    test_verdict({verdict})
    return 0
"
    )
}

/// Like `verdict_script`, attached to the interface named by DEVNAME.
pub fn attached_script(verdict: u32) -> String {
    format!("{}test_loader.attach('DEVNAME', 'xdp')\n", verdict_script(verdict))
}

/// An Ethernet frame with an IPv6 header, enough for the test loader.
pub fn packet() -> Vec<u8> {
    let mut p = vec![0u8; 14 + 40 + 8];
    p[12] = 0x86;
    p[13] = 0xdd;
    p[14] = 0x60;
    p[20] = 17;
    p
}

/// Runs a packet through a loader instance of the deployment.
pub fn verdict_of(env: &Env, instance: &str) -> u32 {
    let rt = Runtime::open(&env.root).unwrap();
    rt.test_run_loader(instance, &packet(), 0).unwrap().verdict
}

/// Compiles chains natively over the test programs (`test/mini.bpf.c`, one
/// module per package version), as the CLI's compiler does over package sources.
#[derive(Debug)]
pub struct MiniCompiler;

impl ebpkg_deploy::NativeCompiler for MiniCompiler {
    fn compile(&self, req: &ebpkg_deploy::NativeRequest<'_>) -> Result<ebpkg_deploy::NativeBuild, String> {
        let started = std::time::Instant::now();
        let mut native = hike_runtime::native_testing::TestNative::new(req.hook)?;
        let mut modules: Vec<(String, String, usize)> = Vec::new();
        let mut programs = BTreeMap::new();
        for (id, (pkg, name)) in req.programs {
            let (p, v) = (pkg.name().to_owned(), pkg.version());
            let m = match modules.iter().find(|(mp, mv, _)| *mp == p && *mv == v) {
                Some((_, _, m)) => *m,
                None => {
                    let m = native.add_module("test/mini.bpf.c", &p, &v)?;
                    modules.push((p, v, m));
                    m
                }
            };
            programs.insert(*id, (m, (*name).to_owned()));
        }
        let (elf, generated) = native.build(req.chain, req.chains, &programs)?;
        Ok(ebpkg_deploy::NativeBuild {
            elf,
            entry: generated.entry,
            modules: native.modules().to_vec(),
            worst_steps: generated.worst.steps,
            build_time: started.elapsed(),
        })
    }
}
