//! Thousands of errors stay linear: the per-error work that scans the scope (the "did you
//! mean" of an unknown name) is done only for the diagnostics that are shown.

use tilec_frontend::{check, Request};

/// 8,000 unknown names, each one edit away from a bound name: the first shown diagnostics
/// suggest it, the ones past `MAX_RENDERED` (never rendered) carry no suggestion, and every
/// error is still counted. (8,000 took 9.5 s when each scanned the 8,000 names in scope.)
#[test]
fn unknown_names_past_the_shown_ones_skip_the_scope_scan() {
    let n = 8000;
    let mut body = String::new();
    for i in 0..n {
        body.push_str(&format!(" let zy{i} = 1; let w{i} = zz{i};"));
    }
    let text = format!("kernel k() grid = (1,) {{{body} }}");
    let d = check(&text, &Request { target: "sm_90a".into(), ..Default::default() }).unwrap_err();
    assert_eq!(d.len(), n, "every unknown name is an error");
    let shown = tilec_core::diag::MAX_RENDERED;
    assert!(d[0].notes.iter().any(|n| n.contains("did you mean")), "{:?}", d[0]);
    assert!(d[shown - 1].notes.iter().any(|n| n.contains("did you mean")), "{:?}", d[shown - 1]);
    assert!(d[shown..].iter().all(|x| x.notes.is_empty()), "a diagnostic past the shown ones scanned the scope");
}
