// passes: tile-to-llvm
// A product waited for at once after one left in flight (its run, issue to wait, over before
// the second is issued): the region the products waited for at once share is placed by the
// runs as the in-flight ones' are, so both accumulators take columns 0-63 and the kernel
// allocates 64 columns, not 128. Kernel (the pipeline's tile passes run before):
//   let q = load(Q, index=(0, 0), shape=(128, 64));
//   let k = load(K, index=(0, 0), shape=(64, 64));
//   let s = mma(q, k, zeros((128, 64), f32));      // left in flight: work before its read
//   let w = load(V, index=(0, 0), shape=(128, 64)) * 2.0;
//   let s2 = s * 0.5;                               // its mma_wait
//   let t = mma(q, k, zeros((128, 64), f32));       // waited for at once
//   store(Out, index=(0, 0), tile=(t + s2).astype(f16));
//   store(Out2, index=(0, 0), tile=w);
module attributes {tile.target = "sm_103a"} {
  func.func @scratch_after_deferred(%Q: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %K: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %V: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Out: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Out2: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %5 = arith.constant 0 : i32
    %6 = arith.constant 0 : i32
    %7 = "tile.load"(%Q, %5, %6) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<128x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    %32 = "tilegpu.local_alloc"(%7) : (tensor<128x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %33 = "tilegpu.local_load"(%32) : (memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>
    %8 = arith.constant 0 : i32
    %9 = arith.constant 0 : i32
    %34 = "tilegpu.async_copy"(%K, %8, %9) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
    %35 = "tilegpu.local_load"(%34) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
    %11 = arith.constant 0.0 : f32
    %12 = "tile.splat"(%11) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %13 = "tile.mma"(%33, %35, %12) : (tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %14 = arith.constant 0 : i32
    %15 = arith.constant 0 : i32
    %16 = "tile.load"(%V, %14, %15) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32) -> tensor<128x64xf32, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    %17 = arith.constant 2.0 : f32
    %18 = "tile.splat"(%17) : (f32) -> tensor<128x64xf32, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    %19 = arith.mulf %16, %18 : tensor<128x64xf32, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    %20 = arith.constant 0.5 : f32
    %21 = "tile.splat"(%20) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %36 = "tilegpu.mma_wait"(%13) {pending = 0 : i32} : (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %22 = arith.mulf %36, %21 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %23 = arith.constant 0.0 : f32
    %24 = "tile.splat"(%23) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %25 = "tile.mma"(%33, %35, %24) : (tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %26 = arith.addf %25, %22 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %27 = arith.truncf %26 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>> to tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
    %28 = arith.constant 0 : i32
    %29 = arith.constant 0 : i32
    "tile.store"(%Out, %28, %29, %27) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>) -> ()
    %30 = arith.constant 0 : i32
    %31 = arith.constant 0 : i32
    "tile.store"(%Out2, %30, %31, %19) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<128x64xf32, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> ()
    return
  }
}
