# encoder-decoder in eager JAX (no jit): Python loops over blocks, heads via einsum
import jax.numpy as jnp
import numpy as np


def _ln(z):
    mu = z.mean(-1, keepdims=True)
    return (z - mu) / jnp.sqrt(((z - mu) ** 2).mean(-1, keepdims=True) + 1e-5)


def _gelu(t):
    return 0.5 * t * (1 + jnp.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t**3)))


def _mha(xq, xkv, wq, wk, wv, wo, h, causal):
    n, tq, d = xq.shape
    dk = d // h
    q = (xq @ wq).reshape(n, tq, h, dk)
    k = (xkv @ wk).reshape(n, -1, h, dk)
    v = (xkv @ wv).reshape(n, -1, h, dk)
    s = jnp.einsum("nqhd,nkhd->nhqk", q, k) / np.sqrt(dk)
    if causal:
        s = jnp.where(jnp.tril(jnp.ones((tq, tq), bool)), s, -1e30)
    w = jnp.exp(s - s.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    return jnp.einsum("nhqk,nkhd->nqhd", w, v).reshape(n, tq, d) @ wo


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    x = jnp.asarray(src_emb)[src_ids] + enc_pos_embed
    for blk in jnp.asarray(enc_blocks):
        x = _ln(x + _mha(x, x, blk[0], blk[1], blk[2], blk[3], num_heads, False))
        x = _ln(x + _gelu(x @ blk[4]) @ blk[5])
    y = jnp.asarray(tgt_emb)[tgt_ids] + dec_pos_embed
    for blk in jnp.asarray(dec_blocks):
        y = _ln(y + _mha(y, y, blk[0], blk[1], blk[2], blk[3], num_heads, True))
        y = _ln(y + _mha(y, x, blk[4], blk[5], blk[6], blk[7], num_heads, False))
        y = _ln(y + _gelu(y @ blk[8]) @ blk[9])
    return (y @ w_head).reshape(-1)
