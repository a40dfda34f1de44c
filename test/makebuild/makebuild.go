// Package makebuild starts a make target beside a test suite's other work
// and lets a test wait for it only where it needs what the target builds.
// A tool that takes minutes to compile on a machine that has not built it
// yet is then compiled beside the cluster's start and the first tests
// instead of before them. make does nothing when the target is up to date,
// and waits for a build under way when CI's background builds are at it
// (hack/build-tool.sh holds a lock per tool).
package makebuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Build is one make run started by Start.
type Build struct {
	target string
	log    string
	done   chan struct{} // closed when make has ended
	err    error
}

// Start runs `make ARGS...` in dir, its output to logPath, and returns at
// once. Ending ctx kills make and the compilers under it.
func Start(ctx context.Context, dir, logPath string, args ...string) *Build {
	b := &Build{target: strings.Join(args, " "), log: logPath, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		f, err := os.Create(logPath)
		if err != nil {
			b.err = err
			return
		}
		defer func() { _ = f.Close() }()
		cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory"}, args...)...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, f, f
		// A run that ends first stops the compilers too, not only make.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		b.err = cmd.Run()
	}()
	return b
}

// Wait waits for the build and returns how long it waited. An error names
// the target and carries the end of its log.
func (b *Build) Wait(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	select {
	case <-b.done:
	case <-ctx.Done():
		return time.Since(start), fmt.Errorf("waiting for make %s: %w", b.target, ctx.Err())
	}
	if b.err != nil {
		return time.Since(start), fmt.Errorf("make %s: %w\n%s", b.target, b.err, tail(b.log, 30))
	}
	return time.Since(start), nil
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
