def beartype(fn=None, **_conf):
    return fn if fn is not None else (lambda f: f)
