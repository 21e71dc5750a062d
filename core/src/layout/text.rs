//! The text of layout attributes, as MLIR prints them: `#tilegpu.blocked<…>`,
//! `#tilegpu.slice<dim : i32, parent>`.

use super::{Blocked, Layout, Mma, MmaFamily};

impl Layout {
    /// The text of the layout as an MLIR attribute.
    pub fn to_mlir(&self) -> String {
        fn list<T: std::fmt::Display>(v: &[T]) -> String {
            let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            format!("[{}]", items.join(", "))
        }
        match self {
            Layout::Blocked(b) => format!(
                "#tilegpu.blocked<{}, {}, {}, {}>",
                list(&b.size_per_thread),
                list(&b.threads_per_warp),
                list(&b.warps_per_cta),
                list(&b.order)
            ),
            Layout::Slice { dim, parent } => format!("#tilegpu.slice<{dim} : i32, {}>", parent.to_mlir()),
            Layout::Mma(m) => mma_text(m),
            Layout::DotOperand { op_idx, parent } => {
                format!("#tilegpu.dot_operand<{op_idx} : i32, {}>", mma_text(parent))
            }
        }
    }
}

fn mma_text(m: &Mma) -> String {
    let name = match m.family {
        MmaFamily::MmaSync => "mma",
        MmaFamily::Wgmma => "wgmma",
        MmaFamily::Tcgen05 if m.m64 => "tcgen05_m64",
        MmaFamily::Tcgen05 => "tcgen05",
    };
    format!("#tilegpu.{name}<[{}, {}]>", m.warps_per_cta[0], m.warps_per_cta[1])
}

fn parse_mma(text: &str) -> Option<Mma> {
    let text = text.trim();
    let mut m64 = false;
    let (family, inner) = if let Some(i) = text.strip_prefix("#tilegpu.mma<") {
        (MmaFamily::MmaSync, i)
    } else if let Some(i) = text.strip_prefix("#tilegpu.tcgen05<") {
        (MmaFamily::Tcgen05, i)
    } else if let Some(i) = text.strip_prefix("#tilegpu.tcgen05_m64<") {
        m64 = true;
        (MmaFamily::Tcgen05, i)
    } else {
        (MmaFamily::Wgmma, text.strip_prefix("#tilegpu.wgmma<")?)
    };
    let inner = inner.strip_suffix('>')?;
    match int_list(inner)?.as_slice() {
        [wm, wn] if *wm >= 1 && *wn >= 1 && (wm & (wm - 1)) == 0 && (wn & (wn - 1)) == 0 && wm * wn <= 32 => {
            // A warpgroup is four warps; one wgmma covers the tile's N. The warps along M of a
            // tcgen05 accumulator are TMEM's four 32-lane quarters, times the warpgroups that
            // take a 128-row block each (1, 2 or 4 16-row blocks for the M = 64 instruction,
            // see `Mma::tcgen05`).
            let ok = match family {
                MmaFamily::MmaSync => true,
                MmaFamily::Wgmma => *wm >= 4 && *wn == 1,
                MmaFamily::Tcgen05 if m64 => *wm <= 4,
                MmaFamily::Tcgen05 => *wm >= 4,
            };
            ok.then_some(Mma { warps_per_cta: [*wm, *wn], family, m64 })
        }
        _ => None,
    }
}

/// Reads the text of a layout attribute as MLIR prints it (the inverse of
/// [`Layout::to_mlir`]); `None` when the text is not a `#tilegpu` layout.
pub fn parse_layout(text: &str) -> Option<Layout> {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix("#tilegpu.blocked<").and_then(|t| t.strip_suffix('>')) {
        let lists = split_top(inner)?;
        let [spt, tpw, wpc, ord] = lists.as_slice() else { return None };
        let order = int_list(ord)?.into_iter().map(usize::try_from).collect::<Result<Vec<_>, _>>().ok()?;
        let b = Blocked {
            size_per_thread: int_list(spt)?,
            threads_per_warp: int_list(tpw)?,
            warps_per_cta: int_list(wpc)?,
            order,
        };
        let rank = b.size_per_thread.len();
        let same = b.threads_per_warp.len() == rank && b.warps_per_cta.len() == rank && b.order.len() == rank;
        return same.then_some(Layout::Blocked(b));
    }
    if ["#tilegpu.mma<", "#tilegpu.wgmma<", "#tilegpu.tcgen05<", "#tilegpu.tcgen05_m64<"]
        .iter()
        .any(|p| text.starts_with(p))
    {
        return parse_mma(text).map(Layout::Mma);
    }
    if let Some(inner) = text.strip_prefix("#tilegpu.dot_operand<").and_then(|t| t.strip_suffix('>')) {
        let (idx, parent) = inner.split_once(',')?;
        let op_idx: u32 = idx.trim().strip_suffix(": i32")?.trim().parse().ok().filter(|i| *i <= 1)?;
        return Some(Layout::DotOperand { op_idx, parent: parse_mma(parent)? });
    }
    let inner = text.strip_prefix("#tilegpu.slice<")?.strip_suffix('>')?;
    let (dim, parent) = inner.split_once(',')?;
    let dim = dim.trim().strip_suffix(": i32")?.trim().parse().ok()?;
    Some(Layout::Slice { dim, parent: Box::new(parse_layout(parent)?) })
}

/// Splits `a, [b, c], d` at the commas outside brackets.
pub fn split_top(s: &str) -> Option<Vec<&str>> {
    let (mut depth, mut start, mut out) = (0i32, 0, vec![]);
    for (i, c) in s.char_indices() {
        match c {
            '[' | '<' | '(' | '{' => depth += 1,
            ']' | '>' | ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    out.push(s[start..].trim());
    Some(out)
}

fn int_list(s: &str) -> Option<Vec<i64>> {
    let inner = s.trim().strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return Some(vec![]);
    }
    // MLIR prints i64 array elements bare; other widths carry `: iN`.
    inner.split(',').map(|x| x.split(':').next().unwrap_or("").trim().parse().ok()).collect()
}
