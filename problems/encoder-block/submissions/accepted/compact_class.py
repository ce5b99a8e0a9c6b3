# Accepted: a compact nn.Module, submodules auto-named in the documented order.
import jax
import jax.numpy as jnp
import flax.linen as nn


class PreLNEncoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        y = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(y)
        y = nn.LayerNorm()(x)
        y = nn.Dense(self.d_ff)(y)
        y = jax.nn.relu(y)
        y = nn.Dense(x.shape[-1])(y)
        return x + y


def encoder_block_forward(seed, x, num_heads, d_ff):
    model = PreLNEncoderBlock(num_heads, d_ff)
    x = jnp.asarray(x)
    params = model.init(jax.random.PRNGKey(seed), x)
    out = model.apply(params, x)
    return jnp.ravel(out)
