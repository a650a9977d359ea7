#!/usr/bin/env python3
"""Real-size stand-ins for `pnpm bench:voice` (random weights; speed and memory, not quality).

    PYTHONPATH=packages/voice/python /usr/bin/python3 packages/voice/scripts/bench/prepare_voice_bench.py <dir>

Writes into <dir> what is not there yet:
- rvc.pth / rvc.onnx: an RVC v2 48k model at RVC's size (scripts/fixtures/make_rvc_fixture.py
  --full), converted by Mixdown's converter;
- rmvpe.onnx: RMVPE at its published size (90.5 M parameters), exported by Mixdown's converter;
- contentvec.onnx: HuBERT-base (the architecture of ContentVec's vec-768-layer-12), torchaudio's
  `hubert_base()` with random weights, [1,1,N] -> [1,T,768] like the community export;
- model.index: 100,000 768-d features in 400 clusters, IVF2564,Flat as RVC's train_index makes it
  (k-means, 10 iterations), nprobe 1.
Needs Debian's python3-torch, python3-torchaudio, python3-onnx, python3-faiss.
"""

import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(2)
    path = lambda name: os.path.join(out, name)
    env = {**os.environ, "PYTHONPATH": os.path.join(HERE, "..", "..", "python")}
    if not os.path.exists(path("rvc.onnx")):
        subprocess.run([sys.executable, os.path.join(HERE, "..", "fixtures", "make_rvc_fixture.py"), out, "--full"], check=True, env=env)
        os.replace(path("rvc-v2-48k-full.pth"), path("rvc.pth"))
        subprocess.run([sys.executable, "-m", "mixdown_voice.export_rvc", path("rvc.pth"), path("rvc.onnx")], check=True, env=env)
    if not os.path.exists(path("rmvpe.onnx")):
        from mixdown_voice.rmvpe import RMVPE

        torch.manual_seed(3)
        torch.save(RMVPE().state_dict(), path("rmvpe.pt"))
        subprocess.run([sys.executable, "-m", "mixdown_voice.export_rmvpe", path("rmvpe.pt"), path("rmvpe.onnx")], check=True, env=env)
    if not os.path.exists(path("contentvec.onnx")):
        import torchaudio

        torch.manual_seed(0)
        hubert = torchaudio.models.hubert_base().eval()

        class Features(torch.nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, source):
                return self.model(source[:, 0])[0]

        with torch.no_grad():
            torch.onnx.export(
                Features(hubert),
                torch.zeros(1, 1, 16000),
                path("contentvec.onnx"),
                input_names=["source"],
                output_names=["embed"],
                dynamic_axes={"source": {2: "samples"}, "embed": {1: "frames"}},
                opset_version=17,
            )
    if not os.path.exists(path("model.index")):
        import faiss

        faiss.omp_set_num_threads(2)
        rng = np.random.default_rng(1)
        rows, dim = 100_000, 768
        nlist = min(int(16 * np.sqrt(rows)), rows // 39)
        modes = rng.standard_normal((400, dim)).astype(np.float32) * 2
        data = (modes[rng.integers(0, 400, rows)] + rng.standard_normal((rows, dim))).astype(np.float32)
        index = faiss.index_factory(dim, f"IVF{nlist},Flat")
        ivf = faiss.extract_index_ivf(index)
        ivf.nprobe = 1
        ivf.cp.niter = 10
        index.train(data)
        for i in range(0, rows, 8192):
            index.add(data[i : i + 8192])
        faiss.write_index(index, path("model.index"))


if __name__ == "__main__":
    main()
