// passes: tile-cta-pair{arch=sm_90a}
// A 256-row GEMM block on a CTA pair: the accumulator, A's tiles, the product and the stored
// tile keep 128 rows (the loop-carried value and the cast too); A's load and C's store address
// tile `2·i + rank` of the half-height tiles; B's load is untouched (both CTAs read the same
// tile: a multicast once pipelined); the function is marked `tile.cluster = 2`.
module attributes {tile.target = "sm_90a"} {
  func.func @gemm(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %B: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %C: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 8 : i32} {
    %1 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %2 = arith.constant 0 : i32
    %3 = arith.constant 0.0 : f32
    %4 = "tile.splat"(%3) : (f32) -> tensor<256x64xf32>
    %5 = arith.constant 4 : i32
    %6 = arith.constant 1 : i32
    %7 = scf.for %8 = %2 to %5 step %6 iter_args(%9 = %4) -> (tensor<256x64xf32>) : i32 {
      %10 = "tile.load"(%A, %1, %8) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<256x32xf16>
      %11 = "tile.load"(%B, %8, %2) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<32x64xf16>
      %12 = "tile.mma"(%10, %11, %9) : (tensor<256x32xf16>, tensor<32x64xf16>, tensor<256x64xf32>) -> tensor<256x64xf32>
      scf.yield %12 : tensor<256x64xf32>
    }
    %13 = arith.truncf %7 : tensor<256x64xf32> to tensor<256x64xf16>
    "tile.store"(%C, %1, %2, %13) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<256x64xf16>) -> ()
    return
  }
}
