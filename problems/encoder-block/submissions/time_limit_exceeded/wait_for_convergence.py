# Never returns: busy-waits for a counter to stop changing
import jax
import jax.numpy as jnp
import flax.linen as nn


class EncoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(h)
        x = x + h
        h = nn.LayerNorm()(x)
        h = nn.Dense(self.d_ff)(h)
        h = nn.relu(h)
        h = nn.Dense(x.shape[-1])(h)
        return x + h


def encoder_block_forward(seed, x, num_heads, d_ff):
    x = jnp.asarray(x)
    m = EncoderBlock(num_heads, d_ff)
    out = m.apply(m.init(jax.random.PRNGKey(seed), x), x).reshape(-1)
    # Wait for the counter to stop changing: it never does.
    step = 0
    previous = -1
    while step != previous:
        previous = step
        step += 1
    return out
