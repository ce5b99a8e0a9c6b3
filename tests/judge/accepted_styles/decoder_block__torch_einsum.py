# Accepted: PyTorch with einsum and an additive -inf mask, the LayerNorm written out.
import torch


def layer_norm(z, g, b):
    mu = z.mean(-1, keepdim=True)
    var = z.var(-1, unbiased=False, keepdim=True)
    return g * (z - mu) * torch.rsqrt(var + 1e-5) + b


def attend(xq, xkv, p, tag, heads, hide):
    d = xq.shape[-1]
    q = (xq @ p[tag + "wq"] + p[tag + "bq"]).unflatten(-1, (heads, d // heads))
    k = (xkv @ p[tag + "wk"] + p[tag + "bk"]).unflatten(-1, (heads, d // heads))
    v = (xkv @ p[tag + "wv"] + p[tag + "bv"]).unflatten(-1, (heads, d // heads))
    s = torch.einsum("bqhc,bkhc->bhqk", q, k) / (d // heads) ** 0.5
    if hide is not None:
        s = s.masked_fill(hide, float("-inf"))
    ctx = torch.einsum("bhqk,bkhc->bqhc", torch.softmax(s, dim=-1), v).flatten(-2)
    return ctx @ p[tag + "wo"] + p[tag + "bo"]


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    p = {k: torch.from_numpy(v) for k, v in params.items()}
    x, mem = torch.from_numpy(tgt), torch.from_numpy(memory)
    t = x.shape[1]
    future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    pad = None if memory_mask is None else ~torch.from_numpy(memory_mask)[:, None, None, :]
    x = layer_norm(x + attend(x, x, p, "sa_", num_heads, future), p["ln1_g"], p["ln1_b"])
    x = layer_norm(x + attend(x, mem, p, "ca_", num_heads, pad), p["ln2_g"], p["ln2_b"])
    ff = torch.relu(x @ p["ff_w1"] + p["ff_b1"]) @ p["ff_w2"] + p["ff_b2"]
    return layer_norm(x + ff, p["ln3_g"], p["ln3_b"]).reshape(-1)
