package main

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestSettleIdleProcess: a process that sleeps settles after one window.
func TestSettleIdleProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command: ", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	d, ok := settle(context.Background(), cmd.Process.Pid, 10*time.Second)
	if !ok || d < settleWindow {
		t.Fatalf("settle of a sleeping process = %v, %v; want settled after at least %v", d, ok, settleWindow)
	}
}

// TestSettleBusyProcess: a process that keeps a core busy does not settle,
// and settle gives up at its limit.
func TestSettleBusyProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	var stop atomic.Bool
	defer stop.Store(true)
	go func() {
		for !stop.Load() {
		}
	}()
	const limit = 1500 * time.Millisecond
	d, ok := settle(context.Background(), os.Getpid(), limit)
	if ok || d < limit {
		t.Fatalf("settle of a busy process = %v, %v; want not settled after %v", d, ok, limit)
	}
}

// TestSettleGoneProcess: a process that is not there is not waited for.
func TestSettleGoneProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true command: ", err)
	}
	if d, ok := settle(context.Background(), cmd.Process.Pid, 10*time.Second); ok || d > time.Second {
		t.Fatalf("settle of an exited process = %v, %v", d, ok)
	}
}
