package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryapi "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server/api"
	inmemoryetcd "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server/etcd"
)

// listeners serves the workload clusters: one TLS listener per cluster on exactly the address of
// its control plane endpoint (an address in the served range: each capo cluster has its own floating IP and
// port 6443, so clusters are told apart by address, not by port). Requests are resolved to the
// cluster's in-memory resource group by the address they arrived on.
type listeners struct {
	inmem   inmemoryruntime.Manager
	log     logr.Logger
	handler http.Handler

	mu        sync.RWMutex
	byGroup   map[string]*workloadListener
	byAddress map[string]*workloadListener
}

// workloadListener is one cluster's endpoint: the API server and, on the same address, every etcd
// member (KCP port-forwards to an etcd pod, and the in-memory API server dials the address the
// request came in on, with the pod name as TLS server name).
type workloadListener struct {
	group string
	addr  string
	ip    net.IP

	mu        sync.Mutex
	caPrint   [32]byte
	apiCert   *tls.Certificate
	etcdCA    *authority
	etcdCerts map[string]*tls.Certificate

	ln  *trackingListener // nil while stopped
	srv *http.Server
}

func newListeners(inmem inmemoryruntime.Manager, log logr.Logger) *listeners {
	l := &listeners{
		inmem:     inmem,
		log:       log,
		byGroup:   map[string]*workloadListener{},
		byAddress: map[string]*workloadListener{},
	}
	l.handler = l.newHandler()
	return l
}

// resolve maps the address a request arrived on (host:port) to the cluster's resource group.
func (l *listeners) resolve(hostPort string) (string, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if wl, ok := l.byAddress[hostPort]; ok {
		return wl.group, nil
	}
	return "", fmt.Errorf("no workload cluster is served on %s", hostPort)
}

func (l *listeners) newHandler() http.Handler {
	apiLog := l.log.WithName("workload-apiserver")
	api := inmemoryapi.NewAPIServerHandler(l.inmem, logr.New(quietClosedSink{apiLog.GetSink()}), l.resolve)
	etcd := inmemoryetcd.NewEtcdServerHandler(l.inmem, l.log.WithName("workload-etcd"), l.resolve)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// gRPC is etcd; the etcd handler resolves the cluster from the connection's local address
		// and the member from the :authority, so the request is passed on untouched.
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			etcd.ServeHTTP(w, r)
			return
		}
		// The API handler resolves the cluster from the Host header and port-forwards by dialing
		// it: use the address the connection arrived on, whatever name the client used.
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			r.Host = local.String()
		}
		if r.Method == http.MethodGet && healthPaths[r.URL.Path] {
			l.health(w, r.Host)
			return
		}
		if r.Method == http.MethodPut {
			l.unconditionalUpdate(r)
		}
		if ns, pod, ok := portForwardTarget(r.URL.Path); ok && !l.podExists(r.Host, ns, pod) {
			// A real API server refuses to forward to a pod that does not exist.
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, pod))
			apiLog.V(2).Info("Refused a port-forward to a missing pod", "address", r.Host, "pod", ns+"/"+pod)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// healthPaths are a kube-apiserver's health endpoints, which the in-memory API server does not
// serve. The Ansible control-plane provider reports the control plane initialized once /livez
// answers 200.
var healthPaths = map[string]bool{"/livez": true, "/readyz": true, "/healthz": true}

// health answers a health endpoint as the cluster's API servers would: "ok" once a kube-apiserver
// static pod exists (a control plane has booted), 503 before.
func (l *listeners) health(w http.ResponseWriter, hostPort string) {
	group, err := l.resolve(hostPort)
	if err == nil {
		rg := l.inmem.GetResourceGroup(group).GetClient()
		pods, err := listControlPlanePods(context.Background(), rg, "kube-apiserver")
		if err == nil && len(pods) > 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok"))
			return
		}
	}
	http.Error(w, "no kube-apiserver is running", http.StatusServiceUnavailable)
}

// unconditionalUpdate gives an update without metadata.resourceVersion the current one, which is
// what a real API server does for the built-in kinds (an unconditional update; KCP updates the
// CoreDNS ConfigMap that way), where the in-memory store would report a conflict.
func (l *listeners) unconditionalUpdate(r *http.Request) {
	if r.Body == nil {
		return
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return
	}
	codecs := serializer.NewCodecFactory(l.inmem.GetScheme())
	obj, gvk, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return
	}
	acc, err := meta.Accessor(obj)
	if err != nil || acc.GetResourceVersion() != "" || acc.GetName() == "" {
		return
	}
	group, err := l.resolve(r.Host)
	if err != nil {
		return
	}
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(*gvk)
	key := client.ObjectKey{Namespace: acc.GetNamespace(), Name: acc.GetName()}
	if err := l.inmem.GetResourceGroup(group).GetClient().Get(r.Context(), key, current); err != nil {
		return
	}
	acc.SetResourceVersion(current.GetResourceVersion())
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	data, err := json.Marshal(obj)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.ContentLength = int64(len(data))
	r.Header.Set("Content-Type", "application/json")
}

// portForwardTarget recognises /api/v1/namespaces/<ns>/pods/<name>/portforward.
func portForwardTarget(path string) (string, string, bool) {
	p := strings.Split(strings.Trim(path, "/"), "/")
	if len(p) == 7 && p[0] == "api" && p[1] == "v1" && p[2] == "namespaces" && p[4] == "pods" && p[6] == "portforward" {
		return p[3], p[5], true
	}
	return "", "", false
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_ = json.NewEncoder(w).Encode(&status)
}

func (l *listeners) podExists(hostPort, namespace, name string) bool {
	group, err := l.resolve(hostPort)
	if err != nil {
		return false
	}
	pod := &corev1.Pod{}
	return l.inmem.GetResourceGroup(group).GetClient().Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, pod) == nil
}

// configure records (or updates) the endpoint and certificate authorities of a cluster. It does
// not start serving: see serve.
func (l *listeners) configure(group, addr string, ca, etcdCA *authority) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if other, ok := l.byAddress[addr]; ok && other.group != group {
		return fmt.Errorf("address %s is already served for cluster %s", addr, other.group)
	}
	wl := l.byGroup[group]
	if wl != nil && wl.addr != addr {
		// The endpoint moved: stop serving the old address.
		l.stopLocked(wl, "endpoint changed to "+addr)
		delete(l.byAddress, wl.addr)
		delete(l.byGroup, group)
		wl = nil
	}
	if wl == nil {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return err
		}
		wl = &workloadListener{group: group, addr: addr, ip: net.ParseIP(host), etcdCerts: map[string]*tls.Certificate{}}
		l.byGroup[group] = wl
		l.byAddress[addr] = wl
	}

	wl.mu.Lock()
	defer wl.mu.Unlock()
	if wl.apiCert == nil || wl.caPrint != ca.fingerprint {
		cert, err := ca.apiServerCertificate(wl.ip)
		if err != nil {
			return err
		}
		wl.apiCert, wl.caPrint = cert, ca.fingerprint
	}
	if etcdCA == nil || wl.etcdCA == nil || wl.etcdCA.fingerprint != etcdCA.fingerprint {
		wl.etcdCA = etcdCA
		wl.etcdCerts = map[string]*tls.Certificate{}
	}
	return nil
}

// getCertificate serves an etcd member's certificate when the client asks for an existing etcd
// pod of this cluster by name, and the API server certificate otherwise.
func (l *listeners) getCertificate(wl *workloadListener, hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := hello.ServerName
	if name != "" && l.isEtcdPod(wl.group, name) {
		wl.mu.Lock()
		defer wl.mu.Unlock()
		if cert, ok := wl.etcdCerts[name]; ok {
			return cert, nil
		}
		if wl.etcdCA == nil {
			return nil, fmt.Errorf("no etcd CA known for cluster %s", wl.group)
		}
		cert, err := wl.etcdCA.etcdServingCertificate(name, wl.ip)
		if err != nil {
			return nil, err
		}
		wl.etcdCerts[name] = cert
		return cert, nil
	}
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return wl.apiCert, nil
}

func (l *listeners) isEtcdPod(group, name string) bool {
	pod := &corev1.Pod{}
	err := l.inmem.GetResourceGroup(group).GetClient().Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: name}, pod)
	return err == nil && pod.Labels["component"] == "etcd"
}

// forgetEtcdMember drops the cached certificate of a removed etcd pod.
func (l *listeners) forgetEtcdMember(group, podName string) {
	l.mu.RLock()
	wl := l.byGroup[group]
	l.mu.RUnlock()
	if wl == nil {
		return
	}
	wl.mu.Lock()
	delete(wl.etcdCerts, podName)
	wl.mu.Unlock()
}

// serve starts listening if not already; it binds exactly the endpoint address.
func (l *listeners) serve(group string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	wl := l.byGroup[group]
	if wl == nil {
		return fmt.Errorf("no endpoint configured for cluster %s", group)
	}
	if wl.ln != nil {
		return nil
	}
	raw, err := net.Listen("tcp4", wl.addr) //nolint:noctx
	if err != nil {
		return fmt.Errorf("listening on %s for cluster %s: %w", wl.addr, group, err)
	}
	wl.ln = &trackingListener{Listener: raw, conns: map[net.Conn]struct{}{}}
	wl.srv = &http.Server{
		Handler:           l.handler,
		ReadHeaderTimeout: 30 * time.Second,
		// TLS handshake failures and the like: diagnostics, not events.
		ErrorLog: stdlog.New(logWriter{l.log.WithName("http").V(1)}, "", 0),
		TLSConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				return l.getCertificate(wl, hello)
			},
		},
	}
	srv, ln := wl.srv, wl.ln
	go func() {
		// ServeTLS enables HTTP/2 (which gRPC needs) alongside HTTP/1.1 (which SPDY needs).
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			l.log.Error(err, "Workload cluster listener failed", "cluster", group, "address", wl.addr)
		}
	}()
	l.log.Info("Workload cluster API server listening", "cluster", group, "address", wl.addr)
	return nil
}

func (l *listeners) stopLocked(wl *workloadListener, why string) {
	if wl.ln == nil {
		return
	}
	_ = wl.srv.Close()
	wl.ln.closeAll()
	wl.ln, wl.srv = nil, nil
	l.log.Info("Workload cluster API server stopped", "cluster", wl.group, "address", wl.addr, "reason", why)
}

// remove stops listening and forgets the cluster. It reports whether anything was known.
func (l *listeners) remove(group, why string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	wl := l.byGroup[group]
	if wl == nil {
		return false
	}
	l.stopLocked(wl, why)
	delete(l.byGroup, group)
	delete(l.byAddress, wl.addr)
	return true
}

func (l *listeners) stopAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, wl := range l.byGroup {
		l.stopLocked(wl, "shutting down")
	}
}

// trackingListener remembers its accepted connections so that stopping a cluster also cuts the
// hijacked ones (port-forward streams, watches) that http.Server.Close leaves open.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (t *trackingListener) Accept() (net.Conn, error) {
	c, err := t.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, owner: t}
	t.mu.Lock()
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

func (t *trackingListener) closeAll() {
	_ = t.Listener.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.conns {
		_ = c.(*trackedConn).Conn.Close()
	}
	t.conns = map[net.Conn]struct{}{}
}

type trackedConn struct {
	net.Conn
	owner *trackingListener
	once  sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.conns, c)
		c.owner.mu.Unlock()
	})
	return c.Conn.Close()
}

// logWriter turns the standard logger's lines into log entries.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}

// quietClosedSink demotes the in-memory API server's errors about connections that went away
// (watchers of a stopped listener, clients that hung up) to debug messages.
type quietClosedSink struct{ logr.LogSink }

func (s quietClosedSink) Error(err error, msg string, kv ...any) {
	if errors.Is(err, net.ErrClosed) || (err != nil && (strings.Contains(err.Error(), "use of closed network connection") || strings.Contains(err.Error(), "broken pipe"))) {
		if s.LogSink.Enabled(1) {
			s.LogSink.Info(1, msg, append(kv, "error", err.Error())...)
		}
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s quietClosedSink) WithValues(kv ...any) logr.LogSink {
	return quietClosedSink{s.LogSink.WithValues(kv...)}
}

func (s quietClosedSink) WithName(name string) logr.LogSink {
	return quietClosedSink{s.LogSink.WithName(name)}
}
