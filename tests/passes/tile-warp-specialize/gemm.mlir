// passes: tile-warp-specialize
// The pipelined 64x64x32 GEMM of tile-pipeline/empty_barriers.mlir (TMA rings released on
// empty mbarriers): the rings move to the top of the kernel and the kernel is marked for a
// producer warpgroup. Four consumer warps at one block per SM have 255 registers each at
// entry already, so no setmaxnreg (array<i32: 4, 0, 0>).
module attributes {tile.target = "sm_90a"} {
  func.func @matmul(%arg0: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg1: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg2: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
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
    %49 = "tilegpu.stages_alloc"() : () -> memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
    %50 = "tilegpu.stages_alloc"() : () -> memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %51 = arith.constant 0 : i32
    %61 = arith.cmpi slt, %51, %37 : i32
    scf.if %61 {
      %52 = arith.constant 0 : i32
      %53 = arith.constant 0 : i32
      %54 = arith.constant 4 : i32
      %55 = arith.floordivsi %53, %54 : i32
      %56 = arith.constant 1 : i32
      %57 = arith.addi %55, %56 : i32
      %58 = arith.constant 2 : i32
      %59 = arith.remsi %57, %58 : i32
      "tilegpu.stage_acquire"(%49, %52, %59) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %60 = "tilegpu.stage"(%49, %52) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%60, %arg0, %26, %51) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %62 = arith.constant 0 : i32
    %72 = arith.cmpi slt, %62, %37 : i32
    scf.if %72 {
      %63 = arith.constant 0 : i32
      %64 = arith.constant 0 : i32
      %65 = arith.constant 4 : i32
      %66 = arith.floordivsi %64, %65 : i32
      %67 = arith.constant 1 : i32
      %68 = arith.addi %66, %67 : i32
      %69 = arith.constant 2 : i32
      %70 = arith.remsi %68, %69 : i32
      "tilegpu.stage_acquire"(%50, %63, %70) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %71 = "tilegpu.stage"(%50, %63) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%71, %arg1, %62, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %73 = arith.constant 1 : i32
    %83 = arith.cmpi slt, %73, %37 : i32
    scf.if %83 {
      %74 = arith.constant 1 : i32
      %75 = arith.constant 1 : i32
      %76 = arith.constant 4 : i32
      %77 = arith.floordivsi %75, %76 : i32
      %78 = arith.constant 1 : i32
      %79 = arith.addi %77, %78 : i32
      %80 = arith.constant 2 : i32
      %81 = arith.remsi %79, %80 : i32
      "tilegpu.stage_acquire"(%49, %74, %81) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %82 = "tilegpu.stage"(%49, %74) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%82, %arg0, %26, %73) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %84 = arith.constant 1 : i32
    %94 = arith.cmpi slt, %84, %37 : i32
    scf.if %94 {
      %85 = arith.constant 1 : i32
      %86 = arith.constant 1 : i32
      %87 = arith.constant 4 : i32
      %88 = arith.floordivsi %86, %87 : i32
      %89 = arith.constant 1 : i32
      %90 = arith.addi %88, %89 : i32
      %91 = arith.constant 2 : i32
      %92 = arith.remsi %90, %91 : i32
      "tilegpu.stage_acquire"(%50, %85, %92) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %93 = "tilegpu.stage"(%50, %85) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%93, %arg1, %84, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %130 = scf.for %40 = %38 to %37 step %39 iter_args(%41 = %32) -> (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) : i32 {
      %95 = arith.constant 4 : i32
      %96 = arith.remsi %40, %95 : i32
      %97 = arith.floordivsi %40, %95 : i32
      %98 = arith.constant 2 : i32
      %99 = arith.remsi %97, %98 : i32
      "tilegpu.stage_wait"(%49, %96, %99) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %42 = "tilegpu.stage"(%49, %96) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      %100 = arith.constant 2 : i32
      %101 = arith.addi %40, %100 : i32
      %102 = arith.constant 4 : i32
      %103 = arith.remsi %101, %102 : i32
      %111 = arith.cmpi slt, %101, %37 : i32
      scf.if %111 {
        %104 = arith.constant 4 : i32
        %105 = arith.floordivsi %101, %104 : i32
        %106 = arith.constant 1 : i32
        %107 = arith.addi %105, %106 : i32
        %108 = arith.constant 2 : i32
        %109 = arith.remsi %107, %108 : i32
        "tilegpu.stage_acquire"(%49, %103, %109) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %110 = "tilegpu.stage"(%49, %103) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%110, %arg0, %26, %101) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %43 = "tilegpu.local_load"(%42) : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
      %112 = arith.constant 4 : i32
      %113 = arith.remsi %40, %112 : i32
      %114 = arith.floordivsi %40, %112 : i32
      %115 = arith.constant 2 : i32
      %116 = arith.remsi %114, %115 : i32
      "tilegpu.stage_wait"(%50, %113, %116) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %44 = "tilegpu.stage"(%50, %113) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %117 = arith.constant 2 : i32
      %118 = arith.addi %40, %117 : i32
      %119 = arith.constant 4 : i32
      %120 = arith.remsi %118, %119 : i32
      %128 = arith.cmpi slt, %118, %37 : i32
      scf.if %128 {
        %121 = arith.constant 4 : i32
        %122 = arith.floordivsi %118, %121 : i32
        %123 = arith.constant 1 : i32
        %124 = arith.addi %122, %123 : i32
        %125 = arith.constant 2 : i32
        %126 = arith.remsi %124, %125 : i32
        "tilegpu.stage_acquire"(%50, %120, %126) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %127 = "tilegpu.stage"(%50, %120) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%127, %arg1, %118, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %45 = "tilegpu.local_load"(%44) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %129 = "tile.mma"(%43, %45, %41) : (tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %46 = "tilegpu.mma_wait"(%129) {pending = 1 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %137 = arith.constant 4 : i32
      %138 = arith.constant 3 : i32
      %139 = arith.addi %40, %138 : i32
      %140 = arith.remsi %139, %137 : i32
      %141 = arith.constant 0 : i32
      %142 = arith.cmpi sgt, %40, %141 : i32
      scf.if %142 {
        "tilegpu.stage_release"(%50, %140) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      }
      %131 = arith.constant 4 : i32
      %132 = arith.constant 3 : i32
      %133 = arith.addi %40, %132 : i32
      %134 = arith.remsi %133, %131 : i32
      %135 = arith.constant 0 : i32
      %136 = arith.cmpi sgt, %40, %135 : i32
      scf.if %136 {
        "tilegpu.stage_release"(%49, %134) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      }
      scf.yield %46 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    }
    %47 = "tilegpu.mma_wait"(%130) {pending = 0 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %48 = arith.truncf %47 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>> to tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>
    "tile.store"(%arg2, %26, %30, %48) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>) -> ()
    return
  }
}
