//! The lowered form of a tile-IR value, and the per-register plumbing every family uses:
//! the operands of each register of an elementwise op, flattening values into block
//! arguments and binding block arguments back to values.

use super::emit::{Emitter, Reg, Ty};
use super::{err, Lowering};
use tilec_core::tir::ValueId;
use tilec_core::Diagnostic;

/// A tensor parameter: its pointer, extents and strides (in elements).
#[derive(Clone, Debug)]
pub(crate) struct TensorArgs {
    pub ptr: Reg,
    pub dims: Vec<Reg>,
    pub strides: Vec<Reg>,
    /// Specialised as 16-byte aligned (unit last stride, 16-byte multiples elsewhere).
    pub aligned: bool,
    /// The dim with unit stride when it is not the last (a view of an ordered load).
    pub contiguous: Option<usize>,
}

/// The lowered value of a tile-IR value.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    Scalar(Reg),
    /// The registers one thread holds, in the register order of the tile's layout.
    Tile(Vec<Reg>),
    /// A tile whose registers are the lanes of `vector<W x T>`s, in order (`super::vector`):
    /// never returned by [`Lowering::get`], which gives its lanes as a [`Value::Tile`].
    Vector(Vec<Reg>),
    Tensor(TensorArgs),
    /// A tile in shared memory: the buffer's offset in the kernel's shared memory, and its
    /// type (`local_alloc`; a `local_load` into a `#dot_operand` is the same view, read by
    /// the `mma` that uses it).
    SmemBuf {
        offset: i64,
        ty: tilec_core::tir::Type,
        /// For one stage of a ring (`tilegpu.stage`): the ring, starting at `offset`.
        ring: Option<Box<Ring>>,
    },
    /// A tcgen05 accumulator kept in Tensor Memory at this column of the kernel's allocation
    /// (a loop-carried product, see `tcgen05`): no registers; carried by a loop without
    /// block arguments, brought into registers with `tcgen05.ld` where it leaves the chain.
    /// `alt`: one of the two regions of a chain double-buffered across a tile loop
    /// (`tile-epilogue-overlap`), chosen at run time.
    Tmem {
        col: i64,
        alt: Option<TmemAlt>,
    },
}

/// Where a double-buffered chain's accumulator is at run time: `col + shift` columns into the
/// kernel's TMEM, its products committed to the mbarrier `bar` of that region.
#[derive(Clone, Debug)]
pub(crate) struct TmemAlt {
    pub shift: Reg,
    pub bar: Reg,
}

/// The ring a stage view belongs to: its type (S×M×N) and the element index of the
/// stage's first element in it (run time: the stage index is an SSA value).
#[derive(Clone, Debug)]
pub(crate) struct Ring {
    pub ty: tilec_core::tir::Type,
    pub first: Reg,
    /// The stage index.
    pub slot: Reg,
}

impl Lowering<'_> {
    /// The lowered value of `v`; a vectorised tile's registers extracted here if this block
    /// has not yet ([`Lowering::lanes`]).
    pub(crate) fn get(&mut self, v: ValueId) -> Result<Value, Diagnostic> {
        match self.vals.get(&v) {
            Some(Value::Vector(r)) => {
                let r = r.clone();
                Ok(Value::Tile(self.lanes(v, &r)))
            }
            Some(x) => Ok(x.clone()),
            None => Err(err(format!("value %{} used before definition", v.0))),
        }
    }

    pub(crate) fn scalar(&mut self, v: ValueId) -> Result<Reg, Diagnostic> {
        match self.get(v)? {
            Value::Scalar(s) => Ok(s),
            _ => Err(err(format!("value %{} is not a scalar", v.0))),
        }
    }

    pub(crate) fn tile(&mut self, v: ValueId) -> Result<Vec<Reg>, Diagnostic> {
        match self.get(v)? {
            Value::Tile(r) => Ok(r),
            Value::Tmem { .. } => Err(err(format!(
                "value %{} is a tcgen05 accumulator kept in Tensor Memory, used where registers are needed",
                v.0
            ))),
            _ => Err(err(format!("value %{} is not a tile", v.0))),
        }
    }

    pub(crate) fn tensor(&mut self, v: ValueId) -> Result<TensorArgs, Diagnostic> {
        match self.get(v)? {
            Value::Tensor(t) => Ok(t),
            _ => Err(err(format!("value %{} is not a tensor", v.0))),
        }
    }

    /// The operands of each register of an op whose operands are all scalars or all tiles of
    /// one layout (a scalar among tiles stands for each register): one list per register,
    /// and whether the operands were tiles at all.
    pub(crate) fn registers(&mut self, operands: &[ValueId]) -> Result<(Vec<Vec<Reg>>, bool), Diagnostic> {
        let vals = operands.iter().map(|v| self.get(*v)).collect::<Result<Vec<_>, _>>()?;
        let n = vals.iter().find_map(|l| if let Value::Tile(r) = l { Some(r.len()) } else { None });
        let pick = |l: &Value, i: usize| -> Result<Reg, Diagnostic> {
            match l {
                Value::Scalar(s) => Ok(s.clone()),
                Value::Tile(r) if r.len() == n.unwrap_or(0) => Ok(r[i].clone()),
                Value::Tile(_) => Err(err("elementwise operands of different layouts")),
                Value::Tensor(_) | Value::SmemBuf { .. } | Value::Tmem { .. } | Value::Vector(_) => {
                    Err(err("elementwise op on a tensor, a shared buffer or Tensor Memory"))
                }
            }
        };
        let regs = (0..n.unwrap_or(1))
            .map(|i| vals.iter().map(|l| pick(l, i)).collect::<Result<Vec<_>, _>>())
            .collect::<Result<Vec<_>, _>>()?;
        Ok((regs, n.is_some()))
    }

    /// Applies `f` register by register (see [`Lowering::registers`]).
    pub(crate) fn elementwise(
        &mut self,
        operands: &[ValueId],
        mut f: impl FnMut(&mut Emitter, &[Reg]) -> Result<Reg, Diagnostic>,
    ) -> Result<Value, Diagnostic> {
        if let Some(v) = self.vector_elementwise(operands, &mut f)? {
            return Ok(v);
        }
        let (regs, tile) = self.registers(operands)?;
        let mut out = regs.iter().map(|xs| f(&mut self.em, xs)).collect::<Result<Vec<_>, _>>()?;
        Ok(match (tile, out.pop()) {
            (false, Some(x)) => Value::Scalar(x),
            (_, last) => {
                out.extend(last);
                Value::Tile(out)
            }
        })
    }

    /// The registers (or the scalar) of values, flattened.
    /// A Tensor Memory accumulator has none: a loop carries it in place.
    pub(crate) fn flatten(&mut self, vs: &[ValueId]) -> Result<Vec<Reg>, Diagnostic> {
        let vals = vs.iter().map(|v| self.get(*v)).collect::<Result<Vec<_>, _>>()?;
        flatten_values(&vals)
    }

    /// Fresh block arguments shaped like `like` (register counts), bound to `vs`; a Tensor
    /// Memory accumulator binds to itself.
    pub(crate) fn bind_args(&mut self, vs: &[ValueId], like: &[ValueId]) -> Result<Vec<Reg>, Diagnostic> {
        let like = like.iter().map(|v| self.get(*v)).collect::<Result<Vec<_>, _>>()?;
        self.bind_values(vs, &like)
    }

    pub(crate) fn bind_values(&mut self, vs: &[ValueId], like: &[Value]) -> Result<Vec<Reg>, Diagnostic> {
        let mut args = vec![];
        for (v, l) in vs.iter().zip(like) {
            let t = Ty::of(self.func.ty(*v).dtype());
            let value = match l {
                Value::Scalar(_) => {
                    let a = self.em.fresh_reg(t);
                    args.push(a.clone());
                    Value::Scalar(a)
                }
                Value::Tile(r) => Value::Tile(
                    r.iter()
                        .map(|_| {
                            let a = self.em.fresh_reg(t.clone());
                            args.push(a.clone());
                            a
                        })
                        .collect(),
                ),
                Value::Tmem { col, alt } => Value::Tmem { col: *col, alt: alt.clone() },
                Value::Tensor(_) | Value::SmemBuf { .. } | Value::Vector(_) => {
                    return Err(err("a tensor or shared buffer cannot be loop-carried"))
                }
            };
            self.vals.insert(*v, value);
        }
        Ok(args)
    }
}

/// The registers (or the scalar) of values, flattened; a Tensor Memory accumulator has none.
pub(crate) fn flatten_values(vals: &[Value]) -> Result<Vec<Reg>, Diagnostic> {
    let mut regs = vec![];
    for v in vals {
        match v {
            Value::Scalar(s) => regs.push(s.clone()),
            Value::Tile(r) => regs.extend(r.iter().cloned()),
            Value::Tmem { .. } => {}
            Value::Tensor(_) | Value::SmemBuf { .. } | Value::Vector(_) => {
                return Err(err("a tensor or shared buffer cannot be loop-carried"))
            }
        }
    }
    Ok(regs)
}
