package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

func newStatusCommand(o *options) *cobra.Command {
	var (
		watch    bool
		timeout  time.Duration
		interval = time.Second
	)
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show the rollout of a PodSet and wait until it is done",
		Long: "Waits until every wanted pod runs the PodSet's current template and is available, printing progress " +
			"as `kubectl rollout status` does. Exits non-zero when the progress deadline has passed " +
			"(Progressing=False, ProgressDeadlineExceeded), when the rollout failed and auto-rollback returned the pods " +
			"to the last completed revision (RolledBack, RollbackStopped, RolloutFailed), or when the rollout is paused.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			last := ""
			for {
				ps, err := getPodSet(ctx, c, ns, args[0])
				if err != nil {
					return err
				}
				msg, done, err := rolloutStatus(ps)
				if err != nil {
					return err
				}
				if msg != last {
					fmt.Fprintln(o.Out, msg)
					last = msg
				}
				if done || !watch {
					return nil
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("timed out waiting for the rollout of podset %q", ps.Name)
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "Wait until the rollout is done.")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "How long to wait before giving up; 0 waits forever.")
	return cmd
}

// rolloutStatus says where a PodSet's rollout stands, in the words of
// `kubectl rollout status`: a message, whether it is done, and an error when
// it has failed (progress deadline exceeded) or is paused.
func rolloutStatus(ps *appv1alpha1.PodSet) (string, bool, error) {
	st := ps.Status
	if st.ObservedGeneration < ps.Generation {
		return "Waiting for podset spec update to be observed...", false, nil
	}
	progressing := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
	if progressing != nil && progressing.Reason == appv1alpha1.ReasonProgressDeadlineExceeded {
		return "", false, fmt.Errorf("podset %q exceeded its progress deadline: %s: %w", ps.Name, progressing.Message, errRolloutFailed)
	}
	if progressing != nil && progressing.Status == metav1.ConditionFalse {
		switch progressing.Reason {
		case appv1alpha1.ReasonRolledBack, appv1alpha1.ReasonRollbackStopped:
			return "", false, fmt.Errorf("podset %q: %s (%s; apply a fixed template, or `kubectl podset rollout retry %s` once the rollback is done): %w",
				ps.Name, progressing.Message, progressing.Reason, ps.Name, errRolloutFailed)
		case appv1alpha1.ReasonRolloutFailed:
			return "", false, fmt.Errorf("podset %q: %s (%s): %w", ps.Name, progressing.Message, progressing.Reason, errRolloutFailed)
		}
	}
	if progressing != nil && progressing.Reason == appv1alpha1.ReasonInvalidAnalysis {
		return "", false, fmt.Errorf("podset %q: %s: %w", ps.Name, progressing.Message, errRolloutFailed)
	}
	if msg, ok := canaryStatus(ps, progressing); ok {
		return msg, false, nil
	}
	if progressing != nil && progressing.Reason == appv1alpha1.ReasonPaused {
		return "", false, fmt.Errorf("podset %q is paused (%d of %d pods updated): resume it with `kubectl podset rollout resume %s`",
			ps.Name, st.UpdatedReplicas, ps.DesiredReplicas(), ps.Name)
	}
	desired := ps.DesiredReplicas()
	wantUpdated := desired
	if ru := ps.Spec.UpdateStrategy.RollingUpdateSettings(); ru != nil {
		wantUpdated = desired - min(ptr.Deref(ru.Partition, 0), desired)
	}
	done := progressing != nil && progressing.Reason == appv1alpha1.ReasonNewRevisionAvailable
	switch {
	case done && st.TerminatingReplicas > 0:
		// The rollout does not wait for them, as a Deployment's does not:
		// they no longer count, but still hold their resources.
		return fmt.Sprintf("podset %q successfully rolled out (%d pods still terminating)", ps.Name, st.TerminatingReplicas), true, nil
	case done:
		return fmt.Sprintf("podset %q successfully rolled out", ps.Name), true, nil
	case progressing != nil && (progressing.Reason == appv1alpha1.ReasonWaitingForOldPods || progressing.Reason == appv1alpha1.ReasonDeletingNamedPods):
		// Recreate: no new pod until every old one is gone; or named pods
		// to delete, which no count below tells.
		return fmt.Sprintf("Waiting for podset %q rollout to finish: %s...", ps.Name, progressing.Message), false, nil
	case st.UpdatedReplicas < wantUpdated:
		return fmt.Sprintf("Waiting for podset %q rollout to finish: %d out of %d new replicas have been updated...", ps.Name, st.UpdatedReplicas, wantUpdated), false, nil
	case st.Replicas > desired:
		return fmt.Sprintf("Waiting for podset %q rollout to finish: %d old replicas are pending termination...", ps.Name, st.Replicas-st.UpdatedReplicas), false, nil
	case st.UpdatedAvailableReplicas < wantUpdated:
		return fmt.Sprintf("Waiting for podset %q rollout to finish: %d of %d updated replicas are available...", ps.Name, st.UpdatedAvailableReplicas, wantUpdated), false, nil
	default:
		return fmt.Sprintf("Waiting for podset %q rollout to finish: %d of %d replicas are available...", ps.Name, st.AvailableReplicas, desired), false, nil
	}
}

// canaryStatus says where a canary rollout in progress stands: its step,
// what the step waits for, and an analysis's measurements so far. A pause
// or a hold is waited out (it ends with a promotion), as
// `kubectl argo rollouts status` waits out a paused Rollout.
func canaryStatus(ps *appv1alpha1.PodSet, progressing *metav1.Condition) (string, bool) {
	c := ps.Status.Canary
	if progressing == nil || c == nil || c.Revision != ps.Status.UpdateRevision {
		return "", false
	}
	msg := fmt.Sprintf("Waiting for podset %q rollout to finish: %s", ps.Name, c.Message)
	backgroundHeld := false
	for _, run := range c.Analyses {
		what := "analysis"
		switch run.Name {
		case fmt.Sprintf("steps[%d]", c.Step):
		case "background":
			// Only --full ends its hold, whatever holds the step too.
			what, backgroundHeld = "background analysis", run.Phase == "Inconclusive" || run.Phase == "Error"
		default:
			continue
		}
		msg += fmt.Sprintf(" (%s %s: %d successful, %d failed, %d inconclusive, %d errors", what, run.Phase, run.Successful, run.Failed, run.Inconclusive, run.Errors)
		if n := len(run.Measurements); n > 0 {
			last := run.Measurements[n-1]
			msg += fmt.Sprintf("; last %s: %s", last.Phase, last.Message)
		}
		msg += ")"
	}
	switch progressing.Reason {
	case appv1alpha1.ReasonCanaryPaused:
		return msg + fmt.Sprintf("; `kubectl podset rollout promote %s` ends the pause", ps.Name), true
	case appv1alpha1.ReasonAnalysisInconclusive, appv1alpha1.ReasonAnalysisError:
		if backgroundHeld {
			return msg + fmt.Sprintf("; held (%s) until `kubectl podset rollout promote --full %s` or `abort %s`", progressing.Reason, ps.Name, ps.Name), true
		}
		return msg + fmt.Sprintf("; held (%s) until `kubectl podset rollout promote %s` or `abort %s`", progressing.Reason, ps.Name, ps.Name), true
	case appv1alpha1.ReasonCanaryStep:
		return msg + "...", true
	}
	return "", false
}
