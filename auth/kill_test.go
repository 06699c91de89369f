package auth

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The kill test: a child process changes users and ACLs as fast as it
// can, printing "ack N" once change N returned; the parent kills it with
// SIGKILL at some point and reopens the file. Every acknowledged change
// must be there, and nothing beyond the one in flight. With
// AUTH_KILL_PAUSE the child stops inside its last write after the new
// content is written and synced under a temporary name but before the
// rename (the failpoint), and the parent checks the old state loads.

const killEnv = "AUTH_KILL_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(killEnv); dir != "" {
		killChild(dir, os.Getenv("AUTH_KILL_PAUSE_AT"))
		return
	}
	os.Exit(m.Run())
}

func killChild(dir, pauseAt string) {
	md, err := OpenMetadata(nil, filepath.Join(dir, FileName))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	pause, _ := strconv.Atoi(pauseAt)
	real := md.write
	for i := 1; ; i++ {
		if i == pause {
			md.write = func(path string, data []byte) error {
				tmp := path + ".tmp-failpoint"
				if err := os.WriteFile(tmp, data, 0o644); err != nil {
					return err
				}
				f, _ := os.Open(tmp)
				f.Sync()
				f.Close()
				fmt.Println("paused")
				select {} // killed here, before the rename
			}
		} else {
			md.write = real
		}
		name := "user" + strconv.Itoa(i)
		if err := md.CreateUser(User{Username: name, Password: "pw"}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		ps := []policyInput{{typ: PolicyCustom, entries: []entryInput{{Entry: entry("Topic:t"+strconv.Itoa(i), Allow, []string{ActPub}), resourceOK: true}}}}
		if err := md.PutAcl("User:"+name, ps); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ack", i)
	}
}

func runKill(t *testing.T, pauseAt, killAfter int) (acked int, dir string) {
	dir = t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killEnv+"="+dir, "AUTH_KILL_PAUSE_AT="+strconv.Itoa(pauseAt))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		line := sc.Text()
		if line == "paused" {
			break
		}
		if n, ok := strings.CutPrefix(line, "ack "); ok {
			acked, _ = strconv.Atoi(n)
			if pauseAt == 0 && acked >= killAfter {
				break
			}
			continue
		}
		t.Fatalf("child: %s", line)
	}
	cmd.Process.Kill()
	// What the child acknowledged before it died is still in the pipe.
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
			acked, _ = strconv.Atoi(n)
		}
	}
	cmd.Wait()
	return acked, dir
}

func checkState(t *testing.T, dir string, acked int) int {
	t.Helper()
	md, err := OpenMetadata(nil, filepath.Join(dir, FileName))
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	users := md.ListUsers("")
	for i := 1; i <= acked; i++ {
		name := "user" + strconv.Itoa(i)
		if _, ok := md.User(name); !ok {
			t.Fatalf("acknowledged %s lost (acked %d)", name, acked)
		}
		if _, ok := md.Acl("User:" + name); !ok {
			t.Fatalf("acknowledged ACL of %s lost", name)
		}
	}
	if len(users) > acked+1 {
		t.Fatalf("%d users after %d acknowledged", len(users), acked)
	}
	return len(users)
}

func TestKillDuringChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, after := range []int{1, 7, 25} {
		acked, dir := runKill(t, 0, after)
		checkState(t, dir, acked)
	}
}

func TestKillBetweenWriteAndRename(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	acked, dir := runKill(t, 5, 0)
	if acked != 4 {
		t.Fatalf("acked %d before the failpoint", acked)
	}
	// The createUser of user5 was written under the temporary name only:
	// the old state (4 users, 4 ACLs) is what loads.
	if n := checkState(t, dir, acked); n != 4 {
		t.Fatalf("%d users, want the old 4", n)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName+".tmp-failpoint")); err != nil {
		t.Fatalf("the failpoint did not write: %v", err)
	}
}
