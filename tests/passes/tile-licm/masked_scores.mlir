// passes: tile-licm
// A causal mask inside a loop: the row offsets (made before the loop) are converted to the
// scores' layout inside the if; the column offsets (made from the induction variable) are not
// invariant and stay.
module attributes {tile.target = "sm_90a"} {
  func.func @masked_scores(%arg0: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg1: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg2: memref<?x?xf32, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg3: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
    %4 = "tile.arange"() : () -> tensor<64xi32, #tilegpu.blocked<[1], [32], [4], [0]>>
    %5 = "tile.reshape"(%4) : (tensor<64xi32, #tilegpu.blocked<[1], [32], [4], [0]>>) -> tensor<64x1xi32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [4, 8], [4, 1], [1, 0]>>>
    %6 = arith.constant 0 : i32
    %7 = arith.constant 0 : i32
    %8 = "tile.load"(%arg0, %6, %7) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<64x32xf16, #tilegpu.blocked<[1, 4], [4, 8], [4, 1], [1, 0]>>
    %43 = "tilegpu.local_alloc"(%8) : (tensor<64x32xf16, #tilegpu.blocked<[1, 4], [4, 8], [4, 1], [1, 0]>>) -> memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
    %44 = "tilegpu.local_load"(%43) : (memref<64x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>
    %9 = arith.constant 0.0 : f32
    %10 = "tile.splat"(%9) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    %11 = "tile.dim"(%arg1) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %12 = arith.constant 63 : i32
    %13 = arith.addi %11, %12 : i32
    %14 = arith.constant 64 : i32
    %15 = arith.floordivsi %13, %14 : i32
    %16 = arith.constant 0 : i32
    %17 = arith.constant 1 : i32
    %40 = scf.for %18 = %16 to %15 step %17 iter_args(%19 = %10) -> (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) : i32 {
      %20 = arith.constant 0 : i32
      %21 = "tile.load"(%arg1, %20, %18) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<32x64xf16, #tilegpu.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>
      %45 = "tilegpu.local_alloc"(%21) : (tensor<32x64xf16, #tilegpu.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
      %46 = "tilegpu.local_load"(%45) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>
      %22 = arith.constant 0.0 : f32
      %23 = "tile.splat"(%22) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %24 = "tile.mma"(%44, %46, %23) : (tensor<64x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[4, 1]>>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      %25 = arith.cmpi sge, %18, %arg3 : i32
      %38 = scf.if %25 -> (tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) {
        %26 = arith.constant 64 : i32
        %27 = arith.muli %18, %26 : i32
        %28 = "tile.arange"() : () -> tensor<64xi32, #tilegpu.blocked<[1], [32], [4], [0]>>
        %29 = "tile.reshape"(%28) : (tensor<64xi32, #tilegpu.blocked<[1], [32], [4], [0]>>) -> tensor<1x64xi32, #tilegpu.slice<0 : i32, #tilegpu.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>>
        %47 = "tilegpu.convert_layout"(%29) {scratch = #tilegpu.shared<0 : i64>} : (tensor<1x64xi32, #tilegpu.slice<0 : i32, #tilegpu.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>>) -> tensor<1x64xi32, #tilegpu.wgmma<[4, 1]>>
        %30 = "tile.splat"(%27) : (i32) -> tensor<1x64xi32, #tilegpu.wgmma<[4, 1]>>
        %31 = arith.addi %30, %47 : tensor<1x64xi32, #tilegpu.wgmma<[4, 1]>>
        %48 = "tilegpu.convert_layout"(%5) {scratch = #tilegpu.shared<1 : i64>} : (tensor<64x1xi32, #tilegpu.slice<1 : i32, #tilegpu.blocked<[1, 4], [4, 8], [4, 1], [1, 0]>>>) -> tensor<64x1xi32, #tilegpu.slice<1 : i32, #tilegpu.wgmma<[4, 1]>>>
        %32 = "tile.broadcast"(%48) : (tensor<64x1xi32, #tilegpu.slice<1 : i32, #tilegpu.wgmma<[4, 1]>>>) -> tensor<64x64xi32, #tilegpu.wgmma<[4, 1]>>
        %33 = "tile.broadcast"(%31) : (tensor<1x64xi32, #tilegpu.wgmma<[4, 1]>>) -> tensor<64x64xi32, #tilegpu.wgmma<[4, 1]>>
        %34 = arith.cmpi sge, %32, %33 : tensor<64x64xi32, #tilegpu.wgmma<[4, 1]>>
        %35 = arith.constant 0.0 : f32
        %36 = "tile.splat"(%35) : (f32) -> tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
        %37 = arith.select %34, %24, %36 : tensor<64x64xi1, #tilegpu.wgmma<[4, 1]>>, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
        scf.yield %37 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      } else {
        scf.yield %24 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      }
      %39 = arith.addf %19, %38 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
      scf.yield %39 : tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>
    }
    %41 = arith.constant 0 : i32
    %42 = arith.constant 0 : i32
    "tile.store"(%arg2, %41, %42, %40) : (memref<?x?xf32, strided<[?, ?]>>, i32, i32, tensor<64x64xf32, #tilegpu.wgmma<[4, 1]>>) -> ()
    return
  }
}
