"""Peers: public low-bit GEMM kernels timed as rows beside ours (docs/peers.md).

Nothing here imports torch or a peer package at import time: `runner.py list` and the CPU
tests run on a plain Python 3.
"""
