#!/bin/bash
# Session 44, call 1 (NVIDIA H200): the session's starting binary (03e42ee) unpacked to /tmp,
# where call 2 (the new binary, carried alone) finds it on the same warm machine.
xz -dc .carry/tilec.xz > /tmp/tilec-old && chmod +x /tmp/tilec-old
/tmp/tilec-old --version
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
