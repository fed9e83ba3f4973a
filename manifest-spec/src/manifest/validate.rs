//! Checks a raw manifest against the rules of SPEC.md, collecting every problem.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use semver::{Version, VersionReq};
use toml::Spanned;

use super::model::*;
use super::raw::*;
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::names::{ItemName, NameError, PackageName};
use crate::registry_id::RegistryId;
use crate::types::{KernelVersion, RelPath, Sha256Digest};

/// Most keywords a package may list, and their longest length (as on crates.io).
const MAX_KEYWORDS: usize = 5;
const MAX_KEYWORD_LEN: usize = 20;
const MAX_DESCRIPTION_LEN: usize = 1000;
/// Longest `[package.kernel] reason`: it is one line of an error message.
const MAX_KERNEL_REASON: usize = 200;

/// Program types as `enum bpf_prog_type` names them, without `BPF_PROG_TYPE_`.
const PROGRAM_TYPES: &[&str] = &[
    "socket_filter",
    "kprobe",
    "sched_cls",
    "sched_act",
    "tracepoint",
    "xdp",
    "perf_event",
    "cgroup_skb",
    "cgroup_sock",
    "lwt_in",
    "lwt_out",
    "lwt_xmit",
    "sock_ops",
    "sk_skb",
    "cgroup_device",
    "sk_msg",
    "raw_tracepoint",
    "cgroup_sock_addr",
    "lwt_seg6local",
    "lirc_mode2",
    "sk_reuseport",
    "flow_dissector",
    "cgroup_sysctl",
    "raw_tracepoint_writable",
    "cgroup_sockopt",
    "tracing",
    "struct_ops",
    "ext",
    "lsm",
    "sk_lookup",
    "syscall",
    "netfilter",
];

pub(crate) struct Checker<'a> {
    file: &'a str,
    source: &'a str,
    pub diags: Vec<Diagnostic>,
}

impl<'a> Checker<'a> {
    pub fn new(file: &'a str, source: &'a str) -> Self {
        Checker { file, source, diags: Vec::new() }
    }

    fn error(&mut self, span: Range<usize>, message: impl Into<String>, help: Option<String>) {
        let mut d = Diagnostic::new(self.file, self.source, span, message);
        d.help = help;
        self.diags.push(d);
    }

    pub fn manifest(&mut self, raw: RawManifest) -> Option<Manifest> {
        let package = self.package(raw.package);
        let dependencies = self.dependencies(raw.dependencies, package.as_ref().map(|p| &p.name));
        let programs: Vec<Program> = raw.programs.into_iter().filter_map(|p| self.program(p)).collect();
        let loaders: Vec<Loader> = raw.loaders.into_iter().filter_map(|l| self.loader(l)).collect();
        let chains: Vec<Chain> = raw.chains.into_iter().filter_map(|c| self.chain(c)).collect();
        let reexports = self.reexports(raw.reexports, &dependencies);
        let manifest = Manifest { package: package?, dependencies, reexports, programs, loaders, chains };
        self.diags.is_empty().then_some(manifest)
    }

    /// Reports a duplicate item name (programs, loaders, chains and re-exports share
    /// one namespace, because chain scripts import them by name).
    fn unique_item(&mut self, seen: &mut HashMap<String, usize>, name: &Spanned<String>, what: &str, scope: &str) {
        let here = name.span().start;
        let first = *seen.entry(name.get_ref().clone()).or_insert(here);
        if first != here {
            let first_line = crate::diagnostic::line_col(self.source, first).0;
            self.error(
                name.span(),
                format!("{what} `{}` is defined twice in {scope}", name.get_ref()),
                Some(format!("the first definition is on line {first_line}; rename one of them")),
            );
        }
    }

    fn package(&mut self, raw: RawPackage) -> Option<Package> {
        let name = self.package_name(&raw.name);
        let version = self.version(&raw.version);
        let description = raw.description.and_then(|d| {
            let text = d.get_ref().trim();
            if text.is_empty() {
                self.error(d.span(), "description is empty", Some("write one sentence or remove the key".into()));
                None
            } else if text.chars().count() > MAX_DESCRIPTION_LEN {
                self.error(
                    d.span(),
                    format!("description is longer than {MAX_DESCRIPTION_LEN} characters"),
                    Some("keep it to a sentence or two; put the rest in the README".into()),
                );
                None
            } else {
                Some(text.to_owned())
            }
        });
        let license = raw.license.and_then(|l| self.license(&l));
        let mut authors = Vec::new();
        for a in raw.authors {
            if a.get_ref().trim().is_empty() {
                self.error(a.span(), "author is empty", Some("write a name, e.g. \"Ada <ada@example.org>\"".into()));
            } else {
                authors.push(a.get_ref().trim().to_owned());
            }
        }
        let repository = raw.repository.and_then(|u| self.url(&u, "repository", &["https", "http"]));
        let homepage = raw.homepage.and_then(|u| self.url(&u, "homepage", &["https", "http"]));
        let keywords = self.keywords(raw.keywords);
        let readme = raw.readme.and_then(|r| self.rel_path(&r, "readme"));
        let hike_sdk = raw.hike_sdk.and_then(|r| self.version_req(&r, "hike-sdk"));
        let kernel = raw.kernel.map(|k| self.kernel(k)).unwrap_or_default();
        Some(Package {
            name: name?,
            version: version?,
            description,
            license,
            authors,
            repository,
            homepage,
            keywords,
            readme,
            hike_sdk,
            kernel,
        })
    }

    fn name_error(&mut self, span: Range<usize>, what: &str, e: NameError) {
        let help = e.help();
        self.error(span, format!("{what} {e}"), help);
    }

    fn package_name(&mut self, raw: &Spanned<String>) -> Option<PackageName> {
        PackageName::new(raw.get_ref()).map_err(|e| self.name_error(raw.span(), "package", e)).ok()
    }

    fn item_name(&mut self, raw: &Spanned<String>, what: &str) -> Option<ItemName> {
        ItemName::new(raw.get_ref()).map_err(|e| self.name_error(raw.span(), what, e)).ok()
    }

    fn version(&mut self, raw: &Spanned<String>) -> Option<Version> {
        let text = raw.get_ref();
        match Version::parse(text) {
            Ok(v) => Some(v),
            Err(e) => {
                let help = suggest_version(text)
                    .map(|s| format!("write \"{s}\""))
                    .unwrap_or_else(|| format!("{e}; write MAJOR.MINOR.PATCH, e.g. \"0.1.0\""));
                self.error(raw.span(), format!("version \"{text}\" is not semver"), Some(help));
                None
            }
        }
    }

    fn version_req(&mut self, raw: &Spanned<String>, what: &str) -> Option<VersionReq> {
        let text = raw.get_ref();
        match VersionReq::parse(text) {
            Ok(r) => Some(r),
            Err(e) => {
                self.error(
                    raw.span(),
                    format!("{what} requirement \"{text}\" is not a semver requirement: {e}"),
                    Some("write e.g. \"1.2\" (same as \"^1.2\"), \"~1.2.3\", \"1.*\" or \">=1.2, <2\"".into()),
                );
                None
            }
        }
    }

    fn license(&mut self, raw: &Spanned<String>) -> Option<String> {
        let text = raw.get_ref();
        match spdx::Expression::parse(text) {
            Ok(_) => Some(text.clone()),
            Err(e) => {
                let help = match spdx::Expression::canonicalize(text) {
                    Ok(Some(canonical)) => format!("write \"{canonical}\""),
                    _ => "write an SPDX expression, e.g. \"MIT OR Apache-2.0\" or \"GPL-2.0-only\"".into(),
                };
                self.error(
                    raw.span(),
                    format!("license \"{text}\" is not an SPDX expression: {}", e.reason),
                    Some(help),
                );
                None
            }
        }
    }

    /// A link shown to people (the catalog, `ebpkg info`): a web URL with a host,
    /// no credentials, and no character a URL may not hold as written (quotes,
    /// angle brackets, spaces: what would break out of an HTML attribute).
    fn url(&mut self, raw: &Spanned<String>, what: &str, schemes: &[&str]) -> Option<String> {
        let text = raw.get_ref();
        let unsafe_char = text.chars().find(|c| c.is_whitespace() || c.is_control() || "\"'<>`{}|\\^".contains(*c));
        if let Some(c) = unsafe_char {
            self.error(
                raw.span(),
                format!("{what} URL \"{}\" holds {c:?}, which a URL may not hold as written", text.escape_debug()),
                Some("percent-encode it (e.g. %22 for a quote), or leave it out".into()),
            );
            return None;
        }
        if text.len() > 2048 {
            self.error(raw.span(), format!("{what} URL is {} bytes long (at most 2048)", text.len()), None);
            return None;
        }
        match url::Url::parse(text) {
            Ok(u) if !schemes.contains(&u.scheme()) => {
                self.error(
                    raw.span(),
                    format!("{what} URL \"{text}\" has scheme `{}`", u.scheme()),
                    Some(format!("use one of: {}", schemes.join(", "))),
                );
                None
            }
            Ok(u) if u.host_str().is_none_or(str::is_empty) || !u.username().is_empty() || u.password().is_some() => {
                self.error(
                    raw.span(),
                    format!("{what} URL \"{text}\" must name a host and hold no user name or password"),
                    Some("write a public web address, e.g. \"https://github.com/me/my-package\"".into()),
                );
                None
            }
            Ok(_) => Some(text.clone()),
            Err(e) => {
                self.error(
                    raw.span(),
                    format!("{what} \"{text}\" is not a URL: {e}"),
                    Some("write a full URL, e.g. \"https://github.com/me/my-package\"".into()),
                );
                None
            }
        }
    }

    /// The registry a dependency names, by the rules of every registry URL
    /// ([`RegistryId::parse_url`]): what installers will read it from.
    fn registry(&mut self, raw: &Spanned<String>, dependency: &PackageName) -> Option<RegistryId> {
        let text = raw.get_ref();
        if text.len() > 2048 {
            let message =
                format!("dependency `{dependency}`: registry URL is {} bytes long (at most 2048)", text.len());
            self.error(raw.span(), message, None);
            return None;
        }
        RegistryId::parse_url(text)
            .map_err(|e| self.error(raw.span(), format!("dependency `{dependency}`: {e}"), None))
            .ok()
    }

    fn keywords(&mut self, raw: Vec<Spanned<String>>) -> Vec<String> {
        if let Some(extra) = raw.get(MAX_KEYWORDS) {
            self.error(
                extra.span(),
                format!("too many keywords: {} (at most {MAX_KEYWORDS})", raw.len()),
                Some("keep the most specific ones".into()),
            );
        }
        let mut out = Vec::new();
        for k in raw.into_iter().take(MAX_KEYWORDS) {
            let text = k.get_ref();
            let ok_chars = text.chars().all(|c| c.is_ascii_alphanumeric() || "-_+".contains(c));
            let ok_start = text.starts_with(|c: char| c.is_ascii_alphanumeric());
            if text.is_empty() || text.len() > MAX_KEYWORD_LEN || !ok_chars || !ok_start {
                self.error(
                    k.span(),
                    format!("keyword \"{text}\" is not valid"),
                    Some(format!(
                        "keywords are 1–{MAX_KEYWORD_LEN} ASCII letters, digits, `-`, `_` or `+`, starting with a letter or digit"
                    )),
                );
            } else {
                out.push(text.clone());
            }
        }
        out
    }

    fn rel_path(&mut self, raw: &Spanned<String>, what: &str) -> Option<RelPath> {
        RelPath::new(raw.get_ref())
            .map_err(|e| {
                self.error(
                    raw.span(),
                    format!("{what} {e}"),
                    Some("write a path inside the package, such as \"src/my_program.bpf.c\"".into()),
                )
            })
            .ok()
    }

    fn kernel(&mut self, raw: RawKernel) -> KernelReq {
        let min_given = raw.min.is_some();
        let min = raw.min.and_then(|m| {
            KernelVersion::parse(m.get_ref())
                .ok_or_else(|| {
                    let text = m.get_ref();
                    let help = match KernelVersion::from_uname(text) {
                        Some(v) => format!("write \"{v}\""),
                        None => "write MAJOR.MINOR, e.g. \"5.15\"".into(),
                    };
                    self.error(m.span(), format!("kernel version \"{text}\" is not like \"5.15\""), Some(help));
                })
                .ok()
        });
        let reason = raw.reason.and_then(|r| {
            let text = r.get_ref().trim();
            let problem = if !min_given {
                Some("`reason` says why `min` is what it is: set `min` too")
            } else if text.is_empty() || text.len() > MAX_KERNEL_REASON || text.contains(['\n', '\r']) {
                Some("`reason` is a few words on one line (at most 200 characters)")
            } else {
                None
            };
            match problem {
                Some(problem) => {
                    self.error(
                        r.span(),
                        problem.to_owned(),
                        Some("e.g. reason = \"counts with atomic compare-and-exchange (BPF_ATOMIC)\"".into()),
                    );
                    None
                }
                None => Some(text.to_owned()),
            }
        });
        let mut program_types = Vec::new();
        for t in raw.program_types {
            let text = t.get_ref().to_ascii_lowercase();
            let text = text.trim_start_matches("bpf_prog_type_").to_owned();
            if PROGRAM_TYPES.contains(&text.as_str()) {
                program_types.push(text);
            } else {
                let help = match did_you_mean(&text, PROGRAM_TYPES.iter().copied()) {
                    Some(best) => format!("did you mean \"{best}\"?"),
                    None => "use a name of `enum bpf_prog_type` without BPF_PROG_TYPE_, e.g. \"xdp\"".into(),
                };
                self.error(t.span(), format!("unknown program type \"{}\"", t.get_ref()), Some(help));
            }
        }
        let mut helpers = Vec::new();
        for h in raw.helpers {
            let text = h.get_ref();
            let ok = text.starts_with("bpf_")
                && text.len() <= 128
                && text.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if ok {
                helpers.push(text.clone());
            } else {
                self.error(
                    h.span(),
                    format!("\"{text}\" is not a BPF helper or kfunc name"),
                    Some("write the function's name as the kernel spells it, e.g. \"bpf_fib_lookup\"".into()),
                );
            }
        }
        let build = match raw.build {
            None => KernelBuild::Portable,
            Some(b) => match b.get_ref().as_str() {
                "portable" => KernelBuild::Portable,
                "local" => KernelBuild::Local,
                other => {
                    self.error(
                        b.span(),
                        format!("unknown build \"{other}\""),
                        Some(
                            "write \"portable\" (one object for every kernel, the default) or \"local\" (built \
                             against the running kernel's own types)"
                                .into(),
                        ),
                    );
                    KernelBuild::Portable
                }
            },
        };
        KernelReq { min, reason, program_types, helpers, build }
    }

    fn dependencies(
        &mut self,
        raw: BTreeMap<Spanned<String>, Spanned<RawDependency>>,
        own: Option<&PackageName>,
    ) -> BTreeMap<PackageName, Dependency> {
        let mut out = BTreeMap::new();
        let mut seen: HashMap<String, String> = HashMap::new();
        // BTreeMap order is by name; report in source order instead.
        let mut raw: Vec<_> = raw.into_iter().collect();
        raw.sort_by_key(|(k, _)| k.span().start);
        for (key, value) in raw {
            let Some(name) = self.package_name(&key) else { continue };
            if own.is_some_and(|own| own.normalized() == name.normalized()) {
                self.error(key.span(), format!("package `{name}` depends on itself"), Some("remove this line".into()));
                continue;
            }
            if let Some(other) = seen.insert(name.normalized(), name.to_string()) {
                self.error(
                    key.span(),
                    format!("dependency `{name}` is the same package as `{other}`"),
                    Some("package names differing only in case or `-`/`_` are the same package; keep one".into()),
                );
                continue;
            }
            let value_span = value.span();
            let (req, registry) = match value.into_inner() {
                RawDependency::Req(r) => (Spanned::new(value_span, r), None),
                RawDependency::Table(t) => (t.version, t.registry),
            };
            let version = self.version_req(&req, &format!("dependency `{name}`"));
            let registry = match registry {
                None => Some(None),
                Some(r) => self.registry(&r, &name).map(Some),
            };
            if let (Some(version), Some(registry)) = (version, registry) {
                out.insert(name, Dependency { version, registry });
            }
        }
        out
    }

    fn reexports(
        &mut self,
        raw: BTreeMap<Spanned<String>, Vec<Spanned<String>>>,
        dependencies: &BTreeMap<PackageName, Dependency>,
    ) -> BTreeMap<PackageName, Vec<ItemName>> {
        let mut out = BTreeMap::new();
        let mut raw: Vec<_> = raw.into_iter().collect();
        raw.sort_by_key(|(k, _)| k.span().start);
        for (dep, names) in raw {
            let Some(dep_name) = self.package_name(&dep) else { continue };
            if !dependencies.contains_key(&dep_name) {
                let help = match did_you_mean(dep_name.as_str(), dependencies.keys().map(PackageName::as_str)) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!("add `{dep_name}` to [dependencies] first"),
                };
                self.error(dep.span(), format!("re-exports from `{dep_name}`, which is not a dependency"), Some(help));
                continue;
            }
            let items: Vec<ItemName> = names.iter().filter_map(|n| self.item_name(n, "re-exported program")).collect();
            out.insert(dep_name, items);
        }
        out
    }

    fn prebuilt(&mut self, raw: RawPrebuilt) -> Option<Prebuilt> {
        let object = self.rel_path(&raw.object, "prebuilt object");
        let sha256 = Sha256Digest::from_hex(raw.sha256.get_ref())
            .ok_or_else(|| {
                self.error(
                    raw.sha256.span(),
                    format!("sha256 \"{}\" is not 64 hex digits", raw.sha256.get_ref()),
                    Some("write the output of `sha256sum <object>`".into()),
                )
            })
            .ok();
        Some(Prebuilt { object: object?, sha256: sha256? })
    }

    fn code_origin(
        &mut self,
        what: &str,
        name: &Spanned<String>,
        source: Option<Spanned<String>>,
        prebuilt: Option<RawPrebuilt>,
    ) -> (Option<RelPath>, Option<Prebuilt>) {
        if source.is_none() && prebuilt.is_none() {
            self.error(
                name.span(),
                format!("{what} `{}` has neither `source` nor `prebuilt`", name.get_ref()),
                Some(format!("add `source = \"src/{}.bpf.c\"`", name.get_ref())),
            );
        }
        let source = source.and_then(|s| self.rel_path(&s, &format!("source of {what} `{}`:", name.get_ref())));
        let prebuilt = prebuilt.and_then(|p| self.prebuilt(p));
        (source, prebuilt)
    }

    fn program(&mut self, raw: RawProgram) -> Option<Program> {
        let name = self.item_name(&raw.name, "program");
        let (source, prebuilt) = self.code_origin("program", &raw.name, raw.source, raw.prebuilt);
        if raw.args.len() > MAX_PROGRAM_ARGS {
            let extra = &raw.args[MAX_PROGRAM_ARGS];
            self.error(
                extra.name.span(),
                format!(
                    "program `{}` takes {} arguments; HIKe programs take at most {MAX_PROGRAM_ARGS}",
                    raw.name.get_ref(),
                    raw.args.len()
                ),
                Some("pass more data through a map or the per-CPU scratch area".into()),
            );
        }
        let mut seen = HashMap::new();
        let mut args = Vec::new();
        for a in raw.args {
            self.unique_item(&mut seen, &a.name, "argument", &format!("program `{}`", raw.name.get_ref()));
            let doc = self.doc(a.doc, &a.name, "argument");
            if let (Some(n), Some(doc)) = (self.item_name(&a.name, "argument"), doc) {
                args.push(Arg { name: n, ty: a.ty, doc });
            }
        }
        let returns = raw.returns.and_then(|r| {
            let doc = self.doc(r.doc, &raw.name, "result of program");
            doc.map(|doc| Returns { ty: r.ty, doc })
        });
        let maps = self.maps(raw.maps, &format!("program `{}`", raw.name.get_ref()), false);
        Some(Program {
            name: name?,
            source,
            prebuilt,
            hook: raw.hook,
            description: raw.description.map(|d| d.trim().to_owned()).filter(|d| !d.is_empty()),
            ends_packet: raw.ends_packet.unwrap_or_default(),
            returns,
            args,
            maps: maps.into_iter().collect(),
        })
    }

    fn doc(&mut self, doc: String, owner: &Spanned<String>, what: &str) -> Option<String> {
        let doc = doc.trim();
        if doc.is_empty() {
            self.error(
                owner.span(),
                format!("{what} `{}` has an empty `doc`", owner.get_ref()),
                Some("say what it means: users read it in `ebpkg info` and chain errors".into()),
            );
            return None;
        }
        Some(doc.to_owned())
    }

    fn fields(&mut self, raw: Vec<RawField>, map: &Spanned<String>, part: &str) -> Vec<crate::manifest::Field> {
        if raw.is_empty() {
            self.error(
                map.span(),
                format!("map `{}` has an empty `{part}`", map.get_ref()),
                Some(format!("list its fields, e.g. {part} = [{{ name = \"id\", type = \"u32\" }}]")),
            );
        }
        let mut seen = HashMap::new();
        let mut out = Vec::new();
        for f in raw {
            self.unique_item(&mut seen, &f.name, "field", &format!("the {part} of map `{}`", map.get_ref()));
            if let Some(name) = self.item_name(&f.name, "field") {
                out.push(crate::manifest::Field {
                    name,
                    ty: f.ty,
                    doc: f.doc.map(|d| d.trim().to_owned()).filter(|d| !d.is_empty()),
                });
            }
        }
        out
    }

    /// Checks maps; for loaders (`config`), key and value layouts are required.
    fn maps(&mut self, raw: Vec<RawMap>, owner: &str, config: bool) -> Vec<MapDoc> {
        let mut seen = HashMap::new();
        let mut out = Vec::new();
        for m in raw {
            self.unique_item(&mut seen, &m.name, "map", owner);
            let name = self.item_name(&m.name, "map");
            if m.name.get_ref().starts_with(hike_bytecode::vm_maps::PREFIX) {
                self.error(
                    m.name.span(),
                    format!(
                        "map `{}` of {owner} starts with `{}`, which is reserved for the HIKe VM's maps",
                        m.name.get_ref(),
                        hike_bytecode::vm_maps::PREFIX
                    ),
                    Some(
                        "rename the map, here and in the C code; programs use the VM's maps without declaring them"
                            .into(),
                    ),
                );
            }
            let doc = self.doc(m.doc, &m.name, "map");
            if config {
                for (part, present) in [("key", m.key.is_some()), ("value", m.value.is_some())] {
                    if !present {
                        self.error(
                            m.name.span(),
                            format!("loader map `{}` has no `{part}` layout", m.name.get_ref()),
                            Some(format!(
                                "chain scripts write this map, so describe it: {part} = [{{ name = \"id\", type = \"u32\" }}]"
                            )),
                        );
                    }
                }
            }
            let key = m.key.map(|k| self.fields(k, &m.name, "key"));
            let value = m.value.map(|v| self.fields(v, &m.name, "value"));
            if config && let Some(on_upgrade) = &m.on_upgrade {
                self.error(
                    on_upgrade.span(),
                    format!("loader map `{}` has `on-upgrade`", m.name.get_ref()),
                    Some("chain scripts fill loader maps on every install; `on-upgrade` is for program maps".into()),
                );
            }
            let on_upgrade = m.on_upgrade.map(Spanned::into_inner).unwrap_or_default();
            if let (Some(name), Some(doc)) = (name, doc) {
                out.push(MapDoc { name, doc, key, value, on_upgrade });
            }
        }
        out
    }

    fn loader(&mut self, raw: RawLoader) -> Option<Loader> {
        let name = self.item_name(&raw.name, "loader");
        let (source, prebuilt) = self.code_origin("loader", &raw.name, raw.source, raw.prebuilt);
        let maps = self
            .maps(raw.maps, &format!("loader `{}`", raw.name.get_ref()), true)
            .into_iter()
            .filter_map(|m| Some(ConfigMap { name: m.name, doc: m.doc, key: m.key?, value: m.value? }))
            .collect();
        Some(Loader {
            name: name?,
            source,
            prebuilt,
            hook: raw.hook,
            description: raw.description.map(|d| d.trim().to_owned()).filter(|d| !d.is_empty()),
            maps,
        })
    }

    fn chain(&mut self, raw: RawChain) -> Option<Chain> {
        let name = self.item_name(&raw.name, "chain");
        let source = self.rel_path(&raw.source, &format!("source of chain `{}`:", raw.name.get_ref()));
        Some(Chain {
            name: name?,
            source: source?,
            description: raw.description.map(|d| d.trim().to_owned()).filter(|d| !d.is_empty()),
        })
    }

    /// Checks names shared across programs, loaders, chains and re-exports.
    pub fn item_namespace(&mut self, raw: &RawManifest) {
        let mut seen = HashMap::new();
        for (what, name) in raw
            .programs
            .iter()
            .map(|p| ("program", &p.name))
            .chain(raw.loaders.iter().map(|l| ("loader", &l.name)))
            .chain(raw.chains.iter().map(|c| ("chain", &c.name)))
            .chain(raw.reexports.values().flatten().map(|n| ("re-exported program", n)))
        {
            self.unique_item(&mut seen, name, what, "this package");
        }
    }
}

/// "1.2" → "1.2.0", "v1.2.3" → "1.2.3", "1" → "1.0.0": the likely intended version.
fn suggest_version(text: &str) -> Option<String> {
    let t = text.trim().trim_start_matches(['v', 'V', '=']);
    let numeric = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let parts: Vec<&str> = t.split('.').collect();
    let fixed = match parts.as_slice() {
        [a] if numeric(a) => format!("{a}.0.0"),
        [a, b] if numeric(a) && numeric(b) => format!("{a}.{b}.0"),
        _ => t.to_owned(),
    };
    // Leading zeros are not semver either: 01.2.3 → 1.2.3.
    let fixed = fixed
        .split('.')
        .map(|p| match p.trim_start_matches('0') {
            "" if numeric(p) => "0".to_owned(),
            t if numeric(p) => t.to_owned(),
            _ => p.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(".");
    (fixed != text && Version::parse(&fixed).is_ok()).then_some(fixed)
}

#[cfg(test)]
mod tests {
    use super::suggest_version;

    #[test]
    fn version_suggestions() {
        assert_eq!(suggest_version("1.2").as_deref(), Some("1.2.0"));
        assert_eq!(suggest_version("1").as_deref(), Some("1.0.0"));
        assert_eq!(suggest_version("v1.2.3").as_deref(), Some("1.2.3"));
        assert_eq!(suggest_version("01.2.3").as_deref(), Some("1.2.3"));
        assert_eq!(suggest_version("banana"), None);
    }
}
