package consistency

import (
	"testing"

	. "github.com/onsi/gomega"
)

// What was read from the API server (a PodSet read while its watch was down,
// a status just written) is kept until the cache has it, then forgotten.
func TestUnseenIsKeptUntilTheCacheHasIt(t *testing.T) {
	g := NewWithT(t)
	var read Unseen[string]
	_, ok := read.NewerThan("10")
	g.Expect(ok).To(BeFalse(), "nothing held")

	read.Hold("20", "one replica")
	got, ok := read.NewerThan("10")
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal("one replica"))
	_, ok = read.NewerThan("21")
	g.Expect(ok).To(BeFalse(), "the cache caught up")
	_, ok = read.NewerThan("10")
	g.Expect(ok).To(BeFalse(), "forgotten once the cache had it")

	read.Hold("20", "one replica")
	_, ok = read.NewerThan("20")
	g.Expect(ok).To(BeFalse(), "the cache has the very version")
}

func TestNewerVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"11", "10", true},
		{"10", "10", false},
		{"9", "10", false},
		{"100", "99", true}, // by number, not by string
		{"10", "", true},
		{"", "", false},
		{"abc", "10", false},
	} {
		NewWithT(t).Expect(NewerVersion(tc.a, tc.b)).To(Equal(tc.want), "%q newer than %q", tc.a, tc.b)
	}
}
