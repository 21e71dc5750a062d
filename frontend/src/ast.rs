//! The syntax tree, with a span on every node.

use tilec_core::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub kernels: Vec<Kernel>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: Ident,
    pub params: Vec<ParamDecl>,
    pub grid: Option<Expr>,
    pub hints: Vec<(Ident, Expr)>,
    pub tune: Vec<(Ident, Expr)>,
    /// `require <bool expr>` items of the tune block: constraints that prune the space.
    pub tune_require: Vec<Expr>,
    /// `require A, B` clauses of the kernel: launch requirements, each with its source text
    /// and line.
    pub requires: Vec<(Expr, String, u32)>,
    pub body: Block,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    pub is_const: bool,
    pub name: Ident,
    pub ty: TypeExpr,
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeExpr {
    /// `tensor<DTYPE, RANK>` or `tensor<DTYPE, [EXTENT, …]>`; DTYPE is a dtype name or a
    /// `dtype` constant. `extents` is empty when only the rank is written.
    Tensor { dtype: Ident, rank: i64, extents: Vec<ExtentDecl>, span: Span },
    /// `int`, `bool`, `dtype`, `f32`, …
    Named(Ident),
}

/// One extent of `tensor<T, [M, 64, _]>`.
#[derive(Clone, Debug, PartialEq)]
pub enum ExtentDecl {
    /// `_`: any extent.
    Any(Span),
    /// A shape name: every tensor that names it has the same extent there.
    Named(Ident),
    /// A fixed extent.
    Fixed(i64, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `let x = e;`, or `let (a, b) = e;` binding the items of a tuple (`sort`, `topk`).
    Let(Vec<Ident>, Expr),
    Assign(Ident, AssignOp, Expr),
    For {
        var: Ident,
        range: Expr,
        body: Block,
    },
    If {
        cond: Expr,
        then: Block,
        els: Option<Box<Stmt>>,
    },
    /// An `else { … }` block (only as the `els` of an `If`).
    Block(Block),
    Expr(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Le,
    Ge,
    Lt,
    Gt,
    BitOr,
    BitXor,
    BitAnd,
    Shl,
    Shr,
    Add,
    Sub,
    FloorDiv,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "or",
            BinOp::And => "and",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Le => "<=",
            BinOp::Ge => ">=",
            BinOp::Lt => "<",
            BinOp::Gt => ">",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::FloorDiv => "//",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    /// `not`/`!`: logical negation of bools.
    Not,
    /// `~`: bitwise complement of integers (of bools, the same as `not`).
    BitNot,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub enum IndexItem {
    Expr(Expr),
    /// `:`
    Full(Span),
    /// `None`: a new axis of extent 1.
    NewAxis(Span),
    /// `a:b`, `a:`, `:b`: a constant range of the dim.
    Range(Option<Expr>, Option<Expr>, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Name(String),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Call(Box<Expr>, Vec<Arg>),
    Index(Box<Expr>, Vec<IndexItem>),
    Field(Box<Expr>, Ident),
    Tuple(Vec<Expr>),
    ByTarget(Vec<(Ident, Expr)>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
    /// Height of the expression tree (a leaf is 1), computed as the parser builds it so that
    /// too deep an expression is rejected before anything recurses over it.
    pub depth: u32,
}

impl Expr {
    /// A node over `kind`, its depth one more than its deepest child's.
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        let child = match &kind {
            ExprKind::Unary(_, e) | ExprKind::Field(e, _) => e.depth,
            ExprKind::Binary(_, a, b) => a.depth.max(b.depth),
            ExprKind::Call(f, args) => args.iter().map(|a| a.value.depth).fold(f.depth, u32::max),
            ExprKind::Index(e, items) => {
                let depth = |i: &IndexItem| match i {
                    IndexItem::Expr(x) => x.depth,
                    IndexItem::Range(lo, hi, _) => lo.iter().chain(hi).map(|x| x.depth).max().unwrap_or(0),
                    IndexItem::Full(_) | IndexItem::NewAxis(_) => 0,
                };
                items.iter().map(depth).fold(e.depth, u32::max)
            }
            ExprKind::Tuple(es) => es.iter().map(|e| e.depth).max().unwrap_or(0),
            ExprKind::ByTarget(kvs) => kvs.iter().map(|(_, e)| e.depth).max().unwrap_or(0),
            _ => 0,
        };
        Expr { kind, span, depth: child + 1 }
    }
}
