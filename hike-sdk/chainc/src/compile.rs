//! Compiling a whole script: imports checked against the packages it may use,
//! constants, chains (in any order), loader configuration and attach statements,
//! recursion, and the order chains must be installed in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};

use hike_bytecode::Hook;

use crate::artifact::{Artifact, Attach, CompiledChain, Device, FieldValue, LoaderConfig, MapEntry, Target};
use crate::ast::*;
use crate::codegen::{Scope, compile_def, fold_const};
use crate::diag::{Code, Diagnostics, Sink, Span, did_you_mean, line_col};
use crate::env::{CompileEnv, LoaderSig, ProgramSig};
use crate::parser::is_constant_name;
use crate::types::FieldType;

/// A successful compilation: the artifact and any warnings.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub artifact: Artifact,
    pub warnings: Diagnostics,
}

/// Compiles `source` (named `file` in messages) against `env`. Errors come back
/// all at once, with the warnings found so far.
pub fn compile(source: &str, file: &str, env: &CompileEnv) -> Result<Compiled, Diagnostics> {
    let mut sink = Sink::new(file, source);
    let tokens = crate::lexer::lex(source, &mut sink);
    let script = crate::parser::parse(tokens, &mut sink);
    // Names and types mean little in a script that does not parse: report the
    // syntax errors alone rather than what follows from them.
    if sink.has_errors() {
        return Err(sink.finish());
    }
    let artifact = Compiler { env, sink: &mut sink, file }.script(&script);
    let diags = sink.finish();
    match artifact {
        Some(artifact) if !diags.has_errors() => Ok(Compiled { artifact, warnings: diags }),
        _ => Err(diags),
    }
}

struct Compiler<'a, 'b, 's> {
    env: &'a CompileEnv,
    sink: &'b mut Sink<'s>,
    file: &'a str,
}

fn normalize(name: &str) -> String {
    name.to_ascii_lowercase().replace('-', "_")
}

impl Compiler<'_, '_, '_> {
    fn script(&mut self, script: &Script) -> Option<Artifact> {
        let mut programs: HashMap<String, (ProgramSig, Target)> = HashMap::new();
        let mut loaders: HashMap<String, LoaderSig> = HashMap::new();
        let mut import_spans: BTreeMap<String, Span> = BTreeMap::new();
        let mut consts: HashMap<String, u64> = HashMap::new();
        let mut const_spans: HashMap<String, Span> = HashMap::new();
        let mut defs: Vec<&Def> = Vec::new();
        let mut chain_params: HashMap<String, usize> = HashMap::new();
        // Names whose import failed: already reported, not "unknown" again.
        let mut broken: BTreeSet<String> = BTreeSet::new();

        // Declarations first: chains may be used before their `def`.
        for item in &script.items {
            match item {
                Item::Import { kind, package, names, .. } => {
                    self.import(*kind, package, names, &mut programs, &mut loaders, &mut import_spans);
                    for n in names {
                        if !programs.contains_key(&n.text) && !loaders.contains_key(&n.text) {
                            broken.insert(n.text.clone());
                        }
                    }
                }
                Item::Def(d) => {
                    if let Some(first) = defs.iter().find(|o| o.name.text == d.name.text) {
                        let (line, _) = line_col(self.sink.source, first.name.span.start);
                        self.sink
                            .report(
                                Code::Duplicate,
                                d.name.span.clone(),
                                format!("chain `{}` is defined twice", d.name.text),
                            )
                            .help(format!("the first definition is on line {line}; rename one"));
                        continue;
                    }
                    if programs.contains_key(&d.name.text) || loaders.contains_key(&d.name.text) {
                        self.sink
                            .report(
                                Code::Duplicate,
                                d.name.span.clone(),
                                format!("chain `{}` has the name of an imported program or loader", d.name.text),
                            )
                            .help("rename the chain");
                        continue;
                    }
                    chain_params.insert(d.name.text.clone(), d.params.len());
                    defs.push(d);
                }
                Item::Const { name, value } => {
                    if let Some(first) = const_spans.get(&name.text) {
                        let (line, _) = line_col(self.sink.source, first.start);
                        self.sink
                            .report(
                                Code::ConstantReassigned,
                                name.span.clone(),
                                format!("constant `{}` is assigned again", name.text),
                            )
                            .help(format!("it was set on line {line}"));
                        continue;
                    }
                    match fold_const(value, &|n| consts.get(n).copied()) {
                        Some(v) => {
                            consts.insert(name.text.clone(), v);
                            const_spans.insert(name.text.clone(), name.span.clone());
                        }
                        None => {
                            self.sink
                                .report(
                                    Code::NotConstant,
                                    value.span.clone(),
                                    format!("constant `{}` must be given a value known when compiling", name.text),
                                )
                                .help(
                                    "top-level UPPERCASE names are constants: numbers, other constants and operators",
                                );
                        }
                    }
                }
                Item::LoaderConfig { .. } | Item::Attach { .. } => {}
            }
        }

        let hook = self.hook(&programs, &loaders, &import_spans)?;
        let loader_names: BTreeSet<String> = loaders.keys().cloned().collect();
        let scope = Scope {
            programs: &programs,
            chains: &chain_params,
            consts: &consts,
            loaders: &loader_names,
            broken: &broken,
            budget: self.env.budget,
        };

        let mut compiled: Vec<(CompiledChain, BTreeSet<String>, Span)> = Vec::new();
        let mut used_programs: BTreeSet<String> = BTreeSet::new();
        for d in &defs {
            let (chain, uses) = compile_def(d, &scope, self.sink);
            used_programs.extend(uses.programs);
            if let Some(mut chain) = chain {
                chain.nargs = d.params.len() as u8;
                compiled.push((chain, uses.chains, d.name.span.clone()));
            }
        }

        let mut configs: Vec<LoaderConfig> = Vec::new();
        let mut attaches = Vec::new();
        let mut params = BTreeSet::new();
        let mut used_loaders = BTreeSet::new();
        for item in &script.items {
            match item {
                Item::LoaderConfig { loader, map, entries, .. } => {
                    if let Some(cfg) = self.loader_config(loader, map, entries, &loaders, &consts, &chain_params) {
                        used_loaders.insert(loader.text.clone());
                        match configs.iter_mut().find(|c| c.loader == cfg.loader && c.map == cfg.map) {
                            Some(existing) => existing.entries.extend(cfg.entries),
                            None => configs.push(cfg),
                        }
                    }
                }
                Item::Attach { loader, args, span } => {
                    if let Some(a) = self.attach(loader, args, span, &loaders) {
                        used_loaders.insert(loader.text.clone());
                        if let Device::Param(p) = &a.device {
                            params.insert(p.clone());
                        }
                        attaches.push(a);
                    }
                }
                _ => {}
            }
        }
        // Unused imports are worth a warning on a script that otherwise compiles;
        // next to errors they are noise.
        let clean = !self.sink.has_errors();
        for (name, span) in import_spans.iter().filter(|_| clean) {
            if !used_programs.contains(name) && !used_loaders.contains(name) {
                self.sink
                    .report(Code::UnusedImport, span.clone(), format!("`{name}` is imported but never used"))
                    .help("remove it from the import");
            }
        }

        let chains = self.order(compiled)?;
        if self.sink.has_errors() {
            return None;
        }
        Some(Artifact {
            file: self.file.to_owned(),
            hook,
            chains,
            loader_configs: configs,
            attaches,
            params: params.into_iter().collect(),
        })
    }

    fn import(
        &mut self,
        kind: ImportKind,
        package: &Name,
        names: &[Name],
        programs: &mut HashMap<String, (ProgramSig, Target)>,
        loaders: &mut HashMap<String, LoaderSig>,
        spans: &mut BTreeMap<String, Span>,
    ) {
        let key = normalize(&package.text);
        let Some(exports) = self.env.packages.get(&key) else {
            let d = self.sink.report(
                Code::NotADependency,
                package.span.clone(),
                format!("package `{}` is not a dependency of this project", package.text),
            );
            match did_you_mean(&key, self.env.packages.keys().map(String::as_str)) {
                Some(best) => {
                    d.help(format!("did you mean `{best}`? Otherwise add it with `ebpkg add {}`", package.text))
                }
                None => d.help(format!("add it with `ebpkg add {}`", package.text)),
            };
            return;
        };
        for n in names {
            if let Some(first) = spans.get(&n.text) {
                let (line, _) = line_col(self.sink.source, first.start);
                self.sink
                    .report(Code::Duplicate, n.span.clone(), format!("`{}` is imported twice", n.text))
                    .help(format!("it is already imported on line {line}"));
                continue;
            }
            match kind {
                ImportKind::Programs => match exports.programs.get(&n.text) {
                    Some(sig) => {
                        let target = Target::Program { package: sig.package.clone(), name: n.text.clone() };
                        programs.insert(n.text.clone(), (sig.clone(), target));
                        spans.insert(n.text.clone(), n.span.clone());
                    }
                    None => {
                        let d = self.sink.report(
                            Code::NotExported,
                            n.span.clone(),
                            format!("package `{}` has no program `{}`", exports.name, n.text),
                        );
                        if exports.loaders.contains_key(&n.text) {
                            d.help(format!(
                                "`{}` is a loader: import it with `from loaders.{} import {}`",
                                n.text, package.text, n.text
                            ));
                        } else {
                            match did_you_mean(&n.text, exports.programs.keys().map(String::as_str)) {
                                Some(best) => d.help(format!("did you mean `{best}`?")),
                                None => d.help(format!("its programs are: {}", list(exports.programs.keys()))),
                            };
                        }
                    }
                },
                ImportKind::Loaders => match exports.loaders.get(&n.text) {
                    Some(sig) => {
                        loaders.insert(n.text.clone(), sig.clone());
                        spans.insert(n.text.clone(), n.span.clone());
                    }
                    None => {
                        let d = self.sink.report(
                            Code::NotExported,
                            n.span.clone(),
                            format!("package `{}` has no loader `{}`", exports.name, n.text),
                        );
                        if exports.programs.contains_key(&n.text) {
                            d.help(format!(
                                "`{}` is a program: import it with `from prog.{} import {}`",
                                n.text, package.text, n.text
                            ));
                        } else {
                            match did_you_mean(&n.text, exports.loaders.keys().map(String::as_str)) {
                                Some(best) => d.help(format!("did you mean `{best}`?")),
                                None => d.help(format!("its loaders are: {}", list(exports.loaders.keys()))),
                            };
                        }
                    }
                },
            }
        }
    }

    /// The one hook of every imported program and loader (XDP when none says).
    fn hook(
        &mut self,
        programs: &HashMap<String, (ProgramSig, Target)>,
        loaders: &HashMap<String, LoaderSig>,
        spans: &BTreeMap<String, Span>,
    ) -> Option<Hook> {
        let mut hooks: Vec<(Hook, &String)> = programs.iter().map(|(n, (s, _))| (s.hook, n)).collect();
        hooks.extend(loaders.iter().map(|(n, s)| (s.hook, n)));
        hooks.sort_by_key(|(_, n)| spans.get(*n).map_or(0, |s| s.start));
        let Some((first, first_name)) = hooks.first().cloned() else { return Some(Hook::Xdp) };
        if let Some((other, name)) = hooks.iter().find(|(h, _)| *h != first) {
            let span = spans.get(*name).cloned().unwrap_or(0..0);
            let first_span = spans.get(first_name).cloned().unwrap_or(0..0);
            self.sink
                .report(
                    Code::HookMismatch,
                    span,
                    format!("`{name}` runs at {other}, but `{first_name}` runs at {first}"),
                )
                .help("a chain runs at one hook; use programs and loaders of the same hook")
                .note(first_span, format!("`{first_name}` is {first}"));
            return None;
        }
        Some(first)
    }

    fn loader_config(
        &mut self,
        loader: &Name,
        map: &Name,
        entries: &[Entry],
        loaders: &HashMap<String, LoaderSig>,
        consts: &HashMap<String, u64>,
        chains: &HashMap<String, usize>,
    ) -> Option<LoaderConfig> {
        let Some(sig) = loaders.get(&loader.text) else {
            let d =
                self.sink.report(Code::UnknownName, loader.span.clone(), format!("unknown loader `{}`", loader.text));
            match did_you_mean(&loader.text, loaders.keys().map(String::as_str)) {
                Some(b) => d.help(format!("did you mean `{b}`?")),
                None => d.help(format!("import it first: `from loaders.<package> import {}`", loader.text)),
            };
            return None;
        };
        let Some(layout) = sig.maps.get(&map.text) else {
            let d = self.sink.report(
                Code::UnknownName,
                map.span.clone(),
                format!("loader `{}` has no map `{}`", loader.text, map.text),
            );
            match did_you_mean(&map.text, sig.maps.keys().map(String::as_str)) {
                Some(b) => d.help(format!("did you mean `{b}`?")),
                None => d.help(format!("its maps are: {}", list(sig.maps.keys()))),
            };
            return None;
        };
        let mut out = Vec::new();
        let mut seen_keys: Vec<(Vec<FieldValue>, Span)> = Vec::new();
        for e in entries {
            let key = self.fields(&e.key, &layout.key, "key", map, &e.span, consts, chains);
            let value = self.fields(&e.value, &layout.value, "value", map, &e.span, consts, chains);
            let (Some(key), Some(value)) = (key, value) else { continue };
            if let Some((_, first)) = seen_keys.iter().find(|(k, _)| *k == key) {
                let (line, _) = line_col(self.sink.source, first.start);
                self.sink
                    .report(Code::Duplicate, e.span.clone(), "this key is configured twice")
                    .help(format!("the first entry with it is on line {line}"));
                continue;
            }
            seen_keys.push((key.clone(), e.span.clone()));
            out.push(MapEntry { key, value });
        }
        Some(LoaderConfig {
            package: sig.package.clone(),
            loader: loader.text.clone(),
            map: map.text.clone(),
            entries: out,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn fields(
        &mut self,
        exprs: &[Expr],
        layout: &[(String, FieldType)],
        part: &str,
        map: &Name,
        entry: &Span,
        consts: &HashMap<String, u64>,
        chains: &HashMap<String, usize>,
    ) -> Option<Vec<FieldValue>> {
        if exprs.len() != layout.len() {
            let shape = layout.iter().map(|(n, t)| format!("{n}: {}", t.name())).collect::<Vec<_>>().join(", ");
            self.sink
                .report(
                    Code::BadEntry,
                    entry.clone(),
                    format!("this {part} has {} field(s), but map `{}` takes ({shape})", exprs.len(), map.text),
                )
                .help(format!("write the {part} as a tuple of {} value(s)", layout.len()));
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for (e, (fname, ty)) in exprs.iter().zip(layout) {
            match self.field(e, fname, *ty, consts, chains) {
                Some(v) => out.push(v),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn field(
        &mut self,
        e: &Expr,
        fname: &str,
        ty: FieldType,
        consts: &HashMap<String, u64>,
        chains: &HashMap<String, usize>,
    ) -> Option<FieldValue> {
        let bad = |sink: &mut Sink<'_>, msg: String, help: &str| {
            sink.report(Code::BadEntry, e.span.clone(), msg).help(help.to_owned());
        };
        match ty {
            FieldType::Int(t) => {
                let Some(v) = fold_const(e, &|n| consts.get(n).copied()) else {
                    bad(
                        self.sink,
                        format!("field `{fname}` ({t}) needs a number known when compiling"),
                        "write a number or a constant",
                    );
                    return None;
                };
                let (lo, hi) = t.range();
                let as_num = if t.signed() { i128::from(v as i64) } else { i128::from(v) };
                if !(lo..=hi).contains(&as_num) {
                    bad(
                        self.sink,
                        format!("{as_num} does not fit in field `{fname}` ({t}, {lo}..={hi})"),
                        "use a value in range",
                    );
                    return None;
                }
                Some(FieldValue::Int { value: v, size: ty.size() })
            }
            FieldType::Chain => {
                let ExprKind::Name(n) = &e.kind else {
                    bad(
                        self.sink,
                        format!("field `{fname}` takes a chain's name"),
                        "write the name of a `def` of this script",
                    );
                    return None;
                };
                match chains.get(n) {
                    Some(0) => Some(FieldValue::Chain(n.clone())),
                    Some(k) => {
                        bad(
                            self.sink,
                            format!("chain `{n}` takes {k} argument(s), but loaders start chains without arguments"),
                            "start a chain without parameters that calls it",
                        );
                        None
                    }
                    None => {
                        let d = self.sink.report(Code::UnknownName, e.span.clone(), format!("unknown chain `{n}`"));
                        match did_you_mean(n, chains.keys().map(String::as_str)) {
                            Some(b) => d.help(format!("did you mean `{b}`?")),
                            None => d.help("define it with `def` in this script"),
                        };
                        None
                    }
                }
            }
            FieldType::Ipv4 | FieldType::Ipv6 | FieldType::Mac | FieldType::Ipv4Prefix | FieldType::Ipv6Prefix => {
                let ExprKind::Str(s) = &e.kind else {
                    bad(self.sink, format!("field `{fname}` ({}) is written as a string", ty.name()), example(ty));
                    return None;
                };
                match parse_address(s, ty) {
                    Some(bytes) => Some(FieldValue::Bytes(bytes)),
                    None => {
                        bad(
                            self.sink,
                            format!("\"{s}\" is not a valid {} for field `{fname}`", ty.name()),
                            example(ty),
                        );
                        None
                    }
                }
            }
        }
    }

    fn attach(
        &mut self,
        loader: &Name,
        args: &[Expr],
        span: &Span,
        loaders: &HashMap<String, LoaderSig>,
    ) -> Option<Attach> {
        let Some(sig) = loaders.get(&loader.text) else {
            let d =
                self.sink.report(Code::UnknownName, loader.span.clone(), format!("unknown loader `{}`", loader.text));
            match did_you_mean(&loader.text, loaders.keys().map(String::as_str)) {
                Some(b) => d.help(format!("did you mean `{b}`?")),
                None => d.help(format!("import it first: `from loaders.<package> import {}`", loader.text)),
            };
            return None;
        };
        if args.len() != 2 {
            self.sink
                .report(
                    Code::BadAttach,
                    span.clone(),
                    format!("attach takes a device and a mode, not {} argument(s)", args.len()),
                )
                .help(format!("e.g. `{}.attach('DEVNAME', 'xdp')`", loader.text));
            return None;
        }
        let device = match &args[0].kind {
            ExprKind::Str(s) if is_constant_name(s) => Device::Param(s.clone()),
            ExprKind::Name(n) if is_constant_name(n) => Device::Param(n.clone()),
            ExprKind::Str(s) if valid_ifname(s) => Device::Name(s.clone()),
            ExprKind::Str(s) => {
                self.sink
                    .report(Code::BadAttach, args[0].span.clone(), format!("\"{s}\" is not an interface name"))
                    .help("interface names are 1-15 characters without spaces or `/`; an UPPERCASE name is a parameter set at install time");
                return None;
            }
            _ => {
                self.sink
                    .report(
                        Code::BadAttach,
                        args[0].span.clone(),
                        "the device is an interface name in quotes, or an UPPERCASE parameter",
                    )
                    .help("e.g. 'eth0', or 'DEVNAME' bound with `ebpkg install --set DEVNAME=eth0`");
                return None;
            }
        };
        let modes: &[&str] = match sig.hook {
            Hook::Xdp => &["xdp", "xdpdrv", "xdpgeneric"],
            Hook::Tc => &["tc", "tc-egress"],
        };
        let mode = match &args[1].kind {
            ExprKind::Str(m) if modes.contains(&m.as_str()) => m.clone(),
            ExprKind::Str(m) => {
                let d = self.sink.report(
                    Code::BadAttach,
                    args[1].span.clone(),
                    format!("`{}` runs at {} and cannot attach in mode \"{m}\"", loader.text, sig.hook),
                );
                match did_you_mean(m, modes.iter().copied()) {
                    Some(b) => d.help(format!("did you mean \"{b}\"? (modes: {})", modes.join(", "))),
                    None => d.help(format!("modes for {}: {}", sig.hook, modes.join(", "))),
                };
                return None;
            }
            _ => {
                self.sink
                    .report(Code::BadAttach, args[1].span.clone(), "the mode is a string")
                    .help(format!("one of: {}", modes.join(", ")));
                return None;
            }
        };
        Some(Attach { package: sig.package.clone(), loader: loader.text.clone(), device, mode })
    }

    /// Orders chains so that each comes after the chains it calls, refusing cycles.
    fn order(&mut self, compiled: Vec<(CompiledChain, BTreeSet<String>, Span)>) -> Option<Vec<CompiledChain>> {
        let index: HashMap<String, usize> =
            compiled.iter().enumerate().map(|(i, (c, _, _))| (c.name.clone(), i)).collect();
        let mut state = vec![0u8; compiled.len()]; // 0 new, 1 in progress, 2 done
        let mut out = Vec::new();
        fn visit(
            i: usize,
            compiled: &[(CompiledChain, BTreeSet<String>, Span)],
            index: &HashMap<String, usize>,
            state: &mut [u8],
            path: &mut Vec<usize>,
            out: &mut Vec<usize>,
        ) -> Result<(), Vec<usize>> {
            if state[i] == 2 {
                return Ok(());
            }
            if state[i] == 1 {
                let from = path.iter().position(|p| *p == i).unwrap_or(0);
                let mut cycle = path[from..].to_vec();
                cycle.push(i);
                return Err(cycle);
            }
            state[i] = 1;
            path.push(i);
            for callee in &compiled[i].1 {
                if let Some(&j) = index.get(callee) {
                    visit(j, compiled, index, state, path, out)?;
                }
            }
            path.pop();
            state[i] = 2;
            out.push(i);
            Ok(())
        }
        for i in 0..compiled.len() {
            let mut path = Vec::new();
            if let Err(cycle) = visit(i, &compiled, &index, &mut state, &mut path, &mut out) {
                let names: Vec<&str> = cycle.iter().map(|c| compiled[*c].0.name.as_str()).collect();
                let first = cycle[0];
                self.sink
                    .report(
                        Code::Recursion,
                        compiled[first].2.clone(),
                        format!("chain `{}` calls itself: {}", names[0], names.join(" → ")),
                    )
                    .help("chains cannot recurse; use a loop");
                return None;
            }
        }
        let mut by_index: Vec<Option<CompiledChain>> = compiled.into_iter().map(|(c, _, _)| Some(c)).collect();
        Some(out.into_iter().filter_map(|i| by_index[i].take()).collect())
    }
}

fn list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = names.map(String::as_str).collect();
    if v.is_empty() { "(none)".into() } else { v.join(", ") }
}

fn valid_ifname(s: &str) -> bool {
    !s.is_empty() && s.len() <= 15 && !s.contains(['/', ' ', '\t', '\n']) && s != "." && s != ".."
}

fn example(ty: FieldType) -> &'static str {
    match ty {
        FieldType::Ipv4 => "e.g. \"192.0.2.1\"",
        FieldType::Ipv6 => "e.g. \"2001:db8::1\"",
        FieldType::Mac => "e.g. \"02:00:00:00:00:01\"",
        FieldType::Ipv4Prefix => "e.g. \"192.0.2.0/24\"",
        FieldType::Ipv6Prefix => "e.g. \"2001:db8::/32\"",
        _ => "",
    }
}

/// The bytes an address field holds: addresses in network order; prefixes as a
/// u32 prefix length (host order) then the address, as LPM-trie keys are.
pub fn parse_address(s: &str, ty: FieldType) -> Option<Vec<u8>> {
    match ty {
        FieldType::Ipv4 => s.parse::<Ipv4Addr>().ok().map(|a| a.octets().to_vec()),
        FieldType::Ipv6 => s.parse::<Ipv6Addr>().ok().map(|a| a.octets().to_vec()),
        FieldType::Mac => {
            let parts: Vec<&str> = s.split(':').collect();
            if parts.len() != 6 {
                return None;
            }
            parts.iter().map(|p| if p.len() == 2 { u8::from_str_radix(p, 16).ok() } else { None }).collect()
        }
        FieldType::Ipv4Prefix | FieldType::Ipv6Prefix => {
            let (addr, len) = s.split_once('/')?;
            let len: u32 = len.parse().ok()?;
            let (bytes, max) = if ty == FieldType::Ipv4Prefix {
                (addr.parse::<Ipv4Addr>().ok()?.octets().to_vec(), 32)
            } else {
                (addr.parse::<Ipv6Addr>().ok()?.octets().to_vec(), 128)
            };
            if len > max {
                return None;
            }
            let mut out = len.to_le_bytes().to_vec();
            out.extend(bytes);
            Some(out)
        }
        FieldType::Int(_) | FieldType::Chain => None,
    }
}
