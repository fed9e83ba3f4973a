//! The passes that turn the generator's draft — instructions with jumps by
//! instruction index — into the final code: jumps to jumps threaded, code no
//! path reaches and jumps to the next instruction removed, offsets filled in.
//! Pure functions over instruction lists, tested on their own below.

use hike_bytecode::Insn;
use hike_bytecode::insn::code;

/// `ja` (goto).
const GOTO: u8 = code::JMP | code::JA;
/// `exit`.
const EXIT: u8 = code::JMP | code::EXIT;
/// The first half of a 64-bit immediate load, which takes two slots.
const LDDW: u8 = code::LD | code::IMM | code::DW;

pub(super) fn is_goto(insn: &Insn) -> bool {
    insn.code == GOTO
}

/// Whether `insn` takes two slots (the second belongs to it).
pub(super) fn is_wide(insn: &Insn) -> bool {
    insn.code == LDDW
}

/// The final code, and where each draft instruction went.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Finished {
    pub insns: Vec<Insn>,
    /// For each draft instruction, its index in `insns` (or, when it was
    /// removed, the index of the next kept instruction).
    pub new_index: Vec<usize>,
    /// Which draft instructions were kept.
    pub kept: Vec<bool>,
}

/// Finishes a draft: `target[i]` is the draft index instruction `i` jumps to
/// (`n`, one past the end, is allowed only where nothing follows).
pub(super) fn finish(code: &[Insn], mut target: Vec<Option<usize>>) -> Finished {
    thread_jumps(code, &mut target);
    let mut kept = reachable(code, &target);
    drop_jumps_to_next(code, &target, &mut kept);
    let new_index = renumber(&kept);
    let mut insns = Vec::with_capacity(kept.iter().filter(|k| **k).count());
    for (i, insn) in code.iter().enumerate() {
        if !kept[i] {
            continue;
        }
        let mut insn = *insn;
        if let Some(t) = target[i] {
            insn.off = (new_index[t] as i64 - new_index[i] as i64 - 1) as i16;
        }
        insns.push(insn);
    }
    Finished { insns, new_index, kept }
}

/// A jump whose target is a goto goes straight to where that goto (and any goto
/// it lands on) leads; a cycle of gotos is entered where it closes.
pub(super) fn thread_jumps(code: &[Insn], target: &mut [Option<usize>]) {
    let n = code.len();
    let is_chained_goto = |t: usize, target: &[Option<usize>]| t < n && is_goto(&code[t]) && target[t].is_some();
    let mut land: Vec<Option<usize>> = vec![None; n];
    let mut visiting = vec![false; n];
    for s in 0..n {
        if !is_chained_goto(s, target) || land[s].is_some() {
            continue;
        }
        let mut path = Vec::new();
        let mut t = s;
        let end = loop {
            if !is_chained_goto(t, target) {
                break t;
            }
            if let Some(l) = land[t] {
                break l;
            }
            if visiting[t] {
                break t;
            }
            visiting[t] = true;
            path.push(t);
            t = target[t].unwrap_or(t);
        };
        for p in path {
            land[p] = Some(end);
        }
    }
    for t in target.iter_mut() {
        if let Some(to) = *t
            && to < n
            && let Some(l) = land[to]
        {
            *t = Some(l);
        }
    }
}

/// The instructions some path from the entry reaches (both slots of a wide one).
pub(super) fn reachable(code: &[Insn], target: &[Option<usize>]) -> Vec<bool> {
    let n = code.len();
    let width = |i: usize| if is_wide(&code[i]) { 2 } else { 1 };
    let mut live = vec![false; n];
    let mut work = vec![0usize];
    while let Some(i) = work.pop() {
        if i >= n || live[i] {
            continue;
        }
        live[i] = true;
        if width(i) == 2 && i + 1 < n {
            live[i + 1] = true;
        }
        let is_exit = code[i].code == EXIT;
        let is_ja = is_goto(&code[i]) && target[i].is_some();
        if let Some(t) = target[i] {
            work.push(t);
        }
        if !is_exit && !is_ja {
            work.push(i + width(i));
        }
    }
    live
}

/// Removes gotos to the very next kept instruction (or past the end when nothing
/// follows): they do nothing.
pub(super) fn drop_jumps_to_next(code: &[Insn], target: &[Option<usize>], live: &mut [bool]) {
    let n = code.len();
    // The first live instruction after `i`, before any of these removals.
    let mut next_live: Vec<Option<usize>> = vec![None; n];
    let mut following = None;
    for i in (0..n).rev() {
        next_live[i] = following;
        if live[i] {
            following = Some(i);
        }
    }
    for i in 0..n {
        if live[i]
            && is_goto(&code[i])
            && let Some(t) = target[i]
        {
            let next = next_live[i];
            if next == Some(t) || (next.is_none() && t >= n) {
                live[i] = false;
            }
        }
    }
}

/// For each of the `kept.len() + 1` draft positions, its index among the kept
/// instructions; a removed one maps to the next kept one (so jumps to it land
/// there), the end to the end.
pub(super) fn renumber(kept: &[bool]) -> Vec<usize> {
    let n = kept.len();
    let mut new_index = vec![usize::MAX; n + 1];
    let mut count = 0;
    for i in 0..n {
        if kept[i] {
            new_index[i] = count;
            count += 1;
        }
    }
    let mut next = count;
    for i in (0..=n).rev() {
        if i < n && kept[i] {
            next = new_index[i];
        }
        if i == n || !kept[i] {
            new_index[i] = next;
        }
    }
    new_index
}

#[cfg(test)]
mod tests {
    use super::*;
    use hike_bytecode::build;

    fn goto() -> Insn {
        build::ja(0)
    }

    #[test]
    fn a_jump_to_a_goto_goes_where_the_goto_leads() {
        // 0: goto 2; 1: exit; 2: goto 4; 3: exit; 4: exit
        let code = [goto(), build::exit(), goto(), build::exit(), build::exit()];
        let mut target = vec![Some(2), None, Some(4), None, None];
        thread_jumps(&code, &mut target);
        assert_eq!(target, [Some(4), None, Some(4), None, None]);
        // A cycle of gotos is entered, not followed forever.
        let code = [goto(), goto()];
        let mut target = vec![Some(1), Some(0)];
        thread_jumps(&code, &mut target);
        assert!(target.iter().all(|t| t.is_some_and(|t| t < 2)), "{target:?}");
    }

    #[test]
    fn unreachable_code_goes_and_targets_follow() {
        // 0: goto 3; 1: mov (dead); 2: exit (dead); 3: mov; 4: exit
        let code = [goto(), build::mov_imm(0, 1), build::exit(), build::mov_imm(0, 2), build::exit()];
        let target = vec![Some(3), None, None, None, None];
        let f = finish(&code, target);
        // The goto now jumps to the next instruction, so it goes too.
        assert_eq!(f.insns, [build::mov_imm(0, 2), build::exit()]);
        assert_eq!(f.kept, [false, false, false, true, true]);
        assert_eq!(f.new_index, [0, 0, 0, 0, 1, 2]);
    }

    #[test]
    fn offsets_are_relative_to_the_next_instruction() {
        // 0: if r0 == 0 goto 3; 1: mov; 2: exit; 3: mov; 4: exit
        let code = [
            build::jmp_imm(hike_bytecode::Cond::Eq, 0, 0, 0),
            build::mov_imm(0, 1),
            build::exit(),
            build::mov_imm(0, 2),
            build::exit(),
        ];
        let f = finish(&code, vec![Some(3), None, None, None, None]);
        assert_eq!(f.insns.len(), 5);
        assert_eq!(f.insns[0].off, 2);
    }

    #[test]
    fn both_slots_of_a_wide_load_stay() {
        let wide = build::ld_imm64(1, u64::MAX);
        assert!(is_wide(&wide[0]));
        let code = [wide[0], wide[1], build::exit()];
        let f = finish(&code, vec![None; 3]);
        assert_eq!(f.insns.len(), 3);
    }

    #[test]
    fn removed_positions_map_to_the_next_kept_one() {
        assert_eq!(renumber(&[true, false, false, true]), [0, 1, 1, 1, 2]);
        assert_eq!(renumber(&[false, true]), [0, 0, 1]);
    }
}
