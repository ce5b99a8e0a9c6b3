# never returns: a busy loop
import numpy as np


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    total = 0
    while True:
        total += 1
    return np.zeros(tgt.size, dtype=np.float32)
