"""HTDemucs (demucs v4, the hybrid transformer) for Mixdown: load a demucs `.th` package or a
bag `.yaml`, and export each model to ONNX with the STFT and iSTFT left outside the graph.

The graph computes everything HTDemucs.forward does between `_magnitude(_spec(mix))` and
`_ispec`: it takes the chunk (already normalised by the caller and exactly the training
segment long) and its complex-as-channels spectrum, and returns the time branch's stems and
the spectral branch's stems (complex as channels, before the iSTFT). The TypeScript family does
the STFT, the iSTFT, the sum and the chunking (demucs.apply.apply_model's convention).
"""

from __future__ import annotations

import fractions
import hashlib
import math
import os
import pickle
import re
import types
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .errors import ImportProblem

ARCHITECTURE = "htdemucs"
DEMUCS_CLASS = ("demucs.htdemucs", "HTDemucs")

# HTDemucs.__init__'s defaults: a package's kwargs are applied over these, as demucs does.
DEFAULTS = dict(
    audio_channels=2, channels=48, channels_time=None, growth=2, nfft=4096, wiener_iters=0,
    end_iters=0, wiener_residual=False, cac=True, depth=4, rewrite=True, multi_freqs=None,
    multi_freqs_depth=3, freq_emb=0.2, emb_scale=10, emb_smooth=True, kernel_size=8,
    time_stride=2, stride=4, context=1, context_enc=0, norm_starts=4, norm_groups=4,
    dconv_mode=1, dconv_depth=2, dconv_comp=8, dconv_init=1e-3, bottom_channels=0, t_layers=5,
    t_emb="sin", t_hidden_scale=4.0, t_heads=8, t_dropout=0.0, t_max_positions=10000,
    t_norm_in=True, t_norm_in_group=False, t_group_norm=False, t_norm_first=True,
    t_norm_out=True, t_max_period=10000.0, t_weight_decay=0.0, t_lr=None, t_layer_scale=True,
    t_gelu=True, t_weight_pos_embed=1.0, t_sin_random_shift=0, t_cape_mean_normalize=True,
    t_cape_augment=True, t_cape_glob_loc_scale=[5000.0, 1.0, 1.4], t_sparse_self_attn=False,
    t_sparse_cross_attn=False, t_mask_type="diag", t_mask_random_seed=42,
    t_sparse_attn_window=500, t_global_window=100, t_sparsity=0.95, t_auto_sparsity=False,
    t_cross_first=False, rescale=0.1, samplerate=44100, segment=10, use_train_segment=True,
)


# ----------------------------------------------------------------------------------------------
# Reading a demucs package without demucs installed


class ForeignClass:
    """Stands for a class of a package we do not import (demucs, omegaconf): the pickle names
    it, and whatever it rebuilds is kept as opaque data."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.name}"

    def __call__(self, *args, **kwargs):
        return OpaqueObject(self, args)

    def __eq__(self, other):
        return isinstance(other, ForeignClass) and other.qualified == self.qualified

    def __hash__(self):
        return hash(self.qualified)


class OpaqueObject:
    def __init__(self, klass: ForeignClass, args=()):
        self.klass, self.args, self.state = klass, args, None

    def __setstate__(self, state):
        self.state = state


def _foreign_module(name: str) -> bool:
    return name.split(".")[0] in ("demucs", "omegaconf", "dora", "diffq")


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if _foreign_module(module):
            return ForeignClass(module, name)
        return super().find_class(module, name)


_pickle_module = types.ModuleType("mixdown_demucs_pickle")
_pickle_module.Unpickler = _Unpickler
_pickle_module.load = lambda f, **kw: _Unpickler(f, **kw).load()
_pickle_module.__name__ = "mixdown_demucs_pickle"


def _torch_load(path) -> object:
    """torch.load with our unpickler: torch 1.13's torch.load ignores `pickle_module` unless
    weights_only, so its zip reader is called directly where it exists."""
    serialization = torch.serialization
    if hasattr(serialization, "_open_zipfile_reader") and hasattr(serialization, "_load"):
        with open(path, "rb") as f:
            if not serialization._is_zipfile(f):
                raise ImportProblem(f"{path}: not a torch zip file (demucs packages are saved with torch.save)")
            with serialization._open_zipfile_reader(f) as zip_file:
                return serialization._load(zip_file, "cpu", _pickle_module, encoding="utf-8")
    return torch.load(str(path), map_location="cpu", pickle_module=_pickle_module)


def load_package(path: str | os.PathLike) -> dict:
    """The `{klass, args, kwargs, state, training_args}` dict a demucs `.th` file holds."""
    try:
        package = _torch_load(path)
    except FileNotFoundError:
        raise ImportProblem(f"{path}: no such file")
    except ImportProblem:
        raise
    except Exception as err:
        raise ImportProblem(f"{path}: not a readable demucs .th package ({type(err).__name__}: {err})")
    if not isinstance(package, dict) or not {"klass", "kwargs", "state"} <= set(package):
        raise ImportProblem(f"{path}: not a demucs model package (expected a dict with klass, kwargs, state)")
    klass = package["klass"]
    found = klass.qualified if isinstance(klass, ForeignClass) else repr(klass)
    if not isinstance(klass, ForeignClass) or (klass.module, klass.name) != DEMUCS_CLASS:
        raise ImportProblem(f"{path}: model class is {found}; only demucs.htdemucs.HTDemucs (demucs v4) is supported")
    if package.get("args"):
        raise ImportProblem(f"{path}: positional constructor args are not supported ({len(package['args'])} given)")
    state = package["state"]
    if not isinstance(state, dict):
        raise ImportProblem(f"{path}: state is not a dict of tensors")
    if state.get("__quantized"):
        raise ImportProblem(f"{path}: diffq-quantized states are not supported")
    return package


def resolve_config(kwargs: dict, source: str) -> dict:
    """The constructor's arguments with HTDemucs's defaults filled in; refuses the options this
    implementation does not compute (none of them is used by the released models)."""
    unknown = sorted(set(kwargs) - set(DEFAULTS) - {"sources"})
    if unknown:
        raise ImportProblem(f"{source}: unknown HTDemucs kwargs {unknown}")
    if "sources" not in kwargs or not kwargs["sources"]:
        raise ImportProblem(f"{source}: kwargs has no sources")
    cfg = dict(DEFAULTS, **kwargs)
    cfg["sources"] = [str(s) for s in cfg["sources"]]

    def refuse(cond, what):
        if cond:
            raise ImportProblem(f"{source}: {what} is not supported")

    refuse(not cfg["cac"], "cac=False (magnitude masking with Wiener filtering)")
    refuse(bool(cfg["multi_freqs"]), "multi_freqs (MultiWrap)")
    refuse(cfg["t_layers"] > 0 and cfg["t_emb"] != "sin", f"t_emb={cfg['t_emb']!r}")
    refuse(cfg["t_sin_random_shift"] != 0, "t_sin_random_shift (a random positional shift)")
    refuse(cfg["t_sparse_self_attn"] or cfg["t_sparse_cross_attn"], "sparse attention (xformers)")
    refuse(not cfg["t_norm_in"] and cfg["t_norm_in_group"], "t_norm_in_group")
    refuse(not cfg["use_train_segment"], "use_train_segment=False")
    refuse(cfg["nfft"] // 4 * 4 != cfg["nfft"], f"nfft={cfg['nfft']}")
    seg = cfg["segment"]
    if not isinstance(seg, (int, float, fractions.Fraction)) or seg <= 0:
        raise ImportProblem(f"{source}: segment must be a positive number, got {seg!r}")
    return cfg


def segment_samples(cfg: dict) -> int:
    """The training segment in samples: what HTDemucs pads every input to."""
    return int(cfg["segment"] * cfg["samplerate"])


# ----------------------------------------------------------------------------------------------
# The network. Module and parameter names follow demucs's so its state dict loads strictly.


class ChannelScale(nn.Module):
    """Per-channel learnt scale (demucs's LayerScale), on dim 1 or on the last dim."""

    def __init__(self, channels: int, init: float, channel_last: bool):
        super().__init__()
        self.channel_last = channel_last
        self.scale = nn.Parameter(torch.full((channels,), float(init)))

    def forward(self, x):
        return self.scale * x if self.channel_last else self.scale[:, None] * x


class ResidualDilated(nn.Module):
    """demucs's DConv as HTDemucs configures it: per layer, a dilated conv to a compressed
    width, GELU, a 1x1 conv back with a GLU, a learnt scale, added to the input."""

    def __init__(self, channels: int, compress: float, depth: int, init: float):
        super().__init__()
        hidden = int(channels / compress)
        dilate = depth > 0
        self.layers = nn.ModuleList()
        for d in range(abs(depth)):
            dilation = 2**d if dilate else 1
            self.layers.append(
                nn.Sequential(
                    nn.Conv1d(channels, hidden, 3, dilation=dilation, padding=dilation),
                    nn.GroupNorm(1, hidden),
                    nn.GELU(),
                    nn.Conv1d(hidden, 2 * channels, 1),
                    nn.GroupNorm(1, 2 * channels),
                    nn.GLU(1),
                    ChannelScale(channels, init, channel_last=False),
                )
            )

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


def _norm(enabled: bool, groups: int, channels: int) -> nn.Module:
    return nn.GroupNorm(groups, channels) if enabled else nn.Identity()


def _over_frequencies(fn, y):
    """Applies a (B, C, T) module to each frequency row of a (B, C, F, T) tensor."""
    b, c, f, t = y.shape
    out = fn(y.permute(0, 2, 1, 3).reshape(-1, c, t))
    return out.reshape(b, f, c, t).permute(0, 2, 1, 3)


class Encoder(nn.Module):
    """One encoder layer (demucs's HEncLayer): a strided conv over frequencies (freq) or time,
    then, unless `empty`, GELU(norm), the residual branch and a GLU-gated 1x1 rewrite."""

    def __init__(self, chin, chout, *, kernel_size, stride, freq, pad, norm, norm_groups,
                 rewrite, context, dconv, dconv_kw, empty=False):
        super().__init__()
        self.freq, self.stride, self.empty = freq, stride, empty
        padding = kernel_size // 4 if pad else 0
        if freq:
            self.conv = nn.Conv2d(chin, chout, (kernel_size, 1), (stride, 1), (padding, 0))
        else:
            self.conv = nn.Conv1d(chin, chout, kernel_size, stride, padding)
        if empty:
            return
        self.norm1 = _norm(norm, norm_groups, chout)
        conv = nn.Conv2d if freq else nn.Conv1d
        self.rewrite = conv(chout, 2 * chout, 1 + 2 * context, 1, context) if rewrite else None
        if rewrite:
            self.norm2 = _norm(norm, norm_groups, 2 * chout)
        self.dconv = ResidualDilated(chout, **dconv_kw) if dconv else None

    def forward(self, x, inject=None):
        if not self.freq:
            if x.dim() == 4:
                x = x.reshape(x.shape[0], -1, x.shape[-1])
            rest = x.shape[-1] % self.stride
            if rest:
                x = F.pad(x, (0, self.stride - rest))
        y = self.conv(x)
        if self.empty:
            return y
        if inject is not None:
            if inject.dim() == 3 and y.dim() == 4:
                inject = inject[:, :, None]
            y = y + inject
        y = F.gelu(self.norm1(y))
        if self.dconv is not None:
            y = _over_frequencies(self.dconv, y) if self.freq else self.dconv(y)
        if self.rewrite is not None:
            return F.glu(self.norm2(self.rewrite(y)), dim=1)
        return y


class Decoder(nn.Module):
    """One decoder layer (demucs's HDecLayer): skip added, GLU-gated rewrite, residual branch,
    then a transposed conv whose padding is trimmed (to `length` on the time axis)."""

    def __init__(self, chin, chout, *, kernel_size, stride, freq, pad, norm, norm_groups,
                 rewrite, context, dconv, dconv_kw, last, empty=False):
        super().__init__()
        self.freq, self.chin, self.last, self.empty = freq, chin, last, empty
        self.pad = kernel_size // 4 if pad else 0
        if freq:
            self.conv_tr = nn.ConvTranspose2d(chin, chout, (kernel_size, 1), (stride, 1))
        else:
            self.conv_tr = nn.ConvTranspose1d(chin, chout, kernel_size, stride)
        self.norm2 = _norm(norm, norm_groups, chout)
        if empty:
            return
        conv = nn.Conv2d if freq else nn.Conv1d
        self.rewrite = conv(chin, 2 * chin, 1 + 2 * context, 1, context) if rewrite else None
        if rewrite:
            self.norm1 = _norm(norm, norm_groups, 2 * chin)
        self.dconv = ResidualDilated(chin, **dconv_kw) if dconv else None

    def forward(self, x, skip, length):
        if self.freq and x.dim() == 3:
            x = x.reshape(x.shape[0], self.chin, -1, x.shape[-1])
        if self.empty:
            y = x
        else:
            y = x + skip
            if self.rewrite is not None:
                y = F.glu(self.norm1(self.rewrite(y)), dim=1)
            if self.dconv is not None:
                y = _over_frequencies(self.dconv, y) if self.freq else self.dconv(y)
        z = self.norm2(self.conv_tr(y))
        if self.freq:
            if self.pad:
                z = z[:, :, self.pad : z.shape[2] - self.pad, :]
        else:
            z = z[..., self.pad : self.pad + length]
        if not self.last:
            z = F.gelu(z)
        return z, y


class FrequencyEmbedding(nn.Module):
    """demucs.hdemucs.ScaledEmbedding: a learnt vector per frequency row, times `scale`."""

    def __init__(self, rows: int, dim: int, scale: float):
        super().__init__()
        self.embedding = nn.Embedding(rows, dim)
        self.scale = scale

    def table(self):
        return self.embedding.weight * self.scale


class Attention(nn.Module):
    """Multi-head attention with torch.nn.MultiheadAttention's parameters (packed in_proj),
    written out so it exports as plain MatMul/Softmax."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * dim, dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * dim))
        self.out_proj = nn.Linear(dim, dim)
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, q, kv):
        b, tq, c = q.shape
        tk = kv.shape[1]
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        h, d = self.heads, c // self.heads
        qh = F.linear(q, w_q, b_q).reshape(b, tq, h, d).transpose(1, 2)
        kh = F.linear(kv, w_k, b_k).reshape(b, tk, h, d).transpose(1, 2)
        vh = F.linear(kv, w_v, b_v).reshape(b, tk, h, d).transpose(1, 2)
        weights = torch.softmax(torch.matmul(qh / math.sqrt(d), kh.transpose(2, 3)), dim=-1)
        out = torch.matmul(weights, vh).transpose(1, 2).reshape(b, tq, c)
        return self.out_proj(out)


class TokenGroupNorm(nn.GroupNorm):
    """GroupNorm over (B, T, C) tokens (demucs.transformer.MyGroupNorm)."""

    def forward(self, x):
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


class TransformerLayer(nn.Module):
    """One layer of the cross-domain transformer: self-attention (`cross=False`, keys as in
    nn.TransformerEncoderLayer) or cross-attention to the other branch, then the feed-forward."""

    def __init__(self, dim, heads, hidden, *, cross, norm_first, group_norm, norm_out,
                 layer_scale, gelu):
        super().__init__()
        self.cross, self.norm_first = cross, norm_first
        attn = Attention(dim, heads)
        if cross:
            self.cross_attn = attn
        else:
            self.self_attn = attn
        self.linear1 = nn.Linear(dim, hidden)
        self.linear2 = nn.Linear(hidden, dim)
        make_norm = (lambda: TokenGroupNorm(int(group_norm), dim)) if group_norm else (lambda: nn.LayerNorm(dim))
        self.norm1 = make_norm()
        self.norm2 = make_norm()
        if cross:
            self.norm3 = make_norm()
        self.norm_out = TokenGroupNorm(int(norm_out), dim) if (norm_first and norm_out) else None
        self.gamma_1 = ChannelScale(dim, 1e-4, channel_last=True) if layer_scale else nn.Identity()
        self.gamma_2 = ChannelScale(dim, 1e-4, channel_last=True) if layer_scale else nn.Identity()
        self.activation = F.gelu if gelu else F.relu

    def feed_forward(self, x):
        return self.linear2(self.activation(self.linear1(x)))

    def forward(self, x, other=None):
        if self.cross:
            attend = lambda q, kv: self.cross_attn(q, kv)  # noqa: E731
        else:
            attend = lambda q, kv: self.self_attn(q, q)  # noqa: E731
        if self.norm_first:
            if self.cross:
                x = x + self.gamma_1(attend(self.norm1(x), self.norm2(other)))
                x = x + self.gamma_2(self.feed_forward(self.norm3(x)))
            else:
                x = x + self.gamma_1(attend(self.norm1(x), None))
                x = x + self.gamma_2(self.feed_forward(self.norm2(x)))
            if self.norm_out is not None:
                x = self.norm_out(x)
        else:
            x = self.norm1(x + self.gamma_1(attend(x, other)))
            x = self.norm2(x + self.gamma_2(self.feed_forward(x)))
        return x


def sin_embedding_1d(length: int, dim: int, max_period: float):
    """demucs.transformer.create_sin_embedding (shift 0), as (length, dim), op for op."""
    pos = torch.arange(length).view(-1, 1, 1)
    half = dim // 2
    adim = torch.arange(half).view(1, 1, -1)
    phase = pos / (max_period ** (adim / (half - 1)))
    return torch.cat([torch.cos(phase), torch.sin(phase)], dim=-1)[:, 0, :]


def sin_embedding_2d(dim: int, height: int, width: int, max_period: float):
    """demucs.transformer.create_2d_sin_embedding as (width·height, dim) in (t, f) token order."""
    pe = torch.zeros(dim, height, width)
    half = dim // 2
    div = torch.exp(torch.arange(0.0, half, 2) * -(math.log(max_period) / half))
    pos_w = torch.arange(0.0, width).unsqueeze(1)
    pos_h = torch.arange(0.0, height).unsqueeze(1)
    pe[0:half:2] = torch.sin(pos_w * div).transpose(0, 1).unsqueeze(1).repeat(1, height, 1)
    pe[1:half:2] = torch.cos(pos_w * div).transpose(0, 1).unsqueeze(1).repeat(1, height, 1)
    pe[half::2] = torch.sin(pos_h * div).transpose(0, 1).unsqueeze(2).repeat(1, 1, width)
    pe[half + 1 :: 2] = torch.cos(pos_h * div).transpose(0, 1).unsqueeze(2).repeat(1, 1, width)
    return pe.permute(2, 1, 0).reshape(width * height, dim)


class CrossTransformer(nn.Module):
    """demucs.transformer.CrossTransformerEncoder: the spectral tokens (t, f) and the time
    tokens each get a sinusoidal position, then alternate self- and cross-attention layers."""

    def __init__(self, dim, cfg):
        super().__init__()
        if dim % cfg["t_heads"]:
            raise ImportProblem(f"transformer width {dim} is not a multiple of t_heads={cfg['t_heads']}")
        if dim % 4:
            raise ImportProblem(f"transformer width {dim} is not a multiple of 4 (2-D sin embedding)")
        self.layers_count = cfg["t_layers"]
        self.self_parity = 1 if cfg["t_cross_first"] else 0
        self.max_period = cfg["t_max_period"]
        self.pos_weight = cfg["t_weight_pos_embed"]
        if cfg["t_norm_in"]:
            self.norm_in, self.norm_in_t = nn.LayerNorm(dim), nn.LayerNorm(dim)
        else:
            self.norm_in, self.norm_in_t = nn.Identity(), nn.Identity()
        kw = dict(
            norm_first=cfg["t_norm_first"], group_norm=cfg["t_group_norm"], norm_out=cfg["t_norm_out"],
            layer_scale=cfg["t_layer_scale"], gelu=cfg["t_gelu"],
        )
        hidden = int(dim * cfg["t_hidden_scale"])
        self.layers = nn.ModuleList()
        self.layers_t = nn.ModuleList()
        for i in range(self.layers_count):
            cross = i % 2 != self.self_parity
            self.layers.append(TransformerLayer(dim, cfg["t_heads"], hidden, cross=cross, **kw))
            self.layers_t.append(TransformerLayer(dim, cfg["t_heads"], hidden, cross=cross, **kw))

    def forward(self, x, xt):
        b, c, f, t1 = x.shape
        t2 = xt.shape[-1]
        x = x.permute(0, 3, 2, 1).reshape(b, t1 * f, c)
        x = self.norm_in(x) + self.pos_weight * sin_embedding_2d(c, f, t1, self.max_period)
        xt = xt.transpose(1, 2)
        xt = self.norm_in_t(xt) + self.pos_weight * sin_embedding_1d(t2, c, self.max_period)
        for i in range(self.layers_count):
            if i % 2 == self.self_parity:
                x, xt = self.layers[i](x), self.layers_t[i](xt)
            else:
                x, xt = self.layers[i](x, xt), self.layers_t[i](xt, x)
        x = x.reshape(b, t1, f, c).permute(0, 3, 2, 1)
        return x, xt.transpose(1, 2)


class HTDemucsCore(nn.Module):
    """HTDemucs between the STFT and the iSTFT.

    forward(mix [B, C, L], spec [B, 2C, nfft/2, ceil(L/hop)]) -> (time [B, S, C, L],
    spec [B, S, 2C, nfft/2, frames]), with L the training segment, spec as HTDemucs._magnitude
    lays out `_spec(mix)` (channel 2c + 0 = real, 2c + 1 = imaginary part of audio channel c),
    and the spectral output in the same layout, as `_mask` reads it.
    """

    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = cfg
        self.sources = list(cfg["sources"])
        self.audio_channels = cfg["audio_channels"]
        self.depth = cfg["depth"]
        self.bottom_channels = cfg["bottom_channels"]
        self.nfft = cfg["nfft"]
        self.hop = self.nfft // 4
        self.length = segment_samples(cfg)
        self.frames = math.ceil(self.length / self.hop)
        self.encoder, self.decoder = nn.ModuleList(), nn.ModuleList()
        self.tencoder, self.tdecoder = nn.ModuleList(), nn.ModuleList()
        self.freq_emb = None
        dconv_kw = dict(compress=cfg["dconv_comp"], depth=cfg["dconv_depth"], init=cfg["dconv_init"])
        kernel, stride = cfg["kernel_size"], cfg["stride"]

        chin = cfg["audio_channels"]
        chin_z = 2 * chin
        chout = cfg["channels_time"] or cfg["channels"]
        chout_z = cfg["channels"]
        freqs = self.nfft // 2
        for index in range(self.depth):
            freq = freqs > 1
            ker, stri, pad, last_freq = kernel, stride, True, False
            if not freq:
                ker, stri = cfg["time_stride"] * 2, cfg["time_stride"]
            if freq and freqs <= kernel:
                ker, pad, last_freq = freqs, False, True
            common = dict(
                norm=index >= cfg["norm_starts"], norm_groups=cfg["norm_groups"],
                rewrite=cfg["rewrite"], dconv_kw=dconv_kw,
            )
            spec_kw = dict(kernel_size=ker, stride=stri, freq=freq, pad=pad, **common)
            time_kw = dict(kernel_size=kernel, stride=stride, freq=False, pad=True, **common)
            if last_freq:
                chout_z = max(chout, chout_z)
                chout = chout_z
            self.encoder.append(
                Encoder(chin_z, chout_z, context=cfg["context_enc"], dconv=cfg["dconv_mode"] & 1, **spec_kw)
            )
            if freq:
                self.tencoder.append(
                    Encoder(chin, chout, context=cfg["context_enc"], dconv=cfg["dconv_mode"] & 1,
                            empty=last_freq, **time_kw)
                )
            if index == 0:
                chin = cfg["audio_channels"] * len(self.sources)
                chin_z = 2 * chin
            self.decoder.insert(
                0,
                Decoder(chout_z, chin_z, context=cfg["context"], dconv=cfg["dconv_mode"] & 2,
                        last=index == 0, **spec_kw),
            )
            if freq:
                self.tdecoder.insert(
                    0,
                    Decoder(chout, chin, context=cfg["context"], dconv=cfg["dconv_mode"] & 2,
                            last=index == 0, empty=last_freq, **time_kw),
                )
            chin, chin_z = chout, chout_z
            chout, chout_z = int(cfg["growth"] * chout), int(cfg["growth"] * chout_z)
            if freq:
                freqs = 1 if freqs <= kernel else freqs // stride
            if index == 0 and cfg["freq_emb"]:
                self.freq_emb = FrequencyEmbedding(freqs, chin_z, cfg["emb_scale"])
                self.freq_emb_scale = cfg["freq_emb"]

        width = cfg["channels"] * cfg["growth"] ** (self.depth - 1)
        if self.bottom_channels:
            self.channel_upsampler = nn.Conv1d(width, self.bottom_channels, 1)
            self.channel_downsampler = nn.Conv1d(self.bottom_channels, width, 1)
            self.channel_upsampler_t = nn.Conv1d(width, self.bottom_channels, 1)
            self.channel_downsampler_t = nn.Conv1d(self.bottom_channels, width, 1)
            width = self.bottom_channels
        self.crosstransformer = CrossTransformer(width, cfg) if cfg["t_layers"] > 0 else None

    @staticmethod
    def _standardise(x, dims):
        n = 1
        for d in dims:
            n *= x.shape[d]
        mean = x.mean(dim=dims, keepdim=True)
        std = torch.sqrt(((x - mean) ** 2).sum(dim=dims, keepdim=True) / (n - 1))
        return (x - mean) / (1e-5 + std), mean, std

    def forward(self, mix, spec):
        batch = mix.shape[0]
        x, mean, std = self._standardise(spec, (1, 2, 3))
        xt, meant, stdt = self._standardise(mix, (1, 2))

        saved, saved_t, lengths, lengths_t = [], [], [], []
        for idx, encode in enumerate(self.encoder):
            lengths.append(x.shape[-1])
            inject = None
            if idx < len(self.tencoder):
                lengths_t.append(xt.shape[-1])
                tenc = self.tencoder[idx]
                xt = tenc(xt)
                if tenc.empty:
                    inject = xt
                else:
                    saved_t.append(xt)
            x = encode(x, inject)
            if idx == 0 and self.freq_emb is not None:
                x = x + self.freq_emb_scale * self.freq_emb.table().t()[None, :, :, None]
            saved.append(x)

        if self.crosstransformer is not None:
            if self.bottom_channels:
                b, c, f, t = x.shape
                x = self.channel_upsampler(x.reshape(b, c, f * t)).reshape(b, -1, f, t)
                xt = self.channel_upsampler_t(xt)
            x, xt = self.crosstransformer(x, xt)
            if self.bottom_channels:
                b, c, f, t = x.shape
                x = self.channel_downsampler(x.reshape(b, c, f * t)).reshape(b, -1, f, t)
                xt = self.channel_downsampler_t(xt)

        offset = self.depth - len(self.tdecoder)
        for idx, decode in enumerate(self.decoder):
            x, pre = decode(x, saved.pop(-1), lengths.pop(-1))
            if idx >= offset:
                tdec = self.tdecoder[idx - offset]
                length_t = lengths_t.pop(-1)
                if tdec.empty:
                    xt, _ = tdec(pre[:, :, 0], None, length_t)
                else:
                    xt, _ = tdec(xt, saved_t.pop(-1), length_t)

        s = len(self.sources)
        spec_out = x.reshape(batch, s, -1, x.shape[-2], x.shape[-1]) * std[:, None] + mean[:, None]
        time_out = xt.reshape(batch, s, -1, xt.shape[-1]) * stdt[:, None] + meant[:, None]
        return time_out, spec_out


def build(cfg: dict, state: dict | None, source: str) -> HTDemucsCore:
    """The network for `cfg`, with `state` loaded strictly (names and shapes must match)."""
    model = HTDemucsCore(cfg)
    if state is not None:
        own = model.state_dict()
        missing = sorted(set(own) - set(state))
        unexpected = sorted(set(state) - set(own))
        if missing or unexpected:
            raise ImportProblem(
                f"{source}: the state does not fit the config: missing {missing[:5]}"
                f"{' …' if len(missing) > 5 else ''}, unexpected {unexpected[:5]}{' …' if len(unexpected) > 5 else ''}"
            )
        for key, value in own.items():
            if tuple(state[key].shape) != tuple(value.shape):
                raise ImportProblem(
                    f"{source}: {key} has shape {tuple(state[key].shape)}, the config gives {tuple(value.shape)}"
                )
        model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return model.eval()


# ----------------------------------------------------------------------------------------------
# The STFT side, in torch, as HTDemucs._spec / _magnitude / _mask / _ispec compute it: used to
# check the export against a whole forward, and documented here because the TypeScript family
# reproduces exactly these steps.


def spectrum(mix, nfft: int):
    """_magnitude(_spec(mix)): [B, C, L] -> [B, 2C, nfft/2, ceil(L/hop)]."""
    hop = nfft // 4
    b, c, length = mix.shape
    frames = math.ceil(length / hop)
    pad = hop // 2 * 3
    x = F.pad(mix, (pad, pad + frames * hop - length), mode="reflect")
    z = torch.stft(x.reshape(-1, x.shape[-1]), nfft, hop, window=torch.hann_window(nfft), win_length=nfft,
                   normalized=True, center=True, return_complex=True, pad_mode="reflect")
    z = z[:, :-1, 2 : 2 + frames].reshape(b, c, nfft // 2, frames)
    return torch.view_as_real(z).permute(0, 1, 4, 2, 3).reshape(b, 2 * c, nfft // 2, frames)


def inverse_spectrum(spec, nfft: int, length: int):
    """_ispec(_mask(spec)): [B, S, 2C, nfft/2, T] -> [B, S, C, length]."""
    hop = nfft // 4
    b, s, cc, fr, t = spec.shape
    z = torch.view_as_complex(spec.reshape(b, s, cc // 2, 2, fr, t).permute(0, 1, 2, 4, 5, 3).contiguous())
    z = F.pad(z, (2, 2, 0, 1))
    pad = hop // 2 * 3
    le = hop * math.ceil(length / hop) + 2 * pad
    x = torch.istft(z.reshape(-1, fr + 1, t + 4), nfft, hop, window=torch.hann_window(nfft), win_length=nfft,
                    normalized=True, length=le, center=True)
    return x.reshape(b, s, cc // 2, le)[..., pad : pad + length]


def separate_chunk(model: HTDemucsCore, mix):
    """The whole HTDemucs.forward on one chunk of the training length."""
    time_out, spec_out = model(mix, spectrum(mix, model.nfft))
    return time_out + inverse_spectrum(spec_out, model.nfft, mix.shape[-1])


# ----------------------------------------------------------------------------------------------
# Export


def export_onnx(model: HTDemucsCore, path: str | os.PathLike) -> None:
    mix = torch.zeros(1, model.audio_channels, model.length)
    spec = torch.zeros(1, 2 * model.audio_channels, model.nfft // 2, model.frames)
    # the tracer's warnings (Python ints taken from shapes) are expected: the graph is built
    # for the one chunk length the model runs at
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (mix, spec), str(path), opset_version=17,
            input_names=["mix", "spec"], output_names=["time", "spec_out"],
            dynamic_axes={"mix": {0: "batch"}, "spec": {0: "batch"}, "time": {0: "batch"}, "spec_out": {0: "batch"}},
            do_constant_folding=True,
        )


def _check_checksum(path: Path, expected: str) -> None:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if not digest.hexdigest().startswith(expected):
        raise ImportProblem(f"{path}: checksum {digest.hexdigest()[:len(expected)]} does not match the {expected} in its name")


def find_member(directory: Path, signature: str) -> Path:
    """`<sig>.th` or `<sig>-<sha256 prefix>.th` next to the bag, as demucs's LocalRepo finds it."""
    found = [p for p in directory.glob(f"{signature}*.th") if p.stem == signature or p.stem.startswith(signature + "-")]
    if not found:
        raise ImportProblem(f"bag member {signature}: no {signature}.th or {signature}-<hash>.th in {directory}")
    if len(found) > 1:
        raise ImportProblem(f"bag member {signature}: several files in {directory}: {', '.join(p.name for p in found)}")
    path = found[0]
    if "-" in path.stem:
        _check_checksum(path, path.stem.split("-", 1)[1])
    return path


def read_bag(path: Path) -> dict:
    import yaml

    try:
        bag = yaml.safe_load(path.read_text())
    except Exception as err:
        raise ImportProblem(f"{path}: not a readable yaml ({err})")
    if not isinstance(bag, dict) or not isinstance(bag.get("models"), list) or not bag["models"]:
        raise ImportProblem(f"{path}: a demucs bag yaml needs a non-empty `models` list")
    signatures = [str(s) for s in bag["models"]]
    for sig in signatures:
        if not re.fullmatch(r"[A-Za-z0-9_]+", sig):
            raise ImportProblem(f"{path}: model signature {sig!r} is not a plain name")
    weights = bag.get("weights")
    segment = bag.get("segment")
    if segment is not None and (not isinstance(segment, (int, float)) or segment <= 0):
        raise ImportProblem(f"{path}: segment must be a positive number")
    return {"signatures": signatures, "weights": weights, "segment": segment}


def _member(checkpoint: Path, bag_segment) -> tuple[HTDemucsCore, dict]:
    package = load_package(checkpoint)
    cfg = resolve_config(package["kwargs"], str(checkpoint))
    # demucs.apply.BagOfModels: a bag's segment replaces an HTDemucs's only when not longer
    if bag_segment is not None and bag_segment <= cfg["segment"]:
        cfg["segment"] = bag_segment
    return build(cfg, package["state"], str(checkpoint)), cfg


def export(checkpoint, config, out_dir, name) -> dict:
    """Exports a demucs `.th` (one model) or a bag `.yaml` (its members found next to it) into
    `out_dir`; returns the manifest. `config` is not used: the package carries its config."""
    torch.set_num_threads(min(2, torch.get_num_threads()))
    checkpoint, out_dir = Path(checkpoint), Path(out_dir)
    if config is not None:
        raise ImportProblem("htdemucs takes no --config: a demucs .th package carries its own kwargs")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise ImportProblem(f"model name {name!r}: use letters, digits, '.', '_' or '-'")
    if checkpoint.suffix in (".yaml", ".yml"):
        bag = read_bag(checkpoint)
        paths = [find_member(checkpoint.parent, sig) for sig in bag["signatures"]]
        segment = bag["segment"]
        weights = bag["weights"]
    else:
        paths, segment, weights = [checkpoint], None, None
    out_dir.mkdir(parents=True, exist_ok=True)

    members, sources, rate, channels, nfft = [], None, None, None, None
    for i, path in enumerate(paths):
        model, cfg = _member(path, segment)
        if sources is None:
            sources, rate, channels, nfft = cfg["sources"], cfg["samplerate"], cfg["audio_channels"], cfg["nfft"]
        elif (cfg["sources"], cfg["samplerate"], cfg["audio_channels"], cfg["nfft"]) != (sources, rate, channels, nfft):
            raise ImportProblem(f"{path}: bag members differ in sources, sample rate, channels or nfft")
        file = f"{name}.onnx" if len(paths) == 1 else f"{name}.{i}.onnx"
        export_onnx(model, out_dir / file)
        members.append({"file": file, "segmentSamples": model.length})
        del model

    if weights is None:
        weights = [[1.0] * len(sources) for _ in paths]
    if len(weights) != len(paths) or any(not isinstance(w, list) or len(w) != len(sources) for w in weights):
        raise ImportProblem(f"{checkpoint}: weights must be {len(paths)} rows of {len(sources)} numbers")
    weights = [[float(v) for v in row] for row in weights]
    for k, source in enumerate(sources):
        if sum(row[k] for row in weights) == 0:
            raise ImportProblem(f"{checkpoint}: the weights of source {source!r} sum to 0")
    if channels != 2:
        raise ImportProblem(f"{checkpoint}: {channels} audio channels; Mixdown runs stereo models")
    return {
        "name": name,
        "architecture": ARCHITECTURE,
        "file": members[0]["file"],
        "sampleRate": int(rate),
        "nFft": int(nfft),
        "hopLength": int(nfft) // 4,
        "stems": list(sources),
        "members": members,
        "weights": weights,
    }
