"""Starts a real kvstore service for the tests: the JVM the Maven build hands over
(``KVSTORE_TEST_JAVA`` + ``KVSTORE_TEST_CLASSPATH``), else the built jar under kv-store-service/target."""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
ADMIN_TOKEN = "pytest-admin"
START_TIMEOUT = float(os.environ.get("KVSTORE_TEST_START_TIMEOUT", "240"))


def _java() -> str:
    if os.environ.get("KVSTORE_TEST_JAVA"):
        return os.environ["KVSTORE_TEST_JAVA"]
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    for candidate in sorted(glob.glob("/usr/lib/jvm/*25*/bin/java"), reverse=True):
        return candidate
    return shutil.which("java") or "java"


def launch_command(quick_start: bool = True) -> list:
    """The command that runs the service's main class, or None when neither classpath nor jar is there.
    ``quick_start`` trades peak speed for start-up time (C1 only, serial GC): right for tests, not benchmarks,
    which run the service with the JVM options ``./kvstore run`` gives it (configs/jvm.options, or the file
    ``KVSTORE_JVM_OPTIONS`` names)."""
    java = _java()
    base = [java, "--enable-native-access=ALL-UNNAMED"]
    if quick_start:
        base += ["-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    else:
        base.append("@" + os.environ.get("KVSTORE_JVM_OPTIONS", str(REPO / "configs/jvm.options")))
    cp = os.environ.get("KVSTORE_TEST_CLASSPATH")
    if cp:
        return base + ["-cp", cp, "io.kvstore.service.KvStoreApplication"]
    jars = [j for j in glob.glob(str(REPO / "kv-store-service/target/kv-store-service-*.jar")) if "original" not in j]
    if jars:
        return base + ["-jar", jars[0]]
    return None


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(n: int) -> list:
    """``n`` distinct ports free now: bound all at once, so two calls in a row cannot hand out the same one."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def port_taken(error: Exception) -> bool:
    """Whether a service failed to start because a port it was given was taken meanwhile (another process
    bound it between free_ports and the service's own bind): worth a try on other ports."""
    text = str(error)
    return "was already in use" in text or ("cannot open tcp://" in text and "Errno 48" in text)


class Service:
    """One kvstore process on a free port with its own data directory; restartable on the same data."""

    def __init__(self, data_dir: Path, extra_args=(), lease_timeout="6s", local=True, quick_start=True):
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.extra_args = list(extra_args)
        self.lease_timeout = lease_timeout
        self.local = local
        self.quick_start = quick_start
        self.proc = None
        self.started_once = False
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.data_dir / "service.log"

    def args(self) -> list:
        defaults = [
            f"--server.port={self.port}",
            "--server.address=127.0.0.1",
            f"--kvstore.data-dir={self.data_dir}",
            f"--kvstore.admin-token={ADMIN_TOKEN}",
            f"--kvstore.lease-timeout={self.lease_timeout}",
            "--kvstore.tiers.dram.capacity=64MB",
            "--kvstore.tiers.dram.slab-size=4MB",
            "--kvstore.tiers.nvme.capacity=64MB",
            "--kvstore.tiers.nvme.file-size=32MB",
            "--kvstore.tiers.nvme.slab-size=4MB",
            "--spring.main.banner-mode=off",
            f"--kvstore.local.enabled={str(self.local).lower()}",
        ]
        # an extra argument replaces the default of the same property
        names = {a.split("=", 1)[0] for a in self.extra_args}
        return [a for a in defaults if a.split("=", 1)[0] not in names] + self.extra_args

    def start(self) -> "Service":
        """Starts the process and waits until it answers. A first start whose HTTP port was taken meanwhile
        tries again on another (a restart keeps its port: clients hold its URL)."""
        for attempt in range(3):
            try:
                return self._start()
            except RuntimeError as e:
                if self.started_once or attempt == 2 or "was already in use" not in str(e):
                    raise
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"
        raise AssertionError("unreachable")

    def _start(self) -> "Service":
        cmd = launch_command(self.quick_start)
        if cmd is None:
            raise RuntimeError("no kvstore to start: set KVSTORE_TEST_CLASSPATH or build kv-store-service's jar")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd + self.args(), stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO))
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kvstore exited with {self.proc.returncode} while starting:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/actuator/health", timeout=5) as r:
                    if r.status == 200:
                        self.started_once = True
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"kvstore did not answer within {START_TIMEOUT} s:\n{self.log_tail()}")

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            if kill:
                self.proc.kill()
            else:
                self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def admin(self, method: str, path: str, body=None) -> dict:
        """An admin API call with the test's admin token."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {ADMIN_TOKEN}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
            return json.loads(text) if text else {}
