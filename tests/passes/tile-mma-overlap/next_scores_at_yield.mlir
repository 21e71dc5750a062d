// passes: tile-mma-overlap
// The next key tile's scores issued at the top of an iteration and read by the next one
// (FlashAttention-4's order in kernels/fmha.tile's two query tiles): the product %22, read
// only by the loop's yield and not a chain, is waited for at the end of the iteration, right
// before the yield (mma_wait pending = 1: the chain's product was issued after it), after the
// exponentials of the scores the loop carried in.
// The chain %25 (its accumulator the iteration argument %15) is only yielded: left to
// tile-pipeline, waited for at once.
module attributes {tile.target = "sm_103a"} {
  func.func @ahead(%Q: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %K: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Out: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %0 = arith.constant 0 : i32
    %1 = "tile.load"(%Q, %0, %0) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<128x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    %2 = "tilegpu.local_alloc"(%1) : (tensor<128x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %3 = "tilegpu.local_load"(%2) : (memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>
    %4 = arith.constant 0.0 : f32
    %5 = "tile.splat"(%4) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %6 = arith.constant 1 : i32
    %30:3 = scf.for %10 = %0 to %n step %6 iter_args(%11 = %5, %12 = %5, %15 = %5) -> (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) : i32 {
      %16 = arith.addi %10, %6 : i32
      %17 = "tile.load"(%K, %0, %16) {latency = 0 : i32, order = array<i32: 1, 0>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<64x64xf16, #tilegpu.blocked<[8, 1], [8, 4], [1, 4], [0, 1]>>
      %18 = "tilegpu.local_alloc"(%17) : (tensor<64x64xf16, #tilegpu.blocked<[8, 1], [8, 4], [1, 4], [0, 1]>>) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      %19 = "tilegpu.local_load"(%18) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
      %20 = arith.constant 0.0 : f32
      %21 = "tile.splat"(%20) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %22 = "tile.mma"(%3, %19, %21) : (tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %23 = math.exp2 %12 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %24 = arith.addf %11, %23 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %25 = "tile.mma"(%3, %19, %15) : (tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      scf.yield %24, %22, %25 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    }
    %31 = arith.addf %30#0, %30#2 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    "tile.store"(%Out, %0, %0, %31) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> ()
    return
  }
}
