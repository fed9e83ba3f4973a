//! Loader instances: a loader program with its own configuration maps, pinned under
//! `loaders/<instance>/`, configured (chain ids written into its maps) and then
//! attached to interfaces. Attaching is refused until the maps are written, so
//! traffic never reaches a loader that would let it bypass its chain.

use std::path::{Path, PathBuf};

use hike_bytecode::Hook;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use crate::abi;
use crate::error::{IoContext, KernelContext, Result, RuntimeError};
use crate::link::{self, AttachMode};
use crate::load::{self, LoadRequest};
use crate::meta::RecordState;
use crate::runtime::{Runtime, key, remove_tree};
use crate::sys;

/// Most configuration maps a loader can have.
pub const MAX_CONFIG_MAPS: usize = 8;
/// Most chain fields in one configuration map value.
pub const MAX_CHAIN_FIELDS: usize = 8;
const META_SIZE: usize = 1024;

/// A configuration map and where chain ids sit in its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMapSpec {
    pub name: String,
    /// Byte offsets of `u32` chain ids inside each value.
    pub chain_offsets: Vec<u32>,
}

/// A loader to load as a new instance.
#[derive(Debug, Clone)]
pub struct LoaderObject<'a> {
    /// The instance's name: one per (loader, configuration), e.g. `myproject.ip6_sc`.
    pub instance: &'a str,
    pub package: &'a str,
    pub version: &'a str,
    pub object_name: &'a str,
    pub elf: &'a [u8],
    /// The loader's program (function) name.
    pub program: &'a str,
    pub hook: Hook,
    pub config_maps: Vec<ConfigMapSpec>,
}

/// What is known of a loader instance.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LoaderInfo {
    pub instance: String,
    pub package: String,
    pub version: String,
    pub program: String,
    pub hook: Hook,
    pub configured: bool,
    pub maps: Vec<String>,
    pub attachments: Vec<Attachment>,
}

/// A loader attached to an interface.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Attachment {
    pub interface: String,
    pub mode: AttachMode,
    /// The link outlived its interface (deleted, perhaps re-created under the
    /// same name): no packet reaches the loader through it.
    pub defunct: bool,
}

/// One entry to write into a configuration map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoaderMeta {
    pub(crate) hook: Hook,
    configured: bool,
    package: String,
    version: String,
    program: String,
    pub(crate) maps: Vec<ConfigMapSpec>,
}

fn put(buf: &mut [u8], at: usize, cap: usize, s: &str) {
    let n = s.len().min(cap - 1);
    buf[at..at + n].copy_from_slice(&s.as_bytes()[..n]);
}

fn get(buf: &[u8], at: usize, cap: usize) -> String {
    let f = &buf[at..at + cap];
    let end = f.iter().position(|b| *b == 0).unwrap_or(cap);
    String::from_utf8_lossy(&f[..end]).into_owned()
}

impl LoaderMeta {
    fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; META_SIZE];
        b[0] = u8::from(self.hook == Hook::Tc);
        b[1] = u8::from(self.configured);
        b[2] = self.maps.len() as u8;
        put(&mut b, 8, 64, &self.package);
        put(&mut b, 72, 32, &self.version);
        put(&mut b, 104, 64, &self.program);
        for (i, m) in self.maps.iter().take(MAX_CONFIG_MAPS).enumerate() {
            let at = 168 + i * 64;
            put(&mut b, at, 32, &m.name);
            b[at + 40] = m.chain_offsets.len() as u8;
            for (j, off) in m.chain_offsets.iter().take(MAX_CHAIN_FIELDS).enumerate() {
                b[at + 44 + 2 * j..at + 46 + 2 * j].copy_from_slice(&(*off as u16).to_le_bytes());
            }
        }
        b
    }

    fn decode(b: &[u8]) -> Option<LoaderMeta> {
        if b.len() != META_SIZE {
            return None;
        }
        let maps = (0..usize::from(b[2]).min(MAX_CONFIG_MAPS))
            .map(|i| {
                let at = 168 + i * 64;
                let n = usize::from(b[at + 40]).min(MAX_CHAIN_FIELDS);
                ConfigMapSpec {
                    name: get(b, at, 32),
                    chain_offsets: (0..n)
                        .map(|j| u32::from(u16::from_le_bytes([b[at + 44 + 2 * j], b[at + 45 + 2 * j]])))
                        .collect(),
                }
            })
            .collect();
        Some(LoaderMeta {
            hook: if b[0] == 1 { Hook::Tc } else { Hook::Xdp },
            configured: b[1] == 1,
            package: get(b, 8, 64),
            version: get(b, 72, 32),
            program: get(b, 104, 64),
            maps,
        })
    }
}

impl Runtime {
    fn loader_meta_map(&self, instance: &str) -> Result<(PathBuf, MapHandle)> {
        let dir = self.layout.loader_dir(instance)?;
        let path = dir.join("meta");
        let map = MapHandle::from_pinned_path(&path)
            .map_err(|_| RuntimeError::NotFound(format!("loader instance `{instance}`")))?;
        Ok((dir, map))
    }

    pub(crate) fn loader_meta(&self, instance: &str) -> Result<(PathBuf, MapHandle, LoaderMeta)> {
        let (dir, map) = self.loader_meta_map(instance)?;
        let v = map.lookup(&key(0), MapFlags::ANY).kernel(|| format!("read loader {instance}"))?.unwrap_or_default();
        let meta = LoaderMeta::decode(&v)
            .ok_or_else(|| RuntimeError::NotFound(format!("loader instance `{instance}` (unreadable record)")))?;
        Ok((dir, map, meta))
    }

    /// Loads a loader as a new instance (not attached, maps empty). Loading an
    /// instance that already exists returns it unchanged.
    pub fn load_loader(&self, l: &LoaderObject<'_>) -> Result<LoaderInfo> {
        if l.config_maps.len() > MAX_CONFIG_MAPS
            || l.config_maps.iter().any(|m| m.chain_offsets.len() > MAX_CHAIN_FIELDS)
        {
            return Err(RuntimeError::Loader {
                loader: l.instance.to_owned(),
                reason: format!(
                    "at most {MAX_CONFIG_MAPS} configuration maps with {MAX_CHAIN_FIELDS} chain fields each"
                ),
            });
        }
        let dir = self.layout.loader_dir(l.instance)?;
        let _lock = self.lock()?;
        if dir.join("meta").exists() {
            drop(_lock);
            return self.loader_info(l.instance);
        }
        let maps_dir = dir.join("maps");
        std::fs::create_dir_all(&maps_dir).io("cannot create", &maps_dir)?;
        ebpkg_crashpoint::hit("loader-dir");
        let result = (|| -> Result<()> {
            let vm_dir = self.layout.vm_dir();
            let obj = load::load(&LoadRequest {
                object_name: &format!("{}@{} ({})", l.package, l.version, l.object_name),
                elf: l.elf,
                vm_dir: &vm_dir,
                maps: load::Maps::Pin(&|name| Some(maps_dir.join(name))),
                programs: &[l.program.to_owned()],
                // So that an upgrade can move the instance to new chains in place.
                mmapable: &l.config_maps.iter().map(|m| m.name.clone()).collect::<Vec<_>>(),
                runtime_object: false,
            })?;
            ebpkg_crashpoint::hit("loader-loaded");
            for spec in &l.config_maps {
                if !maps_dir.join(&spec.name).exists() {
                    return Err(RuntimeError::Loader {
                        loader: l.instance.to_owned(),
                        reason: format!("its object has no map `{}`", spec.name),
                    });
                }
            }
            let mut prog = obj.progs_mut().find(|p| p.name() == l.program).ok_or_else(|| RuntimeError::BadObject {
                name: l.object_name.to_owned(),
                reason: format!("no program `{}`", l.program),
            })?;
            let prog_pin = dir.join("prog");
            prog.pin(&prog_pin).kernel(|| format!("pin {}", prog_pin.display()))?;
            ebpkg_crashpoint::hit("loader-pinned");
            let meta = LoaderMeta {
                hook: l.hook,
                configured: l.config_maps.is_empty(),
                package: l.package.to_owned(),
                version: l.version.to_owned(),
                program: l.program.to_owned(),
                maps: l.config_maps.clone(),
            };
            let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
                sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
                ..Default::default()
            };
            let mut map = MapHandle::create(MapType::Array, Some("hike_loader"), 4, META_SIZE as u32, 1, &opts)
                .kernel(|| "create the loader record".into())?;
            map.update(&key(0), &meta.encode(), MapFlags::ANY).kernel(|| "write the loader record".into())?;
            let meta_path = dir.join("meta");
            map.pin(&meta_path).kernel(|| format!("pin {}", meta_path.display()))?;
            ebpkg_crashpoint::hit("loader-ready");
            Ok(())
        })();
        if let Err(e) = result {
            let _ = remove_tree(&dir);
            return Err(e);
        }
        drop(_lock);
        self.loader_info(l.instance)
    }

    /// Writes entries into a loader's configuration map. Every chain id in a value
    /// must name an installed chain of the loader's hook (0 means "no chain").
    pub fn configure_loader(&self, instance: &str, map: &str, entries: &[MapEntry]) -> Result<()> {
        let _lock = self.lock()?;
        let (dir, meta_map, mut meta) = self.loader_meta(instance)?;
        let spec = meta.maps.iter().find(|m| m.name == map).ok_or_else(|| RuntimeError::Loader {
            loader: instance.to_owned(),
            reason: format!(
                "it has no configuration map `{map}` (it has: {})",
                meta.maps.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        })?;
        let path = dir.join("maps").join(map);
        let handle = MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))?;
        self.check_entries(instance, &meta, spec, &handle, entries)?;
        for e in entries {
            handle.update(&e.key, &e.value, MapFlags::ANY).kernel(|| format!("write map `{map}` of {instance}"))?;
            ebpkg_crashpoint::hit("loader-entry");
        }
        if !meta.configured {
            meta.configured = true;
            meta_map.update(&key(0), &meta.encode(), MapFlags::ANY).kernel(|| "write the loader record".into())?;
        }
        Ok(())
    }

    /// Refuses entries of the wrong sizes for `handle`, or starting a chain that is
    /// not installed, of another hook, or that takes arguments.
    pub(crate) fn check_entries(
        &self,
        instance: &str,
        meta: &LoaderMeta,
        spec: &ConfigMapSpec,
        handle: &MapHandle,
        entries: &[MapEntry],
    ) -> Result<()> {
        let map = spec.name.as_str();
        let bad = |reason: String| RuntimeError::Loader { loader: instance.to_owned(), reason };
        for e in entries {
            if e.key.len() != handle.key_size() as usize || e.value.len() != handle.value_size() as usize {
                return Err(bad(format!(
                    "map `{map}` takes {}-byte keys and {}-byte values, not {} and {}",
                    handle.key_size(),
                    handle.value_size(),
                    e.key.len(),
                    e.value.len()
                )));
            }
            for off in &spec.chain_offsets {
                let chain = abi::u32_at(&e.value, *off as usize);
                if chain == 0 {
                    continue;
                }
                let cm = self.chain_meta(chain)?;
                if cm.state != RecordState::Ready {
                    return Err(bad(format!("map `{map}` would start chain id {chain}, which is not installed")));
                }
                if cm.hook != meta.hook {
                    return Err(bad(format!(
                        "chain {} is a {} chain; this loader runs at {}",
                        cm.name, cm.hook, meta.hook
                    )));
                }
                if cm.nargs != 0 {
                    return Err(bad(format!(
                        "chain {} takes {} argument(s), but loaders start chains without arguments",
                        cm.name, cm.nargs
                    )));
                }
            }
        }
        Ok(())
    }

    /// Attaches a loader instance to an interface. Refused until its configuration
    /// maps have been written. Attaching twice to the same interface is a no-op.
    pub fn attach_loader(&self, instance: &str, ifname: &str, mode: AttachMode) -> Result<()> {
        let _lock = self.lock()?;
        let (dir, _, meta) = self.loader_meta(instance)?;
        let bad = |reason: String| RuntimeError::Loader { loader: instance.to_owned(), reason };
        if mode.hook() != meta.hook {
            return Err(bad(format!("it runs at {}, so it cannot be attached in mode {}", meta.hook, mode.name())));
        }
        if !meta.configured {
            return Err(bad(
                "write its configuration maps before attaching it, so no packet can bypass its chain".into()
            ));
        }
        if link_pin(&dir, ifname)?.is_some() {
            return Ok(());
        }
        let ifindex =
            sys::ifindex(ifname).map_err(|cause| RuntimeError::NoInterface { name: ifname.to_owned(), cause })?;
        let pin = dir.join(format!("link@{ifname}@{}", mode.name()));
        ebpkg_crashpoint::hit("attaching");
        link::attach_and_pin(&dir.join("prog"), ifindex, mode, &pin).map_err(|e| {
            bad(match e.raw_os_error() {
                Some(16) | Some(17) => in_the_way(ifname, ifindex, mode, &e),
                Some(95) => format!("interface {ifname} does not support mode {}: {e}", mode.name()),
                _ => format!("cannot attach to {ifname}: {e}"),
            })
        })
    }

    /// Detaches a loader instance from an interface.
    pub fn detach_loader(&self, instance: &str, ifname: &str) -> Result<()> {
        let _lock = self.lock()?;
        let (dir, _, _) = self.loader_meta(instance)?;
        match link_pin(&dir, ifname)? {
            Some(pin) => std::fs::remove_file(&pin).io("cannot remove", &pin),
            None => Err(RuntimeError::NotFound(format!("attachment of {instance} to {ifname}"))),
        }
    }

    /// Replaces the program attached through `old` on `ifname` with instance
    /// `new`'s, atomically, and moves the attachment to `new`.
    ///
    /// Idempotent, so a process killed half-way can simply call it again (or call it
    /// with `old` and `new` swapped to go back): the link is updated first and its
    /// pin moved second, and the pin is looked for in both instances.
    pub fn switch_loader(&self, old: &str, new: &str, ifname: &str) -> Result<()> {
        let _lock = self.lock()?;
        let (old_dir, _, old_meta) = self.loader_meta(old)?;
        let (new_dir, _, new_meta) = self.loader_meta(new)?;
        if !new_meta.configured {
            return Err(RuntimeError::Loader {
                loader: new.to_owned(),
                reason: "write its configuration maps before switching to it".into(),
            });
        }
        if old_meta.hook != new_meta.hook {
            return Err(RuntimeError::Loader { loader: new.to_owned(), reason: "it runs at another hook".into() });
        }
        let pin = match link_pin(&new_dir, ifname)? {
            Some(pin) => pin,
            None => link_pin(&old_dir, ifname)?
                .ok_or_else(|| RuntimeError::NotFound(format!("attachment of {old} to {ifname}")))?,
        };
        link::update_link(&pin, &new_dir.join("prog")).io("cannot switch the link of", &pin)?;
        ebpkg_crashpoint::hit("switch-updated");
        let file = pin.file_name().map(|f| f.to_owned()).unwrap_or_default();
        let moved = new_dir.join(file);
        if moved != pin {
            std::fs::rename(&pin, &moved).io("cannot move", &pin)?;
        }
        Ok(())
    }

    /// Detaches and removes a loader instance with its maps.
    pub fn unload_loader(&self, instance: &str) -> Result<()> {
        let _lock = self.lock()?;
        let (dir, _, _) = self.loader_meta(instance)?;
        for pin in link_pins(&dir)? {
            std::fs::remove_file(&pin).io("cannot remove", &pin)?;
            ebpkg_crashpoint::hit("unload-detached");
        }
        // The record goes first: a directory without it is what `repair` removes.
        let meta = dir.join("meta");
        std::fs::remove_file(&meta).io("cannot remove", &meta)?;
        ebpkg_crashpoint::hit("unload-unrecorded");
        remove_tree(&dir).io("cannot remove", &dir)
    }

    /// What is known of one loader instance.
    pub fn loader_info(&self, instance: &str) -> Result<LoaderInfo> {
        let (dir, _, meta) = self.loader_meta(instance)?;
        let attachments = link_pins(&dir)?
            .iter()
            .filter_map(|p| {
                let name = p.file_name()?.to_string_lossy().into_owned();
                let rest = name.strip_prefix("link@")?;
                let (interface, mode) = rest.rsplit_once('@')?;
                let mode = AttachMode::from_name(mode)?;
                let defunct = link::link_ifindex(p).map_or(true, |i| i == 0);
                Some(Attachment { interface: interface.to_owned(), mode, defunct })
            })
            .collect();
        Ok(LoaderInfo {
            instance: instance.to_owned(),
            package: meta.package,
            version: meta.version,
            program: meta.program,
            hook: meta.hook,
            configured: meta.configured,
            maps: meta.maps.into_iter().map(|m| m.name).collect(),
            attachments,
        })
    }

    /// Every loader instance.
    pub fn loaders(&self) -> Result<Vec<LoaderInfo>> {
        let dir = self.layout.loaders_dir();
        let mut names: Vec<String> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(RuntimeError::Io { what: "cannot list", path: dir, cause: e }),
        };
        names.sort();
        names.into_iter().map(|n| self.loader_info(&n)).collect()
    }

    /// Every `(instance, map, key)` whose value starts chain `id`, as text.
    pub(crate) fn loader_entries_starting(&self, id: u32) -> Result<Vec<String>> {
        let mut out = Vec::new();
        self.for_each_loader_chain(|instance, map, k, chain, _| {
            if chain == id {
                out.push(format!("loader {instance} map {map} key {}", hex(k)));
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The entries of a loader instance's configuration map, sorted by key (an
    /// array's slots that hold only zeros are not entries: nothing wrote them).
    pub fn loader_config(&self, instance: &str, map: &str) -> Result<Vec<MapEntry>> {
        let dir = self.layout.loader_dir(instance)?;
        let path = dir.join("maps").join(crate::layout::component(map)?);
        let handle = MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))?;
        let array = matches!(handle.map_type(), libbpf_rs::MapType::Array | libbpf_rs::MapType::PercpuArray);
        let mut keys: Vec<Vec<u8>> = handle.keys().collect();
        keys.sort();
        let mut out = Vec::new();
        for key in keys {
            let Some(value) = handle.lookup(&key, MapFlags::ANY).kernel(|| format!("read {}", path.display()))? else {
                continue;
            };
            if array && value.iter().all(|b| *b == 0) {
                continue;
            }
            out.push(MapEntry { key, value });
        }
        Ok(out)
    }

    /// Points every loader entry that starts chain `old` at chain `new`.
    pub(crate) fn retarget_loader_entries(&self, old: u32, new: u32) -> Result<()> {
        let mut updates = Vec::new();
        self.for_each_loader_chain(|instance, map, k, chain, (value, off)| {
            if chain == old {
                let mut v = value.to_vec();
                v[off..off + 4].copy_from_slice(&new.to_le_bytes());
                updates.push((instance.to_owned(), map.to_owned(), k.to_vec(), v));
            }
            Ok(())
        })?;
        for (instance, map, k, v) in updates {
            let path = self.layout.loader_dir(&instance)?.join("maps").join(&map);
            let handle = MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))?;
            handle.update(&k, &v, MapFlags::EXIST).kernel(|| format!("switch {instance} {map} to chain {new}"))?;
            ebpkg_crashpoint::hit("retarget-entry");
        }
        Ok(())
    }

    /// Calls `f(instance, map, key, chain, (value, offset))` for every chain field
    /// of every configuration map entry.
    fn for_each_loader_chain(
        &self,
        mut f: impl FnMut(&str, &str, &[u8], u32, (&[u8], usize)) -> Result<()>,
    ) -> Result<()> {
        let dir = self.layout.loaders_dir();
        let Ok(rd) = std::fs::read_dir(&dir) else { return Ok(()) };
        for entry in rd.flatten() {
            let instance = entry.file_name().to_string_lossy().into_owned();
            let Ok((ldir, _, meta)) = self.loader_meta(&instance) else { continue };
            for spec in meta.maps.iter().filter(|m| !m.chain_offsets.is_empty()) {
                let path = ldir.join("maps").join(&spec.name);
                let handle = MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))?;
                for k in handle.keys() {
                    let Some(v) = handle.lookup(&k, MapFlags::ANY).kernel(|| format!("read {}", path.display()))?
                    else {
                        continue;
                    };
                    for off in &spec.chain_offsets {
                        let off = *off as usize;
                        if off + 4 <= v.len() {
                            f(&instance, &spec.name, &k, abi::u32_at(&v, off), (&v, off))?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn link_pins(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).io("cannot list", dir)?;
    let mut out: Vec<PathBuf> =
        rd.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("link@")).map(|e| e.path()).collect();
    out.sort();
    Ok(out)
}

fn link_pin(dir: &Path, ifname: &str) -> Result<Option<PathBuf>> {
    let prefix = format!("link@{ifname}@");
    Ok(link_pins(dir)?.into_iter().find(|p| p.file_name().is_some_and(|f| f.to_string_lossy().starts_with(&prefix))))
}

/// Why an attachment was refused because something else is attached: what it is
/// and who likely put it there, and how to see and remove it.
fn in_the_way(ifname: &str, ifindex: u32, mode: AttachMode, e: &std::io::Error) -> String {
    let what = match mode.hook() {
        Hook::Xdp => match link::attached_xdp(ifindex) {
            Some((id, name)) => {
                // libxdp's multi-program dispatcher: xdp-loader (or an application on libxdp) put it there.
                let by = if name.starts_with("xdp_dispatcher") {
                    "; it is libxdp's dispatcher (`xdp-loader status`; `xdp-loader unload --all` removes it)".to_owned()
                } else {
                    format!("; `ip link set dev {ifname} xdp off` removes it if nothing else owns it")
                };
                format!("XDP program {id} `{name}`{by}")
            }
            None => "an XDP program".to_owned(),
        },
        Hook::Tc => "a tc program".to_owned(),
    };
    format!(
        "interface {ifname} already has {what} attached for {} ({e}); `bpftool net show dev {ifname}` shows what is \
         attached, by whom (a link's owner) and how",
        mode.name()
    )
}
