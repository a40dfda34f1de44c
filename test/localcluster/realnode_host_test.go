package localcluster

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestSplitRule(t *testing.T) {
	g := NewWithT(t)
	g.Expect(splitRule(`-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING`)).To(Equal(
		[]string{"-A", "POSTROUTING", "-m", "comment", "--comment", "kubernetes postrouting rules", "-j", "KUBE-POSTROUTING"}))
	g.Expect(splitRule(`-A X -m comment --comment "say \"hi\"" -j DROP`)).To(Equal(
		[]string{"-A", "X", "-m", "comment", "--comment", `say "hi"`, "-j", "DROP"}))
	g.Expect(splitRule(`-A FORWARD -j LOCALCLUSTER-GUARD`)).To(Equal([]string{"-A", "FORWARD", "-j", "LOCALCLUSTER-GUARD"}))
}

func TestUnescapeMount(t *testing.T) {
	g := NewWithT(t)
	g.Expect(unescapeMount(`/tmp/a\040b/c`)).To(Equal("/tmp/a b/c"))
	g.Expect(unescapeMount(`/plain`)).To(Equal("/plain"))
}
