//! The files a manifest names: they must be in every archive of the package.

use ebpkg_spec::Manifest;
use ebpkg_spec::types::{RelPath, Sha256Digest};

/// A file named by the manifest, with the item that names it (for error messages).
#[derive(Debug, Clone)]
pub(crate) struct Reference {
    /// Says which manifest entry names the file, e.g. "program `hike_drop` (source)".
    pub item: String,
    pub path: RelPath,
    /// For a prebuilt object: its expected digest, and whether the item also has C
    /// source (in which case a mismatching object is ignored rather than an error).
    pub prebuilt: Option<(Sha256Digest, bool)>,
}

pub(crate) fn referenced_files(manifest: &Manifest) -> Vec<Reference> {
    let mut refs = Vec::new();
    if let Some(readme) = &manifest.package.readme {
        refs.push(Reference { item: "package.readme".to_owned(), path: readme.clone(), prebuilt: None });
    }
    let compiled = manifest
        .programs
        .iter()
        .map(|p| ("program", p.name.as_str(), &p.source, &p.prebuilt))
        .chain(manifest.loaders.iter().map(|l| ("loader", l.name.as_str(), &l.source, &l.prebuilt)));
    for (kind, name, source, prebuilt) in compiled {
        if let Some(source) = source {
            refs.push(Reference { item: format!("{kind} `{name}` (source)"), path: source.clone(), prebuilt: None });
        }
        if let Some(prebuilt) = prebuilt {
            refs.push(Reference {
                item: format!("{kind} `{name}` (prebuilt.object)"),
                path: prebuilt.object.clone(),
                prebuilt: Some((prebuilt.sha256, source.is_some())),
            });
        }
    }
    for chain in &manifest.chains {
        refs.push(Reference {
            item: format!("chain `{}` (source)", chain.name.as_str()),
            path: chain.source.clone(),
            prebuilt: None,
        });
    }
    refs
}
