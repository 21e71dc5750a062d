//! The decoder on tilec kernels: Multi-head Latent Attention as it is served and the
//! DeepSeekMoE layer, every GPU operation a kernel of the library (`kernels/*.tile`) launched
//! through the JIT (the only other device operations are the uploads of the weights and
//! tables and the downloads of tokens, logits and the experts' offsets).
//!
//! Attention. The cache is the latent one: a row per token of the compressed K/V (512, after
//! its RMSNorm) and the rotary key (64, shared by the heads) — 1152 bytes a token a layer.
//! The prefill decompresses K and V (`kv_b_proj`) and runs `mla` (the rotary key shared);
//! a decode step absorbs `W_UK` into the query (q_lat = q_nope · W_UK, a `bmm` over the heads)
//! and `W_UV` into the output (o = out_lat · W_UVᵀ), so that `mla_decode` reads the latent
//! cache alone. transformers rotates interleaved pairs (a complex multiply); the library's
//! RoPE rotates halves: the rotary rows of `q_proj` and `kv_a_proj_with_mqa` are permuted at
//! load (even dims first, then odd), which makes the two the same rotation and leaves every
//! Q·K product unchanged (both sides permuted alike).
//!
//! Mixture of experts. The router's logits in f32 (`matmul_splitk`: f16 products summed in
//! f32, as transformers' f32 linear of the f16 activations), `moe_route` (softmax, top 6,
//! clearing the accumulator), `moe_align` and `moe_permute` (the tokens' rows in expert
//! order, each expert's padded to the grouped GEMM's tile), `group_gemm_aligned` for gate/up
//! and down over all 64 experts in one launch each (no block for an expert without tokens),
//! `silu_mul` between, the shared experts as one FFN, and `moe_combine` (the 6 rows back,
//! weighted, plus the shared experts' output).

use crate::config::Config;
use crate::launch::{pow2, spec, untyped, File, Launcher, Tokens};
use crate::Res;
use tilec::jit::{Arg, Jit, KernelSpec};
use tilec::runtime::{DeviceTensor, HostTensor, TensorView};
use tilec::{ConstArg, DType};

/// The grouped GEMMs' M tile (and so the experts' padding) in a decode step and a prefill:
/// 16 rows where experts get 1–2 tokens, 64 where they get hundreds
/// (bench/results/2026-11-26-h100-moe-dispatch/).
const DECODE_TILE_M: i64 = 16;
const PREFILL_TILE_M: i64 = 64;
/// mla_decode's workspace slots (at least twice the SMs of every target: 2 × 148).
const MLA_SLOTS: i64 = 296;
/// mla_decode's split count and combine groups (its defaults: SPLITS 64, GROUP 8).
const MLA_COUNTERS: i64 = 1 + 64 / 8;
/// moe_align's and moe_permute's tokens a block.
const ROUTE_ROWS: i64 = 16;

/// The library kernels the decoder launches, with their constants.
pub struct Kernels {
    norm: KernelSpec,
    kv_norm: KernelSpec,
    matmul: KernelSpec,
    /// A decode step's skinny products: split-K into an f32 accumulator (SPLIT 4 and 8), its
    /// epilogues (to T, or plus the residual stream), and gate/up with SwiGLU in one launch.
    splitk: [KernelSpec; 2],
    acc_bias: KernelSpec,
    acc_residual: KernelSpec,
    /// The gate/up products (`--prefetch` sets their depth).
    pub matmul_swiglu: KernelSpec,
    router: KernelSpec,
    silu_mul: KernelSpec,
    residual_add: KernelSpec,
    rope: KernelSpec,
    append_latent: KernelSpec,
    mla: KernelSpec,
    mla_decode: KernelSpec,
    bmm: KernelSpec,
    route: KernelSpec,
    align: [KernelSpec; 2],
    permute: [KernelSpec; 2],
    group_gemm: [KernelSpec; 2],
    combine: KernelSpec,
    embedding: KernelSpec,
    argmax: KernelSpec,
    transpose: KernelSpec,
}

impl Kernels {
    pub fn new(c: &Config) -> Kernels {
        let int = ConstArg::Int;
        let ep = int(pow2(c.experts));
        let kp = int(pow2(c.top_k));
        let by_phase = |tile_m: i64| {
            (
                untyped(
                    kernel_source!("moe_dispatch.tile"),
                    "moe_align",
                    &[("EP", ep.clone()), ("KP", kp.clone()), ("ROWS", int(ROUTE_ROWS)), ("ALIGN", int(tile_m))],
                ),
                spec(
                    kernel_source!("moe_dispatch.tile"),
                    "moe_permute",
                    &[("KP", kp.clone()), ("ROWS", int(ROUTE_ROWS)), ("ALIGN", int(tile_m))],
                ),
                spec(
                    kernel_source!("group_gemm.tile"),
                    "group_gemm_aligned",
                    &[("TILE_M", int(tile_m)), ("GP", ep.clone())],
                ),
            )
        };
        let (da, dp, dg) = by_phase(DECODE_TILE_M);
        let (pa, pp, pg) = by_phase(PREFILL_TILE_M);
        Kernels {
            norm: spec(kernel_source!("rmsnorm.tile"), "rmsnorm", &[("BLOCK_N", int(pow2(c.hidden)))]),
            kv_norm: spec(kernel_source!("rmsnorm.tile"), "rmsnorm", &[("BLOCK_N", int(pow2(c.kv_lora)))]),
            matmul: spec(kernel_source!("matmul.tile"), "matmul", &[]),
            splitk: [4, 8].map(|n| spec(kernel_source!("matmul_splitk.tile"), "matmul_splitk", &[("SPLIT", int(n))])),
            acc_bias: spec(kernel_source!("splitk_epilogue.tile"), "acc_bias", &[]),
            acc_residual: spec(kernel_source!("splitk_epilogue.tile"), "acc_residual", &[]),
            matmul_swiglu: spec(kernel_source!("matmul_splitk.tile"), "matmul_swiglu", &[]),
            router: spec(kernel_source!("matmul_splitk.tile"), "matmul_splitk", &[("SPLIT", int(4))]),
            silu_mul: spec(kernel_source!("silu_mul.tile"), "silu_mul", &[]),
            residual_add: spec(kernel_source!("residual_add.tile"), "residual_add", &[("BLOCK_N", int(4096))]),
            rope: spec(
                kernel_source!("rope.tile"),
                "rope_kv_append",
                &[("H", int(pow2(c.heads))), ("HK", int(1)), ("HALF", int(c.rope_dim / 2))],
            ),
            append_latent: spec(kernel_source!("kv_append.tile"), "kv_append", &[("D_TILE", int(pow2(c.kv_lora)))]),
            mla: spec(
                kernel_source!("mla.tile"),
                "mla",
                &[
                    ("H", int(c.heads)),
                    ("D", int(c.nope_dim)),
                    ("DR", int(c.rope_dim)),
                    ("CAUSAL", ConstArg::Bool(true)),
                ],
            ),
            mla_decode: spec(
                kernel_source!("mla_decode.tile"),
                "mla_decode",
                &[("DC", int(c.kv_lora)), ("DR", int(c.rope_dim))],
            ),
            bmm: spec(kernel_source!("bmm.tile"), "bmm", &[]),
            route: spec(
                kernel_source!("moe_route.tile"),
                "moe_route",
                &[
                    ("T", ConstArg::DType(DType::F32)),
                    ("EP", ep.clone()),
                    ("TOPK", int(c.top_k)),
                    ("CLEAR", ConstArg::Bool(true)),
                ],
            ),
            align: [da, pa],
            permute: [dp, pp],
            group_gemm: [dg, pg],
            combine: spec(kernel_source!("moe_dispatch.tile"), "moe_combine", &[("KP", kp)]),
            embedding: spec(kernel_source!("embedding.tile"), "embedding", &[]),
            argmax: spec(kernel_source!("argmax.tile"), "argmax", &[]),
            transpose: spec(kernel_source!("transpose.tile"), "transpose", &[]),
        }
    }

    /// Every kernel the decoder launches.
    pub fn all(&self) -> Vec<&KernelSpec> {
        let mut v = vec![
            &self.norm,
            &self.kv_norm,
            &self.matmul,
            &self.acc_bias,
            &self.acc_residual,
            &self.matmul_swiglu,
            &self.router,
            &self.silu_mul,
            &self.residual_add,
            &self.rope,
            &self.append_latent,
            &self.mla,
            &self.mla_decode,
            &self.bmm,
            &self.route,
            &self.combine,
            &self.embedding,
            &self.argmax,
            &self.transpose,
        ];
        v.extend(self.align.iter().chain(&self.permute).chain(&self.group_gemm).chain(&self.splitk));
        v
    }
}

/// The feed-forward part of a layer. (One a layer: the variants' sizes do not matter.)
#[allow(clippy::large_enum_variant)]
enum Ffn {
    /// [hidden, 2 · intermediate] (gate's columns, then up's) and [intermediate, hidden].
    Dense { wgu: DeviceTensor, wd: DeviceTensor },
    Moe {
        /// The router, [hidden, experts].
        wg: DeviceTensor,
        /// Each expert's gate/up [experts, hidden, 2 · moe_intermediate] and down
        /// [experts, moe_intermediate, hidden].
        wgu: DeviceTensor,
        wd: DeviceTensor,
        /// The shared experts as one FFN: [hidden, 2 · shared] and [shared, hidden].
        sgu: DeviceTensor,
        sd: DeviceTensor,
    },
}

/// The weights of one layer, in the layouts the kernels read.
struct Layer {
    input_norm: DeviceTensor,
    post_norm: DeviceTensor,
    /// [hidden, heads · 192], each head's rotary columns permuted (even dims, then odd).
    wq: DeviceTensor,
    /// [hidden, 576]: the compressed K/V's columns, then the rotary key's (permuted).
    wkva: DeviceTensor,
    kv_norm: DeviceTensor,
    /// kv_b_proj as transformers has it, [heads · 256, 512]: each head's W_UK (128 rows) and
    /// W_UV (128 rows); a decode step reads W_UK from it.
    wkvb: DeviceTensor,
    /// Its transpose [512, heads · 256], for the prefill's decompression.
    wkvb_t: DeviceTensor,
    /// Each head's W_UVᵀ, [heads, 512, 128].
    wuv_t: DeviceTensor,
    /// [heads · 128, hidden].
    wo: DeviceTensor,
    ffn: Ffn,
}

pub struct Weights {
    /// [vocab, hidden].
    embed: DeviceTensor,
    norm: DeviceTensor,
    /// [hidden, vocab].
    lm_head: DeviceTensor,
    layers: Vec<Layer>,
    /// Bytes a decode step reads of every weight but the routed experts' (and one embedding
    /// row a sequence); and of one routed expert.
    pub fixed_bytes: f64,
    pub expert_bytes: f64,
}

/// A whole tensor as a launch argument.
fn ta(x: &DeviceTensor) -> Arg<'_> {
    Arg::Tensor(x)
}

/// The rows of `[rows, cols]` f16 `bytes` in a new order: row i of the result is row
/// `order(i)` of the input.
fn permute_rows(bytes: &[u8], cols: usize, order: impl Fn(usize) -> usize) -> Vec<u8> {
    let row = cols * 2;
    let rows = bytes.len() / row;
    let mut out = Vec::with_capacity(bytes.len());
    for i in 0..rows {
        let r = order(i);
        out.extend_from_slice(&bytes[r * row..(r + 1) * row]);
    }
    out
}

/// Where row `i` of a projection whose outputs come in blocks of `block` rows, the last
/// `rope` of each a rotary part in interleaved pairs, is taken from: the rotary part becomes
/// its even dims, then its odd ones (rotating halves is then transformers' rotation).
fn deinterleave(i: usize, block: usize, rope: usize) -> usize {
    let (b, j) = (i / block, i % block);
    let first = block - rope;
    if j < first {
        return i;
    }
    let k = j - first;
    let half = rope / 2;
    let src = if k < half { 2 * k } else { 2 * (k - half) + 1 };
    b * block + first + src
}

impl Weights {
    /// Uploads the weights of the first `c.layers` layers, each projection transposed from
    /// transformers' `[out, in]` into the `[in, out]` the GEMMs read by the library's
    /// transpose kernel. `progress` hears of each layer.
    pub fn load(
        l: &Launcher<'_>,
        k: &Kernels,
        f: &File<'_>,
        c: &Config,
        mut progress: impl FnMut(i64),
    ) -> Res<Weights> {
        let dev = l.jit.device();
        let (h, heads) = (c.hidden, c.heads);
        let up = |bytes: &[u8], shape: &[i64]| -> Res<DeviceTensor> { Ok(dev.upload_bytes(DType::F16, shape, bytes)?) };
        let plain = |name: &str, shape: &[i64]| -> Res<DeviceTensor> { up(f.f16(name, shape)?, shape) };
        // `src` ([n, m], or a view of that shape) transposed into `dst` ([m, n] view).
        let transpose = |src: Arg<'_>, dst: Arg<'_>| l.launch("load/transpose", &k.transpose, &[src, dst]);
        // An [out, in] weight transposed into a new [in, out] tensor.
        let linear = |src: &DeviceTensor| -> Res<DeviceTensor> {
            let t = dev.zeros(DType::F16, &[src.shape[1], src.shape[0]])?;
            transpose(Arg::Tensor(src), Arg::Tensor(&t))?;
            Ok(t)
        };
        // Two [n, in] weights side by side as the columns of one [in, 2n].
        let pair = |a: &str, b: &str, n: i64| -> Res<DeviceTensor> {
            let t = dev.zeros(DType::F16, &[h, 2 * n])?;
            for (i, name) in [a, b].into_iter().enumerate() {
                let src = plain(name, &[n, h])?;
                let dst = t.view(i as i64 * n, &[h, n], &[2 * n, 1])?;
                transpose(Arg::Tensor(&src), Arg::View(&dst))?;
            }
            Ok(t)
        };
        // A stack of [n, m] matrices transposed one by one into [count, m, n].
        let stacked = |name: &str, count: i64, n: i64, m: i64| -> Res<DeviceTensor> {
            let src = plain(name, &[count, n, m])?;
            let t = dev.zeros(DType::F16, &[count, m, n])?;
            for e in 0..count {
                let s = src.view(e * n * m, &[n, m], &[m, 1])?;
                let d = t.view(e * n * m, &[m, n], &[n, 1])?;
                transpose(Arg::View(&s), Arg::View(&d))?;
            }
            Ok(t)
        };
        let (qk, lat, nope, v) = (c.qk_dim(), c.latent(), c.nope_dim, c.v_dim);
        let mut layers = vec![];
        for i in 0..c.layers {
            let p = format!("model.layers.{i}.");
            let a = format!("{p}self_attn.");
            let q = f.f16(&format!("{a}q_proj.weight"), &[heads * qk, h])?;
            let q = up(
                &permute_rows(q, h as usize, |r| deinterleave(r, qk as usize, c.rope_dim as usize)),
                &[heads * qk, h],
            )?;
            let kva = f.f16(&format!("{a}kv_a_proj_with_mqa.weight"), &[lat, h])?;
            let kva =
                up(&permute_rows(kva, h as usize, |r| deinterleave(r, lat as usize, c.rope_dim as usize)), &[lat, h])?;
            let wkvb = plain(&format!("{a}kv_b_proj.weight"), &[heads * (nope + v), c.kv_lora])?;
            let wuv_t = dev.zeros(DType::F16, &[heads, c.kv_lora, v])?;
            for hd in 0..heads {
                let s = wkvb.view((hd * (nope + v) + nope) * c.kv_lora, &[v, c.kv_lora], &[c.kv_lora, 1])?;
                let d = wuv_t.view(hd * c.kv_lora * v, &[c.kv_lora, v], &[v, 1])?;
                transpose(Arg::View(&s), Arg::View(&d))?;
            }
            let ffn = if i < c.dense_layers {
                let m = format!("{p}mlp.");
                Ffn::Dense {
                    wgu: pair(&format!("{m}gate_proj.weight"), &format!("{m}up_proj.weight"), c.intermediate)?,
                    wd: linear(&plain(&format!("{m}down_proj.weight"), &[h, c.intermediate])?)?,
                }
            } else {
                let m = format!("{p}mlp.");
                let (e, mi, si) = (c.experts, c.moe_intermediate, c.shared_intermediate());
                let s = format!("{m}shared_experts.");
                Ffn::Moe {
                    wg: linear(&plain(&format!("{m}gate.weight"), &[e, h])?)?,
                    wgu: stacked(&format!("{m}experts.gate_up_proj"), e, 2 * mi, h)?,
                    wd: stacked(&format!("{m}experts.down_proj"), e, h, mi)?,
                    sgu: pair(&format!("{s}gate_proj.weight"), &format!("{s}up_proj.weight"), si)?,
                    sd: linear(&plain(&format!("{s}down_proj.weight"), &[h, si])?)?,
                }
            };
            layers.push(Layer {
                input_norm: plain(&format!("{p}input_layernorm.weight"), &[h])?,
                post_norm: plain(&format!("{p}post_attention_layernorm.weight"), &[h])?,
                wq: linear(&q)?,
                wkva: linear(&kva)?,
                kv_norm: plain(&format!("{a}kv_a_layernorm.weight"), &[c.kv_lora])?,
                wkvb_t: linear(&wkvb)?,
                wkvb,
                wuv_t,
                wo: linear(&plain(&format!("{a}o_proj.weight"), &[h, heads * v])?)?,
                ffn,
            });
            // The staging copies of this layer are freed before the next is uploaded.
            dev.synchronize()?;
            progress(i);
        }
        let lm_head = linear(&plain("lm_head.weight", &[c.vocab, h])?)?;
        let embed = plain("model.embed_tokens.weight", &[c.vocab, h])?;
        let norm = plain("model.norm.weight", &[h])?;
        dev.synchronize()?;
        // A decode step reads W_UK and W_UV (not the decompression's transpose) and, of a MoE
        // layer, the router, the shared experts and the experts routed to.
        let attn = h * heads * qk + h * lat + c.kv_lora + heads * (nope + v) * c.kv_lora + heads * v * h + 2 * h;
        let dense = 3 * h * c.intermediate;
        let moe_fixed = h * c.experts + 3 * h * c.shared_intermediate();
        let dl = c.dense_layers.min(c.layers);
        let fixed = c.layers * attn + dl * dense + (c.layers - dl) * moe_fixed + h * c.vocab + h;
        Ok(Weights {
            embed,
            norm,
            lm_head,
            layers,
            fixed_bytes: fixed as f64 * 2.0,
            expert_bytes: (3 * h * c.moe_intermediate) as f64 * 2.0,
        })
    }
}

/// One phase's activations, `rows` of them (batch · prompt, or batch).
struct Activations {
    rows: i64,
    /// The residual stream, ping-ponged: each residual add reads one and writes the other.
    x: [DeviceTensor; 2],
    normed: DeviceTensor,
    /// [rows, heads · 192], [rows, 576], [rows, 512].
    q: DeviceTensor,
    ckv: DeviceTensor,
    c_norm: DeviceTensor,
    /// The prefill's decompressed K/V [rows, heads · 256] (the `kv_b proj` launch); a decode
    /// step's absorbed query (`kv_b proj`: q_nope · W_UK) and latent output [rows, heads, 512].
    kv: DeviceTensor,
    q_lat: DeviceTensor,
    out_lat: DeviceTensor,
    /// [rows, heads · 128].
    attn: DeviceTensor,
    proj: DeviceTensor,
    /// The dense FFN's [rows, 2 · intermediate] and [rows, intermediate].
    gu: DeviceTensor,
    act: DeviceTensor,
    /// The router's f32 logits (zeros between uses: moe_route clears them), the routing.
    logits: DeviceTensor,
    weights: DeviceTensor,
    ids: DeviceTensor,
    /// moe_align's workspace and counter, the experts' offsets a layer (kept for the copy
    /// floor: which experts a step read), each pair's position.
    block_counts: DeviceTensor,
    bases: DeviceTensor,
    done: DeviceTensor,
    offsets: DeviceTensor,
    pos: DeviceTensor,
    /// The pairs' rows in expert order (each expert's padded to the grouped GEMM's tile),
    /// their gate/up, SwiGLU and down rows.
    xs: DeviceTensor,
    egu: DeviceTensor,
    eact: DeviceTensor,
    ys: DeviceTensor,
    /// The shared experts' gate/up, SwiGLU, output.
    sgu: DeviceTensor,
    sact: DeviceTensor,
    shared: DeviceTensor,
}

impl Activations {
    fn new(jit: &Jit, c: &Config, rows: i64, tile_m: i64) -> Res<Activations> {
        let dev = jit.device();
        let z = |shape: &[i64]| dev.zeros(DType::F16, shape);
        let sorted = rows * c.top_k + c.experts * (tile_m - 1);
        let nb = (rows + ROUTE_ROWS - 1) / ROUTE_ROWS;
        let (e, mi, si, hd) = (c.experts, c.moe_intermediate, c.shared_intermediate(), c.heads);
        Ok(Activations {
            rows,
            x: [z(&[rows, c.hidden])?, z(&[rows, c.hidden])?],
            normed: z(&[rows, c.hidden])?,
            q: z(&[rows, hd * c.qk_dim()])?,
            ckv: z(&[rows, c.latent()])?,
            c_norm: z(&[rows, c.kv_lora])?,
            kv: z(&[rows, hd * (c.nope_dim + c.v_dim)])?,
            q_lat: z(&[rows, hd, c.kv_lora])?,
            out_lat: z(&[rows, hd, c.kv_lora])?,
            attn: z(&[rows, hd * c.v_dim])?,
            proj: z(&[rows, c.hidden])?,
            gu: z(&[rows, 2 * c.intermediate])?,
            act: z(&[rows, c.intermediate])?,
            logits: dev.zeros(DType::F32, &[rows, e])?,
            weights: dev.zeros(DType::F32, &[rows, c.top_k])?,
            ids: dev.zeros(DType::I32, &[rows, c.top_k])?,
            block_counts: dev.zeros(DType::I32, &[nb, e])?,
            bases: dev.zeros(DType::I32, &[nb, e])?,
            done: dev.zeros(DType::I32, &[1])?,
            offsets: dev.zeros(DType::I32, &[c.layers, e + 1])?,
            pos: dev.zeros(DType::I32, &[rows, c.top_k])?,
            xs: z(&[sorted, c.hidden])?,
            egu: z(&[sorted, 2 * mi])?,
            eact: z(&[sorted, mi])?,
            ys: z(&[sorted, c.hidden])?,
            sgu: z(&[rows, 2 * si])?,
            sact: z(&[rows, si])?,
            shared: z(&[rows, c.hidden])?,
        })
    }
}

/// The rotary tables: cos and sin of position × YaRN's frequencies (in f32, as transformers
/// forms them), times the attention scaling, rounded to f16; [positions, rope_dim / 2].
pub fn rope_tables(c: &Config, positions: i64) -> (Vec<f64>, Vec<f64>) {
    let (inv, scaling) = c.yarn();
    let (mut cos, mut sin) = (vec![], vec![]);
    for p in 0..positions {
        for f in &inv {
            let angle = f64::from(p as f32 * f);
            cos.push(angle.cos() * scaling);
            sin.push(angle.sin() * scaling);
        }
    }
    (cos, sin)
}

/// Activations, caches and tokens for `batch` sequences of `prompt` tokens plus `new_tokens`.
pub struct Model<'w> {
    c: Config,
    w: &'w Weights,
    t: Tokens,
    batch: i64,
    /// Cache rows per sequence: prompt + new tokens.
    seq: i64,
    /// Per layer, [batch, seq, 576]: the compressed K/V (normed), then the rotated key.
    latent: Vec<DeviceTensor>,
    /// rope_kv_append's V destination, which this model does not use (the latent cache takes
    /// the compressed K/V through kv_append): [batch, 1, seq, 64], written and never read.
    unused_v: DeviceTensor,
    cos: DeviceTensor,
    sin: DeviceTensor,
    p: Activations,
    d: Activations,
    /// mla_decode's workspace (per slot a partial output in the kernel's T, its (max, sum)
    /// in f32) and its counters
    /// (zeros between launches: the kernel puts them back).
    mla_part: DeviceTensor,
    mla_stats: DeviceTensor,
    mla_count: DeviceTensor,
    /// A decode step's f32 split-K accumulators (zeros between uses: each epilogue clears
    /// what it read) of Q, of the compressed K/V and rotary key, of a hidden-sized product;
    /// and a row of zeros, the bias of the epilogue that only rounds (the model has no biases).
    acc_q: DeviceTensor,
    acc_kva: DeviceTensor,
    acc_h: DeviceTensor,
    zero: DeviceTensor,
    /// [batch, vocab].
    logits: DeviceTensor,
    nlast: DeviceTensor,
}

/// The launch sites of a phase (each bound once: the same shapes every time).
struct Roles {
    phase: usize,
    embedding: &'static str,
    norm: &'static str,
    q: [&'static str; 2],
    kva: [&'static str; 2],
    kv_norm: &'static str,
    rope: &'static str,
    append: &'static str,
    attention: [&'static str; 3],
    o: [&'static str; 2],
    dense: [&'static str; 4],
    router: [&'static str; 2],
    dispatch: [&'static str; 2],
    experts: [&'static str; 3],
    shared: [&'static str; 4],
    combine: &'static str,
    mlp_residual: &'static str,
    final_norm: &'static str,
    lm_head: &'static str,
    argmax: &'static str,
}

macro_rules! roles {
    ($p:literal, $phase:literal) => {
        Roles {
            phase: $phase,
            embedding: concat!($p, "/embedding"),
            norm: concat!($p, "/norm"),
            q: [concat!($p, "/q proj"), concat!($p, "/q epilogue")],
            kva: [concat!($p, "/kv_a proj"), concat!($p, "/kv_a epilogue")],
            kv_norm: concat!($p, "/kv norm"),
            rope: concat!($p, "/rope"),
            append: concat!($p, "/latent append"),
            attention: [concat!($p, "/kv_b proj"), concat!($p, "/attention"), concat!($p, "/w_uv proj")],
            o: [concat!($p, "/o proj"), concat!($p, "/o residual")],
            dense: [
                concat!($p, "/dense gate-up"),
                concat!($p, "/dense silu_mul"),
                concat!($p, "/dense down"),
                concat!($p, "/dense down epilogue"),
            ],
            router: [concat!($p, "/router"), concat!($p, "/moe_route")],
            dispatch: [concat!($p, "/moe_align"), concat!($p, "/moe_permute")],
            experts: [concat!($p, "/experts gate-up"), concat!($p, "/experts silu_mul"), concat!($p, "/experts down")],
            shared: [
                concat!($p, "/shared gate-up"),
                concat!($p, "/shared silu_mul"),
                concat!($p, "/shared down"),
                concat!($p, "/shared down epilogue"),
            ],
            combine: concat!($p, "/moe_combine"),
            mlp_residual: concat!($p, "/mlp residual"),
            final_norm: concat!($p, "/final norm"),
            lm_head: concat!($p, "/lm head"),
            argmax: concat!($p, "/argmax"),
        }
    };
}

const DECODE: Roles = roles!("decode", 0);
const PREFILL: Roles = roles!("prefill", 1);

impl<'w> Model<'w> {
    /// `prompt_ids` is [batch, prompt]; `forced` the tokens to feed once ours diverge (zeros
    /// when there is no reference).
    pub fn new(
        jit: &Jit,
        c: &Config,
        w: &'w Weights,
        prompt_ids: &[i64],
        batch: i64,
        new_tokens: i64,
        forced: &[i64],
    ) -> Res<Model<'w>> {
        let dev = jit.device();
        let t = Tokens::new(jit, prompt_ids, batch, new_tokens, forced, c.vocab)?;
        let (prompt, seq) = (t.prompt, t.seq());
        let (cos, sin) = rope_tables(c, seq);
        let half = c.rope_dim / 2;
        Ok(Model {
            c: c.clone(),
            w,
            t,
            batch,
            seq,
            latent: (0..c.layers)
                .map(|_| dev.zeros(DType::F16, &[batch, seq, c.latent()]))
                .collect::<Result<_, _>>()?,
            unused_v: dev.zeros(DType::F16, &[batch, 1, seq, c.rope_dim])?,
            cos: dev.upload(&HostTensor::from_f64(DType::F16, &[seq, half], &cos))?,
            sin: dev.upload(&HostTensor::from_f64(DType::F16, &[seq, half], &sin))?,
            p: Activations::new(jit, c, batch * prompt, PREFILL_TILE_M)?,
            d: Activations::new(jit, c, batch, DECODE_TILE_M)?,
            mla_part: dev.zeros(DType::F16, &[MLA_SLOTS, 16, c.kv_lora])?,
            mla_stats: dev.zeros(DType::F32, &[MLA_SLOTS, 2, 16])?,
            mla_count: dev.zeros(DType::I32, &[batch, (c.heads + 15) / 16, MLA_COUNTERS])?,
            acc_q: dev.zeros(DType::F32, &[batch, c.heads * c.qk_dim()])?,
            acc_kva: dev.zeros(DType::F32, &[batch, c.latent()])?,
            acc_h: dev.zeros(DType::F32, &[batch, c.hidden])?,
            zero: dev.zeros(DType::F16, &[(c.heads * c.qk_dim()).max(c.latent())])?,
            logits: dev.zeros(DType::F16, &[batch, c.vocab])?,
            nlast: dev.zeros(DType::F16, &[batch, c.hidden])?,
        })
    }

    /// Bytes of the latent cache a decode step at `len` cached positions reads.
    pub fn kv_bytes(&self, len: i64) -> f64 {
        (self.c.layers * self.batch * len * self.c.latent() * 2) as f64
    }

    /// Experts the last decode step routed tokens to, summed over its MoE layers.
    pub fn experts_read(&self, l: &Launcher<'_>) -> Res<i64> {
        let offsets = l.jit.device().download(&self.d.offsets)?.to_f64();
        let e = (self.c.experts + 1) as usize;
        Ok(offsets
            .chunks(e)
            .enumerate()
            .filter(|(i, _)| *i as i64 >= self.c.dense_layers)
            .map(|(_, o)| o.windows(2).filter(|w| w[1] > w[0]).count() as i64)
            .sum())
    }

    /// One decoder layer `i` over the residual stream `a.x[cur]` of a phase whose new tokens
    /// are at positions `pos` (a row of `positions`); `lens` (decode) the lengths after them.
    /// Returns the index of the stream that holds the layer's output.
    #[allow(clippy::too_many_arguments)]
    fn layer(
        &self,
        l: &Launcher<'_>,
        k: &Kernels,
        a: &Activations,
        r: &Roles,
        pos: &TensorView<'_>,
        lens: Option<&TensorView<'_>>,
        i: usize,
        cur: usize,
    ) -> Res<usize> {
        let (c, w) = (&self.c, &self.w.layers[i]);
        let (rows, b) = (a.rows, self.batch);
        let n = rows / b;
        let (hd, qk, lat, nope, v, kvl) = (c.heads, c.qk_dim(), c.latent(), c.nope_dim, c.v_dim, c.kv_lora);
        let eps = Arg::F32(c.eps as f32);
        let gemm = |role, x: Arg<'_>, wt: &DeviceTensor, out: Arg<'_>| l.launch(role, &k.matmul, &[x, ta(wt), out]);
        let residual = |role, y: &DeviceTensor, cur: usize| {
            l.launch(role, &k.residual_add, &[ta(y), ta(&a.x[cur]), ta(&a.x[1 - cur])])
        };
        // A decode step's products have 16 rows or fewer: split along K into an f32
        // accumulator (`split` picks SPLIT 4 or 8), whose epilogue rounds it to T or adds it
        // to the residual stream; a prefill's are plain GEMMs.
        let fused = lens.is_some();
        let split = |role, x: &DeviceTensor, wt: &DeviceTensor, acc: &DeviceTensor, split: usize| {
            l.launch(role, &k.splitk[split], &[ta(x), ta(wt), ta(acc)])
        };
        // x · wt into `out` (T).
        let project = |role: [&'static str; 2], x: &DeviceTensor, wt: &DeviceTensor, out: &DeviceTensor, acc| {
            if !fused {
                return gemm(role[0], ta(x), wt, ta(out));
            }
            split(role[0], x, wt, acc, 0)?;
            let zero = self.zero.view(0, &[out.shape[1]], &[1])?;
            l.launch(role[1], &k.acc_bias, &[ta(acc), Arg::View(&zero), ta(out)])
        };
        // Stream x[from] + x · wt into `to` in a decode step (split `s`); a prefill's product
        // goes to `proj`, and its residual add is the caller's.
        let project_residual = |role: [&'static str; 2], x: &DeviceTensor, wt: &DeviceTensor, s, from: usize, to| {
            if !fused {
                return gemm(role[0], ta(x), wt, ta(&a.proj));
            }
            split(role[0], x, wt, &self.acc_h, s)?;
            l.launch(role[1], &k.acc_residual, &[ta(&self.acc_h), ta(&a.x[from]), ta(to)])
        };

        // Attention.
        l.launch(r.norm, &k.norm, &[ta(&a.x[cur]), ta(&w.input_norm), ta(&a.normed), eps])?;
        project(r.q, &a.normed, &w.wq, &a.q, &self.acc_q)?;
        project(r.kva, &a.normed, &w.wkva, &a.ckv, &self.acc_kva)?;
        let c_in = a.ckv.view(0, &[rows, kvl], &[lat, 1])?;
        l.launch(r.kv_norm, &k.kv_norm, &[Arg::View(&c_in), ta(&w.kv_norm), ta(&a.c_norm), eps])?;
        // RoPE of each head's rotary query in place, and of the shared key into the cache.
        let cache = &self.latent[i];
        let q_rope = a.q.view(nope, &[b, n, hd, c.rope_dim], &[n * hd * qk, hd * qk, qk, 1])?;
        let k_rope = a.ckv.view(kvl, &[b, n, 1, c.rope_dim], &[n * lat, lat, lat, 1])?;
        let cache_rope = cache.view(kvl, &[b, 1, self.seq, c.rope_dim], &[self.seq * lat, lat, lat, 1])?;
        let table = [ta(&self.cos), ta(&self.sin)];
        l.launch(
            r.rope,
            &k.rope,
            &[
                Arg::View(&q_rope),
                Arg::View(&k_rope),
                Arg::View(&k_rope),
                table[0],
                table[1],
                Arg::View(&cache_rope),
                ta(&self.unused_v),
                Arg::View(pos),
            ],
        )?;
        let c_new = a.c_norm.view(0, &[b, 1, n, kvl], &[n * kvl, kvl, kvl, 1])?;
        let cache_c = cache.view(0, &[b, 1, self.seq, kvl], &[self.seq * lat, lat, lat, 1])?;
        l.launch(r.append, &k.append_latent, &[Arg::View(&c_new), Arg::View(&cache_c), Arg::View(pos)])?;
        let scale = Arg::F32(c.softmax_scale() as f32);
        match lens {
            None => {
                // The prefill: K and V decompressed, causal attention over the prompt.
                gemm(r.attention[0], ta(&a.c_norm), &w.wkvb_t, ta(&a.kv))?;
                let kvw = hd * (nope + v);
                let q = a.q.view(0, &[b, hd, n, nope], &[n * hd * qk, qk, hd * qk, 1])?;
                let qr = a.q.view(nope, &[b, hd, n, c.rope_dim], &[n * hd * qk, qk, hd * qk, 1])?;
                let kn = a.kv.view(0, &[b, hd, n, nope], &[n * kvw, nope + v, kvw, 1])?;
                let kr = cache.view(kvl, &[b, n, c.rope_dim], &[self.seq * lat, lat, 1])?;
                let vv = a.kv.view(nope, &[b, hd, n, v], &[n * kvw, nope + v, kvw, 1])?;
                let out = a.attn.view(0, &[b, hd, n, v], &[n * hd * v, v, hd * v, 1])?;
                let args = [
                    Arg::View(&q),
                    Arg::View(&qr),
                    Arg::View(&kn),
                    Arg::View(&kr),
                    Arg::View(&vv),
                    Arg::View(&out),
                    scale,
                ];
                l.launch(r.attention[1], &k.mla, &args)?;
            }
            Some(lens) => {
                // A decode step: W_UK absorbed into the query, the latent cache attended,
                // W_UV absorbed into the output.
                let q_nope = a.q.view(0, &[hd, b, nope], &[qk, hd * qk, 1])?;
                let w_uk = w.wkvb.view(0, &[hd, nope, kvl], &[(nope + v) * kvl, kvl, 1])?;
                let q_lat = a.q_lat.view(0, &[hd, b, kvl], &[kvl, hd * kvl, 1])?;
                l.launch(r.attention[0], &k.bmm, &[Arg::View(&q_nope), Arg::View(&w_uk), Arg::View(&q_lat)])?;
                let qr = a.q.view(nope, &[b, hd, c.rope_dim], &[hd * qk, qk, 1])?;
                let cc = cache.view(0, &[b, self.seq, kvl], &[self.seq * lat, lat, 1])?;
                let cr = cache.view(kvl, &[b, self.seq, c.rope_dim], &[self.seq * lat, lat, 1])?;
                let args = [
                    ta(&a.q_lat),
                    Arg::View(&qr),
                    Arg::View(&cc),
                    Arg::View(&cr),
                    Arg::View(lens),
                    ta(&a.out_lat),
                    ta(&self.mla_part),
                    ta(&self.mla_stats),
                    ta(&self.mla_count),
                    scale,
                ];
                l.launch(r.attention[1], &k.mla_decode, &args)?;
                let o_lat = a.out_lat.view(0, &[hd, b, kvl], &[kvl, hd * kvl, 1])?;
                let o = a.attn.view(0, &[hd, b, v], &[v, hd * v, 1])?;
                l.launch(r.attention[2], &k.bmm, &[Arg::View(&o_lat), ta(&w.wuv_t), Arg::View(&o)])?;
            }
        }
        project_residual(r.o, &a.attn, &w.wo, 0, cur, &a.x[1 - cur])?;
        if !fused {
            residual(r.o[1], &a.proj, cur)?;
        }
        let cur = 1 - cur;

        // Feed-forward.
        l.launch(r.norm, &k.norm, &[ta(&a.x[cur]), ta(&w.post_norm), ta(&a.normed), eps])?;
        // The SwiGLU of gate/up rows `gu` ([m, 2n]: gate's columns, then up's) into `out`.
        let swiglu = |role, gu: &DeviceTensor, out: &DeviceTensor| -> Res<()> {
            let (m, n2) = (gu.shape[0], gu.shape[1]);
            let gate = gu.view(0, &[m, n2 / 2], &[n2, 1])?;
            let up = gu.view(n2 / 2, &[m, n2 / 2], &[n2, 1])?;
            l.launch(role, &k.silu_mul, &[Arg::View(&gate), Arg::View(&up), ta(out)])
        };
        // SwiGLU(x · wgu) into `out`: one launch in a decode step, a GEMM and silu_mul in a
        // prefill (through `gu`).
        let gate_up = |role: [&'static str; 2], wgu: &DeviceTensor, gu: &DeviceTensor, out: &DeviceTensor| {
            if !fused {
                gemm(role[0], ta(&a.normed), wgu, ta(gu))?;
                return swiglu(role[1], gu, out);
            }
            let (h, n2) = (wgu.shape[0], wgu.shape[1]);
            let gate = wgu.view(0, &[h, n2 / 2], &[n2, 1])?;
            let up = wgu.view(n2 / 2, &[h, n2 / 2], &[n2, 1])?;
            l.launch(role[0], &k.matmul_swiglu, &[ta(&a.normed), Arg::View(&gate), Arg::View(&up), ta(out)])
        };
        match &w.ffn {
            Ffn::Dense { wgu, wd } => {
                gate_up([r.dense[0], r.dense[1]], wgu, &a.gu, &a.act)?;
                project_residual([r.dense[2], r.dense[3]], &a.act, wd, 1, cur, &a.x[1 - cur])?;
            }
            Ffn::Moe { wg, wgu, wd, sgu, sd } => {
                l.launch(r.router[0], &k.router, &[ta(&a.normed), ta(wg), ta(&a.logits)])?;
                l.launch(r.router[1], &k.route, &[ta(&a.logits), ta(&a.weights), ta(&a.ids)])?;
                let offsets = a.offsets.view(i as i64 * (c.experts + 1), &[c.experts + 1], &[1])?;
                let ph = r.phase;
                l.launch(
                    r.dispatch[0],
                    &k.align[ph],
                    &[ta(&a.ids), ta(&a.block_counts), ta(&a.bases), Arg::View(&offsets), ta(&a.done)],
                )?;
                l.launch(
                    r.dispatch[1],
                    &k.permute[ph],
                    &[ta(&a.ids), ta(&a.bases), ta(&a.normed), ta(&a.xs), ta(&a.pos)],
                )?;
                let gg = &k.group_gemm[ph];
                l.launch(r.experts[0], gg, &[ta(&a.xs), ta(wgu), ta(&a.egu), Arg::View(&offsets)])?;
                swiglu(r.experts[1], &a.egu, &a.eact)?;
                l.launch(r.experts[2], gg, &[ta(&a.eact), ta(wd), ta(&a.ys), Arg::View(&offsets)])?;
                gate_up([r.shared[0], r.shared[1]], sgu, &a.sgu, &a.sact)?;
                // A decode step's shared experts' output comes with the residual stream added
                // (their down product's epilogue), so that the combine writes the next stream;
                // a prefill's combine writes the FFN's output, and the residual add follows.
                if fused {
                    project_residual([r.shared[2], r.shared[3]], &a.sact, sd, 0, cur, &a.shared)?;
                } else {
                    gemm(r.shared[2], ta(&a.sact), sd, ta(&a.shared))?;
                }
                let out = if fused { &a.x[1 - cur] } else { &a.proj };
                l.launch(r.combine, &k.combine, &[ta(&a.ys), ta(&a.pos), ta(&a.weights), ta(&a.shared), ta(out)])?;
            }
        }
        if !fused {
            residual(r.mlp_residual, &a.proj, cur)?;
        }
        Ok(1 - cur)
    }

    /// The final norm of `x` (a sequence's last position each), the LM head into `logits`,
    /// and the greedy tokens into token row `t`.
    fn head(&self, l: &Launcher<'_>, k: &Kernels, r: &Roles, x: Arg<'_>, t: i64) -> Res<()> {
        let eps = Arg::F32(self.c.eps as f32);
        l.launch(r.final_norm, &k.norm, &[x, Arg::Tensor(&self.w.norm), Arg::Tensor(&self.nlast), eps])?;
        l.launch(
            r.lm_head,
            &k.matmul,
            &[Arg::Tensor(&self.nlast), Arg::Tensor(&self.w.lm_head), Arg::Tensor(&self.logits)],
        )?;
        let row = self.t.row(t)?;
        l.launch(r.argmax, &k.argmax, &[Arg::Tensor(&self.logits), Arg::View(&row)])?;
        Ok(())
    }

    /// The prompt through every layer, the latent cache filled; the logits of each sequence's
    /// last position in `logits` and their argmax in token row 0.
    pub fn prefill(&self, l: &Launcher<'_>, k: &Kernels) -> Res<()> {
        let (a, r) = (&self.p, &PREFILL);
        l.launch(
            r.embedding,
            &k.embedding,
            &[Arg::Tensor(&self.t.prompt_ids), Arg::Tensor(&self.w.embed), Arg::Tensor(&a.x[0])],
        )?;
        let pos = self.t.positions(0)?;
        let mut cur = 0;
        for i in 0..self.w.layers.len() {
            cur = self.layer(l, k, a, r, &pos, None, i, cur)?;
        }
        let (p, h) = (self.t.prompt, self.c.hidden);
        let last = a.x[cur].view((p - 1) * h, &[self.batch, h], &[p * h, 1])?;
        self.head(l, k, r, Arg::View(&last), 0)
    }

    /// Decode step `t` (1 ≤ t < new_tokens): feeds token row t − 1 (ours, or the forced one)
    /// at position prompt + t − 1 of every sequence, leaves the logits in `logits` and their
    /// argmax in token row t.
    pub fn decode(&self, l: &Launcher<'_>, k: &Kernels, t: i64, forced: bool) -> Res<()> {
        let (a, r) = (&self.d, &DECODE);
        let ids = self.t.feed(t, forced)?;
        l.launch(r.embedding, &k.embedding, &[Arg::View(&ids), Arg::Tensor(&self.w.embed), Arg::Tensor(&a.x[0])])?;
        let (pos, lens) = (self.t.positions(t)?, self.t.positions(t + 1)?);
        let mut cur = 0;
        for i in 0..self.w.layers.len() {
            cur = self.layer(l, k, a, r, &pos, Some(&lens), i, cur)?;
        }
        self.head(l, k, r, Arg::Tensor(&a.x[cur]), t)
    }

    /// Token row `t` (ours).
    pub fn tokens(&self, l: &Launcher<'_>, t: i64) -> Res<Vec<i64>> {
        self.t.download(l, t)
    }

    /// The logits as f32, [batch, vocab].
    pub fn logits(&self, l: &Launcher<'_>) -> Res<Vec<f32>> {
        Ok(l.jit.device().download(&self.logits)?.to_f64().into_iter().map(|v| v as f32).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_the_decoder_launches_compiles_for_each_target() {
        let k = Kernels::new(&Config::DEEPSEEK_V2_LITE);
        for arch in ["sm_90a", "sm_103a", "sm_121a"] {
            for s in k.all() {
                if let Err(e) = s.compile_for(arch) {
                    panic!("{arch}:\n{}", e.render());
                }
            }
        }
    }

    #[test]
    fn the_rotary_rows_are_deinterleaved_per_block() {
        // Blocks of 6 with a rotary part of 4: [n n r0 r1 r2 r3] takes [n n r0 r2 r1 r3].
        let order: Vec<usize> = (0..12).map(|i| deinterleave(i, 6, 4)).collect();
        assert_eq!(order, [0, 1, 2, 4, 3, 5, 6, 7, 8, 10, 9, 11]);
        let bytes: Vec<u8> = (0..6u8).flat_map(|r| [r, 0, r, 0]).collect();
        let moved = permute_rows(&bytes, 2, |i| deinterleave(i, 6, 4));
        assert_eq!(moved.chunks(4).map(|c| c[0]).collect::<Vec<_>>(), [0, 1, 2, 4, 3, 5]);
    }

    #[test]
    fn rotating_halves_of_the_deinterleaved_dims_is_the_complex_rotation() {
        // transformers: (x[2i] + i·x[2i+1]) · e^{iθ_i}; ours on [evens, odds].
        let x: Vec<f64> = (0..8).map(|i| f64::from(i) * 0.37 - 1.0).collect();
        let theta: Vec<f64> = (0..4).map(|i| 0.3 + f64::from(i)).collect();
        let mut theirs = [0.0; 8];
        for i in 0..4 {
            let (re, im) = (x[2 * i], x[2 * i + 1]);
            theirs[2 * i] = re * theta[i].cos() - im * theta[i].sin();
            theirs[2 * i + 1] = re * theta[i].sin() + im * theta[i].cos();
        }
        let d: Vec<f64> = (0..8).map(|i| x[deinterleave(i, 8, 8)]).collect();
        for i in 0..4 {
            let ours_lo = d[i] * theta[i].cos() - d[i + 4] * theta[i].sin();
            let ours_hi = d[i + 4] * theta[i].cos() + d[i] * theta[i].sin();
            assert!((ours_lo - theirs[2 * i]).abs() < 1e-12 && (ours_hi - theirs[2 * i + 1]).abs() < 1e-12);
        }
    }
}
