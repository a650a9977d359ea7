import numpy as np
import soundfile

from . import filters  # noqa: F401


def load(path, sr=22050, mono=True, **_kwargs):
    data, rate = soundfile.read(path, dtype="float32", always_2d=True)
    if sr is not None and rate != sr:
        raise ValueError(f"{path}: {rate} Hz; this stand-in reads files at the model's rate ({sr} Hz) only")
    y = data.T
    if mono:
        y = y.mean(axis=0)
    elif y.shape[0] == 1:
        y = y[0]
    return np.ascontiguousarray(y), rate
