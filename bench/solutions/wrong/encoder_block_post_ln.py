# Post-LN written in setup() style
import flax.linen as nn
import jax
import numpy as np


class Block(nn.Module):
    d_model: int
    num_heads: int
    d_ff: int

    def setup(self):
        # Names, not the order of these lines, decide the parameter draw.
        self.Dense_1 = nn.Dense(self.d_model)
        self.Dense_0 = nn.Dense(self.d_ff)
        self.LayerNorm_0 = nn.LayerNorm()
        self.LayerNorm_1 = nn.LayerNorm()
        self.MultiHeadDotProductAttention_0 = nn.MultiHeadDotProductAttention(
            num_heads=self.num_heads
        )

    def __call__(self, x):
        x = self.LayerNorm_0(x + self.MultiHeadDotProductAttention_0(x))
        return self.LayerNorm_1(x + self.Dense_1(nn.relu(self.Dense_0(x))))


def encoder_block_forward(seed, x, num_heads, d_ff):
    block = Block(d_model=x.shape[-1], num_heads=num_heads, d_ff=d_ff)
    variables = block.init(jax.random.PRNGKey(seed), x)
    return np.asarray(block.apply(variables, x)).reshape(-1)
