package duet.harness.jmh;

import duet.harness.DuetNative;
import java.lang.management.ManagementFactory;
import java.util.Collection;
import java.util.Collections;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.runner.IterationType;

/**
 * JMH profiler ({@code -prof duet.harness.jmh.DuetJmhProfiler}) that puts every JMH iteration,
 * warm-up and measurement, under the duet barrier: {@code beforeIteration} waits at the barrier
 * (JMH calls it before it releases the benchmark threads), {@code afterIteration} writes the
 * iteration's sample: JMH's score as nanoseconds per operation, and this JVM's process CPU time
 * and run-queue delay (every thread's) over the iteration divided by the operations JMH measured. It runs in JMH's forked VM, whose
 * environment carries duet's {@code DUET_*} variables (JMH forks with the host's environment).
 */
public final class DuetJmhProfiler implements InternalProfiler {
    private static DuetNative ctx;

    @Override
    public String getDescription() {
        return "duet: every iteration under the duet barrier, JMH's score as the sample";
    }

    private static synchronized DuetNative context(BenchmarkParams params) {
        if (ctx == null) {
            try {
                ctx = DuetNative.open();
            } catch (DuetNative.Failure e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
            ctx.setDoneExtra("\"jvm\": " + jvm(params));
        }
        return ctx;
    }

    /** The forked VM as JMH describes it, and the flags it really runs with. */
    static String jvm(BenchmarkParams params) {
        StringBuilder s = new StringBuilder("{\"jvm\": ").append(DuetNative.json(params.getJvm()))
                .append(", \"vm_name\": ").append(DuetNative.json(params.getVmName()))
                .append(", \"vm_version\": ").append(DuetNative.json(params.getVmVersion()))
                .append(", \"jdk_version\": ").append(DuetNative.json(params.getJdkVersion()))
                .append(", \"jmh_version\": ").append(DuetNative.json(params.getJmhVersion()))
                .append(", \"mode\": ").append(DuetNative.json(params.getMode().shortLabel()))
                .append(", \"threads\": ").append(params.getThreads())
                .append(", \"flags\": [");
        boolean first = true;
        for (String flag : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            s.append(first ? "" : ", ").append(DuetNative.json(flag));
            first = false;
        }
        return s.append("]}").toString();
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        DuetNative c = context(benchmarkParams);
        try {
            boolean warm = iterationParams.getType() == IterationType.WARMUP;
            if (warm != c.warmingUp()) {
                throw c.fail("BenchmarkFailed: JMH runs a " + (warm ? "warm-up" : "measurement")
                        + " iteration where duet expects a " + (warm ? "measurement" : "warm-up")
                        + " one: JMH's -wi/-i must be DUET_WARMUP/DUET_ITERATIONS (run it"
                        + " through duet.harness.jmh.DuetJmh, which sets them)");
            }
            if (!c.begin()) {
                throw c.fail("BenchmarkFailed: JMH runs more iterations than duet asked for ("
                        + (c.warmup + c.iterations) + ")");
            }
        } catch (DuetNative.Failure e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    @Override
    @SuppressWarnings("rawtypes") // InternalProfiler's own signature
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmarkParams,
            IterationParams iterationParams, IterationResult result) {
        DuetNative c = context(benchmarkParams);
        long cpuNs = c.cpuSinceBeginNs();
        long runqNs = c.runqSinceBeginNs();
        try {
            Result<?> primary = result.getPrimaryResult();
            double nsPerOp = nanosPerOp(primary.getScore(), result.getScoreUnit());
            if (!(nsPerOp > 0) || Double.isInfinite(nsPerOp)) {
                throw c.fail("BenchmarkFailed: JMH's score " + primary.getScore() + " "
                        + result.getScoreUnit() + " is no time per operation duet can use");
            }
            long ops = result.getMetadata() == null ? 0 : result.getMetadata().getMeasuredOps();
            long cpuPerOp = ops > 0 && cpuNs >= 0 ? Math.max(1, Math.round((double) cpuNs / ops)) : -1;
            long runqPerOp = ops > 0 && runqNs >= 0 ? Math.round((double) runqNs / ops) : -1;
            c.end(Math.round(nsPerOp), cpuPerOp, runqPerOp);
            if (c.remaining() == 0) {
                int code = c.close();
                if (code != DuetNative.EXIT_OK) {
                    throw new IllegalStateException("duet: closing the samples file failed");
                }
            }
        } catch (DuetNative.Failure e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
        return Collections.emptyList();
    }

    /** A JMH score in {@code unit} ("ns/op", "us/op", "ops/s", ...) as nanoseconds per op. */
    static double nanosPerOp(double score, String unit) {
        int slash = unit.indexOf('/');
        if (slash < 0) {
            return Double.NaN;
        }
        String top = unit.substring(0, slash);
        String bottom = unit.substring(slash + 1);
        if (bottom.equals("op")) {
            return score * unitNanos(top);
        }
        if (top.equals("ops")) {
            return unitNanos(bottom) / score;
        }
        return Double.NaN;
    }

    private static double unitNanos(String unit) {
        switch (unit) {
            case "ns": return 1;
            case "us": return 1e3;
            case "ms": return 1e6;
            case "s": return 1e9;
            case "min": return 60e9;
            case "hr": return 3600e9;
            case "day": return 86400e9;
            default: return Double.NaN;
        }
    }
}
