package podcache

import (
	"bytes"
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

	g.Expect(first).To(Equal(string(a)))
	g.Expect(other).To(Equal(string(b)))
	g.Expect(unsafe.StringData(again)).To(BeIdenticalTo(unsafe.StringData(first)), "equal bytes got a second copy")
	g.Expect(unsafe.StringData(other)).NotTo(BeIdenticalTo(unsafe.StringData(first)))
	g.Expect(unsafe.StringData(first)).NotTo(BeIdenticalTo(unsafe.SliceData(a)), "the shared copy is the caller's buffer")
	g.Expect(templates.size()).To(Equal(2))

	short := []byte("{}")
	g.Expect(templates.share(short)).To(Equal("{}"))
	g.Expect(templates.size()).To(Equal(2), "a short value is not worth sharing")
	runtime.KeepAlive(first)
	runtime.KeepAlive(other)
}

// A copy no object holds any longer is forgotten, and the next equal bytes
// make a new one.
func TestSharedTemplatesForgetCopiesNobodyHolds(t *testing.T) {
	g := NewWithT(t)
	templates := newSharedTemplates()
	held := templates.share(bytes.Repeat([]byte("h"), 100))
	func() {
		_ = templates.share(bytes.Repeat([]byte("x"), 100))
	}()
	g.Eventually(func() int {
		runtime.GC()
		return templates.size()
	}, 5*time.Second, 10*time.Millisecond).Should(Equal(1), "the copy nobody holds is still in the table")
	g.Expect(unsafe.StringData(templates.share(bytes.Repeat([]byte("h"), 100)))).To(BeIdenticalTo(unsafe.StringData(held)), "a copy still held got a second one")
	runtime.KeepAlive(held)
}
