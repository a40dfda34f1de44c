package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// maxPodsToDelete is the schema's maxItems of spec.scaleStrategy.podsToDelete.
const maxPodsToDelete = 500

func newDeletePodCommand(o *options) *cobra.Command {
	var scaleDown bool
	cmd := &cobra.Command{
		Use:   "delete-pod POD...",
		Short: "Delete named pods of a PodSet: replaced, or with --scale-down removed",
		Long: "Adds the pods to spec.scaleStrategy.podsToDelete of the PodSet that controls them. The operator " +
			"deletes them before any other pod and, unless --scale-down lowers spec.replicas by as many pods in " +
			"the same write, replaces them within the update strategy's maxSurge and maxUnavailable (the " +
			"replacement first where maxUnavailable is 0). The operator removes each name from the list once its " +
			"pod is no longer live. Every pod must be a live pod of one PodSet.",
		Example: "  kubectl podset delete-pod web-7xk2p\n  kubectl podset delete-pod web-7xk2p web-q9vdl --scale-down",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			owner, ownerUID, err := podSetOf(cmd.Context(), c, ns, args)
			if err != nil {
				return err
			}
			var replicas [2]int32
			added := 0
			// The list and replicas are written with the resourceVersion
			// they were computed from, so that neither a name written
			// meanwhile nor a scale is lost; a conflict reads again.
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				ps, err := getPodSet(cmd.Context(), c, ns, owner)
				if err != nil {
					return err
				}
				if ps.UID != ownerUID {
					return fmt.Errorf("podset %q was replaced by a namesake: its pods are no longer the ones named", owner)
				}
				orig := ps.DeepCopy()
				replicas[0], replicas[1] = ps.DesiredReplicas(), ps.DesiredReplicas()
				if added, err = addPodsToDelete(ps, args); err != nil {
					return err
				}
				if scaleDown {
					replicas[1] = max(replicas[0]-int32(added), 0)
					ps.Spec.Replicas = ptr.To(replicas[1])
				}
				return c.Patch(cmd.Context(), ps, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
			})
			if err != nil {
				return fmt.Errorf("podset %q: %w", owner, err)
			}
			for _, name := range args {
				fmt.Fprintf(o.Out, "pod/%s marked for deletion by podset.app.example.com/%s\n", name, owner)
			}
			if added < len(args) {
				fmt.Fprintf(o.Out, "(%d of the pods were marked already)\n", len(args)-added)
			}
			if scaleDown {
				fmt.Fprintf(o.Out, "podset.app.example.com/%s scaled from %d to %d\n", owner, replicas[0], replicas[1])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&scaleDown, "scale-down", false, "lower spec.replicas by the number of pods, in the same write: the pods are removed, not replaced")
	return cmd
}

// podSetOf is the name and UID of the PodSet that controls every one of the
// live pods names, or an error that names the pod that is not one of its.
func podSetOf(ctx context.Context, c client.Client, ns string, names []string) (string, types.UID, error) {
	var owner string
	var uid types.UID
	for i, name := range names {
		if slices.Contains(names[:i], name) {
			return "", "", fmt.Errorf("pod %q is named twice", name)
		}
		pod := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return "", "", fmt.Errorf("pod %q: %w", name, err)
		}
		ref := metav1.GetControllerOf(pod)
		if ref == nil || ref.Kind != "PodSet" || !strings.HasPrefix(ref.APIVersion, appv1alpha1.GroupVersion.Group+"/") {
			return "", "", fmt.Errorf("pod %q is not controlled by a PodSet", name)
		}
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return "", "", fmt.Errorf("pod %q is not live (being deleted, or finished): the PodSet has replaced it already", name)
		}
		if owner != "" && (ref.Name != owner || ref.UID != uid) {
			return "", "", fmt.Errorf("pod %q belongs to podset %q, pod %q to podset %q: name the pods of one PodSet at a time", names[0], owner, name, ref.Name)
		}
		owner, uid = ref.Name, ref.UID
	}
	return owner, uid, nil
}

// addPodsToDelete adds names to ps's spec.scaleStrategy.podsToDelete, and
// returns how many were not listed yet.
func addPodsToDelete(ps *appv1alpha1.PodSet, names []string) (int, error) {
	if ps.Spec.ScaleStrategy == nil {
		ps.Spec.ScaleStrategy = &appv1alpha1.ScaleStrategy{}
	}
	list := &ps.Spec.ScaleStrategy.PodsToDelete
	added := 0
	for _, name := range names {
		if !slices.Contains(*list, name) {
			*list = append(*list, name)
			added++
		}
	}
	if len(*list) > maxPodsToDelete {
		return 0, fmt.Errorf("spec.scaleStrategy.podsToDelete would name %d pods, more than its %d: wait for the pods listed to go", len(*list), maxPodsToDelete)
	}
	return added, nil
}
