# Pre-LN (x + sublayer(LN(x))) instead of the required Post-LN (LN(x + sublayer(x)))
import jax
import jax.numpy as jnp


def _ln(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = x.var(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * g + b


def _mha(xq, xkv, p, s, H, keep):
    B, Tq, D = xq.shape
    Tk = xkv.shape[1]
    q = (xq @ p[s + "_wq"] + p[s + "_bq"]).reshape(B, Tq, H, -1)
    k = (xkv @ p[s + "_wk"] + p[s + "_bk"]).reshape(B, Tk, H, -1)
    v = (xkv @ p[s + "_wv"] + p[s + "_bv"]).reshape(B, Tk, H, -1)
    sc = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(q.shape[-1])
    w = jax.nn.softmax(jnp.where(keep, sc, -jnp.inf), axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", w, v).reshape(B, Tq, D) @ p[s + "_wo"] + p[s + "_bo"]


@jax.jit
def _forward(x, mem, p, keep_src):
    H = p["heads"].shape[0]
    T = x.shape[1]
    causal = jnp.tril(jnp.ones((T, T), dtype=bool))
    h = _ln(x, p["ln1_g"], p["ln1_b"])
    x = x + _mha(h, h, p, "sa", H, causal)
    h = _ln(x, p["ln2_g"], p["ln2_b"])
    x = x + _mha(h, mem, p, "ca", H, keep_src)
    h = _ln(x, p["ln3_g"], p["ln3_b"])
    return x + jax.nn.relu(h @ p["ff_w1"] + p["ff_b1"]) @ p["ff_w2"] + p["ff_b2"]


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    p = dict(params)
    p["heads"] = jnp.zeros((num_heads,))  # carries H as a static shape
    if memory_mask is None:
        memory_mask = jnp.ones(memory.shape[:2], dtype=bool)
    return _forward(tgt, memory, p, jnp.asarray(memory_mask)[:, None, None, :]).reshape(-1)
