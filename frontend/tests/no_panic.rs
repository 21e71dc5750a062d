//! Parser + checker never panic: 100,000 mutated and random inputs, each parsed and checked
//! for a random target with random constant overrides. The count that ran is printed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use tilec_frontend::{check, ConstArg, Request};

const TOKENS: &[&str] = &[
    "kernel",
    "let",
    "for",
    "in",
    "if",
    "else",
    "const",
    "grid",
    "hints",
    "tune",
    "by_target",
    "None",
    "true",
    "false",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    "=",
    "==",
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "<",
    ">",
    "<=",
    ".",
    "->",
    "x",
    "t",
    "load",
    "store",
    "max",
    "sum",
    "exp",
    "exp2",
    "bid",
    "cdiv",
    "full",
    "zeros",
    "astype",
    "shape",
    "f16",
    "f32",
    "bf16",
    "i32",
    "tensor<f16, 2>",
    "0",
    "1",
    "-1",
    "64",
    "96",
    "1e9",
    "99999999999999999999",
    "-inf",
    "inf",
    "\"s\"",
    "axis=1",
    "keepdims=true",
    "padding=-inf",
    "index=(0, 0)",
    "shape=(1, 64)",
    "static_assert",
    "next_pow2",
    "range(",
    "#c\n",
    "\n",
    "require",
    "mma(",
    "where(",
    "for i in range(0, 4) {",
    "if x > 0 {",
    "gather(",
    "[:, None]",
];

fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut v = vec![];
    for dir in ["kernels", "tests/frontend/ok", "tests/frontend/err"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            for e in rd.flatten() {
                if let Ok(t) = std::fs::read_to_string(e.path()) {
                    v.push(t);
                }
            }
        }
    }
    v.sort();
    assert!(v.len() >= 3, "the corpus is read from kernels/ and tests/frontend/");
    v
}

fn mutate(rng: &mut StdRng, base: &str) -> String {
    let mut s: Vec<u8> = base.as_bytes().to_vec();
    for _ in 0..rng.gen_range(1..4) {
        let len = s.len();
        match rng.gen_range(0..5) {
            0 if len > 0 => {
                let a = rng.gen_range(0..len);
                let b = (a + rng.gen_range(1..20)).min(len);
                s.drain(a..b);
            }
            1 => {
                let a = rng.gen_range(0..=len);
                let tok = TOKENS[rng.gen_range(0..TOKENS.len())];
                s.splice(a..a, format!(" {tok} ").bytes());
            }
            2 if len > 1 => {
                let a = rng.gen_range(0..len);
                let b = (a + rng.gen_range(1..40)).min(len);
                let chunk: Vec<u8> = s[a..b].to_vec();
                let at = rng.gen_range(0..=s.len());
                s.splice(at..at, chunk);
            }
            3 if len > 0 => {
                let a = rng.gen_range(0..len);
                s[a] = rng.gen_range(0x20..0x7f);
            }
            _ => {
                let a = rng.gen_range(0..=len);
                let n: String = rng.gen_range(-100000i64..100000).to_string();
                s.splice(a..a, n.bytes());
            }
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

#[test]
fn parser_and_checker_never_panic() {
    let corpus = corpus();
    let mut rng = StdRng::seed_from_u64(0x7113c);
    let total = 100_000;
    let mut rejected = 0;
    for i in 0..total {
        let text = if i % 10 == 9 {
            (0..rng.gen_range(1..60)).map(|_| TOKENS[rng.gen_range(0..TOKENS.len())]).collect::<Vec<_>>().join(" ")
        } else {
            let k = rng.gen_range(0..corpus.len());
            mutate(&mut rng, &corpus[k])
        };
        let mut consts = BTreeMap::new();
        if rng.gen_bool(0.3) {
            let v = match rng.gen_range(0..4) {
                0 => ConstArg::Int(rng.gen_range(-5..5000)),
                1 => ConstArg::Bool(rng.gen()),
                2 => ConstArg::Float(rng.gen_range(-1e3..1e3)),
                _ => ConstArg::DType(tilec_core::DType::ALL[rng.gen_range(0..6)]),
            };
            consts.insert(["BLOCK_N", "ROWS", "T", "B", "Z"][rng.gen_range(0..5)].to_string(), v);
        }
        let req = Request {
            target: tilec_core::target::ARCHS[rng.gen_range(0..tilec_core::target::ARCHS.len())].name.to_string(),
            consts,
            ..Default::default()
        };
        let r = std::panic::catch_unwind(|| check(&text, &req).is_err());
        match r {
            Ok(err) => rejected += usize::from(err),
            Err(_) => panic!("the frontend panicked on input #{i}:\n{text}"),
        }
    }
    println!("no-panic: ran {total} inputs ({rejected} rejected with diagnostics, {} accepted)", total - rejected);
    assert!(rejected > total / 2 && rejected < total, "the mutations should produce both valid and invalid kernels");
}

/// Inputs whose depth would overflow a recursive parser or checker: each gets a clear error
/// (run in a thread with a 2 MiB stack, the smallest a test thread gets).
#[test]
fn deep_and_long_inputs_are_errors_not_stack_overflows() {
    let cases: Vec<(String, &str)> = vec![
        (
            format!("kernel k() grid = (1,) {{ let a = {}1{}; }}", "(".repeat(5000), ")".repeat(5000)),
            "nested deeper than 64",
        ),
        (format!("kernel k() grid = (1,) {{ let a = 1{}; }}", " + 1".repeat(10_000)), "nested deeper than 200"),
        (format!("kernel k() grid = (1,) {{ let a = {}1; }}", "-".repeat(5000)), "nested deeper than 200"),
        (format!("kernel k() grid = (1,) {{ let a = x{}; }}", ".y".repeat(5000)), "nested deeper than 200"),
        (
            format!("kernel k() grid = (1,) {{ {} }}", "if true { ".repeat(2600) + &"}".repeat(2600)),
            "nested deeper than 64",
        ),
        (
            format!("kernel k() grid = (1,) {{ let a = {}0{}; }}", "[".repeat(100), "]".repeat(100)),
            "nested deeper than 64",
        ),
    ];
    let worker = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
        for (text, want) in cases {
            let d = check(&text, &Request { target: "sm_90a".into(), ..Default::default() }).unwrap_err();
            assert!(d.iter().any(|d| d.message.contains(want)), "{want}: {d:?}");
        }
        // The limits leave room for what kernels write: 60 nested parentheses, 190 terms.
        let ok = format!(
            "kernel k(x: tensor<f32, 1>) grid = (1,) {{ let a = {}1{}; let b = 1{}; }}",
            "(".repeat(60),
            ")".repeat(60),
            " + 1".repeat(190)
        );
        check(&ok, &Request { target: "sm_90a".into(), ..Default::default() }).unwrap();
    });
    worker.unwrap().join().expect("no stack overflow or panic");
}
