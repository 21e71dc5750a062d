//! What the model examples share to launch the library's kernels: kernel specs from the
//! embedded `kernels/` sources, a launcher that binds each launch site once (and profiles
//! them with CUDA events), and the checked tensors of a safetensors file.

use crate::Res;
use std::cell::RefCell;
use std::collections::BTreeMap;
use tilec::jit::{Arg, Bound, Jit, KernelSpec};
use tilec::runtime::{DeviceTensor, HostTensor, TensorView};
use tilec::{ConstArg, DType};

/// `(name, text)` of a kernel file of the library, embedded at build time.
macro_rules! kernel_source {
    ($file:literal) => {
        (concat!("kernels/", $file), include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $file)))
    };
}

/// The spec of `kernel` of a library file in fp16 (its dtype constant `T`) with the given
/// constants.
pub fn spec(source: (&str, &str), kernel: &str, consts: &[(&str, ConstArg)]) -> KernelSpec {
    with(untyped(source, kernel, &[]).constant("T", ConstArg::DType(DType::F16)), consts)
}

/// The spec of `kernel` of a library file with the given constants only (a kernel without
/// a dtype constant: integer work such as moe_align's).
pub fn untyped((name, text): (&str, &str), kernel: &str, consts: &[(&str, ConstArg)]) -> KernelSpec {
    with(KernelSpec::from_source(name, text).kernel(kernel), consts)
}

fn with(mut s: KernelSpec, consts: &[(&str, ConstArg)]) -> KernelSpec {
    for (k, v) in consts {
        s = s.constant(k, v.clone());
    }
    s
}

/// `matmul_swiglu`'s spec with its L2 prefetch depth set (`--prefetch N` of the model
/// examples: the weight tiles each block announces before the wait for the kernel before).
pub fn with_prefetch(spec: &KernelSpec, depth: i64) -> Res<KernelSpec> {
    if !(0..=1024).contains(&depth) {
        return Err(format!("--prefetch {depth}: a prefetch depth from 0 to 1024 tiles").into());
    }
    println!("the gate/up product's L2 prefetch depth: {depth} tiles");
    Ok(spec.clone().constant("PREFETCH", ConstArg::Int(depth)))
}

/// The smallest power of two at least `n` (1 for n ≤ 1).
pub fn pow2(n: i64) -> i64 {
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
    /// Passes left out of every kernel's pipeline (`--disable-pass`, for ablations).
    disabled: std::collections::BTreeSet<String>,
}

impl<'j> Launcher<'j> {
    pub fn new(jit: &'j Jit) -> Launcher<'j> {
        Launcher {
            jit,
            bound: RefCell::new(BTreeMap::new()),
            profile: RefCell::new(None),
            disabled: Default::default(),
        }
    }

    /// Leaves `passes` out of the pipeline of every kernel launched from now on.
    pub fn disable_passes(mut self, passes: &[String]) -> Launcher<'j> {
        self.disabled.extend(passes.iter().cloned());
        self
    }

    /// Launches `spec` for the launch site `role` (`phase/what`: the same shapes and
    /// alignments every time it is called).
    pub fn launch(&self, role: &'static str, spec: &KernelSpec, args: &[Arg<'_>]) -> Res<()> {
        if !self.bound.borrow().contains_key(role) {
            let b = if self.disabled.is_empty() {
                self.jit.bind(spec, args)
            } else {
                let mut o = spec.compile_options().clone();
                o.disabled_passes.extend(self.disabled.iter().cloned());
                self.jit.bind(&spec.clone().options(o), args)
            }
            .map_err(|e| format!("{role}: {e}"))?;
            self.bound.borrow_mut().insert(role, b);
        }
        let map = self.bound.borrow();
        let bound = &map[role];
        let profiling = self.profile.borrow().is_some();
        let stream = &self.jit.device().stream;
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = if profiling { Some(stream.record_event(flags)?) } else { None };
        self.jit.launch_bound(bound, args).map_err(|e| format!("{role}: {e}"))?;
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

/// The tensors of a safetensors file by name, each checked for dtype and shape.
pub struct File<'a>(pub safetensors::SafeTensors<'a>);

impl File<'_> {
    /// The bytes of fp16 tensor `name` of shape `shape`.
    pub fn f16(&self, name: &str, shape: &[i64]) -> Res<&[u8]> {
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

/// A generation's token tables on the device: the prompts, every step's positions, our greedy
/// tokens and the ones to feed instead once ours diverge from the reference's. Views of their
/// rows are what each step's launches read, so no step uploads anything.
#[derive(Debug)]
pub struct Tokens {
    pub batch: i64,
    /// Tokens a prompt.
    pub prompt: i64,
    pub new_tokens: i64,
    /// Row r: the positions of every sequence at decode step r (r ≥ 1: prompt + r − 1); row 0
    /// zeros (the prefill's first position). Its rows are the RoPE positions and the decode
    /// attention's lengths.
    positions: DeviceTensor,
    /// The prompts' ids, [batch · prompt].
    pub prompt_ids: DeviceTensor,
    /// Ours by step, [new_tokens, batch]; the reference's (zeros without one), same layout.
    tokens: DeviceTensor,
    forced: DeviceTensor,
}

impl Tokens {
    /// `prompt_ids` is [batch, prompt]; `forced` the tokens to feed once ours diverge.
    pub fn new(jit: &Jit, prompt_ids: &[i64], batch: i64, new_tokens: i64, forced: &[i64], vocab: i64) -> Res<Tokens> {
        let dev = jit.device();
        let prompt = prompt_ids.len() as i64 / batch.max(1);
        if batch < 1 || prompt < 1 || prompt * batch != prompt_ids.len() as i64 || new_tokens < 1 {
            return Err(
                format!("{} prompt ids for {batch} sequences and {new_tokens} new tokens", prompt_ids.len()).into()
            );
        }
        if let Some(bad) = prompt_ids.iter().find(|&&t| !(0..vocab).contains(&t)) {
            return Err(format!("the prompt holds token {bad}, outside the vocabulary of {vocab}").into());
        }
        let ids = |v: &[i64], shape: &[i64]| {
            let f: Vec<f64> = v.iter().map(|&t| t as f64).collect();
            dev.upload(&HostTensor::from_f64(DType::I32, shape, &f))
        };
        let mut pos = vec![0i64; batch as usize];
        for r in 1..=new_tokens {
            pos.extend(std::iter::repeat_n(prompt + r - 1, batch as usize));
        }
        Ok(Tokens {
            batch,
            prompt,
            new_tokens,
            positions: ids(&pos, &[new_tokens + 1, batch])?,
            prompt_ids: ids(prompt_ids, &[batch * prompt])?,
            tokens: dev.zeros(DType::I32, &[new_tokens, batch])?,
            forced: ids(forced, &[new_tokens, batch])?,
        })
    }

    /// Cache rows a sequence needs: its prompt and the new tokens.
    pub fn seq(&self) -> i64 {
        self.prompt + self.new_tokens
    }

    /// Row `r` of the positions, [batch].
    pub fn positions(&self, r: i64) -> Res<TensorView<'_>> {
        Ok(self.positions.view(r * self.batch, &[self.batch], &[1])?)
    }

    /// What decode step `t` feeds: token row t − 1, ours or (`forced`) the reference's; an
    /// error for a step outside 1..new_tokens.
    pub fn feed(&self, t: i64, forced: bool) -> Res<TensorView<'_>> {
        if !(1..self.new_tokens).contains(&t) {
            return Err(format!("decode step {t} outside 1..{}", self.new_tokens).into());
        }
        let from = if forced { &self.forced } else { &self.tokens };
        Ok(from.view((t - 1) * self.batch, &[self.batch], &[1])?)
    }

    /// Token row `t` as the [batch, 1] argmax writes.
    pub fn row(&self, t: i64) -> Res<TensorView<'_>> {
        Ok(self.tokens.view(t * self.batch, &[self.batch, 1], &[1, 1])?)
    }

    /// Token row `t` (ours), downloaded.
    pub fn download(&self, l: &Launcher<'_>, t: i64) -> Res<Vec<i64>> {
        let all = l.jit.device().download(&self.tokens)?.to_f64();
        let b = self.batch as usize;
        Ok(all[t as usize * b..(t as usize + 1) * b].iter().map(|&v| v as i64).collect())
    }
}
