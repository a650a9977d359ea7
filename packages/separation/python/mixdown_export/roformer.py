"""BS-RoFormer and Mel-Band RoFormer as MSST defines them (models/bs_roformer/ at the pinned
commit), written for export: the network maps a chunk's STFT to the masked STFT of every stem,
so STFT and iSTFT stay outside the graph. Parameter names follow MSST's modules exactly, so its
`.ckpt` state dicts load strictly.

Spectrogram layout in and out (what TorchStft produces per channel, view_as_real):
  spec   [batch, channels, freqs, frames, 2]
  masked [batch, stems, channels, freqs, frames, 2]
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .errors import ImportProblem


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = dim**0.5
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.normalize(x, dim=x.dim() - 1) * self.scale * self.gamma


class RotaryTable(nn.Module):
    """Rotary position angles: the `freqs` parameter every attention layer of one axis shares
    (saved under each layer's `rotary_embed.freqs`), each repeated for a pair of features."""

    def __init__(self, dim_head):
        super().__init__()
        self.freqs = nn.Parameter(1.0 / (10000 ** (torch.arange(0, dim_head, 2)[: dim_head // 2].float() / dim_head)), requires_grad=False)

    def rotate(self, t):
        n = t.shape[-2]
        angles = torch.arange(n, dtype=t.dtype, device=t.device)[:, None] * self.freqs[None, :]
        angles = angles.repeat_interleave(2, dim=1)
        b, h, _, d = t.shape
        pairs = t.reshape(b, h, n, d // 2, 2)
        swapped = torch.stack((-pairs[:, :, :, :, 1], pairs[:, :, :, :, 0]), dim=4).reshape(b, h, n, d)
        return t * angles.cos() + swapped * angles.sin()


class Attention(nn.Module):
    def __init__(self, dim, heads, dim_head, rotary_embed):
        super().__init__()
        self.heads = heads
        self.dim_head = dim_head
        self.rotary_embed = rotary_embed
        self.norm = RMSNorm(dim)
        self.to_qkv = nn.Linear(dim, heads * dim_head * 3, bias=False)
        self.to_gates = nn.Linear(dim, heads)
        self.to_out = nn.Sequential(nn.Linear(heads * dim_head, dim, bias=False))

    def forward(self, x):
        x = self.norm(x)
        b, n, _ = x.shape
        qkv = self.to_qkv(x).reshape(b, n, 3, self.heads, self.dim_head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = self.rotary_embed.rotate(q)
        k = self.rotary_embed.rotate(k)
        # One head at a time: the attention weights of all heads at once are most of a chunk's
        # working memory (the viperx BS-RoFormer's time transformer: 62 bands x 8 heads x 801^2
        # floats, 1.27 GB, twice with the softmax); head by head the graph holds one head's, the
        # same products (upstream's `einsum` over all heads computes each head's alone too).
        scale = self.dim_head**-0.5
        heads = [
            torch.matmul(torch.softmax(torch.matmul(q[:, h], k[:, h].transpose(1, 2)) * scale, dim=2), v[:, h])
            for h in range(self.heads)
        ]
        out = torch.stack(heads, dim=1)
        out = out * self.to_gates(x).transpose(1, 2).unsqueeze(3).sigmoid()
        return self.to_out(out.transpose(1, 2).reshape(b, n, self.heads * self.dim_head))


class LinearAttention(nn.Module):
    """Cross-covariance attention over features (El-Nouby et al.), MSST's `linear_transformer`."""

    def __init__(self, dim, heads, dim_head):
        super().__init__()
        self.heads = heads
        self.dim_head = dim_head
        self.norm = RMSNorm(dim)
        self.to_qkv = nn.Sequential(nn.Linear(dim, heads * dim_head * 3, bias=False))
        self.temperature = nn.Parameter(torch.ones(heads, 1, 1))
        self.to_out = nn.Sequential(nn.Identity(), nn.Linear(heads * dim_head, dim, bias=False))

    def forward(self, x):
        x = self.norm(x)
        b, n, _ = x.shape
        qkv = self.to_qkv(x).reshape(b, n, 3, self.heads, self.dim_head).permute(2, 0, 3, 4, 1)
        q, k, v = F.normalize(qkv[0], dim=3), F.normalize(qkv[1], dim=3), qkv[2]
        q = q * self.temperature.exp()
        # MSST's Attend(scale=8) on these layouts: similarity between feature rows
        weights = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * 8.0, dim=3)
        out = torch.matmul(weights, v)
        return self.to_out(out.permute(0, 3, 1, 2).reshape(b, n, self.heads * self.dim_head))


class FeedForward(nn.Module):
    def __init__(self, dim, mult):
        super().__init__()
        inner = int(dim * mult)
        self.net = nn.Sequential(RMSNorm(dim), nn.Linear(dim, inner), nn.GELU(), nn.Identity(), nn.Linear(inner, dim), nn.Identity())

    def forward(self, x):
        return self.net(x)


class Transformer(nn.Module):
    def __init__(self, dim, depth, heads, dim_head, rotary_embed, norm_output, linear):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(depth):
            attn = LinearAttention(dim, heads, dim_head) if linear else Attention(dim, heads, dim_head, rotary_embed)
            self.layers.append(nn.ModuleList([attn, FeedForward(dim, 4)]))
        self.norm = RMSNorm(dim) if norm_output else nn.Identity()

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return self.norm(x)


class BandSplit(nn.Module):
    def __init__(self, dim, dim_inputs):
        super().__init__()
        self.dim_inputs = list(dim_inputs)
        self.to_features = nn.ModuleList(nn.Sequential(RMSNorm(d), nn.Linear(d, dim)) for d in self.dim_inputs)

    def forward(self, x):
        # explicit axes (x is [b, t, features]): torch 1.13's exporter gets negative ones wrong here
        parts = x.split(self.dim_inputs, dim=2)
        return torch.stack([net(p) for p, net in zip(parts, self.to_features)], dim=2)


class GatedHalves(nn.Module):
    """nn.GLU(dim=-1) with the split written as slices: torch 1.13 exports GLU's Split with a
    shape onnxruntime refuses."""

    def __init__(self, half):
        super().__init__()
        self.half = half

    def forward(self, x):
        return x[:, :, : self.half] * torch.sigmoid(x[:, :, self.half :])


class MaskEstimator(nn.Module):
    """Per band an MLP (tanh between `linears` layers) and a GLU halving its output."""

    def __init__(self, dim, dim_inputs, linears, expansion):
        super().__init__()
        hidden = dim * expansion
        self.to_freqs = nn.ModuleList()
        for d in dim_inputs:
            sizes = [dim] + [hidden] * (linears - 1) + [d * 2]
            mlp = []
            for i in range(linears):
                mlp.append(nn.Linear(sizes[i], sizes[i + 1]))
                if i < linears - 1:
                    mlp.append(nn.Tanh())
            self.to_freqs.append(nn.Sequential(nn.Sequential(*mlp), GatedHalves(d)))

    def forward(self, x):
        # x is [b, t, bands, dim]; explicit axes, as in BandSplit
        return torch.cat([net(x[:, :, i]) for i, net in enumerate(self.to_freqs)], dim=2)


# what MSST's constructors accept and Mixdown's export reads (or may ignore: training-only
# and speed-only settings that do not change the function)
IGNORED_KEYS = {
    "attn_dropout",
    "ff_dropout",
    "flash_attn",
    "dim_freqs_in",
    "multi_stft_resolution_loss_weight",
    "multi_stft_resolutions_window_sizes",
    "multi_stft_hop_size",
    "multi_stft_normalized",
    "multi_stft_window_fn",
    "use_torch_checkpoint",
    "match_input_audio_length",
}


def _settings(model_cfg, known, family):
    unknown = sorted(set(model_cfg) - set(known) - IGNORED_KEYS)
    if unknown:
        raise ImportProblem(f"the config's model section has {', '.join(unknown)}, which MSST's {family} does not take")
    s = dict(known)
    s.update({k: v for k, v in model_cfg.items() if k in known})
    if s.get("use_pope"):
        raise ImportProblem("use_pope: true (PoPE position embeddings) is not supported; rotary embeddings only")
    if s.get("stft_window_fn") is not None:
        raise ImportProblem("stft_window_fn other than the Hann window is not supported")
    if not s["stereo"]:
        raise ImportProblem("stereo: false (a mono model) is not supported: Mixdown separates stereo")
    if s["stft_win_length"] != s["stft_n_fft"]:
        raise ImportProblem(f"stft_win_length {s['stft_win_length']} differs from stft_n_fft {s['stft_n_fft']}: not supported")
    if "dim" not in model_cfg or "depth" not in model_cfg:
        raise ImportProblem("the config's model section lacks dim or depth")
    return s


COMMON_DEFAULTS = {
    "dim": None,
    "depth": None,
    "stereo": False,
    "num_stems": 1,
    "time_transformer_depth": 2,
    "freq_transformer_depth": 2,
    "linear_transformer_depth": 0,
    "dim_head": 64,
    "heads": 8,
    "stft_n_fft": 2048,
    "stft_hop_length": 512,
    "stft_win_length": 2048,
    "stft_normalized": False,
    "stft_window_fn": None,
    "zero_dc": True,
    "mlp_expansion_factor": 4,
    "skip_connection": False,
    "use_pope": False,
}

DEFAULT_FREQS_PER_BANDS = (2,) * 24 + (4,) * 12 + (12,) * 8 + (24,) * 8 + (48,) * 8 + (128, 129)


class RoformerCore(nn.Module):
    """The axial transformer stack both RoFormers share: layers, band split, mask estimators."""

    def __init__(self, s, dim_inputs, per_transformer_norm, mask_linears):
        super().__init__()
        dim, heads, dim_head = s["dim"], s["heads"], s["dim_head"]
        self.channels = 2
        self.num_stems = s["num_stems"]
        self.skip_connection = s["skip_connection"]
        time_rotary, freq_rotary = RotaryTable(dim_head), RotaryTable(dim_head)
        self.layers = nn.ModuleList()
        for _ in range(s["depth"]):
            stage = []
            if s["linear_transformer_depth"] > 0:
                stage.append(Transformer(dim, s["linear_transformer_depth"], heads, dim_head, None, per_transformer_norm, True))
            stage.append(Transformer(dim, s["time_transformer_depth"], heads, dim_head, time_rotary, per_transformer_norm, False))
            stage.append(Transformer(dim, s["freq_transformer_depth"], heads, dim_head, freq_rotary, per_transformer_norm, False))
            self.layers.append(nn.ModuleList(stage))
        self.band_split = BandSplit(dim, dim_inputs)
        self.mask_estimators = nn.ModuleList(
            MaskEstimator(dim, dim_inputs, mask_linears, s["mlp_expansion_factor"]) for _ in range(s["num_stems"])
        )

    def transform(self, x):
        """x [b, t, (f c)] band features in → per stem masks [b, n, t, (f c)]."""
        x = self.band_split(x)
        b, t, bands, d = x.shape
        store = []
        for i, stage in enumerate(self.layers):
            if len(stage) == 3:
                x = stage[0](x.reshape(b, t * bands, d)).reshape(b, t, bands, d)
            time_tf, freq_tf = stage[-2], stage[-1]
            if self.skip_connection:
                for earlier in store:
                    x = x + earlier
            x = time_tf(x.transpose(1, 2).reshape(b * bands, t, d)).reshape(b, bands, t, d).transpose(1, 2)
            x = freq_tf(x.reshape(b * t, bands, d)).reshape(b, t, bands, d)
            if self.skip_connection:
                store.append(x)
        x = self.finish(x)
        return torch.stack([est(x) for est in self.mask_estimators], dim=1)

    def finish(self, x):
        return x


def complex_multiply(a, b):
    last = a.dim() - 1
    ar, ai, br, bi = a.select(last, 0), a.select(last, 1), b.select(last, 0), b.select(last, 1)
    return torch.stack((ar * br - ai * bi, ar * bi + ai * br), dim=last)


class BSRoformerNet(RoformerCore):
    def __init__(self, s):
        freqs = s["stft_n_fft"] // 2 + 1
        bands = tuple(s["freqs_per_bands"])
        if sum(bands) != freqs:
            raise ImportProblem(f"freqs_per_bands sums to {sum(bands)}, but stft_n_fft {s['stft_n_fft']} gives {freqs} frequencies")
        super().__init__(s, [2 * f * 2 for f in bands], per_transformer_norm=False, mask_linears=s["mask_estimator_depth"])
        self.final_norm = RMSNorm(s["dim"])

    def finish(self, x):
        return self.final_norm(x)

    def forward(self, spec):
        b, ch, f, t, _ = spec.shape
        interleaved = spec.permute(0, 2, 1, 3, 4).reshape(b, f * ch, t, 2)  # (f s): frequency-major
        masks = self.transform(interleaved.transpose(1, 2).reshape(b, t, f * ch * 2))
        masks = masks.reshape(b, self.num_stems, t, f * ch, 2).transpose(2, 3)
        masked = complex_multiply(interleaved.unsqueeze(1), masks)
        return masked.reshape(b, self.num_stems, f, ch, t, 2).transpose(2, 3)


def _hz_to_mel(hz):
    """Slaney's mel scale (librosa's default, htk=False): linear below 1 kHz, log above."""
    hz = np.asanyarray(hz, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = hz / f_sp
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    above = hz >= min_log_hz
    mels = np.where(above, min_log_mel + np.log(np.maximum(hz, 1e-300) / min_log_hz) / logstep, mels)
    return mels


def _mel_to_hz(mels):
    mels = np.asanyarray(mels, dtype=np.float64)
    f_sp = 200.0 / 3
    hz = f_sp * mels
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    return np.where(mels >= min_log_mel, min_log_hz * np.exp(logstep * (mels - min_log_mel)), hz)


def slaney_mel_filter_bank(sample_rate, n_fft, n_mels):
    """The mel filter bank librosa.filters.mel(sr, n_fft, n_mels) returns with its defaults
    (fmin 0, fmax sr/2, Slaney scale and area normalisation, float32), computed the same way
    in float64 and stored into float32 at the same steps, so which weights are exactly zero
    (all that MSST uses of it) is the same."""
    fft_freqs = np.fft.rfftfreq(n=n_fft, d=1.0 / sample_rate)
    mel_points = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(sample_rate / 2.0), n_mels + 2))
    widths = np.diff(mel_points)
    ramps = np.subtract.outer(mel_points, fft_freqs)
    weights = np.zeros((n_mels, 1 + n_fft // 2), dtype=np.float32)
    for i in range(n_mels):
        rising = -ramps[i] / widths[i]
        falling = ramps[i + 2] / widths[i + 1]
        weights[i] = np.maximum(0, np.minimum(rising, falling))
    weights *= (2.0 / (mel_points[2 : n_mels + 2] - mel_points[:n_mels]))[:, np.newaxis]
    return weights


def mel_band_membership(sample_rate, n_fft, num_bands):
    """[bands, freqs] booleans: which STFT bins each band reads, as MSST derives them from the
    filter bank (first bin forced into the first band, last bin into the last)."""
    bank = slaney_mel_filter_bank(sample_rate, n_fft, num_bands)
    bank[0, 0] = 1.0
    bank[-1, -1] = 1.0
    member = bank > 0
    if not member.any(axis=0).all():
        raise ImportProblem(f"num_bands {num_bands} with stft_n_fft {n_fft} leaves some frequencies in no band")
    return member


class MelBandRoformerNet(RoformerCore):
    def __init__(self, s):
        freqs = s["stft_n_fft"] // 2 + 1
        member = mel_band_membership(s["sample_rate"], s["stft_n_fft"], s["num_bands"])
        band_of, freq_of = np.nonzero(member)  # row-major: bands ascending, bins ascending in each
        per_band = member.sum(axis=1)
        super().__init__(s, [int(2 * n * 2) for n in per_band], per_transformer_norm=True, mask_linears=s["mask_estimator_depth"] + 1)
        ch = 2
        selected = (freq_of[:, None] * ch + np.arange(ch)[None, :]).reshape(-1)  # (f s) positions read, in order
        self.register_buffer("select", torch.from_numpy(selected.astype(np.int64)), persistent=False)
        # MSST scatter-adds each band's mask onto the bins it read and divides by how many
        # bands read each bin; the same sums as gathers: for every (f s) position the list of
        # selected entries that land on it, padded with a pointer to a zero row
        sources = [[] for _ in range(freqs * ch)]
        for j, pos in enumerate(selected):
            sources[pos].append(j)
        width = max(len(x) for x in sources)
        table = np.full((width, freqs * ch), len(selected), dtype=np.int64)
        for pos, js in enumerate(sources):
            table[: len(js), pos] = js
        self.register_buffer("gather", torch.from_numpy(table), persistent=False)
        counts = np.repeat(member.sum(axis=0), ch).astype(np.float32)
        self.register_buffer("bands_per_position", torch.from_numpy(counts)[:, None, None], persistent=False)

    def forward(self, spec):
        b, ch, f, t, _ = spec.shape
        interleaved = spec.permute(0, 2, 1, 3, 4).reshape(b, f * ch, t, 2)
        picked = interleaved.index_select(1, self.select)
        masks = self.transform(picked.transpose(1, 2).reshape(b, t, -1, ))
        masks = masks.reshape(b, self.num_stems, t, -1, 2).transpose(2, 3)
        padded = torch.cat([masks, torch.zeros_like(masks[:, :, :1])], dim=2)
        summed = padded.index_select(2, self.gather[0])
        for k in range(1, self.gather.shape[0]):
            summed = summed + padded.index_select(2, self.gather[k])
        averaged = summed / self.bands_per_position.clamp(min=1e-8)
        masked = complex_multiply(interleaved.unsqueeze(1), averaged)
        return masked.reshape(b, self.num_stems, f, ch, t, 2).transpose(2, 3)


def bs_settings(model_cfg):
    known = dict(COMMON_DEFAULTS, freqs_per_bands=DEFAULT_FREQS_PER_BANDS, mask_estimator_depth=2)
    return _settings(model_cfg, known, "BSRoformer")


def mel_settings(model_cfg):
    known = dict(COMMON_DEFAULTS, num_bands=60, sample_rate=44100, mask_estimator_depth=1)
    return _settings(model_cfg, known, "MelBandRoformer")
