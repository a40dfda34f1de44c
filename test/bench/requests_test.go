package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestUnexplainedRequests(t *testing.T) {
	g := NewWithT(t)
	p := phaseResult{
		Shape: "1x600",
		Run:   1,
		// The admission policy's round falls in a phase that spans its
		// minute's tick; a pod update is no request of the operator's.
		RequestsUp: requestTally{
			"create pods 201": 600,
			"get /apis/admissionregistration.k8s.io/v1 200": 1,
			"get customresourcedefinitions 200":             1,
			"patch validatingadmissionpolicies 200":         1,
			"patch validatingadmissionpolicybindings 200":   1,
		},
		RequestsDown: requestTally{"delete pods 200": 300, "update pods 200": 2},
	}
	g.Expect(unexplainedRequests(p)).To(Equal([]string{`PodSet 1x600 run 1 scale-down: 2 unexplained requests "update pods 200"`}))
}
