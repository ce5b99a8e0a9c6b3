# Accepted: one-line nested calls made safe by explicit names (alias and Dense order both fixed).
import jax
import jax.numpy as jnp
import flax.linen as nn


class Encoder(nn.Module):
    heads: int
    hidden: int

    @nn.compact
    def __call__(self, x):
        D = x.shape[-1]
        x = x + nn.MultiHeadAttention(
            num_heads=self.heads, name="MultiHeadDotProductAttention_0"
        )(nn.LayerNorm(name="LayerNorm_0")(x))
        x = x + nn.Dense(D, name="Dense_1")(
            nn.relu(nn.Dense(self.hidden, name="Dense_0")(nn.LayerNorm(name="LayerNorm_1")(x)))
        )
        return x


def encoder_block_forward(seed, x, num_heads, d_ff):
    enc = Encoder(heads=num_heads, hidden=d_ff)
    xs = jnp.asarray(x)
    out = enc.apply(enc.init(jax.random.PRNGKey(seed), xs), xs)
    return out.reshape(-1).tolist()
