from functools import partial

import jax
import jax.numpy as jnp


def _layer_norm(z, g, b):
    mu = jnp.mean(z, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(z - mu), axis=-1, keepdims=True)
    return (z - mu) * jax.lax.rsqrt(var + 1e-5) * g + b


def _attend(xq, xkv, p, pre, num_heads, keep):
    B, Tq, D = xq.shape
    Tk = xkv.shape[1]
    dk = D // num_heads

    def heads(t, n):
        return t.reshape(B, n, num_heads, dk).transpose(0, 2, 1, 3)

    q = heads(xq @ p[pre + "wq"] + p[pre + "bq"], Tq)
    k = heads(xkv @ p[pre + "wk"] + p[pre + "bk"], Tk)
    v = heads(xkv @ p[pre + "wv"] + p[pre + "bv"], Tk)
    logits = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(jnp.float32(dk))
    logits = jnp.where(keep, logits, -jnp.inf)
    w = jax.nn.softmax(logits, axis=-1)
    out = (w @ v).transpose(0, 2, 1, 3).reshape(B, Tq, D)
    return out @ p[pre + "wo"] + p[pre + "bo"]


@partial(jax.jit, static_argnums=3)
def _forward(tgt, memory, p, num_heads, memory_mask):
    T = tgt.shape[1]
    causal = jnp.tril(jnp.ones((T, T), dtype=bool))
    x = _layer_norm(tgt + _attend(tgt, tgt, p, "sa_", num_heads, causal), p["ln1_g"], p["ln1_b"])
    keep = memory_mask[:, None, None, :]
    x = _layer_norm(x + _attend(x, memory, p, "ca_", num_heads, keep), p["ln2_g"], p["ln2_b"])
    ff = jax.nn.relu(x @ p["ff_w1"] + p["ff_b1"]) @ p["ff_w2"] + p["ff_b2"]
    return _layer_norm(x + ff, p["ln3_g"], p["ln3_b"]).reshape(-1)


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    if memory_mask is None:
        memory_mask = jnp.ones(memory.shape[:2], dtype=bool)
    p = {k: jnp.asarray(v) for k, v in params.items()}
    return _forward(jnp.asarray(tgt), jnp.asarray(memory), p, int(num_heads),
                    jnp.asarray(memory_mask, dtype=bool))
