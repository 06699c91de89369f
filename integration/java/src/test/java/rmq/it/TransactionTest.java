package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * TransactionMQProducer: commit is delivered once, rollback never, UNKNOW is checked back and committed on the
 * check, and a producer that dies before deciding is checked through another instance of its group.
 *
 * <p>Check-backs come at the broker's transactionCheckInterval (60 s unless the broker.conf of the run sets it),
 * so those waits use {@link #CHECK_DEADLINE} (system property rmq.txCheckDeadlineSeconds, default 150).
 */
// Under the first header type only (run.sh): it waits for the broker's check-back rounds (every 5 s); the
// transaction headers go through the same codec as every other request's.
@Tag("one-header-type")
class TransactionTest {
    static final Duration CHECK_DEADLINE = Duration.ofSeconds(Long.getLong("rmq.txCheckDeadlineSeconds", 150));
    private static final String ID = "itid";

    /** Answers by the message's itid property and counts what it was asked. */
    static final class ScriptedListener implements TransactionListener {
        private final Map<String, LocalTransactionState> exec;
        private final Map<String, LocalTransactionState> check;
        final Map<String, AtomicInteger> checks = new ConcurrentHashMap<>();

        ScriptedListener(Map<String, LocalTransactionState> exec, Map<String, LocalTransactionState> check) {
            this.exec = exec;
            this.check = check;
        }

        @Override
        public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
            return exec.getOrDefault(msg.getUserProperty(ID), LocalTransactionState.UNKNOW);
        }

        @Override
        public LocalTransactionState checkLocalTransaction(MessageExt msg) {
            String id = msg.getUserProperty(ID);
            checks.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            return check.getOrDefault(id, LocalTransactionState.UNKNOW);
        }

        int checked(String id) {
            AtomicInteger n = checks.get(id);
            return n == null ? 0 : n.get();
        }
    }

    private static TransactionMQProducer startTxProducer(String group, TransactionListener listener)
        throws MQClientException {
        TransactionMQProducer producer = new TransactionMQProducer(group);
        producer.setNamesrvAddr(Clients.namesrv());
        producer.setInstanceName(Clients.unique("txproducer"));
        producer.setSendMsgTimeout(10_000);
        producer.setTransactionListener(listener);
        producer.start();
        return producer;
    }

    private static Message message(String topic, String id) {
        Message msg = new Message(topic, "TxTag", ("tx body " + id).getBytes(StandardCharsets.UTF_8));
        msg.putUserProperty(ID, id);
        return msg;
    }

    private static TransactionSendResult send(TransactionMQProducer producer, String topic, String id)
        throws MQClientException {
        TransactionSendResult res = producer.sendMessageInTransaction(message(topic, id), null);
        assertEquals(SendStatus.SEND_OK, res.getSendStatus(), () -> id + ": " + res);
        assertNotNull(res.getMsgId(), id + ": msgId");
        return res;
    }

    private static Predicate<MessageExt> withId(String id) {
        return m -> id.equals(m.getUserProperty(ID));
    }

    private static long count(Inbox inbox, String id) {
        return inbox.all().stream().filter(withId(id)).count();
    }

    /** Messages stored on the topic: the sum of its queues' max offsets. */
    private static long stored(TransactionMQProducer producer, String topic) throws MQClientException {
        long total = 0;
        List<MessageQueue> queues = producer.fetchPublishMessageQueues(topic);
        for (MessageQueue mq : queues) {
            total += producer.maxOffset(mq);
        }
        return total;
    }

    @Test
    void commitRollbackAndCheckedUnknown() throws Exception {
        String topic = Clients.unique("tx");
        ScriptedListener listener = new ScriptedListener(
            Map.of("commit", LocalTransactionState.COMMIT_MESSAGE,
                "rollback", LocalTransactionState.ROLLBACK_MESSAGE,
                "unknown", LocalTransactionState.UNKNOW),
            Map.of("commit", LocalTransactionState.ROLLBACK_MESSAGE,
                "rollback", LocalTransactionState.COMMIT_MESSAGE,
                "unknown", LocalTransactionState.COMMIT_MESSAGE));
        TransactionMQProducer producer = startTxProducer(Clients.unique("txpg"), listener);
        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = null;
        try {
            TransactionSendResult committed = send(producer, topic, "commit");
            TransactionSendResult rolledBack = send(producer, topic, "rollback");
            TransactionSendResult unknown = send(producer, topic, "unknown");
            assertAll(
                () -> assertEquals(LocalTransactionState.COMMIT_MESSAGE, committed.getLocalTransactionState()),
                () -> assertEquals(LocalTransactionState.ROLLBACK_MESSAGE, rolledBack.getLocalTransactionState()),
                () -> assertEquals(LocalTransactionState.UNKNOW, unknown.getLocalTransactionState()));

            consumer = Clients.pushConsumer(topic, "*", 2);
            consumer.registerMessageListener(inbox);
            consumer.start();
            Await.until("the committed message", Clients.DEADLINE, () -> inbox.has(withId("commit")), inbox::describe);
            Await.until("the message committed on check-back", CHECK_DEADLINE, () -> inbox.has(withId("unknown")),
                () -> inbox.describe() + "; checks " + listener.checks);

            MessageExt got = inbox.first(withId("commit")).orElseThrow();
            assertAll(
                () -> assertEquals(topic, got.getTopic()),
                () -> assertEquals("TxTag", got.getTags()),
                () -> assertArrayEquals("tx body commit".getBytes(StandardCharsets.UTF_8), got.getBody()),
                () -> assertEquals(committed.getMsgId(), got.getMsgId(), "msgId is the UNIQ_KEY of the send"),
                // Known difference, not yet resolved: the 4.9.x broker builds the committed message's stored
                // properties string before it clears TRAN_MSG (EndTransactionProcessor.endMessageTransaction, then
                // clearProperty on the map only), so the consumer still sees TRAN_MSG=true; rmq drops it.
                () -> assertEquals(Clients.againstJava4Broker() ? "true" : null,
                    got.getProperty(MessageConst.PROPERTY_TRANSACTION_PREPARED), "TRAN_MSG on the committed message"),
                () -> assertEquals(1, count(inbox, "commit"), "commit delivered once"),
                () -> assertEquals(1, count(inbox, "unknown"), "checked message delivered once"),
                () -> assertEquals(0, count(inbox, "rollback"), "rollback never delivered"),
                () -> assertTrue(listener.checked("unknown") >= 1, "unknown was checked"),
                () -> assertEquals(0, listener.checked("commit"), "decided messages are not checked"),
                () -> assertEquals(0, listener.checked("rollback"), "decided messages are not checked"),
                () -> assertEquals(2, stored(producer, topic), "messages stored on the topic"));
        } finally {
            if (consumer != null) {
                consumer.shutdown();
            }
            producer.shutdown();
        }
    }

    @Test
    void deadProducerIsCheckedThroughAnotherInstance() throws Exception {
        String topic = Clients.unique("txorphan");
        String group = Clients.unique("txpg");

        ScriptedListener dying = new ScriptedListener(Map.of(), Map.of());
        TransactionMQProducer first = startTxProducer(group, dying);
        try {
            TransactionSendResult res = send(first, topic, "orphan");
            assertEquals(LocalTransactionState.UNKNOW, res.getLocalTransactionState());
        } finally {
            first.shutdown(); // dies without deciding
        }

        ScriptedListener alive = new ScriptedListener(
            Map.of("second", LocalTransactionState.COMMIT_MESSAGE),
            Map.of("orphan", LocalTransactionState.COMMIT_MESSAGE));
        TransactionMQProducer second = startTxProducer(group, alive);
        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = null;
        try {
            send(second, topic, "second");
            consumer = Clients.pushConsumer(topic, "*", 2);
            consumer.registerMessageListener(inbox);
            consumer.start();
            Await.until("the orphan committed by the other instance", CHECK_DEADLINE,
                () -> inbox.has(withId("orphan")) && inbox.has(withId("second")),
                () -> inbox.describe() + "; checks " + alive.checks + " / dead instance " + dying.checks);
            assertAll(
                () -> assertTrue(alive.checked("orphan") >= 1, "the live instance answered the check"),
                () -> assertEquals(1, count(inbox, "orphan"), "orphan delivered once"),
                () -> assertEquals(2, stored(second, topic), "messages stored on the topic"));
        } finally {
            if (consumer != null) {
                consumer.shutdown();
            }
            second.shutdown();
        }
    }
}
