//! The specs, one file per kernel family.

mod compute;
mod decoder;
mod lang;
mod lowp;
mod membound;

use crate::Spec;
pub use lang::sorted_positions;

/// Every spec: the memory-bound kernels (which lower today) first.
pub(crate) static ALL: [&Spec; 60] = [
    &membound::SOFTMAX,
    &membound::SOFTMAX_ONLINE,
    &membound::SILU_MUL,
    &membound::SWIGLU,
    &membound::RMSNORM,
    &membound::RMSNORM_PERSISTENT,
    &membound::ROPE,
    &membound::DROPOUT_SPEC,
    &membound::TRANSPOSE,
    &membound::EMBEDDING,
    &membound::GELU,
    &membound::ROPE_TABLE,
    &membound::ROW_MAX,
    &lang::ARGMAX,
    &decoder::BIAS_ADD,
    &decoder::RESIDUAL_ADD,
    &decoder::KV_APPEND,
    &decoder::ACC_BIAS,
    &decoder::ACC_RESIDUAL,
    &decoder::ACC_SWIGLU,
    &decoder::ACC_RESIDUAL_RMSNORM,
    &decoder::ROPE_KV_APPEND,
    &decoder::ACC_BIAS_ROPE_KV_APPEND,
    &lang::BITS,
    &lang::INTS,
    &lang::MATH,
    &lang::MASKED,
    &lang::ATOMICS,
    &lang::HISTOGRAM,
    &lang::SLICES,
    &lang::SORT,
    &lang::TOPK_PARTIAL,
    &lang::TOPK_MERGE,
    &lang::OFFSETS,
    &lang::SCAN,
    &lang::DTYPES,
    &compute::MATMUL,
    &lowp::MATMUL_FP8,
    &lowp::MATMUL_FP8_ROWWISE,
    &lowp::MATMUL_FP8_BLOCKWISE,
    &lowp::FMHA_FP8,
    &lowp::MLA_FP8,
    &lowp::QUANT_ROWWISE,
    &lowp::QUANT_BLOCKWISE,
    &lowp::QUANT_BLOCK2D,
    &decoder::MATMUL_SPLITK,
    &decoder::MATMUL_SWIGLU,
    &compute::BMM,
    &compute::GROUP_GEMM,
    &compute::FMHA,
    &compute::FMHA_STEPS[0],
    &compute::FMHA_STEPS[1],
    &compute::FMHA_STEPS[2],
    &compute::FMHA_STEPS[3],
    &compute::FMHA_STEPS[4],
    &compute::FMHA_STEPS[5],
    &compute::MLA,
    &compute::MLA_DECODE,
    &compute::DECODE_GROUPED,
    &compute::PAGED_DECODE,
];
