"""Mixdown's own PyTorch implementations of the separation families it imports, and their ONNX export.

Run by `./mixdown.sh models import` as `python3 -m mixdown_export <family> --checkpoint ... --out-dir ... --name ...`.
"""
