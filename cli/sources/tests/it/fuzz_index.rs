//! Whatever is in an index file, reading the registry returns entries or an error; it
//! never panics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;

use common::name;
use ebpkg_sources::{ErrorKind, FileRegistry, Registry};
use proptest::prelude::*;

const LINE: &str = r#"{"v":1,"name":"net","vers":"1.0.0","deps":[],"cksum":"3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a","yanked":false,"programs":[{"name":"monitor","hook":"xdp","args":[{"name":"event","type":"u64"}],"returns":"u64","ends_packet":"never"}],"loaders":[],"chains":[],"description":"Counters","keywords":["xdp"]}"#;

fn registry_with_index(bytes: &[u8]) -> (tempfile::TempDir, FileRegistry) {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("config.json"), "{\"ebpkg-registry\":1}").unwrap();
    fs::create_dir_all(tmp.path().join("index/3/n")).unwrap();
    fs::write(tmp.path().join("index/3/n/net"), bytes).unwrap();
    let reg = FileRegistry::at(tmp.path()).unwrap();
    (tmp, reg)
}

fn read_everything(reg: &FileRegistry) {
    match reg.index(&name("net")) {
        Ok(entries) => assert!(entries.is_some()),
        Err(e) => assert!(matches!(e.kind(), ErrorKind::CorruptIndex { .. }), "{e}"),
    }
    assert_eq!(reg.names().unwrap(), [name("net")]);
    reg.search("net", 10).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let (_tmp, reg) = registry_with_index(&bytes);
        read_everything(&reg);
    }

    #[test]
    fn mangled_lines(cut in 0..LINE.len(), byte in any::<u8>(), at in 0..LINE.len(), copies in 1..4usize) {
        let mut bytes = LINE.as_bytes().to_vec();
        bytes[at] = byte;
        bytes.truncate(cut.max(at + 1));
        let mut file = Vec::new();
        for _ in 0..copies {
            file.extend_from_slice(&bytes);
            file.push(b'\n');
        }
        let (_tmp, reg) = registry_with_index(&file);
        read_everything(&reg);
    }
}

#[test]
fn the_unmangled_line_is_an_entry() {
    let (_tmp, reg) = registry_with_index(format!("{LINE}\n\n").as_bytes());
    let entries = reg.index(&name("net")).unwrap().unwrap();
    assert_eq!(entries[0].to_line(), LINE);
}
