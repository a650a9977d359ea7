"""The synthesizer of an RVC voice model (a `.pth` from RVC's training), written for Mixdown.

RVC's synthesizer is VITS's inference path with an NSF-HiFiGAN decoder:
- the prior encoder: ContentVec features (768-d for v2, 256-d for v1) plus an embedding of the
  coarse pitch, a transformer whose self-attention adds learned relative-position terms within
  10 frames, projected to a mean and a log-scale per channel;
- z = mean + exp(log-scale) · noise · 0.66666, sent backwards through 4 affine coupling layers
  (WaveNet-style gated convolutions, conditioned on the speaker embedding) with channel flips;
- the decoder: transposed-convolution upsampling to the output rate, multi-receptive-field
  residual blocks, and at every scale a strided convolution of the harmonic source
  (tanh of a 1x1 mix of the NSF sine excitation).

The excitation itself (a sine following f0 plus noise) is an input here, not part of the graph:
it is a cumulative sum over every output sample, which ONNX runtimes compute in float32 while
PyTorch accumulates in double (Mixdown computes it in TypeScript, `src/rvc/nsf-source.ts`).
The relative-position terms are gathered with indices built from the input's length, so one
export serves every length.

Parameter names follow the keys of RVC's `.pth` so its `weight` dict loads as it is (weight-norm
pairs `weight_g`/`weight_v` are folded into plain weights).
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

SLOPE = 0.1
RATES = {"32k": 32000, "40k": 40000, "48k": 48000}


class ChannelNorm(nn.Module):
    """Layer norm over the channel axis of [B, C, T]."""

    def __init__(self, channels):
        super().__init__()
        self.channels = channels
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return F.layer_norm(x.transpose(1, 2), (self.channels,), self.gamma, self.beta, 1e-5).transpose(1, 2)


class RelativeSelfAttention(nn.Module):
    def __init__(self, channels, heads, window=10):
        super().__init__()
        self.heads = heads
        self.window = window
        self.head_size = channels // heads
        self.conv_q = nn.Conv1d(channels, channels, 1)
        self.conv_k = nn.Conv1d(channels, channels, 1)
        self.conv_v = nn.Conv1d(channels, channels, 1)
        self.conv_o = nn.Conv1d(channels, channels, 1)
        self.emb_rel_k = nn.Parameter(torch.zeros(1, 2 * window + 1, self.head_size))
        self.emb_rel_v = nn.Parameter(torch.zeros(1, 2 * window + 1, self.head_size))

    def _heads(self, x):
        b, _, t = x.shape
        return x.view(b, self.heads, self.head_size, t).transpose(2, 3)  # [B, H, T, D]

    def forward(self, x):
        b, c, t = x.shape
        q = self._heads(self.conv_q(x)) / math.sqrt(self.head_size)
        k = self._heads(self.conv_k(x))
        v = self._heads(self.conv_v(x))
        w = self.window
        positions = torch.arange(t, device=x.device)
        offset = positions[None, :] - positions[:, None]  # [i, j] = j - i
        near = (offset.abs() <= w).to(x.dtype)
        # q_i · rel_k[j - i + w] for |j - i| <= w, as a gather from the [T, 2w+1] products.
        rel_logits = torch.matmul(q, self.emb_rel_k[0].transpose(0, 1))  # [B, H, T, 2w+1]
        index = (offset + w).clamp(0, 2 * w).expand(b, self.heads, t, t)
        scores = torch.matmul(q, k.transpose(2, 3)) + torch.gather(rel_logits, 3, index) * near
        p = torch.softmax(scores, dim=-1)
        out = torch.matmul(p, v)
        # Σ_j p[i, j] · rel_v[j - i + w]: the weights p[i, i - w .. i + w] (0 beyond the ends).
        band = (positions[:, None] + torch.arange(2 * w + 1, device=x.device)[None, :]).expand(b, self.heads, t, 2 * w + 1)
        weights = torch.gather(F.pad(p, (w, w)), 3, band)
        out = out + torch.matmul(weights, self.emb_rel_v[0])
        return self.conv_o(out.transpose(2, 3).reshape(b, c, t))


class FeedForward(nn.Module):
    def __init__(self, channels, hidden, kernel):
        super().__init__()
        self.pad = ((kernel - 1) // 2, kernel // 2)
        self.conv_1 = nn.Conv1d(channels, hidden, kernel)
        self.conv_2 = nn.Conv1d(hidden, channels, kernel)

    def forward(self, x):
        x = torch.relu(self.conv_1(F.pad(x, self.pad)))
        return self.conv_2(F.pad(x, self.pad))


class Transformer(nn.Module):
    def __init__(self, channels, hidden, heads, layers, kernel):
        super().__init__()
        self.attn_layers = nn.ModuleList([RelativeSelfAttention(channels, heads) for _ in range(layers)])
        self.norm_layers_1 = nn.ModuleList([ChannelNorm(channels) for _ in range(layers)])
        self.ffn_layers = nn.ModuleList([FeedForward(channels, hidden, kernel) for _ in range(layers)])
        self.norm_layers_2 = nn.ModuleList([ChannelNorm(channels) for _ in range(layers)])

    def forward(self, x):
        for attn, norm1, ffn, norm2 in zip(self.attn_layers, self.norm_layers_1, self.ffn_layers, self.norm_layers_2):
            x = norm1(x + attn(x))
            x = norm2(x + ffn(x))
        return x


class PriorEncoder(nn.Module):
    def __init__(self, features, out_channels, channels, hidden, heads, layers, kernel, f0):
        super().__init__()
        self.channels = channels
        self.emb_phone = nn.Linear(features, channels)
        if f0:
            self.emb_pitch = nn.Embedding(256, channels)
        self.encoder = Transformer(channels, hidden, heads, layers, kernel)
        self.proj = nn.Conv1d(channels, 2 * out_channels, 1)

    def forward(self, phone, pitch):
        x = self.emb_phone(phone)
        if pitch is not None:
            x = x + self.emb_pitch(pitch)
        x = F.leaky_relu(x * math.sqrt(self.channels), SLOPE).transpose(1, 2)
        mean, log_scale = self.proj(self.encoder(x)).chunk(2, dim=1)
        return mean, log_scale


class GatedConvStack(nn.Module):
    """WaveNet-like: dilated convolutions, tanh·sigmoid gates with the speaker added, skip sums."""

    def __init__(self, channels, kernel, dilation_rate, layers, speaker_channels):
        super().__init__()
        self.channels = channels
        self.cond_layer = nn.Conv1d(speaker_channels, 2 * channels * layers, 1)
        self.in_layers = nn.ModuleList()
        self.res_skip_layers = nn.ModuleList()
        for i in range(layers):
            d = dilation_rate**i
            self.in_layers.append(nn.Conv1d(channels, 2 * channels, kernel, dilation=d, padding=(kernel * d - d) // 2))
            self.res_skip_layers.append(nn.Conv1d(channels, 2 * channels if i < layers - 1 else channels, 1))

    def forward(self, x, g):
        cond = self.cond_layer(g)
        skip = 0
        last = len(self.in_layers) - 1
        for i, (inner, res_skip) in enumerate(zip(self.in_layers, self.res_skip_layers)):
            a = inner(x) + cond[:, 2 * self.channels * i : 2 * self.channels * (i + 1)]
            y = res_skip(torch.tanh(a[:, : self.channels]) * torch.sigmoid(a[:, self.channels :]))
            if i < last:
                x = x + y[:, : self.channels]
                skip = skip + y[:, self.channels :]
            else:
                skip = skip + y
        return skip


class MeanCoupling(nn.Module):
    def __init__(self, channels, hidden, kernel, dilation_rate, layers, speaker_channels):
        super().__init__()
        self.half = channels // 2
        self.pre = nn.Conv1d(self.half, hidden, 1)
        self.enc = GatedConvStack(hidden, kernel, dilation_rate, layers, speaker_channels)
        self.post = nn.Conv1d(hidden, self.half, 1)

    def inverse(self, x, g):
        x0, x1 = x[:, : self.half], x[:, self.half :]
        shift = self.post(self.enc(self.pre(x0), g))
        return torch.cat([x0, x1 - shift], 1)


class NoParameters(nn.Module):
    """The channel flip between couplings (RVC's module list keeps a slot for it)."""


class Flow(nn.Module):
    def __init__(self, channels, hidden, speaker_channels, couplings=4):
        super().__init__()
        self.flows = nn.ModuleList()
        for _ in range(couplings):
            self.flows.append(MeanCoupling(channels, hidden, 5, 1, 3, speaker_channels))
            self.flows.append(NoParameters())

    def inverse(self, z, g):
        for step in reversed(self.flows):
            z = torch.flip(z, [1]) if isinstance(step, NoParameters) else step.inverse(z, g)
        return z


class ResStack3(nn.Module):
    """RVC's ResBlock1: three (dilated conv, conv) pairs, each a residual step."""

    def __init__(self, channels, kernel, dilations):
        super().__init__()
        self.convs1 = nn.ModuleList(
            [nn.Conv1d(channels, channels, kernel, dilation=d, padding=(kernel * d - d) // 2) for d in dilations]
        )
        self.convs2 = nn.ModuleList([nn.Conv1d(channels, channels, kernel, padding=(kernel - 1) // 2) for _ in dilations])

    def forward(self, x):
        for c1, c2 in zip(self.convs1, self.convs2):
            x = x + c2(F.leaky_relu(c1(F.leaky_relu(x, SLOPE)), SLOPE))
        return x


class ResStack2(nn.Module):
    """RVC's ResBlock2: single dilated convs, each a residual step."""

    def __init__(self, channels, kernel, dilations):
        super().__init__()
        self.convs = nn.ModuleList(
            [nn.Conv1d(channels, channels, kernel, dilation=d, padding=(kernel * d - d) // 2) for d in dilations]
        )

    def forward(self, x):
        for c in self.convs:
            x = x + c(F.leaky_relu(x, SLOPE))
        return x


class SourceMix(nn.Module):
    def __init__(self):
        super().__init__()
        self.l_linear = nn.Linear(1, 1)


class Decoder(nn.Module):
    """NSF-HiFiGAN: `source` [B, 1, T·hop] is the sine excitation (sine + noise) RVC's SineGen makes."""

    def __init__(self, channels, block, block_kernels, block_dilations, rates, width, up_kernels, speaker_channels, nsf):
        super().__init__()
        self.kernels = len(block_kernels)
        self.nsf = nsf
        self.conv_pre = nn.Conv1d(channels, width, 7, padding=3)
        self.cond = nn.Conv1d(speaker_channels, width, 1)
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        if nsf:
            self.m_source = SourceMix()
            self.noise_convs = nn.ModuleList()
        stack = ResStack3 if str(block) == "1" else ResStack2
        for i, (rate, kernel) in enumerate(zip(rates, up_kernels)):
            out = width // 2 ** (i + 1)
            self.ups.append(nn.ConvTranspose1d(width // 2**i, out, kernel, rate, padding=(kernel - rate) // 2))
            if nsf:
                later = math.prod(rates[i + 1 :])
                self.noise_convs.append(
                    nn.Conv1d(1, out, later * 2, stride=later, padding=later // 2) if i + 1 < len(rates) else nn.Conv1d(1, out, 1)
                )
            for k, d in zip(block_kernels, block_dilations):
                self.resblocks.append(stack(out, k, d))
        self.conv_post = nn.Conv1d(out, 1, 7, padding=3, bias=False)

    def forward(self, z, g, source=None):
        if self.nsf:
            harmonic = torch.tanh(self.m_source.l_linear(source.transpose(1, 2))).transpose(1, 2)
        x = self.conv_pre(z) + self.cond(g)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, SLOPE))
            if self.nsf:
                x = x + self.noise_convs[i](harmonic)
            blocks = self.resblocks[i * self.kernels : (i + 1) * self.kernels]
            x = sum(block(x) for block in blocks) / self.kernels
        return torch.tanh(self.conv_post(F.leaky_relu(x)))


class Synthesizer(nn.Module):
    """`infer`: phone [B,T,F], pitch [B,T] (coarse, f0 models), noise [B,inter,T], speaker [B],
    source [B,1,T·hop] (f0 models) -> audio [B,1,T·hop]."""

    def __init__(self, config, version, f0):
        super().__init__()
        (
            _spec,
            _segment,
            inter,
            hidden,
            filt,
            heads,
            layers,
            kernel,
            _dropout,
            block,
            block_kernels,
            block_dilations,
            rates,
            width,
            up_kernels,
            speakers,
            speaker_channels,
            _sr,
        ) = config
        self.f0 = bool(f0)
        self.hop = math.prod(rates)
        self.enc_p = PriorEncoder(768 if version == "v2" else 256, inter, hidden, filt, heads, layers, kernel, self.f0)
        self.flow = Flow(inter, hidden, speaker_channels)
        self.dec = Decoder(inter, block, block_kernels, block_dilations, rates, width, up_kernels, speaker_channels, self.f0)
        self.emb_g = nn.Embedding(speakers, speaker_channels)

    def forward(self, phone, pitch, noise, speaker, source=None):
        g = self.emb_g(speaker).unsqueeze(-1)
        mean, log_scale = self.enc_p(phone, pitch if self.f0 else None)
        z = self.flow.inverse(mean + torch.exp(log_scale) * noise * 0.66666, g)
        return self.dec(z, g, source)


def fold_weight_norm(weights):
    """RVC saves its training modules' weight-norm pairs; the plain weight is g · v / ||v|| (per output row)."""
    out = {}
    for key, value in weights.items():
        if key.endswith(".weight_g"):
            continue
        if key.endswith(".weight_v"):
            base = key[: -len("_v")]
            g = weights[base + "_g"].float()
            v = value.float()
            norm = v.norm(dim=tuple(range(1, v.dim())), keepdim=True)
            out[base] = g * v / norm
        else:
            out[key] = value.float()
    return out


def describe(checkpoint):
    """What a `.pth` says about itself: version, f0, sample rate, speakers, the 18-item config."""
    if not isinstance(checkpoint, dict) or "weight" not in checkpoint or "config" not in checkpoint:
        raise ValueError("not an RVC voice model: expected a dict with 'weight' and 'config' (RVC's exported .pth)")
    weights = checkpoint["weight"]
    config = list(checkpoint["config"])
    if len(config) != 18:
        raise ValueError(f"not an RVC voice model: its config has {len(config)} items, RVC's has 18")
    if "emb_g.weight" not in weights:
        raise ValueError("not an RVC voice model: no emb_g.weight (speaker table)")
    config[15] = int(weights["emb_g.weight"].shape[0])  # RVC takes the speaker count from the table
    version = checkpoint.get("version", "v1")
    if version not in ("v1", "v2"):
        raise ValueError(f"unknown RVC version {version!r}")
    f0 = int(checkpoint.get("f0", 1))
    sr = config[17]
    rate = RATES.get(sr, sr) if isinstance(sr, str) else int(sr)
    if rate not in (32000, 40000, 48000):
        raise ValueError(f"unsupported sample rate {sr!r}")
    config[17] = rate
    return {"version": version, "f0": f0, "sampleRate": rate, "speakers": config[15], "hop": math.prod(config[12]), "config": config}


def load(checkpoint):
    info = describe(checkpoint)
    model = Synthesizer(info["config"], info["version"], info["f0"])
    weights = {k: v for k, v in fold_weight_norm(checkpoint["weight"]).items() if not k.startswith("enc_q.")}
    missing, unexpected = model.load_state_dict(weights, strict=False)
    if missing or unexpected:
        raise ValueError(
            "the weights do not fit RVC's synthesizer: "
            + ", ".join([f"missing {k}" for k in missing[:3]] + [f"unexpected {k}" for k in unexpected[:3]])
        )
    return model.eval(), info
