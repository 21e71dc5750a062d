//! Constant folding of the binary operators, and NumPy broadcasting of shapes.

use super::*;

pub(crate) fn fold_int(op: AB, x: i64, y: i64, sy: Span, span: Span) -> R<Val> {
    let ovf = || Diagnostic::error("E0014", "integer overflow in a constant expression").with_primary(span, "here");
    let zero = || Diagnostic::error("E0014", "division by zero in a constant expression").with_primary(sy, "this is 0");
    Ok(match op {
        AB::Add => Val::Int(x.checked_add(y).ok_or_else(ovf)?),
        AB::Sub => Val::Int(x.checked_sub(y).ok_or_else(ovf)?),
        AB::Mul => Val::Int(x.checked_mul(y).ok_or_else(ovf)?),
        AB::FloorDiv => {
            if y == 0 {
                return Err(zero());
            }
            Val::Int(x.checked_div_euclid(y).ok_or_else(ovf)?)
        }
        AB::Rem => {
            if y == 0 {
                return Err(zero());
            }
            Val::Int(x.checked_rem_euclid(y).ok_or_else(ovf)?)
        }
        AB::Div => {
            if y == 0 {
                return Err(zero());
            }
            Val::Float(x as f64 / y as f64)
        }
        AB::Eq => Val::Bool(x == y),
        AB::Ne => Val::Bool(x != y),
        AB::Lt => Val::Bool(x < y),
        AB::Le => Val::Bool(x <= y),
        AB::Gt => Val::Bool(x > y),
        AB::Ge => Val::Bool(x >= y),
        AB::BitAnd => Val::Int(x & y),
        AB::BitOr => Val::Int(x | y),
        AB::BitXor => Val::Int(x ^ y),
        AB::Shl | AB::Shr => {
            if !(0..64).contains(&y) {
                return Err(
                    Diagnostic::error("E0014", format!("shift by {y} is out of range")).with_primary(sy, "here")
                );
            }
            Val::Int(if op == AB::Shl { x.checked_shl(y as u32).ok_or_else(ovf)? } else { x >> y })
        }
        AB::And | AB::Or => return Err(Diagnostic::error("E0006", "`and`/`or` take bools").with_primary(span, "here")),
    })
}

pub(crate) fn fold_float(op: AB, x: f64, y: f64, span: Span) -> R<Val> {
    Ok(match op {
        AB::Add => Val::Float(x + y),
        AB::Sub => Val::Float(x - y),
        AB::Mul => Val::Float(x * y),
        AB::Div => Val::Float(x / y),
        AB::FloorDiv => Val::Float((x / y).floor()),
        AB::Rem => Val::Float(py_fmod(x, y)),
        AB::Eq => Val::Bool(x == y),
        AB::Ne => Val::Bool(x != y),
        AB::Lt => Val::Bool(x < y),
        AB::Le => Val::Bool(x <= y),
        AB::Gt => Val::Bool(x > y),
        AB::Ge => Val::Bool(x >= y),
        _ => {
            return Err(Diagnostic::error("E0006", format!("`{}` does not apply to floats", op.symbol()))
                .with_primary(span, "here"))
        }
    })
}

/// Python's float `%`: the remainder with the divisor's sign.
pub(crate) fn py_fmod(x: f64, y: f64) -> f64 {
    let r = x % y;
    if r != 0.0 && (r < 0.0) != (y < 0.0) {
        r + y
    } else {
        r
    }
}

pub(crate) fn broadcast_shape(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (x, y) {
            _ if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}
