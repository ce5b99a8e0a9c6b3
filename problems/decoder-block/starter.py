import numpy as np


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    """tgt (B, T_tgt, D), memory (B, T_src, D), params: dict of arrays,
    memory_mask (B, T_src) bool (True = attend) or None.

    Return the Post-LN decoder layer output, flattened to (B * T_tgt * D,).
    """
    pass
