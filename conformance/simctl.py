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


# --- the real services (CAPO_CONFORMANCE_CLOUD=real) ----------------------------------------------

# The suite's own projects (and a member user of each, named like the project), so that deleting
# everything after each test never touches what other tests keep in project `capo`.
REAL_PROJECT = "capo-conformance"
REAL_OTHER_PROJECT = "capo-conformance-other"
# Test-only password of users that exist only in the loopback services of hack/openstack-env.sh.
REAL_PASSWORD = "capo-loopback-conformance"
REAL_APPCRED_NAME = "capo-conformance"


def real_clouds_yaml() -> pathlib.Path:
    """The clouds.yaml of the running real services: $CAPO_REAL_CLOUDS_YAML, else whatever
    `hack/openstack-env.sh start` prints (it starts the services when they are not running)."""
    explicit = os.environ.get("CAPO_REAL_CLOUDS_YAML")
    if explicit:
        return pathlib.Path(explicit)
    out = subprocess.run(
        [str(REPO / "hack" / "openstack-env.sh"), "start"],
        check=True, stdout=subprocess.PIPE, text=True,
    ).stdout
    return pathlib.Path(out.strip().splitlines()[-1])


class RealCloud:
    """Stands in for `Sim` when the suite runs against real OpenStack services.

    The tests' clouds exist with the simulator's names: `capo-sim` is a member of project
    `capo-conformance`, `capo-sim-appcred` an application credential of that user (made for this
    session), `capo-sim-other` a member of `capo-conformance-other`. `state`/`ids`/`leftovers` list a project's
    resources through the admin API; `reset` deletes them. The simulator's control API does not
    exist here: `control` accepts the latency knob (`/_sim/delays`, a no-op: real services take
    their own time) and skips the test for anything else.
    """

    def __init__(self, source: pathlib.Path, workdir: pathlib.Path):
        with open(source) as f:
            real = yaml.safe_load(f)["clouds"]
        self.admin = _connect(source, "capo-real-admin")
        template = real["capo-real"]["auth"]
        region = real["capo-real"].get("region_name", "RegionOne")
        self.base_url = template["auth_url"].split("/v3")[0].rsplit(":", 1)[0]
        member_auth = self._ensure_project(template, REAL_PROJECT)
        other = self._ensure_project(template, REAL_OTHER_PROJECT)
        common = {"region_name": region, "interface": "public", "identity_api_version": 3}
        self.clouds = {"capo-sim": {"auth": member_auth, **common}}
        self.clouds_yaml = workdir / "clouds.yaml"
        self.clouds_yaml.write_text(yaml.safe_dump({"clouds": self.clouds}))
        member = _connect(self.clouds_yaml, "capo-sim")
        for old in member.identity.application_credentials(user=member.current_user_id):
            if old.name == REAL_APPCRED_NAME:
                member.identity.delete_application_credential(member.current_user_id, old.id)
        secret = os.urandom(16).hex()
        ac = member.identity.create_application_credential(
            member.current_user_id, REAL_APPCRED_NAME, secret=secret,
            description="conformance suite (deleted at session end)")
        self._appcred = (member, ac.id)
        self.clouds = {
            "capo-sim": {"auth": member_auth, **common},
            "capo-sim-other": {"auth": other, **common},
            "capo-sim-appcred": {
                "auth_type": "v3applicationcredential",
                "auth": {"auth_url": member_auth["auth_url"], "application_credential_id": ac.id,
                         "application_credential_secret": secret},
                **common,
            },
            "capo-real": real["capo-real"],
            "capo-real-admin": real["capo-real-admin"],
        }
        self.clouds_yaml = workdir / "clouds.yaml"
        self.clouds_yaml.write_text(yaml.safe_dump({"clouds": self.clouds}))
        self._members = {member.current_project_id: member}
        other_conn = _connect(self.clouds_yaml, "capo-sim-other")
        self._members[other_conn.current_project_id] = other_conn
        self.project_ids = [member.current_project_id, other_conn.current_project_id]

    def _ensure_project(self, template: dict, name: str) -> dict:
        """Project `name` with a member user `name`; returns that user's password auth."""
        idn = self.admin.identity
        project = idn.find_project(name, domain_id="default") or idn.create_project(
            name=name, domain_id="default", description="conformance suite (CAPO_CONFORMANCE_CLOUD=real)")
        user = idn.find_user(name, domain_id="default")
        if user is None:
            user = idn.create_user(name=name, password=REAL_PASSWORD, domain_id="default",
                                   default_project_id=project.id)
        else:
            idn.update_user(user, password=REAL_PASSWORD)  # whatever an older run set
        for role in ("member", "load-balancer_member"):
            idn.assign_project_role_to_user(project, user, idn.find_role(role))
        auth = dict(template)
        auth.update(username=name, password=REAL_PASSWORD, project_name=name)
        return auth

    def stop(self) -> None:
        member, ac_id = self._appcred
        try:
            member.identity.delete_application_credential(member.current_user_id, ac_id)
        except Exception:  # noqa: BLE001 -- best effort at session end
            pass

    def control(self, method: str, path: str, body=None):
        import pytest

        if path.startswith("/_sim/delays"):
            return {} if method == "GET" else None
        pytest.skip(f"needs the capo-sim control API ({method} {path})")

    # -- what a project owns ----------------------------------------------------------------------

    def state(self, project_id: str) -> dict:
        a = self.admin
        net = a.network
        out = {
            "networks": list(net.networks(project_id=project_id)),
            "subnets": list(net.subnets(project_id=project_id)),
            "ports": list(net.ports(project_id=project_id)),
            "routers": list(net.routers(project_id=project_id)),
            "security_groups": list(net.security_groups(project_id=project_id)),
            "security_group_rules": list(net.security_group_rules(project_id=project_id)),
            "floatingips": list(net.ips(project_id=project_id)),
            "trunks": list(net.trunks(project_id=project_id)),
            "servers": list(a.compute.servers(all_projects=True, project_id=project_id)),
            "server_groups": [g for g in a.compute.server_groups(all_projects=True)
                              if g.project_id == project_id],
            "volumes": list(a.block_storage.volumes(all_projects=True, project_id=project_id)),
            "loadbalancers": list(a.load_balancer.load_balancers(project_id=project_id)),
            "images": list(a.image.images(owner=project_id)),
        }
        member = self._members.get(project_id)
        out["keypairs"] = list(member.compute.keypairs()) if member else []
        return {k: [r.to_dict(computed=False) for r in v] for k, v in out.items() if v}

    def ids(self, project_id: str) -> set:
        return {item.get("id") or item.get("name") for items in self.state(project_id).values()
                for item in items}

    def leftovers(self, project_id: str) -> dict:
        state = self.state(project_id)
        default_sgs = {sg["id"] for sg in state.get("security_groups", []) if sg.get("name") == "default"}
        out = {}
        for collection, items in state.items():
            keep = [i for i in items
                    if not (collection == "security_groups" and i["id"] in default_sgs)
                    and not (collection == "security_group_rules"
                             and i.get("security_group_id") in default_sgs)]
            if keep:
                out[collection] = [{k: i.get(k) for k in ("id", "name", "status") if i.get(k) is not None}
                                   for i in keep]
        return out

    # -- cleanup instead of a reset -----------------------------------------------------------------

    def reset(self) -> None:
        """Delete everything the test projects own (except their default security groups)."""
        for pid in self.project_ids:
            self._purge(pid)

    def _purge(self, pid: str) -> None:
        a = self.admin
        net = a.network
        tries = []

        def attempt(fn, *args, **kw):
            try:
                fn(*args, **kw)
            except Exception as e:  # noqa: BLE001 -- keep going; reported if it stays behind
                tries.append(f"{getattr(fn, '__name__', fn)}: {e}")

        for lb in a.load_balancer.load_balancers(project_id=pid):
            if lb.provisioning_status.startswith("PENDING"):
                attempt(a.load_balancer.wait_for_load_balancer, lb.id, wait=WAIT_SECONDS)
            attempt(a.load_balancer.delete_load_balancer, lb.id, cascade=True)
        for lb in a.load_balancer.load_balancers(project_id=pid):
            attempt(a.load_balancer.wait_for_delete, lb, wait=WAIT_SECONDS)
        servers = list(a.compute.servers(all_projects=True, project_id=pid))
        for srv in servers:
            attempt(a.compute.delete_server, srv, force=False)
        for srv in servers:
            attempt(a.compute.wait_for_delete, srv, wait=WAIT_SECONDS)
        for g in a.compute.server_groups(all_projects=True):
            if g.project_id == pid:
                attempt(a.compute.delete_server_group, g)
        for fip in net.ips(project_id=pid):
            attempt(net.delete_ip, fip)
        for trunk in net.trunks(project_id=pid):
            attempt(net.delete_trunk, trunk)
        for router in net.routers(project_id=pid):
            for port in net.ports(device_id=router.id):
                if port.device_owner.startswith("network:router_interface"):
                    attempt(net.remove_interface_from_router, router, port_id=port.id)
            attempt(net.delete_router, router)
        for port in net.ports(project_id=pid):
            attempt(net.delete_port, port)
        for subnet in net.subnets(project_id=pid):
            attempt(net.delete_subnet, subnet)
        for network in net.networks(project_id=pid):
            attempt(net.delete_network, network)
        for sg in net.security_groups(project_id=pid):
            if sg.name != "default":
                attempt(net.delete_security_group, sg)
        vols = list(a.block_storage.volumes(all_projects=True, project_id=pid))
        for vol in vols:
            attempt(a.block_storage.delete_volume, vol, force=vol.status not in ("available", "error"))
        for vol in vols:
            attempt(a.block_storage.wait_for_delete, vol, wait=WAIT_SECONDS)
        for img in a.image.images(owner=pid):
            attempt(a.image.delete_image, img)
        member = self._members.get(pid)
        if member:
            for kp in member.compute.keypairs():
                attempt(member.compute.delete_keypair, kp)
        if tries:
            print(f"cleanup of project {pid}: " + "; ".join(tries[:10]), file=sys.stderr)


def _connect(clouds_yaml: pathlib.Path, cloud: str):
    """An SDK connection to `cloud` of this clouds.yaml only (no OS_* variables, no other files)."""
    import openstack.config
    import openstack.connection

    loader = openstack.config.OpenStackConfig(config_files=[str(clouds_yaml)], load_envvars=False)
    return openstack.connection.Connection(config=loader.get_one(cloud=cloud))


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
