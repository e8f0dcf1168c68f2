package duet.harness.jmh;

import duet.harness.DuetBarrier;
import duet.harness.DuetNative;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * JMH's main for one duet side: {@code java -cp benchmarks.jar:<duet classes>
 * duet.harness.jmh.DuetJmh <JMH options>}. It runs JMH with one fork (one duet run), {@code
 * DUET_WARMUP} warm-up and {@code DUET_ITERATIONS} measurement iterations, average time in
 * nanoseconds, failing on the first error, and {@link DuetJmhProfiler} on every iteration; the
 * JMH options given (the benchmark, {@code -p}, {@code -w}, {@code -r}, {@code -jvmArgsAppend}
 * ...) stay. It exits with the worker's exit code, read from the samples file the fork wrote.
 */
public final class DuetJmh {
    private DuetJmh() {}

    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String[] args) {
        String samples = System.getenv("DUET_SAMPLES");
        if (samples == null || samples.isEmpty()) {
            System.err.println("UsageError: DUET_SAMPLES is not set: this program must be"
                    + " started by duet (jmh adapter)");
            return DuetNative.EXIT_USAGE;
        }
        String failure;
        try {
            CommandLineOptions given = new CommandLineOptions(args);
            Options options = new OptionsBuilder()
                    .parent(given)
                    .forks(1)
                    .warmupIterations(envInt("DUET_WARMUP", 0))
                    .measurementIterations(envInt("DUET_ITERATIONS", 1))
                    .mode(Mode.AverageTime)
                    .timeUnit(TimeUnit.NANOSECONDS)
                    .shouldFailOnError(true)
                    .addProfiler(DuetJmhProfiler.class)
                    .build();
            new Runner(options).run();
            failure = "JMH ended without running every iteration";
        } catch (CommandLineOptionException | NumberFormatException e) {
            return recorded(samples, DuetNative.EXIT_USAGE, "UsageError: " + e.getMessage());
        } catch (Exception e) {
            failure = "JMH failed: " + e;
        }
        return recorded(samples, DuetNative.EXIT_FAILED, "BenchmarkFailed: " + failure);
    }

    private static int envInt(String name, int fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : Integer.parseInt(value);
    }

    /**
     * The exit code the fork's samples file says: 0 with a done line, its error line's code;
     * else (the fork never wrote one: JMH failed around it) write {@code message} there, abort
     * the barrier and return {@code code}.
     */
    static int recorded(String samples, int code, String message) {
        try {
            List<String> lines = Files.readAllLines(Paths.get(samples), StandardCharsets.UTF_8);
            for (String line : lines) {
                if (line.startsWith("{\"done\": true")) {
                    return DuetNative.EXIT_OK;
                }
                int at = line.indexOf("\"exit_code\": ");
                if (line.startsWith("{\"error\": ") && at >= 0) {
                    String rest = line.substring(at + 13).replaceAll("[^0-9].*", "");
                    return Integer.parseInt(rest);
                }
            }
        } catch (IOException | RuntimeException e) {
            // no samples file or unreadable: the fork never opened it; write it below
        }
        try (FileOutputStream out = new FileOutputStream(samples, true)) {
            out.write(("{\"error\": " + DuetNative.json(message) + ", \"exit_code\": " + code
                    + "}\n").getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            System.err.println("cannot write the samples file " + samples + ": " + e.getMessage());
        }
        String barrier = System.getenv("DUET_BARRIER");
        if (barrier != null && !barrier.isEmpty()) {
            try (DuetBarrier b = DuetBarrier.observe(barrier)) {
                b.abort(DuetBarrier.ABORT_PARTY_FAILED);
            } catch (DuetBarrier.BarrierException e) {
                System.err.println("cannot abort the barrier: " + e.getMessage());
            }
        }
        System.err.println(message);
        return code;
    }
}
