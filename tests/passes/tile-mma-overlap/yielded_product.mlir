// passes: tile-mma-overlap
// Two products in an `if`: the first is read after the second is issued (mma_wait pending = 1
// before the add) and is also yielded by the `if` — the yield takes the waited value too, so
// nothing after the region reads registers a product may still be writing. The second is read
// right after the first's wait: nothing to overlap, waited for at once. Made by
// `tilec compile yielded_product.tile --arch sm_90a --emit tilegpu --disable-pass tile-mma-overlap`.
module attributes {tile.target = "sm_90a"} {
  func.func @yielded_product(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %B: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Out: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Sum: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %flag: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %5 = arith.constant 0 : i32
    %6 = arith.constant 0 : i32
    %7 = "tile.load"(%A, %5, %6) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<64x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    %30 = "tilegpu.local_alloc"(%7) : (tensor<64x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %31 = "tilegpu.local_load"(%30) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
    %8 = arith.constant 0 : i32
    %9 = arith.constant 0 : i32
    %10 = "tile.load"(%B, %8, %9) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<64x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    %32 = "tilegpu.local_alloc"(%10) : (tensor<64x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %33 = "tilegpu.local_load"(%32) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
    %11 = arith.constant 0.0 : f32
    %12 = "tile.splat"(%11) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %13 = arith.constant 0.0 : f32
    %14 = "tile.splat"(%13) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %15 = arith.constant 0 : i32
    %16 = arith.cmpi sgt, %flag, %15 : i32
    %24:2 = scf.if %16 -> (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) {
      %17 = arith.constant 0.0 : f32
      %18 = "tile.splat"(%17) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %19 = "tile.mma"(%31, %33, %18) : (tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %20 = arith.constant 1.0 : f32
      %21 = "tile.splat"(%20) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %22 = "tile.mma"(%31, %33, %21) : (tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %23 = arith.addf %19, %22 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      scf.yield %23, %19 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    } else {
      scf.yield %14, %12 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    }
    %26 = arith.constant 0 : i32
    %27 = arith.constant 0 : i32
    "tile.store"(%Out, %26, %27, %24#1) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> ()
    %28 = arith.constant 0 : i32
    %29 = arith.constant 0 : i32
    "tile.store"(%Sum, %28, %29, %24#0) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> ()
    return
  }
}
