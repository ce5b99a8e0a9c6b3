# decoder-block-preln in Flax, init and apply compiled together under jax.jit
from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp


class Block(nn.Module):
    heads: int
    d_ff: int

    @nn.compact
    def __call__(self, q, kv):
        t = q.shape[0]
        mha = nn.MultiHeadDotProductAttention
        q = q + mha(num_heads=self.heads)(nn.LayerNorm()(q), mask=jnp.tril(jnp.ones((t, t))))
        q = q + mha(num_heads=self.heads)(nn.LayerNorm()(q), nn.LayerNorm()(kv))
        h = nn.LayerNorm()(q)
        h = nn.Dense(self.d_ff)(h)
        return q + nn.Dense(q.shape[-1])(nn.relu(h))


@partial(jax.jit, static_argnums=(3, 4))
def _run(seed, x_q, x_kv, heads, d_ff):
    block = Block(heads, d_ff)
    return block.apply(block.init(jax.random.PRNGKey(seed), x_q, x_kv), x_q, x_kv).reshape(-1)


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    return _run(seed, x_q, x_kv, int(num_heads), int(d_ff))
