# Accepted: init and apply compiled together under one jax.jit with the sizes static, so each
# distinct shape of the tests compiles once.
from functools import partial

import flax.linen as nn
import jax


class Block(nn.Module):
    heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(nn.LayerNorm()(x))
        h = nn.LayerNorm()(x)
        h = nn.Dense(self.d_ff)(h)
        return x + nn.Dense(x.shape[-1])(nn.relu(h))


@partial(jax.jit, static_argnums=(2, 3))
def _run(seed, x, heads, d_ff):
    block = Block(heads, d_ff)
    return block.apply(block.init(jax.random.PRNGKey(seed), x), x).reshape(-1)


def encoder_block_forward(seed, x, num_heads, d_ff):
    return _run(seed, x, int(num_heads), int(d_ff))
