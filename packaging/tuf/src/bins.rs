//! Hashed bins: which delegated role signs a target.

use sha2::{Digest, Sha256};

/// The bin of `target`: `bins-` and the first hex digit of the SHA-256 of its
/// name (TUF's `path_hash_prefixes`).
pub fn bin_of(target: &str) -> String {
    let digest = Sha256::digest(target.as_bytes());
    format!("bins-{:x}", digest[0] >> 4)
}

/// Every bin's name and its hash prefix.
pub fn all() -> impl Iterator<Item = (String, String)> {
    (0..crate::BINS).map(|i| (format!("bins-{i:x}"), format!("{i:x}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_target_has_one_bin_and_bins_cover_all_prefixes() {
        let names: Vec<String> = super::all().map(|(n, _)| n).collect();
        assert_eq!(names.len(), crate::BINS);
        for target in ["index/3/n/net", "index/me/te/meter", "config.json"] {
            assert!(names.contains(&super::bin_of(target)), "{target}");
        }
    }
}
