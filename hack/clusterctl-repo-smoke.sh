#!/usr/bin/env bash
# Smoke test of a hack/clusterctl-repo.sh build without a cluster of nodes: the cert-manager images'
# binaries (mains of ours, hack/clusterctl-repo/cert-manager) run against a throwaway kube-apiserver
# and etcd from hack/test-env.sh, with the CRDs of the rendered cert-manager.yaml:
#   - the controller (with leader election) issues a self-signed Certificate,
#   - the cainjector injects its CA into a ValidatingWebhookConfiguration (inject-ca-from),
#   - the webhook creates its serving CA, answers /healthz and denies an invalid Certificate,
#   - clusterctl init list-images reads every provider and cert-manager from clusterctl.yaml.
# Everything listens on 127.0.0.1 (the webhook's healthz port excepted: it binds every interface).
#
#   hack/clusterctl-repo-smoke.sh [<dir>]   <dir>: a build (default: hack/clusterctl-repo.sh build)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "clusterctl-repo-smoke: $*" >&2; }
die() { say "FAIL: $*"; exit 1; }

dir=${1:-$("$repo/hack/clusterctl-repo.sh" build | tail -n 1)}
te=$("$repo/hack/test-env.sh" | tail -n 1)
work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -n "${CAPO_SMOKE_KEEP:-}" ]] && say "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

# The binaries, out of the image archives (one layer each).
for c in controller webhook cainjector; do
  python3 - "$dir/images/cert-manager-$c.tar" "app/cmd/$c/$c" "$c" <<'PY'
import io, json, sys, tarfile
archive, member, out = sys.argv[1:]
t = tarfile.open(archive)
blob = lambda d: t.extractfile("blobs/sha256/" + d.split(":", 1)[1]).read()
index = json.load(t.extractfile("index.json"))
manifest = json.loads(blob(index["manifests"][0]["digest"]))
layer = tarfile.open(fileobj=io.BytesIO(blob(manifest["layers"][0]["digest"])), mode="r:gz")
open(out, "wb").write(layer.extractfile(member).read())
PY
  chmod +x "$c"
done

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
x509=(openssl req -x509 -nodes -days 1 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -addext "subjectAltName=IP:127.0.0.1,DNS:localhost")
"${x509[@]}" -subj /CN=kube-apiserver -keyout api.key -out api.crt 2>/dev/null
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
token=$(openssl rand -hex 24)
echo "$token,admin,admin,\"system:masters\"" >tokens.csv
etcd=$(port) peer=$(port) api=$(port)
"$te/bin/etcd" --data-dir=etcd --name=smoke --listen-client-urls="http://127.0.0.1:$etcd" \
  --advertise-client-urls="http://127.0.0.1:$etcd" --listen-peer-urls="http://127.0.0.1:$peer" \
  --initial-advertise-peer-urls="http://127.0.0.1:$peer" --initial-cluster="smoke=http://127.0.0.1:$peer" \
  --unsafe-no-fsync=true --log-level=warn >etcd.log 2>&1 &
pids+=($!)
"$te/bin/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd" --secure-port="$api" --bind-address=127.0.0.1 \
  --advertise-address=127.0.0.1 --tls-cert-file=api.crt --tls-private-key-file=api.key --token-auth-file=tokens.csv \
  --authorization-mode=RBAC --service-account-issuer="https://127.0.0.1:$api" --service-account-key-file=sa.pub \
  --service-account-signing-key-file=sa.key --service-cluster-ip-range=10.0.0.0/24 \
  --disable-admission-plugins=ServiceAccount --v=1 >apiserver.log 2>&1 &
pids+=($!)
cat >kubeconfig <<K
apiVersion: v1
kind: Config
clusters: [{name: l, cluster: {server: "https://127.0.0.1:$api", certificate-authority-data: $(base64 -w0 api.crt)}}]
users: [{name: a, user: {token: $token}}]
contexts: [{name: l, context: {cluster: l, user: a}}]
current-context: l
K
k() { "$te/bin/kubectl" --kubeconfig kubeconfig "$@"; }
until [[ "$(k get --raw /readyz 2>/dev/null)" == ok ]]; do ((SECONDS < 120)) || die "kube-apiserver not ready"; sleep 1; done

manifest="$dir/repo/cert-manager/v1.21.1/cert-manager.yaml"
python3 - "$manifest" >crds.yaml <<'PY'
import sys
docs = open(sys.argv[1]).read().split("\n---\n")
print("\n---\n".join(d for d in docs if "\nkind: CustomResourceDefinition\n" in "\n" + d + "\n"))
PY
k apply --server-side -f crds.yaml >/dev/null
k wait --for=condition=Established crd --all --timeout=60s >/dev/null

images=$(CLUSTERCTL_DISABLE_VERSIONCHECK=true "$dir/bin/clusterctl" init list-images --kubeconfig kubeconfig \
  --config "$dir/clusterctl.yaml" --core cluster-api:v1.14.2 --bootstrap kubeadm:v1.14.2 \
  --control-plane kubeadm:v1.14.2 --infrastructure openstack:v0.14.7)
[[ "$(echo "$images" | sort)" == "$(cut -d' ' -f1 "$dir/images.txt" | grep -v openstack-resource-controller | sort)" ]] ||
  die "clusterctl init list-images: $images"
say "ok: clusterctl init list-images lists images.txt (ORC aside)"

k create namespace cert-manager >/dev/null
./controller --kubeconfig kubeconfig --v=2 --cluster-resource-namespace=cert-manager \
  --leader-election-namespace=kube-system --metrics-listen-address="127.0.0.1:$(port)" \
  --healthz-listen-address="127.0.0.1:$(port)" >controller.log 2>&1 &
pids+=($!)
./cainjector --kubeconfig kubeconfig --v=2 --leader-election-namespace=kube-system --metrics-listen-address=0 >cainjector.log 2>&1 &
pids+=($!)
webhook_port=$(port) healthz_port=$(port)
./webhook --kubeconfig kubeconfig --v=2 --secure-port="$webhook_port" --healthz-port="$healthz_port" \
  --dynamic-serving-ca-secret-namespace=cert-manager --dynamic-serving-ca-secret-name=cert-manager-webhook-ca \
  --dynamic-serving-dns-names=localhost --metrics-listen-address=0 >webhook.log 2>&1 &
pids+=($!)
k apply -f - >/dev/null <<Y
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: selfsigned, namespace: default}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: serving-cert, namespace: default}
spec:
  secretName: serving-cert
  dnsNames: [svc.default.svc]
  issuerRef: {name: selfsigned, kind: Issuer}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: injected
  annotations: {cert-manager.io/inject-ca-from: default/serving-cert}
webhooks:
- name: x.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig: {service: {name: svc, namespace: default, path: /validate}}
  rules: [{apiGroups: ["example.com"], apiVersions: ["v1"], operations: [CREATE], resources: [things]}]
Y
eventually() { # <what> <command...>: up to 90 s
  local until=$((SECONDS + 90))
  until "${@:2}" >/dev/null 2>&1; do ((SECONDS < until)) || die "$1 (logs: CAPO_SMOKE_KEEP=1 keeps $work)"; sleep 1; done
  say "ok: $1"
}
ready() { [[ "$(k get certificate serving-cert -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]; }
injected() { [[ -n "$(k get validatingwebhookconfiguration injected -o jsonpath='{.webhooks[0].clientConfig.caBundle}')" ]]; }
healthy() { [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$healthz_port/healthz")" == 200 ]]; }
denies() {
  curl -sk -X POST -H 'Content-Type: application/json' "https://127.0.0.1:$webhook_port/validate" --data \
    '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1",
      "kind":{"group":"cert-manager.io","version":"v1","kind":"Certificate"},
      "resource":{"group":"cert-manager.io","version":"v1","resource":"certificates"},
      "requestKind":{"group":"cert-manager.io","version":"v1","kind":"Certificate"},
      "requestResource":{"group":"cert-manager.io","version":"v1","resource":"certificates"},
      "operation":"CREATE","userInfo":{"username":"u"},
      "object":{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"name":"bad","namespace":"default"},
                "spec":{"secretName":"x","dnsNames":["a"],"issuerRef":{"name":""}}}}}' |
    grep -q '"allowed":false.*issuerRef.name: Required value'
}
eventually "controller: self-signed Certificate Ready (leader election on kube-system/cert-manager-controller)" ready
eventually "cainjector: CA injected into a ValidatingWebhookConfiguration" injected
eventually "webhook: /healthz 200" healthy
eventually "webhook: serving CA Secret created" k get secret -n cert-manager cert-manager-webhook-ca
eventually "webhook: a Certificate without issuerRef.name denied" denies
say "passed"
