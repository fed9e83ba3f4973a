//! Several writers at once, in threads and in separate processes, and readers while a
//! writer runs: every publish lands exactly once and no reader sees a torn file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use common::{name, pack, version};
use ebpkg_sources::{FileRegistry, Registry};
use ebpkg_spec::index::parse_index_file;

const VERSIONS_EACH: usize = 4;

/// Publishes, as writer `id`, `VERSIONS_EACH` versions of the shared package `net`
/// and one version of the writer's own package.
fn publish_share(reg: &FileRegistry, scratch: &Path, id: usize) {
    for i in 0..VERSIONS_EACH {
        let packed = pack(scratch, "net", &format!("{id}.{i}.0"));
        reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    }
    let own = pack(scratch, &format!("pkg{id}"), "1.0.0");
    reg.publish(&own.archive(), &own.manifest, None).unwrap();
}

/// Every index file parses, and every archive an index line names is there, intact.
fn assert_consistent(reg: &FileRegistry) {
    let mut dirs = vec![reg.root().join("index")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
                continue;
            }
            let file_name = entry.file_name().into_string().unwrap();
            assert!(!file_name.starts_with(".tmp-"), "stray temporary file {}", entry.path().display());
            let text = fs::read_to_string(entry.path()).unwrap();
            for e in parse_index_file(&file_name, text.as_bytes()).strict().unwrap() {
                assert_eq!(ebpkg_archive::sha256_file(&reg.archive_path(&e.cksum), u64::MAX).unwrap(), e.cksum);
            }
        }
    }
}

fn assert_all_published(reg: &FileRegistry, writers: usize) {
    let net = reg.index(&name("net")).unwrap().unwrap();
    let got: BTreeSet<String> = net.iter().map(|e| e.vers.to_string()).collect();
    let want: BTreeSet<String> =
        (0..writers).flat_map(|id| (0..VERSIONS_EACH).map(move |i| format!("{id}.{i}.0"))).collect();
    assert_eq!(net.len(), want.len(), "every version exactly once");
    assert_eq!(got, want);
    let mut names: Vec<String> = (0..writers).map(|id| format!("pkg{id}")).collect();
    names.push("net".into());
    names.sort();
    assert_eq!(reg.names().unwrap().iter().map(|n| n.to_string()).collect::<Vec<_>>(), names);
    assert_consistent(reg);
}

#[test]
fn concurrent_publishing_threads() {
    const WRITERS: usize = 8;
    let tmp = tempfile::tempdir().unwrap();
    // The registry does not exist yet: the first writers also race to create it.
    let reg = Arc::new(FileRegistry::at(&tmp.path().join("registry")).unwrap());
    let start = Arc::new(Barrier::new(WRITERS));
    let threads: Vec<_> = (0..WRITERS)
        .map(|id| {
            let (reg, start) = (Arc::clone(&reg), Arc::clone(&start));
            let scratch = tmp.path().join(format!("scratch{id}"));
            std::thread::spawn(move || {
                start.wait();
                publish_share(&reg, &scratch, id);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_all_published(&reg, WRITERS);
}

const CHILD_ENV: &str = "EBPKG_SOURCES_TEST_PUBLISHER";

/// The body of the publisher processes `concurrent_publishing_processes` spawns; on
/// its own (without the variable) it does nothing.
#[test]
#[ignore = "run by concurrent_publishing_processes, in processes of their own"]
fn publisher_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let (registry, id) = spec.rsplit_once('|').unwrap();
    let reg = FileRegistry::at(Path::new(registry)).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    publish_share(&reg, scratch.path(), id.parse().unwrap());
}

#[test]
fn concurrent_publishing_processes() {
    const WRITERS: usize = 4;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("registry");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WRITERS)
        .map(|id| {
            Command::new(&exe)
                .args(["--exact", "concurrency::publisher_process", "--ignored", "--test-threads=1"])
                .env(CHILD_ENV, format!("{}|{id}", root.display()))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert!(out.status.success(), "a publisher process failed:\n{}{}", show(&out.stdout), show(&out.stderr));
    }
    assert_all_published(&FileRegistry::at(&root).unwrap(), WRITERS);
}

#[test]
fn readers_never_see_a_torn_index_file() {
    const PUBLISHES: usize = 30;
    let tmp = tempfile::tempdir().unwrap();
    let reg = Arc::new(FileRegistry::at(&tmp.path().join("registry")).unwrap());
    let first = pack(tmp.path(), "net", "0.0.0");
    reg.publish(&first.archive(), &first.manifest, None).unwrap();
    let index_file = reg.root().join("index/3/n/net");

    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (reg, done, reads, index_file) =
                (Arc::clone(&reg), Arc::clone(&done), Arc::clone(&reads), index_file.clone());
            std::thread::spawn(move || {
                let mut seen = 0;
                // At least one read after the writer finished, whatever the scheduling.
                loop {
                    let finished = done.load(Ordering::SeqCst);
                    let entries = reg.index(&name("net")).unwrap().unwrap();
                    assert!(entries.len() >= seen, "versions never disappear");
                    seen = entries.len();
                    for e in &entries {
                        // The archive is in place before the line naming it.
                        assert!(reg.archive_path(&e.cksum).is_file());
                    }
                    let raw = fs::read_to_string(&index_file).unwrap();
                    assert!(raw.ends_with('\n'), "a whole file, never a partial one");
                    parse_index_file("net", raw.as_bytes()).strict().unwrap();
                    reads.fetch_add(1, Ordering::Relaxed);
                    if finished {
                        return seen;
                    }
                }
            })
        })
        .collect();

    let scratch = tmp.path().join("scratch");
    for i in 1..=PUBLISHES {
        let packed = pack(&scratch, "net", &format!("0.{i}.0"));
        reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
        if i % 3 == 0 {
            // Rewrites of existing lines must be just as atomic.
            reg.set_yanked(&name("net"), &version("0.0.0"), i % 2 == 0).unwrap();
        }
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        assert_eq!(r.join().unwrap(), PUBLISHES + 1);
    }
    assert!(reads.load(Ordering::Relaxed) >= 3);
    assert_consistent(&reg);
}
