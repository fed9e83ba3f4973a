//! `ebpkg owner`: who may publish a package on the default registry (its
//! owners, and the CI pipelines trusted to publish it), and the publisher keys
//! the user registered there.

use anyhow::Result;
use ebpkg_sources::{NewTrustedPublisher, Owner, PublisherKey, Registry, RegistryId, TrustedPublisher};
use ebpkg_spec::PackageName;
use ebpkg_spec::types::KeyId;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::keys::Passphrase;

/// A publisher key as the registry has it after a change.
pub struct KeyChange {
    pub key: PublisherKey,
    pub registry: RegistryId,
}

/// The default registry itself (never a mirror: accounts live at the origin).
pub(crate) fn origin(ctx: &Ctx) -> Result<Box<dyn Registry>> {
    let regs = ctx.registries()?;
    regs.open_origin(&regs.default, None)
}

/// The package's owners.
pub fn list(ctx: &Ctx, package: &PackageName) -> Result<Vec<Owner>> {
    Ok(origin(ctx)?.owners(package)?)
}

/// Adds owners to the package; the registry's answer.
pub fn add(ctx: &Ctx, package: &PackageName, users: &[String]) -> Result<String> {
    Ok(origin(ctx)?.add_owners(package, users)?)
}

/// Removes owners from the package (never the last one); the registry's answer.
pub fn remove(ctx: &Ctx, package: &PackageName, users: &[String]) -> Result<String> {
    Ok(origin(ctx)?.remove_owners(package, users)?)
}

/// Registers the public half of a private key (a key name or a key file): its
/// private half signs a proof that the user holds it, and never leaves this
/// machine.
pub fn add_key(ctx: &Ctx, key: &str, passphrase: Passphrase<'_>) -> Result<KeyChange> {
    let registry = origin(ctx)?;
    if key.ends_with(".pub") {
        return Err(fail(
            Failure::Usage,
            format!(
                "`{key}` is a public key; registering one needs its private key, to prove you hold it: \
                 pass the `.key` file or the key's name (nothing but the public key is sent)"
            ),
        ));
    }
    let signing = crate::ops::keys::signing_key(ctx, Some(key), passphrase)?
        .ok_or_else(|| fail(Failure::Usage, format!("no key `{key}`")))?;
    Ok(KeyChange { key: registry.add_key(&signing)?, registry: registry.url().clone() })
}

/// Revokes one of the user's keys: publishes signed by it are refused.
pub fn revoke_key(ctx: &Ctx, id: &KeyId) -> Result<KeyChange> {
    let registry = origin(ctx)?;
    Ok(KeyChange { key: registry.revoke_key(id)?, registry: registry.url().clone() })
}

/// The user's keys, revoked ones included.
pub fn keys(ctx: &Ctx) -> Result<Vec<PublisherKey>> {
    Ok(origin(ctx)?.my_keys()?)
}

/// Lets a CI pipeline publish the package; the package's trusted publishers after it.
pub fn add_trusted_publisher(
    ctx: &Ctx,
    package: &PackageName,
    new: &NewTrustedPublisher,
) -> Result<Vec<TrustedPublisher>> {
    Ok(origin(ctx)?.add_trusted_publisher(package, new)?)
}

/// The package's trusted publishers.
pub fn trusted_publishers(ctx: &Ctx, package: &PackageName) -> Result<Vec<TrustedPublisher>> {
    Ok(origin(ctx)?.trusted_publishers(package)?)
}

/// Stops a trusted publisher (by its id) from publishing the package; the
/// registry's answer.
pub fn remove_trusted_publisher(ctx: &Ctx, package: &PackageName, id: i64) -> Result<String> {
    Ok(origin(ctx)?.remove_trusted_publisher(package, id)?)
}
