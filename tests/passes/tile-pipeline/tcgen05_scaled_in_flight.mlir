// passes: tile-pipeline
// An NVFP4 block-scaled GEMM on sm_103a (kernels/matmul_mx.tile at its defaults, 128x256 tiles):
// the mma_scaled is a tcgen05 product that only accumulates and reads two rings of packed fp4,
// which TMA fills (bytes to the copy engine). Its scale tiles are registers, stored into Tensor
// Memory by the lowering a region a stage of A's ring, so the product stays in flight as an
// unscaled one does: stage_release after it (a tcgen05.commit), stage_acquire before each
// refill, mma_wait pending=0 after the loop, distance + 2 = 3 stages.
module attributes {tile.target = "sm_103a"} {
  func.func @matmul_mx(%A: memref<?x?xvector<2xf4E2M1FN>, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %B: memref<?x?xvector<2xf4E2M1FN>, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %SA: memref<?x?xf8E4M3, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %SB: memref<?x?xf8E4M3, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %C: memref<?x?xbf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %alpha: f32) attributes {tile.kernel, tile.num_warps = 8 : i32} {
    %6 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %7 = "tile.dim"(%A) {axis = 0 : i32} : (memref<?x?xvector<2xf4E2M1FN>, strided<[?, ?]>>) -> i32
    %8 = arith.constant 127 : i32
    %9 = arith.addi %7, %8 : i32
    %10 = arith.constant 128 : i32
    %11 = arith.floordivsi %9, %10 : i32
    %12 = "tile.dim"(%B) {axis = 0 : i32} : (memref<?x?xvector<2xf4E2M1FN>, strided<[?, ?]>>) -> i32
    %13 = arith.constant 255 : i32
    %14 = arith.addi %12, %13 : i32
    %15 = arith.constant 256 : i32
    %16 = arith.floordivsi %14, %15 : i32
    %17 = arith.constant 8 : i32
    %18 = arith.muli %17, %16 : i32
    %19 = arith.floordivsi %6, %18 : i32
    %20 = arith.constant 8 : i32
    %21 = arith.muli %19, %20 : i32
    %22 = arith.subi %11, %21 : i32
    %23 = arith.constant 8 : i32
    %24 = arith.minsi %22, %23 : i32
    %25 = arith.constant 8 : i32
    %26 = arith.muli %25, %16 : i32
    %27 = arith.remsi %6, %26 : i32
    %28 = arith.remsi %27, %24 : i32
    %29 = arith.addi %21, %28 : i32
    %30 = arith.constant 8 : i32
    %31 = arith.muli %30, %16 : i32
    %32 = arith.remsi %6, %31 : i32
    %33 = arith.floordivsi %32, %24 : i32
    %34 = arith.constant 0.0 : f32
    %35 = "tile.splat"(%34) : (f32) -> tensor<128x256xf32, #tilegpu.tcgen05<[4, 2]>>
    %36 = "tile.dim"(%A) {axis = 1 : i32} : (memref<?x?xvector<2xf4E2M1FN>, strided<[?, ?]>>) -> i32
    %37 = arith.constant 2 : i32
    %38 = arith.muli %36, %37 : i32
    %39 = arith.constant 255 : i32
    %40 = arith.addi %38, %39 : i32
    %41 = arith.constant 256 : i32
    %42 = arith.floordivsi %40, %41 : i32
    %43 = arith.constant 0 : i32
    %44 = arith.constant 1 : i32
    %52 = scf.for %45 = %43 to %42 step %44 iter_args(%46 = %35) -> (tensor<128x256xf32, #tilegpu.tcgen05<[4, 2]>>) : i32 {
      %56 = "tilegpu.async_copy"(%A, %29, %45) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 128>} : (memref<?x?xvector<2xf4E2M1FN>, strided<[?, ?]>>, i32, i32) -> memref<128x128xvector<2xf4E2M1FN>, #tilegpu.nvmma_shared<128 : i64, 16 : i64, [1, 0]>>
      "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
      %57 = "tilegpu.local_load"(%56) : (memref<128x128xvector<2xf4E2M1FN>, #tilegpu.nvmma_shared<128 : i64, 16 : i64, [1, 0]>>) -> tensor<128x128xvector<2xf4E2M1FN>, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 2]>>>
      %58 = "tilegpu.async_copy"(%B, %45, %33) {latency = 1 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 128, 256>} : (memref<?x?xvector<2xf4E2M1FN>, strided<[?, ?]>>, i32, i32) -> memref<128x256xvector<2xf4E2M1FN>, #tilegpu.nvmma_shared<128 : i64, 16 : i64, [0, 1]>>
      "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
      %59 = "tilegpu.local_load"(%58) : (memref<128x256xvector<2xf4E2M1FN>, #tilegpu.nvmma_shared<128 : i64, 16 : i64, [0, 1]>>) -> tensor<128x256xvector<2xf4E2M1FN>, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 2]>>>
      %49 = "tile.load"(%SA, %29, %45) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf8E4M3, strided<[?, ?]>>, i32, i32) -> tensor<128x16xf8E4M3, #tilegpu.blocked<[1, 8], [16, 2], [8, 1], [1, 0]>>
      %60 = "tilegpu.convert_layout"(%49) {scratch = #tilegpu.shared<4 : i64>} : (tensor<128x16xf8E4M3, #tilegpu.blocked<[1, 8], [16, 2], [8, 1], [1, 0]>>) -> tensor<128x16xf8E4M3, #tilegpu.blocked<[1, 16], [32, 1], [1, 8], [1, 0]>>
      %50 = "tile.load"(%SB, %45, %33) {latency = 0 : i32, order = array<i32: 1, 0>, padding = "zero"} : (memref<?x?xf8E4M3, strided<[?, ?]>>, i32, i32) -> tensor<16x256xf8E4M3, #tilegpu.blocked<[16, 1], [1, 32], [1, 8], [0, 1]>>
      %61 = "tilegpu.convert_layout"(%50) {scratch = #tilegpu.shared<4 : i64>} : (tensor<16x256xf8E4M3, #tilegpu.blocked<[16, 1], [1, 32], [1, 8], [0, 1]>>) -> tensor<16x256xf8E4M3, #tilegpu.blocked<[16, 1], [1, 32], [8, 1], [0, 1]>>
      %51 = "tile.mma_scaled"(%57, %60, %59, %61, %46) : (tensor<128x128xvector<2xf4E2M1FN>, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 2]>>>, tensor<128x16xf8E4M3, #tilegpu.blocked<[1, 16], [32, 1], [1, 8], [1, 0]>>, tensor<128x256xvector<2xf4E2M1FN>, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 2]>>>, tensor<16x256xf8E4M3, #tilegpu.blocked<[16, 1], [1, 32], [8, 1], [0, 1]>>, tensor<128x256xf32, #tilegpu.tcgen05<[4, 2]>>) -> tensor<128x256xf32, #tilegpu.tcgen05<[4, 2]>>
      scf.yield %51 : tensor<128x256xf32, #tilegpu.tcgen05<[4, 2]>>
    }
    %53 = "tile.splat"(%alpha) : (f32) -> tensor<128x256xf32, #tilegpu.tcgen05<[4, 2]>>
    %54 = arith.mulf %52, %53 : tensor<128x256xf32, #tilegpu.tcgen05<[4, 2]>>
    %55 = arith.truncf %54 : tensor<128x256xf32, #tilegpu.tcgen05<[4, 2]>> to tensor<128x256xbf16, #tilegpu.tcgen05<[4, 2]>>
    "tile.store"(%C, %29, %33, %55) : (memref<?x?xbf16, strided<[?, ?]>>, i32, i32, tensor<128x256xbf16, #tilegpu.tcgen05<[4, 2]>>) -> ()
    return
  }
}
