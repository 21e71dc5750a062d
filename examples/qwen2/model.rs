//! The decoder on tilec kernels: the weights on the device (transposed once into the [K, N]
//! layout the GEMMs read, the Q/K/V and gate/up projections fused), the activations and the
//! KV cache, the prefill and the decode step. Every GPU operation is a kernel of the library
//! (`kernels/*.tile`) launched through the JIT: nothing else computes on the device (the only
//! other device operations are the uploads of the weights and tables and the downloads of
//! tokens and logits).

use crate::config::Config;
use crate::launch::{pow2, spec, File, Launcher, Tokens};
use crate::Res;
use std::collections::BTreeMap;
use tilec::jit::{Arg, Jit, KernelSpec};
use tilec::runtime::{DeviceTensor, HostTensor, TensorView};
use tilec::{ConstArg, DType};

/// Split-K factors of the decode step's split products (M = batch), Q/K/V, O, down: the best
/// of SPLIT 1–32 × TILE_N 64/128 for each on the H200
/// (bench/results/2026-11-26-h200-qwen2-graphs/splitk-sweep.md), the down product's 8 → 4
/// since `matmul_splitk` is computed transposed three tiles ahead (H100: 0.0585 ms against
/// 0.0605 at 8, the step 5.90 → 5.81 ms; bench/results/2026-11-27-session21/). The gate/up
/// product is not split (296 blocks of 64 columns, all resident at once): it runs with its
/// SwiGLU epilogue (`matmul_swiglu`).
pub const SPLITS: [i64; 3] = [4, 4, 4];
/// The most chunks decode attention may split a sequence's keys into (the kernel picks how
/// many from the shapes: `kernels/attention_decode_grouped.tile`'s split rule).
const DECODE_SPLITS: i64 = 32;

/// The library kernels the decoder launches, with their constants.
pub struct Kernels {
    rmsnorm: KernelSpec,
    matmul: KernelSpec,
    splitk: BTreeMap<i64, KernelSpec>,
    /// The split-K factors of the decode projections (see [`SPLITS`]).
    splits: [i64; 3],
    bias_add: KernelSpec,
    residual_add: KernelSpec,
    swiglu: KernelSpec,
    rope_kv_append: KernelSpec,
    fmha: KernelSpec,
    decode_attention: KernelSpec,
    embedding: KernelSpec,
    argmax: KernelSpec,
    transpose: KernelSpec,
    acc_residual_norm: KernelSpec,
    acc_bias_rope: KernelSpec,
    /// The gate/up product (`--prefetch` sets its depth).
    pub matmul_swiglu: KernelSpec,
}

impl Kernels {
    pub fn new(c: &Config, splits: [i64; 3]) -> Kernels {
        let int = ConstArg::Int;
        let splitk = splits
            .into_iter()
            .map(|s| (s, spec(kernel_source!("matmul_splitk.tile"), "matmul_splitk", &[("SPLIT", int(s))])))
            .collect();
        let epilogue = kernel_source!("splitk_epilogue.tile");
        // RoPE's tiles of whole heads, a power of two of them: the heads past the tensor's
        // (28 of 32) load zeros and are not stored.
        let heads = [("H", int(pow2(c.heads))), ("HK", int(pow2(c.kv_heads))), ("HALF", int(c.head_dim / 2))];
        Kernels {
            rmsnorm: spec(kernel_source!("rmsnorm.tile"), "rmsnorm", &[("BLOCK_N", int(pow2(c.hidden)))]),
            matmul: spec(kernel_source!("matmul.tile"), "matmul", &[]),
            splitk,
            splits,
            bias_add: spec(kernel_source!("bias_add.tile"), "bias_add", &[("BLOCK_N", int(4096))]),
            residual_add: spec(kernel_source!("residual_add.tile"), "residual_add", &[("BLOCK_N", int(4096))]),
            swiglu: spec(kernel_source!("swiglu.tile"), "swiglu", &[("BLOCK_N", int(4096))]),
            rope_kv_append: spec(kernel_source!("rope.tile"), "rope_kv_append", &heads),
            fmha: spec(
                kernel_source!("fmha.tile"),
                "fmha",
                &[
                    ("TILE_D", int(c.head_dim)),
                    ("H", int(c.heads)),
                    ("CAUSAL", ConstArg::Bool(true)),
                    ("GROUP", int(c.group())),
                ],
            ),
            decode_attention: spec(
                kernel_source!("attention_decode_grouped.tile"),
                "attention_decode_grouped",
                &[
                    ("G", int(c.group())),
                    ("GP", int(pow2(c.group()).max(16))),
                    ("D", int(c.head_dim)),
                    ("SPLITS", int(DECODE_SPLITS)),
                ],
            ),
            embedding: spec(kernel_source!("embedding.tile"), "embedding", &[]),
            argmax: spec(kernel_source!("argmax.tile"), "argmax", &[]),
            transpose: spec(kernel_source!("transpose.tile"), "transpose", &[]),
            acc_residual_norm: spec(epilogue, "acc_residual_rmsnorm", &[("BLOCK_N", int(pow2(c.hidden)))]),
            acc_bias_rope: spec(kernel_source!("rope.tile"), "acc_bias_rope_kv_append", &heads),
            matmul_swiglu: spec(kernel_source!("matmul_splitk.tile"), "matmul_swiglu", &[]),
        }
    }

    /// Every kernel the decoder launches.
    pub fn all(&self) -> Vec<&KernelSpec> {
        let mut all = vec![
            &self.rmsnorm,
            &self.matmul,
            &self.bias_add,
            &self.residual_add,
            &self.swiglu,
            &self.rope_kv_append,
            &self.fmha,
            &self.decode_attention,
            &self.embedding,
            &self.argmax,
            &self.transpose,
            &self.acc_residual_norm,
            &self.acc_bias_rope,
            &self.matmul_swiglu,
        ];
        all.extend(self.splitk.values());
        all
    }
}

/// The weights of one layer, in the layouts the kernels read.
struct Layer {
    input_norm: DeviceTensor,
    post_norm: DeviceTensor,
    /// [hidden, qkv_width]: Q's columns, then K's, then V's.
    wqkv: DeviceTensor,
    bqkv: DeviceTensor,
    /// [hidden, hidden].
    wo: DeviceTensor,
    /// [hidden, 2 · intermediate]: gate's columns, then up's.
    wgu: DeviceTensor,
    /// [intermediate, hidden].
    wd: DeviceTensor,
}

pub struct Weights {
    /// [vocab, hidden].
    embed: DeviceTensor,
    norm: DeviceTensor,
    /// [hidden, vocab].
    lm_head: DeviceTensor,
    layers: Vec<Layer>,
    /// Bytes one decode step reads (every weight but the embedding table, of which it reads
    /// one row a sequence).
    pub step_bytes: f64,
}

impl Weights {
    /// Uploads the weights of the first `c.layers` layers, transposing each projection
    /// `[out, in]` (transformers' `nn.Linear` layout) into the `[in, out]` columns of its fused
    /// matrix with the library's transpose kernel. `progress` hears of each layer.
    pub fn load(
        l: &Launcher<'_>,
        k: &Kernels,
        f: &File<'_>,
        c: &Config,
        mut progress: impl FnMut(i64),
    ) -> Res<Weights> {
        let dev = l.jit.device();
        let (h, kv, inter) = (c.hidden, c.kv_heads * c.head_dim, c.intermediate);
        let plain = |name: &str, shape: &[i64]| -> Res<DeviceTensor> {
            Ok(dev.upload_bytes(DType::F16, shape, f.f16(name, shape)?)?)
        };
        // `[n, in]` weight `name` into columns `col..col + n` of `dst` ([in, width]).
        let into_columns = |dst: &DeviceTensor, col: i64, name: &str, n: i64| -> Res<()> {
            let (rows, width) = (dst.shape[0], dst.shape[1]);
            let src = plain(name, &[n, rows])?;
            let view = dst.view(col, &[rows, n], &[width, 1])?;
            l.launch("load/transpose", &k.transpose, &[Arg::Tensor(&src), Arg::View(&view)])?;
            Ok(())
        };
        let mut layers = vec![];
        for i in 0..c.layers {
            let p = format!("model.layers.{i}.");
            let wqkv = dev.zeros(DType::F16, &[h, c.qkv_width()])?;
            into_columns(&wqkv, 0, &format!("{p}self_attn.q_proj.weight"), h)?;
            into_columns(&wqkv, h, &format!("{p}self_attn.k_proj.weight"), kv)?;
            into_columns(&wqkv, h + kv, &format!("{p}self_attn.v_proj.weight"), kv)?;
            let mut bias = f.f16(&format!("{p}self_attn.q_proj.bias"), &[h])?.to_vec();
            bias.extend_from_slice(f.f16(&format!("{p}self_attn.k_proj.bias"), &[kv])?);
            bias.extend_from_slice(f.f16(&format!("{p}self_attn.v_proj.bias"), &[kv])?);
            let wo = dev.zeros(DType::F16, &[h, h])?;
            into_columns(&wo, 0, &format!("{p}self_attn.o_proj.weight"), h)?;
            let wgu = dev.zeros(DType::F16, &[h, 2 * inter])?;
            into_columns(&wgu, 0, &format!("{p}mlp.gate_proj.weight"), inter)?;
            into_columns(&wgu, inter, &format!("{p}mlp.up_proj.weight"), inter)?;
            let wd = dev.zeros(DType::F16, &[inter, h])?;
            // down_proj is [hidden, intermediate]: transposed into [intermediate, hidden].
            into_columns(&wd, 0, &format!("{p}mlp.down_proj.weight"), h)?;
            layers.push(Layer {
                input_norm: plain(&format!("{p}input_layernorm.weight"), &[h])?,
                post_norm: plain(&format!("{p}post_attention_layernorm.weight"), &[h])?,
                wqkv,
                bqkv: dev.upload_bytes(DType::F16, &[c.qkv_width()], &bias)?,
                wo,
                wgu,
                wd,
            });
            // The staging copies of this layer are freed before the next is uploaded.
            dev.synchronize()?;
            progress(i);
        }
        let lm_head = dev.zeros(DType::F16, &[h, c.vocab])?;
        into_columns(&lm_head, 0, "lm_head.weight", c.vocab)?;
        let embed = plain("model.embed_tokens.weight", &[c.vocab, h])?;
        let norm = plain("model.norm.weight", &[h])?;
        dev.synchronize()?;
        let per_layer = (h * c.qkv_width() + c.qkv_width() + h * h + 3 * h * inter + 2 * h) as f64 * 2.0;
        let step_bytes = c.layers as f64 * per_layer + ((h * c.vocab + h) * 2) as f64;
        Ok(Weights { embed, norm, lm_head, layers, step_bytes })
    }
}

/// Activations and KV cache for `batch` sequences of `prompt` tokens plus `new_tokens`.
pub struct Model<'w> {
    c: Config,
    w: &'w Weights,
    t: Tokens,
    batch: i64,
    /// Cache rows per sequence: prompt + new tokens.
    seq: i64,
    /// Per layer, [batch, kv_heads, seq, head_dim].
    k_cache: Vec<DeviceTensor>,
    v_cache: Vec<DeviceTensor>,
    /// RoPE tables [seq, head_dim / 2].
    cos: DeviceTensor,
    sin: DeviceTensor,
    /// Prefill activations ([batch · prompt, …]) and decode activations ([batch, …]).
    p: Activations,
    d: Activations,
    /// The decode step's f32 split-K accumulators (zeros between uses: each epilogue
    /// clears what it read).
    acc_qkv: DeviceTensor,
    acc_h: DeviceTensor,
    /// Decode attention's split-KV workspace (its partial outputs and (max, sum) per split,
    /// the group padded to a power of two) and its counters (zeros between launches: the last block
    /// of each (sequence, KV head) puts them back).
    attn_part: DeviceTensor,
    attn_stats: DeviceTensor,
    attn_count: DeviceTensor,
    /// [batch, vocab].
    pub logits: DeviceTensor,
    nlast: DeviceTensor,
}

/// The launch sites of a phase (each bound once: the same shapes every time).
struct Roles {
    embedding: &'static str,
    norm: &'static str,
    qkv: [&'static str; 2],
    rope: &'static str,
    attention: &'static str,
    o: [&'static str; 2],
    gate_up: [&'static str; 2],
    down: [&'static str; 2],
    final_norm: &'static str,
    lm_head: &'static str,
    argmax: &'static str,
}

macro_rules! roles {
    ($p:literal) => {
        Roles {
            embedding: concat!($p, "/embedding"),
            norm: concat!($p, "/norm"),
            qkv: [concat!($p, "/qkv proj"), concat!($p, "/qkv bias")],
            rope: concat!($p, "/rope+kv append"),
            attention: concat!($p, "/attention"),
            o: [concat!($p, "/o proj"), concat!($p, "/o residual")],
            gate_up: [concat!($p, "/gate-up proj"), concat!($p, "/swiglu")],
            down: [concat!($p, "/down proj"), concat!($p, "/down residual")],
            final_norm: concat!($p, "/final norm"),
            lm_head: concat!($p, "/lm head"),
            argmax: concat!($p, "/argmax"),
        }
    };
}

const PREFILL: Roles = roles!("prefill");
/// A decode step's epilogues are fused: the Q/K/V accumulator's with the bias, RoPE and the
/// KV append, the residual ones with the next norm (the next layer's input norm, the
/// post-attention norm, the final norm), the gate/up product with SwiGLU.
const DECODE: Roles = Roles {
    rope: "decode/qkv bias+rope+kv append",
    o: ["decode/o proj", "decode/o residual+norm"],
    gate_up: ["decode/gate-up proj+swiglu", "decode/swiglu (fused)"],
    down: ["decode/down proj", "decode/down residual+norm"],
    ..roles!("decode")
};

/// What a layer's launches differ in between the phases.
struct Steps<'a> {
    roles: &'static Roles,
    glue: Glue<'a>,
    /// The new positions of each sequence (RoPE's table rows and the cache rows).
    pos: TensorView<'a>,
    /// The new positions' Q heads, [B, S, heads, D], where attention reads them.
    q_new: TensorView<'a>,
    /// The attention of layer i, from the new Q heads and the cache into `attn`.
    attend: &'a dyn Fn(usize) -> Res<()>,
}

/// How a phase finishes its products.
enum Glue<'a> {
    /// The prefill: GEMMs into f16 intermediates that `bias_add`, `residual_add` and `swiglu`
    /// finish; the standalone norms; `rope_kv_append` on the biased Q/K/V rows.
    Unfused {
        matmul: &'a KernelSpec,
        mid_qkv: &'a DeviceTensor,
        mid_h: &'a DeviceTensor,
        mid_gu: &'a DeviceTensor,
        gate: TensorView<'a>,
        up: TensorView<'a>,
        k_new: TensorView<'a>,
        v_new: TensorView<'a>,
    },
    /// A decode step: split-K GEMMs (Q/K/V, O, down) into f32 accumulators that fused
    /// epilogues finish and clear — the Q/K/V one with the bias, RoPE and the KV append, the
    /// residual ones with the next RMSNorm — and the gate/up product with SwiGLU in one kernel.
    Fused {
        splitk: [&'a KernelSpec; 3],
        acc_qkv: &'a DeviceTensor,
        acc_h: &'a DeviceTensor,
        /// The Q, K and V heads of the Q/K/V accumulator, [B, 1, heads, D].
        acc_heads: [TensorView<'a>; 3],
    },
}

/// One phase's activations, `rows` of them.
struct Activations {
    /// The residual stream, ping-ponged: each residual add reads one and writes the other.
    x: [DeviceTensor; 2],
    normed: DeviceTensor,
    qkv_raw: DeviceTensor,
    qkv: DeviceTensor,
    attn: DeviceTensor,
    proj: DeviceTensor,
    gu: DeviceTensor,
    act: DeviceTensor,
}

impl Activations {
    fn new(jit: &Jit, c: &Config, rows: i64) -> Res<Activations> {
        let z = |n: i64| jit.device().zeros(DType::F16, &[rows, n]);
        Ok(Activations {
            x: [z(c.hidden)?, z(c.hidden)?],
            normed: z(c.hidden)?,
            qkv_raw: z(c.qkv_width())?,
            qkv: z(c.qkv_width())?,
            attn: z(c.hidden)?,
            proj: z(c.hidden)?,
            gu: z(2 * c.intermediate)?,
            act: z(c.intermediate)?,
        })
    }
}

/// RoPE's tables as transformers makes them: inverse frequencies and angles in f32, cos and
/// sin rounded to f16.
pub fn rope_tables(c: &Config, positions: i64) -> (Vec<f64>, Vec<f64>) {
    let half = c.head_dim / 2;
    let (mut cos, mut sin) = (vec![], vec![]);
    for p in 0..positions {
        for i in 0..half {
            let inv = 1.0f32 / (c.rope_theta as f32).powf((2 * i) as f32 / c.head_dim as f32);
            let angle = f64::from(p as f32 * inv);
            cos.push(angle.cos());
            sin.push(angle.sin());
        }
    }
    (cos, sin)
}

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
        let half = c.head_dim / 2;
        let cache = || dev.zeros(DType::F16, &[batch, c.kv_heads, seq, c.head_dim]);
        let gs = pow2(c.group());
        Ok(Model {
            c: c.clone(),
            w,
            t,
            batch,
            seq,
            k_cache: (0..c.layers).map(|_| cache()).collect::<Result<_, _>>()?,
            v_cache: (0..c.layers).map(|_| cache()).collect::<Result<_, _>>()?,
            cos: dev.upload(&HostTensor::from_f64(DType::F16, &[seq, half], &cos))?,
            sin: dev.upload(&HostTensor::from_f64(DType::F16, &[seq, half], &sin))?,
            p: Activations::new(jit, c, batch * prompt)?,
            d: Activations::new(jit, c, batch)?,
            acc_qkv: dev.zeros(DType::F32, &[batch, c.qkv_width()])?,
            acc_h: dev.zeros(DType::F32, &[batch, c.hidden])?,
            attn_part: dev.zeros(DType::F32, &[batch, c.kv_heads, DECODE_SPLITS, gs, c.head_dim])?,
            attn_stats: dev.zeros(DType::F32, &[batch, c.kv_heads, DECODE_SPLITS, 2, gs])?,
            attn_count: dev.zeros(DType::I32, &[batch, c.kv_heads])?,
            logits: dev.zeros(DType::F16, &[batch, c.vocab])?,
            nlast: dev.zeros(DType::F16, &[batch, c.hidden])?,
        })
    }

    /// Bytes of the KV cache a decode step at `len` cached positions reads.
    pub fn kv_bytes(&self, len: i64) -> f64 {
        (2 * self.c.layers * self.batch * self.c.kv_heads * len * self.c.head_dim * 2) as f64
    }

    /// One decoder layer `i` over the residual stream `a.x[cur]`; returns the index of the
    /// stream that holds its output. The phase supplies what differs between the prefill and a
    /// decode step: kernels, intermediate buffers, views and the attention.
    fn layer(&self, l: &Launcher<'_>, k: &Kernels, a: &Activations, s: &Steps<'_>, i: usize, cur: usize) -> Res<usize> {
        let (r, w) = (s.roles, &self.w.layers[i]);
        let eps = Arg::F32(self.c.eps as f32);
        let norm = |x: &DeviceTensor, g: &DeviceTensor| {
            l.launch(r.norm, &k.rmsnorm, &[Arg::Tensor(x), Arg::Tensor(g), Arg::Tensor(&a.normed), eps])
        };
        let (kc, vc) = (&self.k_cache[i], &self.v_cache[i]);
        let table = [Arg::Tensor(&self.cos), Arg::Tensor(&self.sin)];
        let (caches, pos) = ([Arg::Tensor(kc), Arg::Tensor(vc)], Arg::View(&s.pos));
        let next_norm = self.w.layers.get(i + 1).map_or(&self.w.norm, |l| &l.input_norm);
        match &s.glue {
            Glue::Unfused { matmul, mid_qkv, mid_h, mid_gu, gate, up, k_new, v_new } => {
                let gemm = |role, x: &DeviceTensor, wt: &DeviceTensor, mid: &DeviceTensor| {
                    l.launch(role, matmul, &[Arg::Tensor(x), Arg::Tensor(wt), Arg::Tensor(mid)])
                };
                // x[cur] + the product in `mid_h`, into x[1 - cur].
                let residual = |role: [&'static str; 2], x: &DeviceTensor, wt: &DeviceTensor, cur: usize| {
                    gemm(role[0], x, wt, mid_h)?;
                    let (from, to) = (Arg::Tensor(&a.x[cur]), Arg::Tensor(&a.x[1 - cur]));
                    l.launch(role[1], &k.residual_add, &[Arg::Tensor(mid_h), from, to])
                };
                norm(&a.x[cur], &w.input_norm)?;
                gemm(r.qkv[0], &a.normed, &w.wqkv, mid_qkv)?;
                l.launch(r.qkv[1], &k.bias_add, &[Arg::Tensor(mid_qkv), Arg::Tensor(&w.bqkv), Arg::Tensor(&a.qkv)])?;
                let new = [Arg::View(&s.q_new), Arg::View(k_new), Arg::View(v_new)];
                l.launch(
                    r.rope,
                    &k.rope_kv_append,
                    &[new[0], new[1], new[2], table[0], table[1], caches[0], caches[1], pos],
                )?;
                (s.attend)(i)?;
                residual(r.o, &a.attn, &w.wo, cur)?;
                let cur = 1 - cur;
                norm(&a.x[cur], &w.post_norm)?;
                gemm(r.gate_up[0], &a.normed, &w.wgu, mid_gu)?;
                l.launch(r.gate_up[1], &k.swiglu, &[Arg::View(gate), Arg::View(up), Arg::Tensor(&a.act)])?;
                residual(r.down, &a.act, &w.wd, cur)?;
                Ok(1 - cur)
            }
            Glue::Fused { splitk, acc_qkv, acc_h, acc_heads } => {
                let gemm = |role, spec, x: &DeviceTensor, wt: &DeviceTensor, acc: &DeviceTensor| {
                    l.launch(role, spec, &[Arg::Tensor(x), Arg::Tensor(wt), Arg::Tensor(acc)])
                };
                // x[cur] + the product, into x[1 - cur], and its RMSNorm by `g` into `normed`.
                let residual_norm = |role: [&'static str; 2],
                                     spec,
                                     x: &DeviceTensor,
                                     wt: &DeviceTensor,
                                     cur: usize,
                                     g: &DeviceTensor| {
                    gemm(role[0], spec, x, wt, acc_h)?;
                    let (from, to) = (Arg::Tensor(&a.x[cur]), Arg::Tensor(&a.x[1 - cur]));
                    let out = [to, Arg::Tensor(&a.normed), eps];
                    l.launch(
                        role[1],
                        &k.acc_residual_norm,
                        &[Arg::Tensor(acc_h), from, Arg::Tensor(g), out[0], out[1], out[2]],
                    )
                };
                // The previous layer's epilogue (or, for the first, the embedding's norm) left
                // this layer's normed input.
                if i == 0 {
                    norm(&a.x[cur], &w.input_norm)?;
                }
                gemm(r.qkv[0], splitk[0], &a.normed, &w.wqkv, acc_qkv)?;
                let (h, hk, hd) = (self.c.hidden, self.c.kv_heads, self.c.head_dim);
                let bias = [(0, self.c.heads), (h, hk), (h + hk * hd, hk)]
                    .map(|(at, heads)| w.bqkv.view(at, &[heads, hd], &[hd, 1]));
                let [bq, bk, bv] = bias;
                let (bq, bk, bv) = (bq?, bk?, bv?);
                let heads = acc_heads.each_ref().map(Arg::View);
                let qkv_args =
                    [heads[0], heads[1], heads[2], Arg::View(&bq), Arg::View(&bk), Arg::View(&bv), Arg::View(&s.q_new)];
                let mut args = qkv_args.to_vec();
                args.extend([table[0], table[1], caches[0], caches[1], pos]);
                l.launch(r.rope, &k.acc_bias_rope, &args)?;
                (s.attend)(i)?;
                residual_norm(r.o, splitk[1], &a.attn, &w.wo, cur, &w.post_norm)?;
                let cur = 1 - cur;
                let inter = self.c.intermediate;
                let gate = w.wgu.view(0, &[h, inter], &[2 * inter, 1])?;
                let up = w.wgu.view(inter, &[h, inter], &[2 * inter, 1])?;
                let gu = [Arg::Tensor(&a.normed), Arg::View(&gate), Arg::View(&up), Arg::Tensor(&a.act)];
                l.launch(r.gate_up[0], &k.matmul_swiglu, &gu)?;
                // The next layer's input norm, or the final norm after the last layer.
                residual_norm(r.down, splitk[2], &a.act, &w.wd, cur, next_norm)?;
                Ok(1 - cur)
            }
        }
    }

    /// The final norm of `x` (a sequence's last position each), the LM head into `logits`,
    /// and the greedy tokens into token row `t`.
    /// `x` is `None` when `normed` already holds the final norm of the last layer's output
    /// (a fused decode step).
    fn head(
        &self,
        l: &Launcher<'_>,
        k: &Kernels,
        r: &Roles,
        x: Option<Arg<'_>>,
        normed: &DeviceTensor,
        t: i64,
    ) -> Res<()> {
        let eps = Arg::F32(self.c.eps as f32);
        if let Some(x) = x {
            l.launch(r.final_norm, &k.rmsnorm, &[x, Arg::Tensor(&self.w.norm), Arg::Tensor(normed), eps])?;
        }
        l.launch(
            r.lm_head,
            &k.matmul,
            &[Arg::Tensor(normed), Arg::Tensor(&self.w.lm_head), Arg::Tensor(&self.logits)],
        )?;
        let row = self.t.row(t)?;
        l.launch(r.argmax, &k.argmax, &[Arg::Tensor(&self.logits), Arg::View(&row)])?;
        Ok(())
    }

    /// The prompt through every layer, the KV cache filled; the logits of each sequence's last
    /// position in `logits` and their argmax in row 0 of the tokens.
    pub fn prefill(&self, l: &Launcher<'_>, k: &Kernels) -> Res<()> {
        let c = &self.c;
        let (b, p, hd, s) = (self.batch, self.t.prompt, c.head_dim, self.seq);
        let (h, w3, inter, hk) = (c.hidden, c.qkv_width(), c.intermediate, c.kv_heads);
        let a = &self.p;
        let r = &PREFILL;
        l.launch(
            r.embedding,
            &k.embedding,
            &[Arg::Tensor(&self.t.prompt_ids), Arg::Tensor(&self.w.embed), Arg::Tensor(&a.x[0])],
        )?;
        // Q, K and V heads of the fused QKV rows: [B, P, heads, D] for RoPE, [B, heads, P, D]
        // for attention and the cache; the attention's output in the rows of `attn`.
        let q_attn = a.qkv.view(0, &[b, c.heads, p, hd], &[p * w3, hd, w3, 1])?;
        let out = a.attn.view(0, &[b, c.heads, p, hd], &[p * h, hd, h, 1])?;
        let scale = Arg::F32(1.0 / (hd as f32).sqrt());
        let attend = |i: usize| -> Res<()> {
            let [kc, vc] =
                [&self.k_cache[i], &self.v_cache[i]].map(|t| t.view(0, &[b, hk, p, hd], &[hk * s * hd, s * hd, hd, 1]));
            let (kc, vc) = (kc?, vc?);
            l.launch(
                r.attention,
                &k.fmha,
                &[Arg::View(&q_attn), Arg::View(&kc), Arg::View(&vc), Arg::View(&out), scale],
            )
        };
        let steps = Steps {
            roles: r,
            glue: Glue::Unfused {
                matmul: &k.matmul,
                mid_qkv: &a.qkv_raw,
                mid_h: &a.proj,
                mid_gu: &a.gu,
                gate: a.gu.view(0, &[b * p, inter], &[2 * inter, 1])?,
                up: a.gu.view(inter, &[b * p, inter], &[2 * inter, 1])?,
                k_new: a.qkv.view(h, &[b, p, hk, hd], &[p * w3, w3, hd, 1])?,
                v_new: a.qkv.view(h + hk * hd, &[b, p, hk, hd], &[p * w3, w3, hd, 1])?,
            },
            q_new: a.qkv.view(0, &[b, p, c.heads, hd], &[p * w3, w3, hd, 1])?,
            pos: self.t.positions(0)?,
            attend: &attend,
        };
        let mut cur = 0;
        for i in 0..self.w.layers.len() {
            cur = self.layer(l, k, a, &steps, i, cur)?;
        }
        // Only each sequence's last position goes on to the LM head.
        let last = a.x[cur].view((p - 1) * h, &[b, h], &[p * h, 1])?;
        self.head(l, k, r, Some(Arg::View(&last)), &self.nlast, 0)
    }

    /// Decode step `t` (1 ≤ t < new_tokens): feeds token row t − 1 (ours, or the forced one)
    /// at position prompt + t − 1 of every sequence, leaves the logits in `logits` and their
    /// argmax in token row t.
    pub fn decode(&self, l: &Launcher<'_>, k: &Kernels, t: i64, forced: bool) -> Res<()> {
        let c = &self.c;
        let (b, hd) = (self.batch, c.head_dim);
        let (h, w3, hk) = (c.hidden, c.qkv_width(), c.kv_heads);
        let a = &self.d;
        let r = &DECODE;
        let ids = self.t.feed(t, forced)?;
        l.launch(r.embedding, &k.embedding, &[Arg::View(&ids), Arg::Tensor(&self.w.embed), Arg::Tensor(&a.x[0])])?;
        let q_attn = a.qkv.view(0, &[b, c.heads, hd], &[w3, hd, 1])?;
        let out = a.attn.view(0, &[b, c.heads, hd], &[h, hd, 1])?;
        // The lengths after this token (row t + 1 exists: t < new_tokens).
        let lens = self.t.positions(t + 1)?;
        let scale = Arg::F32(1.0 / (hd as f32).sqrt());
        let attend = |i: usize| -> Res<()> {
            let (kc, vc) = (&self.k_cache[i], &self.v_cache[i]);
            let args = [
                Arg::View(&q_attn),
                Arg::Tensor(kc),
                Arg::Tensor(vc),
                Arg::View(&out),
                Arg::View(&lens),
                Arg::Tensor(&self.attn_part),
                Arg::Tensor(&self.attn_stats),
                Arg::Tensor(&self.attn_count),
                scale,
            ];
            l.launch(r.attention, &k.decode_attention, &args)
        };
        let split = |s: i64| k.splitk.get(&s).ok_or_else(|| format!("no split-K kernel with SPLIT={s}"));
        let heads = |at: i64, n: i64| self.acc_qkv.view(at, &[b, 1, n, hd], &[w3, w3, hd, 1]);
        let steps = Steps {
            roles: r,
            glue: Glue::Fused {
                splitk: [split(k.splits[0])?, split(k.splits[1])?, split(k.splits[2])?],
                acc_qkv: &self.acc_qkv,
                acc_h: &self.acc_h,
                acc_heads: [heads(0, c.heads)?, heads(h, hk)?, heads(h + hk * hd, hk)?],
            },
            q_new: a.qkv.view(0, &[b, 1, c.heads, hd], &[w3, w3, hd, 1])?,
            pos: self.t.positions(t)?,
            attend: &attend,
        };
        let mut cur = 0;
        for i in 0..self.w.layers.len() {
            cur = self.layer(l, k, a, &steps, i, cur)?;
        }
        self.head(l, k, r, None, &a.normed, t)
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
        let k = Kernels::new(&Config::QWEN2_7B, SPLITS);
        for arch in ["sm_90a", "sm_103a", "sm_121a"] {
            for s in k.all() {
                if let Err(e) = s.compile_for(arch) {
                    panic!("{arch}:\n{}", e.render());
                }
            }
        }
    }

    #[test]
    fn rope_tables_match_transformers_formula() {
        let (cos, sin) = rope_tables(&Config::QWEN2_7B, 3);
        assert_eq!(cos.len(), 3 * 64);
        // Position 0: angle 0; position 2, frequency 0 (inv_freq 1): angle 2.
        assert_eq!((cos[0], sin[0]), (1.0, 0.0));
        assert!((cos[128] - 2f64.cos()).abs() < 1e-7 && (sin[128] - 2f64.sin()).abs() < 1e-7);
        // The last frequency of position 1: theta^(-126/128).
        let want = 1e6f64.powf(-126.0 / 128.0);
        assert!((sin[64 + 63] - want.sin()).abs() < 1e-6 * want, "{} vs {}", sin[127], want.sin());
    }
}
