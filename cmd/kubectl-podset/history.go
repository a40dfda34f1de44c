package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
)

func newHistoryCommand(o *options) *cobra.Command {
	var number int64
	printFlags := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme)
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List the pod template revisions of a PodSet",
		Long: "Lists the PodSet's revisions (ControllerRevisions) with their change cause (the PodSet's " +
			"kubernetes.io/change-cause annotation when the revision was made) and image. " +
			"--revision=N shows one revision's pod template.",
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
			revs, err := listRevisions(cmd.Context(), c, ps)
			if err != nil {
				return err
			}
			if number > 0 {
				cr := findRevision(revs, number)
				if cr == nil {
					return fmt.Errorf("podset %q has no revision %d", ps.Name, number)
				}
				revs = []*appsv1.ControllerRevision{cr}
			}
			if printFlags.OutputFormat != nil && *printFlags.OutputFormat != "" {
				printer, err := printFlags.ToPrinter()
				if err != nil {
					return err
				}
				list := &appsv1.ControllerRevisionList{}
				for _, cr := range revs {
					list.Items = append(list.Items, *cr)
				}
				return printer.PrintObj(list, o.Out)
			}
			if number > 0 {
				return printRevision(o, ps, revs[0])
			}
			return printHistory(o, ps, revs)
		},
	}
	cmd.Flags().Int64Var(&number, "revision", 0, "Show the pod template of this revision.")
	printFlags.AddFlags(cmd)
	return cmd
}

// listRevisions returns the PodSet's ControllerRevisions, oldest first.
func listRevisions(ctx context.Context, c client.Client, ps *appv1alpha1.PodSet) ([]*appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := c.List(ctx, list, client.InNamespace(ps.Namespace), client.MatchingLabels{appv1alpha1.LabelPodSet: ps.Name}); err != nil {
		return nil, fmt.Errorf("listing the revisions of podset %q: %w", ps.Name, err)
	}
	var revs []*appsv1.ControllerRevision
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == ps.UID {
			revs = append(revs, &list.Items[i])
		}
	}
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	return revs, nil
}

func findRevision(revs []*appsv1.ControllerRevision, number int64) *appsv1.ControllerRevision {
	for _, cr := range revs {
		if cr.Revision == number {
			return cr
		}
	}
	return nil
}

func printHistory(o *options, ps *appv1alpha1.PodSet, revs []*appsv1.ControllerRevision) error {
	fmt.Fprintf(o.Out, "podset.app.example.com/%s\n", ps.Name)
	w := tabwriter.NewWriter(o.Out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "REVISION\tCHANGE-CAUSE\tIMAGE\tNAME")
	for _, cr := range revs {
		cause := cr.Annotations[appv1alpha1.AnnotationChangeCause]
		if cause == "" {
			cause = "<none>"
		}
		image := "<default>"
		if tmpl, err := revision.Decode(cr); err == nil {
			image = images(tmpl)
		}
		marker := ""
		if cr.Name == ps.Status.UpdateRevision {
			marker = " (current)"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s%s\n", cr.Revision, cause, image, cr.Name, marker)
	}
	return w.Flush()
}

// images is what the IMAGE column shows for a revision: the short form's
// image (<default> for the operator's), or every container of a template as
// name=image, init containers first.
func images(tmpl revision.Template) string {
	if tmpl.Template == nil {
		if tmpl.Image == "" {
			return "<default>"
		}
		return tmpl.Image
	}
	var out []string
	spec := tmpl.Template.Spec
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		out = append(out, c.Name+"="+c.Image)
	}
	return strings.Join(out, ",")
}

func printRevision(o *options, ps *appv1alpha1.PodSet, cr *appsv1.ControllerRevision) error {
	tmpl, err := revision.Decode(cr)
	if err != nil {
		return err
	}
	out, err := yaml.Marshal(tmpl)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "podset.app.example.com/%s with revision #%d (%s)\n", ps.Name, cr.Revision, cr.Name)
	if cause := cr.Annotations[appv1alpha1.AnnotationChangeCause]; cause != "" {
		fmt.Fprintf(o.Out, "Change cause: %s\n", cause)
	}
	fmt.Fprintf(o.Out, "Pod template:\n%s", indent(string(out)))
	return nil
}

func indent(s string) string {
	out := "  "
	for i, r := range s {
		out += string(r)
		if r == '\n' && i < len(s)-1 {
			out += "  "
		}
	}
	return out
}
