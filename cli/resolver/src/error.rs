//! Why a resolution failed.

use std::fmt;

use ebpkg_spec::PackageName;

use crate::model::{QualifiedName, SourceError};

/// A failed resolution.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// No choice of versions satisfies every requirement; the explanation says why, step by step.
    #[error("{0}")]
    NoSolution(Explanation),

    /// The version source failed while reading `pkg`.
    #[error("could not read the versions of {pkg}: {cause}")]
    Source {
        /// The package being read.
        pkg: QualifiedName,
        /// The source's error.
        cause: SourceError,
    },

    /// The root depends on a package that has no published version at all.
    #[error("{}", unknown_package_message(.required_by, .pkg, .suggestions))]
    UnknownPackage {
        /// The missing package.
        pkg: QualifiedName,
        /// The project that depends on it.
        required_by: PackageName,
        /// Existing names close to the missing one, closest first (empty when the source cannot list
        /// names, see [`crate::VersionSource::known_names`]).
        suggestions: Vec<PackageName>,
    },
}

fn unknown_package_message(required_by: &PackageName, pkg: &QualifiedName, suggestions: &[PackageName]) -> String {
    let registry = match &pkg.registry {
        None => "the default registry".to_owned(),
        Some(url) => format!("registry {url}"),
    };
    let mut msg = format!("{required_by} depends on `{}`, which is not in {registry}", pkg.name);
    // The registry lists the very name (its search), yet has no index file for it.
    if suggestions.iter().any(|n| n.normalized() == pkg.name.normalized()) {
        msg.push_str(&format!("; {}", listed_without_index(&pkg.name)));
        return msg;
    }
    if !suggestions.is_empty() {
        let names: Vec<String> = suggestions.iter().map(|n| format!("`{n}`")).collect();
        msg.push_str(&format!("; did you mean {}?", crate::suggest::or_list(&names)));
    }
    msg
}

/// What to say of a package a registry lists (its search finds it) but has no index
/// file for: the registry's own inconsistency, for its operator to fix.
pub fn listed_without_index(name: &PackageName) -> String {
    format!(
        "the registry lists `{name}` but serves no index file for it: its index and its listing disagree (a \
         redirect or a proxy in the way?); tell the registry's operator"
    )
}

/// A derivation a person can follow, from requirements as written and real version numbers to the
/// conclusion that they cannot all hold, followed by fixes to try.
///
/// `Display` writes the heading, the numbered steps and the `help:` lines:
///
/// ```text
/// cannot find versions for the dependencies of app:
///   1. Because app depends on ddos ^1.4 and ddos 1.4.0 depends on meter ^1, app requires meter ^1.
///   2. And because app depends on meter ^2, app's requirements cannot all be met.
/// help: relax app's requirement on meter (^2) to one that ddos 1.4.0 also accepts (^1), or use a version
/// of ddos that works with meter ^2 (none is published)
/// ```
///
/// (The `help:` line is one line; it is wrapped here.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The project being resolved.
    pub root: String,
    /// The derivation, one sentence per step; step `k` (1-based) may refer back to earlier steps as
    /// "(step j)".
    pub steps: Vec<String>,
    /// Fixes to try, each one sentence.
    pub help: Vec<String>,
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot find versions for the dependencies of {}:", self.root)?;
        let width = self.steps.len().to_string().len();
        for (i, step) in self.steps.iter().enumerate() {
            write!(f, "\n  {:>width$}. {step}", i + 1)?;
        }
        for h in &self.help {
            write!(f, "\nhelp: {h}")?;
        }
        Ok(())
    }
}
