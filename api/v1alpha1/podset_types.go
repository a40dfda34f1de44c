package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Condition types a PodSet reports in status.conditions.
const (
	// ConditionAvailable is True when at least spec.replicas pods have been
	// Ready for spec.minReadySeconds.
	ConditionAvailable = "Available"
	// ConditionProgressing is, as for a Deployment, True while the operator
	// moves the pods towards the spec and once they match it (reason
	// NewRevisionAvailable), Unknown while the rollout is paused, and False
	// when no progress was made for spec.progressDeadlineSeconds.
	ConditionProgressing = "Progressing"
	// ConditionReplicaFailure is True when the last attempt to create,
	// delete or update in place pods failed; its message carries the API
	// server's error.
	ConditionReplicaFailure = "ReplicaFailure"
	// ConditionReconciling and ConditionStalled are the two conditions
	// that kstatus (sigs.k8s.io/cli-utils/pkg/kstatus), and so Flux, Helm 4,
	// kpt and Config Sync, read for a custom resource. They give the
	// verdict these tools give a Deployment in the same situation:
	// Reconciling is True while the pods have not reached the spec (the
	// reasons of Progressing, and Paused), Stalled is True when they cannot
	// without someone acting (the progress deadline passed, or InPlaceOnly
	// keeps pods that need replacing). At most one of them is True.
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// PodSetSpec is the desired state of a PodSet.
//
// The rules of podUpdatePolicy InPlaceOnly (which template changes a pod can
// take in place) are not CEL rules of this schema: they compare fields of
// spec with oldSelf, and a rule added to a node that 0.2.0's CRD already had
// makes OLM v1 refuse the CRD upgrade (its CRD upgrade safety check handles
// no change of x-kubernetes-validations). The manager applies them as a
// ValidatingAdmissionPolicy (internal/admission), and the operator applies
// them to the pods themselves (controllers/inplace.Classify).
type PodSetSpec struct {
	// replicas is the number of pods the PodSet keeps running. Pods that are
	// terminating, Succeeded or Failed do not count and are replaced. At most
	// 5000: status.podNames names every live pod, and a PodSet must stay
	// within what etcd stores as one object even while it surges.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=5000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// minReadySeconds is how long a pod must have been Ready, without any of
	// its containers crashing, before it counts as available.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// template is the pod template of the PodSet's pods, as a ReplicaSet
	// takes it: any pod spec a Deployment takes, and the pods' own labels
	// and annotations. The fields image, command, args, env, resources,
	// podAnnotations and resizePolicy are the short form of a one-container
	// template; a PodSet sets one form or the other. The template's fields
	// are described in the Kubernetes API reference, not here:
	// https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-template-v1/#PodTemplateSpec
	//
	// Every pod meets the Pod Security Standard "restricted" (latest
	// version): where the template leaves them unset, the operator sets
	// runAsNonRoot, the RuntimeDefault seccomp profile, no privilege
	// escalation and all capabilities dropped, and nothing else. A template
	// that cannot meet the profile is refused at admission, naming the
	// field (on Kubernetes 1.30 and later, by the ValidatingAdmissionPolicy
	// podsets-template.app.example.com that the operator applies), and the
	// operator creates no pod from it.
	//
	// The labels app.example.com/podset and controller-revision-hash are
	// the operator's: it sets them on every pod. The template may set
	// app.kubernetes.io/name, instance and managed-by; the operator sets
	// them only where it does not.
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.ephemeralContainers)",message="ephemeral containers are added to running pods, not to a pod template",fieldPath=".spec.ephemeralContainers"
	// +kubebuilder:validation:XValidation:rule="!has(self.metadata) || !has(self.metadata.labels) || !('app.example.com/podset' in self.metadata.labels) && !('controller-revision-hash' in self.metadata.labels)",message="the labels app.example.com/podset and controller-revision-hash are set by the operator",fieldPath=".metadata.labels"
	// +optional
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`

	// image is the container image every pod runs. When empty, the operator
	// uses its default operand image (the RELATED_IMAGE_PODSET environment
	// variable of the manager, or a busybox image), which sleeps and ends on
	// SIGTERM.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains(' ')",message="image must not contain spaces"
	// +optional
	Image string `json:"image,omitempty"`

	// command overrides the image's entrypoint. When neither image nor
	// command is set, pods run the default operand's
	// `sh -c "trap 'exit 0' TERM; sleep 3600 & wait"`.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`

	// args are the arguments to the command.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`

	// env lists environment variables set in the container. Names must be
	// unique.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// resources are the compute resources (cpu, memory, ephemeral-storage)
	// requested by and limited for the container.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// podAnnotations are annotations every pod carries. They are part of the
	// pod template: changing them rolls the pods, which is how
	// `kubectl podset rollout restart` restarts them (it sets
	// kubectl.kubernetes.io/restartedAt).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="annotation keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 4096)",message="annotation values must be at most 4096 characters"
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// resizePolicy says, per resource (cpu, memory), whether the container
	// restarts when its resources are changed in place (RestartContainer)
	// or not (NotRequired, the default). It only matters under
	// updateStrategy.rollingUpdate.podUpdatePolicy InPlaceIfPossible or
	// InPlaceOnly; changing it replaces the pods.
	// +kubebuilder:validation:MaxItems=2
	// +listType=map
	// +listMapKey=resourceName
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.resourceName in ['cpu', 'memory'])",message="resourceName must be cpu or memory"
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.restartPolicy in ['NotRequired', 'RestartContainer'])",message="restartPolicy must be NotRequired or RestartContainer"
	// +optional
	ResizePolicy []corev1.ContainerResizePolicy `json:"resizePolicy,omitempty"`

	// updateStrategy says how pods are moved to a changed pod template
	// (image, command, args, env, resources, resizePolicy, podAnnotations).
	// +kubebuilder:default={}
	// +optional
	UpdateStrategy UpdateStrategy `json:"updateStrategy,omitempty"`

	// revisionHistoryLimit is how many old revisions of the pod template are
	// kept, as ControllerRevisions, for rollback. Revisions that live pods
	// still run are always kept.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// scaleStrategy names pods to remove before any other.
	// +optional
	ScaleStrategy *ScaleStrategy `json:"scaleStrategy,omitempty"`

	// podReplacementPolicy is when a pod that is being deleted is replaced,
	// as KEP-5882 proposes it for Deployments:
	//   - TerminationStarted (the default, when unset): as soon as its
	//     deletion begins; it runs out its grace period beside its
	//     replacement;
	//   - TerminationComplete: once it is gone. Live and terminating pods
	//     together then never exceed replicas (plus maxSurge while a rollout
	//     replaces pods), for pods that hold quota, GPUs or licences through
	//     a long grace period. A pod that never ends its termination (its
	//     node lost) holds its place until it is gone.
	// +kubebuilder:validation:Enum=TerminationStarted;TerminationComplete
	// +optional
	PodReplacementPolicy PodReplacementPolicy `json:"podReplacementPolicy,omitempty"`

	// progressDeadlineSeconds is how long a rollout or scaling may go without
	// progress before the Progressing condition turns False with reason
	// ProgressDeadlineExceeded. The operator keeps trying after that.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// ScaleStrategy names the pods a PodSet removes first.
type ScaleStrategy struct {
	// podsToDelete names pods of this PodSet to delete, as OpenKruise's
	// CloneSet takes them:
	//   - when replicas is lowered, the named pods are the ones removed,
	//     before any other;
	//   - otherwise each named pod is replaced, in every update strategy:
	//     its replacement is created first where maxUnavailable is 0 (it
	//     uses maxSurge), and the pod is deleted first where
	//     maxUnavailable allows;
	//   - the operator removes a name from the list once no live pod of
	//     the PodSet has it: its pod is deleted, gone, or was never the
	//     PodSet's. Names that were never the PodSet's pods are ignored,
	//     and a Warning event (reason PodToDeleteUnknown) names them.
	// Lower replicas in the same write to remove pods without
	// replacement: `kubectl podset delete-pod --scale-down` does. Pods
	// named here are not updated in place. At most 500 names; tools that
	// re-apply the spec (GitOps) should leave this list out, or it is
	// written back after the operator clears it.
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	// +optional
	PodsToDelete []string `json:"podsToDelete,omitempty"`
}

// PodsToDelete is spec.scaleStrategy.podsToDelete, or nil.
func (s *PodSetSpec) PodsToDelete() []string {
	if s.ScaleStrategy == nil {
		return nil
	}
	return s.ScaleStrategy.PodsToDelete
}

// PodReplacementPolicy is when a pod being deleted is replaced.
type PodReplacementPolicy string

const (
	// TerminationStartedPodReplacementPolicy replaces a pod as soon as its
	// deletion begins.
	TerminationStartedPodReplacementPolicy PodReplacementPolicy = "TerminationStarted"
	// TerminationCompletePodReplacementPolicy replaces a pod once it is
	// gone.
	TerminationCompletePodReplacementPolicy PodReplacementPolicy = "TerminationComplete"
)

// UpdateStrategyType is how pods take a new pod template.
// +kubebuilder:validation:Enum=RollingUpdate;OnDelete;Recreate
type UpdateStrategyType string

const (
	// RollingUpdateStrategyType replaces pods of old revisions with pods of
	// the new one, within maxSurge and maxUnavailable.
	RollingUpdateStrategyType UpdateStrategyType = "RollingUpdate"
	// OnDeleteStrategyType never replaces a pod because its template
	// changed: a pod takes the new template only when it is replaced for
	// another reason (deleted, terminated, scaled).
	OnDeleteStrategyType UpdateStrategyType = "OnDelete"
	// RecreateStrategyType deletes every pod of the old revisions at once,
	// and creates the new revision's pods only once they are all gone.
	RecreateStrategyType UpdateStrategyType = "Recreate"
)

// UpdateStrategy says how pods are moved to a changed pod template.
// +kubebuilder:validation:XValidation:rule="self.type == 'RollingUpdate' || !has(self.rollingUpdate)",message="rollingUpdate may only be set when type is RollingUpdate",fieldPath=".rollingUpdate"
type UpdateStrategy struct {
	// type is how pods move to a changed pod template:
	//   - RollingUpdate (the default): pods are replaced within maxSurge and
	//     maxUnavailable;
	//   - OnDelete: a pod takes the new template only when it is replaced
	//     for another reason;
	//   - Recreate: every pod of an older revision is deleted at once, and
	//     the new revision's pods are created only once those are gone
	//     (not only Terminating), as a Deployment's Recreate does: for
	//     applications of which two versions must never run at once (a
	//     ReadWriteOnce volume, a single writer, a schema migration).
	//     While an old pod remains, no pod is created, not even to scale up
	//     or to replace a deleted one.
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`

	// rollingUpdate tunes the RollingUpdate strategy; when absent, its
	// defaults apply.
	// +optional
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`

	// recreate tunes the Recreate strategy. It may only be set when type
	// is Recreate: the operator's admission policy refuses it otherwise
	// (Kubernetes 1.30 and later), and the operator moves no pod and says
	// why in the ReplicaFailure condition.
	// +optional
	Recreate *RecreateUpdate `json:"recreate,omitempty"`
}

// RollingUpdateSettings is rollingUpdate when the strategy is RollingUpdate,
// and nil otherwise.
func (s UpdateStrategy) RollingUpdateSettings() *RollingUpdate {
	if s.Type != "" && s.Type != RollingUpdateStrategyType {
		return nil
	}
	return s.RollingUpdate
}

// RecreateUpdate tunes a Recreate update.
type RecreateUpdate struct {
	// autoRollback, when set, returns the pods to the last revision that
	// completed (status.lastCompletedRevision) when the rollout to a new
	// one fails, as rollingUpdate.autoRollback does: the new revision's
	// pods are deleted, and the completed revision's pods are created once
	// they are gone. Off when absent; `autoRollback: {}` turns it on with
	// the defaults.
	// +optional
	AutoRollback *AutoRollback `json:"autoRollback,omitempty"`
}

// RollingUpdate tunes a rolling update.
// +kubebuilder:validation:XValidation:rule="!has(self.maxSurge) || !has(self.maxUnavailable) || !(string(self.maxSurge).matches('^0+%?$') && string(self.maxUnavailable).matches('^0+%?$'))",message="maxSurge and maxUnavailable must not both be 0: the rollout could never replace a pod"
type RollingUpdate struct {
	// maxUnavailable is how many pods (a number, or a percentage of
	// replicas, rounded down) may be unavailable during the update, below
	// replicas. When both it and maxSurge come to 0, 1 is used.
	// +kubebuilder:default="25%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string ? self.matches('^(100|[1-9]?[0-9])%$') : self >= 0",message="must be a non-negative integer or a percentage from 0% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// maxSurge is how many pods (a number, or a percentage of replicas,
	// rounded up) may exist above replicas during the update.
	// +kubebuilder:default="25%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string ? self.matches('^[0-9]+%$') : self >= 0",message="must be a non-negative integer or a percentage"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// partition is how many pods stay on the old revision: the update
	// stops once replicas - partition pods run the new one. Lowering it
	// continues the rollout; raising it rolls pods back.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	Partition *int32 `json:"partition,omitempty"`

	// podUpdatePolicy is how a pod takes a new pod template:
	//   - ReCreate (the default): it is deleted and a new pod is created;
	//   - InPlaceIfPossible: a change of image, of cpu and memory resources
	//     (within the same QoS class) or of podAnnotations is made to the
	//     running pod, which keeps its name, UID, IP and node; the kubelet
	//     restarts the container for a new image (and for a resize whose
	//     resizePolicy says RestartContainer). Any other change recreates
	//     the pod, as ReCreate does;
	//   - InPlaceOnly: as InPlaceIfPossible, but an update whose template
	//     change needs new pods is refused at admission, naming the field
	//     (on Kubernetes 1.30 and later, by the ValidatingAdmissionPolicy
	//     podsets-in-place-only.app.example.com that the operator applies).
	//     Pods that cannot take the template in place all the same (pods
	//     created by operator 0.2.0 or under ReCreate, which lack the
	//     readiness gate, or a change made before InPlaceOnly was set) are
	//     left as they are, and the Progressing condition names why.
	// In-place updates count against maxUnavailable (a maxUnavailable that
	// rounds down to 0 counts as 1 for them) and use no surge.
	// +kubebuilder:default=ReCreate
	// +optional
	PodUpdatePolicy PodUpdatePolicy `json:"podUpdatePolicy,omitempty"`

	// inPlace tunes in-place updates.
	// +optional
	InPlace *InPlaceUpdate `json:"inPlace,omitempty"`

	// paused stops the rollout: no pod is replaced because its template
	// changed, and no surge pod is created. Scaling goes on, and pods
	// replaced for other reasons take the new template.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// autoRollback, when set, returns the pods to the last revision that
	// completed (status.lastCompletedRevision) when the rollout to a new one
	// fails: the progress deadline passes, or a new pod's container
	// restarts restartLimit times or waits in CrashLoopBackOff,
	// ErrImagePull, ImagePullBackOff, InvalidImageName,
	// CreateContainerConfigError or CreateContainerError for longer than
	// failureGracePeriodSeconds. A rollout that completed (every pod
	// available) is never rolled back: set minReadySeconds to at least the
	// time a bad version takes to crash. The rollback stays within maxSurge
	// and maxUnavailable, and the operator never changes spec: re-applying
	// the failed template keeps the PodSet rolled back, a new template
	// (`kubectl podset rollout restart` makes one of the same) starts a
	// new rollout, and `kubectl podset rollout retry` (the annotation
	// app.example.com/rollout-retry) tries the failed revision once more
	// once the rollback completed or stopped. Off when absent; `autoRollback: {}` turns it on with
	// the defaults.
	// +optional
	AutoRollback *AutoRollback `json:"autoRollback,omitempty"`

	// canary runs the rollout in steps: a share of the pods moved to the
	// new revision, pauses, and analyses by a Prometheus query that
	// promote the rollout or retreat it to the last completed revision
	// (docs/canary-analysis.md). A failed analysis retreats whether or not
	// autoRollback is set. Off when absent: the rollout moves every pod.
	// +optional
	Canary *Canary `json:"canary,omitempty"`
}

// AutoRollback tunes when a rollout counts as failed.
type AutoRollback struct {
	// restartLimit is how many restarts of one container, since its pod
	// took the new revision, make the revision failed. This catches a
	// container that crashes after turning Ready, which the progress
	// deadline would take for progress. 0 turns the check off.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	RestartLimit *int32 `json:"restartLimit,omitempty"`

	// failureGracePeriodSeconds is how long a container of a new pod may
	// wait in CrashLoopBackOff, ErrImagePull, ImagePullBackOff,
	// InvalidImageName, CreateContainerConfigError or CreateContainerError
	// before the revision counts as failed: long enough for a registry or
	// a Secret that is slow to appear.
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	FailureGracePeriodSeconds *int32 `json:"failureGracePeriodSeconds,omitempty"`
}

// PodUpdatePolicy is how a pod takes a new pod template.
// +kubebuilder:validation:Enum=ReCreate;InPlaceIfPossible;InPlaceOnly
type PodUpdatePolicy string

const (
	// ReCreatePodUpdatePolicy replaces the pod.
	ReCreatePodUpdatePolicy PodUpdatePolicy = "ReCreate"
	// InPlaceIfPossiblePodUpdatePolicy updates the pod in place when the
	// change allows it, and replaces it otherwise.
	InPlaceIfPossiblePodUpdatePolicy PodUpdatePolicy = "InPlaceIfPossible"
	// InPlaceOnlyPodUpdatePolicy updates pods in place only, and keeps the
	// pods a template change cannot reach in place.
	InPlaceOnlyPodUpdatePolicy PodUpdatePolicy = "InPlaceOnly"
)

// InPlaceUpdate tunes in-place updates.
type InPlaceUpdate struct {
	// gracePeriodSeconds is how long a pod is kept out of service (not
	// Ready, so Services stop sending it traffic) before its container is
	// restarted with the new image. A preStop pause in the template
	// keeps the server up while the endpoints drop the pod, as it does
	// for a deleted pod; without one, set this to the time the cluster
	// takes to drop an endpoint from every node.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty"`
}

// EnvVar is an environment variable with a literal value.
type EnvVar struct {
	// name of the environment variable: letters, digits, '_', '-' or '.',
	// not starting with a digit.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z][-._a-zA-Z0-9]*$`
	// +required
	Name string `json:"name"`

	// value of the environment variable.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Value string `json:"value,omitempty"`
}

// Resources are the container's compute resource requests and limits.
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || self.requests.all(k, !(k in self.limits) || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",message="every request must be less than or equal to the limit of the same resource",fieldPath=".requests"
type Resources struct {
	// requests is the minimum amount of each resource the container needs.
	// +kubebuilder:validation:MaxProperties=3
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage'])",message="only cpu, memory and ephemeral-storage may be requested"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="quantities must not be negative"
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`

	// limits is the maximum amount of each resource the container may use.
	// +kubebuilder:validation:MaxProperties=3
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage'])",message="only cpu, memory and ephemeral-storage may be limited"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="quantities must not be negative"
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// PodSetStatus is the state of a PodSet's pods as last observed by the
// operator.
type PodSetStatus struct {
	// replicas is the number of live pods: owned, not terminating, and not
	// Succeeded or Failed.
	// +optional
	Replicas int32 `json:"replicas"`

	// readyReplicas is the number of live pods whose Ready condition is True.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// availableReplicas is the number of live pods that have been Ready for
	// at least spec.minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`

	// terminatingReplicas is the number of the PodSet's pods that are being
	// deleted (metadata.deletionTimestamp is set) and have not reached the
	// Succeeded or Failed phase, as a ReplicaSet counts them: they still run
	// out their grace period, and hold their node's resources and quota,
	// but no longer count in replicas (a pod deleted without a scale-down
	// has already been replaced).
	// +optional
	TerminatingReplicas int32 `json:"terminatingReplicas"`

	// The list is atomic, not a set: only the operator writes it, always
	// whole, and a set would make the API server track every name as a
	// field of its own in managedFields (a "v:<name>" entry each), on every
	// status write of a PodSet with a thousand pods.

	// podNames are the names of the live pods, sorted.
	// +listType=atomic
	// +optional
	PodNames []string `json:"podNames,omitempty"`

	// selector is the label selector of the PodSet's pods in string form; the
	// scale subresource reports it so a HorizontalPodAutoscaler can find them.
	// +optional
	Selector string `json:"selector,omitempty"`

	// observedGeneration is the metadata.generation of the spec this status
	// was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// updatedReplicas is the number of live pods that run the update
	// revision (the current pod template).
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// updatedReadyReplicas is the number of updated live pods that are
	// Ready.
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`

	// updatedAvailableReplicas is the number of updated live pods that have
	// been Ready for at least spec.minReadySeconds.
	// +optional
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas"`

	// currentRevision is the name of the ControllerRevision that the pods
	// ran before the rollout in progress, or updateRevision when none is in
	// progress. Pods that partition keeps on the old revision are created
	// from it.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// updateRevision is the name of the ControllerRevision of the current
	// pod template.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`

	// lastCompletedRevision is the name of the last ControllerRevision that
	// every pod ran, available (with at least one pod): the revision that
	// spec.updateStrategy.rollingUpdate.autoRollback returns to.
	// +optional
	LastCompletedRevision string `json:"lastCompletedRevision,omitempty"`

	// autoRollback is set once the rollout to the spec's revision failed
	// (spec.updateStrategy.rollingUpdate.autoRollback): while the pods are
	// rolled back from it, or when there was no completed revision to roll
	// back to. It is cleared when the spec asks for another revision.
	// +optional
	AutoRollback *AutoRollbackStatus `json:"autoRollback,omitempty"`

	// canary is where a canary rollout stands
	// (spec.updateStrategy.rollingUpdate.canary): its step, what the step
	// waits for, and its analyses. It stays after the rollout until the
	// next one.
	// +optional
	Canary *CanaryStatus `json:"canary,omitempty"`

	// collisionCount counts hash collisions between revision names; it is
	// part of the hash, so that a collision yields a new name.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// lastProgressTime is when the pods last moved towards the spec (a
	// pod created, deleted or turned available, a new revision), which is
	// what spec.progressDeadlineSeconds is measured from.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`

	// conditions are Available, Progressing and ReplicaFailure, and
	// Reconciling and Stalled, which kstatus (Flux, Helm, kpt) reads.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AutoRollbackStatus is a rollback from a failed revision.
type AutoRollbackStatus struct {
	// failedRevision is the ControllerRevision whose rollout failed: the
	// one spec still asks for.
	FailedRevision string `json:"failedRevision"`

	// revision is the ControllerRevision the pods are returned to: the
	// last one that completed. Empty when none had completed (a new
	// PodSet whose first template fails): the pods are left as they are.
	// +optional
	Revision string `json:"revision,omitempty"`

	// trigger is what made failedRevision fail: ProgressDeadlineExceeded,
	// RestartLimit, CrashLoopBackOff, ImagePullFailure, InvalidImageName,
	// CreateContainerFailure, AnalysisFailed (a canary analysis failed) or
	// Aborted (`kubectl podset rollout abort`).
	Trigger string `json:"trigger"`

	// message says which pod and container showed the failure.
	// +optional
	Message string `json:"message,omitempty"`

	// time is when the operator decided to roll back.
	Time metav1.Time `json:"time"`

	// complete is set once every pod runs revision, available: the
	// rollback is done, and a pod of revision that fails from then on is
	// no failure of it.
	// +optional
	Complete bool `json:"complete,omitempty"`

	// stopped is set when revision failed as well while the pods were
	// returned to it: the operator then leaves the pods as they are until
	// the spec asks for another revision, or a retry (the annotation
	// app.example.com/rollout-retry) asks for failedRevision again.
	// +optional
	Stopped bool `json:"stopped,omitempty"`
}

// PodSet keeps spec.replicas pods running and reports what it observes.
//
// Its name may be at most 63 characters long, since pods carry it as a label
// value: `make manifests` adds maxLength 63 to metadata.name in the CRD
// schema (controller-gen has no marker for it), so that the API server's
// error names metadata.name.
// +kubebuilder:object:root=true
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters long: pods carry it as a label value"
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=ps,categories=all
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Number of pods requested"
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`,description="Number of live pods"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Number of Ready pods"
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedReplicas`,description="Number of live pods running the current pod template"
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,description="Number of pods Ready for at least minReadySeconds"
// +kubebuilder:printcolumn:name="Terminating",type=integer,JSONPath=`.status.terminatingReplicas`,description="Number of pods being deleted that have not yet stopped",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the PodSet.
	// +optional
	Spec PodSetSpec `json:"spec,omitempty"`

	// status is the observed state of the PodSet.
	// +optional
	Status PodSetStatus `json:"status,omitempty"`
}

// DesiredReplicas is spec.replicas, or its default when unset (which only
// happens for objects that did not go through the API server's defaulting).
func (p *PodSet) DesiredReplicas() int32 {
	if p.Spec.Replicas == nil {
		return 1
	}
	return *p.Spec.Replicas
}

// ShortFormFields names the fields of the short form of a pod template that
// spec sets, in the order of the spec.
func (s *PodSetSpec) ShortFormFields() []string {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"image", s.Image != ""}, {"command", len(s.Command) > 0}, {"args", len(s.Args) > 0},
		{"env", len(s.Env) > 0}, {"resources", s.Resources != nil}, {"podAnnotations", len(s.PodAnnotations) > 0},
		{"resizePolicy", len(s.ResizePolicy) > 0},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	return set
}

// PodSetList is a list of PodSets.
// +kubebuilder:object:root=true
type PodSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodSet `json:"items"`
}
