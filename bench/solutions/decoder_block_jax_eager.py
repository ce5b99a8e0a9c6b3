# decoder-block in eager JAX (no jit), heads via einsum, softmax written out by hand
import jax.numpy as jnp


def _ln(z, g, b):
    mu = z.mean(-1, keepdims=True)
    zc = z - mu
    return g * zc / jnp.sqrt((zc * zc).mean(-1, keepdims=True) + 1e-5) + b


def _mha(xq, xkv, p, pre, h, keep):
    b, tq, d = xq.shape
    dk = d // h
    q = (xq @ p[pre + "wq"] + p[pre + "bq"]).reshape(b, tq, h, dk)
    k = (xkv @ p[pre + "wk"] + p[pre + "bk"]).reshape(b, -1, h, dk)
    v = (xkv @ p[pre + "wv"] + p[pre + "bv"]).reshape(b, -1, h, dk)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(dk)
    s = jnp.where(keep, s, -1e30)
    e = jnp.exp(s - s.max(-1, keepdims=True))
    w = e / e.sum(-1, keepdims=True)
    o = jnp.einsum("bhqk,bkhd->bqhd", w, v).reshape(b, tq, d)
    return o @ p[pre + "wo"] + p[pre + "bo"]


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    p = {k: jnp.asarray(v) for k, v in params.items()}
    x, m = jnp.asarray(tgt), jnp.asarray(memory)
    t = x.shape[1]
    causal = jnp.tril(jnp.ones((t, t), bool))[None, None]
    pad = (jnp.ones(m.shape[:2], bool) if memory_mask is None
           else jnp.asarray(memory_mask))[:, None, None, :]
    x = _ln(x + _mha(x, x, p, "sa_", num_heads, causal), p["ln1_g"], p["ln1_b"])
    x = _ln(x + _mha(x, m, p, "ca_", num_heads, pad), p["ln2_g"], p["ln2_b"])
    f = jnp.maximum(x @ p["ff_w1"] + p["ff_b1"], 0) @ p["ff_w2"] + p["ff_b2"]
    return _ln(x + f, p["ln3_g"], p["ln3_b"]).ravel()
