// Command capo-workload-emulator makes Machines created by the real Cluster API controllers come
// alive without real servers: for every workload cluster whose control plane endpoint is a
// loopback address (or inside --serve-cidr), it serves an in-memory API server and etcd (the public in-memory packages of
// the Cluster API test module) on exactly that address, and fills it with what kubeadm, the
// kubelets and the cloud controller manager would make appear there: Nodes with the Machines'
// providerIDs, the control plane static pods and etcd members, kubeadm-config, kube-proxy and
// CoreDNS. OpenStackMachine instance states drive Node readiness and deletion.
//
//	capo-workload-emulator --kubeconfig <management cluster kubeconfig> [--namespace <ns>]
//	    [--serve-cidr <IPv4 CIDR>] [-v <n>]
//
// --serve-cidr widens what it serves beyond 127.0.0.0/8 to a range the caller has routed to the
// loopback interface of a network namespace of its own (hack/mgmt-cluster.sh routes 10.253.0.0/16
// there, so the management cluster's pods reach the endpoints); it never binds a real interface.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

func main() {
	// Own flag set: imported packages register flags (controller-runtime a --kubeconfig) on the
	// global one.
	flags := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	var kubeconfig, namespace string
	var verbosity int
	var serveCIDR string
	flags.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster (required)")
	flags.StringVar(&namespace, "namespace", "", "watch only this namespace (default: all namespaces)")
	flags.StringVar(&serveCIDR, "serve-cidr", "127.0.0.0/8", "serve endpoints in this IPv4 range (loopback, or routed to lo in the caller's own network namespace)")
	flags.IntVar(&verbosity, "v", 0, "log verbosity: 0 lifecycle events, 1 waits, 2 refused requests, 4 every workload API request")
	flags.Usage = func() {
		fmt.Fprintf(flags.Output(), "usage: %s --kubeconfig <file> [--namespace <ns>] [--serve-cidr <cidr>] [-v <n>]\n", os.Args[0])
		flags.PrintDefaults()
	}
	_ = flags.Parse(os.Args[1:])
	if kubeconfig == "" || flags.NArg() > 0 {
		flags.Usage()
		os.Exit(2)
	}
	_, serve, err := net.ParseCIDR(serveCIDR)
	if err != nil || serve.IP.To4() == nil {
		fmt.Fprintf(flags.Output(), "--serve-cidr %q: not an IPv4 CIDR\n", serveCIDR)
		os.Exit(2)
	}

	log := zap.New(zap.WriteTo(os.Stderr), zap.ConsoleEncoder(), zap.Level(zapcore.Level(-verbosity)),
		zap.StacktraceLevel(zapcore.PanicLevel), // one line per event, also for errors
		func(o *zap.Options) { o.TimeEncoder = zapcore.RFC3339TimeEncoder })
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if err := run(kubeconfig, namespace, serve, log.WithName("emulator")); err != nil {
		log.Error(err, "Exiting")
		os.Exit(1)
	}
}

func run(kubeconfig, namespace string, serve *net.IPNet, log logr.Logger) error {
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	restConfig.QPS, restConfig.Burst = 50, 100
	restConfig.UserAgent = "capo-workload-emulator"

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	options := ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: "0"}, // no port but the workload clusters'
		HealthProbeBindAddress: "0",
		// Read OpenStackMachines from the informer the watch below starts.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	}
	if namespace != "" {
		options.Cache.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	mgr, err := ctrl.NewManager(restConfig, options)
	if err != nil {
		return err
	}

	// The in-memory workload clusters hold the kinds the in-memory API server serves.
	workloadScheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme,
		storagev1.AddToScheme, policyv1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(workloadScheme); err != nil {
			return err
		}
	}
	inmem := inmemoryruntime.NewManager(workloadScheme)
	ctx := ctrl.SetupSignalHandler()
	if err := inmem.Start(ctx); err != nil {
		return err
	}

	l := newListeners(inmem, log)
	defer l.stopAll()
	e := &emulator{client: mgr.GetClient(), inmem: inmem, listeners: l, log: log, serve: serve, refused: map[types.NamespacedName]string{}}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("workload-emulator").
		For(&clusterv1.Cluster{}).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(clusterOfLabel)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(clusterOfSecret)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Build(e)
	if err != nil {
		return err
	}
	// OpenStackMachines are watched once their CRD exists (normally from the start).
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return watchInfrastructure(ctx, mgr, c, e, log)
	})); err != nil {
		return err
	}

	log.Info("Starting", "namespace", namespace)
	return mgr.Start(ctx)
}

// watchInfrastructure starts the OpenStackMachine watch as soon as the kind is served.
func watchInfrastructure(ctx context.Context, mgr manager.Manager, c controller.Controller, e *emulator, log logr.Logger) error {
	reported := false
	for {
		if _, err := mgr.GetRESTMapper().RESTMapping(infraGVK.GroupKind(), infraGVK.Version); err == nil {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(infraGVK)
			if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(u), handler.EnqueueRequestsFromMapFunc(clusterOfLabel))); err != nil {
				return err
			}
			e.infraWatched.Store(true)
			log.Info("Watching infrastructure machines", "kind", infraGVK.String())
			<-ctx.Done()
			return nil
		} else if !reported {
			log.Info("OpenStackMachine is not served (yet): instances count as running until it is", "reason", err.Error())
			reported = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}
