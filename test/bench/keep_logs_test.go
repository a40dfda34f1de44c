package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKeepLogsCopiesTheLogDirAndReplacesAnEarlierCopy(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("operator.log", "first")
	if _, err := keepLogs(src, out, true); err != nil {
		t.Fatalf("first copy: %v", err)
	}
	// A second failed run set replaces the first one's copy.
	write("operator.log", "second")
	write("kube-apiserver.log", "api")
	dir, err := keepLogs(src, out, true)
	if err != nil {
		t.Fatalf("second copy: %v", err)
	}
	if want := filepath.Join(out, "failed-run-logs"); dir != want {
		t.Fatalf("kept in %s, want %s", dir, want)
	}
	for name, want := range map[string]string{"operator.log": "second", "kube-apiserver.log": "api"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Fatalf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestKeepLogsOfARunSetThatPassedGoElsewhere(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "operator.log"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := keepLogs(src, out, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "run-logs"); dir != want {
		t.Fatalf("kept in %s, want %s", dir, want)
	}
	if _, err := os.Stat(filepath.Join(out, "failed-run-logs")); !os.IsNotExist(err) {
		t.Fatalf("a run set that passed was kept as failed: %v", err)
	}
}
