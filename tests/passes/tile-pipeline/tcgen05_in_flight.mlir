// passes: tile-pipeline
// A 128x64x32 GEMM on sm_103a: A and B are TMA copies into NVMMA rings. The mma is a tcgen05
// product that only accumulates (its accumulator stays in Tensor Memory) and reads the two
// rings, so it stays in flight with no wait in the loop: each ring's stage is released
// (stage_release) right after the product, the lowering's tcgen05.commit onto the stage's
// empty mbarrier, and acquired (stage_acquire) before its refill; mma_wait pending=0 after
// the loop; each ring has distance + 2 = 4 stages.
module attributes {tile.target = "sm_103a"} {
  func.func @matmul(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %B: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %C: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %3 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %4 = "tile.dim"(%A) {axis = 0 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %5 = arith.constant 127 : i32
    %6 = arith.addi %4, %5 : i32
    %7 = arith.constant 128 : i32
    %8 = arith.floordivsi %6, %7 : i32
    %9 = "tile.dim"(%B) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %10 = arith.constant 63 : i32
    %11 = arith.addi %9, %10 : i32
    %12 = arith.constant 64 : i32
    %13 = arith.floordivsi %11, %12 : i32
    %14 = arith.constant 8 : i32
    %15 = arith.muli %14, %13 : i32
    %16 = arith.floordivsi %3, %15 : i32
    %17 = arith.constant 8 : i32
    %18 = arith.muli %16, %17 : i32
    %19 = arith.subi %8, %18 : i32
    %20 = arith.constant 8 : i32
    %21 = arith.minsi %19, %20 : i32
    %22 = arith.constant 8 : i32
    %23 = arith.muli %22, %13 : i32
    %24 = arith.remsi %3, %23 : i32
    %25 = arith.remsi %24, %21 : i32
    %26 = arith.addi %18, %25 : i32
    %27 = arith.constant 8 : i32
    %28 = arith.muli %27, %13 : i32
    %29 = arith.remsi %3, %28 : i32
    %30 = arith.floordivsi %29, %21 : i32
    %31 = arith.constant 0.0 : f32
    %32 = "tile.splat"(%31) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %33 = "tile.dim"(%A) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %34 = arith.constant 31 : i32
    %35 = arith.addi %33, %34 : i32
    %36 = arith.constant 32 : i32
    %37 = arith.floordivsi %35, %36 : i32
    %38 = arith.constant 0 : i32
    %39 = arith.constant 1 : i32
    %45 = scf.for %40 = %38 to %37 step %39 iter_args(%41 = %32) -> (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) : i32 {
      %47 = "tilegpu.async_copy"(%A, %26, %40) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 32>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
      %48 = "tilegpu.local_load"(%47) : (memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<128x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>
      %49 = "tilegpu.async_copy"(%B, %40, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
      %50 = "tilegpu.local_load"(%49) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
      %44 = "tile.mma"(%48, %50, %41) : (tensor<128x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      scf.yield %44 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    }
    %46 = arith.truncf %45 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>> to tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
    "tile.store"(%C, %26, %30, %46) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>) -> ()
    return
  }
}
