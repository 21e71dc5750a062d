//! Inputs deep enough to overflow a recursive parser or checker are errors. (Random and
//! mutated sources are the `tile` target of `tilec fuzz`, which CI runs.)

use tilec_frontend::{check, Request};

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
