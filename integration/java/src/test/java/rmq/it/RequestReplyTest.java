package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.RequestTimeoutException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Request-reply with the stock client: {@code DefaultMQProducer.request} (sync and with a callback) gets the reply a
 * push consumer sends with {@code MessageUtil.createReplyMessage} (SEND_REPLY_MESSAGE_V2), which the broker pushes to
 * the requester (PUSH_REPLY_MESSAGE_TO_CLIENT); a request nobody answers times out.
 */
class RequestReplyTest {
    private static final long REQUEST_TIMEOUT_MS = Clients.DEADLINE.toMillis();

    /** Starts a consumer of topic answering each request with "reply to <body>"; returns once it consumed a first message. */
    private static DefaultMQPushConsumer startResponder(String topic, DefaultMQProducer replier) throws Exception {
        Set<String> seen = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "*", 2);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                seen.add(body);
                if (m.getProperty(MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT) == null) {
                    continue;
                }
                try {
                    Message reply = MessageUtil.createReplyMessage(m, ("reply to " + body).getBytes(StandardCharsets.UTF_8));
                    replier.send(reply);
                } catch (Exception e) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        Await.until("the responder's first message", Clients.DEADLINE, () -> seen.contains("warm-up"), seen::toString);
        return consumer;
    }

    @Test
    void requestGetsTheReply() throws Exception {
        String topic = Clients.unique("request");
        DefaultMQProducer warm = Clients.startProducer();
        DefaultMQProducer replier = Clients.startProducer();
        DefaultMQPushConsumer responder = null;
        DefaultMQProducer requester = null;
        try {
            warm.send(new Message(topic, "warm-up".getBytes(StandardCharsets.UTF_8)));
            responder = startResponder(topic, replier);
            requester = Clients.startProducer();
            for (int i = 0; i < 3; i++) {
                String body = "sync request " + i;
                Message reply = requester.request(new Message(topic, body.getBytes(StandardCharsets.UTF_8)), REQUEST_TIMEOUT_MS);
                assertNotNull(reply, "no reply to " + body);
                assertEquals("reply to " + body, new String(reply.getBody(), StandardCharsets.UTF_8));
                assertEquals("reply", reply.getProperty(MessageConst.PROPERTY_MESSAGE_TYPE));
            }

            Set<String> replies = ConcurrentHashMap.newKeySet();
            Set<String> failures = ConcurrentHashMap.newKeySet();
            for (int i = 0; i < 3; i++) {
                requester.request(new Message(topic, ("async request " + i).getBytes(StandardCharsets.UTF_8)), new RequestCallback() {
                    @Override
                    public void onSuccess(Message message) {
                        replies.add(new String(message.getBody(), StandardCharsets.UTF_8));
                    }

                    @Override
                    public void onException(Throwable e) {
                        failures.add(e.toString());
                    }
                }, REQUEST_TIMEOUT_MS);
            }
            Await.until("three async replies", Clients.DEADLINE, () -> replies.size() == 3 || !failures.isEmpty(),
                () -> replies + " " + failures);
            assertEquals(Set.of(), failures);
            assertEquals(Set.of("reply to async request 0", "reply to async request 1", "reply to async request 2"), replies);

            // Nobody consumes this topic: the request times out on the client.
            String silent = Clients.unique("silent");
            warm.send(new Message(silent, "warm-up".getBytes(StandardCharsets.UTF_8)));
            DefaultMQProducer r = requester;
            assertThrows(RequestTimeoutException.class,
                () -> r.request(new Message(silent, "nobody answers".getBytes(StandardCharsets.UTF_8)), 2_000));
        } finally {
            if (requester != null) {
                requester.shutdown();
            }
            if (responder != null) {
                responder.shutdown();
            }
            replier.shutdown();
            warm.shutdown();
        }
    }
}
