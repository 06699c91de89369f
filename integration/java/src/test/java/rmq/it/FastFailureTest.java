package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Back-pressure as the 4.9.8 producer meets it. A second rmq broker with one send worker
 * (sendMessageThreadPoolNums=1) holds a marked batch's put for a few seconds (rmq's test hook testPutStallMillis,
 * SYNC_FLUSH): a batch behind it waits in the send queue and is answered SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] after
 * waitTimeMillsInSendQueue (200 ms); once the put has held the lock past osPageCacheBusyTimeOutMills (3000 ms here) a
 * send is refused SYSTEM_BUSY [REJECTREQUEST]. The 4.9.8 producer does not retry code 2 (it is not in
 * DefaultMQProducer.retryResponseCodes): the MQBrokerException of the first attempt reaches the caller, where a
 * retried code would end in an MQClientException after retryTimesWhenSendFailed. rmq only: the sync-send timing
 * here (a send made 500 ms into the stall, another past osPageCacheBusyTimeOutMills) needs a put held on purpose,
 * which a Java broker has no way to do; SystemBusyTest compares the same answers with the Java broker under a load
 * whose outcome does not depend on how long the put holds.
 */
@Tag("one-header-type")
class FastFailureTest {
    private static final int STALL_MS = 8000;
    /** osPageCacheBusyTimeOutMills: well past the queued batch's 200 ms, well before the stall ends. */
    private static final int BUSY_MS = 3000;

    @Test
    void systemBusyReachesTheCallerWithoutRetry() throws Exception {
        assumeTrue(BrokerProcess.launcher() != null, "rmq.brokerLauncher is not set (run.sh sets it)");
        assumeFalse(Clients.againstJavaBroker(), "a Java broker cannot hold a put on purpose");
        String topic = Clients.unique("fastfail");
        Path dir = Files.createTempDirectory("rmq-it-broker-ff");
        BrokerProcess b = new BrokerProcess(Clients.unique("ff_b"), Clients.unique("FastFailCluster"), dir.resolve("store"));
        b.env.put("RMQ_BROKER_EXTRA_CONF", "flushDiskType=SYNC_FLUSH\nsendMessageThreadPoolNums=1\nosPageCacheBusyTimeOutMills=" + BUSY_MS
            + "\ntestPutStallMillis=" + STALL_MS);
        b.start();
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("ff-admin"));
        admin.start();
        DefaultMQProducer producer = null;
        try {
            admin.createAndUpdateTopicConfig(b.addr(), new TopicConfig(topic, 1, 1, 6));
            producer = new DefaultMQProducer(Clients.unique("ffpg"));
            producer.setNamesrvAddr(Clients.namesrv());
            producer.setInstanceName(Clients.unique("ff-producer"));
            producer.setSendMsgTimeout(20_000);
            producer.setRetryTimesWhenSendFailed(2);
            producer.setPollNameServerInterval(1000);
            producer.start();
            DefaultMQProducer p = producer;
            AtomicReference<Object> last = new AtomicReference<>();
            Await.until("a send to " + b.name, Clients.DEADLINE, () -> {
                try {
                    SendResult r = p.send(msg(topic, "before"));
                    last.set(r);
                    return r.getSendStatus() == SendStatus.SEND_OK;
                } catch (Exception e) {
                    last.set(e);
                    return false;
                }
            }, () -> "last send: " + last.get());

            long stallStart = System.nanoTime();
            CompletableFuture<SendResult> held = CompletableFuture.supplyAsync(() -> {
                try {
                    return p.send(List.of(msg(topic, "RMQ-TEST-STALL-PUT")));
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            Thread.sleep(500); // the marked batch reaches the broker and stalls

            long begin = System.nanoTime();
            MQBrokerException queued = assertThrows(MQBrokerException.class, () -> p.send(List.of(msg(topic, "waits"))));
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin);
            assertEquals(2, queued.getResponseCode(), queued::toString);
            assertTrue(queued.getErrorMessage().startsWith("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "), queued::toString);
            assertTrue(waitedMs >= 200, "answered after " + waitedMs + " ms, before waitTimeMillsInSendQueue");

            long sinceStall = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stallStart);
            if (sinceStall < BUSY_MS + 500) {
                Thread.sleep(BUSY_MS + 500 - sinceStall); // past osPageCacheBusyTimeOutMills
            }
            MQBrokerException rejected = assertThrows(MQBrokerException.class, () -> p.send(msg(topic, "rejected")));
            assertEquals(2, rejected.getResponseCode(), rejected::toString);
            assertEquals("[REJECTREQUEST]system busy, start flow control for a while", rejected.getErrorMessage());
            assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stallStart) < STALL_MS, "the checks ran while the put stalled");

            SendResult stalled = held.get(30, TimeUnit.SECONDS);
            assertEquals(SendStatus.SEND_OK, stalled.getSendStatus(), stalled::toString);
            assertEquals(SendStatus.SEND_OK, p.send(msg(topic, "after")).getSendStatus());
        } finally {
            if (producer != null) {
                producer.shutdown();
            }
            admin.shutdown();
            b.stop();
            BrokerProcess.deleteTree(dir);
        }
    }

    private static Message msg(String topic, String body) {
        return new Message(topic, "TagF", body.getBytes(StandardCharsets.UTF_8));
    }
}
