package broker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// The broker's config files are written through Options.FS, the FS its
// store, timer and schedule services share. A topics.json write that fails
// is logged and the change answered as stock answers it (ConfigManager
// persist logs the IOException: SUCCESS); the file keeps its previous
// content and the broker keeps serving, and the next write, once the fault
// is gone, holds the change. A shutdown where no config file can be
// replaced reports it, and what was acknowledged is there after a restart.
func TestConfigFileFaultsThroughOptionsFS(t *testing.T) {
	inj := &store.Injector{}
	o := coreTestOptions(t, func(o *Options) { o.FS = store.NewErrorFS(inj) })
	configDir := filepath.Join(o.StorePathRootDir, "config")
	topicsPath := filepath.Join(configDir, topicConfigFileName)
	tb := startBrokerWith(t, o, nil)
	hit := func(file string) bool {
		return slices.ContainsFunc(inj.Hits(), func(h string) bool { return strings.Contains(h, file) })
	}
	create := func(topic string) {
		t.Helper()
		if r := tb.invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt(topic, 2, 6, "SINGLE_TAG"), nil); r.Code != remoting.Success {
			t.Fatalf("create %s: code %d remark %q", topic, r.Code, r.Remark)
		}
	}
	onDisk := func(topic string) bool {
		b, err := os.ReadFile(topicsPath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return bytes.Contains(b, []byte(`"`+topic+`"`))
	}

	inj.Add(store.Rule{Op: store.OpWrite, Path: topicConfigFileName})
	create("FaultA")
	if !hit(topicConfigFileName) {
		t.Fatalf("no fault injected into %s: %v", topicConfigFileName, inj.Hits())
	}
	if onDisk("FaultA") {
		t.Fatal("topics.json holds a change whose write failed")
	}
	tb.mustSend(sendArgs{topic: "FaultA", body: []byte("a"), queueID: 1})
	inj.Clear()
	create("FaultB")
	if !onDisk("FaultA") || !onDisk("FaultB") {
		t.Fatal("the write after the fault does not hold every change")
	}

	// No config file can be replaced (a full disk): Shutdown says so, and
	// the files keep their previous content.
	inj.Add(store.Rule{Op: store.OpRename, Path: configDir, Err: syscall.ENOSPC})
	tb.json.Close()
	tb.bin.Close()
	err := tb.Shutdown()
	tb.diskFull = true // its cleanup sees the same error
	if !errors.Is(err, store.ErrDiskFull) || !strings.Contains(err.Error(), topicConfigFileName) {
		t.Fatalf("Shutdown with no config file replaceable: %v", err)
	}
	inj.Clear()
	tb = startBrokerWith(t, o, nil)
	tb.waitDispatched()
	for _, topic := range []string{"FaultA", "FaultB"} {
		if tb.Topics().Get(topic) == nil {
			t.Fatalf("topic %s lost", topic)
		}
	}
	resp := tb.pull(pullArgs{topic: "FaultA", queueID: 1, sysFlag: pullFlagSubscription})
	if resp.Code != remoting.Success {
		t.Fatalf("pull after the restart: %d %q", resp.Code, resp.Remark)
	}
	if msgs := coreRecords(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "a" {
		t.Fatalf("%d messages after the restart", len(msgs))
	}
}
