"""Stand-in for fairseq (not installable here: PyPI only, and its C extensions). RVC's pipeline uses
one function of it, `checkpoint_utils.load_model_ensemble_and_task`, to load `hubert_base.pt`."""
