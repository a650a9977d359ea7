"""Runs an upstream separation tool's own command line for `bench:separation --upstream`, on a
fixed number of torch threads, with stand-ins for the imports that only serve its training,
plotting or progress output (shims/, appended to the end of sys.path so an installed package
always wins over its stand-in).

    python3 run_upstream.py --threads N -m demucs.separate ARGS...      (a module of DIR on PYTHONPATH)
    python3 run_upstream.py --threads N path/to/inference.py ARGS...    (a script; its folder goes first on sys.path)
"""

import os
import runpy
import sys


def main():
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[0] != "--threads":
        sys.exit(__doc__)
    threads = int(argv[1])
    rest = argv[2:]
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "shims"))

    import torch

    torch.set_num_threads(threads)
    if rest[0] == "-m":
        module, args = rest[1], rest[2:]
        sys.argv = [module] + args
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        script, args = os.path.abspath(rest[0]), rest[1:]
        sys.path.insert(0, os.path.dirname(script))
        sys.argv = [script] + args
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
