package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Back-pressure (SYSTEM_BUSY) compared with the Java broker (oracle writer). Each case starts a second broker with
 * one send thread (sendMessageThreadPoolNums=1, SYNC_FLUSH) and the case's keys, and sends it the same load from one
 * 4.9.8 producer whose async sends leave in order (a one-thread asyncSenderExecutor): a batch of
 * {@value #BATCH} small messages, which holds the send thread, then {@value #SINGLES} async single sends right
 * behind it on the same connection. What the singles are answered is recorded as the set of answer kinds (the
 * remark with its numbers masked) and the relations the case asserts, never the counts, which depend on how long
 * the batch holds the thread.
 *
 * <p>How the send thread is held. On the Java broker the batch itself holds it: encoding {@value #BATCH} messages
 * and appending them under the put lock takes tens of milliseconds, against microseconds for the broker's I/O
 * thread to decode the singles queued right behind it in the socket. On rmq the batch carries the marker of the
 * test hook testPutStallMillis (SYNC_FLUSH: its commitlog write holds the put lock, and its send-lane worker, for
 * {@value #STALL_MS} ms); the Java broker ignores the key and the marker is an ordinary body. So the outcome is
 * certain on rmq and, on Java, needs only the batch to outlast the decoding of the singles. Measured on a 2-core
 * machine at load average 20-45: the Java client saw each batch answered 0.2-10 s after it was sent; overload was
 * 1 SEND_OK + 31 [OVERLOAD] in all 22 Java repetitions, the two sweep cases held 28 times under load but failed on
 * a quieter machine (JAVA_RACE).
 *
 * <ul>
 *   <li>{@code overload}: sendThreadPoolQueueCapacity=1, brokerFastFailureEnable=false. The first single waits in
 *       the queue and is served after the batch; the rest find the queue full: SYSTEM_BUSY "[OVERLOAD]system busy,
 *       start flow control for a while" (stock NettyRemotingAbstract, RejectedExecutionException).</li>
 *   <li>{@code timeoutCleanQueue}: brokerFastFailureEnable=true, waitTimeMillsInSendQueue=0. The sweep (every 10 ms)
 *       answers the singles that wait "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in
 *       queue: Nms, size of queue: N" (stock BrokerFastFailure).</li>
 *   <li>{@code pageCacheBusy}: osPageCacheBusyTimeOutMills=1 (the batch's put lock hold makes the store busy). A
 *       single decoded while busy is refused "[REJECTREQUEST]system busy, start flow control for a while" (stock
 *       SendMessageProcessor.rejectRequest); one already waiting is drained by the sweep "[PCBUSY_CLEAN_QUEUE]...".
 *       Which of the two a single gets depends on when the put took the lock, so the record says that every busy
 *       answer is one of the two, not which.</li>
 * </ul>
 * Only {@code overload} is an oracle case (recorded, and run against Java): the other two need the Java batch to
 * hold past a sweep, which is a race on a quiet machine (see JAVA_RACE); they run against rmq only, where the stall
 * hook makes them certain, and assert the same stock answers.
 * In every case the 4.9.8 producer hands SYSTEM_BUSY to the callback as an MQBrokerException from the first
 * attempt (an async send is never retried on a broker's answer: MQClientAPIImpl.onExceptionImpl with needRetry
 * false), and the queue holds exactly the batch and the accepted singles: nothing refused is stored, nothing
 * accepted is lost or stored twice.
 */
@Tag("one-header-type")
class SystemBusyTest {
    static final int BATCH = 40_000;
    static final int SINGLES = 32;
    static final int STALL_MS = 3000;
    /** The Java launcher's commitlog file size (run.sh), on rmq too: rmq's small store has 4 MiB files, too small for the batch's records. */
    static final int COMMITLOG_FILE = 64 << 20;
    private static final String MARKER = "RMQ-TEST-STALL-PUT";
    private static final String OK = "SEND_OK";
    /**
     * Why timeoutCleanQueue and pageCacheBusy do not run against Java: their outcome needs the batch to hold the
     * thread past the next 10 ms sweep after the singles arrive (or the put lock past 1 ms when they arrive). Under
     * load that held in 28 Java repetitions, but on a quieter machine (run 8) a Java batch was done within that
     * window and all 32 singles were SEND_OK in both cases. overload needs only the second single to arrive before
     * the batch ends, which held every time.
     */
    private static final String JAVA_RACE = "not deterministic against Java: the batch's hold past the next sweep is a race";
    private static final java.util.regex.Pattern PERIOD = java.util.regex.Pattern.compile("period in queue: (\\d+)ms");

    @Test
    void overload() throws Exception {
        Set<String> want = new TreeSet<>(List.of(OK, "SYSTEM_BUSY [OVERLOAD]system busy, start flow control for a while"));
        Outcome o = run("overload", "sendThreadPoolQueueCapacity=1\nbrokerFastFailureEnable=false\nosPageCacheBusyTimeOutMills=600000",
            r -> assertEquals(want, r.kinds.keySet(), r::toString));
        record("overload", o, "answers: " + String.join(", ", want) + "\neach answer at least once: true");
    }

    @Test
    void timeoutCleanQueue() throws Exception {
        assumeFalse(Clients.againstJavaBroker(), JAVA_RACE);
        String timeout = "SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: Nms, size of queue: N";
        Outcome o = run("timeoutCleanQueue", "brokerFastFailureEnable=true\nwaitTimeMillsInSendQueue=0\nosPageCacheBusyTimeOutMills=600000", r -> {
            assertTrue(r.kinds.containsKey(timeout), r::toString);
            Set<String> others = new TreeSet<>(r.kinds.keySet());
            others.remove(timeout);
            others.remove(OK);
            assertTrue(others.isEmpty(), r::toString);
        });
        System.out.println("[SystemBusyTest] timeoutCleanQueue (rmq only, not recorded): " + o);
    }

    @Test
    void pageCacheBusy() throws Exception {
        assumeFalse(Clients.againstJavaBroker(), JAVA_RACE);
        Set<String> busy = new TreeSet<>(List.of("SYSTEM_BUSY [REJECTREQUEST]system busy, start flow control for a while",
            "SYSTEM_BUSY [PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: Nms, size of queue: N"));
        Outcome o = run("pageCacheBusy", "brokerFastFailureEnable=true\nwaitTimeMillsInSendQueue=600000\nosPageCacheBusyTimeOutMills=1", r -> {
            long busyAnswers = r.kinds.entrySet().stream().filter(e -> busy.contains(e.getKey())).mapToLong(Map.Entry::getValue).sum();
            Set<String> others = new TreeSet<>(r.kinds.keySet());
            others.removeAll(busy);
            others.remove(OK);
            assertTrue(busyAnswers >= 1, r::toString);
            assertTrue(others.isEmpty(), r::toString);
        });
        System.out.println("[SystemBusyTest] pageCacheBusy (rmq only, not recorded): " + o);
    }

    /** What one case's load was answered. */
    static final class Outcome {
        String config;
        String batch;
        long batchMillis;
        /** The longest "period in queue" a remark reported (the broker's own figure for how long the batch held). */
        long longestWaitMs;
        /** Answer kind of the singles → how many. */
        final Map<String, Long> kinds = new TreeMap<>();
        boolean firstAttempt = true;
        boolean storedCount;
        boolean storedBodies;
        String detail = "";

        @Override
        public String toString() {
            return "batch " + batch + " in " + batchMillis + " ms, singles " + kinds + ", longest period in queue " + longestWaitMs + " ms" + ", first attempt " + firstAttempt
                + ", stored count " + storedCount + ", stored bodies " + storedBodies + " " + detail;
        }
    }

    private static void record(String test, Outcome o, String relations) {
        OracleOutput.write(SystemBusyTest.class, test, "config: " + o.config.replace('\n', ' ')
            + "\nsendMessageThreadPoolNums=1 flushDiskType=SYNC_FLUSH mappedFileSizeCommitLog=" + COMMITLOG_FILE
            + "\nbatch of " + BATCH + ": " + o.batch
            + "\nsingles: " + SINGLES
            + "\n" + relations
            + "\nSYSTEM_BUSY from the first attempt (MQBrokerException, no retry): " + o.firstAttempt
            + "\nstored = batch + accepted singles: " + o.storedCount
            + "\nstored singles = accepted singles: " + o.storedBodies + "\n");
    }

    /**
     * Sends the load {@code RMQ_BUSY_REPEAT} times (default 1), each time to a new broker started with extraConf,
     * checking each outcome with check (and that its batch, first attempts and store are right); returns the last
     * outcome.
     */
    private static Outcome run(String test, String extraConf, java.util.function.Consumer<Outcome> check) throws Exception {
        assumeTrue(BrokerProcess.launcher() != null, "rmq.brokerLauncher is not set (run.sh sets it)");
        int repeat = Integer.parseInt(System.getenv().getOrDefault("RMQ_BUSY_REPEAT", "1"));
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("busy-admin"));
        admin.start();
        try {
            Outcome o = null;
            for (int i = 1; i <= repeat; i++) {
                Path dir = Files.createTempDirectory("rmq-it-broker-busy");
                BrokerProcess b = new BrokerProcess(Clients.unique("busy_b"), Clients.unique("BusyCluster"), dir.resolve("store"));
                b.env.put("RMQ_BROKER_EXTRA_CONF", "flushDiskType=SYNC_FLUSH\nsendMessageThreadPoolNums=1\nmappedFileSizeCommitLog="
                    + COMMITLOG_FILE + "\ntestPutStallMillis=" + STALL_MS + "\n" + extraConf);
                try {
                    b.start();
                    o = load(b, admin, extraConf);
                } finally {
                    b.stop();
                    BrokerProcess.deleteTree(dir);
                }
                System.out.println("[SystemBusyTest] " + Clients.brokerKind() + " " + test + " " + i + "/" + repeat + ": " + o);
                check.accept(o);
            }
            return o;
        } finally {
            admin.shutdown();
        }
    }

    /** Sends the load to a new topic on b and checks what b stored. */
    private static Outcome load(BrokerProcess b, DefaultMQAdminExt admin, String extraConf) throws Exception {
        Outcome o = new Outcome();
        o.config = extraConf;
        String topic = Clients.unique("busy");
        ExecutorService inOrder = Executors.newSingleThreadExecutor();
        DefaultMQProducer producer = null;
        DefaultMQPullConsumer puller = null;
        try {
            admin.createAndUpdateTopicConfig(b.addr(), new TopicConfig(topic, 1, 1, 6));
            producer = new DefaultMQProducer(Clients.unique("busypg"));
            producer.setNamesrvAddr(Clients.namesrv());
            producer.setInstanceName(Clients.unique("busy-producer"));
            producer.setSendMsgTimeout(30_000);
            producer.setRetryTimesWhenSendFailed(2);
            producer.setRetryTimesWhenSendAsyncFailed(2);
            producer.setMaxMessageSize(4 * 1024 * 1024);
            producer.setAsyncSenderExecutor(inOrder);
            producer.start();
            DefaultMQProducer p = producer;
            // No send before the load: the batch is the first request the broker's send executor ever gets, which
            // a Java ThreadPoolExecutor hands to the new thread directly. Any later request goes through the queue
            // even when the thread is idle, and with waitTimeMillsInSendQueue=0 the sweep can expire it there
            // before the idle thread takes it (seen once in ten on the loaded machine). The producer learns the
            // route when it first sends; wait until the name server has it, or it would take TBW102's.
            AtomicReference<Object> last = new AtomicReference<>();
            Await.until("the route of " + topic + " on " + b.name, Clients.DEADLINE, () -> {
                try {
                    List<MessageQueue> mqs = p.fetchPublishMessageQueues(topic);
                    last.set(mqs);
                    return mqs.stream().anyMatch(q -> q.getBrokerName().equals(b.name));
                } catch (Exception e) {
                    last.set(e);
                    return false;
                }
            }, () -> "last answer: " + last.get());
            MessageQueue mq = new MessageQueue(topic, b.name, 0);
            long base = 0;

            List<Message> batch = new ArrayList<>(BATCH);
            for (int i = 0; i < BATCH; i++) {
                batch.add(msg(topic, i == 0 ? MARKER : "b" + i));
            }
            CountDownLatch done = new CountDownLatch(SINGLES + 1);
            AtomicReference<Object> batchResult = new AtomicReference<>();
            Map<String, Object> singles = new ConcurrentHashMap<>();
            long begin = System.nanoTime();
            p.send(batch, callback(r -> batchResult.set(r), done));
            for (int i = 0; i < SINGLES; i++) {
                String body = "single-" + i;
                p.send(msg(topic, body), callback(r -> singles.put(body, r), done));
            }
            assertTrue(done.await(60, TimeUnit.SECONDS), () -> "answers: batch " + batchResult.get() + ", singles " + singles);
            o.batchMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin);
            o.batch = kind(batchResult.get());
            Set<String> accepted = new TreeSet<>();
            for (Map.Entry<String, Object> e : singles.entrySet()) {
                o.kinds.merge(kind(e.getValue()), 1L, Long::sum);
                if (e.getValue() instanceof MQBrokerException) {
                    java.util.regex.Matcher m = PERIOD.matcher(String.valueOf(((MQBrokerException) e.getValue()).getErrorMessage()));
                    if (m.find()) {
                        o.longestWaitMs = Math.max(o.longestWaitMs, Long.parseLong(m.group(1)));
                    }
                }
                if (e.getValue() instanceof SendResult) {
                    accepted.add(e.getKey());
                } else if (!(e.getValue() instanceof MQBrokerException)) {
                    o.firstAttempt = false;
                    o.detail += " " + e.getKey() + ": " + e.getValue();
                }
            }
            // The queue's max offset follows the commitlog as the broker dispatches it (asynchronously on both
            // brokers): wait until it covers every accepted message, then compare.
            long batchStored = OK.equals(o.batch) ? BATCH : 0;
            long want = batchStored + accepted.size();
            Await.until("the queue to hold the accepted messages", Clients.DEADLINE, () -> {
                try {
                    return admin.maxOffset(mq) - base >= want;
                } catch (Exception e) {
                    return false;
                }
            }, () -> "want " + want);
            long stored = admin.maxOffset(mq) - base;
            o.storedCount = stored == want;
            o.detail += " stored " + stored;

            puller = new DefaultMQPullConsumer(Clients.unique("busycg"));
            puller.setNamesrvAddr(Clients.namesrv());
            puller.setInstanceName(Clients.unique("busy-puller"));
            puller.start();
            Set<String> storedSingles = new TreeSet<>();
            long offset = base + batchStored;
            while (offset < base + stored) {
                PullResult r = puller.pullBlockIfNotFound(mq, "*", offset, 32);
                assertEquals(PullStatus.FOUND, r.getPullStatus(), r::toString);
                for (MessageExt m : r.getMsgFoundList()) {
                    storedSingles.add(new String(m.getBody(), StandardCharsets.UTF_8));
                }
                offset = r.getNextBeginOffset();
            }
            o.storedBodies = storedSingles.equals(accepted);
            assertTrue(o.firstAttempt && o.storedCount && o.storedBodies, o::toString);
            assertEquals(OK, o.batch, o::toString);
            return o;
        } finally {
            if (puller != null) {
                puller.shutdown();
            }
            if (producer != null) {
                producer.shutdown();
            }
            inOrder.shutdownNow();
        }
    }

    /** A single's answer: SEND_OK, or the response code name and the remark with its numbers masked. */
    static String kind(Object answer) {
        if (answer instanceof SendResult) {
            return ((SendResult) answer).getSendStatus().name();
        }
        if (answer instanceof MQBrokerException) {
            MQBrokerException e = (MQBrokerException) answer;
            String code = e.getResponseCode() == 2 ? "SYSTEM_BUSY" : "code " + e.getResponseCode();
            return code + " " + String.valueOf(e.getErrorMessage()).replaceAll("\\d+", "N");
        }
        return String.valueOf(answer);
    }

    private static SendCallback callback(java.util.function.Consumer<Object> sink, CountDownLatch done) {
        return new SendCallback() {
            @Override
            public void onSuccess(SendResult r) {
                sink.accept(r);
                done.countDown();
            }

            @Override
            public void onException(Throwable e) {
                sink.accept(e);
                done.countDown();
            }
        };
    }

    private static Message msg(String topic, String body) {
        return new Message(topic, body.getBytes(StandardCharsets.UTF_8));
    }
}
