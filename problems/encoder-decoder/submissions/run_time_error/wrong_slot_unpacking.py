# unpacks a decoder block into ten matrices: a (12, d, d) block does not unpack into 10 names
import numpy as np


def ln(x):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def gelu(t):
    return 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t**3)))


def mha(xq, xkv, wq, wk, wv, wo, H, causal):
    N, Tq, d = xq.shape
    Tk = xkv.shape[1]
    q = (xq @ wq).reshape(N, Tq, H, -1).transpose(0, 2, 1, 3)
    k = (xkv @ wk).reshape(N, Tk, H, -1).transpose(0, 2, 1, 3)
    v = (xkv @ wv).reshape(N, Tk, H, -1).transpose(0, 2, 1, 3)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // H)
    if causal:
        s = np.where(np.tril(np.ones((Tq, Tk), dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    o = (e / e.sum(-1, keepdims=True)) @ v
    return o.transpose(0, 2, 1, 3).reshape(N, Tq, d) @ wo


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    x = src_emb[src_ids] + enc_pos_embed
    for wq, wk, wv, wo, w1, w2 in enc_blocks:
        x = ln(x + mha(x, x, wq, wk, wv, wo, num_heads, False))
        x = ln(x + gelu(x @ w1) @ w2)
    y = tgt_emb[tgt_ids] + dec_pos_embed
    for sq, sk, sv, so, cq, ck, cv, co, w1, w2 in dec_blocks:
        y = ln(y + mha(y, y, sq, sk, sv, so, num_heads, True))
        y = ln(y + mha(y, x, cq, ck, cv, co, num_heads, False))
        y = ln(y + gelu(y @ w1) @ w2)
    return (y @ w_head).reshape(-1)
