// passes: tile-to-llvm{arch=sm_90a}
// Barrier placement on a cross-warp reduction (shared scratch) in a loop and in one branch
// of an `if`: in the loop body a barrier after the scratch writes (read after write) and one
// at the end of the body (the next iteration writes the scratch this one read), none after
// the reads; the `if` branch's reduction and the last one have scratch regions of their own
// (under 48 KiB nothing is shared), so no barrier is needed before their writes.
module attributes {tile.target = "sm_90a"} {
  func.func @loop_barriers(%x: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %s: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %0 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %1 = arith.constant 0.0 : f32
    %2 = "tile.splat"(%1) : (f32) -> tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
    %3 = "tile.dim"(%x) {axis = 1 : i32} : (memref<?x?xf32, strided<[?, ?]>>) -> i32
    %4 = arith.constant 512 : i32
    %5 = arith.floordivsi %3, %4 : i32
    %6 = arith.constant 0 : i32
    %7 = arith.constant 1 : i32
    %8 = scf.for %9 = %6 to %5 step %7 iter_args(%10 = %2) -> (tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>) : i32 {
      %11 = "tile.load"(%x, %0, %9) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<1x512xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>
      %12 = "tile.reduce"(%11) {kind = "sum", axis = 1 : i32} : (tensor<1x512xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>) -> tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
      %13 = arith.addf %10, %12 : tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
      scf.yield %13 : tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
    }
    %14 = arith.cmpi sgt, %5, %7 : i32
    %15 = scf.if %14 -> (tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>) {
      %16 = "tile.load"(%x, %0, %6) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<1x512xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>
      %17 = "tile.reduce"(%16) {kind = "max", axis = 1 : i32} : (tensor<1x512xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>) -> tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
      scf.yield %17 : tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
    } else {
      scf.yield %8 : tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
    }
    %18 = "tile.load"(%x, %0, %6) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<1x512xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>
    %19 = "tile.reduce"(%18) {kind = "min", axis = 1 : i32} : (tensor<1x512xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>) -> tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
    %20 = arith.addf %15, %19 : tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
    "tile.store"(%s, %0, %6, %20) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>) -> ()
    return
  }
}
