//! Moving a tile between threads through shared memory: `convert_layout`, `permute`, `slice`,
//! `concat`, and reshapes that change more than unit dims. Every thread writes its registers at the
//! element's offset in a buffer, one barrier, then reads the elements of the new layout.

use super::emit::Reg;
use super::regs::Value;
use super::{err, Lowering};
use tilec_core::host::contiguous_strides;
use tilec_core::layout::{Layout, Shared};
use tilec_core::tir::{Func, Op, OpKind, Type, ValueId};
use tilec_core::Diagnostic;

/// The shared-memory buffer of an exchange: the element strides the source writes with and
/// the destination reads with, and its size in elements.
struct Buffer {
    src_strides: Vec<i64>,
    dst_strides: Vec<i64>,
    elems: i64,
    /// Where the destination's element 0 is, in elements (a slice's origin).
    dst_offset: i64,
}

/// Whether the reshape of `x` into `r` renames registers: both layouts place every row-major
/// position in the same register of the same thread.
pub(crate) fn renames(func: &Func, x: ValueId, r: ValueId) -> bool {
    let flat = |t: &Type| t.layout().map(|l| l.to_linear(t.shape()).flattened());
    let fx = flat(func.ty(x));
    fx.is_some() && fx == flat(func.ty(r))
}

impl Lowering<'_> {
    /// A layout conversion, or a reshape that only adds or drops unit dims, of an index tile
    /// (`Lowering::iota`) makes the tile again in the result's layout: no shared-memory round
    /// trip, and the result stays affine (a comparison of it keeps no offsets live).
    fn iota_exchange(&mut self, op: &Op, ty: &Type) -> Option<Value> {
        let (x, res) = match op.kind {
            OpKind::Reshape(x) | OpKind::ConvertLayout { value: x, .. } => (x, op.result?),
            _ => return None,
        };
        let (d, s) = self.iota.get(&x).cloned()?;
        let xshape = self.func.ty(x).shape().to_vec();
        let big = |sh: &[i64]| sh.iter().copied().filter(|&e| e > 1).collect::<Vec<_>>();
        if big(&xshape) != big(ty.shape()) || xshape[d] <= 1 {
            return None;
        }
        // The k-th dim of more than one element is the same dim in both shapes.
        let k = xshape[..d].iter().filter(|&&e| e > 1).count();
        let nd = ty.shape().iter().enumerate().filter(|(_, &e)| e > 1).nth(k)?.0;
        let l = ty.layout()?.clone();
        let (regs, aff) = self.iota_in(&l, ty.shape(), nd, s.as_ref());
        self.aff.insert(res, aff);
        self.iota.insert(res, (nd, s));
        Some(Value::Tile(regs))
    }

    pub(crate) fn exchange_op(&mut self, op: &Op, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let ty = rty.ok_or_else(|| err("exchange without result"))?.clone();
        if let Some(v) = self.iota_exchange(op, &ty) {
            return Ok(v);
        }
        Ok(match &op.kind {
            OpKind::Reshape(x) => {
                let xty = self.func.ty(*x).clone();
                let rename = op.result.is_some_and(|res| renames(self.func, *x, res));
                if let (true, Some(Value::Vector(chunks))) = (rename, self.vals.get(x)) {
                    // A vectorised operand's lanes are its registers: the same vectors.
                    return Ok(Value::Vector(chunks.clone()));
                }
                let regs = self.tile(*x)?;
                if rename {
                    // The same registers hold the same elements (row-major positions).
                    if let (Some(a), Some(res)) = (self.aff.get(x).cloned(), op.result) {
                        self.aff.insert(res, a);
                    }
                    Value::Tile(regs)
                } else {
                    // Row-major linear indices are the same in both shapes (no padding here).
                    let buf = Buffer {
                        src_strides: contiguous_strides(xty.shape()),
                        dst_strides: contiguous_strides(ty.shape()),
                        elems: ty.shape().iter().product(),
                        dst_offset: 0,
                    };
                    Value::Tile(self.smem_exchange(&xty, &regs, &buf, &ty)?)
                }
            }
            OpKind::ConvertLayout { value: x, scratch } => {
                let xty = self.func.ty(*x).clone();
                let regs = self.tile(*x)?;
                let st = scratch.strides(ty.shape());
                let buf =
                    Buffer { src_strides: st.clone(), dst_strides: st, elems: scratch.size(ty.shape()), dst_offset: 0 };
                Value::Tile(self.smem_exchange(&xty, &regs, &buf, &ty)?)
            }
            OpKind::Permute { value, perm } => {
                let xty = self.func.ty(*value).clone();
                // A padded buffer in the result's shape; source dim perm[i] is result dim i.
                let scratch = Shared::for_exchange(ty.shape(), ty.dtype().bytes());
                let dst = scratch.strides(ty.shape());
                let mut src = vec![0; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    src[p as usize] = dst[i];
                }
                let buf = Buffer { src_strides: src, dst_strides: dst, elems: scratch.size(ty.shape()), dst_offset: 0 };
                let regs = self.tile(*value)?;
                Value::Tile(self.smem_exchange(&xty, &regs, &buf, &ty)?)
            }
            OpKind::Slice { value, offsets } => {
                // The whole tile in row-major order; the slice reads its part.
                let xty = self.func.ty(*value).clone();
                let st = contiguous_strides(xty.shape());
                let dst_offset = offsets.iter().zip(&st).map(|(o, s)| o * s).sum();
                let buf = Buffer {
                    src_strides: st.clone(),
                    dst_strides: st,
                    elems: xty.shape().iter().product(),
                    dst_offset,
                };
                let regs = self.tile(*value)?;
                Value::Tile(self.smem_exchange(&xty, &regs, &buf, &ty)?)
            }
            OpKind::Concat { values, axis } => {
                // The result in row-major order; part k written from its start along `axis`.
                let st = contiguous_strides(ty.shape());
                let buf = Buffer {
                    src_strides: st.clone(),
                    dst_strides: st.clone(),
                    elems: ty.shape().iter().product(),
                    dst_offset: 0,
                };
                let mut parts = vec![];
                let mut start = 0;
                for v in values {
                    let vty = self.func.ty(*v).clone();
                    let regs = self.tile(*v)?;
                    parts.push((vty.clone(), regs, start * st[*axis as usize]));
                    start += vty.shape()[*axis as usize];
                }
                let srcs: Vec<(&Type, &[Reg], i64)> = parts.iter().map(|(t, r, at)| (t, r.as_slice(), *at)).collect();
                Value::Tile(self.smem_gather(&srcs, &buf, &ty)?)
            }
            _ => return Err(err("not an exchange")),
        })
    }

    /// Byte addresses of the elements of `l` over `shape` with strides `st` in a region at
    /// `region`: a per-thread part, then a constant per register.
    pub(crate) fn exchange_addresses(
        &mut self,
        l: &Layout,
        shape: &[i64],
        st: &[i64],
        region: i64,
        bytes: i64,
        base: &Reg,
    ) -> Vec<Reg> {
        let mut lin = self.em.ci32(region);
        for (dd, s) in st.iter().enumerate() {
            let tb = self.thread_base(l, shape, dd);
            let sb = self.em.ci32(s * bytes);
            let t = self.em.mul(&tb, &sb);
            lin = self.em.add(&lin, &t);
        }
        (0..l.regs_per_thread(shape))
            .map(|r| {
                let off: i64 = l.reg_offset(shape, r).iter().zip(st).map(|(o, s)| o * s).sum::<i64>() * bytes;
                let o = self.em.ci32(off);
                let a = self.em.add(&lin, &o);
                self.em.gep(base, &a, &super::emit::Ty::I8)
            })
            .collect()
    }

    /// Moves a tile between layouts through shared memory: every thread writes its registers
    /// at `Σ coord·src_strides` (a permutation when they are a permuted shape's strides), one
    /// barrier, then reads the elements of `dst`'s layout at `Σ coord·dst_strides`. A slice
    /// source writes its replicated elements more than once (the same values).
    fn smem_exchange(&mut self, src: &Type, regs: &[Reg], buf: &Buffer, dst: &Type) -> Result<Vec<Reg>, Diagnostic> {
        self.smem_gather(&[(src, regs, 0)], buf, dst)
    }

    /// [`Lowering::smem_exchange`] of several sources into one buffer, each written at its
    /// element offset (a concat's parts), one barrier for all.
    fn smem_gather(&mut self, srcs: &[(&Type, &[Reg], i64)], buf: &Buffer, dst: &Type) -> Result<Vec<Reg>, Diagnostic> {
        let ld = dst.layout().ok_or_else(|| err("layout conversion to a tile without layout"))?.clone();
        let d = dst.dtype();
        let bytes = i64::from(d.bytes().max(1));
        let region = self.smem_region(buf.elems * bytes)?;
        self.smem_write_begin(region, buf.elems * bytes);
        let base = self.smem_base();
        for &(src, regs, at) in srcs {
            let ls = src.layout().ok_or_else(|| err("layout conversion of a tile without layout"))?.clone();
            let src_addrs =
                self.exchange_addresses(&ls, src.shape(), &buf.src_strides, region + at * bytes, bytes, &base);
            if src_addrs.len() != regs.len() {
                return Err(err("layout conversion: register count does not match the layout"));
            }
            for (a, v) in src_addrs.iter().zip(regs) {
                self.em.store(v, a, bytes);
            }
        }
        self.smem_written();
        let dst_addrs =
            self.exchange_addresses(&ld, dst.shape(), &buf.dst_strides, region + buf.dst_offset * bytes, bytes, &base);
        let ety = super::emit::Ty::of(d);
        let out = dst_addrs.iter().map(|a| self.em.load(a, ety.clone(), bytes)).collect();
        self.smem_read_done(region, buf.elems * bytes);
        Ok(out)
    }
}
