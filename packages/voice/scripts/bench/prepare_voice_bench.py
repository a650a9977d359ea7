#!/usr/bin/env python3
"""Real-size stand-ins for `pnpm bench:voice` (random weights; speed and memory, not quality).

    PYTHONPATH=packages/voice/python /usr/bin/python3 packages/voice/scripts/bench/prepare_voice_bench.py <dir>

Writes into <dir> what is not there yet:
- rvc.pth / rvc.onnx: an RVC v2 48k model at RVC's size (scripts/fixtures/make_rvc_fixture.py
  --full), converted by Mixdown's converter;
- rmvpe.onnx: RMVPE at its published size (90.5 M parameters), exported by Mixdown's converter;
- hubert_base.pt / contentvec.onnx: HuBERT-base (the architecture of ContentVec's vec-768-layer-12)
  with random weights in fairseq's checkpoint layout (scripts/fixtures/make_hubert_fixture.py's
  `random_checkpoint` at base sizes), converted by Mixdown's converter (`export_hubert`, as
  `voices import-features` runs it), [1,1,N] -> [1,T,768] (layer 12); the .pt is also what
  `bench:voice --upstream` hands RVC's own pipeline;
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
    if not os.path.exists(path("hubert_base.pt")) or not os.path.exists(path("contentvec.onnx")):
        sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
        from make_hubert_fixture import random_checkpoint

        # HuBERT-base sizes (ContentVec's vec-768-layer-12 is this network), random weights, in
        # fairseq's hubert_base.pt layout; converted as `voices import-features` converts it.
        base = dict(channels=512, width=768, hidden=3072, heads=12, layers=12, pos_kernel=128, pos_groups=16, projection=256)
        torch.save(random_checkpoint(base), path("hubert_base.pt"))
        subprocess.run([sys.executable, "-m", "mixdown_voice.export_hubert", path("hubert_base.pt"), path("contentvec.onnx")], check=True, env=env)
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
