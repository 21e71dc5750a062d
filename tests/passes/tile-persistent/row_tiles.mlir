// passes: tile-persistent
// Row sums, one row a tile: the body moves into `for %t = bid(0) to num_tiles(0) step
// num_blocks(0)`; every bid(0) (the one in the K loop and the one in the if's condition
// too) reads %t as `%t + 0`, num_blocks(0) reads num_tiles(0); the extent, the tile count
// and the constants that read nothing of the tile move before the loop.
module attributes {tile.target = "sm_90a"} {
  func.func @loop(%x: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %y: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %2 = arith.constant 0.0 : f32
    %3 = "tile.splat"(%2) : (f32) -> tensor<1x128xf32>
    %4 = "tile.dim"(%x) {axis = 1 : i32} : (memref<?x?xf32, strided<[?, ?]>>) -> i32
    %5 = arith.constant 127 : i32
    %6 = arith.addi %4, %5 : i32
    %7 = arith.constant 128 : i32
    %8 = arith.floordivsi %6, %7 : i32
    %9 = arith.constant 0 : i32
    %10 = arith.constant 1 : i32
    %16 = scf.for %11 = %9 to %8 step %10 iter_args(%12 = %3) -> (tensor<1x128xf32>) : i32 {
      %13 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %14 = "tile.load"(%x, %13, %11) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<1x128xf32>
      %15 = arith.addf %12, %14 : tensor<1x128xf32>
      scf.yield %15 : tensor<1x128xf32>
    }
    %17 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %18 = arith.constant 0 : i32
    %19 = arith.cmpi sgt, %17, %18 : i32
    %23 = scf.if %19 -> (tensor<1x128xf32>) {
      %20 = arith.constant 2.0 : f32
      %21 = "tile.splat"(%20) : (f32) -> tensor<1x128xf32>
      %22 = arith.mulf %16, %21 : tensor<1x128xf32>
      scf.yield %22 : tensor<1x128xf32>
    } else {
      scf.yield %16 : tensor<1x128xf32>
    }
    %24 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %30 = "tile.num_blocks"() {axis = 0 : i32} : () -> i32
    %31 = arith.remsi %24, %30 : i32
    %25 = arith.constant 0 : i32
    "tile.store"(%y, %31, %25, %23) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<1x128xf32>) -> ()
    return
  }
}
