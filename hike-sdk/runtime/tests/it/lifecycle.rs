//! The lifecycle of what the runtime manages: roots, program ids, chains, loaders,
//! attachments, and what is left behind (nothing).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use hike_bytecode::limits::ABI_VERSION;
use hike_bytecode::{Hook, asm::assemble};
use hike_runtime::objects::HostileBuild;
use hike_runtime::{
    AttachMode, ChainId, ChainSpec, InitOptions, MapEntry, ProgId, ProgramObject, Runtime, RuntimeError, objects,
};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

fn chain(t: &TestRoot, text: &str) -> ChainId {
    let insns = assemble(text).unwrap();
    t.rt.install_chain(&ChainSpec { name: "c", owner: "lifecycle", hook: Hook::Xdp, insns: &insns, nargs: 0 }).unwrap()
}

/// Every pinned file under `dir`, relative.
fn pins(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(base: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(base, &p, out);
                } else {
                    out.push(p.strip_prefix(base).unwrap().display().to_string());
                }
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn init_is_idempotent_and_refuses_another_abi() {
    let t = TestRoot::new("init");
    let again = Runtime::init(&t.path, InitOptions { budget: 777 }).unwrap();
    assert_eq!(again.budget().unwrap(), 777, "init again only updates the budget");
    // A root written by another ABI version is refused, with what to do.
    let config = MapHandle::from_pinned_path(t.path.join("vm/hike_config")).unwrap();
    let mut v = config.lookup(&0u32.to_le_bytes(), MapFlags::ANY).unwrap().unwrap();
    v[4..8].copy_from_slice(&99u32.to_le_bytes());
    config.update(&0u32.to_le_bytes(), &v, MapFlags::ANY).unwrap();
    let err = Runtime::open(&t.path).err().unwrap();
    assert!(matches!(err, RuntimeError::IncompatibleRoot { found: 99, expected: ABI_VERSION, .. }), "{err}");
    assert!(err.to_string().contains(&format!("ABI version 99, but this runtime uses version {ABI_VERSION}")), "{err}");
    let err = Runtime::init(&t.path, InitOptions::default()).err().unwrap();
    assert!(matches!(err, RuntimeError::IncompatibleRoot { .. }));
    v[4..8].copy_from_slice(&ABI_VERSION.to_le_bytes());
    config.update(&0u32.to_le_bytes(), &v, MapFlags::ANY).unwrap();
}

#[test]
fn roots_outside_bpffs_are_refused() {
    require_kernel();
    let err = Runtime::init(std::path::Path::new("/tmp/not-bpffs-hike-root"), InitOptions::default()).err().unwrap();
    assert!(
        err.to_string().contains("is not on a bpffs mount; mount one with `mount -t bpf -o mode=0700 bpf /sys/fs/bpf`"),
        "{err}"
    );
    assert!(!std::path::Path::new("/tmp/not-bpffs-hike-root").exists());
    let err = Runtime::open(std::path::Path::new("/sys/fs/bpf/hike-never-created")).err().unwrap();
    assert!(matches!(err, RuntimeError::NotInitialized { .. }), "{err}");
}

#[test]
fn registering_again_reuses_ids_and_unregistering_removes_pins() {
    let t = TestRoot::new("reg");
    let first = t.register_vmtest(Hook::Xdp);
    let second = t.register_vmtest(Hook::Xdp);
    let ids =
        |r: &[hike_runtime::RegisteredProgram]| r.iter().map(|p| (p.name.clone(), p.id)).collect::<BTreeMap<_, _>>();
    assert_eq!(ids(&first), ids(&second));
    assert!(second.iter().all(|p| p.reused) && first.iter().all(|p| !p.reused));
    assert!(first.iter().all(|p| p.id.0 >= 1), "id 0 is the continuation");
    assert_eq!(first.iter().find(|p| p.name == "test_args4").unwrap().signature.nargs(), 4);
    assert!(t.path.join("progs/hike-test@0_0_0/test_nop").exists());

    for p in &first {
        t.rt.unregister_program(p.id).unwrap();
        assert!(!p.pin.exists());
    }
    assert!(!t.path.join("progs/hike-test@0_0_0").exists(), "the package directory goes with its last program");
    assert!(matches!(t.rt.unregister_program(first[0].id), Err(RuntimeError::NotFound(_))));
    assert!(matches!(t.rt.unregister_program(ProgId(0)), Err(RuntimeError::NotFound(_))), "the continuation cannot go");
}

#[test]
fn programs_in_use_cannot_be_unregistered() {
    let t = TestRoot::new("inuse");
    let progs = t.register_vmtest(Hook::Xdp);
    let nop = id_of(&progs, "test_nop");
    let c = chain(&t, &format!("call prog {nop}, 0\nexit"));
    let err = t.rt.unregister_program(ProgId(nop)).unwrap_err();
    assert!(err.to_string().contains("is still used by chain c (id 1)"), "{err}");
    t.rt.remove_chain(c).unwrap();
    t.rt.unregister_program(ProgId(nop)).unwrap();
}

#[test]
fn invalid_chains_are_refused_with_instruction_and_rule() {
    let t = TestRoot::new("invalid");
    let progs = t.register_vmtest(Hook::Xdp);
    let a1 = id_of(&progs, "test_args1");
    let insns = assemble(&format!("r1 = 1\ncall prog {a1}, 2\nexit")).unwrap();
    let err =
        t.rt.install_chain(&ChainSpec { name: "bad", owner: "t", hook: Hook::Xdp, insns: &insns, nargs: 0 })
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "chain `bad` is invalid: instruction 1: calls program {a1} (hike-test@0.0.0 test_args1) with 2 argument(s); its signature takes 1 [rule program-call]"
        )
    );
    // TC programs are not callable from XDP chains.
    let tc = t.register_vmtest_tc_as("tcpkg");
    let tc_nop = id_of(&tc, "test_nop");
    let insns = assemble(&format!("call prog {tc_nop}, 0\nexit")).unwrap();
    let err =
        t.rt.install_chain(&ChainSpec { name: "hook", owner: "t", hook: Hook::Xdp, insns: &insns, nargs: 0 })
            .unwrap_err();
    assert!(err.to_string().contains("which is not registered"), "{err}");
    assert!(t.rt.status().unwrap().chains.is_empty());
}

#[test]
fn verifier_rejections_name_the_source_line_and_pin_nothing() {
    let t = TestRoot::new("verifier");
    let before = pins(&t.path);
    let err =
        t.rt.register_object(&ProgramObject {
            package: "broken",
            version: "1.0.0",
            object_name: "bad.bpf.c",
            elf: objects::bad(),
            hook: Hook::Xdp,
        })
        .unwrap_err();
    let RuntimeError::Verifier(f) = &err else { panic!("expected a verifier failure, got {err}") };
    assert_eq!(f.program, "test_unchecked_read");
    assert!(f.reason.as_deref().unwrap_or_default().contains("outside of the packet"), "{f}");
    let src = f.source.as_ref().expect("the failing source line");
    assert!(src.file.ends_with("bad.bpf.c"), "{src:?}");
    assert_eq!(src.text, "return hike_result(data[40]); /* no bounds check: rejected */");
    assert!(f.log.contains("processed"), "the full log is kept");
    let text = err.to_string();
    assert!(
        text.starts_with("the kernel verifier rejected program `test_unchecked_read` of broken@1.0.0 (bad.bpf.c):"),
        "{text}"
    );
    assert!(text.contains("bad.bpf.c:10: return hike_result(data[40]);"), "{text}");
    assert_eq!(pins(&t.path), before, "a rejected object leaves no pins");
    assert!(t.rt.status().unwrap().programs.is_empty());
}

/// What the verifier says about `program` of `elf` loaded into `t`'s root.
fn refusal(t: &TestRoot, elf: &[u8], program: &str) -> String {
    match t.rt.verify_object("hostile.bpf.c", elf, &[program.to_owned()]) {
        Err(RuntimeError::Verifier(f)) => {
            assert_eq!(f.program, program);
            f.reason.clone().unwrap_or_default()
        }
        Err(e) => panic!("{program}: expected the verifier's refusal, got {e}"),
        Ok(_) => panic!("{program} was loaded"),
    }
}

#[test]
fn programs_that_write_the_vm_tables_are_refused_by_the_verifier() {
    let t = TestRoot::new("hostile");
    assert_eq!(hike_runtime::vm_access::writable_vm_tables(&t.path).unwrap(), Vec::<&str>::new());
    let progs = t.register_vmtest(Hook::Xdp);
    let verdict = id_of(&progs, "test_verdict");
    let c = chain(&t, &format!("r1 = 1\ncall prog {verdict}, 1\nexit"));
    let code = t.rt.status().unwrap().chains;
    // The object's own declaration of the VM's maps changes nothing: the kernel
    // enforces the flags of the instance's maps.
    for build in [HostileBuild::Sdk, HostileBuild::Undeclared] {
        let elf = objects::hostile(build);
        for program in ["hostile_store_chain", "hostile_update_chain", "hostile_store_config", "hostile_store_clock"] {
            let reason = refusal(&t, elf, program);
            assert!(reason.starts_with("write into map forbidden"), "{program} ({build:?}): {reason}");
        }
        let reason = refusal(&t, elf, "hostile_delete_prog");
        assert!(reason.starts_with("cannot pass map_type 3 into func bpf_map_delete_elem"), "{reason}");
        t.rt.verify_object("hostile.bpf.c", elf, &["hostile_uses_vm".to_owned()])
            .expect("reading the VM's tables and writing the packet's state is allowed");
    }
    let err =
        t.rt.register_object(&ProgramObject {
            package: "hostile",
            version: "1.0.0",
            object_name: "hostile.bpf.c",
            elf: objects::hostile(HostileBuild::Sdk),
            hook: Hook::Xdp,
        })
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Verifier(_)), "{err}");
    assert!(t.rt.status().unwrap().programs.iter().all(|p| p.package != "hostile"));
    // Nor can an object add a map of its own among the VM's.
    let before = pins(&t.path);
    let err = t.rt.verify_object(
        "hostile.bpf.c",
        objects::hostile(HostileBuild::ExtraVmMap),
        &["hostile_uses_vm".to_owned()],
    );
    let err = err.unwrap_err().to_string();
    assert!(err.contains("it declares a map `hike_extra` pinned by name with the VM's maps"), "{err}");
    assert_eq!(pins(&t.path), before);
    assert_eq!(t.rt.status().unwrap().chains.len(), code.len());
    assert_eq!(t.rt.test_run_chain(Hook::Xdp, c, &ipv6_udp_packet(), 0).unwrap().verdict, 1, "the chain still runs");
    // The test run made the test entry's chain; a claim makes the owner.
    t.rt.claim("lifecycle").unwrap().unwrap();
    for name in hike_bytecode::vm_maps::read_only_to_programs() {
        assert!(t.path.join("vm").join(name).exists(), "{name}");
    }
    assert_eq!(hike_runtime::vm_access::writable_vm_tables(&t.path).unwrap(), Vec::<&str>::new());
}

#[test]
fn a_root_whose_chain_table_programs_can_write_keeps_working_and_says_so() {
    // A root made before the VM's tables were read-only: its chain table was
    // created without BPF_F_RDONLY_PROG (the configuration and the rest are new).
    let fresh = TestRoot::new("rdonly-new");
    let new = MapHandle::from_pinned_path(fresh.path.join("vm/hike_chains")).unwrap();
    let info = libbpf_rs::MapInfo::new(std::os::fd::AsFd::as_fd(&new)).unwrap().info;
    assert_ne!(info.map_flags & (1 << 7), 0, "a new root's chain table is BPF_F_RDONLY_PROG");
    let guard = hike_runtime::ScratchPath::unique(std::path::Path::new("/sys/fs/bpf"), "hike-test-rdonly-old");
    hike_runtime::testing::pin_writable_chain_table(guard.path()).unwrap();
    let t = TestRoot::init(guard, InitOptions::default()).unwrap();
    assert_eq!(hike_runtime::vm_access::writable_vm_tables(&t.path).unwrap(), ["hike_chains"]);

    // Objects declaring the flag load, and chains run.
    let progs = t.register_vmtest(Hook::Xdp);
    let verdict = id_of(&progs, "test_verdict");
    let c = chain(&t, &format!("r1 = 1\ncall prog {verdict}, 1\nexit"));
    assert_eq!(t.rt.test_run_chain(Hook::Xdp, c, &ipv6_udp_packet(), 0).unwrap().verdict, 1);
    // What is reported as writable is: programs can write this chain table, and
    // still not the configuration.
    t.rt.verify_object(
        "hostile.bpf.c",
        objects::hostile(HostileBuild::Undeclared),
        &["hostile_store_chain".to_owned()],
    )
    .unwrap();
    assert!(
        refusal(&t, objects::hostile(HostileBuild::Undeclared), "hostile_store_config")
            .starts_with("write into map forbidden")
    );
    // A root older than the clock gets one when opened, read-only to programs (a
    // package's object declaring it may not create it).
    std::fs::remove_file(t.path.join("vm/hike_clock")).unwrap();
    drop(Runtime::open(&t.path).unwrap());
    assert!(t.path.join("vm/hike_clock").exists());
    assert_eq!(hike_runtime::vm_access::writable_vm_tables(&t.path).unwrap(), ["hike_chains"]);
}

#[test]
fn records_left_pending_by_a_crash_are_repaired() {
    let t = TestRoot::new("repair");
    let progs = t.register_vmtest(Hook::Xdp);
    // A record a killed process left pending, with no program behind it, and one
    // whose program made it into the array.
    let meta = MapHandle::from_pinned_path(t.path.join("vm/hike_prog_meta")).unwrap();
    let mut orphan = hike_runtime::meta::ProgMeta::free();
    orphan.state = hike_runtime::meta::RecordState::Pending;
    orphan.name = "half".into();
    meta.update(&500u32.to_le_bytes(), &orphan.encode(), MapFlags::ANY).unwrap();
    let kept = id_of(&progs, "test_nop");
    let mut rec =
        hike_runtime::meta::ProgMeta::decode(&meta.lookup(&kept.to_le_bytes(), MapFlags::ANY).unwrap().unwrap());
    rec.state = hike_runtime::meta::RecordState::Pending;
    meta.update(&kept.to_le_bytes(), &rec.encode(), MapFlags::ANY).unwrap();

    let rt = Runtime::open(&t.path).unwrap();
    let names: Vec<String> = rt.status().unwrap().programs.into_iter().map(|p| p.name).collect();
    assert!(names.contains(&"test_nop".to_owned()), "a written program is kept");
    assert!(!names.contains(&"half".to_owned()), "an orphan record is freed");
    let freed =
        hike_runtime::meta::ProgMeta::decode(&meta.lookup(&500u32.to_le_bytes(), MapFlags::ANY).unwrap().unwrap());
    assert_eq!(freed.state, hike_runtime::meta::RecordState::Free);
}

#[test]
fn loaders_are_configured_before_they_attach_and_chains_in_use_stay() {
    let t = TestRoot::new("loadercfg");
    let progs = t.register_vmtest(Hook::Xdp);
    t.load_test_loader("edge", Hook::Xdp);
    let err = t.rt.attach_loader("edge", "lo", AttachMode::XdpGeneric).unwrap_err();
    assert!(err.to_string().contains("write its configuration maps before attaching it"), "{err}");
    let err = t.rt.attach_loader("edge", "lo", AttachMode::TcIngress).unwrap_err();
    assert!(err.to_string().contains("cannot be attached in mode tc"), "{err}");
    // Only installed chains of the loader's hook without arguments can be started.
    let bad =
        t.rt.configure_loader("edge", "test_cfg", &[MapEntry { key: vec![0; 4], value: 77u32.to_le_bytes().to_vec() }]);
    assert!(bad.unwrap_err().to_string().contains("chain id 77, which is not installed"));
    let with_args = {
        let insns = assemble("r0 = r1\nexit").unwrap();
        t.rt.install_chain(&ChainSpec { name: "needs_arg", owner: "t", hook: Hook::Xdp, insns: &insns, nargs: 1 })
            .unwrap()
    };
    let bad = t.rt.configure_loader(
        "edge",
        "test_cfg",
        &[MapEntry { key: vec![0; 4], value: with_args.0.to_le_bytes().to_vec() }],
    );
    assert!(bad.unwrap_err().to_string().contains("loaders start chains without arguments"));
    let bad = t.rt.configure_loader("edge", "nope", &[]);
    assert!(bad.unwrap_err().to_string().contains("it has no configuration map `nope` (it has: test_cfg)"));

    let drop = chain(&t, &format!("r1 = 1\ncall prog {}, 1\nexit", id_of(&progs, "test_verdict")));
    t.point_test_loader("edge", drop);
    assert_eq!(t.rt.test_run_loader("edge", &ipv6_udp_packet(), 0).unwrap().verdict, 1);
    let err = t.rt.remove_chain(drop).unwrap_err();
    assert!(err.to_string().contains("still used by loader edge map test_cfg key 00000000"), "{err}");
    t.rt.unload_loader("edge").unwrap();
    assert!(!t.path.join("loaders/edge").exists());
    t.rt.remove_chain(drop).unwrap();
}

#[test]
fn replacing_a_chain_under_traffic_drops_no_packet() {
    let t = Arc::new(TestRoot::new("replace"));
    let progs = t.register_vmtest(Hook::Xdp);
    let verdict = id_of(&progs, "test_verdict");
    t.load_test_loader("live", Hook::Xdp);
    // Two chains, told apart by their verdicts: DROP and TX.
    let body = |v: u32| format!("r1 = {v}\nr6 = 3\nr6 -= 1\nif r6 != 0 goto -2\ncall prog {verdict}, 1\nexit");
    let mut current = chain(&t, &body(1));
    t.point_test_loader("live", current);

    let traffic = Traffic::start(&t, "live");
    for i in 0..20 {
        let insns = assemble(&body(if i % 2 == 0 { 3 } else { 1 })).unwrap();
        current =
            t.rt.replace_chain(
                current,
                &ChainSpec { name: "c", owner: "lifecycle", hook: Hook::Xdp, insns: &insns, nargs: 0 },
            )
            .unwrap();
        // Each chain carries packets for a while, so both verdicts are seen.
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let seen = traffic.stop();
    assert!(seen.keys().all(|v| *v == 1 || *v == 3), "only the two chains' verdicts: {seen:?}");
    assert_eq!(seen.len(), 2, "packets ran through both chains while they were replaced: {seen:?}");
    let counters = t.rt.counters().unwrap();
    assert!(counters.aborts.iter().all(|n| *n == 0), "no packet aborted: {:?}", counters.aborts);
    let status = t.rt.status().unwrap();
    assert_eq!(status.chains.len(), 1, "old chains are gone");
    assert_eq!(status.chains[0].id, current);
}

#[test]
fn destroy_leaves_no_pins() {
    let t = TestRoot::new("destroy");
    let progs = t.register_vmtest(Hook::Xdp);
    chain(&t, &format!("call prog {}, 0\nexit", id_of(&progs, "test_nop")));
    t.load_test_loader("gone", Hook::Xdp);
    assert!(!pins(&t.path).is_empty());
    Runtime::destroy(&t.path).unwrap();
    assert!(!t.path.exists());
    // Refuses what is not a HIKe root.
    let dir = std::path::Path::new("/sys/fs/bpf/not-a-hike-root-test");
    std::fs::create_dir_all(dir).unwrap();
    assert!(Runtime::destroy(dir).is_err());
    assert!(dir.exists());
    std::fs::remove_dir(dir).unwrap();
}

#[test]
fn chains_and_programs_go_together_in_one_batch_or_not_at_all() {
    let t = TestRoot::new("batch");
    let progs = t.register_vmtest(Hook::Xdp);
    let nop = id_of(&progs, "test_nop");
    let callee = chain(&t, &format!("call prog {nop}, 0\nexit"));
    let caller = chain(&t, &format!("call chain {}, 0\nexit", callee.0));
    let outsider = chain(&t, &format!("call chain {}, 0\nexit", callee.0));
    // The outsider calls the callee: nothing of the batch goes.
    let err = t.rt.remove_chains(&[callee, caller]).unwrap_err();
    assert!(err.to_string().contains(&format!("id {}", outsider.0)), "{err}");
    assert!(t.rt.chain_insns(caller).unwrap().is_some() && t.rt.chain_insns(callee).unwrap().is_some());
    // Programs a remaining chain calls stay, and so do the others of the batch.
    let all: Vec<ProgId> = progs.iter().map(|p| p.id).collect();
    assert!(matches!(t.rt.unregister_programs(&all), Err(RuntimeError::InUse { .. })));
    assert_eq!(t.rt.status().unwrap().programs.len(), progs.len(), "none went");
    // A caller and its callee go together.
    t.rt.remove_chain(outsider).unwrap();
    t.rt.remove_chains(&[callee, caller]).unwrap();
    assert!(t.rt.status().unwrap().chains.is_empty());
    t.rt.unregister_programs(&all).unwrap();
    assert!(t.rt.status().unwrap().programs.is_empty());
    assert!(!t.path.join("progs/hike-test@0_0_0").exists(), "the package directory goes with its last program");
}

/// The program id a slot of `hike_progs_xdp` holds.
fn slot(t: &TestRoot, id: u32) -> Option<u32> {
    let array = MapHandle::from_pinned_path(t.path.join("vm/hike_progs_xdp")).unwrap();
    array.lookup(&id.to_le_bytes(), MapFlags::ANY).unwrap().map(|v| u32::from_le_bytes(v[..4].try_into().unwrap()))
}

fn tombstone_id(t: &TestRoot) -> u32 {
    let fd = libbpf_rs::Program::fd_from_pinned_path(t.path.join("vm/gone_xdp")).unwrap();
    libbpf_rs::Program::id_from_fd(std::os::fd::AsFd::as_fd(&fd)).unwrap()
}

#[test]
fn a_removed_program_leaves_a_tombstone_that_aborts_like_an_empty_slot() {
    use hike_bytecode::interp::AbortReason;
    let t = TestRoot::new("tomb");
    let progs = t.register_vmtest(Hook::Xdp);
    let nop = id_of(&progs, "test_nop");
    let c = chain(&t, &format!("call prog {nop}, 0\nexit"));
    let array = MapHandle::from_pinned_path(t.path.join("vm/hike_progs_xdp")).unwrap();
    let nop_fd = libbpf_rs::Program::fd_from_pinned_path(t.path.join("progs/hike-test@0_0_0/test_nop")).unwrap();
    let put = |fd: &std::os::fd::OwnedFd| {
        let raw = std::os::fd::AsRawFd::as_raw_fd(fd) as u32;
        array.update(&nop.to_le_bytes(), &raw.to_le_bytes(), MapFlags::ANY).unwrap();
    };
    let run = || {
        let before = t.rt.counters().unwrap().aborted(AbortReason::NoProg);
        let verdict = t.rt.test_run_chain(Hook::Xdp, c, &ipv6_udp_packet(), 0).unwrap().verdict;
        (verdict, t.rt.counters().unwrap().aborted(AbortReason::NoProg) - before)
    };
    // What a chain calling an empty slot does is what the tombstone must do.
    array.delete(&nop.to_le_bytes()).unwrap();
    let empty = run();
    assert_eq!(empty.1, 1, "an empty slot aborts the chain");
    let gone = libbpf_rs::Program::fd_from_pinned_path(t.path.join("vm/gone_xdp")).unwrap();
    put(&gone);
    assert_eq!(run(), empty, "the tombstone aborts the chain as an empty slot does");
    put(&nop_fd);
    assert_ne!(run(), empty, "the program itself runs");

    t.rt.remove_chain(c).unwrap();
    let all: Vec<ProgId> = progs.iter().map(|p| p.id).collect();
    t.rt.unregister_programs(&all).unwrap();
    let tomb = tombstone_id(&t);
    for p in &progs {
        assert_eq!(slot(&t, p.id.0), Some(tomb), "{}'s slot holds the tombstone", p.name);
    }
    // The ids are given again, the tombstones replaced.
    let again = t.register_vmtest(Hook::Xdp);
    assert_eq!(again.iter().map(|p| p.id).collect::<Vec<_>>(), all);
    for p in &again {
        assert_eq!(slot(&t, p.id.0), Some(p.bpf_id));
    }
    // A root made before tombstones gets one when a program first goes.
    std::fs::remove_file(t.path.join("vm/gone_xdp")).unwrap();
    t.rt.unregister_programs(&all).unwrap();
    let tomb = tombstone_id(&t);
    assert!(again.iter().all(|p| slot(&t, p.id.0) == Some(tomb)));
}

#[test]
fn a_pending_record_whose_slot_holds_the_tombstone_is_freed_by_repair() {
    let t = TestRoot::new("tombrepair");
    let progs = t.register_vmtest(Hook::Xdp);
    let nop = id_of(&progs, "test_nop");
    t.rt.unregister_program(ProgId(nop)).unwrap();
    // A registration killed after its record was written, before its program
    // replaced the tombstone: the slot is not its program's.
    let meta = MapHandle::from_pinned_path(t.path.join("vm/hike_prog_meta")).unwrap();
    let mut rec = hike_runtime::meta::ProgMeta::free();
    rec.state = hike_runtime::meta::RecordState::Pending;
    rec.name = "test_nop".into();
    rec.package = "hike-test".into();
    rec.version = "0.0.0".into();
    rec.bpf_id = u32::MAX;
    meta.update(&nop.to_le_bytes(), &rec.encode(), MapFlags::ANY).unwrap();
    let rt = Runtime::open(&t.path).unwrap();
    assert!(!rt.status().unwrap().programs.iter().any(|p| p.name == "test_nop"));
    let freed = hike_runtime::meta::ProgMeta::decode(&meta.lookup(&nop.to_le_bytes(), MapFlags::ANY).unwrap().unwrap());
    assert_eq!(freed.state, hike_runtime::meta::RecordState::Free);
}

#[test]
fn a_loader_moves_to_other_chains_in_place_when_only_chain_fields_change() {
    let t = TestRoot::new("flip");
    let progs = t.register_vmtest(Hook::Xdp);
    t.load_test_loader("edge", Hook::Xdp);
    let verdict = |v: u32| chain(&t, &format!("r1 = {v}\ncall prog {}, 1\nexit", id_of(&progs, "test_verdict")));
    let (drop, pass) = (verdict(1), verdict(2));
    let entry = |c: u32| vec![MapEntry { key: vec![0; 4], value: c.to_le_bytes().to_vec() }];
    let run = || t.rt.test_run_loader("edge", &ipv6_udp_packet(), 0).unwrap().verdict;
    t.point_test_loader("edge", drop);
    assert_eq!(run(), 1);

    assert_eq!(t.rt.flip_refusal("edge", "test_cfg", &entry(pass.0)).unwrap(), None);
    t.rt.flip_loader_chains("edge", "test_cfg", &entry(pass.0)).unwrap();
    assert_eq!(run(), 2, "the loader starts the other chain");
    assert_eq!(t.rt.loader_config("edge", "test_cfg").unwrap(), entry(pass.0));
    let err = t.rt.remove_chain(pass).unwrap_err();
    assert!(err.to_string().contains("still used by loader edge"), "{err}");
    t.rt.remove_chain(drop).unwrap();

    // Refused: a chain that is not installed, other keys.
    let err = t.rt.flip_loader_chains("edge", "test_cfg", &entry(77)).unwrap_err();
    assert!(err.to_string().contains("chain id 77, which is not installed"), "{err}");
    assert_eq!(t.rt.flip_refusal("edge", "test_cfg", &[]).unwrap().as_deref(), Some("its keys change"));
    assert_eq!(run(), 2);

    // Refused: a value that changes outside its chain fields (here, a map with none).
    t.rt.load_loader(&hike_runtime::LoaderObject {
        instance: "plain",
        package: "hike-test",
        version: "0.0.0",
        object_name: "testloader.bpf.c",
        elf: objects::testloader(Hook::Xdp),
        program: "test_loader",
        hook: Hook::Xdp,
        config_maps: vec![hike_runtime::ConfigMapSpec { name: "test_cfg".into(), chain_offsets: vec![] }],
    })
    .unwrap();
    t.rt.configure_loader("plain", "test_cfg", &entry(5)).unwrap();
    let refusal = t.rt.flip_refusal("plain", "test_cfg", &entry(6)).unwrap();
    assert_eq!(refusal.as_deref(), Some("values change outside their chain fields"));
    assert!(t.rt.flip_loader_chains("plain", "test_cfg", &entry(6)).is_err());

    // Refused: an array made before configuration arrays were mmapable.
    let pin = t.path.join("loaders/edge/maps/test_cfg");
    std::fs::remove_file(&pin).unwrap();
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    let mut old = MapHandle::create(libbpf_rs::MapType::Array, Some("test_cfg"), 4, 4, 1, &opts).unwrap();
    old.update(&[0; 4], &pass.0.to_le_bytes(), MapFlags::ANY).unwrap();
    old.pin(&pin).unwrap();
    let refusal = t.rt.flip_refusal("edge", "test_cfg", &entry(drop.0)).unwrap();
    assert_eq!(refusal.as_deref(), Some("it was created before loaders' arrays were mmapable"));
}
