package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs stock mqadmin subcommands (rocketmq-tools 4.9.8, or 5.3.3 in the admin5 profile, {@code MQAdminStartup})
 * against the broker under test.
 *
 * <p>{@link #run} calls {@code MQAdminStartup.main0} in this JVM with System.out and System.err captured: a JVM per
 * command would cost seconds each. main0 never calls System.exit on a parsed command line (it catches every
 * exception and prints its stack trace), so a failed subcommand shows up as a stack trace on the captured streams,
 * which {@link Output#assertOk} rejects. {@link #runProcess} runs one command as the real tool does, in its own JVM,
 * to pin the exit status.
 *
 * <p>4.9.8's mqadmin refuses to run any subcommand without {@code $ROCKETMQ_HOME/conf/logback_tools.xml}, which only
 * the binary distribution ships; this class writes one under the {@code rocketmq.home.dir} the pom sets.
 */
final class MQAdmin {
    /** What one command printed. */
    record Output(List<String> args, String out, String err, int exitCode) {
        /** The command printed no exception, and, for a separate JVM, exited 0. */
        /** No exception printed and, for a separate JVM, exit status 0. */
        boolean ok() {
            String all = out + err;
            return !(all.contains("Exception") || all.contains("\tat org.apache")) && exitCode == 0;
        }

        Output assertOk() {
            String all = out + err;
            assertFalse(all.contains("Exception") || all.contains("\tat org.apache"),
                () -> "mqadmin " + args + " failed:\n" + this);
            assertEquals(0, exitCode, () -> "mqadmin " + args + " exit status:\n" + this);
            return this;
        }

        List<String> lines() {
            return Arrays.asList(out.split("\\R"));
        }

        @Override
        public String toString() {
            return "---- stdout ----\n" + out + "\n---- stderr ----\n" + err;
        }
    }

    private static final Object LOCK = new Object();
    private static boolean homeReady;

    private MQAdmin() {
    }

    /** Writes $ROCKETMQ_HOME/conf/logback_tools.xml (tools log into $ROCKETMQ_HOME/logs/tools.log). */
    static Path home() {
        String dir = System.getProperty("rocketmq.home.dir");
        if (dir == null || dir.isBlank()) {
            throw new IllegalStateException("system property rocketmq.home.dir is not set (the pom sets it)");
        }
        Path home = Path.of(dir);
        synchronized (LOCK) {
            if (!homeReady) {
                try {
                    Files.createDirectories(home.resolve("conf"));
                    Files.writeString(home.resolve("conf/logback_tools.xml"), """
                        <?xml version="1.0" encoding="UTF-8"?>
                        <configuration>
                          <appender name="FILE" class="ch.qos.logback.core.FileAppender">
                            <file>%s/logs/tools.log</file>
                            <encoder><pattern>%%d{HH:mm:ss.SSS} %%-5level %%logger{36} - %%msg%%n</pattern></encoder>
                          </appender>
                          <root level="INFO"><appender-ref ref="FILE"/></root>
                        </configuration>
                        """.formatted(home.toAbsolutePath()));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                homeReady = true;
            }
        }
        return home;
    }

    private static List<String> withNamesrv(String... args) {
        List<String> all = new ArrayList<>(Arrays.asList(args));
        all.add("-n");
        all.add(Clients.namesrv());
        return all;
    }

    /** Runs one subcommand in this JVM; {@code -n <namesrv>} is appended. */
    /**
     * Runs a command until it succeeds and {@code done} accepts its output, or the deadline passes (then the last
     * output must pass assertOk). Used where the answer depends on client state the broker learns asynchronously: a
     * Java client whose sync call timed out closes its channel, and the broker forgets it until its next heartbeat.
     */
    static Output runUntil(Duration deadline, java.util.function.Predicate<Output> done, String... args)
        throws InterruptedException {
        long end = System.nanoTime() + deadline.toNanos();
        while (true) {
            Output o = run(args);
            if ((o.ok() && done.test(o)) || System.nanoTime() - end > 0) {
                return o.assertOk();
            }
            Thread.sleep(500);
        }
    }

    static Output run(String... args) {
        return runHook(null, args);
    }

    /**
     * {@link #run} with every request of the command signed by hook (mqadmin's own rpcHook argument of
     * {@code main0}; null: the tools.yml credentials if that file exists, as the real tool does).
     */
    static Output runHook(RPCHook hook, String... args) {
        home();
        List<String> all = withNamesrv(args);
        synchronized (LOCK) {
            PrintStream oldOut = System.out;
            PrintStream oldErr = System.err;
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                 PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
                System.setOut(o);
                System.setErr(e);
                MQAdminStartup.main0(all.toArray(new String[0]), hook);
            } finally {
                System.setOut(oldOut);
                System.setErr(oldErr);
            }
            Output result = new Output(all, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8), 0);
            oldOut.println("mqadmin " + String.join(" ", all) + "\n" + result.out.stripTrailing());
            return result;
        }
    }

    /**
     * {@link #run} with the ACL credentials mqadmin reads from {@code $ROCKETMQ_HOME/conf/tools.yml}
     * (accessKey, secretKey): every request of the command is signed by AclClientRPCHook. The file exists only
     * while the command runs.
     */
    static Output runSigned(String accessKey, String secretKey, String... args) {
        Path tools = home().resolve("conf/tools.yml");
        synchronized (LOCK) {
            try {
                Files.writeString(tools, "accessKey: " + accessKey + "\nsecretKey: " + secretKey + "\n");
                return run(args);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                try {
                    Files.deleteIfExists(tools);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
    }

    /** Runs one subcommand as its own JVM, as bin/mqadmin would, and reports the exit status. */
    static Output runProcess(String... args) throws IOException, InterruptedException {
        Path home = home();
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> cmd = new ArrayList<>(List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
            "-Drocketmq.home.dir=" + home.toAbsolutePath(),
            "-Drocketmq.serialize.type=" + Clients.serializeType(),
            "-Drocketmq.client.logRoot=" + home.resolve("logs").toAbsolutePath(),
            "-cp", cp, MQAdminStartup.class.getName()));
        List<String> all = withNamesrv(args);
        cmd.addAll(all);
        Path outFile = Files.createTempFile("mqadmin", ".out");
        Path errFile = Files.createTempFile("mqadmin", ".err");
        try {
            Process p = new ProcessBuilder(cmd).redirectOutput(outFile.toFile()).redirectError(errFile.toFile()).start();
            if (!p.waitFor(Clients.DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("mqadmin " + all + " still running after " + Clients.DEADLINE);
            }
            return new Output(all, Files.readString(outFile), Files.readString(errFile), p.exitValue());
        } finally {
            Files.deleteIfExists(outFile);
            Files.deleteIfExists(errFile);
        }
    }
}
