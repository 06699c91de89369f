package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Message lookups through the client API: VIEW_MESSAGE_BY_ID (viewMessage with the broker's offsetMsgId) and
 * QUERY_MESSAGE by key and by unique key (the client's msgId), which the broker serves from its key index.
 */
class QueryAndViewTest {

    @Test
    void viewAndQueryFindTheStoredMessage() throws Exception {
        String topic = Clients.unique("query");
        DefaultMQProducer producer = Clients.startProducer();
        try {
            List<SendResult> sent = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                Message m = new Message(topic, "TagQ", ("body " + i).getBytes(StandardCharsets.UTF_8));
                m.setKeys(List.of("order-" + i, i % 2 == 0 ? "even" : "odd"));
                m.putUserProperty("seq", Integer.toString(i));
                SendResult r = producer.send(m);
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
                sent.add(r);
            }
            SendResult third = sent.get(2);

            MessageExt viewed = producer.viewMessage(third.getOffsetMsgId());
            assertAll("viewMessage(offsetMsgId)",
                () -> assertEquals(topic, viewed.getTopic()),
                () -> assertArrayEquals("body 2".getBytes(StandardCharsets.UTF_8), viewed.getBody()),
                () -> assertEquals("TagQ", viewed.getTags()),
                () -> assertEquals("order-2 even", viewed.getKeys()),
                () -> assertEquals("2", viewed.getUserProperty("seq")),
                () -> assertEquals(third.getQueueOffset(), viewed.getQueueOffset()),
                () -> assertEquals(third.getMessageQueue().getQueueId(), viewed.getQueueId()));

            // The broker indexes keys as it dispatches the commitlog, after the send returns (as the stock
            // broker does), so the first lookup may come too early.
            Await.until("the key index to cover the last send", Clients.DEADLINE, () -> {
                try {
                    return !producer.queryMessage(topic, "order-4", 32, 0, Long.MAX_VALUE).getMessageList().isEmpty();
                } catch (MQClientException | InterruptedException e) {
                    return false;
                }
            }, () -> "");
            QueryResult byKey = producer.queryMessage(topic, "order-3", 32, 0, Long.MAX_VALUE);
            assertEquals(List.of("body 3"), bodies(byKey), "queryMessage(order-3)");
            QueryResult evens = producer.queryMessage(topic, "even", 32, 0, Long.MAX_VALUE);
            assertEquals(List.of("body 0", "body 2", "body 4"), bodies(evens).stream().sorted().collect(Collectors.toList()),
                "queryMessage(even)");
            assertThrows(MQClientException.class, () -> producer.queryMessage(topic, "no-such-key", 32, 0, Long.MAX_VALUE),
                "a key no message has");

            MessageExt byUniq = producer.getDefaultMQProducerImpl().queryMessageByUniqKey(topic, sent.get(4).getMsgId());
            assertEquals("body 4", new String(byUniq.getBody(), StandardCharsets.UTF_8), "queryMessageByUniqKey");
            assertEquals(sent.get(4).getMsgId(), byUniq.getMsgId());
        } finally {
            producer.shutdown();
        }
    }

    private static List<String> bodies(QueryResult r) {
        return r.getMessageList().stream().map(m -> new String(m.getBody(), StandardCharsets.UTF_8)).collect(Collectors.toList());
    }
}
