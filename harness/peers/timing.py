"""Timing of a peer's launches: the method of harness/timing.cpp, with torch.cuda.Event and
torch.cuda.CUDAGraph (docs/harness.md, "Timing"; docs/peers.md).

`percentile` and `rotation_copies` are plain Python (the CPU tests use them); `time_launches`
imports torch when called.
"""

from __future__ import annotations

import dataclasses
import math
import time


@dataclasses.dataclass
class TimingConfig:
    cold: bool = True
    warmup: int = 3
    min_samples: int = 10
    max_samples: int = 400
    max_rel_noise: float = 0.03
    timeout_s: float = 2.0
    pdl: bool = False  # not in the C++ interface yet: peers launch without PDL (pdl = 0)


@dataclasses.dataclass
class TimingResult:
    median_us: float = 0.0
    p10_us: float = 0.0
    p90_us: float = 0.0
    samples: int = 0
    copies: int = 1
    launches_per_sample: int = 0
    rel_noise: float = 0.0
    converged: bool = False
    graph: bool = False
    sm_mhz_before: float = 0.0
    sm_mhz_after: float = 0.0
    est_gpu_us: float = 0.0
    est_host_us: float = 0.0


def percentile(v, p: float) -> float:
    """harness/timing.cpp percentile: linear interpolation between order statistics."""
    if not v:
        return 0.0
    s = sorted(v)
    pos = p / 100.0 * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(len(s) - 1, lo + 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def rotation_copies(touched: int, per_copy: int, l2: int, budget: int) -> int:
    """harness/device_weights.cpp rotation_copies: copies x touched > 4x L2, capped by the budget."""
    if touched <= 0:
        return 1
    want = 4 * int(l2) // int(touched) + 1
    fit = max(1, int(budget) // int(per_copy)) if per_copy > 0 else want
    return int(max(1, min(want, fit)))


def sm_clock_mhz() -> float:
    """The SM clock NVML reports now (torch.cuda.clock_rate), 0 where it cannot be read. Ours
    measures clock64 against %globaltimer in a kernel; this is the driver's reading instead."""
    try:
        import torch

        return float(torch.cuda.clock_rate())
    except Exception:
        return 0.0


class _EventTimer:
    def __init__(self):
        import torch

        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def time_ms(self, stream, fn) -> float:
        import torch

        with torch.cuda.stream(stream):
            self.start.record(stream)
            fn()
            self.end.record(stream)
        self.end.synchronize()
        return self.start.elapsed_time(self.end)


def _capture(launch, count: int, copies: int, stream):
    """A CUDA graph of `count` launches, launch i on copy i % copies."""
    import torch

    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g, stream=stream, capture_error_mode="thread_local"):
            for i in range(count):
                launch(i % copies)
    except Exception as e:
        raise RuntimeError(
            f"the launch could not be captured into a CUDA graph ({e}): "
            "a launch must not allocate outside the graph's pool or synchronize"
        ) from e
    return g


def _estimate_launch(launch, copies: int, stream, ev: _EventTimer):
    """One launch's GPU time (least of 5 replays of a graph of 3 launches) and host enqueue
    time (median of 5 x 3 plain launches, the GPU not waited for): harness/timing.cpp."""
    import torch

    k_probe, k_reps = 3, 5
    host_us = []
    for _ in range(k_reps):
        with torch.cuda.stream(stream):
            t0 = time.perf_counter()
            for i in range(k_probe):
                launch(i % copies)
            t1 = time.perf_counter()
        host_us.append((t1 - t0) * 1e6 / k_probe)
        stream.synchronize()
    probe = _capture(launch, k_probe, copies, stream)
    best_ms = min(ev.time_ms(stream, probe.replay) for _ in range(k_reps))
    del probe
    return best_ms * 1000.0 / k_probe, percentile(host_us, 50)


def time_launches(launch, copies: int, cfg: TimingConfig, stream=None, graph_threshold_us: float = 20.0) -> TimingResult:
    """harness/timing.cpp time_launches. `launch(copy)` enqueues one launch on the current
    stream, on weight copy `copy`; it must not synchronize (it is captured into graphs)."""
    import torch

    r = TimingResult(copies=max(1, int(copies)))
    if stream is None:
        stream = torch.cuda.current_stream()
    ev = _EventTimer()
    r.sm_mhz_before = sm_clock_mhz()
    # Warm-up (JIT, module load, allocator, clocks), then a rough single-launch time.
    with torch.cuda.stream(stream):
        for i in range(max(1, cfg.warmup)):
            launch(i % r.copies)
    stream.synchronize()
    est_us, host_us = _estimate_launch(launch, r.copies, stream, ev)
    r.est_gpu_us, r.est_host_us = est_us, host_us
    # A plain batch keeps the GPU busy only while the host enqueues faster than the GPU runs.
    use_graph = est_us < graph_threshold_us or host_us > 0.5 * est_us

    us = []
    t0 = time.monotonic()

    def done() -> bool:
        if len(us) >= cfg.max_samples:
            return True
        if len(us) < cfg.min_samples:
            return time.monotonic() - t0 > 4 * cfg.timeout_s  # hard stop
        med = percentile(us, 50)
        r.rel_noise = (percentile(us, 90) - percentile(us, 10)) / med if med > 0 else 0.0
        r.converged = r.rel_noise <= cfg.max_rel_noise
        return r.converged or time.monotonic() - t0 > cfg.timeout_s

    if use_graph:
        # ~2 ms of launches per replay, and at least one pass over every copy.
        count = int(math.ceil(2000.0 / max(est_us, 0.5)))
        count = max(count, r.copies)
        count = ((count + r.copies - 1) // r.copies) * r.copies
        count = min(count, max(r.copies, 20000))
        graph = _capture(launch, count, r.copies, stream)
        with torch.cuda.stream(stream):
            for _ in range(max(1, cfg.warmup)):
                graph.replay()
        stream.synchronize()
        r.graph = True
        r.launches_per_sample = count
        while not done():
            us.append(ev.time_ms(stream, graph.replay) * 1000.0 / count)
        del graph
    else:
        # A sample is a batch of launches (~200 us) behind an untimed lead-in launch.
        batch = min(16, max(1, int(math.ceil(200.0 / max(est_us, 1.0)))))
        r.launches_per_sample = batch
        i = 0
        while not done():
            with torch.cuda.stream(stream):
                launch(i % r.copies)  # lead-in
            i += 1

            def run_batch():
                nonlocal i
                for _ in range(batch):
                    launch(i % r.copies)
                    i += 1

            us.append(ev.time_ms(stream, run_batch) * 1000.0 / batch)
    r.samples = len(us)
    r.median_us = percentile(us, 50)
    r.p10_us = percentile(us, 10)
    r.p90_us = percentile(us, 90)
    r.sm_mhz_after = sm_clock_mhz()
    return r
