// passes: tile-to-llvm{arch=sm_90a}
module attributes {tile.target = "sm_90a"} {
  func.func @gather(%ids: memref<?xi32, strided<[?]>> {tile.divisibility = 16 : i32}, %table: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %out: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %3 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %4 = "tile.element"(%ids, %3) : (memref<?xi32, strided<[?]>>, i32) -> i32
    %5 = "tile.arange"() : () -> tensor<64xi32, #tilegpu.blocked<[2], [32], [1], [0]>>
    %6 = "tile.reshape"(%5) : (tensor<64xi32, #tilegpu.blocked<[2], [32], [1], [0]>>) -> tensor<1x64xi32, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>
    %7 = "tile.splat"(%4) : (i32) -> tensor<1x64xi32, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>
    %8 = "tile.gather"(%table, %7, %6) {padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, tensor<1x64xi32, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>, tensor<1x64xi32, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>) -> tensor<1x64xf16, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>
    %9 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %10 = "tile.splat"(%9) : (i32) -> tensor<1x64xi32, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>
    "tile.scatter"(%out, %10, %6, %8) : (memref<?x?xf16, strided<[?, ?]>>, tensor<1x64xi32, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>, tensor<1x64xi32, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>, tensor<1x64xf16, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>) -> ()
    return
  }
}
