"""Stand-in for pytorch_lightning: UVR's MDX-Net (`uvr_lib_v5/mdxnet.py`) subclasses its
LightningModule for training; building and exporting the network needs only torch's Module."""

from torch.nn import Module as LightningModule  # noqa: F401
