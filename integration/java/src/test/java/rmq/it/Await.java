package rmq.it;

import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Polls a condition until it holds or a deadline passes; the sleep only paces the polling. */
final class Await {
    private static final long POLL_MILLIS = 50;

    private Await() {
    }

    static void until(String what, Duration deadline, BooleanSupplier condition, Supplier<String> state)
        throws InterruptedException {
        long end = System.nanoTime() + deadline.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("timed out after " + deadline.toSeconds() + " s waiting for " + what + "; state: " + state.get());
            }
            Thread.sleep(POLL_MILLIS);
        }
    }
}
