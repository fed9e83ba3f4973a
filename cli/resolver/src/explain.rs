//! Turns PubGrub's derivation tree into an [`Explanation`]: numbered steps in terms of requirements as
//! written and real version numbers, then `help:` lines with fixes to try.
//!
//! 1. **Simplify.** Sets are over candidate indices, and PubGrub's sets also hold indices past the last
//!    candidate. Every term is clamped to the real candidates; a derived step whose clamped terms equal
//!    one of its causes' says nothing new (typically "there is no version past the last one") and is
//!    replaced by that cause.
//! 2. **Render** the steps like PubGrub's default reporter (each step combines two causes and concludes
//!    something), but every step is numbered and later steps refer back to them as "(step n)".
//!    A set is shown as the requirement text it came from when it equals one, else as versions.
//! 3. **Help** from the facts the steps used: pairs of requirements on one package that no choosable
//!    version satisfies together, requirements nothing matches, yanked versions, pre-releases.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use pubgrub::{DerivationTree, External, Map, Term, VersionSet};
use semver::Version;

use crate::catalog::{Catalog, Pkg, ROOT, Unavailable, View, matching};
use crate::error::Explanation;
use crate::model::Requirement;
use crate::suggest::{and_list, or_list};
use crate::version_set::IndexSet;

type Tree = DerivationTree<Pkg, IndexSet, Unavailable>;
type Ext = External<Pkg, IndexSet, Unavailable>;
type Terms = Vec<(Pkg, Term<IndexSet>)>;

#[derive(Clone)]
enum Node {
    Ext(Ext),
    Derived(Rc<Derived>),
}

struct Derived {
    terms: Terms,
    cause1: Node,
    cause2: Node,
}

/// Builds the explanation of `tree`.
pub(crate) fn explain(tree: &Tree, cat: &Catalog<'_>) -> Explanation {
    let mut simplifier = Simplifier { cat, memo: HashMap::new() };
    let node = simplifier.convert(tree);
    let mut externals = Vec::new();
    collect_externals(&node, &mut HashSet::new(), &mut externals);
    let texts = Texts::new(cat, &externals);
    let mut r = Renderer { cat, texts: &texts, steps: Vec::new(), lines: HashMap::new() };
    match &node {
        Node::Ext(e) => {
            let line = format!("Because {}, {}.", r.ext(e), r.conclusion(&ext_terms(e)));
            r.steps.push(line);
        }
        Node::Derived(d) => {
            r.build(d);
        }
    }
    let help = Helper { cat, out: Vec::new() }.run(&externals);
    Explanation { root: cat.request.root.to_string(), steps: r.steps, help }
}

/// The requirement texts a derivation involves, per required package, with the candidates each
/// matches: the root's own requirements first, then those of the dependency facts used. A set of
/// versions equal to one of these is shown as its text.
struct Texts(HashMap<Pkg, Vec<(IndexSet, String)>>);

impl Texts {
    fn new(cat: &Catalog<'_>, externals: &[Ext]) -> Self {
        let mut texts = Texts(HashMap::new());
        let root = cat.entry(ROOT);
        for r in root.deps(0) {
            if let Some(d) = cat.lookup(&r.pkg) {
                texts.add(cat, d, r);
            }
        }
        for e in externals {
            if let External::FromDependencyOf(p, sp, d, _) = e
                && let Some(id) = cat.id(*d)
            {
                for v in sp.members_below(cat.entry(*p).len()).rev() {
                    for r in cat.entry(*p).deps_on(v, id) {
                        texts.add(cat, *d, r);
                    }
                }
            }
        }
        texts
    }

    fn add(&mut self, cat: &Catalog<'_>, d: Pkg, r: &Requirement) {
        let set = matching(cat.entry(d), &r.req);
        let list = self.0.entry(d).or_default();
        if !list.iter().any(|(s, _)| *s == set) {
            list.push((set, r.req.text().to_owned()));
        }
    }

    fn get(&self, d: Pkg, set: &IndexSet) -> Option<&str> {
        self.0.get(&d)?.iter().find(|(s, _)| s == set).map(|(_, t)| t.as_str())
    }
}

// ---------------------------------------------------------------------------------------------------
// Simplification

struct Simplifier<'c, 'a> {
    cat: &'c Catalog<'a>,
    /// Converted shared subtrees, by PubGrub's shared id, so shared steps stay shared.
    memo: HashMap<usize, Node>,
}

impl Simplifier<'_, '_> {
    fn convert(&mut self, tree: &Tree) -> Node {
        let d = match tree {
            DerivationTree::External(e) => return Node::Ext(e.clone()),
            DerivationTree::Derived(d) => d,
        };
        if let Some(n) = d.shared_id.and_then(|id| self.memo.get(&id)) {
            return n.clone();
        }
        let c1 = self.convert(&d.cause1);
        let c2 = self.convert(&d.cause2);
        let terms = normalize(self.cat, &d.terms);
        let node = if self.terms_of(&c1) == terms {
            c1
        } else if self.terms_of(&c2) == terms {
            c2
        } else {
            Node::Derived(Rc::new(Derived { terms, cause1: c1, cause2: c2 }))
        };
        if let Some(id) = d.shared_id {
            self.memo.insert(id, node.clone());
        }
        node
    }

    fn terms_of(&self, node: &Node) -> Terms {
        match node {
            Node::Ext(e) => {
                let map: Map<Pkg, Term<IndexSet>> = ext_terms(e).into_iter().collect();
                normalize(self.cat, &map)
            }
            Node::Derived(d) => d.terms.clone(),
        }
    }
}

/// The terms of an external incompatibility.
fn ext_terms(e: &Ext) -> Terms {
    match e {
        External::NotRoot(p, v) => vec![(*p, Term::Negative(IndexSet::singleton(*v)))],
        External::NoVersions(p, s) | External::Custom(p, s, _) => vec![(*p, Term::Positive(s.clone()))],
        External::FromDependencyOf(p, sp, d, sd) => {
            let mut t = vec![(*p, Term::Positive(sp.clone()))];
            if !sd.is_empty() {
                t.push((*d, Term::Negative(sd.clone())));
            }
            t
        }
    }
}

/// Clamps every set to the package's real candidates, drops terms that always hold, sorts (root first,
/// then by name).
fn normalize(cat: &Catalog<'_>, terms: &Map<Pkg, Term<IndexSet>>) -> Terms {
    let mut out: Terms = Vec::with_capacity(terms.len());
    for (&p, t) in terms {
        let n = cat.entry(p).len();
        match t {
            Term::Positive(s) => out.push((p, Term::Positive(s.clamp(n)))),
            Term::Negative(s) => {
                let s = s.clamp(n);
                // "not in ∅" holds whatever is chosen.
                if !s.is_empty() {
                    out.push((p, Term::Negative(s)));
                }
            }
        }
    }
    out.sort_by_cached_key(|(p, _)| (*p != ROOT, cat.name(*p), *p));
    out
}

fn collect_externals(node: &Node, seen: &mut HashSet<*const Derived>, out: &mut Vec<Ext>) {
    match node {
        Node::Ext(e) => {
            if !out.iter().any(|x| same_ext(x, e)) {
                out.push(e.clone());
            }
        }
        Node::Derived(d) => {
            if seen.insert(Rc::as_ptr(d)) {
                collect_externals(&d.cause1, seen, out);
                collect_externals(&d.cause2, seen, out);
            }
        }
    }
}

fn same_ext(a: &Ext, b: &Ext) -> bool {
    match (a, b) {
        (External::NotRoot(p, v), External::NotRoot(q, w)) => p == q && v == w,
        (External::NoVersions(p, s), External::NoVersions(q, t)) => p == q && s == t,
        (External::Custom(p, s, m), External::Custom(q, t, n)) => p == q && s == t && m == n,
        (External::FromDependencyOf(p, sp, d, sd), External::FromDependencyOf(q, tq, e, te)) => {
            p == q && sp == tq && d == e && sd == te
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------------
// Rendering

struct Renderer<'c, 'a> {
    cat: &'c Catalog<'a>,
    texts: &'c Texts,
    steps: Vec<String>,
    /// The step (1-based) that concluded each derived node already explained.
    lines: HashMap<*const Derived, usize>,
}

impl Renderer<'_, '_> {
    /// Explains `d`; returns the number of the step that concludes it.
    fn build(&mut self, d: &Rc<Derived>) -> usize {
        self.build_helper(d);
        let line = self.steps.len();
        self.lines.insert(Rc::as_ptr(d), line);
        line
    }

    fn line_of(&self, node: &Node) -> Option<usize> {
        match node {
            Node::Derived(d) => self.lines.get(&Rc::as_ptr(d)).copied(),
            Node::Ext(_) => None,
        }
    }

    fn build_helper(&mut self, cur: &Derived) {
        let concl = self.conclusion(&cur.terms);
        match (&cur.cause1, &cur.cause2) {
            (Node::Ext(e1), Node::Ext(e2)) => {
                let (e1, e2) = reading_order(e1, e2);
                let line = format!("Because {}, {concl}.", self.ext_pair(e1, e2));
                self.steps.push(line);
            }
            (Node::Derived(d), Node::Ext(e)) | (Node::Ext(e), Node::Derived(d)) => self.one_each(d, e, &concl),
            (Node::Derived(d1), Node::Derived(d2)) => match (self.line_of(&cur.cause1), self.line_of(&cur.cause2)) {
                (Some(l1), Some(l2)) => {
                    let line = format!(
                        "Because {} (step {l1}) and {} (step {l2}), {concl}.",
                        self.conclusion(&d1.terms),
                        self.conclusion(&d2.terms)
                    );
                    self.steps.push(line);
                }
                (Some(l1), None) => {
                    self.build(d2);
                    self.and_ref(l1, d1, &concl);
                }
                (None, Some(l2)) => {
                    self.build(d1);
                    self.and_ref(l2, d2, &concl);
                }
                (None, None) => {
                    let l1 = self.build(d1);
                    self.build(d2);
                    self.and_ref(l1, d1, &concl);
                }
            },
        }
    }

    fn and_ref(&mut self, line: usize, d: &Derived, concl: &str) {
        let s = format!("And because {} (step {line}), {concl}.", self.conclusion(&d.terms));
        self.steps.push(s);
    }

    /// A derived cause and an external one.
    fn one_each(&mut self, d: &Rc<Derived>, e: &Ext, concl: &str) {
        if let Some(l) = self.lines.get(&Rc::as_ptr(d)).copied() {
            let s = format!("Because {} (step {l}) and {}, {concl}.", self.conclusion(&d.terms), self.ext(e));
            self.steps.push(s);
            return;
        }
        match (&d.cause1, &d.cause2) {
            // Chain the two externals in one sentence after explaining the prior derived cause.
            (Node::Derived(prior), Node::Ext(prior_e)) | (Node::Ext(prior_e), Node::Derived(prior)) => {
                self.build(prior);
                let (e1, e2) = reading_order(prior_e, e);
                let s = format!("And because {}, {concl}.", self.ext_pair(e1, e2));
                self.steps.push(s);
            }
            _ => {
                self.build(d);
                let s = format!("And because {}, {concl}.", self.ext(e));
                self.steps.push(s);
            }
        }
    }

    /// Two external facts: `E1 and E2`, or `app depends on a ^1 and b ^2` for two of the root's own
    /// requirements.
    fn ext_pair(&self, e1: &Ext, e2: &Ext) -> String {
        if let (External::FromDependencyOf(ROOT, s1, d1, t1), External::FromDependencyOf(ROOT, s2, d2, t2)) = (e1, e2) {
            let what1 = self.dependency(ROOT, s1, *d1, t1);
            let what2 = self.dependency(ROOT, s2, *d2, t2);
            return format!("{} depends on {what1} and {what2}", self.cat.name(ROOT));
        }
        format!("{} and {}", self.ext(e1), self.ext(e2))
    }

    /// What versions `sp` of `p` require of `d`: `meter ^1` (as written), with a note when nothing matches.
    fn dependency(&self, p: Pkg, sp: &IndexSet, d: Pkg, sd: &IndexSet) -> String {
        let cat = self.cat;
        let entry = cat.entry(d);
        let real = sd.clamp(entry.len());
        let what = match own_req_text(cat, p, sp, d, &real) {
            Some(text) => format!("{} {text}", cat.name(d)),
            None if real == IndexSet::interval(0, entry.len()) => cat.name(d),
            None => set_desc(cat, self.texts, d, &real),
        };
        let note = if entry.is_empty() {
            format!(" (no version of {} is published)", cat.name(d))
        } else if real.is_empty() {
            " (no published version matches)".to_owned()
        } else {
            String::new()
        };
        format!("{what}{note}")
    }

    /// One external fact, in words.
    fn ext(&self, e: &Ext) -> String {
        let cat = self.cat;
        match e {
            External::NotRoot(_, _) => {
                format!("{} {} is the project being resolved", cat.request.root, cat.request.root_version)
            }
            External::NoVersions(p, s) => {
                let entry = cat.entry(*p);
                let real: Vec<u32> = s.members_below(entry.len()).collect();
                let yanked: Vec<Cow<'_, Version>> =
                    real.iter().filter(|&&i| entry.is_yanked(i)).map(|&i| entry.version(i)).collect();
                if entry.is_empty() {
                    format!("no version of {} is published", cat.name(*p))
                } else if !yanked.is_empty() && yanked.len() == real.len() {
                    let verb = if yanked.len() == 1 { "is" } else { "are" };
                    format!("{} {} {verb} yanked", cat.name(*p), version_list(&yanked))
                } else {
                    format!("no version of {} can be chosen", versions_desc(cat, self.texts, *p, s))
                }
            }
            External::Custom(p, s, Unavailable::DependsOnItself) => {
                format!("{} depends on itself", dependent_desc(cat, *p, s))
            }
            External::FromDependencyOf(p, sp, d, sd) => {
                let who = if *p == ROOT { cat.name(ROOT) } else { dependent_desc(cat, *p, sp) };
                format!("{who} depends on {}", self.dependency(*p, sp, *d, sd))
            }
        }
    }

    /// What an incompatibility's terms conclude, in words.
    fn conclusion(&self, terms: &Terms) -> String {
        let cat = self.cat;
        let root = cat.name(ROOT);
        let root_pos = terms.iter().any(|(p, t)| *p == ROOT && matches!(t, Term::Positive(_)));
        let rest: Vec<&(Pkg, Term<IndexSet>)> = terms.iter().filter(|(p, _)| *p != ROOT).collect();
        match rest.as_slice() {
            [] => format!("{root}'s requirements cannot all be met"),
            [(p, Term::Positive(s))] if root_pos => {
                format!("{root} cannot use {}", versions_desc(cat, self.texts, *p, s))
            }
            [(p, Term::Positive(s))] if s.clamp(cat.entry(*p).len()) == IndexSet::interval(0, cat.entry(*p).len()) => {
                format!("no version of {} can be used", cat.name(*p))
            }
            [(p, Term::Positive(s))] => format!("{} cannot be used", versions_desc(cat, self.texts, *p, s)),
            [(p, Term::Negative(s))] if root_pos => format!("{root} requires {}", set_desc(cat, self.texts, *p, s)),
            [(p, Term::Negative(s))] => format!("{} is required", set_desc(cat, self.texts, *p, s)),
            [(p, Term::Positive(sp)), (q, Term::Negative(sq))] | [(q, Term::Negative(sq)), (p, Term::Positive(sp))] => {
                if root_pos {
                    format!(
                        "{root} can only use {} together with {}",
                        set_desc(cat, self.texts, *p, sp),
                        set_desc(cat, self.texts, *q, sq)
                    )
                } else {
                    format!("{} requires {}", dependent_desc(cat, *p, sp), set_desc(cat, self.texts, *q, sq))
                }
            }
            [(p, Term::Positive(sp)), (q, Term::Positive(sq))] => {
                let both = format!("{} and {}", some_of(cat, self.texts, *p, sp), some_of(cat, self.texts, *q, sq));
                if root_pos {
                    format!("{root} cannot use both {both}")
                } else {
                    format!("{both} cannot be used together")
                }
            }
            many => {
                let parts: Vec<String> = many
                    .iter()
                    .map(|(p, t)| match t {
                        Term::Positive(s) => versions_desc(cat, self.texts, *p, s),
                        Term::Negative(s) => format!("something other than {}", set_desc(cat, self.texts, *p, s)),
                    })
                    .collect();
                let prefix = if root_pos { format!("{root} cannot use ") } else { String::new() };
                format!("{prefix}{} together", and_list(&parts))
            }
        }
    }
}

/// The order two external facts read best in: the root's own requirements first, then along the chain
/// of dependencies (`a depends on b` before `b depends on c`).
fn reading_order<'e>(e1: &'e Ext, e2: &'e Ext) -> (&'e Ext, &'e Ext) {
    if involves_root(e2) && !involves_root(e1) {
        return (e2, e1);
    }
    match (e1, e2) {
        (External::FromDependencyOf(p1, ..), External::FromDependencyOf(_, _, d2, _))
            if d2 == p1 && !involves_root(e1) =>
        {
            (e2, e1)
        }
        _ => (e1, e2),
    }
}

fn involves_root(e: &Ext) -> bool {
    matches!(e, External::FromDependencyOf(p, ..) | External::NotRoot(p, _) if *p == ROOT)
}

/// A set of a package's versions that is required: `meter ^1.2` when a requirement the derivation
/// involves matches exactly these candidates, else as [`versions_desc`] shows them.
fn set_desc(cat: &Catalog<'_>, texts: &Texts, p: Pkg, s: &IndexSet) -> String {
    let real = s.clamp(cat.entry(p).len());
    match texts.get(p, &real).filter(|_| !real.is_empty()) {
        Some(text) => format!("{} {text}", cat.name(p)),
        None => versions_desc(cat, texts, p, s),
    }
}

/// A set of a package's versions that cannot be used: `meter 1.4.0` (one version),
/// `any version of meter`, `meter ^1.2` (a requirement's set), or `meter 1.0.0 | 1.2.0..=1.3.1`.
fn versions_desc(cat: &Catalog<'_>, texts: &Texts, p: Pkg, s: &IndexSet) -> String {
    let entry = cat.entry(p);
    let n = entry.len();
    let real = s.clamp(n);
    let name = cat.name(p);
    let members: Vec<u32> = real.members_below(n).collect();
    match members.as_slice() {
        [] => format!("{name} (no version)"),
        [one] => format!("{name} {}", entry.version(*one)),
        _ if real == IndexSet::interval(0, n) => format!("any version of {name}"),
        _ => match texts.get(p, &real) {
            Some(text) => format!("{name} {text}"),
            None => format!("{name} {}", runs(entry, &members)),
        },
    }
}

/// Like [`set_desc`], but just the name when the set holds every version (`ddos and shaper 2.0.0`).
fn some_of(cat: &Catalog<'_>, texts: &Texts, p: Pkg, s: &IndexSet) -> String {
    let n = cat.entry(p).len();
    if n > 1 && s.clamp(n) == IndexSet::interval(0, n) { cat.name(p) } else { versions_desc(cat, texts, p, s) }
}

/// The versions of a dependent package: `ddos 1.4.0`, `every version of ddos`, `ddos 1.0.0..=1.3.0`.
fn dependent_desc(cat: &Catalog<'_>, p: Pkg, s: &IndexSet) -> String {
    let entry = cat.entry(p);
    let n = entry.len();
    let members: Vec<u32> = s.members_below(n).collect();
    let name = cat.name(p);
    match members.as_slice() {
        [one] => format!("{name} {}", entry.version(*one)),
        _ if members.len() == n as usize && n > 0 => format!("every version of {name}"),
        _ => format!("{name} {}", runs(entry, &members)),
    }
}

/// Consecutive candidates as `a..=b` (three or more) or listed, runs separated by ` | `.
fn runs(entry: View<'_>, members: &[u32]) -> String {
    if members.is_empty() {
        return "(none)".to_owned();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut start = 0;
    for k in 1..=members.len() {
        if k == members.len() || members[k] != members[k - 1] + 1 {
            let run = &members[start..k];
            let v = |i: u32| entry.version(i).to_string();
            match run {
                [a, .., b] if run.len() >= 3 => parts.push(format!("{}..={}", v(*a), v(*b))),
                _ => parts.extend(run.iter().map(|&i| v(i))),
            }
            start = k;
        }
    }
    parts.join(" | ")
}

/// The requirement(s) the versions `sp` of `p` state on `d`, as written, when they match exactly `real`.
fn own_req_text(cat: &Catalog<'_>, p: Pkg, sp: &IndexSet, d: Pkg, real: &IndexSet) -> Option<String> {
    let dep_id = cat.id(d)?;
    let pe = cat.entry(p);
    let de = cat.entry(d);
    for i in sp.members_below(pe.len()).rev() {
        let reqs: Vec<_> = pe.deps_on(i, dep_id).collect();
        if reqs.is_empty() {
            continue;
        }
        let set = reqs.iter().fold(IndexSet::full().clamp(de.len()), |acc, r| acc.intersection(&matching(de, &r.req)));
        if set == *real {
            let texts: Vec<&str> = reqs.iter().map(|r| r.req.text()).collect();
            return Some(texts.join(", "));
        }
    }
    None
}

/// `1.0.0`, `1.0.0 and 1.2.0`, `1.0.0, 1.2.0 and 2.0.0`, `1.0.0, …, 2.0.0 (7 versions)`.
fn version_list(versions: &[Cow<'_, Version>]) -> String {
    let s: Vec<String> = versions.iter().map(|v| v.to_string()).collect();
    match s.len() {
        0..=4 => and_list(&s),
        n => format!("{}, …, {} ({n} versions)", s[0], s[n - 1]),
    }
}

// ---------------------------------------------------------------------------------------------------
// Help

/// At most this many `help:` lines.
const MAX_HELP: usize = 6;

struct Helper<'c, 'a> {
    cat: &'c Catalog<'a>,
    out: Vec<String>,
}

/// A dependency edge used by the derivation: versions `sp` of `p` require `set` of `d`.
struct Edge {
    p: Pkg,
    sp: IndexSet,
    d: Pkg,
    set: IndexSet,
}

impl Helper<'_, '_> {
    fn push(&mut self, s: String) {
        if !self.out.contains(&s) {
            self.out.push(s);
        }
    }

    fn run(mut self, externals: &[Ext]) -> Vec<String> {
        let cat = self.cat;
        let mut edges: Vec<Edge> = Vec::new();
        for e in externals {
            match e {
                External::FromDependencyOf(p, sp, d, sd) => {
                    let set = sd.clamp(cat.entry(*d).len());
                    edges.push(Edge { p: *p, sp: sp.clone(), d: *d, set });
                }
                External::NoVersions(p, s) => self.yanked(*p, s),
                External::Custom(p, s, Unavailable::DependsOnItself) => {
                    let who = dependent_desc(cat, *p, s);
                    self.push(format!("{who} lists itself as a dependency and can never be chosen; ask its maintainers for a fixed release"));
                }
                External::NotRoot(..) => {}
            }
        }
        // Root edges first, so the fixes that are in the user's hands come first.
        edges.sort_by_key(|e| e.p != ROOT);
        let mut troubled: HashSet<Pkg> = HashSet::new();
        for e in &edges {
            if e.set.is_empty() {
                self.nothing_matches(e);
                troubled.insert(e.d);
            }
        }
        for (i, a) in edges.iter().enumerate() {
            for b in &edges[i + 1..] {
                if a.d == b.d && a.p != b.p && !a.set.is_empty() && !b.set.is_empty() {
                    let both = a.set.intersection(&b.set);
                    let entry = cat.entry(a.d);
                    if both.members_below(entry.len()).all(|k| !entry.choosable(k)) {
                        troubled.insert(a.d);
                        self.conflict(a, b);
                    }
                }
            }
        }
        for e in &edges {
            if troubled.contains(&e.d) {
                self.prerelease(e);
            }
        }
        if self.out.is_empty() {
            self.push("relax one of the requirements named in the steps above".to_owned());
        }
        if self.out.len() > MAX_HELP {
            let more = self.out.len() - MAX_HELP + 1;
            self.out.truncate(MAX_HELP - 1);
            self.out.push(format!(
                "{more} more conflicts of the same kind are left out; fix these first and resolve again"
            ));
        }
        self.out
    }

    /// The requirement(s) of candidate `v` of `p` on `d`, as written.
    fn req_text(&self, p: Pkg, v: u32, d: Pkg) -> Option<String> {
        let id = self.cat.id(d)?;
        let texts: Vec<&str> = self.cat.entry(p).deps_on(v, id).map(|r| r.req.text()).collect();
        (!texts.is_empty()).then(|| texts.join(", "))
    }

    /// The candidates of `d` that candidate `v` of `p` accepts (all of them when it has no requirement).
    fn accepted(&self, p: Pkg, v: u32, d: Pkg) -> IndexSet {
        let de = self.cat.entry(d);
        let all = IndexSet::interval(0, de.len());
        let Some(id) = self.cat.id(d) else { return all };
        self.cat.entry(p).deps_on(v, id).fold(all, |acc, r| acc.intersection(&matching(de, &r.req)))
    }

    /// The choosable candidates of `d` in `set`.
    fn choosable_in(&self, d: Pkg, set: &IndexSet) -> Vec<u32> {
        let entry = self.cat.entry(d);
        set.members_below(entry.len()).filter(|&k| entry.choosable(k)).collect()
    }

    fn available(&self, d: Pkg) -> String {
        let entry = self.cat.entry(d);
        let vs: Vec<String> =
            (0..entry.len()).filter(|&k| entry.choosable(k)).map(|k| entry.version(k).to_string()).collect();
        match vs.len() {
            0 => "none that is not yanked".to_owned(),
            1..=8 => vs.join(", "),
            n => format!("…, {}", vs[n - 6..].join(", ")),
        }
    }

    /// The highest version of `p` in `sp` (the one named in help lines).
    fn top(&self, p: Pkg, sp: &IndexSet) -> Option<u32> {
        sp.members_below(self.cat.entry(p).len()).next_back()
    }

    fn nothing_matches(&mut self, e: &Edge) {
        let cat = self.cat;
        let d_entry = cat.entry(e.d);
        let Some(v) = self.top(e.p, &e.sp) else { return };
        let Some(text) = self.req_text(e.p, v, e.d) else { return };
        if d_entry.is_empty() {
            let Some(id) = cat.id(e.d) else { return };
            let registry = match &id.registry {
                None => "the default registry".to_owned(),
                Some(url) => format!("registry {url}"),
            };
            let mut s = format!("no package named `{}` is published in {registry}", id.name);
            let close = crate::suggest::close_names(&id.name, &cat.known_names(id.registry.as_ref()));
            if !close.is_empty() {
                let names: Vec<String> = close.iter().map(|n| format!("`{n}`")).collect();
                s.push_str(&format!("; did you mean {}?", or_list(&names)));
            }
            self.push(s);
        } else {
            let d = cat.name(e.d);
            self.push(format!("no version of {d} matches {text} (available: {})", self.available(e.d)));
        }
    }

    fn yanked(&mut self, d: Pkg, s: &IndexSet) {
        let entry = self.cat.entry(d);
        let yanked: Vec<Cow<'_, Version>> =
            s.members_below(entry.len()).filter(|&k| entry.is_yanked(k)).map(|k| entry.version(k)).collect();
        if yanked.is_empty() {
            return;
        }
        let verb = if yanked.len() == 1 { "is" } else { "are" };
        self.push(format!(
            "{} {} {verb} yanked: new resolutions never choose a yanked version (a lockfile that already names one keeps it); require a version that is not yanked (available: {})",
            self.cat.name(d),
            version_list(&yanked),
            self.available(d)
        ));
    }

    /// Two requirements on one package that no choosable version satisfies together.
    fn conflict(&mut self, a: &Edge, b: &Edge) {
        let cat = self.cat;
        let (Some(va), Some(vb)) = (self.top(a.p, &a.sp), self.top(b.p, &b.sp)) else { return };
        let (Some(ta), Some(tb)) = (self.req_text(a.p, va, a.d), self.req_text(b.p, vb, b.d)) else { return };
        let d = cat.name(a.d);
        let root = cat.name(ROOT);
        if a.p == ROOT {
            let who = dependent_desc(cat, b.p, &b.sp);
            let p_name = cat.name(b.p);
            let target = a.set.clone();
            let alternative = self.highest_accepting(b.p, a.d, &target);
            let alt = match alternative {
                Some(v) => {
                    let ver = cat.version(b.p, v);
                    match self.root_req_on(b.p) {
                        Some((text, set)) if !set.contains(&v) => {
                            format!("{p_name} {ver} does, but {root} requires {p_name} {text}, so change that too")
                        }
                        _ => format!("{p_name} {ver} does"),
                    }
                }
                None => "none is published".to_owned(),
            };
            self.push(format!(
                "relax {root}'s requirement on {d} ({ta}) to one that {who} also accepts ({tb}), or use a version of {p_name} that works with {d} {ta} ({alt})"
            ));
        } else {
            let (wa, wb) = (dependent_desc(cat, a.p, &a.sp), dependent_desc(cat, b.p, &b.sp));
            let mut s = format!("{wa} needs {d} {ta} but {wb} needs {d} {tb}, and no version of {d} satisfies both");
            // Other versions can only be suggested for packages the project itself requires.
            if self.root_req_on(a.p).is_some() && self.root_req_on(b.p).is_some() {
                let pair = |(x, y): (u32, u32)| {
                    format!("{} {} and {} {}", cat.name(a.p), cat.version(a.p, x), cat.name(b.p), cat.version(b.p, y))
                };
                match (self.agreeing_pair(a.p, b.p, a.d, true), self.agreeing_pair(a.p, b.p, a.d, false)) {
                    (Some(xy), _) => s.push_str(&format!("; {} agree on {d}, so try requiring those", pair(xy))),
                    (None, Some(xy)) => s.push_str(&format!(
                        "; {} agree on {d}, but {root}'s requirements exclude that pair, so relax them to allow it",
                        pair(xy)
                    )),
                    (None, None) => s.push_str(&format!(
                        "; no published versions of {} and {} agree on {d}, so one of them has to go or be updated by its maintainers",
                        cat.name(a.p),
                        cat.name(b.p)
                    )),
                }
            }
            self.push(s);
        }
    }

    /// The root's requirement on `p`, with the candidates it matches.
    fn root_req_on(&self, p: Pkg) -> Option<(String, IndexSet)> {
        let id = self.cat.id(p)?;
        let reqs: Vec<_> = self.cat.request.deps.iter().filter(|r| r.pkg == *id).collect();
        if reqs.is_empty() {
            return None;
        }
        let entry = self.cat.entry(p);
        let set =
            reqs.iter().fold(IndexSet::interval(0, entry.len()), |acc, r| acc.intersection(&matching(entry, &r.req)));
        let text: Vec<&str> = reqs.iter().map(|r| r.req.text()).collect();
        Some((text.join(", "), set))
    }

    /// The highest choosable version of `p` that accepts some choosable version of `d` in `target`.
    fn highest_accepting(&self, p: Pkg, d: Pkg, target: &IndexSet) -> Option<u32> {
        let pe = self.cat.entry(p);
        (0..pe.len())
            .rev()
            .filter(|&v| pe.choosable(v))
            .find(|&v| !self.choosable_in(d, &self.accepted(p, v, d).intersection(target)).is_empty())
    }

    /// The highest pair of choosable versions of `p` and `q` whose requirements on `d` share a choosable
    /// version; within the root's requirements on them when `within_root` (bounded search).
    fn agreeing_pair(&self, p: Pkg, q: Pkg, d: Pkg, within_root: bool) -> Option<(u32, u32)> {
        let allowed = |x: Pkg| -> Vec<u32> {
            let e = self.cat.entry(x);
            let all = IndexSet::interval(0, e.len());
            let set = if within_root { self.root_req_on(x).map_or(all.clone(), |(_, s)| s) } else { all };
            set.members_below(e.len()).rev().filter(|&v| e.choosable(v)).collect()
        };
        let (ps, qs) = (allowed(p), allowed(q));
        let qsets: Vec<IndexSet> = qs.iter().map(|&y| self.accepted(q, y, d)).collect();
        let mut budget = 10_000u32;
        for &x in &ps {
            let ax = self.accepted(p, x, d);
            for (k, &y) in qs.iter().enumerate() {
                budget = budget.checked_sub(1)?;
                if !self.choosable_in(d, &ax.intersection(&qsets[k])).is_empty() {
                    return Some((x, y));
                }
            }
        }
        None
    }

    /// A pre-release that the requirement would match if pre-releases were not special.
    fn prerelease(&mut self, e: &Edge) {
        let cat = self.cat;
        let Some(v) = self.top(e.p, &e.sp) else { return };
        let Some(id) = cat.id(e.d) else { return };
        let de = cat.entry(e.d);
        let reqs: Vec<_> = cat.entry(e.p).deps_on(v, id).collect();
        let hit = (0..de.len()).rev().map(|k| de.version(k)).find(|ver| {
            !ver.pre.is_empty() && {
                let release = Version::new(ver.major, ver.minor, ver.patch);
                !reqs.iter().all(|r| r.req.matches(ver)) && reqs.iter().all(|r| r.req.matches(&release))
            }
        });
        if let (Some(ver), false) = (hit, reqs.is_empty()) {
            let texts: Vec<&str> = reqs.iter().map(|r| r.req.text()).collect();
            self.push(format!(
                "{} {ver} exists but is a pre-release, and pre-releases are only chosen when the requirement names one (e.g. `>={ver}` instead of `{}`)",
                cat.name(e.d),
                texts.join(", ")
            ));
        }
    }
}
