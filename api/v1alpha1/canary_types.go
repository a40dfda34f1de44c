package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Canary runs a rolling update in steps (docs/canary-analysis.md): move a
// share of the pods to the new revision, pause, or run an analysis of the
// new pods by a Prometheus query, in the order given. Between the steps
// that move pods, the partition holds the others on the old revision; once
// the last step is done, the rollout goes on to every pod (the spec's own
// partition still applies), as soon as a background analysis, if any, has
// one successful measurement.
type Canary struct {
	// steps are the canary's steps, in order. A new pod template starts
	// them again from the first.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +required
	Steps []CanaryStep `json:"steps"`

	// backgroundAnalysis measures the new revision's pods through the
	// whole canary, beside the steps: from the first step until the
	// rollout is done, or until its count is reached. A failure retreats
	// and a hold holds, whatever the step, as a step's analysis does. The
	// steps cannot complete the rollout before the run has one successful
	// measurement (unless it is a dry run). count 0 or unset measures until
	// the rollout is done.
	// +optional
	BackgroundAnalysis *Analysis `json:"backgroundAnalysis,omitempty"`
}

// CanaryStep is one step of a canary; it sets exactly one of its fields.
//
// A count and a percentage are two fields, not one int-or-string as
// maxSurge is: a CEL rule on an int-or-string in a list of 32 steps exceeds
// the cost budget of the API servers before 1.30, which cannot bound the
// string's length, and controller-gen puts no minimum on one.
// +kubebuilder:validation:XValidation:rule="(has(self.updatedReplicas) ? 1 : 0) + (has(self.updatedPercent) ? 1 : 0) + (has(self.pause) ? 1 : 0) + (has(self.analysis) ? 1 : 0) == 1",message="a step sets exactly one of updatedReplicas, updatedPercent, pause and analysis"
// +kubebuilder:validation:XValidation:rule="!has(self.analysis) || !has(self.analysis.count) || self.analysis.count >= 1",message="an analysis step takes at least one measurement",fieldPath=".analysis.count"
type CanaryStep struct {
	// updatedReplicas is how many pods run the new revision once the step
	// is done. The step is done once that many pods of the new revision
	// are available. A count smaller than an earlier step's moves no pod
	// back.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5000
	// +optional
	UpdatedReplicas *int32 `json:"updatedReplicas,omitempty"`

	// updatedPercent is updatedReplicas as a percentage of replicas,
	// rounded up.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	UpdatedPercent *int32 `json:"updatedPercent,omitempty"`

	// pause holds the rollout: for durationSeconds, or until
	// `kubectl podset rollout promote`.
	// +optional
	Pause *CanaryPause `json:"pause,omitempty"`

	// analysis measures the new revision's pods with a Prometheus query;
	// the step is done when the run succeeds.
	// +optional
	Analysis *Analysis `json:"analysis,omitempty"`
}

// CanaryPause is a pause step.
type CanaryPause struct {
	// durationSeconds is how long the pause lasts. Unset, the pause lasts
	// until promoted.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	DurationSeconds *int32 `json:"durationSeconds,omitempty"`
}

// Analysis is a run of measurements by a Prometheus query, judged by CEL
// conditions. The Prometheus queried is the one the cluster admin gave the
// operator; the query is confined to the PodSet's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.successCondition) || has(self.failureCondition)",message="set successCondition, failureCondition or both"
type Analysis struct {
	// query is an instant PromQL query that returns one number. It may use
	// the placeholders {{namespace}}, {{name}} (the PodSet's),
	// {{canaryHash}} and {{stableHash}} (the controller-revision-hash
	// label of the new and the old revision's pods) and {{interval}}
	// (intervalSeconds as a PromQL duration). Every series selector is
	// confined to the PodSet's namespace before the query is sent, and a
	// query that selects another namespace is refused.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Query string `json:"query"`

	// successCondition is a CEL expression over the double `result`, the
	// query's value, that a good value meets: `result < 0.01`. == and !=
	// take a double (`result == 0.0`).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	SuccessCondition string `json:"successCondition,omitempty"`

	// failureCondition is a CEL expression over `result` that a bad value
	// meets: `result > 0.05`. With both conditions, a value that meets
	// neither is inconclusive.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	FailureCondition string `json:"failureCondition,omitempty"`

	// intervalSeconds is the time between two measurements.
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=3600
	// +optional
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`

	// count is how many measurements with a value (successful, failed or
	// inconclusive) the run takes; errors are retried and do not count.
	// A step's analysis takes at least 1 (unset: 5). In backgroundAnalysis,
	// 0 or unset measures until the rollout is done.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Count *int32 `json:"count,omitempty"`

	// initialDelaySeconds is the time from the start of the run to its
	// first measurement.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	InitialDelaySeconds *int32 `json:"initialDelaySeconds,omitempty"`

	// failureLimit is how many failed measurements the run bears; one
	// more fails it, and the rollout retreats to the last completed
	// revision.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	FailureLimit *int32 `json:"failureLimit,omitempty"`

	// inconclusiveLimit is how many inconclusive measurements (no series,
	// NaN, or a value that meets neither condition) the run bears; one
	// more holds the rollout until it is promoted or aborted.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	InconclusiveLimit *int32 `json:"inconclusiveLimit,omitempty"`

	// consecutiveErrorLimit is how many measurements in a row the run
	// bears that got no value (Prometheus failed, timed out or was not
	// reached, or the query returned something that is not one number);
	// one more holds the rollout until it is promoted or aborted.
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ConsecutiveErrorLimit *int32 `json:"consecutiveErrorLimit,omitempty"`

	// dryRun records the measurements and the run's phase and acts on
	// none: a failure retreats nothing, and a step's run lets the rollout
	// go on once it ends, whatever its phase.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// CanaryStatus is where a canary rollout stands. It is everything the
// operator needs to go on after a restart: a new leader resumes the step
// and its analysis where they were.
type CanaryStatus struct {
	// revision is the update revision the steps are for.
	Revision string `json:"revision"`

	// step is the index of the current step; the number of steps once
	// all are done.
	Step int32 `json:"step"`

	// stepStartTime is when the current step began.
	StepStartTime metav1.Time `json:"stepStartTime"`

	// message says what the current step waits for.
	// +optional
	Message string `json:"message,omitempty"`

	// analyses are the run of the last analysis step (name "steps[N]"),
	// kept until another analysis step begins, and the run of
	// backgroundAnalysis (name "background").
	// +kubebuilder:validation:MaxItems=2
	// +listType=map
	// +listMapKey=name
	// +optional
	Analyses []AnalysisRunStatus `json:"analyses,omitempty"`
}

// AnalysisRunStatus is one run of an analysis.
type AnalysisRunStatus struct {
	// name is the run's: "steps[N]", N the step's index, or "background".
	Name string `json:"name"`

	// phase is Running, Successful, Failed, or Inconclusive or Error (the
	// rollout holds until it is promoted or aborted).
	Phase string `json:"phase"`

	// dryRun is set when the run acts on nothing.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`

	// startTime is when the run began.
	StartTime metav1.Time `json:"startTime"`

	// successful, failed, inconclusive and errors count the run's
	// measurements by phase; consecutiveErrors counts the errors since
	// the last measurement that had a value.
	// +optional
	Successful int32 `json:"successful,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// +optional
	Inconclusive int32 `json:"inconclusive,omitempty"`
	// +optional
	Errors int32 `json:"errors,omitempty"`
	// +optional
	ConsecutiveErrors int32 `json:"consecutiveErrors,omitempty"`

	// message says why the run is in its phase.
	// +optional
	Message string `json:"message,omitempty"`

	// query is the last query sent, as confined to the namespace.
	// +optional
	Query string `json:"query,omitempty"`

	// measurements are the run's last measurements, oldest first.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	Measurements []Measurement `json:"measurements,omitempty"`
}

// Measurement is one measurement of an analysis.
type Measurement struct {
	// phase is Successful, Failed, Inconclusive or Error.
	Phase string `json:"phase"`

	// value is the number the query returned ("0.0123", "NaN", "+Inf");
	// empty when it returned none.
	// +optional
	Value string `json:"value,omitempty"`

	// time is when the measurement was due; the next one is due
	// intervalSeconds later.
	Time metav1.Time `json:"time"`

	// message says why the measurement's phase is what it is.
	// +optional
	Message string `json:"message,omitempty"`
}
