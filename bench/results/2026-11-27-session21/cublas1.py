import torch
x = torch.randn(16, 3584, device='cuda', dtype=torch.half)
w = torch.randn(3584, 37888, device='cuda', dtype=torch.half)
for _ in range(3): y = torch.matmul(x, w)
torch.cuda.synchronize()
