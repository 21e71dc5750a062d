// passes: tile-to-llvm{arch=sm_90a}
// TMA rings with empty mbarriers: eight mbarriers a ring (four full with one arrival, four
// empty with one arrival a warp); stage_release is one predicated arrive by lane 0 of each
// warp, stage_acquire a spin of thread 0 before its copy; no block-wide barrier in the loop.
module attributes {tile.target = "sm_90a"} {
  func.func @matmul(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %B: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %C: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %3 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %4 = "tile.dim"(%A) {axis = 0 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %5 = arith.constant 63 : i32
    %6 = arith.addi %4, %5 : i32
    %7 = arith.constant 64 : i32
    %8 = arith.floordivsi %6, %7 : i32
    %9 = "tile.dim"(%B) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
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
    %33 = "tile.dim"(%A) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %34 = arith.constant 31 : i32
    %35 = arith.addi %33, %34 : i32
    %36 = arith.constant 32 : i32
    %37 = arith.floordivsi %35, %36 : i32
    %38 = arith.constant 0 : i32
    %39 = arith.constant 1 : i32
    %51 = "tilegpu.stages_alloc"() : () -> memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
    %52 = "tilegpu.stages_alloc"() : () -> memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %53 = arith.constant 0 : i32
    %63 = arith.cmpi slt, %53, %37 : i32
    scf.if %63 {
      %54 = arith.constant 0 : i32
      %55 = arith.constant 0 : i32
      %56 = arith.constant 4 : i32
      %57 = arith.floordivsi %55, %56 : i32
      %58 = arith.constant 1 : i32
      %59 = arith.addi %57, %58 : i32
      %60 = arith.constant 2 : i32
      %61 = arith.remsi %59, %60 : i32
      "tilegpu.stage_acquire"(%51, %54, %61) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %62 = "tilegpu.stage"(%51, %54) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%62, %A, %26, %53) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %64 = arith.constant 0 : i32
    %74 = arith.cmpi slt, %64, %37 : i32
    scf.if %74 {
      %65 = arith.constant 0 : i32
      %66 = arith.constant 0 : i32
      %67 = arith.constant 4 : i32
      %68 = arith.floordivsi %66, %67 : i32
      %69 = arith.constant 1 : i32
      %70 = arith.addi %68, %69 : i32
      %71 = arith.constant 2 : i32
      %72 = arith.remsi %70, %71 : i32
      "tilegpu.stage_acquire"(%52, %65, %72) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %73 = "tilegpu.stage"(%52, %65) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%73, %B, %64, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %75 = arith.constant 1 : i32
    %85 = arith.cmpi slt, %75, %37 : i32
    scf.if %85 {
      %76 = arith.constant 1 : i32
      %77 = arith.constant 1 : i32
      %78 = arith.constant 4 : i32
      %79 = arith.floordivsi %77, %78 : i32
      %80 = arith.constant 1 : i32
      %81 = arith.addi %79, %80 : i32
      %82 = arith.constant 2 : i32
      %83 = arith.remsi %81, %82 : i32
      "tilegpu.stage_acquire"(%51, %76, %83) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %84 = "tilegpu.stage"(%51, %76) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%84, %A, %26, %75) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %86 = arith.constant 1 : i32
    %96 = arith.cmpi slt, %86, %37 : i32
    scf.if %96 {
      %87 = arith.constant 1 : i32
      %88 = arith.constant 1 : i32
      %89 = arith.constant 4 : i32
      %90 = arith.floordivsi %88, %89 : i32
      %91 = arith.constant 1 : i32
      %92 = arith.addi %90, %91 : i32
      %93 = arith.constant 2 : i32
      %94 = arith.remsi %92, %93 : i32
      "tilegpu.stage_acquire"(%52, %87, %94) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %95 = "tilegpu.stage"(%52, %87) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%95, %B, %86, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %132 = scf.for %40 = %38 to %37 step %39 iter_args(%41 = %32) -> (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) : i32 {
      %97 = arith.constant 4 : i32
      %98 = arith.remsi %40, %97 : i32
      %99 = arith.floordivsi %40, %97 : i32
      %100 = arith.constant 2 : i32
      %101 = arith.remsi %99, %100 : i32
      "tilegpu.stage_wait"(%51, %98, %101) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %47 = "tilegpu.stage"(%51, %98) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      %102 = arith.constant 2 : i32
      %103 = arith.addi %40, %102 : i32
      %104 = arith.constant 4 : i32
      %105 = arith.remsi %103, %104 : i32
      %113 = arith.cmpi slt, %103, %37 : i32
      scf.if %113 {
        %106 = arith.constant 4 : i32
        %107 = arith.floordivsi %103, %106 : i32
        %108 = arith.constant 1 : i32
        %109 = arith.addi %107, %108 : i32
        %110 = arith.constant 2 : i32
        %111 = arith.remsi %109, %110 : i32
        "tilegpu.stage_acquire"(%51, %105, %111) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %112 = "tilegpu.stage"(%51, %105) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%112, %A, %26, %103) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %48 = "tilegpu.local_load"(%47) : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
      %114 = arith.constant 4 : i32
      %115 = arith.remsi %40, %114 : i32
      %116 = arith.floordivsi %40, %114 : i32
      %117 = arith.constant 2 : i32
      %118 = arith.remsi %116, %117 : i32
      "tilegpu.stage_wait"(%52, %115, %118) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %49 = "tilegpu.stage"(%52, %115) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %119 = arith.constant 2 : i32
      %120 = arith.addi %40, %119 : i32
      %121 = arith.constant 4 : i32
      %122 = arith.remsi %120, %121 : i32
      %130 = arith.cmpi slt, %120, %37 : i32
      scf.if %130 {
        %123 = arith.constant 4 : i32
        %124 = arith.floordivsi %120, %123 : i32
        %125 = arith.constant 1 : i32
        %126 = arith.addi %124, %125 : i32
        %127 = arith.constant 2 : i32
        %128 = arith.remsi %126, %127 : i32
        "tilegpu.stage_acquire"(%52, %122, %128) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %129 = "tilegpu.stage"(%52, %122) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%129, %B, %120, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %50 = "tilegpu.local_load"(%49) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %131 = "tile.mma"(%48, %50, %41) : (tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %44 = "tilegpu.mma_wait"(%131) {pending = 1 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %139 = arith.constant 4 : i32
      %140 = arith.constant 3 : i32
      %141 = arith.addi %40, %140 : i32
      %142 = arith.remsi %141, %139 : i32
      %143 = arith.constant 0 : i32
      %144 = arith.cmpi sgt, %40, %143 : i32
      scf.if %144 {
        "tilegpu.stage_release"(%52, %142) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      }
      %133 = arith.constant 4 : i32
      %134 = arith.constant 3 : i32
      %135 = arith.addi %40, %134 : i32
      %136 = arith.remsi %135, %133 : i32
      %137 = arith.constant 0 : i32
      %138 = arith.cmpi sgt, %40, %137 : i32
      scf.if %138 {
        "tilegpu.stage_release"(%51, %136) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      }
      scf.yield %44 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    }
    %45 = "tilegpu.mma_wait"(%132) {pending = 0 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %46 = arith.truncf %45 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>> to tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>
    "tile.store"(%C, %26, %30, %46) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>) -> ()
    return
  }
}
