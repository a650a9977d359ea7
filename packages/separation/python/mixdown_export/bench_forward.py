"""Times the network of an imported checkpoint in PyTorch, for `pnpm bench:separation --torch`.

    python3 -m mixdown_export.bench_forward <family> --checkpoint F [--config Y] [--runs 3] [--threads 2]

Prints one JSON line: milliseconds per chunk (the median of `runs`, after one warm-up run) for the
same computation the exported ONNX graph does (the STFT stays outside, as in the graph), at batch 1.
The module is Mixdown's own implementation, which the exactness fixtures pin to the upstream's
output; so this is the upstream's network at PyTorch speed on this machine.
"""

import argparse
import json
import statistics
import time

import torch


def network_and_inputs(family, checkpoint, config):
    if family == "htdemucs":
        from .htdemucs import _member, spectrum

        model, _ = _member(checkpoint, None)
        mix = torch.randn(1, model.audio_channels, model.length) * 0.1
        return model, (mix, spectrum(mix, model.nfft)), model.length
    from . import msst

    cfg = msst.read_config(config)
    demix = msst.demix_settings(cfg)
    if family in ("bs_roformer", "mel_band_roformer"):
        from . import bs_roformer, mel_band_roformer
        from .roformer import bs_settings, mel_settings

        settings = (bs_settings if family == "bs_roformer" else mel_settings)(cfg["model"])
        net = (bs_roformer if family == "bs_roformer" else mel_band_roformer).build(settings)
        frames = demix["chunkSize"] // settings["stft_hop_length"] + 1
        example = torch.randn(1, 2, settings["stft_n_fft"] // 2 + 1, frames, 2) * 0.1
    elif family == "mdx23c":
        from . import mdx23c

        net = mdx23c.build(cfg)
        frames = demix["chunkSize"] // int(cfg["audio"]["hop_length"]) + 1
        example = torch.randn(1, 4, int(cfg["audio"]["dim_f"]), frames) * 0.1
    else:
        raise SystemExit(f"no PyTorch bench for {family}")
    msst.load_weights(net, msst.read_state_dict(checkpoint), config)
    return net.eval(), (example,), demix["chunkSize"]


def main():
    parser = argparse.ArgumentParser(prog="mixdown_export.bench_forward")
    parser.add_argument("family")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--config")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    net, inputs, chunk = network_and_inputs(args.family, args.checkpoint, args.config)
    times = []
    with torch.no_grad():
        net(*inputs)
        for _ in range(args.runs):
            start = time.perf_counter()
            net(*inputs)
            times.append((time.perf_counter() - start) * 1000)
    print(json.dumps({"family": args.family, "msPerChunk": statistics.median(times), "chunkSamples": chunk, "threads": args.threads}))


if __name__ == "__main__":
    main()
