// passes: tile-layout
module attributes {tile.target = "sm_90a"} {
  func.func @row_reduce(%x: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %y: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %2 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %3 = arith.constant 0 : i32
    %4 = "tile.load"(%x, %2, %3) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<4x256xf16>
    %5 = arith.extf %4 : tensor<4x256xf16> to tensor<4x256xf32>
    %6 = "tile.reduce"(%5) {kind = "max", axis = 1 : i32} : (tensor<4x256xf32>) -> tensor<4x1xf32>
    %7 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %8 = "tile.broadcast"(%6) : (tensor<4x1xf32>) -> tensor<4x256xf32>
    %9 = arith.subf %5, %8 : tensor<4x256xf32>
    %10 = arith.truncf %9 : tensor<4x256xf32> to tensor<4x256xf16>
    %11 = arith.constant 0 : i32
    "tile.store"(%y, %7, %11, %10) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<4x256xf16>) -> ()
    return
  }
}
