// passes: tile-to-llvm
// Three tcgen05 products left in flight in one iteration (tile-mma-overlap/tcgen05_two_a_in_tmem
// after the pass): S, and two P·V products that both read A — the same carried P — from
// Tensor Memory. Each has a D region and an mbarrier of its own (four mbarrier.init: the
// kernel's and theirs); each P·V also stores its A into a region of its own (columns 192 and
// 224: the tcgen05.st of the second does not touch what the first still reads) and is issued
// with that column as its A address.
module attributes {tile.target = "sm_103a"} {
  func.func @fa4(%Q: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %K: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %V: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %Out: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %4 = arith.constant 0 : i32
    %5 = arith.constant 0 : i32
    %53 = "tilegpu.async_copy"(%Q, %4, %5) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 64>} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    "tilegpu.async_wait"() {pending = 0 : i32} : () -> ()
    %54 = "tilegpu.local_load"(%53) : (memref<128x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>
    %7 = arith.constant 0.0 : f32
    %8 = "tile.splat"(%7) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %9 = arith.constant 0.0 : f16
    %10 = "tile.splat"(%9) : (f16) -> tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
    %11 = arith.constant 0.0 : f32
    %12 = "tile.splat"(%11) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %13 = "tile.dim"(%K) {axis = 0 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %14 = arith.constant 63 : i32
    %15 = arith.addi %13, %14 : i32
    %16 = arith.constant 64 : i32
    %17 = arith.floordivsi %15, %16 : i32
    %18 = arith.constant 0 : i32
    %19 = arith.constant 1 : i32
    %59 = "tilegpu.stages_alloc"() : () -> memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
    %60 = arith.constant 0 : i32
    %64 = arith.cmpi slt, %60, %17 : i32
    scf.if %64 {
      %61 = arith.constant 0 : i32
      %62 = arith.constant 0 : i32
      %63 = "tilegpu.stage"(%59, %62) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      "tilegpu.tma_copy_into"(%63, %K, %61, %60) {latency = 1 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
    }
    %46:3 = scf.for %20 = %18 to %17 step %19 iter_args(%21 = %8, %22 = %12, %23 = %10) -> (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>) : i32 {
      %24 = arith.constant 0 : i32
      %65 = arith.constant 2 : i32
      %66 = arith.remsi %20, %65 : i32
      %67 = arith.floordivsi %20, %65 : i32
      %68 = arith.constant 2 : i32
      %69 = arith.remsi %67, %68 : i32
      "tilegpu.stage_wait"(%59, %66, %69) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32, i32) -> ()
      %55 = "tilegpu.stage"(%59, %66) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
      %70 = arith.constant 1 : i32
      %71 = arith.addi %20, %70 : i32
      %72 = arith.constant 0 : i32
      %73 = arith.constant 2 : i32
      %74 = arith.remsi %71, %73 : i32
      %76 = arith.cmpi slt, %71, %17 : i32
      scf.if %76 {
        %75 = "tilegpu.stage"(%59, %74) : (memref<2x64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, i32) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>
        "tilegpu.tma_copy_into"(%75, %K, %72, %71) {latency = 1 : i32, order = array<i32: 1, 0>, padding = "zero", tile = array<i64: 64, 64>} : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %56 = "tilegpu.local_load"(%55) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [0, 1]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
      %26 = arith.constant 0.0 : f32
      %27 = "tile.splat"(%26) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %28 = "tile.mma"(%54, %56, %27) : (tensor<128x64xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %29 = arith.constant 1 : i32
      %30 = arith.subi %20, %29 : i32
      %31 = arith.constant 0 : i32
      %32 = "tile.load"(%V, %30, %31) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<64x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
      %57 = "tilegpu.local_alloc"(%32) : (tensor<64x64xf16, #tilegpu.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %58 = "tilegpu.local_load"(%57) : (memref<64x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
      %33 = "tile.mma"(%23, %58, %21) : (tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %34 = "tile.mma"(%23, %58, %22) : (tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>, tensor<64x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %77 = "tilegpu.mma_wait"(%28) {pending = 2 : i32} : (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %35 = "tile.reduce"(%77) {kind = "max", axis = 1 : i32} : (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x1xf32, #tilegpu.slice<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
      %36 = "tile.broadcast"(%35) : (tensor<128x1xf32, #tilegpu.slice<1 : i32, #tilegpu.tcgen05<[4, 1]>>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %37 = arith.subf %77, %36 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %38 = math.exp2 %37 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %39 = arith.constant 0.5 : f32
      %40 = "tile.splat"(%39) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %78 = "tilegpu.mma_wait"(%33) {pending = 1 : i32} : (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %41 = arith.mulf %78, %40 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %42 = arith.constant 0.25 : f32
      %43 = "tile.splat"(%42) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %79 = "tilegpu.mma_wait"(%34) {pending = 0 : i32} : (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %44 = arith.mulf %79, %43 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %45 = arith.truncf %38 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>> to tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
      scf.yield %41, %44, %45 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>, tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
    }
    %49 = arith.addf %46#0, %46#1 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
    %50 = arith.truncf %49 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>> to tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
    %51 = arith.constant 0 : i32
    %52 = arith.constant 0 : i32
    "tile.store"(%Out, %51, %52, %50) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>) -> ()
    return
  }
}
