#!/bin/bash
# Session 42, call 1 (NVIDIA H200): the session's starting binary (ed20f80) unpacked to
# /tmp/tilec-old, where call 2 (the new binary, carried alone: two do not fit one carry)
# finds it on the same warm machine.
xz -dc .carry/tilec.xz > /tmp/tilec-old && chmod +x /tmp/tilec-old
/tmp/tilec-old --version
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
