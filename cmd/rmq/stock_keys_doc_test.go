package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/conf"
)

// The stock-keys section of docs/compatibility.md has one row per key of
// the stock 4.9.8 broker (testdata/stock-keys-4.9.8.tsv, extracted from the
// Java source): its stock default, rmq's default, what it does in rmq and
// whether UPDATE_BROKER_CONFIG changes it live. A key rmq acts on is a field
// of broker.Options with a note here (honouredKeyNotes); a key rmq keeps
// without acting on is a field of broker.StockKeys with its reason there
// (broker.InertKeyReason). TestStockKeysHaveRows fails when a stock key has
// neither, so no stock key can be silently different.

const stockKeysFile = "testdata/stock-keys-4.9.8.tsv"

// stockKey is one row of stockKeysFile.
type stockKey struct {
	key, class, javaType, javaDefault string
}

func readStockKeys(t *testing.T) []stockKey {
	t.Helper()
	f, err := os.Open(stockKeysFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []stockKey
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c := strings.Split(line, "\t")
		if len(c) != 4 {
			t.Fatalf("%s: %q has %d columns, want 4", stockKeysFile, line, len(c))
		}
		out = append(out, stockKey{c[0], c[1], c[2], c[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// honouredKeyNotes says what rmq does with each stock key it acts on.
var honouredKeyNotes = map[string]string{
	"traceOn":                           "`TRACE_ON` on send replies",
	"regionId":                          "`MSG_REGION` on send replies",
	"brokerName":                        "registration, broker-name topic",
	"brokerPermission":                  "registration and send/pull checks; a change re-registers at once",
	"defaultTopicQueueNums":             "queues of TBW102 and of auto-created topics",
	"autoCreateTopicEnable":             "TBW102 at start and auto-creation on send",
	"brokerClusterName":                 "registration, cluster topic, `CLUSTER` of stored messages",
	"brokerIP1":                         "registered address and STOREHOST; a host name is resolved (IPv4) at start and on update and advertised verbatim",
	"brokerIP2":                         "`haServerAddr` at registration",
	"flushConsumerOffsetInterval":       "period of the consumerOffset.json write",
	"clusterTopicEnable":                "`<cluster>` topic perm RW\\|INHERIT, else INHERIT only",
	"brokerTopicEnable":                 "`<brokerName>` topic perm RW\\|INHERIT, else INHERIT only",
	"namesrvAddr":                       "name servers to register with (also NAMESRV_ADDR, `-n`)",
	"brokerId":                          "registration; forced to 0 on a master, > 0 required on a SLAVE",
	"autoCreateSubscriptionGroup":       "auto-creates subscription groups",
	"rejectTransactionMessage":          "half messages refused with NO_PERMISSION",
	"longPollingEnable":                 "long vs short polling of pulls",
	"notifyConsumerIdsChangedEnable":    "gates every NOTIFY_CONSUMER_IDS_CHANGED",
	"shortPollingTimeMills":             "hold time of a short-polling pull",
	"filterSupportRetry":                "SQL92/tag filter on retry topics",
	"enablePropertyFilter":              "SQL92 filtering allowed",
	"registerNameServerPeriod":          "registration period (clamped 10–60 s)",
	"transactionTimeOut":                "first transaction check-back",
	"transactionCheckMax":               "check-backs before a half message is dropped",
	"transactionCheckInterval":          "check-back period",
	"msgTraceTopicName":                 "trace topic name",
	"traceTopicEnable":                  "creates the trace topic at start",
	"aclEnable":                         "plain ACL (`aclFile` and conf/acl/*.yml)",
	"storeReplyMessageEnable":           "stores request-reply replies",
	"configBlackList":                   "keys UPDATE_BROKER_CONFIG refuses with NO_PERMISSION",
	"mappedFileSizeCommitLog":           "commitlog file size",
	"mappedFileSizeConsumeQueue":        "consume-queue file size (rounded up to a multiple of 20, as stock, with a warning)",
	"flushIntervalCommitLog":            "flush period",
	"cleanResourceInterval":             "cleanup period",
	"maxMessageSize":                    "send size check",
	"enableLmq":                         "`%LMQ%` topics and groups without config, LMQ queue ids 0, one offset per LMQ group and topic (broker/topics.go)",
	"enableMultiDispatch":               "`INNER_MULTI_DISPATCH` messages also put in each named queue, offsets in `INNER_MULTI_QUEUE_OFFSET` (store/lmq.go)",
	"maxLmqConsumeQueueNum":             "past it LMQ pulls fail as stock and multi-dispatch sends are refused (`LMQ_CONSUME_QUEUE_NUM_EXCEEDED`)",
	"storePathCommitLog":                "commitlog directory (one path; a `,` list is refused)",
	"deleteWhen":                        "cleanup hours",
	"diskMaxUsedSpaceRatio":             "cleanup threshold, clamped 10–95 where used (a value outside warns at start)",
	"deleteCommitLogFilesInterval":      "pause between deleted commitlog files",
	"deleteConsumeQueueFilesInterval":   "pause between deleted consume-queue files",
	"maxTransferBytesOnMessageInMemory": "pull batch byte cap (in memory)",
	"maxTransferCountOnMessageInMemory": "pull batch count cap (in memory)",
	"maxTransferBytesOnMessageInDisk":   "pull batch byte cap beyond the in-memory window",
	"maxTransferCountOnMessageInDisk":   "pull batch count cap beyond the in-memory window",
	"destroyMapedFileIntervalForcibly":  "forced destroy of a busy file",
	"fileReservedTime":                  "retention (hours)",
	"redeleteHangedFileInterval":        "retry of a hanged deletion",
	"accessMessageInMemoryMaxRatio":     "in-memory window (of physical memory)",
	"messageIndexEnable":                "message index",
	"maxHashSlotNum":                    "index geometry",
	"maxIndexNum":                       "index geometry",
	"brokerRole":                        "ASYNC_MASTER; SYNC_MASTER (sends wait for a slave's ack); SLAVE (replicates from its master, refuses writes, copies its metadata)",
	"slaveReadEnable":                   "pull `suggestWhichBrokerId` (the slave when slow, else the group's brokerId)",
	"offsetCheckInSlave":                "a slave's out-of-range pull: PULL_OFFSET_MOVED instead of PULL_RETRY_IMMEDIATELY",
	"haMasterAddress":                   "on a SLAVE, ≥ 6 characters pin the master's HA address",
	"haListenPort":                      "ignored as in 4.9.8 (the HA port is listenPort+1); honoured with rmq's haListenPortEnable (5.x)",
	"haSendHeartbeatInterval":           "HA: slave report period, master heartbeat after this idle",
	"haHousekeepingInterval":            "HA: a connection idle this long is closed",
	"haTransferBatchSize":               "HA: bytes per transfer (at most 4 MiB)",
	"haSlaveFallbehindMax":              "SYNC_MASTER: SLAVE_NOT_AVAILABLE when the slave is this far behind (5.x haMaxGapNotInSync wins when set)",
	"slaveTimeout":                      "SYNC_MASTER: FLUSH_SLAVE_TIMEOUT after this wait",
	"flushDiskType":                     "ASYNC_FLUSH/SYNC_FLUSH",
	"syncFlushTimeout":                  "SYNC_FLUSH wait",
	"messageDelayLevel":                 "delay levels",
	"flushDelayOffsetInterval":          "delayOffset.json write period",
	"cleanFileForciblyEnable":           "forced cleanup over the disk ratio",
	"storePathRootDir":                  "store root",
	"defaultQueryMaxNum":                "maxNum of a query by unique key",
	"listenPort":                        "remoting port (VIP −2); a change is advertised, nothing re-binds",
	"serverChannelMaxIdleTimeSeconds":   "idle connection timeout",

	// Back-pressure (broker/fastfail.go): the send, pull, heartbeat and
	// end-transaction lanes and the queue sweep.
	"brokerFastFailureEnable":          "sweeps the lanes every 10 ms: SYSTEM_BUSY `[TIMEOUT_CLEAN_QUEUE]`/`[PCBUSY_CLEAN_QUEUE]` to waiters",
	"waitTimeMillsInSendQueue":         "a pooled send that waited this long for a send-lane worker gets SYSTEM_BUSY `[TIMEOUT_CLEAN_QUEUE]`",
	"waitTimeMillsInPullQueue":         "the same for the pull lane",
	"waitTimeMillsInHeartbeatQueue":    "the same for the heartbeat lane",
	"waitTimeMillsInTransactionQueue":  "the same for the end-transaction lane",
	"osPageCacheBusyTimeOutMills":      "put lock held longer = page cache busy: sends get `[REJECTREQUEST]` (2) or `[PC_SYNCHRONIZED]` (1)",
	"sendMessageThreadPoolNums":        "workers of the send lane (pooled sends; inline sends need none)",
	"pullMessageThreadPoolNums":        "workers of the pull lane (pooled pulls)",
	"heartbeatThreadPoolNums":          "workers of the heartbeat lane",
	"endTransactionThreadPoolNums":     "workers of the end-transaction lane",
	"sendThreadPoolQueueCapacity":      "sends waiting in the send lane; past it SYSTEM_BUSY `[OVERLOAD]`",
	"pullThreadPoolQueueCapacity":      "the same for the pull lane",
	"heartbeatThreadPoolQueueCapacity": "the same for the heartbeat lane",
	"endTransactionPoolQueueCapacity":  "the same for the end-transaction lane",
}

// stockKeyRows renders the stock-keys section.
func stockKeyRows(t *testing.T) string {
	t.Helper()
	bs := defaultBrokerSettings()
	infos := map[string]conf.KeyInfo{}
	for _, k := range conf.Describe(bs.confSources()...) {
		infos[k.Key] = k
	}
	live := broker.LiveKeys()
	var b strings.Builder
	keys := readStockKeys(t)
	fmt.Fprintf(&b, "%d keys.\n\n", len(keys))
	b.WriteString("| Key | Stock default | rmq default | Effect in rmq | Live |\n")
	b.WriteString("| --- | ------------- | ----------- | ------------- | ---- |\n")
	for _, k := range keys {
		info, bound := infos[k.key]
		if !bound {
			t.Errorf("stock key %q (%s) is bound by no config struct: give it a broker.Options field (acted on) or a broker.StockKeys field (kept)", k.key, k.class)
			continue
		}
		effect, ok := honouredKeyNotes[k.key]
		if reason, inert := broker.InertKeyReason(k.key); inert {
			if ok {
				t.Errorf("stock key %q has both an inert reason and a note in honouredKeyNotes", k.key)
			}
			effect, ok = "none: "+reason, true
		} else if ok && effect != "" {
			effect = "honoured: " + effect
		}
		if !ok || effect == "" {
			t.Errorf("stock key %q has no row: add what it does to honouredKeyNotes, or a reason to broker's inertKeyReasons", k.key)
			continue
		}
		rmqDefault := defaultCell(info)
		if strings.Contains(k.javaDefault, "availableProcessors") {
			rmqDefault = "as stock (by CPU count)"
		}
		l := "at restart"
		if slices.Contains(broker.ConfigBlackList(broker.DefaultConfigBlackList), k.key) {
			l = "black-listed"
		} else if _, inert := broker.InertKeyReason(k.key); inert {
			l = "—"
		} else if slices.Contains(live, k.key) {
			l = "live"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", k.key, cell(k.javaDefault), rmqDefault, cell(effect), l)
	}
	for k := range honouredKeyNotes {
		if !slices.ContainsFunc(keys, func(s stockKey) bool { return s.key == k }) {
			t.Errorf("honouredKeyNotes has a note for %q, which is no stock key", k)
		}
	}
	return b.String()
}

func TestStockKeysHaveRows(t *testing.T) {
	stockKeyRows(t)
}
