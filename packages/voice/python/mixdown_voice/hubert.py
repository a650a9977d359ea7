"""HuBERT (Hsu et al. 2021) as RVC uses it for content features, written for Mixdown: the
checkpoint is fairseq's `hubert_base.pt` (or a ContentVec checkpoint in the same layout), read
without fairseq.

- a convolutional waveform encoder (7 strided convolutions, 320 samples per frame at 16 kHz; the
  first followed by a group norm over each channel), GELU after each;
- a layer norm and a projection to the model width;
- a grouped convolutional position embedding (weight-normed over its kernel axis) added to it,
  then a layer norm;
- post-norm transformer layers (self-attention, then a GELU feed-forward).

RVC v2 takes the output of layer 12 (768-d); v1 the output of layer 9 through `final_proj`
(768 -> 256). Parameter names follow fairseq's keys so the checkpoint's `model` dict loads as it
is (the weight-norm pair of the position convolution is folded into a plain weight).
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

STRIDES = (5, 2, 2, 2, 2, 2, 2)
KERNELS = (10, 3, 3, 3, 3, 2, 2)


class WaveEncoder(nn.Module):
    def __init__(self, channels):
        super().__init__()
        layers = []
        for i, (k, s) in enumerate(zip(KERNELS, STRIDES)):
            conv = nn.Conv1d(1 if i == 0 else channels, channels, k, stride=s, bias=False)
            if i == 0:
                layers.append(nn.Sequential(conv, nn.Identity(), nn.GroupNorm(channels, channels), nn.GELU()))
            else:
                layers.append(nn.Sequential(conv, nn.Identity(), nn.GELU()))
        self.conv_layers = nn.ModuleList(layers)

    def forward(self, wave):  # [B, N] -> [B, C, T]
        x = wave.unsqueeze(1)
        for layer in self.conv_layers:
            x = layer(x)
        return x


class SelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(width, width)
        self.k_proj = nn.Linear(width, width)
        self.v_proj = nn.Linear(width, width)
        self.out_proj = nn.Linear(width, width)

    def forward(self, x):  # [B, T, W]
        b, t, w = x.shape
        size = w // self.heads
        split = lambda y: y.view(b, t, self.heads, size).transpose(1, 2)
        q = split(self.q_proj(x) * size**-0.5)
        k = split(self.k_proj(x))
        v = split(self.v_proj(x))
        p = torch.softmax(torch.matmul(q, k.transpose(2, 3)), dim=-1)
        return self.out_proj(torch.matmul(p, v).transpose(1, 2).reshape(b, t, w))


class Layer(nn.Module):
    def __init__(self, width, hidden, heads):
        super().__init__()
        self.self_attn = SelfAttention(width, heads)
        self.self_attn_layer_norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, width)
        self.final_layer_norm = nn.LayerNorm(width)

    def forward(self, x):
        x = self.self_attn_layer_norm(x + self.self_attn(x))
        return self.final_layer_norm(x + self.fc2(F.gelu(self.fc1(x))))


class Encoder(nn.Module):
    def __init__(self, width, hidden, heads, layers, kernel, groups):
        super().__init__()
        self.kernel = kernel
        self.pos_conv = nn.Sequential(nn.Conv1d(width, width, kernel, padding=kernel // 2, groups=groups))
        self.layer_norm = nn.LayerNorm(width)
        self.layers = nn.ModuleList([Layer(width, hidden, heads) for _ in range(layers)])

    def forward(self, x, upto):
        position = self.pos_conv(x.transpose(1, 2))
        if self.kernel % 2 == 0:  # an even kernel with padding k/2 gives one frame too many
            position = position[:, :, :-1]
        x = self.layer_norm(x + F.gelu(position).transpose(1, 2))
        for layer in self.layers[:upto]:
            x = layer(x)
        return x


class HuBERT(nn.Module):
    def __init__(self, channels=512, width=768, hidden=3072, heads=12, layers=12, pos_kernel=128, pos_groups=16, projection=256):
        super().__init__()
        self.feature_extractor = WaveEncoder(channels)
        self.layer_norm = nn.LayerNorm(channels)
        self.post_extract_proj = nn.Linear(channels, width)
        self.encoder = Encoder(width, hidden, heads, layers, pos_kernel, pos_groups)
        if projection:
            self.final_proj = nn.Linear(width, projection)

    def forward(self, wave, output_layer, project=False):
        x = self.feature_extractor(wave).transpose(1, 2)
        x = self.post_extract_proj(self.layer_norm(x))
        x = self.encoder(x, output_layer)
        return self.final_proj(x) if project else x


def fold_weight_norm(state):
    """Weight-norm pairs (`weight_g`, `weight_v`) to plain weights: g · v / ||v||, the norm taken
    over every axis where g has size 1 (fairseq normalises the position convolution per kernel tap)."""
    out = {}
    for key, value in state.items():
        if key.endswith(".weight_g"):
            continue
        if key.endswith(".weight_v"):
            base = key[: -len("_v")]
            g = state[base + "_g"].float()
            v = value.float()
            axes = tuple(d for d in range(v.dim()) if g.shape[d] == 1)
            out[base] = g * v / v.norm(dim=axes, keepdim=True)
        else:
            out[key] = value.float()
    return out


def _setting(checkpoint, name, default):
    for holder in (checkpoint.get("cfg", {}) or {}, {"model": checkpoint.get("args")}):
        model = holder.get("model") if isinstance(holder, dict) else None
        if isinstance(model, dict) and name in model:
            return model[name]
        if model is not None and hasattr(model, name):
            return getattr(model, name)
    return default


def from_checkpoint(checkpoint):
    """A fairseq HuBERT checkpoint (`{"model": state dict, "cfg"/"args": ...}`) or a bare state dict."""
    state = checkpoint.get("model", checkpoint) if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict) or "feature_extractor.conv_layers.0.0.weight" not in state:
        raise ValueError("not a HuBERT/ContentVec checkpoint: no feature_extractor.conv_layers.0.0.weight")
    state = fold_weight_norm({k: v for k, v in state.items() if torch.is_tensor(v)})
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layers."))
    pos = state["encoder.pos_conv.0.weight"]
    heads = int(_setting(checkpoint, "encoder_attention_heads", 12))
    model = HuBERT(
        channels=state["feature_extractor.conv_layers.0.0.weight"].shape[0],
        width=state["post_extract_proj.weight"].shape[0],
        hidden=state["encoder.layers.0.fc1.weight"].shape[0],
        heads=heads,
        layers=layers,
        pos_kernel=pos.shape[2],
        pos_groups=state["post_extract_proj.weight"].shape[0] // pos.shape[1],
        projection=state["final_proj.weight"].shape[0] if "final_proj.weight" in state else 0,
    )
    wanted = set(model.state_dict())
    missing = wanted - set(state)
    if missing:
        raise ValueError(f"not a HuBERT/ContentVec checkpoint: missing {sorted(missing)[0]}")
    model.load_state_dict({k: v for k, v in state.items() if k in wanted})
    return model.eval(), layers
