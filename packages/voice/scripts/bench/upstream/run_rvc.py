"""Runs RVC WebUI's own command line, `tools/infer_cli.py`, for `bench:voice --upstream`, on a fixed
number of torch threads, with stand-ins for imports the conversion does not use or that cannot be
installed here (shims/, appended to the end of sys.path so an installed package always wins).

    python3 run_rvc.py --threads N DIR ARGS...

DIR is a writable RVC checkout (RVC writes its fp32 configs into it on CPU, and reads
`assets/hubert/hubert_base.pt` relative to it); ARGS are infer_cli.py's own.
"""

import os
import runpy
import sys


def main():
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[0] != "--threads":
        sys.exit(__doc__)
    threads, upstream, args = int(argv[1]), os.path.abspath(argv[2]), argv[3:]
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "shims"))
    import torch

    torch.set_num_threads(threads)
    os.chdir(upstream)
    sys.path.insert(0, upstream)
    script = os.path.join(upstream, "tools", "infer_cli.py")
    sys.argv = [script] + args
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
