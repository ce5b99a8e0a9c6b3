# attack: a 16 GiB JAX allocation at import time
# category: jax
# expect: MLE|RE
import jax.numpy as jnp

BIG = jnp.ones((2**31, 2), dtype=jnp.float32).block_until_ready()


def double(x):
    return (2 * x).reshape(-1)
