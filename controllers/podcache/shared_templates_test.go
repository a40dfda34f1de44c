package podcache

import (
	"bytes"
	"crypto/rand"
	"runtime"
	"testing"
	"time"
	"unsafe"

	. "github.com/onsi/gomega"
)

func TestSharedTemplatesKeepOneCopyOfEqualBytes(t *testing.T) {
	g := NewWithT(t)
	templates := newSharedTemplates()
	a := bytes.Repeat([]byte("a"), 100)
	b := bytes.Repeat([]byte("b"), 100)

	first := templates.share(a)
	again := templates.share(bytes.Clone(a))
	other := templates.share(b)

	g.Expect(inflate(first)).To(Equal(a))
	g.Expect(inflate(other)).To(Equal(b))
	g.Expect(len(first)).To(BeNumerically("<", len(a)/2), "not deflated")
	g.Expect(unsafe.StringData(again)).To(BeIdenticalTo(unsafe.StringData(first)), "equal bytes got a second copy")
	g.Expect(unsafe.StringData(other)).NotTo(BeIdenticalTo(unsafe.StringData(first)))
	g.Expect(templates.size()).To(Equal(2))

	short := []byte("{}")
	g.Expect(inflate(templates.share(short))).To(Equal(short))
	g.Expect(templates.size()).To(Equal(2), "a short value is not worth sharing")
	runtime.KeepAlive(first)
	runtime.KeepAlive(other)
}

// A copy no object holds any longer is forgotten, and the next equal bytes
// make a new one.
func TestSharedTemplatesForgetCopiesNobodyHolds(t *testing.T) {
	g := NewWithT(t)
	templates := newSharedTemplates()
	// Bytes that do not deflate to a few: the runtime does not run the
	// cleanups of tiny allocations.
	h, x := randomBytes(t, 100), randomBytes(t, 100)
	held := templates.share(h)
	func() {
		_ = templates.share(x)
	}()
	g.Eventually(func() int {
		runtime.GC()
		return templates.size()
	}, 5*time.Second, 10*time.Millisecond).Should(Equal(1), "the copy nobody holds is still in the table")
	g.Expect(unsafe.StringData(templates.share(bytes.Clone(h)))).To(BeIdenticalTo(unsafe.StringData(held)), "a copy still held got a second one")
	runtime.KeepAlive(held)
}

func TestInflateRefusesWhatDeflateDidNotMake(t *testing.T) {
	g := NewWithT(t)
	for _, s := range []string{"", "{}", "\x05abc", deflate([]byte(`{"template":{}}`))[:4]} {
		_, err := inflate(s)
		g.Expect(err).To(HaveOccurred(), "%q", s)
	}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
