//! Whether this kernel is one the packages about to be loaded declare they work on
//! (`[package.kernel]`: `min` and its `reason`, `program-types`, `helpers`),
//! decided before anything is built: such a kernel would only refuse their
//! programs later, in the verifier's words, after every compile.

use ebpkg_spec::Manifest;
use ebpkg_spec::types::KernelVersion;
use std::sync::OnceLock;

use hike_runtime::kernel_btf::KernelBtf;

use crate::exit::{Failure, fail};

/// Where the running kernel describes its own types.
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// Larger than any kernel's BTF (6.18's is about 6 MB).
const MAX_VMLINUX_BTF_BYTES: u64 = 256 << 20;

/// The kernel this command runs on, as `uname -r` names it, and what its BTF
/// says it has (read only when a package declares helpers or program types).
pub struct RunningKernel {
    pub release: String,
    /// Its version; `None` for a release that does not start with one.
    pub version: Option<KernelVersion>,
    btf: OnceLock<Option<KernelBtf>>,
}

impl RunningKernel {
    pub fn current() -> RunningKernel {
        let release = rustix::system::uname().release().to_string_lossy().into_owned();
        RunningKernel { btf: OnceLock::new(), ..RunningKernel::of_release(release) }
    }

    /// A kernel known by its release only (its BTF is never read).
    pub fn of_release(release: String) -> RunningKernel {
        let version = KernelVersion::from_uname(&release);
        RunningKernel { release, version, btf: OnceLock::from(None) }
    }

    /// What tells this kernel from others for attestations: its release, machine
    /// and the SHA-256 of its BTF (read and hashed on each call: a few megabytes).
    pub fn identity(&self) -> anyhow::Result<ebpkg_spec::attestation::KernelIdentity> {
        let btf = ebpkg_fs::read(std::path::Path::new(VMLINUX_BTF), MAX_VMLINUX_BTF_BYTES).map_err(|e| {
            fail(
                Failure::Environment,
                format!(
                    "this kernel's BTF cannot be read ({e}): kernels are told apart by it, and CO-RE objects need it                      (a kernel built with CONFIG_DEBUG_INFO_BTF=y has it)"
                ),
            )
        })?;
        Ok(ebpkg_spec::attestation::KernelIdentity {
            release: self.release.clone(),
            architecture: rustix::system::uname().machine().to_string_lossy().into_owned(),
            btf: ebpkg_spec::attestation::Digests { sha256: ebpkg_spec::types::Sha256Digest::of(&btf) },
        })
    }

    /// `release (machine)`, for messages.
    pub fn name(&self) -> String {
        format!("{} ({})", self.release, rustix::system::uname().machine().to_string_lossy())
    }

    /// `uname -v`: which build of the release this is.
    pub fn build(&self) -> String {
        rustix::system::uname().version().to_string_lossy().into_owned()
    }

    /// Its BTF, read on first use; `None` when it cannot be read: declared
    /// helpers and program types are then left to the verifier.
    fn btf(&self) -> Option<&KernelBtf> {
        self.btf.get_or_init(KernelBtf::running).as_ref()
    }
}

/// What `m` declares that `kernel` lacks, as one clause each.
fn unmet_by(kernel: &RunningKernel, m: &Manifest) -> Vec<String> {
    let req = &m.package.kernel;
    let id = m.package.id();
    let mut unmet = Vec::new();
    // A release whose version cannot be read is let through: the verifier will decide.
    if let (Some(running), Some(min)) = (kernel.version, req.min)
        && running < min
    {
        let why = req.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
        unmet.push(format!("{id} needs Linux ≥ {min}{why}"));
    }
    // (The BTF is read only for a package that declares what to look up in it.)
    let declares_features = !req.program_types.is_empty() || !req.helpers.is_empty();
    if declares_features && let Some(btf) = kernel.btf() {
        let types: Vec<&str> =
            req.program_types.iter().map(String::as_str).filter(|t| !btf.has_program_type(t)).collect();
        if !types.is_empty() {
            unmet.push(format!("{id} loads program type {}, which this kernel does not have", types.join(", ")));
        }
        let functions: Vec<&str> = req.helpers.iter().map(String::as_str).filter(|h| !btf.has_function(h)).collect();
        if !functions.is_empty() {
            unmet.push(format!("{id} calls {}, which this kernel does not have", functions.join(", ")));
        }
    }
    unmet
}

/// Refuses (exit code 5) when `kernel` lacks what any package declares it needs
/// (`[package.kernel]`), naming each such package, what it needs and why.
pub fn refuse_unmet<'a>(
    kernel: &RunningKernel,
    packages: impl IntoIterator<Item = &'a Manifest>,
) -> anyhow::Result<()> {
    let unmet: Vec<String> = packages.into_iter().flat_map(|m| unmet_by(kernel, m)).collect();
    if unmet.is_empty() {
        return Ok(());
    }
    Err(fail(
        Failure::Kernel,
        format!(
            "{}; this kernel is {}\n  help: nothing was built or loaded. Run on a newer kernel, or depend on a version \
             that supports this one (`ebpkg info NAME` lists what each version needs)",
            unmet.join("; "),
            kernel.release
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(name: &str, kernel: &str) -> Manifest {
        let text = format!("[package]\nname = \"{name}\"\nversion = \"1.2.0\"\n\n[package.kernel]\n{kernel}\n");
        match ebpkg_spec::Manifest::parse(&text, "ebpkg.toml") {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn an_older_kernel_is_refused_with_each_package_its_need_and_why() {
        let meter = manifest("meter", "min = \"5.12\"\nreason = \"counts with atomic compare-and-exchange\"");
        let net = manifest("net", "min = \"5.4\"");
        let tcx = manifest("tcx-thing", "min = \"6.6\"");
        let old = RunningKernel::of_release("5.10.0-32-amd64".into());
        let e = refuse_unmet(&old, [&meter, &net, &tcx]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.starts_with(
                "meter@1.2.0 needs Linux ≥ 5.12: counts with atomic compare-and-exchange; tcx-thing@1.2.0 needs Linux \
                 ≥ 6.6; this kernel is 5.10.0-32-amd64"
            ),
            "{e}"
        );
        assert!(!e.contains("net@"), "5.10 meets net's 5.4: {e}");
        let new = RunningKernel::of_release("6.18.44-fc-v595".into());
        assert!(refuse_unmet(&new, [&meter, &net, &tcx]).is_ok());
        let unreadable = RunningKernel::of_release("custom".into());
        assert!(refuse_unmet(&unreadable, [&meter]).is_ok(), "the verifier decides");
    }

    /// Against this machine's kernel and its BTF.
    #[test]
    fn helpers_and_program_types_this_kernel_lacks_are_refused() {
        let kernel = RunningKernel::current();
        assert!(kernel.btf().is_some(), "this kernel's BTF cannot be read");
        let fine = manifest("net", "program-types = [\"xdp\"]\nhelpers = [\"bpf_fib_lookup\", \"bpf_obj_new_impl\"]");
        assert!(refuse_unmet(&kernel, [&fine]).is_ok());
        let future = manifest("future", "program-types = [\"xdp\"]\nhelpers = [\"bpf_fib_lookup\", \"bpf_teleport\"]");
        let e = refuse_unmet(&kernel, [&fine, &future]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.starts_with("future@1.2.0 calls bpf_teleport, which this kernel does not have; this kernel is"),
            "{e}"
        );
        let known = RunningKernel::of_release(kernel.release.clone());
        assert!(refuse_unmet(&known, [&future]).is_ok(), "without BTF the verifier decides");
    }
}
