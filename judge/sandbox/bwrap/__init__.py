"""The bubblewrap backend: namespaces, cgroups and the warm fork servers, on this host."""

from judge.sandbox.bwrap.sandbox import BwrapConfig, BwrapSandbox, python_runtime

__all__ = ["BwrapConfig", "BwrapSandbox", "python_runtime"]
