"""Sandboxes that run one submission each, then are gone."""

from __future__ import annotations

from judge.sandbox.bwrap import BwrapConfig, BwrapSandbox, SandboxUnavailable

__all__ = ["BwrapConfig", "BwrapSandbox", "SandboxUnavailable", "make_sandbox"]


def make_sandbox(kind: str = "bwrap") -> BwrapSandbox:
    if kind in ("bwrap", "local", ""):
        return BwrapSandbox()
    raise SandboxUnavailable(f"unknown sandbox kind {kind!r} (known: bwrap)")
