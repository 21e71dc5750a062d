// passes: tile-to-llvm
// The warp-specialized GEMM of tile-warp-specialize/gemm.mlir: every thread makes the rings
// and their full and empty mbarriers (one bar.sync 0), then warps 4-7 (the producer) run the
// fills — the prologue's and a loop with no carried value — their first thread (tid 128)
// acquiring each stage and issuing its copies, while warps 0-3 wait for the stages, run the
// wgmma and release the stages.
module attributes {tile.target = "sm_90a"} {
  func.func @matmul(%arg0: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg1: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg2: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32, tile.warp_specialize = array<i32: 4, 0, 0>} {
    %40 = "tilegpu.stages_alloc"() : () -> memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
    %41 = "tilegpu.stages_alloc"() : () -> memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %3 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %4 = "tile.dim"(%arg0) {axis = 0 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %5 = arith.constant 63 : i32
    %6 = arith.addi %4, %5 : i32
    %7 = arith.constant 64 : i32
    %8 = arith.floordivsi %6, %7 : i32
    %9 = "tile.dim"(%arg1) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %10 = arith.constant 63 : i32
    %11 = arith.addi %9, %10 : i32
    %12 = arith.constant 64 : i32
    %13 = arith.floordivsi %11, %12 : i32
    %14 = arith.constant 8 : i32
    %15 = arith.muli %14, %13 : i32
    %16 = arith.floordivsi %3, %15 : i32
    %17 = arith.constant 8 : i32
    %18 = arith.muli %16, %17 : i32
    %19 = arith.subi %8, %18 : i32
    %20 = arith.constant 8 : i32
    %21 = arith.minsi %19, %20 : i32
    %22 = arith.constant 8 : i32
    %23 = arith.muli %22, %13 : i32
    %24 = arith.remsi %3, %23 : i32
    %25 = arith.remsi %24, %21 : i32
    %26 = arith.addi %18, %25 : i32
    %27 = arith.constant 8 : i32
    %28 = arith.muli %27, %13 : i32
    %29 = arith.remsi %3, %28 : i32
    %30 = arith.floordivsi %29, %21 : i32
    %31 = arith.constant 0.0 : f32
    %32 = "tile.splat"(%31) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %33 = "tile.dim"(%arg0) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %34 = arith.constant 31 : i32
    %35 = arith.addi %33, %34 : i32
    %36 = arith.constant 32 : i32
    %37 = arith.floordivsi %35, %36 : i32
    %38 = arith.constant 0 : i32
    %39 = arith.constant 1 : i32
    %42 = arith.constant 0 : i32
    %43 = arith.cmpi slt, %42, %37 : i32
    scf.if %43 {
      %44 = arith.constant 0 : i32
      %45 = arith.constant 0 : i32
      %46 = arith.constant 4 : i32
      %47 = arith.floordivsi %45, %46 : i32
      %48 = arith.constant 1 : i32
      %49 = arith.addi %47, %48 : i32
      %50 = arith.constant 2 : i32
      %51 = arith.remsi %49, %50 : i32
      "tilegpu.stage_acquire"(%40, %44, %51) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %52 = "tilegpu.stage"(%40, %44) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%52, %arg0, %26, %42) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %53 = arith.constant 0 : i32
    %54 = arith.cmpi slt, %53, %37 : i32
    scf.if %54 {
      %55 = arith.constant 0 : i32
      %56 = arith.constant 0 : i32
      %57 = arith.constant 4 : i32
      %58 = arith.floordivsi %56, %57 : i32
      %59 = arith.constant 1 : i32
      %60 = arith.addi %58, %59 : i32
      %61 = arith.constant 2 : i32
      %62 = arith.remsi %60, %61 : i32
      "tilegpu.stage_acquire"(%41, %55, %62) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %63 = "tilegpu.stage"(%41, %55) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%63, %arg1, %53, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %64 = arith.constant 1 : i32
    %65 = arith.cmpi slt, %64, %37 : i32
    scf.if %65 {
      %66 = arith.constant 1 : i32
      %67 = arith.constant 1 : i32
      %68 = arith.constant 4 : i32
      %69 = arith.floordivsi %67, %68 : i32
      %70 = arith.constant 1 : i32
      %71 = arith.addi %69, %70 : i32
      %72 = arith.constant 2 : i32
      %73 = arith.remsi %71, %72 : i32
      "tilegpu.stage_acquire"(%40, %66, %73) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %74 = "tilegpu.stage"(%40, %66) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%74, %arg0, %26, %64) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %75 = arith.constant 1 : i32
    %76 = arith.cmpi slt, %75, %37 : i32
    scf.if %76 {
      %77 = arith.constant 1 : i32
      %78 = arith.constant 1 : i32
      %79 = arith.constant 4 : i32
      %80 = arith.floordivsi %78, %79 : i32
      %81 = arith.constant 1 : i32
      %82 = arith.addi %80, %81 : i32
      %83 = arith.constant 2 : i32
      %84 = arith.remsi %82, %83 : i32
      "tilegpu.stage_acquire"(%41, %77, %84) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %85 = "tilegpu.stage"(%41, %77) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%85, %arg1, %75, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %140 = scf.for %86 = %38 to %37 step %39 iter_args(%87 = %32) -> (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) : i32 {
      %88 = arith.constant 4 : i32
      %89 = arith.remsi %86, %88 : i32
      %90 = arith.floordivsi %86, %88 : i32
      %91 = arith.constant 2 : i32
      %92 = arith.remsi %90, %91 : i32
      "tilegpu.stage_wait"(%40, %89, %92) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %93 = "tilegpu.stage"(%40, %89) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      %94 = arith.constant 2 : i32
      %95 = arith.addi %86, %94 : i32
      %96 = arith.constant 4 : i32
      %97 = arith.remsi %95, %96 : i32
      %98 = arith.cmpi slt, %95, %37 : i32
      scf.if %98 {
        %99 = arith.constant 4 : i32
        %100 = arith.floordivsi %95, %99 : i32
        %101 = arith.constant 1 : i32
        %102 = arith.addi %100, %101 : i32
        %103 = arith.constant 2 : i32
        %104 = arith.remsi %102, %103 : i32
        "tilegpu.stage_acquire"(%40, %97, %104) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %105 = "tilegpu.stage"(%40, %97) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%105, %arg0, %26, %95) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %106 = "tilegpu.local_load"(%93) : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
      %107 = arith.constant 4 : i32
      %108 = arith.remsi %86, %107 : i32
      %109 = arith.floordivsi %86, %107 : i32
      %110 = arith.constant 2 : i32
      %111 = arith.remsi %109, %110 : i32
      "tilegpu.stage_wait"(%41, %108, %111) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %112 = "tilegpu.stage"(%41, %108) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %113 = arith.constant 2 : i32
      %114 = arith.addi %86, %113 : i32
      %115 = arith.constant 4 : i32
      %116 = arith.remsi %114, %115 : i32
      %117 = arith.cmpi slt, %114, %37 : i32
      scf.if %117 {
        %118 = arith.constant 4 : i32
        %119 = arith.floordivsi %114, %118 : i32
        %120 = arith.constant 1 : i32
        %121 = arith.addi %119, %120 : i32
        %122 = arith.constant 2 : i32
        %123 = arith.remsi %121, %122 : i32
        "tilegpu.stage_acquire"(%41, %116, %123) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %124 = "tilegpu.stage"(%41, %116) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%124, %arg1, %114, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %125 = "tilegpu.local_load"(%112) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %126 = "tile.mma"(%106, %125, %87) : (tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %127 = "tilegpu.mma_wait"(%126) {pending = 1 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %128 = arith.constant 4 : i32
      %129 = arith.constant 3 : i32
      %130 = arith.addi %86, %129 : i32
      %131 = arith.remsi %130, %128 : i32
      %132 = arith.constant 0 : i32
      %133 = arith.cmpi sgt, %86, %132 : i32
      scf.if %133 {
        "tilegpu.stage_release"(%41, %131) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      }
      %134 = arith.constant 4 : i32
      %135 = arith.constant 3 : i32
      %136 = arith.addi %86, %135 : i32
      %137 = arith.remsi %136, %134 : i32
      %138 = arith.constant 0 : i32
      %139 = arith.cmpi sgt, %86, %138 : i32
      scf.if %139 {
        "tilegpu.stage_release"(%40, %137) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      }
      scf.yield %127 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    }
    %141 = "tilegpu.mma_wait"(%140) {pending = 0 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %142 = arith.truncf %141 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>> to tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>
    "tile.store"(%arg2, %26, %30, %142) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>) -> ()
    return
  }
}
