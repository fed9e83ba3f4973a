//! `ebpkg token`: the logged-in user's API tokens on the default registry server
//! (as crates.io's token page): list them, create one (its secret returned this
//! once), revoke one by its id or its name. Managing tokens needs an unrestricted
//! token, so that a leaked narrow one cannot widen itself.

use anyhow::Result;
use ebpkg_sources::{NewToken, RegistryUrl, TokenCreated, TokenInfo};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::owner::origin;

/// The registry's live tokens of the user, and which registry that is.
pub struct Tokens {
    pub tokens: Vec<TokenInfo>,
    pub registry: RegistryUrl,
}

/// A token created, with its secret (shown once).
pub struct Created {
    pub created: TokenCreated,
    pub registry: RegistryUrl,
}

/// A token revoked: refused from then on.
pub struct Revoked {
    pub token: TokenInfo,
    pub registry: RegistryUrl,
}

/// The user's live tokens (neither revoked nor expired), never their secrets.
pub fn list(ctx: &Ctx) -> Result<Tokens> {
    let registry = origin(ctx)?;
    Ok(Tokens { tokens: registry.tokens()?, registry: registry.url().clone() })
}

/// Creates a token; the registry checks the name, the globs and the expiry.
pub fn create(ctx: &Ctx, new: &NewToken) -> Result<Created> {
    let registry = origin(ctx)?;
    Ok(Created { created: registry.create_token(new)?, registry: registry.url().clone() })
}

/// Revokes the live token with this id, else the one with this name (a name
/// several tokens share is refused: say which by its id).
pub fn revoke(ctx: &Ctx, which: &str) -> Result<Revoked> {
    let registry = origin(ctx)?;
    let url = registry.url().clone();
    let tokens = registry.tokens()?;
    let token = pick(&tokens, which, &url)?.clone();
    registry.revoke_token(token.id)?;
    Ok(Revoked { token, registry: url })
}

/// The token `which` names: an id first, then a name.
fn pick<'a>(tokens: &'a [TokenInfo], which: &str, registry: &RegistryUrl) -> Result<&'a TokenInfo> {
    if let Ok(id) = which.parse::<i64>()
        && let Some(token) = tokens.iter().find(|t| t.id == id)
    {
        return Ok(token);
    }
    let named: Vec<&TokenInfo> = tokens.iter().filter(|t| t.name == which).collect();
    match named.as_slice() {
        [token] => Ok(token),
        [] => Err(fail(
            Failure::Input,
            format!(
                "you have no live token with the id or name `{which}` on {registry}; `ebpkg token list` shows them"
            ),
        )),
        several => Err(fail(
            Failure::Usage,
            format!(
                "{} of your tokens on {registry} are named `{which}` (ids {}); revoke one by its id",
                several.len(),
                several.iter().map(|t| t.id.to_string()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}
