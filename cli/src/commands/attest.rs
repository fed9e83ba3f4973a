//! `ebpkg attest`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use ebpkg_spec::PackageName;
use ebpkg_spec::attestation::{KernelVerification, Tier, Verdict};

use ebpkg::Ctx;
use ebpkg::exit::{Failure, fail};
use ebpkg::ops::attest::{AttestOptions, Attested};

#[derive(Args)]
#[command(after_help = "A published version is fetched from the registry (its archive, checked against the index), \
built into portable objects (or taken prebuilt from the archive), and each program and loader is loaded through this \
kernel's verifier in a HIKe root of this run's own; each program's native tier (a chain calling it, compiled with its \
body) and the package's own chains are tried too. The result is an in-toto Statement whose subjects are the archive and \
each object, with a predicate of type https://ebpkg.dev/attestation/kernel-verification/v1, signed with your key \
(DSSE, in a Sigstore bundle): `cosign verify-blob-attestation --key KEY.pub --insecure-ignore-tlog --type \
https://ebpkg.dev/attestation/kernel-verification/v1 --bundle B ARCHIVE` verifies it. `ebpkg install` reads the \
attestations of what it resolved before it builds anything. Needs root (the kernel loads the programs).\n\n\
Examples:\n  ebpkg attest meter@1.0.0 --publish                     observe on this kernel, sign, attach to the version\n  \
ebpkg attest meter@1.0.0 --observe-only --out k.json    on another kernel (a VM): observe only, unsigned\n  \
ebpkg attest meter@1.0.0 --observations k.json --publish   this kernel and the other one, in one attestation")]
pub struct AttestArgs {
    /// The published version: `name@version`, or `name` for its newest version
    /// that is not yanked.
    package: String,
    /// Observations of other kernels to include (files `--observe-only` wrote
    /// there, for this very version).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    observations: Vec<PathBuf>,
    /// Do not observe this kernel: attest the --observations only.
    #[arg(long, requires = "observations")]
    no_local: bool,
    /// Observe this kernel and write the observation, unsigned, to --out (for
    /// another machine's `ebpkg attest --observations`).
    #[arg(long, conflicts_with_all = ["publish", "key", "no_local"])]
    observe_only: bool,
    /// Sign with this key: a key name (`ebpkg key list`) or a private key file.
    /// Default: the key named `default`.
    #[arg(long, value_name = "NAME|FILE")]
    key: Option<String>,
    /// Write the attestation (or the observation) here. Default:
    /// NAME-VERSION.attestation.json (NAME-VERSION.observation.json), unless
    /// --publish.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Attach the attestation to the version in the registry (its owners' key,
    /// registered there, must sign it).
    #[arg(long)]
    publish: bool,
}

pub fn run(ctx: &Ctx, args: AttestArgs) -> Result<ExitCode> {
    let (name, version) = match args.package.split_once('@') {
        Some((name, version)) => {
            let version = semver::Version::parse(version)
                .map_err(|e| fail(Failure::Usage, format!("`{version}` is not a version: {e}")))?;
            (name, Some(version))
        }
        None => (args.package.as_str(), None),
    };
    let name = PackageName::new(name).map_err(|e| ebpkg::exit::bad_name(name, &e))?;
    let opts = AttestOptions {
        name,
        version,
        here: !args.no_local,
        observations: args.observations,
        observe_only: args.observe_only,
        key: args.key,
        passphrase: &|| crate::commands::keys::passphrase(false),
        out: args.out,
        publish: args.publish,
    };
    let attested = ebpkg::ops::attest::attest(ctx, opts)?;
    print(ctx, &attested)?;
    Ok(ExitCode::SUCCESS)
}

fn print(ctx: &Ctx, a: &Attested) -> Result<()> {
    if ctx.ui.json {
        return ctx.ui.json(&serde_json::json!({
            "predicate": a.predicate,
            "written": a.written,
            "signed_by": a.signed_by.map(|k| k.to_string()),
            "published": a.published.as_ref().map(|(registry, accepted)| serde_json::json!({
                "registry": registry.to_string(), "accepted": accepted,
            })),
        }));
    }
    ctx.ui.out(table(&a.predicate));
    Ok(())
}

/// Kernel × item, as Markdown.
pub fn table(p: &KernelVerification) -> String {
    let mut out = String::from(
        "| kernel | item | verdict | processed | verified in | tier | why |\n|---|---|---|---:|---:|---|---|\n",
    );
    for k in &p.kernels {
        for i in &k.items {
            let verdict = match i.verdict {
                Verdict::Verified => "verified",
                Verdict::Refused => "REFUSED",
            };
            let tier = match i.tier {
                Some(Tier::Native) => "native",
                Some(Tier::Interpreted) => "interpreted",
                None => "",
            };
            out.push_str(&format!(
                "| {} | {} `{}` | {verdict} | {} | {} | {tier} | {} |\n",
                k.kernel.release,
                i.kind.name(),
                i.name,
                i.insns_processed.map(|n| n.to_string()).unwrap_or_default(),
                i.verification_micros.map(|n| format!("{n} µs")).unwrap_or_default(),
                i.reason.as_deref().unwrap_or("").replace('|', "\\|"),
            ));
        }
    }
    out.trim_end().to_owned()
}
