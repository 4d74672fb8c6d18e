"""Start the three services on loopback as real processes (for ``simulate``, tests, benchmarks)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sdckit.errors import ProtocolError
from sdckit.protocol._client import Client
from sdckit.protocol._crypto import SuiteName
from sdckit.protocol._keyfile import generate_key_file
from sdckit.protocol._spec import CollectionSpec
from sdckit.protocol.services._config import ROLES


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (chosen by the OS)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class LocalDeployment:
    """Shuffler, curator and analyst as child processes on 127.0.0.1, with fresh keys and tokens.

    Use as a context manager: the processes are stopped on exit, even after an error. Each role
    gets ``workdir/<role>/`` (key, config, SQLite store, logs).
    """

    workdir: Path
    suite: SuiteName = "x25519"
    batch_threshold: int = 100
    poll_seconds: float = 0.1
    max_body_bytes: int = 8 * 1024 * 1024
    min_batch: int = 0
    """Fewest users per forwarded batch (0: the batch threshold)."""
    options: dict[str, Any] = field(default_factory=dict)
    """More settings of the shuffler's config (e.g. ``at_close``, ``quarantine_after``)."""
    replicas: int = 1
    """Shuffler processes: ``shuffler``, then ``shuffler.1``, ``shuffler.2``, ... (one key, one
    ``store``, each its own port and local pool). More than one needs ``store``."""
    store: str = ""
    """The shuffler's ``store`` setting (``postgresql://...`` for replicas)."""
    startup_timeout: float = 120.0  # generous: a shared machine can take long to import
    admin_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    relay_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    urls: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def config_path(self, role: str) -> Path:
        return self.workdir / role / "config.json"

    @property
    def shufflers(self) -> list[str]:
        """The names of the shuffler processes (``shuffler`` first)."""
        return ["shuffler", *(f"shuffler.{i}" for i in range(1, self.replicas))]

    @property
    def names(self) -> list[str]:
        return ["curator", "analyst", *self.shufflers]

    def prepare(self) -> None:
        """Keys, ports and config files (0600: they hold the tokens)."""
        if self.replicas < 1 or (self.replicas > 1 and not self.store):
            raise ProtocolError(
                "replicas >= 1, and more than one shuffler needs a shared store (postgresql://...)"
            )
        self.workdir = Path(self.workdir)
        ports = {name: free_port() for name in self.names}
        self.urls = {name: f"http://127.0.0.1:{ports[name]}" for name in self.names}
        for role in ROLES:
            d = self.workdir / role
            d.mkdir(parents=True, exist_ok=True)
            if not (d / "key.json").exists():
                generate_key_file(d / "key.json", suite=self.suite)
        for name in self.shufflers[1:]:  # replicas are one shuffler: the same keys
            d = self.workdir / name
            d.mkdir(parents=True, exist_ok=True)
            for suffix in ("", ".pub", ".verify"):
                src = self.workdir / "shuffler" / f"key.json{suffix}"
                (d / f"key.json{suffix}").write_bytes(src.read_bytes())
                os.chmod(d / f"key.json{suffix}", src.stat().st_mode & 0o777)
        for name in self.names:
            d = self.workdir / name
            cfg: dict[str, Any] = {
                "role": name.split(".")[0],
                "key_file": "key.json",
                "data_dir": "data",
                "admin_token": self.admin_token,
                "relay_token": self.relay_token,
                "host": "127.0.0.1",
                "port": ports[name],
                "max_body_bytes": self.max_body_bytes,
            }
            if name.startswith("shuffler"):
                cfg.update(
                    curator_url=self.urls["curator"],
                    analyst_url=self.urls["analyst"],
                    curator_verify_key=self.verify_key("curator"),
                    analyst_verify_key=self.verify_key("analyst"),
                    batch_threshold=self.batch_threshold,
                    min_batch=self.min_batch,
                    poll_seconds=self.poll_seconds,
                    forward_max_bytes=min(4 * 1024 * 1024, self.max_body_bytes),
                    **({"store": self.store} if self.store else {}),
                )
                cfg.update(self.options)  # may also redirect the hops (e.g. through a proxy)
            path = self.config_path(name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(cfg, fh, indent=2)

    def verify_key(self, role: str) -> str:
        """The Ed25519 verification key of ``role`` (``key.json.verify``), as devices pin it."""
        return (self.workdir / role / "key.json.verify").read_text().strip()

    def client(self, collection: str, *, invite: str | None = None, **kw: Any) -> Client:
        """A device's :class:`Client` (shuffler URL and pinned verification keys filled in)."""
        return Client(
            shuffler_url=self.urls["shuffler"],
            collection=collection,
            curator_verify_key=self.verify_key("curator"),
            analyst_verify_key=self.verify_key("analyst"),
            invite=invite,
            **kw,
        )

    def public_key(self, role: str) -> str:
        """The HPKE public key of ``role`` (``key.json.pub``), as the spec pins it."""
        return (self.workdir / role / "key.json.pub").read_text().strip()

    def create(self, spec: CollectionSpec, *, enrolment: str = "tokens", pin_keys: bool = True) -> None:
        """Create ``spec`` at the curator and register it at the shuffler; with ``pin_keys`` the
        analyst's and the shuffler's HPKE keys are pinned in the spec (the curator adds its own)."""
        if pin_keys:
            for role in ("analyst", "shuffler"):
                spec = spec.with_key(role, self.public_key(role))
        with self.admin() as admin:
            body = {**spec.to_dict(), "count_check": spec.count_check}  # said, even when off
            r = admin.put(f"{self.urls['curator']}/admin/v1/collections/{spec.id}", json=body)
            r.raise_for_status()
            if spec.count_check:  # the analyst counts round 1 too (issue 37)
                r = admin.put(f"{self.urls['analyst']}/admin/v1/collections/{spec.id}/witness", json=r.json())
                r.raise_for_status()
            r = admin.put(
                f"{self.urls['shuffler']}/admin/v1/collections/{spec.id}", json={"enrolment": enrolment}
            )
            r.raise_for_status()

    def invites(self, collection: str, n: int) -> list[str]:
        """Mint ``n`` one-time invites at the shuffler."""
        with self.admin() as admin:
            r = admin.post(
                f"{self.urls['shuffler']}/admin/v1/collections/{collection}/invites", json={"n": n}
            )
            r.raise_for_status()
            return list(r.json()["invites"])

    def spawn(self, role: str) -> None:
        """Start one role's process (without waiting for it); a replica by its name (``shuffler.1``)."""
        d = self.workdir / role
        with open(d / "process.out", "ab") as out:  # the child keeps its own copy of the descriptor
            self.processes[role] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "sdckit.protocol.services",
                    role.split(".")[0],
                    "--config",
                    str(self.config_path(role)),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def wait_healthy(self, role: str) -> None:
        """Wait until ``/healthz`` of ``role`` answers; :class:`ProtocolError` if it exits or times out."""
        proc = self.processes[role]
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = (self.workdir / role / "process.out").read_text(errors="replace")[-2000:]
                raise ProtocolError(f"the {role} exited at start (code {proc.returncode}): {tail}")
            try:
                if httpx.get(f"{self.urls[role]}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise ProtocolError(f"the {role} did not answer on {self.urls[role]} within {self.startup_timeout} s")

    def start(self, role: str) -> None:
        """Start (or restart) one role and wait until it answers."""
        self.spawn(role)
        self.wait_healthy(role)

    def __enter__(self) -> LocalDeployment:
        self.prepare()
        try:
            for name in self.names:  # start all at once; imports dominate start-up
                self.spawn(name)
            for name in self.names:
                self.wait_healthy(name)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def kill(self, role: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to one role's process (SIGKILL by default) and reap it."""
        proc = self.processes.get(role)
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
            proc.wait(timeout=10)

    def cpu_seconds(self, role: str) -> float:
        """CPU time (user + system) the process of ``role`` has used so far (Linux ``/proc``)."""
        pid = self.processes[role].pid
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop_role(self, role: str, timeout: float = 5.0) -> None:
        proc = self.processes.pop(role, None)
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()  # uvicorn shuts down gracefully on SIGTERM
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)

    def stop(self) -> None:
        """Stop every process this deployment started."""
        for role in list(self.processes):
            self.stop_role(role)

    def admin(self) -> httpx.Client:
        """An HTTP client with the admin token."""
        return httpx.Client(headers={"authorization": f"Bearer {self.admin_token}"}, timeout=120.0)
