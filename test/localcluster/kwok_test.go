package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestKwokArgsSetPodParallelismOnlyWhenAsked(t *testing.T) {
	g := NewWithT(t)
	binDir, workDir := t.TempDir(), t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(binDir, "kwok-stages"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(binDir, "kwok-stages", "pod-ready.yaml"), []byte("kind: Stage\n"), 0o644)).To(Succeed())
	configs := func(args []string) []string {
		var out []string
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--config="); ok {
				out = append(out, v)
			}
		}
		return out
	}

	c := &Cluster{opts: Options{BinDir: binDir}, workDir: workDir}
	args, err := c.kwokArgs()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(configs(args)).To(ConsistOf(filepath.Join(binDir, "kwok-stages", "pod-ready.yaml")), "kwok's own default")

	c.opts.KwokPodParallelism = 32
	args, err = c.kwokArgs()
	g.Expect(err).NotTo(HaveOccurred())
	cfgs := configs(args)
	g.Expect(cfgs).To(HaveLen(2))
	data, err := os.ReadFile(cfgs[1])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring("kind: KwokConfiguration"))
	g.Expect(string(data)).To(ContainSubstring("podPlayStageParallelism: 32"))
}
