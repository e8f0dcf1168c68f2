package duet.harness;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.nio.charset.StandardCharsets;

/**
 * The native-benchmark contract (docs/barrier-protocol.md, "Native programs") for the JVM: the
 * {@code DUET_*} environment in, the samples file out, exactly as {@code duet_native_*} of
 * duet_barrier.h. Exit codes are the worker's ({@code EXIT_*}).
 *
 * <pre>
 *   DuetNative ctx = DuetNative.open();        // throws DuetNative.Failure (exitCode, message)
 *   while (ctx.begin()) { work(); ctx.end(); }
 *   System.exit(ctx.close());
 * </pre>
 *
 * A tool that measures itself (JMH) calls {@link #end(long, long)} with its own time per
 * operation instead of the iteration's wall time.
 */
public final class DuetNative {
    public static final int EXIT_OK = 0;
    public static final int EXIT_USAGE = 2;
    public static final int EXIT_FAILED = 3;
    public static final int EXIT_TIMEOUT = 4;
    public static final int EXIT_ABORTED = 5;
    public static final int EXIT_BARRIER = 6;

    /** A failure already recorded (error line, abort): exit with {@link #exitCode}. */
    public static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;
        public final int exitCode;

        Failure(int exitCode, String message) {
            super(message);
            this.exitCode = exitCode;
        }
    }

    private final FileOutputStream samples;
    private DuetBarrier barrier;
    public final String side;
    public final long warmup;
    public final long iterations;
    public final long timeoutNs;
    private long done;
    private boolean inIteration;
    private long startNs;
    private Map<String, Long> cpuStart;
    private Map<String, Long> runqStart;
    private int exitCode = EXIT_OK;
    private String doneExtra = "";

    private DuetNative(FileOutputStream samples, String side, long warmup, long iterations,
            long timeoutNs) {
        this.samples = samples;
        this.side = side;
        this.warmup = warmup;
        this.iterations = iterations;
        this.timeoutNs = timeoutNs;
    }

    // -- opening ----------------------------------------------------------------------------

    /** Read DUET_* from the environment, write the samples header, attach, cross over. */
    public static DuetNative open() throws Failure {
        String path = System.getenv("DUET_SAMPLES");
        if (path == null || path.isEmpty()) {
            throw new Failure(EXIT_USAGE, "UsageError: DUET_SAMPLES is not set: this program"
                    + " must be started by duet (native benchmark)");
        }
        FileOutputStream out;
        try {
            out = new FileOutputStream(path);
        } catch (IOException e) {
            throw new Failure(EXIT_USAGE,
                    "OSError: cannot open the samples file " + path + ": " + e.getMessage());
        }
        String side = System.getenv("DUET_SIDE");
        DuetNative ctx = new DuetNative(out, side == null ? "" : side,
                envLong(out, "DUET_WARMUP", false, 0),
                envLong(out, "DUET_ITERATIONS", true, 0),
                envLong(out, "DUET_TIMEOUT_NS", false, 60_000_000_000L));
        ctx.line("{\"duet_samples\": 1, \"side\": " + json(ctx.side) + ", \"pid\": "
                + ProcessHandle.current().pid() + "}");
        if (side == null || side.isEmpty()) {
            throw ctx.failed(EXIT_USAGE, "UsageError: DUET_SIDE is not set: this program must"
                    + " be started by duet (native benchmark)", 0);
        }
        long slot = envLong(out, "DUET_SLOT", true, 0);
        String barrierPath = System.getenv("DUET_BARRIER");
        if (barrierPath == null || barrierPath.isEmpty()) {
            throw ctx.failed(EXIT_USAGE, "UsageError: DUET_BARRIER is not set: this program"
                    + " must be started by duet (native benchmark)", 0);
        }
        if (slot >= DuetBarrier.MAX_PARTIES) {
            throw ctx.failed(EXIT_USAGE, "UsageError: DUET_SLOT=" + slot + " is out of range", 0);
        }
        try {
            ctx.barrier = DuetBarrier.attach(barrierPath, (int) slot);
        } catch (DuetBarrier.BarrierException e) {
            throw ctx.failed(EXIT_BARRIER, "BarrierFileError: " + e.getMessage(), 0);
        }
        ctx.place();
        return ctx;
    }

    private static long envLong(FileOutputStream out, String name, boolean required,
            long fallback) throws Failure {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            if (!required) {
                return fallback;
            }
            throw earlyFailure(out, "UsageError: " + name + " is not set: this program must be"
                    + " started by duet (native benchmark)");
        }
        try {
            long parsed = Long.parseLong(value);
            if (parsed >= 0 && value.charAt(0) != '+') {
                return parsed;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw earlyFailure(out, "UsageError: " + name + "=\"" + value
                + "\" is not a non-negative integer");
    }

    private static Failure earlyFailure(FileOutputStream out, String message) {
        try {
            out.write(("{\"error\": " + json(message) + ", \"exit_code\": " + EXIT_USAGE + "}\n")
                    .getBytes(StandardCharsets.UTF_8));
            out.close();
        } catch (IOException e) {
            // the message still goes to the exception
        }
        return new Failure(EXIT_USAGE, message);
    }

    /** Crossover when DUET_CPUS is set, as duet_native_open does. */
    private void place() throws Failure {
        String list = System.getenv("DUET_CPUS");
        if (list == null || list.isEmpty()) {
            return;
        }
        String[] words = list.split(",", -1);
        int[] cpus = new int[words.length];
        try {
            for (int i = 0; i < words.length; i++) {
                cpus[i] = Integer.parseInt(words[i]);
                if (cpus[i] < 0 || words[i].charAt(0) == '+') {
                    throw new NumberFormatException(words[i]);
                }
            }
        } catch (NumberFormatException e) {
            throw failed(EXIT_USAGE, "UsageError: DUET_CPUS=\"" + list + "\" is not a list of CPU"
                    + " numbers separated by commas", DuetBarrier.ABORT_PARTY_FAILED);
        }
        try {
            barrier.cross(cpus, System.getenv("DUET_TASKS"));
        } catch (DuetBarrier.BarrierException e) {
            throw failed(EXIT_BARRIER, "BarrierError: " + e.getMessage(),
                    DuetBarrier.ABORT_PARTY_FAILED);
        }
    }

    // -- iterations -------------------------------------------------------------------------

    /**
     * This JVM's CPU time so far per thread, in nanoseconds (thread id -> time): {@code
     * sum_exec_runtime}, the first field of {@code /proc/self/task/TID/schedstat}, so every
     * thread counts, the JIT compilers and the GC included. The kernel brings a running
     * thread's figure up to date only at a tick or a switch, so the calling thread, running now,
     * is read by {@code getCurrentThreadCpuTime} (exact) instead; the others are read when they
     * are idle (JMH's workers between iterations) or at most a tick (4 ms) behind. Java's own
     * process CPU time ({@code OperatingSystemMXBean.getProcessCpuTime}) counts clock ticks (10
     * ms) on Linux, too coarse for one iteration: it is the fallback, under the key "process",
     * when /proc cannot be read. Null when neither can be had.
     */
    public static Map<String, Long> threadCpuNs() {
        File[] threads = new File("/proc/self/task").listFiles();
        Map<String, Long> out = new HashMap<>();
        if (threads != null) {
            String self = null;
            try {
                self = Files.readSymbolicLink(Paths.get("/proc/thread-self")).getFileName().toString();
            } catch (IOException | UnsupportedOperationException e) {
                // every thread from /proc
            }
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            if (self != null && mx.isCurrentThreadCpuTimeSupported()) {
                out.put(self, mx.getCurrentThreadCpuTime());
            }
            byte[] buffer = new byte[128];
            for (File thread : threads) {
                if (out.containsKey(thread.getName())) {
                    continue;
                }
                try (FileInputStream in = new FileInputStream(new File(thread, "schedstat"))) {
                    int n = in.read(buffer);
                    long value = 0;
                    for (int i = 0; i < n && buffer[i] >= '0' && buffer[i] <= '9'; i++) {
                        value = value * 10 + (buffer[i] - '0');
                    }
                    out.put(thread.getName(), value);
                } catch (IOException e) {
                    // the thread ended since the listing
                }
            }
            if (!out.isEmpty()) {
                return out;
            }
        }
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            out.put("process", ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime());
            return out;
        }
        return null;
    }

    /**
     * This JVM's CPU time since the current iteration began: per thread, its time now less its
     * time then (a thread started meanwhile counts whole); a thread that ended during the
     * iteration is no longer listed and its share is lost (the sum over the threads alive, not
     * a difference of two sums, which such a thread could make negative). -1 when unknown.
     */
    public long cpuSinceBeginNs() {
        return sumSince(cpuStart, threadCpuNs());
    }

    /**
     * This JVM's run-queue delay so far per thread, in nanoseconds (thread id -> time): {@code
     * run_delay}, the second field of {@code /proc/self/task/TID/schedstat}, the time each
     * thread was ready to run and waited for a CPU. With the CPU time it tells a side that waited
     * for its CPU (another process on it) from one that slept: the {@code auto} metric's busy
     * share. Null when /proc cannot be read.
     */
    public static Map<String, Long> threadRunqNs() {
        File[] threads = new File("/proc/self/task").listFiles();
        if (threads == null) {
            return null;
        }
        Map<String, Long> out = new HashMap<>();
        byte[] buffer = new byte[128];
        for (File thread : threads) {
            try (FileInputStream in = new FileInputStream(new File(thread, "schedstat"))) {
                int n = in.read(buffer);
                int i = 0;
                while (i < n && buffer[i] != ' ') {
                    i++;
                }
                long value = 0;
                for (i++; i < n && buffer[i] >= '0' && buffer[i] <= '9'; i++) {
                    value = value * 10 + (buffer[i] - '0');
                }
                out.put(thread.getName(), value);
            } catch (IOException e) {
                // the thread ended since the listing
            }
        }
        return out.isEmpty() ? null : out;
    }

    /** This JVM's run-queue delay since the current iteration began, summed over its threads
     * as {@link #cpuSinceBeginNs} sums their CPU time. -1 when unknown. */
    public long runqSinceBeginNs() {
        return sumSince(runqStart, threadRunqNs());
    }

    /** Per thread, its figure now less its figure at {@code start} (a thread started since
     * counts whole), summed over the threads alive now; -1 when either is unknown. */
    private static long sumSince(Map<String, Long> start, Map<String, Long> now) {
        if (now == null || start == null) {
            return -1;
        }
        long total = 0;
        for (Map.Entry<String, Long> e : now.entrySet()) {
            total += Math.max(0, e.getValue() - start.getOrDefault(e.getKey(), 0L));
        }
        return total;
    }

    /** Wait at the barrier for the next iteration: true, run it now; false, all are done. */
    public boolean begin() throws Failure {
        if (exitCode != EXIT_OK) {
            throw new Failure(exitCode, "this side already failed");
        }
        if (inIteration) {
            throw failed(EXIT_USAGE, "UsageError: begin() called twice without end()",
                    DuetBarrier.ABORT_PARTY_FAILED);
        }
        if (done >= warmup + iterations) {
            return false;
        }
        try {
            startNs = barrier.await(timeoutNs);
        } catch (DuetBarrier.BarrierException e) {
            switch (e.code) {
                case "timeout":
                    throw failed(EXIT_TIMEOUT, "BarrierTimeout: " + e.getMessage(),
                            DuetBarrier.ABORT_PARTY_TIMEOUT);
                case "aborted":
                    throw failed(EXIT_ABORTED, "BarrierAborted: " + e.getMessage(), 0);
                default:
                    throw failed(EXIT_BARRIER, "BarrierError: " + e.getMessage(),
                            DuetBarrier.ABORT_PARTY_FAILED);
            }
        }
        cpuStart = threadCpuNs();
        runqStart = threadRunqNs();
        inIteration = true;
        return true;
    }

    /** The release time of the current iteration ({@code CLOCK_MONOTONIC}). */
    public long startNs() {
        return startNs;
    }

    /** Iterations still to run, warm-up included. */
    public long remaining() {
        return warmup + iterations - done;
    }

    /** True while the next iteration begun is a warm-up one. */
    public boolean warmingUp() {
        return done < warmup;
    }

    /** End the iteration: its wall time, this JVM's CPU time and run-queue delay over it. */
    public void end() throws Failure {
        long end = System.nanoTime();
        end(end - startNs, cpuSinceBeginNs(), runqSinceBeginNs());
    }

    /** End the iteration with the sample given (a tool's own time per operation); cpuNs -1:
     * none. */
    public void end(long durationNs, long cpuNs) throws Failure {
        end(durationNs, cpuNs, -1);
    }

    /** End the iteration with the sample given, its CPU time and its run-queue delay (each per
     * operation where the duration is; -1: none). */
    public void end(long durationNs, long cpuNs, long runqNs) throws Failure {
        if (exitCode != EXIT_OK) {
            throw new Failure(exitCode, "this side already failed");
        }
        if (!inIteration) {
            throw failed(EXIT_USAGE, "UsageError: end() called without begin()",
                    DuetBarrier.ABORT_PARTY_FAILED);
        }
        inIteration = false;
        boolean warm = done < warmup;
        StringBuilder s = new StringBuilder(160);
        s.append("{\"phase\": \"").append(warm ? "warmup" : "measure")
                .append("\", \"index\": ").append(warm ? done : done - warmup)
                .append(", \"start_ns\": ").append(startNs)
                .append(", \"duration_ns\": ").append(Math.max(1, durationNs));
        if (cpuNs >= 0) {
            s.append(", \"cpu_ns\": ").append(cpuNs);
        }
        if (runqNs >= 0) {
            s.append(", \"runq_ns\": ").append(runqNs);
        }
        if (barrier.cpu >= 0) {
            s.append(", \"cpu\": ").append(barrier.cpu);
        }
        s.append('}');
        line(s.toString());
        done++;
    }

    /** Fields added to the done line: {@code "key": value} pairs, JSON, without braces. */
    public void setDoneExtra(String fields) {
        doneExtra = fields == null || fields.isEmpty() ? "" : ", " + fields;
    }

    /** The program's own failure: error line, abort PARTY_FAILED; returns the Failure. */
    public Failure fail(String message) {
        return failed(EXIT_FAILED, message, DuetBarrier.ABORT_PARTY_FAILED);
    }

    private Failure failed(int code, String message, long abortReason) {
        if (exitCode == EXIT_OK) {
            exitCode = code;
            try {
                line("{\"error\": " + json(message) + ", \"exit_code\": " + code + "}");
            } catch (Failure e) {
                // the samples file is gone: the exit code still says it
            }
            if (abortReason != 0 && barrier != null) {
                try {
                    barrier.abort(abortReason);
                } catch (DuetBarrier.BarrierException e) {
                    // closed: nothing to stop
                }
            }
        }
        inIteration = false;
        return new Failure(exitCode, message);
    }

    /** Done line (when every iteration ran), close the file, detach; the exit code. */
    public int close() {
        if (exitCode == EXIT_OK && done < warmup + iterations) {
            failed(EXIT_FAILED, "BenchmarkFailed: closed after " + done + " of "
                    + (warmup + iterations) + " iterations", DuetBarrier.ABORT_PARTY_FAILED);
        }
        try {
            if (exitCode == EXIT_OK) {
                line("{\"done\": true, \"inner_loops\": 1" + doneExtra + "}");
            }
            samples.close();
        } catch (IOException | Failure e) {
            if (exitCode == EXIT_OK) {
                exitCode = EXIT_FAILED;
            }
        }
        if (barrier != null) {
            barrier.close();
        }
        return exitCode;
    }

    public int exitCode() {
        return exitCode;
    }

    private void line(String text) throws Failure {
        try {
            samples.write((text + "\n").getBytes(StandardCharsets.UTF_8));
            samples.flush();
        } catch (IOException e) {
            if (exitCode == EXIT_OK) {
                exitCode = EXIT_FAILED;
            }
            throw new Failure(EXIT_FAILED, "OSError: cannot write the samples file: "
                    + e.getMessage());
        }
    }

    /** {@code text} as a JSON string. */
    public static String json(String text) {
        StringBuilder s = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                s.append('\\').append(c);
            } else if (c < 0x20) {
                s.append(String.format("\\u%04x", (int) c));
            } else {
                s.append(c);
            }
        }
        return s.append('"').toString();
    }
}
