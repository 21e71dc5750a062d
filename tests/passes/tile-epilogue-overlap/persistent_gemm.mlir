// passes: tile-epilogue-overlap
// A persistent tcgen05 GEMM (the accumulator kept in Tensor Memory, in flight across the K
// loop, its mma_wait right after the loop): the tile loop comes to carry the K loop's result
// (un-waited) and the epilogue's two coordinates (%pid_m, %pid_n as computed before the K
// loop); the epilogue (truncf, store) moves under `if t != bid(0)` after the next tile's K
// loop, reading the carried accumulator through its own mma_wait; a copy of it with fresh
// values runs the last tile under `if bid(0) < num_tiles(0)` after the loop. Made by
// `tilec compile persistent_gemm.tile --arch sm_103a --emit tilegpu --disable-pass
// tile-epilogue-overlap`, persistent_gemm.tile being:
//   kernel persistent_gemm(A: tensor<f16, [M, K]>, B: tensor<f16, [K, N]>, C: tensor<f16, [M, N]>)
//       grid = (cdiv(A.shape[0], 128) * cdiv(B.shape[1], 64),)
//       hints { num_warps = 4, persistent = true }
//   {
//       let tiles_n = cdiv(B.shape[1], 64);
//       let pid_m = bid(0) // tiles_n;
//       let pid_n = bid(0) % tiles_n;
//       let acc = zeros((128, 64), f32);
//       for k in range(0, cdiv(A.shape[1], 32)) {
//           let a = load(A, index=(pid_m, k), shape=(128, 32), latency=1);
//           let b = load(B, index=(k, pid_n), shape=(32, 64), latency=1);
//           acc = mma(a, b, acc);
//       }
//       store(C, index=(pid_m, pid_n), tile=acc.astype(f16));
//   }
module attributes {tile.target = "sm_103a"} {
  func.func @persistent_gemm(%A: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %B: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %C: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %28 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %29 = "tile.num_blocks"() {axis = 0 : i32} : () -> i32
    %30 = "tile.num_tiles"() {axis = 0 : i32} : () -> i32
    %31 = arith.constant 0 : i32
    %3 = "tile.dim"(%B) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %4 = arith.constant 63 : i32
    %5 = arith.addi %3, %4 : i32
    %6 = arith.constant 64 : i32
    %7 = arith.floordivsi %5, %6 : i32
    %12 = arith.constant 0.0 : f32
    %14 = "tile.dim"(%A) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %15 = arith.constant 31 : i32
    %16 = arith.addi %14, %15 : i32
    %17 = arith.constant 32 : i32
    %18 = arith.floordivsi %16, %17 : i32
    %19 = arith.constant 0 : i32
    %20 = arith.constant 1 : i32
    %37 = "tilegpu.stages_alloc"() : () -> memref<3x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
    %38 = "tilegpu.stages_alloc"() : () -> memref<3x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    scf.for %32 = %28 to %30 step %29 : i32 {
      %8 = arith.addi %32, %31 : i32
      %9 = arith.floordivsi %8, %7 : i32
      %10 = arith.addi %32, %31 : i32
      %11 = arith.remsi %10, %7 : i32
      %13 = "tile.splat"(%12) : (f32) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %39 = arith.subi %32, %28 : i32
      %40 = arith.floordivsi %39, %29 : i32
      %41 = arith.subi %18, %19 : i32
      %42 = arith.constant 1 : i32
      %43 = arith.subi %20, %42 : i32
      %44 = arith.addi %41, %43 : i32
      %45 = arith.floordivsi %44, %20 : i32
      %46 = arith.constant 0 : i32
      %47 = arith.maxsi %45, %46 : i32
      %48 = arith.muli %40, %47 : i32
      %49 = arith.constant 0 : i32
      %61 = arith.cmpi slt, %49, %18 : i32
      scf.if %61 {
        %50 = arith.constant 0 : i32
        %51 = arith.addi %48, %50 : i32
        %52 = arith.constant 3 : i32
        %53 = arith.remsi %51, %52 : i32
        %54 = arith.constant 3 : i32
        %55 = arith.floordivsi %51, %54 : i32
        %56 = arith.constant 1 : i32
        %57 = arith.addi %55, %56 : i32
        %58 = arith.constant 2 : i32
        %59 = arith.remsi %57, %58 : i32
        "tilegpu.stage_acquire"(%37, %53, %59) : (memref<3x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %60 = "tilegpu.stage"(%37, %53) : (memref<3x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%60, %A, %9, %49) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 32>} : (memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %62 = arith.constant 0 : i32
      %74 = arith.cmpi slt, %62, %18 : i32
      scf.if %74 {
        %63 = arith.constant 0 : i32
        %64 = arith.addi %48, %63 : i32
        %65 = arith.constant 3 : i32
        %66 = arith.remsi %64, %65 : i32
        %67 = arith.constant 3 : i32
        %68 = arith.floordivsi %64, %67 : i32
        %69 = arith.constant 1 : i32
        %70 = arith.addi %68, %69 : i32
        %71 = arith.constant 2 : i32
        %72 = arith.remsi %70, %71 : i32
        "tilegpu.stage_acquire"(%38, %66, %72) : (memref<3x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %73 = "tilegpu.stage"(%38, %66) : (memref<3x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%73, %B, %62, %11) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %114 = scf.for %21 = %19 to %18 step %20 iter_args(%22 = %13) -> (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) : i32 {
        %75 = arith.addi %21, %48 : i32
        %76 = arith.constant 3 : i32
        %77 = arith.remsi %75, %76 : i32
        %78 = arith.floordivsi %75, %76 : i32
        %79 = arith.constant 2 : i32
        %80 = arith.remsi %78, %79 : i32
        "tilegpu.stage_wait"(%37, %77, %80) : (memref<3x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %33 = "tilegpu.stage"(%37, %77) : (memref<3x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        %81 = arith.constant 1 : i32
        %82 = arith.addi %21, %81 : i32
        %83 = arith.constant 1 : i32
        %84 = arith.addi %75, %83 : i32
        %85 = arith.constant 3 : i32
        %86 = arith.remsi %84, %85 : i32
        %94 = arith.cmpi slt, %82, %18 : i32
        scf.if %94 {
          %87 = arith.constant 3 : i32
          %88 = arith.floordivsi %84, %87 : i32
          %89 = arith.constant 1 : i32
          %90 = arith.addi %88, %89 : i32
          %91 = arith.constant 2 : i32
          %92 = arith.remsi %90, %91 : i32
          "tilegpu.stage_acquire"(%37, %86, %92) : (memref<3x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
          %93 = "tilegpu.stage"(%37, %86) : (memref<3x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
          "tilegpu.tma_copy_into"(%93, %A, %9, %82) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 32>} : (memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
        }
        %34 = "tilegpu.local_load"(%33) : (memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<128x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>
        %95 = arith.constant 3 : i32
        %96 = arith.remsi %75, %95 : i32
        %97 = arith.floordivsi %75, %95 : i32
        %98 = arith.constant 2 : i32
        %99 = arith.remsi %97, %98 : i32
        "tilegpu.stage_wait"(%38, %96, %99) : (memref<3x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %35 = "tilegpu.stage"(%38, %96) : (memref<3x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        %100 = arith.constant 1 : i32
        %101 = arith.addi %21, %100 : i32
        %102 = arith.constant 1 : i32
        %103 = arith.addi %75, %102 : i32
        %104 = arith.constant 3 : i32
        %105 = arith.remsi %103, %104 : i32
        %113 = arith.cmpi slt, %101, %18 : i32
        scf.if %113 {
          %106 = arith.constant 3 : i32
          %107 = arith.floordivsi %103, %106 : i32
          %108 = arith.constant 1 : i32
          %109 = arith.addi %107, %108 : i32
          %110 = arith.constant 2 : i32
          %111 = arith.remsi %109, %110 : i32
          "tilegpu.stage_acquire"(%38, %105, %111) : (memref<3x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
          %112 = "tilegpu.stage"(%38, %105) : (memref<3x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
          "tilegpu.tma_copy_into"(%112, %B, %101, %11) {latency = 1 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
        }
        %36 = "tilegpu.local_load"(%35) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>
        %25 = "tile.mma"(%34, %36, %22) : (tensor<128x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.tcgen05<[4, 1]>>>, tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
        "tilegpu.stage_release"(%38, %96) : (memref<3x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> ()
        "tilegpu.stage_release"(%37, %77) : (memref<3x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> ()
        scf.yield %25 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      }
      %26 = "tilegpu.mma_wait"(%114) {pending = 0 : i32} : (tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>) -> tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>>
      %27 = arith.truncf %26 : tensor<128x64xf32, #tilegpu.tcgen05<[4, 1]>> to tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>
      "tile.store"(%C, %9, %11, %27) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<128x64xf16, #tilegpu.tcgen05<[4, 1]>>) -> ()
    }
    return
  }
}
