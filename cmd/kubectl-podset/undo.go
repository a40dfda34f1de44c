package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
)

func newUndoCommand(o *options) *cobra.Command {
	var to int64
	cmd := &cobra.Command{
		Use:   "undo NAME",
		Short: "Roll a PodSet back to an earlier pod template revision",
		Long: "Sets the PodSet's pod template fields (image, command, args, env, resources, podAnnotations) to " +
			"those of an earlier revision: the previous one, or --to-revision=N. The operator then rolls the " +
			"pods back under the update strategy, reusing that revision, so pods still running it are kept.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ps, err := getPodSet(ctx, c, ns, args[0])
			if err != nil {
				return err
			}
			revs, err := listRevisions(ctx, c, ps)
			if err != nil {
				return err
			}
			target, err := undoTarget(ps, revs, to)
			if err != nil {
				return err
			}
			tmpl, err := revision.Decode(target)
			if err != nil {
				return err
			}
			if revision.SameTemplate(tmpl, revision.FromPodSet(ps)) {
				fmt.Fprintf(o.Out, "podset.app.example.com/%s skipped rollback (current template already matches revision %d)\n", ps.Name, target.Revision)
				return nil
			}
			patch, err := templatePatch(tmpl)
			if err != nil {
				return err
			}
			if err := c.Patch(ctx, ps, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("rolling back podset %q: %w", ps.Name, err)
			}
			fmt.Fprintf(o.Out, "podset.app.example.com/%s rolled back to revision %d\n", ps.Name, target.Revision)
			return nil
		},
	}
	cmd.Flags().Int64Var(&to, "to-revision", 0, "The revision to roll back to; 0 means the previous one.")
	return cmd
}

// undoTarget is the revision to roll back to: number, or with 0 the newest
// revision other than the PodSet's current template's.
func undoTarget(ps *appv1alpha1.PodSet, revs []*appsv1.ControllerRevision, number int64) (*appsv1.ControllerRevision, error) {
	if number > 0 {
		if cr := findRevision(revs, number); cr != nil {
			return cr, nil
		}
		return nil, fmt.Errorf("podset %q has no revision %d", ps.Name, number)
	}
	current := revision.FromPodSet(ps)
	for i := len(revs) - 1; i >= 0; i-- {
		if tmpl, err := revision.Decode(revs[i]); err == nil && !revision.SameTemplate(tmpl, current) {
			return revs[i], nil
		}
	}
	return nil, fmt.Errorf("podset %q has no earlier revision to roll back to", ps.Name)
}

// templatePatch is the merge patch that sets every template field of the
// spec to tmpl's, clearing the fields tmpl leaves unset.
func templatePatch(tmpl revision.Template) ([]byte, error) {
	orNil := func(empty bool, v any) any {
		if empty {
			return nil
		}
		return v
	}
	spec := map[string]any{
		"image":          orNil(tmpl.Image == "", tmpl.Image),
		"command":        orNil(len(tmpl.Command) == 0, tmpl.Command),
		"args":           orNil(len(tmpl.Args) == 0, tmpl.Args),
		"env":            orNil(len(tmpl.Env) == 0, tmpl.Env),
		"resources":      orNil(tmpl.Resources == nil, tmpl.Resources),
		"podAnnotations": orNil(len(tmpl.PodAnnotations) == 0, tmpl.PodAnnotations),
		"resizePolicy":   orNil(len(tmpl.ResizePolicy) == 0, tmpl.ResizePolicy),
	}
	return json.Marshal(map[string]any{"spec": spec})
}
