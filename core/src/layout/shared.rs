//! Shared-memory layouts: how a tile is placed in the kernel's shared buffer.

use serde::Serialize;

/// `#tilegpu.shared<pad>`: a tile in shared memory, row-major, with `pad` elements after each
/// run of the last dim, so that threads walking a column (a transposed access) meet a new
/// bank every row instead of all the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Shared {
    pub pad: i64,
}

impl Shared {
    /// The scratch layout of a layout exchange of a tile of `shape`: one 4-byte word of
    /// padding per row (none for a single row).
    pub fn for_exchange(shape: &[i64], elem_bytes: u32) -> Shared {
        let rows: i64 = shape.iter().rev().skip(1).product();
        Shared { pad: if rows > 1 { (4 / i64::from(elem_bytes.max(1))).max(1) } else { 0 } }
    }

    /// Element strides per dim.
    pub fn strides(&self, shape: &[i64]) -> Vec<i64> {
        let mut st = vec![1; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            let next = if d + 1 == shape.len() - 1 { shape[d + 1] + self.pad } else { shape[d + 1] };
            st[d] = st[d + 1] * next;
        }
        st
    }

    /// Elements the buffer spans.
    pub fn size(&self, shape: &[i64]) -> i64 {
        match shape.split_last() {
            None => 1,
            Some((last, rest)) => rest.iter().product::<i64>() * (last + if rest.is_empty() { 0 } else { self.pad }),
        }
    }

    pub fn to_mlir(&self) -> String {
        format!("#tilegpu.shared<{} : i64>", self.pad)
    }

    /// Reads [`Shared::to_mlir`]'s text.
    pub fn parse(text: &str) -> Option<Shared> {
        let inner = text.trim().strip_prefix("#tilegpu.shared<")?.strip_suffix('>')?;
        Some(Shared { pad: inner.split(':').next()?.trim().parse().ok().filter(|p: &i64| *p >= 0)? })
    }
}
