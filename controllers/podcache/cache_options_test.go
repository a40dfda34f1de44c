package podcache

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/randfill"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

func TestCacheOptionsRestrictsPodsToManagedOnes(t *testing.T) {
	g := NewWithT(t)

	opts := CacheOptions(nil, NewPodIndex(), nil, nil)

	g.Expect(opts.ByObject).To(HaveLen(3))
	var podCache, revisionCache *cache.ByObject
	for obj, byObject := range opts.ByObject {
		switch obj.(type) {
		case *corev1.Pod:
			podCache = &byObject
		case *appsv1.ControllerRevision:
			revisionCache = &byObject
		}
	}
	g.Expect(podSetCacheOf(opts).Label).To(BeNil(), "every PodSet")
	g.Expect(revisionCache).NotTo(BeNil(), "no ByObject entry for ControllerRevisions")
	g.Expect(revisionCache.Label.String()).To(Equal("app.kubernetes.io/managed-by=podset-operator"),
		"only this operator's revisions, not every StatefulSet's")
	g.Expect(podCache).NotTo(BeNil(), "no ByObject entry for pods")
	g.Expect(podCache.Label).NotTo(BeNil())
	g.Expect(podCache.Label.String()).To(Equal("app.example.com/podset"))
	g.Expect(podCache.Label.Matches(labels.Set(operand.Labels(unitPodSet(1))))).To(BeTrue())
	g.Expect(podCache.Label.Matches(labels.Set{appv1alpha1.LabelPodSet: "web", appv1alpha1.LabelManagedBy: "Helm"})).To(BeTrue(),
		"a template may set its own managed-by label")
	g.Expect(podCache.Label.Matches(labels.Set{appv1alpha1.LabelName: appv1alpha1.NameValue, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue})).To(BeFalse(),
		"only pods of a PodSet")
	g.Expect(podCache.Field).To(BeNil())
}

func TestCacheOptionsStripsManagedFields(t *testing.T) {
	g := NewWithT(t)
	opts := CacheOptions(nil, NewPodIndex(), nil, nil)
	g.Expect(opts.DefaultTransform).NotTo(BeNil())
	pod := operandtest.AsPod(unitPod("a", withPodLabels(map[string]string{appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue})))
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}

	out, err := opts.DefaultTransform(pod)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(BeAssignableToTypeOf(&corev1.Pod{}))
	stripped := out.(*corev1.Pod)
	g.Expect(stripped.ManagedFields).To(BeEmpty())
	g.Expect(stripped.Name).To(Equal("a"))
	g.Expect(stripped.Labels).To(HaveKeyWithValue(appv1alpha1.LabelManagedBy, appv1alpha1.ManagedByValue))
}

// podSetCacheOf is the ByObject entry of PodSets in opts.
func podSetCacheOf(opts cache.Options) cache.ByObject {
	for obj, byObject := range opts.ByObject {
		if _, ok := obj.(*appv1alpha1.PodSet); ok {
			return byObject
		}
	}
	panic("no ByObject entry for PodSets")
}

func TestPodSetTransformDropsManagedFieldsAndLastApplied(t *testing.T) {
	g := NewWithT(t)
	transform := podSetCacheOf(CacheOptions(nil, NewPodIndex(), nil, nil)).Transform
	g.Expect(transform).NotTo(BeNil())
	ps := unitPodSet(3)
	ps.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	ps.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"apiVersion":"app.example.com/v1alpha1"}`}

	out, err := transform(ps)

	g.Expect(err).NotTo(HaveOccurred())
	cached := out.(*appv1alpha1.PodSet)
	g.Expect(cached.ManagedFields).To(BeNil())
	g.Expect(cached.Annotations).To(BeNil(), "no empty map kept")

	ps = unitPodSet(3)
	ps.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: "{}", appv1alpha1.AnnotationRolloutRetry: "x"}
	out, err = transform(ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*appv1alpha1.PodSet).Annotations).To(Equal(map[string]string{appv1alpha1.AnnotationRolloutRetry: "x"}))

	tombstone := toolscache.DeletedFinalStateUnknown{Key: "ns/web", Obj: unitPodSet(1)}
	out, err = transform(tombstone)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tombstone))
}

// TestPodSetTransformKeepsEveryOtherField fills PodSets at random, every
// field of spec, status and metadata, and checks that the cached one, its
// template restored as Reconcile restores it, differs from it only by
// managedFields and the last-applied annotation: a field the transform
// dropped or changed would be one a phase reads wrong.
func TestPodSetTransformKeepsEveryOtherField(t *testing.T) {
	g := NewWithT(t)
	transform := podSetCacheOf(CacheOptions(nil, NewPodIndex(), nil, nil)).Transform
	filler := randfill.NewWithSeed(1).NilChance(0.2).NumElements(1, 3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(strconv.Itoa(c.Intn(1000)) + "m")
		},
		// The API server's times are to the second, as JSON carries them.
		func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.Unix(c.Int63n(1<<31), 0) },
		// Values that encode: no other kind of IntOrString exists, and
		// managedFields hold JSON.
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(0))
			}
		},
		func(f *metav1.FieldsV1, _ randfill.Continue) { f.SetRawBytes([]byte(`{"f:metadata":{}}`)) },
	)
	for i := range 300 {
		ps := &appv1alpha1.PodSet{}
		filler.Fill(ps)
		if i%3 == 0 {
			ps.Spec.Template = nil // the short form
		}
		ps.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		if ps.Annotations == nil {
			ps.Annotations = map[string]string{}
		}
		want := ps.DeepCopy()
		want.ManagedFields = nil
		if len(want.Annotations) == 0 {
			want.Annotations = nil
		}
		ps.Annotations[corev1.LastAppliedConfigAnnotation] = "{}"

		out, err := transform(ps)
		g.Expect(err).NotTo(HaveOccurred())
		cached := out.(*appv1alpha1.PodSet)
		g.Expect(cached.Spec.Template).To(BeNil(), "PodSet %d: the template is kept encoded", i)
		// Reconcile reads a copy, and restores its template.
		read := cached.DeepCopy()
		g.Expect(RestoreTemplate(read)).To(Succeed())

		g.Expect(apiequality.Semantic.DeepEqual(read, want)).To(BeTrue(), "PodSet %d: the cached copy differs: %s", i, cmp.Diff(want, read))
		// The same JSON, so the same revision hash and the same pods.
		g.Expect(json.Marshal(read.Spec.Template)).To(MatchJSON(must(json.Marshal(want.Spec.Template))), "PodSet %d", i)
		if want.Spec.Template != nil {
			// The bytes of its revision's data, which it shares.
			data, err := revision.Encode(revision.Template{Template: want.Spec.Template})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(inflate(cached.Annotations[cachedTemplateAnnotation])).To(Equal(data.Raw), "PodSet %d", i)
		}
		g.Expect(cached.Spec.Template).To(BeNil(), "restoring a copy leaves the cache as it is")
	}
}

func TestCachedTemplateSurvivesASecondTransform(t *testing.T) {
	g := NewWithT(t)
	transform := podSetCacheOf(CacheOptions(nil, NewPodIndex(), nil, nil)).Transform
	ps := unitPodSet(3)
	ps.Spec.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}
	want := ps.Spec.Template.DeepCopy()

	once, err := transform(ps)
	g.Expect(err).NotTo(HaveOccurred())
	twice, err := transform(once)
	g.Expect(err).NotTo(HaveOccurred())

	read := twice.(*appv1alpha1.PodSet).DeepCopy()
	g.Expect(RestoreTemplate(read)).To(Succeed())
	g.Expect(read.Spec.Template).To(Equal(want))
	g.Expect(read.Annotations).To(BeNil())
}

func TestCachedTemplateAnnotationOfAUserIsNeverReadAsATemplate(t *testing.T) {
	g := NewWithT(t)
	transform := podSetCacheOf(CacheOptions(nil, NewPodIndex(), nil, nil)).Transform
	forged := `{"template":{"spec":{"containers":[{"name":"evil","image":"evil"}]}}}`

	// The short form with the annotation set by hand: no template appears.
	ps := unitPodSet(1)
	ps.Annotations = map[string]string{cachedTemplateAnnotation: forged, cachedTemplateSealAnnotation: "0123456789abcdef", "team": "a"}
	out, err := transform(ps)
	g.Expect(err).NotTo(HaveOccurred())
	read := out.(*appv1alpha1.PodSet).DeepCopy()
	g.Expect(RestoreTemplate(read)).To(Succeed())
	g.Expect(read.Spec.Template).To(BeNil())
	g.Expect(read.Annotations).To(Equal(map[string]string{"team": "a"}))

	// With a template: the PodSet's own template is the one restored.
	ps = unitPodSet(1)
	ps.Spec.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}
	ps.Annotations = map[string]string{cachedTemplateAnnotation: forged}
	out, err = transform(ps)
	g.Expect(err).NotTo(HaveOccurred())
	read = out.(*appv1alpha1.PodSet).DeepCopy()
	g.Expect(RestoreTemplate(read)).To(Succeed())
	g.Expect(read.Spec.Template.Spec.Containers[0].Image).To(Equal("web:1"))

	// A PodSet read from the API server is left as it is, but for a
	// user's annotation of that name.
	apiRead := unitPodSet(1)
	g.Expect(RestoreTemplate(apiRead)).To(Succeed())
	g.Expect(apiRead).To(Equal(unitPodSet(1)))
	apiRead.Spec.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}
	apiRead.Annotations = map[string]string{cachedTemplateAnnotation: forged, cachedTemplateSealAnnotation: "0123456789abcdef", "team": "a"}
	g.Expect(RestoreTemplate(apiRead)).To(Succeed())
	g.Expect(apiRead.Spec.Template.Spec.Containers[0].Image).To(Equal("web:1"))
	g.Expect(apiRead.Annotations).To(Equal(map[string]string{"team": "a"}))
}

// A cached PodSet and the cached revision it runs hold one copy of the
// template: the PodSet's encoded template is the revision's data, byte for
// byte (as revision.Encode writes it), for a template as the API server
// sends it.
func TestCachedPodSetSharesItsTemplateWithItsRevision(t *testing.T) {
	g := NewWithT(t)
	opts := CacheOptions(nil, NewPodIndex(), nil, nil)
	var podSets, revisions toolscache.TransformFunc
	for obj, byObject := range opts.ByObject {
		switch obj.(type) {
		case *appv1alpha1.PodSet:
			podSets = byObject.Transform
		case *appsv1.ControllerRevision:
			revisions = byObject.Transform
		}
	}
	g.Expect(podSets).NotTo(BeNil())
	g.Expect(revisions).NotTo(BeNil())

	// As the API server sends it: decoded from its JSON.
	written := unitPodSet(3)
	written.Spec.Template = chartLikeTemplate()
	ps := &appv1alpha1.PodSet{}
	g.Expect(json.Unmarshal(must(json.Marshal(written)), ps)).To(Succeed())
	data, err := revision.Encode(operand.TemplateOf(ps))
	g.Expect(err).NotTo(HaveOccurred())
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1"}, Data: data, Revision: 1}
	cr.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "manager"}}

	out, err := revisions(cr)
	g.Expect(err).NotTo(HaveOccurred())
	cachedRevision := out.(*appsv1.ControllerRevision)
	g.Expect(cachedRevision.ManagedFields).To(BeNil())
	out, err = podSets(ps.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	cachedPodSet := out.(*appv1alpha1.PodSet)

	encoded := cachedPodSet.Annotations[cachedTemplateAnnotation]
	g.Expect(inflate(encoded)).To(Equal(data.Raw), "the PodSet's template is not its revision's data")
	g.Expect(cachedRevision.Data.Raw).To(BeNil())
	g.Expect(cachedRevision.Data.Object).To(BeAssignableToTypeOf(&deflatedData{}))
	g.Expect(unsafe.StringData(encoded)).To(BeIdenticalTo(unsafe.StringData(cachedRevision.Data.Object.(*deflatedData).deflated)), "two copies of one template")
	g.Expect(len(encoded)).To(BeNumerically("<", len(data.Raw)/2), "the cached copy is not deflated")
	decoded, err := revision.Decode(cachedRevision)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(apiequality.Semantic.DeepEqual(decoded, operand.TemplateOf(ps))).To(BeTrue(), "the cached revision reads as another template")
	read := cachedPodSet.DeepCopy()
	g.Expect(RestoreTemplate(read)).To(Succeed())
	g.Expect(apiequality.Semantic.DeepEqual(read, ps)).To(BeTrue(), "%s", cmp.Diff(ps, read))

	// A copy read through the client shares the data, and encodes as
	// the API server's revision: a merge patch made from it (an
	// adoption, a new revision number) holds only what changed.
	copied := cachedRevision.DeepCopy()
	g.Expect(copied.Data.Object).To(BeIdenticalTo(cachedRevision.Data.Object))
	g.Expect(json.Marshal(copied)).To(MatchJSON(must(json.Marshal(cr))))
	copied.Revision = 2
	patch, err := client.MergeFrom(cachedRevision).Data(copied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(patch).To(MatchJSON(`{"revision":2}`))

	// A second transform of the revision keeps the shared copy.
	again, err := revisions(cachedRevision)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.(*appsv1.ControllerRevision).Data.Object).To(BeIdenticalTo(cachedRevision.Data.Object))
}

// chartLikeTemplate is a pod template of the kind a Helm chart renders:
// two containers, probes on named ports, env from fields and a ConfigMap,
// volumes, resources.
func chartLikeTemplate() *corev1.PodTemplateSpec {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http")}},
			PeriodSeconds: 10, FailureThreshold: 3}
	}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "checksum/config": "0123456789abcdef"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/web:1.2.3",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "LOG_LEVEL", Value: "info"}},
				EnvFrom:        []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
				ReadinessProbe: probe("/ready"), LivenessProbe: probe("/healthz"),
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web"}, {Name: "tmp", MountPath: "/tmp"}},
			}, {
				Name: "sidecar", Image: "registry.example.com/proxy:2.0",
				Args: []string{"--upstream=http://127.0.0.1:8080", "--port=8443"},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestCacheOptionsNamespaces(t *testing.T) {
	tests := []struct {
		name       string
		namespaces []string
		want       []string
	}{
		{name: "nil: all namespaces", namespaces: nil, want: nil},
		{name: "empty: all namespaces", namespaces: []string{}, want: nil},
		{name: "one", namespaces: []string{"team-a"}, want: []string{"team-a"}},
		{name: "several", namespaces: []string{"team-a", "team-b", "team-c"}, want: []string{"team-a", "team-b", "team-c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			opts := CacheOptions(tt.namespaces, NewPodIndex(), nil, nil)

			if tt.want == nil {
				g.Expect(opts.DefaultNamespaces).To(BeNil())
				return
			}
			g.Expect(opts.DefaultNamespaces).To(HaveLen(len(tt.want)))
			for _, ns := range tt.want {
				g.Expect(opts.DefaultNamespaces).To(HaveKey(ns))
			}
		})
	}
}

func TestCachedPodsKeepWhatTheReconcilerReads(t *testing.T) {
	g := NewWithT(t)
	var transform func(any) (any, error)
	for obj, byObject := range CacheOptions(nil, NewPodIndex(), nil, nil).ByObject {
		if _, ok := obj.(*corev1.Pod); ok {
			transform = byObject.Transform
		}
	}
	g.Expect(transform).NotTo(BeNil(), "no Transform for pods")

	pod := newPodFromSpec(unitPodSet(1), testOperandImage)
	pod.Name, pod.UID = "web-1", "uid-1"
	pod.OwnerReferences = []metav1.OwnerReference{{Kind: "PodSet", Name: "web", UID: "ps-uid"}}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	pod.Spec.NodeName = "node-1"
	readySince := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	started := metav1.NewTime(readySince.Add(-time.Second))
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, ObservedGeneration: 1,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince, Reason: "r", Message: "m"},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince},
		},
		HostIP:    "10.0.0.1",
		PodIP:     "10.64.0.7",
		PodIPs:    []corev1.PodIP{{IP: "10.64.0.7"}},
		StartTime: &started,
		QOSClass:  corev1.PodQOSBestEffort,
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "podset", RestartCount: 2, Image: "busybox", ImageID: "sha256:abc", ContainerID: "containerd://1",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}},
			{Name: "sidecar", RestartCount: 1},
		},
	}
	want := pod.DeepCopy()

	out, err := transform(pod)

	g.Expect(err).NotTo(HaveOccurred())
	slim := out.(*slimpod.Pod)
	g.Expect(slim.ManagedFields).To(BeEmpty())
	g.Expect(slim.Spec).To(Equal(slimpod.PodSpec{NodeName: "node-1"}))
	g.Expect(slim.Extra).To(BeNil(), "a labelled pod without gates keeps neither its containers nor its observed generation")
	g.Expect(slim.Status).To(Equal(slimpod.PodStatus{
		Phase:             corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "podset", RestartCount: 2}, {Name: "sidecar", RestartCount: 1}},
	}))
	want.ManagedFields = nil
	g.Expect(slim.ObjectMeta).To(Equal(want.ObjectMeta))
	// What the reconciler reads answers the same on the slim pod as on
	// the whole one.
	now := time.Now()
	for _, minReady := range []time.Duration{0, 30 * time.Second, 2 * time.Minute} {
		g.Expect(operand.IsAvailable(slim, minReady, now)).To(Equal(operand.IsAvailable(slimpod.From(want), minReady, now)), "minReady %v", minReady)
	}
	g.Expect(operand.IsLive(slim)).To(BeTrue())
	g.Expect(operand.IsReady(slim)).To(BeTrue())
	g.Expect(operand.RestartCount(slim)).To(Equal(operand.RestartCount(slimpod.From(want))))
	g.Expect(operand.RestartCount(slim)).To(Equal(int32(3)))

	// A pod that may be updated in place keeps its gate, the gate's
	// condition, the resize conditions and what tells an update done.
	gated := want.DeepCopy()
	gated.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appv1alpha1.PodConditionInPlaceUpdateReady}}
	gated.Generation, gated.Status.ObservedGeneration = 3, 3
	gate := corev1.PodCondition{Type: appv1alpha1.PodConditionInPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: appv1alpha1.ReasonInPlaceUpdating, LastTransitionTime: readySince}
	resizing := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, Message: "m"}
	gated.Status.Conditions = append(gated.Status.Conditions, gate, resizing)
	out, err = transform(gated.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	slim = out.(*slimpod.Pod)
	g.Expect(slim.Spec).To(Equal(slimpod.PodSpec{NodeName: "node-1"}))
	g.Expect(slim.ReadinessGates()).To(Equal(gated.Spec.ReadinessGates))
	g.Expect(slim.Status.Conditions).To(Equal([]corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince}, gate, resizing,
	}))
	g.Expect(slim.ObservedGeneration()).To(Equal(int64(3)))
	g.Expect(slim.Status.ContainerStatuses[0].ContainerID).To(Equal("containerd://1"))
	g.Expect(slim.Status.ContainerStatuses[0].State.Running).NotTo(BeNil())
	g.Expect(operand.IsReady(slim)).To(BeFalse(), "held out of service by the gate")
}

func TestCachedPodsWithoutReadyConditionStayUnready(t *testing.T) {
	g := NewWithT(t)
	pod := newPodFromSpec(unitPodSet(1), testOperandImage)
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}},
	}

	slim := slimPod(pod)

	g.Expect(slim.Status).To(Equal(slimpod.PodStatus{Phase: corev1.PodPending}))
	g.Expect(operand.IsReady(slim)).To(BeFalse())
	g.Expect(operand.IsLive(slim)).To(BeTrue())
}

func TestCachedPodsWithoutRevisionKeepTheirContainers(t *testing.T) {
	g := NewWithT(t)
	pod := newPodFromSpec(unitPodSet(1), testOperandImage)
	delete(pod.Labels, appv1alpha1.LabelRevisionHash) // made by operator v0.1.0
	pod.Spec.NodeName = "node-1"
	containers := pod.DeepCopy().Spec.Containers

	slim := slimPod(pod)

	g.Expect(slim.Spec).To(Equal(slimpod.PodSpec{NodeName: "node-1"}))
	g.Expect(slim.Containers()).To(Equal(containers), "labelUnrevisionedPods compares them with the template")
}

func TestCachedPodTransformPassesTombstonesThrough(t *testing.T) {
	g := NewWithT(t)
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "ns/web-1"}
	out, err := podTransform(newSharedValues(time.Now))(tombstone)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tombstone))
}

// With WatchList, the initial events go through the transform twice (the
// reflector's temporary store, then the queue's Replace): a pod already slim
// comes out as it went in.
func TestCachedPodTransformPassesSlimPodsThrough(t *testing.T) {
	g := NewWithT(t)
	transform := podTransform(newSharedValues(time.Now))
	slim, err := transform(newPodFromSpec(unitPodSet(1), ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(slim).To(BeAssignableToTypeOf(&slimpod.Pod{}))

	again, err := transform(slim)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(slim))
}

// TestCachedPodsKeepTheReasonTheirContainersWait: auto-rollback reads it
// (CrashLoopBackOff, ImagePullBackOff and the like); the kubelet's message
// goes, and a reason it does not read is kept as plain "Waiting", one
// shared string for all pods.
func TestCachedPodsKeepTheReasonTheirContainersWait(t *testing.T) {
	g := NewWithT(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{appv1alpha1.LabelRevisionHash: "abc"}}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "a", RestartCount: 4, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}},
		{Name: "b", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "SomethingNew"}}},
		{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
	}

	slim := slimPod(pod)

	g.Expect(slim.Status.ContainerStatuses).To(Equal([]corev1.ContainerStatus{
		{Name: "a", RestartCount: 4, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
		{Name: "b", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "Waiting"}}},
		{Name: "c"},
	}))
}

// Init containers and sidecars crash as the others do: their statuses come
// first, slimmed alike.
func TestCachedPodsKeepTheirInitContainersStatuses(t *testing.T) {
	g := NewWithT(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{appv1alpha1.LabelRevisionHash: "abc"}}}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{
		{Name: "proxy", RestartCount: 5, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}

	slim := slimPod(pod)

	g.Expect(slim.Status.ContainerStatuses).To(Equal([]corev1.ContainerStatus{
		{Name: "proxy", RestartCount: 5, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
		{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}},
	}))
	g.Expect(slimpod.From(pod).Status.ContainerStatuses).To(HaveLen(2), "slimpod.From keeps them alike")
}
