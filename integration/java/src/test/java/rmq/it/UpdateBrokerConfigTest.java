package rmq.it;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Stock mqadmin {@code updateBrokerConfig} of every stock 4.9.8 key (issue 46), for the oracle comparison: the second
 * broker (BrokerProcess) gets every key that is safe to change, one {@code updateBrokerConfig -k key -v value} each,
 * with a value of the key's type that differs from the broker's current one; the test records mqadmin's answer and
 * what {@code getBrokerConfig} reports for the key afterwards. A sample of int and long keys also gets a value that is
 * not a number. Then the broker restarts on the config file it persisted (RMQ_BROKER_KEEP_CONF: the launcher does not
 * rewrite it) and the test records the key's line in that file and {@code getBrokerConfig} again.
 *
 * <p>The key list is rmq's own, {@code cmd/rmq/testdata/stock-keys-4.9.8.tsv} (the one docs/compatibility.md's table is
 * generated from and the Go tests check against the binder), so there is one list. The keys of {@link #SKIPPED} are
 * left out on both brokers, each for its reason: changing it would move, re-identify or break the test broker at its
 * restart, or the two releases legitimately differ on it.
 */
@Tag("one-header-type")
class UpdateBrokerConfigTest {
    static final Path KEYS = Path.of(System.getProperty("rmq.stockKeys", "../../cmd/rmq/testdata/stock-keys-4.9.8.tsv"));

    /** Keys not changed, on either broker, with the reason. */
    static final Map<String, String> SKIPPED = new LinkedHashMap<>();

    static {
        skip("the broker would listen elsewhere; the test reaches it at its address", "listenPort", "haListenPort");
        skip("the restarted broker would open another store", "storePathRootDir", "storePathCommitLog",
            "storePathDLedgerCommitLog", "readOnlyCommitLogStorePaths");
        skip("the restarted broker would not load the existing mapped files (file size or index layout)",
            "mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "mappedFileSizeConsumeQueueExt", "maxHashSlotNum",
            "maxIndexNum");
        skip("the restarted broker would not register (a slave needs a master's brokerId rules, another name server, "
            + "TLS to a plain name server)", "brokerRole", "namesrvAddr", "useTLS");
        skip("the restarted broker would switch to DLedger", "enableDLegerCommitLog");
        skip("the restarted broker would refuse the test's unsigned admin requests", "aclEnable");
        skip("the restarted Java broker would reserve transientStorePoolSize of direct memory", "transientStorePoolEnable");
        skip("the restarted Java broker would load a plug-in class of that name", "messageStorePlugIn");
        skip("black-listed by the stock 4.9.8 broker (NO_PERMISSION); the 4.9.7 oracle has no black list",
            "rocketmqHome", "configBlackList");
        skip("Java reports and persists it under its field's name isEnableBatchPush, which no setter reads back, so "
            + "an update is lost at restart; rmq keeps enableBatchPush (README.md, deliberate differences)",
            "enableBatchPush");
    }

    /** int and long keys that also get a value that is not a number. */
    static final List<String> INVALID_SAMPLE = List.of("maxMessageSize", "defaultTopicQueueNums",
        "flushIntervalCommitLog", "transactionTimeOut", "serverWorkerThreads", "osPageCacheBusyTimeOutMills");

    private static void skip(String reason, String... keys) {
        for (String k : keys) {
            SKIPPED.put(k, reason);
        }
    }

    record Key(String name, String type) {
    }

    static List<Key> stockKeys() throws IOException {
        List<Key> keys = new ArrayList<>();
        for (String line : Files.readAllLines(KEYS)) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\t");
            keys.add(new Key(f[0], f[2]));
        }
        return keys;
    }

    /** A valid value of the key's type that differs from cur (the broker's value before). */
    static String newValue(Key k, String cur) {
        switch (k.type()) {
            case "boolean":
                return Boolean.toString(!Boolean.parseBoolean(cur));
            case "int":
            case "long":
                try {
                    return Long.toString(Long.parseLong(cur.trim()) + 1);
                } catch (RuntimeException e) {
                    return "1";
                }
            default:
                return switch (k.name()) {
                    case "deleteWhen" -> "05";
                    case "brokerIP1" -> "127.0.0.2"; // loopback too: both brokers listen on every address
                    case "brokerIP2" -> "127.0.0.3";
                    case "flushDiskType" -> "SYNC_FLUSH";
                    case "haMasterAddress" -> "127.0.0.1:10912";
                    case "messageDelayLevel" -> "1s 5s 10s";
                    case "dLegerPeers" -> "n0-127.0.0.1:40911";
                    default -> (cur == null || cur.isEmpty() ? "x" : cur) + "Upd";
                };
        }
    }

    /** mqadmin's answer without stack frames (their line numbers are the tools jar's, the same on both runs). */
    static String outcome(MQAdmin.Output o) {
        StringBuilder b = new StringBuilder();
        for (String l : (o.out() + "\n" + o.err()).split("\\R")) {
            String t = l.strip();
            if (t.isEmpty() || t.startsWith("at ") || t.matches("\\.\\.\\. \\d+ more")) {
                continue;
            }
            b.append("    ").append(t).append('\n');
        }
        return b.toString();
    }

    @Test
    void everyStockKey() throws Exception {
        assumeTrue(BrokerProcess.launcher() != null, "rmq.brokerLauncher is not set (run.sh sets it)");
        List<Key> keys = stockKeys();
        assertTrue(keys.size() >= 180, "stock key list " + KEYS.toAbsolutePath() + ": " + keys.size() + " keys");
        Path dir = Files.createTempDirectory("rmq-it-updcfg");
        BrokerProcess b = new BrokerProcess(Clients.unique("updcfg_b"), Clients.unique("UpdCfgCluster"), dir.resolve("store"));
        b.env.put("RMQ_BROKER_KEEP_CONF", "1");
        // The same starting values on both brokers (the Java launcher sets these for the suite's other tests; rmq's
        // smallStore would cap maxMessageSize at its 4 MiB commitlog files): each new value is the old one moved.
        b.env.put("RMQ_BROKER_EXTRA_CONF", "enablePropertyFilter=true\nfilterSupportRetry=true\n"
            + "transactionCheckInterval=5000\nmappedFileSizeCommitLog=67108864");
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("updcfg-admin"));
        StringBuilder rec = new StringBuilder();
        try {
            b.start();
            admin.start();
            Properties before = admin.getBrokerConfig(b.addr());
            int changed = 0;
            for (Key k : keys) {
                String why = SKIPPED.get(k.name());
                if (why != null) {
                    rec.append(k.name()).append(": skipped: ").append(why).append('\n');
                    continue;
                }
                String v = newValue(k, before.getProperty(k.name()));
                MQAdmin.Output o = MQAdmin.run("updateBrokerConfig", "-b", b.addr(), "-k", k.name(), "-v", v);
                Properties after = admin.getBrokerConfig(b.addr());
                rec.append(k.name()).append(" (").append(k.type()).append(") -> ").append(v).append('\n')
                    .append("  update:\n").append(outcome(o))
                    .append("  getBrokerConfig: ").append(after.getProperty(k.name(), "(absent)")).append('\n');
                changed++;
                if (INVALID_SAMPLE.contains(k.name())) {
                    // Java drops an unparsable value and answers SUCCESS; rmq refuses it as its start-up check
                    // would (README.md, deliberate differences). What must agree: the key keeps its value.
                    MQAdmin.run("updateBrokerConfig", "-b", b.addr(), "-k", k.name(), "-v", "notANumber");
                    String kept = admin.getBrokerConfig(b.addr()).getProperty(k.name());
                    rec.append("  not a number, value kept: ").append(v.equals(kept)).append('\n');
                }
            }
            rec.append("changed: ").append(changed).append(", skipped: ").append(keys.size() - changed).append('\n');

            b.stop();
            b.start();
            Map<String, String> file = new LinkedHashMap<>();
            for (String l : Files.readAllLines(Path.of(b.storeDir + ".conf"))) {
                int eq = l.indexOf('=');
                if (eq > 0 && !l.startsWith("#")) {
                    file.put(l.substring(0, eq).strip(), l.strip());
                }
            }
            Properties restarted = admin.getBrokerConfig(b.addr());
            rec.append("\nafter restart\n");
            for (Key k : keys) {
                if (SKIPPED.containsKey(k.name())) {
                    continue;
                }
                rec.append(k.name()).append(": file: ").append(file.getOrDefault(k.name(), "(no line)"))
                    .append("; getBrokerConfig: ").append(restarted.getProperty(k.name(), "(absent)")).append('\n');
            }
        } finally {
            OracleOutput.write(getClass(), "everyStockKey", rec.toString());
            admin.shutdown();
            b.stop();
            BrokerProcess.deleteTree(dir);
        }
    }
}
