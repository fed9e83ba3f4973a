//! Verifying objects for their statistics, without registering anything.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use hike_bytecode::Hook;
use hike_runtime::{RuntimeError, objects};

#[test]
fn verify_reports_statistics_and_leaves_nothing_behind() {
    let t = TestRoot::new("verify");
    let before = std::fs::read_dir(t.path.join("vm")).unwrap().count();
    let programs = vec!["test_verdict".to_owned(), "test_args4".to_owned()];
    let stats = t.rt.verify_object("vmtest.bpf.c", objects::vmtest(Hook::Xdp), &programs).unwrap();
    assert_eq!(stats.len(), 2);
    for s in &stats {
        assert!(s.insns > 100, "{s:?}");
        assert!(s.insns_processed >= u64::from(s.insns) / 2, "{s:?}");
        assert!(s.total_states > 0 && !s.stack_depth.is_empty(), "{s:?}");
    }
    assert!(t.rt.status().unwrap().programs.is_empty(), "nothing registered");
    assert_eq!(std::fs::read_dir(t.path.join("vm")).unwrap().count(), before, "nothing pinned");
    assert!(!t.path.join("progs").exists() || std::fs::read_dir(t.path.join("progs")).unwrap().count() == 0);

    let err = t.rt.verify_object("bad.bpf.c", objects::bad(), &["test_unchecked_read".to_owned()]).unwrap_err();
    assert!(matches!(err, RuntimeError::Verifier(_)), "{err}");
}
