// passes: tile-layout
module attributes {tile.target = "sm_90a"} {
  func.func @share(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %X: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %O: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %3 = arith.constant 0 : i32
    %4 = arith.constant 0 : i32
    %5 = "tile.load"(%A, %3, %4) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<16x64xf16>
    %6 = arith.constant 0 : i32
    %7 = arith.constant 0 : i32
    %8 = "tile.load"(%X, %6, %7) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<16x64xf16>
    %9 = arith.constant 0 : i32
    %10 = arith.constant 0 : i32
    %11 = "tile.load"(%X, %9, %10) {latency = 0 : i32, order = array<i32: 1, 0>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<64x16xf16>
    %12 = arith.constant 0.0 : f32
    %13 = "tile.splat"(%12) : (f32) -> tensor<16x16xf32>
    %14 = "tile.mma"(%5, %11, %13) : (tensor<16x64xf16>, tensor<64x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %15 = arith.truncf %14 : tensor<16x16xf32> to tensor<16x16xf16>
    %16 = arith.constant 0.0 : f32
    %17 = "tile.splat"(%16) : (f32) -> tensor<16x64xf32>
    %18 = "tile.mma"(%15, %8, %17) : (tensor<16x16xf16>, tensor<16x64xf16>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %19 = arith.constant 0 : i32
    %20 = arith.constant 0 : i32
    "tile.store"(%O, %19, %20, %18) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<16x64xf32>) -> ()
    return
  }
}
