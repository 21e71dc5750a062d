//! `mma(a, b, acc)`: the tensor-core product; `mma_scaled(a, a_scale, b, b_scale, acc)`: the
//! block-scaled one.

use super::super::*;

/// `mma(a, b, acc)`.
pub(super) fn mma(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("a", true), ("b", true), ("acc", true)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    cx.mma(&a, span)
}

/// The first N arguments of a product, every one a tile.
fn tile_operands<const N: usize>(a: &Args, what: &str) -> R<[ValueId; N]> {
    let mut ids = [ValueId(0); N];
    for (k, slot) in ids.iter_mut().enumerate() {
        match a.get(k) {
            Some(Val::Tile(id)) => *slot = *id,
            other => {
                return Err(Diagnostic::error(
                    "E0006",
                    format!("{what}'s operands are tiles, found {}", other.map(kind_name).unwrap_or("nothing")),
                )
                .with_primary(a.span(k), "here"))
            }
        }
    }
    Ok(ids)
}

/// `mma_scaled(a, a_scale, b, b_scale, acc)` (cuTile's order): `Σ_k a[i,k]·a_scale[i,k/V] ·
/// b[k,j]·b_scale[k/V,j] + acc[i,j]`, V = K / Ks.
pub(super) fn mma_scaled(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(
        cx,
        args,
        &[("a", true), ("a_scale", true), ("b", true), ("b_scale", true), ("acc", true)],
        name,
        span,
    )?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let ids: [ValueId; 5] = tile_operands(&a, name)?;
    let tys = ids.map(|i| cx.func.ty(i).clone());
    let shapes = [tys[0].shape(), tys[1].shape(), tys[2].shape(), tys[3].shape(), tys[4].shape()];
    let types = tys.each_ref().map(Type::dtype);
    if let Err(e) = tilec_core::layout::blockscale::scaled_mma_form(shapes, types) {
        return Err(Diagnostic::error("E0008", e).with_primary(span, "this mma_scaled").with_note(
            "packed fp4 (f4e2m1x2) tiles hold two K elements an element: a K-wide product loads K/2 of them",
        ));
    }
    let [x, sa, b, sb, acc] = ids;
    let kind = OpKind::Mma { a: x, b, acc, scales: Some((sa, sb)) };
    Ok(Val::Tile(cx.func.push(kind, tys[4].clone(), Some(span))))
}

impl Cx<'_> {
    pub(crate) fn mma(&mut self, a: &Args, span: Span) -> R<Val> {
        let ids: [ValueId; 3] = tile_operands(a, "mma")?;
        let [ta, tb, tc] = ids.map(|i| self.func.ty(i).clone());
        if ta.shape().len() != 2 || tb.shape().len() != 2 || tc.shape().len() != 2 {
            return Err(Diagnostic::error(
                "E0012",
                format!("mma takes 2-D tiles, got {:?} · {:?} + {:?}", ta.shape(), tb.shape(), tc.shape()),
            )
            .with_primary(span, "reshape the operands to 2-D first"));
        }
        let (m, k, k2, n) = (ta.shape()[0], ta.shape()[1], tb.shape()[0], tb.shape()[1]);
        if k != k2 {
            return Err(Diagnostic::error(
                "E0007",
                format!("mma: a is {m}x{k} but b is {k2}x{n}; the inner dims must agree"),
            )
            .with_primary(a.span(0), format!("{m}x{k}"))
            .with_secondary(a.span(1), format!("{k2}x{n}"))
            .with_note("to multiply by a transposed tile, load it with order=… or permute it"));
        }
        if tc.shape() != [m, n] {
            return Err(Diagnostic::error(
                "E0007",
                format!("mma: a·b is {m}x{n} but the accumulator is {:?}", tc.shape()),
            )
            .with_primary(a.span(2), "accumulator shape"));
        }
        // Two fp8 operands may differ (e4m3 x e5m2 is one instruction); others may not.
        if ta.dtype() != tb.dtype() && !(ta.dtype().is_fp8() && tb.dtype().is_fp8()) {
            return Err(Diagnostic::error("E0008", format!("mma operands are {} and {}", ta.dtype(), tb.dtype()))
                .with_primary(a.span(0), format!("{}", ta.dtype()))
                .with_secondary(a.span(1), format!("{}", tb.dtype()))
                .with_note("cast one of them with .astype"));
        }
        let ok = matches!(
            (ta.dtype(), tc.dtype()),
            (DType::F16 | DType::BF16, DType::F32)
                | (DType::F16, DType::F16)
                | (DType::F32, DType::F32)
                | (DType::F8E4M3 | DType::F8E5M2, DType::F32)
        );
        if !ok {
            return Err(Diagnostic::error(
                "E0008",
                format!("mma of {} operands into a {} accumulator is not supported", ta.dtype(), tc.dtype()),
            )
            .with_primary(span, "here")
            .with_note("supported: f16/bf16 or fp8 (f8e4m3, f8e5m2, mixed) operands with an f32 accumulator, f16 into f16, f32 (tf32) into f32"));
        }
        Ok(Val::Tile(self.func.push(OpKind::Mma { a: ids[0], b: ids[1], acc: ids[2], scales: None }, tc, Some(span))))
    }
}
