#!/bin/bash
# Session 43, call 1 (NVIDIA H200): the session's starting binary (c77838e) and its kernel
# library (quant_fp4 reading [M, K/2, 2] pairs) unpacked to /tmp, where call 2 (the new
# binary, carried alone: two do not fit one carry) finds them on the same warm machine.
xz -dc .carry/tilec.xz > /tmp/tilec-old && chmod +x /tmp/tilec-old
rm -rf /tmp/kold && cp -r .carry/kold/kernels /tmp/kold
/tmp/tilec-old --version
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
