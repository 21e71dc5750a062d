// passes: tile-load-order
// FMHA step 3's pattern: a [1, 1, 16, 32] tile of K, its unit dims dropped, permuted to
// 32x16 for an mma: one load of a [1, 1, 32, 16] tile in order [0, 1, 3, 2] (indices swapped
// alike), its reshape defining the permute's value; no permute left.
module attributes {tile.target = "sm_90a"} {
  func.func @lo(%K: memref<?x?x?x?xf16, strided<[?, ?, ?, ?]>> {tile.divisibility = 16 : i32}, %Q: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %O: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %3 = arith.constant 0 : i32
    %4 = arith.constant 1 : i32
    %5 = arith.constant 2 : i32
    %6 = arith.constant 0 : i32
    %7 = "tile.load"(%K, %3, %4, %5, %6) {latency = 0 : i32, order = array<i32: 0, 1, 2, 3>, padding = "zero"} : (memref<?x?x?x?xf16, strided<[?, ?, ?, ?]>>, i32, i32, i32, i32) -> tensor<1x1x16x32xf16>
    %8 = "tile.reshape"(%7) : (tensor<1x1x16x32xf16>) -> tensor<16x32xf16>
    %9 = "tile.permute"(%8) {perm = array<i32: 1, 0>} : (tensor<16x32xf16>) -> tensor<32x16xf16>
    %10 = arith.constant 0 : i32
    %11 = arith.constant 0 : i32
    %12 = "tile.load"(%Q, %10, %11) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<16x32xf16>
    %13 = arith.constant 0.0 : f32
    %14 = "tile.splat"(%13) : (f32) -> tensor<16x16xf32>
    %15 = "tile.mma"(%12, %9, %14) : (tensor<16x32xf16>, tensor<32x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %16 = arith.constant 0 : i32
    %17 = arith.constant 0 : i32
    "tile.store"(%O, %16, %17, %15) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<16x16xf32>) -> ()
    return
  }
}
