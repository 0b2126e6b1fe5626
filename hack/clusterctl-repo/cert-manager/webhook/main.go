// cert-manager's webhook, as the cert-manager-webhook image runs it: its flags are the root
// module's pkg/webhook/options (the same ones the upstream binary registers), the server is the
// root module's internal/webhook.
package main

import (
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cert-manager/cert-manager/capo-cmd/internal/run"
	cmwebhook "github.com/cert-manager/cert-manager/internal/webhook"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/webhook/options"
)

func main() {
	cfg, err := options.NewWebhookConfiguration()
	if err != nil {
		run.Fail("webhook", err)
	}
	fs := pflag.NewFlagSet("webhook", pflag.ContinueOnError)
	options.AddConfigFlags(fs, cfg)
	run.Parse("webhook", fs, cfg.FeatureGates, &cfg.Logging)

	ctx := run.Context()
	log := logf.Log.WithName("webhook")
	ctrl.SetLogger(log) // the admission handlers log (and report recovered panics) through it
	srv, err := cmwebhook.NewCertManagerWebhookServer(log, *cfg)
	if err != nil {
		run.Fail("webhook", err)
	}
	if err := srv.Run(ctx); err != nil {
		run.Fail("webhook", err)
	}
}
