import java.util.concurrent.CountDownLatch;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The stock Java 4.9.8 client, driven by integration/ha (consume_test.go): a push consumer of one group and topic
 * that prints one line per delivered message,
 *
 * <pre>MSG id queueId queueOffset offsetMsgId brokerName</pre>
 *
 * and runs until its standard input closes, then shuts down (persisting its offsets). Offsets are sent to the broker
 * every second instead of every 5 s, so the test waits less.
 *
 * Usage: java HaJavaClient consume NAMESRV TOPIC GROUP
 */
public final class HaJavaClient {
    public static void main(String[] args) throws Exception {
        if (args.length != 4 || !args[0].equals("consume")) {
            System.err.println("usage: HaJavaClient consume NAMESRV TOPIC GROUP");
            System.exit(2);
        }
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(args[3]);
        c.setNamesrvAddr(args[1]);
        c.setInstanceName(args[3] + "-" + ProcessHandle.current().pid());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPersistConsumerOffsetInterval(1000);
        c.subscribe(args[2], "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            StringBuilder b = new StringBuilder();
            for (MessageExt m : msgs) {
                b.append("MSG ").append(m.getUserProperty("haid")).append(' ').append(m.getQueueId()).append(' ')
                    .append(m.getQueueOffset()).append(' ')
                    .append(m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId()).append(' ')
                    .append(m.getBrokerName()).append('\n');
            }
            synchronized (System.out) {
                System.out.print(b);
                System.out.flush();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        System.out.println("STARTED");
        System.out.flush();
        CountDownLatch done = new CountDownLatch(1);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // wait for the end of the input
                }
            } catch (Exception ignored) {
                // the test went away
            }
            done.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();
        done.await();
        c.shutdown();
        System.out.println("STOPPED");
        System.out.flush();
    }
}
