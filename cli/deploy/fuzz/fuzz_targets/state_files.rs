//! Any bytes found as a journal or a record in the state directory give a value
//! or an error, never a panic; and a journal that reads is either refused by its
//! check or names only its own deployment's loader instances: those it loads,
//! and those its previous deployment had (which it may keep).
#![no_main]

use ebpkg_deploy::Store;
use ebpkg_deploy::journal::Step;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(tmp) = tempfile::tempdir() else { return };
    let Ok(store) = Store::open(&tmp.path().join("state")) else { return };
    let dir = tmp.path().join("state");
    let _ = std::fs::write(dir.join("deployments/app.json"), data);
    let _ = std::fs::write(dir.join("journal/app.json"), data);
    let record = store.record("app").ok().flatten();
    if let Ok(Some(journal)) = store.journal("app")
        && journal.check("app", record.as_ref()).is_ok()
    {
        let own = format!("app-{}-", journal.generation);
        let kept = |instance: &str| journal.previous.iter().flat_map(|p| &p.loaders).any(|l| l.instance == instance);
        for step in &journal.steps {
            match step {
                Step::LoadLoader { instance } => assert!(instance.starts_with(&own)),
                Step::Switch { to, .. } | Step::Replace { to, .. } | Step::Attach { to, .. } => {
                    assert!(to.starts_with(&own) || kept(to))
                }
                Step::Configure { instance, .. } => assert!(kept(instance)),
                Step::AdoptChain { id, from } => assert!(
                    journal
                        .previous
                        .as_ref()
                        .is_some_and(|p| &p.chain_owner() == from && p.chains.iter().any(|c| c.id == *id))
                ),
                Step::Register { .. } => {}
            }
        }
    }
});
