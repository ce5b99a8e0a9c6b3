import numpy as np


def norm(x):
    c = x - x.mean(axis=-1, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5)


def gelu(t):
    return 0.5 * t * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (t + 0.044715 * t * t * t)))


def attend(xq, xkv, wq, wk, wv, wo, H, causal):
    d = xq.shape[-1]
    dk = d // H
    q, k, v = xq @ wq, xkv @ wk, xkv @ wv
    outs = []
    for h in range(H):
        cols = slice(h * dk, (h + 1) * dk)
        s = np.einsum("nqc,nkc->nqk", q[..., cols], k[..., cols]) / np.sqrt(dk)
        if causal:
            tq, tk = s.shape[1:]
            s = s + np.triu(np.full((tq, tk), -np.inf, dtype=s.dtype), k=1)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        outs.append(np.einsum("nqk,nkc->nqc", s, v[..., cols]))
    return np.concatenate(outs, axis=-1) @ wo


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    x = np.take(src_emb, src_ids, axis=0) + enc_pos_embed[None]
    for W in enc_blocks:
        x = norm(x + attend(x, x, *W[0:4], num_heads, causal=False))
        x = norm(x + gelu(x @ W[4]) @ W[5])
    y = np.take(tgt_emb, tgt_ids, axis=0) + dec_pos_embed[None]
    for W in dec_blocks:
        y = norm(y + attend(y, y, *W[0:4], num_heads, causal=True))
        y = norm(y + attend(y, x, *W[4:8], num_heads, causal=False))
        y = norm(y + gelu(y @ W[8]) @ W[9])
    return (y @ w_head).ravel()
