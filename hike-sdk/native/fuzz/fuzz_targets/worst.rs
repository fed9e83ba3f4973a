//! Any chain bytes: generating native code never panics, and for every valid,
//! loop-free chain the worst case bounds what the reference interpreter does
//! (`hike_native::testing`). The first byte says where the callee's bytes start.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let at = (usize::from(split) * 8).min(rest.len());
    let (callee, top) = rest.split_at(at);
    if let Err(e) = hike_native::testing::worst_bounds_runs(top, callee) {
        panic!("{e}");
    }
});
