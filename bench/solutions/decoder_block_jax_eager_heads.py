# decoder-block in eager JAX (no jit): one head at a time, jax.nn.softmax, jnp.var
import jax
import jax.numpy as jnp


def layer_norm(x, gain, shift, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * gain + shift


def attention(query_in, key_in, params, prefix, num_heads, allowed):
    d_model = query_in.shape[-1]
    d_k = d_model // num_heads
    q = jnp.dot(query_in, params[prefix + "wq"]) + params[prefix + "bq"]
    k = jnp.dot(key_in, params[prefix + "wk"]) + params[prefix + "bk"]
    v = jnp.dot(key_in, params[prefix + "wv"]) + params[prefix + "bv"]
    heads = []
    for i in range(num_heads):
        cols = slice(i * d_k, (i + 1) * d_k)
        scores = jnp.matmul(q[..., cols], jnp.swapaxes(k[..., cols], -1, -2)) / jnp.sqrt(d_k)
        scores = jnp.where(allowed, scores, -jnp.inf)
        heads.append(jnp.matmul(jax.nn.softmax(scores, axis=-1), v[..., cols]))
    return jnp.dot(jnp.concatenate(heads, axis=-1), params[prefix + "wo"]) + params[prefix + "bo"]


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    p = {name: jnp.asarray(value) for name, value in params.items()}
    tgt, memory = jnp.asarray(tgt), jnp.asarray(memory)
    n_tgt, n_src = tgt.shape[1], memory.shape[1]
    causal = jnp.tril(jnp.ones((n_tgt, n_tgt), dtype=bool))
    if memory_mask is None:
        memory_mask = jnp.ones((tgt.shape[0], n_src), dtype=bool)
    source = jnp.asarray(memory_mask)[:, None, :]
    x = layer_norm(tgt + attention(tgt, tgt, p, "sa_", num_heads, causal), p["ln1_g"], p["ln1_b"])
    x = layer_norm(x + attention(x, memory, p, "ca_", num_heads, source), p["ln2_g"], p["ln2_b"])
    hidden = jax.nn.relu(jnp.dot(x, p["ff_w1"]) + p["ff_b1"])
    x = layer_norm(x + jnp.dot(hidden, p["ff_w2"]) + p["ff_b2"], p["ln3_g"], p["ln3_b"])
    return x.reshape(-1)
