# attack: open a socket from a JAX host callback (runs on the runtime's threads)
# category: network
# expect: RE
# expect-message: forbidden system call
import socket

import jax
import jax.numpy as jnp
from jax.experimental import io_callback


def call_out(v):
    socket.create_connection(("127.0.0.1", int("__TJ_LISTENER_PORT__")), timeout=2)
    return v


def double(x):
    a = jnp.asarray(x)
    f = jax.jit(lambda a: io_callback(call_out, jax.ShapeDtypeStruct(a.shape, a.dtype), a))
    return (2 * f(a)).reshape(-1)
