//! Resolving the project's dependencies into a lockfile: PubGrub over the
//! registries' indexes, preferring what ebpkg.lock already pins.

use ebpkg_spec::PackageId;
use std::collections::BTreeSet;

use anyhow::Result;
use ebpkg_resolver::{QualifiedName, Requirement, Resolution, ResolveRequest, UpdatePolicy};
use ebpkg_sources::RegistryId;
use ebpkg_spec::index::EntryPin;
use ebpkg_spec::{LockedDependency, LockedPackage, Lockfile, Manifest, PackageName};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::trust::{Trust, Verdict};
use crate::project::{LockState, Project};
use crate::registries::{DamagedLine, Registries};

/// What resolving produced.
pub struct Locked {
    pub lock: Lockfile,
    /// The lockfile on disk changed (or would have, under --locked it is an error).
    pub written: bool,
}

/// A resolution not yet written to ebpkg.lock (see [`Resolved::save`]).
pub struct Resolved {
    pub lock: Lockfile,
    /// The lockfile before, when it was usable.
    old: Option<Lockfile>,
    /// ebpkg.lock must be written: it is missing, damaged or differs.
    stale: bool,
}

impl Resolved {
    /// Writes ebpkg.lock when it must change, saying what changes.
    pub fn save(self, ctx: &Ctx, project: &Project) -> Result<Locked> {
        if !self.stale {
            return Ok(Locked { lock: self.lock, written: false });
        }
        // Thousands of packages make the difference worth skipping when nobody reads it.
        if !ctx.ui.quiet {
            let changes = diff(&self.old.unwrap_or_default(), &self.lock);
            ctx.ui.statuses(changes.lines().filter_map(|line| match line.split_once(' ') {
                Some(("+", rest)) => Some(("Locking", rest)),
                Some(("-", rest)) => Some(("Removing", rest)),
                _ => None,
            }));
        }
        let written = project.write_lockfile(&self.lock)?;
        Ok(Locked { lock: self.lock, written })
    }
}

/// Whether `lock` already satisfies `manifest`: each dependency locked once, from
/// its registry, at a version its requirement accepts, and nothing locked that the
/// dependencies do not reach. Such a lock can be installed without asking a
/// registry anything.
fn satisfies(manifest: &Manifest, lock: &Lockfile, regs: &Registries<'_>) -> Result<bool> {
    let mut reached: BTreeSet<(String, semver::Version)> = BTreeSet::new();
    let mut pending = Vec::new();
    let by_name = lock.by_normalized_name();
    for (name, dep) in &manifest.dependencies {
        let url = regs.url(dep.registry.as_ref());
        let mut matching = by_name.get(&name.normalized()).into_iter().flatten();
        let (Some(&p), None) = (matching.next(), matching.next()) else { return Ok(false) };
        if p.source != url || !dep.version.matches(&p.version) {
            return Ok(false);
        }
        pending.push(p);
    }
    while let Some(p) = pending.pop() {
        if !reached.insert((p.name.to_string(), p.version.clone())) {
            continue;
        }
        for d in &p.dependencies {
            match lock.get(d.name.as_str(), &d.version) {
                Some(next) => pending.push(next),
                None => return Ok(false),
            }
        }
    }
    Ok(reached.len() == lock.packages().len())
}

/// What a resolution starts from: a root package and what it requires.
pub struct Root {
    pub name: PackageName,
    pub version: semver::Version,
    pub deps: Vec<Requirement>,
}

impl Root {
    /// A package's dependencies, each in its registry.
    pub fn of_manifest(manifest: &Manifest, regs: &Registries<'_>) -> Root {
        let deps = manifest
            .dependencies
            .iter()
            .map(|(name, d)| {
                let url = regs.url(d.registry.as_ref());
                Requirement::new(QualifiedName::in_registry(name.clone(), regs.id_registry(&url)), d.version.clone())
            })
            .collect();
        Root { name: manifest.package.name.clone(), version: manifest.package.version.clone(), deps }
    }

    /// One package of the default registry, as `ebpkg install NAME@REQ` asks for
    /// it (the root stands for the command, not for a package).
    pub fn of_package(name: PackageName, req: semver::VersionReq) -> Result<Root> {
        let root = PackageName::new("ebpkg-install").map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Root {
            name: root,
            version: semver::Version::new(0, 0, 0),
            deps: vec![Requirement::new(QualifiedName::in_registry(name, None), req)],
        })
    }
}

/// Resolves what `root` requires (`old` is the previous lock) into a lockfile.
///
/// Versions the trust policy refuses (signed by a key it does not trust for the
/// package, or revoked, or unsigned where no rule allows it) are left out, each
/// said once, as fetch would refuse them: a hostile publish is skipped rather
/// than locked.
pub fn resolve(
    ctx: &Ctx,
    root: Root,
    old: Option<&Lockfile>,
    update: UpdatePolicy,
    regs: &Registries<'_>,
) -> Result<Lockfile> {
    let mut locked = Vec::new();
    for p in old.map(Lockfile::packages).unwrap_or_default() {
        locked.push((QualifiedName::in_registry(p.name.clone(), regs.id_registry(&p.source)), p.version.clone()));
    }
    let request = ResolveRequest { root: root.name, root_version: root.version, deps: root.deps, locked, update };
    let trust = Trust::load(ctx)?;
    let mut skipped: Vec<Refusal> = Vec::new();
    // Resolution reads only part of each index line; a chosen version whose line is
    // damaged elsewhere, or whose signer the policy refuses, is left out and the
    // dependencies resolved again, as if the line had been skipped from the start.
    // Each round leaves out at least one more.
    loop {
        let resolution = match ebpkg_resolver::resolve(&request, regs) {
            Ok(resolution) => resolution,
            // A cached record it met was damaged: resolved again from the index files.
            Err(_) if regs.reread_damaged() => continue,
            // Every refusal follows a resolution that succeeded with the refused versions, so a
            // failure now is the trust policy's doing, and is said as such.
            Err(
                e @ (ebpkg_resolver::ResolveError::NoSolution(_) | ebpkg_resolver::ResolveError::UnknownPackage { .. }),
            ) if !skipped.is_empty() => {
                return Err(untrusted_only(&e, &skipped));
            }
            Err(e) => return Err(e.into()),
        };
        let packages = match lock_packages(&resolution, old, regs)? {
            Ok(packages) => packages,
            Err(damaged) => {
                for line in &damaged {
                    regs.reject(line);
                }
                continue;
            }
        };
        let mut refused = false;
        for p in &packages {
            if let Verdict::Refused { why, fix } = trust.judge(&p.name, p.signer.as_ref()) {
                let id = PackageId::new(p.name.clone(), p.version.clone());
                say_skipped(ctx, &id, &p.source, &why);
                regs.leave_out(&p.source, &p.name, &p.version);
                skipped.push(Refusal { id, source: p.source.clone(), why, fix });
                refused = true;
            }
        }
        if !refused {
            return Ok(Lockfile::new(packages));
        }
    }
}

/// Says that the version `id` of the registry `source` is left out because the
/// trust policy refuses it (`why` follows "it", as in [`Verdict::Refused`]).
pub fn say_skipped(ctx: &Ctx, id: &PackageId, source: &RegistryId, why: &str) {
    ctx.ui.status("Skipping", format!("{id} ({source}): it {why}"));
}

/// A version the trust policy refused during a resolution.
struct Refusal {
    id: PackageId,
    /// The registry it is from.
    source: RegistryId,
    /// Follows "it", as in [`Verdict::Refused`].
    why: String,
    /// What to run to accept it, as in [`Verdict::Refused`].
    fix: String,
}

/// A resolution that failed once the versions the trust policy refuses were left
/// out. The trust policy is the cause (the same resolution succeeded with them), so
/// it comes first: which versions it refused and whose signatures they carry, then
/// what the resolution found without them, then what to run.
fn untrusted_only(e: &ebpkg_resolver::ResolveError, skipped: &[Refusal]) -> anyhow::Error {
    use ebpkg_resolver::ResolveError;
    // Every version of a package was refused: the resolver's "not in the registry" (or
    // "its index and its listing disagree") would blame the registry. Another package
    // missing is the registry's doing, said after the refusals.
    let all_refused = match e {
        ResolveError::UnknownPackage { pkg, .. } => skipped.iter().any(|r| r.id.name == pkg.name),
        _ => false,
    };
    let mut text = match e {
        ResolveError::UnknownPackage { pkg, .. } if all_refused => {
            format!("the trust policy refuses every version of `{}` the registry has:", pkg.name)
        }
        ResolveError::NoSolution(explanation) => format!(
            "the trust policy refuses versions that the dependencies of {} need (fetching them would fail):",
            explanation.root
        ),
        ResolveError::UnknownPackage { .. } | ResolveError::Source { .. } => {
            "the trust policy refuses versions these dependencies need (fetching them would fail):".to_owned()
        }
    };
    for r in skipped {
        text.push_str(&format!("\n  {} from {}: it {}", r.id, r.source, r.why));
    }
    // The explanation's own fixes (relax a requirement…) come after the trust policy's.
    let mut later: &[String] = &[];
    match e {
        ResolveError::NoSolution(explanation) => {
            let steps = ebpkg_resolver::Explanation { help: Vec::new(), ..explanation.clone() };
            text.push_str(&format!("\nWithout them, {steps}"));
            later = &explanation.help;
        }
        ResolveError::UnknownPackage { .. } if all_refused => {}
        other => text.push_str(&format!("\nWithout them, {other}")),
    }
    let mut said: Vec<&str> = Vec::new();
    for fix in skipped.iter().map(|r| r.fix.as_str()).chain(later.iter().map(String::as_str)) {
        if !said.contains(&fix) {
            text.push_str(&format!("\nhelp: {fix}"));
            said.push(fix);
        }
    }
    fail(Failure::Trust, text)
}

/// ebpkg.lock's packages for `resolution` (`old` is the previous lock, whose pins must still
/// hold); `Err` with the chosen versions whose index lines turn out damaged.
fn lock_packages(
    resolution: &Resolution,
    old: Option<&Lockfile>,
    regs: &Registries<'_>,
) -> Result<std::result::Result<Vec<LockedPackage>, Vec<DamagedLine>>> {
    // (Not `regs`, which is not shared between threads.)
    let default = &regs.default;
    let package = |at: usize, pin: EntryPin| -> Result<LockedPackage> {
        let (id, rp) = &resolution.packages[at];
        let source = id.registry.as_ref().unwrap_or(default).clone();
        // A version pinned before must still be the same bytes.
        if let Some(prev) = old.and_then(|o| o.get(pin.name.as_str(), &rp.version)).filter(|p| p.source == source) {
            ebpkg_sources::check_locked(&pin, prev)?;
        }
        // (Sized exactly: collected, thousands of small lists would each hold room for four.)
        let mut dependencies = Vec::with_capacity(rp.deps.len());
        let named = resolution.named(&rp.deps);
        dependencies
            .extend(named.map(|(d, version)| LockedDependency { name: d.name.clone(), version: version.clone() }));
        Ok(LockedPackage {
            name: pin.name,
            version: rp.version.clone(),
            source,
            checksum: pin.cksum,
            signer: pin.signed_by,
            dependencies,
        })
    };
    // Pinned and made in one pass, on every CPU: a large resolution locks thousands of
    // packages, while the index reading threads have nothing left to do. What a worker
    // cannot pin (a package whose index was not read by the loader) is pinned here after.
    // Each thread fills its own part of one vector: a vector of its own would be fresh
    // memory, then copied.
    let n = resolution.packages.len();
    let mut made: Vec<Option<LockedPackage>> = Vec::with_capacity(n);
    made.resize_with(n, || None);
    let run = |first: usize, out: &mut [Option<LockedPackage>]| -> LockRun {
        let mut done = LockRun::default();
        for (at, slot) in (first..).zip(out) {
            let (id, rp) = &resolution.packages[at];
            let url = id.registry.as_ref().unwrap_or(default);
            match Registries::pin_where_read(url, &id.name, &rp.version, &rp.origin) {
                Some(Ok(pin)) => match package(at, pin) {
                    Ok(package) => *slot = Some(package),
                    // (The rest is still pinned: a damaged line among it must still be found.)
                    Err(e) => done.fail(e),
                },
                Some(Err(damaged)) => done.damaged.push(damaged),
                None => done.elsewhere.push(at),
            }
        }
        done
    };
    let parts = std::thread::available_parallelism().map_or(1, |p| p.get()).min(n.div_ceil(1024));
    let mut all = std::thread::scope(|scope| {
        let run = &run;
        let mut chunks = chunks_at(&mut made, parts);
        let mine = chunks.next();
        let others: Vec<_> = chunks.map(|(first, out)| scope.spawn(move || run(first, out))).collect();
        let mut all = mine.map(|(first, out)| run(first, out)).unwrap_or_default();
        for other in others {
            match other.join() {
                Ok(more) => all.absorb(more),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    for at in std::mem::take(&mut all.elsewhere) {
        let (id, rp) = &resolution.packages[at];
        match regs.entry(&regs.url(id.registry.as_ref()), &id.name, &rp.version) {
            Ok(entry) => match package(at, EntryPin::from(&entry)) {
                Ok(package) => made[at] = Some(package),
                Err(e) => all.fail(e),
            },
            Err(e) => match e.downcast::<DamagedLine>() {
                Ok(damaged) => all.damaged.push(damaged),
                Err(e) => all.fail(e),
            },
        }
    }
    // Damaged lines first: the resolution without them may not choose what failed here.
    match (all.damaged.is_empty(), all.failed) {
        (false, _) => Ok(Err(all.damaged)),
        (true, Some(e)) => Err(e),
        // Every package was made: none damaged, none failed. (Collected in place.)
        (true, None) => match made.into_iter().collect::<Option<Vec<_>>>() {
            Some(packages) => Ok(Ok(packages)),
            None => Err(anyhow::anyhow!("internal error: a package of the resolution was neither locked nor refused")),
        },
    }
}

/// `slots` as at most `parts` consecutive runs of about the same length, each with the
/// position of its first slot.
fn chunks_at<T>(slots: &mut [T], parts: usize) -> impl Iterator<Item = (usize, &mut [T])> {
    let per = slots.len().div_ceil(parts.max(1)).max(1);
    slots.chunks_mut(per).enumerate().map(move |(k, run)| (k * per, run))
}

/// What one thread made of a run of a resolution's packages (see [`lock_packages`]).
#[derive(Default)]
struct LockRun {
    damaged: Vec<DamagedLine>,
    /// Positions of packages to pin on the command's thread.
    elsewhere: Vec<usize>,
    /// What stopped the run (a pin that no longer holds), reported unless a damaged line
    /// makes the resolution start again.
    failed: Option<anyhow::Error>,
}

impl LockRun {
    fn absorb(&mut self, other: LockRun) {
        self.damaged.extend(other.damaged);
        self.elsewhere.extend(other.elsewhere);
        if let Some(e) = other.failed {
            self.fail(e);
        }
    }

    /// Keeps the first failure.
    fn fail(&mut self, e: anyhow::Error) {
        self.failed.get_or_insert(e);
    }
}

/// Resolves the project and writes ebpkg.lock when it changes; under --locked a
/// change is an error and nothing is written.
pub fn lock_project(ctx: &Ctx, project: &Project, regs: &Registries<'_>, update: UpdatePolicy) -> Result<Locked> {
    resolve_project(ctx, project, regs, update)?.save(ctx, project)
}

/// Resolves the project, preferring what ebpkg.lock pins, without writing it.
///
/// A damaged ebpkg.lock (one that does not parse, or lists a dependency it does
/// not hold) is repaired: what is still usable of it is kept as preferences and the
/// rest resolved again, as cargo does; only --locked refuses it. Offline, a lock
/// that already satisfies the manifest is used as it is, with no registry asked.
/// Under --locked a change is an error.
pub fn resolve_project(ctx: &Ctx, project: &Project, regs: &Registries<'_>, update: UpdatePolicy) -> Result<Resolved> {
    let path = project.lock_path();
    let (old, damaged) = match project.read_lock()? {
        LockState::Missing => (None, false),
        LockState::Valid(lock) => (Some(lock), false),
        LockState::Damaged { problems, .. } if ctx.locked => {
            return Err(fail(
                Failure::LockDrift,
                format!(
                    "{} is damaged:\n{problems}\nhelp: --locked needs a valid ebpkg.lock; run `ebpkg lock` to repair it, \
                     then commit it",
                    path.display()
                ),
            ));
        }
        LockState::Damaged { salvaged, problems } => {
            ctx.ui.warn(format!(
                "{} is damaged, so the dependencies are resolved again, keeping the versions it still pins:\n{problems}",
                path.display()
            ));
            (Some(salvaged), true)
        }
    };
    if ctx.locked && update != UpdatePolicy::Nothing {
        return Err(fail(Failure::LockDrift, "--locked forbids updating ebpkg.lock; drop --locked to update"));
    }
    if let Some(lock) = old.as_ref().filter(|_| ctx.offline && !damaged && update == UpdatePolicy::Nothing)
        && satisfies(&project.manifest, lock, regs)?
    {
        return Ok(Resolved { lock: lock.clone(), old, stale: false });
    }
    ctx.ui.status("Resolving", format!("dependencies of {}", project.manifest.package.name));
    let lock = resolve(ctx, Root::of_manifest(&project.manifest, regs), old.as_ref(), update, regs)?;
    let changed = damaged || old.as_ref().is_none_or(|o| o.to_toml_string() != lock.to_toml_string());
    if !changed {
        return Ok(Resolved { lock, old, stale: false });
    }
    if ctx.locked {
        let what = match &old {
            None => format!("{} does not exist", project.lock_path().display()),
            Some(o) => format!("{} is out of date:\n{}", project.lock_path().display(), diff(o, &lock)),
        };
        return Err(fail(
            Failure::LockDrift,
            format!("{what}\nhelp: --locked needs it unchanged; run `ebpkg lock` and commit ebpkg.lock"),
        ));
    }
    Ok(Resolved { lock, old: if damaged { None } else { old }, stale: true })
}

/// `+ name version (source)` and `- …` lines between two lockfiles.
pub fn diff(old: &Lockfile, new: &Lockfile) -> String {
    let key = |p: &LockedPackage| format!("{} {} ({})", p.name, p.version, p.source);
    let a: BTreeSet<String> = old.packages().iter().map(key).collect();
    let b: BTreeSet<String> = new.packages().iter().map(key).collect();
    let mut out = String::new();
    for r in a.difference(&b) {
        out.push_str(&format!("- {r}\n"));
    }
    for r in b.difference(&a) {
        out.push_str(&format!("+ {r}\n"));
    }
    if out.is_empty() {
        out.push_str("  (the same versions with other dependencies or checksums)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::chunks_at;

    #[test]
    fn slots_are_split_into_runs_that_know_where_they_start() {
        for n in [0, 1, 2, 1023, 1024, 1025, 8572] {
            for parts in [0, 1, 2, 3, 16] {
                let mut slots: Vec<usize> = (0..n).collect();
                let runs: Vec<(usize, Vec<usize>)> =
                    chunks_at(&mut slots, parts).map(|(at, run)| (at, run.to_vec())).collect();
                assert!(runs.len() <= parts.max(1) && runs.is_empty() == (n == 0), "{n} in {parts}: {}", runs.len());
                // Each run starts where its slots are, and the runs cover every slot once, in order.
                assert!(runs.iter().all(|(at, run)| run.first() == Some(at)), "{n} in {parts}");
                assert!(runs.iter().flat_map(|(_, run)| run.iter().copied()).eq(0..n), "{n} in {parts}");
                // About the same length: none longer than the first, none less than half of it.
                let len = runs.first().map_or(0, |(_, run)| run.len());
                assert!(runs.iter().all(|(_, r)| r.len() <= len && 2 * r.len() + 1 >= len), "{n} in {parts}");
            }
        }
    }
}
