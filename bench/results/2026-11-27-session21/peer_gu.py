# cuBLAS (torch) on Qwen2's gate/up shapes in both weight layouts, and the copy bandwidth.
import torch, json, sys
torch.manual_seed(0)
def t(f, reps=100):
    for _ in range(5): f()
    torch.cuda.synchronize()
    es = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in es:
        a.record(); f(); b.record()
    torch.cuda.synchronize()
    v = sorted(a.elapsed_time(b) for a, b in es)
    return v[len(v)//2]
res = {}
K, N = 3584, 18944
for M in (16, 1):
    x = torch.randn(M, K, device='cuda', dtype=torch.half)
    wkn = torch.randn(K, 2*N, device='cuda', dtype=torch.half)
    wnk = torch.randn(2*N, K, device='cuda', dtype=torch.half)
    res[f'cublas_kn_{M}'] = t(lambda: torch.matmul(x, wkn))
    res[f'cublas_nk_{M}'] = t(lambda: torch.nn.functional.linear(x, wnk))
    del wkn, wnk
src = torch.empty(2*N*K, device='cuda', dtype=torch.half); dst = torch.empty_like(src)
res['copy_ms'] = t(lambda: dst.copy_(src))
res['copy_GBps'] = 2 * src.numel() * 2 / res['copy_ms'] / 1e6
res['weights_bytes'] = 2 * N * K * 2
json.dump(res, sys.stdout, indent=1)
