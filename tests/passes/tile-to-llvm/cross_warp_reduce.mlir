// passes: tile-to-llvm{arch=sm_90a}
module attributes {tile.target = "sm_90a"} {
  func.func @cross_warp(%x: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %s: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %2 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %3 = arith.constant 0 : i32
    %4 = "tile.load"(%x, %2, %3) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<1x4096xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>
    %5 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %6 = "tile.reduce"(%4) {kind = "sum", axis = 1 : i32} : (tensor<1x4096xf32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>) -> tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>
    %7 = arith.constant 0 : i32
    "tile.store"(%s, %5, %7, %6) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<1x1xf32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [1, 32], [1, 4], [1, 0]>>>) -> ()
    return
  }
}
