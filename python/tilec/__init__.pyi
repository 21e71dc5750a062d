"""Type stubs of the `tilec` package (see `tilec/__init__.py` and docs/python.md)."""
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

__version__: str

class TilecError(Exception): ...
class CompileError(TilecError): ...
class LaunchError(TilecError): ...
class DeviceError(TilecError): ...

# A torch dtype, or its tilec name ("f16", "bf16", …).
Constant = Union[int, float, bool, str, Any]
# A PyTorch CUDA tensor, an object with __cuda_array_interface__, or a number.
Argument = Any

class Compiled:
    ptx: str
    metadata_json: str
    metadata: Dict[str, Any]
    signature: Dict[str, Any]
    def __init__(self, ptx: str, metadata_json: str) -> None: ...

class Kernel:
    source: str
    name: Optional[str]
    constants: Dict[str, str]
    def __init__(
        self,
        source: str,
        name: Optional[str] = ...,
        *,
        fast_math: bool = ...,
        no_fp_fusion: bool = ...,
        disable_passes: Iterable[str] = ...,
        from_string: bool = ...,
        **constants: Constant,
    ) -> None: ...
    def __call__(self, *args: Argument, stream: Any = ..., device: Optional[int] = ...) -> Dict[str, Any]: ...
    def compile(self, arch: str) -> Compiled: ...
    def check(self, *args: Argument, arch: str = ...) -> Tuple[int, int, int]: ...

def kernel(
    source: str,
    name: Optional[str] = ...,
    *,
    fast_math: bool = ...,
    no_fp_fusion: bool = ...,
    disable_passes: Iterable[str] = ...,
    from_string: bool = ...,
    **constants: Constant,
) -> Kernel: ...
def compile(source: str, arch: str, name: Optional[str] = ..., **options: Any) -> Compiled: ...
def cache_dir() -> Optional[str]: ...
def device_target(device: int = ...) -> str: ...
def main() -> None: ...
