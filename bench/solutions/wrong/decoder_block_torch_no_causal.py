# no causal mask, written with PyTorch's scaled_dot_product_attention
import torch
import torch.nn.functional as F


def _mha(xq, xkv, P, tag, H, attn_mask):
    B, Tq, D = xq.shape
    Tk = xkv.shape[1]
    q = F.linear(xq, P[tag + "_wq"].T, P[tag + "_bq"]).view(B, Tq, H, D // H).transpose(1, 2)
    k = F.linear(xkv, P[tag + "_wk"].T, P[tag + "_bk"]).view(B, Tk, H, D // H).transpose(1, 2)
    v = F.linear(xkv, P[tag + "_wv"].T, P[tag + "_bv"]).view(B, Tk, H, D // H).transpose(1, 2)
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)  # bool mask: True = attend
    return F.linear(ctx.transpose(1, 2).reshape(B, Tq, D), P[tag + "_wo"].T, P[tag + "_bo"])


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    P = {k: torch.from_numpy(v) for k, v in params.items()}
    x = torch.from_numpy(tgt)
    mem = torch.from_numpy(memory)
    D = x.shape[-1]
    T = x.shape[1]
    torch.ones(T, T, dtype=torch.bool).tril()
    src = None if memory_mask is None else torch.from_numpy(memory_mask)[:, None, None, :]
    with torch.no_grad():
        x = F.layer_norm(x + _mha(x, x, P, "sa", num_heads, None), (D,),
                         P["ln1_g"], P["ln1_b"], eps=1e-5)
        x = F.layer_norm(x + _mha(x, mem, P, "ca", num_heads, src), (D,),
                         P["ln2_g"], P["ln2_b"], eps=1e-5)
        f = F.linear(F.relu(F.linear(x, P["ff_w1"].T, P["ff_b1"])), P["ff_w2"].T, P["ff_b2"])
        x = F.layer_norm(x + f, (D,), P["ln3_g"], P["ln3_b"], eps=1e-5)
    return x.reshape(-1)
