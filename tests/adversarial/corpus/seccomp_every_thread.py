# attack: look for a thread started before the seccomp filter (JAX's pools) to make forbidden calls from
# category: kernel
# expect: AC
# forbid: UNFILTERED-THREAD
import os

import jax.numpy as jnp


def double(x):
    for tid in os.listdir("/proc/self/task"):
        status = open(f"/proc/self/task/{tid}/status").read()
        if "Seccomp:\t0" in status:
            print("UNFILTERED-THREAD", tid, open(f"/proc/self/task/{tid}/comm").read().strip())
    return (2 * jnp.asarray(x)).reshape(-1)
