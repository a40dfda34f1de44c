// Package selfapply keeps objects that the manager itself owns applied, by
// server-side apply, for as long as the API server serves their kinds.
//
// Why the manager applies them and an OLM bundle or `make deploy` does not:
// a bundle may carry only the kinds OLM supports, and an object of a kind the
// cluster does not serve makes OLM's InstallPlan and `kubectl apply` fail.
// The operator's monitoring objects (internal/monitoring) are of a kind most
// clusters do not serve, and its admission policy (internal/admission) of a
// kind no bundle may carry. The manager applies each set once its kinds are
// served, including when they appear after the operator, and applies it again
// every interval, which puts back an object that was deleted or edited.
package selfapply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager of the server-side applies.
const FieldOwner = "podset-operator"

// DefaultInterval is how often the Applier asks the API server whether the
// kinds are served, and applies the objects again when they are. A minute
// keeps the discovery request negligible while an API installed after the
// operator gets its objects soon enough.
const DefaultInterval = time.Minute

// ErrGiveUp, wrapped in an error of Objects, says that there is nothing to
// apply ever (for example no Deployment to own the objects): the Applier logs
// it once and stops.
var ErrGiveUp = errors.New("nothing to apply")

// Applier applies the objects Objects returns while the API server serves
// their kinds. It is a manager Runnable that runs on the leader only:
// applying is idempotent, so two replicas would not conflict, but a standby
// would double the discovery requests and applies for nothing, and during a
// rolling upgrade the objects are those of the version that leads.
type Applier struct {
	// Client writes the objects. Writes never go through a cache.
	Client client.Client
	// Discovery says which kinds the API server serves.
	Discovery discovery.DiscoveryInterface
	// GroupVersion is the API the objects belong to, and Kinds their
	// kinds: the objects are applied while the API server serves any of
	// them, each object while it serves its own.
	GroupVersion string
	Kinds        []string
	// What names the objects in the log ("the ServiceMonitor and
	// PrometheusRule").
	What string
	// NotServed is the log line written when none of Kinds is served.
	NotServed string
	// Objects returns the objects to apply, with their owners. It is called
	// once per round while their kinds are served.
	Objects func(ctx context.Context) ([]*unstructured.Unstructured, error)
	// Interval between two rounds; DefaultInterval when zero.
	Interval time.Duration
	Log      logr.Logger

	// The state last logged, so that each change is logged once and a
	// failure repeating every interval is not.
	served  *bool
	applied string
	lastErr string
}

// NeedLeaderElection makes the manager start the Applier on the leader only.
func (a *Applier) NeedLeaderElection() bool { return true }

// Start runs a round at once, then every Interval, until ctx ends. It never
// returns an error: a cluster without the API, or a failing apply, must not
// stop the manager.
func (a *Applier) Start(ctx context.Context) error {
	if a.Interval <= 0 {
		a.Interval = DefaultInterval
	}
	t := time.NewTicker(a.Interval)
	defer t.Stop()
	for {
		if done := a.Sync(ctx); done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sync does one round: ask whether the kinds are served, and apply the
// objects of those that are. It reports done when there is nothing more to
// do ever (Objects gave up).
func (a *Applier) Sync(ctx context.Context) (done bool) {
	err := a.sync(ctx)
	switch {
	case errors.Is(err, ErrGiveUp):
		a.Log.Info("not applying "+a.What, "reason", err.Error())
		return true
	case err != nil && ctx.Err() != nil:
		return true
	case err != nil:
		if msg := err.Error(); msg != a.lastErr {
			a.Log.Error(err, "applying "+a.What+"; retrying every interval", "interval", a.Interval)
			a.lastErr = msg
		}
	default:
		a.lastErr = ""
	}
	return false
}

func (a *Applier) sync(ctx context.Context) error {
	kinds, err := a.kindsServed()
	if err != nil {
		return fmt.Errorf("discovering %s: %w", a.GroupVersion, err)
	}
	served := slices.ContainsFunc(a.Kinds, func(k string) bool { return kinds[k] })
	if a.served == nil || *a.served != served {
		if !served {
			a.Log.Info(a.NotServed, "checkInterval", a.Interval)
		}
		a.served = &served
		a.applied = ""
	}
	if !served {
		return nil
	}
	objs, err := a.Objects(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, o := range objs {
		if !kinds[o.GetKind()] {
			continue
		}
		// ForceOwnership: the fields are the operator's, whoever set them
		// before (an earlier bundle that shipped the object, or a
		// `kubectl apply` of config/).
		if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), objectName(o), err)
		}
		names = append(names, o.GetKind()+" "+o.GetName())
	}
	if got := strings.Join(names, ", "); got != a.applied {
		var owners []string
		if len(objs) > 0 {
			for _, r := range objs[0].GetOwnerReferences() {
				owners = append(owners, r.Kind+" "+r.Name)
			}
		}
		a.Log.Info("applied "+a.What, "objects", got, "owner", strings.Join(owners, ", "))
		a.applied = got
	}
	return nil
}

// kindsServed returns the kinds of GroupVersion that the API server serves;
// none when the group version is unknown to it.
func (a *Applier) kindsServed() (map[string]bool, error) {
	list, err := a.Discovery.ServerResourcesForGroupVersion(a.GroupVersion)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kinds := map[string]bool{}
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") {
			kinds[r.Kind] = true
		}
	}
	return kinds, nil
}

// Decode returns the objects of a manifest of one or more YAML documents,
// each of which must be of groupVersion, owned by owner (nil: no owner).
func Decode(manifest []byte, groupVersion string, owner *metav1.OwnerReference) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if u.GetAPIVersion() != groupVersion {
			return nil, fmt.Errorf("%s %s: apiVersion %q, want %q", u.GetKind(), u.GetName(), u.GetAPIVersion(), groupVersion)
		}
		if owner != nil {
			u.SetOwnerReferences([]metav1.OwnerReference{*owner})
		}
		objs = append(objs, u)
	}
}

func objectName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
