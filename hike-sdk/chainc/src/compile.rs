//! Compiling a whole script: imports checked against the packages it may use,
//! constants, chains (in any order), loader configuration and attach statements,
//! recursion, and the order chains must be installed in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};

use hike_bytecode::limits::MAX_DEPTH;
use hike_bytecode::{AttachMode, Hook};

use crate::artifact::{Artifact, Attach, CompiledChain, Device, FieldValue, LoaderConfig, MapEntry, Target};
use crate::ast::*;
use crate::codegen::{Scope, compile_def};
use crate::consteval::fold_const;
use crate::cost::{ChainCost, Cost, Names, analyse_chain};
use crate::diag::{Code, Diagnostics, Sink, Span, did_you_mean, source_text};
use crate::env::{CompileEnv, LoaderSig, ProgramSig};
use crate::parser::is_constant_name;
use crate::types::{BUILT_INS, FieldType, IntType};

/// A successful compilation: the artifact and any warnings.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub artifact: Artifact,
    pub warnings: Diagnostics,
    /// For each chain that can return, the least it costs to run it to its end
    /// (instructions executed, its callees' included, and program calls): the
    /// lower bound the compiler checked against the VM's limits (CHAINS.md §5).
    pub least: BTreeMap<String, Cost>,
}

/// [`compile`] for a script's bytes as read from its file: bytes that are not
/// UTF-8 are reported (E001) at the line and column of the first bad byte.
pub fn compile_bytes(source: &[u8], file: &str, env: &CompileEnv) -> Result<Compiled, Diagnostics> {
    compile(source_text(source, file)?, file, env)
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
    let mut compiler = Compiler { env, sink: &mut sink, file, least: BTreeMap::new() };
    let artifact = compiler.script(&script);
    let least = std::mem::take(&mut compiler.least);
    let diags = sink.finish();
    match artifact {
        Some(artifact) if !diags.has_errors() => Ok(Compiled { artifact, warnings: diags, least }),
        _ => Err(diags),
    }
}

struct Compiler<'a, 'b, 's> {
    env: &'a CompileEnv,
    sink: &'b mut Sink<'s>,
    file: &'a str,
    least: BTreeMap<String, Cost>,
}

/// A chain compiled, with what the checks over the call graph need.
struct Unit<'d> {
    chain: CompiledChain,
    def: &'d Def,
    /// Chains it calls, with the place of the first call.
    calls: BTreeMap<String, Span>,
    consts: HashMap<String, u64>,
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
        let mut def_spans: HashMap<&str, Span> = HashMap::new();
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
                    if let Some(first) = def_spans.get(d.name.text.as_str()) {
                        let (line, _) = self.sink.line_col(first.start);
                        self.sink
                            .report(
                                Code::Duplicate,
                                d.name.span.clone(),
                                format!("chain `{}` is defined twice", d.name.text),
                            )
                            .help(format!("the first definition is on line {line}; rename one"));
                        continue;
                    }
                    if IntType::from_name(&d.name.text).is_some() || BUILT_INS.contains(&d.name.text.as_str()) {
                        self.sink
                            .report(
                                Code::Reserved,
                                d.name.span.clone(),
                                format!("`{}` is a type or built-in and cannot name a chain", d.name.text),
                            )
                            .help("rename the chain");
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
                    def_spans.insert(d.name.text.as_str(), d.name.span.clone());
                    defs.push(d);
                }
                Item::Const { name, value } => {
                    if let Some(first) = const_spans.get(&name.text) {
                        let (line, _) = self.sink.line_col(first.start);
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
        };

        let mut compiled: Vec<Unit<'_>> = Vec::new();
        let mut used_programs: BTreeSet<String> = BTreeSet::new();
        for d in &defs {
            let (chain, uses) = compile_def(d, &scope, self.sink);
            used_programs.extend(uses.programs);
            if let Some(mut chain) = chain {
                chain.nargs = d.params.len() as u8;
                compiled.push(Unit { chain, def: d, calls: uses.chains, consts: uses.consts });
            }
        }

        let mut configs: Vec<LoaderConfig> = Vec::new();
        let mut config_index: HashMap<(String, String), usize> = HashMap::new();
        let mut attaches = Vec::new();
        let mut params = BTreeSet::new();
        let mut used_loaders = BTreeSet::new();
        for item in &script.items {
            match item {
                Item::LoaderConfig { loader, map, entries, .. } => {
                    if let Some(cfg) = self.loader_config(loader, map, entries, &loaders, &consts, &chain_params) {
                        used_loaders.insert(loader.text.clone());
                        match config_index.get(&(cfg.loader.clone(), cfg.map.clone())) {
                            Some(&i) => configs[i].entries.extend(cfg.entries),
                            None => {
                                config_index.insert((cfg.loader.clone(), cfg.map.clone()), configs.len());
                                configs.push(cfg);
                            }
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
        let order = self.order(&compiled)?;
        if self.sink.has_errors() {
            return None;
        }
        self.call_depth(&compiled, &order);
        self.costs(&compiled, &order, &programs, &consts);
        if self.sink.has_errors() {
            return None;
        }
        // Unused imports are worth a warning on a script that otherwise compiles
        // (here); next to errors they are noise.
        for (name, span) in &import_spans {
            if !used_programs.contains(name) && !used_loaders.contains(name) {
                self.sink
                    .report(Code::UnusedImport, span.clone(), format!("`{name}` is imported but never used"))
                    .help("remove it from the import");
            }
        }

        let mut by_index: Vec<Option<CompiledChain>> = compiled.into_iter().map(|u| Some(u.chain)).collect();
        let chains = order.into_iter().filter_map(|i| by_index[i].take()).collect();
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
                let (line, _) = self.sink.line_col(first.start);
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
        let mut seen_keys: HashMap<Vec<FieldValue>, Span> = HashMap::new();
        for e in entries {
            let key = self.fields(&e.key, &layout.key, "key", map, &e.span, consts, chains);
            let value = self.fields(&e.value, &layout.value, "value", map, &e.span, consts, chains);
            let (Some(key), Some(value)) = (key, value) else { continue };
            if let Some(first) = seen_keys.get(&key) {
                let (line, _) = self.sink.line_col(first.start);
                self.sink
                    .report(Code::Duplicate, e.span.clone(), "this key is configured twice")
                    .help(format!("the first entry with it is on line {line}"));
                continue;
            }
            seen_keys.insert(key.clone(), e.span.clone());
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
            FieldType::U8
            | FieldType::U16
            | FieldType::U32
            | FieldType::U64
            | FieldType::S8
            | FieldType::S16
            | FieldType::S32
            | FieldType::S64 => {
                let t = ty.int()?;
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
        let modes: Vec<&str> = AttachMode::of_hook(sig.hook).map(AttachMode::name).collect();
        let mode = match &args[1].kind {
            ExprKind::Str(m) if let Some(mode) = AttachMode::from_name(m).filter(|x| x.hook() == sig.hook) => mode,
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

    /// Orders chains so that each comes after the chains it calls (as indexes
    /// into `compiled`), refusing cycles. Iterative: the call graph can be as deep
    /// as the script is long.
    fn order(&mut self, compiled: &[Unit<'_>]) -> Option<Vec<usize>> {
        let index: HashMap<&str, usize> =
            compiled.iter().enumerate().map(|(i, u)| (u.chain.name.as_str(), i)).collect();
        let callees: Vec<Vec<usize>> =
            compiled.iter().map(|u| u.calls.keys().filter_map(|c| index.get(c.as_str()).copied()).collect()).collect();
        let mut state = vec![0u8; compiled.len()]; // 0 new, 1 in progress, 2 done
        let mut out = Vec::with_capacity(compiled.len());
        for root in 0..compiled.len() {
            if state[root] != 0 {
                continue;
            }
            // The path from `root`, each chain with the next callee to visit.
            let mut path: Vec<(usize, usize)> = vec![(root, 0)];
            state[root] = 1;
            while let Some(&mut (i, ref mut next)) = path.last_mut() {
                let Some(&j) = callees[i].get(*next) else {
                    state[i] = 2;
                    out.push(i);
                    path.pop();
                    continue;
                };
                *next += 1;
                match state[j] {
                    0 => {
                        state[j] = 1;
                        path.push((j, 0));
                    }
                    1 => {
                        let from = path.iter().position(|(p, _)| *p == j).unwrap_or(0);
                        let mut cycle: Vec<usize> = path[from..].iter().map(|(p, _)| *p).collect();
                        cycle.push(j);
                        let names: Vec<&str> = cycle.iter().map(|c| compiled[*c].chain.name.as_str()).collect();
                        let first = &compiled[cycle[0]];
                        self.sink
                            .report(
                                Code::Recursion,
                                first.def.name.span.clone(),
                                format!("chain `{}` calls itself: {}", names[0], names.join(" → ")),
                            )
                            .help("chains cannot recurse; use a loop");
                        return None;
                    }
                    _ => {}
                }
            }
        }
        Some(out)
    }

    /// Refuses chains whose calls nest deeper than the VM's frames (the
    /// runtime's validator would refuse them at install). `order`: callees
    /// first. Reported where the limit is crossed: at the call, in the chain one
    /// frame too deep.
    fn call_depth(&mut self, compiled: &[Unit<'_>], order: &[usize]) {
        let index: HashMap<&str, usize> =
            compiled.iter().enumerate().map(|(i, u)| (u.chain.name.as_str(), i)).collect();
        // Frames with the chain on top, and the callee that makes them.
        let mut depth: Vec<(usize, Option<usize>)> = vec![(1, None); compiled.len()];
        for &i in order {
            let deepest = compiled[i]
                .calls
                .keys()
                .filter_map(|c| index.get(c.as_str()).copied())
                .max_by_key(|j| (depth[*j].0, std::cmp::Reverse(*j)));
            if let Some(j) = deepest {
                depth[i] = (depth[j].0 + 1, Some(j));
            }
        }
        for &i in order {
            let (frames, Some(callee)) = depth[i] else { continue };
            if frames != MAX_DEPTH + 1 {
                continue;
            }
            let mut path = vec![compiled[i].chain.name.as_str()];
            let mut at = Some(callee);
            while let Some(j) = at {
                path.push(compiled[j].chain.name.as_str());
                at = depth[j].1;
            }
            let callee_name = &compiled[callee].chain.name;
            let span = compiled[i].calls.get(callee_name).cloned().unwrap_or(compiled[i].def.name.span.clone());
            self.sink
                .report(
                    Code::CallTooDeep,
                    span,
                    format!(
                        "chain calls nest {frames} deep here ({}), but the VM runs at most {MAX_DEPTH} chain frames",
                        path.join(" → ")
                    ),
                )
                .help(format!(
                    "a chain started by a loader can call chains at most {} levels deep: merge some of these chains, \
                     or call them one after another instead of inside each other",
                    MAX_DEPTH - 1
                ));
        }
    }

    /// The cost analysis over the call graph (crate::cost), callees first.
    fn costs(
        &mut self,
        compiled: &[Unit<'_>],
        order: &[usize],
        programs: &HashMap<String, (ProgramSig, Target)>,
        consts: &HashMap<String, u64>,
    ) {
        let mut done: HashMap<String, ChainCost> = HashMap::new();
        for &i in order {
            let u = &compiled[i];
            let names = Names { programs, chains: &done, consts, local_consts: &u.consts };
            let cost = analyse_chain(u.def, &names, self.env.budget, self.sink);
            if let Some(run) = cost.run {
                self.least.insert(u.chain.name.clone(), run);
            }
            done.insert(u.chain.name.clone(), cost);
        }
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
        FieldType::Chain
        | FieldType::U8
        | FieldType::U16
        | FieldType::U32
        | FieldType::U64
        | FieldType::S8
        | FieldType::S16
        | FieldType::S32
        | FieldType::S64 => None,
    }
}
