// passes: tile-warp-specialize
// The same GEMM pipelined without empty mbarriers: a producer could not know when the
// consumers are done with a stage, so the pass leaves the kernel as it is.
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
    %54 = arith.cmpi slt, %51, %37 : i32
    scf.if %54 {
      %52 = arith.constant 0 : i32
      %53 = "tilegpu.stage"(%49, %52) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%53, %arg0, %26, %51) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %55 = arith.constant 0 : i32
    %58 = arith.cmpi slt, %55, %37 : i32
    scf.if %58 {
      %56 = arith.constant 0 : i32
      %57 = "tilegpu.stage"(%50, %56) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%57, %arg1, %55, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %59 = arith.constant 1 : i32
    %62 = arith.cmpi slt, %59, %37 : i32
    scf.if %62 {
      %60 = arith.constant 1 : i32
      %61 = "tilegpu.stage"(%49, %60) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%61, %arg0, %26, %59) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %63 = arith.constant 1 : i32
    %66 = arith.cmpi slt, %63, %37 : i32
    scf.if %66 {
      %64 = arith.constant 1 : i32
      %65 = "tilegpu.stage"(%50, %64) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%65, %arg1, %63, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %90 = scf.for %40 = %38 to %37 step %39 iter_args(%41 = %32) -> (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) : i32 {
      %67 = arith.constant 4 : i32
      %68 = arith.remsi %40, %67 : i32
      %69 = arith.floordivsi %40, %67 : i32
      %70 = arith.constant 2 : i32
      %71 = arith.remsi %69, %70 : i32
      "tilegpu.stage_wait"(%49, %68, %71) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %42 = "tilegpu.stage"(%49, %68) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      %72 = arith.constant 2 : i32
      %73 = arith.addi %40, %72 : i32
      %74 = arith.constant 4 : i32
      %75 = arith.remsi %73, %74 : i32
      %77 = arith.cmpi slt, %73, %37 : i32
      scf.if %77 {
        %76 = "tilegpu.stage"(%49, %75) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%76, %arg0, %26, %73) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %43 = "tilegpu.local_load"(%42) : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
      %78 = arith.constant 4 : i32
      %79 = arith.remsi %40, %78 : i32
      %80 = arith.floordivsi %40, %78 : i32
      %81 = arith.constant 2 : i32
      %82 = arith.remsi %80, %81 : i32
      "tilegpu.stage_wait"(%50, %79, %82) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %44 = "tilegpu.stage"(%50, %79) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %83 = arith.constant 2 : i32
      %84 = arith.addi %40, %83 : i32
      %85 = arith.constant 4 : i32
      %86 = arith.remsi %84, %85 : i32
      %88 = arith.cmpi slt, %84, %37 : i32
      scf.if %88 {
        %87 = "tilegpu.stage"(%50, %86) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%87, %arg1, %84, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %45 = "tilegpu.local_load"(%44) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %89 = "tile.mma"(%43, %45, %41) : (tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %46 = "tilegpu.mma_wait"(%89) {pending = 1 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      scf.yield %46 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    }
    %47 = "tilegpu.mma_wait"(%90) {pending = 0 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %48 = arith.truncf %47 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>> to tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>
    "tile.store"(%arg2, %26, %30, %48) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>) -> ()
    return
  }
}
