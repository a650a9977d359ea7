"""BS-RoFormer (MSST `bs_roformer`): `.ckpt` + yaml → ONNX + manifest."""

from ._roformer_export import export_roformer
from .roformer import BSRoformerNet, bs_settings


def build(settings):
    return BSRoformerNet(settings)


def export(checkpoint, config, out_dir, name):
    return export_roformer("bs_roformer", build, bs_settings, checkpoint, config, out_dir, name)
