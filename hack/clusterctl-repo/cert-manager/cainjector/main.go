// cert-manager's cainjector, as the cert-manager-cainjector image runs it: a controller-runtime
// manager with the root module's pkg/controller/cainjector reconcilers, configured by the flags
// the Helm chart passes. Defaults are the v1alpha1 CAInjectorConfiguration defaults.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	cliflag "k8s.io/component-base/cli/flag"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cert-manager/cert-manager/capo-cmd/internal/run"
	config "github.com/cert-manager/cert-manager/internal/apis/config/cainjector"
	configscheme "github.com/cert-manager/cert-manager/internal/apis/config/cainjector/scheme"
	_ "github.com/cert-manager/cert-manager/internal/cainjector/feature"
	"github.com/cert-manager/cert-manager/internal/kube"
	cmscheme "github.com/cert-manager/cert-manager/pkg/api"
	configv1alpha1 "github.com/cert-manager/cert-manager/pkg/apis/config/cainjector/v1alpha1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
)

func main() {
	cfg, err := defaults()
	if err != nil {
		run.Fail("cainjector", err)
	}
	fs := pflag.NewFlagSet("cainjector", pflag.ContinueOnError)
	fs.StringVar(&cfg.KubeConfig, "kubeconfig", cfg.KubeConfig, "kubeconfig (default: in-cluster configuration)")
	fs.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "only inject into resources in this namespace (default: all)")
	fs.BoolVar(&cfg.LeaderElectionConfig.Enabled, "leader-elect", cfg.LeaderElectionConfig.Enabled, "use leader election")
	fs.StringVar(&cfg.LeaderElectionConfig.Namespace, "leader-election-namespace", cfg.LeaderElectionConfig.Namespace, "namespace of the leader election lease")
	fs.DurationVar(&cfg.LeaderElectionConfig.LeaseDuration, "leader-election-lease-duration", cfg.LeaderElectionConfig.LeaseDuration, "leader election lease duration")
	fs.DurationVar(&cfg.LeaderElectionConfig.RenewDeadline, "leader-election-renew-deadline", cfg.LeaderElectionConfig.RenewDeadline, "leader election renew deadline")
	fs.DurationVar(&cfg.LeaderElectionConfig.RetryPeriod, "leader-election-retry-period", cfg.LeaderElectionConfig.RetryPeriod, "leader election retry period")
	fs.BoolVar(&cfg.EnableDataSourceConfig.Certificates, "enable-certificates-data-source", cfg.EnableDataSourceConfig.Certificates, "inject CAs from Certificates (cert-manager.io/inject-ca-from)")
	fs.StringVar(&cfg.MetricsListenAddress, "metrics-listen-address", cfg.MetricsListenAddress, "metrics address ('0' disables the metrics server)")
	fs.Var(cliflag.NewMapStringBool(&cfg.FeatureGates), "feature-gates", "feature gates (key=value,...)")
	logf.AddFlags(&cfg.Logging, fs)
	run.Parse("cainjector", fs, cfg.FeatureGates, &cfg.Logging)

	ctx := run.Context()
	log := logf.Log.WithName("cainjector")
	ctrl.SetLogger(log)

	restConfig, err := kube.BuildClientConfig("", cfg.KubeConfig)
	if err != nil {
		run.Fail("cainjector", err)
	}
	restConfig = util.RestConfigWithUserAgent(restConfig, "cainjector")

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kscheme.AddToScheme, cmscheme.AddToScheme, apiext.AddToScheme, apireg.AddToScheme} {
		if err := add(scheme); err != nil {
			run.Fail("cainjector", err)
		}
	}
	opts := ctrl.Options{
		Scheme: scheme,
		// Secrets are read from the API server, not from an informer: a reconcile started by the
		// metadata-only watch of a new Secret must see it (and listing every Secret in full is
		// what upstream avoids too).
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		LeaderElection:                cfg.LeaderElectionConfig.Enabled,
		LeaderElectionNamespace:       cfg.LeaderElectionConfig.Namespace,
		LeaderElectionID:              "cert-manager-cainjector-leader-election",
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &cfg.LeaderElectionConfig.LeaseDuration,
		RenewDeadline:                 &cfg.LeaderElectionConfig.RenewDeadline,
		RetryPeriod:                   &cfg.LeaderElectionConfig.RetryPeriod,
		Metrics:                       metricsserver.Options{BindAddress: cfg.MetricsListenAddress},
	}
	opts.Cache = cache.Options{ReaderFailOnMissingInformer: true}
	if cfg.Namespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{cfg.Namespace: {}}
	}
	mgr, err := ctrl.NewManager(restConfig, opts)
	if err != nil {
		run.Fail("cainjector", fmt.Errorf("creating the manager: %w", err))
	}
	// The Certificate data source watches Certificates: wait (up to 5 minutes) for their CRD, which
	// is applied with this Deployment.
	if cfg.EnableDataSourceConfig.Certificates {
		direct, err := client.New(restConfig, client.Options{Scheme: scheme})
		if err != nil {
			run.Fail("cainjector", err)
		}
		err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := direct.Get(ctx, types.NamespacedName{Name: "certificates.cert-manager.io"}, &apiext.CustomResourceDefinition{})
			if apierrors.IsNotFound(err) {
				log.Info("waiting for the certificates.cert-manager.io CRD")
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			run.Fail("cainjector", fmt.Errorf("the certificates.cert-manager.io CRD: %w", err))
		}
	}
	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    cfg.Namespace,
		IgnoreNamespaces:             cfg.IgnoreNamespaces,
		EnableCertificatesDataSource: cfg.EnableDataSourceConfig.Certificates,
		EnabledReconcilersFor: map[string]bool{
			"mutatingwebhookconfiguration":   cfg.EnableInjectableConfig.MutatingWebhookConfigurations,
			"validatingwebhookconfiguration": cfg.EnableInjectableConfig.ValidatingWebhookConfigurations,
			"apiservice":                     cfg.EnableInjectableConfig.APIServices,
			"customresourcedefinition":       cfg.EnableInjectableConfig.CustomResourceDefinitions,
		},
	})
	if err != nil {
		run.Fail("cainjector", fmt.Errorf("registering the injectors: %w", err))
	}
	log.Info("starting", "leaderElection", cfg.LeaderElectionConfig.Enabled)
	if err := mgr.Start(ctx); err != nil {
		run.Fail("cainjector", err)
	}
}

// defaults is the v1alpha1 defaulting of an empty configuration, converted to the internal type.
func defaults() (*config.CAInjectorConfiguration, error) {
	scheme, _, err := configscheme.NewSchemeAndCodecs()
	if err != nil {
		return nil, err
	}
	versioned := &configv1alpha1.CAInjectorConfiguration{}
	scheme.Default(versioned)
	cfg := &config.CAInjectorConfiguration{}
	if err := scheme.Convert(versioned, cfg, nil); err != nil {
		return nil, err
	}
	return cfg, nil
}
