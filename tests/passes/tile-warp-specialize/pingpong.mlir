// passes: tile-warp-specialize
// Two products a loop iteration over two consumer warpgroups (FMHA's S = Q·Kᵀ, then O += P·V),
// TMA rings released on empty mbarriers: besides the producer partition, the warpgroups' turns
// (ping-pong) go before the loop, after the body's first product, before its last and after the
// loop (the last end).
module attributes {tile.target = "sm_90a"} {
  func.func @two_products(%arg0: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg1: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg2: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg3: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 8 : i32} {
    %4 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %5 = arith.constant 0 : i32
    %32 = "tilegpu.async_copy"(%arg0, %4, %5) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
    %33 = "tilegpu.local_load"(%32) : (memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[8, 1]>>>
    %7 = arith.constant 0.0 : f32
    %8 = "tile.splat"(%7) : (f32) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
    %9 = "tile.dim"(%arg1) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %10 = arith.constant 63 : i32
    %11 = arith.addi %9, %10 : i32
    %12 = arith.constant 64 : i32
    %13 = arith.floordivsi %11, %12 : i32
    %14 = arith.constant 0 : i32
    %15 = arith.constant 1 : i32
    %39 = "tilegpu.stages_alloc"() : () -> memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %40 = "tilegpu.stages_alloc"() : () -> memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    %41 = arith.constant 0 : i32
    %52 = arith.cmpi slt, %41, %13 : i32
    scf.if %52 {
      %42 = arith.constant 0 : i32
      %43 = arith.constant 0 : i32
      %44 = arith.constant 0 : i32
      %45 = arith.constant 3 : i32
      %46 = arith.floordivsi %44, %45 : i32
      %47 = arith.constant 1 : i32
      %48 = arith.addi %46, %47 : i32
      %49 = arith.constant 2 : i32
      %50 = arith.remsi %48, %49 : i32
      "tilegpu.stage_acquire"(%39, %43, %50) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %51 = "tilegpu.stage"(%39, %43) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%51, %arg1, %42, %41) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %53 = arith.constant 0 : i32
    %64 = arith.cmpi slt, %53, %13 : i32
    scf.if %64 {
      %54 = arith.constant 0 : i32
      %55 = arith.constant 0 : i32
      %56 = arith.constant 0 : i32
      %57 = arith.constant 3 : i32
      %58 = arith.floordivsi %56, %57 : i32
      %59 = arith.constant 1 : i32
      %60 = arith.addi %58, %59 : i32
      %61 = arith.constant 2 : i32
      %62 = arith.remsi %60, %61 : i32
      "tilegpu.stage_acquire"(%40, %55, %62) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %63 = "tilegpu.stage"(%40, %55) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%63, %arg2, %53, %54) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %65 = arith.constant 1 : i32
    %76 = arith.cmpi slt, %65, %13 : i32
    scf.if %76 {
      %66 = arith.constant 0 : i32
      %67 = arith.constant 1 : i32
      %68 = arith.constant 1 : i32
      %69 = arith.constant 3 : i32
      %70 = arith.floordivsi %68, %69 : i32
      %71 = arith.constant 1 : i32
      %72 = arith.addi %70, %71 : i32
      %73 = arith.constant 2 : i32
      %74 = arith.remsi %72, %73 : i32
      "tilegpu.stage_acquire"(%39, %67, %74) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %75 = "tilegpu.stage"(%39, %67) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%75, %arg1, %66, %65) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %77 = arith.constant 1 : i32
    %88 = arith.cmpi slt, %77, %13 : i32
    scf.if %88 {
      %78 = arith.constant 0 : i32
      %79 = arith.constant 1 : i32
      %80 = arith.constant 1 : i32
      %81 = arith.constant 3 : i32
      %82 = arith.floordivsi %80, %81 : i32
      %83 = arith.constant 1 : i32
      %84 = arith.addi %82, %83 : i32
      %85 = arith.constant 2 : i32
      %86 = arith.remsi %84, %85 : i32
      "tilegpu.stage_acquire"(%40, %79, %86) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %87 = "tilegpu.stage"(%40, %79) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%87, %arg2, %77, %78) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %28 = scf.for %16 = %14 to %13 step %15 iter_args(%17 = %8) -> (tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>) : i32 {
      %18 = arith.constant 0 : i32
      %89 = arith.constant 3 : i32
      %90 = arith.remsi %16, %89 : i32
      %91 = arith.floordivsi %16, %89 : i32
      %92 = arith.constant 2 : i32
      %93 = arith.remsi %91, %92 : i32
      "tilegpu.stage_wait"(%39, %90, %93) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %34 = "tilegpu.stage"(%39, %90) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %94 = arith.constant 2 : i32
      %95 = arith.addi %16, %94 : i32
      %96 = arith.constant 0 : i32
      %97 = arith.constant 3 : i32
      %98 = arith.remsi %95, %97 : i32
      %106 = arith.cmpi slt, %95, %13 : i32
      scf.if %106 {
        %99 = arith.constant 3 : i32
        %100 = arith.floordivsi %95, %99 : i32
        %101 = arith.constant 1 : i32
        %102 = arith.addi %100, %101 : i32
        %103 = arith.constant 2 : i32
        %104 = arith.remsi %102, %103 : i32
        "tilegpu.stage_acquire"(%39, %98, %104) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %105 = "tilegpu.stage"(%39, %98) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%105, %arg1, %96, %95) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %35 = "tilegpu.local_load"(%34) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[8, 1]>>>
      %20 = arith.constant 0.0 : f32
      %21 = "tile.splat"(%20) : (f32) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
      %22 = "tile.mma"(%33, %35, %21) : (tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[8, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[8, 1]>>>, tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
      "tilegpu.stage_release"(%39, %90) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      %23 = arith.constant 0 : i32
      %107 = arith.constant 3 : i32
      %108 = arith.remsi %16, %107 : i32
      %109 = arith.floordivsi %16, %107 : i32
      %110 = arith.constant 2 : i32
      %111 = arith.remsi %109, %110 : i32
      "tilegpu.stage_wait"(%40, %108, %111) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %37 = "tilegpu.stage"(%40, %108) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %112 = arith.constant 2 : i32
      %113 = arith.addi %16, %112 : i32
      %114 = arith.constant 0 : i32
      %115 = arith.constant 3 : i32
      %116 = arith.remsi %113, %115 : i32
      %124 = arith.cmpi slt, %113, %13 : i32
      scf.if %124 {
        %117 = arith.constant 3 : i32
        %118 = arith.floordivsi %113, %117 : i32
        %119 = arith.constant 1 : i32
        %120 = arith.addi %118, %119 : i32
        %121 = arith.constant 2 : i32
        %122 = arith.remsi %120, %121 : i32
        "tilegpu.stage_acquire"(%40, %116, %122) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %123 = "tilegpu.stage"(%40, %116) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%123, %arg2, %113, %114) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %38 = "tilegpu.local_load"(%37) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[8, 1]>>>
      %25 = math.exp2 %22 : tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
      %26 = arith.truncf %25 : tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>> to tensor<128x64xf16, #tilegpu.wgmma<[8, 1]>>
      %36 = "tilegpu.convert_layout"(%26) {scratch = #tilegpu.shared<2 : i64>} : (tensor<128x64xf16, #tilegpu.wgmma<[8, 1]>>) -> tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[8, 1]>>>
      %27 = "tile.mma"(%36, %38, %17) : (tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[8, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[8, 1]>>>, tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
      "tilegpu.stage_release"(%40, %108) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      scf.yield %27 : tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
    }
    %29 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %30 = arith.truncf %28 : tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>> to tensor<128x64xf16, #tilegpu.wgmma<[8, 1]>>
    %31 = arith.constant 0 : i32
    "tile.store"(%arg3, %29, %31, %30) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<128x64xf16, #tilegpu.wgmma<[8, 1]>>) -> ()
    return
  }
}
