"""Stand-in for parselmouth, which RVC's pipeline imports for f0 methods other than RMVPE (not installable
here). The bench runs RMVPE; any use of this module is an error, never a silent substitute."""


def __getattr__(name):
    raise ImportError(f"parselmouth.{name}: parselmouth is not installed (bench:voice --upstream runs RVC with f0 method rmvpe)")
