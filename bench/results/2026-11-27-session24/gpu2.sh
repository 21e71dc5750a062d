#!/usr/bin/env bash
# Session 24, call 2: every kernel's checks with programmatic dependent launch on
# (TILEC_PDL=1), plain and as CUDA graphs (the decoder's kernels), and the split-K and gate/up
# products (whose weights' first copies now precede griddepcontrol.wait) with it off too.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
timeout 100 env TILEC_PDL=0 /tmp/tilec check matmul_splitk matmul_swiglu --md $R/check_off.md > $R/check_off.log 2>&1; save
timeout 300 env TILEC_PDL=1 /tmp/tilec check --md $R/check_pdl.md --json $R/check_pdl.json > $R/check_pdl.log 2>&1; save
timeout 150 env TILEC_PDL=1 /tmp/tilec check --graph softmax rmsnorm rope_kv_append acc_residual_rmsnorm kv_append \
  attention_decode_grouped paged_attention_decode mla_decode matmul_splitk matmul_swiglu matmul fmha --max-ref-work 3e8 \
  --md $R/check_graph_pdl.md > $R/check_graph_pdl.log 2>&1; save
tail -3 $R/*.log
rm -rf $OUT/r
