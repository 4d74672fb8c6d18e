"""A throwaway PostgreSQL cluster in a temporary folder (tests, benchmarks, a developer's machine).

Debian's server binaries (``initdb``, ``pg_ctl``) are found on ``PATH`` or under
``/usr/lib/postgresql/<version>/bin``. PostgreSQL refuses to run as root, so as root the cluster is
created and run as the ``postgres`` user (``runuser``). It listens on 127.0.0.1 on a free port with
``trust`` authentication for its own superuser only: never a server to keep.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from sdckit.errors import ConfigError
from sdckit.protocol.services._launch import free_port


def find_initdb() -> Path | None:
    """``initdb`` on ``PATH`` or in the newest ``/usr/lib/postgresql/*/bin``; None if absent."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]) if versions else None


class TempPostgres:
    """``with TempPostgres() as url:`` a server on 127.0.0.1 with one database ``sdckit``; stopped
    and removed on exit."""

    def __init__(self) -> None:
        initdb = find_initdb()
        if initdb is None:
            raise ConfigError("no initdb found; install PostgreSQL (Debian: apt-get install postgresql)")
        self.bin = initdb.parent
        self.dir = Path(tempfile.mkdtemp(prefix="sdckit-pg-"))
        self.data = self.dir / "data"
        self.url = ""
        self._opts = ""
        self._as: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse root
            self._as = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.dir, "postgres")
        os.chmod(self.dir, 0o700)

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> str:
        port = free_port()
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"
        )
        self._opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {self.dir} -c fsync=on -c max_connections=200"
        self.resume()
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "sdckit")
        self.url = f"postgresql://postgres@127.0.0.1:{port}/sdckit"
        return self.url

    def resume(self) -> None:
        """Start the server (again, after :meth:`pause`) on the same port and data."""
        log = str(self.dir / "server.log")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", log, "-o", self._opts, "-w", "start")

    def pause(self) -> None:
        """Stop the server, keeping its data (a store outage, for tests)."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def cpu_seconds(self) -> float:
        """CPU seconds of the server so far: the postmaster and its exited backends (Linux ``/proc``;
        a backend's time is counted once it exits, e.g. when a client's pool closes)."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.data.exists():
            subprocess.run(
                [*self._as, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> str:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *_: object) -> None:
        self.stop()
