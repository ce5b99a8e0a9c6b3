# Accepted: a compact nn.Module with a boolean causal mask from nn.make_causal_mask.
import jax
import jax.numpy as jnp
import flax.linen as nn


class PreLNDecoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x_q, x_kv):
        # make_causal_mask returns (1, T_q, T_q); it broadcasts over the heads.
        causal = nn.make_causal_mask(jnp.ones(x_q.shape[0]))
        y = nn.LayerNorm()(x_q)
        x_q = x_q + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(y, y, mask=causal)
        q = nn.LayerNorm()(x_q)
        kv = nn.LayerNorm()(x_kv)
        x_q = x_q + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(q, kv, kv)
        y = nn.LayerNorm()(x_q)
        y = jax.nn.relu(nn.Dense(self.d_ff)(y))
        return x_q + nn.Dense(x_q.shape[-1])(y)


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    model = PreLNDecoderBlock(num_heads=num_heads, d_ff=d_ff)
    x_q, x_kv = jnp.asarray(x_q), jnp.asarray(x_kv)
    params = model.init(jax.random.PRNGKey(seed), x_q, x_kv)
    return jnp.ravel(model.apply(params, x_q, x_kv))
