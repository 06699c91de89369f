package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

// waitControllerLeader polls GET_METADATA_INFO at addr until a leader is
// known and returns the answer.
func waitControllerLeader(t *testing.T, addr string) remoting.GetMetaDataResponseHeader {
	t.Helper()
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	deadline := time.Now().Add(bootDeadline)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil))
		cancel()
		if err == nil && resp.Code == remoting.Success {
			h, err := remoting.DecodeHeader[remoting.GetMetaDataResponseHeader](resp)
			if err == nil && h.IsLeader && h.ControllerLeaderAddress != "" {
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no controller leader at %s: %v %v", addr, resp, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestControllerCommand: a stock-shaped controller.conf (one peer) starts
// `rmq controller`, which prints the stock boot line, leads, serves the
// controller codes on listenPort and stops on SIGTERM.
func TestControllerCommand(t *testing.T) {
	dir := t.TempDir()
	raftAddr, port := testutil.FreeAddr(t), testutil.FreePort(t)
	cfg := filepath.Join(dir, "controller.conf")
	body := fmt.Sprintf("controllerDLegerGroup = group1\ncontrollerDLegerPeers = n0-%s\ncontrollerDLegerSelfId = n0\ncontrollerStorePath = %s\nlistenPort = %d\nbindAddress = 127.0.0.1\nenableElectUncleanMaster = false\nnotifyBrokerRoleChanged = true\n",
		raftAddr, filepath.Join(dir, "store"), port)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "controller", "controller", "-c", cfg)
	p.waitLine(t, "The Controller Server boot success")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	h := waitControllerLeader(t, addr)
	if h.ControllerLeaderAddress != addr || h.ControllerLeaderID != "n0" || h.Group != "group1" || h.Peers != "n0:"+raftAddr+";" {
		t.Fatalf("metadata %+v", h)
	}
	if code := p.signal(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "store", "raft.db")); err != nil {
		t.Fatalf("raft log not in controllerStorePath: %v", err)
	}
}

// TestNamesrvWithController: enableControllerInNamesrv serves the
// controller codes on the name server's port, next to its own.
func TestNamesrvWithController(t *testing.T) {
	dir := t.TempDir()
	port := testutil.FreePort(t)
	cfg := filepath.Join(dir, "namesrv.conf")
	body := fmt.Sprintf("listenPort = %d\nbindAddress = 127.0.0.1\nenableControllerInNamesrv = true\ncontrollerDLegerGroup = group1\ncontrollerDLegerPeers = n0-%s\ncontrollerDLegerSelfId = n0\n",
		port, testutil.FreeAddr(t))
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "namesrv", "namesrv", "-c", cfg)
	p.waitLine(t, "The Name Server boot success")
	p.waitLine(t, "The ControllerManager boot success")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if h := waitControllerLeader(t, addr); h.ControllerLeaderAddress != addr {
		t.Fatalf("metadata %+v", h)
	}
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	resp, err := c.InvokeTimeout(addr, remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil), 5*time.Second)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("name server code on the shared port: %v %v", resp, err)
	}
	if code := p.signal(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if s := p.stderr.String(); strings.Contains(s, "unknown key") {
		t.Fatalf("stock namesrv.conf keys warned: %s", s)
	}
}
