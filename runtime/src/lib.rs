//! tilec-runtime: loads compiled kernels and launches them, without MLIR or LLVM.
//!
//! Contract: the runtime receives PTX (or a cubin) and the kernel's
//! [`Signature`]. [`validate`] checks a launch — every argument
//! against its parameter (dtype, rank, shape, strides, the 16-byte specialisation, that the
//! buffer holds every addressed element), the grid against the device limits — before
//! anything reaches the GPU; it is a pure function, tested without a GPU. [`Device::open`]
//! looks for the NVIDIA driver library itself before touching cudarc (which panics when
//! libcuda is missing), so a machine without a driver gets [`RuntimeError::NoDriver`].
//! [`DeviceTensor::view`] makes a strided window on a buffer ([`check_view`] keeps it inside),
//! launched like a tensor; two views of one buffer may both be passed where the kernel writes
//! one when they interleave without sharing a byte (the Q and K heads of one QKV product).
//! [`cache`] is the compilation cache (memory and disk layers, keyed by fields the compiler
//! fills in); it stores artifacts and never needs the compiler, so a process that only loads
//! cached kernels links neither MLIR nor LLVM.

#![warn(missing_docs)]

pub mod cache;
pub mod graph;
pub mod tune;

use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;
use tilec_core::abi::{HostArgs, ParamSig, Signature};
use tilec_core::target::Arch;
use tilec_core::DType;

pub use tilec_core::host::{self, HostTensor};
/// A CUDA stream handle of the driver API (`CUstream`), for launching on another library's
/// stream ([`Device::launch_on_stream`]).
pub type RawStream = cudarc::driver::sys::CUstream;

/// What the runtime refuses, or what the driver said: every variant names the offending value.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No NVIDIA driver library on this machine (compiling needs none; launching does).
    #[error("no NVIDIA driver: {0} (a GPU and its driver are needed to run kernels; compiling works without)")]
    NoDriver(String),
    /// The CUDA driver returned an error.
    #[error("CUDA driver error: {0}")]
    Driver(String),
    /// A launch argument does not fit its parameter.
    #[error("argument {index} (`{name}`): {reason}")]
    BadArgument {
        /// Its position, from 0.
        index: usize,
        /// Its parameter's name.
        name: String,
        /// What is wrong, with the offending value.
        reason: String,
    },
    /// The number of arguments differs from the kernel's parameters.
    #[error("kernel `{kernel}` takes {expected} arguments, {given} given")]
    ArgCount {
        /// The kernel's name.
        kernel: String,
        /// Its parameters.
        expected: usize,
        /// The arguments given.
        given: usize,
    },
    /// A `require` clause of the kernel that the arguments do not meet.
    #[error("{0}")]
    Requirement(String),
    /// The grid the signature computes, or the one given, is outside the device's limits.
    #[error("bad launch grid: {0}")]
    BadGrid(String),
    /// A view addresses elements outside its buffer, or has a malformed shape or strides.
    #[error("bad tensor view: {0}")]
    BadView(String),
    /// The GPU is not one of tilec's targets, or lacks what the kernel needs.
    #[error("unsupported device: {0}")]
    Unsupported(String),
    /// A graph that cannot be captured, updated or replayed as asked ([`graph`]).
    #[error("CUDA graph: {0}")]
    Graph(String),
}

fn drv(e: impl std::fmt::Debug) -> RuntimeError {
    RuntimeError::Driver(format!("{e:?}"))
}

/// A tensor argument as the validator sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDesc {
    /// The element type.
    pub dtype: DType,
    /// Extents, outermost first.
    pub shape: Vec<i64>,
    /// In elements.
    pub strides: Vec<i64>,
    /// Device address of element 0.
    pub addr: u64,
    /// Bytes available from `addr`.
    pub len_bytes: u64,
}

impl TensorDesc {
    /// Whether the tensor meets the 16-byte specialisation: base address and every stride
    /// but the last a multiple of 16 bytes, last stride 1, last extent a multiple of 16 bytes.
    pub fn aligned16(&self) -> bool {
        // In i128: extents and strides come from the caller and may be anything.
        let b = i128::from(self.dtype.bytes());
        let Some((&last_stride, rest)) = self.strides.split_last() else { return false };
        let last_dim = i128::from(self.shape.last().copied().unwrap_or(0));
        self.addr.is_multiple_of(16)
            && last_stride == 1
            && (last_dim * b) % 16 == 0
            && rest.iter().all(|&s| (i128::from(s) * b) % 16 == 0)
    }
}

/// A launch argument.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgDesc {
    /// A tensor, by its descriptor.
    Tensor(TensorDesc),
    /// An `i32` scalar.
    I32(i32),
    /// An `i64` scalar.
    I64(i64),
    /// An `f32` scalar.
    F32(f32),
}

/// A validated launch: grid and the raw parameter words in ABI order.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchPlan {
    /// Blocks along x, y and z.
    pub grid: [u32; 3],
    /// Threads a block.
    pub block: u32,
    /// Static plus dynamic shared memory a block, in bytes.
    pub shared_bytes: u32,
    /// What the launch passes as dynamic shared memory ([`Signature::dynamic_shared_bytes`]).
    pub dynamic_shared_bytes: u32,
    /// The parameter words, in the kernel's parameter order.
    pub words: Vec<Word>,
    /// True when the grid is empty (a zero-sized tensor): nothing to launch.
    pub empty: bool,
    /// The bytes `[first, end)` of each tensor the kernel writes (stores, scatters, atomics).
    pub writes: Vec<(u128, u128)>,
    /// The bytes of each tensor the kernel reads before it waits for the grid before it (its
    /// `independent` tensors): a programmatic launch is only safe when that grid wrote none.
    pub early_reads: Vec<(u128, u128)>,
}

impl LaunchPlan {
    /// Whether this launch may overlap the end of a launch that wrote `before`
    /// ([`LaunchPlan::writes`]) by programmatic stream serialization: none of the tensors it
    /// reads before its `griddepcontrol.wait` shares a byte with them (everything else it does
    /// after the wait, which returns once that grid has completed).
    pub fn may_follow_early(&self, before: &[(u128, u128)]) -> bool {
        !self.early_reads.iter().any(|&(s1, e1)| before.iter().any(|&(s2, e2)| s1 < e2 && s2 < e1))
    }
}

/// One kernel parameter word.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Word {
    /// A device address.
    U64(u64),
    /// An `i64` scalar.
    I64(i64),
    /// An `i32` scalar.
    I32(i32),
    /// An `f32` scalar.
    F32(f32),
    /// A 128-byte tensor map, encoded at launch from this request.
    TensorMap(TensorMapRequest),
}

/// What `cuTensorMapEncodeTiled` needs for one tensor map (dims innermost first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMapRequest {
    /// The element type.
    pub dtype: DType,
    /// Dimensions of the tensor map (1 to 5).
    pub rank: usize,
    /// Device address of element 0.
    pub addr: u64,
    /// Extents, innermost first.
    pub dims: [u64; 5],
    /// Byte strides of dims 1..rank (dim 0 is contiguous).
    pub strides: [u64; 4],
    /// The box (the tile one TMA copy moves), innermost first.
    pub box_dims: [u32; 5],
    /// Shared-memory swizzle in bytes: 32, 64 or 128.
    pub swizzle: u32,
}

impl TensorMapRequest {
    /// The request for tensor `t` with a box and swizzle of the signature, or why a tensor map
    /// cannot describe it (TMA's limits: rank 1 to 5, 16-byte aligned base and strides, a unit
    /// innermost stride, extents under 2^32, boxes of 1 to 256 fitting the swizzle).
    pub fn new(t: &TensorDesc, box_dims: &[u32], swizzle: u32) -> Result<TensorMapRequest, String> {
        let rank = t.shape.len();
        if !(1..=5).contains(&rank) || box_dims.len() != rank {
            return Err(format!("a tensor map of rank {rank} with a box of {} dims", box_dims.len()));
        }
        let eb = u64::from(t.dtype.bytes());
        if !t.addr.is_multiple_of(16) {
            return Err(format!("address {:#x} is not 16-byte aligned", t.addr));
        }
        if t.strides[rank - 1] != 1 {
            return Err(format!("the last stride is {}, not 1", t.strides[rank - 1]));
        }
        let mut r = TensorMapRequest {
            dtype: t.dtype,
            rank,
            addr: t.addr,
            dims: [1; 5],
            strides: [0; 4],
            box_dims: [1; 5],
            swizzle,
        };
        for (k, &b) in box_dims.iter().enumerate() {
            let d = rank - 1 - k;
            r.dims[k] = u64::try_from(t.shape[d]).ok().filter(|&x| (1..1 << 32).contains(&x)).ok_or_else(|| {
                format!("extent {} of dimension {d} is outside what a tensor map takes (1 to 2^32 - 1)", t.shape[d])
            })?;
            if k > 0 {
                let s =
                    u64::try_from(t.strides[d]).ok().map(|s| s * eb).filter(|s| s.is_multiple_of(16) && *s < 1 << 40);
                r.strides[k - 1] =
                    s.ok_or_else(|| format!("stride {} of dimension {d} is not a multiple of 16 bytes", t.strides[d]))?;
            }
            r.box_dims[k] = b;
        }
        if r.box_dims[..rank].iter().any(|&b| !(1..=256).contains(&b))
            || u64::from(box_dims[0]) * eb > u64::from(swizzle)
        {
            return Err(format!("box {box_dims:?} does not fit a {swizzle}-byte swizzle"));
        }
        Ok(r)
    }

    /// The encoded 128-byte tensor map.
    fn encode(&self) -> Result<TensorMap, RuntimeError> {
        use cudarc::driver::sys;
        let dtype = match self.dtype {
            DType::F16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            DType::BF16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            DType::F32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            // Bytes are bytes to the copy engine (fp8 operands of the tensor cores).
            DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1X2 | DType::UE8M0 | DType::UE4M3 | DType::U8 | DType::I8 => {
                sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8
            }
            d => return Err(RuntimeError::Driver(format!("no tensor map for {d} elements"))),
        };
        let swizzle = match self.swizzle {
            128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            _ => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        };
        let mut map = TensorMap([0; 16]);
        let elem_strides = [1u32; 5];
        // SAFETY: every pointer is to a local array of at least `rank` elements (strides:
        // rank - 1), the map is 128 bytes, 64-byte aligned; the call only encodes, it reads no
        // device memory.
        let r = unsafe {
            sys::cuTensorMapEncodeTiled(
                (&mut map as *mut TensorMap).cast(),
                dtype,
                self.rank as u32,
                self.addr as *mut std::ffi::c_void,
                self.dims.as_ptr(),
                self.strides.as_ptr(),
                self.box_dims.as_ptr(),
                elem_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(RuntimeError::Driver(format!("cuTensorMapEncodeTiled: {r:?} for {self:?}")));
        }
        Ok(map)
    }
}

/// A `CUtensorMap`: 128 opaque bytes, 64-byte aligned, passed to the kernel by value.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct TensorMap([u64; 16]);

// SAFETY: a plain 128-byte value the kernel takes by value (`__grid_constant__`).
unsafe impl cudarc::driver::DeviceRepr for TensorMap {}

struct Args<'a>(&'a [ArgDesc]);

impl HostArgs for Args<'_> {
    fn dim(&self, param: usize, axis: usize) -> Option<i64> {
        match self.0.get(param)? {
            ArgDesc::Tensor(t) => t.shape.get(axis).copied(),
            _ => None,
        }
    }
    fn int_arg(&self, param: usize) -> Option<i64> {
        match self.0.get(param)? {
            ArgDesc::I32(v) => Some(i64::from(*v)),
            ArgDesc::I64(v) => Some(*v),
            _ => None,
        }
    }
}

/// The bytes `[first, end)` a tensor's shape and strides address (`None` when it is empty).
fn byte_range(t: &TensorDesc) -> Option<(u128, u128)> {
    if t.shape.iter().any(|&d| d <= 0) {
        return None;
    }
    let last: i128 = t.shape.iter().zip(&t.strides).map(|(&d, &s)| i128::from(d - 1) * i128::from(s)).sum();
    let b = u128::from(t.dtype.bytes());
    let start = u128::from(t.addr);
    Some((start, start + (last as u128 + 1) * b))
}

/// Whether two tensors whose byte ranges overlap are still disjoint because they interleave:
/// for some period R (one of their strides in bytes), every stride of both either is a
/// multiple of R or stays inside one period, and the two tensors' elements fall in disjoint
/// windows of each period — the Q and K heads of one fused QKV buffer, the gate and up
/// halves of one gate/up product. A sufficient test (false means "may overlap").
fn interleaved_disjoint(a: &TensorDesc, b: &TensorDesc) -> bool {
    // The window [start, end) of addresses modulo `r` that `t` occupies, when its
    // non-multiple strides stay inside one period.
    // Addresses from the lower base: a period need not divide the buffer's address.
    let origin = a.addr.min(b.addr);
    let window = |t: &TensorDesc, r: u128| -> Option<(u128, u128)> {
        let bytes = u128::from(t.dtype.bytes());
        let mut span = bytes;
        for (&d, &s) in t.shape.iter().zip(&t.strides) {
            let step = u128::try_from(s).ok()? * bytes;
            if d > 1 && step % r != 0 {
                span += u128::try_from(d - 1).ok()? * step;
            }
        }
        let start = u128::from(t.addr - origin) % r;
        (start + span <= r).then_some((start, start + span))
    };
    let periods = [a, b].into_iter().flat_map(|t| {
        let bytes = u128::from(t.dtype.bytes());
        t.shape.iter().zip(&t.strides).filter(|(&d, &s)| d > 1 && s > 0).map(move |(_, &s)| s as u128 * bytes)
    });
    periods.into_iter().any(|r| match (window(a, r), window(b, r)) {
        (Some((s1, e1)), Some((s2, e2))) => e1 <= s2 || e2 <= s1,
        _ => false,
    })
}

/// Checks a launch of `sig` with `args` and `grid` (the signature's grid when `None`).
///
/// Beyond each argument against its parameter: a tensor the kernel writes must not overlap
/// another tensor argument (the kernel's reads and writes would race or depend on the order
/// of blocks), and must not address one element twice (a stride of 0 along a dimension of
/// more than one element); every tensor is aligned to its element size. An explicit `grid`
/// is checked like a computed one.
pub fn validate(sig: &Signature, args: &[ArgDesc], grid: Option<[u32; 3]>) -> Result<LaunchPlan, RuntimeError> {
    if args.len() != sig.params.len() {
        return Err(RuntimeError::ArgCount { kernel: sig.name.clone(), expected: sig.params.len(), given: args.len() });
    }
    let mut words = vec![];
    for (index, (p, a)) in sig.params.iter().zip(args).enumerate() {
        let bad = |reason: String| RuntimeError::BadArgument { index, name: p.name().to_string(), reason };
        match (p, a) {
            (ParamSig::Tensor { dtype, rank, aligned16, access, .. }, ArgDesc::Tensor(t)) => {
                if t.dtype != *dtype {
                    return Err(bad(format!("expected a {dtype} tensor, got {}", t.dtype)));
                }
                if t.shape.len() != *rank || t.strides.len() != *rank {
                    return Err(bad(format!(
                        "expected rank {rank}, got shape {:?} and strides {:?}",
                        t.shape, t.strides
                    )));
                }
                if let Some(d) = t.shape.iter().find(|&&d| d < 0) {
                    return Err(bad(format!("negative extent {d} in shape {:?}", t.shape)));
                }
                if let Some(s) = t.strides.iter().find(|&&s| s < 0) {
                    return Err(bad(format!("negative stride {s} in {:?}", t.strides)));
                }
                if t.shape.iter().all(|&d| d > 0) {
                    // Highest addressed element must lie inside the buffer.
                    let mut last: i128 = 0;
                    for (&d, &s) in t.shape.iter().zip(&t.strides) {
                        last += i128::from(d - 1) * i128::from(s);
                    }
                    let need = (last + 1) * i128::from(t.dtype.bytes());
                    if need > i128::from(t.len_bytes) {
                        return Err(bad(format!(
                            "shape {:?} with strides {:?} addresses {need} bytes but the buffer has {}",
                            t.shape, t.strides, t.len_bytes
                        )));
                    }
                }
                if !t.addr.is_multiple_of(u64::from(t.dtype.bytes())) {
                    return Err(bad(format!(
                        "address {:#x} is not aligned to its {}-byte elements",
                        t.addr,
                        t.dtype.bytes()
                    )));
                }
                if access.writes() {
                    if let Some((d, _)) = t.shape.iter().zip(&t.strides).find(|(&d, &s)| d > 1 && s == 0) {
                        return Err(bad(format!(
                            "the kernel writes this tensor, and a stride of 0 over an extent of {d} addresses one element several times"
                        )));
                    }
                }
                if *aligned16 && !t.aligned16() {
                    return Err(bad(format!(
                        "the kernel was compiled for 16-byte aligned tensors (unit last stride, last extent and other strides multiples of 16 bytes); shape {:?} strides {:?} address {:#x} is not — compile with this parameter unaligned",
                        t.shape, t.strides, t.addr
                    )));
                }
                if t.shape.iter().chain(&t.strides).any(|&v| v > i64::from(i32::MAX)) {
                    return Err(bad("extents and strides above 2^31-1 are not supported (index arithmetic is 32-bit in tile coordinates)".into()));
                }
                words.push(Word::U64(t.addr));
                words.extend(t.shape.iter().map(|&d| Word::I64(d)));
                words.extend(t.strides.iter().map(|&s| Word::I64(s)));
            }
            (ParamSig::Scalar { dtype: DType::I32, .. }, ArgDesc::I32(v)) => words.push(Word::I32(*v)),
            (ParamSig::Scalar { dtype: DType::I64, .. }, ArgDesc::I64(v)) => words.push(Word::I64(*v)),
            (ParamSig::Scalar { dtype: DType::F32, .. }, ArgDesc::F32(v)) => words.push(Word::F32(*v)),
            (ParamSig::Scalar { dtype, .. }, other) => {
                return Err(bad(format!("expected a {dtype} scalar, got {other:?}")))
            }
            (ParamSig::Tensor { dtype, rank, .. }, other) => {
                return Err(bad(format!("expected a rank-{rank} {dtype} tensor, got {other:?}")))
            }
        }
    }
    tilec_core::abi::check_extents(&sig.params, |i| match &args[i] {
        ArgDesc::Tensor(t) => Some(t.shape.as_slice()),
        _ => None,
    })
    .map_err(|(index, reason)| RuntimeError::BadArgument {
        index,
        name: sig.params[index].name().to_string(),
        reason,
    })?;
    tilec_core::abi::check_requirements(sig, &Args(args)).map_err(RuntimeError::Requirement)?;
    // A tensor the kernel writes must not overlap another tensor argument. The ranges it
    // writes and those it reads before its wait go into the plan (`may_follow_early`).
    let (mut writes, mut early_reads) = (vec![], vec![]);
    for (i, (p, a)) in sig.params.iter().zip(args).enumerate() {
        let (ParamSig::Tensor { access, independent, .. }, ArgDesc::Tensor(t)) = (p, a) else { continue };
        if *independent {
            early_reads.extend(byte_range(t));
        }
        let Some((s1, e1)) = byte_range(t).filter(|_| access.writes()) else { continue };
        writes.push((s1, e1));
        for (j, (q, b)) in sig.params.iter().zip(args).enumerate() {
            let ArgDesc::Tensor(u) = b else { continue };
            if i == j {
                continue;
            }
            if let Some((s2, e2)) = byte_range(u) {
                if s1 < e2 && s2 < e1 && !interleaved_disjoint(t, u) {
                    return Err(RuntimeError::BadArgument {
                        index: i,
                        name: p.name().to_string(),
                        reason: format!(
                            "the kernel writes this tensor and its memory overlaps argument {j} (`{}`): pass separate buffers",
                            q.name()
                        ),
                    });
                }
            }
        }
    }
    let grid = match grid {
        Some(g) => {
            for (i, &v) in g.iter().enumerate() {
                // Along x a block may be a cluster of CTAs: the CTAs must fit.
                let max = if i == 0 { i32::MAX as u32 / sig.cluster.max(1) } else { 65535 };
                if v > max {
                    return Err(RuntimeError::BadGrid(format!("grid dimension {i} is {v}, outside 0..={max}")));
                }
            }
            g
        }
        None => {
            if sig.grid.is_empty() {
                return Err(RuntimeError::BadGrid(format!("kernel `{}` declares no grid; pass one", sig.name)));
            }
            let mut g = [1u32; 3];
            for (i, e) in sig.grid.iter().take(3).enumerate() {
                let v = e.eval(&Args(args)).map_err(RuntimeError::BadGrid)?;
                let max = if i == 0 { i64::from(i32::MAX / sig.cluster.max(1) as i32) } else { 65535 };
                if !(0..=max).contains(&v) {
                    return Err(RuntimeError::BadGrid(format!("grid dimension {i} is {v}, outside 0..={max}")));
                }
                g[i] = v as u32;
            }
            g
        }
    };
    if sig.block_threads == 0 || sig.block_threads > 1024 {
        return Err(RuntimeError::BadGrid(format!("block of {} threads", sig.block_threads)));
    }
    // An empty grid launches nothing: its tensors' maps are not encoded (an extent of 0 has
    // none — an empty output of a GEMM whose epilogue is a TMA store).
    let empty = grid.contains(&0);
    // A persistent kernel's tile count, then the tensor maps, after the parameters.
    if sig.persistent {
        let x = i32::try_from(grid[0]).map_err(|_| RuntimeError::BadGrid(format!("{} tiles along x", grid[0])))?;
        words.push(Word::I32(x));
    }
    for m in sig.tma.iter().filter(|_| !empty) {
        let Some(ArgDesc::Tensor(t)) = args.get(m.param) else {
            return Err(RuntimeError::BadArgument {
                index: m.param,
                name: sig.params.get(m.param).map_or("?", |p| p.name()).to_string(),
                reason: "the kernel takes a tensor map of this argument, which is not a tensor".into(),
            });
        };
        let req = TensorMapRequest::new(t, &m.box_dims, m.swizzle).map_err(|reason| RuntimeError::BadArgument {
            index: m.param,
            name: sig.params[m.param].name().to_string(),
            reason: format!("the kernel copies this tensor with the Tensor Memory Accelerator: {reason}"),
        })?;
        words.push(Word::TensorMap(req));
    }
    Ok(LaunchPlan {
        grid,
        block: sig.block_threads,
        shared_bytes: sig.shared_bytes,
        dynamic_shared_bytes: sig.dynamic_shared_bytes(),
        words,
        empty,
        writes,
        early_reads,
    })
}

/// The CUDA driver library, if this machine has one.
pub fn driver_available() -> Result<(), RuntimeError> {
    for name in ["libcuda.so.1", "libcuda.so"] {
        // SAFETY: loading libcuda runs its initialisers only; the handle is dropped at once.
        if unsafe { libloading::Library::new(name) }.is_ok() {
            return Ok(());
        }
    }
    Err(RuntimeError::NoDriver("libcuda.so.1 was not found".into()))
}

/// An open GPU.
pub struct Device {
    /// The CUDA context (the device's primary context).
    pub ctx: Arc<CudaContext>,
    /// The stream tilec launches on.
    pub stream: Arc<CudaStream>,
    /// The device's name, as the driver gives it.
    pub name: String,
    /// Compute capability (major, minor).
    pub cc: (i32, i32),
    /// Launch the kernels that wait for the grid before them ([`Signature::grid_dependency`])
    /// with programmatic stream serialization (see [`LaunchPlan::may_follow_early`]). On
    /// unless `TILEC_PDL=0`: on the H100 (bench/results/2026-11-27-session24) the Qwen2 decode
    /// step launched kernel by kernel 6.15 → 5.90 ms with it, replayed as a graph 5.80 →
    /// 5.76 (its products' weights copied before their wait; the H200's kernels of
    /// 2026-11-26, which waited first thing, were slower in a graph with it).
    pub programmatic_launch: bool,
    /// What the last launch on each stream wrote (keyed by the stream's handle), for
    /// [`LaunchPlan::may_follow_early`].
    last_writes: std::sync::Mutex<std::collections::BTreeMap<usize, Vec<(u128, u128)>>>,
    /// Load PTX for the driver to assemble even where ptxas's cubin is at hand
    /// ([`Device::load_assembled`]): `TILEC_DRIVER_JIT=1`, the ablation.
    pub driver_jit: bool,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({}, sm_{}{})", self.name, self.cc.0, self.cc.1)
    }
}

/// A device buffer holding a tensor.
pub struct DeviceTensor {
    /// The device memory.
    pub buf: CudaSlice<u8>,
    /// The element type.
    pub dtype: DType,
    /// Extents, outermost first.
    pub shape: Vec<i64>,
    /// In elements.
    pub strides: Vec<i64>,
}

impl std::fmt::Debug for DeviceTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceTensor({} {:?})", self.dtype, self.shape)
    }
}

/// A strided window on a [`DeviceTensor`]'s buffer, launched like a tensor: `offset`
/// elements from the buffer's start, with its own shape and strides (the K heads of a fused
/// QKV product, one half of a gate/up product, the rows of one position in a table). Made by
/// [`DeviceTensor::view`], which checks that every element it addresses is in the buffer.
#[derive(Clone, Debug)]
pub struct TensorView<'a> {
    base: &'a DeviceTensor,
    /// The element type.
    pub dtype: DType,
    /// In elements from the start of the buffer.
    pub offset: i64,
    /// Extents, outermost first.
    pub shape: Vec<i64>,
    /// In elements.
    pub strides: Vec<i64>,
}

impl DeviceTensor {
    /// A view of this buffer (see [`TensorView`]); an error names what does not fit.
    pub fn view(&self, offset: i64, shape: &[i64], strides: &[i64]) -> Result<TensorView<'_>, RuntimeError> {
        check_view(self.buf.len(), self.dtype, offset, shape, strides).map_err(|why| {
            RuntimeError::BadView(format!("offset {offset}, shape {shape:?}, strides {strides:?} on {self:?}: {why}"))
        })?;
        Ok(TensorView { base: self, dtype: self.dtype, offset, shape: shape.to_vec(), strides: strides.to_vec() })
    }
}

/// Whether a view of `offset`, `shape` and `strides` (in elements) stays inside a buffer of
/// `len` bytes of `dtype` elements: why not, if it does not. Every value may be anything.
pub fn check_view(len: usize, dtype: DType, offset: i64, shape: &[i64], strides: &[i64]) -> Result<(), String> {
    if shape.len() != strides.len() {
        return Err("the shape and the strides differ in rank".into());
    }
    if offset < 0 || shape.iter().chain(strides).any(|&v| v < 0) {
        return Err("negative offset, extent or stride".into());
    }
    if shape.iter().all(|&d| d > 0) {
        let last = shape.iter().zip(strides).try_fold(i128::from(offset), |acc, (&d, &s)| {
            acc.checked_add(i128::from(d - 1).checked_mul(i128::from(s))?)
        });
        let need = last.and_then(|l| (l + 1).checked_mul(i128::from(dtype.bytes())));
        if need.is_none_or(|n| n > len as i128) {
            return Err(format!("it addresses past the buffer's {len} bytes"));
        }
    }
    Ok(())
}

/// Bytes of a contiguous tensor (`None`: a negative extent, or more than memory can hold).
fn tensor_bytes(dtype: DType, shape: &[i64]) -> Option<usize> {
    let n = shape.iter().try_fold(1i64, |a, &d| if d < 0 { None } else { a.checked_mul(d) })?;
    usize::try_from(n).ok()?.checked_mul(dtype.bytes() as usize)
}

/// A kernel loaded on a device.
#[derive(Debug)]
pub struct Kernel {
    /// The loaded function.
    pub func: CudaFunction,
    /// The kernel's ABI: parameters, grid, block, shared memory.
    pub signature: Signature,
    /// A persistent kernel's blocks along x at most: as many as the device holds at once
    /// (SMs × the blocks of it one SM fits, by the driver's occupancy calculator).
    pub resident_blocks: Option<u32>,
}

impl Device {
    /// Opens GPU `ordinal` (its primary context and a new stream); [`RuntimeError::NoDriver`] without a driver.
    pub fn open(ordinal: usize) -> Result<Device, RuntimeError> {
        driver_available()?;
        let ctx = CudaContext::new(ordinal).map_err(drv)?;
        // Every operation goes on one stream (a graph's capturing stream only records), so
        // cudarc's per-buffer events would order nothing; and a capture must not wait on an
        // event recorded outside it.
        // SAFETY: no two streams of this context touch one buffer concurrently.
        unsafe { ctx.disable_event_tracking() };
        // A stream of its own rather than the legacy default one, which programmatic
        // dependent launches cannot use.
        let stream = ctx.new_stream().map_err(drv)?;
        let name = ctx.name().map_err(drv)?;
        use cudarc::driver::sys::CUdevice_attribute as A;
        let major = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).map_err(drv)?;
        let minor = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).map_err(drv)?;
        let programmatic_launch = std::env::var_os("TILEC_PDL").is_none_or(|v| v != "0");
        let driver_jit = std::env::var_os("TILEC_DRIVER_JIT").is_some_and(|v| v == "1");
        Ok(Device {
            ctx,
            stream,
            name,
            cc: (major, minor),
            programmatic_launch,
            last_writes: Default::default(),
            driver_jit,
        })
    }

    /// The tilec target of this device, if it is one tilec compiles for.
    pub fn target(&self) -> Result<&'static Arch, RuntimeError> {
        let (major, minor) = self.cc;
        let cc = (u32::try_from(major).unwrap_or(0), u32::try_from(minor).unwrap_or(0));
        tilec_core::target::from_compute_capability(cc.0, cc.1).ok_or_else(|| {
            let names: Vec<&str> = tilec_core::target::names().collect();
            RuntimeError::Unsupported(format!("{} is sm_{major}{minor}; tilec targets {}", self.name, names.join(", ")))
        })
    }

    /// Loads PTX (JIT-assembled by the driver for this device) and checks the signature's needs (shared memory, target) against the device.
    pub fn load(&self, ptx: &str, signature: Signature) -> Result<Kernel, RuntimeError> {
        self.load_assembled(ptx, None, signature)
    }

    /// [`Device::load`] from the cubin ptxas assembled from `ptx` for the kernel's target,
    /// where there is one: the driver then has nothing to assemble — its JIT of every module's
    /// PTX was most of a cold process's warm-up once the kernels compiled side by side
    /// (`examples/qwen2` on an H100, driver cache off: 2.7 s with the PTX, 1.2 s with the
    /// cubins; bench/results/2026-11-27-session19/qwen2-cubin/). A cubin the driver refuses
    /// (a ptxas newer than the driver, say) is passed over for the PTX.
    pub fn load_assembled(
        &self,
        ptx: &str,
        cubin: Option<&[u8]>,
        signature: Signature,
    ) -> Result<Kernel, RuntimeError> {
        let target = self.target()?;
        if signature.target != target.name {
            return Err(RuntimeError::Unsupported(format!(
                "kernel `{}` was compiled for {}; {} is {}",
                signature.name, signature.target, self.name, target.name
            )));
        }
        use cudarc::driver::sys::CUdevice_attribute as A;
        let smem = self.ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).map_err(drv)?;
        // A block's shared memory: the static declaration (kernels under the static limit) and
        // the dynamic part.
        let static_part =
            if signature.shared_bytes > tilec_core::target::STATIC_SMEM_LIMIT { 0 } else { signature.shared_bytes };
        let total = u64::from(static_part) + u64::from(signature.dynamic_shared_bytes());
        if total > u64::try_from(smem).unwrap_or(0) {
            return Err(RuntimeError::Unsupported(format!(
                "kernel `{}` needs {total} bytes of shared memory; {} gives a block at most {smem}",
                signature.name, self.name
            )));
        }
        let cubin = cubin.filter(|_| !self.driver_jit);
        let assembled = cubin.and_then(|c| self.ctx.load_module(cudarc::nvrtc::Ptx::from_binary(c.to_vec())).ok());
        let module = match assembled {
            Some(m) => m,
            None => self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(drv)?,
        };
        let func = module.load_function(&signature.name).map_err(drv)?;
        let dynamic = signature.dynamic_shared_bytes();
        if dynamic > 0 && total > u64::from(tilec_core::target::STATIC_SMEM_LIMIT) {
            // A block past 48 KiB (its static and dynamic parts together) needs the function's
            // opt-in to that much dynamic shared memory.
            use cudarc::driver::sys::CUfunction_attribute as F;
            let bytes = i32::try_from(dynamic)
                .map_err(|_| RuntimeError::Unsupported(format!("{dynamic} bytes of shared memory")))?;
            func.set_attribute(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes).map_err(drv)?;
        }
        let mut k = Kernel { func, signature, resident_blocks: None };
        if k.signature.persistent {
            let per_sm = self.occupancy(&k)?;
            let sms = self.ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(drv)?;
            if per_sm == 0 {
                return Err(RuntimeError::Unsupported(format!(
                    "kernel `{}` cannot run one block on an SM of {} (registers, shared memory or threads)",
                    k.signature.name, self.name
                )));
            }
            k.resident_blocks = Some(per_sm.saturating_mul(u32::try_from(sms).unwrap_or(1).max(1)));
        }
        Ok(k)
    }

    /// Copies a host tensor to a new device buffer.
    pub fn upload(&self, t: &HostTensor) -> Result<DeviceTensor, RuntimeError> {
        let buf = if t.data.is_empty() { self.stream.alloc_zeros::<u8>(16) } else { self.stream.clone_htod(&t.data) }
            .map_err(drv)?;
        Ok(DeviceTensor { buf, dtype: t.dtype, shape: t.shape.clone(), strides: t.strides.clone() })
    }

    /// A contiguous tensor of `shape` from raw little-endian element bytes (a memory-mapped
    /// weights file, without an intermediate copy).
    pub fn upload_bytes(&self, dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<DeviceTensor, RuntimeError> {
        if tensor_bytes(dtype, shape) != Some(bytes.len()) {
            return Err(RuntimeError::BadView(format!(
                "{} bytes for a {dtype} tensor of shape {shape:?}",
                bytes.len()
            )));
        }
        let buf = if bytes.is_empty() { self.stream.alloc_zeros::<u8>(16) } else { self.stream.clone_htod(bytes) }
            .map_err(drv)?;
        Ok(DeviceTensor { buf, dtype, shape: shape.to_vec(), strides: host::contiguous_strides(shape) })
    }

    /// A contiguous tensor of zeros.
    pub fn zeros(&self, dtype: DType, shape: &[i64]) -> Result<DeviceTensor, RuntimeError> {
        let bytes = tensor_bytes(dtype, shape)
            .ok_or_else(|| RuntimeError::BadView(format!("a {dtype} tensor of shape {shape:?}")))?;
        let buf = self.stream.alloc_zeros::<u8>(bytes.max(16)).map_err(drv)?;
        Ok(DeviceTensor { buf, dtype, shape: shape.to_vec(), strides: host::contiguous_strides(shape) })
    }

    /// Copies a device tensor back to the host (waits for the stream).
    pub fn download(&self, t: &DeviceTensor) -> Result<HostTensor, RuntimeError> {
        let data = self.stream.clone_dtoh(&t.buf).map_err(drv)?;
        Ok(HostTensor { dtype: t.dtype, shape: t.shape.clone(), strides: t.strides.clone(), data })
    }

    /// The descriptor the validator reads for a whole tensor.
    pub fn desc(&self, t: &DeviceTensor) -> TensorDesc {
        let (addr, _sync) = t.buf.device_ptr(&self.stream);
        TensorDesc {
            dtype: t.dtype,
            shape: t.shape.clone(),
            strides: t.strides.clone(),
            addr,
            len_bytes: t.buf.len() as u64,
        }
    }

    /// A view as the validator sees it: the base address moved by the view's offset.
    pub fn view_desc(&self, v: &TensorView<'_>) -> TensorDesc {
        let base = self.desc(v.base);
        let skip = v.offset as u64 * u64::from(v.dtype.bytes());
        TensorDesc {
            dtype: v.dtype,
            shape: v.shape.clone(),
            strides: v.strides.clone(),
            addr: base.addr + skip,
            len_bytes: base.len_bytes.saturating_sub(skip),
        }
    }

    /// Blocks of `k` that fit one SM at once, by the driver's occupancy calculator (registers,
    /// shared memory, threads); `Ok(0)` means the kernel cannot launch on this device.
    pub fn occupancy(&self, k: &Kernel) -> Result<u32, RuntimeError> {
        let sig = &k.signature;
        let dynamic = sig.dynamic_shared_bytes();
        k.func.occupancy_max_active_blocks_per_multiprocessor(sig.block_threads, dynamic as usize, None).map_err(drv)
    }

    /// Validates and launches (asynchronously on the device's stream).
    pub fn launch(&self, k: &Kernel, args: &[ArgDesc]) -> Result<(), RuntimeError> {
        let plan = validate(&k.signature, args, None)?;
        self.launch_plan(k, &plan)
    }

    /// Launches an already validated plan on the device's stream.
    pub fn launch_plan(&self, k: &Kernel, plan: &LaunchPlan) -> Result<(), RuntimeError> {
        let programmatic = self.programmatic_after(self.stream.cu_stream(), plan);
        launch_on(&self.stream, k, plan, programmatic)
    }

    /// Whether a launch of `plan` on `stream` goes with programmatic stream serialization:
    /// when the device is asked to ([`Device::programmatic_launch`]) and the launch before it
    /// on that stream wrote nothing it reads before its wait. Records what `plan` writes for
    /// the next launch.
    fn programmatic_after(&self, stream: RawStream, plan: &LaunchPlan) -> bool {
        if plan.empty {
            return false;
        }
        let mut last = self.last_writes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = last.insert(stream as usize, plan.writes.clone()).unwrap_or_default();
        self.programmatic_launch && plan.may_follow_early(&before)
    }

    /// Validates and launches on a stream another library made in this device's context (a
    /// PyTorch stream), so that the kernel is ordered with that library's work on it.
    ///
    /// # Safety
    /// `stream` is null (the legacy default stream) or a live stream of this device's
    /// context ([`Device::ctx`], the device's primary context), alive until the call returns.
    pub unsafe fn launch_on_stream(&self, k: &Kernel, args: &[ArgDesc], stream: RawStream) -> Result<(), RuntimeError> {
        let plan = validate(&k.signature, args, None)?;
        // Another library's kernel before this one on that stream may have written what this
        // one reads early: programmatic only for a kernel that reads nothing before its wait.
        let programmatic = self.programmatic_after(stream, &plan) && plan.early_reads.is_empty();
        // SAFETY: the caller's contract.
        unsafe { launch_raw(&self.ctx, stream, k, &plan, programmatic) }
    }

    /// Starts capturing launches into a CUDA graph (see [`graph`]).
    pub fn begin_capture(&self) -> Result<graph::Capture, RuntimeError> {
        graph::Capture::begin(&self.stream, self.programmatic_launch)
    }

    /// Waits for everything queued on the device's stream.
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        self.stream.synchronize().map_err(drv)
    }

    /// Times `f` with CUDA events: `warmup` untimed runs, then `reps` timed runs, each after
    /// `before` (e.g. an L2 flush) which is outside the timed region. Milliseconds per run.
    pub fn time(
        &self,
        warmup: usize,
        reps: usize,
        mut before: impl FnMut() -> Result<(), RuntimeError>,
        mut f: impl FnMut() -> Result<(), RuntimeError>,
    ) -> Result<Vec<f64>, RuntimeError> {
        for _ in 0..warmup {
            before()?;
            f()?;
        }
        self.synchronize()?;
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let mut out = vec![];
        for _ in 0..reps {
            before()?;
            let start = self.stream.record_event(flags).map_err(drv)?;
            f()?;
            let end = self.stream.record_event(flags).map_err(drv)?;
            out.push(f64::from(start.elapsed_ms(&end).map_err(drv)?));
        }
        Ok(out)
    }

    /// A scratch buffer to evict L2 between timed runs.
    pub fn l2_flusher(&self, bytes: usize) -> Result<CudaSlice<u8>, RuntimeError> {
        self.stream.alloc_zeros::<u8>(bytes).map_err(drv)
    }

    /// Zeroes the L2-flushing scratch buffer (between timed runs).
    pub fn flush(&self, scratch: &mut CudaSlice<u8>) -> Result<(), RuntimeError> {
        self.stream.memset_zeros(scratch).map_err(drv)
    }

    /// Device-to-device copy bandwidth (GB/s, read + write bytes), the memory ceiling.
    pub fn copy_bandwidth(&self, bytes: usize) -> Result<f64, RuntimeError> {
        let src = self.stream.alloc_zeros::<u8>(bytes).map_err(drv)?;
        let mut dst = self.stream.alloc_zeros::<u8>(bytes).map_err(drv)?;
        let times = self.time(5, 50, || Ok(()), || self.stream.memcpy_dtod(&src, &mut dst).map_err(drv))?;
        let med = median(&times);
        Ok(2.0 * bytes as f64 / (med * 1e-3) / 1e9)
    }
}

/// The grid of CTAs a launch of `k` by `plan` runs: a persistent kernel walks its tiles on
/// the blocks the device holds at once; a block of a CTA-pair kernel is `cluster` CTAs along x
/// (the PTX's `.reqnctapercluster` groups them; the validated grid keeps the product in range).
fn launch_grid(k: &Kernel, plan: &LaunchPlan) -> [u32; 3] {
    let c = k.signature.cluster.max(1);
    let x = match k.resident_blocks {
        Some(r) if k.signature.persistent => plan.grid[0].min(r / c).max(1),
        _ => plan.grid[0],
    };
    [x.saturating_mul(c), plan.grid[1], plan.grid[2]]
}

/// A plan's parameter values, each in its own slot, tensor maps encoded: what the driver
/// copies from when a kernel is launched or a graph's kernel node is given new parameters.
enum ParamValue {
    U64(u64),
    I64(i64),
    I32(i32),
    F32(f32),
    Map(TensorMap),
}

impl ParamValue {
    fn of(plan: &LaunchPlan) -> Result<Vec<ParamValue>, RuntimeError> {
        plan.words
            .iter()
            .map(|w| {
                Ok(match w {
                    Word::U64(v) => ParamValue::U64(*v),
                    Word::I64(v) => ParamValue::I64(*v),
                    Word::I32(v) => ParamValue::I32(*v),
                    Word::F32(v) => ParamValue::F32(*v),
                    Word::TensorMap(r) => ParamValue::Map(r.encode()?),
                })
            })
            .collect()
    }

    /// A pointer to the value, as `cuLaunchKernel`'s `kernelParams` holds it (valid while
    /// `self` is neither moved nor dropped).
    fn ptr(&mut self) -> *mut std::ffi::c_void {
        match self {
            ParamValue::U64(v) => (v as *mut u64).cast(),
            ParamValue::I64(v) => (v as *mut i64).cast(),
            ParamValue::I32(v) => (v as *mut i32).cast(),
            ParamValue::F32(v) => (v as *mut f32).cast(),
            ParamValue::Map(m) => (m as *mut TensorMap).cast(),
        }
    }
}

/// Launches `k` by a validated `plan` on `stream` (which may be capturing a graph). With
/// `programmatic` (the caller checked [`LaunchPlan::may_follow_early`]), a kernel that waits
/// for the grid before it ([`Signature::grid_dependency`]) is launched with programmatic
/// stream serialization: it may start launching while that grid finishes (in a captured
/// graph, a programmatic edge).
fn launch_on(stream: &Arc<CudaStream>, k: &Kernel, plan: &LaunchPlan, programmatic: bool) -> Result<(), RuntimeError> {
    // SAFETY: a stream cudarc made in its own context, alive while `stream` is.
    unsafe { launch_raw(stream.context(), stream.cu_stream(), k, plan, programmatic) }
}

/// [`launch_on`] on a raw stream handle of `ctx`.
///
/// # Safety
/// `hstream` is null (the legacy default stream) or a stream of `ctx` that stays alive until
/// the call returns.
unsafe fn launch_raw(
    ctx: &Arc<CudaContext>,
    hstream: RawStream,
    k: &Kernel,
    plan: &LaunchPlan,
    programmatic: bool,
) -> Result<(), RuntimeError> {
    use cudarc::driver::sys;
    if plan.empty {
        return Ok(());
    }
    let [x, y, z] = launch_grid(k, plan);
    let mut values = ParamValue::of(plan)?;
    let mut ptrs: Vec<*mut std::ffi::c_void> = values.iter_mut().map(ParamValue::ptr).collect();
    // SAFETY: a plain C union of integers; zero is a valid value of each member.
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attrs = [sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    }];
    let cfg = sys::CUlaunchConfig {
        gridDimX: x,
        gridDimY: y,
        gridDimZ: z,
        blockDimX: plan.block,
        blockDimY: 1,
        blockDimZ: 1,
        // Kernels over the static limit declare their shared memory dynamic; an emulating
        // kernel's padding is dynamic too.
        sharedMemBytes: plan.dynamic_shared_bytes,
        hStream: hstream,
        attrs: attrs.as_mut_ptr(),
        numAttrs: u32::from(programmatic && k.signature.grid_dependency),
    };
    ctx.bind_to_thread().map_err(drv)?;
    // SAFETY: `validate` checked every argument against the kernel's ABI: the values are in
    // ABI order with ABI types, and every tensor's addressed range is in its buffer; the
    // function is alive (`k` owns its module); the driver copies the values before returning.
    // Programmatic serialization only where the kernel waits for the grid before it.
    unsafe { sys::cuLaunchKernelEx(&cfg, k.func.cu_function(), ptrs.as_mut_ptr(), std::ptr::null_mut()) }
        .result()
        .map_err(drv)
}

/// The median of `v` (the upper of the two middle values for an even count; NaN for none).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        return f64::NAN;
    }
    s[s.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_core::abi::{Access, Extent, HostExpr};

    fn sig() -> Signature {
        Signature {
            name: "softmax".into(),
            target: "sm_90a".into(),
            params: vec![
                ParamSig::Tensor {
                    name: "x".into(),
                    dtype: DType::F16,
                    rank: 2,
                    aligned16: true,
                    access: Access::Read,
                    extents: vec![Extent::Named("M".into()), Extent::Named("N".into())],
                    independent: false,
                },
                ParamSig::Tensor {
                    name: "y".into(),
                    dtype: DType::F16,
                    rank: 2,
                    aligned16: true,
                    access: Access::Write,
                    extents: vec![Extent::Named("M".into()), Extent::Named("N".into())],
                    independent: false,
                },
            ],
            grid: vec![
                HostExpr::CeilDiv(Box::new(HostExpr::Dim { param: 0, axis: 0 }), Box::new(HostExpr::Int(4))),
                HostExpr::Int(1),
                HostExpr::Int(1),
            ],
            block_threads: 128,
            shared_bytes: 0,
            constants: Default::default(),
            tma: vec![],
            requires: vec![],
            persistent: false,
            grid_dependency: false,
            shared_pad: 0,
            cluster: 1,
        }
    }

    fn t(shape: Vec<i64>, addr: u64) -> ArgDesc {
        let strides = vec![shape[1], 1];
        let len = (shape[0] * shape[1] * 2) as u64;
        ArgDesc::Tensor(TensorDesc { dtype: DType::F16, shape, strides, addr, len_bytes: len })
    }

    #[test]
    fn valid_launch_has_grid_and_words() {
        let p = validate(&sig(), &[t(vec![10, 64], 256), t(vec![10, 64], 4096)], None).unwrap();
        assert_eq!(p.grid, [3, 1, 1]);
        assert_eq!(p.words.len(), 10);
        assert_eq!(p.words[0], Word::U64(256));
    }

    #[test]
    fn a_launch_reads_early_only_what_the_launch_before_did_not_write() {
        // x (read before the wait) at 256..1536, y (written) at 4096..5376.
        let mut s = sig();
        if let ParamSig::Tensor { independent, .. } = &mut s.params[0] {
            *independent = true;
        }
        let p = validate(&s, &[t(vec![10, 64], 256), t(vec![10, 64], 4096)], None).unwrap();
        assert_eq!(p.early_reads, vec![(256, 256 + 1280)]);
        assert_eq!(p.writes, vec![(4096, 4096 + 1280)]);
        // After a launch that wrote y: may overlap its end; after one that wrote any byte of
        // x: must not; adjacent ranges do not overlap.
        assert!(p.may_follow_early(&p.writes));
        assert!(!p.may_follow_early(&[(1535, 1536)]));
        assert!(!p.may_follow_early(&[(0, 257)]));
        assert!(p.may_follow_early(&[(0, 256), (1536, 4096)]));
        // A kernel that reads nothing before its wait follows anything.
        let plain = validate(&sig(), &[t(vec![10, 64], 256), t(vec![10, 64], 4096)], None).unwrap();
        assert!(plain.early_reads.is_empty() && plain.may_follow_early(&[(0, u128::MAX)]));
    }

    #[test]
    fn a_graph_node_takes_new_addresses_but_not_a_new_grid() {
        // Another buffer of the same shape: the captured node can take it.
        let old = validate(&sig(), &[t(vec![10, 64], 256), t(vec![10, 64], 4096)], None).unwrap();
        let moved = validate(&sig(), &[t(vec![10, 64], 8192), t(vec![10, 64], 1 << 20)], None).unwrap();
        assert_ne!(old.words, moved.words);
        graph::same_launch(3, "k", &old, &moved).unwrap();
        // More rows need more blocks: refused, naming the launch and both grids.
        let more = validate(&sig(), &[t(vec![20, 64], 256), t(vec![20, 64], 4096)], None).unwrap();
        let e = graph::same_launch(3, "k", &old, &more).unwrap_err().to_string();
        assert!(e.contains("launch 3 (`k`)") && e.contains("grid [3, 1, 1]") && e.contains("grid [5, 1, 1]"), "{e}");
        // An empty tensor launches nothing: not the same launch either.
        let empty = validate(&sig(), &[t(vec![0, 64], 256), t(vec![0, 64], 4096)], None).unwrap();
        assert!(graph::same_launch(0, "k", &old, &empty).unwrap_err().to_string().contains("empty grid"));
    }

    #[test]
    fn a_launch_that_breaks_a_requirement_is_refused() {
        use tilec_core::abi::Requirement;
        use tilec_core::tir::CmpPred;
        let mut s = sig();
        s.requires = vec![Requirement {
            text: "N <= BLOCK_N".into(),
            line: 15,
            cond: HostExpr::Cmp(
                CmpPred::Le,
                Box::new(HostExpr::Dim { param: 0, axis: 1 }),
                Box::new(HostExpr::Int(64)),
            ),
        }];
        assert!(validate(&s, &[t(vec![10, 64], 256), t(vec![10, 64], 4096)], None).is_ok());
        let e = validate(&s, &[t(vec![10, 72], 256), t(vec![10, 72], 4096)], None).unwrap_err();
        assert!(matches!(e, RuntimeError::Requirement(_)), "{e:?}");
        assert!(
            e.to_string().contains("requires `N <= BLOCK_N` (line 15") && e.to_string().contains("72 <= 64"),
            "{e}"
        );
    }

    #[test]
    fn tensor_maps_follow_the_arguments_innermost_first() {
        // x's tensor map: a 64-column box of 128-byte swizzle over 128 rows.
        let mut s = sig();
        s.tma = vec![tilec_core::abi::TmaParam { param: 0, box_dims: vec![64, 128], swizzle: 128 }];
        let p = validate(&s, &[t(vec![1000, 512], 4096), t(vec![1000, 512], 1 << 20)], None).unwrap();
        assert_eq!(p.words.len(), 11);
        let Word::TensorMap(m) = p.words[10] else { panic!("{:?}", p.words[10]) };
        assert_eq!((m.rank, m.addr, m.swizzle), (2, 4096, 128));
        assert_eq!(m.dims[..2], [512, 1000]);
        assert_eq!(m.strides[..1], [1024]);
        assert_eq!(m.box_dims[..2], [64, 128]);
        // Refused with the reason: a misaligned base, a row that is not 16-byte multiples, a
        // box wider than the swizzle.
        let e = validate(&s, &[t(vec![10, 64], 4104), t(vec![10, 64], 1 << 20)], None).unwrap_err();
        assert!(e.to_string().contains("16-byte"), "{e}");
        let x = TensorDesc { dtype: DType::F16, shape: vec![10, 64], strides: vec![64, 1], addr: 0, len_bytes: 1280 };
        assert!(TensorMapRequest::new(&x, &[128, 16], 128).unwrap_err().contains("swizzle"));
        let y = TensorDesc { strides: vec![12, 1], ..x.clone() };
        assert!(TensorMapRequest::new(&y, &[64, 16], 128).unwrap_err().contains("16 bytes"));
        assert!(TensorMapRequest::new(&x, &[64], 128).is_err());
    }

    /// A tensor with an extent of 0 has no tensor map; a launch over an empty grid (which runs
    /// nothing) does not ask for one, a launch that runs blocks says why it cannot.
    #[test]
    fn an_empty_launch_encodes_no_tensor_map() {
        let mut s = sig();
        s.tma = vec![tilec_core::abi::TmaParam { param: 0, box_dims: vec![64, 128], swizzle: 128 }];
        let args = [t(vec![0, 512], 4096), t(vec![0, 512], 1 << 20)];
        let p = validate(&s, &args, Some([0, 1, 1])).unwrap();
        assert!(p.empty && !p.words.iter().any(|w| matches!(w, Word::TensorMap(_))));
        let e = validate(&s, &args, Some([1, 1, 1])).unwrap_err();
        assert!(e.to_string().contains("1 to 2^32 - 1"), "{e}");
    }

    #[test]
    fn a_persistent_kernel_takes_its_tile_count_before_the_tensor_maps() {
        let mut s = sig();
        s.persistent = true;
        s.tma = vec![tilec_core::abi::TmaParam { param: 0, box_dims: vec![64, 128], swizzle: 128 }];
        let p = validate(&s, &[t(vec![1000, 512], 4096), t(vec![1000, 512], 1 << 20)], None).unwrap();
        // The grid stays the tiles' (the launch clamps it to the resident blocks).
        assert_eq!(p.grid, [250, 1, 1]);
        assert_eq!(p.words.len(), 12);
        assert_eq!(p.words[10], Word::I32(250));
        assert!(matches!(p.words[11], Word::TensorMap(_)));
        // An explicit grid is the tile count too.
        let p = validate(&s, &[t(vec![1000, 512], 4096), t(vec![1000, 512], 1 << 20)], Some([7, 1, 1])).unwrap();
        assert_eq!(p.words[10], Word::I32(7));
    }

    #[test]
    fn rejects_wrong_dtype_rank_count_and_alignment() {
        let mut bad = t(vec![10, 64], 256);
        if let ArgDesc::Tensor(x) = &mut bad {
            x.dtype = DType::F32;
        }
        assert!(matches!(
            validate(&sig(), &[bad, t(vec![10, 64], 0)], None),
            Err(RuntimeError::BadArgument { index: 0, .. })
        ));
        assert!(matches!(validate(&sig(), &[t(vec![10, 64], 0)], None), Err(RuntimeError::ArgCount { .. })));
        // 33 f16 columns: rows are not 16-byte multiples.
        let e = validate(&sig(), &[t(vec![10, 33], 0), t(vec![10, 33], 0)], None).unwrap_err();
        assert!(e.to_string().contains("16-byte"), "{e}");
        assert!(matches!(
            validate(&sig(), &[ArgDesc::I32(3), t(vec![1, 64], 0)], None),
            Err(RuntimeError::BadArgument { index: 0, .. })
        ));
    }

    #[test]
    fn huge_extents_and_strides_are_refused_without_overflow() {
        // Found by `tilec fuzz --target launch` (seed 1, input 2044): the 16-byte check
        // multiplied an extent of 2^62 by the element size in i64.
        let x = ArgDesc::Tensor(TensorDesc {
            dtype: DType::F16,
            shape: vec![2, 1 << 62],
            strides: vec![i64::MAX, 1],
            addr: 1 << 20,
            len_bytes: (1 << 62) - 1,
        });
        let e = validate(&sig(), &[x, t(vec![2, 64], 1 << 40)], None).unwrap_err();
        assert!(matches!(e, RuntimeError::BadArgument { index: 0, .. }), "{e}");
    }

    #[test]
    fn rejects_buffer_too_small() {
        let a = ArgDesc::Tensor(TensorDesc {
            dtype: DType::F16,
            shape: vec![10, 64],
            strides: vec![64, 1],
            addr: 0,
            len_bytes: 100,
        });
        let e = validate(&sig(), &[a, t(vec![10, 64], 0)], None).unwrap_err();
        assert!(e.to_string().contains("addresses"), "{e}");
    }

    #[test]
    fn rejects_aliasing_outputs_zero_strides_misalignment_and_bad_grids() {
        // y overlaps x.
        let e = validate(&sig(), &[t(vec![10, 64], 256), t(vec![10, 64], 256 + 128)], None).unwrap_err();
        assert!(e.to_string().contains("overlaps argument 0"), "{e}");
        // Adjacent buffers do not overlap.
        validate(&sig(), &[t(vec![10, 64], 0), t(vec![10, 64], 1280)], None).unwrap();
        // A written tensor with a zero stride writes one element from several places.
        let mut y = t(vec![10, 64], 4096);
        if let ArgDesc::Tensor(x) = &mut y {
            x.strides = vec![0, 1];
        }
        let e = validate(&sig(), &[t(vec![10, 64], 0), y], None).unwrap_err();
        assert!(e.to_string().contains("stride of 0"), "{e}");
        let e = validate(&sig(), &[t(vec![10, 64], 1), t(vec![10, 64], 4096)], None).unwrap_err();
        assert!(e.to_string().contains("not aligned to its 2-byte elements"), "{e}");
        let e = validate(&sig(), &[t(vec![10, 64], 0), t(vec![10, 64], 4096)], Some([1, 70000, 1])).unwrap_err();
        assert!(e.to_string().contains("grid dimension 1 is 70000"), "{e}");
        // x and y are both declared [M, N]: a y of other rows is refused.
        let e = validate(&sig(), &[t(vec![10, 64], 0), t(vec![12, 64], 4096)], None).unwrap_err();
        assert!(e.to_string().contains("names it `M`, which is 10 in `x`"), "{e}");
    }

    #[test]
    fn interleaved_views_of_one_buffer_are_disjoint_and_shifted_ones_are_not() {
        // One [10, 128] f16 buffer: x = its columns 0..64, y = its columns 64..128.
        let view = |addr: u64| {
            ArgDesc::Tensor(TensorDesc {
                dtype: DType::F16,
                shape: vec![10, 64],
                strides: vec![128, 1],
                addr,
                len_bytes: 10 * 256,
            })
        };
        validate(&sig(), &[view(4096), view(4096 + 128)], None).unwrap();
        // Shifted by 32 columns, y's window meets x's.
        let e = validate(&sig(), &[view(4096), view(4096 + 64)], None).unwrap_err();
        assert!(e.to_string().contains("overlaps argument 0"), "{e}");
        let d = |shape: Vec<i64>, strides: Vec<i64>, addr: u64| TensorDesc {
            dtype: DType::F16,
            shape,
            strides,
            addr,
            len_bytes: 1 << 30,
        };
        // The Q heads [B, S, 28, 128] and K heads [B, S, 4, 128] of a fused [B·S, 4608] QKV.
        let q = d(vec![2, 5, 28, 128], vec![5 * 4608, 4608, 128, 1], 0);
        let k = d(vec![2, 5, 4, 128], vec![5 * 4608, 4608, 128, 1], 2 * 3584);
        assert!(interleaved_disjoint(&q, &k) && interleaved_disjoint(&k, &q));
        // The same in a buffer whose address is no multiple of the period (9216 bytes), and
        // with one position (an extent of 1 whose stride is no period).
        let base = 0x7f00_0000_0200;
        let q1 = d(vec![2, 1, 28, 128], vec![4608, 4608, 128, 1], base);
        let k1 = d(vec![2, 1, 4, 128], vec![4608, 4608, 128, 1], base + 2 * 3584);
        assert!(base % 9216 != 0 && interleaved_disjoint(&q1, &k1) && interleaved_disjoint(&k1, &q1));
        // K heads reaching one head into the V heads' columns still do not meet Q.
        let kv = d(vec![2, 5, 5, 128], vec![5 * 4608, 4608, 128, 1], 2 * 3584);
        assert!(interleaved_disjoint(&q, &kv));
        // One head more and they would.
        let q29 = d(vec![2, 5, 29, 128], vec![5 * 4608, 4608, 128, 1], 0);
        assert!(!interleaved_disjoint(&q29, &k));
        // A transposed view of columns Q owns overlaps; of columns past Q it does not.
        let t = d(vec![128, 10], vec![1, 4608], 2 * 128);
        assert!(!interleaved_disjoint(&q, &t));
        let t = d(vec![128, 10], vec![1, 4608], 2 * 3584);
        assert!(interleaved_disjoint(&q, &t));
    }

    #[test]
    fn views_stay_inside_their_buffer() {
        // 10 rows of 128 f16 (2560 bytes): the columns 64..128 of every row fit.
        check_view(2560, DType::F16, 64, &[10, 64], &[128, 1]).unwrap();
        let e = check_view(2560, DType::F16, 65, &[10, 64], &[128, 1]).unwrap_err();
        assert!(e.contains("past the buffer's 2560 bytes"), "{e}");
        assert!(check_view(2560, DType::F16, 0, &[10], &[128, 1]).unwrap_err().contains("rank"));
        assert!(check_view(2560, DType::F16, -1, &[1], &[1]).unwrap_err().contains("negative"));
        assert!(check_view(2560, DType::F16, 0, &[2, 2], &[-1, 1]).unwrap_err().contains("negative"));
        // Empty views address nothing; huge ones are refused without overflow.
        check_view(0, DType::F16, 1 << 40, &[0, 5], &[1, 1]).unwrap();
        let e = check_view(2560, DType::F64, i64::MAX, &[i64::MAX, i64::MAX], &[i64::MAX, i64::MAX]).unwrap_err();
        assert!(e.contains("past the buffer"), "{e}");
    }

    #[test]
    fn empty_tensor_is_an_empty_launch() {
        let p = validate(&sig(), &[t(vec![0, 64], 0), t(vec![0, 64], 0)], None).unwrap();
        assert!(p.empty);
    }

    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        // On machines without a GPU this must be NoDriver; with one it opens.
        match Device::open(0) {
            Ok(_) => {}
            Err(e) => assert!(matches!(e, RuntimeError::NoDriver(_) | RuntimeError::Driver(_)), "{e}"),
        }
    }
}
