//! Memory builtins: `load`, `store`, `gather`, `scatter`, and their index arguments.

use super::super::*;

/// `load(tensor, index, shape, …)`.
pub(super) fn load(cx: &mut Cx, _name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    cx.load(args, span)
}

/// `store(tensor, index, tile)`.
pub(super) fn store(cx: &mut Cx, _name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    cx.store(args, span)
}

/// `prefetch(tensor, index, shape, order=)`.
pub(super) fn prefetch(cx: &mut Cx, _name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    cx.prefetch(args, span)
}

/// `atomic_add/max/min(tensor, index, tile, mask=, sem=, scope=)` and
/// `atomic_cas(tensor, index, cmp, tile, mask=, sem=, scope=)`: the old values.
pub(super) fn atomic(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    cx.atomic(name, args, span)
}

/// `gather(tensor, index)`.
pub(super) fn gather(cx: &mut Cx, _name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    cx.gather(args, span)
}

/// `scatter(tensor, index, tile)`.
pub(super) fn scatter(cx: &mut Cx, _name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    cx.scatter(args, span)
}

impl Cx<'_> {
    pub(crate) fn index_values(&mut self, v: Option<&Val>, rank: usize, span: Span) -> R<Vec<ValueId>> {
        let items = match v {
            Some(Val::Tuple(t)) => t.clone(),
            Some(v @ (Val::Int(_) | Val::Scalar(_))) => vec![v.clone()],
            Some(other) => {
                return Err(Diagnostic::error(
                    "E0006",
                    format!("an index is a tuple of integers, found {}", kind_name(other)),
                )
                .with_primary(span, "here"))
            }
            None => return Err(Diagnostic::error("E0004", "missing index").with_primary(span, "here")),
        };
        if items.len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("index has {} components but the tensor has rank {rank}", items.len()),
            )
            .with_primary(span, "here"));
        }
        let mut out = vec![];
        for it in items {
            match &it {
                Val::Scalar(id) if self.func.ty(*id).dtype() != DType::I32 => {
                    return Err(Diagnostic::error(
                        "E0008",
                        format!("index components are i32, found {}", self.func.ty(*id).dtype()),
                    )
                    .with_primary(span, "cast with .astype(i32)"))
                }
                Val::Int(_) | Val::Scalar(_) => out.push(self.materialize(it, DType::I32, span)?),
                other => {
                    return Err(Diagnostic::error(
                        "E0006",
                        format!("index components are integers, found {}", kind_name(other)),
                    )
                    .with_primary(span, "here"))
                }
            }
        }
        Ok(out)
    }

    pub(crate) fn tensor_arg(&self, v: Option<&Val>, span: Span) -> R<(ValueId, DType, usize)> {
        match v {
            Some(Val::Tensor { value, .. }) => match self.func.ty(*value) {
                Type::Tensor { dtype, rank } => Ok((*value, *dtype, *rank)),
                _ => Err(Diagnostic::error("E0006", "expected a tensor").with_primary(span, "here")),
            },
            Some(other) => {
                Err(Diagnostic::error("E0006", format!("expected a tensor parameter, found {}", kind_name(other)))
                    .with_primary(span, "here"))
            }
            None => Err(Diagnostic::error("E0004", "missing tensor").with_primary(span, "here")),
        }
    }

    pub(crate) fn load(&mut self, args: &[ast::Arg], span: Span) -> R<Val> {
        let a = Args::new(
            self,
            args,
            &[
                ("tensor", true),
                ("index", false),
                ("shape", true),
                ("padding", false),
                ("order", false),
                ("latency", false),
                ("mask", false),
                ("offset", false),
            ],
            "load",
            span,
        )?;
        if a.any_poison() {
            return Ok(Val::Poison);
        }
        let (t, d, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        self.index_or_offset("load", a.get(1).is_some(), a.get(7).is_some(), span)?;
        if a.get(7).is_some() && (a.get(4).is_some() || a.get(5).is_some()) {
            return Err(Diagnostic::error(
                "E0005",
                "`order=` and `latency=` apply to tile loads (`index=`), not to `offset=`",
            )
            .with_primary(span, "this load"));
        }
        let order = self.order_arg(a.get(4), rank, a.span(4))?;
        let latency = match a.get(5) {
            None => 0,
            Some(Val::Int(l)) if (1..=16).contains(l) => *l as u32,
            Some(v) => {
                return Err(Diagnostic::error(
                    "E0014",
                    format!("latency must be a constant from 1 to 16, found {}", const_text(v)),
                )
                .with_primary(a.span(5), "here")
                .with_note("the hint is the number of loop iterations a load is issued ahead"))
            }
        };
        let index = if a.get(1).is_some() { self.index_values(a.get(1), rank, a.span(1))? } else { vec![] };
        let shape = self.tile_shape_of_rank(a.get(2), rank, a.span(2))?;
        let padding = match a.get(3) {
            None => Padding::Zero,
            Some(Val::Int(0)) => Padding::Zero,
            Some(Val::Float(f)) if *f == 0.0 => Padding::Zero,
            Some(Val::Float(f)) if *f == f64::NEG_INFINITY => Padding::NegInf,
            Some(Val::Float(f)) if *f == f64::INFINITY => Padding::PosInf,
            Some(Val::Float(f)) => Padding::Value(*f),
            Some(Val::Int(i)) => Padding::Value(*i as f64),
            Some(other) => {
                return Err(Diagnostic::error(
                    "E0009",
                    format!("padding must be a constant number, found {}", kind_name(other)),
                )
                .with_primary(a.span(3), "here"))
            }
        };
        if !d.is_float() && matches!(padding, Padding::NegInf | Padding::PosInf) {
            return Err(Diagnostic::error("E0008", format!("infinite padding needs a float tensor; this one is {d}"))
                .with_primary(a.span(3), "here"));
        }
        let tile = match a.get(7).cloned() {
            // At an element origin: each element's indices, a gather (scalar accesses).
            Some(offset) => {
                let index = self.offset_indices(offset, &shape, a.span(7), span)?;
                self.func.push(OpKind::Gather { tensor: t, index, padding }, Type::tile(shape.clone(), d), Some(span))
            }
            None => self.func.push(
                OpKind::Load { tensor: t, index, padding, order, latency },
                Type::tile(shape.clone(), d),
                Some(span),
            ),
        };
        let Some(m) = a.get(6).cloned() else { return Ok(Val::Tile(tile)) };
        if d.is_storage_only() {
            return Err(storage_only(d, "a masked `load`", a.span(6))
                .with_note("load without the mask and cast, then `where(mask, x, padding)`"));
        }
        // A masked load is the load with its masked-off elements replaced by the padding: the
        // lowering may still read them (they are in bounds, so no fault), never returns them.
        let mask = self.mask_tile(m, &shape, a.span(6))?;
        let pad = if d.is_float() { Val::Float(padding.value()) } else { Val::Int(padding.value() as i64) };
        let pad = self.materialize(pad, d, a.span(3))?;
        let pad = self.as_tile(pad, &shape, span)?;
        Ok(Val::Tile(self.func.push(OpKind::Select { cond: mask, a: tile, b: pad }, Type::tile(shape, d), Some(span))))
    }

    /// `prefetch(tensor, index, shape, order=)`: the tile `load` with the same arguments
    /// reads, fetched into the L2 cache ahead of that load (a hint: no value, no effect on
    /// any result).
    pub(crate) fn prefetch(&mut self, args: &[ast::Arg], span: Span) -> R<Val> {
        let a = Args::new(
            self,
            args,
            &[("tensor", true), ("index", true), ("shape", true), ("order", false)],
            "prefetch",
            span,
        )?;
        if a.any_poison() {
            return Ok(Val::Tuple(vec![]));
        }
        let (t, _, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        let order = self.order_arg(a.get(3), rank, a.span(3))?;
        let index = self.index_values(a.get(1), rank, a.span(1))?;
        let tile = self.tile_shape_of_rank(a.get(2), rank, a.span(2))?;
        self.func.push_void(OpKind::Prefetch { tensor: t, index, order, tile }, Some(span));
        Ok(Val::Tuple(vec![]))
    }

    /// An `order=` argument (`load`, `prefetch`): the tensor's dims in their own order when
    /// it is left out.
    fn order_arg(&mut self, v: Option<&Val>, rank: usize, span: Span) -> R<Vec<u32>> {
        match v {
            None => Ok((0..rank as u32).collect()),
            Some(v) => self.permutation(Some(v), rank, span),
        }
    }

    /// A `shape=` argument of a tile of a rank-`rank` tensor (`load`, `prefetch`).
    fn tile_shape_of_rank(&mut self, v: Option<&Val>, rank: usize, span: Span) -> R<Vec<i64>> {
        let shape = self.tile_shape(v, span)?;
        if shape.len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("tile shape has rank {} but the tensor has rank {rank}", shape.len()),
            )
            .with_primary(span, "here"));
        }
        Ok(shape)
    }

    /// A `mask=` argument: an i1 tile (or bool scalar) broadcast to `shape`.
    pub(crate) fn mask_tile(&mut self, m: Val, shape: &[i64], span: Span) -> R<ValueId> {
        let id = match m {
            Val::Bool(b) => self.materialize(Val::Bool(b), DType::I1, span)?,
            Val::Tile(id) | Val::Scalar(id) if self.func.ty(id).dtype() == DType::I1 => id,
            other => {
                let what = match &other {
                    Val::Tile(id) => format!("a {} tile", self.func.ty(*id).dtype()),
                    Val::Scalar(id) => format!("a {} scalar", self.func.ty(*id).dtype()),
                    v => kind_name(v).to_string(),
                };
                return Err(Diagnostic::error("E0008", format!("a mask is a bool (i1) tile, found {what}"))
                    .with_primary(span, "not a bool tile")
                    .with_note("build it with comparisons, e.g. `mask=arange(64) < n`"));
            }
        };
        let ms = self.func.ty(id).shape().to_vec();
        if broadcast_shape(&ms, shape).as_deref() != Some(shape) {
            return Err(Diagnostic::error(
                "E0007",
                format!("a mask of shape {ms:?} does not broadcast to the tile's {shape:?}"),
            )
            .with_primary(span, format!("{ms:?}")));
        }
        self.as_tile(id, shape, span)
    }

    pub(crate) fn store(&mut self, args: &[ast::Arg], span: Span) -> R<Val> {
        let a = Args::new(
            self,
            args,
            &[("tensor", true), ("index", false), ("tile", true), ("mask", false), ("offset", false)],
            "store",
            span,
        )?;
        if a.any_poison() {
            return Ok(Val::Tuple(vec![]));
        }
        let (t, d, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        self.index_or_offset("store", a.get(1).is_some(), a.get(4).is_some(), span)?;
        let index = if a.get(1).is_some() { self.index_values(a.get(1), rank, a.span(1))? } else { vec![] };
        let tile = match a.get(2) {
            Some(Val::Tile(id)) => *id,
            Some(other) => {
                return Err(Diagnostic::error("E0006", format!("store needs a tile, found {}", kind_name(other)))
                    .with_primary(a.span(2), "here"))
            }
            None => return Err(Diagnostic::error("E0004", "missing tile").with_primary(span, "here")),
        };
        let tt = self.func.ty(tile).clone();
        if tt.shape().len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("a tile of rank {} cannot be stored into a tensor of rank {rank}", tt.shape().len()),
            )
            .with_primary(a.span(2), format!("shape {:?}", tt.shape())));
        }
        if tt.dtype() != d {
            return Err(Diagnostic::error("E0008", format!("storing a {} tile into a {d} tensor", tt.dtype()))
                .with_primary(a.span(2), format!("this tile is {}", tt.dtype()))
                .with_note(format!("cast it: `.astype({d})`")));
        }
        let mask = match a.get(3).cloned() {
            Some(m) => Some(self.mask_tile(m, tt.shape(), a.span(3))?),
            None => None,
        };
        if let Some(offset) = a.get(4).cloned() {
            // At an element origin: a scatter; a masked-off element gets index -1 (skipped).
            let mut index = self.offset_indices(offset, tt.shape(), a.span(4), span)?;
            if let Some(m) = mask {
                let i32t = Type::tile(tt.shape().to_vec(), DType::I32);
                let minus = self.materialize(Val::Int(-1), DType::I32, span)?;
                let minus = self.as_tile(minus, tt.shape(), span)?;
                let first = index[0];
                index[0] = self.func.push(OpKind::Select { cond: m, a: first, b: minus }, i32t, Some(span));
            }
            self.func.push_void(OpKind::Scatter { tensor: t, index, tile }, Some(span));
            return Ok(Val::Tuple(vec![]));
        }
        self.func.push_void(OpKind::Store { tensor: t, index, tile, mask }, Some(span));
        Ok(Val::Tuple(vec![]))
    }

    /// Exactly one of `index=` (tile coordinates) and `offset=` (an element origin).
    fn index_or_offset(&mut self, what: &str, index: bool, offset: bool, span: Span) -> R<()> {
        if index == offset {
            return Err(Diagnostic::error(
                "E0004",
                format!("`{what}` takes `index=` (tile coordinates) or `offset=` (an element origin), one of them"),
            )
            .with_primary(span, if index { "both given" } else { "neither given" }));
        }
        Ok(())
    }

    /// The element-index tiles of a tile of `shape` whose first element is at `offset` (one
    /// integer or i32 scalar per dim, any of them run-time): dim k's tile is
    /// `offset[k] + arange(shape[k])` along k, broadcast to `shape`.
    fn offset_indices(&mut self, offset: Val, shape: &[i64], ospan: Span, span: Span) -> R<Vec<ValueId>> {
        let items = match offset {
            Val::Tuple(t) => t,
            v => vec![v],
        };
        if items.len() != shape.len() {
            return Err(Diagnostic::error(
                "E0012",
                format!("offset has {} components but the tile has rank {}", items.len(), shape.len()),
            )
            .with_primary(ospan, "one per dim"));
        }
        let mut out = vec![];
        for (k, o) in items.into_iter().enumerate() {
            let o = match o {
                v @ Val::Int(_) => v,
                Val::Scalar(id) if self.func.ty(id).dtype() == DType::I32 => Val::Scalar(id),
                other => {
                    return Err(Diagnostic::error(
                        "E0008",
                        format!("offset components are i32 integers, found {}", kind_name(&other)),
                    )
                    .with_primary(ospan, "cast with .astype(i32)"))
                }
            };
            let ar = self.func.push(OpKind::Arange, Type::tile(vec![shape[k]], DType::I32), Some(span));
            let mut along = vec![1; shape.len()];
            along[k] = shape[k];
            let ar = self.func.push(OpKind::Reshape(ar), Type::tile(along, DType::I32), Some(span));
            let idx = self.binary(AB::Add, Val::Tile(ar), o, span, ospan, span)?;
            let Val::Tile(id) = idx else {
                return Err(Diagnostic::error("E0006", "an offset index").with_primary(ospan, "here"));
            };
            out.push(self.as_tile(id, shape, span)?);
        }
        Ok(out)
    }

    pub(crate) fn atomic(&mut self, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
        let op = AtomicOp::parse(name.trim_start_matches("atomic_")).unwrap_or(AtomicOp::Add);
        let cas = op == AtomicOp::Cas;
        let spec: &[(&str, bool)] = if cas {
            &[
                ("tensor", true),
                ("index", true),
                ("cmp", true),
                ("tile", true),
                ("mask", false),
                ("sem", false),
                ("scope", false),
            ]
        } else {
            &[("tensor", true), ("index", true), ("tile", true), ("mask", false), ("sem", false), ("scope", false)]
        };
        let a = Args::new(self, args, spec, name, span)?;
        if a.any_poison() {
            return Ok(Val::Poison);
        }
        let at = usize::from(cas);
        let (t, d, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        // Index tiles (a scatter's addressing) make the atomic element-wise; integers and
        // scalars name a tile of the tensor, as for `store`.
        let elementwise = match a.get(1) {
            Some(Val::Tuple(items)) => items.iter().any(|v| matches!(v, Val::Tile(_))),
            Some(v) => matches!(v, Val::Tile(_)),
            None => false,
        };
        let tile = match a.get(2 + at) {
            Some(Val::Tile(id)) => *id,
            Some(other) => {
                return Err(Diagnostic::error("E0006", format!("`{name}` needs a tile, found {}", kind_name(other)))
                    .with_primary(a.span(2 + at), "here")
                    .with_note("a single element is a tile of shape (1, …, 1): `full((1,), v, dtype)`"))
            }
            None => return Err(Diagnostic::error("E0004", "missing tile").with_primary(span, "here")),
        };
        let tt = self.func.ty(tile).clone();
        let shape = tt.shape().to_vec();
        let index = if elementwise {
            self.element_index_tiles(name, a.get(1), rank, &shape, a.span(1), span)?
        } else {
            self.index_values(a.get(1), rank, a.span(1))?
        };
        if !elementwise && shape.len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("a tile of rank {} cannot update a tensor of rank {rank}", shape.len()),
            )
            .with_primary(a.span(2 + at), format!("shape {shape:?}"))
            .with_note(
                "with index tiles (one per tensor dim, like scatter's) a tile of any shape updates element by element",
            ));
        }
        if tt.dtype() != d {
            return Err(Diagnostic::error("E0008", format!("`{name}` of a {} tile on a {d} tensor", tt.dtype()))
                .with_primary(a.span(2 + at), format!("this tile is {}", tt.dtype()))
                .with_note(format!("cast it: `.astype({d})`")));
        }
        if !op.accepts(d) {
            let takes = DType::ALL.iter().filter(|x| op.accepts(**x)).map(|x| x.name()).collect::<Vec<_>>();
            return Err(Diagnostic::error("E0008", format!("`{name}` does not take {d} tensors"))
                .with_primary(a.span(0), format!("a {d} tensor"))
                .with_note(format!("`{name}` takes {}", takes.join(", "))));
        }
        let cmp = match a.get(2).cloned() {
            Some(c) if cas => {
                let id = self.materialize(c, d, a.span(2))?;
                Some(self.as_tile(id, &shape, a.span(2))?)
            }
            _ => None,
        };
        let mask = match a.get(3 + at).cloned() {
            Some(m) => self.mask_tile(m, &shape, a.span(3 + at))?,
            None => {
                let yes = self.materialize(Val::Bool(true), DType::I1, span)?;
                self.as_tile(yes, &shape, span)?
            }
        };
        // `sem=` and `scope=`: one of the names, as a string.
        let word = |i: usize, what: &str, names: &[&str]| -> R<Option<String>> {
            match a.get(i) {
                None => Ok(None),
                Some(Val::Str(s)) if names.contains(&s.as_str()) => Ok(Some(s.clone())),
                Some(v) => Err(Diagnostic::error(
                    "E0009",
                    format!("`{what}` is one of \"{}\", found {}", names.join("\", \""), const_text(v)),
                )
                .with_primary(a.span(i), "here")),
            }
        };
        let sems: Vec<&str> = MemSem::names().collect();
        let scopes: Vec<&str> = MemScope::names().collect();
        let sem = word(4 + at, "sem", &sems)?.and_then(|s| MemSem::parse(&s)).unwrap_or(MemSem::Relaxed);
        let scope = word(5 + at, "scope", &scopes)?.and_then(|s| MemScope::parse(&s)).unwrap_or(MemScope::Gpu);
        Ok(Val::Tile(self.func.push(
            OpKind::Atomic { op, tensor: t, index, tile, cmp, mask, sem, scope, at: elementwise },
            Type::tile(shape, d),
            Some(span),
        )))
    }

    pub(crate) fn gather(&mut self, args: &[ast::Arg], span: Span) -> R<Val> {
        let a = Args::new(self, args, &[("tensor", true), ("index", true), ("padding", false)], "gather", span)?;
        if a.any_poison() {
            return Ok(Val::Poison);
        }
        let (t, d, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        let items = match a.get(1) {
            Some(Val::Tuple(t)) => t.clone(),
            Some(v) => vec![v.clone()],
            None => vec![],
        };
        if items.len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("gather needs {rank} index tiles (one per dim), got {}", items.len()),
            )
            .with_primary(a.span(1), "here"));
        }
        let mut ids = vec![];
        let mut shape: Vec<i64> = vec![];
        for it in items {
            let id = match it {
                Val::Tile(id) | Val::Scalar(id) if self.func.ty(id).dtype() == DType::I32 => id,
                v @ Val::Int(_) => self.materialize(v, DType::I32, a.span(1))?,
                other => {
                    return Err(Diagnostic::error(
                        "E0008",
                        format!("gather indices are i32 tiles, found {}", kind_name(&other)),
                    )
                    .with_primary(a.span(1), "here"))
                }
            };
            shape = broadcast_shape(&shape, self.func.ty(id).shape()).ok_or_else(|| {
                Diagnostic::error("E0007", "gather's index tiles do not broadcast together")
                    .with_primary(a.span(1), "here")
            })?;
            ids.push(id);
        }
        if shape.is_empty() {
            return Err(
                Diagnostic::error("E0006", "gather needs at least one index tile").with_primary(a.span(1), "here")
            );
        }
        let ids = ids.into_iter().map(|i| self.as_tile(i, &shape, span)).collect::<R<Vec<_>>>()?;
        let padding = match a.get(2) {
            None | Some(Val::Int(0)) => Padding::Zero,
            Some(Val::Float(f)) if *f == f64::NEG_INFINITY => Padding::NegInf,
            Some(Val::Float(f)) if *f == f64::INFINITY => Padding::PosInf,
            Some(Val::Float(f)) => Padding::Value(*f),
            Some(Val::Int(i)) => Padding::Value(*i as f64),
            Some(_) => {
                return Err(
                    Diagnostic::error("E0009", "padding must be a constant number").with_primary(a.span(2), "here")
                )
            }
        };
        Ok(Val::Tile(self.func.push(
            OpKind::Gather { tensor: t, index: ids, padding },
            Type::tile(shape, d),
            Some(span),
        )))
    }

    pub(crate) fn scatter(&mut self, args: &[ast::Arg], span: Span) -> R<Val> {
        let a = Args::new(self, args, &[("tensor", true), ("index", true), ("tile", true)], "scatter", span)?;
        if a.any_poison() {
            return Ok(Val::Tuple(vec![]));
        }
        let (t, d, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        let Some(Val::Tile(tile)) = a.get(2) else {
            return Err(Diagnostic::error("E0006", "scatter writes a tile").with_primary(a.span(2), "here"));
        };
        let tile = *tile;
        let tt = self.func.ty(tile).clone();
        if tt.dtype() != d {
            return Err(Diagnostic::error("E0008", format!("scattering a {} tile into a {d} tensor", tt.dtype()))
                .with_primary(a.span(2), "here")
                .with_note(format!("cast it: `.astype({d})`")));
        }
        let shape = tt.shape().to_vec();
        let ids = self.element_index_tiles("scatter", a.get(1), rank, &shape, a.span(1), span)?;
        self.func.push_void(OpKind::Scatter { tensor: t, index: ids, tile }, Some(span));
        Ok(Val::Tuple(vec![]))
    }

    /// The element-index tiles of a scatter or an element-wise atomic: `rank` i32 tiles (or
    /// scalars, or integers), each broadcast to the tile's `shape`.
    fn element_index_tiles(
        &mut self,
        what: &str,
        v: Option<&Val>,
        rank: usize,
        shape: &[i64],
        at: Span,
        span: Span,
    ) -> R<Vec<ValueId>> {
        let items = match v {
            Some(Val::Tuple(t)) => t.clone(),
            Some(v) => vec![v.clone()],
            None => vec![],
        };
        if items.len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("{what} needs {rank} index tiles (one per dim), got {}", items.len()),
            )
            .with_primary(at, "here"));
        }
        let mut ids = vec![];
        for it in items {
            let id = match it {
                Val::Tile(id) | Val::Scalar(id) if self.func.ty(id).dtype() == DType::I32 => id,
                v @ Val::Int(_) => self.materialize(v, DType::I32, at)?,
                other => {
                    return Err(Diagnostic::error(
                        "E0008",
                        format!("{what} indices are i32 tiles, found {}", kind_name(&other)),
                    )
                    .with_primary(at, "here"))
                }
            };
            let s = self.func.ty(id).shape().to_vec();
            if broadcast_shape(&s, shape).as_deref() != Some(shape) {
                return Err(Diagnostic::error(
                    "E0007",
                    format!("{what} index of shape {s:?} does not broadcast to the tile {shape:?}"),
                )
                .with_primary(at, "here"));
            }
            ids.push(self.as_tile(id, shape, span)?);
        }
        Ok(ids)
    }
}
