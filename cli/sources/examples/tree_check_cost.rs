//! What checking a cached source tree against its archive costs, per package:
//! `Cache::unpack` on a hit (which compares the tree with the archive) against a
//! fresh unpack of the same archive, for every first-party package.
//!
//! `cargo run --release -p ebpkg-sources --example tree_check_cost`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use ebpkg_sources::Cache;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../packages");
    let tmp = tempfile::tempdir().unwrap();
    let mut packages = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("ebpkg.toml").is_file() {
            let packed = ebpkg_archive::pack(&dir).unwrap();
            let archive =
                ebpkg_archive::VerifiedArchive::check(packed.bytes.clone(), &packed.sha256, &Default::default())
                    .unwrap();
            packages.push((packed, archive));
        }
    }
    const ROUNDS: u32 = 50;
    let (mut hit, mut fresh) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let cache = Cache::new(tmp.path().join(format!("cache{round}")));
        for (p, archive) in &packages {
            let (name, version) = (&p.manifest.package.name, &p.manifest.package.version);
            let t = Instant::now();
            cache.unpack(name, version, archive).unwrap();
            fresh.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            cache.unpack(name, version, archive).unwrap();
            hit.push(t.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 1e3
    };
    let files: usize = packages.iter().map(|(p, _)| p.files.len()).sum();
    let bytes: u64 = packages.iter().map(|(p, _)| p.files.iter().map(|f| f.size).sum::<u64>()).sum();
    println!("{} packages, {files} files, {bytes} bytes; {ROUNDS} rounds", packages.len());
    println!("median per package: checked hit {:.3} ms, fresh unpack {:.3} ms", median(&mut hit), median(&mut fresh));
}
