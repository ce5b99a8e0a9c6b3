from functools import partial

import jax
import jax.numpy as jnp


def _ln(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return g * (x - m) / jnp.sqrt(v + 1e-5) + b


def _proj(x, w, b, num_heads):
    y = x @ w + b
    return y.reshape(y.shape[0], y.shape[1], num_heads, -1)  # (B, T, H, d_k)


def _mha(xq, xkv, p, s, num_heads, mask=None, causal=False):
    q = _proj(xq, p[s + "_wq"], p[s + "_bq"], num_heads)
    k = _proj(xkv, p[s + "_wk"], p[s + "_bk"], num_heads)
    v = _proj(xkv, p[s + "_wv"], p[s + "_bv"], num_heads)
    o = jax.nn.dot_product_attention(q, k, v, mask=mask, is_causal=causal)
    return o.reshape(xq.shape) @ p[s + "_wo"] + p[s + "_bo"]


@partial(jax.jit, static_argnames="num_heads")
def _block(x, mem, p, mask, num_heads):
    x = _ln(x + _mha(x, x, p, "sa", num_heads, causal=True), p["ln1_g"], p["ln1_b"])
    x = _ln(x + _mha(x, mem, p, "ca", num_heads, mask=mask), p["ln2_g"], p["ln2_b"])
    f = jnp.maximum(x @ p["ff_w1"] + p["ff_b1"], 0.0) @ p["ff_w2"] + p["ff_b2"]
    return _ln(x + f, p["ln3_g"], p["ln3_b"])


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    mask = None
    if memory_mask is not None:
        mask = jnp.asarray(memory_mask, dtype=bool)[:, None, None, :]  # (B, 1, 1, T_src)
    return _block(jnp.asarray(tgt), jnp.asarray(memory), dict(params), mask, num_heads=num_heads)
