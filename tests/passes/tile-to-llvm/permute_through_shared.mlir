// passes: tile-to-llvm{arch=sm_90a}
module attributes {tile.target = "sm_90a"} {
  func.func @permute(%x: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %y: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %2 = arith.constant 0 : i32
    %3 = arith.constant 0 : i32
    %4 = "tile.load"(%x, %2, %3) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<32x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    %5 = "tile.permute"(%4) {perm = array<i32: 1, 0>} : (tensor<32x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> tensor<64x32xf16, #tilegpu.blocked<[1, 8], [8, 4], [4, 1], [1, 0]>>
    %6 = arith.constant 0 : i32
    %7 = arith.constant 0 : i32
    "tile.store"(%y, %6, %7, %5) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<64x32xf16, #tilegpu.blocked<[1, 8], [8, 4], [4, 1], [1, 0]>>) -> ()
    return
  }
}
