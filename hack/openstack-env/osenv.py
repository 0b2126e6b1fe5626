"""Brings up real OpenStack services on 127.0.0.1 as a test partner for capo.

Run by hack/openstack-env.sh with the environment's virtualenv python:

    python osenv.py start --dir RUN_DIR --venv VENV --key KEY

RUN_DIR holds everything mutable: etc/ (generated configs), logs/, state/ (databases, fernet keys,
images, node identities), pids/ (one file per process this script started, prefixed with its start
order so `stop` can go in reverse). Every step is idempotent: a process that is alive is left
alone, schemas are synced once per virtualenv key, and the Keystone/Nova/Neutron fixtures are
looked up before they are created.

Every start begins from the same cloud: the first start on an empty state directory dumps the
databases once the fixtures are in place (the baseline), and each later start loads that dump
before any service runs. Whatever earlier runs left behind (projects, ports, floating IPs of a
run that was killed or of tests that do not delete what they create) is gone, so a machine that
runs the suites a thousand times sees the same cloud as a fresh one. The baseline is keyed on the
virtualenv key and this file: a change to either starts over from an empty state directory.

Progress goes to stderr; the only line on stdout is the path of the clouds.yaml written at the end.
"""

import argparse
import datetime
import hashlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time

HOST = "127.0.0.1"
REGION = "RegionOne"
# Fixed passwords for services that listen on loopback only; they protect nothing.
ADMIN_PASSWORD = "capo-loopback-admin"
MEMBER_PASSWORD = "capo-loopback-member"
SERVICE_PASSWORD = "capo-loopback-service"
DB_PASSWORD = "capo-loopback-db"
RABBIT_URL = f"rabbit://guest:guest@{HOST}:5672/"

PORTS = {
    "mariadb": 3306,
    "rabbitmq": 5672,
    "rabbitmq-dist": 25672,
    "epmd": 4369,
    "memcached": 11211,
    "keystone": 5000,
    "neutron": 9696,
    "placement": 8778,
    "glance": 9292,
    "nova-api": 8774,
    "cinder-api": 8776,
    "octavia-api": 9876,
}
KEYSTONE_URL = f"http://{HOST}:{PORTS['keystone']}/v3"
# (service name, type, URL) registered in the catalog, one endpoint per interface.
CATALOG = [
    ("keystone", "identity", KEYSTONE_URL),
    ("neutron", "network", f"http://{HOST}:{PORTS['neutron']}"),
    ("placement", "placement", f"http://{HOST}:{PORTS['placement']}"),
    ("glance", "image", f"http://{HOST}:{PORTS['glance']}"),
    ("nova", "compute", f"http://{HOST}:{PORTS['nova-api']}/v2.1"),
    ("cinderv3", "volumev3", f"http://{HOST}:{PORTS['cinder-api']}/v3/%(project_id)s"),
    ("cinder", "block-storage", f"http://{HOST}:{PORTS['cinder-api']}/v3/%(project_id)s"),
    ("octavia", "load-balancer", f"http://{HOST}:{PORTS['octavia-api']}"),
]
SERVICE_USERS = ["neutron", "placement", "glance", "nova", "cinder", "octavia"]
DATABASES = ["keystone", "neutron", "placement", "glance", "nova_api", "nova", "nova_cell0",
             "cinder", "octavia"]
# Two compute hosts, each in its own availability zone (an aggregate per zone; az1 is the default).
COMPUTE_HOSTS = [("compute1", "az1"), ("compute2", "az2")]
DEFAULT_AZ = "az1"
# The project capo uses and the roles its user holds: `member` is what Neutron, Nova, Glance and
# Cinder's default policies want for project-scoped work, `load-balancer_member` what Octavia's
# does (its policies predate the generic `member` role).
CAPO_PROJECT = "capo"
CAPO_USER = "capo"
CAPO_ROLES = ["member", "load-balancer_member"]

T0 = time.monotonic()


def say(msg):
    print(f"openstack-env: [{time.monotonic() - T0:5.1f}s] {msg}", file=sys.stderr, flush=True)


def port_open(port, host=HOST):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def ini(sections):
    """Render {section: {key: value}} as an INI file (values are str()-ed, None skipped)."""
    out = []
    for name, keys in sections.items():
        out.append(f"[{name}]")
        out.extend(f"{k} = {v}" for k, v in keys.items() if v is not None)
        out.append("")
    return "\n".join(out)


def reclaim_interval():
    """Nova's `reclaim_instance_interval` in seconds, from CAPO_OPENSTACK_RECLAIM_INTERVAL (a
    non-negative integer; unset or empty is 0, no soft delete)."""
    raw = os.environ.get("CAPO_OPENSTACK_RECLAIM_INTERVAL", "").strip() or "0"
    if not raw.isdigit():
        sys.exit(f"CAPO_OPENSTACK_RECLAIM_INTERVAL must be a number of seconds, not {raw!r}")
    return int(raw)


class Env:
    def __init__(self, run_dir, venv, key, repo):
        self.dir = pathlib.Path(run_dir).resolve()
        self.venv = pathlib.Path(venv)
        self.key = key
        self.repo = pathlib.Path(repo)
        self.etc = self.dir / "etc"
        self.logs = self.dir / "logs"
        self.state = self.dir / "state"
        self.pids = self.dir / "pids"
        self.order = 0
        # The baseline belongs to this virtualenv and this recipe of configs and fixtures.
        recipe = hashlib.sha256(pathlib.Path(__file__).read_bytes()).hexdigest()[:16]
        self.baseline = self.state / f"baseline-{key}-{recipe}.sql"
        self.children = {}  # name -> Popen of the processes started by this run (to reap them)
        for d in (self.etc, self.logs, self.state, self.pids):
            d.mkdir(parents=True, exist_ok=True)

    def bin(self, name):
        return str(self.venv / "bin" / name)

    # --- processes -----------------------------------------------------------------------------

    def pidfile(self, name):
        found = sorted(self.pids.glob(f"*-{name}.pid"))
        return found[0] if found else None

    def alive(self, name):
        f = self.pidfile(name)
        if not f:
            return False
        if name in self.children and self.children[name].poll() is not None:
            f.unlink(missing_ok=True)  # exited (a zombie would still answer kill 0)
            return False
        try:
            pid = int(f.read_text().strip())
            # A process that exited but was never reaped (its parent, an earlier run, is gone and
            # init may not reap) still answers kill(0); /proc/<pid>/stat says Z.
            stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                return True
        except (ValueError, OSError, IndexError):
            pass
        f.unlink(missing_ok=True)
        return False

    def launch(self, name, argv, env=None):
        """Start argv in its own session (so stop can signal the whole group), once."""
        self.order += 1
        if self.alive(name):
            return
        log = open(self.logs / f"{name}.out", "ab")
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, cwd=self.state, env={**os.environ, **(env or {})})
        self.children[name] = proc
        (self.pids / f"{self.order:02d}-{name}.pid").write_text(f"{proc.pid}\n")

    def uwsgi(self, name, module, *extra, processes=1):
        self.launch(name, [
            self.bin("uwsgi"), "--http11-socket", f"{HOST}:{PORTS[name]}", "--module", module,
            "--master", "--processes", str(processes), "--threads", "4", "--enable-threads", "--lazy-apps",
            "--die-on-term", "--need-app", "--buffer-size", "65535", "--hook-master-start",
            "unix_signal:15 gracefully_kill_them_all", "--disable-logging", *extra])

    def wait_port(self, name, timeout=180):
        deadline = time.monotonic() + timeout
        while not port_open(PORTS[name]):
            if time.monotonic() > deadline:
                raise SystemExit(f"{name} did not listen on {HOST}:{PORTS[name]} within {timeout}s; "
                                 f"see {self.logs}/{name}*")
            if not self.alive(name):
                raise SystemExit(f"{name} exited; see {self.logs}/{name}*")
            time.sleep(0.3)

    def run(self, what, argv, **kw):
        with open(self.logs / f"setup-{what}.log", "ab") as log:
            res = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, **kw)
        if res.returncode != 0:
            raise SystemExit(f"{what} failed ({' '.join(map(str, argv))}); see {self.logs}/setup-{what}.log")

    # --- configuration -------------------------------------------------------------------------

    def db(self, name):
        return f"mysql+pymysql://openstack:{DB_PASSWORD}@{HOST}:{PORTS['mariadb']}/{name}?charset=utf8mb4"

    def service_auth(self, user, **extra):
        return {"auth_url": f"http://{HOST}:{PORTS['keystone']}", "auth_type": "password",
                "project_domain_name": "Default", "user_domain_name": "Default",
                "project_name": "service", "username": user, "password": SERVICE_PASSWORD,
                "region_name": REGION, **extra}

    def authtoken(self, user):
        return self.service_auth(user, www_authenticate_uri=f"http://{HOST}:{PORTS['keystone']}",
                                 memcached_servers=f"{HOST}:{PORTS['memcached']}",
                                 service_token_roles_required="true")

    def write(self, rel, text):
        path = self.etc / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def copy_from_venv(self, src_rel, dst_rel):
        dst = self.etc / dst_rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.venv / src_rel, dst)

    def octavia_certs(self):
        c = self.etc / "octavia" / "certs"
        if (c / "client.pem").exists():
            return c
        c.mkdir(parents=True, exist_ok=True)
        ssl = lambda *a: self.run("octavia-certs", ["openssl", *a], cwd=c)  # noqa: E731
        ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "3650", "-subj", "/CN=capo-openstack-env-octavia-ca")
        ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key", "-out", "client.csr",
            "-subj", "/CN=octavia-controller")
        ssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "client.crt", "-days", "3650")
        (c / "client.pem").write_text((c / "client.crt").read_text() + (c / "client.key").read_text())
        return c

    def write_configs(self):
        s, L = self.state, self.logs
        for d in ("neutron", "nova", "glance/images", "glance/staging", "glance/tasks", "cinder",
                  "octavia", "placement"):
            (s / d).mkdir(parents=True, exist_ok=True)
        self.write("keystone/keystone.conf", ini({
            "DEFAULT": {"log_file": L / "keystone.log"},
            "database": {"connection": self.db("keystone")},
            "token": {"provider": "fernet", "expiration": 14400},
            "fernet_tokens": {"key_repository": s / "keystone-fernet"},
            "fernet_receipts": {"key_repository": s / "keystone-fernet"},
            "credential": {"key_repository": s / "keystone-credential"},
            # bcrypt with the default 12 rounds costs ~0.3 s of CPU per password check.
            "identity": {"password_hash_rounds": 4},
            # Every service validates every new token here; without a cache each validation
            # re-reads roles and revocations from MariaDB. In one CI run Keystone stalled for
            # four minutes under the controller suites and held Neutron and Nova up with it.
            "cache": {"enabled": "true", "backend": "oslo_cache.memcache_pool",
                      "memcache_servers": f"{HOST}:{PORTS['memcached']}"},
        }))

        self.copy_from_venv("etc/neutron/api-paste.ini", "neutron/api-paste.ini")
        self.write("neutron/neutron.conf", ini({
            "DEFAULT": {"core_plugin": "ml2", "service_plugins": "router,trunk,segments",
                        "auth_strategy": "keystone", "transport_url": RABBIT_URL,
                        "log_file": L / "neutron.log", "state_path": s / "neutron",
                        "api_paste_config": self.etc / "neutron/api-paste.ini",
                        "bind_host": HOST, "allow_overlapping_ips": "true"},
            "database": {"connection": self.db("neutron")},
            "oslo_concurrency": {"lock_path": s / "neutron"},
            "keystone_authtoken": self.authtoken("neutron"),
            "nova": self.service_auth("nova"),
        }))
        self.write("neutron/ml2.ini", ini({
            "ml2": {"type_drivers": "flat,vxlan", "tenant_network_types": "vxlan",
                    "mechanism_drivers": "capo_agentless",
                    # port_trusted: the `port-trusted-vif` extension (a port's own `trusted`).
                    "extension_drivers": "port_security,port_trusted"},
            "ml2_type_flat": {"flat_networks": "public"},
            "ml2_type_vxlan": {"vni_ranges": "1:10000"},
        }))

        self.write("placement/placement.conf", ini({
            "DEFAULT": {"log_file": L / "placement.log"},
            "placement_database": {"connection": self.db("placement")},
            "api": {"auth_strategy": "keystone"},
            "keystone_authtoken": self.authtoken("placement"),
        }))

        self.copy_from_venv("etc/nova/api-paste.ini", "nova/api-paste.ini")
        nova = {
            "DEFAULT": {"transport_url": RABBIT_URL, "compute_driver": "capo_fake.StableFakeDriver",
                        "sync_power_state_interval": -1, "host": COMPUTE_HOSTS[0][0],
                        "my_ip": HOST, "state_path": s / "nova", "instances_path": s / "nova/instances",
                        "enabled_apis": "osapi_compute", "default_availability_zone": DEFAULT_AZ,
                        "osapi_compute_listen": HOST, "metadata_listen": HOST,
                        # > 0: a deleted server stays SOFT_DELETED this many seconds, then the
                        # compute host's periodic task reclaims it (0, Nova's default: none).
                        "reclaim_instance_interval": reclaim_interval()},
            "wsgi": {"api_paste_config": self.etc / "nova/api-paste.ini"},
            "api_database": {"connection": self.db("nova_api")},
            "database": {"connection": self.db("nova")},
            "conductor": {"workers": 1},
            "scheduler": {"workers": 1, "discover_hosts_in_cells_interval": -1},
            "vnc": {"enabled": "false"},
            "oslo_concurrency": {"lock_path": s / "nova"},
            "oslo_messaging_notifications": {"driver": "noop"},
            "cache": {"enabled": "false"},
            "glance": {"region_name": REGION},
            "keystone_authtoken": self.authtoken("nova"),
            "service_user": self.service_auth("nova", send_service_user_token="true"),
            "placement": self.service_auth("placement"),
            "neutron": self.service_auth("neutron"),
            "cinder": {**self.service_auth("cinder"), "os_region_name": REGION},
        }
        if reclaim_interval() > 0:
            # The compute host's periodic tasks (the reclaim among them) run at least this often
            # (Nova's default: 60 s), so a reclaim comes within about one interval.
            nova["DEFAULT"]["periodic_interval_max"] = min(60, max(5, reclaim_interval()))
        self.write("nova/nova.conf", ini(nova))
        for host, _az in COMPUTE_HOSTS[1:]:
            # Read after nova.conf: a second fake hypervisor with its own name and node identity.
            (s / f"nova-{host}").mkdir(exist_ok=True)
            self.write(f"nova/{host}.conf", ini({"DEFAULT": {
                "host": host, "state_path": s / f"nova-{host}",
                "instances_path": s / f"nova-{host}/instances"}}))

        self.copy_from_venv("etc/glance/glance-api-paste.ini", "glance/glance-api-paste.ini")
        self.write("glance/glance-api.conf", ini({
            "DEFAULT": {"log_file": L / "glance.log", "enabled_backends": "file:file",
                        "bind_host": HOST,
                        "worker_self_reference_url": f"http://{HOST}:{PORTS['glance']}"},
            "database": {"connection": self.db("glance")},
            "paste_deploy": {"flavor": "keystone",
                             "config_file": self.etc / "glance/glance-api-paste.ini"},
            "glance_store": {"default_backend": "file"},
            "file": {"filesystem_store_datadir": s / "glance/images"},
            "os_glance_staging_store": {"filesystem_store_datadir": s / "glance/staging"},
            "os_glance_tasks_store": {"filesystem_store_datadir": s / "glance/tasks"},
            "oslo_concurrency": {"lock_path": s / "glance"},
            "keystone_authtoken": self.authtoken("glance"),
        }))

        self.copy_from_venv("etc/cinder/api-paste.ini", "cinder/api-paste.ini")
        # Which list filters the API accepts; without this file every filter (even name=) is a 400.
        self.copy_from_venv("etc/cinder/resource_filters.json", "cinder/resource_filters.json")
        self.write("cinder/cinder.conf", ini({
            "DEFAULT": {"transport_url": RABBIT_URL, "auth_strategy": "keystone", "log_dir": L,
                        "state_path": s / "cinder", "api_paste_config": self.etc / "cinder/api-paste.ini",
                        "my_ip": HOST, "osapi_volume_listen": HOST, "host": "cinder1",
                        "enabled_backends": "noop", "default_volume_type": "__DEFAULT__",
                        "storage_availability_zone": DEFAULT_AZ,
                        "default_availability_zone": DEFAULT_AZ,
                        # A volume asked for in az2 (capo follows the machine's failure domain)
                        # lands in the one storage zone instead of failing.
                        "allow_availability_zone_fallback": "true",
                        "resource_query_filters_file": self.etc / "cinder/resource_filters.json"},
            "noop": {"volume_driver": "capo_os_shims.cinder_noop.NoopVolumeDriver",
                     "volume_backend_name": "noop"},
            "database": {"connection": self.db("cinder")},
            "oslo_concurrency": {"lock_path": s / "cinder"},
            "keystone_authtoken": self.authtoken("cinder"),
            "nova": self.service_auth("nova"),
        }))

        certs = self.octavia_certs()
        self.write("octavia/octavia.conf", ini({
            "DEFAULT": {"transport_url": RABBIT_URL, "log_file": L / "octavia.log"},
            "api_settings": {"auth_strategy": "keystone", "bind_host": HOST,
                             "enabled_provider_drivers": "amphora:Amphora driver (no-op amphorae on fake Nova servers)",
                             "default_provider_driver": "amphora"},
            "database": {"connection": self.db("octavia")},
            # No-op amphora agent, but the VIP is a real Neutron port (allowed address pairs driver)
            # and the amphora a real (fake-driver) Nova server, so floating IPs can point at VIPs.
            "controller_worker": {"workers": 1, "amphora_driver": "amphora_noop_driver",
                                  "compute_driver": "compute_nova_driver",
                                  "network_driver": "allowed_address_pairs_driver",
                                  "loadbalancer_topology": "SINGLE", "amp_active_wait_sec": 1,
                                  "client_ca": certs / "ca.pem"},
            "certificates": {"ca_certificate": certs / "ca.pem", "ca_private_key": certs / "ca.key"},
            "haproxy_amphora": {"client_cert": certs / "client.pem", "server_ca": certs / "ca.pem"},
            "task_flow": {"jobboard_enabled": "false"},
            "oslo_concurrency": {"lock_path": s / "octavia"},
            "nova": {"region_name": REGION},
            "neutron": {"region_name": REGION},
            "glance": {"region_name": REGION},
            "keystone_authtoken": self.authtoken("octavia"),
            "service_auth": self.service_auth("octavia"),
        }))

    # --- infrastructure ------------------------------------------------------------------------

    def start_infra(self):
        db_dir = self.state / "mariadb"
        if not (db_dir / "mysql").is_dir():
            say("initialising MariaDB data directory")
            shutil.rmtree(db_dir, ignore_errors=True)
            self.run("mariadb-install-db", ["mariadb-install-db", "--no-defaults", "--user=root",
                                            f"--datadir={db_dir}", "--auth-root-authentication-method=normal",
                                            "--skip-test-db"])
        sock = self.state / "mariadb.sock"
        self.launch("mariadb", [
            "/usr/sbin/mariadbd", "--no-defaults", "--user=root", f"--datadir={db_dir}",
            f"--bind-address={HOST}", f"--port={PORTS['mariadb']}", f"--socket={sock}",
            f"--pid-file={self.state / 'mariadb.pidfile'}", f"--log-error={self.logs / 'mariadb.err'}",
            "--skip-name-resolve", "--performance-schema=off", "--innodb-buffer-pool-size=128M",
            "--innodb-flush-log-at-trx-commit=0", "--sync-binlog=0", "--max-connections=1000",
            "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci"])

        # epmd first, on loopback: left to itself Erlang starts one that listens on every address.
        erl_env = {"ERL_EPMD_ADDRESS": HOST, "ERL_EPMD_PORT": str(PORTS["epmd"])}
        if not port_open(PORTS["epmd"]):
            epmd = self._erlang_epmd()
            self.launch("epmd", [epmd, "-address", HOST, "-port", str(PORTS["epmd"])], env=erl_env)
        self.wait_port("epmd", 30) if self.pidfile("epmd") else None
        rabbit = self.state / "rabbitmq"
        if self.baseline.exists():
            # Messages queued by an earlier run are for servers and load balancers the baseline
            # does not have: the services declare their queues again on start.
            shutil.rmtree(rabbit / "mnesia", ignore_errors=True)
        (rabbit / "mnesia").mkdir(parents=True, exist_ok=True)
        (rabbit / "enabled_plugins").write_text("[].\n")
        (rabbit / "rabbitmq.conf").write_text(textwrap.dedent(f"""\
            listeners.tcp.1 = {HOST}:{PORTS['rabbitmq']}
            loopback_users = none
            log.file.level = warning
            """))
        self.launch("rabbitmq", ["/usr/lib/rabbitmq/bin/rabbitmq-server"], env={
            **erl_env, "HOME": str(rabbit), "RABBITMQ_NODENAME": "rabbit@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": HOST, "RABBITMQ_NODE_PORT": str(PORTS["rabbitmq"]),
            "RABBITMQ_DIST_PORT": str(PORTS["rabbitmq-dist"]),
            "RABBITMQ_MNESIA_BASE": str(rabbit / "mnesia"), "RABBITMQ_LOG_BASE": str(self.logs / "rabbitmq"),
            "RABBITMQ_CONFIG_FILE": str(rabbit / "rabbitmq"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(rabbit / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(rabbit / "rabbitmq.pidfile"),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        })
        self.launch("memcached", ["/usr/bin/memcached", "-l", HOST, "-p", str(PORTS["memcached"]),
                                  "-U", "0", "-m", "64", "-u", "root"])
        self.wait_port("mariadb", 60)
        self.wait_port("memcached", 30)
        self.wait_port("rabbitmq", 120)

    @staticmethod
    def _erlang_epmd():
        for cand in sorted(pathlib.Path("/usr/lib/erlang").glob("erts-*/bin/epmd")) + [pathlib.Path("/usr/bin/epmd")]:
            if cand.exists():
                return str(cand)
        raise SystemExit("epmd not found (is erlang-base installed?)")

    def sql(self, statements):
        self.run("mariadb", ["mariadb", f"--socket={self.state / 'mariadb.sock'}", "-uroot", "-e", statements])

    def sync_schemas(self):
        stamp = self.state / "schemas.done"
        if stamp.exists() and stamp.read_text().strip() == self.key:
            return
        say("creating databases and syncing schemas (first start only)")
        self.sql(" ".join(f"CREATE DATABASE IF NOT EXISTS {d} CHARACTER SET utf8mb4;" for d in DATABASES)
                 + f" CREATE USER IF NOT EXISTS 'openstack'@'{HOST}' IDENTIFIED BY '{DB_PASSWORD}';"
                 + f" GRANT ALL ON *.* TO 'openstack'@'{HOST}'; FLUSH PRIVILEGES;")
        E = self.etc
        km = [self.bin("keystone-manage"), "--config-file", str(E / "keystone/keystone.conf")]
        nm = [self.bin("nova-manage"), "--config-file", str(E / "nova/nova.conf")]
        (self.state / "keystone-fernet").mkdir(exist_ok=True)
        (self.state / "keystone-credential").mkdir(exist_ok=True)
        chains = {
            "keystone": [
                km + ["db_sync"],
                km + ["fernet_setup", "--keystone-user", "root", "--keystone-group", "root"],
                km + ["credential_setup", "--keystone-user", "root", "--keystone-group", "root"],
                km + ["bootstrap", "--bootstrap-password", ADMIN_PASSWORD, "--bootstrap-region-id", REGION,
                      "--bootstrap-admin-url", KEYSTONE_URL, "--bootstrap-internal-url", KEYSTONE_URL,
                      "--bootstrap-public-url", KEYSTONE_URL],
            ],
            "neutron": [[self.bin("neutron-db-manage"), "--config-file", str(E / "neutron/neutron.conf"),
                         "--config-file", str(E / "neutron/ml2.ini"), "upgrade", "heads"]],
            "nova": [
                nm + ["api_db", "sync"],
                nm + ["cell_v2", "map_cell0", "--database_connection", self.db("nova_cell0")],
                ["sh", "-c", f"{' '.join(nm)} cell_v2 list_cells | grep -q ' cell1 ' || "
                             f"{' '.join(nm)} cell_v2 create_cell --name cell1"],
                nm + ["db", "sync"],
            ],
            "others": [
                [self.bin("placement-manage"), "--config-file", str(E / "placement/placement.conf"), "db", "sync"],
                [self.bin("glance-manage"), "--config-file", str(E / "glance/glance-api.conf"), "db_sync"],
                [self.bin("octavia-db-manage"), "--config-file", str(E / "octavia/octavia.conf"), "upgrade", "head"],
                [self.bin("cinder-manage"), "--config-file", str(E / "cinder/cinder.conf"), "db", "sync"],
            ],
        }
        procs = {}
        for name, cmds in chains.items():
            script = " && ".join(f"( {c[2]} )" if c[0] == "sh" else " ".join(map(_shq, c)) for c in cmds)
            log = open(self.logs / f"setup-schema-{name}.log", "ab")
            procs[name] = subprocess.Popen(["sh", "-c", script], stdout=log, stderr=subprocess.STDOUT)
        failed = [n for n, p in procs.items() if p.wait() != 0]
        if failed:
            raise SystemExit(f"schema sync failed for {failed}; see {self.logs}/setup-schema-*.log")
        stamp.write_text(self.key + "\n")

    # --- baseline: every start from the same cloud --------------------------------------------

    def start_clean(self):
        """Keep the state directory only if it has this recipe's baseline: anything else is a
        cloud of unknown history (an older recipe, or runs from before baselines existed)."""
        if self.baseline.exists():
            return
        if any(self.state.iterdir()):
            say("no baseline for this recipe: starting from an empty state directory")
            shutil.rmtree(self.state)
            self.state.mkdir()

    def restore_baseline(self):
        """Load the baseline into MariaDB (no service is running yet) and drop Glance files that
        no baseline image names."""
        if not self.baseline.exists():
            return False
        t = time.monotonic()
        sock = self.state / "mariadb.sock"
        with open(self.baseline, "rb") as dump:
            subprocess.run(["mariadb", f"--socket={sock}", "-uroot"], stdin=dump, check=True,
                           stdout=subprocess.DEVNULL)
        keep = set((self.baseline.with_suffix(".images").read_text().split()))
        for f in (self.state / "glance/images").iterdir():
            if f.name not in keep:
                f.unlink()
        say(f"databases reset to the baseline in {time.monotonic() - t:.1f}s")
        return True

    def save_baseline(self):
        """Dump every OpenStack database as it is now (fixtures in place, nothing else)."""
        tmp = self.baseline.with_suffix(".tmp")
        sock = self.state / "mariadb.sock"
        with open(tmp, "wb") as out:
            subprocess.run(["mysqldump", f"--socket={sock}", "-uroot", "--single-transaction",
                            "--add-drop-database", "--skip-dump-date", "--databases", *DATABASES],
                           stdout=out, check=True)
        self.baseline.with_suffix(".images").write_text(
            "".join(f"{f.name}\n" for f in sorted((self.state / "glance/images").iterdir())))
        tmp.replace(self.baseline)
        say(f"baseline saved ({self.baseline.stat().st_size >> 10} KiB)")

    # --- OpenStack services --------------------------------------------------------------------

    def start_services(self):
        E, L = self.etc, self.logs
        # Two Keystone workers: every other service waits on it (token issue and validation).
        self.uwsgi("keystone", "keystone.wsgi.api:application",
                   "--env", f"OS_KEYSTONE_CONFIG_DIR={E / 'keystone'}", "--env", "OS_KEYSTONE_CONFIG_FILES=keystone.conf",
                   processes=2)
        self.uwsgi("neutron", "neutron.wsgi.api:application",
                   "--env", f"OS_NEUTRON_CONFIG_DIR={E / 'neutron'}", "--env", "OS_NEUTRON_CONFIG_FILES=neutron.conf;ml2.ini")
        self.uwsgi("placement", "placement.wsgi.api:application",
                   "--env", f"OS_PLACEMENT_CONFIG_DIR={E / 'placement'}")
        self.uwsgi("glance", "glance.wsgi.api:application", "--env", f"OS_GLANCE_CONFIG_DIR={E / 'glance'}")
        self.uwsgi("nova-api", "nova.wsgi.osapi_compute:application",
                   "--env", f"OS_NOVA_CONFIG_DIR={E / 'nova'}", "--env", "OS_NOVA_CONFIG_FILES=api-paste.ini;nova.conf")
        # cinder-api and octavia-api parse sys.argv for their configuration.
        self.uwsgi("cinder-api", "cinder.wsgi.api:application",
                   "--pyargv", f"--config-file {E / 'cinder/cinder.conf'} --log-file {L / 'cinder-api.log'}")

    def start_daemons(self):
        """Nova and Cinder's RPC services: they authenticate to Keystone as soon as they start."""
        E, L = self.etc, self.logs
        nova_conf = ["--config-file", str(E / "nova/nova.conf")]
        for svc in ("conductor", "scheduler"):
            self.launch(f"nova-{svc}", [self.bin(f"nova-{svc}"), *nova_conf, "--log-file", str(L / f"nova-{svc}.log")])
        for i, (host, _az) in enumerate(COMPUTE_HOSTS):
            extra = [] if i == 0 else ["--config-file", str(E / f"nova/{host}.conf")]
            self.launch(f"nova-compute-{host}", [self.bin("nova-compute"), *nova_conf, *extra,
                                                  "--log-file", str(L / f"nova-compute-{host}.log")])
        for svc in ("scheduler", "volume"):
            self.launch(f"cinder-{svc}", [self.bin(f"cinder-{svc}"), "--config-file", str(E / "cinder/cinder.conf"),
                                          "--log-file", str(L / f"cinder-{svc}.log")])

    def start_octavia(self):
        E = self.etc
        args = f"--config-file {E / 'octavia/octavia.conf'} --config-file {E / 'octavia/amphora.conf'}"
        self.uwsgi("octavia-api", "octavia.wsgi.api:application", "--pyargv", args)
        self.launch("octavia-worker", [self.bin("octavia-worker"), *args.split()])

    def stop(self, name, timeout=30):
        """SIGTERM to the process group `name` was launched as, waiting until it is gone (SIGKILL
        after `timeout`)."""
        f = self.pidfile(name)
        if not f:
            return
        pid = int(f.read_text().strip())
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while self.alive(name):
            if time.monotonic() > deadline:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        f.unlink(missing_ok=True)

    def restart_nova(self):
        """Nova's API and compute hosts started again on freshly written configuration (Nova's
        soft delete is theirs: reclaim_instance_interval), every other service and every
        database row left as they are: seconds, not a whole start."""
        ready = self.dir / "ready"
        clouds = ready.read_text()
        ready.unlink()
        # New pid files sort after the others, so a stop still stops the services first.
        self.order = max((int(f.name.split("-", 1)[0]) for f in self.pids.glob("*.pid")), default=0)
        self.write_configs()
        computes = [f"nova-compute-{host}" for host, _ in COMPUTE_HOSTS]
        for name in ["nova-api", *computes]:
            self.stop(name)
        since = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        self.uwsgi("nova-api", "nova.wsgi.osapi_compute:application",
                   "--env", f"OS_NOVA_CONFIG_DIR={self.etc / 'nova'}",
                   "--env", "OS_NOVA_CONFIG_FILES=api-paste.ini;nova.conf")
        nova_conf = ["--config-file", str(self.etc / "nova/nova.conf")]
        for i, (host, _az) in enumerate(COMPUTE_HOSTS):
            extra = [] if i == 0 else ["--config-file", str(self.etc / f"nova/{host}.conf")]
            self.launch(f"nova-compute-{host}", [self.bin("nova-compute"), *nova_conf, *extra,
                                                  "--log-file", str(self.logs / f"nova-compute-{host}.log")])
        self.wait_http("nova-api", "/")
        # Each new compute host reports to the database as it starts.
        c = self.connect()
        deadline = time.monotonic() + 120
        while True:
            fresh = {s.host for s in c.compute.services(binary="nova-compute")
                     if s.updated_at and datetime.datetime.fromisoformat(s.updated_at.rstrip("Z")) >= since}
            if fresh >= {h for h, _ in COMPUTE_HOSTS}:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"nova-compute did not report after its restart; see {self.logs}/nova-compute-*.log")
            time.sleep(1)
        c.close()
        ready.write_text(clouds)
        say(f"nova restarted (reclaim_instance_interval={reclaim_interval()})")
        return clouds.strip()

    # --- Keystone and fixtures (admin API calls) -----------------------------------------------

    def connect(self, project="admin", user="admin", password=ADMIN_PASSWORD):
        import openstack
        return openstack.connect(auth_url=KEYSTONE_URL, username=user, password=password,
                                 project_name=project, user_domain_name="Default",
                                 project_domain_name="Default", region_name=REGION,
                                 identity_api_version="3")

    def register_identity(self):
        stamp = self.state / "identity.done"
        if stamp.exists():
            return
        c = self.connect()
        idn = c.identity
        roles = {r.name: r for r in idn.roles()}
        for name in ("member", "reader", "service", "load-balancer_member", "load-balancer_observer",
                     "load-balancer_global_observer", "load-balancer_quota_admin", "load-balancer_admin"):
            if name not in roles:
                roles[name] = idn.create_role(name=name)
        service = idn.find_project("service", domain_id="default") or \
            idn.create_project(name="service", domain_id="default", description="OpenStack service users")
        for user in SERVICE_USERS:
            u = idn.find_user(user, domain_id="default") or \
                idn.create_user(name=user, password=SERVICE_PASSWORD, domain_id="default")
            for role in ("admin", "service"):
                idn.assign_project_role_to_user(service, u, roles[role])
        for name, typ, url in CATALOG:
            svc = idn.find_service(name) or idn.create_service(name=name, type=typ)
            have = {e.interface for e in idn.endpoints(service_id=svc.id)}
            for iface in ("public", "internal", "admin"):
                if iface not in have:
                    idn.create_endpoint(service_id=svc.id, interface=iface, url=url, region_id=REGION)
        project = idn.find_project(CAPO_PROJECT, domain_id="default") or \
            idn.create_project(name=CAPO_PROJECT, domain_id="default", description="capo tests")
        user = idn.find_user(CAPO_USER, domain_id="default") or \
            idn.create_user(name=CAPO_USER, password=MEMBER_PASSWORD, domain_id="default",
                            default_project_id=project.id)
        for role in CAPO_ROLES:
            idn.assign_project_role_to_user(project, user, roles[role])
        stamp.write_text("ok\n")

    def wait_http(self, name, path="/", timeout=180):
        import urllib.error
        import urllib.request
        self.wait_port(name, timeout)
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(f"http://{HOST}:{PORTS[name]}{path}", timeout=10).read()
                return
            except urllib.error.HTTPError:
                return  # any HTTP answer means the app is loaded
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{name} does not answer HTTP; see {self.logs}/{name}*")
                time.sleep(0.3)

    def wait_computes(self, c, timeout=240):
        hosts = {h for h, _ in COMPUTE_HOSTS}
        deadline = time.monotonic() + timeout
        while True:
            up = {s.host for s in c.compute.services(binary="nova-compute") if s.state == "up"}
            if hosts <= up:
                self.run("nova-discover-hosts", [self.bin("nova-manage"), "--config-file",
                                                 str(self.etc / "nova/nova.conf"), "cell_v2", "discover_hosts"])
                names = {h.name for h in c.compute.hypervisors()}
                if len(names) >= len(hosts):
                    return
            if time.monotonic() > deadline:
                raise SystemExit(f"nova-compute hosts {sorted(hosts - up)} not up; see {self.logs}/nova-compute-*.log")
            time.sleep(1)

    def fixtures(self, c):
        net = c.network
        svc_project = c.identity.find_project("service", domain_id="default")
        public = net.find_network("public") or net.create_network(
            name="public", is_router_external=True, is_shared=False, provider_network_type="flat",
            provider_physical_network="public", description="external network (no data plane)")
        if not net.find_subnet("public-subnet", network_id=public.id):
            net.create_subnet(name="public-subnet", network_id=public.id, ip_version=4,
                              cidr="172.24.4.0/24", gateway_ip="172.24.4.1", is_dhcp_enabled=False,
                              allocation_pools=[{"start": "172.24.4.10", "end": "172.24.4.250"}])
        # Octavia makes a security group, ports and an amphora server per load balancer in the
        # service project: its quotas are lifted, as operators do on a real cloud (with the
        # defaults, ten load balancers exhaust the security groups and the next goes to ERROR).
        net.update_quota(svc_project.id, security_groups=-1, security_group_rules=-1, ports=-1,
                         networks=-1, subnets=-1)
        c.set_compute_quotas(svc_project.id, instances=-1, cores=-1, ram=-1, server_groups=-1,
                             server_group_members=-1)
        # Octavia's management network, security group and amphora image/flavor live in the
        # service project, as on a real cloud.
        mgmt = net.find_network("lb-mgmt-net", project_id=svc_project.id) or net.create_network(
            name="lb-mgmt-net", project_id=svc_project.id)
        if not net.find_subnet("lb-mgmt-subnet", network_id=mgmt.id):
            net.create_subnet(name="lb-mgmt-subnet", network_id=mgmt.id, project_id=svc_project.id,
                              ip_version=4, cidr="192.168.254.0/24")
        sg = net.find_security_group("lb-mgmt-sec-grp", project_id=svc_project.id) or \
            net.create_security_group(name="lb-mgmt-sec-grp", project_id=svc_project.id)

        blob = self.state / "fake-image.raw"
        if not blob.exists():
            blob.write_bytes(b"\0" * (1 << 20))
        if not c.image.find_image("cirros-fake"):
            c.image.create_image(name="cirros-fake", filename=str(blob), disk_format="raw",
                                 container_format="bare", visibility="public", wait=True)
        octavia = self.connect(project="service", user="octavia", password=SERVICE_PASSWORD)
        if not octavia.image.find_image("amphora-fake"):
            octavia.image.create_image(name="amphora-fake", filename=str(blob), disk_format="raw",
                                       container_format="bare", visibility="private",
                                       tags=["amphora"], wait=True)
        octavia.close()
        for fid, name, vcpus, ram, disk in (("1", "m1.small", 1, 2048, 20), ("2", "m1.medium", 2, 4096, 40),
                                            ("3", "m1.large", 4, 8192, 80)):
            if not c.compute.find_flavor(name):
                c.compute.create_flavor(id=fid, name=name, vcpus=vcpus, ram=ram, disk=disk)
        # The amphora flavor is private to the service project, as on a real cloud.
        if not c.compute.find_flavor("amphora", ignore_missing=True, is_public=None):
            amp = c.compute.create_flavor(id="amphora", name="amphora", vcpus=1, ram=1024, disk=2,
                                          is_public=False)
            c.compute.flavor_add_tenant_access(amp, svc_project.id)
        # Every host in an aggregate of its zone, the default zone too: Nova's placement prefilter
        # only narrows hosts for zones that have an aggregate.
        for host, az in COMPUTE_HOSTS:
            agg = next((a for a in c.compute.aggregates() if a.name == az), None) or \
                c.compute.create_aggregate(name=az, availability_zone=az)
            if host not in (agg.hosts or []):
                c.compute.add_host_to_aggregate(agg, host)
        self.write("octavia/amphora.conf", ini({"controller_worker": {
            "amp_image_tag": "amphora", "amp_image_owner_id": svc_project.id, "amp_flavor_id": "amphora",
            "amp_boot_network_list": mgmt.id, "amp_secgroup_list": sg.id}}))

    def write_clouds_yaml(self):
        def cloud(user, password, project):
            return textwrap.dedent(f"""\
                    auth:
                      auth_url: {KEYSTONE_URL}
                      username: {user}
                      password: {password}
                      project_name: {project}
                      user_domain_name: Default
                      project_domain_name: Default
                    region_name: {REGION}
                    interface: public
                    identity_api_version: 3
                """)
        body = ("# Written by hack/openstack-env.sh: real OpenStack services on 127.0.0.1 (test-only passwords).\n"
                "clouds:\n"
                "  capo-real:\n" + textwrap.indent(cloud(CAPO_USER, MEMBER_PASSWORD, CAPO_PROJECT), "    ")
                + "  capo-real-admin:\n" + textwrap.indent(cloud("admin", ADMIN_PASSWORD, "admin"), "    "))
        path = self.dir / "clouds.yaml"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(body)
        tmp.replace(path)
        return path

    # --- the whole sequence --------------------------------------------------------------------

    def start(self):
        ready = self.dir / "ready"
        ready.unlink(missing_ok=True)
        self.start_clean()
        self.write_configs()
        say("configs written; starting MariaDB, RabbitMQ, memcached")
        self.start_infra()
        restored = self.restore_baseline()
        self.sync_schemas()
        say("infrastructure up; starting services")
        self.start_services()
        registered = (self.state / "identity.done").exists()
        if registered:
            self.start_daemons()
        self.wait_http("keystone", "/v3")
        say("keystone up")
        if not registered:
            self.register_identity()
            say("service users, catalog and project capo registered")
            self.start_daemons()
        for name, path in (("placement", "/"), ("glance", "/"), ("neutron", "/"), ("nova-api", "/"),
                           ("cinder-api", "/")):
            self.wait_http(name, path)
            say(f"{name} up")
        c = self.connect()
        self.wait_computes(c)
        say(f"{len(COMPUTE_HOSTS)} nova-compute hosts registered")
        self.fixtures(c)
        say("fixtures in place (public network, images, flavors, availability zones)")
        self.start_octavia()
        self.wait_http("octavia-api", "/")
        say("octavia up")
        c.close()
        if not restored:
            self.save_baseline()
        path = self.write_clouds_yaml()
        ready.write_text(f"{path}\n")
        say("ready")
        return path


def _shq(s):
    s = str(s)
    return s if all(ch.isalnum() or ch in "-_./=:,@%+" for ch in s) else "'" + s.replace("'", "'\\''") + "'"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["start", "restart-nova"])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--repo", default=str(pathlib.Path(__file__).resolve().parents[2]))
    a = ap.parse_args()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env = Env(a.dir, a.venv, a.key, a.repo)
    print(env.restart_nova() if a.command == "restart-nova" else env.start())


if __name__ == "__main__":
    main()
