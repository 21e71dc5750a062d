// passes: tile-to-llvm{arch=sm_90a}
module attributes {tile.target = "sm_90a"} {
  func.func @rnd(%y: memref<?xf32, strided<[?]>> {tile.divisibility = 16 : i32}, %seed: i32) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %2 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %3 = arith.constant 128 : i32
    %4 = arith.muli %2, %3 : i32
    %5 = "tile.arange"() : () -> tensor<128xi32, #tilegpu.blocked<[4], [32], [1], [0]>>
    %6 = "tile.splat"(%4) : (i32) -> tensor<128xi32, #tilegpu.blocked<[4], [32], [1], [0]>>
    %7 = arith.addi %6, %5 : tensor<128xi32, #tilegpu.blocked<[4], [32], [1], [0]>>
    %8 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %9 = "tile.rand"(%seed, %7) : (i32, tensor<128xi32, #tilegpu.blocked<[4], [32], [1], [0]>>) -> tensor<128xf32, #tilegpu.blocked<[4], [32], [1], [0]>>
    "tile.store"(%y, %8, %9) : (memref<?xf32, strided<[?]>>, i32, tensor<128xf32, #tilegpu.blocked<[4], [32], [1], [0]>>) -> ()
    return
  }
}
