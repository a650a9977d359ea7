"""Converters from upstream separation checkpoints to ONNX + a Mixdown manifest."""
