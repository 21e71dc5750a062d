// passes: tile-to-llvm{arch=sm_90a}
// One warp, one m16n8 accumulator block over K = 128 (eight K steps): the steps go to two
// partial accumulators (even steps onto the incoming zeros, odd steps onto zeros of their
// own), added at the end, so that two mma.sync chains are in flight instead of one.
module attributes {tile.target = "sm_90a"} {
  func.func @mma_chains(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %B: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %C: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %3 = arith.constant 0 : i32
    %4 = arith.constant 0 : i32
    %14 = "tilegpu.async_copy"(%A, %3, %4) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 16, 128>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<16x128xf16, #tilegpu.swizzled_shared<8 : i64, 1 : i64, 8 : i64, [1, 0]>>
    "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
    %15 = "tilegpu.local_load"(%14) : (memref<16x128xf16, #tilegpu.swizzled_shared<8 : i64, 1 : i64, 8 : i64, [1, 0]>>) -> tensor<16x128xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.mma<[1, 1]>>>
    %6 = arith.constant 0 : i32
    %7 = arith.constant 0 : i32
    %8 = "tile.load"(%B, %6, %7) {latency = 0 : i32, order = array<i32: 1, 0>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<128x8xf16, #tilegpu.blocked<[4, 1], [4, 8], [1, 1], [0, 1]>>
    %16 = "tilegpu.local_alloc"(%8) : (tensor<128x8xf16, #tilegpu.blocked<[4, 1], [4, 8], [1, 1], [0, 1]>>) -> memref<128x8xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [0, 1]>>
    %17 = "tilegpu.local_load"(%16) : (memref<128x8xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [0, 1]>>) -> tensor<128x8xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.mma<[1, 1]>>>
    %9 = arith.constant 0.0 : f32
    %10 = "tile.splat"(%9) : (f32) -> tensor<16x8xf32, #tilegpu.mma<[1, 1]>>
    %11 = "tile.mma"(%15, %17, %10) : (tensor<16x128xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.mma<[1, 1]>>>, tensor<128x8xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.mma<[1, 1]>>>, tensor<16x8xf32, #tilegpu.mma<[1, 1]>>) -> tensor<16x8xf32, #tilegpu.mma<[1, 1]>>
    %12 = arith.constant 0 : i32
    %13 = arith.constant 0 : i32
    "tile.store"(%C, %12, %13, %11) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<16x8xf32, #tilegpu.mma<[1, 1]>>) -> ()
    return
  }
}
