// passes: tile-grid-dependency
// matmul_splitk's ring prologue on sm_90a (its tilegpu stage before this pass), B (the
// weights) declared independent: B's three TMA copies, with the scalars they read, move above
// the first copy of A; the wait goes after them; A's copies, the loop and the atomic epilogue
// stay after it, in their order.
module attributes {tile.target = "sm_90a"} {
  func.func @matmul_splitk(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %B: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32, tile.independent}, %C: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %3 = "tile.dim"(%A) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %4 = arith.constant 63 : i32
    %5 = arith.addi %3, %4 : i32
    %6 = arith.constant 64 : i32
    %7 = arith.floordivsi %5, %6 : i32
    %8 = arith.constant 3 : i32
    %9 = arith.addi %7, %8 : i32
    %10 = arith.constant 4 : i32
    %11 = arith.floordivsi %9, %10 : i32
    %12 = "tile.bid"() {axis = 2 : i32} : () -> i32
    %13 = arith.muli %12, %11 : i32
    %14 = arith.addi %13, %11 : i32
    %15 = arith.minsi %14, %7 : i32
    %16 = arith.constant 0.0 : f32
    %17 = "tile.splat"(%16) : (f32) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %18 = arith.constant 1 : i32
    %37 = "tilegpu.stages_alloc"() : () -> memref<5x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
    %38 = "tilegpu.stages_alloc"() : () -> memref<5x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
    %39 = arith.constant 0 : i32
    %40 = arith.addi %13, %39 : i32
    %44 = arith.cmpi slt, %40, %15 : i32
    scf.if %44 {
      %41 = "tile.bid"() {axis = 1 : i32} : () -> i32
      %42 = arith.constant 0 : i32
      %43 = "tilegpu.stage"(%37, %42) : (memref<5x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%43, %A, %40, %41) {latency = 3 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 16>} : (memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %45 = arith.constant 0 : i32
    %46 = arith.addi %13, %45 : i32
    %50 = arith.cmpi slt, %46, %15 : i32
    scf.if %50 {
      %47 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %48 = arith.constant 0 : i32
      %49 = "tilegpu.stage"(%38, %48) : (memref<5x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%49, %B, %47, %46) {latency = 3 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %51 = arith.constant 1 : i32
    %52 = arith.addi %13, %51 : i32
    %56 = arith.cmpi slt, %52, %15 : i32
    scf.if %56 {
      %53 = "tile.bid"() {axis = 1 : i32} : () -> i32
      %54 = arith.constant 1 : i32
      %55 = "tilegpu.stage"(%37, %54) : (memref<5x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%55, %A, %52, %53) {latency = 3 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 16>} : (memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %57 = arith.constant 1 : i32
    %58 = arith.addi %13, %57 : i32
    %62 = arith.cmpi slt, %58, %15 : i32
    scf.if %62 {
      %59 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %60 = arith.constant 1 : i32
      %61 = "tilegpu.stage"(%38, %60) : (memref<5x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%61, %B, %59, %58) {latency = 3 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %63 = arith.constant 2 : i32
    %64 = arith.addi %13, %63 : i32
    %68 = arith.cmpi slt, %64, %15 : i32
    scf.if %68 {
      %65 = "tile.bid"() {axis = 1 : i32} : () -> i32
      %66 = arith.constant 2 : i32
      %67 = "tilegpu.stage"(%37, %66) : (memref<5x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%67, %A, %64, %65) {latency = 3 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 16>} : (memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %69 = arith.constant 2 : i32
    %70 = arith.addi %13, %69 : i32
    %74 = arith.cmpi slt, %70, %15 : i32
    scf.if %74 {
      %71 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %72 = arith.constant 2 : i32
      %73 = "tilegpu.stage"(%38, %72) : (memref<5x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%73, %B, %71, %70) {latency = 3 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %105 = scf.for %19 = %13 to %15 step %18 iter_args(%20 = %17) -> (tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) : i32 {
      %75 = arith.subi %19, %13 : i32
      %21 = "tile.bid"() {axis = 1 : i32} : () -> i32
      %76 = arith.constant 5 : i32
      %77 = arith.remsi %75, %76 : i32
      %78 = arith.floordivsi %75, %76 : i32
      %79 = arith.constant 2 : i32
      %80 = arith.remsi %78, %79 : i32
      "tilegpu.stage_wait"(%37, %77, %80) : (memref<5x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
      %35 = "tilegpu.stage"(%37, %77) : (memref<5x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      %81 = arith.constant 3 : i32
      %82 = arith.addi %19, %81 : i32
      %83 = "tile.bid"() {axis = 1 : i32} : () -> i32
      %84 = arith.constant 3 : i32
      %85 = arith.addi %75, %84 : i32
      %86 = arith.constant 5 : i32
      %87 = arith.remsi %85, %86 : i32
      %89 = arith.cmpi slt, %82, %15 : i32
      scf.if %89 {
        %88 = "tilegpu.stage"(%37, %87) : (memref<5x64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
        "tilegpu.tma_copy_into"(%88, %A, %82, %83) {latency = 3 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 16>} : (memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %36 = "tilegpu.local_load"(%35) : (memref<64x16xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>) -> tensor<64x16xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %23 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %90 = arith.constant 5 : i32
      %91 = arith.remsi %75, %90 : i32
      %92 = arith.floordivsi %75, %90 : i32
      %93 = arith.constant 2 : i32
      %94 = arith.remsi %92, %93 : i32
      "tilegpu.stage_wait"(%38, %91, %94) : (memref<5x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
      %33 = "tilegpu.stage"(%38, %91) : (memref<5x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      %95 = arith.constant 3 : i32
      %96 = arith.addi %19, %95 : i32
      %97 = "tile.bid"() {axis = 0 : i32} : () -> i32
      %98 = arith.constant 3 : i32
      %99 = arith.addi %75, %98 : i32
      %100 = arith.constant 5 : i32
      %101 = arith.remsi %99, %100 : i32
      %103 = arith.cmpi slt, %96, %15 : i32
      scf.if %103 {
        %102 = "tilegpu.stage"(%38, %101) : (memref<5x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
        "tilegpu.tma_copy_into"(%102, %B, %97, %96) {latency = 3 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %34 = "tilegpu.local_load"(%33) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
      %104 = "tile.mma"(%34, %36, %20) : (tensor<64x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x16xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
      %25 = "tilegpu.mma_wait"(%104) {pending = 1 : i32} : (tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
      scf.yield %25 : tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    }
    %26 = "tilegpu.mma_wait"(%105) {pending = 0 : i32} : (tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>
    %27 = "tile.bid"() {axis = 1 : i32} : () -> i32
    %28 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %29 = "tile.permute"(%26) {perm = array<i32: 1, 0>} : (tensor<64x16xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<16x64xf32, #tilegpu.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>
    %30 = arith.constant 1 : i1
    %31 = "tile.splat"(%30) : (i1) -> tensor<16x64xi1, #tilegpu.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>
    %32 = "tile.atomic"(%C, %27, %28, %29, %31) {op = "add", scope = "gpu", sem = "relaxed"} : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<16x64xf32, #tilegpu.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>, tensor<16x64xi1, #tilegpu.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>) -> tensor<16x64xf32, #tilegpu.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>
    return
  }
}
