package operand

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/podset-operator/controllers/slimpod"
)

func TestIsFailing(t *testing.T) {
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	for _, tc := range []struct {
		name   string
		status corev1.ContainerStatus
		want   bool
	}{
		{"starting: no status yet", corev1.ContainerStatus{}, false},
		{"starting: its container being created", corev1.ContainerStatus{State: waiting("ContainerCreating")}, false},
		{"starting: init containers running", corev1.ContainerStatus{State: waiting("PodInitializing")}, false},
		{"running, not ready yet", corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, false},
		{"crash-looping", corev1.ContainerStatus{RestartCount: 4, State: waiting("CrashLoopBackOff")}, true},
		{"its image cannot be pulled", corev1.ContainerStatus{State: waiting("ImagePullBackOff")}, true},
		{"restarted once, running again", corev1.ContainerStatus{RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := slimpod.From(&corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{tc.status}}})
			if got := IsFailing(pod); got != tc.want {
				t.Errorf("IsFailing = %v, want %v", got, tc.want)
			}
		})
	}
}
