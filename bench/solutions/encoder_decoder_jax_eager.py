# encoder-decoder in eager JAX (no jit): all heads at once, softmax written out by hand
import jax.numpy as jnp


def _norm(z):
    zc = z - z.mean(-1, keepdims=True)
    return zc / jnp.sqrt((zc * zc).mean(-1, keepdims=True) + 1e-5)


def _gelu(t):
    return 0.5 * t * (1 + jnp.tanh(jnp.sqrt(2 / jnp.pi) * (t + 0.044715 * t**3)))


def _mha(xq, xkv, w, h, causal):
    n, tq, d = xq.shape
    dk = d // h
    q = (xq @ w[0]).reshape(n, tq, h, dk).transpose(0, 2, 1, 3)
    k = (xkv @ w[1]).reshape(n, -1, h, dk).transpose(0, 2, 3, 1)
    v = (xkv @ w[2]).reshape(n, -1, h, dk).transpose(0, 2, 1, 3)
    s = (q @ k) / jnp.sqrt(float(dk))
    if causal:
        s = jnp.where(jnp.tril(jnp.ones(s.shape[-2:], bool)), s, -jnp.inf)
    e = jnp.exp(s - s.max(-1, keepdims=True))
    o = (e / e.sum(-1, keepdims=True)) @ v
    return o.transpose(0, 2, 1, 3).reshape(n, tq, d) @ w[3]


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    h = int(num_heads)
    x = jnp.asarray(src_emb)[jnp.asarray(src_ids)] + jnp.asarray(enc_pos_embed)
    for w in jnp.asarray(enc_blocks):
        x = _norm(x + _mha(x, x, w[0:4], h, False))
        x = _norm(x + _gelu(x @ w[4]) @ w[5])
    y = jnp.asarray(tgt_emb)[jnp.asarray(tgt_ids)] + jnp.asarray(dec_pos_embed)
    for w in jnp.asarray(dec_blocks):
        y = _norm(y + _mha(y, y, w[0:4], h, True))
        y = _norm(y + _mha(y, x, w[4:8], h, False))
        y = _norm(y + _gelu(y @ w[8]) @ w[9])
    return (y @ jnp.asarray(w_head)).ravel()
