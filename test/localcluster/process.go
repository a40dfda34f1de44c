package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is a child process in its own process group, its output appended
// to a log file. The local cluster runs its components as Processes; the
// demo, the end-to-end and OLM suites and the benchmark run the operator (and
// OLM) the same way.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // exit status, valid after done is closed
}

// stopGrace is how long a process gets to exit after SIGTERM.
const stopGrace = 15 * time.Second

// startProcess starts a component with its output in logDir/name.log.
func startProcess(name, bin string, args []string, env []string, logDir string) (*Process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s binary: %w (run `make cluster-tools`)", name, err)
	}
	return StartProcess(name, bin, args, env, filepath.Join(logDir, name+".log"))
}

// StartProcess starts bin with args and env (added to this process's
// environment), its output appended to logPath.
func StartProcess(name, bin string, args, env []string, logPath string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: Ctrl-C in a terminal goes to the foreground
		// group only, so the parent decides the shutdown order, and Stop can
		// signal anything the process itself started.
		Setpgid: true,
		// If the parent dies without calling Stop (SIGKILL, panic in a
		// test), the kernel kills the child so no process keeps a port.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process ID (and process group ID).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath is the file the process writes its output to.
func (p *Process) LogPath() string { return p.logPath }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		if p.err == nil {
			return true, fmt.Errorf("%s exited", p.name)
		}
		return true, fmt.Errorf("%s exited: %w", p.name, p.err)
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after a grace
// period, and waits for the process to be reaped. Once the process has
// exited it does nothing (its group ID could by then be someone else's).
func (p *Process) Stop() error {
	return p.signal(syscall.SIGTERM)
}

// Kill ends the process group at once with SIGKILL, as a node failure or an
// OOM kill would, and waits for the process to be reaped.
func (p *Process) Kill() error {
	return p.signal(syscall.SIGKILL)
}

func (p *Process) signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid // Setpgid makes the pid the group id
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Anything the process forked into its group must go too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}
