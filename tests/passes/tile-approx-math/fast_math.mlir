// passes: tile-approx-math{fast-math=true}
// exp(x * s): log2 e folded into s; exp(x): one multiply inserted; exp and truediv with
// options written in the source (tile.pinned) untouched; a plain division and exp2 become
// approximate with flush-to-zero.
module attributes {tile.target = "sm_90a"} {
  func.func @am(%X: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Y: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %s: f32) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %3 = arith.constant 0 : i32
    %4 = arith.constant 0 : i32
    %5 = "tile.load"(%X, %3, %4) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<16x32xf32>
    %6 = "tile.splat"(%s) : (f32) -> tensor<16x32xf32>
    %7 = arith.mulf %5, %6 : tensor<16x32xf32>
    %8 = math.exp %7 : tensor<16x32xf32>
    %9 = math.exp %5 : tensor<16x32xf32>
    %10 = math.exp %5 {tile.pinned} : tensor<16x32xf32>
    %11 = arith.addf %8, %9 : tensor<16x32xf32>
    %12 = arith.divf %11, %10 {tile.pinned} : tensor<16x32xf32>
    %13 = arith.divf %9, %8 : tensor<16x32xf32>
    %14 = arith.addf %12, %13 : tensor<16x32xf32>
    %15 = math.exp2 %5 : tensor<16x32xf32>
    %16 = arith.mulf %14, %15 : tensor<16x32xf32>
    %17 = arith.constant 0 : i32
    %18 = arith.constant 0 : i32
    "tile.store"(%Y, %17, %18, %16) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<16x32xf32>) -> ()
    return
  }
}
