"""The adversarial corpus again, against a server whose workers judge in containers
(`TENSORJUDGE_SANDBOX=docker`) on a real Docker engine: every attack gets a verdict of its
declared set with the same host-side checks as with bubblewrap, and no sandbox container
outlives its submission. Outcomes go to artifacts/security/attacks-docker.json."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests import docker_engine
from tests.adversarial import harness
from tests.adversarial.conftest import PASSWORDS, AttackLog
from tests.adversarial.harness import Attack, Server
from tests.adversarial.test_corpus import test_attack as attack_checks

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial, pytest.mark.container]
ATTACKS = harness.corpus()


@pytest.fixture(scope="module")
def container_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    docker_engine.images()
    srv = harness.start_server(tmp_path_factory.mktemp("adversarial-docker"),
                               extra_env={"TENSORJUDGE_SANDBOX": "docker"})
    try:
        srv.attacker = harness.register(srv, "mallory", PASSWORDS["mallory"])
        srv.victim = harness.register(srv, "alice", PASSWORDS["alice"])
        srv.secrets["victim password"] = PASSWORDS["alice"]
        harness.warm_up(srv)
        yield srv
    finally:
        harness.stop_server(srv)


@pytest.fixture(scope="module")
def docker_attack_log() -> AttackLog:
    log = AttackLog()
    log.path = harness.ARTIFACTS / "attacks-docker.json"
    return log


def _containers_of(server: Server) -> list:
    owner = f"host:{socket.gethostname()}:{server.proc.pid}"
    return docker_engine.sandbox_containers(owner)


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_attack_in_a_container(attack: Attack, container_server: Server,
                               docker_attack_log: AttackLog) -> None:
    attack_checks(attack, container_server, docker_attack_log)
    deadline = time.monotonic() + 30
    while (left := _containers_of(container_server)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], f"sandbox containers left: {[c['Names'] for c in left]}"
