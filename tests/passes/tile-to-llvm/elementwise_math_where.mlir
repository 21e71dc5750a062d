// passes: tile-to-llvm{arch=sm_90a}
module attributes {tile.target = "sm_90a"} {
  func.func @ew(%x: memref<?xbf16, strided<[?]>> {tile.divisibility = 16 : i32}, %y: memref<?xbf16, strided<[?]>> {tile.divisibility = 16 : i32}, %n: i32) attributes {tile.kernel, tile.num_warps = 1 : i32} {
    %3 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %4 = "tile.load"(%x, %3) {latency = 0 : i32, order = array<i32: 0>, padding = "neg_inf"} : (memref<?xbf16, strided<[?]>>, i32) -> tensor<256xbf16, #tilegpu.blocked<[8], [32], [1], [0]>>
    %5 = arith.extf %4 : tensor<256xbf16, #tilegpu.blocked<[8], [32], [1], [0]>> to tensor<256xf32, #tilegpu.blocked<[8], [32], [1], [0]>>
    %6 = math.exp %5 {tile.ftz} : tensor<256xf32, #tilegpu.blocked<[8], [32], [1], [0]>>
    %7 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %8 = arith.constant 256 : i32
    %9 = arith.muli %7, %8 : i32
    %10 = "tile.arange"() : () -> tensor<256xi32, #tilegpu.blocked<[8], [32], [1], [0]>>
    %11 = "tile.splat"(%9) : (i32) -> tensor<256xi32, #tilegpu.blocked<[8], [32], [1], [0]>>
    %12 = arith.addi %11, %10 : tensor<256xi32, #tilegpu.blocked<[8], [32], [1], [0]>>
    %13 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %14 = "tile.splat"(%n) : (i32) -> tensor<256xi32, #tilegpu.blocked<[8], [32], [1], [0]>>
    %15 = arith.cmpi slt, %12, %14 : tensor<256xi32, #tilegpu.blocked<[8], [32], [1], [0]>>
    %16 = arith.constant 0.0 : f32
    %17 = "tile.splat"(%16) : (f32) -> tensor<256xf32, #tilegpu.blocked<[8], [32], [1], [0]>>
    %18 = arith.select %15, %6, %17 : tensor<256xi1, #tilegpu.blocked<[8], [32], [1], [0]>>, tensor<256xf32, #tilegpu.blocked<[8], [32], [1], [0]>>
    %19 = arith.truncf %18 : tensor<256xf32, #tilegpu.blocked<[8], [32], [1], [0]>> to tensor<256xbf16, #tilegpu.blocked<[8], [32], [1], [0]>>
    "tile.store"(%y, %13, %19) : (memref<?xbf16, strided<[?]>>, i32, tensor<256xbf16, #tilegpu.blocked<[8], [32], [1], [0]>>) -> ()
    return
  }
}
