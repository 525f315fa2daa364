"""Fixtures: one real kvstore for the session, and fresh ones for tests that restart or kill it."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from service import Service, launch_command  # noqa: E402

import kvstore  # noqa: E402


def _require_launchable():
    if launch_command() is None:
        pytest.skip("no kvstore to start: run through Maven (./kvstore test) or build kv-store-service's jar")


@pytest.fixture(scope="session")
def service(tmp_path_factory):
    _require_launchable()
    svc = Service(tmp_path_factory.mktemp("kvstore-session")).start()
    yield svc
    svc.stop()
    print("\n--- kvstore session log (tail) ---\n" + svc.log_tail(20))


@pytest.fixture
def fresh_service(tmp_path):
    """A service of the test's own, for restarts and kills."""
    _require_launchable()
    svc = Service(tmp_path / "kvstore").start()
    yield svc
    svc.stop()


@pytest.fixture
def client(service):
    c = kvstore.KvStoreClient(service.url)
    yield c
    c.close()


@pytest.fixture
def ns():
    return "py-" + uuid.uuid4().hex[:12]
