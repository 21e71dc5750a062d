// passes: tile-to-llvm
// Two tcgen05 products left in flight by tile-mma-overlap (tile-mma-overlap/fa4_order after
// the pass): each commits to an mbarrier of its own (three mbarrier.init: the kernel's and
// theirs) and has a TMEM region of its own (S at column 0, P·V at 64; A at 128); its
// mma_wait is the arrival and wait on that mbarrier, then tcgen05.ld. The carried P goes into
// its A region where the loop yields it (after P·V's wait), not before P·V; the accumulator,
// scaled by a constant rather than a row factor, goes through registers
// (tcgen05_carried_in_tmem keeps it in TMEM). Kernel:
//   let q = load(Q, index=(0, 0), shape=(128, 64));
//   let acc = zeros((128, 64), f32); let p_prev = zeros((128, 64), f16);
//   for j in range(0, cdiv(K.shape[0], 64)) {
//       let kt = load(K, index=(0, j), shape=(64, 64), order=(1, 0), latency=1);
//       let s = mma(q, kt, zeros((128, 64), f32));
//       let vt = load(V, index=(j - 1, 0), shape=(64, 64), latency=1);
//       acc = mma(p_prev, vt, acc);
//       let p = exp2(s - max(s, axis=-1, keepdims=true));
//       acc = acc * 0.5; p_prev = p.astype(f16);
//   }
//   store(Out, index=(0, 0), tile=acc.astype(f16));
module attributes {tile.target = "sm_103a"} {
  func.func @fa4(%Q: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %K: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %V: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Out: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %4 = arith.constant 0 : i32
    %5 = arith.constant 0 : i32
    %44 = "tilegpu.async_copy"(%Q, %4, %5) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
    %45 = "tilegpu.local_load"(%44) : (memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>
    %7 = arith.constant 0.0 : f32
    %8 = "tile.splat"(%7) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %9 = arith.constant 0.0 : f16
    %10 = "tile.splat"(%9) : (f16) -> tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
    %11 = "tile.dim"(%K) {axis = 0 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %12 = arith.constant 63 : i32
    %13 = arith.addi %11, %12 : i32
    %14 = arith.constant 64 : i32
    %15 = arith.floordivsi %13, %14 : i32
    %16 = arith.constant 0 : i32
    %17 = arith.constant 1 : i32
    %50 = "tilegpu.stages_alloc"() : () -> memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
    %51 = "tilegpu.stages_alloc"() : () -> memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %52 = arith.constant 0 : i32
    %56 = arith.cmpi slt, %52, %15 : i32
    scf.if %56 {
      %53 = arith.constant 0 : i32
      %54 = arith.constant 0 : i32
      %55 = "tilegpu.stage"(%50, %54) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%55, %K, %53, %52) {latency = 1 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %57 = arith.constant 0 : i32
    %63 = arith.cmpi slt, %57, %15 : i32
    scf.if %63 {
      %58 = arith.constant 1 : i32
      %59 = arith.subi %57, %58 : i32
      %60 = arith.constant 0 : i32
      %61 = arith.constant 0 : i32
      %62 = "tilegpu.stage"(%51, %61) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%62, %V, %59, %60) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %39:2 = scf.for %18 = %16 to %15 step %17 iter_args(%19 = %8, %20 = %10) -> (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>) : i32 {
      %21 = arith.constant 0 : i32
      %64 = arith.constant 2 : i32
      %65 = arith.remsi %18, %64 : i32
      %66 = arith.floordivsi %18, %64 : i32
      %67 = arith.constant 2 : i32
      %68 = arith.remsi %66, %67 : i32
      "tilegpu.stage_wait"(%50, %65, %68) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
      %46 = "tilegpu.stage"(%50, %65) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      %69 = arith.constant 1 : i32
      %70 = arith.addi %18, %69 : i32
      %71 = arith.constant 0 : i32
      %72 = arith.constant 2 : i32
      %73 = arith.remsi %70, %72 : i32
      %75 = arith.cmpi slt, %70, %15 : i32
      scf.if %75 {
        %74 = "tilegpu.stage"(%50, %73) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
        "tilegpu.tma_copy_into"(%74, %K, %71, %70) {latency = 1 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %47 = "tilegpu.local_load"(%46) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
      %23 = arith.constant 0.0 : f32
      %24 = "tile.splat"(%23) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %25 = "tile.mma"(%45, %47, %24) : (tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %26 = arith.constant 1 : i32
      %27 = arith.subi %18, %26 : i32
      %28 = arith.constant 0 : i32
      %76 = arith.constant 2 : i32
      %77 = arith.remsi %18, %76 : i32
      %78 = arith.floordivsi %18, %76 : i32
      %79 = arith.constant 2 : i32
      %80 = arith.remsi %78, %79 : i32
      "tilegpu.stage_wait"(%51, %77, %80) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %48 = "tilegpu.stage"(%51, %77) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %81 = arith.constant 1 : i32
      %82 = arith.addi %18, %81 : i32
      %83 = arith.constant 1 : i32
      %84 = arith.subi %82, %83 : i32
      %85 = arith.constant 0 : i32
      %86 = arith.constant 2 : i32
      %87 = arith.remsi %82, %86 : i32
      %89 = arith.cmpi slt, %82, %15 : i32
      scf.if %89 {
        %88 = "tilegpu.stage"(%51, %87) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%88, %V, %84, %85) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %49 = "tilegpu.local_load"(%48) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
      %30 = "tile.mma"(%20, %49, %19) : (tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %90 = "tilegpu.mma_wait"(%25) {pending = 1 : i32} : (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %31 = "tile.reduce"(%90) {kind = "max", axis = 1 : i32} : (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x1xf32, #tilegpu.slice<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
      %32 = "tile.broadcast"(%31) : (tensor<128x1xf32, #tilegpu.slice<1 : i32, #tilegpu.tcgen05<[4, 1]>>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %33 = arith.subf %90, %32 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %34 = math.exp2 %33 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %35 = arith.constant 0.5 : f32
      %36 = "tile.splat"(%35) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %91 = "tilegpu.mma_wait"(%30) {pending = 0 : i32} : (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %37 = arith.mulf %91, %36 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %38 = arith.truncf %34 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>> to tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
      scf.yield %37, %38 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
    }
    %41 = arith.truncf %39#0 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>> to tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
    %42 = arith.constant 0 : i32
    %43 = arith.constant 0 : i32
    "tile.store"(%Out, %42, %43, %41) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>) -> ()
    return
  }
}
