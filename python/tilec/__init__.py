"""tilec from Python: compile `.tile` kernels on first use and launch them on PyTorch tensors.

    import torch, tilec
    softmax = tilec.kernel("kernels/softmax.tile", T="f16")
    x = torch.randn(64, 1000, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    softmax(x, y)            # on torch's current stream; the grid from the kernel's signature

The JIT, the compilation cache (`$TILEC_CACHE_DIR`, shared with the `tilec` command line) and
the launch validation are tilec's own (the Rust crate `tilec`): a wrong argument is a
`LaunchError` naming it, before anything reaches the GPU. Tensors are passed without a copy:
a PyTorch tensor by its `data_ptr()`, `shape` and `stride()`, any other object by its
`__cuda_array_interface__`. `docs/python.md` is the guide.
"""
import sys

from ._tilec import CompileError, DeviceError, LaunchError, TilecError, __version__
from ._tilec import Kernel as _Kernel
from ._tilec import cache_dir
from ._tilec import device_target as _device_target
from ._tilec import main as _main

__all__ = ["kernel", "Kernel", "compile", "Compiled", "TilecError", "CompileError", "LaunchError",
           "DeviceError", "cache_dir", "device_target", "main", "__version__"]

# PyTorch's dtypes (by name, so that importing tilec does not import torch) and the
# __cuda_array_interface__ type strings, as tilec's element types.
_TORCH_DTYPES = {
    "torch.float16": "f16", "torch.bfloat16": "bf16", "torch.float32": "f32", "torch.float64": "f64",
    "torch.int8": "i8", "torch.uint8": "u8", "torch.int32": "i32", "torch.int64": "i64", "torch.uint32": "u32",
    "torch.bool": "i1", "torch.float8_e4m3fn": "f8e4m3", "torch.float8_e5m2": "f8e5m2",
    "torch.float8_e8m0fnu": "ue8m0", "torch.float4_e2m1fn_x2": "f4e2m1x2",
}
_TYPESTR = {"<f2": "f16", "<f4": "f32", "<f8": "f64", "|i1": "i8", "|u1": "u8", "<i4": "i32", "<i8": "i64",
            "<u4": "u32", "|b1": "i1"}
_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "u8": 1, "i32": 4, "i64": 8, "u32": 4, "i1": 1,
          "f8e4m3": 1, "f8e5m2": 1, "ue8m0": 1, "f4e2m1x2": 1}


def _span(shape, strides, dtype):
    """Bytes from element 0 to the end of the last element the shape and strides address."""
    if any(n == 0 for n in shape):
        return 0
    last = sum((n - 1) * s for n, s in zip(shape, strides))
    return (last + 1) * _BYTES[dtype]


def _describe(i, a):
    """(description for the Rust half, device ordinal or None, the interface's stream or
    None, whether it is a PyTorch tensor)."""
    if isinstance(a, (bool, int, float)):
        return a, None, None, False
    if hasattr(a, "data_ptr") and hasattr(a, "stride") and hasattr(a, "dtype") and hasattr(a, "device"):
        dtype = _TORCH_DTYPES.get(str(a.dtype))
        if dtype is None:
            raise LaunchError(f"argument {i}: {a.dtype} is not a tilec element type")
        if a.device.type != "cuda":
            raise LaunchError(f"argument {i}: a tensor on {a.device}; tilec kernels take CUDA tensors")
        shape, strides = list(a.shape), list(a.stride())
        if any(s < 0 for s in strides):
            raise LaunchError(f"argument {i}: negative strides {strides}")
        return ("tensor", a.data_ptr(), shape, strides, dtype, _span(shape, strides, dtype)), a.device.index, None, True
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        dtype = _TYPESTR.get(cai["typestr"])
        if dtype is None:
            raise LaunchError(f"argument {i}: element type {cai['typestr']!r} is not a tilec element type")
        shape = list(cai["shape"])
        size = _BYTES[dtype]
        if cai.get("strides") is None:
            strides, step = [], 1
            for n in reversed(shape):
                strides.insert(0, step)
                step *= n
        else:
            if any(s % size for s in cai["strides"]):
                raise LaunchError(f"argument {i}: byte strides {cai['strides']} are not whole elements")
            strides = [s // size for s in cai["strides"]]
        address = cai["data"][0]
        stream = cai.get("stream")
        return ("tensor", address, shape, strides, dtype, _span(shape, strides, dtype)), None, stream, False
    raise LaunchError(f"argument {i}: a {type(a).__name__} is neither a tensor (a PyTorch CUDA tensor or an "
                      f"object with __cuda_array_interface__) nor a number")


def _constant(name, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    # A torch dtype names itself: torch.float16 -> f16.
    name_of = _TORCH_DTYPES.get(str(value))
    if name_of is not None:
        return name_of
    raise CompileError(f"constant {name}={value!r}: give an int, a float, a bool or a dtype name")


class Compiled:
    """A kernel compiled for one target: its PTX and metadata (`docs/abi.md`)."""

    def __init__(self, ptx, metadata_json):
        import json
        self.ptx = ptx
        self.metadata_json = metadata_json
        self.metadata = json.loads(metadata_json)
        self.signature = self.metadata["signature"]

    def __repr__(self):
        return f"<tilec.Compiled {self.signature['name']} for {self.signature['target']}>"


class Kernel:
    """A `.tile` kernel with its constants: call it on tensors and numbers, in parameter order."""

    def __init__(self, source, name=None, *, fast_math=False, no_fp_fusion=False, disable_passes=(),
                 from_string=False, **constants):
        self.source = source
        self.name = name
        self.constants = {k: _constant(k, v) for k, v in constants.items()}
        self._k = _Kernel(source, not from_string, name, self.constants, fast_math, no_fp_fusion,
                          list(disable_passes))

    def __call__(self, *args, stream=None, device=None):
        """Launches on the tensors' GPU, on `stream` (a torch.cuda.Stream, a CUstream integer,
        or by default the current PyTorch stream of the tensors' device)."""
        described, devices, streams, torch_tensors = [], set(), [], False
        for i, a in enumerate(args):
            d, dev, s, is_torch = _describe(i, a)
            described.append(d)
            torch_tensors |= is_torch
            if dev is not None:
                devices.add(dev)
            if s is not None:
                streams.append(s)
        if len(devices) > 1:
            raise LaunchError(f"the tensors are on several GPUs: {sorted(devices)}")
        if device is None:
            device = devices.pop() if devices else 0
        if stream is None:
            if torch_tensors:
                import torch  # already imported: an argument is a torch tensor
                stream = torch.cuda.current_stream(device).cuda_stream
            else:
                stream = streams[0] if streams else 0
        elif hasattr(stream, "cuda_stream"):
            stream = stream.cuda_stream
        return self._k.launch(described, device, int(stream))

    def compile(self, arch):
        """The PTX and metadata for `arch` (`sm_90a`, `sm_103a`, `sm_121a`), through the
        compilation cache as `tilec compile`; no GPU needed."""
        return Compiled(*self._k.compile(arch))

    def check(self, *args, arch="sm_90a"):
        """Validates a launch on `args` against the kernel compiled for `arch`, as a launch
        would (no GPU: the tensors' addresses are not read); returns the grid."""
        return self._k.check(arch, [_describe(i, a)[0] for i, a in enumerate(args)])

    def __repr__(self):
        consts = ", ".join(f"{k}={v}" for k, v in self.constants.items())
        return f"<tilec.Kernel {self.name or ''} of {self.source!r}{' ' + consts if consts else ''}>"


def kernel(source, name=None, **options):
    """A kernel of the `.tile` file `source` (`name`: which kernel, when it has several),
    specialised on the constants given as keywords (`T="f16"`, `BLOCK_N=1024`,
    `CAUSAL=True`); `fast_math`, `no_fp_fusion`, `disable_passes` are pipeline switches;
    `from_string=True` takes `source` as the text itself."""
    return Kernel(source, name, **options)


def compile(source, arch, name=None, **options):
    """Compiles a kernel for `arch` here (no GPU): a `Compiled` with `ptx` and `metadata`."""
    return Kernel(source, name, **options).compile(arch)


def device_target(device=0):
    """The tilec target of GPU `device` (`sm_90a` on an H100), or DeviceError."""
    return _device_target(device)


def main():
    """The `tilec` command line (the console script of the package)."""
    sys.exit(_main(["tilec"] + sys.argv[1:]))
