package rmq.it;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A second broker in its own process, started through the launcher script run.sh passes as {@code rmq.brokerLauncher}
 * (rmq, or the Java broker for the oracle run). The script takes {@code NAME CLUSTER PORT STORE_DIR NAMESRV}, runs the
 * broker in the foreground (exec, so this process is the broker) and prints the stock "boot success" line.
 */
final class BrokerProcess {
    /** RMQ_JAVA_BOOT_DEADLINE_S (run.sh's too): a Java broker on a loaded machine may need more than a minute. */
    private static final Duration BOOT_DEADLINE = Duration.ofSeconds(Long.parseLong(System.getenv().getOrDefault("RMQ_JAVA_BOOT_DEADLINE_S", "60")));

    final String name;
    final String cluster;
    final int port;
    final Path storeDir;
    private final Path log;
    private Process process;
    /** Extra environment of the launcher: RMQ_BROKER_EXTRA_CONF (config lines), RMQ_BROKER_JVM_PROPS (Java broker). */
    final java.util.Map<String, String> env = new java.util.HashMap<>();

    BrokerProcess(String name, String cluster, Path storeDir) throws IOException {
        this.name = name;
        this.cluster = cluster;
        this.port = freePortTriple();
        this.storeDir = storeDir;
        this.log = storeDir.resolveSibling(storeDir.getFileName() + ".log");
    }

    static String launcher() {
        String l = System.getProperty("rmq.brokerLauncher", "");
        return l.isBlank() ? null : l;
    }

    String addr() {
        return "127.0.0.1:" + port;
    }

    /** Starts the broker and waits for its boot line. */
    void start() throws IOException, InterruptedException {
        Files.createDirectories(storeDir);
        ProcessBuilder pb = new ProcessBuilder(List.of(launcher(), name, cluster, Integer.toString(port), storeDir.toString(), Clients.namesrv()))
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        pb.environment().putAll(env);
        process = pb.start();
        long end = System.nanoTime() + BOOT_DEADLINE.toNanos();
        while (!Files.readString(log).contains("boot success")) {
            if (!process.isAlive()) {
                throw new AssertionError("broker " + name + " exited with " + process.exitValue() + ":\n" + Files.readString(log));
            }
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("broker " + name + " not up after " + BOOT_DEADLINE + ":\n" + Files.readString(log));
            }
            Thread.sleep(100);
        }
        Files.writeString(log, "");
    }

    /** SIGKILL: the broker neither unregisters nor flushes, as in a crash. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** SIGTERM and wait: the broker unregisters from the name server and shuts down cleanly. */
    void stop() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }

    /** Removes a broker's directory (store, config, log): the suite leaves nothing in the temp directory. */
    static void deleteTree(Path dir) throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                Files.deleteIfExists(p);
            }
        }
    }

    boolean isAlive() {
        return process != null && process.isAlive();
    }

    String output() throws IOException {
        return Files.readString(log);
    }

    /** A port p with p-2 (VIP) and p+1 (HA) free too, below the ephemeral range. */
    private static int freePortTriple() throws IOException {
        for (int attempt = 0; attempt < 200; attempt++) {
            int p = 12000 + (int) (Math.random() * 20000);
            if (free(p) && free(p - 2) && free(p + 1)) {
                return p;
            }
        }
        throw new IOException("no free port triple");
    }

    private static boolean free(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
