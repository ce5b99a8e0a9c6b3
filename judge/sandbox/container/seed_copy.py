"""Copies the image's seed of the compilation cache into the cache volume (run as
`python -I -S -c THIS SEED CACHE` in a container of the sandbox image, the volume writable;
the judge reads its one line of JSON on stdout). Standalone: it imports nothing of the judge,
and the build machine loads it as a module for `fingerprint` alone.

The seed is what the judge's own warm-ups compiled when the image was built (deploy/
xla_seed.py), with the CPU it was compiled on. XLA compiles for the CPU it runs on, and the
cache's keys do not say which: executables of another CPU could use instructions this one
lacks. So the seed is copied only where this machine's CPU is the build machine's (same
vendor, model and flags); elsewhere nothing is copied and the judge fills the cache itself.
Files already in the volume are kept (another judge may have copied or filled them).
"""

import hashlib
import json
import os
import shutil
import sys


def fingerprint(cpuinfo_text):
    """The CPU as XLA's code generation sees it: vendor, family, model and feature flags of
    the first processor (the others are the same)."""
    fields: dict[str, str] = {}
    for line in cpuinfo_text.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if not name and fields:
            break  # the end of the first processor's block
        if name in ("vendor_id", "cpu family", "model", "flags", "Features", "CPU implementer",
                    "CPU architecture", "CPU variant", "CPU part"):
            value = value.strip()
            fields[name] = " ".join(sorted(value.split())) if name in ("flags", "Features") \
                else value
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def copy(seed, cache):
    with open(os.path.join(seed, "seed.json")) as f:
        manifest = json.load(f)
    with open("/proc/cpuinfo") as f:
        here = fingerprint(f.read())
    if manifest.get("cpu") != here:
        made = manifest.get("cpu")
        return {"kinds": [], "copied": 0, "skipped": f"CPU {here}, seed made on {made}"}
    source = os.path.join(seed, "cache")
    tag = os.urandom(6).hex()
    copied = 0
    for root, _dirs, files in os.walk(source):
        target = os.path.join(cache, os.path.relpath(root, source))
        os.makedirs(target, exist_ok=True)
        for name in files:
            dest = os.path.join(target, name)
            if os.path.exists(dest):
                continue
            # Written aside, then renamed: a sandbox reading the volume meanwhile sees a whole
            # entry or none. Aside under a name of this copy's own: the workers of a
            # deployment start together and may seed the same volume at once (each in a
            # container of its own, where both are process 1).
            part = f"{dest}.seeding-{tag}"
            shutil.copyfile(os.path.join(root, name), part)
            os.replace(part, dest)
            copied += 1
    return {"kinds": list(manifest.get("kinds", [])), "copied": copied, "skipped": ""}


if __name__ == "__main__":
    print(json.dumps(copy(sys.argv[1], sys.argv[2])))
