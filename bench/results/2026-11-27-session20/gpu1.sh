#!/bin/bash
# Session 20: the issue-slot changes (tcgen05/TMA issued under elect.sync, FlashAttention-4's
# conditional rescale, affine index compares, index tiles made in place of a layout
# conversion) on the H100. Usage: gpu1.sh new|old|new2 — `new` checks FMHA on sm_90a and
# under sm_103a/sm_121a emulation and times it; `old` (the binary and kernels before, same
# warm machine) times the same; `new2` times again and checks the other kernels the lowering
# changes touch.
B=$1; R=/tmp/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
KD=kernels; [ -d .carry/kold ] && KD=.carry/kold
save() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu_$B.txt; save
if [ $B = new ]; then
  timeout 120 /tmp/tilec check fmha --md $R/check_fmha_sm90a.md > $R/check_fmha_sm90a.log 2>&1; echo "rc $?" >> $R/check_fmha_sm90a.log; save
  timeout 150 /tmp/tilec check --emulate sm_103a fmha --md $R/check_fmha_emu103.md > $R/check_fmha_emu103.log 2>&1; echo "rc $?" >> $R/check_fmha_emu103.log; save
fi
timeout 100 /tmp/tilec bench fmha --quick --kernels-dir $KD --md $R/fmha_$B.md --json $R/fmha_$B.json > $R/fmha_$B.log 2>&1; save
[ $B = new2 ] || timeout 100 /tmp/tilec bench --emulate sm_103a fmha --quick --kernels-dir $KD --md $R/fmha_emu103_$B.md --json $R/fmha_emu103_$B.json > $R/fmha_emu103_$B.log 2>&1; save
[ $B = new2 ] || timeout 60 /tmp/tilec bench matmul --quick --kernels-dir $KD --md $R/matmul_$B.md --json $R/matmul_$B.json > $R/matmul_$B.log 2>&1; save
if [ $B = new2 ]; then
  timeout 300 /tmp/tilec check fmha --md $R/check_fmha_sm90a_all.md > $R/check_fmha_sm90a_all.log 2>&1; echo "rc $?" >> $R/check_fmha_sm90a_all.log; save
  timeout 150 /tmp/tilec check matmul bmm mla softmax_online attention_decode_grouped fmha_fp8 --max-ref-work 20000000000 --md $R/check_others.md > $R/check_others.log 2>&1; echo "rc $?" >> $R/check_others.log; save
fi
