# decoder-block-preln in Flax, init and apply compiled together under jax.jit
from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp


class Block(nn.Module):
    heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x_q, x_kv):
        t = x_q.shape[0]
        causal = jnp.tril(jnp.ones((t, t), dtype=bool))[None]
        y = nn.LayerNorm()(x_q)
        x_q = x_q + nn.MultiHeadDotProductAttention(num_heads=self.heads)(y, y, mask=causal)
        q, kv = nn.LayerNorm()(x_q), nn.LayerNorm()(x_kv)
        x_q = x_q + nn.MultiHeadDotProductAttention(num_heads=self.heads)(q, kv, kv)
        y = nn.relu(nn.Dense(self.d_ff)(nn.LayerNorm()(x_q)))
        return x_q + nn.Dense(x_q.shape[-1])(y)


@partial(jax.jit, static_argnums=(3, 4))
def _run(seed, x_q, x_kv, heads, d_ff):
    block = Block(heads, d_ff)
    params = block.init(jax.random.PRNGKey(seed), x_q, x_kv)
    return block.apply(params, x_q, x_kv).reshape(-1)


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    return _run(seed, x_q, x_kv, int(num_heads), int(d_ff))
