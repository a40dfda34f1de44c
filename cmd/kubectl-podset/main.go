// Command kubectl-podset is a kubectl plugin: put it on PATH and run
// `kubectl podset rollout status|history|undo|pause|resume|restart|retry|promote|abort NAME`,
// the verbs `kubectl rollout` has for Deployments, which do not work on
// custom resources; retry, for auto-rollback; promote and abort, for canary
// steps.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	cmd := newRootCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(exitCode(err))
	}
}
