def __getattr__(name):
    raise ImportError("matplotlib is not installed (only --draw_spectro uses it)")
