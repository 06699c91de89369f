package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * A send to an unknown topic goes through the TBW102 route: the broker creates the topic with
 * min(client defaultTopicQueueNums = 4, TBW102 write queues) queues and registers it with the name server.
 */
class AutoCreateTopicTest {

    private static final String CREATE_TOPIC_KEY = "TBW102";

    @Test
    void sendToUnknownTopicCreatesIt() throws Exception {
        String topic = Clients.unique("autocreate");
        DefaultMQProducer producer = Clients.startProducer();
        try {
            List<MessageQueue> template = producer.fetchPublishMessageQueues(CREATE_TOPIC_KEY);
            assertFalse(template.isEmpty(), "the name server has no writable queue for " + CREATE_TOPIC_KEY);
            assertThrows(MQClientException.class, () -> producer.fetchPublishMessageQueues(topic),
                "the name server already knows the fresh topic " + topic);

            SendResult first = producer.send(new Message(topic, "TagNew", "new-1", "first".getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, first.getSendStatus(), () -> "first send " + first);
            assertEquals(topic, first.getMessageQueue().getTopic());

            AtomicReference<Object> lastLookup = new AtomicReference<>();
            Await.until("a name-server route for " + topic, Clients.DEADLINE, () -> {
                try {
                    List<MessageQueue> mqs = producer.fetchPublishMessageQueues(topic);
                    lastLookup.set(mqs);
                    return !mqs.isEmpty();
                } catch (MQClientException e) {
                    lastLookup.set(e);
                    return false;
                }
            }, () -> "last lookup: " + lastLookup.get());
            List<MessageQueue> created = producer.fetchPublishMessageQueues(topic);
            int templateQueues = (int) template.stream().filter(q -> q.getBrokerName().equals(first.getMessageQueue().getBrokerName())).count();
            assertAll(
                () -> assertEquals(Math.min(producer.getDefaultTopicQueueNums(), templateQueues), created.size(),
                    "queue count of the created topic: " + created),
                () -> assertTrue(created.stream().allMatch(q -> q.getTopic().equals(topic)), "topics: " + created),
                () -> assertTrue(created.contains(first.getMessageQueue()),
                    "the first send's queue " + first.getMessageQueue() + " is in " + created));

            SendResult second = producer.send(new Message(topic, "TagNew", "new-2", "second".getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, second.getSendStatus(), () -> "second send " + second);
        } finally {
            producer.shutdown();
        }
    }
}
