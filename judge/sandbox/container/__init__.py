"""The container backend: one container per submission, through a Docker engine's API."""

from judge.sandbox.container.sandbox import ContainerConfig, ContainerSandbox

__all__ = ["ContainerConfig", "ContainerSandbox"]
