// passes: tile-layout
// The same chain on a target without wgmma: the mma.sync layouts.
module attributes {tile.target = "sm_121a"} {
  func.func @mma_chain(%Q: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %K: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %V: memref<?x?xf16, strided<[?, ?]>>, %O: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %4 = arith.constant 0 : i32
    %5 = arith.constant 0 : i32
    %6 = "tile.load"(%Q, %4, %5) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<64x32xf16>
    %7 = arith.constant 0 : i32
    %8 = arith.constant 0 : i32
    %9 = "tile.load"(%K, %7, %8) {latency = 0 : i32, order = array<i32: 1, 0>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<32x64xf16>
    %10 = arith.constant 0.0 : f32
    %11 = "tile.splat"(%10) : (f32) -> tensor<64x64xf32>
    %12 = "tile.mma"(%6, %9, %11) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %13 = "tile.reduce"(%12) {kind = "max", axis = 1 : i32} : (tensor<64x64xf32>) -> tensor<64x1xf32>
    %14 = "tile.broadcast"(%13) : (tensor<64x1xf32>) -> tensor<64x64xf32>
    %15 = arith.subf %12, %14 : tensor<64x64xf32>
    %16 = math.exp2 %15 : tensor<64x64xf32>
    %17 = arith.constant 0 : i32
    %18 = arith.constant 0 : i32
    %19 = "tile.load"(%V, %17, %18) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<64x32xf16>
    %20 = arith.truncf %16 : tensor<64x64xf32> to tensor<64x64xf16>
    %21 = arith.constant 0.0 : f32
    %22 = "tile.splat"(%21) : (f32) -> tensor<64x32xf32>
    %23 = "tile.mma"(%20, %19, %22) : (tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf32>) -> tensor<64x32xf32>
    %24 = arith.constant 0 : i32
    %25 = arith.constant 0 : i32
    "tile.store"(%O, %24, %25, %23) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<64x32xf32>) -> ()
    return
  }
}
