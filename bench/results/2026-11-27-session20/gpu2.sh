#!/bin/bash
# Session 20, call 4: the binary with paired f32 arithmetic for sm_103a (`Feature::PackedF32`,
# emulated as two scalar instructions a pair in the same order) and the conditional rescale
# only for factors of the threshold's form: sm_103a's FMHA configuration checked and timed
# under emulation; sm_90a's FMHA PTX is byte-identical to calls 1 and 3.
R=/tmp/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
save() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu_paired.txt; save
timeout 330 /tmp/tilec check --emulate sm_103a fmha --md $R/check_fmha_emu103_paired.md > $R/check_fmha_emu103_paired.log 2>&1; echo "rc $?" >> $R/check_fmha_emu103_paired.log; save
timeout 100 /tmp/tilec bench --emulate sm_103a fmha --quick --md $R/fmha_emu103_paired.md --json $R/fmha_emu103_paired.json > $R/fmha_emu103_paired.log 2>&1; save
