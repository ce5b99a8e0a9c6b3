import torch
import torch.nn as nn
import torch.nn.functional as F


def _gelu_tanh(t):
    return F.gelu(t, approximate="tanh")


def _load_attn(attn, w):
    # nn.MultiheadAttention stores (out, in) weights: transpose the (in, out) slots
    attn.in_proj_weight.copy_(torch.cat([w[0].T, w[1].T, w[2].T]))
    attn.out_proj.weight.copy_(w[3].T)


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    enc = torch.from_numpy(enc_blocks)
    dec = torch.from_numpy(dec_blocks)
    d = enc.shape[-1]
    common = dict(d_model=d, nhead=num_heads, dim_feedforward=d, dropout=0.0,
                  activation=_gelu_tanh, batch_first=True, norm_first=False, bias=False)

    with torch.no_grad():
        x = F.embedding(torch.from_numpy(src_ids).long(), torch.from_numpy(src_emb))
        x = x + torch.from_numpy(enc_pos_embed)
        for w in enc:
            layer = nn.TransformerEncoderLayer(**common).eval()
            _load_attn(layer.self_attn, w[0:4])
            layer.linear1.weight.copy_(w[4].T)
            layer.linear2.weight.copy_(w[5].T)
            x = layer(x)

        y = F.embedding(torch.from_numpy(tgt_ids).long(), torch.from_numpy(tgt_emb))
        y = y + torch.from_numpy(dec_pos_embed)
        causal = nn.Transformer.generate_square_subsequent_mask(y.shape[1])
        for w in dec:
            layer = nn.TransformerDecoderLayer(**common).eval()
            _load_attn(layer.self_attn, w[0:4])
            _load_attn(layer.multihead_attn, w[4:8])
            layer.linear1.weight.copy_(w[8].T)
            layer.linear2.weight.copy_(w[9].T)
            y = layer(y, x, tgt_mask=causal, tgt_is_causal=True)

        return y @ torch.from_numpy(w_head)
