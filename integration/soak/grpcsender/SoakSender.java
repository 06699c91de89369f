import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * The failover soak's second producer (integration/soak/failover_test.go): the stock 5.x gRPC SDK sends plain
 * (NORMAL topic), timer (setDeliveryTimestamp, DELAY topic) and transactional (TRANSACTION topic) messages in
 * turn, one worker, with a pause between sends, and prints one line per send on stdout for the soak's ledger:
 *
 * <pre>
 *   ACK  id kind messageId dueMs     (dueMs 0 unless a timer)
 *   FAIL id kind reason
 * </pre>
 *
 * A transaction is acknowledged once its half message was sent and the local transaction decided COMMIT (as the
 * Go 4.x sender's ledger does); the commit itself may be lost in a failover, and the checker then commits every
 * id this process executed, so the broker's check-back settles it. Each message carries the soak's id property
 * (soakid) and a timer its due time (soakdue, unix ms), which the soak's push consumer judges.
 *
 * Commands on stdin: "restart" replaces the producer with a new one (the soak does so after each switch, as it
 * replaces its Go producers: a new client asks for routes at once instead of after its 30 s refresh); "quiet"
 * stops sending but keeps the producer, whose transaction checker still answers the brokers' check-backs of
 * transactions whose commit was lost (prints QUIET once no send is in flight); "stop" or end of input closes the
 * producer and exits.
 *
 * Arguments: endpoints ("host:port;host:port"), normal topic, delay topic, transaction topic, pause in ms.
 */
public final class SoakSender {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    private static final Set<String> EXECUTED = ConcurrentHashMap.newKeySet();
    private static final Object OUT = new Object();

    private static void emit(String line) {
        synchronized (OUT) {
            System.out.println(line);
            System.out.flush();
        }
    }

    private static Producer newProducer(String endpoints, String... topics) throws InterruptedException {
        ClientConfiguration cc = ClientConfiguration.newBuilder().setEndpoints(endpoints)
            .setRequestTimeout(Duration.ofSeconds(5)).build();
        TransactionChecker checker = view -> {
            String id = view.getProperties().getOrDefault("soakid", "");
            TransactionResolution r = EXECUTED.contains(id) ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
            emit("CHECK " + id + " " + r);
            return r;
        };
        while (true) {
            try {
                return PROVIDER.newProducerBuilder().setClientConfiguration(cc).setTopics(topics)
                    .setTransactionChecker(checker).build();
            } catch (Exception e) {
                emit("NOTE producer start: " + oneLine(e));
                Thread.sleep(500);
            }
        }
    }

    // oneLine is an exception and its causes on one line.
    private static String oneLine(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = e; c != null && b.length() < 2000; c = c.getCause() == c ? null : c.getCause()) {
            b.append(b.length() == 0 ? "" : " <- ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return b.toString().replace('\n', ' ').replace('\r', ' ');
    }

    public static void main(String[] args) throws Exception {
        String endpoints = args[0], normal = args[1], delayed = args[2], txTopic = args[3];
        long pause = Long.parseLong(args[4]);
        AtomicReference<Producer> current = new AtomicReference<>(newProducer(endpoints, normal, delayed, txTopic));
        emit("READY");
        AtomicLong seq = new AtomicLong();
        // The worker replaces the producer itself, between two sends: closing a producer while a send is in
        // flight on it terminates the executor that send's completion needs, and the send never returns.
        AtomicBoolean restart = new AtomicBoolean();
        AtomicBoolean quiet = new AtomicBoolean();
        Thread worker = new Thread(() -> {
            String[] kinds = {"plain", "timer", "txn"};
            for (long i = 0; !Thread.currentThread().isInterrupted(); i++) {
                if (quiet.get()) {
                    emit("QUIET");
                    return;
                }
                String kind = kinds[(int) (i % kinds.length)];
                String id = "sdk-" + kind + "-" + seq.incrementAndGet();
                try {
                    if (restart.getAndSet(false)) {
                        Producer old = current.getAndSet(newProducer(endpoints, normal, delayed, txTopic));
                        closeQuietly(old);
                        emit("RESTARTED");
                    }
                    send(current.get(), kind, id, normal, delayed, txTopic);
                } catch (InterruptedException e) {
                    return;
                }
                try {
                    Thread.sleep(pause);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "soak-sender");
        worker.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null && !line.trim().equals("stop"); ) {
            if (line.trim().equals("restart")) {
                restart.set(true);
            } else if (line.trim().equals("quiet")) {
                quiet.set(true);
            }
        }
        worker.interrupt();
        worker.join(10_000);
        closeQuietly(current.get());
        emit("STOPPED");
        System.exit(0);
    }

    private static void closeQuietly(Producer p) {
        try {
            p.close();
        } catch (Exception ignored) {
            // A producer whose endpoint died may fail to say goodbye; the soak does not care.
        }
    }

    private static void send(Producer p, String kind, String id, String normal, String delayed, String txTopic)
        throws InterruptedException {
        byte[] body = ("soak " + id).getBytes(StandardCharsets.UTF_8);
        long due = 0;
        MessageBuilder b = PROVIDER.newMessageBuilder().setBody(body).addProperty("soakid", id).setKeys(id);
        switch (kind) {
            case "timer":
                due = System.currentTimeMillis() + ThreadLocalRandom.current().nextLong(500, 4000);
                b.setTopic(delayed).setDeliveryTimestamp(due).addProperty("soakdue", Long.toString(due));
                break;
            case "txn":
                b.setTopic(txTopic);
                break;
            default:
                b.setTopic(normal);
        }
        Message m = b.build();
        try {
            SendReceipt r;
            if (kind.equals("txn")) {
                Transaction tx = p.beginTransaction();
                r = p.send(m, tx);
                EXECUTED.add(id);
                try {
                    tx.commit();
                } catch (Exception e) {
                    // Decided COMMIT; the broker's check-back asks the checker, which commits.
                    emit("NOTE commit " + id + ": " + oneLine(e));
                }
            } else {
                r = p.send(m);
            }
            emit("ACK " + id + " " + kind + " " + r.getMessageId() + " " + due);
        } catch (Exception e) {
            if (Thread.currentThread().isInterrupted()) {
                throw new InterruptedException();
            }
            emit("FAIL " + id + " " + kind + " " + oneLine(e));
            Thread.sleep(50);
        }
    }
}
