// passes: tile-grid-dependency
// matmul_swiglu's ring prologue on sm_90a (its tilegpu stage before this pass), Bg and Bu
// (the weights) declared independent, its `prefetch` loop of their later tiles written before
// the rings: Bg's and Bu's four TMA copies move above the first copy of A with the scalars
// they read, then the prefetch loop (after the copies, though the kernel wrote it first),
// then the wait; A's copies, the main loop and the store stay after it, in their order.
module attributes {tile.target = "sm_90a"} {
  func.func @matmul_swiglu(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Bg: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32, tile.independent}, %Bu: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32, tile.independent}, %out: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %4 = arith.constant 0.0 : f32
    %5 = "tile.splat"(%4) : (f32) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %6 = arith.constant 0.0 : f32
    %7 = "tile.splat"(%6) : (f32) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %8 = "tile.dim"(%A) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %9 = arith.constant 63 : i32
    %10 = arith.addi %8, %9 : i32
    %11 = arith.constant 64 : i32
    %12 = arith.floordivsi %10, %11 : i32
    %13 = arith.constant 8 : i32
    %14 = arith.minsi %12, %13 : i32
    %15 = arith.constant 2 : i32
    %16 = arith.constant 1 : i32
    scf.for %17 = %15 to %14 step %16 : i32 {
      %18 = "tile.bid"() {axis = 0 : i32} : () -> i32
      "tile.prefetch"(%Bg, %18, %17) {order = array<i32: 1, 0>, tile = array<i64: 64, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      %19 = "tile.bid"() {axis = 0 : i32} : () -> i32
      "tile.prefetch"(%Bu, %19, %17) {order = array<i32: 1, 0>, tile = array<i64: 64, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %20 = "tile.dim"(%A) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %21 = arith.constant 63 : i32
    %22 = arith.addi %20, %21 : i32
    %23 = arith.constant 64 : i32
    %24 = arith.floordivsi %22, %23 : i32
    %25 = arith.constant 0 : i32
    %26 = arith.constant 1 : i32
    %57 = "tilegpu.stages_alloc"() : () -> memref<4x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
    %58 = "tilegpu.stages_alloc"() : () -> memref<4x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
    %59 = "tilegpu.stages_alloc"() : () -> memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
    %60 = arith.constant 0 : i32
    %64 = arith.cmpi slt, %60, %24 : i32
    scf.if %64 {
      %61 = "tile.bid"() {axis = 1 : i32} : () -> i32
      %62 = arith.constant 0 : i32
      %63 = "tilegpu.stage"(%57, %62) : (memref<4x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%63, %A, %60, %61) {latency = 2 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 16>} : (memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %65 = arith.constant 0 : i32
    %69 = arith.cmpi slt, %65, %24 : i32
    scf.if %69 {
      %66 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %67 = arith.constant 0 : i32
      %68 = "tilegpu.stage"(%58, %67) : (memref<4x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%68, %Bg, %66, %65) {latency = 2 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %70 = arith.constant 0 : i32
    %74 = arith.cmpi slt, %70, %24 : i32
    scf.if %74 {
      %71 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %72 = arith.constant 0 : i32
      %73 = "tilegpu.stage"(%59, %72) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%73, %Bu, %71, %70) {latency = 2 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %75 = arith.constant 1 : i32
    %79 = arith.cmpi slt, %75, %24 : i32
    scf.if %79 {
      %76 = "tile.bid"() {axis = 1 : i32} : () -> i32
      %77 = arith.constant 1 : i32
      %78 = "tilegpu.stage"(%57, %77) : (memref<4x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%78, %A, %75, %76) {latency = 2 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 16>} : (memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %80 = arith.constant 1 : i32
    %84 = arith.cmpi slt, %80, %24 : i32
    scf.if %84 {
      %81 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %82 = arith.constant 1 : i32
      %83 = "tilegpu.stage"(%58, %82) : (memref<4x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%83, %Bg, %81, %80) {latency = 2 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %85 = arith.constant 1 : i32
    %89 = arith.cmpi slt, %85, %24 : i32
    scf.if %89 {
      %86 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %87 = arith.constant 1 : i32
      %88 = "tilegpu.stage"(%59, %87) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%88, %Bu, %86, %85) {latency = 2 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %127:2 = scf.for %27 = %25 to %24 step %26 iter_args(%28 = %5, %29 = %7) -> (tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>, tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) : i32 {
      %30 = "tile.bid"() {axis = 1 : i32} : () -> i32
      %90 = arith.constant 4 : i32
      %91 = arith.remsi %27, %90 : i32
      %92 = arith.floordivsi %27, %90 : i32
      %93 = arith.constant 2 : i32
      %94 = arith.remsi %92, %93 : i32
      "tilegpu.stage_wait"(%57, %91, %94) : (memref<4x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
      %53 = "tilegpu.stage"(%57, %91) : (memref<4x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      %95 = arith.constant 2 : i32
      %96 = arith.addi %27, %95 : i32
      %97 = "tile.bid"() {axis = 1 : i32} : () -> i32
      %98 = arith.constant 4 : i32
      %99 = arith.remsi %96, %98 : i32
      %101 = arith.cmpi slt, %96, %24 : i32
      scf.if %101 {
        %100 = "tilegpu.stage"(%57, %99) : (memref<4x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
        "tilegpu.tma_copy_into"(%100, %A, %96, %97) {latency = 2 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 16>} : (memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %54 = "tilegpu.local_load"(%53) : (memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>) -> tensor<64x16xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %32 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %102 = arith.constant 4 : i32
      %103 = arith.remsi %27, %102 : i32
      %104 = arith.floordivsi %27, %102 : i32
      %105 = arith.constant 2 : i32
      %106 = arith.remsi %104, %105 : i32
      "tilegpu.stage_wait"(%58, %103, %106) : (memref<4x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
      %51 = "tilegpu.stage"(%58, %103) : (memref<4x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      %107 = arith.constant 2 : i32
      %108 = arith.addi %27, %107 : i32
      %109 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %110 = arith.constant 4 : i32
      %111 = arith.remsi %108, %110 : i32
      %113 = arith.cmpi slt, %108, %24 : i32
      scf.if %113 {
        %112 = "tilegpu.stage"(%58, %111) : (memref<4x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
        "tilegpu.tma_copy_into"(%112, %Bg, %109, %108) {latency = 2 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %52 = "tilegpu.local_load"(%51) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
      %126 = "tile.mma"(%52, %54, %28) : (tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x16xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
      %34 = "tilegpu.mma_wait"(%126) {pending = 1 : i32} : (tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
      %35 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %114 = arith.constant 3 : i32
      %115 = arith.remsi %27, %114 : i32
      %116 = arith.floordivsi %27, %114 : i32
      %117 = arith.constant 2 : i32
      %118 = arith.remsi %116, %117 : i32
      "tilegpu.stage_wait"(%59, %115, %118) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
      %55 = "tilegpu.stage"(%59, %115) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      %119 = arith.constant 2 : i32
      %120 = arith.addi %27, %119 : i32
      %121 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %122 = arith.constant 3 : i32
      %123 = arith.remsi %120, %122 : i32
      %125 = arith.cmpi slt, %120, %24 : i32
      scf.if %125 {
        %124 = "tilegpu.stage"(%59, %123) : (memref<3x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
        "tilegpu.tma_copy_into"(%124, %Bu, %121, %120) {latency = 2 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %56 = "tilegpu.local_load"(%55) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
      %37 = "tile.mma"(%56, %54, %29) : (tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x16xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
      scf.yield %34, %37 : tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>, tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    }
    %38 = "tilegpu.mma_wait"(%127#0) {pending = 0 : i32} : (tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %40 = arith.negf %38 : tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %41 = math.exp %40 : tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %42 = arith.constant 1.0 : f32
    %43 = "tile.splat"(%42) : (f32) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %44 = arith.addf %43, %41 : tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %45 = arith.divf %38, %44 : tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %46 = arith.mulf %45, %127#1 : tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %47 = "tile.bid"() {axis = 1 : i32} : () -> i32
    %48 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %49 = "tile.permute"(%46) {perm = array<i32: 1, 0>} : (tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<16x64xf32, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    %50 = arith.truncf %49 : tensor<16x64xf32, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>> to tensor<16x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
    "tile.store"(%out, %47, %48, %50) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<16x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> ()
    return
  }
}
