// passes: tile-layout
// Reshapes of a loaded [16, 256] row tile into [16, 16, 16] blocks and of the blocks into
// [16, 128, 2] pairs rename registers: each result takes the layout that leaves an element
// where the operand held it (a block's 16 elements in two lanes of 8, the pairs' sum in a
// thread, the stored [16, 128] sums 16 bytes a thread). The block maxima stored as
// [16, 16] are held by two lanes each, which no #blocked layout expresses: that one keeps
// its own layout (the lowering exchanges it through shared memory).
module attributes {tile.target = "sm_90a"} {
  func.func @blocks(%X: memref<?x?xbf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Y: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %S: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %3 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %4 = "tile.bid"() {axis = 1 : i32} : () -> i32
    %5 = "tile.load"(%X, %3, %4) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xbf16, strided<[?, ?]>>, i32, i32) -> tensor<16x256xbf16>
    %6 = arith.extf %5 : tensor<16x256xbf16> to tensor<16x256xf32>
    %7 = "tile.reshape"(%6) : (tensor<16x256xf32>) -> tensor<16x16x16xf32>
    %8 = math.absf %7 : tensor<16x16x16xf32>
    %9 = "tile.reduce"(%8) {kind = "max", axis = 2 : i32} : (tensor<16x16x16xf32>) -> tensor<16x16x1xf32>
    %10 = "tile.broadcast"(%9) : (tensor<16x16x1xf32>) -> tensor<16x16x16xf32>
    %11 = arith.divf %7, %10 : tensor<16x16x16xf32>
    %12 = "tile.reshape"(%11) : (tensor<16x16x16xf32>) -> tensor<16x128x2xf32>
    %13 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %14 = "tile.bid"() {axis = 1 : i32} : () -> i32
    %15 = "tile.reduce"(%12) {kind = "sum", axis = 2 : i32} : (tensor<16x128x2xf32>) -> tensor<16x128x1xf32>
    %16 = "tile.reshape"(%15) : (tensor<16x128x1xf32>) -> tensor<16x128xf32>
    "tile.store"(%Y, %13, %14, %16) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<16x128xf32>) -> ()
    %17 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %18 = "tile.bid"() {axis = 1 : i32} : () -> i32
    %19 = "tile.reshape"(%9) : (tensor<16x16x1xf32>) -> tensor<16x16xf32>
    "tile.store"(%S, %17, %18, %19) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<16x16xf32>) -> ()
    return
  }
}
