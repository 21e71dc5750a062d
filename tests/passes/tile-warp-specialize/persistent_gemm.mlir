// passes: tile-warp-specialize
// The pipelined persistent GEMM: its fills are in the K loop inside the tile loop and in the
// tile loop's prologue. The partition gives the producer a copy of both loops (the tile
// loop holding the prologue's fills and the K loop's copy), so that it fills tile i + 1's
// stages while the consumers run tile i's epilogue; the rings move to the top.
module attributes {tile.target = "sm_90a"} {
  func.func @matmul(%arg0: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg1: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}, %arg2: memref<?x?xf16, strided<[?, ?]>> {tile.divisibility = 16 : i32}) attributes {tile.kernel, tile.num_warps = 8 : i32} {
    %3 = "tile.bid"() {axis = 0 : i32} : () -> i32
    %4 = "tile.num_blocks"() {axis = 0 : i32} : () -> i32
    %5 = "tile.num_tiles"() {axis = 0 : i32} : () -> i32
    %6 = arith.constant 0 : i32
    %7 = "tile.dim"(%arg0) {axis = 0 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %8 = arith.constant 127 : i32
    %9 = arith.addi %7, %8 : i32
    %10 = arith.constant 128 : i32
    %11 = arith.floordivsi %9, %10 : i32
    %12 = "tile.dim"(%arg1) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %13 = arith.constant 63 : i32
    %14 = arith.addi %12, %13 : i32
    %15 = arith.constant 64 : i32
    %16 = arith.floordivsi %14, %15 : i32
    %17 = arith.constant 8 : i32
    %18 = arith.muli %17, %16 : i32
    %19 = arith.constant 8 : i32
    %20 = arith.constant 8 : i32
    %21 = arith.constant 8 : i32
    %22 = arith.muli %21, %16 : i32
    %23 = arith.constant 8 : i32
    %24 = arith.muli %23, %16 : i32
    %25 = arith.constant 0.0 : f32
    %26 = "tile.dim"(%arg0) {axis = 1 : i32} : (memref<?x?xf16, strided<[?, ?]>>) -> i32
    %27 = arith.constant 31 : i32
    %28 = arith.addi %26, %27 : i32
    %29 = arith.constant 32 : i32
    %30 = arith.floordivsi %28, %29 : i32
    %31 = arith.constant 0 : i32
    %32 = arith.constant 1 : i32
    %54 = "tilegpu.stages_alloc"() : () -> memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
    %55 = "tilegpu.stages_alloc"() : () -> memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
    scf.for %33 = %3 to %5 step %4 : i32 {
      %34 = arith.addi %33, %6 : i32
      %35 = arith.floordivsi %34, %18 : i32
      %36 = arith.muli %35, %19 : i32
      %37 = arith.subi %11, %36 : i32
      %38 = arith.minsi %37, %20 : i32
      %39 = arith.remsi %34, %22 : i32
      %40 = arith.remsi %39, %38 : i32
      %41 = arith.addi %36, %40 : i32
      %42 = arith.remsi %34, %24 : i32
      %43 = arith.floordivsi %42, %38 : i32
      %44 = "tile.splat"(%25) : (f32) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
      %56 = arith.subi %33, %3 : i32
      %57 = arith.floordivsi %56, %4 : i32
      %58 = arith.subi %30, %31 : i32
      %59 = arith.constant 1 : i32
      %60 = arith.subi %32, %59 : i32
      %61 = arith.addi %58, %60 : i32
      %62 = arith.floordivsi %61, %32 : i32
      %63 = arith.constant 0 : i32
      %64 = arith.maxsi %62, %63 : i32
      %65 = arith.muli %57, %64 : i32
      %66 = arith.constant 0 : i32
      %78 = arith.cmpi slt, %66, %30 : i32
      scf.if %78 {
        %67 = arith.constant 0 : i32
        %68 = arith.addi %65, %67 : i32
        %69 = arith.constant 4 : i32
        %70 = arith.remsi %68, %69 : i32
        %71 = arith.constant 4 : i32
        %72 = arith.floordivsi %68, %71 : i32
        %73 = arith.constant 1 : i32
        %74 = arith.addi %72, %73 : i32
        %75 = arith.constant 2 : i32
        %76 = arith.remsi %74, %75 : i32
        "tilegpu.stage_acquire"(%54, %70, %76) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %77 = "tilegpu.stage"(%54, %70) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%77, %arg0, %41, %66) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 32>} : (memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %79 = arith.constant 0 : i32
      %91 = arith.cmpi slt, %79, %30 : i32
      scf.if %91 {
        %80 = arith.constant 0 : i32
        %81 = arith.addi %65, %80 : i32
        %82 = arith.constant 4 : i32
        %83 = arith.remsi %81, %82 : i32
        %84 = arith.constant 4 : i32
        %85 = arith.floordivsi %81, %84 : i32
        %86 = arith.constant 1 : i32
        %87 = arith.addi %85, %86 : i32
        %88 = arith.constant 2 : i32
        %89 = arith.remsi %87, %88 : i32
        "tilegpu.stage_acquire"(%55, %83, %89) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %90 = "tilegpu.stage"(%55, %83) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%90, %arg1, %79, %43) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %92 = arith.constant 1 : i32
      %104 = arith.cmpi slt, %92, %30 : i32
      scf.if %104 {
        %93 = arith.constant 1 : i32
        %94 = arith.addi %65, %93 : i32
        %95 = arith.constant 4 : i32
        %96 = arith.remsi %94, %95 : i32
        %97 = arith.constant 4 : i32
        %98 = arith.floordivsi %94, %97 : i32
        %99 = arith.constant 1 : i32
        %100 = arith.addi %98, %99 : i32
        %101 = arith.constant 2 : i32
        %102 = arith.remsi %100, %101 : i32
        "tilegpu.stage_acquire"(%54, %96, %102) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %103 = "tilegpu.stage"(%54, %96) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%103, %arg0, %41, %92) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 32>} : (memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %105 = arith.constant 1 : i32
      %117 = arith.cmpi slt, %105, %30 : i32
      scf.if %117 {
        %106 = arith.constant 1 : i32
        %107 = arith.addi %65, %106 : i32
        %108 = arith.constant 4 : i32
        %109 = arith.remsi %107, %108 : i32
        %110 = arith.constant 4 : i32
        %111 = arith.floordivsi %107, %110 : i32
        %112 = arith.constant 1 : i32
        %113 = arith.addi %111, %112 : i32
        %114 = arith.constant 2 : i32
        %115 = arith.remsi %113, %114 : i32
        "tilegpu.stage_acquire"(%55, %109, %115) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %116 = "tilegpu.stage"(%55, %109) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        "tilegpu.tma_copy_into"(%116, %arg1, %105, %43) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
      }
      %158 = scf.for %45 = %31 to %30 step %32 iter_args(%46 = %44) -> (tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>) : i32 {
        %118 = arith.addi %45, %65 : i32
        %119 = arith.constant 4 : i32
        %120 = arith.remsi %118, %119 : i32
        %121 = arith.floordivsi %118, %119 : i32
        %122 = arith.constant 2 : i32
        %123 = arith.remsi %121, %122 : i32
        "tilegpu.stage_wait"(%54, %120, %123) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %47 = "tilegpu.stage"(%54, %120) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
        %124 = arith.constant 2 : i32
        %125 = arith.addi %45, %124 : i32
        %126 = arith.constant 2 : i32
        %127 = arith.addi %118, %126 : i32
        %128 = arith.constant 4 : i32
        %129 = arith.remsi %127, %128 : i32
        %137 = arith.cmpi slt, %125, %30 : i32
        scf.if %137 {
          %130 = arith.constant 4 : i32
          %131 = arith.floordivsi %127, %130 : i32
          %132 = arith.constant 1 : i32
          %133 = arith.addi %131, %132 : i32
          %134 = arith.constant 2 : i32
          %135 = arith.remsi %133, %134 : i32
          "tilegpu.stage_acquire"(%54, %129, %135) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
          %136 = "tilegpu.stage"(%54, %129) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>
          "tilegpu.tma_copy_into"(%136, %arg0, %41, %125) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 128, 32>} : (memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
        }
        %48 = "tilegpu.local_load"(%47) : (memref<128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>) -> tensor<128x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[8, 1]>>>
        %138 = arith.constant 4 : i32
        %139 = arith.remsi %118, %138 : i32
        %140 = arith.floordivsi %118, %138 : i32
        %141 = arith.constant 2 : i32
        %142 = arith.remsi %140, %141 : i32
        "tilegpu.stage_wait"(%55, %139, %142) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
        %49 = "tilegpu.stage"(%55, %139) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
        %143 = arith.constant 2 : i32
        %144 = arith.addi %45, %143 : i32
        %145 = arith.constant 2 : i32
        %146 = arith.addi %118, %145 : i32
        %147 = arith.constant 4 : i32
        %148 = arith.remsi %146, %147 : i32
        %156 = arith.cmpi slt, %144, %30 : i32
        scf.if %156 {
          %149 = arith.constant 4 : i32
          %150 = arith.floordivsi %146, %149 : i32
          %151 = arith.constant 1 : i32
          %152 = arith.addi %150, %151 : i32
          %153 = arith.constant 2 : i32
          %154 = arith.remsi %152, %153 : i32
          "tilegpu.stage_acquire"(%55, %148, %154) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32, i32) -> ()
          %155 = "tilegpu.stage"(%55, %148) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>
          "tilegpu.tma_copy_into"(%155, %arg1, %144, %43) {latency = 2 : i32, order = array<i32: 0, 1>, padding = "zero", tile = array<i64: 32, 64>} : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> ()
        }
        %50 = "tilegpu.local_load"(%49) : (memref<32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>) -> tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[8, 1]>>>
        %157 = "tile.mma"(%48, %50, %46) : (tensor<128x32xf16, #tilegpu.dot_operand<0 : i32, #tilegpu.wgmma<[8, 1]>>>, tensor<32x64xf16, #tilegpu.dot_operand<1 : i32, #tilegpu.wgmma<[8, 1]>>>, tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
        %51 = "tilegpu.mma_wait"(%157) {pending = 1 : i32} : (tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
        %172 = arith.constant 4 : i32
        %173 = arith.constant 3 : i32
        %174 = arith.addi %118, %173 : i32
        %175 = arith.remsi %174, %172 : i32
        %176 = arith.constant 0 : i32
        %177 = arith.cmpi sgt, %45, %176 : i32
        scf.if %177 {
          "tilegpu.stage_release"(%55, %175) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> ()
        }
        %159 = arith.constant 4 : i32
        %160 = arith.constant 3 : i32
        %161 = arith.addi %118, %160 : i32
        %162 = arith.remsi %161, %159 : i32
        %163 = arith.constant 0 : i32
        %164 = arith.cmpi sgt, %45, %163 : i32
        scf.if %164 {
          "tilegpu.stage_release"(%54, %162) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> ()
        }
        scf.yield %51 : tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
      }
      %52 = "tilegpu.mma_wait"(%158) {pending = 0 : i32} : (tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>) -> tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>>
      %165 = arith.constant 4 : i32
      %166 = arith.addi %65, %64 : i32
      %167 = arith.constant 1 : i32
      %168 = arith.subi %166, %167 : i32
      %169 = arith.remsi %168, %165 : i32
      %170 = arith.constant 0 : i32
      %171 = arith.cmpi sgt, %64, %170 : i32
      scf.if %171 {
        "tilegpu.stage_release"(%54, %169) : (memref<4x128x32xf16, #tilegpu.nvmma_shared<64 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      }
      %178 = arith.constant 4 : i32
      %179 = arith.addi %65, %64 : i32
      %180 = arith.constant 1 : i32
      %181 = arith.subi %179, %180 : i32
      %182 = arith.remsi %181, %178 : i32
      %183 = arith.constant 0 : i32
      %184 = arith.cmpi sgt, %64, %183 : i32
      scf.if %184 {
        "tilegpu.stage_release"(%55, %182) : (memref<4x32x64xf16, #tilegpu.nvmma_shared<128 : i64, 8 : i64, [1, 0]>>, i32) -> ()
      }
      %53 = arith.truncf %52 : tensor<128x64xf32, #tilegpu.wgmma<[8, 1]>> to tensor<128x64xf16, #tilegpu.wgmma<[8, 1]>>
      "tile.store"(%arg2, %41, %43, %53) : (memref<?x?xf16, strided<[?, ?]>>, i32, i32, tensor<128x64xf16, #tilegpu.wgmma<[8, 1]>>) -> ()
    }
    return
  }
}
