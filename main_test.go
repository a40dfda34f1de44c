package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestWatchNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		want []string
	}{
		{name: "empty watches all namespaces", env: "", want: nil},
		{name: "blank watches all namespaces", env: " , ", want: nil},
		{name: "one namespace (OwnNamespace, SingleNamespace)", env: "team-a", want: []string{"team-a"}},
		{name: "a list (MultiNamespace)", env: "team-a,team-b", want: []string{"team-a", "team-b"}},
		{name: "spaces and empty items are dropped", env: " team-a ,, team-b ", want: []string{"team-a", "team-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(watchNamespaces(tc.env)).To(Equal(tc.want))
		})
	}
}
