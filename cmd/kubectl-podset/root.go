package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(appv1alpha1.AddToScheme(scheme))
	utilruntime.Must(appsv1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
}

// options are what every verb shares: the kubeconfig flags (--kubeconfig,
// --context, -n, ...) and the streams.
type options struct {
	config *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
}

// newClientHook, when set (by tests), replaces the client the kubeconfig
// flags would make.
var newClientHook func() (client.Client, string, error)

// client returns a client for the cluster of the kubeconfig flags, and the
// namespace to work in (-n, else the kubeconfig context's).
func (o *options) client() (client.Client, string, error) {
	if newClientHook != nil {
		return newClientHook()
	}
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, ns, err
}

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), IOStreams: streams}
	root := &cobra.Command{
		Use:           "kubectl-podset",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl podset"},
		Short:         "Manage the rollouts of PodSets",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.config.AddFlags(root.PersistentFlags())
	rollout := &cobra.Command{
		Use:   "rollout",
		Short: "Manage the rollout of a PodSet: status, history, undo, pause, resume, restart, retry, promote, abort",
	}
	rollout.AddCommand(
		newStatusCommand(o),
		newHistoryCommand(o),
		newUndoCommand(o),
		newPauseCommand(o, true),
		newPauseCommand(o, false),
		newRestartCommand(o),
		newRetryCommand(o),
		newPromoteCommand(o),
		newAbortCommand(o),
	)
	root.AddCommand(rollout, newDeletePodCommand(o))
	return root
}

// errRolloutFailed is what `rollout status` returns when the progress
// deadline passed: the plugin then exits 1 with the condition's message, as
// `kubectl rollout status` does for a Deployment.
var errRolloutFailed = errors.New("rollout failed")

// exitCode maps an error to the plugin's exit status: 1 for every failure,
// as kubectl exits.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	return 1
}

// getPodSet reads the named PodSet.
func getPodSet(ctx context.Context, c client.Client, ns, name string) (*appv1alpha1.PodSet, error) {
	ps := &appv1alpha1.PodSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ps); err != nil {
		return nil, fmt.Errorf("podset %q: %w", name, err)
	}
	return ps, nil
}
