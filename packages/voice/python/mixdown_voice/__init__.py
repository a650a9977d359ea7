"""Mixdown's voice-side PyTorch code: converters run once at import time, never by the worker."""
