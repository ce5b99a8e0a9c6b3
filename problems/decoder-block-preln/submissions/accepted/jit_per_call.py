# Accepted: the causal mask built in a helper, and `init` and `apply` each under a new jax.jit
# on every call, as many learners write JAX: every test compiles both again (the compile
# budget is set from this one).
import jax
import jax.numpy as jnp
import flax.linen as nn


def causal_mask(t):
    return jnp.tril(jnp.ones((t, t), dtype=bool))


class Block(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x_q, x_kv):
        h = nn.LayerNorm()(x_q)
        h = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(
            h, mask=causal_mask(x_q.shape[0]))
        x_q = x_q + h
        q = nn.LayerNorm()(x_q)
        kv = nn.LayerNorm()(x_kv)
        x_q = x_q + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(q, kv)
        h = nn.LayerNorm()(x_q)
        h = nn.relu(nn.Dense(self.d_ff)(h))
        return x_q + nn.Dense(x_q.shape[-1])(h)


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    model = Block(num_heads=num_heads, d_ff=d_ff)
    params = jax.jit(model.init)(jax.random.PRNGKey(seed), x_q, x_kv)
    out = jax.jit(model.apply)(params, x_q, x_kv)
    return out.reshape(-1)
