// passes: tile-mma-overlap
// FlashAttention-3's order on sm_90a, one warpgroup: S = Q·K_jᵀ, then P_{j-1}·V_{j-1} from the
// carried P (both wgmma, their rings released on empty mbarriers). The first product is waited
// for with pending = 1 right before the row max reads it (the second may still run), its ring's
// release moved after that wait; the second with pending = 0 before `acc * 0.5`, after the
// softmax it overlaps, its release after it. The loop's result is not touched: the products'
// waits stay in the body. Made by `tilec compile fa3.tile --arch sm_90a --emit tilegpu
// --disable-pass tile-mma-overlap --pass-option 'tile-pipeline{empty-barriers=true}'`.
module attributes {tile.target = "sm_90a"} {
  func.func @fa3_order(%Q: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %K: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %V: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Out: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %4 = arith.constant 0 : i32
    %5 = arith.constant 0 : i32
    %44 = "tilegpu.async_copy"(%Q, %4, %5) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
    %45 = "tilegpu.local_load"(%44) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
    %7 = arith.constant 0.0 : f32
    %8 = "tile.splat"(%7) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %9 = arith.constant 0.0 : f16
    %10 = "tile.splat"(%9) : (f16) -> tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>
    %11 = "tile.dim"(%K) {axis = 0 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %12 = arith.constant 63 : i32
    %13 = arith.addi %11, %12 : i32
    %14 = arith.constant 64 : i32
    %15 = arith.floordivsi %13, %14 : i32
    %16 = arith.constant 0 : i32
    %17 = arith.constant 1 : i32
    %51 = "tilegpu.stages_alloc"() : () -> memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
    %52 = "tilegpu.stages_alloc"() : () -> memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %53 = arith.constant 0 : i32
    %64 = arith.cmpi slt, %53, %15 : i32
    scf.if %64 {
      %54 = arith.constant 0 : i32
      %55 = arith.constant 0 : i32
      %56 = arith.constant 0 : i32
      %57 = arith.constant 2 : i32
      %58 = arith.floordivsi %56, %57 : i32
      %59 = arith.constant 1 : i32
      %60 = arith.addi %58, %59 : i32
      %61 = arith.constant 2 : i32
      %62 = arith.remsi %60, %61 : i32
      "tilegpu.stage_acquire"(%51, %55, %62) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
      %63 = "tilegpu.stage"(%51, %55) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%63, %K, %54, %53) {latency = 1 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %65 = arith.constant 0 : i32
    %78 = arith.cmpi slt, %65, %15 : i32
    scf.if %78 {
      %66 = arith.constant 1 : i32
      %67 = arith.subi %65, %66 : i32
      %68 = arith.constant 0 : i32
      %69 = arith.constant 0 : i32
      %70 = arith.constant 0 : i32
      %71 = arith.constant 2 : i32
      %72 = arith.floordivsi %70, %71 : i32
      %73 = arith.constant 1 : i32
      %74 = arith.addi %72, %73 : i32
      %75 = arith.constant 2 : i32
      %76 = arith.remsi %74, %75 : i32
      "tilegpu.stage_acquire"(%52, %69, %76) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %77 = "tilegpu.stage"(%52, %69) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%77, %V, %67, %68) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %39:2 = scf.for %18 = %16 to %15 step %17 iter_args(%19 = %8, %20 = %10) -> (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>, tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>) : i32 {
      %48 = "tilegpu.convert_layout"(%20) {scratch = #tilegpu.shared<2 : i64>} : (tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
      %21 = arith.constant 0 : i32
      %79 = arith.constant 2 : i32
      %80 = arith.remsi %18, %79 : i32
      %81 = arith.floordivsi %18, %79 : i32
      %82 = arith.constant 2 : i32
      %83 = arith.remsi %81, %82 : i32
      "tilegpu.stage_wait"(%51, %80, %83) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
      %46 = "tilegpu.stage"(%51, %80) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      %84 = arith.constant 1 : i32
      %85 = arith.addi %18, %84 : i32
      %86 = arith.constant 0 : i32
      %87 = arith.constant 2 : i32
      %88 = arith.remsi %85, %87 : i32
      %96 = arith.cmpi slt, %85, %15 : i32
      scf.if %96 {
        %89 = arith.constant 2 : i32
        %90 = arith.floordivsi %85, %89 : i32
        %91 = arith.constant 1 : i32
        %92 = arith.addi %90, %91 : i32
        %93 = arith.constant 2 : i32
        %94 = arith.remsi %92, %93 : i32
        "tilegpu.stage_acquire"(%51, %88, %94) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
        %95 = "tilegpu.stage"(%51, %88) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
        "tilegpu.tma_copy_into"(%95, %K, %86, %85) {latency = 1 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %47 = "tilegpu.local_load"(%46) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %23 = arith.constant 0.0 : f32
      %24 = "tile.splat"(%23) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %25 = "tile.mma"(%45, %47, %24) : (tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      "tilegpu.stage_release"(%51, %80) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> ()
      %26 = arith.constant 1 : i32
      %27 = arith.subi %18, %26 : i32
      %28 = arith.constant 0 : i32
      %97 = arith.constant 2 : i32
      %98 = arith.remsi %18, %97 : i32
      %99 = arith.floordivsi %18, %97 : i32
      %100 = arith.constant 2 : i32
      %101 = arith.remsi %99, %100 : i32
      "tilegpu.stage_wait"(%52, %98, %101) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %49 = "tilegpu.stage"(%52, %98) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %102 = arith.constant 1 : i32
      %103 = arith.addi %18, %102 : i32
      %104 = arith.constant 1 : i32
      %105 = arith.subi %103, %104 : i32
      %106 = arith.constant 0 : i32
      %107 = arith.constant 2 : i32
      %108 = arith.remsi %103, %107 : i32
      %116 = arith.cmpi slt, %103, %15 : i32
      scf.if %116 {
        %109 = arith.constant 2 : i32
        %110 = arith.floordivsi %103, %109 : i32
        %111 = arith.constant 1 : i32
        %112 = arith.addi %110, %111 : i32
        %113 = arith.constant 2 : i32
        %114 = arith.remsi %112, %113 : i32
        "tilegpu.stage_acquire"(%52, %108, %114) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %115 = "tilegpu.stage"(%52, %108) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%115, %V, %105, %106) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %50 = "tilegpu.local_load"(%49) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %30 = "tile.mma"(%48, %50, %19) : (tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      "tilegpu.stage_release"(%52, %98) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      %31 = "tile.reduce"(%25) {kind = "max", axis = 1 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x1xf32, #tilegpu.slice<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %32 = "tile.broadcast"(%31) : (tensor<64x1xf32, #tilegpu.slice<1 : i32, #tilegpu.wgmma<[4, 1]>>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %33 = arith.subf %25, %32 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %34 = math.exp2 %33 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %35 = arith.constant 0.5 : f32
      %36 = "tile.splat"(%35) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %37 = arith.mulf %30, %36 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %38 = arith.truncf %34 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>> to tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>
      scf.yield %37, %38 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>, tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>
    }
    %41 = arith.truncf %39#0 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>> to tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>
    %42 = arith.constant 0 : i32
    %43 = arith.constant 0 : i32
    "tile.store"(%Out, %42, %43, %41) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>) -> ()
    return
  }
}
