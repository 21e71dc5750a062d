//! Every kernel of `kernels/` through the interpreter, against its plain reference, on
//! random inputs with ragged shapes where the kernel allows them. Tolerances are relative L2:
//! f32 outputs under 1e-5; f16/bf16 storage with f32 accumulation under 1e-2.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::Path;
use tilec_core::host::HostTensor;
use tilec_core::DType;
use tilec_frontend::{check, ConstArg, Request};
use tilec_interp::reference::{self as rf, errors};
use tilec_interp::{rand_uniform, run_ordered, Arg, BlockOrder};

fn consts(c: &[(&str, ConstArg)]) -> std::collections::BTreeMap<String, ConstArg> {
    c.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// Elaborates `kernel` of `file` with `c`, runs it on `args` over its own grid, returns the
/// tensors afterwards.
fn exec(file: &str, kernel: &str, c: &[(&str, ConstArg)], args: Vec<Arg>) -> Vec<HostTensor> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let req = Request { kernel: Some(kernel.into()), target: "sm_90a".into(), consts: consts(c), ..Default::default() };
    let el = check(&text, &req).unwrap_or_else(|d| panic!("{kernel}: {d:#?}"));
    let grid = tilec_interp::grid(&el.signature, &args).unwrap();
    let fwd =
        run_ordered(&el.func, grid, args.clone(), BlockOrder::Forward).unwrap_or_else(|e| panic!("{kernel}: {e}"));
    let rev = run_ordered(&el.func, grid, args, BlockOrder::Reverse).unwrap_or_else(|e| panic!("{kernel}: {e}"));
    for (i, (a, b)) in fwd.tensors.iter().zip(&rev.tensors).enumerate() {
        assert!(
            a.data == b.data,
            "{kernel}: tensor argument {i} depends on the order of the blocks (a race between blocks)"
        );
    }
    fwd.tensors
}

fn randn(rng: &mut StdRng, n: usize, scale: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let u: f64 = rng.gen_range(f64::EPSILON..1.0);
            let v: f64 = rng.gen_range(0.0..1.0);
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos() * scale
        })
        .collect()
}

fn t(d: DType, shape: &[i64], v: &[f64]) -> HostTensor {
    HostTensor::from_f64(d, shape, v)
}

fn tol(d: DType) -> f64 {
    if d == DType::F32 {
        1e-5
    } else {
        1e-2
    }
}

fn assert_close(what: &str, got: &HostTensor, want: &[f64], tol: f64) {
    let (a, r) = errors(&got.to_f64(), want);
    assert!(r <= tol, "{what}: rel L2 {r:.3e} (max abs {a:.3e}) over {tol:.0e}");
}

#[test]
fn softmax_ragged_rows_and_columns() {
    let mut rng = StdRng::seed_from_u64(1);
    for (d, m, n, rows, bn) in [(DType::F32, 5, 37, 2, 64), (DType::F16, 3, 100, 1, 128), (DType::BF16, 9, 8, 4, 32)] {
        let x = t(d, &[m, n], &randn(&mut rng, (m * n) as usize, 3.0));
        let want = rf::softmax(&x.to_f64(), m as usize, n as usize);
        let out = exec(
            "softmax.tile",
            "softmax",
            &[("T", ConstArg::DType(d)), ("ROWS", ConstArg::Int(rows)), ("BLOCK_N", ConstArg::Int(bn))],
            vec![Arg::Tensor(x), Arg::Tensor(HostTensor::poisoned(d, &[m, n]))],
        );
        assert_close(&format!("softmax {d} {m}x{n}"), &out[1], &want, tol(d));
    }
}

#[test]
fn online_softmax_over_several_chunks() {
    let mut rng = StdRng::seed_from_u64(12);
    // Rows of 1, 3 and 5 chunks, ragged last chunk; a row whose max sits in a later chunk.
    for (d, m, n, bn) in [(DType::F32, 3, 30, 32), (DType::F16, 2, 150, 32), (DType::BF16, 4, 257, 64)] {
        let mut xv = randn(&mut rng, (m * n) as usize, 3.0);
        xv[(n - 1) as usize] = 12.0;
        let x = t(d, &[m, n], &xv);
        let want = rf::softmax(&x.to_f64(), m as usize, n as usize);
        let out = exec(
            "softmax_online.tile",
            "softmax_online",
            &[("T", ConstArg::DType(d)), ("BLOCK_N", ConstArg::Int(bn))],
            vec![Arg::Tensor(x), Arg::Tensor(HostTensor::poisoned(d, &[m, n]))],
        );
        assert_close(&format!("softmax_online {d} {m}x{n}"), &out[1], &want, tol(d));
    }
}

#[test]
fn transpose_with_ragged_edges() {
    let mut rng = StdRng::seed_from_u64(13);
    for (d, m, n, tile) in [(DType::F16, 70, 33, 32), (DType::F32, 5, 100, 16), (DType::BF16, 64, 64, 64)] {
        let x = t(d, &[m, n], &randn(&mut rng, (m * n) as usize, 1.0));
        let xv = x.to_f64();
        let want: Vec<f64> = (0..n * m).map(|i| xv[((i % m) * n + i / m) as usize]).collect();
        let out = exec(
            "transpose.tile",
            "transpose",
            &[("T", ConstArg::DType(d)), ("TILE", ConstArg::Int(tile))],
            vec![Arg::Tensor(x), Arg::Tensor(HostTensor::poisoned(d, &[n, m]))],
        );
        assert_eq!(out[1].to_f64(), want, "transpose {d} {m}x{n}");
    }
}

#[test]
fn embedding_gathers_rows_and_zeroes_bad_ids() {
    let mut rng = StdRng::seed_from_u64(14);
    let (v, d) = (10i64, 70i64);
    let ids: Vec<f64> = vec![3.0, 0.0, 9.0, -1.0, 10.0, 3.0];
    let n = ids.len() as i64;
    let table = t(DType::F16, &[v, d], &randn(&mut rng, (v * d) as usize, 1.0));
    let tv = table.to_f64();
    let mut want = vec![];
    for &id in &ids {
        for c in 0..d {
            want.push(if (0.0..v as f64).contains(&id) { tv[(id as i64 * d + c) as usize] } else { 0.0 });
        }
    }
    let out = exec(
        "embedding.tile",
        "embedding",
        &[("T", ConstArg::DType(DType::F16)), ("BLOCK_D", ConstArg::Int(32))],
        vec![
            Arg::Tensor(HostTensor::from_f64(DType::I32, &[n], &ids)),
            Arg::Tensor(table),
            Arg::Tensor(HostTensor::poisoned(DType::F16, &[n, d])),
        ],
    );
    assert_eq!(out[2].to_f64(), want);
}

#[test]
fn gelu_and_rope_tables() {
    let mut rng = StdRng::seed_from_u64(15);
    // Inputs across the polynomial/exponential switch of tanh and into saturation.
    let (m, n) = (3i64, 300i64);
    let x = t(DType::F32, &[m, n], &randn(&mut rng, (m * n) as usize, 3.0));
    let want = rf::gelu_tanh(&x.to_f64());
    let out = exec(
        "gelu.tile",
        "gelu",
        &[("T", ConstArg::DType(DType::F32)), ("BLOCK_N", ConstArg::Int(128))],
        vec![Arg::Tensor(x), Arg::Tensor(HostTensor::poisoned(DType::F32, &[m, n]))],
    );
    assert_close("gelu", &out[1], &want, 1e-6);
    let (s, half) = (300i64, 64i64);
    let (wc, ws) = rf::rope_table(s as usize, half as usize, 10000.0);
    let out = exec(
        "rope.tile",
        "rope_table",
        &[("T", ConstArg::DType(DType::F32)), ("HALF", ConstArg::Int(half))],
        vec![
            Arg::Tensor(HostTensor::poisoned(DType::F32, &[s, half])),
            Arg::Tensor(HostTensor::poisoned(DType::F32, &[s, half])),
            Arg::F32(10000.0),
        ],
    );
    // The angle is rounded to f32 before cos/sin (as on the GPU): up to ~300 · 2^-24 rad.
    assert_close("rope cos", &out[0], &wc, 1e-5);
    assert_close("rope sin", &out[1], &ws, 1e-5);
}

#[test]
fn silu_mul_and_swiglu() {
    let mut rng = StdRng::seed_from_u64(2);
    for d in [DType::F32, DType::F16] {
        let (m, n) = (7, 50);
        let a = t(d, &[m, n], &randn(&mut rng, 350, 2.0));
        let b = t(d, &[m, n], &randn(&mut rng, 350, 1.0));
        let want = rf::silu_mul(&a.to_f64(), &b.to_f64());
        let y = HostTensor::poisoned(d, &[m, n]);
        let out = exec(
            "silu_mul.tile",
            "silu_mul",
            &[("T", ConstArg::DType(d)), ("BLOCK_N", ConstArg::Int(32))],
            vec![Arg::Tensor(a.clone()), Arg::Tensor(b.clone()), Arg::Tensor(y.clone())],
        );
        assert_close("silu_mul", &out[2], &want, tol(d));
        let out = exec(
            "swiglu.tile",
            "swiglu",
            &[("T", ConstArg::DType(d)), ("ROWS", ConstArg::Int(2)), ("BLOCK_N", ConstArg::Int(16))],
            vec![Arg::Tensor(a), Arg::Tensor(b), Arg::Tensor(y)],
        );
        assert_close("swiglu", &out[2], &want, tol(d));
    }
}

#[test]
fn rmsnorm_and_persistent_rmsnorm() {
    let mut rng = StdRng::seed_from_u64(3);
    for d in [DType::F16, DType::BF16] {
        let (m, n) = (7i64, 300i64);
        let x = t(d, &[m, n], &randn(&mut rng, 2100, 1.5));
        let w = t(d, &[n], &randn(&mut rng, 300, 1.0));
        let want = rf::rmsnorm(&x.to_f64(), &w.to_f64(), 7, 300, 1e-6);
        for (kernel, extra) in [("rmsnorm", ("ROWS", 2)), ("rmsnorm_persistent", ("BLOCKS", 3))] {
            let out = exec(
                "rmsnorm.tile",
                kernel,
                &[("T", ConstArg::DType(d)), ("BLOCK_N", ConstArg::Int(512)), (extra.0, ConstArg::Int(extra.1))],
                vec![
                    Arg::Tensor(x.clone()),
                    Arg::Tensor(w.clone()),
                    Arg::Tensor(HostTensor::poisoned(d, &[m, n])),
                    Arg::F32(1e-6),
                ],
            );
            assert_close(&format!("{kernel} {d}"), &out[2], &want, tol(d));
        }
    }
}

#[test]
fn matmul_and_bmm_with_ragged_edges() {
    let mut rng = StdRng::seed_from_u64(4);
    let (m, k, n) = (70i64, 100i64, 90i64);
    let a = t(DType::F16, &[m, k], &randn(&mut rng, 7000, 1.0));
    let b = t(DType::F16, &[k, n], &randn(&mut rng, 9000, 1.0));
    let want = rf::matmul(&a.to_f64(), &b.to_f64(), 70, 100, 90);
    let tiles = [("TILE_M", ConstArg::Int(32)), ("TILE_N", ConstArg::Int(32)), ("TILE_K", ConstArg::Int(32))];
    let mut c = tiles.to_vec();
    c.push(("GROUP_M", ConstArg::Int(2)));
    let out = exec(
        "matmul.tile",
        "matmul",
        &c,
        vec![Arg::Tensor(a), Arg::Tensor(b), Arg::Tensor(HostTensor::poisoned(DType::F16, &[m, n]))],
    );
    assert_close("matmul", &out[2], &want, 1e-2);

    let (bs, m, k, n) = (2i64, 40i64, 50i64, 30i64);
    let a = t(DType::BF16, &[bs, m, k], &randn(&mut rng, 4000, 1.0));
    let b = t(DType::BF16, &[bs, k, n], &randn(&mut rng, 3000, 1.0));
    let (av, bv) = (a.to_f64(), b.to_f64());
    let mut want = vec![];
    for i in 0..2 {
        want.extend(rf::matmul(&av[i * 2000..(i + 1) * 2000], &bv[i * 1500..(i + 1) * 1500], 40, 50, 30));
    }
    let mut c = tiles.to_vec();
    c.push(("T", ConstArg::DType(DType::BF16)));
    let out = exec(
        "bmm.tile",
        "bmm",
        &c,
        vec![Arg::Tensor(a), Arg::Tensor(b), Arg::Tensor(HostTensor::poisoned(DType::BF16, &[bs, m, n]))],
    );
    assert_close("bmm", &out[2], &want, 1e-2);
}

/// Per-head attention reference over [B, H, S, D] tensors.
#[allow(clippy::too_many_arguments)]
fn mha_reference(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    b: usize,
    h: usize,
    s: usize,
    d: usize,
    scale: f64,
    causal: bool,
) -> Vec<f64> {
    let mut out = vec![];
    for bh in 0..b * h {
        let r = bh * s * d..(bh + 1) * s * d;
        out.extend(rf::attention(&q[r.clone()], &k[r.clone()], &v[r], s, s, d, scale, causal));
    }
    out
}

#[test]
fn fmha_and_every_tutorial_step() {
    // The seed's kernel (and so ours) needs the sequence length to be a multiple of TILE_N.
    let mut rng = StdRng::seed_from_u64(5);
    let (b, h, s, d) = (1i64, 2i64, 96i64, 64i64);
    let n = (b * h * s * d) as usize;
    let q = t(DType::F16, &[b, h, s, d], &randn(&mut rng, n, 1.0));
    let k = t(DType::F16, &[b, h, s, d], &randn(&mut rng, n, 1.0));
    let v = t(DType::F16, &[b, h, s, d], &randn(&mut rng, n, 1.0));
    let scale = 1.0 / (d as f64).sqrt();
    let files = [
        ("fmha.tile", "fmha"),
        ("tutorial/fmha_step2_mma.tile", "fmha_step2_mma"),
        ("tutorial/fmha_step3_exp2.tile", "fmha_step3_exp2"),
        ("tutorial/fmha_step4_load_order.tile", "fmha_step4_load_order"),
        ("tutorial/fmha_step5_latency.tile", "fmha_step5_latency"),
        ("tutorial/fmha_step6_occupancy.tile", "fmha_step6_occupancy"),
        ("tutorial/fmha_step7_approx_div.tile", "fmha_step7_approx_div"),
    ];
    for causal in [false, true] {
        let want = mha_reference(&q.to_f64(), &k.to_f64(), &v.to_f64(), 1, 2, 96, 64, scale, causal);
        for (file, kernel) in files {
            let out = exec(
                file,
                kernel,
                &[
                    ("TILE_D", ConstArg::Int(d)),
                    ("H", ConstArg::Int(h)),
                    ("TILE_M", ConstArg::Int(32)),
                    ("TILE_N", ConstArg::Int(32)),
                    ("CAUSAL", ConstArg::Bool(causal)),
                ],
                vec![
                    Arg::Tensor(q.clone()),
                    Arg::Tensor(k.clone()),
                    Arg::Tensor(v.clone()),
                    Arg::Tensor(HostTensor::poisoned(DType::F16, &[b, h, s, d])),
                    Arg::F32(scale as f32),
                ],
            );
            assert_close(&format!("{kernel} causal={causal}"), &out[3], &want, 1e-2);
        }
    }
}

#[test]
fn mla_prefill() {
    let mut rng = StdRng::seed_from_u64(6);
    let (b, h, s, d, dr) = (1i64, 2i64, 64i64, 32i64, 16i64);
    let q = t(DType::BF16, &[b, h, s, d], &randn(&mut rng, (h * s * d) as usize, 1.0));
    let qr = t(DType::BF16, &[b, h, s, dr], &randn(&mut rng, (h * s * dr) as usize, 1.0));
    let k = t(DType::BF16, &[b, h, s, d], &randn(&mut rng, (h * s * d) as usize, 1.0));
    let kr = t(DType::BF16, &[b, s, dr], &randn(&mut rng, (s * dr) as usize, 1.0));
    let v = t(DType::BF16, &[b, h, s, d], &randn(&mut rng, (h * s * d) as usize, 1.0));
    let scale = 1.0 / ((d + dr) as f64).sqrt();
    let (qv, qrv, kv, krv, vv) = (q.to_f64(), qr.to_f64(), k.to_f64(), kr.to_f64(), v.to_f64());
    for causal in [true, false] {
        let mut want = vec![];
        for hh in 0..h as usize {
            let r = hh * 64 * 32..(hh + 1) * 64 * 32;
            let qrh = &qrv[hh * 64 * 16..(hh + 1) * 64 * 16];
            let extra = |i: usize, j: usize| (0..16).map(|x| qrh[i * 16 + x] * krv[j * 16 + x]).sum::<f64>();
            want.extend(rf::attention_split(
                &qv[r.clone()],
                &kv[r.clone()],
                &vv[r],
                64,
                64,
                32,
                32,
                scale,
                causal,
                extra,
            ));
        }
        let out = exec(
            "mla.tile",
            "mla",
            &[
                ("H", ConstArg::Int(h)),
                ("D", ConstArg::Int(d)),
                ("DR", ConstArg::Int(dr)),
                ("TILE_M", ConstArg::Int(32)),
                ("TILE_N", ConstArg::Int(32)),
                ("CAUSAL", ConstArg::Bool(causal)),
            ],
            vec![
                Arg::Tensor(q.clone()),
                Arg::Tensor(qr.clone()),
                Arg::Tensor(k.clone()),
                Arg::Tensor(kr.clone()),
                Arg::Tensor(v.clone()),
                Arg::Tensor(HostTensor::poisoned(DType::BF16, &[b, h, s, d])),
                Arg::F32(scale as f32),
            ],
        );
        assert_close(&format!("mla causal={causal}"), &out[5], &want, 1e-2);
    }
}

/// Decode reference: for each sequence and query head, attention over its first n keys of
/// the KV head it shares.
#[allow(clippy::too_many_arguments)]
fn decode_reference(
    q: &[f64],
    k: &dyn Fn(usize, usize, usize, usize) -> f64,
    v: &dyn Fn(usize, usize, usize, usize) -> f64,
    lens: &[i32],
    hq: usize,
    g: usize,
    d: usize,
    scale: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; lens.len() * hq * d];
    for (bi, &n) in lens.iter().enumerate() {
        let n = n as usize;
        for h in 0..hq {
            let kh = h / g;
            let qh = &q[(bi * hq + h) * d..(bi * hq + h + 1) * d];
            let kk: Vec<f64> = (0..n).flat_map(|j| (0..d).map(move |x| (j, x))).map(|(j, x)| k(bi, kh, j, x)).collect();
            let vv: Vec<f64> = (0..n).flat_map(|j| (0..d).map(move |x| (j, x))).map(|(j, x)| v(bi, kh, j, x)).collect();
            let o = rf::attention(qh, &kk, &vv, 1, n, d, scale, false);
            out[(bi * hq + h) * d..(bi * hq + h + 1) * d].copy_from_slice(&o);
        }
    }
    out
}

#[test]
fn grouped_and_paged_decode() {
    let mut rng = StdRng::seed_from_u64(7);
    let (b, hq, hkv, d, smax, page) = (2usize, 8usize, 2usize, 64usize, 80usize, 16usize);
    let g = hq / hkv;
    let lens = [50i32, 77];
    let scale = 1.0 / (d as f64).sqrt();
    let q = t(DType::F16, &[b as i64, hq as i64, d as i64], &randn(&mut rng, b * hq * d, 1.0));
    let kc = t(DType::F16, &[b as i64, hkv as i64, smax as i64, d as i64], &randn(&mut rng, b * hkv * smax * d, 1.0));
    let vc = t(DType::F16, &[b as i64, hkv as i64, smax as i64, d as i64], &randn(&mut rng, b * hkv * smax * d, 1.0));
    let (kv, vv) = (kc.to_f64(), vc.to_f64());
    let at = |x: &Vec<f64>, bi: usize, h: usize, j: usize, c: usize| x[((bi * hkv + h) * smax + j) * d + c];
    let want = decode_reference(
        &q.to_f64(),
        &|bi, h, j, c| at(&kv, bi, h, j, c),
        &|bi, h, j, c| at(&vv, bi, h, j, c),
        &lens,
        hq,
        g,
        d,
        scale,
    );
    let seq = t(DType::I32, &[2], &[50.0, 77.0]);
    let out = exec(
        "attention_decode_grouped.tile",
        "attention_decode_grouped",
        &[
            ("G", ConstArg::Int(g as i64)),
            ("GP", ConstArg::Int(16)),
            ("D", ConstArg::Int(d as i64)),
            ("TILE_N", ConstArg::Int(32)),
        ],
        vec![
            Arg::Tensor(q.clone()),
            Arg::Tensor(kc.clone()),
            Arg::Tensor(vc.clone()),
            Arg::Tensor(HostTensor::poisoned(DType::F16, &[b as i64, hq as i64, d as i64])),
            Arg::Tensor(seq.clone()),
            Arg::F32(scale as f32),
        ],
    );
    assert_close("attention_decode_grouped", &out[3], &want, 1e-2);

    // The same sequences in a paged cache: page j of sequence b is block_tables[b, j],
    // pages shuffled through the cache.
    let pages_per_seq = smax / page;
    let num_pages = b * pages_per_seq + 3;
    let mut order: Vec<usize> = (0..num_pages).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    let mut kp = vec![0.0; num_pages * page * hkv * d];
    let mut vp = vec![0.0; num_pages * page * hkv * d];
    let mut table = vec![0.0; b * pages_per_seq];
    for bi in 0..b {
        for p in 0..pages_per_seq {
            let phys = order[bi * pages_per_seq + p];
            table[bi * pages_per_seq + p] = phys as f64;
            for r in 0..page {
                for h in 0..hkv {
                    for c in 0..d {
                        let dst = ((phys * page + r) * hkv + h) * d + c;
                        kp[dst] = at(&kv, bi, h, p * page + r, c);
                        vp[dst] = at(&vv, bi, h, p * page + r, c);
                    }
                }
            }
        }
    }
    let shape = [num_pages as i64, page as i64, hkv as i64, d as i64];
    let out = exec(
        "paged_attention_decode.tile",
        "paged_attention_decode",
        &[
            ("G", ConstArg::Int(g as i64)),
            ("GP", ConstArg::Int(16)),
            ("D", ConstArg::Int(d as i64)),
            ("PAGE", ConstArg::Int(page as i64)),
        ],
        vec![
            Arg::Tensor(q),
            Arg::Tensor(t(DType::F16, &shape, &kp)),
            Arg::Tensor(t(DType::F16, &shape, &vp)),
            Arg::Tensor(t(DType::I32, &[b as i64, pages_per_seq as i64], &table)),
            Arg::Tensor(seq),
            Arg::Tensor(HostTensor::poisoned(DType::F16, &[b as i64, hq as i64, d as i64])),
            Arg::F32(scale as f32),
        ],
    );
    assert_close("paged_attention_decode", &out[5], &want, 1e-2);
}

#[test]
fn mla_decode_over_the_latent_cache() {
    let mut rng = StdRng::seed_from_u64(8);
    let (b, h, dc, dr, smax) = (2usize, 32usize, 64usize, 16usize, 70usize);
    let lens = [33i32, 70];
    let scale = 1.0 / ((dc + dr) as f64).sqrt();
    let q = t(DType::F16, &[b as i64, h as i64, dc as i64], &randn(&mut rng, b * h * dc, 1.0));
    let qr = t(DType::F16, &[b as i64, h as i64, dr as i64], &randn(&mut rng, b * h * dr, 1.0));
    let c = t(DType::F16, &[b as i64, smax as i64, dc as i64], &randn(&mut rng, b * smax * dc, 1.0));
    let cr = t(DType::F16, &[b as i64, smax as i64, dr as i64], &randn(&mut rng, b * smax * dr, 1.0));
    let (qv, qrv, cv, crv) = (q.to_f64(), qr.to_f64(), c.to_f64(), cr.to_f64());
    let mut want = vec![];
    for bi in 0..b {
        let n = lens[bi] as usize;
        let lat = &cv[bi * smax * dc..(bi * smax + n) * dc];
        for hh in 0..h {
            let qh = &qv[(bi * h + hh) * dc..(bi * h + hh + 1) * dc];
            let qrh = &qrv[(bi * h + hh) * dr..(bi * h + hh + 1) * dr];
            let extra = |_: usize, j: usize| (0..dr).map(|x| qrh[x] * crv[(bi * smax + j) * dr + x]).sum::<f64>();
            want.extend(rf::attention_split(qh, lat, lat, 1, n, dc, dc, scale, false, extra));
        }
    }
    let out = exec(
        "mla_decode.tile",
        "mla_decode",
        &[
            ("HB", ConstArg::Int(16)),
            ("DC", ConstArg::Int(dc as i64)),
            ("DR", ConstArg::Int(dr as i64)),
            ("TILE_N", ConstArg::Int(32)),
        ],
        vec![
            Arg::Tensor(q),
            Arg::Tensor(qr),
            Arg::Tensor(c),
            Arg::Tensor(cr),
            Arg::Tensor(t(DType::I32, &[2], &[33.0, 70.0])),
            Arg::Tensor(HostTensor::poisoned(DType::F16, &[b as i64, h as i64, dc as i64])),
            Arg::F32(scale as f32),
        ],
    );
    assert_close("mla_decode", &out[5], &want, 1e-2);
}

#[test]
fn rope_rotates_q_and_k_in_place() {
    let mut rng = StdRng::seed_from_u64(9);
    let (b, s, h, hk, half) = (2usize, 3usize, 4usize, 2usize, 32usize);
    let q =
        t(DType::F16, &[b as i64, s as i64, h as i64, 2 * half as i64], &randn(&mut rng, b * s * h * 2 * half, 1.0));
    let k =
        t(DType::F16, &[b as i64, s as i64, hk as i64, 2 * half as i64], &randn(&mut rng, b * s * hk * 2 * half, 1.0));
    let angles: Vec<f64> = (0..s * half).map(|i| i as f64 * 0.37).collect();
    let cos = t(DType::F16, &[s as i64, half as i64], &angles.iter().map(|a| a.cos()).collect::<Vec<_>>());
    let sin = t(DType::F16, &[s as i64, half as i64], &angles.iter().map(|a| a.sin()).collect::<Vec<_>>());
    let (cv, sv) = (cos.to_f64(), sin.to_f64());
    let rot = |x: &[f64], heads: usize| -> Vec<f64> {
        let mut out = vec![];
        for bi in 0..b {
            for si in 0..s {
                for hh in 0..heads {
                    let o = ((bi * s + si) * heads + hh) * 2 * half;
                    out.extend(rf::rope(
                        &x[o..o + 2 * half],
                        &cv[si * half..(si + 1) * half],
                        &sv[si * half..(si + 1) * half],
                    ));
                }
            }
        }
        out
    };
    let (wq, wk) = (rot(&q.to_f64(), h), rot(&k.to_f64(), hk));
    let out = exec(
        "rope.tile",
        "rope",
        &[("H", ConstArg::Int(h as i64)), ("HK", ConstArg::Int(hk as i64)), ("HALF", ConstArg::Int(half as i64))],
        vec![Arg::Tensor(q), Arg::Tensor(k), Arg::Tensor(cos), Arg::Tensor(sin)],
    );
    assert_close("rope q", &out[0], &wq, 1e-2);
    assert_close("rope k", &out[1], &wk, 1e-2);
}

#[test]
fn dropout_mask_is_philox_of_the_element_index() {
    let mut rng = StdRng::seed_from_u64(10);
    let (m, n, p, seed, offset) = (5i64, 100i64, 0.3f32, 7i32, 11i32);
    let x = t(DType::F32, &[m, n], &randn(&mut rng, 500, 1.0));
    let xv = x.to_f64();
    let mut want_y = vec![];
    let mut want_mask = vec![];
    for i in 0..(m * n) {
        let keep = rand_uniform(seed as u32, (i + i64::from(offset)) as u32) >= p;
        want_y.push(if keep { xv[i as usize] / (1.0 - f64::from(p)) } else { 0.0 });
        want_mask.push(if keep { 1.0 } else { 0.0 });
    }
    let kept = want_mask.iter().sum::<f64>() / want_mask.len() as f64;
    assert!((kept - 0.7).abs() < 0.07, "keep rate {kept}");
    let out = exec(
        "dropout.tile",
        "dropout",
        &[("T", ConstArg::DType(DType::F32)), ("BLOCK_N", ConstArg::Int(64))],
        vec![
            Arg::Tensor(x),
            Arg::Tensor(HostTensor::poisoned(DType::F32, &[m, n])),
            Arg::Tensor(HostTensor::poisoned(DType::F32, &[m, n])),
            Arg::F32(p),
            Arg::I32(seed),
            Arg::I32(offset),
        ],
    );
    assert_eq!(out[2].to_f64(), want_mask, "the keep mask is exactly Philox's");
    assert_close("dropout", &out[1], &want_y, 1e-5);
}

#[test]
fn group_gemm_with_an_empty_group() {
    let mut rng = StdRng::seed_from_u64(11);
    let (rows, k, n) = (40i64, 48i64, 40i64);
    let offsets = [0i64, 5, 5, 40];
    let x = t(DType::F16, &[rows, k], &randn(&mut rng, (rows * k) as usize, 1.0));
    let w = t(DType::F16, &[3, k, n], &randn(&mut rng, (3 * k * n) as usize, 1.0));
    let (xv, wv) = (x.to_f64(), w.to_f64());
    let mut want = vec![];
    for gi in 0..3usize {
        let (s, e) = (offsets[gi] as usize, offsets[gi + 1] as usize);
        let wg = &wv[gi * (k * n) as usize..(gi + 1) * (k * n) as usize];
        want.extend(rf::matmul(&xv[s * k as usize..e * k as usize], wg, e - s, k as usize, n as usize));
    }
    let out = exec(
        "group_gemm.tile",
        "group_gemm",
        &[("TILE_M", ConstArg::Int(16)), ("TILE_N", ConstArg::Int(32)), ("TILE_K", ConstArg::Int(16))],
        vec![
            Arg::Tensor(x),
            Arg::Tensor(w),
            Arg::Tensor(HostTensor::poisoned(DType::F16, &[rows, n])),
            Arg::Tensor(t(DType::I32, &[4], &offsets.map(|o| o as f64))),
            Arg::I32(35),
        ],
    );
    assert_close("group_gemm", &out[2], &want, 1e-2);
}
