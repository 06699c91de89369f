package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/** Plain sends (sync, async, oneway, batch) consumed by a concurrent push consumer from the first offset. */
class SendReceiveTest {

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String hostOf(java.net.SocketAddress addr) {
        return ((InetSocketAddress) addr).getAddress().getHostAddress();
    }

    @Test
    void syncSendIsDeliveredWithBodyTagsKeysPropertyAndIds() throws Exception {
        String topic = Clients.unique("sync");
        byte[] body = utf8("sync body \u00e9\u2713 " + topic);
        Message msg = new Message(topic, "TagA", body);
        msg.setKeys(List.of("order-1", "order-2"));
        msg.putUserProperty("color", "blue");

        DefaultMQProducer producer = Clients.startProducer();
        SendResult sent;
        long before = System.currentTimeMillis();
        try {
            sent = producer.send(msg);
        } finally {
            producer.shutdown();
        }
        long after = System.currentTimeMillis();
        assertEquals(SendStatus.SEND_OK, sent.getSendStatus(), () -> "send result " + sent);
        assertNotNull(sent.getMsgId(), "client msgId (UNIQ_KEY)");
        assertNotNull(sent.getOffsetMsgId(), "broker msgId (offsetMsgId)");
        assertEquals(topic, sent.getMessageQueue().getTopic());

        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "*", 2);
        consumer.registerMessageListener(inbox);
        consumer.start();
        try {
            Await.until("the sync message", Clients.DEADLINE,
                () -> inbox.has(m -> sent.getMsgId().equals(m.getMsgId())), inbox::describe);
        } finally {
            consumer.shutdown();
        }

        MessageExt got = inbox.first(m -> sent.getMsgId().equals(m.getMsgId())).orElseThrow();
        MessageClientExt client = assertInstanceOf(MessageClientExt.class, got);
        assertAll(
            () -> assertEquals(topic, got.getTopic(), "topic"),
            () -> assertArrayEquals(body, got.getBody(), "body"),
            () -> assertEquals("TagA", got.getTags(), "tags"),
            () -> assertEquals("order-1 order-2", got.getKeys(), "keys"),
            () -> assertEquals("blue", got.getUserProperty("color"), "user property"),
            () -> assertEquals(sent.getOffsetMsgId(), client.getOffsetMsgId(),
                "offsetMsgId (store host + commitlog offset) in the send response vs the pulled record"),
            () -> assertEquals(sent.getMessageQueue().getBrokerName(), got.getBrokerName(), "brokerName"),
            () -> assertEquals(sent.getMessageQueue().getQueueId(), got.getQueueId(), "queueId"),
            () -> assertEquals(sent.getQueueOffset(), got.getQueueOffset(), "queueOffset"),
            () -> assertEquals(0, got.getReconsumeTimes(), "reconsumeTimes"),
            () -> assertTrue(got.getBornTimestamp() >= before && got.getBornTimestamp() <= after,
                "bornTimestamp " + got.getBornTimestamp() + " not within the send call [" + before + "," + after + "]"),
            () -> assertTrue(got.getStoreTimestamp() >= got.getBornTimestamp(),
                "storeTimestamp " + got.getStoreTimestamp() + " before bornTimestamp " + got.getBornTimestamp()),
            () -> assertEquals("127.0.0.1", hostOf(got.getBornHost()), "bornHost"),
            () -> assertEquals("127.0.0.1", hostOf(got.getStoreHost()), "storeHost"),
            () -> assertTrue(got.getCommitLogOffset() >= 0, "commitLogOffset " + got.getCommitLogOffset()));
    }

    @Test
    void asyncAndOnewaySendsAreDelivered() throws Exception {
        String topic = Clients.unique("async");
        byte[] asyncBody = utf8("async " + topic);
        byte[] onewayBody = utf8("oneway " + topic);
        CompletableFuture<SendResult> asyncResult = new CompletableFuture<>();

        DefaultMQProducer producer = Clients.startProducer();
        try {
            producer.send(new Message(topic, "TagAsync", "async-key", asyncBody), new SendCallback() {
                @Override
                public void onSuccess(SendResult sendResult) {
                    asyncResult.complete(sendResult);
                }

                @Override
                public void onException(Throwable e) {
                    asyncResult.completeExceptionally(e);
                }
            });
            // The async send auto-creates the topic; waiting for it keeps the oneway send (which never
            // reports a failure) from racing the creation.
            SendResult sent = asyncResult.get(Clients.DEADLINE.toSeconds(), TimeUnit.SECONDS);
            assertEquals(SendStatus.SEND_OK, sent.getSendStatus(), () -> "async send result " + sent);
            producer.sendOneway(new Message(topic, "TagOneway", "oneway-key", onewayBody));
        } finally {
            producer.shutdown();
        }
        SendResult sent = asyncResult.get();

        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "*", 2);
        consumer.registerMessageListener(inbox);
        consumer.start();
        try {
            Await.until("the async and the oneway message", Clients.DEADLINE,
                () -> inbox.has(m -> Arrays.equals(asyncBody, m.getBody()))
                    && inbox.has(m -> Arrays.equals(onewayBody, m.getBody())),
                inbox::describe);
        } finally {
            consumer.shutdown();
        }

        MessageExt async = inbox.first(m -> Arrays.equals(asyncBody, m.getBody())).orElseThrow();
        MessageExt oneway = inbox.first(m -> Arrays.equals(onewayBody, m.getBody())).orElseThrow();
        assertAll(
            () -> assertEquals(sent.getMsgId(), async.getMsgId(), "async msgId"),
            () -> assertEquals(sent.getQueueOffset(), async.getQueueOffset(), "async queueOffset"),
            () -> assertEquals("TagAsync", async.getTags(), "async tags"),
            () -> assertEquals("async-key", async.getKeys(), "async keys"),
            () -> assertEquals("TagOneway", oneway.getTags(), "oneway tags"),
            () -> assertEquals("oneway-key", oneway.getKeys(), "oneway keys"),
            () -> assertNotNull(oneway.getMsgId(), "oneway msgId (UNIQ_KEY set by the client)"));
    }

    @Test
    void batchSendIsDeliveredInOrderWithPerMessageIdsAndProperties() throws Exception {
        String topic = Clients.unique("batch");
        int size = 8;
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            Message m = new Message(topic, "TagBatch", "batch-" + i, utf8("batch " + i + " " + topic));
            m.putUserProperty("idx", Integer.toString(i));
            batch.add(m);
        }

        DefaultMQProducer producer = Clients.startProducer();
        SendResult sent;
        try {
            sent = producer.send(batch);
        } finally {
            producer.shutdown();
        }
        assertEquals(SendStatus.SEND_OK, sent.getSendStatus(), () -> "batch send result " + sent);
        String[] msgIds = sent.getMsgId().split(",");
        String[] offsetMsgIds = sent.getOffsetMsgId().split(",");
        assertEquals(size, msgIds.length, () -> "client msgIds " + sent.getMsgId());
        assertEquals(size, offsetMsgIds.length,
            () -> "broker msgId must list every stored message's offsetMsgId, got " + sent.getOffsetMsgId());

        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "*", 2);
        consumer.registerMessageListener(inbox);
        consumer.start();
        try {
            Await.until("all " + size + " batch messages", Clients.DEADLINE,
                () -> inbox.all().stream().map(MessageExt::getMsgId).distinct().count() >= size, inbox::describe);
        } finally {
            consumer.shutdown();
        }

        for (int i = 0; i < size; i++) {
            int idx = i;
            MessageExt got = inbox.first(m -> msgIds[idx].equals(m.getMsgId()))
                .orElseThrow(() -> new AssertionError("batch member " + idx + " (msgId " + msgIds[idx]
                    + ") not delivered; " + inbox.describe()));
            assertAll("batch member " + idx,
                () -> assertArrayEquals(utf8("batch " + idx + " " + topic), got.getBody(), "body"),
                () -> assertEquals("batch-" + idx, got.getKeys(), "keys"),
                () -> assertEquals("TagBatch", got.getTags(), "tags"),
                () -> assertEquals(Integer.toString(idx), got.getUserProperty("idx"), "user property"),
                () -> assertEquals(sent.getMessageQueue().getQueueId(), got.getQueueId(), "queueId"),
                () -> assertEquals(sent.getQueueOffset() + idx, got.getQueueOffset(),
                    "queueOffset (the response carries the first member's offset)"),
                () -> assertEquals(offsetMsgIds[idx], ((MessageClientExt) got).getOffsetMsgId(), "offsetMsgId"));
        }
    }
}
