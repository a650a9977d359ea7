"""The export both RoFormer families run: config + checkpoint → ONNX + manifest."""

import torch

from . import msst
from .errors import ImportProblem


def export_roformer(architecture, build, settings_of, checkpoint, config_path, out_dir, name):
    torch.set_num_threads(2)
    config = msst.read_config(config_path)
    settings = settings_of(config["model"])
    demix = msst.demix_settings(config)
    stems = msst.target_stems(config)
    if settings["num_stems"] != len(stems):
        raise ImportProblem(
            f"the config's model has num_stems {settings['num_stems']} but its training section names "
            f"{len(stems)} target stem(s) ({', '.join(stems)}); MSST pairs them in order"
        )
    hop, n_fft = settings["stft_hop_length"], settings["stft_n_fft"]
    if architecture == "mel_band_roformer" and demix["chunkSize"] % hop != 0 and not config["model"].get("match_input_audio_length"):
        raise ImportProblem(f"chunk_size {demix['chunkSize']} is not a multiple of stft_hop_length {hop}: MSST's Mel-Band output would not fit its chunk")
    state_dict = msst.read_state_dict(checkpoint)
    net = build(settings)
    msst.load_weights(net, state_dict, config_path)
    frames = demix["chunkSize"] // hop + 1
    example = torch.zeros(1, 2, n_fft // 2 + 1, frames, 2)
    file = msst.export_onnx(net, example, out_dir, name, ["masked"])
    return {
        "name": name,
        "architecture": architecture,
        "file": file,
        "sampleRate": demix["sampleRate"],
        "nFft": n_fft,
        "hopLength": hop,
        "normalized": bool(settings["stft_normalized"]),
        "zeroDc": bool(settings["zero_dc"]),
        "chunkSize": demix["chunkSize"],
        "numOverlap": demix["numOverlap"],
        "batchSize": demix["batchSize"],
        **msst.stems_fields(stems),
    }
