package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// truncateSteps are the points of TruncateTo's durability order
// (truncate.go) a crash is put at; "done" is after it returned.
var truncateSteps = []string{
	"truncate:before-marker",
	"truncate:after-marker",
	"truncate:after-queues",
	"truncate:after-index",
	"truncate:after-zero",
	"truncate:removed-file",
	"truncate:after-commitlog",
	"truncate:after-checkpoint",
	"done",
}

// truncCrashFixture is a closed store of 600 records over 3 queues (about
// six commitlog files, several queue and index files) and the cut to make
// in it: three files back.
func truncCrashFixture(t *testing.T) (*truncFixture, int64) {
	f := newTruncFixture(t, 600, 3, func(o *Options) {
		o.MappedFileSizeConsumeQueue = 40 * cqUnitSize
		o.Index = IndexOptions{HashSlotNum: 64, MaxIndexNum: 400}
	})
	off := f.puts[len(f.puts)/3].PhysicalOffset
	if f.s.MaxPhyOffset()-off < 3*f.s.cl.fileSize {
		t.Fatalf("fixture: cut at %d of %d", off, f.s.MaxPhyOffset())
	}
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	return f, off
}

// checkRecovered opens dir, a store a crash left at step, and checks that
// it is the fixture whole (a crash before the marker) or cut at off, and
// that it goes on from there.
func (f *truncFixture) checkRecovered(t *testing.T, dir, step string, off int64) {
	t.Helper()
	o := f.o
	o.Dir = dir
	s := openStore(t, o)
	if _, err := readTruncateMarkerT(dir); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if step == "truncate:before-marker" {
		end := f.puts[len(f.puts)-1]
		if s.MaxPhyOffset() != endOf(end) {
			t.Fatalf("%s: end %d, want the old end %d", step, s.MaxPhyOffset(), endOf(end))
		}
		f.checkCut(t, s, s.MaxPhyOffset(), 3)
		if err := s.TruncateTo(off); err != nil {
			t.Fatalf("%s: cut after recovery: %v", step, err)
		}
	}
	f.checkCut(t, s, off, 3)
	f.checkContinues(t, s, off, 3)
}

// A crash at each step of TruncateTo (the files as the page cache holds
// them when the step is reached, which is what a kill -9 leaves) recovers
// to the old store whole before the marker, and to the store cut at the
// offset from then on.
func TestTruncateCrashAtEachStep(t *testing.T) {
	f, off := truncCrashFixture(t)
	o := f.o
	root := t.TempDir()
	snaps := map[string]string{}
	o.truncateFault = func(step string) bool {
		if _, ok := snaps[step]; !ok {
			snaps[step] = filepath.Join(root, strings.TrimPrefix(step, "truncate:"))
			copyDir(t, o.Dir, snaps[step])
		}
		return false
	}
	s := openStore(t, o)
	if err := s.TruncateTo(off); err != nil {
		t.Fatal(err)
	}
	snaps["done"] = filepath.Join(root, "done")
	copyDir(t, o.Dir, snaps["done"])
	s.Close()
	for _, step := range truncateSteps {
		t.Run(step, func(t *testing.T) {
			dir, ok := snaps[step]
			if !ok {
				t.Fatalf("step %s never reached", step)
			}
			f.checkRecovered(t, dir, step, off)
		})
	}
}

// TruncateTo stopped at each step (an I/O error there) leaves puts refused
// until it is called again, which completes the cut; or Close and Open
// complete it.
func TestTruncateStoppedAtEachStep(t *testing.T) {
	for _, step := range truncateSteps[:len(truncateSteps)-1] {
		for _, reopen := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reopen=%v", step, reopen), func(t *testing.T) {
				f, off := truncCrashFixture(t)
				o := f.o
				armed := true
				o.truncateFault = func(s string) bool {
					if s == step && armed {
						armed = false
						return true
					}
					return false
				}
				s := openStore(t, o)
				if err := s.TruncateTo(off); !errors.Is(err, errTruncateFault) {
					t.Fatalf("TruncateTo = %v", err)
				}
				_, perr := s.PutMessage(testMessage("T", 0, 9999))
				if step == "truncate:before-marker" {
					if perr != nil {
						t.Fatalf("put after a cut that never started: %v", perr)
					}
					// Nothing changed: the cut is made again below, with
					// the extra record above it.
				} else if !errors.Is(perr, ErrNotWritable) {
					t.Fatalf("put after an incomplete cut: %v", perr)
				}
				if _, err := s.AppendReplicated(s.ReplicaEnd(), []byte{0, 0, 0, 0}); !errors.Is(err, ErrNotWritable) && step != "truncate:before-marker" {
					t.Fatalf("replicated append after an incomplete cut: %v", err)
				}
				if reopen {
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					s = openStore(t, o)
					if step == "truncate:before-marker" {
						if err := s.TruncateTo(off); err != nil {
							t.Fatal(err)
						}
					}
				} else if err := s.TruncateTo(off); err != nil {
					t.Fatalf("TruncateTo again: %v", err)
				}
				f.checkCut(t, s, off, 3)
				f.checkContinues(t, s, off, 3)
			})
		}
	}
}

// truncateCrashChildEnv makes the test binary run runTruncateCrashChild.
const truncateCrashChildEnv = "RMQ_STORE_TRUNCATE_CRASH_CHILD"

// runTruncateCrashChild opens the store at dir and cuts it at off,
// printing "AT <step>" and waiting to be killed when it reaches step.
func runTruncateCrashChild(arg string) int {
	parts := strings.Split(arg, "|")
	dir, step := parts[0], parts[1]
	off, _ := strconv.ParseInt(parts[2], 10, 64)
	o := testOptions(dir)
	o.MappedFileSizeConsumeQueue = 40 * cqUnitSize
	o.Index = IndexOptions{HashSlotNum: 64, MaxIndexNum: 400}
	at := func() {
		fmt.Printf("AT %s\n", step)
		os.Stdout.Sync()
		select {}
	}
	o.truncateFault = func(s string) bool {
		if s == step {
			at()
		}
		return false
	}
	s, err := Open(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 2
	}
	if err := s.TruncateTo(off); err != nil {
		fmt.Fprintln(os.Stderr, "truncate:", err)
		return 3
	}
	at()
	return 0
}

// TestKill9DuringTruncate kills (SIGKILL) a process at each step of
// TruncateTo and opens what it left.
func TestKill9DuringTruncate(t *testing.T) {
	f, off := truncCrashFixture(t)
	for _, step := range truncateSteps {
		t.Run(step, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			copyDir(t, f.o.Dir, dir)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d", truncateCrashChildEnv, dir, step, off))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
			defer deadline.Stop()
			sc := bufio.NewScanner(out)
			reached := false
			for sc.Scan() {
				if sc.Text() == "AT "+step {
					reached = true
					cmd.Process.Kill()
				}
			}
			cmd.Wait()
			if !reached {
				t.Fatalf("child never reached %s: %s", step, stderr.String())
			}
			f.checkRecovered(t, dir, step, off)
		})
	}
}

// An I/O error at each step of TruncateTo, injected through the store's
// FS (Options.FS, an ErrorFS): before the marker the store is unchanged
// and takes puts; after it puts are refused until the cut, tried again
// once the disk is well, completes; Close and Open keep it.
func TestTruncateIOErrors(t *testing.T) {
	cases := []struct {
		name string
		at   string // the step from which the rule applies
		rule func(dir string) Rule
	}{
		{"marker rename", "truncate:before-marker", func(string) Rule { return Rule{Op: OpRename} }},
		{"queue msync", "truncate:after-marker", func(string) Rule { return Rule{Op: OpMsync, Path: "/" + consumeQueueDir + "/"} }},
		{"key index msync", "truncate:after-queues", func(string) Rule { return Rule{Op: OpMsync, Path: "/" + indexDir + "/"} }},
		{"log msync", "truncate:after-index", func(string) Rule { return Rule{Op: OpMsync, Path: "/" + commitLogDir + "/"} }},
		{"log dir sync", "truncate:removed-file", func(dir string) Rule {
			return Rule{Op: OpSync, Path: filepath.Join(dir, commitLogDir), Exact: true}
		}},
		{"ckpt sync", "truncate:after-commitlog", func(string) Rule { return Rule{Op: OpSync, Path: "/" + checkpointName} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, off := truncCrashFixture(t)
			o := f.o
			inj := &Injector{}
			o.FS = NewErrorFS(inj)
			added := false
			o.truncateFault = func(step string) bool {
				if step == tc.at && !added {
					added = true
					inj.Add(tc.rule(o.Dir))
				}
				return false
			}
			s := openStore(t, o)
			err := s.TruncateTo(off)
			if !errors.Is(err, ErrInjected) {
				t.Fatalf("TruncateTo = %v, want the injected error", err)
			}
			_, perr := s.PutMessage(testMessage("T", 0, 9999))
			if tc.at == "truncate:before-marker" {
				if perr != nil || s.MaxPhyOffset() <= off {
					t.Fatalf("a cut that failed before its marker changed the store: put %v, end %d", perr, s.MaxPhyOffset())
				}
			} else if !errors.Is(perr, ErrNotWritable) {
				t.Fatalf("put after an incomplete cut: %v", perr)
			}
			inj.Clear()
			if err := s.TruncateTo(off); err != nil {
				t.Fatalf("TruncateTo with the disk well again: %v", err)
			}
			f.checkCut(t, s, off, 3)
			f.checkContinues(t, s, off, 3)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			o.truncateFault = nil
			s = openStore(t, o)
			if s.MaxPhyOffset() <= off {
				t.Fatalf("end %d after reopen", s.MaxPhyOffset())
			}
			for q := int32(0); q < 3; q++ {
				checkQueue(t, s, "T", q, f.below(q, off)+1)
			}
		})
	}
}
