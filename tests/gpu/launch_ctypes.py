#!/usr/bin/env python3
"""A launcher for tilec's PTX written from docs/abi.md alone: Python's ctypes over the CUDA
driver API, PyTorch only to allocate the tensors and compute the references.

    python3 tests/gpu/launch_ctypes.py 'TILEC COMMAND' [--arch sm_90a]   (e.g. 'tilec' or 'python3 -m tilec')

For each case it runs `tilec compile` (PTX + metadata JSON), then follows the page: checks the
requirements, evaluates the grid, loads the PTX, sizes the dynamic shared memory, lays out
the parameters (tensors as address + extents + strides, scalars, the persistent kernel's
`i32`, the tensor maps encoded with cuTensorMapEncodeTiled), launches on PyTorch's current
stream and compares with PyTorch. It also checks that an unmet requirement is refused before
a launch. Exits nonzero on any failure. Needs a GPU of the arch compiled for (sm_90a: H100/H200).
"""
import argparse, ctypes, json, math, os, shlex, subprocess, sys, tempfile

import torch

cuda = ctypes.CDLL("libcuda.so.1")

# cuda.h enumerations the page names.
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
TMA_DTYPE = {"f16": 6, "f32": 7, "bf16": 9}  # every 1-byte type: UINT8 = 0
TMA_SWIZZLE = {32: 1, 64: 2, 128: 3}
TMA_L2_128B = 2
ONE_BYTE = {"i8", "u8", "i1", "f8e4m3", "f8e5m2", "f4e2m1x2", "ue8m0", "ue4m3"}
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4, "u32": 4, "f64": 8, "i64": 8, **{t: 1 for t in ONE_BYTE}}
TORCH_DTYPE = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32,
               "i64": torch.int64}


def check(result, what):
    if result != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(result, ctypes.byref(name))
        raise RuntimeError(f"{what}: {name.value.decode() if name.value else result}")


def evaluate(expr, args):
    """A host expression of docs/abi.md over `args` (torch tensors and Python numbers)."""
    (op, v), = expr.items()
    if op == "int":
        return v
    if op == "dim":
        return args[v["param"]].shape[v["axis"]]
    if op == "arg":
        return int(args[v["param"]])
    if op == "not":
        return int(evaluate(v, args) == 0)
    if op == "cmp":
        pred, a, b = v[0], evaluate(v[1], args), evaluate(v[2], args)
        return int({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[pred])
    a, b = evaluate(v[0], args), evaluate(v[1], args)
    if op in ("floordiv", "rem", "ceildiv") and b == 0:
        raise ValueError("division by zero in a host expression")
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "floordiv": lambda: a // b,
            "rem": lambda: a % b, "ceildiv": lambda: -(-a // b), "min": lambda: min(a, b),
            "max": lambda: max(a, b), "and": lambda: int(a != 0 and b != 0),
            "or": lambda: int(a != 0 or b != 0)}[op]()


def aligned_map():
    """A 128-byte buffer at a 64-byte aligned address (and the object that owns it)."""
    raw = ctypes.create_string_buffer(128 + 64)
    address = (ctypes.addressof(raw) + 63) // 64 * 64
    return ctypes.c_void_p(address), raw


def encode_tensor_map(t, dtype, box, swizzle):
    rank = t.dim()
    dims = (ctypes.c_uint64 * rank)(*[t.shape[rank - 1 - k] for k in range(rank)])
    strides = (ctypes.c_uint64 * max(rank - 1, 1))(
        *[t.stride(rank - 1 - k) * ELEMENT_BYTES[dtype] for k in range(1, rank)])
    boxes = (ctypes.c_uint32 * rank)(*box)
    ones = (ctypes.c_uint32 * rank)(*([1] * rank))
    ptr, owner = aligned_map()
    check(cuda.cuTensorMapEncodeTiled(ptr, ctypes.c_int(TMA_DTYPE.get(dtype, 0)), ctypes.c_uint32(rank),
                                      ctypes.c_void_p(t.data_ptr()), dims, strides, boxes, ones,
                                      ctypes.c_int(0), ctypes.c_int(TMA_SWIZZLE[swizzle]),
                                      ctypes.c_int(TMA_L2_128B), ctypes.c_int(0)), "cuTensorMapEncodeTiled")
    return ptr, owner


class Kernel:
    """A compiled kernel: the PTX loaded as a module, and its signature."""

    def __init__(self, ptx_path, json_path):
        meta = json.load(open(json_path))
        self.sig = meta["signature"]
        self.module = ctypes.c_void_p()
        ptx = open(ptx_path, "rb").read() + b"\0"
        check(cuda.cuModuleLoadData(ctypes.byref(self.module), ptx), "cuModuleLoadData")
        self.func = ctypes.c_void_p()
        check(cuda.cuModuleGetFunction(ctypes.byref(self.func), self.module, self.sig["name"].encode()),
              "cuModuleGetFunction")
        shared = self.sig["shared_bytes"]
        static = shared if shared <= 49152 else 0
        self.dynamic = (shared if shared > 49152 else 0) + self.sig.get("shared_pad", 0)
        if static + self.dynamic > 49152:
            check(cuda.cuFuncSetAttribute(self.func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          self.dynamic), "cuFuncSetAttribute")

    def launch(self, *args):
        sig = self.sig
        if len(args) != len(sig["params"]):
            raise TypeError(f"{sig['name']} takes {len(sig['params'])} arguments, {len(args)} given")
        for r in sig.get("requires", []):
            if evaluate(r["cond"], args) == 0:
                raise ValueError(f"kernel `{sig['name']}` requires `{r['text']}` (line {r['line']})")
        grid = [evaluate(g, args) for g in sig["grid"]]
        if any(g == 0 for g in grid):
            return grid
        values = []  # ctypes objects, kept alive until the launch returns
        for p, a in zip(sig["params"], args):
            if p["kind"] == "tensor":
                assert a.dim() == p["rank"] and TORCH_DTYPE[p["dtype"]] == a.dtype, p["name"]
                values.append(ctypes.c_uint64(a.data_ptr()))
                values += [ctypes.c_int64(n) for n in a.shape]
                values += [ctypes.c_int64(s) for s in a.stride()]
            else:
                values.append({"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float}[p["dtype"]](a))
        gx = grid[0]
        if sig.get("persistent"):
            values.append(ctypes.c_int32(grid[0]))
            per_sm, sms = ctypes.c_int(), ctypes.c_int()
            check(cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(per_sm), self.func,
                                                                   sig["block_threads"], ctypes.c_size_t(self.dynamic)),
                  "cuOccupancyMaxActiveBlocksPerMultiprocessor")
            check(cuda.cuDeviceGetAttribute(ctypes.byref(sms), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
                  "cuDeviceGetAttribute")
            gx = max(1, min(grid[0], per_sm.value * sms.value // sig.get("cluster", 1)))
        # A block of a CTA-pair kernel is `cluster` CTAs along x (the PTX's cluster dims group them).
        gx *= sig.get("cluster", 1)
        owners = []
        for m in sig.get("tma", []):
            p = sig["params"][m["param"]]
            ptr, owner = encode_tensor_map(args[m["param"]], p["dtype"], m["box"], m["swizzle"])
            owners.append(owner)
            values.append(ptr)
        # A tensor map's slot points at the map itself; every other slot at its value.
        addresses = [v.value if isinstance(v, ctypes.c_void_p) else ctypes.addressof(v) for v in values]
        pointers = (ctypes.c_void_p * len(values))(*addresses)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(cuda.cuLaunchKernel(self.func, gx, grid[1], grid[2], sig["block_threads"], 1, 1, self.dynamic,
                                  stream, pointers, None), "cuLaunchKernel")
        return [gx, grid[1], grid[2]]


def compile_kernel(tilec, source, arch, consts, workdir):
    name = os.path.basename(source).replace(".tile", "") + "".join(f"_{c}" for c in consts)
    out = os.path.join(workdir, name.replace("=", "-"))
    cmd = shlex.split(tilec) + ["compile", source, "--arch", arch, "-o", out + ".ptx"]
    for c in consts:
        cmd += ["--const", c]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return Kernel(out + ".ptx", out + ".json")


def compare(name, got, want, tol):
    err = ((got.float() - want.float()).norm() / want.float().norm()).item()
    ok = err <= tol
    print(f"{'ok ' if ok else 'FAIL'} {name}: rel L2 {err:.2e} (tolerance {tol:g})", flush=True)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tilec")
    ap.add_argument("--arch", default="sm_90a")
    a = ap.parse_args()
    torch.cuda.init()
    device = ctypes.c_int()
    check(cuda.cuInit(0), "cuInit")
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    context = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")  # PyTorch's context: its pointers are valid
    work = tempfile.mkdtemp()
    torch.manual_seed(0)
    ok = True

    # softmax: plain parameters, a requirement, static shared memory; ragged rows (N = 1000).
    k = compile_kernel(a.tilec, "kernels/softmax.tile", a.arch, [], work)
    x = torch.randn(37, 1000, device="cuda", dtype=torch.float16)
    y = torch.zeros_like(x)
    k.launch(x, y)
    torch.cuda.synchronize()
    ok &= compare("softmax 37x1000 f16", y, torch.softmax(x.float(), -1), 2e-3)
    try:
        k.launch(torch.randn(4, 2000, device="cuda", dtype=torch.float16),
                 torch.zeros(4, 2000, device="cuda", dtype=torch.float16))
        print("FAIL softmax N = 2000 > BLOCK_N was launched")
        ok = False
    except ValueError as e:
        print(f"ok  softmax N = 2000 refused: {e}")
    # A zero-row tensor: an empty grid, nothing launched.
    grid = k.launch(torch.zeros(0, 1000, device="cuda", dtype=torch.float16),
                    torch.zeros(0, 1000, device="cuda", dtype=torch.float16))
    ok &= grid[0] == 0
    print(f"{'ok ' if grid[0] == 0 else 'FAIL'} softmax with 0 rows: grid {grid}, not launched")

    # matmul: dynamic shared memory over 48 KiB and three tensor maps (sm_90a: TMA + wgmma),
    # then the persistent variant (one more i32, fewer blocks than tiles), then CTA pairs
    # (`cluster` 2: twice the grid's x in CTAs), plain and persistent.
    pair = ["CTA_PAIR=true", "TILE_M=256"]
    for consts in ([], ["PERSISTENT=true"], pair, pair + ["PERSISTENT=true"]):
        k = compile_kernel(a.tilec, "kernels/matmul.tile", a.arch, consts, work)
        m, n, kk = 1000, 1536, 512
        A = torch.randn(m, kk, device="cuda", dtype=torch.float16)
        B = torch.randn(kk, n, device="cuda", dtype=torch.float16)
        C = torch.zeros(m, n, device="cuda", dtype=torch.float16)
        grid = k.launch(A, B, C)
        torch.cuda.synchronize()
        ok &= compare(f"matmul {m}x{n}x{kk} {' '.join(consts)} grid {grid} (tma {len(k.sig.get('tma', []))}, "
                      f"dynamic smem {k.dynamic})", C, A.float() @ B.float(), 2e-3)

    # fmha: a 4-d tensor map box, an f32 scalar, requirements on the heads.
    k = compile_kernel(a.tilec, "kernels/fmha.tile", a.arch, ["H=4", "CAUSAL=true"], work)
    b, h, s, d = 2, 4, 300, 128
    q, kt, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.zeros_like(q)
    k.launch(q, kt, v, o, 1.0 / math.sqrt(d))
    torch.cuda.synchronize()
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), kt.float(), v.float(), is_causal=True)
    ok &= compare(f"fmha B{b} H{h} S{s} D{d} causal", o, want, 5e-3)

    print("launch_ctypes: all passed" if ok else "launch_ctypes: FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
