//! Whether this kernel is one the packages about to be loaded declare they work on
//! (`[package.kernel] min`, and its `reason`), decided before anything is built:
//! a kernel older than a package's `min` would only refuse its programs later, in
//! the verifier's words, after every compile.

use ebpkg_spec::Manifest;
use ebpkg_spec::types::KernelVersion;

use crate::exit::{Failure, fail};

/// The kernel this command runs on, as `uname -r` names it.
#[derive(Debug, Clone)]
pub struct RunningKernel {
    pub release: String,
    /// Its version; `None` for a release that does not start with one.
    pub version: Option<KernelVersion>,
}

impl RunningKernel {
    pub fn current() -> RunningKernel {
        let release = rustix::system::uname().release().to_string_lossy().into_owned();
        RunningKernel::of_release(release)
    }

    pub fn of_release(release: String) -> RunningKernel {
        let version = KernelVersion::from_uname(&release);
        RunningKernel { release, version }
    }
}

/// Refuses (exit code 5) when `kernel` is older than any package's declared
/// `min`, naming each such package, what it needs and why. A release whose
/// version cannot be read is let through: the verifier will decide.
pub fn refuse_unmet<'a>(
    kernel: &RunningKernel,
    packages: impl IntoIterator<Item = &'a Manifest>,
) -> anyhow::Result<()> {
    let Some(running) = kernel.version else { return Ok(()) };
    let unmet: Vec<String> = packages
        .into_iter()
        .filter_map(|m| {
            let req = &m.package.kernel;
            let min = req.min.filter(|min| running < *min)?;
            let why = req.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            Some(format!("{} needs Linux ≥ {min}{why}", m.package.id()))
        })
        .collect();
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
}
