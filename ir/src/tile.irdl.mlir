// The `tile` and `tilegpu` dialects, loaded into every MLIR context tilec creates.
//
// IRDL ops have only the generic syntax ("tile.load"(...) {...} : (...) -> ...). Each
// operand gets its own constraint value: IRDL unifies a value used twice, which would
// force the two types to be equal.
irdl.dialect @tilegpu {
  // #tilegpu.blocked<sizePerThread, threadsPerWarp, warpsPerCTA, order>
  irdl.attribute @blocked {
    %spt = irdl.base "#builtin.array"
    %tpw = irdl.base "#builtin.array"
    %wpc = irdl.base "#builtin.array"
    %ord = irdl.base "#builtin.array"
    irdl.parameters(size_per_thread: %spt, threads_per_warp: %tpw, warps_per_cta: %wpc, order: %ord)
  }
  // #tilegpu.slice<dim : i32, parent>: a keepdims reduction result along `dim`.
  irdl.attribute @slice {
    %dim = irdl.base "#builtin.integer"
    %parent = irdl.any
    irdl.parameters(dim: %dim, parent: %parent)
  }
  // #tilegpu.shared<pad : i64>: a row-major shared-memory buffer with `pad` elements
  // after each row of the last dim.
  irdl.attribute @shared {
    %pad = irdl.base "#builtin.integer"
    irdl.parameters(pad: %pad)
  }
  // #tilegpu.mma<[wm, wn]>: the accumulator of mma.sync m16n8k16 over wm x wn warps.
  irdl.attribute @mma {
    %w = irdl.base "#builtin.array"
    irdl.parameters(warps_per_cta: %w)
  }
  // #tilegpu.wgmma<[wm, 1]>: the accumulator of wgmma m64nNk16 over wm / 4 warpgroups.
  irdl.attribute @wgmma {
    %w = irdl.base "#builtin.array"
    irdl.parameters(warps_per_cta: %w)
  }
  // #tilegpu.tcgen05<[4, wn]>: the accumulator of tcgen05.mma (sm_100a/sm_103a) in Tensor
  // Memory, as tcgen05.ld 32x32b brings it out: one row a thread, N split over wn warp columns.
  irdl.attribute @tcgen05 {
    %w = irdl.base "#builtin.array"
    irdl.parameters(warps_per_cta: %w)
  }
  // #tilegpu.tcgen05_m64<[M / 16, wn]>: a tcgen05 accumulator of 16, 32 or 64 rows, computed by
  // the M = 64 instruction (data path layout F) and brought out by tcgen05.ld 16x32bx2: lanes
  // 0-15 the rows of the warp's 16-row block, lane 16 the second half of its columns.
  irdl.attribute @tcgen05_m64 {
    %w = irdl.base "#builtin.array"
    irdl.parameters(warps_per_cta: %w)
  }
  // #tilegpu.dot_operand<op_idx : i32, #tilegpu.mma<...>, wgmma<...> or tcgen05<...>>: operand A (0) or B (1).
  irdl.attribute @dot_operand {
    %i = irdl.base "#builtin.integer"
    %p = irdl.any
    irdl.parameters(op_idx: %i, parent: %p)
  }
  // #tilegpu.swizzled_shared<vec : i64, perPhase : i64, maxPhase : i64, order>: a 2-D tile in
  // shared memory, vectors of a row XOR-permuted by the row's phase. It stands in the
  // memory-space slot of the memref type of a shared buffer.
  irdl.attribute @swizzled_shared {
    %v = irdl.base "#builtin.integer"
    %pp = irdl.base "#builtin.integer"
    %mp = irdl.base "#builtin.integer"
    %o = irdl.base "#builtin.array"
    irdl.parameters(vec: %v, per_phase: %pp, max_phase: %mp, order: %o)
  }
  // #tilegpu.nvmma_shared<swizzleBytes : i64, vec : i64, order>: a 2-D tile in shared memory
  // as the asynchronous tensor cores read it through a descriptor: the contiguous dim cut
  // into atoms of swizzleBytes, 16-byte vectors XOR-permuted within an atom by the row.
  irdl.attribute @nvmma_shared {
    %b = irdl.base "#builtin.integer"
    %v = irdl.base "#builtin.integer"
    %o = irdl.base "#builtin.array"
    irdl.parameters(swizzle_bytes: %b, vec: %v, order: %o)
  }
  // A new shared buffer filled asynchronously (cp.async) with a tile of a tensor; one
  // group of copies, to be waited for with async_wait before the buffer is read.
  irdl.operation @async_copy {
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %r = irdl.base "!builtin.memref"
    %pad = irdl.base "#builtin.string"
    %order = irdl.base "#builtin.dense_array"
    %tile = irdl.base "#builtin.dense_array"
    %lat = irdl.base "#builtin.integer"
    irdl.operands(tensor: %mem, index: variadic %i32)
    irdl.results(result: %r)
    irdl.attributes { "padding" = %pad, "order" = %order, "tile" = %tile, "latency" = %lat }
  }
  // The same copy into a buffer given (a stage of a ring), without a result.
  irdl.operation @async_copy_into {
    %dst = irdl.base "!builtin.memref"
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %pad = irdl.base "#builtin.string"
    %order = irdl.base "#builtin.dense_array"
    %tile = irdl.base "#builtin.dense_array"
    %lat = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, tensor: %mem, index: variadic %i32)
    irdl.attributes { "padding" = %pad, "order" = %order, "tile" = %tile, "latency" = %lat }
  }
  // The same copy issued by the Tensor Memory Accelerator: one bulk tensor copy per swizzle
  // atom into an NVMMA stage, completion counted on the stage's mbarrier (stage_wait).
  irdl.operation @tma_copy_into {
    %dst = irdl.base "!builtin.memref"
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %pad = irdl.base "#builtin.string"
    %order = irdl.base "#builtin.dense_array"
    %tile = irdl.base "#builtin.dense_array"
    %lat = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, tensor: %mem, index: variadic %i32)
    irdl.attributes { "padding" = %pad, "order" = %order, "tile" = %tile, "latency" = %lat }
  }
  // Waits for the TMA copies into stage `slot` of a ring: its mbarrier's phase `phase`.
  irdl.operation @stage_wait {
    %ring = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %i32b = irdl.is i32
    irdl.operands(ring: %ring, slot: %i32, phase: %i32b)
  }
  // The block is done reading stage `slot` (every warp arrives on its empty mbarrier).
  irdl.operation @stage_release {
    %ring = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    irdl.operands(ring: %ring, slot: %i32)
  }
  // Before a TMA refill of stage `slot`: its issuing thread waits for the empty mbarrier.
  irdl.operation @stage_acquire {
    %ring = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %i32b = irdl.is i32
    irdl.operands(ring: %ring, slot: %i32, phase: %i32b)
  }
  // A ring of S shared buffers, memref<SxMxNxT, #tilegpu.swizzled_shared<...>>, for the
  // stages of a pipelined loop; undefined until copied into.
  irdl.operation @stages_alloc {
    %r = irdl.base "!builtin.memref"
    irdl.results(result: %r)
  }
  // Stage `index` of a ring: an MxN buffer view.
  irdl.operation @stage {
    %a = irdl.base "!builtin.memref"
    %i = irdl.is i32
    %r = irdl.base "!builtin.memref"
    irdl.operands(buf: %a, index: %i)
    irdl.results(result: %r)
  }
  // Consumer warpgroups take turns on the tensor cores (FlashAttention-3's ping-pong): a
  // turn begins once the previous warpgroup ended its own.
  irdl.operation @turn_begin {
  }
  // The end of a warpgroup's turn; `last` (0 or 1): the kernel's final end.
  irdl.operation @turn_end {
    %l = irdl.base "#builtin.integer"
    irdl.attributes { "last" = %l }
  }
  // Every thread waits for the grid before this one on the stream to complete
  // (griddepcontrol.wait), then lets the next grid launch; once, at the kernel's top level.
  irdl.operation @grid_dependency_wait {
  }
  // Waits until at most `pending` copy groups are in flight, then a block barrier.
  irdl.operation @async_wait {
    %p = irdl.base "#builtin.integer"
    irdl.attributes { "pending" = %p }
  }
  // The accumulator of asynchronous tensor-core products once at most `pending` groups of
  // them are in flight (wgmma.wait_group); the value itself.
  irdl.operation @mma_wait {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    %p = irdl.base "#builtin.integer"
    irdl.operands(value: %a)
    irdl.results(result: %r)
    irdl.attributes { "pending" = %p }
  }
  // A shared-memory buffer holding a tile (every thread writes its registers).
  irdl.operation @local_alloc {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.memref"
    irdl.operands(value: %a)
    irdl.results(result: %r)
  }
  // The tile of a shared-memory buffer in the result's layout (ldmatrix for a dot operand).
  irdl.operation @local_load {
    %a = irdl.base "!builtin.memref"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(buf: %a)
    irdl.results(result: %r)
  }
  // The same, of a 2-D buffer read with its dims swapped (the transposed tile, same bytes).
  irdl.operation @local_load_trans {
    %a = irdl.base "!builtin.memref"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(buf: %a)
    irdl.results(result: %r)
  }
  // The same tile in another layout, through a shared-memory buffer laid out as `scratch`.
  irdl.operation @convert_layout {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    %s = irdl.any
    irdl.operands(value: %a)
    irdl.results(result: %r)
    irdl.attributes { "scratch" = %s }
  }
}

irdl.dialect @tile {
  // Block index along grid axis `axis`.
  irdl.operation @bid {
    %i32 = irdl.is i32
    %axis = irdl.base "#builtin.integer"
    irdl.results(result: %i32)
    irdl.attributes { "axis" = %axis }
  }
  // Number of blocks along grid axis `axis`.
  irdl.operation @num_blocks {
    %i32 = irdl.is i32
    %axis = irdl.base "#builtin.integer"
    irdl.results(result: %i32)
    irdl.attributes { "axis" = %axis }
  }
  // This CTA's rank (0 or 1) in its block's CTA pair (`tile-cta-pair`; 0 elsewhere).
  irdl.operation @cluster_rank {
    %i32 = irdl.is i32
    irdl.results(result: %i32)
  }
  // The grid extent along `axis` that a persistent kernel's launch stands for (it runs on
  // fewer blocks and walks its tiles); a parameter the launcher fills.
  irdl.operation @num_tiles {
    %i32 = irdl.is i32
    %axis = irdl.base "#builtin.integer"
    irdl.results(result: %i32)
    irdl.attributes { "axis" = %axis }
  }
  // One element of a tensor as a scalar; out of bounds reads 0.
  irdl.operation @element {
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %r = irdl.any
    irdl.operands(tensor: %mem, index: variadic %i32)
    irdl.results(result: %r)
  }
  // Extent `axis` of a tensor parameter.
  irdl.operation @dim {
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %axis = irdl.base "#builtin.integer"
    irdl.operands(tensor: %mem)
    irdl.results(result: %i32)
    irdl.attributes { "axis" = %axis }
  }
  // The one element of a one-element tile, as a scalar.
  irdl.operation @item {
    %t = irdl.base "!builtin.tensor"
    %s = irdl.any
    irdl.operands(value: %t)
    irdl.results(result: %s)
  }
  // A scalar broadcast to every element of a tile.
  irdl.operation @splat {
    %s = irdl.any
    %t = irdl.base "!builtin.tensor"
    irdl.operands(value: %s)
    irdl.results(result: %t)
  }
  // Extent-1 dimensions broadcast to the result shape.
  irdl.operation @broadcast {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(value: %a)
    irdl.results(result: %r)
  }
  // Reduction along `axis` (kept with extent 1); kind is "max", "min", "sum", "argmax" or
  // "argmin" (the two index reductions give i32).
  irdl.operation @reduce {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    %kind = irdl.base "#builtin.string"
    %axis = irdl.base "#builtin.integer"
    irdl.operands(value: %a)
    irdl.results(result: %r)
    irdl.attributes { "kind" = %kind, "axis" = %axis }
  }
  // Tile `index` (in tile units) of a tensor whose dims are viewed in `order`;
  // out-of-bounds elements read `padding`; `latency` (0: none) is the pipelining hint.
  irdl.operation @load {
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %r = irdl.base "!builtin.tensor"
    %pad = irdl.base "#builtin.string"
    %order = irdl.base "#builtin.dense_array"
    %lat = irdl.base "#builtin.integer"
    irdl.operands(tensor: %mem, index: variadic %i32)
    irdl.results(result: %r)
    irdl.attributes { "padding" = %pad, "order" = %order, "latency" = %lat }
  }
  // A hint that tile `index` of a tensor (addressed as `load`, its full shape `tile`) will be
  // read soon: fetched into the L2 cache, nothing returned, no result depends on it.
  irdl.operation @prefetch {
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %order = irdl.base "#builtin.dense_array"
    %tile = irdl.base "#builtin.dense_array"
    irdl.operands(tensor: %mem, index: variadic %i32)
    irdl.attributes { "order" = %order, "tile" = %tile }
  }
  // The elements at per-dimension element-index tiles (a gather, e.g. through a block table).
  irdl.operation @gather {
    %mem = irdl.base "!builtin.memref"
    %idx = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    %pad = irdl.base "#builtin.string"
    irdl.operands(tensor: %mem, index: variadic %idx)
    irdl.results(result: %r)
    irdl.attributes { "padding" = %pad }
  }
  // Writes a tile at per-dimension element-index tiles; out-of-bounds indices are skipped.
  irdl.operation @scatter {
    %mem = irdl.base "!builtin.memref"
    %idx = irdl.base "!builtin.tensor"
    %t = irdl.base "!builtin.tensor"
    irdl.operands(tensor: %mem, index: variadic %idx, tile: %t)
  }
  // a · b + acc on tensor cores (fp16/bf16 operands, f32 accumulator).
  irdl.operation @mma {
    %a = irdl.base "!builtin.tensor"
    %b = irdl.base "!builtin.tensor"
    %acc = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(a: %a, b: %b, acc: %acc)
    irdl.results(result: %r)
  }
  // [0, 1, ..., N-1].
  // mma_scaled: (a · a_scale) · (b · b_scale) + acc, each scale applied to its block of K.
  irdl.operation @mma_scaled {
    %a = irdl.base "!builtin.tensor"
    %sa = irdl.base "!builtin.tensor"
    %b = irdl.base "!builtin.tensor"
    %sb = irdl.base "!builtin.tensor"
    %acc = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(a: %a, a_scale: %sa, b: %b, b_scale: %sb, acc: %acc)
    irdl.results(result: %r)
  }
  irdl.operation @arange {
    %r = irdl.base "!builtin.tensor"
    irdl.results(result: %r)
  }
  // Same elements in row-major order, another shape.
  irdl.operation @reshape {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(value: %a)
    irdl.results(result: %r)
  }
  // Tiles one after the other along `axis`.
  irdl.operation @concat {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    %ax = irdl.base "#builtin.integer"
    irdl.operands(values: variadic %a)
    irdl.results(result: %r)
    irdl.attributes { "axis" = %ax }
  }
  // `value` sorted along `axis` (stable; descending or not), its first `k` along the axis:
  // the values, or (`indices` = 1) their positions as i32. `sort`, `argsort`, `topk`.
  irdl.operation @sort {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    %ax = irdl.base "#builtin.integer"
    %d = irdl.base "#builtin.integer"
    %i = irdl.base "#builtin.integer"
    %k = irdl.base "#builtin.integer"
    irdl.operands(value: %a)
    irdl.results(result: %r)
    irdl.attributes { "axis" = %ax, "descending" = %d, "indices" = %i, "k" = %k }
  }
  // The sub-tile at `offsets` of the result's shape (constant bounds: `t[:, a:b]`).
  irdl.operation @slice {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    %o = irdl.base "#builtin.dense_array"
    irdl.operands(value: %a)
    irdl.results(result: %r)
    irdl.attributes { "offsets" = %o }
  }
  // Dims permuted: result dim i is operand dim perm[i].
  irdl.operation @permute {
    %a = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    %perm = irdl.base "#builtin.dense_array"
    irdl.operands(value: %a)
    irdl.results(result: %r)
    irdl.attributes { "perm" = %perm }
  }
  // Philox 4x32-10 uniform floats in [0, 1), keyed by seed, counters from offsets.
  irdl.operation @rand {
    %seed = irdl.any
    %off = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(seed: %seed, offsets: %off)
    irdl.results(result: %r)
  }
  // Debug print.
  irdl.operation @print {
    %v = irdl.any
    %prefix = irdl.base "#builtin.string"
    irdl.operands(values: variadic %v)
    irdl.attributes { "prefix" = %prefix }
  }
  // Tile `index` of a tensor; out-of-bounds elements are not written.
  irdl.operation @store {
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %t = irdl.base "!builtin.tensor"
    irdl.operands(tensor: %mem, index: variadic %i32, tile: %t)
  }
  // store with a mask: elements whose i1 mask element is false are not written.
  irdl.operation @store_masked {
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %t = irdl.base "!builtin.tensor"
    %m = irdl.base "!builtin.tensor"
    irdl.operands(tensor: %mem, index: variadic %i32, tile: %t, mask: %m)
  }
  // atomic read-modify-write of a tile of a tensor ({op = add|max|min, sem, scope}),
  // masked; the result is the tile of old values.
  irdl.operation @atomic {
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %t = irdl.base "!builtin.tensor"
    %m = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(tensor: %mem, index: variadic %i32, tile: %t, mask: %m)
    irdl.results(old: %r)
  }
  // compare-and-swap of a tile: writes `tile` where the element equals `cmp`.
  irdl.operation @atomic_cas {
    %mem = irdl.base "!builtin.memref"
    %i32 = irdl.is i32
    %c = irdl.base "!builtin.tensor"
    %t = irdl.base "!builtin.tensor"
    %m = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(tensor: %mem, index: variadic %i32, cmp: %c, tile: %t, mask: %m)
    irdl.results(old: %r)
  }
  // atomic read-modify-write at element indices: one i32 index tile per tensor dim, each of
  // the tile's shape (a scatter's addressing).
  irdl.operation @atomic_at {
    %mem = irdl.base "!builtin.memref"
    %i = irdl.base "!builtin.tensor"
    %t = irdl.base "!builtin.tensor"
    %m = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(tensor: %mem, index: variadic %i, tile: %t, mask: %m)
    irdl.results(old: %r)
  }
  // compare-and-swap at element indices.
  irdl.operation @atomic_cas_at {
    %mem = irdl.base "!builtin.memref"
    %i = irdl.base "!builtin.tensor"
    %c = irdl.base "!builtin.tensor"
    %t = irdl.base "!builtin.tensor"
    %m = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(tensor: %mem, index: variadic %i, cmp: %c, tile: %t, mask: %m)
    irdl.results(old: %r)
  }
  // inclusive scan along an axis ({op = add|mul|max|min, axis}).
  irdl.operation @scan {
    %t = irdl.base "!builtin.tensor"
    %r = irdl.base "!builtin.tensor"
    irdl.operands(value: %t)
    irdl.results(result: %r)
  }
  // a conversion to or from a storage type (unsigned integers, fp8), which `arith` lacks.
  irdl.operation @cast {
    %t = irdl.any
    %r = irdl.any
    irdl.operands(value: %t)
    irdl.results(result: %r)
  }
}
