"""Helpers for the conformance suite: start capo-sim, talk to its control API, run the CLI.

Kept apart from conftest.py so test modules can import the helpers by name.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import urllib.request

import yaml

REPO = pathlib.Path(__file__).resolve().parent.parent
LISTEN_PREFIX = "capo-sim listening on "
# Bound on every wait (SDK wait_for_*, CLI --wait, polling) so a stuck sim fails a test instead of
# hanging CI.
WAIT_SECONDS = 120


def find_or_build_sim() -> pathlib.Path:
    """The capo-sim binary: $CAPO_SIM_BIN, else a cargo build into the usual target dir."""
    explicit = os.environ.get("CAPO_SIM_BIN")
    if explicit:
        path = pathlib.Path(explicit)
        if not path.is_file():
            raise RuntimeError(f"CAPO_SIM_BIN={explicit} does not exist")
        return path
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    if not target.is_absolute():
        target = REPO / target
    # Always run cargo: it is a no-op when the binary is fresh and rebuilds it when it is stale.
    subprocess.run(
        ["cargo", "build", "--locked", "-j2", "-p", "capo-sim", "--bin", "capo-sim"],
        cwd=REPO,
        check=True,
        env={**os.environ, "CARGO_TARGET_DIR": str(target)},
    )
    return target / "debug" / "capo-sim"


class Sim:
    """A running capo-sim process and its control API (/_sim/...)."""

    def __init__(self, binary: pathlib.Path, workdir: pathlib.Path):
        self.clouds_yaml = workdir / "clouds.yaml"
        self.log_path = workdir / "capo-sim.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(binary), "--listen", "127.0.0.1:0", "--clouds-yaml", str(self.clouds_yaml)],
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self.base_url = self._read_url()
        with open(self.clouds_yaml) as f:
            self.clouds = yaml.safe_load(f)["clouds"]

    def _read_url(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith(LISTEN_PREFIX):
            self.stop()
            log_tail = self.log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(
                f"capo-sim did not announce its URL, first line: {line!r}; stderr:\n{log_tail}"
            )
        return line[len(LISTEN_PREFIX):].rstrip("/")

    def stop(self) -> None:
        """Terminate the process (it was started by this suite)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._log.close()

    def control(self, method: str, path: str, body=None):
        """Call the control API and return the decoded JSON body (None when empty)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.base_url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
        return json.loads(raw) if raw.strip() else None

    def reset(self) -> None:
        """Back to the seed: no user-created resources in any project."""
        self.control("POST", "/_sim/reset")

    def state(self, project_id: str) -> dict:
        """Every resource the project owns, grouped by collection."""
        return self.control("GET", f"/_sim/state?project={project_id}") or {}

    def ids(self, project_id: str) -> set:
        """Ids of every resource in the project's state dump."""
        return {
            item.get("id")
            for items in self.state(project_id).values()
            if isinstance(items, list)
            for item in items
            if isinstance(item, dict)
        }

    def leftovers(self, project_id: str) -> dict:
        """The project's resources except what Neutron creates by itself (the project's default
        security group and its rules, which real Neutron also re-creates on first use)."""
        state = self.state(project_id)
        default_sgs = {
            sg.get("id")
            for sg in state.get("security_groups", [])
            if sg.get("name") == "default"
        }
        out = {}
        for collection, items in state.items():
            if not isinstance(items, list):
                continue
            keep = [
                item
                for item in items
                if not (collection == "security_groups" and item.get("id") in default_sgs)
                and not (
                    collection == "security_group_rules"
                    and item.get("security_group_id") in default_sgs
                )
            ]
            if keep:
                out[collection] = [
                    {k: item.get(k) for k in ("id", "name", "status") if k in item} for item in keep
                ]
        return out


def openstack_bin() -> str:
    """The `openstack` CLI of the virtualenv running pytest (falls back to PATH)."""
    beside = pathlib.Path(sys.executable).parent / "openstack"
    if beside.exists():
        return str(beside)
    found = shutil.which("openstack")
    if not found:
        raise RuntimeError("openstack CLI not found; run hack/python-env.sh")
    return found


class CliError(AssertionError):
    """A CLI command that was expected to succeed failed."""


class Cli:
    """Runs `openstack --os-cloud <cloud> ...` against the simulator."""

    def __init__(self, clouds_yaml: pathlib.Path, cloud: str = "capo-sim"):
        self.cloud = cloud
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith("OS_")
        } | {"OS_CLIENT_CONFIG_FILE": str(clouds_yaml)}

    def run(self, *args: str, cloud: str | None = None, timeout: int = WAIT_SECONDS):
        """Run a command, return the CompletedProcess whatever the exit code."""
        cmd = [openstack_bin(), "--os-cloud", cloud or self.cloud, *args]
        return subprocess.run(
            cmd, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def ok(self, *args: str, cloud: str | None = None, timeout: int = WAIT_SECONDS) -> str:
        """Run a command that must succeed; return its stdout."""
        res = self.run(*args, cloud=cloud, timeout=timeout)
        if res.returncode != 0:
            raise CliError(
                f"`openstack {' '.join(args)}` exited {res.returncode}:\n{res.stderr[-3000:]}"
            )
        return res.stdout

    def json(self, *args: str, cloud: str | None = None, timeout: int = WAIT_SECONDS):
        """Run a command with `-f json` and return the decoded output."""
        out = self.ok(*args, "-f", "json", cloud=cloud, timeout=timeout)
        return json.loads(out)


def poll(fetch, done, what: str, timeout: float = WAIT_SECONDS, interval: float = 0.5):
    """Call fetch() until done(value) holds; return the value or fail naming `what`."""
    deadline = time.monotonic() + timeout
    value = fetch()
    while not done(value):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last value: {value!r}")
        time.sleep(interval)
        value = fetch()
    return value
