"""RMVPE (Wei et al. 2023, "RMVPE: A Robust Model for Vocal Pitch Estimation in Polyphonic Music")
as the network behind RVC's `rmvpe.pt`: a log-mel (128 bins) goes through a residual U-Net over
(time, mel), a 3-channel 3x3 convolution, a bidirectional GRU over time and a linear layer with a
sigmoid to 360 pitch bins (20 cents apart) per frame.

Written for Mixdown; its parameter names follow the keys of `rmvpe.pt` so that file's state dict
loads as it is. The sizes (channels, depth, blocks per stage, GRU layers) are read from the state
dict, so the published model (16 base channels, 5 down/up stages, 4 middle stages, 4 residual
blocks each, one GRU layer) and smaller test models load alike.
"""

import re

import torch
from torch import nn

MEL_BINS = 128
PITCH_BINS = 360
BN_MOMENTUM = 0.01


def _norm(channels):
    return nn.BatchNorm2d(channels, momentum=BN_MOMENTUM)


class Residual(nn.Module):
    """Two 3x3 conv + batch norm + ReLU layers added to the input (1x1 projected when the width changes)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False),
            _norm(cout),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            _norm(cout),
            nn.ReLU(),
        )
        self.project = cin != cout
        if self.project:
            self.shortcut = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        skip = self.shortcut(x) if self.project else x
        return self.conv(x) + skip


class Stack(nn.Module):
    """`blocks` residual blocks; a down stage also returns its output average-pooled by 2x2."""

    def __init__(self, cin, cout, blocks, pool):
        super().__init__()
        self.conv = nn.ModuleList([Residual(cin if i == 0 else cout, cout) for i in range(blocks)])
        self.pooled = pool
        if pool:
            self.pool = nn.AvgPool2d(kernel_size=(2, 2))

    def forward(self, x):
        for block in self.conv:
            x = block(x)
        if self.pooled:
            return x, self.pool(x)
        return x


class Up(nn.Module):
    """A 2x transposed convolution, then residual blocks over it concatenated with the skip."""

    def __init__(self, cin, cout, blocks):
        super().__init__()
        self.conv1 = nn.Sequential(
            nn.ConvTranspose2d(cin, cout, 3, stride=(2, 2), padding=(1, 1), output_padding=(1, 1), bias=False),
            _norm(cout),
            nn.ReLU(),
        )
        self.conv2 = nn.ModuleList([Residual(2 * cout if i == 0 else cout, cout) for i in range(blocks)])

    def forward(self, x, skip):
        x = torch.cat((self.conv1(x), skip), dim=1)
        for block in self.conv2:
            x = block(x)
        return x


class Down(nn.Module):
    def __init__(self, base, stages, blocks):
        super().__init__()
        self.bn = _norm(1)
        widths = [base * 2**i for i in range(stages)]
        self.layers = nn.ModuleList([Stack(1 if i == 0 else widths[i - 1], w, blocks, True) for i, w in enumerate(widths)])

    def forward(self, x):
        skips = []
        x = self.bn(x)
        for stage in self.layers:
            skip, x = stage(x)
            skips.append(skip)
        return x, skips


class Middle(nn.Module):
    def __init__(self, cin, cout, stages, blocks):
        super().__init__()
        self.layers = nn.ModuleList([Stack(cin if i == 0 else cout, cout, blocks, False) for i in range(stages)])

    def forward(self, x):
        for stage in self.layers:
            x = stage(x)
        return x


class UNet(nn.Module):
    def __init__(self, base, stages, middle, blocks):
        super().__init__()
        deepest = base * 2**stages
        self.encoder = Down(base, stages, blocks)
        self.intermediate = Middle(deepest // 2, deepest, middle, blocks)
        self.decoder = nn.Module()
        self.decoder.layers = nn.ModuleList([Up(deepest // 2**i, deepest // 2 ** (i + 1), blocks) for i in range(stages)])

    def forward(self, x):
        x, skips = self.encoder(x)
        x = self.intermediate(x)
        for up, skip in zip(self.decoder.layers, reversed(skips)):
            x = up(x, skip)
        return x


class Recurrent(nn.Module):
    def __init__(self, inputs, hidden, layers):
        super().__init__()
        self.gru = nn.GRU(inputs, hidden, num_layers=layers, batch_first=True, bidirectional=True)

    def forward(self, x):
        return self.gru(x)[0]


class RMVPE(nn.Module):
    """mel [B, 128, T] (T a multiple of 2^stages) -> pitch-bin salience [B, T, 360] in 0..1."""

    def __init__(self, base=16, stages=5, middle=4, blocks=4, gru_layers=1, gru_hidden=256):
        super().__init__()
        self.unet = UNet(base, stages, middle, blocks)
        self.cnn = nn.Conv2d(base, 3, 3, padding=1)
        self.fc = nn.Sequential(
            Recurrent(3 * MEL_BINS, gru_hidden, gru_layers),
            nn.Linear(2 * gru_hidden, PITCH_BINS),
            nn.Dropout(0.25),
            nn.Sigmoid(),
        )

    def forward(self, mel):
        x = self.unet(mel.transpose(1, 2).unsqueeze(1))
        x = self.cnn(x)  # [B, 3, T, 128]
        x = x.transpose(1, 2).flatten(2)  # [B, T, 384]
        return self.fc(x)


def sizes_of(state):
    """The constructor arguments a `rmvpe.pt` state dict was saved from."""

    def count(pattern):
        found = {int(m.group(1)) for key in state for m in [re.match(pattern, key)] if m}
        return max(found) + 1 if found else 0

    first = "unet.encoder.layers.0.conv.0.conv.0.weight"
    if first not in state or "fc.0.gru.weight_hh_l0" not in state:
        raise KeyError(first if first not in state else "fc.0.gru.weight_hh_l0")
    return dict(
        base=state[first].shape[0],
        stages=count(r"unet\.encoder\.layers\.(\d+)\."),
        middle=count(r"unet\.intermediate\.layers\.(\d+)\."),
        blocks=count(r"unet\.encoder\.layers\.0\.conv\.(\d+)\."),
        gru_layers=count(r"fc\.0\.gru\.weight_ih_l(\d+)$"),
        gru_hidden=state["fc.0.gru.weight_hh_l0"].shape[1],
    )


def from_state_dict(state):
    model = RMVPE(**sizes_of(state))
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return model.eval()
