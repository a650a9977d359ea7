"""`load_model_ensemble_and_task` for RVC's `load_hubert`: the checkpoint's HuBERT built with
torchaudio's own implementation of fairseq's HuBERT (`wav2vec2_model`, group-norm extractor,
post-norm encoder, the sizes read from the checkpoint's weights), loaded through torchaudio's
fairseq key mapping with every key matched, and wrapped so that `extract_features(source,
padding_mask, output_layer)` and `final_proj` behave as fairseq's `HubertModel` does for RVC."""

import torch
from torchaudio.models import wav2vec2_model
from torchaudio.models.wav2vec2.utils.import_fairseq import _convert_state_dict


class HubertModel(torch.nn.Module):
    def __init__(self, model, final_proj):
        super().__init__()
        self.model = model
        self.final_proj = final_proj

    def extract_features(self, source, padding_mask=None, mask=False, ret_conv=False, output_layer=None):
        if padding_mask is not None and bool(padding_mask.any()):
            raise NotImplementedError("the stand-in takes no padded frames (RVC passes none)")
        layers, _ = self.model.extract_features(source, num_layers=output_layer)
        return layers[-1], padding_mask


def load_model_ensemble_and_task(filenames, arg_overrides=None, task=None, strict=True, suffix="", **_):
    checkpoint = torch.load(filenames[0], map_location="cpu")
    state = checkpoint["model"]
    cfg = checkpoint.get("cfg", {}).get("model", {})
    width = state["post_extract_proj.weight"].shape[0]
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layers."))
    pos = state["encoder.pos_conv.0.weight_v"]
    model = wav2vec2_model(
        extractor_mode="group_norm",
        extractor_conv_layer_config=None,
        extractor_conv_bias=False,
        encoder_embed_dim=width,
        encoder_projection_dropout=0.0,
        encoder_pos_conv_kernel=pos.shape[2],
        encoder_pos_conv_groups=width // pos.shape[1],
        encoder_num_layers=layers,
        encoder_num_heads=cfg.get("encoder_attention_heads", 12),
        encoder_attention_dropout=0.0,
        encoder_ff_interm_features=state["encoder.layers.0.fc1.weight"].shape[0],
        encoder_ff_interm_dropout=0.0,
        encoder_dropout=0.0,
        encoder_layer_norm_first=False,
        encoder_layer_drop=0.0,
        aux_num_out=None,
    )
    model.load_state_dict(_convert_state_dict(state), strict=True)
    final = state["final_proj.weight"]
    final_proj = torch.nn.Linear(final.shape[1], final.shape[0])
    final_proj.load_state_dict({"weight": final, "bias": state["final_proj.bias"]})
    return [HubertModel(model, final_proj)], cfg, None
