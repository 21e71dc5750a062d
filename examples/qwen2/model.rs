//! The decoder on tilec kernels: the weights on the device (transposed once into the [K, N]
//! layout the GEMMs read, the Q/K/V and gate/up projections fused), the activations and the
//! KV cache, the prefill and the decode step. Every GPU operation is a kernel of the library
//! (`kernels/*.tile`) launched through the JIT: nothing else computes on the device (the only
//! other device operations are the uploads of the weights and tables and the downloads of
//! tokens and logits).

use crate::config::Config;
use crate::Res;
use std::cell::RefCell;
use std::collections::BTreeMap;
use tilec::jit::{Arg, Bound, Jit, KernelSpec};
use tilec::runtime::{DeviceTensor, HostTensor, TensorView};
use tilec::{ConstArg, DType};

macro_rules! kernel_source {
    ($file:literal) => {
        (concat!("kernels/", $file), include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $file)))
    };
}

/// Split-K factors of the decode step's products (M = batch): enough blocks to cover the
/// SMs when N / 64 alone does not (bench/results/2026-11-23-h100-decoder-kernels).
const SPLIT_QKV: i64 = 4;
const SPLIT_O: i64 = 4;
const SPLIT_GATE_UP: i64 = 2;
const SPLIT_DOWN: i64 = 16;

/// The library kernels the decoder launches, with their constants.
pub struct Kernels {
    rmsnorm: KernelSpec,
    matmul: KernelSpec,
    splitk: BTreeMap<i64, KernelSpec>,
    bias_add: KernelSpec,
    residual_add: KernelSpec,
    swiglu: KernelSpec,
    rope: KernelSpec,
    kv_append: KernelSpec,
    fmha: KernelSpec,
    decode_attention: KernelSpec,
    embedding: KernelSpec,
    argmax: KernelSpec,
    transpose: KernelSpec,
    acc_bias: KernelSpec,
    acc_residual: KernelSpec,
    acc_swiglu: KernelSpec,
}

fn spec((name, text): (&str, &str), kernel: &str, consts: &[(&str, ConstArg)]) -> KernelSpec {
    let mut s = KernelSpec::from_source(name, text).kernel(kernel).constant("T", ConstArg::DType(DType::F16));
    for (k, v) in consts {
        s = s.constant(k, v.clone());
    }
    s
}

impl Kernels {
    pub fn new(c: &Config) -> Kernels {
        let int = ConstArg::Int;
        let splitk = [SPLIT_QKV, SPLIT_O, SPLIT_GATE_UP, SPLIT_DOWN]
            .into_iter()
            .map(|s| (s, spec(kernel_source!("matmul_splitk.tile"), "matmul_splitk", &[("SPLIT", int(s))])))
            .collect();
        let epilogue = kernel_source!("splitk_epilogue.tile");
        Kernels {
            rmsnorm: spec(kernel_source!("rmsnorm.tile"), "rmsnorm", &[("BLOCK_N", int(pow2(c.hidden)))]),
            matmul: spec(kernel_source!("matmul.tile"), "matmul", &[]),
            splitk,
            bias_add: spec(kernel_source!("bias_add.tile"), "bias_add", &[("BLOCK_N", int(4096))]),
            residual_add: spec(kernel_source!("residual_add.tile"), "residual_add", &[("BLOCK_N", int(4096))]),
            swiglu: spec(kernel_source!("swiglu.tile"), "swiglu", &[("BLOCK_N", int(4096))]),
            rope: spec(
                kernel_source!("rope.tile"),
                "rope",
                // Tiles of whole heads, a power of two of them: the heads past the tensor's
                // (28 of 32) load zeros and are not stored.
                &[("H", int(pow2(c.heads))), ("HK", int(pow2(c.kv_heads))), ("HALF", int(c.head_dim / 2))],
            ),
            kv_append: spec(kernel_source!("kv_append.tile"), "kv_append", &[("D_TILE", int(c.head_dim))]),
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
                &[("G", int(c.group())), ("GP", int(pow2(c.group()).max(16))), ("D", int(c.head_dim))],
            ),
            embedding: spec(kernel_source!("embedding.tile"), "embedding", &[]),
            argmax: spec(kernel_source!("argmax.tile"), "argmax", &[]),
            transpose: spec(kernel_source!("transpose.tile"), "transpose", &[]),
            acc_bias: spec(epilogue, "acc_bias", &[]),
            acc_residual: spec(epilogue, "acc_residual", &[]),
            acc_swiglu: spec(epilogue, "acc_swiglu", &[]),
        }
    }
}

fn pow2(n: i64) -> i64 {
    (n.max(1) as u64).next_power_of_two() as i64
}

/// A launch under a profile: its role and the events before and after it.
type Timed = (&'static str, cudarc::driver::CudaEvent, cudarc::driver::CudaEvent);

/// Launches kernels through the JIT: each launch site (a role) is bound once — compiled or
/// found in the cache, loaded — and launched without a lookup afterwards. With a profile
/// open, each launch is bracketed by CUDA events under its role.
pub struct Launcher<'j> {
    pub jit: &'j Jit,
    bound: RefCell<BTreeMap<&'static str, Bound>>,
    profile: RefCell<Option<Vec<Timed>>>,
}

impl<'j> Launcher<'j> {
    pub fn new(jit: &'j Jit) -> Launcher<'j> {
        Launcher { jit, bound: RefCell::new(BTreeMap::new()), profile: RefCell::new(None) }
    }

    /// Launches `spec` for the launch site `role` (`phase/what`: the same shapes and
    /// alignments every time it is called).
    pub fn launch(&self, role: &'static str, spec: &KernelSpec, args: &[Arg<'_>]) -> Res<()> {
        let bound = {
            let mut map = self.bound.borrow_mut();
            match map.get(role) {
                Some(b) => b.clone(),
                None => {
                    let b = self.jit.bind(spec, args).map_err(|e| format!("{role}: {e}"))?;
                    map.insert(role, b.clone());
                    b
                }
            }
        };
        let profiling = self.profile.borrow().is_some();
        let stream = &self.jit.device().stream;
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = if profiling { Some(stream.record_event(flags)?) } else { None };
        self.jit.launch_bound(&bound, args).map_err(|e| format!("{role}: {e}"))?;
        if let Some(start) = start {
            let end = stream.record_event(flags)?;
            if let Some(p) = self.profile.borrow_mut().as_mut() {
                p.push((role, start, end));
            }
        }
        Ok(())
    }

    /// Distinct kernels bound so far.
    pub fn bound(&self) -> usize {
        self.bound.borrow().len()
    }

    pub fn start_profile(&self) {
        *self.profile.borrow_mut() = Some(vec![]);
    }

    /// Milliseconds per role (summed over the layers) since [`Launcher::start_profile`], in
    /// the order the roles first ran, and the launches counted.
    pub fn end_profile(&self) -> Res<Vec<(&'static str, f64, usize)>> {
        self.jit.device().synchronize()?;
        let events = self.profile.borrow_mut().take().unwrap_or_default();
        let mut out: Vec<(&'static str, f64, usize)> = vec![];
        for (role, start, end) in events {
            let ms = f64::from(start.elapsed_ms(&end)?);
            match out.iter_mut().find(|(r, _, _)| *r == role) {
                Some(e) => {
                    e.1 += ms;
                    e.2 += 1;
                }
                None => out.push((role, ms, 1)),
            }
        }
        Ok(out)
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

/// The tensors of a safetensors file by name, each checked for dtype and shape.
pub struct File<'a>(pub safetensors::SafeTensors<'a>);

impl File<'_> {
    fn f16(&self, name: &str, shape: &[i64]) -> Res<&[u8]> {
        let t = self.0.tensor(name).map_err(|e| format!("model.safetensors: `{name}`: {e}"))?;
        let got: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
        if t.dtype() != safetensors::Dtype::F16 || got != shape {
            return Err(format!(
                "model.safetensors: `{name}` is {:?} {got:?}, expected F16 {shape:?} (config mismatch?)",
                t.dtype()
            )
            .into());
        }
        Ok(t.data())
    }
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
    batch: i64,
    prompt: i64,
    new_tokens: i64,
    /// Cache rows per sequence: prompt + new tokens.
    seq: i64,
    /// Per layer, [batch, kv_heads, seq, head_dim].
    k_cache: Vec<DeviceTensor>,
    v_cache: Vec<DeviceTensor>,
    /// RoPE tables [seq, head_dim / 2].
    cos: DeviceTensor,
    sin: DeviceTensor,
    /// Row r: the positions of every sequence at decode step r (r ≥ 1: prompt + r − 1); row 0
    /// zeros (the prefill's first position). Views of its rows are kv_append's positions and
    /// decode attention's lengths, so no step uploads anything.
    positions: DeviceTensor,
    /// The prompt's ids, [batch · prompt].
    prompt_ids: DeviceTensor,
    /// Our greedy tokens by step, [new_tokens, batch]; and tokens to feed instead (the
    /// reference's, once ours diverged), same layout.
    tokens: DeviceTensor,
    forced: DeviceTensor,
    /// Prefill activations ([batch · prompt, …]) and decode activations ([batch, …]).
    p: Activations,
    d: Activations,
    /// The decode step's f32 split-K accumulators (zeros between uses: each epilogue
    /// clears what it read).
    acc_qkv: DeviceTensor,
    acc_h: DeviceTensor,
    acc_gu: DeviceTensor,
    /// [batch, vocab].
    pub logits: DeviceTensor,
    nlast: DeviceTensor,
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
        let prompt = prompt_ids.len() as i64 / batch.max(1);
        if batch < 1 || prompt < 1 || prompt * batch != prompt_ids.len() as i64 || new_tokens < 1 {
            return Err(
                format!("{} prompt ids for {batch} sequences and {new_tokens} new tokens", prompt_ids.len()).into()
            );
        }
        if let Some(bad) = prompt_ids.iter().find(|&&t| !(0..c.vocab).contains(&t)) {
            return Err(format!("the prompt holds token {bad}, outside the vocabulary of {}", c.vocab).into());
        }
        let seq = prompt + new_tokens;
        let ids = |v: &[i64], shape: &[i64]| {
            let f: Vec<f64> = v.iter().map(|&t| t as f64).collect();
            dev.upload(&HostTensor::from_f64(DType::I32, shape, &f))
        };
        let (cos, sin) = rope_tables(c, seq);
        let half = c.head_dim / 2;
        let mut pos = vec![0i64; batch as usize];
        for r in 1..=new_tokens {
            pos.extend(std::iter::repeat_n(prompt + r - 1, batch as usize));
        }
        let cache = || dev.zeros(DType::F16, &[batch, c.kv_heads, seq, c.head_dim]);
        Ok(Model {
            c: c.clone(),
            w,
            batch,
            prompt,
            new_tokens,
            seq,
            k_cache: (0..c.layers).map(|_| cache()).collect::<Result<_, _>>()?,
            v_cache: (0..c.layers).map(|_| cache()).collect::<Result<_, _>>()?,
            cos: dev.upload(&HostTensor::from_f64(DType::F16, &[seq, half], &cos))?,
            sin: dev.upload(&HostTensor::from_f64(DType::F16, &[seq, half], &sin))?,
            positions: ids(&pos, &[new_tokens + 1, batch])?,
            prompt_ids: ids(prompt_ids, &[batch * prompt])?,
            tokens: dev.zeros(DType::I32, &[new_tokens, batch])?,
            forced: ids(forced, &[new_tokens, batch])?,
            p: Activations::new(jit, c, batch * prompt)?,
            d: Activations::new(jit, c, batch)?,
            acc_qkv: dev.zeros(DType::F32, &[batch, c.qkv_width()])?,
            acc_h: dev.zeros(DType::F32, &[batch, c.hidden])?,
            acc_gu: dev.zeros(DType::F32, &[batch, 2 * c.intermediate])?,
            logits: dev.zeros(DType::F16, &[batch, c.vocab])?,
            nlast: dev.zeros(DType::F16, &[batch, c.hidden])?,
        })
    }

    /// Bytes of the KV cache a decode step at `len` cached positions reads.
    pub fn kv_bytes(&self, len: i64) -> f64 {
        (2 * self.c.layers * self.batch * self.c.kv_heads * len * self.c.head_dim * 2) as f64
    }

    fn pos_row(&self, r: i64) -> Res<TensorView<'_>> {
        Ok(self.positions.view(r * self.batch, &[self.batch], &[1])?)
    }

    /// The prompt through every layer, the KV cache filled; the logits of each sequence's last
    /// position in `logits` and their argmax in row 0 of the tokens.
    pub fn prefill(&self, l: &Launcher<'_>, k: &Kernels) -> Res<()> {
        let c = &self.c;
        let (b, p, hd) = (self.batch, self.prompt, c.head_dim);
        let (h, w3, inter) = (c.hidden, c.qkv_width(), c.intermediate);
        let a = &self.p;
        let eps = Arg::F32(c.eps as f32);
        let scale = Arg::F32(1.0 / (hd as f32).sqrt());
        let mut cur = 0;
        l.launch(
            "prefill/embedding",
            &k.embedding,
            &[Arg::Tensor(&self.prompt_ids), Arg::Tensor(&self.w.embed), Arg::Tensor(&a.x[cur])],
        )?;
        // Q heads [B, P, H, D] (and their [B, H, P, D] permutation for attention), K and V
        // heads [B, P, HK, D] of the fused QKV rows.
        let q_rope = a.qkv.view(0, &[b, p, c.heads, hd], &[p * w3, w3, hd, 1])?;
        let k_rope = a.qkv.view(h, &[b, p, c.kv_heads, hd], &[p * w3, w3, hd, 1])?;
        let q_attn = a.qkv.view(0, &[b, c.heads, p, hd], &[p * w3, hd, w3, 1])?;
        let k_new = a.qkv.view(h, &[b, c.kv_heads, p, hd], &[p * w3, hd, w3, 1])?;
        let v_new = a.qkv.view(h + c.kv_heads * hd, &[b, c.kv_heads, p, hd], &[p * w3, hd, w3, 1])?;
        let out = a.attn.view(0, &[b, c.heads, p, hd], &[p * h, hd, h, 1])?;
        let cos = self.cos.view(0, &[p, hd / 2], &[hd / 2, 1])?;
        let sin = self.sin.view(0, &[p, hd / 2], &[hd / 2, 1])?;
        let gate = a.gu.view(0, &[b * p, inter], &[2 * inter, 1])?;
        let up = a.gu.view(inter, &[b * p, inter], &[2 * inter, 1])?;
        let start = self.pos_row(0)?;
        for (i, layer) in self.w.layers.iter().enumerate() {
            let kc = self.k_cache[i].view(
                0,
                &[b, c.kv_heads, p, hd],
                &[c.kv_heads * self.seq * hd, self.seq * hd, hd, 1],
            )?;
            let vc = self.v_cache[i].view(
                0,
                &[b, c.kv_heads, p, hd],
                &[c.kv_heads * self.seq * hd, self.seq * hd, hd, 1],
            )?;
            l.launch(
                "prefill/norm",
                &k.rmsnorm,
                &[Arg::Tensor(&a.x[cur]), Arg::Tensor(&layer.input_norm), Arg::Tensor(&a.normed), eps],
            )?;
            l.launch(
                "prefill/qkv proj",
                &k.matmul,
                &[Arg::Tensor(&a.normed), Arg::Tensor(&layer.wqkv), Arg::Tensor(&a.qkv_raw)],
            )?;
            l.launch(
                "prefill/qkv bias",
                &k.bias_add,
                &[Arg::Tensor(&a.qkv_raw), Arg::Tensor(&layer.bqkv), Arg::Tensor(&a.qkv)],
            )?;
            l.launch(
                "prefill/rope",
                &k.rope,
                &[Arg::View(&q_rope), Arg::View(&k_rope), Arg::View(&cos), Arg::View(&sin)],
            )?;
            l.launch(
                "prefill/kv append",
                &k.kv_append,
                &[Arg::View(&k_new), Arg::Tensor(&self.k_cache[i]), Arg::View(&start)],
            )?;
            l.launch(
                "prefill/kv append",
                &k.kv_append,
                &[Arg::View(&v_new), Arg::Tensor(&self.v_cache[i]), Arg::View(&start)],
            )?;
            l.launch(
                "prefill/attention",
                &k.fmha,
                &[Arg::View(&q_attn), Arg::View(&kc), Arg::View(&vc), Arg::View(&out), scale],
            )?;
            l.launch(
                "prefill/o proj",
                &k.matmul,
                &[Arg::Tensor(&a.attn), Arg::Tensor(&layer.wo), Arg::Tensor(&a.proj)],
            )?;
            l.launch(
                "prefill/residual",
                &k.residual_add,
                &[Arg::Tensor(&a.proj), Arg::Tensor(&a.x[cur]), Arg::Tensor(&a.x[1 - cur])],
            )?;
            cur = 1 - cur;
            l.launch(
                "prefill/norm",
                &k.rmsnorm,
                &[Arg::Tensor(&a.x[cur]), Arg::Tensor(&layer.post_norm), Arg::Tensor(&a.normed), eps],
            )?;
            l.launch(
                "prefill/gate-up proj",
                &k.matmul,
                &[Arg::Tensor(&a.normed), Arg::Tensor(&layer.wgu), Arg::Tensor(&a.gu)],
            )?;
            l.launch("prefill/swiglu", &k.swiglu, &[Arg::View(&gate), Arg::View(&up), Arg::Tensor(&a.act)])?;
            l.launch(
                "prefill/down proj",
                &k.matmul,
                &[Arg::Tensor(&a.act), Arg::Tensor(&layer.wd), Arg::Tensor(&a.proj)],
            )?;
            l.launch(
                "prefill/residual",
                &k.residual_add,
                &[Arg::Tensor(&a.proj), Arg::Tensor(&a.x[cur]), Arg::Tensor(&a.x[1 - cur])],
            )?;
            cur = 1 - cur;
        }
        // Only each sequence's last position goes on to the LM head.
        let last = a.x[cur].view((p - 1) * h, &[b, h], &[p * h, 1])?;
        l.launch(
            "prefill/final norm",
            &k.rmsnorm,
            &[Arg::View(&last), Arg::Tensor(&self.w.norm), Arg::Tensor(&self.nlast), eps],
        )?;
        l.launch(
            "prefill/lm head",
            &k.matmul,
            &[Arg::Tensor(&self.nlast), Arg::Tensor(&self.w.lm_head), Arg::Tensor(&self.logits)],
        )?;
        let row = self.tokens.view(0, &[b, 1], &[1, 1])?;
        l.launch("prefill/argmax", &k.argmax, &[Arg::Tensor(&self.logits), Arg::View(&row)])?;
        Ok(())
    }

    /// Decode step `t` (1 ≤ t < new_tokens): feeds token row t − 1 (ours, or the forced one)
    /// at position prompt + t − 1 of every sequence, leaves the logits in `logits` and their
    /// argmax in token row t.
    pub fn decode(&self, l: &Launcher<'_>, k: &Kernels, t: i64, forced: bool) -> Res<()> {
        let c = &self.c;
        if !(1..self.new_tokens).contains(&t) {
            return Err(format!("decode step {t} outside 1..{}", self.new_tokens).into());
        }
        let (b, hd) = (self.batch, c.head_dim);
        let (h, w3, inter) = (c.hidden, c.qkv_width(), c.intermediate);
        let a = &self.d;
        let eps = Arg::F32(c.eps as f32);
        let scale = Arg::F32(1.0 / (hd as f32).sqrt());
        let position = self.prompt + t - 1;
        let feed = if forced { &self.forced } else { &self.tokens };
        let ids = feed.view((t - 1) * b, &[b], &[1])?;
        let mut cur = 0;
        l.launch(
            "decode/embedding",
            &k.embedding,
            &[Arg::View(&ids), Arg::Tensor(&self.w.embed), Arg::Tensor(&a.x[cur])],
        )?;
        let q_rope = a.qkv.view(0, &[b, 1, c.heads, hd], &[w3, w3, hd, 1])?;
        let k_rope = a.qkv.view(h, &[b, 1, c.kv_heads, hd], &[w3, w3, hd, 1])?;
        let q_attn = a.qkv.view(0, &[b, c.heads, hd], &[w3, hd, 1])?;
        let k_new = a.qkv.view(h, &[b, c.kv_heads, 1, hd], &[w3, hd, w3, 1])?;
        let v_new = a.qkv.view(h + c.kv_heads * hd, &[b, c.kv_heads, 1, hd], &[w3, hd, w3, 1])?;
        let out = a.attn.view(0, &[b, c.heads, hd], &[h, hd, 1])?;
        let cos = self.cos.view(position * hd / 2, &[1, hd / 2], &[hd / 2, 1])?;
        let sin = self.sin.view(position * hd / 2, &[1, hd / 2], &[hd / 2, 1])?;
        let gate = self.acc_gu.view(0, &[b, inter], &[2 * inter, 1])?;
        let up = self.acc_gu.view(inter, &[b, inter], &[2 * inter, 1])?;
        let pos = self.pos_row(t)?;
        // The lengths after this token (row t + 1 exists: t < new_tokens).
        let lens = self.pos_row(t + 1)?;
        let split = |s: i64| k.splitk.get(&s).ok_or_else(|| format!("no split-K kernel with SPLIT={s}"));
        for (i, layer) in self.w.layers.iter().enumerate() {
            l.launch(
                "decode/norm",
                &k.rmsnorm,
                &[Arg::Tensor(&a.x[cur]), Arg::Tensor(&layer.input_norm), Arg::Tensor(&a.normed), eps],
            )?;
            l.launch(
                "decode/qkv proj",
                split(SPLIT_QKV)?,
                &[Arg::Tensor(&a.normed), Arg::Tensor(&layer.wqkv), Arg::Tensor(&self.acc_qkv)],
            )?;
            l.launch(
                "decode/qkv bias",
                &k.acc_bias,
                &[Arg::Tensor(&self.acc_qkv), Arg::Tensor(&layer.bqkv), Arg::Tensor(&a.qkv)],
            )?;
            l.launch(
                "decode/rope",
                &k.rope,
                &[Arg::View(&q_rope), Arg::View(&k_rope), Arg::View(&cos), Arg::View(&sin)],
            )?;
            l.launch(
                "decode/kv append",
                &k.kv_append,
                &[Arg::View(&k_new), Arg::Tensor(&self.k_cache[i]), Arg::View(&pos)],
            )?;
            l.launch(
                "decode/kv append",
                &k.kv_append,
                &[Arg::View(&v_new), Arg::Tensor(&self.v_cache[i]), Arg::View(&pos)],
            )?;
            l.launch(
                "decode/attention",
                &k.decode_attention,
                &[
                    Arg::View(&q_attn),
                    Arg::Tensor(&self.k_cache[i]),
                    Arg::Tensor(&self.v_cache[i]),
                    Arg::View(&out),
                    Arg::View(&lens),
                    scale,
                ],
            )?;
            l.launch(
                "decode/o proj",
                split(SPLIT_O)?,
                &[Arg::Tensor(&a.attn), Arg::Tensor(&layer.wo), Arg::Tensor(&self.acc_h)],
            )?;
            l.launch(
                "decode/o residual",
                &k.acc_residual,
                &[Arg::Tensor(&self.acc_h), Arg::Tensor(&a.x[cur]), Arg::Tensor(&a.x[1 - cur])],
            )?;
            cur = 1 - cur;
            l.launch(
                "decode/norm",
                &k.rmsnorm,
                &[Arg::Tensor(&a.x[cur]), Arg::Tensor(&layer.post_norm), Arg::Tensor(&a.normed), eps],
            )?;
            l.launch(
                "decode/gate-up proj",
                split(SPLIT_GATE_UP)?,
                &[Arg::Tensor(&a.normed), Arg::Tensor(&layer.wgu), Arg::Tensor(&self.acc_gu)],
            )?;
            l.launch("decode/swiglu", &k.acc_swiglu, &[Arg::View(&gate), Arg::View(&up), Arg::Tensor(&a.act)])?;
            l.launch(
                "decode/down proj",
                split(SPLIT_DOWN)?,
                &[Arg::Tensor(&a.act), Arg::Tensor(&layer.wd), Arg::Tensor(&self.acc_h)],
            )?;
            l.launch(
                "decode/down residual",
                &k.acc_residual,
                &[Arg::Tensor(&self.acc_h), Arg::Tensor(&a.x[cur]), Arg::Tensor(&a.x[1 - cur])],
            )?;
            cur = 1 - cur;
        }
        l.launch(
            "decode/final norm",
            &k.rmsnorm,
            &[Arg::Tensor(&a.x[cur]), Arg::Tensor(&self.w.norm), Arg::Tensor(&a.normed), eps],
        )?;
        l.launch(
            "decode/lm head",
            &k.matmul,
            &[Arg::Tensor(&a.normed), Arg::Tensor(&self.w.lm_head), Arg::Tensor(&self.logits)],
        )?;
        let row = self.tokens.view(t * b, &[b, 1], &[1, 1])?;
        l.launch("decode/argmax", &k.argmax, &[Arg::Tensor(&self.logits), Arg::View(&row)])?;
        Ok(())
    }

    /// Token row `t` (ours).
    pub fn tokens(&self, l: &Launcher<'_>, t: i64) -> Res<Vec<i64>> {
        let all = l.jit.device().download(&self.tokens)?.to_f64();
        let b = self.batch as usize;
        Ok(all[t as usize * b..(t as usize + 1) * b].iter().map(|&v| v as i64).collect())
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
        let k = Kernels::new(&Config::QWEN2_7B);
        let mut all = vec![
            &k.rmsnorm,
            &k.matmul,
            &k.bias_add,
            &k.residual_add,
            &k.swiglu,
            &k.rope,
            &k.kv_append,
            &k.fmha,
            &k.decode_attention,
            &k.embedding,
            &k.argmax,
            &k.transpose,
            &k.acc_bias,
            &k.acc_residual,
            &k.acc_swiglu,
        ];
        all.extend(k.splitk.values());
        for arch in ["sm_90a", "sm_103a", "sm_121a"] {
            for s in &all {
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
