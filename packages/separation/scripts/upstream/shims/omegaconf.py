class OmegaConf:
    @staticmethod
    def load(*_args, **_kwargs):
        raise ImportError("omegaconf is not installed (MSST reads only its HTDemucs configs with it)")
