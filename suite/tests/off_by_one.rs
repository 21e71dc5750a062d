//! Every library kernel refuses a launch whose extents disagree (issue 27, item 1): each
//! kernel's first interpreter case is launched again with one extent of one tensor one larger
//! (and, where it is above 1, one smaller), the other arguments as they were. The launch
//! checks — named extents, fixed extents and `require` clauses — run before any block, in
//! the interpreter as in the runtime (`tilec_core::abi`), so a launch they accept runs. Only
//! the extents in [`FREE`] may change alone: the kernel reads them as sizes of their own (a
//! vocabulary, a cache length, a page pool); any other accepted change would be a launch
//! that computes on mismatched tensors without a word, and fails this test.

use rand::SeedableRng;
use tilec_core::host::HostTensor;
use tilec_frontend::Request;
use tilec_interp::Arg;

/// (kernel, tensor parameter, axis, direction: 0 either, 1 only larger, -1 only smaller) that a valid launch
/// may change alone, and why. Every entry must be met by the test (a stale one fails it).
const FREE: &[(&str, &str, usize, i64, &str)] = &[
    ("argmax", "logits", 1, 0, "the vocabulary: any width, walked in BLOCK_N chunks"),
    ("embedding", "table", 0, 0, "the vocabulary: rows are gathered by id"),
    ("kv_append", "new", 2, 0, "the tokens appended: one block each"),
    ("kv_append", "cache", 2, 0, "the cache's capacity (positions are data: pos[b] + N <= S is the caller's)"),
    ("lang_atomics", "x", 0, 0, "the rows summed into the column statistics"),
    ("moe_align", "ids", 0, 0, "the tokens: any count whose blocks the workspace's rows match (NB == cdiv(M, ROWS))"),
    ("moe_align", "ids", 1, 0, "the slots: any count up to KP (their ids are padded with -1)"),
    ("moe_combine", "ys", 0, 0, "the sorted rows, padded or not: only the rows the positions name are read"),
    ("moe_permute", "bases", 1, 0, "the experts: only the ids name them, and they are data"),
    ("moe_route", "logits", 1, -1, "the experts: any count from TOPK up to EP (the padding is -inf)"),
    ("paged_attention_decode", "block_tables", 1, 0, "the table's width: pages a sequence may hold"),
    ("rope", "q", 2, -1, "the query heads: any count up to the tile's H (Qwen2's 28 in 32)"),
    ("rope", "k", 2, -1, "the key heads: any count up to the tile's HK"),
    ("rope_kv_append", "q", 2, -1, "the query heads: any count up to the tile's H (Qwen2's 28 in 32)"),
    ("row_max", "x", 1, 0, "the row width, up to BLOCK_N"),
    ("topk_partial", "x", 1, 0, "the vocabulary: any width, in BLOCK_N chunks (the partials follow its chunk count)"),
];

/// The signature of `spec`'s kernel (source `text`) with the constants of `case`, for sm_90a.
fn signature(spec: &tilec_suite::Spec, case: &tilec_suite::Case, text: &str) -> tilec_core::abi::Signature {
    let req = Request {
        kernel: Some(spec.kernel.to_string()),
        target: "sm_90a".into(),
        consts: spec.constants(case),
        ..Default::default()
    };
    tilec_frontend::check(text, &req).unwrap_or_else(|d| panic!("{}: {d:?}", spec.name)).signature
}

#[test]
fn a_launch_with_one_extent_off_by_one_is_refused() {
    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels");
    let mut accepted = vec![];
    let mut tried = 0;
    for spec in tilec_suite::all() {
        let Some(case) = (spec.interp_cases)().into_iter().next() else { continue };
        let text = std::fs::read_to_string(kernels.join(spec.file)).unwrap();
        let sig = &signature(spec, &case, &text);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let args = (spec.inputs)(&case, &mut rng);
        tilec_interp::grid(sig, &args)
            .unwrap_or_else(|e| panic!("{} {}: the case itself: {e}", spec.name, case.label()));
        for (i, a) in args.iter().enumerate() {
            let Arg::Tensor(t) = a else { continue };
            for axis in 0..t.shape.len() {
                for delta in [1, -1] {
                    let mut shape = t.shape.clone();
                    shape[axis] += delta;
                    if shape[axis] < 1 {
                        continue;
                    }
                    let mut changed = args.clone();
                    changed[i] = Arg::Tensor(HostTensor::poisoned(t.dtype, &shape));
                    tried += 1;
                    if tilec_interp::grid(sig, &changed).is_ok() {
                        accepted.push((spec.name, sig.params[i].name().to_string(), axis, delta));
                    }
                }
            }
        }
    }
    let free = |k: &str, p: &str, a: usize, d: i64| {
        FREE.iter().any(|&(fk, fp, fa, fd, _)| (fk, fp, fa) == (k, p, a) && (fd == 0 || fd == d))
    };
    let silent: Vec<String> = accepted
        .iter()
        .filter(|(k, p, a, d)| !free(k, p, *a, *d))
        .map(|(k, p, a, d)| format!("{k}: `{p}` dimension {a} {d:+}"))
        .collect();
    assert!(tried > 100, "only {tried} launches tried");
    for &(k, p, a, _, why) in FREE {
        assert!(
            accepted.iter().any(|(ak, ap, aa, _)| (*ak, ap.as_str(), *aa) == (k, p, a)),
            "{k}: `{p}` dimension {a} is listed as free ({why}) but no launch changing it alone ran"
        );
    }
    assert!(silent.is_empty(), "{} accepted launches with mismatched extents:\n{}", silent.len(), silent.join("\n"));
}

/// The GPU specs launch within their kernels' requirements: every `tilec check` and `tilec
/// bench` case whose inputs are small enough to build here (at most 2^22 elements in the
/// case's dims) passes the launch checks, so a requirement cannot quietly turn a GPU case into
/// a refusal.
#[test]
fn every_gpu_case_meets_its_kernels_requirements() {
    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels");
    let (mut checked, mut skipped, mut refused) = (0, 0, vec![]);
    for spec in tilec_suite::all() {
        let text = std::fs::read_to_string(kernels.join(spec.file)).unwrap();
        for case in (spec.gpu_cases)().into_iter().chain((spec.bench_cases)(false)) {
            if case.dims.iter().product::<i64>() > 1 << 22 {
                skipped += 1;
                continue;
            }
            let sig = signature(spec, &case, &text);
            let args = (spec.inputs)(&case, &mut rand::rngs::StdRng::seed_from_u64(1));
            checked += 1;
            if let Err(e) = tilec_interp::grid(&sig, &args) {
                refused.push(format!("{} {}: {e}", spec.name, case.label()));
            }
        }
    }
    assert!(checked > 100, "{checked} cases checked, {skipped} too large to build here");
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}
