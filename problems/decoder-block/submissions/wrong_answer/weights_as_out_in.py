# attention weights read as PyTorch's (out, in) layout: F.linear(x, W) computes x @ W.T, not x @ W
import torch
import torch.nn.functional as F


def _mha(xq, xkv, P, s, H, mask):
    B, Tq, D = xq.shape
    Tk = xkv.shape[1]
    q = F.linear(xq, P[s + "_wq"], P[s + "_bq"]).view(B, Tq, H, -1).transpose(1, 2)
    k = F.linear(xkv, P[s + "_wk"], P[s + "_bk"]).view(B, Tk, H, -1).transpose(1, 2)
    v = F.linear(xkv, P[s + "_wv"], P[s + "_bv"]).view(B, Tk, H, -1).transpose(1, 2)
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return F.linear(ctx.transpose(1, 2).reshape(B, Tq, D), P[s + "_wo"], P[s + "_bo"])


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    P = {k: torch.from_numpy(v) for k, v in params.items()}
    x, m = torch.from_numpy(tgt), torch.from_numpy(memory)
    D, T = x.shape[-1], x.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    src = None if memory_mask is None else torch.from_numpy(memory_mask)[:, None, None, :]
    x = F.layer_norm(x + _mha(x, x, P, "sa", num_heads, causal), (D,), P["ln1_g"], P["ln1_b"])
    x = F.layer_norm(x + _mha(x, m, P, "ca", num_heads, src), (D,), P["ln2_g"], P["ln2_b"])
    # (the FFN matrices are not square, so here the author kept x @ W)
    f = torch.relu(x @ P["ff_w1"] + P["ff_b1"]) @ P["ff_w2"] + P["ff_b2"]
    return F.layer_norm(x + f, (D,), P["ln3_g"], P["ln3_b"]).reshape(-1)
