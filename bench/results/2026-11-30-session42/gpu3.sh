#!/bin/bash
# Session 42, call 3 (NVIDIA H200): the final binary's checks of every kernel whose sm_90a
# PTX differs from the session start's (quant_fp4, lang_fp4, lang_masked) or from call 2's
# binary's (lang_fp4, lang_masked: integer compares left out of the plan), and lang_bits.
R=/tmp/r42c; rm -rf $R; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec-final && chmod +x /tmp/tilec-final
timeout 300 /tmp/tilec-final check quant_fp4 lang_fp4 lang_masked lang_bits --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt
tar czf $OUT/r.tgz -C /tmp r42c
tail -n 3 $R/check.txt
