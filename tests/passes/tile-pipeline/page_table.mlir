// passes: tile-pipeline
// two_distances.mlir with B's tile row read from a table (paged attention's block table):
// B's copies are pipelined all the same, the table entry `%arg3[k + 1]` read again ahead of
// each — in the prologue for tile 0 and in the body for k + 1 (past the table it reads 0) —
// because the kernel never writes the table.
module attributes {tile.target = "sm_121a"} {
  func.func @pages(%arg0: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg1: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg2: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg3: memref<?xi32, strided<[?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %3 = arith.constant 0.0 : f32
    %4 = "tile.splat"(%3) : (f32) -> tensor<16x16xf32, #tilegpu.mma<[1, 1]>>
    %5 = "tile.dim"(%arg0) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %6 = arith.constant 63 : i32
    %7 = arith.addi %5, %6 : i32
    %8 = arith.constant 64 : i32
    %9 = arith.floordivsi %7, %8 : i32
    %10 = arith.constant 0 : i32
    %11 = arith.constant 1 : i32
    %19 = scf.for %12 = %10 to %9 step %11 iter_args(%13 = %4) -> (tensor<16x16xf32, #tilegpu.mma<[1, 1]>>) : i32 {
      %14 = arith.constant 0 : i32
      %22 = "tilegpu.async_copy"(%arg0, %14, %12) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 16, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<16x64xf16, #tilegpu.swizzled_shared<8 : i64, 1 : i64, 8 : i64, [1, 0]>>
      "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
      %23 = "tilegpu.local_load"(%22) : (memref<16x64xf16, #tilegpu.swizzled_shared<8 : i64, 1 : i64, 8 : i64, [1, 0]>>) -> tensor<16x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.mma<[1, 1]>>>
      %16 = arith.constant 0 : i32
      %30 = "tile.element"(%arg3, %12) : (memref<?xi32, strided<[?]>>, i32) -> i32
      %24 = "tilegpu.async_copy"(%arg1, %30, %16) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 16>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<64x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>
      "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
      %25 = "tilegpu.local_load"(%24) : (memref<64x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>) -> tensor<64x16xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.mma<[1, 1]>>>
      %18 = "tile.mma"(%23, %25, %13) : (tensor<16x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.mma<[1, 1]>>>, tensor<64x16xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.mma<[1, 1]>>>, tensor<16x16xf32, #tilegpu.mma<[1, 1]>>) -> tensor<16x16xf32, #tilegpu.mma<[1, 1]>>
      scf.yield %18 : tensor<16x16xf32, #tilegpu.mma<[1, 1]>>
    }
    %20 = arith.constant 0 : i32
    %21 = arith.constant 0 : i32
    "tile.store"(%arg2, %20, %21, %19) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<16x16xf32, #tilegpu.mma<[1, 1]>>) -> ()
    return
  }
}
