# interleaved head split: head h takes features h, h+H, h+2H, ... instead of a contiguous block
import numpy as np


def _ln(x):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def _gelu(t):
    return 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t**3)))


def _mha(xq, xkv, w, H, causal):
    N, Tq, d = xq.shape
    Tk = xkv.shape[1]
    q = (xq @ w[0]).reshape(N, Tq, d // H, H)
    k = (xkv @ w[1]).reshape(N, Tk, d // H, H)
    v = (xkv @ w[2]).reshape(N, Tk, d // H, H)
    s = np.einsum("nqch,nkch->nhqk", q, k) / np.sqrt(d // H)
    if causal:
        s = np.where(np.tril(np.ones((Tq, Tk), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("nhqk,nkch->nqch", p, v)
    return o.reshape(N, Tq, d) @ w[3]


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    x = src_emb[src_ids] + enc_pos_embed
    for w in enc_blocks:
        x = _ln(x + _mha(x, x, w, num_heads, False))
        x = _ln(x + _gelu(x @ w[4]) @ w[5])
    y = tgt_emb[tgt_ids] + dec_pos_embed
    for w in dec_blocks:
        y = _ln(y + _mha(y, y, w[0:4], num_heads, True))
        y = _ln(y + _mha(y, x, w[4:8], num_heads, False))
        y = _ln(y + _gelu(y @ w[8]) @ w[9])
    return y @ w_head
