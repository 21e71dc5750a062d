//! The builtins, as a table: name → handler. The names are the ones `let` cannot rebind and
//! the candidates of "did you mean" notes; each handler checks its arguments and emits its
//! ops (constants fold where every operand is known).

mod fp4;
mod math;
mod memory;
mod misc;
mod mma;
mod reduce;
mod shape;
pub(crate) use shape::check_tile_size;

use super::*;

/// A builtin's handler: the call's name (several builtins share one), arguments and span.
pub(crate) type Handler = fn(&mut Cx, &str, &[ast::Arg], Span) -> R<Val>;

/// Every builtin function of the language.
pub(crate) const BUILTINS: &[(&str, Handler)] = &[
    ("abs", math::unary),
    ("arange", shape::arange),
    ("argmax", reduce::argreduce),
    ("argmin", reduce::argreduce),
    ("atomic_add", memory::atomic),
    ("atomic_cas", memory::atomic),
    ("atomic_max", memory::atomic),
    ("atomic_min", memory::atomic),
    ("bid", misc::bid),
    ("cdiv", misc::cdiv),
    ("ceil", math::unary),
    ("round", math::unary),
    ("rint", math::unary),
    ("trunc", math::unary),
    ("clamp", math::clamp),
    ("cos", math::unary),
    ("cumprod", reduce::scan),
    ("cumsum", reduce::scan),
    ("exp", math::unary),
    ("erf", math::unary),
    ("exp2", math::unary),
    ("floor", math::unary),
    ("fma", math::fma),
    ("full", shape::full),
    ("gather", memory::gather),
    ("isinf", math::isnan),
    ("isnan", math::isnan),
    ("load", memory::load),
    ("log", math::unary),
    ("log2", math::unary),
    ("max", reduce::reduce),
    ("maximum", math::maximum),
    ("min", reduce::reduce),
    ("minimum", math::maximum),
    ("mma", mma::mma),
    ("mma_scaled", mma::mma_scaled),
    ("next_pow2", misc::next_pow2),
    ("num_blocks", misc::num_blocks),
    ("permute", shape::permute),
    ("concat", shape::concat),
    ("pack_fp4", fp4::pack_fp4),
    ("pow", math::pow),
    ("prefetch", memory::prefetch),
    ("print", misc::print),
    ("rand", misc::rand),
    ("range", misc::range),
    ("reshape", shape::reshape),
    ("unpack_fp4", fp4::unpack_fp4),
    ("rsqrt", math::unary),
    ("scan", reduce::scan),
    ("scatter", memory::scatter),
    ("sigmoid", math::sigmoid),
    ("sort", reduce::sort),
    ("argsort", reduce::sort),
    ("topk", reduce::sort),
    ("sin", math::unary),
    ("sqrt", math::unary),
    ("static_assert", misc::static_assert),
    ("store", memory::store),
    ("sum", reduce::reduce),
    ("tanh", math::unary),
    ("truediv", math::truediv),
    ("where", misc::where_),
    ("zeros", shape::full),
];

/// Whether `name` is a builtin function.
pub(crate) fn is_builtin(name: &str) -> bool {
    BUILTINS.iter().any(|(n, _)| *n == name)
}

/// The builtin names.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(n, _)| *n)
}

impl Cx<'_> {
    /// A call: a method (`x.astype(d)`, `x.reshape(s)`) or a builtin of the table.
    pub(crate) fn call(&mut self, callee: &Expr, args: &[ast::Arg], span: Span) -> R<Val> {
        // Methods: `value.astype(d)`, `value.reshape(shape)`, `value.item()`.
        if let ExprKind::Field(base, m) = &callee.kind {
            if m.name == "item" {
                let recv = self.expr(base)?;
                Args::new(self, args, &[], &m.name, span)?;
                return self.item(recv, base.span, span);
            }
            if matches!(m.name.as_str(), "astype" | "reshape") {
                let recv = self.expr(base)?;
                let a = Args::new(self, args, &[("arg", true)], &m.name, span)?;
                return match m.name.as_str() {
                    "astype" => {
                        let d = a.dtype(self, 0)?;
                        self.cast(recv, d, span)
                    }
                    _ => self.reshape(recv, a.get(0), a.span(0), span),
                };
            }
        }
        let ExprKind::Name(name) = &callee.kind else {
            return Err(Diagnostic::error("E0006", "only builtins and methods can be called")
                .with_primary(callee.span, "not callable"));
        };
        if self.lookup(name).is_some() && !is_builtin(name) {
            return Err(Diagnostic::error("E0006", format!("`{name}` is a value, not a function"))
                .with_primary(callee.span, "not callable"));
        }
        match BUILTINS.iter().find(|(n, _)| n == name) {
            Some((_, run)) => run(self, name, args, span),
            None => Err(self.unknown_name(name, callee.span)),
        }
    }
}
