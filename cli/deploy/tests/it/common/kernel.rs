//! What the kernel holds, found without disturbing it: from pins (which hold
//! their objects' user references) through links, programs, program arrays and
//! the maps programs use; and the ids of every object, listed without opening
//! any.
//!
//! Why not `bpftool map show`: it opens every map by id, and opening a program
//! array by id while the kernel is still clearing it after its last user
//! reference went (deferred work, `prog_array_map_clear`) schedules the clearing
//! a second time, which leaks a reference: the array is never freed. Listing by
//! id alone, and opening by id only what a pin holds or what has outlived any
//! such window, never triggers it.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use libbpf_rs::libbpf_sys;

// The tests of this binary are threads of one process, and `leaks` counts what
// this process holds only by a descriptor as leaked: another test's objects in
// the middle of an install (loaded, not yet pinned) would be taken for leaks.
// So a test holds `shared()` while it makes, changes or runs kernel objects or
// a process that does (`Env` for its lifetime), and `leaks` waits until no test
// does.
static WORKING: Mutex<usize> = Mutex::new(0);
static DONE: Condvar = Condvar::new();

thread_local! {
    static WORKING_HERE: Cell<usize> = const { Cell::new(0) };
}

/// Kernel work under way on this thread; `leaks` waits for it to be dropped.
pub struct Shared(PhantomData<*const ()>);

pub fn shared() -> Shared {
    *WORKING.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    WORKING_HERE.with(|n| n.set(n.get() + 1));
    Shared(PhantomData)
}

impl Drop for Shared {
    fn drop(&mut self) {
        WORKING_HERE.with(|n| n.set(n.get() - 1));
        *WORKING.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        DONE.notify_all();
    }
}

/// No kernel work in this process until the guard is dropped.
fn exclusive() -> MutexGuard<'static, usize> {
    assert_eq!(WORKING_HERE.with(Cell::get), 0, "leaks() under kernel::shared() would wait for itself");
    let mut working = WORKING.lock().unwrap_or_else(PoisonError::into_inner);
    while *working > 0 {
        working = DONE.wait(working).unwrap_or_else(PoisonError::into_inner);
    }
    working
}

/// A kernel object: `('p', id)` program, `('m', id)` map, `('l', id)` link.
pub type Obj = (char, u32);

fn fd(ret: i32) -> Option<OwnedFd> {
    // SAFETY: a non-negative return is a new descriptor nothing else owns.
    (ret >= 0).then(|| unsafe { OwnedFd::from_raw_fd(ret) })
}

fn obj_get(path: &Path) -> Option<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is NUL-terminated.
    fd(unsafe { libbpf_sys::bpf_obj_get(c.as_ptr()) })
}

/// The kind and id of the object behind `fd`, from its fdinfo.
fn kind_and_id(fd: &OwnedFd) -> Option<Obj> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
    // A link's fdinfo names its program too: the type line says what it is.
    let id = |key: &str| info.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().parse::<u32>().ok());
    if info.lines().any(|l| l.starts_with("link_type:")) {
        id("link_id:").map(|i| ('l', i))
    } else if info.lines().any(|l| l.starts_with("map_type:")) {
        id("map_id:").map(|i| ('m', i))
    } else {
        id("prog_id:").map(|i| ('p', i))
    }
}

fn prog_info(fd: &OwnedFd) -> (String, Vec<u32>) {
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: `info` is a zeroed bpf_prog_info of `len` bytes.
    unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    let name: Vec<u8> = info.name.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
    let mut ids = vec![0u32; info.nr_map_ids as usize];
    let mut again: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    again.nr_map_ids = info.nr_map_ids;
    again.map_ids = ids.as_mut_ptr() as u64;
    // SAFETY: `map_ids` points at `nr_map_ids` u32s that outlive the call.
    unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut again, &mut len) };
    ids.truncate(again.nr_map_ids.min(info.nr_map_ids) as usize);
    (format!("prog {}", String::from_utf8_lossy(&name)), ids)
}

fn map_info(fd: &OwnedFd) -> (String, bool, u32) {
    let info = libbpf_rs::MapInfo::new(fd.as_fd()).unwrap();
    let prog_array = info.map_type() == libbpf_rs::MapType::ProgArray;
    (format!("map {}", info.name().unwrap_or("?")), prog_array, info.info.max_entries)
}

/// The programs in a program array (the kernel answers lookups with program ids).
fn array_progs(fd: &OwnedFd, max: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for k in 0..max {
        let mut v = 0u32;
        // SAFETY: key and value point at u32s, the array's key and value sizes.
        let r = unsafe {
            libbpf_sys::bpf_map_lookup_elem(fd.as_raw_fd(), (&k as *const u32).cast(), (&mut v as *mut u32).cast())
        };
        if r == 0 {
            out.push(v);
        }
    }
    out
}

/// Every object reachable from pins under `roots`, with its name.
pub fn reachable(roots: &[&Path]) -> BTreeMap<Obj, String> {
    walk_from(roots, Vec::new())
}

/// Every object that something else on this machine still holds: a pin anywhere
/// in bpffs, or a descriptor of another process (other tests, other tools). Objects of
/// processes running beside a test are theirs, not leaks.
fn held_anywhere() -> BTreeMap<Obj, String> {
    let mut held = Vec::new();
    for proc in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = proc.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else { continue };
        // What this process itself still holds is not let off: a descriptor it
        // forgot to close is a leak too.
        if pid == std::process::id() {
            continue;
        }
        for info in std::fs::read_dir(format!("/proc/{pid}/fdinfo")).into_iter().flatten().flatten() {
            let Ok(text) = std::fs::read_to_string(info.path()) else { continue };
            let id = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().parse().ok());
            let obj = if text.contains("link_type:") {
                id("link_id:").map(|i| ('l', i))
            } else if text.contains("map_type:") {
                id("map_id:").map(|i| ('m', i))
            } else {
                id("prog_id:").map(|i| ('p', i))
            };
            // Safe to open by id: the process's descriptor holds a user reference.
            if let Some(obj) = obj
                && let Some(fd) = fd_by_id(obj.0, obj.1)
            {
                held.push((obj, fd));
            }
        }
    }
    walk_from(&[Path::new("/sys/fs/bpf")], held)
}

fn walk_from(roots: &[&Path], mut todo: Vec<(Obj, OwnedFd)>) -> BTreeMap<Obj, String> {
    let mut out = BTreeMap::new();
    fn walk(dir: &Path, todo: &mut Vec<(Obj, OwnedFd)>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&e.path(), todo);
            } else if let Some(fd) = obj_get(&e.path())
                && let Some(obj) = kind_and_id(&fd)
            {
                todo.push((obj, fd));
            }
        }
    }
    for r in roots {
        walk(r, &mut todo);
    }
    while let Some((obj, fd)) = todo.pop() {
        if out.contains_key(&obj) {
            continue;
        }
        let mut next: Vec<Obj> = Vec::new();
        let name = match obj.0 {
            'p' => {
                let (name, maps) = prog_info(&fd);
                next.extend(maps.into_iter().map(|m| ('m', m)));
                name
            }
            'm' => {
                let (name, prog_array, max) = map_info(&fd);
                if prog_array {
                    next.extend(array_progs(&fd, max).into_iter().map(|p| ('p', p)));
                }
                name
            }
            _ => {
                let info = libbpf_rs::query::LinkInfo::from_fd(fd.as_fd()).unwrap();
                next.push(('p', info.prog_id));
                "link".to_owned()
            }
        };
        out.insert(obj, name);
        for n in next {
            if out.contains_key(&n) {
                continue;
            }
            // Safe to open by id: a reachable program or array holds it.
            let opened = match n.0 {
                'p' => fd_by_id('p', n.1),
                _ => fd_by_id('m', n.1),
            };
            if let Some(fd) = opened {
                todo.push((n, fd));
            }
        }
    }
    out
}

fn fd_by_id(kind: char, id: u32) -> Option<OwnedFd> {
    // SAFETY: plain syscalls on an id.
    fd(unsafe {
        match kind {
            'p' => libbpf_sys::bpf_prog_get_fd_by_id(id),
            'm' => libbpf_sys::bpf_map_get_fd_by_id(id),
            _ => libbpf_sys::bpf_link_get_fd_by_id(id),
        }
    })
}

/// Ids of every object of a kind, without opening any.
pub fn ids(kind: char) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let mut id = 0u32;
    loop {
        let mut next = 0u32;
        // SAFETY: `next` is a valid u32 out-parameter.
        let r = unsafe {
            match kind {
                'p' => libbpf_sys::bpf_prog_get_next_id(id, &mut next),
                'm' => libbpf_sys::bpf_map_get_next_id(id, &mut next),
                _ => libbpf_sys::bpf_link_get_next_id(id, &mut next),
            }
        };
        if r != 0 {
            return out;
        }
        out.insert(next);
        id = next;
    }
}

/// The highest id of each kind now: objects made later have higher ids.
pub fn baseline() -> BTreeMap<char, u32> {
    ['p', 'm', 'l'].into_iter().map(|k| (k, ids(k).last().copied().unwrap_or(0))).collect()
}

/// Objects made since `baseline` that nothing under `roots`, no pin elsewhere
/// and no other process holds, and that are still there after the kernel's
/// deferred frees had 5 s, described; those whose names are not among `ours`
/// (other programs' objects) are left out.
pub fn leaks(baseline: &BTreeMap<char, u32>, ours: &BTreeSet<String>, roots: &[&Path]) -> Vec<String> {
    let _alone = exclusive();
    let deadline = Instant::now() + Duration::from_secs(5);
    let candidates = loop {
        // The ids before their holders: an object another process makes after
        // the list (a test binary running beside this one) is not in it, and one
        // made before is pinned, held by its maker or gone by the time the
        // holders are looked at. (Listed after, it could be made between the two
        // and seem held by no one, at every try.)
        let made: Vec<Obj> = ['p', 'm', 'l']
            .into_iter()
            .flat_map(|k| ids(k).into_iter().filter(move |id| *id > baseline[&k]).map(move |id| (k, id)))
            .collect();
        let mut live = reachable(roots);
        live.extend(held_anywhere());
        let found: Vec<Obj> = made.into_iter().filter(|o| !live.contains_key(o)).collect();
        if found.is_empty() || Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    candidates
        .into_iter()
        .filter_map(|o| {
            // Outlived any deferred clearing: safe to open by id to name it.
            let fd = fd_by_id(o.0, o.1)?;
            let name = match o.0 {
                'p' => prog_info(&fd).0,
                'm' => map_info(&fd).0,
                _ => "link".to_owned(),
            };
            let ours = ours.contains(&name) || name.starts_with("map hike_") || name == "link";
            ours.then(|| format!("{name} (id {})", o.1))
        })
        .collect()
}

/// What `root` holds, by name: a clean run and a crashed-then-completed one must
/// hold the same.
pub fn shape(root: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for name in reachable(&[root]).into_values() {
        *out.entry(name).or_insert(0) += 1;
    }
    out
}
