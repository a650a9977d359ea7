"""Mel-Band RoFormer (MSST `mel_band_roformer`): `.ckpt` + yaml → ONNX + manifest. The band
indices come from a Slaney mel filter bank computed here and are baked into the graph."""

from ._roformer_export import export_roformer
from .roformer import MelBandRoformerNet, mel_settings


def build(settings):
    return MelBandRoformerNet(settings)


def export(checkpoint, config, out_dir, name):
    return export_roformer("mel_band_roformer", build, mel_settings, checkpoint, config, out_dir, name)
