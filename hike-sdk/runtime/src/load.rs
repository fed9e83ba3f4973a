//! Loading an eBPF object into the kernel: VM maps reused from the instance's
//! `vm/` directory, other maps pinned where the caller says, and a readable
//! verifier failure when the kernel says no. A failed load leaves no new pins.

use std::ffi::{CStr, OsStr, c_char};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Once;

use libbpf_rs::{AsRawLibbpf, Object, ObjectBuilder, PrintLevel};

use crate::error::{KernelContext, Result, RuntimeError};
use crate::verifier::VerifierFailure;

/// Size of each program's verifier log buffer when a failed load is retried for
/// its log. The kernel keeps the end of the log when it does not fit.
const LOG_BUF_SIZE: usize = 8 << 20;

/// `BPF_F_MMAPABLE`: what [`LoadRequest::mmapable`] maps are created with.
pub(crate) const MMAPABLE: u32 = 1 << 10;

/// What to load and where its maps go.
pub(crate) struct LoadRequest<'a> {
    /// Shown in errors: `package@version` or a file name.
    pub object_name: &'a str,
    pub elf: &'a [u8],
    /// The instance's `vm/` directory: maps declared with `LIBBPF_PIN_BY_NAME`.
    pub vm_dir: &'a Path,
    /// Where the maps that are not the VM's come from.
    pub maps: Maps<'a>,
    /// Programs to load; the others of the object are skipped.
    pub programs: &'a [String],
    /// Maps created mmapable when they are arrays (loaders' configuration maps:
    /// `config_flip.rs`).
    pub mmapable: &'a [String],
    /// One of the runtime's own objects, which create the VM's maps. A package's
    /// object only gets those that exist: one declaring another `hike_*` map
    /// pinned by name is refused rather than left to make a pin in `vm/`.
    pub runtime_object: bool,
}

/// Where an object's maps come from.
#[derive(Clone, Copy)]
pub(crate) enum Maps<'a> {
    /// Maps declared with `LIBBPF_PIN_BY_NAME` are the VM's; each other map is
    /// created and pinned where this says (`None`: unpinned).
    Pin(&'a dyn Fn(&str) -> Option<PathBuf>),
    /// Every map is an existing pin, found by name (native chains): none is
    /// created, and an object with mutable globals (`.data`, `.bss`), whose
    /// state would not be shared with anything, is refused.
    Existing(&'a dyn Fn(&str) -> Option<PathBuf>),
}

/// Routes libbpf's messages to `tracing` instead of stderr (once per process).
pub(crate) fn route_libbpf_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        libbpf_rs::set_print(Some((PrintLevel::Debug, |level, msg: String| match level {
            PrintLevel::Warn => tracing::debug!(target: "libbpf", "{}", msg.trim_end()),
            _ => tracing::trace!(target: "libbpf", "{}", msg.trim_end()),
        })));
    });
}

fn is_internal_map(name: &str) -> bool {
    // .rodata, .data, .bss and .kconfig belong to the object, not to the package.
    name.contains('.')
}

/// A map that belongs to the package: not the VM's (`hike_*`), not the object's own.
pub(crate) fn is_package_map(name: &str) -> bool {
    !name.starts_with(hike_bytecode::vm_maps::PREFIX) && !is_internal_map(name)
}

/// A package's object declares the VM map `name`, which the instance has not
/// pinned: refused (every root has the VM's maps once opened, `Runtime::open`).
fn vm_map_for_package(req: &LoadRequest<'_>, name: &str) -> Result<()> {
    Err(RuntimeError::BadObject {
        name: req.object_name.to_owned(),
        reason: format!(
            "it declares a map `{name}` pinned by name with the VM's maps, but the VM has no such map (its maps are \
             those of <hike/maps.h>); give the package's own maps names that do not start with `hike_`"
        ),
    })
}

/// Gives the object's VM map `name` the flags of the instance's map pinned at
/// `path`, when there is one, so libbpf reuses it (it refuses a pinned map whose
/// flags differ from the declaration): the instance's flags are what the kernel
/// enforces (`vm_access.rs`), and objects built before or after a change of the
/// declared flags load into roots made before or after it alike.
fn adopt_pinned_flags(map: &mut libbpf_rs::OpenMapMut<'_>, name: &str, path: &Path) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let flags = crate::vm_access::pinned_flags(path)?;
    if flags != map.map_flags() {
        map.set_map_flags(flags).kernel(|| format!("give map {name} the flags of {}", path.display()))?;
    }
    Ok(())
}

/// Loads the requested programs of the object. On a verifier rejection the object
/// is loaded again with logs enabled to explain it.
pub(crate) fn load(req: &LoadRequest<'_>) -> Result<Object> {
    route_libbpf_logs();
    let pins_before = existing_pins(req)?;
    match open_and_load(req, None) {
        Ok(obj) => Ok(obj),
        Err(first) => {
            remove_new_pins(&pins_before);
            let err = match explain(req) {
                Some(failure) => RuntimeError::Verifier(Box::new(failure)),
                None => first,
            };
            remove_new_pins(&pins_before);
            Err(err)
        }
    }
}

/// Verifier log levels (`BPF_LOG_LEVEL1`, `BPF_LOG_STATS`).
const LOG_LEVEL_VERBOSE: u32 = 1;
const LOG_LEVEL_STATS: u32 = 4;

/// Loads the object with the verifier's statistics logged for each requested
/// program, and returns them with the object (to drop: nothing is pinned, the
/// caller passes a `map_pin` that pins nothing).
pub(crate) fn load_with_stats(req: &LoadRequest<'_>) -> Result<(Object, Vec<(String, String)>)> {
    route_libbpf_logs();
    let mut logs = Vec::new();
    match open_and_load_with(req, Some(&mut logs), LOG_LEVEL_STATS, 64 << 10) {
        Ok(obj) => {
            let text = logs
                .iter()
                .map(|(name, buf)| {
                    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
                    (name.clone(), String::from_utf8_lossy(&buf[..end]).into_owned())
                })
                .collect();
            Ok((obj, text))
        }
        Err(first) => Err(match explain(req) {
            Some(failure) => RuntimeError::Verifier(Box::new(failure)),
            None => first,
        }),
    }
}

fn open_and_load(req: &LoadRequest<'_>, logs: Option<&mut Vec<(String, Vec<u8>)>>) -> Result<Object> {
    open_and_load_with(req, logs, LOG_LEVEL_VERBOSE, LOG_BUF_SIZE)
}

fn open_and_load_with(
    req: &LoadRequest<'_>,
    logs: Option<&mut Vec<(String, Vec<u8>)>>,
    level: u32,
    buf_size: usize,
) -> Result<Object> {
    let mut builder = ObjectBuilder::default();
    builder.name(req.object_name).kernel(|| format!("open {}", req.object_name))?;
    builder.pin_root_path(req.vm_dir).kernel(|| format!("open {}", req.object_name))?;
    let mut open = builder.open_memory(req.elf).kernel(|| format!("open {}", req.object_name))?;

    for mut map in open.maps_mut() {
        let name = map.name().to_string_lossy().into_owned();
        match req.maps {
            Maps::Pin(pin) => {
                if !is_package_map(&name) {
                    if !is_internal_map(&name) {
                        // SAFETY: `map` is a map of `open`, alive here; libbpf returns
                        // its pin path (pin_root_path/name for LIBBPF_PIN_BY_NAME) or NULL.
                        let pinned = unsafe {
                            let p = libbpf_rs::libbpf_sys::bpf_map__pin_path(map.as_libbpf_object().as_ptr());
                            (!p.is_null()).then(|| PathBuf::from(OsStr::from_bytes(CStr::from_ptr(p).to_bytes())))
                        };
                        if let Some(path) = pinned {
                            if !req.runtime_object && !path.exists() {
                                vm_map_for_package(req, &name)?;
                            }
                            adopt_pinned_flags(&mut map, &name, &path)?;
                        }
                    }
                    continue;
                }
                match pin(&name) {
                    Some(path) => map.set_pin_path(&path).kernel(|| format!("pin map {name} at {}", path.display()))?,
                    // Declared LIBBPF_PIN_BY_NAME, it would be pinned in `vm/`.
                    // SAFETY: `map` is a map of `open`, alive here; NULL clears the pin path.
                    None => unsafe {
                        libbpf_rs::libbpf_sys::bpf_map__set_pin_path(map.as_libbpf_object().as_ptr(), std::ptr::null());
                    },
                }
                if req.mmapable.contains(&name) && map.map_type() == libbpf_rs::MapType::Array {
                    let flags = map.map_flags() | MMAPABLE;
                    map.set_map_flags(flags).kernel(|| format!("make map {name} mmapable"))?;
                }
            }
            Maps::Existing(find) => {
                if is_internal_map(&name) {
                    if name.starts_with(".rodata") || name == ".kconfig" {
                        continue;
                    }
                    // libbpf names it after the object (`native_c.bss`): the section is what says something.
                    let section = name.rfind('.').map_or(name.as_str(), |i| &name[i..]);
                    return Err(RuntimeError::BadObject {
                        name: req.object_name.to_owned(),
                        reason: format!(
                            "a program it calls keeps state in global variables ({section}), which its registered \
                             object would not share with it; keep such state in a map"
                        ),
                    });
                }
                // libbpf reuses a pinned map at the pin path (checking that it is
                // compatible) and would create one where none exists: check first.
                let path = find(&name).filter(|p| p.exists()).ok_or_else(|| RuntimeError::BadObject {
                    name: req.object_name.to_owned(),
                    reason: format!("its map `{name}` is not one the instance has"),
                })?;
                map.set_pin_path(&path).kernel(|| format!("reuse map {name} at {}", path.display()))?;
                if !is_package_map(&name) {
                    adopt_pinned_flags(&mut map, &name, &path)?;
                }
            }
        }
    }
    let mut found = Vec::new();
    let mut logs = logs;
    for mut prog in open.progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        let wanted = req.programs.contains(&name);
        prog.set_autoload(wanted);
        if wanted {
            found.push(name.clone());
            if let Some(logs) = logs.as_deref_mut() {
                prog.set_log_level(level);
                let mut buf = vec![0u8; buf_size];
                // SAFETY: the program pointer is valid while `open` lives, and the
                // buffer is moved into `logs`, which outlives the load below without
                // being reallocated (a Vec's heap buffer does not move when the Vec
                // itself is moved).
                unsafe {
                    libbpf_rs::libbpf_sys::bpf_program__set_log_buf(
                        prog.as_libbpf_object().as_ptr(),
                        buf.as_mut_ptr().cast::<c_char>(),
                        buf.len() as _,
                    );
                }
                logs.push((name, buf));
            }
        }
    }
    if let Some(missing) = req.programs.iter().find(|p| !found.contains(p)) {
        return Err(RuntimeError::BadObject {
            name: req.object_name.to_owned(),
            reason: format!("it has no program `{missing}` (found: {})", program_names(&open).join(", ")),
        });
    }
    open.load().kernel(|| format!("load {}", req.object_name))
}

/// The programs an object defines (libbpf's view: functions in a `SEC`), read
/// without loading anything: no privileges or kernel needed.
pub fn object_programs(object_name: &str, elf: &[u8]) -> Result<Vec<String>> {
    let mut builder = ObjectBuilder::default();
    builder.name(object_name).kernel(|| format!("open {object_name}"))?;
    let open = builder.open_memory(elf).map_err(|e| RuntimeError::BadObject {
        name: object_name.to_owned(),
        reason: format!("libbpf cannot read it: {e}"),
    })?;
    Ok(program_names(&open))
}

fn program_names(open: &libbpf_rs::OpenObject) -> Vec<String> {
    open.progs().map(|p| p.name().to_string_lossy().into_owned()).collect()
}

/// Loads again with verifier logs and finds the program that failed: the last one
/// libbpf got to (it loads in order and stops at the first failure).
fn explain(req: &LoadRequest<'_>) -> Option<VerifierFailure> {
    let mut logs = Vec::new();
    let err = match open_and_load(req, Some(&mut logs)) {
        Ok(_) => return None,
        Err(e) => e,
    };
    let (program, buf) = logs.iter().rev().find(|(_, buf)| buf.first().is_some_and(|b| *b != 0))?;
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let log = String::from_utf8_lossy(&buf[..end]);
    let error = match &err {
        RuntimeError::Kernel { cause, .. } => cause.to_string(),
        other => other.to_string(),
    };
    Some(VerifierFailure::from_log(program, req.object_name, &error, &log))
}

fn pin_paths(req: &LoadRequest<'_>) -> Result<Vec<PathBuf>> {
    let Maps::Pin(pin) = req.maps else { return Ok(Vec::new()) };
    let open = ObjectBuilder::default().open_memory(req.elf).kernel(|| format!("open {}", req.object_name))?;
    Ok(open
        .maps()
        .map(|m| m.name().to_string_lossy().into_owned())
        .filter(|n| is_package_map(n))
        .filter_map(|n| pin(&n))
        .collect())
}

fn existing_pins(req: &LoadRequest<'_>) -> Result<Vec<(PathBuf, bool)>> {
    Ok(pin_paths(req)?.into_iter().map(|p| (p.clone(), p.exists())).collect())
}

fn remove_new_pins(before: &[(PathBuf, bool)]) {
    for (path, existed) in before {
        if !existed && path.exists() {
            let _ = std::fs::remove_file(path);
        }
    }
}
