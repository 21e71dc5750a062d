# Runs the sm_90a PTX of tests/passes/tile-to-llvm/ring_stages.mlir on the GPU and compares
# C with torch: the ring-of-stages lowering (stages_alloc / stage / async_copy_into) on real
# hardware, before any .tile kernel uses it (tile-pipeline will). Make the PTX here with
#   tilec opt tests/passes/tile-to-llvm/ring_stages.mlir --passes 'tile-to-llvm{arch=sm_90a},\
#     convert-nvgpu-to-nvvm,convert-arith-to-llvm,reconcile-unrealized-casts' > r.mlir
#   mlir-translate-22 --mlir-to-llvmir r.mlir > r.ll
#   llc-22 -O3 -march=nvptx64 -mcpu=sm_90a -mattr=+ptx88 r.ll -o ring90.ptx
# then on the GPU machine (PyTorch): python3 tests/gpu/ring_stages.py ring90.ptx
import ctypes, sys, torch
cu = ctypes.CDLL("libcuda.so.1")
torch.zeros(1, device="cuda")  # primary context current
ptx = open(sys.argv[1], "rb").read() + b"\0"
mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
assert cu.cuModuleLoadData(ctypes.byref(mod), ptx) == 0
assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"ring_stages") == 0
ok = True
for K in (48, 40, 16, 256, 72):
    torch.manual_seed(K)
    A = torch.randn(16, K, device="cuda").half()
    B = torch.randn(8, K, device="cuda").half()
    C = torch.full((16, 8), float("nan"), device="cuda")
    vals = []
    for t in (A, B, C):
        vals += [t.data_ptr(), t.shape[0], t.shape[1], t.stride(0), t.stride(1)]
    cvals = [ctypes.c_uint64(v) for v in vals]
    params = (ctypes.c_void_p * len(cvals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in cvals])
    r = cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, None, params, None)
    torch.cuda.synchronize()
    kk = K // 16 * 16
    want = A[:, :kk].float() @ B[:, :kk].float().T
    err = (C - want).abs().max().item()
    good = r == 0 and err < 1e-2
    ok &= good
    print(f"K={K}: launch {r}, max abs err {err:.3e} {'pass' if good else 'FAIL'}")
print("ring_stages on the GPU:", "pass" if ok else "FAIL")
