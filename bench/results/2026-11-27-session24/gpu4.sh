#!/usr/bin/env bash
# Session 24, call 4: the checks call 2 did not reach (its time limit), with programmatic
# launch at its new default (on); the split-K and gate/up products under --emulate sm_121a
# (DGX Spark's configuration: one tile ahead, the weights' first copy before the wait); and
# grouped decode at the Qwen2 step's shapes (B16, 562 cached positions) with its default
# splits against a variant that splits where B x HKV fills fewer than all the SMs
# (.carry/kvar: `SMS // (B * HKV)` in place of `SMS // (2 * B * HKV)`).
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
timeout 200 /tmp/tilec check fmha_step5_latency fmha_step6_occupancy fmha_step7_approx_div mla mla_decode attention_decode_grouped paged_attention_decode --md $R/check_rest.md > $R/check_rest.log 2>&1; save
timeout 100 /tmp/tilec check matmul_splitk matmul_swiglu --emulate sm_121a --md $R/check_emu121.md > $R/check_emu121.log 2>&1; save
S=16x28x4x562x128:f16,16x28x4x1024x128:f16,16x28x4x2048x128:f16,16x28x4x4096x128:f16,8x28x4x562x128:f16,4x28x4x562x128:f16,4x28x4x4096x128:f16,1x28x4x562x128:f16,1x28x4x4096x128:f16
for round in 1 2; do
timeout 100 /tmp/tilec bench attention_decode_grouped --shapes $S --json $R/grouped-default-$round.json --md $R/grouped-default-$round.md > $R/grouped-default-$round.log 2>&1; save
timeout 100 /tmp/tilec bench attention_decode_grouped --kernels-dir .carry/kvar --shapes $S --json $R/grouped-kvar-$round.json --md $R/grouped-kvar-$round.md > $R/grouped-kvar-$round.log 2>&1; save
done
for f in $R/*.log; do echo "== $f"; tail -n 3 $f; done
paste <(grep -o '"shape":"[^"]*"\|"median_ms":[0-9.e-]*' $R/grouped-default-1.json | paste - - ) <(grep -o '"median_ms":[0-9.e-]*' $R/grouped-kvar-1.json) <(grep -o '"median_ms":[0-9.e-]*' $R/grouped-default-2.json) <(grep -o '"median_ms":[0-9.e-]*' $R/grouped-kvar-2.json)
rm -rf $OUT/r/none
