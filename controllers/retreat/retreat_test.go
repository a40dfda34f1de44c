package retreat

import (
	"testing"
	"time"
)

// t0 is the fake clock's start; every time below is an offset from it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestClassify(t *testing.T) {
	th := Thresholds{RestartLimit: 3, WaitingGrace: time.Minute}
	waiting := func(reason string, since time.Duration) Container {
		return Container{Name: "app", WaitingReason: reason, WaitingSince: at(since)}
	}
	tests := []struct {
		name string
		pods []Pod
		th   Thresholds
		now  time.Duration
		want Trigger // "" for no failure
		pod  string
	}{
		{name: "no pods", now: time.Hour},
		{name: "running, restarted below the limit", pods: []Pod{{Name: "a", Containers: []Container{{Name: "app", RestartsSinceRevision: 2}}}}, now: time.Hour},
		{name: "restarted up to the limit", pods: []Pod{{Name: "a", Containers: []Container{{Name: "app", RestartsSinceRevision: 3}}}}, want: RestartLimit, pod: "a"},
		// A container that turns Ready and crashes a few seconds later
		// flaps between Running and CrashLoopBackOff: its restarts count.
		{name: "flapping: Running now, restarts at the limit", pods: []Pod{{Name: "a", Containers: []Container{{Name: "app", RestartsSinceRevision: 4}}}}, want: RestartLimit, pod: "a"},
		{name: "restart limit 0 turns the check off", th: Thresholds{WaitingGrace: time.Minute}, pods: []Pod{{Name: "a", Containers: []Container{{Name: "app", RestartsSinceRevision: 50}}}}},
		{name: "crash loop within the grace", pods: []Pod{{Name: "a", Containers: []Container{waiting("CrashLoopBackOff", 0)}}}, now: 59 * time.Second},
		{name: "crash loop past the grace", pods: []Pod{{Name: "a", Containers: []Container{waiting("CrashLoopBackOff", 0)}}}, now: time.Minute, want: CrashLoopBackOff, pod: "a"},
		{name: "ErrImagePull past the grace", pods: []Pod{{Name: "a", Containers: []Container{waiting("ErrImagePull", 0)}}}, now: 2 * time.Minute, want: ImagePullFailure, pod: "a"},
		{name: "ImagePullBackOff past the grace", pods: []Pod{{Name: "a", Containers: []Container{waiting("ImagePullBackOff", 0)}}}, now: 2 * time.Minute, want: ImagePullFailure, pod: "a"},
		{name: "InvalidImageName past the grace", pods: []Pod{{Name: "a", Containers: []Container{waiting("InvalidImageName", 0)}}}, now: 2 * time.Minute, want: InvalidImageName, pod: "a"},
		{name: "CreateContainerConfigError past the grace", pods: []Pod{{Name: "a", Containers: []Container{waiting("CreateContainerConfigError", 0)}}}, now: 2 * time.Minute, want: CreateContainerFailure, pod: "a"},
		{name: "CreateContainerError past the grace", pods: []Pod{{Name: "a", Containers: []Container{waiting("CreateContainerError", 0)}}}, now: 2 * time.Minute, want: CreateContainerFailure, pod: "a"},
		// A slow start is not a failure, however long it takes: the
		// progress deadline covers it.
		{name: "ContainerCreating for an hour", pods: []Pod{{Name: "a", Containers: []Container{waiting("ContainerCreating", 0)}}}, now: time.Hour},
		{name: "PodInitializing for an hour", pods: []Pod{{Name: "a", Containers: []Container{waiting("PodInitializing", 0)}}}, now: time.Hour},
		{name: "a reason without the time it was first seen", pods: []Pod{{Name: "a", Containers: []Container{{Name: "app", WaitingReason: "CrashLoopBackOff"}}}}, now: time.Hour},
		{name: "the grace counts from when the reason was first seen", pods: []Pod{{Name: "a", Containers: []Container{waiting("ImagePullBackOff", 30*time.Minute)}}}, now: 30*time.Minute + 30*time.Second},
		{
			name: "the first failed pod by name, whatever the order given",
			pods: []Pod{
				{Name: "c", Containers: []Container{{Name: "app", RestartsSinceRevision: 9}}},
				{Name: "a", Containers: []Container{{Name: "app"}}},
				{Name: "b", Containers: []Container{{Name: "side"}, waiting("CrashLoopBackOff", 0)}},
			},
			now: time.Hour, want: CrashLoopBackOff, pod: "b",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th := th
			if tc.th != (Thresholds{}) {
				th = tc.th
			}
			f, failed := Classify(tc.pods, th, at(tc.now))
			if failed != (tc.want != "") || f.Trigger != tc.want || f.Pod != tc.pod {
				t.Fatalf("Classify = %+v, %v; want trigger %q on pod %q", f, failed, tc.want, tc.pod)
			}
			if failed && f.Detail == "" {
				t.Error("a failure without a detail for the condition")
			}
		})
	}
}

func TestDecide(t *testing.T) {
	crash := &Failure{Trigger: CrashLoopBackOff, Pod: "p", Container: "app"}
	tests := []struct {
		name string
		o    Observed
		want Decision
	}{
		{name: "off by default", o: Observed{UpdateRevision: "v2", LastCompletedRevision: "v1", Failure: crash}, want: Decision{Action: None}},
		{name: "a healthy rollout", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1"}, want: Decision{Action: None}},
		{
			name: "new pods fail: retreat to the last completed revision",
			o:    Observed{Enabled: true, UpdateRevision: "v3", LastCompletedRevision: "v1", Failure: crash},
			want: Decision{Action: Retreat, Target: "v1", Failed: "v3", Failure: *crash},
		},
		{
			name: "the progress deadline passes: retreat",
			o:    Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", DeadlineExceeded: true},
			want: Decision{Action: Retreat, Target: "v1", Failed: "v2", Failure: Failure{Trigger: ProgressDeadlineExceeded, Detail: "the rollout made no progress for spec.progressDeadlineSeconds"}},
		},
		{name: "paused past the deadline: the clock stops", o: Observed{Enabled: true, Paused: true, UpdateRevision: "v2", LastCompletedRevision: "v1", DeadlineExceeded: true}, want: Decision{Action: None}},
		{name: "paused with failing pods", o: Observed{Enabled: true, Paused: true, UpdateRevision: "v2", LastCompletedRevision: "v1", Failure: crash}, want: Decision{Action: None}},
		// The rollout completed: v2 is the last completed revision. Pods
		// that fail now, or a scale-up that stalls, are not a failed
		// rollout.
		{name: "after completion, failing pods", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v2", Failure: crash}, want: Decision{Action: None}},
		// Complete as far as the spec asks (a partition's share), or
		// complete a moment before the status records it.
		{name: "a completed rollout, failing pods", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", Complete: true, Failure: crash}, want: Decision{Action: None}},
		{name: "a scale change past the deadline", o: Observed{Enabled: true, UpdateRevision: "v1", LastCompletedRevision: "v1", DeadlineExceeded: true}, want: Decision{Action: None}},
		{
			name: "no completed revision yet: report, do not retreat",
			o:    Observed{Enabled: true, UpdateRevision: "v1", Failure: crash},
			want: Decision{Action: Report, Failed: "v1", Failure: *crash},
		},
		{name: "retreated, the spec still asks for the failed revision (a GitOps re-apply)", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2"}, want: Decision{Action: Hold, Target: "v1", Failed: "v2"}},
		{name: "retreated, then a new template", o: Observed{Enabled: true, UpdateRevision: "v3", LastCompletedRevision: "v1", RetreatedFrom: "v2"}, want: Decision{Action: Resume}},
		// A retry names the retreat it answers: the revision and the time
		// (to the second, as the status and the annotation carry it).
		{name: "retreat complete, then a retry of it", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", RetreatedAt: at(time.Minute), RetreatComplete: true, Retry: Retry{From: "v2", At: at(time.Minute)}}, want: Decision{Action: Resume, Retried: true}},
		{name: "retreat complete, a retry of it read back to the second", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", RetreatedAt: at(time.Minute + 300*time.Millisecond), RetreatComplete: true, Retry: Retry{From: "v2", At: at(time.Minute)}}, want: Decision{Action: Resume, Retried: true}},
		{name: "stopped, then a retry of it", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", RetreatedAt: at(time.Minute), Stopped: true, Retry: Retry{From: "v2", At: at(time.Minute)}}, want: Decision{Action: Resume, Retried: true}},
		{name: "retreated, a new template and a retry of the old one", o: Observed{Enabled: true, UpdateRevision: "v3", LastCompletedRevision: "v1", RetreatedFrom: "v2", RetreatedAt: at(time.Minute), RetreatComplete: true, Retry: Retry{From: "v2", At: at(time.Minute)}}, want: Decision{Action: Resume}},
		// Under way, the failed revision's pods are still there: a retry
		// waits for the retreat to complete.
		{name: "retreat under way, a retry of it waits", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", RetreatedAt: at(time.Minute), Retry: Retry{From: "v2", At: at(time.Minute)}}, want: Decision{Action: Hold, Target: "v1", Failed: "v2"}},
		// A retry request that was never cleared must not undo the next
		// retreat from the same revision: it names the earlier one.
		{name: "retreated again after a retry", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", RetreatedAt: at(3 * time.Minute), RetreatComplete: true, Retry: Retry{From: "v2", At: at(time.Minute)}}, want: Decision{Action: Hold, Target: "v1", Failed: "v2"}},
		{name: "retreated, a retry of another revision", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", RetreatedAt: at(time.Minute), RetreatComplete: true, Retry: Retry{From: "v0", At: at(time.Minute)}}, want: Decision{Action: Hold, Target: "v1", Failed: "v2"}},
		{name: "never retreated, a retry is nothing", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", Retry: Retry{From: "v2", At: at(time.Minute)}}, want: Decision{Action: None}},
		// Once the retreat completed, v1 is a completed rollout again: its
		// pods failing days later, or a scale-up that misses the
		// deadline, do not stop the PodSet.
		{name: "retreat complete, a pod of the last good revision fails later", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", RetreatComplete: true, Failure: crash}, want: Decision{Action: Hold, Target: "v1", Failed: "v2"}},
		{name: "retreat complete, a scale-up misses the deadline", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", RetreatComplete: true, DeadlineExceeded: true}, want: Decision{Action: Hold, Target: "v1", Failed: "v2"}},
		{
			name: "the last good revision fails during the retreat: stop, no third try",
			o:    Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", Failure: crash},
			want: Decision{Action: Stop, Failed: "v1", Failure: *crash},
		},
		{name: "the retreat misses its deadline: stop", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", DeadlineExceeded: true}, want: Decision{Action: Stop, Failed: "v1", Failure: Failure{Trigger: ProgressDeadlineExceeded, Detail: "the rollout made no progress for spec.progressDeadlineSeconds"}}},
		{name: "stopped stays stopped, failing or not", o: Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", Stopped: true}, want: Decision{Action: Stop, Failed: "v1"}},
		{name: "stopped, then a new template", o: Observed{Enabled: true, UpdateRevision: "v3", LastCompletedRevision: "v1", RetreatedFrom: "v2", Stopped: true}, want: Decision{Action: Resume}},
		{name: "retreating while paused: hold, the clock stops", o: Observed{Enabled: true, Paused: true, UpdateRevision: "v2", LastCompletedRevision: "v1", RetreatedFrom: "v2", DeadlineExceeded: true}, want: Decision{Action: Hold, Target: "v1", Failed: "v2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.o); got != tc.want {
				t.Fatalf("Decide = %+v\nwant     %+v", got, tc.want)
			}
		})
	}
}

// TestTwoBadRevisionsInARow walks a PodSet through the decisions the
// reconciler would record: v1 completes, v2 fails and is retreated from, v3
// fails too and is retreated from, each time to v1, never to v2.
func TestTwoBadRevisionsInARow(t *testing.T) {
	crash := &Failure{Trigger: CrashLoopBackOff}
	st := Observed{Enabled: true, UpdateRevision: "v2", LastCompletedRevision: "v1", Failure: crash}
	d := Decide(st)
	if d.Action != Retreat || d.Target != "v1" {
		t.Fatalf("v2 fails: %+v", d)
	}
	st.RetreatedFrom, st.Failure = d.Failed, nil
	if d := Decide(st); d.Action != Hold {
		t.Fatalf("retreated from v2: %+v", d)
	}
	st.UpdateRevision = "v3"
	if d := Decide(st); d.Action != Resume {
		t.Fatalf("v3 applied: %+v", d)
	}
	st.RetreatedFrom, st.Failure = "", crash
	d = Decide(st)
	if d.Action != Retreat || d.Target != "v1" || d.Failed != "v3" {
		t.Fatalf("v3 fails: %+v, want a retreat to v1, the last completed revision", d)
	}
}
