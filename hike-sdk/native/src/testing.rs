//! The property the native tier's budget check rests on, for the fuzz target
//! and the tests: on any valid chain, no run of the reference interpreter
//! executes more instructions or makes more tail calls than
//! [`worst`](crate::worst) says, so a packet with that much budget is never
//! aborted for it, and the native program, which does not count, behaves the same.

use std::collections::{BTreeMap, HashMap};

use hike_bytecode::interp::{self, Ending, Memory, ProgramOutcome};
use hike_bytecode::{ChainSig, Env, Hook, Insn, ProgramSig, validate};

use crate::codegen::{ChainUnit, generate};
use crate::error::NativeError;

/// Checks the property for chain 1 (`top`, raw instructions) calling chain 2
/// (`callee`) and programs 1..=4 (taking 0..=3 arguments). Inputs the validator
/// refuses, or the analysis refuses (loops, the call limit), pass trivially.
pub fn worst_bounds_runs(top: &[u8], callee: &[u8]) -> Result<(), String> {
    let decode = |b: &[u8]| Insn::decode_all(&b[..b.len() - b.len() % Insn::SIZE]).unwrap_or_default();
    let (top, callee) = (decode(top), decode(callee));
    let mut env = Env::default();
    for id in 1..=4u32 {
        env.programs.insert(id, ProgramSig { name: format!("p{id}"), nargs: (id - 1) as u8 });
    }
    let mut chains = BTreeMap::new();
    if let Ok(facts) = validate(&callee, &env) {
        env.chains.insert(2, ChainSig { name: "callee".into(), nargs: 1, depth: facts.depth });
        chains.insert(2, callee);
    }
    if validate(&top, &env).is_err() {
        return Ok(());
    }
    chains.insert(1, top);
    let programs: BTreeMap<u32, String> = (1..=4).map(|id| (id, format!("p{id}"))).collect();
    let unit = ChainUnit { hook: Hook::Xdp, chain: 1, chains: &chains, programs: &programs, license: "GPL" };
    let generated = match generate(&unit) {
        Ok(g) => g,
        Err(NativeError::TooLarge { .. }) => return Ok(()),
        Err(e) => return Err(format!("a valid chain could not be generated: {e}")),
    };
    if !generated.source.contains(&generated.entry) {
        return Err("the source has no entry program".into());
    }
    let worst = generated.worst;
    let by_id: HashMap<u32, Vec<Insn>> = chains.into_iter().collect();
    for (packet, salt) in [(vec![0u8; 64], 0u64), (vec![0xffu8; 20], 1), (Vec::new(), 7)] {
        let mut progs =
            |id: u32, a: [u64; 4], _: &mut Memory| Some(ProgramOutcome::Result(a[0] ^ u64::from(id) ^ salt));
        let run = interp::run(&by_id, &mut progs, 1, Memory::new(packet), worst.steps);
        if matches!(run.ending, Ending::Aborted(interp::AbortReason::Budget)) {
            return Err(format!("a run was aborted ({:?}) within the worst case {worst:?}", run.ending));
        }
        if run.executed > worst.steps || run.tail_calls > worst.calls {
            return Err(format!(
                "a run executed {} instructions and made {} tail calls, beyond the worst case {worst:?}",
                run.executed, run.tail_calls
            ));
        }
    }
    Ok(())
}
