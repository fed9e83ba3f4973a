//! `ebpkg token`: the logged-in user's API tokens on the default registry server
//! (as crates.io's token page): list them, create one (its secret returned this
//! once), revoke one by its id or its name. Managing tokens needs an unrestricted
//! token, so that a leaked narrow one cannot widen itself.

use anyhow::Result;
use ebpkg_sources::{NewToken, RegistryId, TokenCreated, TokenInfo};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::owner::origin;

/// The registry's live tokens of the user, and which registry that is.
pub struct Tokens {
    pub tokens: Vec<TokenInfo>,
    pub registry: RegistryId,
}

/// A token created, with its secret (shown once).
pub struct Created {
    pub created: TokenCreated,
    pub registry: RegistryId,
}

/// A token revoked: refused from then on.
pub struct Revoked {
    pub token: TokenInfo,
    pub registry: RegistryId,
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

/// The token `which` names, by its id or by its name. A number that is one
/// token's id and another's name is refused: which one was meant is not known.
fn pick<'a>(tokens: &'a [TokenInfo], which: &str, registry: &RegistryId) -> Result<&'a TokenInfo> {
    let id = which.parse::<i64>().ok();
    let matching: Vec<&TokenInfo> = tokens.iter().filter(|t| Some(t.id) == id || t.name == which).collect();
    match matching.as_slice() {
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
                "`{which}` names {} of your tokens on {registry} ({}); revoke one by an id no other token is named",
                several.len(),
                several.iter().map(|t| format!("id {} named `{}`", t.id, t.name)).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(id: i64, name: &str) -> TokenInfo {
        TokenInfo {
            id,
            name: name.to_owned(),
            scopes: Vec::new(),
            packages: Vec::new(),
            created_at: "2026-12-07T00:00:00Z".to_owned(),
            expires_at: None,
            last_used_at: None,
        }
    }

    #[test]
    fn a_token_is_picked_by_an_id_or_a_name_only_when_that_names_one() {
        let url = RegistryId::parse("http://127.0.0.1:1/").unwrap();
        let tokens = [token(3, "ci"), token(7, "laptop"), token(12, "3"), token(13, "twin"), token(14, "twin")];
        assert_eq!(pick(&tokens, "7", &url).unwrap().id, 7);
        assert_eq!(pick(&tokens, "laptop", &url).unwrap().id, 7);
        // `3` is token 3's id and token 12's name.
        let both = pick(&tokens, "3", &url).unwrap_err().to_string();
        assert!(both.contains("id 3 named `ci`") && both.contains("id 12 named `3`"), "{both}");
        let twins = pick(&tokens, "twin", &url).unwrap_err().to_string();
        assert!(twins.contains("id 13") && twins.contains("id 14"), "{twins}");
        assert!(pick(&tokens, "99", &url).unwrap_err().to_string().contains("no live token"));
        assert_eq!(pick(&tokens, "13", &url).unwrap().id, 13);
    }
}
