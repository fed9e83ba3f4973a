//! Recursive-descent parser with Python's precedence. A statement with a syntax
//! error is reported and skipped up to its end, so one run reports every broken
//! statement.

use crate::ast::*;
use crate::diag::{Code, Sink, Span};
use crate::lexer::{Kw, Tok, Token, UNSUPPORTED_KEYWORDS};
use crate::types::IntType;

/// Parses tokens into a script. Syntax errors go to `sink`; what parsed is kept.
pub fn parse(tokens: Vec<Token>, sink: &mut Sink<'_>) -> Script {
    let mut p = Parser { toks: tokens, pos: 0, sink };
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
}

type PResult<T> = Result<T, ()>;

fn describe(t: &Tok) -> String {
    match t {
        Tok::Name(n) => format!("name `{n}`"),
        Tok::Int(v) => format!("number `{v}`"),
        Tok::Str(s) => format!("string \"{s}\""),
        Tok::Kw(k) => format!("keyword `{}`", format!("{k:?}").to_lowercase()),
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
        let span = self.span();
        let d = self.sink.report(Code::Syntax, span, format!("expected {expected}, found {found}"));
        if let Tok::Name(n) = &self.toks[self.pos.min(self.toks.len() - 1)].tok
            && UNSUPPORTED_KEYWORDS.contains(&n.as_str())
        {
            d.help(format!("`{n}` is Python, but not part of the chain language (see CHAINS.md)"));
        }
        Err(())
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
    fn statement(&mut self) -> PResult<Vec<Parsed>> {
        match self.peek() {
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
        let mut branches = vec![(self.test()?, self.block()?)];
        let mut orelse = None;
        loop {
            if self.is_kw(Kw::Elif) {
                self.bump();
                branches.push((self.test()?, self.block()?));
            } else if self.is_kw(Kw::Else) {
                self.bump();
                orelse = Some(self.block()?);
                break;
            } else {
                break;
            }
        }
        Ok(Stmt::If { branches, orelse, span: start..self.prev_end() })
    }

    fn while_stmt(&mut self) -> PResult<Stmt> {
        let start = self.span().start;
        self.bump();
        let cond = self.test()?;
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

    // ---- expressions, lowest precedence first --------------------------------

    fn test(&mut self) -> PResult<Expr> {
        let mut left = self.and_test()?;
        while self.is_kw(Kw::Or) {
            self.bump();
            let right = self.and_test()?;
            let span = left.span.start..right.span.end;
            left = Expr { kind: ExprKind::Or(Box::new(left), Box::new(right)), span };
        }
        Ok(left)
    }

    fn and_test(&mut self) -> PResult<Expr> {
        let mut left = self.not_test()?;
        while self.is_kw(Kw::And) {
            self.bump();
            let right = self.not_test()?;
            let span = left.span.start..right.span.end;
            left = Expr { kind: ExprKind::And(Box::new(left), Box::new(right)), span };
        }
        Ok(left)
    }

    fn not_test(&mut self) -> PResult<Expr> {
        if self.is_kw(Kw::Not) {
            let start = self.span().start;
            self.bump();
            let e = self.not_test()?;
            let span = start..e.span.end;
            return Ok(Expr { kind: ExprKind::Unary(UnOp::Not, Box::new(e)), span });
        }
        self.comparison()
    }

    fn comparison(&mut self) -> PResult<Expr> {
        let left = self.bitor()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek() {
                Tok::Op("==") => CmpOp::Eq,
                Tok::Op("!=") => CmpOp::Ne,
                Tok::Op("<") => CmpOp::Lt,
                Tok::Op("<=") => CmpOp::Le,
                Tok::Op(">") => CmpOp::Gt,
                Tok::Op(">=") => CmpOp::Ge,
                _ => break,
            };
            self.bump();
            rest.push((op, self.bitor()?));
        }
        if rest.is_empty() {
            return Ok(left);
        }
        let span = left.span.start..rest.last().map_or(left.span.end, |(_, e)| e.span.end);
        Ok(Expr { kind: ExprKind::Compare(Box::new(left), rest), span })
    }

    fn binary_level(&mut self, next: fn(&mut Self) -> PResult<Expr>, ops: &[(&str, BinOp)]) -> PResult<Expr> {
        let mut left = next(self)?;
        while let Some(op) = ops.iter().find(|(s, _)| self.is_op(s)).map(|(_, o)| *o) {
            self.bump();
            let right = next(self)?;
            let span = left.span.start..right.span.end;
            left = Expr { kind: ExprKind::Binary(op, Box::new(left), Box::new(right)), span };
        }
        Ok(left)
    }

    fn bitor(&mut self) -> PResult<Expr> {
        self.binary_level(Self::bitxor, &[("|", BinOp::BitOr)])
    }

    fn bitxor(&mut self) -> PResult<Expr> {
        self.binary_level(Self::bitand, &[("^", BinOp::BitXor)])
    }

    fn bitand(&mut self) -> PResult<Expr> {
        self.binary_level(Self::shift, &[("&", BinOp::BitAnd)])
    }

    fn shift(&mut self) -> PResult<Expr> {
        self.binary_level(Self::arith, &[("<<", BinOp::Shl), (">>", BinOp::Shr)])
    }

    fn arith(&mut self) -> PResult<Expr> {
        self.binary_level(Self::term, &[("+", BinOp::Add), ("-", BinOp::Sub)])
    }

    fn term(&mut self) -> PResult<Expr> {
        self.binary_level(
            Self::factor,
            &[("*", BinOp::Mul), ("//", BinOp::FloorDiv), ("/", BinOp::Div), ("%", BinOp::Mod)],
        )
    }

    fn factor(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            Tok::Op("-") => Some(UnOp::Neg),
            Tok::Op("+") => Some(UnOp::Plus),
            Tok::Op("~") => Some(UnOp::Invert),
            _ => None,
        };
        if let Some(op) = op {
            let start = self.span().start;
            self.bump();
            let e = self.factor()?;
            let span = start..e.span.end;
            return Ok(Expr { kind: ExprKind::Unary(op, Box::new(e)), span });
        }
        self.power()
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.primary()?;
        if self.eat_op("**") {
            let exp = self.factor()?;
            let span = base.span.start..exp.span.end;
            return Ok(Expr { kind: ExprKind::Binary(BinOp::Pow, Box::new(base), Box::new(exp)), span });
        }
        Ok(base)
    }

    fn primary(&mut self) -> PResult<Expr> {
        let mut e = self.atom()?;
        loop {
            if self.is_op("(") {
                self.bump();
                let mut args = Vec::new();
                while !self.is_op(")") {
                    args.push(self.test()?);
                    if !self.eat_op(",") {
                        break;
                    }
                }
                self.expect_op(")")?;
                let span = e.span.start..self.prev_end();
                e = Expr { kind: ExprKind::Call { callee: Box::new(e), args }, span };
            } else if self.is_op(".") {
                self.bump();
                let name = self.expect_name("an attribute name")?;
                let span = e.span.start..name.span.end;
                e = Expr { kind: ExprKind::Attr(Box::new(e), name), span };
            } else if self.is_op("[") {
                self.bump();
                let index = self.test()?;
                self.expect_op("]")?;
                let span = e.span.start..self.prev_end();
                e = Expr { kind: ExprKind::Subscript(Box::new(e), Box::new(index)), span };
            } else {
                break;
            }
        }
        Ok(e)
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
                self.bump();
                let mut items = Vec::new();
                let mut trailing = false;
                while !self.is_op(")") {
                    items.push(self.test()?);
                    trailing = self.eat_op(",");
                    if !trailing {
                        break;
                    }
                }
                self.expect_op(")")?;
                let span = span.start..self.prev_end();
                if items.len() == 1 && !trailing {
                    let mut inner = items.remove(0);
                    inner.span = span;
                    return Ok(inner);
                }
                return Ok(Expr { kind: ExprKind::Tuple(items), span });
            }
            Tok::Op("{") => {
                self.bump();
                let mut pairs = Vec::new();
                while !self.is_op("}") {
                    let k = self.test()?;
                    self.expect_op(":")?;
                    let v = self.test()?;
                    pairs.push((k, v));
                    if !self.eat_op(",") {
                        break;
                    }
                }
                self.expect_op("}")?;
                return Ok(Expr { kind: ExprKind::Dict(pairs), span: span.start..self.prev_end() });
            }
            _ => {
                self.error("an expression")?;
                return Err(());
            }
        };
        self.bump();
        Ok(Expr { kind, span })
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
        assert_eq!(errors("class X:\n    pass\n")[0], "1:7 expected the end of the statement, found name `X`");
    }
}
