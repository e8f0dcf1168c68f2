package duet.harness;

import java.io.File;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The duet barrier client for the JVM, protocol version 1 (docs/barrier-protocol.md): pure Java,
 * no JNI. The file is mapped with {@link FileChannel#map}, every field is an aligned
 * little-endian 64-bit word accessed through a byte-buffer {@link VarHandle} (volatile, that is
 * sequentially consistent, for this party's own generation store; acquire for the peers'
 * generations; opaque for the abort flag in the spin).
 *
 * <p>What Java cannot do without JNI: futexes and thread affinity. So this client never sleeps
 * in a futex and never writes {@code SLEEPING} (past its spin and yield budgets it polls with
 * short sleeps, 20 us doubling up to 1 ms), cannot {@code FUTEX_WAKE} a C peer that sleeps (that
 * peer wakes within its 10 ms sleep slice, as the protocol provides for), and crosses over
 * (moves every thread of the side to the iteration's CPU) by running {@code taskset -a -p} on
 * every process of the side, outside the measured time.
 */
public final class DuetBarrier implements AutoCloseable {
    public static final long PROTOCOL_VERSION = 1;
    public static final long MAGIC = 0x5252414254455544L; // "DUETBARR", little-endian
    public static final int HEADER_SIZE = 64;
    public static final int SLOT_SIZE = 64;
    public static final int MAX_PARTIES = 64;

    public static final long STATE_FREE = 0;
    public static final long STATE_ATTACHED = 1;
    public static final long STATE_SLEEPING = 2;
    public static final long STATE_DETACHED = 3;

    public static final long ABORT_ORCHESTRATOR = 1;
    public static final long ABORT_WATCHDOG = 2;
    public static final long ABORT_PARTY_FAILED = 3;
    public static final long ABORT_PARTY_TIMEOUT = 4;
    public static final long ABORT_PARTY_EXITED = 5;

    public static final long DEFAULT_SPIN_NS = 100_000_000L;
    public static final long DEFAULT_YIELD_NS = 100_000_000L;
    static final int SPINS_PER_CHECK = 256;
    static final long SLEEP_FIRST_NS = 20_000L;
    static final long SLEEP_MAX_NS = 1_000_000L;
    static final int MOVE_PASSES = 2;

    // Header offsets.
    static final int H_MAGIC = 0;
    static final int H_VERSION = 8;
    static final int H_PARTIES = 16;
    static final int H_ABORT = 40;
    static final int H_ABORT_REASON = 48;
    static final int H_ABORT_PID = 56;
    // Offsets in a slot.
    static final int S_GENERATION = 0;
    static final int S_STATE = 8;
    static final int S_PID = 16;

    private static final VarHandle WORD =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    /** A refusal or a failed wait; {@link #code} is the protocol's name ("bad_magic", "timeout"). */
    public static final class BarrierException extends Exception {
        private static final long serialVersionUID = 1L;
        public final String code;

        public BarrierException(String code, String message) {
            super(message);
            this.code = code;
        }
    }

    public final String path;
    public final int parties;
    /** This party's slot, or -1 for an observer (it can read and abort, not wait). */
    public final int slot;
    private MappedByteBuffer map;
    private long generation;
    private boolean broken;
    private long spinNs = DEFAULT_SPIN_NS;
    private long yieldNs = DEFAULT_YIELD_NS;
    /** Filled when a wait fails with "aborted". */
    public long abortReason;
    public long abortPid;
    // Crossover.
    private int[] cpus;
    private String tasks;
    private long crossings;
    private String taskset;
    /** The CPU the side was last moved to, -1 when unknown. */
    public int cpu = -1;

    private DuetBarrier(String path, MappedByteBuffer map, int parties, int slot) {
        this.path = path;
        this.map = map;
        this.parties = parties;
        this.slot = slot;
    }

    static int fileSize(int parties) {
        return HEADER_SIZE + SLOT_SIZE * parties;
    }

    private static int slotOffset(int slot) {
        return HEADER_SIZE + SLOT_SIZE * slot;
    }

    private static long pid() {
        return ProcessHandle.current().pid();
    }

    // -- attaching --------------------------------------------------------------------------

    /** Map an existing barrier file as party {@code slot}, after validating it. */
    public static DuetBarrier attach(String path, int slot) throws BarrierException {
        MappedByteBuffer map = mapExisting(path);
        int parties = validate(map, path, slot);
        DuetBarrier b = new DuetBarrier(path, map, parties, slot);
        int own = slotOffset(slot);
        b.generation = (long) WORD.getVolatile(map, own + S_GENERATION);
        WORD.setVolatile(map, own + S_PID, pid());
        WORD.setVolatile(map, own + S_STATE, STATE_ATTACHED);
        return b;
    }

    /** Map an existing barrier file without a slot: read generations, abort; no wait. */
    public static DuetBarrier observe(String path) throws BarrierException {
        MappedByteBuffer map = mapExisting(path);
        int parties = validate(map, path, -1);
        return new DuetBarrier(path, map, parties, -1);
    }

    private static MappedByteBuffer mapExisting(String path) throws BarrierException {
        try (FileChannel channel =
                FileChannel.open(
                        Paths.get(path), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long size = channel.size();
            if (size > Integer.MAX_VALUE) {
                size = Integer.MAX_VALUE;
            }
            MappedByteBuffer map = channel.map(FileChannel.MapMode.READ_WRITE, 0, size);
            map.order(ByteOrder.LITTLE_ENDIAN);
            return map;
        } catch (IOException e) {
            throw new BarrierException(
                    "system", "cannot open barrier file " + path + ": " + e.getMessage());
        }
    }

    /** The protocol's attach checks, in its order; returns the number of parties. */
    static int validate(MappedByteBuffer map, String path, int slot) throws BarrierException {
        int size = map.capacity();
        if (size < HEADER_SIZE) {
            throw new BarrierException(
                    "bad_size",
                    path + " is truncated: " + size + " bytes, a barrier file has a "
                            + HEADER_SIZE + "-byte header at least");
        }
        long magic = (long) WORD.getAcquire(map, H_MAGIC);
        long version = (long) WORD.getVolatile(map, H_VERSION);
        long parties = (long) WORD.getVolatile(map, H_PARTIES);
        if (magic != MAGIC) {
            StringBuilder bytes = new StringBuilder();
            for (int i = 0; i < 8; i++) {
                bytes.append(String.format("%s%02x", i == 0 ? "" : " ", (magic >>> (8 * i)) & 0xff));
            }
            throw new BarrierException(
                    "bad_magic",
                    path + " is not a duet barrier file: its first 8 bytes are " + bytes
                            + ", expected \"DUETBARR\"");
        }
        if (version != PROTOCOL_VERSION) {
            throw new BarrierException(
                    "bad_version",
                    path + " uses barrier protocol version " + Long.toUnsignedString(version)
                            + ", this client speaks version " + PROTOCOL_VERSION
                            + " only: the orchestrator and the harness come from different duet"
                            + " releases");
        }
        if (parties < 1 || parties > MAX_PARTIES) {
            throw new BarrierException(
                    "bad_parties",
                    path + " declares " + Long.toUnsignedString(parties) + " parties; version "
                            + PROTOCOL_VERSION + " allows 1 to " + MAX_PARTIES);
        }
        int expected = fileSize((int) parties);
        if (size != expected) {
            throw new BarrierException(
                    "bad_size",
                    path + " is " + (size < expected ? "truncated" : "too long") + ": " + size
                            + " bytes, a " + parties + "-party barrier file has exactly "
                            + expected);
        }
        if (slot != -1) {
            if (slot < 0 || slot >= parties) {
                throw new BarrierException(
                        "bad_slot",
                        "slot " + slot + " does not exist in " + path + ": it has " + parties
                                + " parties (slots 0 to " + (parties - 1) + ")");
            }
            long state = (long) WORD.getVolatile(map, slotOffset(slot) + S_STATE);
            if (state != STATE_FREE) {
                long owner = (long) WORD.getVolatile(map, slotOffset(slot) + S_PID);
                throw new BarrierException(
                        "slot_in_use",
                        "slot " + slot + " of " + path + " is already taken (state " + state
                                + ", pid " + owner + "): each party needs its own slot of a"
                                + " fresh barrier file");
            }
        }
        return (int) parties;
    }

    /** How long a wait spins, then yields, before it polls with sleeps. */
    public void setSpin(long spinNs, long yieldNs) {
        this.spinNs = spinNs;
        this.yieldNs = yieldNs;
    }

    // -- reading ----------------------------------------------------------------------------

    public long generation(int slot) {
        return (long) WORD.getAcquire(map, slotOffset(slot) + S_GENERATION);
    }

    public long state(int slot) {
        return (long) WORD.getVolatile(map, slotOffset(slot) + S_STATE);
    }

    /** The abort reason, or 0 while the barrier is not aborted. */
    public long abortReason() {
        return (long) WORD.getAcquire(map, H_ABORT) != 0
                ? (long) WORD.getVolatile(map, H_ABORT_REASON)
                : 0;
    }

    // -- the rendezvous ---------------------------------------------------------------------

    /**
     * Arrive and wait for every other party; returns the release time ({@link
     * System#nanoTime()}, which is {@code CLOCK_MONOTONIC} on Linux, the clock the other
     * clients read). After {@link #cross}, a wait is two rendezvous with the move between.
     * Throws with code "timeout" or "aborted" (the barrier is then broken for this party),
     * "broken", "usage" or "move".
     */
    public long await(long timeoutNs) throws BarrierException {
        if (map == null || slot < 0) {
            throw new BarrierException("usage", "wait() needs an attached party's barrier");
        }
        if (broken) {
            throw new BarrierException(
                    "broken", "this party's barrier is broken by an earlier timeout or abort");
        }
        if (cpus == null) {
            return rendezvous(timeoutNs);
        }
        // Both sides first finish the iteration, then move, then start together.
        rendezvous(timeoutNs);
        move(cpus[(int) (crossings % cpus.length)]);
        crossings++;
        return rendezvous(timeoutNs);
    }

    private long rendezvous(long timeoutNs) throws BarrierException {
        MappedByteBuffer m = map;
        if ((long) WORD.getAcquire(m, H_ABORT) != 0) {
            throw aborted();
        }
        long g = ++generation;
        WORD.setVolatile(m, slotOffset(slot) + S_GENERATION, g);
        // No FUTEX_WAKE from Java: a peer asleep in a futex wakes within its 10 ms slice.
        for (int j = 0; j < parties; j++) {
            if (j == slot) {
                continue;
            }
            int peer = slotOffset(j) + S_GENERATION;
            int n = 0;
            long begin = 0;
            long deadline = 0;
            long sleepNs = SLEEP_FIRST_NS;
            while ((long) WORD.getAcquire(m, peer) < g) {
                if ((long) WORD.getOpaque(m, H_ABORT) != 0) {
                    throw aborted();
                }
                Thread.onSpinWait();
                if (++n < SPINS_PER_CHECK) {
                    continue;
                }
                n = 0;
                long now = System.nanoTime();
                if (begin == 0) {
                    begin = now;
                    deadline = begin + timeoutNs < begin ? Long.MAX_VALUE : begin + timeoutNs;
                }
                if (now - deadline >= 0) {
                    broken = true;
                    throw new BarrierException(
                            "timeout",
                            String.format(
                                    "barrier wait timed out after %.3f s at generation %d: slot"
                                            + " %d (pid %d) is at generation %d",
                                    timeoutNs / 1e9, g, j,
                                    (long) WORD.getVolatile(m, slotOffset(j) + S_PID),
                                    (long) WORD.getVolatile(m, peer)));
                }
                long elapsed = now - begin;
                if (elapsed < spinNs) {
                    continue;
                }
                if (elapsed - spinNs < yieldNs) {
                    Thread.yield();
                    continue;
                }
                LockSupport.parkNanos(Math.min(sleepNs, deadline - now));
                sleepNs = Math.min(sleepNs * 2, SLEEP_MAX_NS);
            }
        }
        return System.nanoTime();
    }

    private BarrierException aborted() {
        broken = true;
        abortReason = (long) WORD.getVolatile(map, H_ABORT_REASON);
        abortPid = (long) WORD.getVolatile(map, H_ABORT_PID);
        return new BarrierException(
                "aborted",
                "barrier aborted by pid " + abortPid + ": " + reasonText(abortReason)
                        + " (reason " + abortReason + ")");
    }

    static String reasonText(long reason) {
        switch ((int) reason) {
            case 1: return "cancelled by the orchestrator";
            case 2: return "the orchestrator's watchdog saw no progress";
            case 3: return "a party's benchmark failed";
            case 4: return "a party's wait timed out";
            case 5: return "a party's process ended early";
            default: return "program-defined reason";
        }
    }

    /** Raise the abort flag; the first aborter's reason is kept. */
    public void abort(long reason) throws BarrierException {
        if (map == null) {
            throw new BarrierException("usage", "abort() on a closed barrier");
        }
        if (reason <= 0) {
            throw new BarrierException("usage", "abort reason " + reason + " is not a reason");
        }
        if ((long) WORD.getAcquire(map, H_ABORT) != 0) {
            return;
        }
        WORD.setVolatile(map, H_ABORT_REASON, reason);
        WORD.setVolatile(map, H_ABORT_PID, pid());
        WORD.setVolatile(map, H_ABORT, 1L);
        // No FUTEX_WAKE: sleepers re-check the abort within their 10 ms slice.
    }

    // -- crossover --------------------------------------------------------------------------

    /**
     * Cross the side over the CPUs: wait k runs it on {@code cpus[k % cpus.length]}; it moves
     * to {@code cpus[0]} at once. {@code tasks} is the side's cgroup thread list ({@code
     * DUET_TASKS}); the processes moved are those of the {@code cgroup.procs} beside it (every
     * JVM of the side: JMH's host VM and its fork), else this process alone.
     */
    public void cross(int[] cpus, String tasks) throws BarrierException {
        if (cpus.length == 0) {
            throw new BarrierException("usage", "crossover needs at least one CPU");
        }
        for (int c : cpus) {
            if (c < 0) {
                throw new BarrierException("usage", "CPU " + c + " is out of range");
            }
        }
        for (String candidate : new String[] {"/usr/bin/taskset", "/bin/taskset"}) {
            if (new File(candidate).canExecute()) {
                taskset = candidate;
                break;
            }
        }
        if (taskset == null) {
            throw new BarrierException(
                    "move",
                    "cannot cross over: taskset (util-linux) is not in /usr/bin nor /bin, and"
                            + " Java has no other way to set a thread's affinity; install"
                            + " util-linux, or measure with --crossover run");
        }
        this.cpus = cpus.clone();
        this.tasks = tasks == null || tasks.isEmpty() ? null : tasks;
        this.crossings = 0;
        move(this.cpus[0]);
    }

    /** The processes of the side: cgroup.procs beside the task list, else this process. */
    private List<String> processes() throws IOException {
        List<String> out = new ArrayList<>();
        if (tasks == null) {
            out.add(Long.toString(pid()));
            return out;
        }
        Path procs = Paths.get(tasks).resolveSibling("cgroup.procs");
        for (String word : new String(Files.readAllBytes(procs), StandardCharsets.US_ASCII)
                .split("\\s+")) {
            if (!word.isEmpty()) {
                out.add(word);
            }
        }
        return out;
    }

    private void move(int target) throws BarrierException {
        // Twice: a thread started by a thread not yet moved starts on the old CPU; the second
        // pass catches it (taskset -a reads each process's thread list anew).
        try {
            for (int pass = 0; pass < MOVE_PASSES; pass++) {
                for (String process : processes()) {
                    Process p =
                            new ProcessBuilder(
                                            taskset, "-a", "-p", "-c", Integer.toString(target),
                                            process)
                                    .redirectErrorStream(true)
                                    .start();
                    p.getOutputStream().close();
                    byte[] said = p.getInputStream().readAllBytes();
                    if (!p.waitFor(30, TimeUnit.SECONDS)) {
                        p.destroyForcibly();
                        throw new IOException("taskset did not finish within 30 s");
                    }
                    int status = p.exitValue();
                    if (status != 0 && isAlive(process)) {
                        throw new IOException(
                                "taskset exited with status " + status + ": "
                                        + new String(said, StandardCharsets.UTF_8).trim());
                    }
                }
            }
        } catch (IOException | InterruptedException e) {
            broken = true;
            throw new BarrierException(
                    "move",
                    "cannot move the side to CPU " + target + " (crossover): " + e.getMessage()
                            + "; every CPU it crosses to must be in the side's cpuset and every"
                            + " process in " + (tasks == null ? "this JVM" : tasks)
                            + " must be the side's own");
        }
        cpu = target;
    }

    private static boolean isAlive(String process) {
        try {
            return ProcessHandle.of(Long.parseLong(process)).map(ProcessHandle::isAlive).orElse(false);
        } catch (NumberFormatException e) {
            return true;
        }
    }

    // -- closing ----------------------------------------------------------------------------

    /** Mark the slot DETACHED; the mapping goes with the buffer. Idempotent. */
    @Override
    public void close() {
        if (map == null) {
            return;
        }
        broken = true;
        if (slot >= 0) {
            WORD.setVolatile(map, slotOffset(slot) + S_STATE, STATE_DETACHED);
        }
        map.force();
        map = null;
    }
}
