//! Which files of a package directory go into its archive.
//!
//! Everything under the directory, except version-control data, build outputs, editor
//! backups and the lockfile; plus every file the manifest names, even one that a rule
//! would leave out (a prebuilt `build/prog.o`, say). Symbolic links and special files
//! are refused rather than skipped: silently leaving out a file the author meant to
//! ship would only show up as a broken build on someone else's machine.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::PackError;
use crate::limits::PackLimits;
use crate::paths::component_problem;
use crate::references::Reference;

/// A file to pack.
#[derive(Debug, Clone)]
pub(crate) struct SourceFile {
    pub abs: PathBuf,
    pub executable: bool,
}

/// Directory names left out at the package root: build outputs and tool state.
const EXCLUDED_AT_ROOT: &[&str] = &["target", "build", ".ebpkg", "ebpkg.lock"];

/// Whether the entry `name` (at package path `rel`) is left out of the archive.
fn excluded(rel: &str, name: &str) -> bool {
    let at_root = !rel.contains('/');
    name == ".git"
        || (at_root && EXCLUDED_AT_ROOT.contains(&name))
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".o")
}

/// The files to pack, keyed by package path (`src/a.c`); the map's order is the
/// archive's order (bytewise by path).
pub(crate) fn select(
    root: &Path,
    refs: &[Reference],
    limits: &PackLimits,
) -> Result<BTreeMap<String, SourceFile>, PackError> {
    let mut files = BTreeMap::new();
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel_dir)) = pending.pop() {
        let io = |cause| PackError::Io { path: dir.clone(), cause };
        for entry in fs::read_dir(&dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let abs = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                return Err(PackError::NonUtf8Name { path: abs });
            };
            let rel = if rel_dir.is_empty() { name.clone() } else { format!("{rel_dir}/{name}") };
            if excluded(&rel, &name) {
                continue;
            }
            if let Some(problem) = component_problem(&name) {
                return Err(PackError::BadName { path: abs, problem });
            }
            let meta = fs::symlink_metadata(&abs).map_err(|cause| PackError::Io { path: abs.clone(), cause })?;
            let kind = meta.file_type();
            if kind.is_dir() {
                pending.push((abs, rel));
            } else if kind.is_file() {
                let executable = meta.permissions().mode() & 0o111 != 0;
                files.insert(rel, SourceFile { abs, executable });
                if files.len() as u64 > limits.max_files {
                    return Err(PackError::TooManyFiles { limit: limits.max_files });
                }
            } else {
                return Err(refuse_special(abs, kind));
            }
        }
    }
    for reference in refs {
        let rel = reference.path.as_str();
        if !files.contains_key(rel) {
            let file = referenced_file(root, reference)?;
            files.insert(rel.to_owned(), file);
        }
    }
    if files.len() as u64 > limits.max_files {
        return Err(PackError::TooManyFiles { limit: limits.max_files });
    }
    Ok(files)
}

/// A file the manifest names but the walk left out: found without following links.
fn referenced_file(root: &Path, reference: &Reference) -> Result<SourceFile, PackError> {
    let missing =
        || PackError::MissingReferenced { item: reference.item.clone(), path: reference.path.as_str().to_owned() };
    let mut abs = root.to_path_buf();
    let parts: Vec<&str> = reference.path.as_str().split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        abs.push(part);
        let meta = match fs::symlink_metadata(&abs) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
            Err(cause) => return Err(PackError::Io { path: abs, cause }),
        };
        let kind = meta.file_type();
        let last = i + 1 == parts.len();
        if kind.is_symlink() {
            return Err(PackError::Symlink { path: abs });
        } else if last && kind.is_file() {
            let executable = meta.permissions().mode() & 0o111 != 0;
            return Ok(SourceFile { abs, executable });
        } else if last || !kind.is_dir() {
            return Err(missing());
        }
    }
    Err(missing())
}

fn refuse_special(path: PathBuf, kind: fs::FileType) -> PackError {
    if kind.is_symlink() {
        return PackError::Symlink { path };
    }
    PackError::NotRegular { path, kind: ebpkg_fs::kind_name(kind) }
}

#[cfg(test)]
mod tests {
    use super::excluded;

    #[test]
    fn exclusion_rules() {
        assert!(excluded(".git", ".git"));
        assert!(excluded("vendor/lib/.git", ".git"));
        assert!(excluded("target", "target"));
        assert!(!excluded("src/target", "target"));
        assert!(excluded("build", "build"));
        assert!(!excluded("src/build", "build"));
        assert!(excluded("ebpkg.lock", "ebpkg.lock"));
        assert!(excluded("src/a.c~", "a.c~"));
        assert!(excluded("src/.a.c.swp", ".a.c.swp"));
        assert!(excluded("src/a.o", "a.o"));
        assert!(!excluded("src/a.c", "a.c"));
        assert!(!excluded("ebpkg.toml", "ebpkg.toml"));
    }
}
