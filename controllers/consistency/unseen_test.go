package consistency

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
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

func TestUnseenWrites(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(1000, 0)
	var u UnseenWrites
	g.Expect(u.Behind(nil, now, time.Minute)).To(BeFalse(), "nothing held")

	u.Hold("a", "10", now)
	u.Hold("b", "12", now)
	g.Expect(u.Behind(map[types.UID]string{"a": "9", "b": "12"}, now, time.Minute)).To(BeTrue(), "a's write is not in the cache yet")
	g.Expect(u.Behind(map[types.UID]string{"a": "11", "b": "12"}, now, time.Minute)).To(BeFalse(), "a later version shows the write")

	u.Hold("a", "20", now)
	g.Expect(u.Behind(map[types.UID]string{}, now, time.Minute)).To(BeFalse(), "an object gone from the cache waits for nothing")

	u.Hold("a", "30", now)
	g.Expect(u.Behind(map[types.UID]string{"a": "29"}, now.Add(59*time.Second), time.Minute)).To(BeTrue())
	g.Expect(u.Behind(map[types.UID]string{"a": "29"}, now.Add(61*time.Second), time.Minute)).To(BeFalse(), "a lost event holds nothing past maxWait")
}
