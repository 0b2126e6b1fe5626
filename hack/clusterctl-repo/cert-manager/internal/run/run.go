// Package run holds what the three cert-manager mains share: flag parsing with the feature gates
// and logging applied, and a context cancelled on SIGTERM/SIGINT.
package run

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	logf "github.com/cert-manager/cert-manager/pkg/logs"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
)

// Parse parses the command line into fs (which has the component's flags), applies the feature
// gates and the logging configuration, and exits with a message on any error.
func Parse(name string, fs *pflag.FlagSet, gates map[string]bool, logging *logsapi.LoggingConfiguration) {
	logf.InitLogs()
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "cert-manager %s (built by capo's hack/clusterctl-repo.sh from github.com/cert-manager/cert-manager packages)\n\nFlags:\n%s", name, fs.FlagUsages())
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			os.Exit(0)
		}
		fail(name, err)
	}
	if fs.NArg() > 0 {
		fail(name, fmt.Errorf("unexpected arguments: %v", fs.Args()))
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
		fail(name, fmt.Errorf("feature gates: %w", err))
	}
	if err := logf.ValidateAndApply(logging); err != nil {
		fail(name, fmt.Errorf("logging: %w", err))
	}
}

// Context is cancelled on SIGTERM or SIGINT.
func Context() context.Context {
	ctx, _ := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	return ctx
}

func fail(name string, err error) {
	fmt.Fprintf(os.Stderr, "cert-manager %s: %v\n", name, err)
	os.Exit(1)
}

// Fail logs err and exits non-zero.
func Fail(name string, err error) { logf.FlushLogs(); fail(name, err) }
