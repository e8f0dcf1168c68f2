import duet.harness.DuetBarrier;
import java.io.BufferedReader;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/**
 * Test driver for the Java barrier client (duet_bench/harness/java/duet/harness/DuetBarrier.java),
 * the same line protocol as tests/duet/c/barrier_driver.c, so tests/adapters/test_jmh.py can
 * replay the shared vectors and pair the Java client with a Python peer:
 *
 *   attach PATH SLOT              -> ok | refused CODE MESSAGE
 *   observe PATH                  -> ok | refused CODE MESSAGE
 *   spin SLOT SPIN_NS YIELD_NS    -> ok
 *   wait SLOT TIMEOUT_NS          -> released START_NS | timeout | aborted REASON PID | broken
 *   rounds SLOT N TIMEOUT_NS OUT  -> done | failed CODE MESSAGE (start_ns per line in OUT)
 *   abort SLOT|observer REASON    -> ok | failed CODE MESSAGE
 *   close SLOT|observer           -> ok
 *   pid                           -> PID
 *   quit
 */
public final class BarrierDriver {
    private static final int OBSERVER = DuetBarrier.MAX_PARTIES;
    private static final DuetBarrier[] handles = new DuetBarrier[OBSERVER + 1];

    private static int index(String word) {
        return word.equals("observer") ? OBSERVER : Integer.parseInt(word);
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if (w[0].isEmpty()) {
                continue;
            }
            if (w[0].equals("quit")) {
                break;
            }
            try {
                switch (w[0]) {
                    case "pid":
                        out.println(ProcessHandle.current().pid());
                        break;
                    case "attach":
                        handles[Integer.parseInt(w[2])] = DuetBarrier.attach(w[1], Integer.parseInt(w[2]));
                        out.println("ok");
                        break;
                    case "observe":
                        handles[OBSERVER] = DuetBarrier.observe(w[1]);
                        out.println("ok");
                        break;
                    case "spin":
                        handles[index(w[1])].setSpin(Long.parseLong(w[2]), Long.parseLong(w[3]));
                        out.println("ok");
                        break;
                    case "wait":
                        out.println("released " + handles[index(w[1])].await(Long.parseLong(w[2])));
                        break;
                    case "rounds": {
                        DuetBarrier b = handles[index(w[1])];
                        int n = Integer.parseInt(w[2]);
                        long timeout = Long.parseLong(w[3]);
                        long[] starts = new long[n];
                        int done = 0;
                        DuetBarrier.BarrierException failed = null;
                        try {
                            for (; done < n; done++) {
                                starts[done] = b.await(timeout);
                            }
                        } catch (DuetBarrier.BarrierException e) {
                            failed = e;
                        }
                        try (PrintWriter f = new PrintWriter(new FileWriter(w[4], StandardCharsets.UTF_8))) {
                            for (int i = 0; i < done; i++) {
                                f.println(starts[i]);
                            }
                        }
                        out.println(failed == null ? "done" : "failed " + failed.code + " " + failed.getMessage());
                        break;
                    }
                    case "abort":
                        handles[index(w[1])].abort(Long.parseLong(w[2]));
                        out.println("ok");
                        break;
                    case "close":
                        if (handles[index(w[1])] != null) {
                            handles[index(w[1])].close();
                        }
                        out.println("ok");
                        break;
                    default:
                        out.println("failed usage unknown command " + w[0]);
                }
            } catch (DuetBarrier.BarrierException e) {
                DuetBarrier h = w.length > 1 && !w[0].equals("attach") && !w[0].equals("observe")
                        ? handles[index(w[1])] : null;
                switch (e.code) {
                    case "timeout":
                        out.println("timeout");
                        break;
                    case "aborted":
                        out.println("aborted " + h.abortReason + " " + h.abortPid);
                        break;
                    case "broken":
                        out.println("broken");
                        break;
                    default:
                        out.println((w[0].equals("attach") || w[0].equals("observe") ? "refused " : "failed ")
                                + e.code + " " + e.getMessage());
                }
            }
        }
        for (DuetBarrier h : handles) {
            if (h != null) {
                h.close();
            }
        }
    }
}
