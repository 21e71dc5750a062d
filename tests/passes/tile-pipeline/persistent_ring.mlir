// passes: tile-pipeline{empty-barriers=true}
// A persistent GEMM (tile-persistent ran): the K loop sits at the top of the tile loop and
// its bounds are made before it, so the two TMA rings are made once, before the tile loop,
// and their fills are numbered across tiles: fill n = k · trip + i, with k = (%t - bid) /
// num_blocks the block's tile count so far and trip = max(cdiv(ub - lb, step), 0). Stages,
// mbarrier phases and acquires use n; the release of the previous iteration's stage is
// guarded by the local iteration (> 0), and the last iteration's stage is released after the
// wait that ends the loop, so that the next tile's prologue can acquire it.
module attributes {tile.target = "sm_90a"} {
  func.func @matmul(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %B: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %C: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 8 : i32} {
    %47 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %48 = "tile.num_blocks"() {axis = 0 : i32} : () -> i32
    %49 = "tile.num_tiles"() {axis = 0 : i32} : () -> i32
    %50 = arith.constant 0 : i32
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
    %17 = arith.constant 8 : i32
    %20 = arith.constant 8 : i32
    %22 = arith.constant 8 : i32
    %23 = arith.muli %22, %13 : i32
    %27 = arith.constant 8 : i32
    %28 = arith.muli %27, %13 : i32
    %31 = arith.constant 0.0 : f32
    %33 = "tile.dim"(%A) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %34 = arith.constant 31 : i32
    %35 = arith.addi %33, %34 : i32
    %36 = arith.constant 32 : i32
    %37 = arith.floordivsi %35, %36 : i32
    %38 = arith.constant 0 : i32
    %39 = arith.constant 1 : i32
    scf.for %51 = %47 to %49 step %48 : i32 {
      %3 = arith.addi %51, %50 : i32
      %16 = arith.floordivsi %3, %15 : i32
      %18 = arith.muli %16, %17 : i32
      %19 = arith.subi %8, %18 : i32
      %21 = arith.minsi %19, %20 : i32
      %24 = arith.remsi %3, %23 : i32
      %25 = arith.remsi %24, %21 : i32
      %26 = arith.addi %18, %25 : i32
      %29 = arith.remsi %3, %28 : i32
      %30 = arith.floordivsi %29, %21 : i32
      %32 = "tile.splat"(%31) : (f32) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
      %45 = scf.for %40 = %38 to %37 step %39 iter_args(%41 = %32) -> (tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>) : i32 {
        %52 = "tilegpu.async_copy"(%A, %26, %40) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 32>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
        %53 = "tilegpu.local_load"(%52) : (memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<128x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[8, 1]>>>
        %54 = "tilegpu.async_copy"(%B, %40, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
        %55 = "tilegpu.local_load"(%54) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[8, 1]>>>
        %44 = "tile.mma"(%53, %55, %41) : (tensor<128x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[8, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[8, 1]>>>, tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
        scf.yield %44 : tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
      }
      %46 = arith.truncf %45 : tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>> to tensor<128x64xf16, #tilegpu.wgmma<[8, 1]>>
      "tile.store"(%C, %26, %30, %46) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<128x64xf16, #tilegpu.wgmma<[8, 1]>>) -> ()
    }
    return
  }
}
