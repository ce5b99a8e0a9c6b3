import torch


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    """Post-LN encoder-decoder Transformer forward pass (inference: no dropout).

    src_ids: (N, T_src) int32 and tgt_ids: (N, T_tgt) int32 token ids
    src_emb: (V_src, d), tgt_emb: (V_tgt, d) embedding tables
    enc_pos_embed: (T_src, d), dec_pos_embed: (T_tgt, d) learned position embeddings
    enc_blocks: (E, 6, d, d) and dec_blocks: (L, 12, d, d) the blocks' weights, by slot
        (decoder slots 10 and 11 are padding: ignore them)
    w_head: (d, V_tgt) the output projection
    num_heads: int, d % num_heads == 0
    returns: the logits (N, T_tgt, V_tgt), flattened to (N * T_tgt * V_tgt,)
    """
    # The inputs arrive as NumPy arrays: torch.from_numpy(src_emb) makes a tensor.
    # TODO: embed and add positions, run the E encoder blocks, then the L decoder blocks
    # (causal self-attention, cross-attention to the encoder output, GELU FFN), project.
    raise NotImplementedError("transformer_forward: write the forward pass, then Run")
