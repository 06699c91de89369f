package rmq.it.container;

import java.io.IOException;
import java.util.List;

import org.testcontainers.containers.GenericContainer;
import org.testcontainers.utility.DockerImageName;

import com.github.dockerjava.api.command.InspectContainerResponse;

/**
 * The RocketMQ container as the widely copied Testcontainers recipe writes it (Debezium's RocketMqContainer,
 * copied by Brave/Zipkin, StreamPipes and others), pointed at the rmq image instead of apache/rocketmq and
 * otherwise doing exactly what the recipe does:
 *
 * <ul>
 *   <li>exposes 9876 (name server), 10911 (broker) and 10909 (broker VIP port);</li>
 *   <li>runs {@code sh -c "#!/bin/bash\n./mqnamesrv &\n./mqbroker -n localhost:9876"} in the image's working
 *       directory, and waits with Testcontainers' default strategy (every exposed port listening);</li>
 *   <li>once started, runs in the container, with {@code /bin/sh -c}, the three {@code ./mqadmin
 *       updateBrokerConfig -b localhost:10911} calls joined by {@code &&}: {@code brokerIP1} = the host
 *       Testcontainers reaches containers on, {@code listenPort} = the port 10911 is mapped to, then
 *       {@code brokerPermission} = 6; a non-zero exit fails the start.</li>
 * </ul>
 *
 * Clients then use {@link #getNamesrvAddr()}: the name server hands out the broker at host:mappedPort.
 */
public class RecipeContainer extends GenericContainer<RecipeContainer> {
    public static final int NAMESRV_PORT = 9876;
    public static final int BROKER_PORT = 10911;

    public RecipeContainer(DockerImageName image) {
        super(image);
        withExposedPorts(NAMESRV_PORT, BROKER_PORT, BROKER_PORT - 2);
    }

    @Override
    protected void configure() {
        withCommand("sh", "-c", "#!/bin/bash\n" + "./mqnamesrv &\n" + "./mqbroker -n localhost:" + NAMESRV_PORT);
    }

    @Override
    protected void containerIsStarted(InspectContainerResponse containerInfo) {
        String command = String.join(" && ", List.of(
                updateBrokerConfig("brokerIP1", getHost()),
                updateBrokerConfig("listenPort", getMappedPort(BROKER_PORT)),
                updateBrokerConfig("brokerPermission", 6)));
        ExecResult result;
        try {
            result = execInContainer("/bin/sh", "-c", command);
        } catch (IOException | InterruptedException e) {
            throw new RuntimeException(e);
        }
        if (result.getExitCode() != 0) {
            throw new IllegalStateException(result.toString());
        }
    }

    private static String updateBrokerConfig(String key, Object value) {
        return "./mqadmin updateBrokerConfig -b localhost:" + BROKER_PORT + " -k " + key + " -v " + value;
    }

    public String getNamesrvAddr() {
        return getHost() + ":" + getMappedPort(NAMESRV_PORT);
    }
}
