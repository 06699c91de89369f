package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/** The 5.x remoting client (rocketmq-client 5.3.x): sends of every kind, push and lite-pull consumption. */
class Client5SendReceiveTest {

    @Test
    void runsTheFiveXClient() {
        assertTrue(MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION).startsWith("V5_"),
            () -> "client5 profile runs " + MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION));
    }

    @Test
    void syncAsyncOnewayAndBatchSendsArePushedAndPulled() throws Exception {
        String topic = Clients.unique("c5");
        Set<String> ids = new HashSet<>();
        DefaultMQProducer producer = Clients.startProducer();
        try {
            Message sync = new Message(topic, "TagS", "c5-sync", "sync".getBytes(StandardCharsets.UTF_8));
            sync.putUserProperty("color", "green");
            SendResult r = producer.send(sync);
            assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
            assertNotNull(r.getOffsetMsgId(), r::toString);
            assertEquals(1, r.getMsgId().split(",").length, r::toString);
            ids.add(r.getMsgId());

            CompletableFuture<SendResult> async = new CompletableFuture<>();
            producer.send(new Message(topic, "TagA", "c5-async", "async".getBytes(StandardCharsets.UTF_8)), new SendCallback() {
                @Override
                public void onSuccess(SendResult sendResult) {
                    async.complete(sendResult);
                }

                @Override
                public void onException(Throwable e) {
                    async.completeExceptionally(e);
                }
            });
            SendResult ar = async.get(Clients.DEADLINE.toSeconds(), TimeUnit.SECONDS);
            assertEquals(SendStatus.SEND_OK, ar.getSendStatus(), ar::toString);
            ids.add(ar.getMsgId());

            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                batch.add(new Message(topic, "TagB", "c5-batch-" + i, ("batch " + i).getBytes(StandardCharsets.UTF_8)));
            }
            SendResult br = producer.send(batch);
            assertEquals(SendStatus.SEND_OK, br.getSendStatus(), br::toString);
            assertEquals(4, br.getMsgId().split(",").length, br::toString);
            // The 5.x client also gives the batch itself a UNIQ_KEY, which the broker (stock and rmq alike) appends
            // to every member's properties, where it overrides the member's own: consumers see the batch's id on
            // each member. So members are matched by key, not by the ids the send returned.

            producer.sendOneway(new Message(topic, "TagO", "c5-oneway", "oneway".getBytes(StandardCharsets.UTF_8)));
        } finally {
            producer.shutdown();
        }

        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "*", 2);
        consumer.registerMessageListener(inbox);
        consumer.start();
        try {
            Set<String> keys = Set.of("c5-sync", "c5-async", "c5-oneway", "c5-batch-0", "c5-batch-1", "c5-batch-2", "c5-batch-3");
            Await.until("all sends pushed", Clients.DEADLINE,
                () -> inbox.all().stream().map(MessageExt::getKeys).collect(Collectors.toSet()).containsAll(keys)
                    && inbox.all().stream().map(MessageExt::getMsgId).collect(Collectors.toSet()).containsAll(ids),
                () -> "sent " + ids + "; " + inbox.describe());
        } finally {
            consumer.shutdown();
        }
        MessageExt got = inbox.first(m -> "c5-sync".equals(m.getKeys())).orElseThrow();
        assertAll(
            () -> assertEquals("TagS", got.getTags()),
            () -> assertEquals("green", got.getUserProperty("color")),
            () -> assertEquals("sync", new String(got.getBody(), StandardCharsets.UTF_8)));
    }

    @Test
    void litePullConsumerPullsWithTheFiveXCode() throws Exception {
        // The 5.x lite pull consumer pulls with LITE_PULL_MESSAGE (361), which a 4.x Java broker answers with
        // REQUEST_CODE_NOT_SUPPORTED: it never gets a message there. rmq serves the code.
        assumeFalse(Clients.againstJava4Broker(), "a 4.x Java broker does not serve LITE_PULL_MESSAGE");
        String topic = Clients.unique("c5lite");
        DefaultMQProducer producer = Clients.startProducer();
        try {
            for (int i = 0; i < 4; i++) {
                SendResult r = producer.send(new Message(topic, i % 2 == 0 ? "TagB" : "TagX", "c5-batch-" + i,
                    ("lite " + i).getBytes(StandardCharsets.UTF_8)));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
            }
        } finally {
            producer.shutdown();
        }
        DefaultLitePullConsumer lite = new DefaultLitePullConsumer(Clients.unique("c5lite"));
        lite.setNamesrvAddr(Clients.namesrv());
        lite.setInstanceName(Clients.unique("c5lite"));
        lite.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        lite.subscribe(topic, "TagB");
        lite.start();
        try {
            Set<String> pulled = new HashSet<>();
            Await.until("the TagB messages through lite pull", Clients.DEADLINE, () -> {
                for (MessageExt m : lite.poll(500)) {
                    assertEquals("TagB", m.getTags());
                    pulled.add(m.getKeys());
                }
                return pulled.size() >= 2;
            }, pulled::toString);
            assertEquals(Set.of("c5-batch-0", "c5-batch-2"), pulled);
        } finally {
            lite.shutdown();
        }
    }
}
