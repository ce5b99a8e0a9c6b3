# Accepted: `init` and `apply` each under a new jax.jit on every call, as many learners write
# JAX: every test compiles both again (the compile budget is set from this one).
import jax
import jax.numpy as jnp
import flax.linen as nn


class Block(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(h)
        h = nn.LayerNorm()(x)
        h = nn.Dense(self.d_ff)(h)
        h = nn.relu(h)
        return x + nn.Dense(x.shape[-1])(h)


def encoder_block_forward(seed, x, num_heads, d_ff):
    model = Block(num_heads=num_heads, d_ff=d_ff)
    x = jnp.asarray(x)
    params = jax.jit(model.init)(jax.random.PRNGKey(seed), x)
    return jax.jit(model.apply)(params, x).reshape(-1)
