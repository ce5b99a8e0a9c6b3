# attack: poison the shared JAX compilation cache (write entries into the judge's cache directory)
# category: jax
# expect: AC
import os

import jax
import jax.numpy as jnp

CACHE = "/opt/tensorjudge/xla-cache"
results = {}
for root in (CACHE, os.path.join(CACHE, "tj-plant-entry")):
    try:
        with open(os.path.join(root if root != CACHE else CACHE, "tj-plant-poison"), "wb") as f:
            f.write(b"poison")
        results[root] = "WRITTEN"
    except OSError as e:
        results[root] = e.strerror
try:
    jax.config.update("jax_compilation_cache_dir", CACHE)
    jax.jit(lambda a: a * 3)(jnp.ones(7)).block_until_ready()
except Exception as e:  # noqa: BLE001
    results["jit"] = repr(e)
print(results)


def double(x):
    return (2 * jnp.asarray(x)).reshape(-1)
