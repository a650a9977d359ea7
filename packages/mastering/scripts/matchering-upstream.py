"""Runs upstream Matchering on one target/reference pair and writes its default (limited) result
as a 32-bit float WAV: the reference the exactness test compares Mixdown's implementation with.

usage: PYTHONPATH=<matchering checkout> /usr/bin/python3 matchering-upstream.py TARGET REFERENCE OUT [MAX_PIECE_SECONDS]
"""
import sys

import matchering as mg

target, reference, out = sys.argv[1:4]
config = mg.Config(max_piece_size=float(sys.argv[4])) if len(sys.argv) > 4 else mg.Config()
mg.process(target=target, reference=reference, results=[mg.Result(out, "FLOAT")], config=config)
