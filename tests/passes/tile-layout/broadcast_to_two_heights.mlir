// passes: tile-layout
module attributes {tile.target = "sm_90a"} {
  func.func @bcast(%x: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %r: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %y: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %z: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 8 : i32} {
    %4 = arith.constant 0 : i32
    %5 = arith.constant 0 : i32
    %6 = "tile.load"(%r, %4, %5) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<1x256xf32>
    %7 = arith.constant 0 : i32
    %8 = arith.constant 0 : i32
    %9 = "tile.load"(%x, %7, %8) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<64x256xf32>
    %10 = arith.constant 0 : i32
    %11 = arith.constant 0 : i32
    %12 = "tile.load"(%x, %10, %11) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<2x256xf32>
    %13 = "tile.broadcast"(%6) : (tensor<1x256xf32>) -> tensor<64x256xf32>
    %14 = arith.addf %9, %13 : tensor<64x256xf32>
    %15 = arith.constant 0 : i32
    %16 = arith.constant 0 : i32
    "tile.store"(%y, %15, %16, %14) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<64x256xf32>) -> ()
    %17 = "tile.broadcast"(%6) : (tensor<1x256xf32>) -> tensor<2x256xf32>
    %18 = arith.addf %12, %17 : tensor<2x256xf32>
    %19 = arith.constant 0 : i32
    %20 = arith.constant 0 : i32
    "tile.store"(%z, %19, %20, %18) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<2x256xf32>) -> ()
    return
  }
}
