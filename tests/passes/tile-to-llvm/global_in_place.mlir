// passes: tile-to-llvm{arch=sm_90a}
// x read, plus w, written back in place, then read again (each of the 128 elements held
// by four threads, a replicated layout: every copy loads it, one thread stores it): the
// store may meet an element another thread still reads, so a barrier comes before it, and
// the load after the stores gets one too. w, only read, needs none; nor does the second
// store to x (two stores are left unordered).
module attributes {tile.target = "sm_90a"} {
  func.func @in_place(%x: memref<?xf32, strided<[?]>> {tile.divisibility = 16 : i32}, %w: memref<?xf32, strided<[?]>> {tile.divisibility = 16 : i32}, %y: memref<?xf32, strided<[?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %0 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %1 = "tile.load"(%x, %0) {latency = 0 : i32, order = array<i32: 0>, padding = "zero"} : (memref<?xf32, strided<[?]>>, i32) -> tensor<128xf32, #tilegpu.blocked<[4], [32], [4], [0]>>
    %2 = "tile.load"(%w, %0) {latency = 0 : i32, order = array<i32: 0>, padding = "zero"} : (memref<?xf32, strided<[?]>>, i32) -> tensor<128xf32, #tilegpu.blocked<[4], [32], [4], [0]>>
    %3 = arith.addf %1, %2 : tensor<128xf32, #tilegpu.blocked<[4], [32], [4], [0]>>
    "tile.store"(%x, %0, %3) : (memref<?xf32, strided<[?]>>, i32, tensor<128xf32, #tilegpu.blocked<[4], [32], [4], [0]>>) -> ()
    "tile.store"(%x, %0, %3) : (memref<?xf32, strided<[?]>>, i32, tensor<128xf32, #tilegpu.blocked<[4], [32], [4], [0]>>) -> ()
    %5 = "tile.load"(%x, %0) {latency = 0 : i32, order = array<i32: 0>, padding = "zero"} : (memref<?xf32, strided<[?]>>, i32) -> tensor<128xf32, #tilegpu.blocked<[4], [32], [4], [0]>>
    %6 = "tile.load"(%w, %0) {latency = 0 : i32, order = array<i32: 0>, padding = "zero"} : (memref<?xf32, strided<[?]>>, i32) -> tensor<128xf32, #tilegpu.blocked<[4], [32], [4], [0]>>
    %7 = arith.addf %5, %6 : tensor<128xf32, #tilegpu.blocked<[4], [32], [4], [0]>>
    "tile.store"(%y, %0, %7) : (memref<?xf32, strided<[?]>>, i32, tensor<128xf32, #tilegpu.blocked<[4], [32], [4], [0]>>) -> ()
    return
  }
}
