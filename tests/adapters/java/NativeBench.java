import duet.harness.DuetNative;

/**
 * A native benchmark on the JVM through DuetNative (the duet_native_* contract): every
 * iteration spins for NATIVE_WORK_NS nanoseconds (default 2 ms); NATIVE_FAIL_AT=k fails in
 * iteration k.
 */
public final class NativeBench {
    public static void main(String[] args) {
        DuetNative ctx;
        try {
            ctx = DuetNative.open();
        } catch (DuetNative.Failure e) {
            System.err.println(e.getMessage());
            System.exit(e.exitCode);
            return;
        }
        String work = System.getenv("NATIVE_WORK_NS");
        long workNs = work == null ? 2_000_000L : Long.parseLong(work);
        String failAt = System.getenv("NATIVE_FAIL_AT");
        long fail = failAt == null ? -1 : Long.parseLong(failAt);
        long i = 0;
        try {
            while (ctx.begin()) {
                if (i++ == fail) {
                    throw ctx.fail("BenchmarkFailed: told to fail in iteration " + (i - 1));
                }
                long until = System.nanoTime() + workNs;
                while (System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
                ctx.end();
            }
        } catch (DuetNative.Failure e) {
            System.err.println(e.getMessage());
        }
        System.exit(ctx.close());
    }
}
