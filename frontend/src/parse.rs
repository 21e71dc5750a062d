//! Text → [`ast::File`](crate::ast::File), through the pest grammar in `tile.pest`.
//!
//! Syntax errors become `E0001` diagnostics with the span pest reports and the rules it
//! expected, renamed to words a user knows. The parser never panics: every `unwrap` of a
//! pest pair is replaced by a check that yields an internal syntax error instead.

use crate::ast::*;
use pest::iterators::Pair;
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser;
use std::sync::OnceLock;
use tilec_core::{Diagnostic, Span};

#[derive(pest_derive::Parser)]
#[grammar = "tile.pest"]
struct TileParser;

fn pratt() -> &'static PrattParser<Rule> {
    static P: OnceLock<PrattParser<Rule>> = OnceLock::new();
    P.get_or_init(|| {
        PrattParser::new()
            .op(Op::infix(Rule::or, Assoc::Left))
            .op(Op::infix(Rule::and, Assoc::Left))
            .op(Op::infix(Rule::eq, Assoc::Left)
                | Op::infix(Rule::ne, Assoc::Left)
                | Op::infix(Rule::le, Assoc::Left)
                | Op::infix(Rule::ge, Assoc::Left)
                | Op::infix(Rule::lt, Assoc::Left)
                | Op::infix(Rule::gt, Assoc::Left))
            .op(Op::infix(Rule::bitor, Assoc::Left))
            .op(Op::infix(Rule::bitxor, Assoc::Left))
            .op(Op::infix(Rule::bitand, Assoc::Left))
            .op(Op::infix(Rule::shl, Assoc::Left) | Op::infix(Rule::shr, Assoc::Left))
            .op(Op::infix(Rule::add, Assoc::Left) | Op::infix(Rule::sub, Assoc::Left))
            .op(Op::infix(Rule::mul, Assoc::Left)
                | Op::infix(Rule::div, Assoc::Left)
                | Op::infix(Rule::floordiv, Assoc::Left)
                | Op::infix(Rule::rem, Assoc::Left))
            .op(Op::prefix(Rule::neg) | Op::prefix(Rule::not) | Op::prefix(Rule::bitnot))
            .op(Op::postfix(Rule::call) | Op::postfix(Rule::index) | Op::postfix(Rule::field))
    })
}

fn span_of(p: &Pair<Rule>) -> Span {
    let s = p.as_span();
    Span::new(s.start(), s.end())
}

fn rule_name(r: &Rule) -> &'static str {
    match r {
        Rule::EOI => "end of file",
        Rule::kernel => "`kernel`",
        Rule::ident => "a name",
        Rule::let_names => "`(names, …)`",
        Rule::param => "a parameter",
        Rule::const_kw => "`const`",
        Rule::type_expr | Rule::tensor_type => "a type",
        Rule::block => "`{`",
        Rule::let_stmt | Rule::for_stmt | Rule::if_stmt | Rule::assign_stmt | Rule::expr_stmt => "a statement",
        Rule::assign_op => "`=`",
        Rule::semi => "`;`",
        Rule::expr | Rule::primary => "an expression",
        Rule::int => "an integer",
        Rule::float => "a number",
        Rule::string => "a string",
        Rule::kv => "`name = value`",
        Rule::call => "`(`",
        Rule::index => "`[`",
        Rule::field => "`.`",
        Rule::arg => "an argument",
        Rule::grid_clause => "`grid`",
        Rule::hints_clause => "`hints`",
        Rule::tune_clause => "`tune`",
        Rule::require | Rule::require_clause => "`require`",
        Rule::add | Rule::sub | Rule::mul | Rule::div | Rule::floordiv | Rule::rem => "an operator",
        Rule::or | Rule::and | Rule::eq | Rule::ne | Rule::le | Rule::ge | Rule::lt | Rule::gt => "an operator",
        Rule::bitor | Rule::bitxor | Rule::bitand | Rule::shl | Rule::shr | Rule::bitnot => "an operator",
        _ => "a token",
    }
}

fn syntax_error(e: pest::error::Error<Rule>, len: usize) -> Diagnostic {
    let (start, end) = match e.location {
        pest::error::InputLocation::Pos(p) => (p, (p + 1).min(len.max(p))),
        pest::error::InputLocation::Span((a, b)) => (a, b),
    };
    let msg = match &e.variant {
        pest::error::ErrorVariant::ParsingError { positives, negatives } => {
            let mut want: Vec<&str> = positives.iter().map(rule_name).collect();
            want.sort_unstable();
            want.dedup();
            if !want.is_empty() {
                format!("expected {}", want.join(" or "))
            } else if !negatives.is_empty() {
                let mut bad: Vec<&str> = negatives.iter().map(rule_name).collect();
                bad.sort_unstable();
                bad.dedup();
                format!("unexpected {}", bad.join(" or "))
            } else {
                "syntax error".to_string()
            }
        }
        pest::error::ErrorVariant::CustomError { message } => message.clone(),
    };
    Diagnostic::error("E0001", format!("syntax error: {msg}")).with_primary(Span::new(start, end), msg)
}

fn internal(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error("E0001", format!("syntax error: malformed {what}")).with_primary(span, "here")
}

type R<T> = Result<T, Diagnostic>;

/// A decimal or `0x` hexadecimal literal, if it fits in an i64.
fn parse_int(s: &str) -> Option<i64> {
    match s.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16).ok(),
        None => s.parse::<i64>().ok(),
    }
}

/// Parses a whole file.
pub fn parse_file(text: &str) -> Result<File, Vec<Diagnostic>> {
    check_nesting(text).map_err(|d| vec![d])?;
    let mut pairs = TileParser::parse(Rule::file, text).map_err(|e| vec![syntax_error(e, text.len())])?;
    let file = pairs.next().ok_or_else(|| vec![internal(Span::default(), "file")])?;
    let mut kernels = vec![];
    for p in file.into_inner() {
        if p.as_rule() == Rule::kernel {
            kernels.push(kernel(p).map_err(|d| vec![d])?);
        }
    }
    Ok(File { kernels })
}

fn ident(p: Pair<Rule>) -> Ident {
    Ident { name: p.as_str().to_string(), span: span_of(&p) }
}

fn next<'a>(it: &mut impl Iterator<Item = Pair<'a, Rule>>, span: Span, what: &str) -> R<Pair<'a, Rule>> {
    it.next().ok_or_else(|| internal(span, what))
}

fn kernel(p: Pair<Rule>) -> R<Kernel> {
    let span = span_of(&p);
    let mut it = p.into_inner();
    let name = ident(next(&mut it, span, "kernel")?);
    let mut k = Kernel {
        name,
        params: vec![],
        grid: None,
        hints: vec![],
        tune: vec![],
        tune_require: vec![],
        requires: vec![],
        body: Block { stmts: vec![], span },
        span,
    };
    for q in it {
        match q.as_rule() {
            Rule::param => k.params.push(param(q)?),
            Rule::grid_clause => {
                let s = span_of(&q);
                k.grid = Some(expr(next(&mut q.into_inner(), s, "grid")?)?);
            }
            Rule::hints_clause => k.hints.extend(kvs(q)?),
            Rule::require_clause => {
                for e in q.into_inner() {
                    // The pair's text may run into a comment after it: `#` starts one on any
                    // line and never occurs in an expression.
                    let code = e.as_str().lines().map(|l| l.split('#').next().unwrap_or(""));
                    let text = code.flat_map(str::split_whitespace).collect::<Vec<_>>().join(" ");
                    let line = e.line_col().0 as u32;
                    k.requires.push((expr(e)?, text, line));
                }
            }
            Rule::tune_clause => {
                for item in q.into_inner() {
                    let s = span_of(&item);
                    if item.as_rule() == Rule::require {
                        k.tune_require.push(expr(next(&mut item.into_inner(), s, "require")?)?);
                    } else {
                        k.tune.push(kv(item)?);
                    }
                }
            }
            Rule::block => k.body = block(q)?,
            _ => return Err(internal(span_of(&q), "kernel")),
        }
    }
    Ok(k)
}

fn kvs(p: Pair<Rule>) -> R<Vec<(Ident, Expr)>> {
    p.into_inner().map(kv).collect()
}

fn kv(p: Pair<Rule>) -> R<(Ident, Expr)> {
    let s = span_of(&p);
    let mut it = p.into_inner();
    let k = ident(next(&mut it, s, "key")?);
    let v = expr(next(&mut it, s, "value")?)?;
    Ok((k, v))
}

fn param(p: Pair<Rule>) -> R<ParamDecl> {
    let span = span_of(&p);
    let mut it = p.into_inner().peekable();
    let is_const = it.peek().map(|q| q.as_rule() == Rule::const_kw).unwrap_or(false);
    if is_const {
        it.next();
    }
    let name = ident(next(&mut it, span, "parameter")?);
    let tp = next(&mut it, span, "parameter type")?;
    let inner = next(&mut tp.into_inner(), span, "type")?;
    let ty = match inner.as_rule() {
        Rule::tensor_type => {
            let ts = span_of(&inner);
            let mut ti = inner.into_inner();
            let dtype = ident(next(&mut ti, ts, "tensor type")?);
            let rp = next(&mut ti, ts, "tensor rank")?;
            let mut extents = vec![];
            let rank = if rp.as_rule() == Rule::extents {
                for e in rp.into_inner() {
                    let sp = span_of(&e);
                    let v = next(&mut e.into_inner(), sp, "extent")?;
                    extents.push(match v.as_rule() {
                        Rule::int => ExtentDecl::Fixed(
                            parse_int(v.as_str()).ok_or_else(|| {
                                Diagnostic::error("E0016", "tensor extent is too large").with_primary(sp, "here")
                            })?,
                            sp,
                        ),
                        _ if v.as_str() == "_" => ExtentDecl::Any(sp),
                        _ => ExtentDecl::Named(ident(v)),
                    });
                }
                extents.len() as i64
            } else {
                rp.as_str().parse::<i64>().map_err(|_| {
                    Diagnostic::error("E0016", "tensor rank is too large")
                        .with_primary(span_of(&rp), "not a valid rank")
                })?
            };
            TypeExpr::Tensor { dtype, rank, extents, span: ts }
        }
        _ => TypeExpr::Named(ident(inner)),
    };
    let default = it.next().map(expr).transpose()?;
    Ok(ParamDecl { is_const, name, ty, default, span })
}

fn block(p: Pair<Rule>) -> R<Block> {
    let span = span_of(&p);
    let stmts = p.into_inner().map(stmt).collect::<R<Vec<_>>>()?;
    Ok(Block { stmts, span })
}

fn stmt(p: Pair<Rule>) -> R<Stmt> {
    let span = span_of(&p);
    let rule = p.as_rule();
    let mut it = p.into_inner();
    let kind = match rule {
        Rule::let_stmt => {
            let target = next(&mut it, span, "let")?;
            let names = match target.as_rule() {
                Rule::let_names => target.into_inner().map(ident).collect(),
                _ => vec![ident(target)],
            };
            StmtKind::Let(names, expr(next(&mut it, span, "let")?)?)
        }
        Rule::assign_stmt => {
            let n = ident(next(&mut it, span, "assignment")?);
            let op = match next(&mut it, span, "assignment")?.as_str() {
                "+=" => AssignOp::Add,
                "-=" => AssignOp::Sub,
                "*=" => AssignOp::Mul,
                "/=" => AssignOp::Div,
                _ => AssignOp::Set,
            };
            StmtKind::Assign(n, op, expr(next(&mut it, span, "assignment")?)?)
        }
        Rule::for_stmt => {
            let var = ident(next(&mut it, span, "for")?);
            let range = expr(next(&mut it, span, "for")?)?;
            StmtKind::For { var, range, body: block(next(&mut it, span, "for")?)? }
        }
        Rule::if_stmt => {
            let cond = expr(next(&mut it, span, "if")?)?;
            let then = block(next(&mut it, span, "if")?)?;
            let els = match it.next() {
                None => None,
                Some(q) if q.as_rule() == Rule::block => {
                    let b = block(q)?;
                    Some(Box::new(Stmt { span: b.span, kind: StmtKind::Block(b) }))
                }
                Some(q) => Some(Box::new(stmt(q)?)),
            };
            StmtKind::If { cond, then, els }
        }
        Rule::expr_stmt => StmtKind::Expr(expr(next(&mut it, span, "statement")?)?),
        _ => return Err(internal(span, "statement")),
    };
    Ok(Stmt { kind, span })
}

fn expr(p: Pair<Rule>) -> R<Expr> {
    // The Pratt parser recurses on runs of prefix operators before any node exists to
    // measure: bound them (and the expression's length) first.
    let span = span_of(&p);
    let (mut run, mut longest, mut parts) = (0u32, 0u32, 0u32);
    for q in p.clone().into_inner() {
        parts += 1;
        run = if matches!(q.as_rule(), Rule::neg | Rule::not | Rule::bitnot) { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    if longest > MAX_EXPR_DEPTH || parts > 4 * MAX_EXPR_DEPTH {
        return Err(Diagnostic::error("E0001", format!("expression nested deeper than {MAX_EXPR_DEPTH} operations"))
            .with_primary(span, "this expression")
            .with_note("split it into several `let` statements"));
    }
    pratt()
        .map_primary(primary)
        .map_prefix(|op, rhs| {
            let rhs = rhs?;
            let span = span_of(&op).to(rhs.span);
            let u = match op.as_rule() {
                Rule::neg => UnaryOp::Neg,
                Rule::bitnot => UnaryOp::BitNot,
                _ => UnaryOp::Not,
            };
            node(ExprKind::Unary(u, Box::new(rhs)), span)
        })
        .map_postfix(|lhs, op| {
            let lhs = lhs?;
            let span = lhs.span.to(span_of(&op));
            let kind = match op.as_rule() {
                Rule::call => {
                    let args = op.into_inner().map(arg).collect::<R<Vec<_>>>()?;
                    ExprKind::Call(Box::new(lhs), args)
                }
                Rule::index => {
                    let items = op.into_inner().map(index_item).collect::<R<Vec<_>>>()?;
                    ExprKind::Index(Box::new(lhs), items)
                }
                Rule::field => {
                    let s = span_of(&op);
                    ExprKind::Field(Box::new(lhs), ident(next(&mut op.into_inner(), s, "field")?))
                }
                _ => return Err(internal(span, "postfix")),
            };
            node(kind, span)
        })
        .map_infix(|lhs, op, rhs| {
            let (lhs, rhs) = (lhs?, rhs?);
            let span = lhs.span.to(rhs.span);
            let b = match op.as_rule() {
                Rule::or => BinOp::Or,
                Rule::and => BinOp::And,
                Rule::eq => BinOp::Eq,
                Rule::ne => BinOp::Ne,
                Rule::le => BinOp::Le,
                Rule::ge => BinOp::Ge,
                Rule::lt => BinOp::Lt,
                Rule::gt => BinOp::Gt,
                Rule::bitor => BinOp::BitOr,
                Rule::bitxor => BinOp::BitXor,
                Rule::bitand => BinOp::BitAnd,
                Rule::shl => BinOp::Shl,
                Rule::shr => BinOp::Shr,
                Rule::add => BinOp::Add,
                Rule::sub => BinOp::Sub,
                Rule::floordiv => BinOp::FloorDiv,
                Rule::mul => BinOp::Mul,
                Rule::div => BinOp::Div,
                Rule::rem => BinOp::Rem,
                _ => return Err(internal(span, "operator")),
            };
            node(ExprKind::Binary(b, Box::new(lhs), Box::new(rhs)), span)
        })
        .parse(p.into_inner())
}

fn arg(p: Pair<Rule>) -> R<Arg> {
    let span = span_of(&p);
    let mut it = p.into_inner();
    let first = next(&mut it, span, "argument")?;
    if first.as_rule() == Rule::ident {
        let value = expr(next(&mut it, span, "argument")?)?;
        Ok(Arg { name: Some(ident(first)), value })
    } else {
        Ok(Arg { name: None, value: expr(first)? })
    }
}

fn index_item(p: Pair<Rule>) -> R<IndexItem> {
    let span = span_of(&p);
    let q = next(&mut p.into_inner(), span, "index")?;
    Ok(match q.as_rule() {
        Rule::none_kw => IndexItem::NewAxis(span_of(&q)),
        Rule::full_slice => IndexItem::Full(span_of(&q)),
        Rule::range_slice => {
            let s = span_of(&q);
            let (mut lo, mut hi) = (None, None);
            for b in q.into_inner() {
                let bs = span_of(&b);
                let e = expr(next(&mut b.clone().into_inner(), bs, "bound")?)?;
                match b.as_rule() {
                    Rule::slice_lo => lo = Some(e),
                    _ => hi = Some(e),
                }
            }
            IndexItem::Range(lo, hi, s)
        }
        _ => IndexItem::Expr(expr(q)?),
    })
}

fn primary(p: Pair<Rule>) -> R<Expr> {
    let span = span_of(&p);
    let kind = match p.as_rule() {
        Rule::int => ExprKind::Int(parse_int(p.as_str()).ok_or_else(|| {
            Diagnostic::error("E0001", "integer literal does not fit in 64 bits").with_primary(span, "too large")
        })?),
        Rule::float => ExprKind::Float(
            p.as_str()
                .parse::<f64>()
                .map_err(|_| Diagnostic::error("E0001", "malformed number").with_primary(span, "here"))?,
        ),
        Rule::bool_lit => ExprKind::Bool(p.as_str() == "true"),
        Rule::string => {
            let s = p.as_str();
            ExprKind::Str(s[1..s.len() - 1].to_string())
        }
        Rule::ident => ExprKind::Name(p.as_str().to_string()),
        Rule::by_target => ExprKind::ByTarget(p.into_inner().map(kv).collect::<R<Vec<_>>>()?),
        Rule::tuple_or_paren => {
            let items: Vec<Pair<Rule>> = p.into_inner().collect();
            let trailing = items.last().map(|q| q.as_rule() == Rule::trailing_comma).unwrap_or(false);
            let exprs = items.into_iter().filter(|q| q.as_rule() == Rule::expr).map(expr).collect::<R<Vec<_>>>()?;
            if exprs.len() == 1 && !trailing {
                let mut e = exprs.into_iter().next().ok_or_else(|| internal(span, "parenthesis"))?;
                e.span = span;
                return Ok(e);
            }
            ExprKind::Tuple(exprs)
        }
        Rule::expr => return expr(p),
        _ => return Err(internal(span, "expression")),
    };
    node(kind, span)
}

/// The deepest expression the parser builds. The elaborator recurses over expressions (and
/// dropping a tree recurses too): far deeper than any kernel writes, well inside a thread's
/// stack.
pub const MAX_EXPR_DEPTH: u32 = 200;

/// The deepest nesting of brackets (`(`, `[`, `{`) the parser accepts: pest's parser recurses
/// on it, and so do blocks in the elaborator.
pub const MAX_NESTING: usize = 64;

/// An expression node, or an error when it is deeper than [`MAX_EXPR_DEPTH`].
fn node(kind: ExprKind, span: Span) -> R<Expr> {
    let e = Expr::new(kind, span);
    if e.depth > MAX_EXPR_DEPTH {
        return Err(Diagnostic::error("E0001", format!("expression nested deeper than {MAX_EXPR_DEPTH} operations"))
            .with_primary(span, "this expression")
            .with_note("split it into several `let` statements"));
    }
    Ok(e)
}

/// Rejects bracket nesting deeper than [`MAX_NESTING`] before the parser recurses into it
/// (strings and comments are skipped).
fn check_nesting(text: &str) -> Result<(), Diagnostic> {
    let (mut depth, mut in_str, mut in_comment) = (0usize, false, false);
    for (i, c) in text.char_indices() {
        match c {
            '\n' => {
                in_comment = false;
                in_str = false;
            }
            _ if in_comment => {}
            '"' => in_str = !in_str,
            _ if in_str => {}
            '#' => in_comment = true,
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Diagnostic::error(
                        "E0001",
                        format!("brackets nested deeper than {MAX_NESTING} levels"),
                    )
                    .with_primary(Span::new(i, i + 1), "too deep")
                    .with_note("split the expression with `let`, or the block into several"));
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The source as the grammar sees it, for cache keys: the parse tree with each rule's name,
/// the text of its leaves and the literal tokens between its children, without whitespace or
/// comments. Two files with the same canonical text parse to the same tree from the same
/// tokens, so they compile alike; a change to a comment or to spacing leaves it unchanged.
/// `None` when the text does not parse (its compilation reports why).
pub fn canonical_text(text: &str) -> Option<String> {
    let pairs = TileParser::parse(Rule::file, text).ok()?;
    let mut out = String::with_capacity(text.len());
    for p in pairs {
        canonical_pair(text, p, &mut out);
    }
    Some(out)
}

fn canonical_pair(text: &str, p: Pair<Rule>, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, "{:?}", p.as_rule());
    let span = p.as_span();
    let inner: Vec<Pair<Rule>> = p.into_inner().collect();
    if inner.is_empty() {
        let _ = write!(out, "{:?}", span.as_str());
        return;
    }
    out.push('(');
    let mut at = span.start();
    for c in inner {
        let (s, e) = (c.as_span().start(), c.as_span().end());
        literal_tokens(text.get(at..s).unwrap_or(""), out);
        canonical_pair(text, c, out);
        out.push(' ');
        at = e;
    }
    literal_tokens(text.get(at..span.end()).unwrap_or(""), out);
    out.push(')');
}

/// The literal tokens between two children of a rule: everything but whitespace and `#`
/// comments (strings and numbers are rules of their own, never in such a gap).
fn literal_tokens(gap: &str, out: &mut String) {
    for line in gap.split('\n') {
        let code = line.split('#').next().unwrap_or("");
        out.extend(code.chars().filter(|c| !c.is_whitespace()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_keeps_tokens_and_drops_spacing_and_comments() {
        let c = |t: &str| canonical_text(t).unwrap();
        let a = c("kernel k(x: f32) { let a = x + 2 * 3; }");
        assert_eq!(a, c("# doc\nkernel  k( x : f32 )\n{\n    let a = x+2*3;  # why\n}\n"));
        assert_ne!(a, c("kernel k(x: f32) { let a = x - 2 * 3; }"));
        assert_ne!(a, c("kernel k(x: f32) { let b = x + 2 * 3; }"));
        assert_ne!(a, c("kernel k(x: f32) { let a = (x + 2) * 3; }"));
        assert_ne!(a, c("kernel k(x: f32) { let a = x + 2 * 3; let c = 1; }"));
        assert_eq!(canonical_text("kernel ("), None);
    }

    #[test]
    fn parses_precedence() {
        let f = parse_file("kernel k() { let a = 1 + 2 * 3 // 4; }").unwrap();
        let StmtKind::Let(_, e) = &f.kernels[0].body.stmts[0].kind else { panic!() };
        let ExprKind::Binary(BinOp::Add, _, r) = &e.kind else { panic!("{e:?}") };
        assert!(matches!(r.kind, ExprKind::Binary(BinOp::FloorDiv, _, _)));
    }

    #[test]
    fn parses_calls_index_fields() {
        let f = parse_file(
            "kernel k(x: tensor<f16, 2>) { let a = load(x, index=(0, 1), shape=(1, 64))[:, None].astype(f32); }",
        )
        .unwrap();
        assert_eq!(f.kernels[0].params.len(), 1);
    }

    #[test]
    fn reports_syntax_error_with_span() {
        let e = parse_file("kernel k() { let = 3; }").unwrap_err();
        assert_eq!(e[0].code, "E0001");
        assert_eq!(e[0].labels[0].span.start, 17);
    }

    #[test]
    fn huge_int_is_an_error_not_a_panic() {
        let e = parse_file("kernel k() { let a = 99999999999999999999999; }").unwrap_err();
        assert!(e[0].message.contains("64 bits"));
    }
}
