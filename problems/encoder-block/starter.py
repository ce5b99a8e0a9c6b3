import flax.linen as nn
import jax
import jax.numpy as jnp


def encoder_block_forward(seed, x, num_heads, d_ff):
    """Pre-LN Transformer encoder block.

    seed: int, the key for module.init is jax.random.PRNGKey(seed)
    x: (T, D) float32 array
    num_heads: int, D % num_heads == 0
    d_ff: int, hidden width of the feed-forward layer
    returns: the (T, D) output, flattened to (T*D,)
    """
    # TODO: define an nn.Module with @nn.compact, init it on x, apply it to x.
    raise NotImplementedError("encoder_block_forward: define the module, init and apply it")
