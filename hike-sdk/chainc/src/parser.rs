//! Recursive-descent parser with Python's precedence. A statement with a syntax
//! error is reported and skipped up to its end, so one run reports every broken
//! statement.
//!
//! Recursion is bounded: expressions nest at most [`MAX_NESTING`] levels (brackets,
//! unary operators, calls, and operator chains such as `a + b + c`, which make
//! trees as deep as they are long) and blocks at most
//! [`MAX_INDENT_LEVELS`](crate::lexer::MAX_INDENT_LEVELS). Every later pass
//! (type checks, constant folding, code generation, cost analysis) recurses over
//! these trees, so the bounds checked here keep all of them within a small stack.

use crate::ast::*;
use crate::diag::{Code, Sink, Span, did_you_mean};
use crate::lexer::{Kw, RESERVED, STATEMENT_KEYWORDS, Tok, Token};
use crate::types::IntType;

/// The deepest expression tree the compiler accepts: a bracket, a unary
/// operator, a call, an attribute, a subscript or a binary operator is one level
/// each. Python refuses 200 nested parentheses; 100 levels is far more than a
/// chain of at most 256 instructions can use.
pub const MAX_NESTING: u32 = 100;

/// Parses tokens into a script. Syntax errors go to `sink`; what parsed is kept.
pub fn parse(tokens: Vec<Token>, sink: &mut Sink<'_>) -> Script {
    let mut p = Parser { toks: tokens, pos: 0, sink, nest: 0, depth: 0, after_else: None };
    let mut items = Vec::new();
    loop {
        match p.peek() {
            Tok::Eof => break,
            Tok::Newline | Tok::Op(";") => p.bump(),
            Tok::Indent => {
                let span = p.span();
                p.sink
                    .report(Code::BadIndent, span, "unexpected indentation")
                    .help("top-level lines start in column 1");
                p.bump();
            }
            Tok::Dedent => p.bump(),
            _ => {
                let start = p.pos;
                match p.statement() {
                    Ok(list) => {
                        for s in list {
                            if let Some(item) = p.top_level(s) {
                                items.push(item);
                            }
                        }
                    }
                    Err(()) => p.recover(start),
                }
            }
        }
    }
    Script { items }
}

/// A statement as parsed, before deciding whether it is allowed where it is.
enum Parsed {
    Stmt(Stmt),
    Import {
        kind: ImportKind,
        package: Name,
        names: Vec<Name>,
        span: Span,
    },
    Def(Def),
    /// `a[b] = value`
    SubscriptAssign {
        target: Expr,
        value: Expr,
        span: Span,
    },
}

struct Parser<'a, 's> {
    toks: Vec<Token>,
    pos: usize,
    sink: &'a mut Sink<'s>,
    /// Expression parsing functions currently entered recursively.
    nest: u32,
    /// Depth of the expression tree the last expression function returned.
    depth: u32,
    /// The `else` of the `if` statement just parsed, if it had one (for
    /// "`elif` after `else`").
    after_else: Option<Span>,
}

type PResult<T> = Result<T, ()>;

fn describe(t: &Tok) -> String {
    match t {
        Tok::Name(n) => format!("name `{n}`"),
        Tok::Int(v) => format!("number `{v}`"),
        Tok::Str(s) => format!("string \"{s}\""),
        Tok::Kw(k) => format!("keyword `{}`", keyword_text(*k)),
        Tok::Reserved(w) => format!("reserved word `{w}`"),
        Tok::Op(o) => format!("`{o}`"),
        Tok::Newline => "the end of the line".into(),
        Tok::Indent => "an indented line".into(),
        Tok::Dedent => "the end of the block".into(),
        Tok::Eof => "the end of the script".into(),
    }
}

impl Parser<'_, '_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos.min(self.toks.len() - 1)].span.clone()
    }

    fn prev_end(&self) -> usize {
        if self.pos == 0 { 0 } else { self.toks[self.pos - 1].span.end }
    }

    fn bump(&mut self) {
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn is_kw(&self, kw: Kw) -> bool {
        matches!(self.peek(), Tok::Kw(k) if *k == kw)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn error(&mut self, expected: &str) -> PResult<()> {
        let found = describe(self.peek());
        let mut span = self.span();
        match self.peek() {
            Tok::Reserved(w) => {
                let (_, message, help) = RESERVED.iter().find(|(r, _, _)| r == w).copied().unwrap_or((w, "", ""));
                self.sink.report(Code::ReservedWord, span, message).help(help);
                return Err(());
            }
            // The end of the line is shown as a caret after its last character,
            // not as a span running into the next line.
            Tok::Newline => span.end = span.start,
            _ => {}
        }
        self.sink.report(Code::Syntax, span, format!("expected {expected}, found {found}"));
        Err(())
    }

    /// Enters a nested expression (brackets, a unary operator, an exponent),
    /// refusing to go deeper than [`MAX_NESTING`].
    fn enter(&mut self) -> PResult<()> {
        if self.nest >= MAX_NESTING {
            let span = self.span();
            self.too_deep(span);
            return Err(());
        }
        self.nest += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.nest = self.nest.saturating_sub(1);
    }

    /// The depth of a node over children of depths `a` and `b`, refused beyond
    /// [`MAX_NESTING`] (reported at `at`, the operator).
    fn deeper(&mut self, a: u32, b: u32, at: Span) -> PResult<u32> {
        let d = 1 + a.max(b);
        if d > MAX_NESTING {
            self.too_deep(at);
            return Err(());
        }
        Ok(d)
    }

    fn too_deep(&mut self, span: Span) {
        self.sink
            .report(
                Code::TooDeep,
                span,
                format!(
                    "this expression nests too deeply: at most {MAX_NESTING} levels of brackets, operators and calls"
                ),
            )
            .help("split it into steps with intermediate variables");
    }

    fn expect_op(&mut self, op: &str) -> PResult<Span> {
        if self.is_op(op) {
            let s = self.span();
            self.bump();
            Ok(s)
        } else {
            self.error(&format!("`{op}`"))?;
            Err(())
        }
    }

    fn expect_name(&mut self, what: &str) -> PResult<Name> {
        match self.peek().clone() {
            Tok::Name(text) => {
                let span = self.span();
                self.bump();
                Ok(Name { text, span })
            }
            _ => {
                self.error(what)?;
                Err(())
            }
        }
    }

    /// Skips the rest of a broken statement: to its newline, or over a whole
    /// indented block that follows it.
    fn recover(&mut self, start: usize) {
        if self.pos == start {
            self.bump();
        }
        loop {
            match self.peek() {
                Tok::Eof => return,
                Tok::Newline => {
                    self.bump();
                    if matches!(self.peek(), Tok::Indent) {
                        // The broken statement's block goes with it.
                        let mut depth = 0usize;
                        loop {
                            match self.peek() {
                                Tok::Indent => depth += 1,
                                Tok::Dedent => {
                                    depth -= 1;
                                    if depth == 0 {
                                        self.bump();
                                        break;
                                    }
                                }
                                Tok::Eof => return,
                                _ => {}
                            }
                            self.bump();
                        }
                    }
                    return;
                }
                Tok::Dedent => return,
                _ => self.bump(),
            }
        }
    }

    fn top_level(&mut self, s: Parsed) -> Option<Item> {
        match s {
            Parsed::Import { kind, package, names, span } => Some(Item::Import { kind, package, names, span }),
            Parsed::Def(d) => Some(Item::Def(d)),
            Parsed::SubscriptAssign { target, value, span } => self.loader_config(target, value, span),
            Parsed::Stmt(Stmt::Assign { target, ty: None, value, span: _ }) if is_constant_name(&target.text) => {
                Some(Item::Const { name: target, value })
            }
            Parsed::Stmt(Stmt::Expr(e)) => {
                if let ExprKind::Call { callee, args } = &e.kind
                    && let ExprKind::Attr(obj, method) = &callee.kind
                    && let ExprKind::Name(loader) = &obj.kind
                    && method.text == "attach"
                {
                    return Some(Item::Attach {
                        loader: Name { text: loader.clone(), span: obj.span.clone() },
                        args: args.clone(),
                        span: e.span.clone(),
                    });
                }
                self.sink
                    .report(
                        Code::TopLevel,
                        e.span.clone(),
                        "only imports, constants, loader configuration, `attach` and `def` may appear outside a chain",
                    )
                    .help("move this into a `def`");
                None
            }
            Parsed::Stmt(Stmt::Assign { target, span, .. }) => {
                self.sink
                    .report(Code::TopLevel, span, format!("`{}` is assigned outside a chain", target.text))
                    .help("variables live inside a `def`; UPPERCASE names outside are constants");
                None
            }
            Parsed::Stmt(s) => {
                self.sink
                    .report(Code::TopLevel, s.span(), "this statement can only appear inside a chain")
                    .help("move it into a `def`");
                None
            }
        }
    }

    fn loader_config(&mut self, target: Expr, value: Expr, span: Span) -> Option<Item> {
        let ExprKind::Subscript(obj, index) = target.kind else { return None };
        let (ExprKind::Name(loader), ExprKind::Name(map)) = (&obj.kind, &index.kind) else {
            self.sink
                .report(
                    Code::Syntax,
                    target.span,
                    "loader configuration is written `loader[map] = { key: value, ... }`",
                )
                .help("name the loader and its configuration map, e.g. `ip6_sc[ip6_sc_map] = { (0): (my_chain) }`");
            return None;
        };
        let ExprKind::Dict(pairs) = value.kind else {
            self.sink
                .report(Code::Syntax, value.span, "the configuration must be a `{ key: value, ... }` dictionary")
                .help("e.g. `{ (0): (my_chain) }`");
            return None;
        };
        let flatten = |e: Expr| match e.kind {
            ExprKind::Tuple(items) => items,
            _ => vec![e],
        };
        let entries = pairs
            .into_iter()
            .map(|(k, v)| {
                let span = k.span.start..v.span.end;
                Entry { key: flatten(k), value: flatten(v), span }
            })
            .collect();
        Some(Item::LoaderConfig {
            loader: Name { text: loader.clone(), span: obj.span.clone() },
            map: Name { text: map.clone(), span: index.span.clone() },
            entries,
            span,
        })
    }

    /// One line's statements (`;`-separated), or one compound statement.
    ///
    /// A statement that starts with a misspelled keyword (`whlie x:`, `retrun 0`,
    /// `esle:`) and does not parse, or is that name alone, is reported as the
    /// misspelling rather than as what the parser tripped over after it.
    fn statement(&mut self) -> PResult<Vec<Parsed>> {
        let prev_else = self.after_else.take();
        let typo = match self.peek() {
            Tok::Name(n) => {
                // `form prog.net import …` is `from`, however close `for` is.
                let import = matches!(self.toks.get(self.pos + 1).map(|t| &t.tok),
                    Some(Tok::Name(p)) if ["prog", "programs", "loaders"].contains(&p.as_str()));
                let keyword = if import && did_you_mean(n, ["from"]).is_some() {
                    Some("from")
                } else {
                    did_you_mean(n, STATEMENT_KEYWORDS.iter().copied())
                };
                keyword.map(|k| (n.clone(), k, self.span()))
            }
            _ => None,
        };
        let mark = self.sink.items.len();
        let result = self.statement_inner(prev_else);
        let Some((name, keyword, span)) = typo else { return result };
        let bare = matches!(
            &result,
            Ok(list) if list.len() == 1 && matches!(&list[0], Parsed::Stmt(Stmt::Expr(Expr { kind: ExprKind::Name(_), .. })))
        );
        if result.is_ok() && !bare {
            return result;
        }
        self.sink.truncate(mark);
        self.sink
            .report(Code::Syntax, span, format!("`{name}` is not a keyword, and this is not a statement"))
            .help(format!("did you mean `{keyword}`?"));
        // A bare name was parsed whole: nothing to skip.
        if bare { Ok(Vec::new()) } else { Err(()) }
    }

    fn statement_inner(&mut self, prev_else: Option<Span>) -> PResult<Vec<Parsed>> {
        match self.peek() {
            Tok::Kw(k @ (Kw::Elif | Kw::Else)) => {
                let k = *k;
                let span = self.span();
                let word = keyword_text(k);
                match prev_else {
                    Some(else_span) => {
                        let (message, help) = if k == Kw::Elif {
                            (
                                "`elif` after `else`: an `if` takes its `elif` branches before its `else`",
                                "move this `elif` branch above the `else`",
                            )
                        } else {
                            ("this `if` already has an `else`", "merge the two `else` blocks into one")
                        };
                        self.sink.report(Code::Syntax, span, message).help(help).note(else_span, "the `else` is here");
                    }
                    None => {
                        self.sink
                            .report(Code::Syntax, span, format!("`{word}` without an `if` before it"))
                            .help(format!("`{word}` continues an `if` statement: line it up with its `if`"));
                    }
                }
                Err(())
            }
            Tok::Kw(Kw::Def) => Ok(vec![Parsed::Def(self.def()?)]),
            Tok::Kw(Kw::If) => Ok(vec![Parsed::Stmt(self.if_stmt()?)]),
            Tok::Kw(Kw::While) => Ok(vec![Parsed::Stmt(self.while_stmt()?)]),
            Tok::Kw(Kw::For) => Ok(vec![Parsed::Stmt(self.for_stmt()?)]),
            _ => self.simple_statements(),
        }
    }

    fn simple_statements(&mut self) -> PResult<Vec<Parsed>> {
        let mut out = vec![self.small_statement()?];
        loop {
            if self.eat_op(";") {
                if matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Dedent) {
                    break;
                }
                out.push(self.small_statement()?);
                continue;
            }
            break;
        }
        match self.peek() {
            Tok::Newline => self.bump(),
            Tok::Eof | Tok::Dedent => {}
            _ => {
                self.error("the end of the statement")?;
            }
        }
        Ok(out)
    }

    fn small_statement(&mut self) -> PResult<Parsed> {
        let start = self.span().start;
        match self.peek().clone() {
            Tok::Kw(Kw::Pass) => {
                let s = self.span();
                self.bump();
                Ok(Parsed::Stmt(Stmt::Pass(s)))
            }
            Tok::Kw(Kw::Break) => {
                let s = self.span();
                self.bump();
                Ok(Parsed::Stmt(Stmt::Break(s)))
            }
            Tok::Kw(Kw::Continue) => {
                let s = self.span();
                self.bump();
                Ok(Parsed::Stmt(Stmt::Continue(s)))
            }
            Tok::Kw(Kw::Return) => {
                self.bump();
                let value = if matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Dedent | Tok::Op(";")) {
                    None
                } else {
                    Some(self.test()?)
                };
                Ok(Parsed::Stmt(Stmt::Return { value, span: start..self.prev_end() }))
            }
            Tok::Kw(Kw::From) => self.import(),
            Tok::Kw(Kw::Import) => {
                let span = self.span();
                self.sink
                    .report(Code::Syntax, span, "imports are written `from prog.<package> import <names>`")
                    .help("e.g. `from prog.net import hike_drop, monitor` or `from loaders.basic import ip6_sc`");
                Err(())
            }
            _ => self.expression_statement(),
        }
    }

    fn import(&mut self) -> PResult<Parsed> {
        let start = self.span().start;
        self.bump();
        let prefix = self.expect_name("`prog`, `programs` or `loaders`")?;
        let kind = match prefix.text.as_str() {
            "prog" | "programs" => ImportKind::Programs,
            "loaders" => ImportKind::Loaders,
            other => {
                let d = self.sink.report(Code::Syntax, prefix.span.clone(), format!("cannot import from `{other}`"));
                d.help("import programs with `from prog.<package>` (or `programs.`) and loaders with `from loaders.<package>`");
                return Err(());
            }
        };
        self.expect_op(".")?;
        let package = self.expect_name("a package name")?;
        if !matches!(self.peek(), Tok::Kw(Kw::Import)) {
            self.error("`import`")?;
        }
        self.bump();
        let paren = self.eat_op("(");
        let mut names = vec![self.expect_name("a name to import")?];
        while self.eat_op(",") {
            if paren && self.is_op(")") {
                break;
            }
            names.push(self.expect_name("a name to import")?);
        }
        if paren {
            self.expect_op(")")?;
        }
        Ok(Parsed::Import { kind, package, names, span: start..self.prev_end() })
    }

    fn expression_statement(&mut self) -> PResult<Parsed> {
        let start = self.span().start;
        let first = self.test()?;
        // Annotated assignment, either order: `u64 : x = e` or `x: u64 = e`.
        if self.is_op(":") {
            self.bump();
            let ExprKind::Name(left) = &first.kind else {
                self.sink.report(Code::Syntax, first.span.clone(), "only a variable can be annotated with a type");
                return Err(());
            };
            let right = self.expect_name("a variable or type name")?;
            let (var, ty) = match (IntType::from_name(left), IntType::from_name(&right.text)) {
                (Some(t), None) => (right, (t, first.span.clone())),
                (_, Some(t)) => (Name { text: left.clone(), span: first.span.clone() }, (t, right.span.clone())),
                (None, None) => {
                    let d = self.sink.report(
                        Code::Syntax,
                        first.span.start..right.span.end,
                        format!("neither `{left}` nor `{}` is a type", right.text),
                    );
                    d.help("types are u8, u16, u32, u64, s8, s16, s32 and s64: write `x: u64 = 0` or `u64 : x = 0`");
                    return Err(());
                }
            };
            let value =
                if self.eat_op("=") { self.test()? } else { Expr { kind: ExprKind::Int(0), span: var.span.clone() } };
            return Ok(Parsed::Stmt(Stmt::Assign { target: var, ty: Some(ty), value, span: start..self.prev_end() }));
        }
        if self.is_op("=") {
            self.bump();
            let value = self.test()?;
            let span = start..self.prev_end();
            return match first.kind {
                ExprKind::Name(text) => {
                    Ok(Parsed::Stmt(Stmt::Assign { target: Name { text, span: first.span }, ty: None, value, span }))
                }
                ExprKind::Subscript(..) => Ok(Parsed::SubscriptAssign { target: first, value, span }),
                _ => {
                    self.sink
                        .report(Code::Syntax, first.span, "only a variable can be assigned to")
                        .help("write `name = value`");
                    Err(())
                }
            };
        }
        let aug = match self.peek() {
            Tok::Op("+=") => Some(BinOp::Add),
            Tok::Op("-=") => Some(BinOp::Sub),
            Tok::Op("*=") => Some(BinOp::Mul),
            Tok::Op("/=") => Some(BinOp::Div),
            Tok::Op("//=") => Some(BinOp::FloorDiv),
            Tok::Op("%=") => Some(BinOp::Mod),
            Tok::Op("**=") => Some(BinOp::Pow),
            Tok::Op("<<=") => Some(BinOp::Shl),
            Tok::Op(">>=") => Some(BinOp::Shr),
            Tok::Op("&=") => Some(BinOp::BitAnd),
            Tok::Op("|=") => Some(BinOp::BitOr),
            Tok::Op("^=") => Some(BinOp::BitXor),
            _ => None,
        };
        if let Some(op) = aug {
            self.bump();
            let value = self.test()?;
            let ExprKind::Name(text) = first.kind else {
                self.sink.report(Code::Syntax, first.span, "only a variable can be updated");
                return Err(());
            };
            return Ok(Parsed::Stmt(Stmt::AugAssign {
                target: Name { text, span: first.span },
                op,
                value,
                span: start..self.prev_end(),
            }));
        }
        Ok(Parsed::Stmt(Stmt::Expr(first)))
    }

    /// `:` then a block: statements on the same line, or an indented block.
    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.expect_op(":")?;
        if !matches!(self.peek(), Tok::Newline) {
            return self.simple_statements().map(|list| list.into_iter().filter_map(|p| self.inner(p)).collect());
        }
        self.bump();
        if !matches!(self.peek(), Tok::Indent) {
            let span = self.span();
            self.sink
                .report(Code::BadIndent, span, "expected an indented block")
                .help("indent the block's lines, e.g. by 4 spaces");
            return Err(());
        }
        self.bump();
        let mut body = Vec::new();
        loop {
            match self.peek() {
                Tok::Dedent => {
                    self.bump();
                    break;
                }
                Tok::Eof => break,
                Tok::Newline | Tok::Op(";") => self.bump(),
                _ => {
                    let start = self.pos;
                    match self.statement() {
                        Ok(list) => body.extend(list.into_iter().filter_map(|p| self.inner(p))),
                        Err(()) => self.recover(start),
                    }
                }
            }
        }
        // An `else` inside the block says nothing about what follows the block.
        self.after_else = None;
        Ok(body)
    }

    /// A statement inside a chain: top-level-only forms are errors here.
    fn inner(&mut self, p: Parsed) -> Option<Stmt> {
        match p {
            Parsed::Stmt(s) => Some(s),
            Parsed::Import { span, .. } => {
                self.sink.report(Code::Syntax, span, "imports go at the top of the script, outside chains");
                None
            }
            Parsed::Def(d) => {
                self.sink
                    .report(Code::Syntax, d.name.span, "chains cannot be defined inside chains")
                    .help("define it at the top level");
                None
            }
            Parsed::SubscriptAssign { span, .. } => {
                self.sink
                    .report(Code::Syntax, span, "loader configuration goes outside chains")
                    .help("move it to the top level");
                None
            }
        }
    }

    fn def(&mut self) -> PResult<Def> {
        let start = self.span().start;
        self.bump();
        let name = self.expect_name("the chain's name")?;
        self.expect_op("(")?;
        let mut params = Vec::new();
        while !self.is_op(")") {
            let pname = self.expect_name("a parameter name")?;
            let ty = if self.eat_op(":") {
                let t = self.expect_name("a type")?;
                match IntType::from_name(&t.text) {
                    Some(ty) => Some((ty, t.span)),
                    None => {
                        self.sink
                            .report(Code::Syntax, t.span, format!("`{}` is not a type", t.text))
                            .help("types are u8, u16, u32, u64, s8, s16, s32 and s64");
                        return Err(());
                    }
                }
            } else {
                None
            };
            params.push(Param { name: pname, ty });
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        if self.eat_op("->") {
            let t = self.expect_name("a result type")?;
            if IntType::from_name(&t.text).is_none() {
                self.sink.report(Code::Syntax, t.span, format!("`{}` is not a type", t.text));
            }
        }
        let body = self.block()?;
        Ok(Def { name, params, body, span: start..self.prev_end() })
    }

    fn if_stmt(&mut self) -> PResult<Stmt> {
        let start = self.span().start;
        self.bump();
        let cond = self.condition("if")?;
        let mut branches = vec![(cond, self.block()?)];
        let mut orelse = None;
        let mut else_span = None;
        loop {
            if self.is_kw(Kw::Elif) {
                self.bump();
                let cond = self.condition("elif")?;
                branches.push((cond, self.block()?));
            } else if self.is_kw(Kw::Else) {
                let span = self.span();
                self.bump();
                if self.is_kw(Kw::If) {
                    let both = span.start..self.span().end;
                    self.sink
                        .report(Code::Syntax, both, "`else if` is written `elif`")
                        .help("write `elif <condition>:`");
                    return Err(());
                }
                orelse = Some(self.block()?);
                else_span = Some(span);
                break;
            } else {
                break;
            }
        }
        self.after_else = else_span;
        Ok(Stmt::If { branches, orelse, span: start..self.prev_end() })
    }

    /// The condition of `if`, `elif` or `while`, with a hint for `=` written for
    /// `==`.
    fn condition(&mut self, keyword: &str) -> PResult<Expr> {
        let cond = self.test()?;
        if self.is_op("=") {
            let span = self.span();
            self.sink
                .report(
                    Code::Syntax,
                    span,
                    format!("`=` assigns a value; the condition of `{keyword}` compares with `==`"),
                )
                .help("did you mean `==`?");
            return Err(());
        }
        Ok(cond)
    }

    fn while_stmt(&mut self) -> PResult<Stmt> {
        let start = self.span().start;
        self.bump();
        let cond = self.condition("while")?;
        let body = self.block()?;
        Ok(Stmt::While { cond, body, span: start..self.prev_end() })
    }

    fn for_stmt(&mut self) -> PResult<Stmt> {
        let start = self.span().start;
        self.bump();
        let var = self.expect_name("the loop variable")?;
        if !self.is_kw(Kw::In) {
            self.error("`in`")?;
        }
        self.bump();
        let iter = self.test()?;
        let range_span = iter.span.clone();
        let ExprKind::Call { callee, args } = iter.kind else {
            self.sink
                .report(Code::BadBuiltin, range_span, "`for` loops run over `range(...)` only")
                .help("write `for i in range(N):` with a constant N");
            return Err(());
        };
        if !matches!(&callee.kind, ExprKind::Name(n) if n == "range") {
            self.sink
                .report(Code::BadBuiltin, range_span, "`for` loops run over `range(...)` only")
                .help("write `for i in range(N):` with a constant N");
            return Err(());
        }
        let body = self.block()?;
        Ok(Stmt::For { var, range: args, range_span, body, span: start..self.prev_end() })
    }

    // ---- expressions ----------------------------------------------------------
    //
    // Operators are parsed with an operator stack (shunting-yard) in one loop, so
    // only brackets, calls and subscripts recurse: a handful of stack frames per
    // nesting level, and none per operator. Precedence and associativity are
    // Python's (CHAINS.md §4).

    /// An expression: `test` in the grammar.
    fn test(&mut self) -> PResult<Expr> {
        let mut operands: Vec<(Expr, u32)> = Vec::new();
        let mut ops: Vec<(Pending, Span)> = Vec::new();
        // `not` starts a `not_test`: at the start, or after `and`, `or`, `not`.
        let mut not_allowed = true;
        loop {
            // Prefix operators.
            loop {
                let prefix = match self.peek() {
                    Tok::Kw(Kw::Not) if not_allowed => UnOp::Not,
                    Tok::Op("-") => UnOp::Neg,
                    Tok::Op("+") => UnOp::Plus,
                    Tok::Op("~") => UnOp::Invert,
                    _ => break,
                };
                let at = self.span();
                self.pending(ops.len(), &at)?;
                ops.push((Pending::Prefix(prefix), at));
                self.bump();
                not_allowed = prefix == UnOp::Not;
            }
            let operand = self.primary()?;
            operands.push((operand, self.depth));
            // An infix operator, or the end of the expression.
            let Some(infix) = self.infix() else { break };
            let at = self.span();
            let prec = infix.precedence();
            // `**` is right-associative; every other operator, left.
            while let Some((top, _)) = ops.last()
                && (top.precedence() > prec || (top.precedence() == prec && infix != Infix::Pow))
            {
                // Comparisons chain: `a < b <= c` is one node.
                if let (Pending::Compare(_), Infix::Compare(_)) = (top, infix) {
                    break;
                }
                self.reduce(&mut operands, &mut ops)?;
            }
            self.bump();
            match (ops.last_mut(), infix) {
                (Some((Pending::Compare(chain), _)), Infix::Compare(op)) => chain.push(op),
                (_, Infix::Compare(op)) => {
                    self.pending(ops.len(), &at)?;
                    ops.push((Pending::Compare(vec![op]), at));
                }
                (_, other) => {
                    self.pending(ops.len(), &at)?;
                    ops.push((Pending::Infix(other), at));
                }
            }
            not_allowed = matches!(infix, Infix::And | Infix::Or);
        }
        while !ops.is_empty() {
            self.reduce(&mut operands, &mut ops)?;
        }
        let (e, depth) = operands.pop().ok_or(())?;
        self.depth = depth;
        Ok(e)
    }

    /// Refuses an expression whose pending operators alone nest too deeply
    /// (each will sit above the operand that follows it), before reading more.
    fn pending(&mut self, waiting: usize, at: &Span) -> PResult<()> {
        if waiting + 1 >= MAX_NESTING as usize {
            self.too_deep(at.clone());
            return Err(());
        }
        Ok(())
    }

    /// The infix operator at the current token, if any.
    fn infix(&self) -> Option<Infix> {
        Some(match self.peek() {
            Tok::Kw(Kw::Or) => Infix::Or,
            Tok::Kw(Kw::And) => Infix::And,
            Tok::Op(o) => match *o {
                "==" => Infix::Compare(CmpOp::Eq),
                "!=" => Infix::Compare(CmpOp::Ne),
                "<" => Infix::Compare(CmpOp::Lt),
                "<=" => Infix::Compare(CmpOp::Le),
                ">" => Infix::Compare(CmpOp::Gt),
                ">=" => Infix::Compare(CmpOp::Ge),
                "|" => Infix::Bin(BinOp::BitOr),
                "^" => Infix::Bin(BinOp::BitXor),
                "&" => Infix::Bin(BinOp::BitAnd),
                "<<" => Infix::Bin(BinOp::Shl),
                ">>" => Infix::Bin(BinOp::Shr),
                "+" => Infix::Bin(BinOp::Add),
                "-" => Infix::Bin(BinOp::Sub),
                "*" => Infix::Bin(BinOp::Mul),
                "/" => Infix::Bin(BinOp::Div),
                "//" => Infix::Bin(BinOp::FloorDiv),
                "%" => Infix::Bin(BinOp::Mod),
                "**" => Infix::Pow,
                _ => return None,
            },
            _ => return None,
        })
    }

    /// Applies the operator on top of `ops` to the operands it takes.
    fn reduce(&mut self, operands: &mut Vec<(Expr, u32)>, ops: &mut Vec<(Pending, Span)>) -> PResult<()> {
        let (op, at) = ops.pop().ok_or(())?;
        match op {
            Pending::Prefix(u) => {
                let (e, d) = operands.pop().ok_or(())?;
                let depth = self.deeper(d, 0, at.clone())?;
                let span = at.start..e.span.end;
                operands.push((Expr { kind: ExprKind::Unary(u, Box::new(e)), span }, depth));
            }
            Pending::Compare(chain) => {
                let at_least = operands.len().checked_sub(chain.len() + 1).ok_or(())?;
                let mut items = operands.split_off(at_least).into_iter();
                let (left, mut depth) = items.next().ok_or(())?;
                let mut rest = Vec::with_capacity(chain.len());
                for (op, (e, d)) in chain.into_iter().zip(items) {
                    depth = self.deeper(depth, d, at.clone())?;
                    rest.push((op, e));
                }
                let span = left.span.start..rest.last().map_or(left.span.end, |(_, e)| e.span.end);
                operands.push((Expr { kind: ExprKind::Compare(Box::new(left), rest), span }, depth));
            }
            Pending::Infix(i) => {
                let (right, dr) = operands.pop().ok_or(())?;
                let (left, dl) = operands.pop().ok_or(())?;
                let depth = self.deeper(dl, dr, at)?;
                let span = left.span.start..right.span.end;
                let (l, r) = (Box::new(left), Box::new(right));
                let kind = match i {
                    Infix::Or => ExprKind::Or(l, r),
                    Infix::And => ExprKind::And(l, r),
                    Infix::Pow => ExprKind::Binary(BinOp::Pow, l, r),
                    Infix::Bin(b) => ExprKind::Binary(b, l, r),
                    Infix::Compare(c) => ExprKind::Compare(l, vec![(c, *r)]),
                };
                operands.push((Expr { kind, span }, depth));
            }
        }
        Ok(())
    }

    fn primary(&mut self) -> PResult<Expr> {
        let mut e = self.atom()?;
        let mut depth = self.depth;
        loop {
            let at = self.span();
            if self.is_op("(") {
                self.enter()?;
                self.bump();
                let args = self.call_args();
                self.leave();
                let (args, args_depth) = args?;
                depth = self.deeper(depth, args_depth, at)?;
                let span = e.span.start..self.prev_end();
                e = Expr { kind: ExprKind::Call { callee: Box::new(e), args }, span };
            } else if self.is_op(".") {
                self.bump();
                let name = self.expect_name("an attribute name")?;
                depth = self.deeper(depth, 0, at)?;
                let span = e.span.start..name.span.end;
                e = Expr { kind: ExprKind::Attr(Box::new(e), name), span };
            } else if self.is_op("[") {
                self.enter()?;
                self.bump();
                let index = self.test().and_then(|i| self.expect_op("]").map(|_| i));
                self.leave();
                let index = index?;
                depth = self.deeper(depth, self.depth, at)?;
                let span = e.span.start..self.prev_end();
                e = Expr { kind: ExprKind::Subscript(Box::new(e), Box::new(index)), span };
            } else {
                break;
            }
        }
        self.depth = depth;
        Ok(e)
    }

    /// A call's arguments after its `(`, through the `)`, and their deepest tree.
    fn call_args(&mut self) -> PResult<(Vec<Expr>, u32)> {
        let mut args = Vec::new();
        let mut depth = 0;
        while !self.is_op(")") {
            args.push(self.test()?);
            depth = depth.max(self.depth);
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        Ok((args, depth))
    }

    fn atom(&mut self) -> PResult<Expr> {
        let span = self.span();
        let kind = match self.peek().clone() {
            Tok::Name(n) => ExprKind::Name(n),
            Tok::Int(v) => ExprKind::Int(v),
            Tok::Str(s) => ExprKind::Str(s),
            Tok::Kw(Kw::True) => ExprKind::Bool(true),
            Tok::Kw(Kw::False) => ExprKind::Bool(false),
            Tok::Kw(Kw::None) => ExprKind::None,
            Tok::Op("(") => {
                self.enter()?;
                let e = self.parenthesized(span);
                self.leave();
                return e;
            }
            Tok::Op("{") => {
                self.enter()?;
                let e = self.dict(span);
                self.leave();
                return e;
            }
            _ => {
                self.error("an expression")?;
                return Err(());
            }
        };
        self.bump();
        self.depth = 1;
        Ok(Expr { kind, span })
    }

    /// `( ... )`: a parenthesized expression or a tuple. Counted as a level even
    /// when it only groups, so that brackets alone cannot nest without bound.
    fn parenthesized(&mut self, open: Span) -> PResult<Expr> {
        self.bump();
        let mut items = Vec::new();
        let mut trailing = false;
        let mut depth = 0;
        while !self.is_op(")") {
            items.push(self.test()?);
            depth = depth.max(self.depth);
            trailing = self.eat_op(",");
            if !trailing {
                break;
            }
        }
        self.expect_op(")")?;
        self.depth = self.deeper(depth, 0, open.clone())?;
        let span = open.start..self.prev_end();
        if items.len() == 1 && !trailing {
            let mut inner = items.remove(0);
            inner.span = span;
            return Ok(inner);
        }
        Ok(Expr { kind: ExprKind::Tuple(items), span })
    }

    /// `{ key: value, ... }`
    fn dict(&mut self, open: Span) -> PResult<Expr> {
        self.bump();
        let mut pairs = Vec::new();
        let mut depth = 0;
        while !self.is_op("}") {
            let k = self.test()?;
            depth = depth.max(self.depth);
            self.expect_op(":")?;
            let v = self.test()?;
            depth = depth.max(self.depth);
            pairs.push((k, v));
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op("}")?;
        self.depth = self.deeper(depth, 0, open.clone())?;
        Ok(Expr { kind: ExprKind::Dict(pairs), span: open.start..self.prev_end() })
    }
}

/// An infix operator as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Infix {
    Or,
    And,
    Compare(CmpOp),
    Bin(BinOp),
    Pow,
}

impl Infix {
    /// Python's binding strength, loosest first (`not` is 3, unary `-` 11).
    fn precedence(self) -> u8 {
        match self {
            Infix::Or => 1,
            Infix::And => 2,
            Infix::Compare(_) => 4,
            Infix::Bin(BinOp::BitOr) => 5,
            Infix::Bin(BinOp::BitXor) => 6,
            Infix::Bin(BinOp::BitAnd) => 7,
            Infix::Bin(BinOp::Shl | BinOp::Shr) => 8,
            Infix::Bin(BinOp::Add | BinOp::Sub) => 9,
            Infix::Bin(BinOp::Mul | BinOp::Div | BinOp::FloorDiv | BinOp::Mod) => 10,
            Infix::Pow | Infix::Bin(BinOp::Pow) => 12,
        }
    }
}

/// An operator waiting on the stack for its right operand.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pending {
    Prefix(UnOp),
    /// The operators of a comparison chain so far.
    Compare(Vec<CmpOp>),
    Infix(Infix),
}

impl Pending {
    fn precedence(&self) -> u8 {
        match self {
            Pending::Prefix(UnOp::Not) => 3,
            Pending::Prefix(_) => 11,
            Pending::Compare(_) => 4,
            Pending::Infix(i) => i.precedence(),
        }
    }
}

/// A keyword as the script writes it.
pub fn keyword_text(k: Kw) -> &'static str {
    match k {
        Kw::Def => "def",
        Kw::If => "if",
        Kw::Elif => "elif",
        Kw::Else => "else",
        Kw::While => "while",
        Kw::For => "for",
        Kw::In => "in",
        Kw::Return => "return",
        Kw::Pass => "pass",
        Kw::Break => "break",
        Kw::Continue => "continue",
        Kw::From => "from",
        Kw::Import => "import",
        Kw::And => "and",
        Kw::Or => "or",
        Kw::Not => "not",
        Kw::True => "True",
        Kw::False => "False",
        Kw::None => "None",
    }
}

/// UPPERCASE names (letters, digits, `_`, at least one letter) are constants.
pub fn is_constant_name(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_uppercase())
        && s.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;

    fn parse_ok(src: &str) -> Script {
        let mut sink = Sink::new("t", src);
        let toks = lex(src, &mut sink);
        let s = parse(toks, &mut sink);
        assert!(sink.items.is_empty(), "{:#?}", sink.items);
        s
    }

    fn errors(src: &str) -> Vec<String> {
        let mut sink = Sink::new("t", src);
        let toks = lex(src, &mut sink);
        parse(toks, &mut sink);
        sink.items.iter().map(|d| format!("{}:{} {}", d.line, d.column, d.message)).collect()
    }

    #[test]
    fn precedence_is_pythons() {
        let s = parse_ok("def f():\n    x = 1 + 2 * 3 ** 2 << 1 & 7 | 8 ^ 1\n");
        let Item::Def(d) = &s.items[0] else { panic!() };
        let Stmt::Assign { value, .. } = &d.body[0] else { panic!() };
        // | binds loosest here: (… & 7) | (8 ^ 1)
        assert!(matches!(value.kind, ExprKind::Binary(BinOp::BitOr, _, _)));
    }

    #[test]
    fn both_annotation_orders() {
        let s = parse_ok("def f():\n    u64 : a = 1\n    b: s8 = 2\n    c: u16\n");
        let Item::Def(d) = &s.items[0] else { panic!() };
        let tys: Vec<(String, IntType)> = d
            .body
            .iter()
            .map(|s| match s {
                Stmt::Assign { target, ty: Some((t, _)), .. } => (target.text.clone(), *t),
                _ => panic!(),
            })
            .collect();
        assert_eq!(tys, vec![("a".into(), IntType::U64), ("b".into(), IntType::S8), ("c".into(), IntType::U16)]);
    }

    #[test]
    fn top_level_forms() {
        let s = parse_ok(
            "from prog.net import a, \\\n  b\nfrom loaders.basic import l\nX = 3\nl[m] = { (0): (c), (1, 2): (3, 4) }\nl.attach('DEV', 'xdp')\n",
        );
        assert!(matches!(&s.items[0], Item::Import { names, .. } if names.len() == 2));
        assert!(matches!(&s.items[2], Item::Const { .. }));
        assert!(matches!(&s.items[3], Item::LoaderConfig { entries, .. } if entries[1].key.len() == 2));
        assert!(matches!(&s.items[4], Item::Attach { args, .. } if args.len() == 2));
    }

    #[test]
    fn several_errors_are_reported() {
        let e = errors("def f():\n    x = = 1\n    y = 2 +\n    z = 3\n\ndef g()\n    pass\n");
        assert_eq!(
            e,
            [
                "2:9 expected an expression, found `=`",
                "3:12 expected an expression, found the end of the line",
                "6:8 expected `:`, found the end of the line"
            ]
        );
        // An unclosed bracket runs on, as in Python; the error is where it shows.
        let e = errors("def f():\n    z = (3\n\ndef g():\n    pass\n");
        assert_eq!(e, ["4:1 expected `)`, found keyword `def`"]);
    }

    #[test]
    fn misplaced_forms() {
        assert_eq!(errors("x = 1\n"), ["1:1 `x` is assigned outside a chain"]);
        assert_eq!(
            errors("def f():\n    from prog.a import b\n"),
            ["2:5 imports go at the top of the script, outside chains"]
        );
        assert_eq!(
            errors("class X:\n    pass\n"),
            ["1:1 `class` is a Python keyword the chain language does not have"]
        );
    }
}
