package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

func newRetryCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "retry NAME",
		Short: "Try again the revision that auto-rollback rolled a PodSet back from",
		Long: "Sets the app.example.com/rollout-retry annotation to the rollback that status.autoRollback reports, " +
			"once it completed or stopped: the operator then rolls the pods to the failed revision again, as on its " +
			"first try (a canary's steps from the first, its abort and promotions cleared), and rolls back again if it " +
			"fails again. The spec is left as it is; to try another template, " +
			"apply it (or `kubectl podset rollout restart` for new pods of the same one).",
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
			value, err := retryValue(ps)
			if err != nil {
				return err
			}
			// A canary's abort and promotions of the revision are for its
			// last try: the retry starts its steps afresh.
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
				appv1alpha1.AnnotationRolloutRetry: value, appv1alpha1.AnnotationRolloutAbort: nil, appv1alpha1.AnnotationRolloutPromote: nil,
			}}})
			if err != nil {
				return err
			}
			if err := c.Patch(cmd.Context(), ps, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("retrying the rollout of podset %q: %w", ps.Name, err)
			}
			fmt.Fprintf(o.Out, "podset.app.example.com/%s retrying revision %s\n", ps.Name, ps.Status.AutoRollback.FailedRevision)
			return nil
		},
	}
}

// retryValue is the annotation's value that asks to retry the PodSet's
// rollback, or why there is nothing to retry yet.
func retryValue(ps *appv1alpha1.PodSet) (string, error) {
	rb := ps.Status.AutoRollback
	switch {
	case rb == nil:
		return "", fmt.Errorf("podset %q has not been rolled back (status.autoRollback is empty): there is no failed revision to retry", ps.Name)
	case rb.Revision == "":
		return "", fmt.Errorf("podset %q: revision %s failed with no completed revision to return to, so its pods were left as they are: "+
			"fix what failed, or apply another template", ps.Name, rb.FailedRevision)
	case ps.Status.UpdateRevision != rb.FailedRevision:
		return "", fmt.Errorf("podset %q: the spec asks for revision %s, not the failed %s: its rollout is under way", ps.Name, ps.Status.UpdateRevision, rb.FailedRevision)
	case !rb.Complete && !rb.Stopped:
		return "", fmt.Errorf("podset %q is still rolling back from revision %s to %s: retry once it is done (`kubectl podset rollout status %s`)",
			ps.Name, rb.FailedRevision, rb.Revision, ps.Name)
	}
	return appv1alpha1.RolloutRetryValue(rb), nil
}
