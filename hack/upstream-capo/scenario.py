#!/usr/bin/env python3
"""Upstream CAPO on capo-sim: create a cluster and two machines, delete them, check nothing is left.

Run through hack/upstream-capo.sh scenario (which builds everything and isolates the network).
Starts etcd, kube-apiserver, capo-sim and the upstream manager on 127.0.0.1, plays Cluster API by
hand (Cluster, Machines, their status), and exits non-zero on any failure after printing the
manager's log tail and the objects' status. Python standard library only.
"""
import argparse, base64, json, os, secrets, shutil, signal, socket, ssl, string, subprocess, sys, tempfile, time
import urllib.request

NS = "default"
CLUSTER = "upstream"
MACHINES = [  # name, the role label, the OpenStackMachine template
    ("upstream-control-plane", 'cluster.x-k8s.io/control-plane: ""', "openstackmachine.yaml"),
    ("upstream-worker", "capo.test/role: worker", "openstackmachine-worker.yaml")]
TIMEOUT = float(os.environ.get("CAPO_UPSTREAM_TIMEOUT", "300"))  # per phase, seconds
CLOUD = os.environ.get("CAPO_UPSTREAM_CLOUD", "capo-sim")  # or capo-sim-appcred
TLS = bool(os.environ.get("CAPO_UPSTREAM_TLS"))  # capo-sim --tls, its CA as the Secret's cacert


class Failure(Exception):
    pass


class Scenario:
    def __init__(self, args):
        self.a = args
        self.dir = tempfile.mkdtemp(prefix="capo-upstream-")
        self.procs = []  # (name, Popen, log path)
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.timings = {}
        self.ssl = None  # TLS context for capo-sim's control API

    # --- processes --------------------------------------------------------------------------
    def spawn(self, name, argv, env=None):
        log = os.path.join(self.dir, f"{name}.log")
        p = subprocess.Popen(argv, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.procs.append((name, p, log))
        return p, log

    def log(self, name):
        return next(log for n, _, log in self.procs if n == name)

    def stop_all(self):
        for _, p, _ in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()

    def check_alive(self):
        for name, p, log in self.procs:
            if p.poll() is not None:
                raise Failure(f"{name} exited with {p.returncode} (log: {log})")

    def wait(self, what, cond, timeout=TIMEOUT, interval=0.5):
        start = time.monotonic()
        while True:
            self.check_alive()
            value = cond()
            if value:
                return value
            if time.monotonic() - start > timeout:
                raise Failure(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(interval)

    # --- helpers ----------------------------------------------------------------------------
    def sh(self, *argv, input=None, check=True):
        r = subprocess.run(argv, input=input, capture_output=True, text=True, cwd=self.dir)
        if check and r.returncode != 0:
            raise Failure(f"{' '.join(argv[:4])}... failed: {r.stderr.strip()}")
        return r

    def kubectl(self, *args, input=None, check=True):
        return self.sh(os.path.join(self.a.test_env, "bin/kubectl"), "--kubeconfig", self.kubeconfig,
                       "-n", NS, *args, input=input, check=check).stdout

    def get(self, kind, name):
        r = self.kubectl("get", kind, name, "-o", "json", check=False)
        return json.loads(r) if r else None

    def apply(self, template, **values):
        with open(os.path.join(self.a.manifests, template)) as f:
            text = string.Template(f.read()).substitute(NAMESPACE=NS, CLUSTER=CLUSTER, CLOUD=CLOUD, **values)
        self.kubectl("apply", "-f", "-", input=text)

    def sim(self, path, method="GET", body=None):
        req = urllib.request.Request(self.sim_url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30, context=self.ssl) as r:
            return json.loads(r.read() or b"null")

    @staticmethod
    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    # --- start ------------------------------------------------------------------------------
    def start_kubernetes(self):
        d, x509 = self.dir, ["openssl", "req", "-x509", "-nodes", "-days", "1", "-newkey", "ec",
                           "-pkeyopt", "ec_paramgen_curve:prime256v1",
                           "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
        self.sh(*x509, "-subj", "/CN=kube-apiserver", "-keyout", "api.key", "-out", "api.crt")
        self.sh("openssl", "genrsa", "-out", "sa.key", "2048")
        self.sh("openssl", "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        os.makedirs(f"{d}/webhook-certs")
        self.sh(*x509, "-subj", "/CN=capo-webhook", "-keyout", "webhook-certs/tls.key",
                "-out", "webhook-certs/tls.crt")
        token = secrets.token_hex(24)
        with open(f"{d}/tokens.csv", "w") as f:
            f.write(f'{token},capo-admin,capo-admin,"system:masters"\n')
        etcd, peer, api = self.free_port(), self.free_port(), self.free_port()
        bin_ = os.path.join(self.a.test_env, "bin")
        self.spawn("etcd", [f"{bin_}/etcd", f"--data-dir={d}/etcd", "--name=upstream",
                            f"--listen-client-urls=http://127.0.0.1:{etcd}",
                            f"--advertise-client-urls=http://127.0.0.1:{etcd}",
                            f"--listen-peer-urls=http://127.0.0.1:{peer}",
                            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                            f"--initial-cluster=upstream=http://127.0.0.1:{peer}",
                            "--unsafe-no-fsync=true", "--log-level=warn"])
        self.spawn("kube-apiserver", [
            f"{bin_}/kube-apiserver", f"--etcd-servers=http://127.0.0.1:{etcd}",
            f"--secure-port={api}", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--tls-cert-file={d}/api.crt", f"--tls-private-key-file={d}/api.key",
            f"--token-auth-file={d}/tokens.csv", "--authorization-mode=RBAC",
            f"--service-account-issuer=https://127.0.0.1:{api}",
            f"--service-account-key-file={d}/sa.pub", f"--service-account-signing-key-file={d}/sa.key",
            "--service-cluster-ip-range=10.0.0.0/24", "--disable-admission-plugins=ServiceAccount",
            "--enable-priority-and-fairness=false", "--v=1"])
        ca = base64.b64encode(open(f"{d}/api.crt", "rb").read()).decode()
        with open(self.kubeconfig, "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters: [{{name: local, cluster: {{server: "https://127.0.0.1:{api}", certificate-authority-data: {ca}}}}}]
users: [{{name: admin, user: {{token: {token}}}}}]
contexts: [{{name: local, context: {{cluster: local, user: admin}}}}]
current-context: local
""")
        self.wait("kube-apiserver /readyz",
                  lambda: self.kubectl("get", "--raw", "/readyz", check=False).strip() == "ok", 120)
        crds = sorted(os.path.join(dir_, f) for dir_ in (f"{self.a.test_env}/crds", f"{self.a.upstream}/crds")
                      for f in os.listdir(dir_) if f.endswith(".yaml"))
        for crd in crds:
            self.kubectl("apply", "--server-side", "-f", crd)
        self.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        print(f"kube-apiserver on 127.0.0.1:{api} with {len(crds)} CRDs", file=sys.stderr)

    def start_sim(self):
        clouds = os.path.join(self.dir, "clouds.yaml")
        _, log = self.spawn("capo-sim", [self.a.sim, "--listen", "127.0.0.1:0", "--clouds-yaml", clouds]
                            + (["--tls"] if TLS else []))
        line = self.wait("capo-sim to listen", lambda: open(log).readline().strip(), 30, 0.1)
        if TLS:  # the control API is served on the same TLS port
            self.ssl = ssl.create_default_context(cafile=os.path.join(self.dir, "ca.pem"))
        self.sim_url = line.rsplit(" ", 1)[-1]
        self.clouds_b64 = base64.b64encode(open(clouds, "rb").read()).decode()
        self.cacert_b64 = base64.b64encode(open(os.path.join(self.dir, "ca.pem"), "rb").read()).decode() if TLS else None
        projects = self.sim("/_sim/projects")
        self.project = next(p["id"] for p in (projects if isinstance(projects, list) else projects["projects"])
                            if p["name"] == "capo")
        if os.environ.get("CAPO_UPSTREAM_DELAYS"):  # e.g. {"server_build_ms": 5000}
            self.sim("/_sim/delays", "PUT", json.loads(os.environ["CAPO_UPSTREAM_DELAYS"]))
        print(f"capo-sim on {self.sim_url}, delays {self.sim('/_sim/delays')}", file=sys.stderr)

    def start_manager(self):
        self.spawn("capo-upstream", [
            os.path.join(self.a.upstream, "bin/capo-upstream"), f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false", "--diagnostics-address=0",  # "0" disables the metrics server
            f"--health-addr=127.0.0.1:{self.free_port()}",
            f"--webhook-port={self.free_port()}", f"--webhook-cert-dir={self.dir}/webhook-certs",
            "--v=2"])

    # --- the scenario -----------------------------------------------------------------------
    def status(self, kind, name, *path):
        obj = self.get(kind, name) or {}
        for key in ("status",) + path:
            obj = obj.get(key) if isinstance(obj, dict) else None
        return obj

    def run(self):
        self.start_kubernetes()
        self.start_sim()
        self.start_manager()
        self.sim("/_sim/requests", "DELETE")
        t0 = time.monotonic()

        self.apply("cluster.yaml", CLOUDS_YAML_B64=self.clouds_b64,
                   CACERT_LINE=f"cacert: {self.cacert_b64}" if self.cacert_b64 else "")
        uid = self.get("cluster", CLUSTER)["metadata"]["uid"]
        self.apply("openstackcluster.yaml", CLUSTER_UID=uid)
        self.wait("OpenStackCluster status.ready", lambda: self.status("openstackcluster", CLUSTER, "ready"))
        self.wait("the bastion ACTIVE", lambda: self.status("openstackcluster", CLUSTER, "bastion", "state") == "ACTIVE")
        self.timings["cluster and bastion ready"] = time.monotonic() - t0
        # Cluster API's cluster controller: copy the endpoint, mark the infrastructure provisioned.
        osc = self.get("openstackcluster", CLUSTER)
        endpoint = osc["spec"]["controlPlaneEndpoint"]
        self.kubectl("patch", "cluster", CLUSTER, "--type=merge",
                     "-p", json.dumps({"spec": {"controlPlaneEndpoint": endpoint}}))
        self.kubectl("patch", "cluster", CLUSTER, "--subresource=status", "--type=merge",
                     "-p", json.dumps({"status": {"initialization": {"infrastructureProvisioned": True}}}))
        print(f"cluster ready in {self.timings['cluster and bastion ready']:.1f} s, endpoint {endpoint}", file=sys.stderr)

        t1 = time.monotonic()
        for name, role, template in MACHINES:
            self.apply("machine.yaml", MACHINE=name, ROLE_LABEL=role)
            muid = self.get("machine", name)["metadata"]["uid"]
            self.apply(template, MACHINE=name, ROLE_LABEL=role, MACHINE_UID=muid)
        for name, *_ in MACHINES:
            # v0.14 keeps instanceState on the OpenStackServer the OpenStackMachine creates.
            self.wait(f"OpenStackMachine {name} ready, its OpenStackServer ACTIVE",
                      lambda: self.status("openstackmachine", name, "ready")
                      and self.status("openstackserver", name, "instanceState") == "ACTIVE")
        self.timings["machines ready"] = time.monotonic() - t1
        print(f"machines ready in {self.timings['machines ready']:.1f} s", file=sys.stderr)
        self.check_sim_created()

        t2 = time.monotonic()
        # Cluster API deletes the infrastructure machine before removing the Machine's finalizer.
        for name, *_ in MACHINES:
            self.kubectl("delete", "openstackmachine", name, "--wait=false")
        for name, *_ in MACHINES:
            self.wait(f"OpenStackMachine {name} gone", lambda: self.get("openstackmachine", name) is None)
            self.kubectl("delete", "machine", name)
        self.timings["machines deleted"] = time.monotonic() - t2
        t3 = time.monotonic()
        self.kubectl("delete", "openstackcluster", CLUSTER, "--wait=false")
        self.wait("OpenStackCluster gone", lambda: self.get("openstackcluster", CLUSTER) is None)
        self.timings["cluster deleted"] = time.monotonic() - t3
        self.kubectl("delete", "cluster", CLUSTER)
        self.timings["total"] = time.monotonic() - t0
        self.check_sim_empty()
        self.report()

    def check_sim_created(self):
        """What upstream built, as capo-sim sees it (also saved to sim-state.json)."""
        state = self.sim(f"/_sim/state?project={self.project}")
        with open(os.path.join(self.dir, "sim-state.json"), "w") as f:
            json.dump(state, f, indent=1)
        counts = {c: len(v) for c, v in sorted(state.items()) if isinstance(v, list)}
        print(f"capo-sim holds: {counts}", file=sys.stderr)
        # Servers: control plane, worker, bastion; floating IPs: API load balancer, bastion;
        # security groups: default, control plane, worker, bastion; volumes: worker's root and data;
        # a trunk on the worker's port.
        want = {"servers": 3, "networks": 1, "subnets": 1, "routers": 1, "floatingips": 2,
                "security_groups": 4, "loadbalancers": 1, "listeners": 1, "pools": 1,
                "members": 1, "healthmonitors": 1, "volumes": 2, "trunks": 1}
        wrong = {c: (counts.get(c, 0), n) for c, n in want.items() if counts.get(c, 0) != n}
        if wrong:
            raise Failure(f"unexpected resources in capo-sim (have, want): {wrong}")
        lb = state["loadbalancers"][0]
        fip_ports = {f.get("port_id") for f in state["floatingips"]}
        if lb.get("provisioning_status") != "ACTIVE" or lb.get("vip_port_id") not in fip_ports:
            raise Failure(f"load balancer {lb.get('provisioning_status')}, VIP port {lb.get('vip_port_id')}, "
                          f"floating IPs on {fip_ports}")
        untagged = [f"{c} {r.get('name') or r['id']}" for c in ("networks", "subnets", "routers")
                    for r in state[c] if "capo-upstream" not in r.get("tags", [])]
        if untagged:
            raise Failure(f"not tagged capo-upstream in capo-sim: {untagged}")
        worker = [p for p in state["ports"] if p["name"].startswith("upstream-worker")]
        if [i["ip_address"] for p in worker for i in p["fixed_ips"]] != ["10.6.0.50"]:
            raise Failure(f"worker ports: {[(p['name'], p['fixed_ips']) for p in worker]}")
        if any(srv.get("status") != "ACTIVE" for srv in state["servers"]):
            raise Failure("a server is not ACTIVE in capo-sim")

    def check_sim_empty(self):
        state = self.sim(f"/_sim/state?project={self.project}")
        left = {}
        for coll, items in state.items():
            if not isinstance(items, list):
                continue
            if coll == "security_groups":
                items = [i for i in items if i.get("name") != "default"]
            elif coll == "security_group_rules":
                default = {g["id"] for g in state.get("security_groups", []) if g.get("name") == "default"}
                items = [i for i in items if i.get("security_group_id") not in default]
            if items:
                left[coll] = [i.get("name") or i.get("id") for i in items]
        if left:
            raise Failure(f"capo-sim still holds the project's resources: {json.dumps(left)}")
        print("capo-sim: nothing left but the default security group", file=sys.stderr)

    def report(self):
        reqs = self.sim("/_sim/requests")
        writes = [r for r in reqs if r["method"] not in ("GET", "HEAD")]
        errors = [r for r in reqs if r["status"] >= 400]
        print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items()))
        print(f"capo-sim requests: {len(reqs)} total, {len(writes)} writes, {len(errors)} >= 400")
        for r in errors[:20]:
            print(f"  {r['status']} {r['method']} {r['path']}")
        counters = self.sim("/_sim/counters")
        print("capo-sim writes by route:")
        for route, n in sorted(counters.items()):
            if not any(f" {m} " in route for m in ("GET", "HEAD")):
                print(f"  {n:3} {route}")
        with open(self.log("capo-upstream"), errors="replace") as f:
            errs = [line.rstrip() for line in f if line.startswith("E")]
        # A deleted object still in the manager's cache (a Kubernetes-side race) is not about capo-sim.
        k8s = [e for e in errs if 'x-k8s.io \\"' in e and 'not found' in e]
        print(f"upstream manager: {len(errs)} error lines, {len(k8s)} of them about a Kubernetes object not found")
        for line in [e for e in errs if e not in k8s][:10] + k8s[:2]:
            print("  " + line[:300])

    def diagnose(self):
        for name, p, log in self.procs:
            if name == "capo-upstream" or p.poll() is not None:
                print(f"--- {name} log tail ({log}) ---", file=sys.stderr)
                with open(log, errors="replace") as f:
                    print("".join(f.readlines()[-60:]), file=sys.stderr)
        for kind in ("cluster", "openstackcluster", "machine", "openstackmachine", "openstackserver"):
            r = self.kubectl("get", kind, "-o", "yaml", check=False)
            print(f"--- {kind} ---\n{r}", file=sys.stderr)
        if hasattr(self, "sim_url"):
            reqs = self.sim("/_sim/requests")
            print(f"--- capo-sim: last of {len(reqs)} requests ---", file=sys.stderr)
            for r in reqs[-30:]:
                print(f"  {r['status']} {r['method']} {r['path']}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--test-env", "--upstream", "--sim", "--manifests"):
        p.add_argument(flag, required=True)
    s = Scenario(p.parse_args())
    def interrupted(signum, _frame):
        raise KeyboardInterrupt(signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):  # stop the servers on these too
        signal.signal(sig, interrupted)
    ok = False
    try:
        s.run()
        ok = True
    except Exception as e:  # noqa: BLE001 - any failure gets the diagnostics
        print(f"FAILED: {e}", file=sys.stderr)
        try:
            s.diagnose()
        except Exception as d:  # diagnostics must not hide the failure
            print(f"(diagnostics failed: {d})", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    finally:
        s.stop_all()
        if ok and not os.environ.get("CAPO_UPSTREAM_KEEP"):
            shutil.rmtree(s.dir, ignore_errors=True)
        else:
            print(f"work directory kept: {s.dir}", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
