// passes: tile-to-llvm{arch=sm_90a}
module attributes {tile.target = "sm_90a"} {
  func.func @loop(%x: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %y: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %2 = arith.constant 0.0 : f32
    %3 = "tile.splat"(%2) : (f32) -> tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>
    %4 = "tile.dim"(%x) {axis = 1 : i32} : (memref<?x?xf32, strided<[?, ?]>>) -> i32
    %5 = arith.constant 127 : i32
    %6 = arith.addi %4, %5 : i32
    %7 = arith.constant 128 : i32
    %8 = arith.floordivsi %6, %7 : i32
    %9 = arith.constant 0 : i32
    %10 = arith.constant 1 : i32
    %16 = scf.for %11 = %9 to %8 step %10 iter_args(%12 = %3) -> (tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>) : i32 {
      %13 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %14 = "tile.load"(%x, %13, %11) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>
      %15 = arith.addf %12, %14 : tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>
      scf.yield %15 : tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>
    }
    %17 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %18 = arith.constant 0 : i32
    %19 = arith.cmpi sgt, %17, %18 : i32
    %23 = scf.if %19 -> (tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>) {
      %20 = arith.constant 2.0 : f32
      %21 = "tile.splat"(%20) : (f32) -> tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>
      %22 = arith.mulf %16, %21 : tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>
      scf.yield %22 : tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>
    } else {
      scf.yield %16 : tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>
    }
    %24 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %25 = arith.constant 0 : i32
    "tile.store"(%y, %24, %25, %23) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<1x128xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 1], [1, 0]>>) -> ()
    return
  }
}
