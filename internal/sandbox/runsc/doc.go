// Package runsc is the gVisor backend of the sandbox port: Backend
// implements sandbox.Client by running each spawn in a fresh gVisor sandbox
// with the pinned runsc that scripts/setup.sh builds (cgo off). A spawn
// runs either a command on a host directory as its rootfs, or
// (SpawnRequest.Build) a Dockerfile build with buildah whose every RUN step
// runs in a sandbox of its own, then a boot of the built image; see
// "Builds" below. It also finds and removes the sandboxes a crashed process
// left (Backend.Reap). It does not authenticate callers or write the audit
// log; gate-control does those above it.
//
// # One spawn
//
// Spawn validates the request (an invalid role is refused before anything
// runs), resolves the command in the sandbox's filesystem view on the host
// (a missing command exits 127 without starting anything), and makes a
// spawn directory in Config.StateDir named by a fresh container ID:
//
//	<StateDir>/<id>/lock         flock held while the spawn lives
//	<StateDir>/<id>/audit-id     the audit ID of the Spawn's context
//	                             (sandbox.WithAuditID), for ReapSpawns
//	<StateDir>/<id>/root/        runsc --root: this spawn's runsc state only
//	<StateDir>/<id>/bundle/      the OCI bundle: config.json
//	<StateDir>/<id>/runsc.log    runsc's own log (JSON), to tell its failures
//	<StateDir>/<id>/trace/       0700: the trace socket and pod-init-config
//	<StateDir>/<id>/disk.img     the spawn's disk (see Limits), mounted at
//	<StateDir>/<id>/d/           which holds the overlays' upper layer
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
//	runsc --root=<id>/root --platform=<systrap|ptrace> --overlay2=all:dir=<id>/d
//	      --gofer-network-namespace=new --network=none [--ignore-cgroups]
//	      --log=<id>/runsc.log --log-format=json [--pod-init-config=<file>]
//	      run --bundle <id>/bundle <id>
//
// --overlay2=all:dir=<id>/d puts the rootfs and every bind mount under an
// overlay whose upper layer is a file that runsc makes in <id>/d, on the
// spawn's own disk: the host rootfs and workspace directories are never
// written (a Writable workspace is thus a private
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
//     by the host (exit 137). Files in /tmp (a tmpfs) count; writes to the
//     rootfs and workspace go to the spawn's disk instead.
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
//   - Disk (default 10 GiB, Limits.DiskBytes): every spawn writes to the
//     host disk only through a filesystem of its own: a sparse file of
//     DiskBytes in its spawn directory, formatted ext4 (no journal, no
//     reserved blocks) and loop-mounted (nosuid, nodev). A command spawn's
//     holds the overlays' upper layer (at <id>/d): what it writes to its
//     rootfs and a Writable workspace; past the limit the writes fail with
//     ENOSPC inside the sandbox, which lives on. A build spawn's is mounted
//     at <id>/b and holds the whole private buildah (image store, TMPDIR,
//     the RUN steps' root filesystems) and the boot's upper layer. A step
//     that writes without end gets ENOSPC from the host kernel at the
//     limit; the failed step and target phases then end with "disk limit
//     reached: ...", told by ENOSPC in the build output or by the free
//     space, which the backend samples every 100 ms while buildah runs.
//     The image costs the host only the blocks written to it (a 10 GiB one
//     starts at about 4 MiB). A spawn is refused unless the host filesystem
//     has DiskBytes free beyond what the live spawns' disks may still grow
//     by, so that all of them full cannot fill the host either. The image
//     goes when the spawn ends; after a crash of the owner, the watchdog
//     removes it at once (see below), and Reap what is left. Measured: 512 MiB written by a RUN step
//     with a 64 MiB limit stopped after 51 MiB, and the host lost 57 MiB;
//     making and mounting a 10 GiB disk takes about 15 ms.
//   - Not enforced: I/O bandwidth, and the wall clock beyond Timeout (no
//     default: a request without a Timeout runs until it exits or ctx is
//     done).
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
// arrived, and its args are the command (for a #! script gVisor reports the
// script's resolved path as the first arg, which counts as well).
//
// Delivery is shown complete, not assumed: the Collection waits, after runsc
// has exited, for every connection's end of file (the points in the socket
// buffer are read first), and wants the container init's exit, which
// carries the cumulative dropped count of everything before it. A point
// dropped after the last one that says so would still be invisible, so an
// independent witness counts too (witness.go): every traced sandbox also
// runs with runsc's own strace of execve and execveat, which the sentry
// writes host-side to a debug log on the spawn's disk and never drops. The
// exec attempts of each container in the stream must equal the witness's
// count; a difference, or a traced container with no log, leaves the trace
// incomplete, and Result.TraceGaps says why. An exec attempt that no exec
// of its process followed gets Event.Errno, read host-side from the
// sandbox's filesystem (ENOENT when the path is missing there, EACCES when
// it is not executable), since gVisor reports no result for attempts.
// Measured here (BenchmarkSpawnTrue, witness-p50-ms), the witness costs
// about 15 ms a sandbox.
//
// # Builds
//
// A spawn with a Build builds BuildSpec.Targets in order with buildah on
// the host, every RUN step in its own runsc sandbox (ENVIRONMENT.md, layout
// (a)), then, with Boot, boots the last target's image in one more. All
// those sandboxes report to one trace listener. The spawn directory holds:
//
//	<id>/Dockerfile  the Dockerfile, read through the workspace with os.Root
//	                 (a symlink cannot point buildah at a host file), at most
//	                 1 MiB; buildah reads this copy
//	<id>/disk.img    the spawn's disk: a sparse ext4 image of DiskBytes
//	<id>/b/          that disk, mounted: a private buildah: vfs storage,
//	                 runroot, the runsc root of the steps, TMPDIR, HOME and
//	                 every configuration file (see buildah); nothing of the
//	                 host's containers setup
//	<id>/trace/      the trace socket and pod-init-config, as for a command
//
// and the boot gets a spawn directory of its own, as a command spawn does.
// The request may not set Command, Rootfs, Cwd, Env or AllowNetwork: they
// come from the image, and the network stays off.
//
// Each target is one
//
//	buildah bud --isolation=oci --runtime=<runsc> --runtime-flag=root=<id>/b/r
//	      --runtime-flag=platform=<p> --runtime-flag=overlay2=none
//	      --runtime-flag=network=none --runtime-flag=gofer-network-namespace=new
//	      [--runtime-flag=pod-init-config=<id>/trace/pod-init.json]
//	      --network=none --layers[=false] [--hooks-dir=<id>/b/hooks]
//	      --format=docker --pull=false
//	      --cgroup-parent=/<id> --ulimit=nofile=1024:4096
//	      [--memory=... --cpu-quota=...]
//	      -f <id>/Dockerfile [--target=<stage>] -t <unique tag> <workspace>
//
// overlay2=none is required (otherwise a step's writes vanish before the
// next step reads them); --layers makes the final target reuse the steps
// that the builder target ran instead of running them again. It is given
// only then (a second target), or, in a traced build without
// Config.StepHook, when a RUN step runs in a stage other than the target's
// (the trace then reads that stage's committed image: without --layers
// buildah 1.28 commits no stage that only COPY --from uses). With vfs every
// committed step copies the whole tree: a single-stage build with two RUN
// steps took 3.7 s with it and 1.2 s without, the traced two-stage fixture
// of the plugin's benchmark 3.6 s and 1.75 s. --hooks-dir (traced builds
// with Config.StepHook) gives every RUN step's sandbox the poststop hook
// that snapshots the rootfs of a step of another stage than the target's
// for the trace (snapshot.go), and keeps the host's hook directories out
// of the build;
// --format=docker
// keeps HEALTHCHECK; --pull=false pulls a base image only when the private
// store lacks it; --cgroup-parent makes the steps' sandboxes use the
// cgroups named for the spawn, which its cleanup (and Reap) find and
// remove. The workspace is the build context, only read (its
// .dockerignore applies; a <Dockerfile>.dockerignore beside the original
// does not, since buildah reads the copy). Limits:
// memory and CPU apply to each step's sandbox (runsc makes its cgroups);
// buildah 1.28 has no pids limit, so PIDs is not enforced in build steps.
// Timeout bounds the whole spawn, builds and boot together.
//
// Base images come from a store shared by every spawn on the host (see
// basestore.go): before the first target, each image base of the
// Dockerfile is pulled there once (phase "pull:<reference>", with the
// image ID and manifest digest it resolved to; a digest the store holds is
// not pulled again), and the private copy of
// the Dockerfile names it by that ID. The private store reads the shared
// one as a buildah additional image store, so a build writes only its own
// layers. A base that no mirror or registry serves fails its pull phase,
// "image unavailable: <reference> could not be pulled; tried <mirror>
// (mirror of <registry>), then <registry>", and nothing is built.
//
// buildah is started as /bin/sh in a new private mount namespace (the Go
// runtime unshares it and makes / private before exec); the shell
// bind-mounts <id>/b/c over /var/lib/containers/cache, where buildah writes
// its blob info cache as root whatever --root says, and an empty directory
// over /etc/containers/registries.conf.d, whose short-name aliases would
// apply otherwise, then execs buildah. This rather than unshare(1): it needs
// only sh and mount, and the namespace with its mounts (and any mount runsc
// leaves in its root) goes away with its last process, so there is nothing
// to unmount, after a crash either. The mount point is created on the host
// if missing and stays empty. buildah's environment is PATH, HOME, TMPDIR
// and CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, CONTAINERS_REGISTRIES_CONF
// and REGISTRY_AUTH_FILE naming private files: the host's registry
// credentials are not used. registries.conf maps each registry of
// RegistryMirrors to its mirror (insecure = true only for a loopback
// mirror) and resolves short names on docker.io. The signature policy
// accepts anything: the store is private, and nothing here verifies
// signatures. buildah runs in its own process group and the spawn's
// tracking cgroup, killed if this process dies (Pdeathsig, and the
// watchdog: see "Crashes") and when the spawn times out or ctx ends.
//
// # Build phases
//
// buildah announces each instruction as "[i/n] STEP k/m: KEYWORD ..." (no
// [i/n] when one stage is built), and each RUN step that runs is one runsc
// sandbox, hence one trace connection and container ID. Phases:
//
//   - sandbox.BuildPhase(stage, k) for each RUN step that ran, where stage
//     is the stage's name, or its 0-based index (as COPY --from counts)
//     when it has none, and k is buildah's STEP number in that stage (FROM
//     is 1: k-1 indexes the stage's instructions after FROM). ExitCode 0,
//     Duration from its header until buildah reports its layer (or starts
//     committing the image), OutputTail its last 20 lines (4 KiB). A step
//     that buildah reused from the layer cache ran nothing and gets no
//     phase.
//   - "build:<stage>" for each target, named as its steps are (the
//     target stage's name, else its index): buildah's exit code, Failed
//     when non-zero, the last 40 lines (8 KiB) of its output, and Image,
//     the built image's ID. One target builds every stage it depends on
//     in the same buildah run, each step attributed to its stage by the
//     [i/n] of its header; callers name a second target only for a stage
//     the last one does not need.
//   - Phase output holds no host path of the spawn nor its random names:
//     the spawn directory reads as <build>, the state directory as
//     <state>, the spawn ID as <spawn> (scrub), so that the same inputs
//     give the same output on any machine.
//   - A failed build stops there: the failing step (RUN or not) is Failed,
//     with the step's exit code from buildah's error when it is a RUN, and
//     its last lines; no later target is built, nothing boots, and
//     Result.ExitCode is buildah's exit code. Otherwise ExitCode is 0,
//     whatever the boot did.
//
// A step's output goes to the same stream as the headers, so a header
// counts only if it fits the Dockerfile, which the backend parses too: the
// stage exists, has m instructions and the k-th is the announced keyword,
// [i/n] is there exactly when several stages are built, and it comes
// strictly after the previous header. A step that prints headers can thus
// at most announce the very next step early (moving a duration boundary,
// not an attribution). The n-th build container in the trace is mapped to
// the n-th RUN step that ran; the counts must agree (the failing step may
// lack a sandbox that never started), each container must have one
// container/start, and its args must fit the RUN instruction (the exec
// form's args, or the shell form's command as the last argument). Any
// disagreement leaves those events without a phase and the trace
// incomplete. The boot's events are known by its container ID and get
// sandbox.PhaseBoot.
//
// # Boot
//
// The last image's root filesystem is read in place: with vfs every layer's
// directory holds the whole tree, so the directory of the image's top layer
// (from the private store's vfs-images/images.json, else the shared base
// store's) is the rootfs, with no copy; the sandbox's overlay (Spawn) keeps
// the boot's writes off it, and TestBootLeavesTheImageAlone checks that.
// Only when the layer cannot be found does the boot make a working
// container (buildah from --pull=never, buildah mount: a copy of the whole
// image). buildah inspect gives its config. The
// command is entrypoint + cmd (neither: a Failed boot phase), with the
// image's env (PATH and HOME added when missing), working directory
// (default /) and user: a name or uid, with an optional :group, resolved
// against the image's /etc/passwd and /etc/group (read through os.Root) as
// Docker does, supplementary groups included; an unknown name fails the
// boot. The backend resolves the command in the image (missing: exit 127,
// not executable: 126, not started) and runs it with the command spawn's
// machinery: its own spawn directory and runsc root, the same config.json
// (without a workspace mount), cgroups and limits, network off, the build's
// trace listener. Untraced, it runs for BootFor (default 30s) or until it
// exits. Traced, it also ends once it has settled (ready.go): the service
// answered the requests and the HEALTHCHECK, then went the settle period
// (BuildSpec.Settle, default 3s) without an exec. Reaching BootFor, or
// settling, is success, the service is up: the boot phase has ExitCode -1
// (it never exited) and Failed unset, and TimedOut when BootFor was
// reached. An earlier exit records its exit code, Failed when non-zero; a
// runsc failure (an image runsc cannot start) is a Failed phase with
// runsc's message in the tail. A traced boot phase carries a
// sandbox.BootReport: why it ended, the port, and the times to listen and
// to the first answer. Result.Stdout and Stderr are the boot's.
//
// Once the boot has ended, Result.ImageFacts describe the booted image
// (imagefacts.go): its size and layer count from the vfs metadata of the
// private and the shared base store, and its OS packages, setuid/setgid
// files and shells from the mounted root filesystem, which the boot's
// overlay never wrote. All host-side, read-only and bounded; nothing of
// the image runs for them.
//
// # Requests and healthcheck
//
// With a trace, the boot is exercised from inside the sandbox
// (requests.go): the image's node, run with runsc exec and a script of
// ours, waits until an EXPOSEd port (or the HEALTHCHECK URL's, or any)
// listens, says so, then sends GET /, the HEALTHCHECK URL's path and the
// probe paths; each is a phase "request:<path>", and the service's events
// during it get that phase. Then:
//
// With a trace and an image HEALTHCHECK (CMD or CMD-SHELL), the boot runs
// the healthcheck's command once, with runsc exec in the booted sandbox,
// once the requests are done (for an image with no declared port, once it
// has gone a settle period without an exec; at the latest, half-way to
// BootFor), as the image's user in its working directory, bounded by
// BootFor (healthcheck.go). Its process (whose exec gVisor does not
// report: the backend inserts it, with the sandbox-internal PID runsc
// writes) and everything below it get sandbox.PhaseHealthcheck; the phase
// of that name carries its exit code and output, after the boot's. A
// command the image lacks (CMD-SHELL on a base without /bin/sh) does not
// run: exit 127. A boot that exits before the healthcheck starts has no
// healthcheck phase.
//
// # Build traces
//
// Besides phases, the backend completes the trace as for a command: after
// every container/start it inserts the exec event of that first process
// (blind spot 2): for the boot, the command it ran, resolved in the image
// (so docker-entrypoint.sh, a #!/bin/sh script, is the boot's first exec);
// for a build step, the start's args, resolved in the stage's image with
// the default PATH. Every exec of a file that is not ELF gets Event.Interp,
// its shebang's interpreter (blind spot 1), read host-side: for the boot
// from its root filesystem; for a step of a stage other than the
// target's from its snapshot, a copy of what the trace reads of its rootfs
// (the tree, with the heads of executables; other files hard-linked) that
// the step's poststop hook took once it exited, before buildah went on
// (snapshot.go). Such a step without a snapshot (its hook failed) reads as
// unknown, and its phase's output says why. A step of the target's stage,
// and every step when there is no Config.StepHook, reads from the image
// of its stage once the build is over (the committed layer of the stage's
// last step, read in place like the boot's), which
// is the image after the stage, not the step's own rootfs: a script that a
// later step deleted or rewrote reads as unknown or as its later self. A
// file that cannot be read gets trace.InterpUnknown. The
// trace is complete only when the collection is (no drop, every connection
// clean, every init's exit seen), the phases are all accounted for, and
// neither the spawn nor a build was stopped. More than
// seccheck.DefaultMaxConns sandboxes in one spawn (RUN steps plus boot) are
// refused, which fails that step closed.
//
// # Progress
//
// A spawn whose context carries a sandbox.ProgressFunc reports as it goes
// (progress.go): each phase as it begins (every pull, each target, the
// boot), every build step buildah announces that fits the Dockerfile, with
// its stage's step count and its instruction as buildah printed it (cut
// to 120 bytes), the boot's time left every second, and the shells the
// live trace has shown so far (once per process, from the listener's
// Observe). Reports are best-effort and never change the Result.
//
// # What layout (a) leaves exposed
//
// Only the RUN steps' code runs in gVisor. buildah itself runs as root on
// the host, and it handles untrusted input there: it parses the Dockerfile
// from the repository, pulls and unpacks the base images' layers (tarballs
// from a registry or mirror), reads the build context for COPY and ADD, and
// commits each step by walking the file tree that the sandboxed step just
// wrote (symlinks, hard links, device nodes, odd modes and names). A bug in
// buildah's Dockerfile parser, layer extraction, copier or commit is a bug
// as root on the host, outside the sandbox. What the backend adds: a
// private store, configuration and credentials-free environment, a private
// mount namespace, the Dockerfile read through os.Root, no network for the
// steps, bounded output parsing, and resource limits on the steps (not on
// buildah). What a step writes (setuid files, device nodes) only ever runs
// again inside gVisor: the images are booted here and deleted with the
// store. Layout (b), buildah inside one runsc sandbox (buildah
// --storage-driver vfs bud --isolation chroot), would put parsing,
// unpacking and committing behind gVisor too, so that a buildah bug stays
// in the sentry; its price
// is that steps are no longer sandboxes of their own but chroots inside one
// sandbox, the trace mixes buildah's own helpers with the steps' processes
// so that phases must be inferred from the process tree instead of read
// from container IDs, and pulls need the network inside the sandbox. This
// backend takes (a) for exact, per-container attribution; (b) is the way to
// close the host-side exposure if it matters more than that.
//
// # Costs (measured here; see BenchmarkBuildBoot)
//
// The two-stage fixture (builder with one RUN, final on node:22-slim with
// four more instructions, npm start until it listens), medians of 3 on
// this 2-core VM: about 33 s with runc as buildah's runtime and a runc
// boot, 35 s sandboxed, 36 s sandboxed and traced. Most of it is buildah
// with vfs storage, the same under every runtime: each instruction copies
// a whole 150 MB image to make its container and walks it to commit, about
// 2 s each, and every spawn pulls its base images into an empty store. The
// parts gVisor changes are small beside that: the RUN step takes 0.33 s
// against 0.25 s under runc, the boot to listening 1.7 s against 0.47 s.
// Tracing adds little to the sandboxes. (Those figures predate the step
// snapshots, which replaced the copy of the builder stage's image that
// the interpreters were read from.)
// Run to run, disk I/O here moves the totals by ±30%.
//
// # Crashes
//
// No sandbox outlives the process that owns the Backend, even after a
// kill -9 (see lifetime.go): runsc run and buildah carry a parent-death
// signal from an OS thread that lives as long as they do, runsc run takes
// its sandbox and gofer with it, every spawn's processes start in a
// tracking cgroup of its own (cgroup v2, in the unified hierarchy of the
// hybrid layout, no controllers), and a watchdog, the owner's own
// executable re-run, holding nothing but a pipe to it, runs while any
// spawn is live. When the pipe breaks it kills the tracking cgroups
// (cgroup.kill: the build steps' daemonized sandboxes too) and any process
// that names the state directory, removes every cgroup of the state
// directory's prefix, detaches the spawns' disks, removes their images
// from the spawn directories no live process holds, and exits. Measured
// here: nothing left running and no cgroup left 5 to 30 ms after a kill
// -9 of the owner, in a booting sandbox, a RUN step or a boot (the dead
// processes are then zombies of init until it reaps them). Without the
// watchdog, a build step's sandbox and gofer and every spawn's cgroups
// stayed. The spawn directories stay for Reap:
//
// A spawn holds an flock on <id>/lock for its whole life, and keeps the
// audit ID of its context in <id>/audit-id, so that ReapSpawns names the
// spawn (gate-control's spawn_id) of each container it reaps. Reap takes the
// state directory's lock exclusively (spawns take it shared while they set
// up), and cleans every spawn directory whose lock it can take, plus the
// cgroups named with this state directory's tag that no live spawn owns.
// For a build's spawn directory that includes the step sandboxes left in
// its private runsc root (killed and deleted, with the cgroups runsc named
// after them), the private buildah store and its disk; buildah itself dies
// with the process that started it, and its mount namespace with it.
// The end of every build spawn, whatever way it ends, does the same.
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
