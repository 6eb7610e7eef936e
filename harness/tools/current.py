"""results/<experiment>/CURRENT: the run the docs cite, one per GPU model (docs/harness.md,
"Results"); the reading harness/current.cpp does, for the Python tools (standard library only).

One line per GPU, `<GPU> <run folder>`: GPU is the run's device name as its folder name writes it
(run.json's device.name with every character but letters, digits, '-' and '.' as '_':
NVIDIA_H100_80GB_HBM3). A line of a run folder alone takes its GPU from the run's run.json. Blank
lines and lines starting with '#' are skipped. Refused, with the file and line: a line of three or
more words, a GPU not written so, a run folder that is not there, a run.json without a device name
or of another GPU than the line names, a second run of one GPU, a file that names no run.
"""
import json
import os
import re


class CurrentError(Exception):
    """A CURRENT file that does not parse or names a run that is not there (message: file:line)."""


def gpu_key(device_name):
    """"NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3" (harness/device_info.cpp sanitize_name)."""
    return re.sub(r"[^A-Za-z0-9.-]", "_", device_name)


def parse_line(text, where):
    """(gpu or None, run) of one line, None for a blank or comment line."""
    words = text.split()
    if not words or words[0].startswith("#"):
        return None
    if len(words) > 2:
        raise CurrentError("%s: '%s' has %d words; a line is `<GPU> <run folder>` (or the run "
                           "folder alone)" % (where, text.strip(), len(words)))
    gpu, run = (words[0] if len(words) == 2 else None), words[-1]
    if gpu is not None and gpu_key(gpu) != gpu:
        raise CurrentError("%s: GPU '%s' is not written as run folders write it ('%s')"
                           % (where, gpu, gpu_key(gpu)))
    if "/" in run or run in (".", ".."):
        raise CurrentError("%s: '%s' is not the name of a run folder" % (where, run))
    return gpu, run


def read_current(exp_dir, label=None):
    """[(gpu, device name, run folder name, run folder path, line)] of exp_dir/CURRENT, in file
    order. label names the file in messages (default: its path)."""
    path = os.path.join(exp_dir, "CURRENT")
    label = label or path
    out, line_of = [], {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for number, text in enumerate(lines, 1):
        where = "%s:%d" % (label, number)
        parsed = parse_line(text, where)
        if parsed is None:
            continue
        gpu, run = parsed
        run_dir = os.path.join(exp_dir, run)
        if not os.path.isdir(run_dir):
            raise CurrentError("%s: names '%s', which is not in %s" % (where, run, exp_dir))
        try:
            with open(os.path.join(run_dir, "run.json")) as f:
                name = json.load(f).get("device", {}).get("name")
        except (OSError, ValueError, AttributeError) as e:
            raise CurrentError("%s: %s/run.json cannot be read: %s" % (where, run_dir, e))
        if not isinstance(name, str) or not name:
            raise CurrentError("%s: %s/run.json has no device.name (the GPU it was timed on)"
                               % (where, run_dir))
        key = gpu_key(name)
        gpu = gpu or key
        if gpu != key:
            raise CurrentError("%s: names GPU %s, but run %s was timed on '%s' (%s)"
                               % (where, gpu, run, name, key))
        if gpu in line_of:
            raise CurrentError("%s: a second run of GPU %s (line %d names one); one run per GPU"
                               % (where, gpu, line_of[gpu]))
        line_of[gpu] = number
        out.append((gpu, name, run, run_dir, number))
    if not out:
        raise CurrentError("%s names no run (a line is `<GPU> <run folder>`)" % label)
    return out


def current_files(results_root):
    """The experiments under results_root that have a CURRENT file, sorted."""
    if not os.path.isdir(results_root):
        return []
    return sorted(d for d in os.listdir(results_root)
                  if os.path.isfile(os.path.join(results_root, d, "CURRENT")))
