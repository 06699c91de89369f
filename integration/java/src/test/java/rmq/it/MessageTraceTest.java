package rmq.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/**
 * Message trace with the stock client: a producer and a push consumer created with {@code enableMsgTrace} write their
 * Pub and SubBefore/SubAfter records to RMQ_SYS_TRACE_TOPIC (the broker answers sends with TRACE_ON=true), and the
 * stock {@code mqadmin queryMsgTraceById} shows both.
 */
class MessageTraceTest {
    @Test
    void traceShowsTheProducerAndTheConsumer() throws Exception {
        String topic = Clients.unique("traced");
        String producerGroup = Clients.unique("tracepg");
        String consumerGroup = Clients.unique("tracecg");
        DefaultMQProducer producer = new DefaultMQProducer(producerGroup, true);
        producer.setNamesrvAddr(Clients.namesrv());
        producer.setInstanceName(Clients.unique("trace-producer"));
        producer.setSendMsgTimeout(10_000);
        producer.start();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(consumerGroup, true);
        try {
            SendResult sent = producer.send(new Message(topic, "TagT", "trace-key", "traced body".getBytes(StandardCharsets.UTF_8)));
            assertTrue(sent.isTraceOn(), "the broker turned tracing off in its send reply");

            Inbox inbox = new Inbox();
            consumer.setNamesrvAddr(Clients.namesrv());
            consumer.setInstanceName(Clients.unique("trace-consumer"));
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener(inbox);
            consumer.start();
            Await.until("the traced message", Clients.DEADLINE, () -> inbox.has(m -> m.getMsgId().equals(sent.getMsgId())),
                inbox::describe);

            AtomicReference<MQAdmin.Output> last = new AtomicReference<>();
            MQAdmin.runUntil(Clients.DEADLINE, o -> {
                last.set(o);
                return o.out().contains("Pub") && o.out().contains(producerGroup) && o.out().contains("Sub ")
                    && o.out().contains(consumerGroup);
            }, "queryMsgTraceById", "-i", sent.getMsgId());
            String out = last.get().out();
            assertTrue(out.contains("#ProducerGroup") && out.contains("#ConsumerGroup") && out.contains("success"), out);
            // Cost times are the clients' measurements.
            OracleOutput.write(getClass(), "queryMsgTraceById", out.replaceAll("\\b\\d+ms\\b", "Nms"));
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
    }
}
