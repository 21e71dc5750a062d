// passes: tile-to-llvm{arch=sm_90a}
// The 64x64x32 GEMM pipelined with TMA rings on sm_90a: a 128-byte tensor map parameter per
// (tensor, box); four mbarriers a ring, initialised by thread 0 where the ring is made; each
// copy (guarded by its iteration being one the loop runs) announces its bytes and issues one
// bulk tensor copy per swizzle atom from thread 0; stage_wait spins on the stage's phase.
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
    %56 = arith.cmpi slt, %53, %37 : i32
    scf.if %56 {
      %54 = arith.constant 0 : i32
      %55 = "tilegpu.stage"(%51, %54) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%55, %A, %26, %53) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %57 = arith.constant 0 : i32
    %60 = arith.cmpi slt, %57, %37 : i32
    scf.if %60 {
      %58 = arith.constant 0 : i32
      %59 = "tilegpu.stage"(%52, %58) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%59, %B, %57, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %61 = arith.constant 1 : i32
    %64 = arith.cmpi slt, %61, %37 : i32
    scf.if %64 {
      %62 = arith.constant 1 : i32
      %63 = "tilegpu.stage"(%51, %62) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%63, %A, %26, %61) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %65 = arith.constant 1 : i32
    %68 = arith.cmpi slt, %65, %37 : i32
    scf.if %68 {
      %66 = arith.constant 1 : i32
      %67 = "tilegpu.stage"(%52, %66) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      "tilegpu.tma_copy_into"(%67, %B, %65, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %92 = scf.for %40 = %38 to %37 step %39 iter_args(%41 = %32) -> (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) : i32 {
      %69 = arith.constant 4 : i32
      %70 = arith.remsi %40, %69 : i32
      %71 = arith.floordivsi %40, %69 : i32
      %72 = arith.constant 2 : i32
      %73 = arith.remsi %71, %72 : i32
      "tilegpu.stage_wait"(%51, %70, %73) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %47 = "tilegpu.stage"(%51, %70) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
      %74 = arith.constant 2 : i32
      %75 = arith.addi %40, %74 : i32
      %76 = arith.constant 4 : i32
      %77 = arith.remsi %75, %76 : i32
      %79 = arith.cmpi slt, %75, %37 : i32
      scf.if %79 {
        %78 = "tilegpu.stage"(%51, %77) : (memref<4x64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%78, %A, %26, %75) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 64, 32>} : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %48 = "tilegpu.local_load"(%47) : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
      %80 = arith.constant 4 : i32
      %81 = arith.remsi %40, %80 : i32
      %82 = arith.floordivsi %40, %80 : i32
      %83 = arith.constant 2 : i32
      %84 = arith.remsi %82, %83 : i32
      "tilegpu.stage_wait"(%52, %81, %84) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
      %49 = "tilegpu.stage"(%52, %81) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %85 = arith.constant 2 : i32
      %86 = arith.addi %40, %85 : i32
      %87 = arith.constant 4 : i32
      %88 = arith.remsi %86, %87 : i32
      %90 = arith.cmpi slt, %86, %37 : i32
      scf.if %90 {
        %89 = "tilegpu.stage"(%52, %88) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%89, %B, %86, %30) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %50 = "tilegpu.local_load"(%49) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %91 = "tile.mma"(%48, %50, %41) : (tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %44 = "tilegpu.mma_wait"(%91) {pending = 1 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      scf.yield %44 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    }
    %45 = "tilegpu.mma_wait"(%92) {pending = 0 : i32} : (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %46 = arith.truncf %45 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>> to tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>
    "tile.store"(%C, %26, %30, %46) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<64x64xf16, #tilegpu.wgmma<[4, 1]>>) -> ()
    return
  }
}
