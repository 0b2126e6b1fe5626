// cert-manager's controller, as the cert-manager-controller image runs it: the root module's
// controllers (pkg/controller/..., registered by importing the v1alpha1 configuration defaults),
// run by the root module's controller.ContextFactory under a leader election lease, configured by
// the flags the Helm chart passes. Defaults are the v1alpha1 ControllerConfiguration defaults.
//
// Not implemented (the chart leaves them off by default): --config files, Gateway API support,
// pprof, TLS for the metrics endpoint.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/cert-manager/cert-manager/capo-cmd/internal/run"
	config "github.com/cert-manager/cert-manager/internal/apis/config/controller"
	"github.com/cert-manager/cert-manager/internal/apis/config/shared"
	"github.com/cert-manager/cert-manager/internal/controller/feature"
	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"

	// The controllers (each registers itself) and issuer types, all but Venafi's: its client
	// module (github.com/Venafi/vcert/v5) is not served by the Go module proxy here.
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmechallenges"
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmeorders"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/ingresses"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/acme"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/vault"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/metrics"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/acme"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/vault"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/acme"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/vault"
)

func main() {
	cfg, err := newConfig()
	if err != nil {
		run.Fail("controller", err)
	}
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	fs.StringVar(&cfg.KubeConfig, "kubeconfig", cfg.KubeConfig, "kubeconfig (default: in-cluster configuration)")
	fs.StringVar(&cfg.APIServerHost, "master", cfg.APIServerHost, "API server address (overrides the kubeconfig)")
	fs.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "only watch this namespace (default: all)")
	fs.StringVar(&cfg.ClusterResourceNamespace, "cluster-resource-namespace", cfg.ClusterResourceNamespace, "namespace of the Secrets ClusterIssuers refer to")
	fs.BoolVar(&cfg.LeaderElectionConfig.Enabled, "leader-elect", cfg.LeaderElectionConfig.Enabled, "use leader election")
	fs.StringVar(&cfg.LeaderElectionConfig.Namespace, "leader-election-namespace", cfg.LeaderElectionConfig.Namespace, "namespace of the leader election lease")
	fs.DurationVar(&cfg.LeaderElectionConfig.LeaseDuration, "leader-election-lease-duration", cfg.LeaderElectionConfig.LeaseDuration, "leader election lease duration")
	fs.DurationVar(&cfg.LeaderElectionConfig.RenewDeadline, "leader-election-renew-deadline", cfg.LeaderElectionConfig.RenewDeadline, "leader election renew deadline")
	fs.DurationVar(&cfg.LeaderElectionConfig.RetryPeriod, "leader-election-retry-period", cfg.LeaderElectionConfig.RetryPeriod, "leader election retry period")
	fs.StringSliceVar(&cfg.Controllers, "controllers", cfg.Controllers, "controllers to run: '*' (the default set), names, or -name to disable one")
	fs.StringVar(&cfg.ACMEHTTP01Config.SolverImage, "acme-http01-solver-image", cfg.ACMEHTTP01Config.SolverImage, "image of the ACME HTTP-01 solver pods")
	fs.StringToStringVar(&cfg.ACMEHTTP01Config.SolverExtraLabels, "acme-http01-solver-extra-labels", cfg.ACMEHTTP01Config.SolverExtraLabels, "extra labels of the ACME HTTP-01 solver pods")
	fs.StringVar(&cfg.ACMEHTTP01Config.SolverRuntimeClassName, "acme-http01-solver-runtime-class-name", cfg.ACMEHTTP01Config.SolverRuntimeClassName, "runtimeClassName of the ACME HTTP-01 solver pods")
	fs.StringSliceVar(&cfg.ACMEDNS01Config.RecursiveNameservers, "dns01-recursive-nameservers", cfg.ACMEDNS01Config.RecursiveNameservers, "nameservers for DNS-01 self checks")
	fs.BoolVar(&cfg.ACMEDNS01Config.RecursiveNameserversOnly, "dns01-recursive-nameservers-only", cfg.ACMEDNS01Config.RecursiveNameserversOnly, "only use the recursive nameservers")
	fs.IntVar(&cfg.MaxConcurrentChallenges, "max-concurrent-challenges", cfg.MaxConcurrentChallenges, "ACME challenges processed at once")
	fs.BoolVar(&cfg.EnableCertificateOwnerRef, "enable-certificate-owner-ref", cfg.EnableCertificateOwnerRef, "make Certificates owners of their Secrets")
	fs.StringVar(&cfg.IngressShimConfig.DefaultIssuerName, "default-issuer-name", cfg.IngressShimConfig.DefaultIssuerName, "ingress-shim default issuer name")
	fs.StringVar(&cfg.IngressShimConfig.DefaultIssuerKind, "default-issuer-kind", cfg.IngressShimConfig.DefaultIssuerKind, "ingress-shim default issuer kind")
	fs.StringVar(&cfg.IngressShimConfig.DefaultIssuerGroup, "default-issuer-group", cfg.IngressShimConfig.DefaultIssuerGroup, "ingress-shim default issuer group")
	fs.StringVar(&cfg.MetricsListenAddress, "metrics-listen-address", cfg.MetricsListenAddress, "metrics address ('0' disables the metrics server)")
	fs.StringVar(&cfg.HealthzListenAddress, "healthz-listen-address", cfg.HealthzListenAddress, "address of the /livez endpoint")
	fs.Var(cliflag.NewMapStringBool(&cfg.FeatureGates), "feature-gates", "feature gates (key=value,...)")
	logf.AddFlags(&cfg.Logging, fs)
	run.Parse("controller", fs, cfg.FeatureGates, &cfg.Logging)

	ctx := logf.NewContext(run.Context(), logf.Log, "controller")
	if err := start(ctx, cfg); err != nil {
		run.Fail("controller", err)
	}
}

// newConfig is upstream's v1alpha1 defaulting of an empty ControllerConfiguration, written out:
// the defaulting package imports the Venafi controllers (see the imports).
func newConfig() (*config.ControllerConfiguration, error) {
	cfg := &config.ControllerConfiguration{
		KubernetesAPIQPS:         20,
		KubernetesAPIBurst:       50,
		ClusterResourceNamespace: "kube-system",
		LeaderElectionConfig: config.LeaderElectionConfig{LeaderElectionConfig: shared.LeaderElectionConfig{
			Enabled: true, Namespace: "kube-system",
			LeaseDuration: 60 * time.Second, RenewDeadline: 40 * time.Second, RetryPeriod: 15 * time.Second,
		}},
		Controllers:                     []string{"*"},
		ClusterIssuerAmbientCredentials: true,
		CopiedAnnotationPrefixes:        []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
		NumberOfConcurrentWorkers:       5,
		MaxConcurrentChallenges:         60,
		MetricsListenAddress:            "0.0.0.0:9402",
		HealthzListenAddress:            "0.0.0.0:9403",
		IngressShimConfig: config.IngressShimConfig{
			DefaultIssuerKind: "Issuer", DefaultIssuerGroup: "cert-manager.io",
			DefaultAutoCertificateAnnotations: []string{"kubernetes.io/tls-acme"},
		},
		ACMEHTTP01Config: config.ACMEHTTP01Config{
			SolverImage:                 "quay.io/jetstack/cert-manager-acmesolver:" + util.AppVersion,
			SolverResourceRequestCPU:    "10m",
			SolverResourceRequestMemory: "64Mi",
			SolverResourceLimitsCPU:     "100m",
			SolverResourceLimitsMemory:  "64Mi",
			SolverRunAsNonRoot:          true,
		},
		ACMEDNS01Config:                          config.ACMEDNS01Config{CheckRetryPeriod: 10 * time.Second},
		CertificateRequestMinimumBackoffDuration: time.Hour,
		CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
	}
	logsapi.SetRecommendedLoggingConfiguration(&cfg.Logging)
	return cfg, nil
}

// enabled is the set of controllers to run: '*' means every registered controller but the
// CertificateSigningRequest ones (on with their feature gate, as upstream), a name adds one,
// -name removes one.
func enabled(cfg *config.ControllerConfiguration) (sets.Set[string], error) {
	all := sets.KeySet(controller.Known())
	csr := sets.New[string]()
	for n := range all {
		if strings.HasPrefix(n, "certificatesigningrequests-") {
			csr.Insert(n)
		}
	}
	on, off := sets.New[string](), sets.New[string]()
	for _, c := range cfg.Controllers {
		switch {
		case c == "*":
			on.Insert(sets.List(all.Difference(csr))...)
			if utilfeature.DefaultFeatureGate.Enabled(feature.ExperimentalCertificateSigningRequestControllers) {
				on.Insert(sets.List(csr)...)
			}
		case strings.HasPrefix(c, "-"):
			off.Insert(strings.TrimPrefix(c, "-"))
		default:
			on.Insert(c)
		}
	}
	for _, c := range sets.List(on.Union(off)) {
		if !all.Has(c) {
			return nil, fmt.Errorf("unknown or unsupported controller %q", c)
		}
	}
	return on.Difference(off), nil
}

func start(ctx context.Context, cfg *config.ControllerConfiguration) error {
	log := logf.FromContext(ctx)
	names, err := enabled(cfg)
	if err != nil {
		return err
	}
	quantity := func(s string) resource.Quantity { return resource.MustParse(s) }
	nameservers := cfg.ACMEDNS01Config.RecursiveNameservers
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		APIServerHost:      cfg.APIServerHost,
		Kubeconfig:         cfg.KubeConfig,
		KubernetesAPIQPS:   cfg.KubernetesAPIQPS,
		KubernetesAPIBurst: cfg.KubernetesAPIBurst,
		Namespace:          cfg.Namespace,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace:        cfg.ClusterResourceNamespace,
			ClusterIssuerAmbientCredentials: cfg.ClusterIssuerAmbientCredentials,
			IssuerAmbientCredentials:        cfg.IssuerAmbientCredentials,
		},
		ACMEOptions: controller.ACMEOptions{
			HTTP01SolverImage:                 cfg.ACMEHTTP01Config.SolverImage,
			HTTP01SolverResourceRequestCPU:    quantity(cfg.ACMEHTTP01Config.SolverResourceRequestCPU),
			HTTP01SolverResourceRequestMemory: quantity(cfg.ACMEHTTP01Config.SolverResourceRequestMemory),
			HTTP01SolverResourceLimitsCPU:     quantity(cfg.ACMEHTTP01Config.SolverResourceLimitsCPU),
			HTTP01SolverResourceLimitsMemory:  quantity(cfg.ACMEHTTP01Config.SolverResourceLimitsMemory),
			ACMEHTTP01SolverRunAsNonRoot:      cfg.ACMEHTTP01Config.SolverRunAsNonRoot,
			HTTP01SolverRuntimeClassName:      cfg.ACMEHTTP01Config.SolverRuntimeClassName,
			HTTP01SolverNameservers:           cfg.ACMEHTTP01Config.SolverNameservers,
			HTTP01SolverExtraLabels:           cfg.ACMEHTTP01Config.SolverExtraLabels,
			DNS01CheckAuthoritative:           !cfg.ACMEDNS01Config.RecursiveNameserversOnly,
			DNS01Nameservers:                  nameservers,
			DNS01CheckRetryPeriod:             cfg.ACMEDNS01Config.CheckRetryPeriod,
		},
		IngressShimOptions: controller.IngressShimOptions{
			DefaultIssuerName:                 cfg.IngressShimConfig.DefaultIssuerName,
			DefaultIssuerKind:                 cfg.IngressShimConfig.DefaultIssuerKind,
			DefaultIssuerGroup:                cfg.IngressShimConfig.DefaultIssuerGroup,
			DefaultAutoCertificateAnnotations: cfg.IngressShimConfig.DefaultAutoCertificateAnnotations,
			ExtraCertificateAnnotations:       cfg.IngressShimConfig.ExtraCertificateAnnotations,
		},
		CertificateOptions: controller.CertificateOptions{
			EnableOwnerRef:                           cfg.EnableCertificateOwnerRef,
			CopiedAnnotationPrefixes:                 cfg.CopiedAnnotationPrefixes,
			CertificateRequestMinimumBackoffDuration: cfg.CertificateRequestMinimumBackoffDuration,
			CertificateRequestMaximumBackoffDuration: cfg.CertificateRequestMaximumBackoffDuration,
		},
		SchedulerOptions: controller.SchedulerOptions{MaxConcurrentChallenges: cfg.MaxConcurrentChallenges},
	})
	if err != nil {
		return err
	}

	// Liveness: the chart probes /livez on the healthz port.
	if cfg.HealthzListenAddress != "" && cfg.HealthzListenAddress != "0" {
		ln, err := net.Listen("tcp", cfg.HealthzListenAddress)
		if err != nil {
			return fmt.Errorf("healthz listener: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		go func() { _ = http.Serve(ln, mux) }()
	}

	base, err := factory.Build("controller")
	if err != nil {
		return err
	}
	if cfg.MetricsListenAddress != "" && cfg.MetricsListenAddress != "0" {
		ln, err := net.Listen("tcp", cfg.MetricsListenAddress)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		srv := base.Metrics.NewServer(ln)
		go func() { _ = srv.Serve(ln) }()
	}

	runControllers := func(ctx context.Context) {
		var wg sync.WaitGroup
		known := controller.Known()
		for _, n := range slices.Sorted(func(yield func(string) bool) {
			for n := range known {
				if !yield(n) {
					return
				}
			}
		}) {
			if !names.Has(n) {
				continue
			}
			if cfg.Namespace != "" && n == "clusterissuers" {
				continue
			}
			iface, err := known[n](factory)
			if err != nil {
				run.Fail("controller", fmt.Errorf("starting controller %s: %w", n, err))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				log.Info("starting controller", "controller", n)
				if err := iface.Run(cfg.NumberOfConcurrentWorkers, ctx); err != nil {
					run.Fail("controller", fmt.Errorf("controller %s: %w", n, err))
				}
			}()
		}
		base.SharedInformerFactory.Start(ctx.Done())
		base.KubeSharedInformerFactory.Start(ctx.Done())
		base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
		wg.Wait()
		log.Info("control loops exited")
		os.Exit(0)
	}

	if !cfg.LeaderElectionConfig.Enabled {
		runControllers(ctx)
		return nil
	}
	id, err := os.Hostname()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(base.RESTConfig)
	if err != nil {
		return err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, cfg.LeaderElectionConfig.Namespace, "cert-manager-controller",
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id + "-external-cert-manager-controller", EventRecorder: base.Recorder})
	if err != nil {
		return err
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaderElectionConfig.LeaseDuration,
		RenewDeadline:   cfg.LeaderElectionConfig.RenewDeadline,
		RetryPeriod:     cfg.LeaderElectionConfig.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: runControllers,
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					run.Fail("controller", errors.New("leader election lost"))
				}
				os.Exit(0)
			},
		},
	})
	return nil
}
