"""MDX23C (TFC-TDF v3, MSST `models/mdx23c_tfc_tdf_v3.py` at the pinned commit), written for
export: the graph maps the chunk's cropped STFT to every stem's, so the STFT, the crop to dim_f
and the zero-padding back for the iSTFT stay outside. Parameter names follow MSST's modules, so
its `.ckpt` state dicts load strictly.

  spec [batch, 4 (L re, L im, R re, R im), dim_f, frames] -> stems [batch, stems, 4, dim_f, frames]
"""

import torch
from torch import nn

from . import msst
from .errors import ImportProblem


def _norm(kind):
    if kind == "BatchNorm":
        return lambda c: nn.BatchNorm2d(c)
    if kind == "InstanceNorm":
        return lambda c: nn.InstanceNorm2d(c, affine=True)
    if isinstance(kind, str) and "GroupNorm" in kind:
        try:
            groups = int(kind.replace("GroupNorm", ""))
        except ValueError:
            raise ImportProblem(f"model.norm {kind!r}: GroupNorm needs its group count, e.g. GroupNorm8")
        return lambda c: nn.GroupNorm(num_groups=groups, num_channels=c)
    return lambda c: nn.Identity()


def _act(kind):
    if kind == "gelu":
        return nn.GELU()
    if kind == "relu":
        return nn.ReLU()
    if isinstance(kind, str) and kind.startswith("elu"):
        try:
            return nn.ELU(float(kind[3:]))
        except ValueError:
            pass
    raise ImportProblem(f"model.act {kind!r} is not one MDX23C knows (gelu, relu, elu<alpha>)")


class _Resample(nn.Module):
    """Norm, activation, then a strided (transposed) convolution: MSST's Downscale / Upscale."""

    def __init__(self, conv, c_in, norm, act):
        super().__init__()
        self.conv = nn.Sequential(norm(c_in), act, conv)

    def forward(self, x):
        return self.conv(x)


class _TfcTdf(nn.Module):
    def __init__(self, c_in, c, layers, f, bottleneck, norm, act):
        super().__init__()
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            block = nn.Module()
            block.tfc1 = nn.Sequential(norm(c_in), act, nn.Conv2d(c_in, c, 3, 1, 1, bias=False))
            block.tdf = nn.Sequential(
                norm(c), act, nn.Linear(f, f // bottleneck, bias=False), norm(c), act, nn.Linear(f // bottleneck, f, bias=False)
            )
            block.tfc2 = nn.Sequential(norm(c), act, nn.Conv2d(c, c, 3, 1, 1, bias=False))
            block.shortcut = nn.Conv2d(c_in, c, 1, 1, 0, bias=False)
            self.blocks.append(block)
            c_in = c

    def forward(self, x):
        for block in self.blocks:
            skip = block.shortcut(x)
            x = block.tfc1(x)
            x = x + block.tdf(x)
            x = block.tfc2(x) + skip
        return x


class Mdx23cNet(nn.Module):
    def __init__(self, config):
        super().__init__()
        model, audio = config["model"], config["audio"]
        try:
            norm, act = _norm(model["norm"]), _act(model["act"])
            self.subbands = k = int(model["num_subbands"])
            scales, layers = int(model["num_scales"]), int(model["num_blocks_per_scale"])
            scale = tuple(int(s) for s in model["scale"])
            c, growth, bottleneck = int(model["num_channels"]), int(model["growth"]), int(model["bottleneck_factor"])
            dim_f = int(audio["dim_f"])
        except KeyError as err:
            raise ImportProblem(f"the config lacks {err.args[0]} (MDX23C reads model.norm, act, num_subbands, num_scales, num_blocks_per_scale, scale, num_channels, growth, bottleneck_factor and audio.dim_f)")
        self.stems = len(msst.target_stems(config))
        dim_c = k * 2 * 2
        f = dim_f // k
        if dim_f % k or f % (scale[1] ** scales):
            raise ImportProblem(f"audio.dim_f {dim_f} does not divide into {k} subbands halved {scales} times by {scale[1]}")
        self.first_conv = nn.Conv2d(dim_c, c, 1, 1, 0, bias=False)
        self.encoder_blocks = nn.ModuleList()
        for _ in range(scales):
            block = nn.Module()
            block.tfc_tdf = _TfcTdf(c, c, layers, f, bottleneck, norm, act)
            block.downscale = _Resample(nn.Conv2d(c, c + growth, scale, scale, bias=False), c, norm, act)
            f //= scale[1]
            c += growth
            self.encoder_blocks.append(block)
        self.bottleneck_block = _TfcTdf(c, c, layers, f, bottleneck, norm, act)
        self.decoder_blocks = nn.ModuleList()
        for _ in range(scales):
            block = nn.Module()
            block.upscale = _Resample(nn.ConvTranspose2d(c, c - growth, scale, scale, bias=False), c, norm, act)
            f *= scale[1]
            c -= growth
            block.tfc_tdf = _TfcTdf(2 * c, c, layers, f, bottleneck, norm, act)
            self.decoder_blocks.append(block)
        self.final_conv = nn.Sequential(
            nn.Conv2d(c + dim_c, c, 1, 1, 0, bias=False), act, nn.Conv2d(c, self.stems * dim_c, 1, 1, 0, bias=False)
        )
        self.time_divisor = scale[0] ** scales

    def forward(self, spec):
        b, ch, f, t = spec.shape
        k = self.subbands
        # complex-as-channels → channels-with-subbands (cac2cws)
        x = spec.reshape(b, ch, k, f // k, t).reshape(b, ch * k, f // k, t)
        mix = x
        first = x = self.first_conv(x)
        x = x.transpose(2, 3)
        skips = []
        for block in self.encoder_blocks:
            x = block.tfc_tdf(x)
            skips.append(x)
            x = block.downscale(x)
        x = self.bottleneck_block(x)
        for block in self.decoder_blocks:
            x = block.upscale(x)
            x = torch.cat([x, skips.pop()], 1)
            x = block.tfc_tdf(x)
        x = x.transpose(2, 3) * first
        x = self.final_conv(torch.cat([mix, x], 1))
        c = x.shape[1]
        x = x.reshape(b, c // k, k, f // k, t).reshape(b, c // k, f, t)  # cws2cac
        return x.reshape(b, self.stems, ch, f, t)


def build(config):
    return Mdx23cNet(config)


def export(checkpoint, config_path, out_dir, name):
    torch.set_num_threads(2)
    config = msst.read_config(config_path)
    audio = config["audio"]
    try:
        n_fft, hop, dim_f = int(audio["n_fft"]), int(audio["hop_length"]), int(audio["dim_f"])
    except KeyError as err:
        raise ImportProblem(f"the config's audio section lacks {err.args[0]} (MDX23C reads n_fft, hop_length and dim_f)")
    if dim_f > n_fft // 2 + 1:
        raise ImportProblem(f"audio.dim_f {dim_f} exceeds the {n_fft // 2 + 1} bins of n_fft {n_fft}")
    demix = msst.demix_settings(config)
    if demix["chunkSize"] % hop:
        raise ImportProblem(f"chunk_size {demix['chunkSize']} is not a multiple of hop_length {hop}: MSST's MDX23C output would not fit its chunk")
    net = build(config)
    frames = demix["chunkSize"] // hop + 1
    if frames % net.time_divisor:
        raise ImportProblem(
            f"chunk_size {demix['chunkSize']} gives {frames} STFT frames, which the {len(net.encoder_blocks)} downscales cannot halve evenly (a multiple of {net.time_divisor} is needed)"
        )
    msst.load_weights(net, msst.read_state_dict(checkpoint), config_path)
    example = torch.zeros(1, 4, dim_f, frames)
    file = msst.export_onnx(net, example, out_dir, name, ["stems"])
    return {
        "name": name,
        "architecture": "mdx23c",
        "file": file,
        "sampleRate": demix["sampleRate"],
        "nFft": n_fft,
        "hopLength": hop,
        "dimF": dim_f,
        "chunkSize": demix["chunkSize"],
        "numOverlap": demix["numOverlap"],
        "batchSize": demix["batchSize"],
        **msst.stems_fields(msst.target_stems(config)),
    }
