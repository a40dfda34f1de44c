package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

func newPromoteCommand(o *options) *cobra.Command {
	var full bool
	cmd := &cobra.Command{
		Use:   "promote NAME",
		Short: "Complete the current step of a PodSet's canary rollout, or every remaining step",
		Long: "Sets the app.example.com/rollout-promote annotation to the current step of the canary rollout that " +
			"status.canary reports: a pause ends, an analysis counts as passed whatever its phase (the way out of a " +
			"hold), and a step that moves pods counts as done. With --full, every remaining step is skipped, analyses " +
			"included, and the rollout goes on to every pod.",
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
			value, what, err := promoteValue(ps, full)
			if err != nil {
				return err
			}
			if err := annotatePodSet(cmd, c, ps, appv1alpha1.AnnotationRolloutPromote, value); err != nil {
				return fmt.Errorf("promoting the rollout of podset %q: %w", ps.Name, err)
			}
			fmt.Fprintf(o.Out, "podset.app.example.com/%s promoted: %s\n", ps.Name, what)
			return nil
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "Skip every remaining step, analyses included.")
	return cmd
}

// promoteValue is the annotation's value that promotes the PodSet's current
// step (or every remaining one), what it promotes, or why there is nothing
// to promote.
func promoteValue(ps *appv1alpha1.PodSet, full bool) (string, string, error) {
	ru := ps.Spec.UpdateStrategy.RollingUpdateSettings()
	c := ps.Status.Canary
	switch {
	case ru == nil || ru.Canary == nil:
		return "", "", fmt.Errorf("podset %q has no canary steps (spec.updateStrategy.rollingUpdate.canary)", ps.Name)
	case c == nil || c.Revision != ps.Status.UpdateRevision || ps.Status.ObservedGeneration < ps.Generation:
		return "", "", fmt.Errorf("podset %q has no canary rollout under way for its spec", ps.Name)
	case int(c.Step) >= len(ru.Canary.Steps) && (!full || ps.Status.LastCompletedRevision == c.Revision):
		// Once every step is done, the rollout may still wait for its
		// background analysis, which only --full ends.
		hint := ""
		if ru.Canary.BackgroundAnalysis != nil && ps.Status.LastCompletedRevision != c.Revision {
			hint = "; --full ends the wait for, or a hold of, the background analysis"
		}
		return "", "", fmt.Errorf("podset %q: every step of the rollout to revision %s is done%s", ps.Name, c.Revision, hint)
	case full:
		return appv1alpha1.RolloutPromoteValue(c.Revision, -1), "every remaining step of revision " + c.Revision, nil
	}
	return appv1alpha1.RolloutPromoteValue(c.Revision, c.Step),
		fmt.Sprintf("step %d of %d of revision %s", c.Step+1, len(ru.Canary.Steps), c.Revision), nil
}

func newAbortCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "abort NAME",
		Short: "Return a PodSet's pods to the last completed revision, and hold them there",
		Long: "Sets the app.example.com/rollout-abort annotation to the revision being rolled out: the operator rolls " +
			"the pods back to status.lastCompletedRevision, as auto-rollback does (trigger Aborted), and holds them " +
			"there until the spec asks for another revision or `kubectl podset rollout retry`.",
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
			st := ps.Status
			switch {
			case st.UpdateRevision == "" || st.ObservedGeneration < ps.Generation:
				return fmt.Errorf("podset %q: the operator has not observed its spec yet", ps.Name)
			case st.LastCompletedRevision == "":
				return fmt.Errorf("podset %q: no revision has completed yet, so there is none to return to", ps.Name)
			case st.LastCompletedRevision == st.UpdateRevision:
				return fmt.Errorf("podset %q: revision %s completed: there is no rollout to abort", ps.Name, st.UpdateRevision)
			case st.AutoRollback != nil && st.AutoRollback.FailedRevision == st.UpdateRevision:
				return fmt.Errorf("podset %q: the rollout of revision %s was already rolled back (%s)", ps.Name, st.UpdateRevision, st.AutoRollback.Trigger)
			}
			if err := annotatePodSet(cmd, c, ps, appv1alpha1.AnnotationRolloutAbort, st.UpdateRevision); err != nil {
				return fmt.Errorf("aborting the rollout of podset %q: %w", ps.Name, err)
			}
			fmt.Fprintf(o.Out, "podset.app.example.com/%s aborting revision %s: rolling back to %s\n", ps.Name, st.UpdateRevision, st.LastCompletedRevision)
			return nil
		},
	}
}

// annotatePodSet sets one annotation on ps by a merge patch.
func annotatePodSet(cmd *cobra.Command, c client.Client, ps *appv1alpha1.PodSet, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return err
	}
	return c.Patch(cmd.Context(), ps, client.RawPatch(types.MergePatchType, patch))
}
