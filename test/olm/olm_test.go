//go:build !realnode

package olm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/internal/monitoring"
	"github.com/example/podset-operator/test/localcluster"
	"github.com/example/podset-operator/test/openshift"
)

// TestOLM installs, exercises and uninstalls the operator in all four install
// modes, one after the other on the same cluster (each uninstall must leave
// the cluster as it found it for the next install to be meaningful).
func TestOLM(t *testing.T) {
	t.Run("AllNamespaces", func(t *testing.T) {
		// A global OperatorGroup (no target namespaces), as in OLM's own
		// "operators" namespace; the PodSet lives in another namespace.
		exercise(t, mode{
			operatorNS:   "podset-all",
			targets:      nil,
			podsetNS:     "podset-all-workload",
			wantWatchEnv: "",
		})
	})
	t.Run("OwnNamespace", func(t *testing.T) {
		// The operator may only act in its own namespace: a PodSet elsewhere
		// must be left alone.
		exercise(t, mode{
			operatorNS:   "podset-own",
			targets:      []string{"podset-own"},
			podsetNS:     "podset-own",
			ignoredNS:    "podset-own-elsewhere",
			wantWatchEnv: "podset-own",
		})
	})
	t.Run("SingleNamespace", func(t *testing.T) {
		// One target namespace other than the operator's own.
		exercise(t, mode{
			operatorNS:   "podset-single",
			targets:      []string{"podset-single-target"},
			podsetNS:     "podset-single-target",
			ignoredNS:    "podset-single",
			wantWatchEnv: "podset-single-target",
		})
	})
	t.Run("MultiNamespace", func(t *testing.T) {
		// WATCH_NAMESPACE is then a comma-separated list.
		exercise(t, mode{
			operatorNS:   "podset-multi",
			targets:      []string{"podset-multi-a", "podset-multi-b"},
			podsetNS:     "podset-multi-b",
			ignoredNS:    "podset-multi-elsewhere",
			wantWatchEnv: "podset-multi-a,podset-multi-b",
		})
	})
	t.Run("AllNamespacesOnOpenShift", func(t *testing.T) {
		// OpenShift's SCC admission (its stand-in, test/openshift) judges
		// the pods of the operator's namespace and of the workload's, as
		// OpenShift allocates them: the manager Deployment's pod and the
		// pods of alm-examples, the PodSet the console offers, are
		// admitted under restricted-v2 with the namespace's user.
		stand, err := openshift.Start(context.Background(), cluster, k8s, bins.sccAdmission, filepath.Join(logDir, "sccadmission.log"))
		must(t, err)
		t.Cleanup(func() { _ = stand.Stop(context.Background()) })
		exercise(t, mode{
			operatorNS:   "podset-openshift",
			targets:      nil,
			podsetNS:     "podset-openshift-workload",
			wantWatchEnv: "",
			openshift:    stand,
		})
	})
	t.Run("OwnNamespaceWithPrometheusOperator", func(t *testing.T) {
		// The same bundle on a cluster that serves the Prometheus
		// Operator's API, with its real CRDs: the manager applies its
		// ServiceMonitor and PrometheusRule, and the uninstall removes them.
		installMonitoringCRDs(t)
		exercise(t, mode{
			operatorNS:     "podset-monitored",
			targets:        []string{"podset-monitored"},
			podsetNS:       "podset-monitored",
			wantWatchEnv:   "podset-monitored",
			monitoringCRDs: true,
		})
	})
}

type mode struct {
	operatorNS   string
	targets      []string
	podsetNS     string
	ignoredNS    string // a namespace the operator must not act in, if any
	wantWatchEnv string // the olm.targetNamespaces OLM should set
	// monitoringCRDs: the cluster serves monitoring.coreos.com/v1.
	monitoringCRDs bool
	// openshift, when set, judges the pods of operatorNS and podsetNS.
	openshift *openshift.StandIn
}

func exercise(t *testing.T, m mode) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	firstUID := map[string]int64{}
	for _, ns := range append([]string{m.operatorNS, m.podsetNS, m.ignoredNS}, m.targets...) {
		switch {
		case ns == "":
		case m.openshift != nil && (ns == m.operatorNS || ns == m.podsetNS):
			_, first, err := m.openshift.NewNamespace(ctx, ns)
			must(t, err)
			firstUID[ns] = first
		default:
			must(t, createNamespace(ctx, ns))
		}
	}
	og := &operatorsv1.OperatorGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "podset-operator", Namespace: m.operatorNS},
		Spec:       operatorsv1.OperatorGroupSpec{TargetNamespaces: m.targets},
	}
	must(t, k8s.Create(ctx, og))
	// If this mode fails half-way, take the install down anyway so that the
	// next mode starts from a clean cluster rather than failing on leftovers.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		bg := context.Background()
		_ = k8s.DeleteAllOf(bg, &operatorsv1alpha1.Subscription{}, client.InNamespace(m.operatorNS))
		_ = k8s.DeleteAllOf(bg, &operatorsv1alpha1.ClusterServiceVersion{}, client.InNamespace(m.operatorNS))
		_ = k8s.Delete(bg, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}})
		_ = k8s.Delete(bg, og)
	})
	sub := &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: packageName, Namespace: m.operatorNS},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			CatalogSource:          catalogName,
			CatalogSourceNamespace: olmNamespace,
			Package:                packageName,
			Channel:                channel,
			InstallPlanApproval:    operatorsv1alpha1.ApprovalAutomatic,
		},
	}
	must(t, k8s.Create(ctx, sub))

	csv := waitForSucceededCSV(t, ctx, sub)
	t.Logf("CSV %s/%s is Succeeded", csv.Namespace, csv.Name)

	// The install needed no monitoring API: the cluster serves it only in
	// the run that installed the CRDs, and OLM created no object of it.
	if served := monitoringServed(t); served != m.monitoringCRDs {
		t.Fatalf("%s served: %v, want %v", monitoring.GroupVersion, served, m.monitoringCRDs)
	}
	var plans operatorsv1alpha1.InstallPlanList
	must(t, k8s.List(ctx, &plans, client.InNamespace(m.operatorNS)))
	for _, p := range plans.Items {
		for _, step := range p.Status.Plan {
			if step != nil && step.Resource.Group == monitoringGroup {
				t.Errorf("InstallPlan %s installs %s %s from the bundle", p.Name, step.Resource.Kind, step.Resource.Name)
			}
		}
	}

	// What the manager's WATCH_NAMESPACE fieldRef resolves to.
	dep := &appsv1.Deployment{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: m.operatorNS, Name: operatorName}, dep))
	watch, ok := dep.Spec.Template.Annotations["olm.targetNamespaces"]
	if !ok || !sameSet(watch, m.wantWatchEnv) {
		t.Fatalf("olm.targetNamespaces on the operator's pod template = %q (present %v), want %q", watch, ok, m.wantWatchEnv)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	if f := env["WATCH_NAMESPACE"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "metadata.annotations['olm.targetNamespaces']" {
		t.Fatalf("the installed Deployment does not take WATCH_NAMESPACE from olm.targetNamespaces: %+v", env["WATCH_NAMESPACE"])
	}

	// The manager runs here as a process, standing in for the Deployment's
	// pod (which kwok only pretends to run): it is told that pod's name and
	// namespace, as the downward API tells the real one.
	podName := deploymentPod(t, ctx, dep)
	manager := startManager(t, ctx, m.operatorNS, podName, watch, env["RELATED_IMAGE_PODSET"].Value)
	if m.monitoringCRDs {
		checkMonitoringObjects(t, ctx, m.operatorNS, dep)
	} else {
		// The manager saw no monitoring API, and said so once.
		must(t, poll(ctx, time.Minute, func() (bool, string, error) {
			return len(monitoringLog(t, manager)) > 0, "no monitoring line in the manager's log", nil
		}))
	}

	// The CSV's alm-examples is what the console offers users to create.
	var examples []appv1alpha1.PodSet
	must(t, json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples))
	if len(examples) != 1 {
		t.Fatalf("want one alm-example, got %d", len(examples))
	}
	ps := examples[0].DeepCopy()
	ps.Namespace = m.podsetNS
	must(t, k8s.Create(ctx, ps))
	want := ps.DesiredReplicas()
	if want < 1 {
		t.Fatalf("the alm-example asks for %d replicas; the test needs at least one", want)
	}

	var ignored *appv1alpha1.PodSet
	if m.ignoredNS != "" {
		ignored = examples[0].DeepCopy()
		ignored.Namespace = m.ignoredNS
		must(t, k8s.Create(ctx, ignored))
	}

	err := poll(ctx, 3*time.Minute, func() (bool, string, error) {
		if exited(manager) {
			return false, "", fmt.Errorf("the manager exited:\n%s", tail(manager.LogPath(), 40))
		}
		got := &appv1alpha1.PodSet{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), got); err != nil {
			return false, "", err
		}
		pods, err := ownedPods(ctx, got)
		if err != nil {
			return false, "", err
		}
		s := got.Status
		ok := s.ObservedGeneration == got.Generation && s.Replicas == want && s.ReadyReplicas == want &&
			s.AvailableReplicas == want && len(pods) == int(want)
		return ok, fmt.Sprintf("status %+v, %d owned pods", s, len(pods)), nil
	})
	if err != nil {
		t.Fatalf("the alm-example PodSet did not converge: %v\nmanager log:\n%s", err, tail(manager.LogPath(), 40))
	}
	t.Logf("PodSet %s/%s converged to %d ready pods", ps.Namespace, ps.Name, want)
	if m.openshift != nil {
		for ns, pods := range map[string]int{m.podsetNS: int(want), m.operatorNS: 1} {
			j, err := m.openshift.CheckPods(ctx, ns, firstUID[ns], pods)
			if err != nil {
				t.Errorf("under OpenShift's SCC admission: %v", err)
			}
			t.Logf("the stand-in judged %d pods of %s: %d admitted (%v), %d refused", j.Admitted+j.Refused, ns, j.Admitted, j.SCCs, j.Refused)
		}
	}

	if ignored != nil {
		// The operator has had the time to converge the watched PodSet; the
		// other one must still be untouched.
		got := &appv1alpha1.PodSet{}
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(ignored), got))
		pods, err := ownedPods(ctx, got)
		must(t, err)
		if got.Status.ObservedGeneration != 0 || len(pods) != 0 {
			t.Errorf("PodSet in unwatched namespace %s was acted on: status %+v, %d pods", m.ignoredNS, got.Status, len(pods))
		}
		must(t, k8s.Delete(ctx, ignored))
	}

	// Anything the CSV's RBAC forgot shows up as an RBAC denial of the
	// ServiceAccount in the log. (Other "forbidden" errors are admission's,
	// e.g. blockOwnerDeletion checks while the API server's RESTMapper has not
	// yet discovered the CRD OLM just created; those pass with a retry.)
	const denial = `forbidden: User "system:serviceaccount:`
	if log, _ := os.ReadFile(manager.LogPath()); strings.Contains(string(log), denial) {
		t.Errorf("the manager hit RBAC denials with the CSV's ServiceAccount:\n%s", grep(string(log), denial))
	}

	// Delete the PodSet while the manager still runs (it may hold a
	// finalizer), then stop the manager and uninstall.
	// Its pods go with it through the garbage collector, which has to have
	// discovered the new CRD first (it rescans every 30s); deleting the CRD
	// before would orphan them.
	must(t, k8s.Delete(ctx, ps))
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), &appv1alpha1.PodSet{})
		if err == nil {
			return false, "PodSet still present", nil
		}
		if !apierrors.IsNotFound(err) {
			return false, "", err
		}
		// Any pod a PodSet controls, including one whose owner is gone (the
		// operator's own pod may share the namespace).
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(m.podsetNS)); err != nil {
			return false, "", err
		}
		n := 0
		for _, p := range pods.Items {
			if c := metav1.GetControllerOf(&p); c != nil && c.Kind == "PodSet" {
				n++
			}
		}
		return n == 0, fmt.Sprintf("%d PodSet pods left in %s", n, m.podsetNS), nil
	}))
	// One line about the monitoring objects, whatever the cluster, and no
	// error: not served, or applied.
	wantLine := "is not served"
	if m.monitoringCRDs {
		wantLine = "applied the ServiceMonitor and PrometheusRule"
	}
	if lines := monitoringLog(t, manager); len(lines) != 1 || !strings.Contains(lines[0], wantLine) {
		t.Errorf("the manager's monitoring log, want one line saying %q:\n%s", wantLine, strings.Join(lines, "\n"))
	}
	_ = manager.Stop()

	uninstall(t, ctx, m, sub, csv)
}

func waitForSucceededCSV(t *testing.T, ctx context.Context, sub *operatorsv1alpha1.Subscription) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	err := poll(ctx, 4*time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub); err != nil {
			return false, "", err
		}
		// The CSV the Subscription's InstallPlan installs. Not taken from
		// sub.Status.InstalledCSV alone: OLM v0.28 sometimes loses the race to
		// record it (the Subscription then reports "clusterserviceversion ...
		// exists and is not referenced by a subscription") although the
		// InstallPlan it created completed.
		name := sub.Status.InstalledCSV
		if name == "" {
			var plans operatorsv1alpha1.InstallPlanList
			if err := k8s.List(ctx, &plans, client.InNamespace(sub.Namespace)); err != nil {
				return false, "", err
			}
			for _, p := range plans.Items {
				if metav1.IsControlledBy(&p, sub) || ownedBy(&p, sub) {
					if len(p.Spec.ClusterServiceVersionNames) > 0 {
						name = p.Spec.ClusterServiceVersionNames[0]
					}
				}
			}
		}
		if name == "" {
			return false, fmt.Sprintf("subscription state %q, conditions %v", sub.Status.State, sub.Status.Conditions), nil
		}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: name}, csv); err != nil {
			return false, "", err
		}
		if csv.Status.Phase != operatorsv1alpha1.CSVPhaseSucceeded {
			return false, fmt.Sprintf("CSV %s phase %q: %s %s", csv.Name, csv.Status.Phase, csv.Status.Reason, csv.Status.Message), nil
		}
		// The install is over only once every InstallPlan has settled: the
		// catalog operator may still be executing a second plan (created when
		// a Subscription status update conflicts), and would re-create
		// whatever an uninstall deletes meanwhile.
		var plans operatorsv1alpha1.InstallPlanList
		if err := k8s.List(ctx, &plans, client.InNamespace(sub.Namespace)); err != nil {
			return false, "", err
		}
		for _, p := range plans.Items {
			if p.Status.Phase != operatorsv1alpha1.InstallPlanPhaseComplete {
				return false, fmt.Sprintf("InstallPlan %s phase %q", p.Name, p.Status.Phase), nil
			}
		}
		return true, "", nil
	})
	if err == nil {
		waitForSubscriptionAtLatest(t, ctx, sub, csv.Name)
	}
	if err != nil {
		var unmet []string
		for _, r := range csv.Status.RequirementStatus {
			if r.Status != operatorsv1alpha1.RequirementStatusReasonPresent {
				unmet = append(unmet, fmt.Sprintf("%s %s %s: %s %s %+v", r.Group, r.Kind, r.Name, r.Status, r.Message, r.Dependents))
			}
		}
		var plans operatorsv1alpha1.InstallPlanList
		_ = k8s.List(ctx, &plans, client.InNamespace(sub.Namespace))
		planStates := make([]string, 0, len(plans.Items))
		for _, p := range plans.Items {
			planStates = append(planStates, fmt.Sprintf("%s %s %s %v", p.Name, p.Status.Phase, p.Status.Message, p.Status.Conditions))
		}
		t.Fatalf("no Succeeded CSV: %v\nunmet requirements:\n%s\ninstall plans: %s\nolm log:\n%s\ncatalog log:\n%s", err,
			strings.Join(unmet, "\n"), strings.Join(planStates, "; "),
			tail(filepath.Join(logDir, "olm.log"), 20), tail(filepath.Join(logDir, "catalog.log"), 20))
	}
	if csv.Namespace != sub.Namespace || csv.IsCopied() {
		t.Fatalf("the installed CSV %s/%s is not the subscription's own", csv.Namespace, csv.Name)
	}
	return csv
}

// waitForSubscriptionAtLatest waits, as an administrator does before
// uninstalling (`kubectl wait subscription --for=jsonpath=...`), until the
// Subscription records the install: state AtLatestKnown, with csv as both
// its current and its installed CSV. Until then OLM's catalog operator
// still counts the Subscription as unresolved, and a namespace sync that
// lists it while the uninstall deletes it can resolve it once the CSV is
// gone: it makes a new InstallPlan, owned by the deleted Subscription,
// which re-creates the CSV, the CRD and the CSV's cluster RBAC after the
// uninstall (OLM labels that RBAC with olm.owner and removes it only in
// the CSV's finalizer). OLM v0.28 sometimes loses the Subscription's status
// update for good (two workers sync a namespace at once); the wait then
// ends, says so, and the uninstall deals with a late InstallPlan.
func waitForSubscriptionAtLatest(t *testing.T, ctx context.Context, sub *operatorsv1alpha1.Subscription, csv string) {
	t.Helper()
	err := poll(ctx, time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub); err != nil {
			return false, "", err
		}
		st := sub.Status
		return st.State == operatorsv1alpha1.SubscriptionStateAtLatest && st.CurrentCSV == csv && st.InstalledCSV == csv,
			fmt.Sprintf("subscription state %q, currentCSV %q, installedCSV %q", st.State, st.CurrentCSV, st.InstalledCSV), nil
	})
	if err != nil {
		t.Logf("the Subscription never recorded the install (OLM lost its status update): %v", err)
	}
}

// startManager runs the operator binary with a token of the ServiceAccount
// OLM created for the CSV, and the environment the CSV's Deployment gives it.
func startManager(t *testing.T, ctx context.Context, ns, podName, watch, operandImage string) *localcluster.Process {
	t.Helper()
	return startManagerBin(t, ctx, bins.manager, ns, podName, watch, operandImage)
}

// startManagerBin is startManager with a given manager binary.
func startManagerBin(t *testing.T, ctx context.Context, bin, ns, podName, watch, operandImage string) *localcluster.Process {
	t.Helper()
	cfg, err := cluster.ServiceAccountConfig(ctx, ns, operatorName, time.Hour)
	must(t, err)
	kubeconfig := filepath.Join(logDir, "manager-"+ns+".kubeconfig")
	must(t, localcluster.WriteKubeconfig(kubeconfig, cfg))
	probe, err := localcluster.FreePort()
	must(t, err)
	// Leader election is off: outside a pod the manager cannot discover its
	// namespace. Metrics are off: the port would collide with other runs.
	p, err := startProc("manager-"+ns, bin, []string{
		"--leader-elect=false",
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probe),
		"--metrics-bind-address=0",
	}, "KUBECONFIG="+kubeconfig, "WATCH_NAMESPACE="+watch, "RELATED_IMAGE_PODSET="+operandImage,
		"POD_NAME="+podName, "POD_NAMESPACE="+ns)
	must(t, err)
	t.Cleanup(func() { _ = p.Stop() })
	err = poll(ctx, time.Minute, func() (bool, string, error) {
		if exited(p) {
			return false, "", fmt.Errorf("the manager exited:\n%s", tail(p.LogPath(), 40))
		}
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(probe) + "/readyz")
		if err != nil {
			return false, err.Error(), nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, "readyz " + resp.Status, nil
	})
	if err != nil {
		t.Fatalf("the manager did not become ready: %v", err)
	}
	return p
}

// uninstall removes the operator the way OLM documents (Subscription, then
// CSV, then the CRD, which OLM never deletes by itself) and checks that
// nothing the install created is left.
func uninstall(t *testing.T, ctx context.Context, m mode, sub *operatorsv1alpha1.Subscription, csv *operatorsv1alpha1.ClusterServiceVersion) {
	t.Helper()
	// The install was complete before this began (every InstallPlan
	// Complete, the manager run): cluster RBAC created from now on comes
	// from a late InstallPlan step (below).
	uninstallBegan := time.Now().Truncate(time.Second)
	// The InstallPlans go before the CSV: until the garbage collector removes
	// them after their Subscription, the catalog operator may execute one
	// again and re-create the CSV (and the CRD) just deleted.
	must(t, k8s.Delete(ctx, sub))
	must(t, k8s.DeleteAllOf(ctx, &operatorsv1alpha1.InstallPlan{}, client.InNamespace(m.operatorNS)))
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		var plans operatorsv1alpha1.InstallPlanList
		if err := k8s.List(ctx, &plans, client.InNamespace(m.operatorNS)); err != nil {
			return false, "", err
		}
		return len(plans.Items) == 0, fmt.Sprintf("%d InstallPlans left", len(plans.Items)), nil
	}))
	must(t, k8s.Delete(ctx, csv))
	must(t, k8s.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}}))

	// This install's own objects: the CSV's name is the same in every mode,
	// its namespace is not.
	owner := client.MatchingLabels{"olm.owner": csv.Name, "olm.owner.namespace": csv.Namespace}
	// When an InstallPlan was last seen in the namespace.
	lastPlan := time.Now()
	err := poll(ctx, 2*time.Minute, func() (bool, string, error) {
		var left []string
		add := func(kind string, n int, err error) error {
			if err != nil {
				return err
			}
			if n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, kind))
			}
			return nil
		}
		var csvs operatorsv1alpha1.ClusterServiceVersionList
		var plans operatorsv1alpha1.InstallPlanList
		var deps appsv1.DeploymentList
		var sas corev1.ServiceAccountList
		var svcs corev1.ServiceList
		var roles rbacv1.RoleList
		var rbs rbacv1.RoleBindingList
		var crs rbacv1.ClusterRoleList
		var crbs rbacv1.ClusterRoleBindingList
		var pods corev1.PodList
		for _, c := range []struct {
			kind string
			list client.ObjectList
			opts []client.ListOption
			n    func() int
		}{
			// Copied CSVs in target namespaces too.
			{"ClusterServiceVersions", &csvs, []client.ListOption{client.MatchingFields{"metadata.name": csv.Name}}, func() int { return len(csvs.Items) }},
			{"InstallPlans", &plans, []client.ListOption{client.InNamespace(m.operatorNS)}, func() int { return len(plans.Items) }},
			{"Deployments", &deps, []client.ListOption{client.InNamespace(m.operatorNS)}, func() int { return len(deps.Items) }},
			{"operator ServiceAccounts", &sas, []client.ListOption{client.InNamespace(m.operatorNS), client.MatchingFields{"metadata.name": operatorName}}, func() int { return len(sas.Items) }},
			{"Services", &svcs, []client.ListOption{client.InNamespace(m.operatorNS)}, func() int { return len(svcs.Items) }},
			{"Roles", &roles, []client.ListOption{owner}, func() int { return len(roles.Items) }},
			{"RoleBindings", &rbs, []client.ListOption{owner}, func() int { return len(rbs.Items) }},
			{"ClusterRoles", &crs, []client.ListOption{owner}, func() int {
				n := 0
				for i := range crs.Items {
					if !deleteIfLate(t, ctx, &crs.Items[i], uninstallBegan) {
						left = append(left, fmt.Sprintf("ClusterRole %s %v", crs.Items[i].Name, crs.Items[i].Labels))
						n++
					}
				}
				return n
			}},
			{"ClusterRoleBindings", &crbs, []client.ListOption{owner}, func() int {
				n := 0
				for i := range crbs.Items {
					if !deleteIfLate(t, ctx, &crbs.Items[i], uninstallBegan) {
						n++
					}
				}
				return n
			}},
			{"pods", &pods, []client.ListOption{client.InNamespace(m.podsetNS)}, func() int { return len(pods.Items) }},
		} {
			err := k8s.List(ctx, c.list, c.opts...)
			if err := add(c.kind, c.n(), err); err != nil {
				return false, "", err
			}
		}
		if m.monitoringCRDs {
			for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
				list := &unstructured.UnstructuredList{}
				list.SetGroupVersionKind(schema.GroupVersionKind{Group: monitoringGroup, Version: "v1", Kind: kind + "List"})
				err := k8s.List(ctx, list, client.InNamespace(m.operatorNS))
				if err := add(kind+"s", len(list.Items), err); err != nil {
					return false, "", err
				}
			}
		}
		// A late InstallPlan (see waitForSubscriptionAtLatest) can bring the
		// CSV back, with its cluster RBAC. Delete the plan first; delete the
		// CSV only once no plan has been seen for a while and OLM has put
		// its cleanup finalizer on it, so that the finalizer runs after the
		// plan's last step and removes the RBAC it made. Leftover RBAC is
		// never deleted here: that would hide a real uninstall bug.
		if len(plans.Items) > 0 {
			lastPlan = time.Now()
			for i := range plans.Items {
				p := &plans.Items[i]
				t.Logf("InstallPlan %s (generation %d, phase %q, owners %v, created %s) appeared after the uninstall; deleting it",
					p.Name, p.Spec.Generation, p.Status.Phase, ownerNames(p), p.CreationTimestamp.Format(time.RFC3339))
				if err := k8s.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
					return false, "", err
				}
			}
		}
		for i := range csvs.Items {
			c := &csvs.Items[i]
			if c.Namespace != m.operatorNS || c.DeletionTimestamp != nil {
				continue
			}
			if time.Since(lastPlan) < planQuiet || !hasFinalizer(c, csvCleanupFinalizer) {
				left = append(left, fmt.Sprintf("CSV %s re-created (uid %s, phase %q), deleted once no InstallPlan is left", c.Name, c.UID, c.Status.Phase))
				continue
			}
			t.Logf("CSV %s/%s was re-created after the uninstall (uid %s, created %s, phase %q); deleting it again",
				c.Namespace, c.Name, c.UID, c.CreationTimestamp.Format(time.RFC3339), c.Status.Phase)
			if err := k8s.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
				return false, "", err
			}
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := k8s.Get(ctx, client.ObjectKey{Name: crdName}, crd)
		if err == nil {
			left = append(left, "the PodSet CRD")
			// OLM v0.28's catalog operator can still be executing an
			// InstallPlan it picked up before the plan was deleted; on this
			// 2-core machine it once re-created the CRD after the delete
			// above. Nothing re-creates it once that sync is over, so delete
			// it again, as an administrator would, and say so.
			if crd.DeletionTimestamp == nil {
				t.Logf("the PodSet CRD was re-created after the uninstall (an InstallPlan sync in flight); deleting it again")
				if err := k8s.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
					return false, "", err
				}
			}
		} else if !apierrors.IsNotFound(err) {
			return false, "", err
		}
		// ClusterRoles OLM aggregates for the owned API (<crd>-<version>-admin,
		// -edit, -view, and <crd>-crdview) must go with the CRD.
		var all rbacv1.ClusterRoleList
		if err := k8s.List(ctx, &all); err != nil {
			return false, "", err
		}
		for _, cr := range all.Items {
			if strings.HasPrefix(cr.Name, crdName) {
				left = append(left, "ClusterRole "+cr.Name)
			}
		}
		return len(left) == 0, "left after uninstall: " + strings.Join(left, ", "), nil
	})
	if err != nil {
		t.Fatalf("uninstall is incomplete: %v\nolm log:\n%s\ncatalog log:\n%s", err,
			tail(filepath.Join(logDir, "olm.log"), 40), tail(filepath.Join(logDir, "catalog.log"), 40))
	}
	must(t, k8s.Delete(ctx, &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "podset-operator", Namespace: m.operatorNS}}))
}

const (
	// csvCleanupFinalizer is the finalizer in which OLM deletes a CSV's
	// cluster-scoped RBAC (matched by its olm.owner labels).
	csvCleanupFinalizer = "operators.coreos.com/csv-cleanup"
	// planQuiet is how long no InstallPlan may have been seen before a
	// re-created CSV is deleted: longer than a plan's step takes to run.
	planQuiet = 5 * time.Second
)

// deleteIfLate deletes o, cluster RBAC of the CSV, and says so, when it was
// created after the uninstall began: OLM v0.28's catalog operator can be in
// the middle of a sync of an InstallPlan, begun from its cache before the
// plan was deleted, that executes the plan's steps again (and fails only at
// the end, writing the plan's status). Its cluster RBAC, which OLM removes
// only in the CSV's finalizer, then outlives the CSV. A user who uninstalls
// during such a sync meets the same; it is OLM's, and removed as an
// administrator would. RBAC older than the uninstall that is still there is
// an uninstall bug, and stays to fail the test.
func deleteIfLate(t *testing.T, ctx context.Context, o client.Object, uninstallBegan time.Time) bool {
	if o.GetCreationTimestamp().Time.Before(uninstallBegan) {
		return false
	}
	t.Logf("%T %s was created at %s, after the uninstall began (a late InstallPlan step); deleting it",
		o, o.GetName(), o.GetCreationTimestamp().Format(time.RFC3339))
	if err := k8s.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
		t.Logf("deleting %s: %v", o.GetName(), err)
	}
	return true
}

func hasFinalizer(o metav1.Object, f string) bool {
	for _, x := range o.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}

func ownerNames(o metav1.Object) []string {
	var names []string
	for _, r := range o.GetOwnerReferences() {
		names = append(names, r.Kind+"/"+r.Name)
	}
	return names
}

func grep(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// sameSet compares two comma-separated lists regardless of order.
func sameSet(a, b string) bool {
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	sort.Strings(as)
	sort.Strings(bs)
	return strings.Join(as, ",") == strings.Join(bs, ",")
}

func ownedBy(o, owner metav1.Object) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}
