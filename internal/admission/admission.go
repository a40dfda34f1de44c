// Package admission has the manager apply the ValidatingAdmissionPolicies
// that refuse, at admission and naming the field, a PodSet update that
// podUpdatePolicy InPlaceOnly cannot make in place (inplaceonly.yaml), a
// PodSet that sets spec.template beside its short form (template.yaml), and
// one that sets updateStrategy.recreate with another strategy
// (updatestrategy.yaml).
//
// Why a policy the manager applies, and not CEL rules in the CRD or a
// webhook:
//   - the rules compare the spec with the stored one, and such a rule on a
//     schema node that 0.2.0's CRD already had makes OLM v1 refuse the CRD
//     upgrade (its upgrade safety check handles no change of
//     x-kubernetes-validations);
//   - an OLM bundle may not carry a ValidatingAdmissionPolicy;
//   - a webhook needs a serving certificate, which OLM v1 provides only
//     with cert-manager installed, and a call out of the API server on
//     every PodSet write.
//
// The policy and its binding are owned by the PodSet CRD, so the garbage
// collector deletes them with it, and not with the operator: they are part
// of what the API means, like the CRD's own rules. A cluster that does not
// serve admissionregistration.k8s.io/v1 policies (before Kubernetes 1.30)
// gets none; the operator still keeps pods that cannot take a change, and
// says so in the Progressing condition.
package admission

import (
	"context"
	_ "embed" // the manifest below
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/example/podset-operator/internal/selfapply"
)

// The manager's permissions for this package, all cluster-wide and limited
// to the objects' names. Server-side apply is a PATCH that creates the
// object when it is missing, which the API server authorizes as create with
// the name, so both verbs can name it.
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=create;patch,resourceNames=podsets-in-place-only.app.example.com;podsets-template.app.example.com;podsets-update-strategy.app.example.com
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=podsets.app.example.com

// InPlaceOnlyYAML is the ValidatingAdmissionPolicy and its binding.
//
//go:embed inplaceonly.yaml
var InPlaceOnlyYAML []byte

// GroupVersion is the API the objects belong to.
const GroupVersion = "admissionregistration.k8s.io/v1"

// CRDName is the PodSet CRD, which owns the objects.
const CRDName = "podsets.app.example.com"

// TemplateYAML is the ValidatingAdmissionPolicy of spec.template and its
// binding.
//
//go:embed template.yaml
var TemplateYAML []byte

// UpdateStrategyYAML is the ValidatingAdmissionPolicy of
// spec.updateStrategy and its binding.
//
//go:embed updatestrategy.yaml
var UpdateStrategyYAML []byte

// Objects returns the policies and their bindings, owned by owner (nil: no
// owner).
func Objects(owner *metav1.OwnerReference) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, manifest := range [][]byte{InPlaceOnlyYAML, TemplateYAML, UpdateStrategyYAML} {
		o, err := selfapply.Decode(manifest, GroupVersion, owner)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// CRDOwner returns an ownerReference to the PodSet CRD. It is read every
// round, not once: a CRD deleted and created again has a new UID, and
// objects owned by the old one would be deleted by the garbage collector as
// soon as they were applied.
func CRDOwner(ctx context.Context, r client.Reader) (*metav1.OwnerReference, error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := r.Get(ctx, client.ObjectKey{Name: CRDName}, crd); err != nil {
		return nil, fmt.Errorf("reading the CRD %s: %w", CRDName, err)
	}
	// Neither controller nor blockOwnerDeletion: the CRD does not manage
	// the objects, and blockOwnerDeletion would need update on the CRD's
	// finalizers where the OwnerReferencesPermissionEnforcement admission
	// plugin is on (OpenShift).
	return &metav1.OwnerReference{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.Name, UID: crd.UID}, nil
}

// Options configure Add.
type Options struct {
	// Enabled is --admission-policy: false adds nothing.
	Enabled bool
	// Interval between two rounds; selfapply.DefaultInterval when zero.
	Interval time.Duration
	Log      logr.Logger
}

// Add adds the policy's Applier to mgr as opts say; it logs one line when
// it adds none.
func Add(mgr manager.Manager, opts Options) error {
	if !opts.Enabled {
		opts.Log.Info("not applying the admission policies (InPlaceOnly, spec.template, spec.updateStrategy): --admission-policy=false")
		return nil
	}
	disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	return mgr.Add(NewApplier(mgr.GetClient(), mgr.GetAPIReader(), disc, opts))
}

// NewApplier returns the Applier of the policy and its binding. c writes
// them; r reads the CRD, and need not be cached (one read per round).
func NewApplier(c client.Client, r client.Reader, disc discovery.DiscoveryInterface, opts Options) *selfapply.Applier {
	return &selfapply.Applier{
		Client:       c,
		Discovery:    disc,
		GroupVersion: GroupVersion,
		Kinds:        []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"},
		What:         "the admission policies (InPlaceOnly, spec.template, spec.updateStrategy)",
		NotServed: GroupVersion + " is not served (Kubernetes before 1.30); updates that InPlaceOnly cannot make, a spec.template beside its short form, and updateStrategy.recreate with another strategy, are not refused at admission," +
			" and the operator keeps the pods and says so in the Progressing condition",
		Objects: func(ctx context.Context) ([]*unstructured.Unstructured, error) {
			owner, err := CRDOwner(ctx, r)
			if err != nil {
				return nil, err
			}
			return Objects(owner)
		},
		Interval: opts.Interval,
		Log:      opts.Log,
	}
}
