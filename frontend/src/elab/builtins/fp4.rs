//! `pack_fp4(lo, hi)` and `unpack_fp4(x, half)`: float tiles into packed FP4 pairs
//! (`f4e2m1x2`) and one half of a pair back to f32.
//!
//! Both are built from integer and float ops the IR already has (comparisons, selects,
//! roundings, shifts, casts) — none of the targets' fp4 conversions exists on sm_90a
//! (`cvt … e2m1x2` is sm_100a/sm_120a's), and this way the interpreter and every target
//! compute the same bits.
//! The rounding is `tilec_core::dtype::to_fp4`'s: nearest, ties to the even encoding,
//! saturating to ±6, NaN to +6, −0 to +0.

use super::super::*;

/// `pack_fp4(lo, hi)`: two float tiles of one shape as one `f4e2m1x2` tile, `lo` in the low
/// nibbles; `pack_fp4(x)`: the pairs along `x`'s last axis (extent 2) — the codes weighted
/// 1 and 16 and summed over that axis, so that where a thread holds both halves of a pair
/// (a `[…, W, 2]` tile loaded as such) the pack stays in its registers.
pub(super) fn pack_fp4(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    if args.len() == 1 {
        return pack_pairs(cx, name, args, span);
    }
    let a = Args::new(cx, args, &[("lo", true), ("hi", true)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let mut nibbles = vec![];
    for i in 0..2 {
        let v = a.get(i).cloned().unwrap_or(Val::Poison);
        let Val::Tile(id) = v else {
            return Err(Diagnostic::error("E0006", format!("pack_fp4 packs tiles, found {}", kind_name(&v)))
                .with_primary(a.span(i), "here"));
        };
        let d = cx.func.ty(id).dtype();
        if !d.is_float() || d.is_storage_only() {
            return Err(Diagnostic::error("E0008", format!("pack_fp4 of {d} values"))
                .with_primary(a.span(i), format!("{d}"))
                .with_note("pack_fp4 takes f16, bf16, f32 or f64 tiles: cast others with .astype(f32)"));
        }
        let f = cx.cast(v, DType::F32, a.span(i))?;
        nibbles.push(cx.fp4_nibble(f, a.span(i))?);
    }
    let (lo, hi) = (nibbles[0].clone(), nibbles[1].clone());
    let (ty_lo, ty_hi) = (cx.func.ty(cx.value_id(&lo)).clone(), cx.func.ty(cx.value_id(&hi)).clone());
    if ty_lo.shape() != ty_hi.shape() {
        return Err(Diagnostic::error(
            "E0007",
            format!("pack_fp4 of a {:?} and a {:?} tile: the halves have one shape", ty_lo.shape(), ty_hi.shape()),
        )
        .with_primary(span, "here"));
    }
    let up = cx.binary(AB::Shl, hi, Val::Int(4), span, span, span)?;
    let byte = cx.binary(AB::BitOr, lo, up, span, span, span)?;
    let byte = cx.cast(byte, DType::U8, span)?;
    cx.cast(byte, DType::F4E2M1X2, span)
}

/// `pack_fp4(x)` of a `[…, W, 2]` float tile: an `f4e2m1x2` tile `[…, W]`.
fn pack_pairs(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("x", true)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let v = a.get(0).cloned().unwrap_or(Val::Poison);
    let s = a.span(0);
    let shape = match &v {
        Val::Tile(id) if cx.func.ty(*id).dtype().is_float() && !cx.func.ty(*id).dtype().is_storage_only() => {
            cx.func.ty(*id).shape().to_vec()
        }
        other => {
            return Err(Diagnostic::error("E0008", format!("pack_fp4 packs a float tile, found {}", kind_name(other)))
                .with_primary(s, "here"))
        }
    };
    let rank = shape.len();
    if rank < 2 || shape[rank - 1] != 2 {
        return Err(Diagnostic::error(
            "E0007",
            format!("pack_fp4 of one {shape:?} tile: its last axis holds the pairs (extent 2)"),
        )
        .with_primary(s, "here")
        .with_note("reshape to (…, W, 2) first, or pass the halves: pack_fp4(lo, hi)"));
    }
    let f = cx.cast(v, DType::F32, s)?;
    let codes = cx.fp4_nibble(f, s)?;
    // Weights 1 (low nibble) and 16 along the pairs' axis.
    let mut wshape = vec![1i64; rank];
    wshape[rank - 1] = 2;
    let idx = cx.func.push(OpKind::Arange, Type::tile(vec![2], DType::I32), Some(s));
    let mut idx = cx.func.push(OpKind::Reshape(idx), Type::tile(wshape.clone(), DType::I32), Some(s));
    // Broadcast one dim at a time (what the lowering takes), innermost first.
    for d in (0..rank - 1).rev() {
        wshape[d] = shape[d];
        idx = cx.as_tile(idx, &wshape, s)?;
    }
    let weight = cx.binary(AB::Mul, Val::Tile(idx), Val::Int(15), s, s, span)?;
    let weight = cx.binary(AB::Add, weight, Val::Int(1), s, s, span)?;
    let weighted = cx.binary(AB::Mul, codes, weight, s, s, span)?;
    let wid = cx.value_id(&weighted);
    let mut rshape = shape.clone();
    rshape[rank - 1] = 1;
    let sum = cx.func.push(
        OpKind::Reduce { kind: ReduceKind::Sum, axis: (rank - 1) as u32, value: wid },
        Type::tile(rshape, DType::I32),
        Some(span),
    );
    let out = cx.func.push(OpKind::Reshape(sum), Type::tile(shape[..rank - 1].to_vec(), DType::I32), Some(span));
    let byte = cx.cast(Val::Tile(out), DType::U8, span)?;
    cx.cast(byte, DType::F4E2M1X2, span)
}

/// `unpack_fp4(x, half)`: the fp4 values of one half (0: the low nibbles) of an `f4e2m1x2`
/// tile, as f32 (exact).
pub(super) fn unpack_fp4(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("x", true), ("half", true)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let half = a.const_int(cx, 1)?;
    if !(0..=1).contains(&half) {
        return Err(Diagnostic::error("E0006", format!("unpack_fp4's half is 0 or 1, not {half}"))
            .with_primary(a.span(1), "0: the low nibbles, 1: the high ones"));
    }
    let x = a.get(0).cloned().unwrap_or(Val::Poison);
    let ok = matches!(&x, Val::Tile(id) if cx.func.ty(*id).dtype() == DType::F4E2M1X2);
    if !ok {
        return Err(Diagnostic::error("E0008", "unpack_fp4 reads an f4e2m1x2 tile")
            .with_primary(a.span(0), "here")
            .with_note("pack float tiles with pack_fp4(lo, hi)"));
    }
    let s = a.span(0);
    let bits = cx.cast(x, DType::U8, s)?;
    let bits = cx.cast(bits, DType::I32, s)?;
    let n = cx.binary(AB::Shr, bits, Val::Int(4 * half), s, s, span)?;
    let n = cx.binary(AB::BitAnd, n, Val::Int(15), s, s, span)?;
    let m = cx.binary(AB::BitAnd, n.clone(), Val::Int(7), s, s, span)?;
    // Codes 0 and 1 are 0 and 0.5 (m / 2); code m ≥ 2 is (2 + m mod 2) · 2^(m / 2 − 2).
    let mf = cx.cast(m.clone(), DType::F32, s)?;
    let small = cx.binary(AB::Mul, mf, Val::Float(0.5), s, s, span)?;
    let odd = cx.binary(AB::BitAnd, m.clone(), Val::Int(1), s, s, span)?;
    let odd = cx.cast(odd, DType::F32, s)?;
    let mant = cx.binary(AB::Add, odd, Val::Float(2.0), s, s, span)?;
    let q = cx.binary(AB::Shr, m.clone(), Val::Int(1), s, s, span)?;
    let is1 = cx.binary(AB::Eq, q.clone(), Val::Int(1), s, s, span)?;
    let is2 = cx.binary(AB::Eq, q, Val::Int(2), s, s, span)?;
    let pow = cx.select(is1, Val::Float(0.5), Val::Float(2.0), [s; 3], span)?;
    let pow = cx.select(is2, Val::Float(1.0), pow, [s; 3], span)?;
    let big = cx.binary(AB::Mul, mant, pow, s, s, span)?;
    let lt2 = cx.binary(AB::Lt, m, Val::Int(2), s, s, span)?;
    let mag = cx.select(lt2, small, big, [s; 3], span)?;
    let neg = cx.binary(AB::Ge, n, Val::Int(8), s, s, span)?;
    let minus = cx.unary(UnaryOp::Neg, mag.clone(), s)?;
    cx.select(neg, minus, mag, [s; 3], span)
}

impl Cx<'_> {
    /// `op` of a float tile, elementwise.
    fn float_unary(&mut self, op: UnOp, v: &Val, s: Span) -> Val {
        let id = self.value_id(v);
        let ty = self.func.ty(id).clone();
        wrap(v, self.func.push(OpKind::Unary { op, value: id, flags: MathFlags::default() }, ty, Some(s)))
    }

    /// The E2M1 nibble (an i32 tile) of an f32 tile: magnitude code plus 8 for a negative
    /// value.
    ///
    /// Below 2 the codes are the halves (code `c` is `c / 2`), from 2 to 4 the units past 2
    /// (`c - 2`), then 4 and 6: so the code is `round(2a)`, `round(a) + 2`, or 6 below
    /// 5 and 7 above, `round` to the nearest integer, ties to even — the even encoding, as
    /// the offsets 2 and the scale 2 keep a code's parity. Each range's rounding meets the
    /// next at its edge (`round(2a)` is 4 from 1.75 up to 2, `round(a) + 2` is 6 at 3.5).
    /// NaN is below nothing: 7 (+6, E2M1 has no NaN). Three compares, two roundings and three
    /// selects an element, where counting the seven midpoints it passes took seven compares,
    /// seven conversions, six adds and a NaN test: quant_fp4's SASS is 14 % shorter and it
    /// runs 5 % faster on an H200 (`bench/results/2026-11-30-session42/`).
    fn fp4_nibble(&mut self, v: Val, s: Span) -> R<Val> {
        let abs = self.float_unary(UnOp::Abs, &v, s);
        let twice = self.binary(AB::Mul, abs.clone(), Val::Float(2.0), s, s, s)?;
        let halves = self.float_unary(UnOp::RoundEven, &twice, s);
        let units = self.float_unary(UnOp::RoundEven, &abs, s);
        let units = self.binary(AB::Add, units, Val::Float(2.0), s, s, s)?;
        let le5 = self.binary(AB::Le, abs.clone(), Val::Float(5.0), s, s, s)?;
        let top = self.select(le5, Val::Float(6.0), Val::Float(7.0), [s; 3], s)?;
        let lt4 = self.binary(AB::Lt, abs.clone(), Val::Float(4.0), s, s, s)?;
        let code = self.select(lt4, units, top, [s; 3], s)?;
        let lt2 = self.binary(AB::Lt, abs, Val::Float(2.0), s, s, s)?;
        let code = self.select(lt2, halves, code, [s; 3], s)?;
        let code = self.cast(code, DType::I32, s)?;
        let neg = self.binary(AB::Lt, v, Val::Float(0.0), s, s, s)?;
        let neg = self.cast(neg, DType::I32, s)?;
        let sign = self.binary(AB::Mul, neg, Val::Int(8), s, s, s)?;
        self.binary(AB::BitOr, code, sign, s, s, s)
    }
}
