package main

import (
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
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
			if revision.SameTemplate(tmpl, operand.TemplateOf(ps)) {
				fmt.Fprintf(o.Out, "podset.app.example.com/%s skipped rollback (current template already matches revision %d)\n", ps.Name, target.Revision)
				return nil
			}
			setTemplate(&ps.Spec, tmpl)
			// An update, not a merge patch: a merge patch of spec.template
			// would keep the fields the revision's template does not set.
			// The PodSet's resourceVersion makes it refuse a PodSet
			// changed since it was read.
			if err := c.Update(ctx, ps); err != nil {
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
	current := operand.TemplateOf(ps)
	for i := len(revs) - 1; i >= 0; i-- {
		if tmpl, err := revision.Decode(revs[i]); err == nil && !revision.SameTemplate(tmpl, current) {
			return revs[i], nil
		}
	}
	return nil, fmt.Errorf("podset %q has no earlier revision to roll back to", ps.Name)
}

// setTemplate sets spec's pod template to tmpl, keeping the form spec
// uses where tmpl can be written in it: a PodSet with spec.template keeps
// it when rolled back to a short-form revision that names its image.
func setTemplate(spec *appv1alpha1.PodSetSpec, tmpl revision.Template) {
	keepTemplate := spec.Template != nil && tmpl.Template == nil && tmpl.Image != ""
	spec.Image, spec.Command, spec.Args, spec.Env = "", nil, nil, nil
	spec.Resources, spec.PodAnnotations, spec.ResizePolicy, spec.Template = nil, nil, nil, nil
	switch {
	case keepTemplate:
		pts := operand.PodTemplate(tmpl, "")
		spec.Template = &pts
	case tmpl.Template != nil:
		spec.Template = tmpl.Template.DeepCopy()
	default:
		spec.Image, spec.Command, spec.Args, spec.Env = tmpl.Image, tmpl.Command, tmpl.Args, tmpl.Env
		spec.Resources, spec.PodAnnotations, spec.ResizePolicy = tmpl.Resources, tmpl.PodAnnotations, tmpl.ResizePolicy
	}
}
