#!/usr/bin/env python3
"""Peers: the best public low-bit GEMM kernels, checked and timed as rows beside ours.

    python3 harness/peers/runner.py list               # the peers, as a JSON list
    python3 harness/peers/runner.py run PROBLEMS.json  # append their rows to the run's CSV
    python3 harness/peers/runner.py plan PROBLEMS.json # the (peer, problem) pairs run would run
    python3 harness/peers/runner.py profile PROBLEMS.json  # each pair launched once, profiled

kbit-harness calls `run` after its own rows with a problems JSON (docs/peers.md has the
interface); every (problem, peer) that the peer supports becomes one row of results.csv in our
columns, and the run's status goes to status_path. Exit 0 also when a peer is unavailable or
fails its check (rows and status entries say so); exit 2 for a malformed problems JSON or an
unknown peer name. Nothing imports torch or a peer's package until a real peer runs.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
import os
import platform
import sys
import time
import traceback

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from harness.peers.check import Problem, check_torch, gemm_bound, make_activations  # noqa: E402
from harness.peers.timing import TimingConfig, rotation_copies, time_launches  # noqa: E402

EXIT_OK, EXIT_BAD_INPUT = 0, 2

# harness/results.cpp result_columns(), in order.
COLUMNS = [
    "experiment", "shape", "M", "N", "K_dim", "k_bits", "dtype", "variant", "median_us",
    "p10_us", "p90_us", "samples", "gb_per_s", "tflops", "floor_us", "frac_of_floor",
    "speedup_vs_baseline", "check", "max_err_over_bound", "family", "l2", "copies",
    "launches_per_sample", "pdl", "sm_mhz_before", "sm_mhz_after", "rel_noise", "experts",
    "active_experts", "codebook", "config", "error", "device", "weights_source",
]  # fmt: skip


# harness/weight_format.hpp weight_format_names(): what a problem's "format" may be.
from harness.tools.weight_format import WEIGHT_FORMATS  # noqa: E402


class InputError(Exception):
    """A malformed problems JSON or an unknown peer (exit 2)."""


def _log(msg: str) -> None:
    print(f"peers: {msg}", file=sys.stderr, flush=True)


def _debug() -> bool:
    return os.environ.get("KBIT_PEERS_DEBUG", "0") not in ("", "0")


# ---------------------------------------------------------------------------------------------
# The registry


def real_peers():
    from harness.peers.humming_awq_peer import HummingAwqPeer
    from harness.peers.humming_peer import HummingPeer
    from harness.peers.tinygemm_peer import TinygemmPeer

    return [
        HummingPeer(4, 128),
        HummingPeer(4, 32),
        HummingPeer(2, 128),
        HummingPeer(3, 128),
        HummingPeer(5, 128),
        HummingAwqPeer(128),
        HummingAwqPeer(64),
        HummingAwqPeer(32),
        TinygemmPeer(128),
        TinygemmPeer(32),
    ]


def unsupported_reason(peer, p):
    """Why `peer` does not run problem `p` (None: it does). A peer runs on the problems of its
    own weight format only (its `formats`, kbit by default): a row is labelled with the format
    (its codebook column), so a kbit peer's row on an AWQ problem would be filed under the wrong
    weights."""
    formats = getattr(peer, "formats", ("kbit",))
    if p.format not in formats:
        return f"format {p.format} not {' or '.join(formats)}"
    return peer.unsupported_reason(p)


def test_peers():
    from harness.peers.fake_peer import FakePeer

    return [FakePeer("ok"), FakePeer("zero"), FakePeer("raises")]


def registry(with_test_peers: bool) -> dict:
    peers = real_peers() + (test_peers() if with_test_peers else [])
    return {p.name: p for p in peers}


def describe(peer) -> dict:
    return {
        "name": peer.name,
        "description": peer.description,
        "k_bits": list(peer.k_bits),
        "dtypes": list(peer.dtypes),
        "moe": bool(peer.moe),
        "bits_per_weight": float(peer.bits_per_weight),
        "package": peer.package,
    }


# ---------------------------------------------------------------------------------------------
# The problems JSON


@dataclasses.dataclass
class CheckConfig:
    enabled: bool = True
    seed: int = 1234
    max_rows: int = 16


@dataclasses.dataclass
class Spec:
    experiment: str
    run_dir: str
    csv: str
    status_path: str
    peers: list
    test_peers: bool
    timing: TimingConfig
    l2_bytes: int
    rotation_budget_bytes: int
    check: CheckConfig
    codebook: str
    problems: list
    device: str = ""  # the rows' device column: "<index on the host> <UUID>"


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(float(v))


def _get(obj, key, kind, where, default=None, required=False, check=None, limit=""):
    if key not in obj:
        if required:
            raise InputError(f"{where}: '{key}' is missing")
        return default
    v = obj[key]
    ok = {
        "str": lambda x: isinstance(x, str),
        "int": _is_int,
        "num": _is_num,
        "bool": lambda x: isinstance(x, bool),
    }[kind](v)
    if not ok:
        raise InputError(f"{where}: '{key}' = {json.dumps(v)} is not a {kind}")
    if check is not None and not check(v):
        raise InputError(f"{where}: '{key}' = {json.dumps(v)} {limit}")
    return float(v) if kind == "num" else v


def parse_problem(obj, i: int) -> Problem:
    where = f"problems[{i}]"
    if not isinstance(obj, dict):
        raise InputError(f"{where} is not an object")
    shape = _get(obj, "shape", "str", where, required=True, check=lambda v: v != "", limit="must not be empty")
    M = _get(obj, "M", "int", where, required=True, check=lambda v: v >= 1, limit="must be at least 1")
    N = _get(obj, "N", "int", where, required=True, check=lambda v: v >= 1, limit="must be at least 1")
    K = _get(obj, "K_dim", "int", where, required=True, check=lambda v: v >= 1, limit="must be at least 1")
    k = _get(obj, "k_bits", "int", where, required=True, check=lambda v: 2 <= v <= 5, limit="must be in 2..5")
    dtype = _get(obj, "dtype", "str", where, required=True, check=lambda v: v in ("fp16", "bf16"),
                 limit="must be fp16 or bf16")  # fmt: skip
    floor_us = _get(obj, "floor_us", "num", where, 0.0, check=lambda v: v >= 0, limit="must be >= 0")
    base_us = _get(obj, "baseline_us", "num", where, 0.0, check=lambda v: v >= 0, limit="must be >= 0")
    E = _get(obj, "experts", "int", where, 0, check=lambda v: v >= 0, limit="must be >= 0")
    off = obj.get("expert_offsets", [])
    if not isinstance(off, list) or not all(_is_int(x) for x in off):
        raise InputError(f"{where}: 'expert_offsets' = {json.dumps(off)} is not a list of integers")
    if E == 0 and off:
        raise InputError(f"{where}: 'expert_offsets' has {len(off)} entries but experts = 0 (dense)")
    if E > 0:
        if len(off) != E + 1:
            raise InputError(f"{where}: 'expert_offsets' has {len(off)} entries; experts = {E} needs {E + 1}")
        if off[0] != 0 or off[-1] != M or any(off[e + 1] < off[e] for e in range(E)):
            raise InputError(
                f"{where}: 'expert_offsets' must be non-decreasing from 0 to M = {M} (got {off[0]}..{off[-1]})"
            )
    fmt = _get(obj, "format", "str", where, "kbit", check=lambda v: v in WEIGHT_FORMATS,
               limit="must be one of " + ", ".join(WEIGHT_FORMATS))  # fmt: skip
    if fmt != "kbit" and k != 4:
        raise InputError(f"{where}: 'format' = {json.dumps(fmt)} holds 4-bit weights; k_bits = {k}")
    return Problem(shape, M, N, K, k, dtype, floor_us, base_us, E, tuple(off), fmt)


def parse_spec(obj) -> Spec:
    if not isinstance(obj, dict):
        raise InputError("the problems JSON is not an object")
    w = "problems JSON"
    csv = _get(obj, "csv", "str", w, required=True, check=lambda v: v != "", limit="must not be empty")
    status = _get(obj, "status_path", "str", w, required=True, check=lambda v: v != "", limit="must not be empty")
    tp = _get(obj, "test_peers", "bool", w, False)
    peers = obj.get("peers")
    if not isinstance(peers, list) or not all(isinstance(p, str) for p in peers):
        raise InputError(f"{w}: 'peers' = {json.dumps(peers)} is not a list of peer names")
    known = registry(tp)
    for p in peers:
        if p not in known:
            raise InputError(f"unknown peer '{p}'; the peers are: {', '.join(known)}")
    if len(set(peers)) != len(peers):
        raise InputError(f"{w}: 'peers' names a peer twice: {json.dumps(peers)}")
    t = obj.get("timing", {})
    if not isinstance(t, dict):
        raise InputError(f"{w}: 'timing' is not an object")
    tw = "timing"
    timing = TimingConfig(
        cold=_get(t, "cold", "bool", tw, True),
        warmup=_get(t, "warmup", "int", tw, 3, check=lambda v: v >= 0, limit="must be >= 0"),
        min_samples=_get(t, "min_samples", "int", tw, 10, check=lambda v: v >= 1, limit="must be >= 1"),
        max_samples=_get(t, "max_samples", "int", tw, 400, check=lambda v: v >= 1, limit="must be >= 1"),
        max_rel_noise=_get(t, "max_rel_noise", "num", tw, 0.03, check=lambda v: v > 0, limit="must be > 0"),
        timeout_s=_get(t, "timeout_s", "num", tw, 2.0, check=lambda v: v > 0, limit="must be > 0"),
        pdl=_get(t, "pdl", "bool", tw, False),
    )
    if timing.min_samples > timing.max_samples:
        raise InputError(f"timing: min_samples = {timing.min_samples} exceeds max_samples = {timing.max_samples}")
    c = obj.get("check", {})
    if not isinstance(c, dict):
        raise InputError(f"{w}: 'check' is not an object")
    check = CheckConfig(
        enabled=_get(c, "enabled", "bool", "check", True),
        seed=_get(c, "seed", "int", "check", 1234),
        max_rows=_get(c, "max_rows", "int", "check", 16, check=lambda v: v >= 1, limit="must be >= 1"),
    )
    probs = obj.get("problems")
    if not isinstance(probs, list):
        raise InputError(f"{w}: 'problems' = {json.dumps(probs)} is not a list")
    return Spec(
        experiment=_get(obj, "experiment", "str", w, "peers"),
        run_dir=_get(obj, "run_dir", "str", w, os.path.dirname(os.path.abspath(csv))),
        csv=csv,
        status_path=status,
        peers=peers,
        test_peers=tp,
        timing=timing,
        l2_bytes=_get(obj, "l2_bytes", "int", w, 52428800, check=lambda v: v > 0, limit="must be > 0"),
        rotation_budget_bytes=_get(obj, "rotation_budget_bytes", "int", w, 0, check=lambda v: v >= 0,
                                   limit="must be >= 0"),  # fmt: skip
        check=check,
        codebook=_get(obj, "codebook", "str", w, "nf"),
        problems=[parse_problem(p, i) for i, p in enumerate(probs)],
        device=_get(obj, "device", "str", w, ""),
    )


def load_spec(path: str) -> Spec:
    try:
        with open(path) as f:
            obj = json.load(f)
    except OSError as e:
        raise InputError(f"cannot read problems JSON '{path}': {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise InputError(f"problems JSON '{path}' is not JSON: {e}") from e
    return parse_spec(obj)


# ---------------------------------------------------------------------------------------------
# Rows (harness/results.cpp: the same columns, numbers and escaping)


def num(v: float, digits: int = 6) -> str:
    """C++ `ostream << setprecision(digits) << v` (general format), nan / inf as ours."""
    v = float(v)
    if not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return f"{v:.{digits}g}"


def csv_escape(f: str) -> str:
    """harness/results.cpp csv_escape: quote a field only if it holds , " CR or LF; quotes are
    doubled and line breaks become spaces."""
    if not any(c in f for c in ',"\n\r'):
        return f
    out = ['"']
    for c in f:
        if c == '"':
            out.append('"')
        out.append(" " if c in "\n\r" else c)
    out.append('"')
    return "".join(out)


def new_row(spec: Spec, p: Problem, peer) -> dict:
    return {
        "experiment": spec.experiment, "shape": p.shape, "M": p.M, "N": p.N, "K_dim": p.K_dim,
        "k_bits": p.k_bits, "dtype": p.dtype, "variant": peer.name, "median_us": 0.0,
        "p10_us": 0.0, "p90_us": 0.0, "samples": 0, "gb_per_s": 0.0, "tflops": 0.0,
        "floor_us": p.floor_us, "frac_of_floor": 0.0, "speedup_vs_baseline": 0.0, "check": "fail",
        "max_err_over_bound": 0.0, "family": "peer", "l2": "cold" if spec.timing.cold else "hot",
        "copies": 0, "launches_per_sample": 0, "pdl": 1 if spec.timing.pdl else 0,
        "sm_mhz_before": 0.0, "sm_mhz_after": 0.0, "rel_noise": 0.0,
        "experts": p.experts if p.moe else 0, "active_experts": p.active_experts if p.moe else 0,
        "codebook": "", "config": "", "error": "", "device": spec.device,
        # A peer draws its own N(0,1) weights (check.py make_weights), also where our rows of the
        # problem read a checkpoint's tensor (harness/config_weights.hpp).
        "weights_source": "normal",
    }  # fmt: skip


def row_fields(r: dict) -> list:
    return [
        r["experiment"], r["shape"], str(r["M"]), str(r["N"]), str(r["K_dim"]), str(r["k_bits"]),
        r["dtype"], r["variant"], num(r["median_us"]), num(r["p10_us"]), num(r["p90_us"]),
        str(r["samples"]), num(r["gb_per_s"]), num(r["tflops"]), num(r["floor_us"]),
        num(r["frac_of_floor"], 4), num(r["speedup_vs_baseline"], 4), r["check"],
        num(r["max_err_over_bound"], 4), r["family"], r["l2"], str(r["copies"]),
        str(r["launches_per_sample"]), str(r["pdl"]), num(r["sm_mhz_before"], 5),
        num(r["sm_mhz_after"], 5), num(r["rel_noise"], 3), str(r["experts"]),
        str(r["active_experts"]), r["codebook"], r["config"], r["error"], r["device"],
        r["weights_source"],
    ]  # fmt: skip


class CsvAppender:
    """Appends rows to the run's results.csv, flushed row by row (a crash keeps finished rows).
    A missing or empty file gets our header first; a file with another header is refused."""

    def __init__(self, path: str):
        self.path = path
        header = ",".join(COLUMNS)
        existing = ""
        if os.path.exists(path):
            with open(path, newline="") as f:
                existing = f.readline().rstrip("\r\n")
        if existing and existing != header:
            raise InputError(
                f"the CSV '{path}' has another header than the peers' columns:\n  {existing}\n  {header}"
            )
        try:
            self.f = open(path, "a", newline="")
        except OSError as e:
            raise InputError(f"cannot append to the CSV '{path}': {e.strerror}") from e
        if not existing:
            self.f.write(header + "\n")
            self.f.flush()

    def append(self, r: dict) -> None:
        self.f.write(",".join(csv_escape(x) for x in row_fields(r)) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def finish_row(r: dict, p: Problem) -> None:
    """gb_per_s, tflops, frac_of_floor and the speedup, from our bytes and flops."""
    if r["median_us"] <= 0:
        return
    nbytes, flops = p.cost()
    t = r["median_us"] * 1e-6
    r["gb_per_s"] = nbytes / t / 1e9
    r["tflops"] = flops / t / 1e12
    r["frac_of_floor"] = p.floor_us / r["median_us"]
    r["speedup_vs_baseline"] = p.baseline_us / r["median_us"] if p.baseline_us > 0 else 0.0


# ---------------------------------------------------------------------------------------------
# One (problem, peer)


@dataclasses.dataclass
class Context:
    spec: Spec
    stream: object = None

    @property
    def timing(self) -> TimingConfig:
        return self.spec.timing

    @property
    def check_cfg(self) -> CheckConfig:
        return self.spec.check


def measure_torch_peer(peer, p: Problem, ctx: Context, out: dict) -> dict:
    """Builds the peer's weights, checks one launch against the float64 reference of its own
    dequantized weights, then times it (L2-cold by weight copies) as harness/timing.cpp does.
    Fills `out` as it goes, so that a row that fails half way keeps what was known."""
    import torch

    if ctx.stream is None:
        ctx.stream = torch.cuda.Stream()
    built = None
    A = None
    try:
        with torch.cuda.stream(ctx.stream):
            A = make_activations(p, ctx.check_cfg.seed)
            built = peer.build(p, A, ctx)
            out["codebook"] = built.codebook
            out["config"] = built.config_text
            if ctx.check_cfg.enabled:
                built.poison()
                built.launch(0)  # the first call JIT-compiles anything not yet compiled
                ctx.stream.synchronize()
                bound = gemm_bound(p.dtype, p.K_dim, built.extra_additions, built.slices)
                out["check"] = check_torch(p, A, built.output(), built.deq_chunk, ctx.check_cfg.max_rows, bound)
            copies = 1
            if ctx.timing.cold:
                free, _ = torch.cuda.mem_get_info()
                have = built.per_copy_bytes * (built.cached_copies() - 1)
                budget = (free + have) // 2
                if ctx.spec.rotation_budget_bytes > 0:
                    budget = min(budget, ctx.spec.rotation_budget_bytes)
                copies = rotation_copies(built.touched_bytes, built.per_copy_bytes, ctx.spec.l2_bytes, budget)
                built.ensure_copies(copies)
            try:
                t = time_launches(built.launch, copies, ctx.timing, ctx.stream)
            except Exception as e:  # noqa: BLE001
                out["timing_error"] = f"timing: {type(e).__name__}: {e}"
                if _debug():
                    traceback.print_exc()
                return out
            out.update(
                median_us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us, samples=t.samples,
                copies=t.copies, launches_per_sample=t.launches_per_sample, rel_noise=t.rel_noise,
                sm_mhz_before=t.sm_mhz_before, sm_mhz_after=t.sm_mhz_after,
            )  # fmt: skip
            if _debug():
                _log(
                    f"  timing: est {t.est_gpu_us:.2f} us gpu, {t.est_host_us:.2f} us host, "
                    f"{'graph' if t.graph else 'plain'} x{t.launches_per_sample}, copies {t.copies}"
                )
            return out
    finally:
        if built is not None:
            built.free()
        del built, A
        torch.cuda.empty_cache()


def cuda_context_broken() -> str:
    """A sticky CUDA error (illegal address) breaks the context: nothing after it can run."""
    try:
        import torch

        torch.cuda.synchronize()
        return ""
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------------------------------------
# run


def _pkg_version(name: str):
    try:
        return importlib.metadata.version(name)
    except Exception:  # noqa: BLE001
        return None


def write_status(path: str, status: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(status, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def compile_all(plan, ctx: Context) -> None:
    jobs = {}
    for name, peer, supported in plan:
        try:
            for key, job in peer.compile_jobs(supported, ctx):
                jobs.setdefault(key, job)
        except Exception as e:  # noqa: BLE001  (each problem's run reports what is still wrong)
            _log(f"{name}: listing its kernels failed: {type(e).__name__}: {e}")
    if not jobs:
        return
    from concurrent.futures import ThreadPoolExecutor

    def one(job):
        label, fn = job
        t0 = time.monotonic()
        try:
            fn()
            return label, time.monotonic() - t0, None
        except Exception as e:  # noqa: BLE001
            return label, time.monotonic() - t0, f"{type(e).__name__}: {e}"

    t0 = time.monotonic()
    workers = max(1, min(len(jobs), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as ex:
        results = list(ex.map(one, jobs.values()))
    for label, secs, err in results:
        if err:
            _log(f"compile failed ({secs:.1f} s): {label}: {err[:400]}")
        elif _debug():
            _log(f"compiled in {secs:.1f} s: {label}")
    _log(f"{len(jobs)} JIT compile job(s) in {time.monotonic() - t0:.1f} s, {workers} at a time")


def run(spec: Spec) -> int:
    peers_by_name = registry(spec.test_peers)
    csv = CsvAppender(spec.csv)
    status = {
        "python": platform.python_version(),
        "torch": _pkg_version("torch"),
        "complete": False,
        "aborted": None,
        "peers": {},
    }
    for name in spec.peers:
        status["peers"][name] = {
            "ran": 0, "passed": 0, "failed": 0, "skipped": {}, "version": None, "unavailable": None,
        }  # fmt: skip
    write_status(spec.status_path, status)
    ctx = Context(spec)
    t_start = time.monotonic()
    # 1. What each peer supports, and whether it can run here.
    plan = []
    for name in spec.peers:
        peer = peers_by_name[name]
        st = status["peers"][name]
        supported = []
        for p in spec.problems:
            reason = unsupported_reason(peer, p)
            if reason:
                st["skipped"][reason] = st["skipped"].get(reason, 0) + 1
            else:
                supported.append(p)
        if not supported:
            continue
        version, unavailable = peer.availability()
        st["version"] = version
        if unavailable:
            st["unavailable"] = unavailable
            _log(f"{name}: unavailable: {unavailable}")
            continue
        if "device" not in status and peer.package != "test":
            try:
                import torch

                status["device"] = torch.cuda.get_device_name()
            except Exception:  # noqa: BLE001
                pass
        plan.append((name, peer, supported))
    # 2. Every JIT compile the run needs, in parallel, before any problem (never in a timing).
    compile_all(plan, ctx)
    # 3. Peer by peer (one peer's weights in memory at a time), problem by problem.
    for name, peer, supported in plan:
        if status["aborted"]:
            break
        st = status["peers"][name]
        for p in supported:
            r = new_row(spec, p, peer)
            t0 = time.monotonic()
            out = {}
            try:
                if hasattr(peer, "run"):
                    out = peer.run(p, ctx)
                else:
                    measure_torch_peer(peer, p, ctx, out)
                err = out.get("timing_error", "")
            except Exception as e:  # noqa: BLE001
                err = f"{type(e).__name__}: {e}"
                if _debug():
                    traceback.print_exc()
            for key in ("median_us", "p10_us", "p90_us", "samples", "copies", "launches_per_sample",
                        "rel_noise", "sm_mhz_before", "sm_mhz_after", "codebook", "config"):  # fmt: skip
                if key in out:
                    r[key] = out[key]
            res = out.get("check")
            if err:
                r["check"] = "fail"
                r["error"] = err
                if res is not None:
                    r["max_err_over_bound"] = res.max_err_over_bound
                st["failed"] += 1
            elif res is None:
                r["check"] = "skipped"
            else:
                r["check"] = "pass" if res.passed else "fail"
                r["max_err_over_bound"] = res.max_err_over_bound
                r["error"] = res.error_message()
                st["passed" if res.passed else "failed"] += 1
            if not err:
                finish_row(r, p)
            csv.append(r)
            st["ran"] += 1
            msg = (
                f"{name} {p.label()}: "
                + (f"{r['median_us']:.2f} us" if r["median_us"] > 0 else "no time")
                + f", check {r['check']}"
                + (f" ({r['max_err_over_bound']:.3g})" if res is not None else "")
                + (f": {r['error']}" if r["error"] else "")
                + f" [{time.monotonic() - t0:.1f} s]"
            )
            _log(msg)
            if _debug() and res is not None and res.detail:
                _log("  check: " + json.dumps(res.detail))
            if err and peer.package != "test":
                broken = cuda_context_broken()
                if broken:
                    status["aborted"] = f"{name} on {p.label()} broke the CUDA context: {broken}"
                    _log(status["aborted"])
                    break
        try:
            peer.release()
        except Exception:  # noqa: BLE001
            pass
        write_status(spec.status_path, status)
    csv.close()
    status["complete"] = status["aborted"] is None
    status["seconds"] = round(time.monotonic() - t_start, 1)
    write_status(spec.status_path, status)
    rows = sum(s["ran"] for s in status["peers"].values())
    passed = sum(s["passed"] for s in status["peers"].values())
    failed = sum(s["failed"] for s in status["peers"].values())
    skipped = sum(sum(s["skipped"].values()) for s in status["peers"].values())
    unavailable = [n for n, s in status["peers"].items() if s["unavailable"]]
    line = (
        f"peers: {rows} rows ({passed} pass, {failed} fail), {skipped} skipped"
        + (f", unavailable: {', '.join(unavailable)}" if unavailable else "")
        + (f", ABORTED: {status['aborted']}" if status["aborted"] else "")
        + f" -> {spec.csv}"
    )
    print(line, flush=True)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# plan and profile (kbit-harness profile, docs/harness.md "Profiling")


def plan(spec: Spec) -> dict:
    """The (peer, problem index) pairs that `run` would run, and why the others would not; the
    availability of each peer that has any (this may import its package, never launches)."""
    peers_by_name = registry(spec.test_peers)
    runs, skipped = [], {}
    for name in spec.peers:
        peer = peers_by_name[name]
        mine = []
        for i, p in enumerate(spec.problems):
            reason = unsupported_reason(peer, p)
            if reason:
                skipped.setdefault(name, {})
                skipped[name][reason] = skipped[name].get(reason, 0) + 1
            else:
                mine.append(i)
        if not mine:
            continue
        _, unavailable = peer.availability()
        if unavailable:
            skipped.setdefault(name, {})[f"unavailable: {unavailable}"] = len(mine)
            continue
        runs += [{"peer": name, "problem": i} for i in mine]
    return {"runs": runs, "skipped": skipped}


def _profiler(on: bool) -> None:
    """cudaProfilerStart / Stop: what `ncu --profile-from-start off` profiles in between."""
    import torch

    rt = torch.cuda.cudart()
    rc = rt.cudaProfilerStart() if on else rt.cudaProfilerStop()
    if rc not in (0, None) and int(getattr(rc, "value", rc)) != 0:
        raise RuntimeError(f"cudaProfiler{'Start' if on else 'Stop'} returned {rc}")


def profile(spec: Spec) -> int:
    """Each supported (peer, problem): build, one launch checked (it also JIT-compiles and loads
    the kernels), then one launch between cudaProfilerStart and cudaProfilerStop, nothing else in
    between. Exit 0 when every pair was launched so and passed its check, 1 otherwise (the log
    says why)."""
    peers_by_name = registry(spec.test_peers)
    ctx = Context(spec)
    todo = []
    for name in spec.peers:
        peer = peers_by_name[name]
        supported = [p for p in spec.problems if not unsupported_reason(peer, p)]
        if not supported:
            _log(f"{name}: no problem of its format and bit width")
            continue
        if not hasattr(peer, "build"):
            _log(f"{name}: has no launch of its own to profile")
            continue
        _, unavailable = peer.availability()
        if unavailable:
            _log(f"{name}: unavailable: {unavailable}")
            continue
        todo.append((name, peer, supported))
    if not todo:
        return 1
    import torch

    compile_all(todo, ctx)
    failed = 0
    ctx.stream = torch.cuda.Stream()
    for name, peer, supported in todo:
        for p in supported:
            built = None
            try:
                with torch.cuda.stream(ctx.stream):
                    A = make_activations(p, ctx.check_cfg.seed)
                    built = peer.build(p, A, ctx)
                    built.poison()
                    built.launch(0)
                    ctx.stream.synchronize()
                    verdict, passed = "not checked", True
                    if ctx.check_cfg.enabled:
                        bound = gemm_bound(p.dtype, p.K_dim, built.extra_additions, built.slices)
                        res = check_torch(p, A, built.output(), built.deq_chunk, ctx.check_cfg.max_rows, bound)
                        passed = res.passed
                        verdict = "check pass" if passed else "check FAIL: " + res.error_message()
                    torch.cuda.synchronize()
                    _profiler(True)
                    built.launch(0)
                    ctx.stream.synchronize()
                    _profiler(False)
                print(f"profile: {name} {p.label()}: {verdict}; {built.config_text}", flush=True)
                failed += 0 if passed else 1  # profiled all the same; the harness's line says so
            except Exception as e:  # noqa: BLE001
                failed += 1
                _log(f"{name} {p.label()}: {type(e).__name__}: {e}")
                if _debug():
                    traceback.print_exc()
            finally:
                if built is not None:
                    built.free()
        try:
            peer.release()
        except Exception:  # noqa: BLE001
            pass
    return 0 if failed == 0 else 1


USAGE = "usage: runner.py list | runner.py {run,plan,profile} PROBLEMS.json"


def main(argv) -> int:
    if len(argv) >= 1 and argv[0] == "list" and len(argv) == 1:
        print(json.dumps([describe(p) for p in real_peers()], indent=2))
        return EXIT_OK
    if len(argv) == 2 and argv[0] in ("run", "plan", "profile"):
        try:
            spec = load_spec(argv[1])
            if argv[0] == "plan":
                print(json.dumps(plan(spec), indent=1))
                return EXIT_OK
            return run(spec) if argv[0] == "run" else profile(spec)
        except InputError as e:
            print(f"runner.py {argv[0]}: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
    print(USAGE, file=sys.stderr)
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
