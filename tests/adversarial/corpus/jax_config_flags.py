# attack: flip jax.config flags at import (x64, disable_jit, matmul precision, debug_nans, a writable compilation cache)
# category: jax
# expect: AC
import jax

for name, value in (("jax_enable_x64", True), ("jax_disable_jit", True),
                    ("jax_default_matmul_precision", "bfloat16"), ("jax_debug_nans", True),
                    ("jax_compilation_cache_dir", "/tmp/tj-plant-jax-cache"),
                    ("jax_persistent_cache_min_compile_time_secs", 0.0)):
    try:
        jax.config.update(name, value)
    except Exception as e:  # noqa: BLE001
        print("refused", name, e)

import jax.numpy as jnp  # noqa: E402


def double(x):
    return (2 * jnp.asarray(x)).reshape(-1)
