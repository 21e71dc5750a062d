# One SDPA decode call through the cuDNN backend (Qwen2's heads) for Nsight Compute:
# python3 cudnn1.py B L
import sys, torch
from torch.nn.attention import sdpa_kernel, SDPBackend
B, L = int(sys.argv[1]), int(sys.argv[2])
q = torch.randn(B, 28, 1, 128, device="cuda", dtype=torch.float16)
k = torch.randn(B, 4, L, 128, device="cuda", dtype=torch.float16)
v = torch.randn(B, 4, L, 128, device="cuda", dtype=torch.float16)
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
