//! The syntax tree of a chain script.

use crate::diag::Span;
use crate::types::IntType;

/// A name and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

/// A whole script.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub items: Vec<Item>,
}

/// `prog`/`programs` or `loaders`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportKind {
    Programs,
    Loaders,
}

/// A top-level statement.
#[derive(Debug, Clone)]
pub enum Item {
    /// `from prog.net import a, b`
    Import {
        kind: ImportKind,
        package: Name,
        names: Vec<Name>,
        span: Span,
    },
    /// `DROP = 1`
    Const {
        name: Name,
        value: Expr,
    },
    /// `ip6_sc[ip6_sc_map] = { (0): (my_chain) }`
    LoaderConfig {
        loader: Name,
        map: Name,
        entries: Vec<Entry>,
        span: Span,
    },
    /// `ip6_sc.attach('DEVNAME', 'xdp')`
    Attach {
        loader: Name,
        args: Vec<Expr>,
        span: Span,
    },
    Def(Def),
}

/// One `key: value` of a loader configuration; tuples are flattened.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: Vec<Expr>,
    pub value: Vec<Expr>,
    pub span: Span,
}

/// A chain definition.
#[derive(Debug, Clone)]
pub struct Def {
    pub name: Name,
    pub params: Vec<Param>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: Name,
    pub ty: Option<(IntType, Span)>,
}

/// A statement inside a chain.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// `x = e`, `u64 : x = e`, `x: u64 = e`
    Assign {
        target: Name,
        ty: Option<(IntType, Span)>,
        value: Expr,
        span: Span,
    },
    /// `x += e`
    AugAssign {
        target: Name,
        op: BinOp,
        value: Expr,
        span: Span,
    },
    Expr(Expr),
    If {
        branches: Vec<(Expr, Vec<Stmt>)>,
        orelse: Option<Vec<Stmt>>,
        span: Span,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
        span: Span,
    },
    /// `for i in range(...)`: the range's arguments.
    For {
        var: Name,
        range: Vec<Expr>,
        range_span: Span,
        body: Vec<Stmt>,
        span: Span,
    },
    Return {
        value: Option<Expr>,
        span: Span,
    },
    Pass(Span),
    Break(Span),
    Continue(Span),
}

impl Stmt {
    pub fn span(&self) -> Span {
        match self {
            Stmt::Assign { span, .. }
            | Stmt::AugAssign { span, .. }
            | Stmt::If { span, .. }
            | Stmt::While { span, .. }
            | Stmt::For { span, .. }
            | Stmt::Return { span, .. } => span.clone(),
            Stmt::Expr(e) => e.span.clone(),
            Stmt::Pass(s) | Stmt::Break(s) | Stmt::Continue(s) => s.clone(),
        }
    }
}

/// Binary arithmetic and bitwise operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
        }
    }
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Plus,
    Invert,
    Not,
}

/// An expression.
#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    Int(u64),
    Bool(bool),
    Str(String),
    Name(String),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `a < b <= c`: Python's chained comparison.
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Call {
        callee: Box<Expr>,
        args: Vec<Expr>,
    },
    Attr(Box<Expr>, Name),
    Subscript(Box<Expr>, Box<Expr>),
    Tuple(Vec<Expr>),
    Dict(Vec<(Expr, Expr)>),
    None,
}
