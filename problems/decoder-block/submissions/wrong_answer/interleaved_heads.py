# interleaved head split: head h takes features h, h+H, h+2H, ... instead of a contiguous block
import torch
import torch.nn.functional as F


def _heads(t, H):
    B, T, D = t.shape
    return t.view(B, T, D // H, H).permute(0, 3, 1, 2)  # (B, H, T, d_k), strided features


def _merge(t):
    B, H, T, dk = t.shape
    return t.permute(0, 2, 3, 1).reshape(B, T, dk * H)


def _mha(xq, xkv, P, s, H, mask):
    q = _heads(xq @ P[s + "_wq"] + P[s + "_bq"], H)
    k = _heads(xkv @ P[s + "_wk"] + P[s + "_bk"], H)
    v = _heads(xkv @ P[s + "_wv"] + P[s + "_bv"], H)
    sc = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    sc = sc.masked_fill(~mask, float("-inf"))
    return _merge(torch.softmax(sc, dim=-1) @ v) @ P[s + "_wo"] + P[s + "_bo"]


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    P = {k: torch.from_numpy(v) for k, v in params.items()}
    x, m = torch.from_numpy(tgt), torch.from_numpy(memory)
    B, T, D = x.shape
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    if memory_mask is None:
        src = torch.ones(B, 1, 1, m.shape[1], dtype=torch.bool)
    else:
        src = torch.from_numpy(memory_mask)[:, None, None, :]
    x = F.layer_norm(x + _mha(x, x, P, "sa", num_heads, causal), (D,), P["ln1_g"], P["ln1_b"])
    x = F.layer_norm(x + _mha(x, m, P, "ca", num_heads, src), (D,), P["ln2_g"], P["ln2_b"])
    f = torch.relu(x @ P["ff_w1"] + P["ff_b1"]) @ P["ff_w2"] + P["ff_b2"]
    return F.layer_norm(x + f, (D,), P["ln3_g"], P["ln3_b"]).flatten()
