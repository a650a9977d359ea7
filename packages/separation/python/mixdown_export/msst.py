"""What the three MSST families (ZFTurbo/Music-Source-Separation-Training) share at import:
reading the yaml, unwrapping the checkpoint, loading it strictly with an error that names the
first mismatch, the inference settings of MSST's `demix`, and the ONNX export."""

import os

import torch
import yaml

from .errors import ImportProblem


class _MsstYamlLoader(yaml.SafeLoader):
    """MSST writes tuples as `!!python/tuple`; a safe loader refuses that tag, and the full
    loader would also construct arbitrary Python objects, which a user's file must not do."""


_MsstYamlLoader.add_constructor(
    "tag:yaml.org,2002:python/tuple",
    lambda loader, node: tuple(loader.construct_sequence(node, deep=True)),
)


def read_config(config_path):
    if config_path is None:
        raise ImportProblem("an MSST checkpoint needs its yaml config (--config <yaml>): the .ckpt holds only weights")
    try:
        with open(config_path, "r", encoding="utf-8") as f:
            config = yaml.load(f, Loader=_MsstYamlLoader)
    except FileNotFoundError:
        raise ImportProblem(f"config {config_path} does not exist")
    except yaml.YAMLError as err:
        raise ImportProblem(f"config {config_path} is not valid yaml: {str(err).splitlines()[0]}")
    if not isinstance(config, dict):
        raise ImportProblem(f"config {config_path} is not a yaml mapping")
    for section in ("audio", "model", "training", "inference"):
        if not isinstance(config.get(section), dict):
            raise ImportProblem(f"config {config_path} has no `{section}:` section (an MSST config has audio, model, training and inference)")
    return config


def read_state_dict(checkpoint_path):
    try:
        obj = torch.load(checkpoint_path, map_location="cpu")
    except FileNotFoundError:
        raise ImportProblem(f"checkpoint {checkpoint_path} does not exist")
    except Exception as err:
        raise ImportProblem(f"checkpoint {checkpoint_path} could not be read by torch.load: {err}")
    # MSST's load_start_checkpoint unwraps the same keys, in the same order
    for key in ("state", "state_dict", "model_state_dict"):
        if isinstance(obj, dict) and key in obj and isinstance(obj[key], dict):
            obj = obj[key]
    if not isinstance(obj, dict) or not all(torch.is_tensor(v) for v in obj.values()):
        raise ImportProblem(f"checkpoint {checkpoint_path} is not a state dict (a mapping of names to tensors)")
    return obj


def load_weights(module, state_dict, config_path):
    """Strict load; a config that does not fit the weights names the first key that differs."""
    expected = module.state_dict()
    for key, tensor in expected.items():
        if key not in state_dict:
            raise ImportProblem(
                f"the config {config_path} does not fit the checkpoint: it needs `{key}` {list(tensor.shape)}, which the checkpoint lacks"
            )
        got = state_dict[key]
        if tuple(got.shape) != tuple(tensor.shape):
            raise ImportProblem(
                f"the config {config_path} does not fit the checkpoint: `{key}` is {list(got.shape)} in the checkpoint, "
                f"the config gives {list(tensor.shape)}"
            )
    for key in state_dict:
        if key not in expected:
            raise ImportProblem(
                f"the config {config_path} does not fit the checkpoint: the checkpoint has `{key}` {list(state_dict[key].shape)}, "
                "which the config's model does not"
            )
    module.load_state_dict({k: v.float() for k, v in state_dict.items()}, strict=True)
    module.eval()


def target_stems(config):
    """MSST's prefer_target_instrument: the target instrument alone, or every instrument."""
    training = config["training"]
    target = training.get("target_instrument")
    if target:
        return [str(target)]
    instruments = training.get("instruments")
    if not isinstance(instruments, (list, tuple)) or not instruments:
        raise ImportProblem("the config's training section has neither target_instrument nor a list of instruments")
    return [str(s) for s in instruments]


def secondary_stem(primary):
    """Name of mixture − primary for a single-target model. MSST's --extract_instrumental
    calls it `instrumental`; Mixdown names the rest of a vocals model `backing` (what the
    service publishes), and the rest of an instrumental model is its vocals."""
    if primary == "vocals":
        return "backing"
    if primary.lower() in ("other", "instrumental", "instrum", "accompaniment", "no_vocals"):
        return "vocals"
    return "instrumental"


def _positive_int(section, key, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ImportProblem(f"config `{section}.{key}` must be a positive integer, got {value!r}")
    return value


def demix_settings(config):
    """The settings MSST's demix reads: chunk_size (inference overrides audio), num_overlap,
    batch_size (which also decides which chunks keep their fades), sample rate."""
    audio, inference = config["audio"], config["inference"]
    if "chunk_size" in inference:
        chunk_size = _positive_int("inference", "chunk_size", inference["chunk_size"])
    else:
        chunk_size = _positive_int("audio", "chunk_size", audio.get("chunk_size"))
    num_overlap = _positive_int("inference", "num_overlap", inference.get("num_overlap"))
    batch_size = _positive_int("inference", "batch_size", inference.get("batch_size", 1))
    if chunk_size // 10 < 1:
        raise ImportProblem(f"chunk_size {chunk_size} is too short for MSST's fades (chunk_size // 10 must be >= 1)")
    if inference.get("normalize") is True:
        raise ImportProblem(
            "the config sets inference.normalize: true (normalise by the whole song's mean and std), "
            "which needs the whole song before the first chunk; Mixdown streams, so such models are not supported"
        )
    sample_rate = _positive_int("audio", "sample_rate", audio.get("sample_rate", 44100))
    channels = audio.get("num_channels", 2)
    if channels != 2:
        raise ImportProblem(f"config audio.num_channels is {channels!r}: only stereo models are supported")
    return {"chunkSize": chunk_size, "numOverlap": num_overlap, "batchSize": batch_size, "sampleRate": sample_rate}


def stems_fields(stems):
    fields = {"stems": stems}
    if len(stems) == 1:
        fields["secondaryStem"] = secondary_stem(stems[0])
    return fields


def export_onnx(module, example, out_dir, name, output_names):
    os.environ.setdefault("TORCH_ONNX_EXPERIMENTAL_RUNTIME_TYPE_CHECK", "DISABLED")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.onnx")
    with torch.no_grad():
        torch.onnx.export(
            module,
            (example,),
            path,
            input_names=["spec"],
            output_names=output_names,
            dynamic_axes={"spec": {0: "batch"}, **{n: {0: "batch"} for n in output_names}},
            opset_version=17,
            do_constant_folding=True,
        )
    return f"{name}.onnx"
