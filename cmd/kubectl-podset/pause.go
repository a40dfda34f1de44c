package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// annotationRestartedAt is the pod template annotation `kubectl rollout
// restart` sets; a new value is a new template, so every pod is replaced.
const annotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

// newPauseCommand is `pause` (pause=true) or `resume` (pause=false).
func newPauseCommand(o *options, pause bool) *cobra.Command {
	verb, done := "resume", "resumed"
	short := "Resume a paused rollout of a PodSet"
	if pause {
		verb, done = "pause", "paused"
		short = "Pause the rollout of a PodSet: no pod is replaced for its template until resumed; scaling goes on"
	}
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			ps, err := getPodSet(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			if t := ps.Spec.UpdateStrategy.Type; t == appv1alpha1.OnDeleteStrategyType || t == appv1alpha1.RecreateStrategyType {
				return fmt.Errorf("podset %q uses the %s update strategy: only a RollingUpdate rollout can be %s", ps.Name, t, done)
			}
			if isPaused(ps) == pause {
				state := "not paused"
				if pause {
					state = "already paused"
				}
				return fmt.Errorf("podset.app.example.com %q is %s", ps.Name, state)
			}
			patch := fmt.Appendf(nil, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":%t}}}}`, pause)
			if err := c.Patch(cmd.Context(), ps, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("%s podset %q: %w", verb, ps.Name, err)
			}
			fmt.Fprintf(o.Out, "podset.app.example.com/%s %s\n", ps.Name, done)
			return nil
		},
	}
}

func isPaused(ps *appv1alpha1.PodSet) bool {
	ru := ps.Spec.UpdateStrategy.RollingUpdateSettings()
	return ru != nil && ru.Paused
}

func newRestartCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "restart NAME",
		Short: "Replace every pod of a PodSet under its update strategy",
		Long: "Sets the kubectl.kubernetes.io/restartedAt pod annotation (spec.template.metadata.annotations, or " +
			"spec.podAnnotations in the short form) to now, as " +
			"`kubectl rollout restart` does for a Deployment: a new pod template, so the pods are rolled.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			ps, err := getPodSet(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			if isPaused(ps) {
				return fmt.Errorf("can't restart paused podset %q (run `kubectl podset rollout resume %s` first)", ps.Name, ps.Name)
			}
			patch := restartPatch(ps, time.Now())
			if err := c.Patch(cmd.Context(), ps, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("restarting podset %q: %w", ps.Name, err)
			}
			fmt.Fprintf(o.Out, "podset.app.example.com/%s restarted\n", ps.Name)
			return nil
		},
	}
}

// restartPatch is the merge patch that sets the restartedAt annotation of
// ps's pod template, in the form ps uses.
func restartPatch(ps *appv1alpha1.PodSet, now time.Time) []byte {
	at := now.UTC().Format(time.RFC3339)
	if ps.Spec.Template != nil {
		return fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, annotationRestartedAt, at)
	}
	return fmt.Appendf(nil, `{"spec":{"podAnnotations":{%q:%q}}}`, annotationRestartedAt, at)
}
