// passes: tile-grid-dependency
// A ring of `cp.async` stages (tile-to-llvm's ring_stages test) with A declared independent:
// its prologue copy stays after the wait, which goes before it — a `cp.async` copy is one
// commit group, waited for by count, and is never issued early.
module attributes {tile.target = "sm_121a"} {
  func.func @ring_stages(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32, tile.independent}, %B: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %C: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %0 = arith.constant 0 : i32
    %1 = arith.constant 1 : i32
    %2 = arith.constant 2 : i32
    %3 = "tilegpu.stages_alloc"() : () -> memref<2x16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>
    %4 = "tilegpu.stage"(%3, %0) : (memref<2x16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>, i32) -> memref<16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>
    "tilegpu.async_copy_into"(%4, %A, %0, %0) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 16, 16>} : (memref<16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    %5 = "tile.dim"(%A) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %6 = arith.constant 16 : i32
    %7 = arith.floordivsi %5, %6 : i32
    %8 = arith.constant 0.0 : f32
    %9 = "tile.splat"(%8) : (f32) -> tensor<16x8xf32, #tilegpu.mma<[1, 1]>>
    %10 = scf.for %11 = %0 to %7 step %1 iter_args(%12 = %9) -> (tensor<16x8xf32, #tilegpu.mma<[1, 1]>>) : i32 {
      %13 = arith.addi %11, %1 : i32
      %14 = arith.remsi %13, %2 : i32
      %15 = "tilegpu.stage"(%3, %14) : (memref<2x16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>, i32) -> memref<16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>
      "tilegpu.async_copy_into"(%15, %A, %0, %13) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 16, 16>} : (memref<16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      "tilegpu.async_wait"() {pending = 1 : i32} : () -> ()
      %16 = arith.remsi %11, %2 : i32
      %17 = "tilegpu.stage"(%3, %16) : (memref<2x16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>, i32) -> memref<16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>
      %18 = "tilegpu.local_load"(%17) : (memref<16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>) -> tensor<16x16xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.mma<[1, 1]>>>
      %19 = "tile.load"(%B, %11, %0) {latency = 0 : i32, order = array<i32: 1, 0>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<16x8xf16, #tilegpu.blocked<[4, 1], [4, 8], [1, 1], [0, 1]>>
      %20 = "tilegpu.local_alloc"(%19) : (tensor<16x8xf16, #tilegpu.blocked<[4, 1], [4, 8], [1, 1], [0, 1]>>) -> memref<16x8xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [0, 1]>>
      %21 = "tilegpu.local_load"(%20) : (memref<16x8xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [0, 1]>>) -> tensor<16x8xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.mma<[1, 1]>>>
      %22 = "tile.mma"(%18, %21, %12) : (tensor<16x16xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.mma<[1, 1]>>>, tensor<16x8xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.mma<[1, 1]>>>, tensor<16x8xf32, #tilegpu.mma<[1, 1]>>) -> tensor<16x8xf32, #tilegpu.mma<[1, 1]>>
      scf.yield %22 : tensor<16x8xf32, #tilegpu.mma<[1, 1]>>
    }
    "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
    "tile.store"(%C, %0, %0, %10) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<16x8xf32, #tilegpu.mma<[1, 1]>>) -> ()
    return
  }
}
