// Package runsc is the gVisor backend of the sandbox port: Backend
// implements sandbox.Client by running each spawn in a fresh gVisor sandbox
// with the pinned runsc that scripts/setup.sh builds (cgo off). It also
// finds and removes the sandboxes a crashed process left (Backend.Reap). It
// does not pull or unpack images (the rootfs is a host directory), build
// Dockerfiles, authenticate callers or write the audit log; gate-control
// does those above it.
//
// # One spawn
//
// Spawn validates the request (an invalid role is refused before anything
// runs), resolves the command in the sandbox's filesystem view on the host
// (a missing command exits 127 without starting anything), and makes a
// spawn directory in Config.StateDir named by a fresh container ID:
//
//	<StateDir>/<id>/lock         flock held while the spawn lives
//	<StateDir>/<id>/root/        runsc --root: this spawn's runsc state only
//	<StateDir>/<id>/bundle/      the OCI bundle: config.json
//	<StateDir>/<id>/runsc.log    runsc's own log (JSON), to tell its failures
//	<StateDir>/<id>/trace/       0700: the trace socket and pod-init-config
//
// config.json runs the command as root inside gVisor (Docker's default
// capabilities less NET_RAW, no new privileges) with the request's env (PATH
// added if missing; nothing of the caller's environment), RLIMIT_NOFILE
// 1024/4096, the hostname of Config.Hostname, fresh pid, ipc, uts, mount and
// network namespaces, /proc, a tmpfs /tmp and /dev/shm, the rootfs (the
// request's or Config.Rootfs) and the workspace bind-mounted at its Mount
// (default /workspace), read-only unless Writable. The cwd defaults to the
// workspace mount. The command runs with
//
//	runsc --root=<id>/root --platform=<systrap|ptrace> --overlay2=all:memory
//	      --gofer-network-namespace=new --network=none [--ignore-cgroups]
//	      --log=<id>/runsc.log --log-format=json [--pod-init-config=<file>]
//	      run --bundle <id>/bundle <id>
//
// --overlay2=all:memory puts the rootfs and every bind mount under an overlay
// whose upper layer is sandbox memory: the host rootfs and workspace
// directories are never written (a Writable workspace is thus a private
// copy-on-write copy, discarded at the end), and the rootfs may be shared by
// concurrent spawns. One exception: runsc creates a missing mount point (the
// workspace's) in the host rootfs directory. --gofer-network-namespace=new
// avoids the network namespace that runsc would otherwise bind-mount into
// --root and never unmount. AllowNetwork drops the network namespace and
// uses --network=host: the sandbox then shares the host's network stack,
// loopback services included.
//
// stdout and stderr are kept up to Limits.OutputBytes each (default 1 MiB);
// the rest is read and dropped, and the Result says it was cut. runsc's own
// error messages go to the same stderr. A failure of runsc itself (as
// opposed to the workload's exit status, which runsc passes through, or
// 128+signal) is told by the error record runsc writes to its JSON log,
// which the workload cannot write to; Spawn then returns an error.
//
// When the spawn ends, whatever way, the spawn directory is removed. After a
// kill or a runsc failure, or when the runsc root is not empty, the backend
// also lists, kills and deletes the containers in the root (runsc list,
// kill --all, delete --force), kills any process left in the container's
// cgroups and removes them, and unmounts anything left below the directory.
//
// # Timeouts and cancellation
//
// When Timeout passes or ctx is done, the backend runs runsc kill --all <id>
// KILL, waits Config.KillGrace (default 5s) for runsc run to exit, then
// kills runsc's process group (runsc runs with its own process group), and
// then cleans up as above. Spawn returns the partial Result (output so far,
// ExitCode -1, TraceComplete false, TimedOut on a timeout) together with an
// error matching sandbox.ErrTimeout or ctx's error: a killed run is never
// mistaken for a finished one by a caller that only checks the error.
// Measured here: a 1 s timeout on sleep 60 returns after about 1.07 s.
//
// # Limits: what is enforced (measured on these machines)
//
// Memory, CPU and pids limits are host cgroups that runsc puts the whole
// sandbox in (sentry, gofer and, with systrap, the stub processes), at
// /<id> in each hierarchy (cgroup v1 hybrid here). Backend.Enforcement says
// which ones apply on the host; New falls back to --ignore-cgroups when no
// controller is writable, and Config.NoCgroups forces it.
//
//   - Memory (default 1 GiB): enforced. The guest sees the limit as MemTotal;
//     200 MiB written to /tmp in a 64 MiB sandbox gets the sandbox OOM-killed
//     by the host (exit 137). Files in /tmp and overlay writes count.
//   - CPU (default 1): enforced as a CFS quota (Limits.CPUs × 100 ms per
//     100 ms). A busy loop took 2.5 s at 0.25 CPU against 0.9 s unlimited.
//     The guest still sees every host CPU in /proc/cpuinfo and nproc.
//   - PIDs (default 256): enforced approximately. The host pids cgroup counts
//     host tasks, not guest processes; the backend sets it to PIDs × 2 + 40
//     (systrap) or PIDs × 10 + 40 (ptrace), which measured gives the guest
//     about PIDs processes (20 gave 28 with systrap, 22 with ptrace) before
//     fork fails with ENOMEM. Under 16 host tasks the sandbox cannot boot,
//     hence the offset.
//   - Output: always enforced by the backend.
//   - Not enforced: disk (overlay writes are memory and count there), I/O
//     bandwidth, and the wall clock beyond Timeout (no default: a request
//     without a Timeout runs until it exits or ctx is done).
//
// # Exec trace
//
// With CaptureTrace, the backend listens (trace/seccheck) on a
// SOCK_SEQPACKET socket in the spawn's 0700 trace directory before it starts
// runsc, writes the pod-init-config that points runsc at it, collects while
// the sandbox runs, calls Finish once runsc has exited, and sets Result.Trace
// and Result.TraceComplete from the Collection. If the listener cannot be
// made, nothing runs (fail closed). Env is dropped from events unless
// KeepTraceEnv is set.
//
// gVisor reports the container's first process only as container/start,
// with the unresolved args of the spec and no exec event (ENVIRONMENT.md,
// blind spot 2). The backend knows what it started: right after the start
// event it inserts a KindExec event for the same PID, time, cwd and uid,
// with the command's argv, Execfn the path runsc executes (argv[0] joined
// with its PATH entry or cwd, as the kernel's execfn would be), and Binary
// that path with its symlinks resolved by the host-side lookup (for busybox,
// /bin/sh gives /bin/busybox), or empty when the lookup could not tell. The
// trace is complete only if the Collection is, exactly one container start
// arrived, and its args are the command.
//
// # Crashes
//
// A spawn holds an flock on <id>/lock for its whole life. Reap takes the
// state directory's lock exclusively (spawns take it shared while they set
// up), and cleans every spawn directory whose lock it can take, plus the
// cgroups named with this state directory's tag that no live spawn owns.
// Container IDs are "cg-<tag>-<random>", where tag is a digest of StateDir,
// so backends with different state directories never touch each other's
// sandboxes. A StateDir must not be shared by two differently configured
// backends.
//
// # Concurrency
//
// Backend is safe for concurrent use. Each spawn costs one runsc sandbox
// (about 0.2–0.6 s to start here, and the memory of its sentry); the backend
// itself does not queue or limit concurrency: gate-control does.
package runsc
