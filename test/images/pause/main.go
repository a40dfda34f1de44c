// Command pause is the sandbox ("pause") container of the local cluster's
// real node, a stand-in for registry.k8s.io/pause, which cannot be pulled
// here. Like the original it holds the pod's namespaces open and does
// nothing else: it waits for SIGINT or SIGTERM and exits 0, and, as PID 1 of
// a pod that shares its process namespace, reaps the zombies it inherits.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
